// The two phases of QuantReduceScatter / QuantAllReduce and of the fused QuantizeReduceScatter /
// QuantizeAllReduce (the same, except that each chunk's rows are quantized from the float
// input into the transport's buffers right before they move; contract.md §fused).
//
// Phase one (Executor::prepare) validates the call, computes its plan (ops/plan.hpp: chunk
// rows, exchange spec, output strategy, quantizer) and builds a single-use executor. A rank
// whose checks fail but whose group resolved still takes part in this call's agreement
// with its status, so its peers fail at once instead of waiting for the timeout.
//
// Phase two (Executor::run): all-gather the CallDescriptors (bounded by QCOLL_TIMEOUT_S);
// any disagreement or failed rank -> RUNTIME_ERROR on every rank, nothing written. Then the
// exchange (comm/collectives.hpp) calls the dequant-reduce kernel on each chunk; an
// exception from it is caught here, once, and becomes this rank's status while the
// exchange completes its protocol with the peers. QuantAllReduce reduce-scatters into its
// own row block of the output, then all-gathers the blocks in place. A second agreement
// (the outcome) tells every rank whether every rank's reduction succeeded: when the
// transport may fail mid-call, the result is staged (QuantAllReduce on shm: in the rank's
// shared block of the window, from which every rank copies every block into its output
// after the outcome; otherwise in the workspace) and reaches the output only after it; otherwise (threads: the output
// is written in place, no workspace) it comes before the all-gather, and a failure on one rank fails every rank.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ops/plan.hpp"

namespace qcoll::ops {

class Executor {
 public:
  // Phase one. On success *workspace_size and *out are set.
  static Status prepare(const OpRequest& req, uint64_t* workspace_size, std::unique_ptr<Executor>* out);
  // Phase two. Collective: every rank of the group must run its executor. Any thread may
  // run it (a stream's thread does).
  Status run(void* workspace, uint64_t workspace_size);

  // For an executor that will not run (misused): takes part in this call's agreement with
  // `code` so that the peers fail at once instead of timing out.
  void report_failure(StatusCode code);
  // For an executor destroyed without running (qcollDestroyExecutor): takes part in this
  // call's agreement as a failed rank does (kLocalStatusNotRun).
  void report_not_run();

  OpKind op() const { return plan_.call.op; }
  uint64_t workspace_size() const { return plan_.workspace_bytes; }

 private:
  explicit Executor(CallPlan plan) : plan_(std::move(plan)) {}
  // Phase two's own arguments (workspace), then the call agreement with the peers.
  Status check_workspace(const void* workspace, uint64_t workspace_size) const;
  Status agree_call(const Status& local, comm::Clock::time_point deadline);
  // The three ways of plan_.output, each from the reduction to the output.
  Status run_in_place(comm::Clock::time_point deadline);
  Status run_staged(uint8_t* workspace, comm::Clock::time_point deadline, bool reserved = false);
  Status run_shared_block(uint8_t* workspace, comm::Clock::time_point deadline);
  // The reduce-scatter of the plan's spec into `mine` (this rank's row block: of the user's
  // output, of the staging workspace, or the transport's shared block). Exceptions of the
  // reduction become the status. `reserved`: the caller already reserved the window for the
  // plan's spec (comm::ExchangeSpec::reserved), so the exchange does not reserve again.
  Status reduce_scatter(uint8_t* mine, comm::Clock::time_point deadline, bool reserved = false);
  // The outcome agreement: every rank's status of the data movement; RUNTIME_ERROR naming
  // the first rank that failed (`mine` failed: mine, prefixed).
  Status agree_outcome(const Status& mine, comm::Clock::time_point deadline, const char* consequence);
  // A failed step, prefixed with the operator; `broken`: the group is unusable after it.
  Status failed(const Status& s) const;
  Status broken(const Status& s) const;

  CallPlan plan_;
};

// TEST ONLY (fault injection). When set, the executor calls the hook at the start of every
// reduce step (each chunk a rank reduces), with the group's name, the rank and the chunk's
// first row; an error status or an exception from it is treated as a failure of that
// reduction. Read once per call: unset (the default), it costs one atomic load per call.
namespace testing {
using ReduceFaultForTest = Status (*)(const std::string& group, int rank, std::size_t row_begin);
void set_reduce_fault_for_test(ReduceFaultForTest hook);  // nullptr: off
// When non-zero, the fused operators move at most this many rows per destination in one
// chunk (so that small tensors take several chunks on every transport); 0: their own choice.
void set_fused_chunk_rows_for_test(std::size_t rows);
}  // namespace testing

}  // namespace qcoll::ops
