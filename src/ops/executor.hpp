// The two phases of QuantReduceScatter / QuantAllReduce.
//
// Phase one (Executor::prepare) validates the call and builds a single-use executor. A rank
// whose checks fail but whose group resolved still takes part in this call's agreement
// with its status, so its peers fail at once instead of waiting for the timeout.
//
// Phase two (Executor::run): all-gather the CallDescriptors (bounded by QCOLL_TIMEOUT_S);
// any disagreement or failed rank -> RUNTIME_ERROR on every rank, nothing written. Then the
// exchange calls the dequant-reduce kernel on each chunk. QuantAllReduce reduce-scatters
// into its own row block of the output, then all-gathers the blocks in place. When the
// transport may fail mid-call, the result is staged in the workspace and copied to the
// output only after a second agreement confirmed that every rank succeeded.
#pragma once
#include <cstdint>
#include <memory>

#include "ops/validate.hpp"

namespace qcoll::ops {

class Executor {
 public:
  // Phase one. On success *workspace_size and *out are set.
  static Status prepare(const OpRequest& req, uint64_t* workspace_size,
                        std::unique_ptr<Executor>* out);
  // Phase two. Collective: every rank of the group must run its executor. Any thread may
  // run it (a stream's thread does).
  Status run(void* workspace, uint64_t workspace_size);

  // For an executor that will not run (misused): takes part in this call's agreement with
  // `code` so that the peers fail at once instead of timing out.
  void report_failure(StatusCode code);

  OpKind op() const { return call_.op; }
  uint64_t workspace_size() const { return workspace_bytes_; }

 private:
  explicit Executor(ValidatedCall c);
  // Reduce-scatter (and all-gather) into `dst`: the user's output or the staging workspace.
  Status compute(uint8_t* dst, comm::Clock::time_point deadline);

  ValidatedCall call_;
  uint64_t workspace_bytes_ = 0;
};

}  // namespace qcoll::ops
