// Comparison of the call descriptors that ranks exchange before moving data.
#include "comm/communicator.hpp"

namespace qcoll::comm {

bool same_call(const CallDescriptor& a, const CallDescriptor& b) {
  return a.op == b.op && a.x_dtype == b.x_dtype && a.scales_dtype == b.scales_dtype &&
         a.out_dtype == b.out_dtype && a.ndim == b.ndim && a.shape[0] == b.shape[0] &&
         a.shape[1] == b.shape[1] && a.shape[2] == b.shape[2];
}

}  // namespace qcoll::comm
