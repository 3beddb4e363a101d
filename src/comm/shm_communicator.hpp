// The shared-memory transport: one rank per process, all processes on one host, exchanging
// through a segment that every rank maps (see shm_segment.hpp; set up over MPI by
// comm/mpi/process_communicator.cpp, or by any other rendezvous).
//
// Segment: a header, one control block per rank (step counters, pid, state, two call
// descriptors) and one window of HCCL_BUFFSIZE MB per rank, split into two slots.
// Every collective is a sequence of steps numbered 0, 1, 2, ... identically on all ranks.
// Step g uses slot g % 2. Rank r, in step g:
//   1. waits until every rank has consumed step g-2 (its slot is about to be overwritten),
//      i.e. consumed[k] >= g - 1 for all k;
//   2. writes its contribution into its own slot, then publishes written[r] = g + 1;
//   3. waits until written[k] >= g + 1 for all k, reads its peers' slots in place;
//   4. publishes consumed[r] = g + 1.
// So a rank fills the next slot while its peers still read the previous one (double
// buffering), and never overwrites data a peer has not finished reading. (Step 3 of g+1
// already implies step 1 of g+2, since a rank writes step g+1 only after reading step g;
// the explicit wait of step 1 keeps the rule visible and costs one load per rank.) Waiting is polite
// spinning against the caller's deadline; a peer that left, failed or died (its pid is gone)
// ends the wait at once with RUNTIME_ERROR; a timeout also does, and marks this rank failed
// so that its peers stop waiting too. After any such failure the communicator is broken.
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

class ShmCommunicator final : public Communicator {
 public:
  // Bytes of the segment for `nranks` ranks with `window_bytes` per rank.
  static std::size_t segment_bytes(int nranks, std::size_t window_bytes);
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
  std::size_t window_bytes() const override { return window_bytes_; }
  std::size_t max_chunk_rows(const ExchangeSpec& spec) const override;

  Status allgather_descriptors(const CallDescriptor& mine, std::vector<CallDescriptor>& all,
                               Clock::time_point deadline) override;
  Status exchange(const ExchangeSpec& spec, const ChunkConsumer& consume, Clock::time_point deadline) override;
  Status allgather_inplace(void* buf, std::size_t block_bytes, Clock::time_point deadline) override;

  bool may_fail_mid_call() const override { return true; }
  bool usable() const override { return !broken_; }
  std::string broken_reason() const override { return broken_reason_; }

  // For tests: pretend this process died (stop without marking the segment).
  void abandon_for_test() { abandoned_ = true; }

 private:
  struct alignas(128) RankControl {
    std::atomic<uint64_t> written;   // steps this rank has published
    std::atomic<uint64_t> consumed;  // steps this rank has finished reading
    std::atomic<uint32_t> state;     // kState*
    std::atomic<int32_t> pid;
    std::atomic<uint64_t> pid_ns;  // inode of its pid namespace: pids compare only within one
    CallDescriptor desc[2];          // the descriptor of step g lives in desc[g % 2]
  };
  struct Header {
    uint64_t magic;
    uint64_t window_bytes;
    int32_t nranks;
  };
  static constexpr uint32_t kStateAbsent = 0, kStateActive = 1, kStateLeft = 2, kStateFailed = 3;
  static std::size_t controls_offset();
  static std::size_t windows_offset(int nranks);

  RankControl& control(int k) const;
  unsigned char* slot(int k, uint64_t step) const;  // rank k's slot for step
  std::size_t slot_bytes() const { return window_bytes_ / 2; }

  // One step of the protocol above: write(my slot) then read(step) once every rank wrote.
  template <class Write, class Read>
  Status step(const Write& write, const Read& read, Clock::time_point deadline, const char* what);
  // Waits until pred(k) holds for every rank k.
  template <class Pred>
  Status wait_all(const Pred& pred, Clock::time_point deadline, const char* what);
  Status peer_gone(int k) const;  // RUNTIME_ERROR if rank k left, failed or died; else Ok
  Status fail(Status s);          // marks this rank failed and the communicator broken
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
  std::vector<const uint8_t*> chunk_x_, chunk_scales_;
};

}  // namespace qcoll::comm
