#include "comm/shm_communicator.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "comm/process_info.hpp"
#include "comm/text.hpp"
#include "comm/window_plan.hpp"

namespace qcoll::comm {

namespace {
constexpr uint64_t kMagic = 0x71636f6c6c73686dULL;  // "qcollshm"
constexpr std::size_t kPage = 4096;
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory counters must be lock-free");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared-memory state must be lock-free");

// How long a waiter spins (pause instructions), then yields, before it sleeps on the peer's
// futex word; and the longest sleep before it checks the peer's liveness and its deadline.
constexpr int kWaitSpins = 128;
constexpr int kWaitYields = 4;
constexpr long kFutexNapNanos = 2'000'000;  // 2 ms

// The process-shared futex of a 32-bit word in the segment (FUTEX_WAIT, not PRIVATE: the
// waiters are other processes).
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, long nanos) {
  const timespec ts{0, nanos};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}
void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex words are plain 32-bit words");

// Slots grow in steps of this many bytes (fewer growth steps for sizes that creep up).
constexpr std::size_t kGrowAlign = std::size_t{64} << 10;

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
    c->failure.store(kFailureOther, std::memory_order_relaxed);
    c->pid.store(0, std::memory_order_relaxed);
    c->pid_ns.store(0, std::memory_order_relaxed);
    c->seq.store(0, std::memory_order_relaxed);
    c->sleepers.store(0, std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kMagic;
}

ShmCommunicator::ShmCommunicator(std::string name, int rank, int nranks, std::size_t window_bytes, ShmMapping mapping)
    : name_(std::move(name)),
      rank_(rank),
      nranks_(nranks),
      window_bytes_(round_up(window_bytes, kPage)),
      mapping_(std::move(mapping)) {
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
  notify_peers();
}

ShmCommunicator::~ShmCommunicator() {
  if (valid_ && !abandoned_) {
    RankControl& me = control(rank_);
    if (me.state.load(std::memory_order_relaxed) == kStateActive) me.state.store(kStateLeft, std::memory_order_release);
    notify_peers();
  }
}

ShmCommunicator::RankControl& ShmCommunicator::control(int k) const {
  return *reinterpret_cast<RankControl*>(mapping_.data() + controls_offset() + k * sizeof(RankControl));
}

unsigned char* ShmCommunicator::slot(int k, uint64_t step) const {
  return mapping_.data() + windows_offset(nranks_) + k * window_bytes_ + (step & 1) * slot_bytes();
}

std::size_t ShmCommunicator::max_part_bytes(StepShape::Kind kind) const {
  // An exchange chunk keeps the window rule's 1 MB reserve; an all-gather part may fill its slot.
  if (kind == StepShape::Kind::PerDestination) return contract::window_slot_bytes(window_bytes_) / nranks_;
  return slot_bytes() / kSegmentAlign * kSegmentAlign;
}

Status ShmCommunicator::broken_status() const {
  return Status::Error(StatusCode::RuntimeError, "communicator \"" + name_ + "\" is broken: " + broken_reason_);
}

Status ShmCommunicator::fail(Status s, uint32_t why) {
  if (!broken_) {
    broken_ = true;
    broken_reason_ = s.message;
    if (valid_ && !abandoned_) {
      control(rank_).failure.store(why, std::memory_order_relaxed);
      control(rank_).state.store(kStateFailed, std::memory_order_release);
      notify_peers();
    }
  }
  return s;
}

Status ShmCommunicator::peer_failed(int k) const {
  const RankControl& c = control(k);
  if (c.state.load(std::memory_order_acquire) != kStateFailed) return Status::Ok();
  const int32_t pid = c.pid.load(std::memory_order_relaxed);
  const std::string who = "rank " + std::to_string(k) + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "");
  if (c.failure.load(std::memory_order_relaxed) == kFailureTimeout) {
    return Status::Error(StatusCode::RuntimeError, "the group broke: " + who +
                                                       " timed out (QCOLL_TIMEOUT_S) waiting for its peers in a "
                                                       "call; destroy the communicator and create it again");
  }
  return Status::Error(StatusCode::RuntimeError, "the group broke: " + who +
                                                     " failed in a call (a peer of it left, "
                                                     "exited or failed); destroy the communicator and create it again");
}

Status ShmCommunicator::peer_gone(int k) const {
  const RankControl& c = control(k);
  const uint32_t state = c.state.load(std::memory_order_acquire);
  const int32_t pid = c.pid.load(std::memory_order_relaxed);
  const std::string who = "rank " + std::to_string(k) + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "");
  if (state == kStateLeft) return Status::Error(StatusCode::RuntimeError, who + " destroyed the communicator");
  if (state == kStateFailed) return peer_failed(k);
  // A pid means something only in its own pid namespace (ranks in other containers: skip).
  const bool same_ns = pid_ns_ != 0 && c.pid_ns.load(std::memory_order_relaxed) == pid_ns_;
  if (pid > 0 && same_ns && !process_alive(pid)) return Status::Error(StatusCode::RuntimeError, who + " has exited");
  return Status::Ok();
}

void ShmCommunicator::notify_peers() {
  // Dekker-style with the waiter (wait_all): the change (a release store) comes before the
  // bump, the bump before reading `sleepers`; the waiter counts itself in `sleepers` before it
  // reads `seq` and checks again. So either the waiter sees the change, or its futex wait
  // finds `seq` moved, or this wakes it.
  RankControl& me = control(rank_);
  me.seq.fetch_add(1, std::memory_order_seq_cst);
  if (me.sleepers.load(std::memory_order_seq_cst) > 0) futex_wake_all(me.seq);
}

template <class Pred>
Status ShmCommunicator::wait_all(const Pred& pred, Clock::time_point deadline, const char* what) {
  const Clock::time_point start = Clock::now();
  for (int k = 0; k < nranks_; ++k) {
    // A short spin for a peer that is about to arrive (it runs on another core), a few
    // yields for one that waits for this core, then sleeps on its futex word, waking at
    // least every kFutexNapNanos to check its liveness and the deadline.
    for (int i = 0; i < kWaitSpins && !pred(k); ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    for (int i = 0; i < kWaitYields && !pred(k); ++i) sched_yield();
    RankControl& peer = control(k);
    while (!pred(k)) {
      peer.sleepers.fetch_add(1, std::memory_order_seq_cst);
      const uint32_t seen = peer.seq.load(std::memory_order_seq_cst);
      if (!pred(k)) futex_wait(peer.seq, seen, kFutexNapNanos);
      peer.sleepers.fetch_sub(1, std::memory_order_seq_cst);
      if (pred(k)) break;
      if (Status gone = peer_gone(k); !gone.ok()) {
        if (pred(k)) break;  // it finished its part before it went away
        return fail(Status::Error(StatusCode::RuntimeError,
                                  "shared memory transport, " + std::string(what) + ": " + gone.message));
      }
      if (Clock::now() >= deadline) {
        return fail(
            Status::Error(StatusCode::RuntimeError, "shared memory transport, " + std::string(what) +
                                                        ": timed out after " + seconds_text(Clock::now() - start) +
                                                        " s (QCOLL_TIMEOUT_S) waiting for rank " + std::to_string(k)),
            kFailureTimeout);
      }
    }
  }
  return Status::Ok();
}

Status ShmCommunicator::begin_step(const StepShape& shape, const char* what, Clock::time_point deadline, Step* step) {
  if (broken_) return broken_status();
  // A peer that failed (e.g. timed out while this rank was absent) may have published data
  // of a call this rank never made: stop before reading any of it.
  // (A rank that timed out is the cause; the others may have failed because of it.)
  int failed = -1;
  for (int k = 0; k < nranks_; ++k) {
    if (control(k).state.load(std::memory_order_acquire) != kStateFailed) continue;
    if (failed < 0 || control(k).failure.load(std::memory_order_relaxed) == kFailureTimeout) failed = k;
    if (control(failed).failure.load(std::memory_order_relaxed) == kFailureTimeout) break;
  }
  if (failed >= 0) {
    return fail(Status::Error(StatusCode::RuntimeError,
                              "shared memory transport, " + std::string(what) + ": " + peer_failed(failed).message));
  }
  const uint64_t g = next_step_;
  if (g >= 2) {
    Status s =
        wait_all([&](int k) { return control(k).consumed.load(std::memory_order_acquire) + 1 >= g; }, deadline, what);
    if (!s.ok()) return s;
  }
  steps_[g & 1] = StepInfo{shape, what};
  next_step_ = g + 1;
  *step = g;
  return Status::Ok();
}

PartRegion ShmCommunicator::region(Step s, int dest) {
  return steps_[s & 1].shape.part_in<PartRegion>(slot(rank_, s), dest);
}

Status ShmCommunicator::publish(Step s) {
  if (broken_) return broken_status();
  control(rank_).written.store(s + 1, std::memory_order_release);
  notify_peers();
  return Status::Ok();
}

Status ShmCommunicator::wait_step(Step s, Clock::time_point deadline) {
  if (broken_) return broken_status();
  return wait_all([&](int k) { return control(k).written.load(std::memory_order_acquire) >= s + 1; }, deadline,
                  steps_[s & 1].what);
}

PartView ShmCommunicator::view(Step s, int src) const {
  return steps_[s & 1].shape.part_in<PartView>(static_cast<const unsigned char*>(slot(src, s)), rank_);
}

Status ShmCommunicator::release(Step s) {
  if (broken_) return broken_status();
  control(rank_).consumed.store(s + 1, std::memory_order_release);
  notify_peers();
  return Status::Ok();
}

Status ShmCommunicator::allgather_records(const void* mine, std::size_t bytes, void* all, Clock::time_point deadline) {
  if (bytes > kMaxRecordBytes) return Status::Error(StatusCode::InnerError, "records larger than kMaxRecordBytes");
  StepShape shape;
  shape.kind = StepShape::Kind::Same;
  shape.seg_bytes[0] = bytes;
  Step g = 0;
  if (Status s = begin_step(shape, "agreeing on the call", deadline, &g); !s.ok()) return s;
  std::memcpy(control(rank_).record[g & 1], mine, bytes);
  if (Status s = publish(g); !s.ok()) return s;
  if (Status s = wait_step(g, deadline); !s.ok()) return s;
  for (int k = 0; k < nranks_; ++k)
    std::memcpy(static_cast<unsigned char*>(all) + k * bytes, control(k).record[g & 1], bytes);
  return release(g);
}

uint8_t* ShmCommunicator::shared_block(int k) const {
  if (shared_cap_ == 0) return nullptr;
  return mapping_.data() + windows_offset(nranks_) + k * window_bytes_ + window_bytes_ - shared_cap_;
}

Status ShmCommunicator::grow(std::size_t offset, std::size_t len, bool* no_space) {
  if (grown_bytes_ + len > limit_for_test_) {
    *no_space = true;
    return Status::Error(StatusCode::InnerError, "shared memory: no room in /dev/shm (test limit)");
  }
  Status s = mapping_.allocate(windows_offset(nranks_) + rank_ * window_bytes_ + offset, len, no_space);
  if (s.ok()) grown_bytes_ += len;
  return s;
}

std::size_t ShmCommunicator::grow_slots(std::size_t target, bool* no_space, std::string* why) {
  if (own_slot_ >= target) return target;
  const std::size_t half = slot_bytes();
  // As much as /dev/shm gives, halving down to what every rank has already.
  for (std::size_t t = target; t > slot_cap_ && t > own_slot_; t = round_up(t / 2, kGrowAlign)) {
    Status a;
    for (int p = 0; p < 2 && a.ok(); ++p) {
      if (own_ext_[p] >= t) continue;  // a slot may be ahead of the other after a failure
      a = grow(p * half + own_ext_[p], t - own_ext_[p], no_space);
      if (a.ok()) own_ext_[p] = t;
    }
    if (a.ok()) {
      own_slot_ = t;
      return t;
    }
    *why = a.message;
    if (!*no_space || t <= kGrowAlign) break;
  }
  return std::max(slot_cap_, std::min(own_slot_, target));
}

std::size_t ShmCommunicator::grow_shared(std::size_t target, bool* no_space, std::string* why) {
  if (own_shared_ >= target) return target;
  Status a = grow(window_bytes_ - target, target - own_shared_, no_space);
  if (!a.ok()) {
    *why = a.message;
    return own_shared_;
  }
  own_shared_ = target;
  return target;
}

void ShmCommunicator::warn_no_room(std::size_t slot_need, std::size_t shared_need, const std::string& why) {
  if (slot_cap_ < slot_need && !warned_slot_) {
    warned_slot_ = true;
    std::fprintf(stderr,
                 "qcoll: group '%s' (shm): /dev/shm has no room for %s MB per slot on every rank (%s MB reserved%s%s); "
                 "data moves in smaller chunks on the shm transport (enlarge /dev/shm, or lower HCCL_BUFFSIZE)\n",
                 name_.c_str(), mb_text(slot_need).c_str(), mb_text(slot_cap_).c_str(), why.empty() ? "" : "; ",
                 why.c_str());
  }
  if (shared_cap_ < shared_need && !warned_shared_) {
    warned_shared_ = true;
    std::fprintf(stderr,
                 "qcoll: group '%s' (shm): /dev/shm has no room for the %s MB shared result block on every rank%s%s; "
                 "results are staged in process memory and gathered through the slots (slower)\n",
                 name_.c_str(), mb_text(shared_need).c_str(), why.empty() ? "" : ": ", why.c_str());
  }
}

Status ShmCommunicator::reserve(std::size_t slot_need, std::size_t shared_need, Clock::time_point deadline) {
  if (broken_) return broken_status();
  const std::size_t half = slot_bytes();
  slot_need = std::min(round_up(slot_need, kGrowAlign), half);
  shared_need = round_up(shared_need, kPage);
  if (shared_need > half - std::max(slot_need, slot_cap_)) shared_need = 0;  // does not fit beside the slots
  if (slot_need <= slot_cap_ && shared_need <= shared_cap_) return Status::Ok();

  // Every rank takes this branch (the same arguments and agreed capacities on every rank).
  const std::size_t slot_target = std::max(slot_need, slot_cap_);
  const std::size_t shared_target = std::max(shared_need, std::min(shared_cap_, half - slot_target));
  bool no_space = false;
  std::string why;
  const std::size_t got_slot = grow_slots(slot_target, &no_space, &why);
  const std::size_t got_shared = std::min(grow_shared(shared_target, &no_space, &why), half - got_slot);

  uint64_t mine[2] = {got_slot, got_shared};
  std::vector<uint64_t> all(2 * static_cast<std::size_t>(nranks_));
  if (Status st = allgather_records(mine, sizeof mine, all.data(), deadline); !st.ok()) return st;
  std::size_t slot = SIZE_MAX, shared = SIZE_MAX;
  for (int k = 0; k < nranks_; ++k) {
    slot = std::min<std::size_t>(slot, all[2 * k]);
    shared = std::min<std::size_t>(shared, all[2 * k + 1]);
  }
  slot_cap_ = slot;
  shared_cap_ = shared;
  warn_no_room(slot_need, shared_need, why);
  return Status::Ok();
}

std::string ShmCommunicator::no_room_message(std::size_t slot_bytes_needed) const {
  return "shm transport: /dev/shm has no room for one row from each of " + std::to_string(nranks_) + " ranks (" +
         std::to_string(slot_bytes_needed) + " bytes per slot, 2 slots per rank; " + std::to_string(slot_cap_) +
         " reserved): enlarge /dev/shm or use QCOLL_TRANSPORT=mpi";
}

Traits ShmCommunicator::traits() const { return {.window_bytes = window_bytes_, .may_fail_mid_call = true}; }

}  // namespace qcoll::comm
