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
// The notice a rank that broke by itself sends to its peers (tag kNoticeTag on the
// duplicated communicator: it never matches the collectives). Static: the sends are never
// waited on, so their buffers must outlive any communicator.
constexpr int kNoticeTag = 29000;
// The data steps of the p2p schedule; MPI's non-overtaking order pairs a peer's steps with
// this rank's receives in order, the tag per slot only keeps the steps in flight apart.
constexpr int kDataTag = 28000;
const int32_t kNoticeTimeout = 1, kNoticeError = 2;
}  // namespace

MpiCommunicator::MpiCommunicator(std::string name, MPI_Comm comm, std::size_t window_bytes, int local_size,
                                 settings::MpiSchedule schedule)
    : name_(std::move(name)),
      comm_(comm),
      local_size_(local_size),
      window_bytes_(window_bytes),
      schedule_(schedule) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &nranks_);
  slot_bytes_ = round_up(window_bytes_ / kDepth, kWindowPartAlign);
  MPI_Type_contiguous(static_cast<int>(kWindowPartAlign), MPI_BYTE, &block512_);
  MPI_Type_commit(&block512_);
  records_ = new unsigned char[(static_cast<std::size_t>(nranks_) + 1) * kMaxRecordBytes]();
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
    kept->push_back(records_);
    return;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    MPI_Type_free(&block512_);
    MPI_Comm_free(&comm_);
  }
  std::free(buffers_);
  delete[] records_;
}

std::size_t MpiCommunicator::max_part_bytes(StepShape::Kind kind) const {
  // A send slot holds one part per destination, within the window rule's reserve for
  // exchange chunks too; a receive slot one part per source.
  if (kind == StepShape::Kind::PerDestination)
    return std::min(contract::window_slot_bytes(window_bytes_), slot_bytes_) / nranks_;
  return slot_bytes_ / nranks_ / kSegmentAlign * kSegmentAlign;
}

Status MpiCommunicator::ensure_buffers() {
  if (buffers_ != nullptr) return Status::Ok();
  // Allocated on first use; pages the calls never touch are never committed.
  const std::size_t bytes = 2 * kDepth * slot_bytes_;
  buffers_ = static_cast<unsigned char*>(std::aligned_alloc(4096, round_up(bytes, 4096)));
  if (buffers_ == nullptr) {
    return Status::Error(StatusCode::InnerError, "MPI transport: cannot allocate " + std::to_string(bytes >> 20) +
                                                     " MB of staging buffers (2 x HCCL_BUFFSIZE)");
  }
  return Status::Ok();
}

Status MpiCommunicator::broken_status() const {
  return Status::Error(StatusCode::RuntimeError, "communicator \"" + name_ + "\" is broken: " + broken_reason_);
}

Status MpiCommunicator::fail(Status s, Notice notice_kind) {
  if (broken_) return s;
  broken_ = true;
  broken_reason_ = s.message;
  if (notice_kind != Notice::None) {
    const int32_t* notice = notice_kind == Notice::Timeout ? &kNoticeTimeout : &kNoticeError;
    for (int k = 0; k < nranks_; ++k) {
      if (k == rank_) continue;
      MPI_Request r = MPI_REQUEST_NULL;
      // Best effort: the peer may be gone. The request completes (or not) on its own.
      if (MPI_Isend(notice, 1, MPI_INT32_T, k, kNoticeTag, comm_, &r) == MPI_SUCCESS && r != MPI_REQUEST_NULL)
        MPI_Request_free(&r);
    }
  }
  return s;
}

Status MpiCommunicator::check_notices() {
  int flag = 0;
  MPI_Status st;
  if (MPI_Iprobe(MPI_ANY_SOURCE, kNoticeTag, comm_, &flag, &st) != MPI_SUCCESS || !flag) return Status::Ok();
  int32_t kind = 0;
  MPI_Recv(&kind, 1, MPI_INT32_T, st.MPI_SOURCE, kNoticeTag, comm_, MPI_STATUS_IGNORE);
  const std::string who = "rank " + std::to_string(st.MPI_SOURCE);
  return fail(Status::Error(StatusCode::RuntimeError,
                            "MPI transport: the group broke: " + who +
                                (kind == kNoticeTimeout ? " timed out (QCOLL_TIMEOUT_S) waiting for its peers in a call"
                                                        : " failed in a call (an MPI error)") +
                                "; destroy the communicator and create it again"),
              Notice::None);
}

Status MpiCommunicator::wait(MPI_Request* reqs, int count, Clock::time_point deadline, const char* what) {
  Status s = mpi::wait_all(reqs, count, deadline, std::string("MPI transport, ") + what,
                           [this] { return check_notices(); });
  if (s.ok() || broken_) return s;  // broken_: by a notice, already recorded
  return fail(std::move(s), Clock::now() >= deadline ? Notice::Timeout : Notice::Error);
}

Status MpiCommunicator::allgather_records(const void* mine, std::size_t bytes, void* all, Clock::time_point deadline) {
  if (broken_) return broken_status();
  if (bytes > kMaxRecordBytes) return Status::Error(StatusCode::InnerError, "records larger than kMaxRecordBytes");
  if (Status s = check_notices(); !s.ok()) return s;
  std::memcpy(records_, mine, bytes);
  MPI_Request req = MPI_REQUEST_NULL;
  Status s = check(MPI_Iallgather(records_, static_cast<int>(bytes), MPI_BYTE, records_ + kMaxRecordBytes,
                                  static_cast<int>(bytes), MPI_BYTE, comm_, &req),
                   "MPI_Iallgather");
  if (!s.ok()) return fail(std::move(s));
  if (s = wait(&req, 1, deadline, "agreeing on the call"); !s.ok()) return s;
  std::memcpy(all, records_ + kMaxRecordBytes, static_cast<std::size_t>(nranks_) * bytes);
  return Status::Ok();
}

bool MpiCommunicator::StepInfo::pending() const {
  for (MPI_Request r : reqs)
    if (r != MPI_REQUEST_NULL) return true;
  return false;
}

Status MpiCommunicator::begin_step(const StepShape& shape, const char* what, Clock::time_point, Step* step) {
  if (broken_) return broken_status();
  if (Status s = ensure_buffers(); !s.ok()) return s;
  const uint64_t g = next_step_;
  // The slot's previous step was waited for before this one began (at most kDepth in flight).
  StepInfo& info = steps_[slot_of(g)];
  if (info.pending()) return Status::Error(StatusCode::InnerError, "MPI transport: step still in flight");
  if (shape.part_bytes() * nranks_ > slot_bytes_) {
    return Status::Error(StatusCode::InnerError, "MPI transport: a step larger than its slot");
  }
  info.shape = shape;
  info.what = what;
  info.reqs.assign(schedule_ == settings::MpiSchedule::P2p ? 2 * static_cast<std::size_t>(nranks_ - 1) : 1,
                   MPI_REQUEST_NULL);
  next_step_ = g + 1;
  *step = g;
  return Status::Ok();
}

PartRegion MpiCommunicator::region(Step s, int dest) {
  return steps_[slot_of(s)].shape.part_in<PartRegion>(send_slot(s), dest);
}

// Every receive first (so that no message waits for its buffer), then the sends, peer
// me+1 first: at any moment the ranks send to different peers.
Status MpiCommunicator::start_p2p(Step s) {
  StepInfo& info = steps_[slot_of(s)];
  const StepShape& shape = info.shape;
  StepShape per_source = shape;  // a receive slot holds one part per source
  per_source.kind = StepShape::Kind::PerDestination;
  const int count = static_cast<int>(shape.part_bytes() / kSegmentAlign);  // parts are whole 512-byte blocks
  const int tag = kDataTag + static_cast<int>(slot_of(s));
  MPI_Request* req = info.reqs.data();
  for (int j = 1; j < nranks_; ++j) {
    const int src = (rank_ - j + nranks_) % nranks_;
    unsigned char* into = per_source.part_in<PartRegion>(recv_slot(s), src).seg[0];
    if (Status st = check(MPI_Irecv(into, count, block512_, src, tag, comm_, req++), "MPI_Irecv"); !st.ok()) return st;
  }
  for (int j = 1; j < nranks_; ++j) {
    const int dst = (rank_ + j) % nranks_;
    const unsigned char* from = shape.part_in<PartView>(static_cast<const unsigned char*>(send_slot(s)), dst).seg[0];
    if (Status st = check(MPI_Isend(from, count, block512_, dst, tag, comm_, req++), "MPI_Isend"); !st.ok()) return st;
  }
  return Status::Ok();
}

Status MpiCommunicator::publish(Step s) {
  if (broken_) return broken_status();
  StepInfo& info = steps_[slot_of(s)];
  const StepShape& shape = info.shape;
  const int count = static_cast<int>(shape.part_bytes() / kSegmentAlign);  // parts are whole 512-byte blocks
  Status st;
  if (schedule_ == settings::MpiSchedule::P2p) {
    st = start_p2p(s);
  } else {
    MPI_Request& req = info.reqs[0];
    st = shape.kind == StepShape::Kind::Same
             ? check(MPI_Iallgather(send_slot(s), count, block512_, recv_slot(s), count, block512_, comm_, &req),
                     "MPI_Iallgather")
             : check(MPI_Ialltoall(send_slot(s), count, block512_, recv_slot(s), count, block512_, comm_, &req),
                     "MPI_Ialltoall");
  }
  return st.ok() ? st : fail(std::move(st));
}

Status MpiCommunicator::wait_step(Step s, Clock::time_point deadline) {
  if (broken_) return broken_status();
  StepInfo& info = steps_[slot_of(s)];
  return wait(info.reqs.data(), static_cast<int>(info.reqs.size()), deadline, info.what);
}

PartView MpiCommunicator::view(Step s, int src) const {
  const StepInfo& info = steps_[slot_of(s)];
  if (src == rank_ && schedule_ == settings::MpiSchedule::P2p) {
    // Never sent: read where it was written (the Same part, or this rank's part of the send slot).
    return info.shape.part_in<PartView>(static_cast<const unsigned char*>(send_slot(s)), src);
  }
  StepShape per_source = info.shape;  // a receive slot holds one part per source
  per_source.kind = StepShape::Kind::PerDestination;
  return per_source.part_in<PartView>(static_cast<const unsigned char*>(recv_slot(s)), src);
}

Status MpiCommunicator::progress() {
  if (broken_) return broken_status();
  // One test of the oldest step in flight drives MPI's progress engine for all of them.
  for (uint64_t g = next_step_ >= kDepth ? next_step_ - kDepth : 0; g < next_step_; ++g) {
    StepInfo& info = steps_[slot_of(g)];
    if (!info.pending()) continue;
    bool done = false;
    if (Status st = test_all(info.reqs.data(), static_cast<int>(info.reqs.size()), done); !st.ok())
      return fail(std::move(st));
    break;
  }
  return Status::Ok();
}

Status MpiCommunicator::release(Step) { return broken_ ? broken_status() : Status::Ok(); }

}  // namespace qcoll::comm::mpi
