// The communicator interface: what an operator needs from a transport, and nothing about
// how the transport moves bytes. Implementations: threads of one process (thread_group),
// shared memory and MPI (see the Transports issue).
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include "qcoll/status.hpp"

namespace qcoll::comm {

// What every rank contributes before data moves, so that all ranks agree on the call.
// Plain data: transports may copy it as bytes.
struct CallDescriptor {
  int32_t op = 0;             // 1 = QuantReduceScatter, 2 = QuantAllReduce
  int32_t x_dtype = -1;
  int32_t scales_dtype = -1;
  int32_t out_dtype = -1;
  int32_t ndim = 0;           // x's rank (2 or 3)
  int32_t local_status = 0;   // 0: this rank validated its call; else its status code
  int64_t shape[3] = {0, 0, 0};  // x's shape (unused dims 0)
};
bool same_call(const CallDescriptor& a, const CallDescriptor& b);  // ignores local_status

// The reduce-scatter exchange. Every rank holds `nranks` row blocks of rows_per_rank rows
// each (x: x_row_bytes per row; scales: s_row_bytes per row, row-major, contiguous).
// Rank r receives block r of every rank's x and scales.
struct ExchangeSpec {
  const uint8_t* x = nullptr;
  std::size_t x_row_bytes = 0;
  const uint8_t* scales = nullptr;
  std::size_t s_row_bytes = 0;
  std::size_t rows_per_rank = 0;
};

// A piece of the received data: rows [row_begin, row_begin + rows) of this rank's block,
// from each source rank k = 0..n-1: x[k] and scales[k] point at row row_begin.
struct Chunk {
  std::size_t row_begin = 0;
  std::size_t rows = 0;
  const uint8_t* const* x = nullptr;       // size() pointers
  const uint8_t* const* scales = nullptr;  // size() pointers
};
using ChunkConsumer = std::function<Status(const Chunk&)>;

using Clock = std::chrono::steady_clock;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const std::string& name() const = 0;
  virtual const char* transport() const = 0;  // "threads", "shm", "mpi"
  // Ranks of this communicator that run on this host (they share its cores). Transports
  // that cannot tell return size().
  virtual int local_size() const { return size(); }

  // Bytes of the staging window per rank (HCCL_BUFFSIZE), or 0 when the transport reads
  // peers' buffers directly (then contract.md §rule-11 does not apply).
  virtual std::size_t window_bytes() const { return 0; }
  // Largest number of rows one chunk of `spec` may hold in the window (0: the window cannot
  // hold one row: PARAM_INVALID naming HCCL_BUFFSIZE). Transports without a window: all rows.
  virtual std::size_t max_chunk_rows(const ExchangeSpec& spec) const { return spec.rows_per_rank; }

  // Every rank contributes `mine`; on success `all` holds size() descriptors in rank order.
  // Returns RUNTIME_ERROR when a peer does not arrive by `deadline` or the transport failed.
  // Safe to call again right after it returns, on every rank.
  virtual Status allgather_descriptors(const CallDescriptor& mine, std::vector<CallDescriptor>& all,
                                       Clock::time_point deadline) = 0;

  // The reduce-scatter exchange; calls `consume` for consecutive chunks covering this rank's
  // rows_per_rank rows. Sources stay valid only during the call to consume. If consume
  // returns an error the exchange still completes its protocol with the peers, then returns it.
  virtual Status exchange(const ExchangeSpec& spec, const ChunkConsumer& consume,
                          Clock::time_point deadline) = 0;

  // All-gather in place: buf holds size() blocks of block_bytes, block rank() filled on
  // entry; on success every block is filled with the owner's data.
  virtual Status allgather_inplace(void* buf, std::size_t block_bytes, Clock::time_point deadline) = 0;

  // True when exchange()/allgather_inplace() can fail after a successful agreement (a peer
  // process dies mid-call). The operators then reduce into a staging buffer and write the
  // user's output only after every rank confirmed success, so no output is partly written.
  virtual bool may_fail_mid_call() const { return false; }

  // True while the communicator can be used; false after a failure that left peers out of
  // step (a timeout). broken_reason() says why.
  virtual bool usable() const { return true; }
  virtual std::string broken_reason() const { return {}; }
};

}  // namespace qcoll::comm
