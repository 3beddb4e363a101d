// The MPI transport (ranks on several hosts, or any ranks when QCOLL_TRANSPORT=mpi): a
// duplicate of the user's MPI communicator with MPI_ERRORS_RETURN, and nonblocking
// transfers polled with MPI_Test against the caller's deadline (the SMPI build blocks in
// MPI_Waitall / MPI_Waitany instead, without a deadline: docs/scale.md).
//
// The step primitives of communicator.hpp: region() is a part of the send slot of the step,
// publish() starts the step's transfers into its receive slot, wait_step() polls them,
// view() reads the receive slot (this rank's own part: the send slot), progress() tests the
// transfers in flight (so later chunks move while the caller reduces this one). depth_ send
// and depth_ receive slots of HCCL_BUFFSIZE/depth_ each (2 x HCCL_BUFFSIZE in all; bundling_ adds depth_ staging
// slots), so up to depth_ steps are in flight: kDepth (4), fewer with many peers (steps_in_flight()), so that a rank
// has at most about kMaxTransfersInFlight point-to-point transfers posted (each step posts 2 (n - 1)) and each message
// to a peer is larger. A step begun when every earlier one was waited for (an exchange's first) takes slot 0, so that
// calls of one or few steps reuse the same slots, their pages committed and warm. Three schedules (QCOLL_MPI_SCHEDULE,
// read at creation):
//   p2p            MPI_Irecv from and MPI_Isend to every peer, peer me+j sent to j-th and
//                  me-j received from j-th (j = 1..n-1), so that at any moment the ranks
//                  send to different peers; nothing goes through MPI for this rank's own part;
//   hosts          (default) p2p, except that a Same step (an all-gather) crosses to each
//                  other host once: rank r's part goes to one rank of each other host (the
//                  one whose index on its host is r's index on r's host, modulo that host's
//                  rank count), which forwards it to the other ranks of its host as soon as
//                  it arrived (MPI moves that inside the host: shared memory); r sends it
//                  straight to the ranks of its own host. A PerDestination step (the
//                  exchange) is bundled per host when every host's ranks are one
//                  consecutive range of ranks (bundling_): rank r sends its parts for each
//                  other host as one message (their contiguous range of its send slot) to
//                  that host's receiver of r (the same rank as above), which receives the
//                  bundles of all its origins into a staging slot and, once all arrived,
//                  sends each rank of its host one message holding that rank's part of every
//                  bundle (an MPI vector type), scattered on arrival into the receive slot
//                  (an indexed type); parts for the ranks of r's own host go straight, as in
//                  p2p. n (H - 1) messages cross hosts per step instead of n (n - m), each
//                  m parts long. The same as p2p when every rank has a host of its own or
//                  all share one;
//   alltoall       MPI_Ialltoall (PerDestination) or MPI_Iallgather (Same) per step.
// Records go through MPI_Iallgather of their own small buffers.
//
// After a timeout MPI may still write into this communicator's buffers (a transfer cannot
// be cancelled reliably), so a broken communicator never frees them and never uses MPI
// again, except that a rank that breaks by itself (a timeout, an MPI error) first sends every
// peer a short notice (point-to-point, never waited on): a peer that was absent from the
// call reads it at its next step and fails at once, saying the group broke, instead of
// waiting for its own timeout.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "qcoll/settings.hpp"

namespace qcoll::comm::mpi {

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm` (a duplicate with MPI_ERRORS_RETURN set). `host_of`: for
  // every rank of `comm`, a number naming its host (MPI_Comm_split_type SHARED: the lowest
  // rank there), the same on every rank.
  // `chunk_part_bytes`: Traits::min_chunk_part_bytes (QCOLL_MPI_CHUNK_KIB, agreed).
  MpiCommunicator(std::string name, MPI_Comm comm, std::size_t window_bytes, std::vector<int> host_of,
                  settings::MpiSchedule schedule, std::size_t chunk_part_bytes);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  static constexpr int kDepth = 4;  // the most steps in flight (slots per direction)
  static constexpr int kMaxTransfersInFlight = 512;
  // Steps in flight for n ranks: kDepth while kDepth steps post at most kMaxTransfersInFlight
  // transfers (n <= 65), then fewer, never under 2 (n >= 129: 2 steps, 4 (n - 1) transfers).
  // testing::set_steps_in_flight_for_test overrides it for communicators made after it.
  static int steps_in_flight(int nranks);

  int rank() const override { return rank_; }
  int size() const override { return nranks_; }
  const std::string& name() const override { return name_; }
  const char* transport() const override { return "mpi"; }
  Traits traits() const override;

  Status allgather_records(const void* mine, std::size_t bytes, void* all, Clock::time_point deadline) override;
  std::size_t max_part_bytes(StepShape::Kind kind) const override;
  Status begin_step(const StepShape& shape, const char* what, Clock::time_point deadline, Step* step) override;
  PartRegion region(Step s, int dest) override;
  Status part_filled(Step s, int dest) override;
  Status publish(Step s) override;
  Status wait_step(Step s, Clock::time_point deadline) override;
  PartView view(Step s, int src) const override;
  Status progress() override;
  Status release(Step s) override;

  bool usable() const override { return !broken_; }
  std::string broken_reason() const override { return broken_reason_; }

 private:
  static constexpr int kHostsTag = 30000;  // + slot * size() + origin rank (hosts schedule)
  // The data steps of the p2p schedule, + slot: MPI's non-overtaking order pairs a peer's
  // steps with this rank's receives in order, the tag per slot only keeps the steps in flight
  // apart.
  static constexpr int kDataTag = 28000;
  // Bundled PerDestination steps (bundling_), + slot: parts to a rank of this host, bundles
  // to another host, forwards inside the host.
  static constexpr int kDirectTag = 28010, kBundleTag = 28020, kForwardTag = 28030;
  struct HostLayout;  // the hosts and their ranks (plan_hosts_routes)
  struct StepInfo {
    StepShape shape;
    const char* what = "";
    std::vector<MPI_Request> reqs;  // this step's transfers; all MPI_REQUEST_NULL once done
    // hosts schedule, Same steps: the parts this rank forwards inside its host; forward i
    // (origin forward_origins_[i]) is received by reqs[forward_recv[i]] and sent on by
    // reqs[forward_first + i * (local peers) ...], posted once it arrived.
    std::vector<std::size_t> forward_recv;
    std::size_t forward_first = 0;
    std::vector<char> forwarded;
    bool published = false;  // its transfers were started (publish)
    // p2p: the receives were posted; sent[j]: the send to peer me+j was (part_filled, publish;
    // empty for routed and all-to-all steps).
    bool receives_posted = false;
    std::vector<char> sent;
    // A bundled PerDestination step (bundling_): sent holds the direct sends by rank, then
    // the bundles by host; filled[d]: part_filled(d) came; host_filled[h]: parts of host h
    // filled; forwards_posted: the forwards of the bundles received were sent on (or there
    // are none); types: the forwards' derived types (the send's, then one per local
    // forwarder's receive) for parts of types_blocks blocks, kept by the slot while the part
    // size stays the same (make_forward_types), freed at destruction.
    bool bundled = false;
    bool forwards_posted = true;
    std::vector<char> filled;
    std::vector<int> host_filled;
    std::vector<MPI_Datatype> types;
    int types_blocks = 0;
    bool pending() const;
    // Forwards of this step may still have to be posted by this rank (tested one by one).
    bool has_forwards() const { return !forwarded.empty() || !forwards_posted; }
  };
  Status ensure_buffers();
  std::size_t slot_of(Step s) const { return static_cast<std::size_t>(s % static_cast<uint64_t>(depth_)); }
  unsigned char* send_slot(Step s) const { return buffers_ + slot_of(s) * slot_bytes_; }
  unsigned char* recv_slot(Step s) const { return buffers_ + (depth_ + slot_of(s)) * slot_bytes_; }
  // bundling_: where the bundles of step s arrive (origin k's at k * local_size_ parts).
  unsigned char* staging(Step s) const {
    return buffers_ + 2 * static_cast<std::size_t>(depth_) * slot_bytes_ + slot_of(s) * staging_slot_bytes_;
  }
  // Where source src's part of step s lands (a receive slot holds one part per source).
  unsigned char* recv_part(Step s, int src) const {
    return steps_[slot_of(s)].shape.received_in<PartRegion>(recv_slot(s), src).seg[0];
  }
  // One part of step s in 512-byte blocks (parts are whole blocks): the count of its messages.
  int part_blocks(Step s) const { return static_cast<int>(steps_[slot_of(s)].shape.part_bytes() / kSegmentAlign); }
  Status start_p2p(Step s);
  Status post_p2p_receives(Step s);
  Status post_p2p_send(Step s, int dst);
  Status start_hosts(Step s);
  void plan_hosts_routes(const std::vector<int>& host_of);
  void plan_bundles(const HostLayout& layout, int tag_ub);
  // Bundled PerDestination steps: the receives (once), the direct send to a rank of this
  // host, the bundle for host h (each at most once), all of them (publish), the forwards.
  Status post_bundled_receives(Step s);
  Status make_forward_types(Step s);
  Status build_forward_types(StepInfo& info, int count);
  Status post_direct_send(Step s, int dst);
  Status post_bundle_send(Step s, int h);
  Status bundled_part_filled(Step s, int dest);
  Status start_bundled(Step s);
  Status post_bundle_forwards(Step s, bool& all_forwarded);  // once every bundle arrived
  Status post_forwards(Step s);
  void free_types(StepInfo& info);
  int local_position(int w) const { return w - host_first_[my_host_] - (w > rank_ ? 1 : 0); }
  // Bundled steps: this rank receives bundles and forwards them inside its host (a rank
  // property: the same for every bundled step, so the slots' cached forward types hold).
  bool forwards_bundles() const { return !origins_.empty() && !local_peers_.empty(); }
  bool routed(const StepInfo& info) const { return hosts_routing_ && info.shape.kind == StepShape::Kind::Same; }
  // Tests the step's transfers once (posting the forwards whose part arrived); done when
  // every transfer of the step completed.
  Status advance(Step s, bool& done);
  // Posts the forwards of step s whose part arrived (tests only those receives); sets
  // all_forwarded when none is left to post.
  Status post_arrived_forwards(Step s, bool& all_forwarded);
#ifdef QCOLL_SMPI
  // The SMPI build's wait_step(): blocks in the simulator (MPI_Waitany on the parts still to
  // forward, then MPI_Waitall), without polling and without a deadline (docs/scale.md).
  Status wait_step_blocking(Step s);
  Status wait_bundled_blocking(Step s);
#endif
  int hosts_tag(Step s, int origin) const { return kHostsTag + static_cast<int>(slot_of(s)) * nranks_ + origin; }
  int data_tag(Step s) const { return kDataTag + static_cast<int>(slot_of(s)); }
  int direct_tag(Step s) const { return kDirectTag + static_cast<int>(slot_of(s)); }
  int bundle_tag(Step s) const { return kBundleTag + static_cast<int>(slot_of(s)); }
  int forward_tag(Step s) const { return kForwardTag + static_cast<int>(slot_of(s)); }
  // Marks the communicator broken. A rank that found the failure itself (a timeout, an MPI
  // error) sends every peer the notice of that kind; one told by a notice sends none.
  enum class Notice { None, Timeout, Error };
  Status fail(Status s, Notice notice = Notice::Error);
  Status broken_status() const;
  Status wait(MPI_Request* reqs, int count, Clock::time_point deadline, const char* what);
  Status wait_step_transfers(Step s, Clock::time_point deadline);  // wait_step(), waited_ left as it is
  Status check_notices();  // RUNTIME_ERROR (and broken) once a peer's notice arrived

  std::string name_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Datatype block512_ = MPI_DATATYPE_NULL;  // 512 contiguous bytes: counts stay small
  int rank_ = 0;
  int nranks_ = 0;
  int depth_ = kDepth;  // steps in flight, steps_in_flight(nranks_)
  int local_size_ = 1;
  int hosts_ = 1;
  // The hosts schedule's routes (hosts_routing_: it applies, i.e. several hosts, one of
  // them with several ranks, and the tags fit MPI_TAG_UB). From rank k this rank receives
  // Same parts through recv_from_[k]; its own goes to own_dests_; it forwards the parts of
  // forward_origins_ to local_peers_.
  bool hosts_routing_ = false;
  std::vector<int> recv_from_, own_dests_, forward_origins_, local_peers_;
  // Bundling of PerDestination steps (bundling_: hosts_routing_, and every host's ranks are
  // one consecutive range). Host h holds host_size_[h] ranks from host_first_[h];
  // host_of_rank_[k]: rank k's host; bundle_to_[h]: the rank of host h that receives this
  // rank's bundle (-1: this host); origins_: the ranks whose bundle for this host comes
  // here, in rank order (origin_pos_[k]: k's position there, or -1); peer_origins_[i]:
  // those of local_peers_[i], whose forward it sends here.
  bool bundling_ = false;
  int my_host_ = 0;
  std::vector<int> host_first_, host_size_, host_of_rank_, bundle_to_, origins_, origin_pos_;
  std::vector<std::vector<int>> peer_origins_;
  int forwarders_ = 0;                  // local peers with origins (a forward from each)
  std::size_t staging_slot_bytes_ = 0;  // per slot, after the receive slots (bundling_)
  // Where a bundled step's requests are: the direct receives (one per local peer) from 0,
  // the bundles, the forwards received, the direct sends, the bundles sent (one per other
  // host), the forwards sent (one per local peer); total.
  struct {
    std::size_t bundle_recv = 0, forward_recv = 0, direct_send = 0, bundle_send = 0, forward_send = 0, total = 0;
  } breq_;
  std::size_t window_bytes_ = 0;
  settings::MpiSchedule schedule_ = settings::MpiSchedule::P2p;
  std::size_t slot_bytes_ = 0;
  std::size_t chunk_part_bytes_ = std::size_t{64} << 10;
  unsigned char* buffers_ = nullptr;  // depth_ send slots, then depth_ receive slots
  bool broken_ = false;
  std::string broken_reason_;
  // The buffers of the records all-gather: record 0 sent, 1 .. n received
  // (kMaxRecordBytes each). Heap memory that is leaked, like buffers_, when the
  // communicator is destroyed broken: a timed-out MPI_Iallgather stays pending and a late
  // peer's message would still be written there.
  unsigned char* records_ = nullptr;
  uint64_t next_step_ = 0;
  // Steps 0 .. waited_ - 1 were waited for (or skipped: begin_step starts at slot 0 when
  // every step begun was waited for).
  uint64_t waited_ = 0;
  StepInfo steps_[kDepth];  // by slot (the first depth_)
};

}  // namespace qcoll::comm::mpi
