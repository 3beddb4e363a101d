// What every rank contributes before data moves (and again after, with the outcome), so
// that all ranks agree on the call. Plain data, moved by the transport as an opaque record
// (Communicator::allgather_records).
#pragma once
#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "qcoll/status.hpp"

namespace qcoll::ops {

// local_status of a rank whose executor was destroyed instead of run (not a StatusCode).
constexpr int32_t kLocalStatusNotRun = -1;
// CallDescriptor::contract of a rank that failed phase one without reading its contract
// (a bad QCOLL_CONTRACT): compared with nobody's.
constexpr int32_t kContractUnknown = -1;

struct CallDescriptor {
  int32_t op = 0;        // OpKind: 1, 2 quantized; 3, 4 fused (QuantizeReduceScatter / QuantizeAllReduce)
  int32_t x_dtype = -1;  // fused: the config's xDtype
  int32_t scales_dtype = -1;
  int32_t out_dtype = -1;
  int32_t ndim = 0;               // x's rank (2 or 3)
  int32_t local_status = 0;       // 0: this rank validated its call (or succeeded); else its status code
  int64_t shape[3] = {0, 0, 0};   // x's shape (unused dims 0)
  int32_t in_dtype = -1;          // fused: the float input's dtype; -1 for the quantized operators
  uint32_t hif8_target_bits = 0;  // fused KG HiF8: the bits of the effective target; else 0
  int32_t all_reduce = 0;         // the all-reduces: QCOLL_ALL_REDUCE (settings::AllReduce); else 0
  int32_t contract = 0;           // QCOLL_CONTRACT (settings::Contract); kContractUnknown: unreadable
};
static_assert(sizeof(CallDescriptor) <= comm::Communicator::kMaxRecordBytes, "a descriptor is one record");

bool same_call(const CallDescriptor& a, const CallDescriptor& b);  // ignores local_status

// Every rank contributes `mine`; on success `all` holds size() descriptors in rank order.
Status allgather_descriptors(comm::Communicator& c, const CallDescriptor& mine, std::vector<CallDescriptor>& all,
                             comm::Clock::time_point deadline);

}  // namespace qcoll::ops
