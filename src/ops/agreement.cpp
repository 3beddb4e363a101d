#include "ops/agreement.hpp"

#include <bit>
#include <string>

#include "ops/timeout.hpp"
#include "ops/validate.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/dtype.hpp"

namespace qcoll::ops {
namespace {

std::string op_string(int32_t op) {
  if (op >= int32_t(OpKind::ReduceScatter) && op <= int32_t(OpKind::QuantizeAllReduce))
    return op_name(static_cast<OpKind>(op));
  return "operator " + std::to_string(op);
}
std::string float_text(uint32_t bits) { return std::to_string(std::bit_cast<float>(bits)); }
// Descriptors that reach first_difference passed phase one on every rank: their dtypes are known.
std::string dtype_string(int32_t t) { return contract::dtype_text(static_cast<DType>(t)); }
std::string shape_of(const CallDescriptor& d) {
  std::string s = "[";
  for (int i = 0; i < d.ndim && i < 3; ++i) s += (i ? ", " : "") + std::to_string(d.shape[i]);
  return s + "]";
}

// The first field on which b differs from a: "x dtype: float8_e5m2 (rank 2) vs int8 (rank 0)".
std::string first_difference(const CallDescriptor& a, int ra, const CallDescriptor& b, int rb) {
  auto both = [&](const std::string& field, const std::string& va, const std::string& vb) {
    return field + ": " + vb + " (rank " + std::to_string(rb) + ") vs " + va + " (rank " + std::to_string(ra) + ")";
  };
  if (a.op != b.op) return both("operator", op_string(a.op), op_string(b.op));
  if (a.x_dtype != b.x_dtype) return both("x dtype", dtype_string(a.x_dtype), dtype_string(b.x_dtype));
  if (a.scales_dtype != b.scales_dtype)
    return both("scales dtype", dtype_string(a.scales_dtype), dtype_string(b.scales_dtype));
  if (a.out_dtype != b.out_dtype) return both("output dtype", dtype_string(a.out_dtype), dtype_string(b.out_dtype));
  if (a.in_dtype != b.in_dtype) return both("input dtype", dtype_string(a.in_dtype), dtype_string(b.in_dtype));
  if (a.hif8_target_bits != b.hif8_target_bits)
    return both("HiF8 target", float_text(a.hif8_target_bits), float_text(b.hif8_target_bits));
  if (a.all_reduce != b.all_reduce) {
    auto name = [](int32_t v) { return std::string(settings::all_reduce_name(static_cast<settings::AllReduce>(v))); };
    return both(settings::kAllReduceName, name(a.all_reduce), name(b.all_reduce));
  }
  return both(a.in_dtype >= 0 ? "input shape" : "x shape", shape_of(a), shape_of(b));
}

std::string contract_string(int32_t c) { return settings::contract_name(static_cast<settings::Contract>(c)); }

// contract.md §ext-agreement: the first rank whose contract differs from an earlier rank's,
// "QCOLL_CONTRACT: extended (rank 2) vs vendor (rank 0)"; empty when all that read one agree.
// Checked before the ranks' own failures: a rank that refused the call under its contract
// (a 4-bit x under vendor) failed because of the difference.
std::string contract_difference(const std::vector<CallDescriptor>& all) {
  int first = -1;
  for (std::size_t k = 0; k < all.size(); ++k) {
    if (all[k].contract == kContractUnknown) continue;
    if (first < 0) {
      first = static_cast<int>(k);
    } else if (all[k].contract != all[first].contract) {
      return std::string(settings::kContractName) + ": " + contract_string(all[k].contract) + " (rank " +
             std::to_string(k) + ") vs " + contract_string(all[first].contract) + " (rank " + std::to_string(first) +
             ")";
    }
  }
  return {};
}

}  // namespace

Status check_agreement(const std::vector<CallDescriptor>& all, const std::string& group) {
  if (const std::string diff = contract_difference(all); !diff.empty())
    return Status::Error(StatusCode::RuntimeError, "group '" + group + "': ranks disagree on the contract: " + diff +
                                                       "; every rank must keep the same contract; no rank moved data");
  std::string failed;
  for (std::size_t k = 0; k < all.size(); ++k) {
    if (all[k].local_status == 0) continue;
    failed += (failed.empty() ? "rank " : ", rank ") + std::to_string(k) + " (" +
              (all[k].local_status == kLocalStatusNotRun
                   ? std::string("destroyed its executor instead of running it")
                   : std::string(status_name(static_cast<StatusCode>(all[k].local_status)))) +
              ")";
  }
  if (!failed.empty())
    return Status::Error(StatusCode::RuntimeError, "group '" + group + "': the call failed its checks on " + failed +
                                                       " (see that rank's message); no rank moved data");
  for (std::size_t k = 1; k < all.size(); ++k) {
    if (same_call(all[0], all[k])) continue;
    return Status::Error(StatusCode::RuntimeError, "group '" + group + "': ranks disagree on the call: " +
                                                       first_difference(all[0], 0, all[k], static_cast<int>(k)) +
                                                       "; every rank must make the same call; no rank moved data");
  }
  return Status::Ok();
}

Status report_local_failure(comm::Communicator& c, const CallDescriptor& partial, int32_t local_status) {
  if (!c.usable()) return Status::Error(StatusCode::RuntimeError, c.broken_reason());
  CallDescriptor d = partial;
  d.local_status = local_status;
  std::vector<CallDescriptor> all;
  return allgather_descriptors(c, d, all, comm::Clock::now() + call_timeout());
}

}  // namespace qcoll::ops
