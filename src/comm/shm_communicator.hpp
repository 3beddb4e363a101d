// The shared-memory transport: one rank per process, all processes on one host, exchanging
// through a segment that every rank maps (see shm_segment.hpp; set up over MPI by
// comm/mpi/process_communicator.cpp, or by any other rendezvous).
//
// Segment: a header, one control block per rank (step counters, pid, state, two records)
// and one window of HCCL_BUFFSIZE MB per rank, split into two slots. The windows are sparse:
// only the header and control blocks are reserved in /dev/shm at creation; reserve() grows
// each slot from its start, and a shared block at the end of the window (slot 1's half), as
// the calls need them. The step primitives of
// communicator.hpp, for step g (numbered identically on all ranks; slot g % 2):
//   begin_step:  waits until every rank has released step g-2 (consumed[k] >= g - 1), whose
//                slot this rank is about to overwrite; fails at once if a peer is marked failed;
//   region:      this rank's own slot (destination d's part at d * part_bytes);
//   publish:     written[r] = g + 1 (release);
//   wait_step:   waits until written[k] >= g + 1 for all k;
//   view:        peer k's slot, read in place (this rank's part in it);
//   release:     consumed[r] = g + 1.
// So a rank fills the next slot while its peers still read the previous one (double
// buffering), and never overwrites data a peer has not finished reading. Records
// (allgather_records) are steps too, held in the control block. Waiting spins briefly, then
// sleeps on the peer's futex word (so oversubscribed ranks do not starve each other), against
// the caller's deadline; a peer that left, failed or died (its pid is gone) ends the
// wait at once with RUNTIME_ERROR; a timeout also does, and marks this rank failed (saying
// that it timed out) so that its peers stop waiting too, and a rank that was absent learns
// at its next step that the group broke. After any such failure the communicator is broken.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/shm_segment.hpp"

namespace qcoll::comm {

class ShmCommunicator final : public Communicator, public Window {
 public:
  // Bytes of the segment for `nranks` ranks with `window_bytes` per rank.
  static std::size_t segment_bytes(int nranks, std::size_t window_bytes);
  // Bytes at the start of the segment (header, control blocks) that must be reserved in
  // /dev/shm at creation; the windows are reserved as the calls need them (reserve()).
  static std::size_t control_bytes(int nranks) { return windows_offset(nranks); }
  // Called once by the creator on the zero-filled segment, before any rank attaches.
  static void init_segment(unsigned char* base, int nranks, std::size_t window_bytes);

  // Attaches rank `rank` to a mapped, initialised segment. Check valid() afterwards.
  ShmCommunicator(std::string name, int rank, int nranks, std::size_t window_bytes, ShmMapping mapping);
  ~ShmCommunicator() override;  // marks this rank as gone, so that waiting peers fail fast
  bool valid() const { return valid_; }

  int rank() const override { return rank_; }
  int size() const override { return nranks_; }
  const std::string& name() const override { return name_; }
  const char* transport() const override { return "shm"; }
  Traits traits() const override;

  Status allgather_records(const void* mine, std::size_t bytes, void* all, Clock::time_point deadline) override;
  std::size_t max_part_bytes(StepShape::Kind kind) const override;
  Status begin_step(const StepShape& shape, const char* what, Clock::time_point deadline, Step* step) override;
  PartRegion region(Step s, int dest) override;
  Status publish(Step s) override;
  Status wait_step(Step s, Clock::time_point deadline) override;
  PartView view(Step s, int src) const override;
  Status release(Step s) override;

  Status reserve(std::size_t slot_bytes, std::size_t shared_bytes, Clock::time_point deadline) override;
  std::size_t slot_capacity() const override { return slot_cap_; }
  std::size_t shared_capacity() const override { return shared_cap_; }
  uint8_t* shared_block(int k) const override;
  std::string no_room_message(std::size_t slot_bytes_needed) const override;
  Window* window() override { return this; }

  bool usable() const override { return !broken_; }
  std::string broken_reason() const override { return broken_reason_; }

  // For tests: pretend this process died (stop without marking the segment).
  void abandon_for_test() { abandoned_ = true; }
  // For tests: growing this rank's window beyond `bytes` in all fails as if /dev/shm were full.
  void limit_window_for_test(std::size_t bytes) { limit_for_test_ = bytes; }
  // Bytes of this rank's window reserved now (both slots and the shared block).
  std::size_t reserved_bytes() const { return 2 * own_slot_ + own_shared_; }

 private:
  struct alignas(128) RankControl {
    std::atomic<uint64_t> written;   // steps this rank has published
    std::atomic<uint64_t> consumed;  // steps this rank has finished reading
    std::atomic<uint32_t> state;     // kState*
    std::atomic<uint32_t> failure;   // kFailure*: why it failed (state kStateFailed)
    std::atomic<int32_t> pid;
    std::atomic<uint64_t> pid_ns;  // inode of its pid namespace: pids compare only within one
    // Bumped after every change of written, consumed or state; peers that wait for this rank
    // sleep on it (a futex) after a short spin, and `sleepers` tells whether to wake them.
    std::atomic<uint32_t> seq;
    std::atomic<uint32_t> sleepers;
    unsigned char record[2][kMaxRecordBytes];  // the record of step g lives in record[g % 2]
  };
  struct Header {
    uint64_t magic;
    uint64_t window_bytes;
    int32_t nranks;
  };
  static constexpr uint32_t kStateAbsent = 0, kStateActive = 1, kStateLeft = 2, kStateFailed = 3;
  static constexpr uint32_t kFailureOther = 0, kFailureTimeout = 1;
  // What this rank knows of one of its steps in flight.
  struct StepInfo {
    StepShape shape;
    const char* what = "";
  };
  static std::size_t controls_offset();
  static std::size_t windows_offset(int nranks);

  RankControl& control(int k) const;
  unsigned char* slot(int k, uint64_t step) const;  // rank k's slot for step
  std::size_t slot_bytes() const { return window_bytes_ / 2; }

  // Tells the peers sleeping on this rank's control block that it changed.
  void notify_peers();
  // Waits until pred(k) holds for every rank k.
  template <class Pred>
  Status wait_all(const Pred& pred, Clock::time_point deadline, const char* what);
  Status peer_gone(int k) const;    // RUNTIME_ERROR if rank k left, failed or died; else Ok
  Status peer_failed(int k) const;  // RUNTIME_ERROR if rank k is marked failed; else Ok
  // Reserves [offset, offset + len) of this rank's window (offsets from its start).
  Status grow(std::size_t offset, std::size_t len, bool* no_space);
  // reserve()'s parts: grow this rank's slots (halving while /dev/shm has no room) and its
  // shared block towards the targets, returning what this rank got; then say once on stderr
  // what the ranks could not all get.
  std::size_t grow_slots(std::size_t target, bool* no_space, std::string* why);
  std::size_t grow_shared(std::size_t target, bool* no_space, std::string* why);
  void warn_no_room(std::size_t slot_need, std::size_t shared_need, const std::string& why);
  // Marks this rank failed (why: kFailure*) and the communicator broken.
  Status fail(Status s, uint32_t why = kFailureOther);
  Status broken_status() const;

  std::string name_;
  int rank_ = 0;
  int nranks_ = 0;
  std::size_t window_bytes_ = 0;
  ShmMapping mapping_;
  bool valid_ = false;
  bool broken_ = false;
  bool abandoned_ = false;
  uint64_t pid_ns_ = 0;  // this process's pid namespace (0: unknown)
  std::string broken_reason_;
  uint64_t next_step_ = 0;
  StepInfo steps_[2];  // by parity
  // Window memory (reserve): every slot's first slot_cap_ bytes and the last shared_cap_
  // bytes of the window are reserved on every rank (agreed); own_* is what this rank has.
  std::size_t slot_cap_ = 0, shared_cap_ = 0, own_slot_ = 0, own_shared_ = 0;
  std::size_t own_ext_[2] = {0, 0};  // reserved prefix of each slot (own_slot_: the smaller)
  std::size_t limit_for_test_ = SIZE_MAX, grown_bytes_ = 0;
  bool warned_slot_ = false, warned_shared_ = false;
};

}  // namespace qcoll::comm
