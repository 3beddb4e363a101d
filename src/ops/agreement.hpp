// Before data moves, the ranks all-gather a CallDescriptor each and check that they make
// the same call and that every rank passed its own checks.
#pragma once
#include <vector>

#include "comm/communicator.hpp"
#include "ops/call_descriptor.hpp"
#include "qcoll/status.hpp"

namespace qcoll::ops {

// OK when every rank's local_status is 0 and every descriptor is the same call as rank
// 0's; otherwise RUNTIME_ERROR naming the rank(s) and the field. Every rank computes the
// same verdict from the same descriptors.
Status check_agreement(const std::vector<CallDescriptor>& all, const std::string& group);

// A rank that failed its own checks after its group resolved (or destroyed its executor
// without running it: kLocalStatusNotRun): contributes its status to the agreement of this
// call so that its peers fail at once instead of timing out.
// Returns the transport's status (the caller reports its own error either way).
Status report_local_failure(comm::Communicator& c, const CallDescriptor& partial, int32_t local_status);

}  // namespace qcoll::ops
