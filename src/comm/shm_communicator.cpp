#include "comm/shm_communicator.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "comm/backoff.hpp"
#include "comm/process_info.hpp"
#include "comm/window_plan.hpp"

namespace qcoll::comm {

namespace {
constexpr uint64_t kMagic = 0x71636f6c6c73686dULL;  // "qcollshm"
constexpr std::size_t kPage = 4096;
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory counters must be lock-free");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared-memory state must be lock-free");

std::string seconds_text(Clock::duration d) {
  const double s = std::chrono::duration<double>(d).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}
}  // namespace

std::size_t ShmCommunicator::controls_offset() { return round_up(sizeof(Header), 128); }

std::size_t ShmCommunicator::windows_offset(int nranks) {
  return round_up(controls_offset() + static_cast<std::size_t>(nranks) * sizeof(RankControl), kPage);
}

std::size_t ShmCommunicator::segment_bytes(int nranks, std::size_t window_bytes) {
  return windows_offset(nranks) + static_cast<std::size_t>(nranks) * round_up(window_bytes, kPage);
}

void ShmCommunicator::init_segment(unsigned char* base, int nranks, std::size_t window_bytes) {
  auto* h = new (base) Header{};
  h->window_bytes = window_bytes;
  h->nranks = nranks;
  for (int k = 0; k < nranks; ++k) {
    auto* c = new (base + controls_offset() + k * sizeof(RankControl)) RankControl{};
    c->written.store(0, std::memory_order_relaxed);
    c->consumed.store(0, std::memory_order_relaxed);
    c->state.store(kStateAbsent, std::memory_order_relaxed);
    c->pid.store(0, std::memory_order_relaxed);
    c->pid_ns.store(0, std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kMagic;
}

ShmCommunicator::ShmCommunicator(std::string name, int rank, int nranks, std::size_t window_bytes, ShmMapping mapping)
    : name_(std::move(name)), rank_(rank), nranks_(nranks), window_bytes_(round_up(window_bytes, kPage)),
      mapping_(std::move(mapping)), chunk_x_(nranks), chunk_scales_(nranks) {
  if (!mapping_ || rank < 0 || rank >= nranks || mapping_.bytes() != segment_bytes(nranks, window_bytes)) return;
  const auto* h = reinterpret_cast<const Header*>(mapping_.data());
  std::atomic_thread_fence(std::memory_order_acquire);
  if (h->magic != kMagic || h->nranks != nranks || h->window_bytes != window_bytes) return;
  RankControl& me = control(rank_);
  pid_ns_ = pid_namespace();
  me.pid_ns.store(pid_ns_, std::memory_order_relaxed);
  me.pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
  me.state.store(kStateActive, std::memory_order_release);
  valid_ = true;
}

ShmCommunicator::~ShmCommunicator() {
  if (valid_ && !abandoned_) {
    RankControl& me = control(rank_);
    if (me.state.load(std::memory_order_relaxed) == kStateActive) me.state.store(kStateLeft, std::memory_order_release);
  }
}

ShmCommunicator::RankControl& ShmCommunicator::control(int k) const {
  return *reinterpret_cast<RankControl*>(mapping_.data() + controls_offset() + k * sizeof(RankControl));
}

unsigned char* ShmCommunicator::slot(int k, uint64_t step) const {
  return mapping_.data() + windows_offset(nranks_) + k * window_bytes_ + (step & 1) * slot_bytes();
}

std::size_t ShmCommunicator::max_chunk_rows(const ExchangeSpec& spec) const {
  return max_chunk_rows_for_window(window_bytes_, nranks_, spec);
}

Status ShmCommunicator::broken_status() const {
  return Status::Error(StatusCode::RuntimeError, "communicator \"" + name_ + "\" is broken: " + broken_reason_);
}

Status ShmCommunicator::fail(Status s) {
  if (!broken_) {
    broken_ = true;
    broken_reason_ = s.message;
    if (valid_ && !abandoned_) control(rank_).state.store(kStateFailed, std::memory_order_release);
  }
  return s;
}

Status ShmCommunicator::peer_gone(int k) const {
  const RankControl& c = control(k);
  const uint32_t state = c.state.load(std::memory_order_acquire);
  const int32_t pid = c.pid.load(std::memory_order_relaxed);
  const std::string who = "rank " + std::to_string(k) + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "");
  if (state == kStateLeft) return Status::Error(StatusCode::RuntimeError, who + " destroyed the communicator");
  if (state == kStateFailed) return Status::Error(StatusCode::RuntimeError, who + " failed in this call");
  // A pid means something only in its own pid namespace (ranks in other containers: skip).
  const bool same_ns = pid_ns_ != 0 && c.pid_ns.load(std::memory_order_relaxed) == pid_ns_;
  if (pid > 0 && same_ns && !process_alive(pid)) return Status::Error(StatusCode::RuntimeError, who + " has exited");
  return Status::Ok();
}

template <class Pred>
Status ShmCommunicator::wait_all(const Pred& pred, Clock::time_point deadline, const char* what) {
  const Clock::time_point start = Clock::now();
  Backoff backoff;
  for (int k = 0; k < nranks_; ++k) {
    while (!pred(k)) {
      backoff.pause();
      if (!backoff.time_to_check()) continue;
      if (Status gone = peer_gone(k); !gone.ok()) {
        if (pred(k)) break;  // it finished its part before it went away
        return fail(Status::Error(StatusCode::RuntimeError,
                                  "shared memory transport, " + std::string(what) + ": " + gone.message));
      }
      if (Clock::now() >= deadline) {
        return fail(Status::Error(StatusCode::RuntimeError,
                                  "shared memory transport, " + std::string(what) + ": timed out after " +
                                      seconds_text(Clock::now() - start) + " s (QCOLL_TIMEOUT_S) waiting for rank " +
                                      std::to_string(k)));
      }
    }
  }
  return Status::Ok();
}

template <class Write, class Read>
Status ShmCommunicator::step(const Write& write, const Read& read, Clock::time_point deadline, const char* what) {
  if (broken_) return broken_status();
  const uint64_t g = next_step_;
  if (g >= 1) {
    Status s = wait_all([&](int k) { return control(k).consumed.load(std::memory_order_acquire) + 1 >= g; },
                        deadline, what);
    if (!s.ok()) return s;
  }
  write(slot(rank_, g));
  control(rank_).written.store(g + 1, std::memory_order_release);
  Status s = wait_all([&](int k) { return control(k).written.load(std::memory_order_acquire) >= g + 1; }, deadline,
                      what);
  if (!s.ok()) return s;
  read(g);
  control(rank_).consumed.store(g + 1, std::memory_order_release);
  next_step_ = g + 1;
  return Status::Ok();
}

Status ShmCommunicator::allgather_descriptors(const CallDescriptor& mine, std::vector<CallDescriptor>& all,
                                              Clock::time_point deadline) {
  uint64_t g = next_step_;
  return step([&](unsigned char*) { control(rank_).desc[g & 1] = mine; },
              [&](uint64_t step_no) {
                all.resize(nranks_);
                for (int k = 0; k < nranks_; ++k) all[k] = control(k).desc[step_no & 1];
              },
              deadline, "agreeing on the call");
}

Status ShmCommunicator::exchange(const ExchangeSpec& spec, const ChunkConsumer& consume, Clock::time_point deadline) {
  if (broken_) return broken_status();
  const std::size_t max_rows = max_chunk_rows(spec);
  if (max_rows == 0 && spec.rows_per_rank > 0) {
    return Status::Error(StatusCode::ParamInvalid, window_too_small_message(window_bytes_, nranks_, spec));
  }
  Status consumer_status;
  for (std::size_t row0 = 0; row0 < spec.rows_per_rank; row0 += max_rows) {
    const std::size_t rows = std::min(max_rows, spec.rows_per_rank - row0);
    const ChunkLayout l = chunk_layout(nranks_, rows, spec.x_row_bytes, spec.s_row_bytes);
    auto write = [&](unsigned char* dst) {
      for (int d = 0; d < nranks_; ++d) {
        if (d == rank_) continue;  // this rank reads its own rows from its input directly
        const std::size_t src_row = d * spec.rows_per_rank + row0;
        unsigned char* part = dst + d * l.per_dest_bytes;
        std::memcpy(part, spec.x + src_row * spec.x_row_bytes, rows * spec.x_row_bytes);
        std::memcpy(part + l.x_bytes, spec.scales + src_row * spec.s_row_bytes, rows * spec.s_row_bytes);
      }
    };
    auto read = [&](uint64_t g) {
      if (!consumer_status.ok()) return;  // keep the protocol going, consume nothing more
      for (int k = 0; k < nranks_; ++k) {
        if (k == rank_) {
          const std::size_t my_row = rank_ * spec.rows_per_rank + row0;
          chunk_x_[k] = spec.x + my_row * spec.x_row_bytes;
          chunk_scales_[k] = spec.scales + my_row * spec.s_row_bytes;
          continue;
        }
        const unsigned char* part = slot(k, g) + rank_ * l.per_dest_bytes;
        chunk_x_[k] = part;
        chunk_scales_[k] = part + l.x_bytes;
      }
      Chunk c;
      c.row_begin = row0;
      c.rows = rows;
      c.x = chunk_x_.data();
      c.scales = chunk_scales_.data();
      consumer_status = consume(c);
    };
    if (Status s = step(write, read, deadline, "exchanging data"); !s.ok()) return s;
  }
  return consumer_status;
}

Status ShmCommunicator::allgather_inplace(void* buf, std::size_t block_bytes, Clock::time_point deadline) {
  if (broken_) return broken_status();
  auto* base = static_cast<unsigned char*>(buf);
  const std::size_t piece_max = slot_bytes();
  for (std::size_t off = 0; off < block_bytes; off += piece_max) {
    const std::size_t piece = std::min(piece_max, block_bytes - off);
    auto write = [&](unsigned char* dst) { std::memcpy(dst, base + rank_ * block_bytes + off, piece); };
    auto read = [&](uint64_t g) {
      for (int k = 0; k < nranks_; ++k) {
        if (k != rank_) std::memcpy(base + k * block_bytes + off, slot(k, g), piece);
      }
    };
    if (Status s = step(write, read, deadline, "gathering results"); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace qcoll::comm
