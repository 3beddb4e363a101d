// The MPI transport (ranks on several hosts, or any ranks when QCOLL_TRANSPORT=mpi): a
// duplicate of the user's MPI communicator with MPI_ERRORS_RETURN, and nonblocking
// collectives polled with MPI_Test against the caller's deadline.
//
// exchange(): per chunk, every rank packs its rows for each destination into a send slot
// (layout of window_plan.hpp) and starts MPI_Ialltoall into a receive slot. Chunk i+1 is
// started before chunk i is dequantized and reduced, and the reduction of chunk i runs in
// pieces with MPI_Test calls between them, so the transfer of the next chunk makes progress
// meanwhile. Two send and two receive slots of HCCL_BUFFSIZE/2 MB each.
//
// After a timeout MPI may still write into this communicator's buffers (a collective cannot
// be cancelled), so a broken communicator never frees them and never uses MPI again.
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
  std::size_t max_chunk_rows(const ExchangeSpec& spec) const override;

  Status allgather_descriptors(const CallDescriptor& mine, std::vector<CallDescriptor>& all,
                               Clock::time_point deadline) override;
  Status exchange(const ExchangeSpec& spec, const ChunkConsumer& consume, Clock::time_point deadline) override;
  Status allgather_inplace(void* buf, std::size_t block_bytes, Clock::time_point deadline) override;

  bool may_fail_mid_call() const override { return true; }
  bool usable() const override { return !broken_; }
  std::string broken_reason() const override { return broken_reason_; }

 private:
  Status ensure_buffers();
  unsigned char* send_slot(std::size_t i) const { return buffers_ + (i & 1) * slot_bytes_; }
  unsigned char* recv_slot(std::size_t i) const { return buffers_ + (2 + (i & 1)) * slot_bytes_; }
  Status fail(Status s);
  Status broken_status() const;
  Status wait(MPI_Request& req, Clock::time_point deadline, const char* what);

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
  // The buffers of the descriptor all-gather: [0] sent, [1 .. n] received. Heap memory that
  // is leaked, like buffers_, when the communicator is destroyed broken: a timed-out
  // MPI_Iallgather stays pending and a late peer's message would still be written there.
  CallDescriptor* desc_ = nullptr;
  std::vector<const uint8_t*> chunk_x_, chunk_scales_;
};

}  // namespace qcoll::comm::mpi
