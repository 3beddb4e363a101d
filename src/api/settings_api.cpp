// The programmatic equivalents of the settings (qcoll.h): the contract, QCOLL_CONTRACT's
// value chosen by the program (core/settings.cpp keeps the choice).
#include "api/handles.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/qcoll.hpp"
#include "qcoll/settings.hpp"

namespace {
using qcoll::Status;
using qcoll::StatusCode;
using qcoll::settings::Contract;
}  // namespace

extern "C" qcollStatus qcollSetContract(qcollContract contract) {
  return qcoll::api::guarded([&]() -> Status {
    switch (contract) {
      case QCOLL_CONTRACT_FROM_ENV:
        qcoll::settings::set_contract_override(std::nullopt);
        return Status::Ok();
      case QCOLL_CONTRACT_VENDOR:
        qcoll::settings::set_contract_override(Contract::Vendor);
        return Status::Ok();
      case QCOLL_CONTRACT_EXTENDED:
        qcoll::settings::set_contract_override(Contract::Extended);
        return Status::Ok();
    }
    return Status::Error(StatusCode::ParamInvalid,
                         "contract: must be QCOLL_CONTRACT_FROM_ENV (-1), QCOLL_CONTRACT_VENDOR (0) or "
                         "QCOLL_CONTRACT_EXTENDED (1), got " +
                             std::to_string(static_cast<int32_t>(contract)));
  });
}

extern "C" qcollStatus qcollGetContract(qcollContract* contract) {
  return qcoll::api::guarded([&]() -> Status {
    if (contract == nullptr) return Status::Error(StatusCode::ParamNullptr, "contract: must not be null");
    Contract c = Contract::Vendor;
    Status st = qcoll::settings::contract(c);
    *contract = c == Contract::Extended ? QCOLL_CONTRACT_EXTENDED : QCOLL_CONTRACT_VENDOR;
    return st;
  });
}

namespace qcoll {

void set_contract(std::optional<Contract> contract) {
  const qcollContract c = !contract                         ? QCOLL_CONTRACT_FROM_ENV
                          : *contract == Contract::Extended ? QCOLL_CONTRACT_EXTENDED
                                                            : QCOLL_CONTRACT_VENDOR;
  if (qcollSetContract(c) != QCOLL_SUCCESS) throw Error(StatusCode::InnerError, qcollGetRecentErrMsg());
}

Contract current_contract() {
  qcollContract c = QCOLL_CONTRACT_VENDOR;
  const qcollStatus rc = qcollGetContract(&c);
  if (rc != QCOLL_SUCCESS) throw Error(static_cast<StatusCode>(rc), qcollGetRecentErrMsg());
  return c == QCOLL_CONTRACT_EXTENDED ? Contract::Extended : Contract::Vendor;
}

}  // namespace qcoll
