#include "comm/mpi/mpi_communicator.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "comm/mpi/mpi_util.hpp"
#include "comm/mpi/process_communicator.hpp"
#include "comm/window_plan.hpp"

namespace qcoll::comm::mpi {

namespace {
// The notice a rank that broke by itself sends to its peers (tag kNoticeTag on the
// duplicated communicator: it never matches the collectives). Static: the sends are never
// waited on, so their buffers must outlive any communicator.
constexpr int kNoticeTag = 29000;
const int32_t kNoticeTimeout = 1, kNoticeError = 2;
}  // namespace

MpiCommunicator::MpiCommunicator(std::string name, MPI_Comm comm, std::size_t window_bytes, std::vector<int> host_of,
                                 settings::MpiSchedule schedule, std::size_t chunk_part_bytes)
    : name_(std::move(name)),
      comm_(comm),
      window_bytes_(window_bytes),
      schedule_(schedule),
      chunk_part_bytes_(chunk_part_bytes) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &nranks_);
  depth_ = steps_in_flight(nranks_);
  slot_bytes_ = round_up(window_bytes_ / static_cast<std::size_t>(depth_), kWindowPartAlign);
  MPI_Type_contiguous(static_cast<int>(kWindowPartAlign), MPI_BYTE, &block512_);
  MPI_Type_commit(&block512_);
  records_ = new unsigned char[(static_cast<std::size_t>(nranks_) + 1) * kMaxRecordBytes]();
  if (host_of.size() != static_cast<std::size_t>(nranks_)) host_of.assign(nranks_, 0);  // unreachable
  local_size_ = static_cast<int>(std::count(host_of.begin(), host_of.end(), host_of[rank_]));
  plan_hosts_routes(host_of);
}

namespace testing {
namespace {
int g_steps_in_flight = 0;     // set_steps_in_flight_for_test
long long g_bundles_sent = 0;  // bundles_posted_for_test
}  // namespace
void set_steps_in_flight_for_test(int steps) { g_steps_in_flight = steps; }
long long bundles_posted_for_test() { return g_bundles_sent; }
}  // namespace testing

int MpiCommunicator::steps_in_flight(int nranks) {
  if (testing::g_steps_in_flight > 0) return std::clamp(testing::g_steps_in_flight, 2, kDepth);
  const int per_step = 2 * std::max(1, nranks - 1);
  return std::clamp(kMaxTransfersInFlight / per_step, 2, kDepth);
}

// The hosts in order of their numbers, each with its ranks in rank order; host[k], index[k]:
// rank k's host and its index among that host's ranks.
struct MpiCommunicator::HostLayout {
  std::vector<std::vector<int>> hosts;
  std::vector<int> host, index;
  // The rank of host h that receives origin k's part (Same steps) or bundle
  // (PerDestination steps) for that host.
  int receiver(int k, int h) const {
    const std::vector<int>& on = hosts[static_cast<std::size_t>(h)];
    return on[static_cast<std::size_t>(index[static_cast<std::size_t>(k)]) % on.size()];
  }
};

void MpiCommunicator::plan_hosts_routes(const std::vector<int>& host_of) {
  std::vector<int> keys(host_of);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  HostLayout layout;
  layout.hosts.resize(keys.size());
  layout.host.resize(nranks_);
  layout.index.resize(nranks_);
  std::vector<std::vector<int>>& hosts = layout.hosts;
  std::vector<int>& host = layout.host;
  for (int k = 0; k < nranks_; ++k) {
    host[k] = static_cast<int>(std::lower_bound(keys.begin(), keys.end(), host_of[k]) - keys.begin());
    layout.index[k] = static_cast<int>(hosts[host[k]].size());
    hosts[host[k]].push_back(k);
  }
  hosts_ = static_cast<int>(hosts.size());
  int tag_ub = 32767;  // the least MPI_TAG_UB the standard allows
  void* attr = nullptr;
  int flag = 0;
  if (MPI_Comm_get_attr(comm_, MPI_TAG_UB, &attr, &flag) == MPI_SUCCESS && flag) tag_ub = *static_cast<int*>(attr);
  const bool several_hosts = hosts.size() > 1, shared_host = hosts.size() < static_cast<std::size_t>(nranks_);
  hosts_routing_ = schedule_ == settings::MpiSchedule::Hosts && several_hosts && shared_host &&
                   static_cast<long long>(kHostsTag) + static_cast<long long>(kDepth) * nranks_ <= tag_ub;
  if (!hosts_routing_) return;
  const int mine = host[rank_];
  auto receiver = [&layout](int k, int h) { return layout.receiver(k, h); };
  recv_from_.assign(nranks_, -1);
  for (int k = 0; k < nranks_; ++k) {
    if (k == rank_) continue;
    const int via = host[k] == mine ? k : receiver(k, mine);
    const bool forward = via == rank_;  // k's part for this host comes here: take it from k, pass it on
    recv_from_[k] = forward ? k : via;
    if (forward) forward_origins_.push_back(k);
  }
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    if (static_cast<int>(h) == mine) continue;
    own_dests_.push_back(receiver(rank_, static_cast<int>(h)));  // the other hosts first: the slower links
  }
  for (int k : hosts[mine])
    if (k != rank_) {
      own_dests_.push_back(k);
      local_peers_.push_back(k);
    }
  plan_bundles(layout, tag_ub);
}

// Bundling applies when every host's ranks are one consecutive range (then the parts for a
// host are one contiguous range of a send slot) and the tags fit.
void MpiCommunicator::plan_bundles(const HostLayout& layout, int tag_ub) {
  const std::size_t nhosts = layout.hosts.size();
  for (const std::vector<int>& on : layout.hosts)
    for (std::size_t j = 0; j < on.size(); ++j)
      if (on[j] != on[0] + static_cast<int>(j)) return;
  if (kForwardTag + kDepth > tag_ub) return;
  bundling_ = true;
  my_host_ = layout.host[rank_];
  host_of_rank_ = layout.host;
  host_first_.assign(nhosts, 0);
  host_size_.assign(nhosts, 0);
  bundle_to_.assign(nhosts, -1);
  for (std::size_t h = 0; h < nhosts; ++h) {
    host_first_[h] = layout.hosts[h][0];
    host_size_[h] = static_cast<int>(layout.hosts[h].size());
    if (static_cast<int>(h) != my_host_) bundle_to_[h] = layout.receiver(rank_, static_cast<int>(h));
  }
  origin_pos_.assign(nranks_, -1);
  peer_origins_.assign(local_peers_.size(), {});
  for (int k = 0; k < nranks_; ++k) {
    if (layout.host[k] == my_host_) continue;
    const int via = layout.receiver(k, my_host_);
    if (via == rank_) {
      origin_pos_[k] = static_cast<int>(origins_.size());
      origins_.push_back(k);
    } else {
      peer_origins_[static_cast<std::size_t>(local_position(via))].push_back(k);
    }
  }
  forwarders_ = static_cast<int>(
      std::count_if(peer_origins_.begin(), peer_origins_.end(), [](const std::vector<int>& o) { return !o.empty(); }));
  // A bundle is local_size_ parts, each at most the slot's share of one rank (whole blocks).
  const std::size_t max_part = slot_bytes_ / static_cast<std::size_t>(nranks_) / kSegmentAlign * kSegmentAlign;
  staging_slot_bytes_ = origins_.size() * static_cast<std::size_t>(local_size_) * max_part;
  const std::size_t peers = local_peers_.size(), others = nhosts - 1;
  breq_.bundle_recv = peers;
  breq_.forward_recv = breq_.bundle_recv + origins_.size();
  breq_.direct_send = breq_.forward_recv + static_cast<std::size_t>(forwarders_);
  breq_.bundle_send = breq_.direct_send + peers;
  breq_.forward_send = breq_.bundle_send + others;
  breq_.total = breq_.forward_send + (origins_.empty() ? 0 : peers);
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
    for (StepInfo& info : steps_) free_types(info);
    MPI_Type_free(&block512_);
    MPI_Comm_free(&comm_);
  }
  std::free(buffers_);
  delete[] records_;
}

Traits MpiCommunicator::traits() const {
  return {.local_size = local_size_,
          .hosts = hosts_,
          .same_once_per_host = hosts_routing_ || hosts_ == 1 || hosts_ == nranks_,
          .window_bytes = window_bytes_,
          .own_part_in_place = false,
          .async_transfers = true,
          .max_steps_in_flight = depth_,
          .min_chunk_part_bytes = chunk_part_bytes_,
          .may_fail_mid_call = true};
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
  const std::size_t bytes = static_cast<std::size_t>(depth_) * (2 * slot_bytes_ + staging_slot_bytes_);
  buffers_ = static_cast<unsigned char*>(std::aligned_alloc(4096, round_up(bytes, 4096)));
  if (buffers_ == nullptr) {
    return Status::Error(StatusCode::InnerError,
                         "MPI transport: cannot allocate " + std::to_string(bytes >> 20) +
                             " MB of staging buffers (2 x HCCL_BUFFSIZE, and the bundles' staging)");
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
  Status s =
      mpi::wait_all(reqs, count, deadline, std::string("MPI transport, ") + what, [this] { return check_notices(); });
  if (s.ok() || broken_) return s;  // broken_: by a notice, already recorded
  return fail(std::move(s), Clock::now() >= deadline ? Notice::Timeout : Notice::Error);
}

Status MpiCommunicator::allgather_records(const void* mine, std::size_t bytes, void* all, Clock::time_point deadline) {
  if (broken_) return broken_status();
  if (bytes > kMaxRecordBytes) return Status::Error(StatusCode::InnerError, "records larger than kMaxRecordBytes");
  if (Status s = check_notices(); !s.ok()) return s;
  std::memcpy(records_, mine, bytes);
#ifdef QCOLL_SMPI
  // Blocking there (allgather_small: SMPI's nonblocking collectives are n (n - 1) messages).
  Status s = allgather_small(records_, records_ + kMaxRecordBytes, static_cast<int>(bytes), MPI_BYTE, comm_, deadline,
                             "MPI transport, agreeing on the call");
  if (!s.ok()) return fail(std::move(s));
#else
  MPI_Request req = MPI_REQUEST_NULL;
  Status s = check(MPI_Iallgather(records_, static_cast<int>(bytes), MPI_BYTE, records_ + kMaxRecordBytes,
                                  static_cast<int>(bytes), MPI_BYTE, comm_, &req),
                   "MPI_Iallgather");
  if (!s.ok()) return fail(std::move(s));
  if (s = wait(&req, 1, deadline, "agreeing on the call"); !s.ok()) return s;
#endif
  std::memcpy(all, records_ + kMaxRecordBytes, static_cast<std::size_t>(nranks_) * bytes);
  return Status::Ok();
}

bool MpiCommunicator::StepInfo::pending() const {
  for (MPI_Request r : reqs)
    if (r != MPI_REQUEST_NULL) return true;
  for (char f : forwarded)
    if (!f) return true;
  return !forwards_posted;
}

void MpiCommunicator::free_types(StepInfo& info) {
  for (MPI_Datatype& t : info.types)
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
  info.types.clear();
}

Status MpiCommunicator::begin_step(const StepShape& shape, const char* what, Clock::time_point, Step* step) {
  if (broken_) return broken_status();
  if (Status s = ensure_buffers(); !s.ok()) return s;
  // Every step begun was waited for (the start of an exchange, or the next piece of one with
  // depth 2): begin at slot 0, so that calls of few steps reuse the same, warm slots instead
  // of taking all depth_ in turn. Deterministic: every rank begins and waits for the same
  // steps in the same order, so every rank skips the same step numbers (and so tags).
  if (next_step_ == waited_ && next_step_ % static_cast<uint64_t>(depth_) != 0) {
    next_step_ += static_cast<uint64_t>(depth_) - next_step_ % static_cast<uint64_t>(depth_);
    waited_ = next_step_;
  }
  const uint64_t g = next_step_;
  // The slot's previous step was waited for before this one began (at most depth_ in flight).
  StepInfo& info = steps_[slot_of(g)];
  if (info.pending()) return Status::Error(StatusCode::InnerError, "MPI transport: step still in flight");
  if (shape.part_bytes() * nranks_ > slot_bytes_) {
    return Status::Error(StatusCode::InnerError, "MPI transport: a step larger than its slot");
  }
  info.shape = shape;
  info.what = what;
  info.forward_recv.clear();
  info.forwarded.clear();
  info.published = false;
  info.receives_posted = false;
  info.sent.clear();
  info.bundled = bundling_ && shape.kind == StepShape::Kind::PerDestination;
  info.forwards_posted = !info.bundled || !forwards_bundles();
  info.filled.clear();
  info.host_filled.clear();
  if (info.bundled) {
    info.reqs.assign(breq_.total, MPI_REQUEST_NULL);
    info.sent.assign(static_cast<std::size_t>(nranks_ + hosts_), 0);
    info.filled.assign(static_cast<std::size_t>(nranks_), 0);
    info.host_filled.assign(static_cast<std::size_t>(hosts_), 0);
  } else if (routed(info)) {
    info.forward_first = static_cast<std::size_t>(nranks_ - 1) + own_dests_.size();
    info.reqs.assign(info.forward_first + forward_origins_.size() * local_peers_.size(), MPI_REQUEST_NULL);
    info.forward_recv.assign(forward_origins_.size(), 0);
    info.forwarded.assign(forward_origins_.size(), 0);
  } else if (schedule_ == settings::MpiSchedule::Alltoall) {
    info.reqs.assign(1, MPI_REQUEST_NULL);
  } else {
    info.reqs.assign(2 * static_cast<std::size_t>(nranks_ - 1), MPI_REQUEST_NULL);
    info.sent.assign(static_cast<std::size_t>(nranks_), 0);
  }
  next_step_ = g + 1;
  *step = g;
  return Status::Ok();
}

PartRegion MpiCommunicator::region(Step s, int dest) {
  return steps_[slot_of(s)].shape.part_in<PartRegion>(send_slot(s), dest);
}

// Every receive first (so that no message waits for its buffer), then the sends, peer
// me+1 first: at any moment the ranks send to different peers. A send that part_filled()
// started is not started again.
Status MpiCommunicator::start_p2p(Step s) {
  if (Status st = post_p2p_receives(s); !st.ok()) return st;
  for (int j = 1; j < nranks_; ++j) {
    if (Status st = post_p2p_send(s, (rank_ + j) % nranks_); !st.ok()) return st;
  }
  return Status::Ok();
}

Status MpiCommunicator::post_p2p_receives(Step s) {
  StepInfo& info = steps_[slot_of(s)];
  if (info.receives_posted) return Status::Ok();
  info.receives_posted = true;
  const int count = part_blocks(s);
  const int tag = data_tag(s);
  for (int j = 1; j < nranks_; ++j) {
    const int src = (rank_ - j + nranks_) % nranks_;
    if (Status st =
            check(MPI_Irecv(recv_part(s, src), count, block512_, src, tag, comm_, &info.reqs[j - 1]), "MPI_Irecv");
        !st.ok())
      return st;
  }
  return Status::Ok();
}

// The send to dst (requests: the n - 1 receives, then the sends in the order me+1, me+2, ...).
Status MpiCommunicator::post_p2p_send(Step s, int dst) {
  StepInfo& info = steps_[slot_of(s)];
  const std::size_t j = static_cast<std::size_t>((dst - rank_ + nranks_) % nranks_);
  if (info.sent[j]) return Status::Ok();
  info.sent[j] = 1;
  const unsigned char* from = info.shape.part_in<PartView>(static_cast<const unsigned char*>(send_slot(s)), dst).seg[0];
  return check(MPI_Isend(from, part_blocks(s), block512_, dst, data_tag(s), comm_,
                         &info.reqs[static_cast<std::size_t>(nranks_ - 1) + j - 1]),
               "MPI_Isend");
}

// p2p, a PerDestination step: the receives, then this part's send (the rest at publish()).
Status MpiCommunicator::part_filled(Step s, int dest) {
  if (broken_) return broken_status();
  const StepInfo& info = steps_[slot_of(s)];
  // (A routed step is a Same one: never here.)
  if (dest == rank_ || schedule_ == settings::MpiSchedule::Alltoall ||
      info.shape.kind != StepShape::Kind::PerDestination)
    return Status::Ok();
  Status st;
  if (info.bundled) {
    st = bundled_part_filled(s, dest);
  } else {
    st = post_p2p_receives(s);
    if (st.ok()) st = post_p2p_send(s, dest);
  }
  return st.ok() ? st : fail(std::move(st));
}

// A bundled step: the receives at the first part filled; a part for this host goes at once,
// a bundle once the last part of its host is filled.
Status MpiCommunicator::bundled_part_filled(Step s, int dest) {
  StepInfo& info = steps_[slot_of(s)];
  if (Status st = post_bundled_receives(s); !st.ok()) return st;
  const int h = host_of_rank_[static_cast<std::size_t>(dest)];
  if (h == my_host_) return post_direct_send(s, dest);
  if (info.filled[static_cast<std::size_t>(dest)]) return Status::Ok();
  info.filled[static_cast<std::size_t>(dest)] = 1;
  const std::size_t hh = static_cast<std::size_t>(h);
  return ++info.host_filled[hh] == host_size_[hh] ? post_bundle_send(s, h) : Status::Ok();
}

// The forwards' types of step s: the send (this rank's origins' parts for one local peer,
// strided in the staging slot) and one receive per local forwarder (its origins' parts,
// scattered into the receive slot). They depend on the part size only: a slot keeps them
// from step to step while that stays the same (every full chunk of an exchange) and makes
// them again when it changes.
Status MpiCommunicator::make_forward_types(Step s) {
  StepInfo& info = steps_[slot_of(s)];
  const int count = part_blocks(s);
  if (!info.types.empty() && info.types_blocks == count) return Status::Ok();
  free_types(info);  // made for another part size (MPI frees them once no transfer uses them)
  Status st = build_forward_types(info, count);
  if (!st.ok()) {
    free_types(info);
    return st;
  }
  info.types_blocks = count;
  return Status::Ok();
}

Status MpiCommunicator::build_forward_types(StepInfo& info, int count) {
  info.types.assign(1 + static_cast<std::size_t>(forwarders_), MPI_DATATYPE_NULL);
  if (forwards_bundles()) {
    Status st =
        check(MPI_Type_vector(static_cast<int>(origins_.size()), count, local_size_ * count, block512_, &info.types[0]),
              "MPI_Type_vector");
    if (st.ok()) st = check(MPI_Type_commit(&info.types[0]), "MPI_Type_commit");
    if (!st.ok()) return st;
  }
  std::size_t t = 1;
  std::vector<int> displacements;
  for (const std::vector<int>& from : peer_origins_) {
    if (from.empty()) continue;
    displacements.clear();
    for (int origin : from) displacements.push_back(origin * count);
    Status st = check(MPI_Type_create_indexed_block(static_cast<int>(from.size()), count, displacements.data(),
                                                    block512_, &info.types[t]),
                      "MPI_Type_create_indexed_block");
    if (st.ok()) st = check(MPI_Type_commit(&info.types[t]), "MPI_Type_commit");
    if (!st.ok()) return st;
    ++t;
  }
  return Status::Ok();
}

// Every receive of a bundled step (once): the direct parts, the bundles, the forwards.
Status MpiCommunicator::post_bundled_receives(Step s) {
  StepInfo& info = steps_[slot_of(s)];
  if (info.receives_posted) return Status::Ok();
  info.receives_posted = true;
  if (Status st = make_forward_types(s); !st.ok()) return st;
  const int count = part_blocks(s);
  MPI_Request* req = info.reqs.data();
  for (int w : local_peers_) {
    if (Status st = check(MPI_Irecv(recv_part(s, w), count, block512_, w, direct_tag(s), comm_, req++), "MPI_Irecv");
        !st.ok())
      return st;
  }
  const std::size_t bundle_bytes = static_cast<std::size_t>(local_size_) * info.shape.part_bytes();
  for (std::size_t k = 0; k < origins_.size(); ++k) {
    if (Status st = check(MPI_Irecv(staging(s) + k * bundle_bytes, local_size_ * count, block512_, origins_[k],
                                    bundle_tag(s), comm_, req++),
                          "MPI_Irecv");
        !st.ok())
      return st;
  }
  std::size_t t = 1;
  for (std::size_t i = 0; i < local_peers_.size(); ++i) {
    if (peer_origins_[i].empty()) continue;
    if (Status st = check(MPI_Irecv(recv_slot(s), 1, info.types[t++], local_peers_[i], forward_tag(s), comm_, req++),
                          "MPI_Irecv");
        !st.ok())
      return st;
  }
  return Status::Ok();
}

Status MpiCommunicator::post_direct_send(Step s, int dst) {
  StepInfo& info = steps_[slot_of(s)];
  if (info.sent[static_cast<std::size_t>(dst)]) return Status::Ok();
  info.sent[static_cast<std::size_t>(dst)] = 1;
  const unsigned char* from = info.shape.part_in<PartView>(static_cast<const unsigned char*>(send_slot(s)), dst).seg[0];
  return check(MPI_Isend(from, part_blocks(s), block512_, dst, direct_tag(s), comm_,
                         &info.reqs[breq_.direct_send + static_cast<std::size_t>(local_position(dst))]),
               "MPI_Isend");
}

// This rank's parts for the ranks of host h: one contiguous range of the send slot.
Status MpiCommunicator::post_bundle_send(Step s, int h) {
  StepInfo& info = steps_[slot_of(s)];
  const std::size_t hh = static_cast<std::size_t>(h);
  if (info.sent[static_cast<std::size_t>(nranks_) + hh]) return Status::Ok();
  info.sent[static_cast<std::size_t>(nranks_) + hh] = 1;
  const int first = host_first_[hh], parts = host_size_[hh];
  const unsigned char* from =
      info.shape.part_in<PartView>(static_cast<const unsigned char*>(send_slot(s)), first).seg[0];
  ++testing::g_bundles_sent;
  return check(MPI_Isend(from, parts * part_blocks(s), block512_, bundle_to_[hh], bundle_tag(s), comm_,
                         &info.reqs[breq_.bundle_send + hh - (h > my_host_ ? 1 : 0)]),
               "MPI_Isend");
}

// publish() of a bundled step: what part_filled() did not start. The bundles first (the
// slower links), host me+1 first, then the parts for this host, rank me+1 first.
Status MpiCommunicator::start_bundled(Step s) {
  if (Status st = post_bundled_receives(s); !st.ok()) return st;
  for (int j = 1; j < hosts_; ++j) {
    if (Status st = post_bundle_send(s, (my_host_ + j) % hosts_); !st.ok()) return st;
  }
  const int first = host_first_[static_cast<std::size_t>(my_host_)], me = rank_ - first;
  for (int j = 1; j < local_size_; ++j) {
    if (Status st = post_direct_send(s, first + (me + j) % local_size_); !st.ok()) return st;
  }
  return Status::Ok();
}

// Posts the forwards of a bundled step once every bundle arrived (tests those receives).
Status MpiCommunicator::post_bundle_forwards(Step s, bool& all_forwarded) {
  StepInfo& info = steps_[slot_of(s)];
  all_forwarded = info.forwards_posted;
  if (all_forwarded || !info.receives_posted) return Status::Ok();
  for (std::size_t i = breq_.bundle_recv; i < breq_.forward_recv; ++i) {
    bool arrived = false;  // (a receive that test_all() completed is null: arrived)
    if (Status st = test(info.reqs[i], arrived); !st.ok() || !arrived) return st;
  }
  if (Status st = post_forwards(s); !st.ok()) return st;
  all_forwarded = true;
  return Status::Ok();
}

// To each local peer w: its part of every bundle received, in origin order (one message).
Status MpiCommunicator::post_forwards(Step s) {
  StepInfo& info = steps_[slot_of(s)];
  const std::size_t part = info.shape.part_bytes();
  const int first = host_first_[static_cast<std::size_t>(my_host_)];
  for (std::size_t p = 0; p < local_peers_.size(); ++p) {
    const int w = local_peers_[p];
    const unsigned char* from = staging(s) + static_cast<std::size_t>(w - first) * part;
    if (Status st =
            check(MPI_Isend(from, 1, info.types[0], w, forward_tag(s), comm_, &info.reqs[breq_.forward_send + p]),
                  "MPI_Isend");
        !st.ok())
      return st;
  }
  info.forwards_posted = true;
  return Status::Ok();
}

// hosts schedule, a Same step: every receive first (from the rank that delivers each
// origin's part here), then this rank's part to its receivers on the other hosts and to its
// own host's ranks. The forwards are posted by advance() as their parts arrive.
Status MpiCommunicator::start_hosts(Step s) {
  StepInfo& info = steps_[slot_of(s)];
  const int count = part_blocks(s);
  MPI_Request* req = info.reqs.data();
  for (int j = 1; j < nranks_; ++j) {
    const int src = (rank_ - j + nranks_) % nranks_;
    if (Status st =
            check(MPI_Irecv(recv_part(s, src), count, block512_, recv_from_[src], hosts_tag(s, src), comm_, req),
                  "MPI_Irecv");
        !st.ok())
      return st;
    const auto f = std::find(forward_origins_.begin(), forward_origins_.end(), src);
    if (f != forward_origins_.end())
      info.forward_recv[static_cast<std::size_t>(f - forward_origins_.begin())] =
          static_cast<std::size_t>(req - info.reqs.data());
    ++req;
  }
  const unsigned char* mine = send_slot(s);
  for (int dst : own_dests_) {
    if (Status st = check(MPI_Isend(mine, count, block512_, dst, hosts_tag(s, rank_), comm_, req++), "MPI_Isend");
        !st.ok())
      return st;
  }
  return Status::Ok();
}

Status MpiCommunicator::post_arrived_forwards(Step s, bool& all_forwarded) {
  StepInfo& info = steps_[slot_of(s)];
  if (info.bundled) return post_bundle_forwards(s, all_forwarded);
  all_forwarded = true;
  const int count = part_blocks(s);
  const std::size_t peers = local_peers_.size();
  for (std::size_t i = 0; i < info.forwarded.size(); ++i) {
    if (info.forwarded[i]) continue;
    bool arrived = false;  // (a receive that test_all() completed is null: arrived)
    if (Status st = test(info.reqs[info.forward_recv[i]], arrived); !st.ok()) return st;
    if (!arrived) {
      all_forwarded = false;
      continue;
    }
    const int origin = forward_origins_[i];
    const unsigned char* part = recv_part(s, origin);
    for (std::size_t p = 0; p < peers; ++p) {
      MPI_Request* r = &info.reqs[info.forward_first + i * peers + p];
      if (Status st =
              check(MPI_Isend(part, count, block512_, local_peers_[p], hosts_tag(s, origin), comm_, r), "MPI_Isend");
          !st.ok())
        return st;
    }
    info.forwarded[i] = 1;
  }
  return Status::Ok();
}

Status MpiCommunicator::advance(Step s, bool& done) {
  StepInfo& info = steps_[slot_of(s)];
  done = false;
  bool all_forwarded = true;
  if (Status st = post_arrived_forwards(s, all_forwarded); !st.ok()) return st;
  bool transfers_done = false;
  if (Status st = test_all(info.reqs.data(), static_cast<int>(info.reqs.size()), transfers_done); !st.ok()) return st;
  done = transfers_done && all_forwarded;
  return Status::Ok();
}

#ifdef QCOLL_SMPI
// A bundled step: every bundle, then its forwards, then everything.
Status MpiCommunicator::wait_bundled_blocking(Step s) {
  StepInfo& info = steps_[slot_of(s)];
  if (!info.forwards_posted) {
    Status st = check(MPI_Waitall(static_cast<int>(breq_.forward_recv - breq_.bundle_recv),
                                  info.reqs.data() + breq_.bundle_recv, MPI_STATUSES_IGNORE),
                      "MPI_Waitall");
    if (st.ok()) st = post_forwards(s);
    if (!st.ok()) return st;
  }
  return check(MPI_Waitall(static_cast<int>(info.reqs.size()), info.reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
}

Status MpiCommunicator::wait_step_blocking(Step s) {
  StepInfo& info = steps_[slot_of(s)];
  if (info.bundled) return wait_bundled_blocking(s);
  std::vector<MPI_Request> waiting;
  std::vector<std::size_t> at;  // where waiting[j] is in info.reqs
  for (;;) {
    bool all_forwarded = true;
    if (Status st = post_arrived_forwards(s, all_forwarded); !st.ok()) return st;
    if (all_forwarded) {
      return check(MPI_Waitall(static_cast<int>(info.reqs.size()), info.reqs.data(), MPI_STATUSES_IGNORE),
                   "MPI_Waitall");
    }
    // Block until one of the parts still to forward arrives (then post its forwards).
    waiting.clear();
    at.clear();
    for (std::size_t i = 0; i < info.forwarded.size(); ++i) {
      if (info.forwarded[i] || info.reqs[info.forward_recv[i]] == MPI_REQUEST_NULL) continue;
      waiting.push_back(info.reqs[info.forward_recv[i]]);
      at.push_back(info.forward_recv[i]);
    }
    if (waiting.empty()) return Status::Error(StatusCode::InnerError, "MPI transport: a forward without its receive");
    int index = MPI_UNDEFINED;
    if (Status st = check(MPI_Waitany(static_cast<int>(waiting.size()), waiting.data(), &index, MPI_STATUS_IGNORE),
                          "MPI_Waitany");
        !st.ok())
      return st;
    if (index != MPI_UNDEFINED) info.reqs[at[static_cast<std::size_t>(index)]] = MPI_REQUEST_NULL;
  }
}
#endif

Status MpiCommunicator::publish(Step s) {
  if (broken_) return broken_status();
  StepInfo& info = steps_[slot_of(s)];
  const StepShape& shape = info.shape;
  const int count = part_blocks(s);
  Status st;
  info.published = true;
  if (routed(info)) {
    st = start_hosts(s);
  } else if (info.bundled) {
    st = start_bundled(s);
  } else if (schedule_ != settings::MpiSchedule::Alltoall) {
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
  Status st = wait_step_transfers(s, deadline);
  if (st.ok()) waited_ = std::max(waited_, s + 1);
  return st;
}

Status MpiCommunicator::wait_step_transfers(Step s, Clock::time_point deadline) {
  if (broken_) return broken_status();
  StepInfo& info = steps_[slot_of(s)];
  if (!info.has_forwards()) return wait(info.reqs.data(), static_cast<int>(info.reqs.size()), deadline, info.what);
#ifdef QCOLL_SMPI
  if (Status st = check_notices(); !st.ok()) return st;
  Status st = wait_step_blocking(s);
  if (st.ok() || broken_) return st;
  return fail(Status::Error(st.code, std::string("MPI transport, ") + info.what + ": " + st.message));
#else
  Status st = mpi::wait_for([this, s](bool& done) { return advance(s, done); }, deadline,
                            std::string("MPI transport, ") + info.what, [this] { return check_notices(); });
  if (st.ok() || broken_) return st;
  return fail(std::move(st), Clock::now() >= deadline ? Notice::Timeout : Notice::Error);
#endif
}

PartView MpiCommunicator::view(Step s, int src) const {
  const StepInfo& info = steps_[slot_of(s)];
  if (src == rank_ && schedule_ != settings::MpiSchedule::Alltoall) {
    // Never sent: read where it was written (the Same part, or this rank's part of the send slot).
    return info.shape.part_in<PartView>(static_cast<const unsigned char*>(send_slot(s)), src);
  }
  if (info.bundled && origin_pos_[static_cast<std::size_t>(src)] >= 0) {
    // A bundle received here: this rank's part stays in the staging slot.
    const std::size_t bundle = static_cast<std::size_t>(origin_pos_[static_cast<std::size_t>(src)]) *
                               static_cast<std::size_t>(local_size_) * info.shape.part_bytes();
    return info.shape.received_in<PartView>(static_cast<const unsigned char*>(staging(s)) + bundle,
                                            rank_ - host_first_[static_cast<std::size_t>(my_host_)]);
  }
  return info.shape.received_in<PartView>(static_cast<const unsigned char*>(recv_slot(s)), src);
}

Status MpiCommunicator::progress() {
  if (broken_) return broken_status();
#ifdef QCOLL_SMPI
  // The simulator moves the transfers without being tested: only the hosts schedule's
  // forwards need this rank, to post them as their parts (or a step's bundles) arrive.
  for (uint64_t g = next_step_ >= static_cast<uint64_t>(depth_) ? next_step_ - depth_ : 0; g < next_step_; ++g) {
    StepInfo& info = steps_[slot_of(g)];
    if (!(info.published || info.receives_posted) || !info.has_forwards()) continue;
    bool all_forwarded = true;
    if (Status st = post_arrived_forwards(g, all_forwarded); !st.ok()) return fail(std::move(st));
  }
  return Status::Ok();
#endif
  // One test of the oldest step in flight drives MPI's progress engine for all of them;
  // steps with forwards are each tested, so that a part that arrived is sent on at once.
  bool tested = false;
  const uint64_t depth = static_cast<uint64_t>(depth_);
  for (uint64_t g = next_step_ >= depth ? next_step_ - depth : 0; g < next_step_; ++g) {
    StepInfo& info = steps_[slot_of(g)];
    // (A step begun but not yet published has nothing to test unless part_filled() started
    // some of its transfers: its parts are being filled.)
    if (!(info.published || info.receives_posted) || !info.pending() || (tested && !info.has_forwards())) continue;
    bool done = false;
    if (Status st = advance(g, done); !st.ok()) return fail(std::move(st));
    tested = true;
  }
  return Status::Ok();
}

Status MpiCommunicator::release(Step) { return broken_ ? broken_status() : Status::Ok(); }

}  // namespace qcoll::comm::mpi
