// The external transport: a communicator whose bytes move through two collectives that the
// caller supplies, an all-gather and an all-to-all over the caller's own group (for example
// a torch.distributed ProcessGroup on gloo). Like a gloo pair, the functions move bytes and
// know no operator; qcoll keeps the rest (the agreement on the call, the chunked exchange
// and all-gather of comm/collectives, the kernels, the staging of the output), so the
// operators give the bits they give on every other transport.
//
//   all_gather(send, recv, bytes)   send: `bytes` bytes; recv: size() * bytes, rank order
//   all_to_all(send, recv, bytes)   send: size() parts of `bytes`, part k for rank k;
//                                   recv: size() parts, part k from rank k
//
// Mapping onto the step primitives of communicator.hpp: a records all-gather is one
// all_gather; a data step is one call, made in wait_step (which has the deadline): an
// all_to_all for a PerDestination step (part d: this rank's rows for rank d, x then scales),
// an all_gather for a Same step. publish() only marks the step ready. Every rank makes the
// same calls in the same order. Steps are unbounded (no window: window_bytes() is 0, the
// exchange is one step). The part a rank addresses to itself stays where it is
// (own_part_in_place): its place in the all_to_all's send buffer is left as it was.
//
// The functions get only this communicator's own buffers, never the user's tensors, so a
// transfer that completes after a timeout cannot touch them. Each function gets how long it
// may wait (what is left of the deadline). A function that fails or times out breaks the
// communicator (its peers may be out of step): every later call fails at once, and its
// buffers are kept for the life of the process, as a late transfer may still write there.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace qcoll::comm {

struct ExternalCollectives {
  using Fn = std::function<Status(const void* send, void* recv, std::size_t bytes, std::chrono::milliseconds timeout)>;
  Fn all_gather;
  Fn all_to_all;
};

class ExternalCommunicator final : public Communicator {
 public:
  // Checks: name (check_group_name), nranks (contract::check_comm_size), rank in
  // [0, nranks), both functions set (PARAM_NULLPTR / PARAM_INVALID naming the parameter).
  // Local: no peer is contacted.
  static Status create(const char* name, int nranks, int rank, ExternalCollectives fns,
                       std::shared_ptr<Communicator>& out);
  ~ExternalCommunicator() override;
  ExternalCommunicator(const ExternalCommunicator&) = delete;
  ExternalCommunicator& operator=(const ExternalCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return nranks_; }
  const std::string& name() const override { return name_; }
  const char* transport() const override { return "external"; }
  Traits traits() const override { return {.may_fail_mid_call = true}; }

  Status allgather_records(const void* mine, std::size_t bytes, void* all, Clock::time_point deadline) override;
  Status begin_step(const StepShape& shape, const char* what, Clock::time_point deadline, Step* step) override;
  PartRegion region(Step s, int dest) override;
  Status publish(Step s) override;
  Status wait_step(Step s, Clock::time_point deadline) override;
  PartView view(Step s, int src) const override;
  Status release(Step s) override;

  bool usable() const override { return !broken_; }
  std::string broken_reason() const override { return broken_reason_; }

 private:
  ExternalCommunicator(std::string name, int nranks, int rank, ExternalCollectives fns);

  // A step's buffers (two sets: at most two steps are in flight). Heap vectors, leaked
  // when the communicator is destroyed broken (see above).
  struct Slot {
    std::vector<uint8_t>* send = nullptr;
    std::vector<uint8_t>* recv = nullptr;
    StepShape shape;
    const char* what = "";
    bool published = false;
  };
  Slot& slot(Step s) { return slots_[s & 1]; }
  const Slot& slot(Step s) const { return slots_[s & 1]; }

  // One call of `fn` on `slot` (what: "all-gather" / "all-to-all"; why: for the message);
  // breaks the communicator on failure.
  Status call(const ExternalCollectives::Fn& fn, Slot& slot, const char* what, const char* why, std::size_t bytes,
              Clock::time_point deadline);
  Status broken_status() const;

  std::string name_;
  int nranks_ = 0;
  int rank_ = 0;
  ExternalCollectives fns_;
  Slot slots_[2];
  Slot records_;  // the records all-gather's buffers
  Step next_step_ = 0;
  bool broken_ = false;
  std::string broken_reason_;
};

}  // namespace qcoll::comm
