#include "comm/thread_group.hpp"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/registry.hpp"

namespace qcoll::comm {

namespace {

// Names of live thread groups (handles not yet destroyed).
struct LiveNames {
  std::mutex mu;
  std::set<std::string, std::less<>> names;
};
LiveNames& live_names() {
  static LiveNames* ln = new LiveNames;  // never destroyed: usable from exit-time destructors
  return *ln;
}

Status runtime_error(std::string msg) { return Status::Error(StatusCode::RuntimeError, std::move(msg)); }

}  // namespace

// Everything the ranks of one group share. All fields are guarded by `mu`, except that a
// rank's own slot contents are written by that rank alone between begin_step and publish
// and read by its peers between their wait_step and release (ordered by the mutex).
struct ThreadGroup::State {
  // One rank's step of one parity.
  struct Slot {
    const char* what = "";  // the step's name (a string literal): ranks must agree
    StepShape shape;
    bool exposed = false;         // parts[] point at the rank's own memory
    std::vector<PartView> parts;  // exposed parts by destination (Same: [0])
    std::vector<uint8_t> buf;     // region() memory
  };

  State(std::string nm, int size)
      : name(std::move(nm)),
        n(size),
        joined(size, false),
        begun(size, 0),
        written(size, 0),
        consumed(size, 0),
        slots(static_cast<std::size_t>(size) * 2) {}

  const std::string name;
  const int n;

  mutable std::mutex mu;
  std::condition_variable cv;
  int waiters = 0;  // threads inside cv.wait
  std::vector<bool> joined;

  // Step counters per rank: steps begun, published, released.
  std::vector<uint64_t> begun, written, consumed;
  std::vector<Slot> slots;  // rank r's slot of parity p at [2 * r + p]
  std::vector<const char*> last_what = std::vector<const char*>(n, "");

  bool broken = false;
  std::string broken_reason;

  Slot& slot(int r, uint64_t step) { return slots[2 * static_cast<std::size_t>(r) + (step & 1)]; }

  Status broken_status() const {
    return runtime_error("group '" + name + "' (threads) is broken: " + broken_reason +
                         "; every later call fails: destroy the group and create it again");
  }
  void notify() {
    if (waiters > 0) cv.notify_all();
  }
  void break_group(std::string why) {
    broken = true;
    broken_reason = std::move(why);
    cv.notify_all();
  }

  // Waits (lock held) until behind(k) is false for every rank k, or the deadline passes:
  // a timeout breaks the group and names the ranks still behind.
  template <class Behind>
  Status wait_for(std::unique_lock<std::mutex>& lk, int rank, Clock::time_point deadline, const char* what,
                  const Behind& behind) {
    auto all_there = [&] {
      for (int k = 0; k < n; ++k)
        if (behind(k)) return false;
      return true;
    };
    ++waiters;
    const bool done = cv.wait_until(lk, deadline, [&] { return broken || all_there(); });
    --waiters;
    if (broken) return broken_status();
    if (done) return Status::Ok();
    std::string missing;
    for (int k = 0; k < n; ++k)
      if (behind(k)) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
    break_group("rank " + std::to_string(rank) + " timed out (QCOLL_TIMEOUT_S) while " + what +
                ", waiting for rank(s) " + missing);
    return runtime_error("group '" + name + "' (threads): rank " + std::to_string(rank) +
                         " timed out (QCOLL_TIMEOUT_S) while " + what + ", waiting for rank(s) " + missing +
                         "; the group is now broken: destroy it and create it again");
  }
};

namespace {

bool same_shape(const StepShape& a, const StepShape& b) {
  return a.kind == b.kind && a.seg_bytes[0] == b.seg_bytes[0] && a.seg_bytes[1] == b.seg_bytes[1];
}

class ThreadRankCommunicator final : public Communicator {
 public:
  ThreadRankCommunicator(std::shared_ptr<ThreadGroup::State> s, int rank) : s_(std::move(s)), rank_(rank) {}
  ~ThreadRankCommunicator() override {
    std::lock_guard<std::mutex> lk(s_->mu);
    s_->joined[rank_] = false;
  }

  int rank() const override { return rank_; }
  int size() const override { return s_->n; }
  const std::string& name() const override { return s_->name; }
  const char* transport() const override { return "threads"; }
  const ThreadGroup::State* state() const { return s_.get(); }

  bool usable() const override {
    std::lock_guard<std::mutex> lk(s_->mu);
    return !s_->broken;
  }
  std::string broken_reason() const override {
    std::lock_guard<std::mutex> lk(s_->mu);
    return s_->broken ? s_->broken_reason : std::string();
  }

  Traits traits() const override { return {.can_expose = true}; }

  Status allgather_records(const void* mine, std::size_t bytes, void* all, Clock::time_point deadline) override {
    StepShape shape;
    shape.kind = StepShape::Kind::Same;
    shape.seg_bytes[0] = bytes;
    Step s = 0;
    if (Status st = begin_step(shape, "agreeing on the call", deadline, &s); !st.ok()) return st;
    std::memcpy(region(s, 0).seg[0], mine, bytes);
    if (Status st = publish(s); !st.ok()) return st;
    if (Status st = wait_step(s, deadline); !st.ok()) return st;
    for (int k = 0; k < s_->n; ++k) std::memcpy(static_cast<uint8_t*>(all) + k * bytes, view(s, k).seg[0], bytes);
    return release(s);
  }

  Status begin_step(const StepShape& shape, const char* what, Clock::time_point deadline, Step* step) override {
    std::unique_lock<std::mutex> lk(s_->mu);
    if (s_->broken) return s_->broken_status();
    const uint64_t g = s_->begun[rank_];
    if (g != s_->written[rank_]) return runtime_error("thread transport: step begun twice without publish");
    // Slot g % 2 held step g-2: every rank must have released it.
    if (g >= 2) {
      Status st = s_->wait_for(lk, rank_, deadline, what, [&](int k) { return s_->consumed[k] + 1 < g; });
      if (!st.ok()) return st;
    }
    ThreadGroup::State::Slot& sl = s_->slot(rank_, g);
    sl.what = what;
    sl.shape = shape;
    sl.exposed = false;
    const std::size_t nparts = shape.kind == StepShape::Kind::Same ? 1 : static_cast<std::size_t>(s_->n);
    sl.parts.assign(nparts, PartView{});
    lk.unlock();  // the slot is this rank's alone until it publishes
    const std::size_t bytes = nparts * shape.part_bytes();
    if (sl.buf.size() < bytes) sl.buf.resize(bytes);
    lk.lock();
    s_->begun[rank_] = g + 1;
    s_->last_what[rank_] = what;
    *step = g;
    return Status::Ok();
  }

  PartRegion region(Step s, int dest) override {
    ThreadGroup::State::Slot& sl = s_->slot(rank_, s);
    return sl.shape.part_in<PartRegion>(sl.buf.data(), dest);
  }

  void expose(Step s, int dest, const PartView& part) override {
    ThreadGroup::State::Slot& sl = s_->slot(rank_, s);
    sl.exposed = true;
    sl.parts[sl.shape.kind == StepShape::Kind::Same ? 0 : dest] = part;
  }

  Status publish(Step s) override { return advance(s_->written, s + 1); }

  Status wait_step(Step s, Clock::time_point deadline) override {
    std::unique_lock<std::mutex> lk(s_->mu);
    if (s_->broken) return s_->broken_status();
    const ThreadGroup::State::Slot& mine = s_->slot(rank_, s);
    Status st = s_->wait_for(lk, rank_, deadline, mine.what, [&](int k) { return s_->written[k] < s + 1; });
    if (!st.ok()) return st;
    // Every rank must be in the same step of the same collective; a mismatch would pair
    // unrelated steps silently, so it breaks the group instead.
    for (int k = 0; k < s_->n; ++k) {
      const ThreadGroup::State::Slot& theirs = s_->slot(k, s);
      if (std::strcmp(theirs.what, mine.what) != 0 || !same_shape(theirs.shape, mine.shape)) {
        s_->break_group("ranks out of step: rank " + std::to_string(k) + " " + theirs.what + ", rank " +
                        std::to_string(rank_) + " " + mine.what +
                        (std::strcmp(theirs.what, mine.what) == 0 ? " with a different layout" : ""));
        return s_->broken_status();
      }
    }
    return Status::Ok();
  }

  PartView view(Step s, int src) const override {
    const ThreadGroup::State::Slot& sl = s_->slot(src, s);
    if (sl.exposed) return sl.parts[sl.shape.kind == StepShape::Kind::Same ? 0 : rank_];
    return sl.shape.part_in<PartView>(static_cast<const uint8_t*>(sl.buf.data()), rank_);
  }

  Status release(Step s) override { return advance(s_->consumed, s + 1); }

  Status drain(Clock::time_point deadline) override {
    std::unique_lock<std::mutex> lk(s_->mu);
    if (s_->broken) return s_->broken_status();
    const uint64_t mine = s_->written[rank_];
    return s_->wait_for(lk, rank_, deadline, s_->last_what[rank_], [&](int k) { return s_->consumed[k] < mine; });
  }

 private:
  // Sets this rank's step counter (written or consumed) and wakes the waiting peers.
  Status advance(std::vector<uint64_t>& counter, uint64_t value) {
    std::lock_guard<std::mutex> lk(s_->mu);
    if (s_->broken) return s_->broken_status();
    counter[rank_] = value;
    s_->notify();
    return Status::Ok();
  }

  std::shared_ptr<ThreadGroup::State> s_;
  const int rank_;
};

}  // namespace

Status ThreadGroup::create(const char* name, int nranks, std::unique_ptr<ThreadGroup>* out) {
  if (out == nullptr) return Status::Error(StatusCode::ParamNullptr, "group: must not be null");
  *out = nullptr;
  if (Status st = check_group_name(name, "name"); !st.ok()) return st;
  if (nranks < 1 || nranks > kMaxThreadGroupSize)
    return Status::Error(StatusCode::ParamInvalid, "nranks: must be in [1, " + std::to_string(kMaxThreadGroupSize) +
                                                       "], got " + std::to_string(nranks));
  auto& ln = live_names();
  std::lock_guard<std::mutex> lk(ln.mu);
  if (ln.names.count(std::string_view(name)))
    return Status::Error(StatusCode::ParamInvalid,
                         std::string("name: a thread group named '") + name +
                             "' already exists (names must be unique among live thread groups)");
  auto state = std::make_shared<State>(name, nranks);
  out->reset(new ThreadGroup(std::move(state)));
  ln.names.emplace(name);
  return Status::Ok();
}

ThreadGroup::~ThreadGroup() {
  auto& ln = live_names();
  std::lock_guard<std::mutex> lk(ln.mu);
  auto it = ln.names.find(state_->name);
  if (it != ln.names.end()) ln.names.erase(it);
}

const std::string& ThreadGroup::name() const { return state_->name; }
int ThreadGroup::size() const { return state_->n; }

bool ThreadGroup::broken() const {
  std::lock_guard<std::mutex> lk(state_->mu);
  return state_->broken;
}

Status ThreadGroup::join(int rank) {
  if (rank < 0 || rank >= state_->n)
    return Status::Error(StatusCode::ParamInvalid, "rank: must be in [0, " + std::to_string(state_->n - 1) +
                                                       "] for group '" + state_->name + "', got " +
                                                       std::to_string(rank));
  {
    std::lock_guard<std::mutex> lk(state_->mu);
    if (state_->joined[rank])
      return Status::Error(StatusCode::ParamInvalid, "rank: rank " + std::to_string(rank) + " of group '" +
                                                         state_->name +
                                                         "' is already joined by a thread (leave it first)");
    state_->joined[rank] = true;
  }
  // From here on the communicator's destructor clears joined[rank].
  auto comm = std::make_shared<ThreadRankCommunicator>(state_, rank);
  return register_for_thread(std::move(comm));
}

Status ThreadGroup::leave() {
  auto c = resolve(state_->name);
  auto* tc = dynamic_cast<ThreadRankCommunicator*>(c.get());
  if (tc == nullptr || tc->state() != state_.get())
    return Status::Error(StatusCode::ParamInvalid,
                         "group: the calling thread has not joined group '" + state_->name + "'");
  c.reset();
  unregister_for_thread(state_->name);
  return Status::Ok();
}

}  // namespace qcoll::comm
