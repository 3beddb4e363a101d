#include "comm/mpi/mpi_communicator.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "comm/mpi/mpi_util.hpp"
#include "comm/window_plan.hpp"

namespace qcoll::comm::mpi {

namespace {
// A chunk is reduced in about this many pieces, with an MPI_Test between them.
constexpr std::size_t kPiecesPerChunk = 8;
}  // namespace

MpiCommunicator::MpiCommunicator(std::string name, MPI_Comm comm, std::size_t window_bytes)
    : name_(std::move(name)), comm_(comm), window_bytes_(window_bytes) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &nranks_);
  slot_bytes_ = round_up(window_bytes_ / 2, kWindowPartAlign);
  MPI_Type_contiguous(static_cast<int>(kWindowPartAlign), MPI_BYTE, &block512_);
  MPI_Type_commit(&block512_);
  desc_ = new CallDescriptor[static_cast<std::size_t>(nranks_) + 1]();
  chunk_x_.resize(nranks_);
  chunk_scales_.resize(nranks_);
}

MpiCommunicator::~MpiCommunicator() {
  if (broken_) {
    // Pending requests (a timed-out MPI_Iallgather/Ialltoall) may still reference comm_,
    // buffers_ and desc_, and a late peer's message may still land in them: keep them for
    // the life of the process, reachable from here so that leak checkers do not report them.
    static std::mutex kept_mu;
    static auto* kept = new std::vector<void*>;
    std::lock_guard<std::mutex> lk(kept_mu);
    kept->push_back(buffers_);
    kept->push_back(desc_);
    return;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    MPI_Type_free(&block512_);
    MPI_Comm_free(&comm_);
  }
  std::free(buffers_);
  delete[] desc_;
}

std::size_t MpiCommunicator::max_chunk_rows(const ExchangeSpec& spec) const {
  return max_chunk_rows_for_window(window_bytes_, nranks_, spec);
}

Status MpiCommunicator::ensure_buffers() {
  if (buffers_ != nullptr) return Status::Ok();
  // Allocated on first use; pages the calls never touch are never committed.
  buffers_ = static_cast<unsigned char*>(std::aligned_alloc(4096, round_up(4 * slot_bytes_, 4096)));
  if (buffers_ == nullptr) {
    return Status::Error(StatusCode::InnerError, "MPI transport: cannot allocate " +
                                                     std::to_string(4 * slot_bytes_ >> 20) +
                                                     " MB of staging buffers (2 x HCCL_BUFFSIZE)");
  }
  return Status::Ok();
}

Status MpiCommunicator::broken_status() const {
  return Status::Error(StatusCode::RuntimeError, "communicator \"" + name_ + "\" is broken: " + broken_reason_);
}

Status MpiCommunicator::fail(Status s) {
  if (!broken_) {
    broken_ = true;
    broken_reason_ = s.message;
  }
  return s;
}

Status MpiCommunicator::wait(MPI_Request& req, Clock::time_point deadline, const char* what) {
  Status s = mpi::wait(req, deadline, std::string("MPI transport, ") + what);
  return s.ok() ? s : fail(std::move(s));
}

Status MpiCommunicator::allgather_descriptors(const CallDescriptor& mine, std::vector<CallDescriptor>& all,
                                              Clock::time_point deadline) {
  if (broken_) return broken_status();
  desc_[0] = mine;
  MPI_Request req = MPI_REQUEST_NULL;
  Status s = check(MPI_Iallgather(&desc_[0], sizeof(CallDescriptor), MPI_BYTE, &desc_[1],
                                  sizeof(CallDescriptor), MPI_BYTE, comm_, &req),
                   "MPI_Iallgather");
  if (!s.ok()) return fail(std::move(s));
  if (s = wait(req, deadline, "agreeing on the call"); !s.ok()) return s;
  all.assign(desc_ + 1, desc_ + 1 + nranks_);
  return Status::Ok();
}

Status MpiCommunicator::exchange(const ExchangeSpec& spec, const ChunkConsumer& consume, Clock::time_point deadline) {
  if (broken_) return broken_status();
  const std::size_t max_rows = max_chunk_rows(spec);
  if (max_rows == 0 && spec.rows_per_rank > 0) {
    return Status::Error(StatusCode::ParamInvalid, window_too_small_message(window_bytes_, nranks_, spec));
  }
  if (Status s = ensure_buffers(); !s.ok()) return s;
  const std::size_t nchunks = (spec.rows_per_rank + max_rows - 1) / max_rows;
  auto rows_of = [&](std::size_t i) { return std::min(max_rows, spec.rows_per_rank - i * max_rows); };
  MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};

  auto start = [&](std::size_t i) -> Status {
    const std::size_t row0 = i * max_rows, rows = rows_of(i);
    const ChunkLayout l = chunk_layout(nranks_, rows, spec.x_row_bytes, spec.s_row_bytes);
    unsigned char* dst = send_slot(i);
    for (int d = 0; d < nranks_; ++d) {
      const std::size_t src_row = d * spec.rows_per_rank + row0;
      unsigned char* part = dst + d * l.per_dest_bytes;
      std::memcpy(part, spec.x + src_row * spec.x_row_bytes, rows * spec.x_row_bytes);
      std::memcpy(part + l.x_bytes, spec.scales + src_row * spec.s_row_bytes, rows * spec.s_row_bytes);
    }
    const int count = static_cast<int>(l.per_dest_bytes / kWindowPartAlign);
    Status s = check(MPI_Ialltoall(dst, count, block512_, recv_slot(i), count, block512_, comm_, &req[i & 1]),
                     "MPI_Ialltoall");
    return s.ok() ? s : fail(std::move(s));
  };

  Status consumer_status;
  if (Status s = start(0); !s.ok()) return s;
  for (std::size_t i = 0; i < nchunks; ++i) {
    if (Status s = wait(req[i & 1], deadline, "exchanging data"); !s.ok()) return s;
    const bool next = i + 1 < nchunks;
    if (next) {
      if (Status s = start(i + 1); !s.ok()) return s;
    }
    if (!consumer_status.ok()) continue;  // keep the protocol going, consume nothing more
    const std::size_t rows = rows_of(i);
    const ChunkLayout l = chunk_layout(nranks_, rows, spec.x_row_bytes, spec.s_row_bytes);
    const std::size_t piece_rows = std::max<std::size_t>(1, (rows + kPiecesPerChunk - 1) / kPiecesPerChunk);
    for (std::size_t r = 0; r < rows && consumer_status.ok(); r += piece_rows) {
      const std::size_t n = std::min(piece_rows, rows - r);
      for (int k = 0; k < nranks_; ++k) {
        const unsigned char* part = recv_slot(i) + k * l.per_dest_bytes;
        chunk_x_[k] = part + r * spec.x_row_bytes;
        chunk_scales_[k] = part + l.x_bytes + r * spec.s_row_bytes;
      }
      Chunk c;
      c.row_begin = i * max_rows + r;
      c.rows = n;
      c.x = chunk_x_.data();
      c.scales = chunk_scales_.data();
      consumer_status = consume(c);
      if (next) {
        bool done = false;  // drive the transfer of the next chunk
        if (Status s = test(req[(i + 1) & 1], done); !s.ok()) return fail(std::move(s));
      }
    }
  }
  return consumer_status;
}

Status MpiCommunicator::allgather_inplace(void* buf, std::size_t block_bytes, Clock::time_point deadline) {
  if (broken_) return broken_status();
  if (Status s = ensure_buffers(); !s.ok()) return s;
  auto* base = static_cast<unsigned char*>(buf);
  const std::size_t piece_max = std::min<std::size_t>(slot_bytes_ / nranks_, std::size_t{1} << 30);  // int counts
  for (std::size_t off = 0, i = 0; off < block_bytes; off += piece_max, ++i) {
    const std::size_t piece = std::min(piece_max, block_bytes - off);
    std::memcpy(send_slot(i), base + rank_ * block_bytes + off, piece);
    MPI_Request req = MPI_REQUEST_NULL;
    Status s = check(MPI_Iallgather(send_slot(i), static_cast<int>(piece), MPI_BYTE, recv_slot(i),
                                    static_cast<int>(piece), MPI_BYTE, comm_, &req),
                     "MPI_Iallgather");
    if (!s.ok()) return fail(std::move(s));
    if (s = wait(req, deadline, "gathering results"); !s.ok()) return s;
    for (int k = 0; k < nranks_; ++k) {
      if (k != rank_) std::memcpy(base + k * block_bytes + off, recv_slot(i) + k * piece, piece);
    }
  }
  return Status::Ok();
}

}  // namespace qcoll::comm::mpi
