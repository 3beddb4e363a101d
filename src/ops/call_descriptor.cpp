#include "ops/call_descriptor.hpp"

namespace qcoll::ops {

bool same_call(const CallDescriptor& a, const CallDescriptor& b) {
  return a.op == b.op && a.x_dtype == b.x_dtype && a.scales_dtype == b.scales_dtype && a.out_dtype == b.out_dtype &&
         a.ndim == b.ndim && a.shape[0] == b.shape[0] && a.shape[1] == b.shape[1] && a.shape[2] == b.shape[2] &&
         a.in_dtype == b.in_dtype && a.hif8_target_bits == b.hif8_target_bits && a.all_reduce == b.all_reduce &&
         a.contract == b.contract;
}

Status allgather_descriptors(comm::Communicator& c, const CallDescriptor& mine, std::vector<CallDescriptor>& all,
                             comm::Clock::time_point deadline) {
  all.resize(static_cast<std::size_t>(c.size()));
  return c.allgather_records(&mine, sizeof mine, all.data(), deadline);
}

}  // namespace qcoll::ops
