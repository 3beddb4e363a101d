// The transport interface: byte-level primitives only, in the manner of NCCL's transport
// table or Gloo's pair. A transport knows identity (rank, size, name), a small all-gather of
// fixed-size records, and numbered data steps over per-rank slots; it knows no collective
// and no operator. The chunked reduce-scatter exchange and the all-gather are written once
// over these primitives (comm/collectives.hpp); the call agreement lives in ops/.
// Implementations: threads of one process (thread_group), shared memory, MPI, the caller's
// collectives (external). What a transport is like (Traits) is data, not code; what only some
// transports have (window memory, Window) is a capability asked for (window()), not assumed.
//
// Data steps. Every rank runs the same sequence of steps (a records all-gather counts as a
// step too). One data step, on every rank:
//
//   Step s;  begin_step(shape, what, deadline, &s);  // waits until this rank's slot may be reused
//   region(s, d) for each destination d: fill it     // or expose(s, d, view) where can_expose()
//     (part_filled(s, d) after each, optionally)     // the transport may send that part now
//   publish(s);
//   wait_step(s, deadline);                          // every rank has published step s
//   view(s, k) for each source k                     // what k sent to this rank; valid until release
//   release(s);
//
// A rank may begin (fill, publish) step s+1 before it releases step s, so that the next piece
// moves while this one is consumed (async_transfers()); at most max_steps_in_flight() steps
// are in flight (begun, not released).
// Steps are released in order. drain() waits until every peer released every step of this
// rank (needed before memory given to expose() is reused). Every wait is bounded by the
// deadline; a timeout or a failed peer breaks the communicator (usable() turns false), and
// the failing primitive returns RUNTIME_ERROR.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "comm/window_plan.hpp"
#include "qcoll/status.hpp"

namespace qcoll::comm {

using Clock = std::chrono::steady_clock;

constexpr int kMaxSegments = 2;
constexpr std::size_t kSegmentAlign = kWindowPartAlign;  // segments start on 512-byte offsets

// A part a peer sent (read-only) and a part this rank fills (writable): one pointer per segment.
struct PartView {
  const uint8_t* seg[kMaxSegments] = {nullptr, nullptr};
};
struct PartRegion {
  uint8_t* seg[kMaxSegments] = {nullptr, nullptr};
};

// What one rank sends in one step. PerDestination (an all-to-all): a different part for
// every destination. Same (an all-gather): one part, the same for every rank. A part is up
// to kMaxSegments segments (e.g. rows of x, then rows of scales); the sizes are the same on
// every rank. In a slot, segment i of a part starts at seg_offset(i); parts are part_bytes()
// apart, destination d's part at d * part_bytes().
struct StepShape {
  enum class Kind { PerDestination, Same };
  Kind kind = Kind::PerDestination;
  std::size_t seg_bytes[kMaxSegments] = {0, 0};

  std::size_t seg_offset(int i) const { return i == 0 ? 0 : round_up(seg_bytes[0], kSegmentAlign); }
  std::size_t part_bytes() const {
    return round_up(seg_bytes[0], kSegmentAlign) + round_up(seg_bytes[1], kSegmentAlign);
  }
  // Segment pointers of part `index` (a destination or a source; Same steps have one part)
  // of a slot at `slot`: T is PartView or PartRegion.
  template <class T, class Byte>
  T part_in(Byte* slot, int index) const {
    Byte* base = slot + (kind == Kind::Same ? 0 : static_cast<std::size_t>(index)) * part_bytes();
    T p;
    p.seg[0] = base;
    p.seg[1] = base + seg_offset(1);
    return p;
  }
  // A receive slot at `slot` holding one part per source, as the asynchronous transports
  // (MPI) receive a step: the segment pointers of source `src`'s part.
  template <class T, class Byte>
  T received_in(Byte* slot, int src) const {
    StepShape one = *this;
    one.kind = Kind::Same;
    return one.part_in<T>(slot + static_cast<std::size_t>(src) * part_bytes(), 0);
  }
};

// What a transport is like: fixed for the life of a communicator (Communicator::traits()).
struct Traits {
  // Ranks of this communicator that run on this host (they share its cores); 0: the
  // transport cannot tell (then every rank counts, size()).
  int local_size = 0;
  // Hosts the ranks run on (the same on every rank), and whether a Same step (an
  // all-gather) crosses to each other host once rather than once per rank there.
  int hosts = 1;
  bool same_once_per_host = false;
  // Bytes of the staging window per rank (HCCL_BUFFSIZE), or 0 when the transport reads
  // peers' buffers directly (then contract.md §rule-11 does not apply).
  std::size_t window_bytes = 0;
  // A rank may expose() memory of its own instead of filling region(): its peers then read
  // that memory in place (zero copy).
  bool can_expose = false;
  // The part a rank addresses to itself never moves: the caller reads its own data where it
  // is, and region(s, rank()) need not be filled.
  bool own_part_in_place = true;
  // publish() starts a transfer that runs while the caller works on an earlier step,
  // advancing while the caller calls progress() (MPI): start the next step before consuming
  // this one, and call progress() now and then meanwhile. Otherwise (peers read slots in
  // place) fill the next step after this one is consumed and released.
  bool async_transfers = false;
  // Steps that may be begun and not yet released (>= 2).
  int max_steps_in_flight = 2;
  // Asynchronous transports: the least bytes of one part (one peer's message) when the
  // collectives cut a step into chunks (the same on every rank).
  std::size_t min_chunk_part_bytes = std::size_t{64} << 10;
  // A data step can fail after a successful agreement (a peer process dies mid-call). The
  // operators then reduce into a staging buffer and write the user's output only after
  // every rank confirmed success, so no output is partly written.
  bool may_fail_mid_call = false;
};

// Window memory in proportion to use: a capability of the transports whose windows live in
// memory the system may run short of (shm: /dev/shm). Ask Communicator::window(); nullptr:
// the transport has none, its slots are unbounded and it has no shared blocks.
class Window {
 public:
  virtual ~Window() = default;
  // Collective, with the same arguments on every rank, after the call agreement: makes every
  // rank's slots hold at least slot_bytes (at most half the window) and its shared block at
  // least shared_bytes (where it fits beside the slots), growing the reservation when needed
  // (then one records step, so that every rank knows what every rank got). Where the system
  // has no room, the ranks settle on what all of them got: slot_capacity() and
  // shared_capacity() may then be smaller than asked, and the caller moves smaller chunks or
  // stages elsewhere. Capacities never shrink, except that a larger slot may take the shared
  // block's room. RUNTIME_ERROR on a transport failure.
  virtual Status reserve(std::size_t slot_bytes, std::size_t shared_bytes, Clock::time_point deadline) = 0;
  // Bytes of one slot that data steps may use now.
  virtual std::size_t slot_capacity() const = 0;
  // The shared block of rank k (shared_capacity() bytes, 0: none): written by k alone, read
  // by every rank in place. The owner may write it again only once every rank has begun a
  // step after it last read the block (e.g. the next call's agreement).
  virtual std::size_t shared_capacity() const = 0;
  virtual uint8_t* shared_block(int k) const = 0;
  // The message of the error when the reserved slots cannot hold one row from every rank
  // (`slot_bytes_needed`: one such chunk's bytes per slot), in the transport's own words:
  // what ran short and what the user can do.
  virtual std::string no_room_message(std::size_t slot_bytes_needed) const = 0;
};

class Communicator {
 public:
  using Step = uint64_t;
  static constexpr std::size_t kMaxRecordBytes = 64;

  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const std::string& name() const = 0;
  virtual const char* transport() const = 0;  // "threads", "shm", "mpi"
  virtual Traits traits() const { return {}; }

  // ---- A small all-gather of fixed-size records (bytes <= kMaxRecordBytes, the same on
  // every rank): `all` receives size() records in rank order. RUNTIME_ERROR when a peer does
  // not arrive by the deadline or the transport failed. Safe to call again right after it
  // returns, on every rank.
  virtual Status allgather_records(const void* mine, std::size_t bytes, void* all, Clock::time_point deadline) = 0;

  // ---- Data steps (see the top of this file).
  // Largest part_bytes() one step of `kind` can carry (a slot holds size() parts of a
  // PerDestination step); unbounded transports return SIZE_MAX.
  virtual std::size_t max_part_bytes(StepShape::Kind kind) const {
    (void)kind;
    return SIZE_MAX;
  }
  virtual Status begin_step(const StepShape& shape, const char* what, Clock::time_point deadline, Step* step) = 0;
  // This rank's writable part for destination `dest` (Same steps: any dest, one part).
  virtual PartRegion region(Step s, int dest) = 0;
  // Instead of filling region(s, dest): peers read `part` in place (only if can_expose()).
  // The memory must stay valid and unchanged until drain() returned.
  virtual void expose(Step s, int dest, const PartView& part) {
    (void)s;
    (void)dest;
    (void)part;
  }
  // Destination `dest`'s part of step s is filled (before publish(s)): an asynchronous
  // transport may start moving it now, so that the wire does not wait for every part to be
  // filled. publish(s) still follows and starts whatever was not started.
  virtual Status part_filled(Step s, int dest) {
    (void)s;
    (void)dest;
    return Status::Ok();
  }
  virtual Status publish(Step s) = 0;
  virtual Status wait_step(Step s, Clock::time_point deadline) = 0;
  // What rank `src` sent to this rank in step s (after wait_step, until release).
  virtual PartView view(Step s, int src) const = 0;
  virtual Status progress() { return Status::Ok(); }
  virtual Status release(Step s) = 0;
  virtual Status drain(Clock::time_point deadline) {
    (void)deadline;
    return Status::Ok();
  }

  // True while the communicator can be used; false after a failure that left peers out of
  // step (a timeout). broken_reason() says why.
  virtual bool usable() const { return true; }
  virtual std::string broken_reason() const { return {}; }

  // ---- Capabilities, asked for: window memory (nullptr: none, see Window).
  virtual Window* window() { return nullptr; }

  // ---- The traits, one by one (see Traits).
  int local_size() const {
    const int l = traits().local_size;
    return l > 0 ? l : size();
  }
  int hosts() const { return traits().hosts; }
  bool same_once_per_host() const { return traits().same_once_per_host; }
  std::size_t window_bytes() const { return traits().window_bytes; }
  bool can_expose() const { return traits().can_expose; }
  bool own_part_in_place() const { return traits().own_part_in_place; }
  bool async_transfers() const { return traits().async_transfers; }
  int max_steps_in_flight() const { return traits().max_steps_in_flight; }
  std::size_t min_chunk_part_bytes() const { return traits().min_chunk_part_bytes; }
  bool may_fail_mid_call() const { return traits().may_fail_mid_call; }
};

}  // namespace qcoll::comm
