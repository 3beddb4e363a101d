// The MPI transport (ranks on several hosts, or any ranks when QCOLL_TRANSPORT=mpi): a
// duplicate of the user's MPI communicator with MPI_ERRORS_RETURN, and nonblocking
// collectives polled with MPI_Test against the caller's deadline.
//
// The step primitives of communicator.hpp: region() is a part of the send slot of the
// step's parity, publish() starts MPI_Ialltoall (PerDestination) or MPI_Iallgather (Same)
// into the receive slot, wait_step() polls it, view() reads the receive slot, progress()
// tests the requests in flight (so the next chunk moves while the caller reduces this one).
// Two send and two receive slots of HCCL_BUFFSIZE/2 MB each; records go through
// MPI_Iallgather of their own small buffers.
//
// After a timeout MPI may still write into this communicator's buffers (a collective cannot
// be cancelled), so a broken communicator never frees them and never uses MPI again, except
// that a rank that breaks by itself (a timeout, an MPI error) first sends every peer a short
// notice (point-to-point, never waited on): a peer that was absent from the call reads it at
// its next step and fails at once, saying the group broke, instead of waiting for its own
// timeout.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace qcoll::comm::mpi {

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm` (a duplicate with MPI_ERRORS_RETURN set).
  MpiCommunicator(std::string name, MPI_Comm comm, std::size_t window_bytes);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return nranks_; }
  const std::string& name() const override { return name_; }
  const char* transport() const override { return "mpi"; }
  std::size_t window_bytes() const override { return window_bytes_; }

  Status allgather_records(const void* mine, std::size_t bytes, void* all, Clock::time_point deadline) override;
  std::size_t max_part_bytes(StepShape::Kind kind) const override;
  bool own_part_in_place() const override { return false; }
  bool async_transfers() const override { return true; }
  Status begin_step(const StepShape& shape, const char* what, Clock::time_point deadline, Step* step) override;
  PartRegion region(Step s, int dest) override;
  Status publish(Step s) override;
  Status wait_step(Step s, Clock::time_point deadline) override;
  PartView view(Step s, int src) const override;
  Status progress() override;
  Status release(Step s) override;

  bool may_fail_mid_call() const override { return true; }
  bool usable() const override { return !broken_; }
  std::string broken_reason() const override { return broken_reason_; }

 private:
  struct StepInfo {
    StepShape shape;
    const char* what = "";
  };
  Status ensure_buffers();
  unsigned char* send_slot(std::size_t i) const { return buffers_ + (i & 1) * slot_bytes_; }
  unsigned char* recv_slot(std::size_t i) const { return buffers_ + (2 + (i & 1)) * slot_bytes_; }
  // Marks the communicator broken. A rank that found the failure itself (a timeout, an MPI
  // error) sends every peer the notice of that kind; one told by a notice sends none.
  enum class Notice { None, Timeout, Error };
  Status fail(Status s, Notice notice = Notice::Error);
  Status broken_status() const;
  Status wait(MPI_Request& req, Clock::time_point deadline, const char* what);
  Status check_notices();  // RUNTIME_ERROR (and broken) once a peer's notice arrived

  std::string name_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Datatype block512_ = MPI_DATATYPE_NULL;  // 512 contiguous bytes: counts stay small
  int rank_ = 0;
  int nranks_ = 0;
  std::size_t window_bytes_ = 0;
  std::size_t slot_bytes_ = 0;
  unsigned char* buffers_ = nullptr;  // 2 send slots, then 2 receive slots
  bool broken_ = false;
  std::string broken_reason_;
  // The buffers of the records all-gather: record 0 sent, 1 .. n received
  // (kMaxRecordBytes each). Heap memory that is leaked, like buffers_, when the
  // communicator is destroyed broken: a timed-out MPI_Iallgather stays pending and a late
  // peer's message would still be written there.
  unsigned char* records_ = nullptr;
  uint64_t next_step_ = 0;
  StepInfo steps_[2];                                      // by parity
  MPI_Request reqs_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};  // by parity
};

}  // namespace qcoll::comm::mpi
