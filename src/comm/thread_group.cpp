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

Status runtime_error(std::string msg) {
  return Status::Error(StatusCode::RuntimeError, std::move(msg));
}

}  // namespace

// Everything the ranks of one group share. All fields are guarded by `mu`.
struct ThreadGroup::State {
  struct Published {
    const uint8_t* x = nullptr;
    const uint8_t* scales = nullptr;
    std::size_t x_row_bytes = 0;
    std::size_t s_row_bytes = 0;
    std::size_t rows_per_rank = 0;
    const uint8_t* buf = nullptr;  // allgather_inplace
    std::size_t block_bytes = 0;
  };

  State(std::string nm, int size)
      : name(std::move(nm)), n(size), joined(size, false), entered(size, 0), where(size, ""),
        desc_seq(size, 0), pub(size) {
    desc[0].resize(size);
    desc[1].resize(size);
  }

  const std::string name;
  const int n;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> joined;

  // Barrier: `arrived` ranks wait in generation `generation`; entered[r] counts the
  // barriers rank r entered (to name the missing ranks after a timeout).
  int arrived = 0;
  uint64_t generation = 0;
  std::vector<uint64_t> entered;
  std::vector<const char*> where;  // the step each rank entered last (string literals)

  bool broken = false;
  std::string broken_reason;

  // Descriptor slots, double-buffered by each rank's call sequence parity: a rank can write
  // slot (s+2)&1 only after the barrier of call s+1, which every rank enters after reading
  // call s.
  std::vector<CallDescriptor> desc[2];
  std::vector<uint64_t> desc_seq;

  std::vector<Published> pub;

  Status broken_status() const {
    return runtime_error("group '" + name + "' (threads) is broken: " + broken_reason +
                         "; every later call fails: destroy the group and create it again");
  }

  // Waits (lock held on entry and exit) until every rank entered this barrier or the
  // deadline passes; a timeout breaks the group.
  Status barrier(std::unique_lock<std::mutex>& lk, int rank, Clock::time_point deadline,
                 const char* what) {
    if (broken) return broken_status();
    const uint64_t gen = generation;
    ++entered[rank];
    where[rank] = what;
    if (++arrived == n) {
      // Every rank must be in the same step of the same collective; a mismatch would pair
      // unrelated steps silently, so it breaks the group instead.
      for (int k = 0; k < n; ++k) {
        if (std::strcmp(where[k], what) == 0) continue;
        broken = true;
        broken_reason = "ranks out of step: rank " + std::to_string(k) + " in " + where[k] +
                        ", rank " + std::to_string(rank) + " in " + what;
        cv.notify_all();
        return broken_status();
      }
      arrived = 0;
      ++generation;
      cv.notify_all();
      return Status::Ok();
    }
    cv.wait_until(lk, deadline, [&] { return generation != gen || broken; });
    if (generation != gen) return Status::Ok();
    if (broken) return broken_status();
    std::string missing;
    for (int k = 0; k < n; ++k)
      if (entered[k] < entered[rank]) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
    broken = true;
    broken_reason = "rank " + std::to_string(rank) + " timed out (QCOLL_TIMEOUT_S) in " + what +
                    " waiting for rank(s) " + missing;
    cv.notify_all();
    return runtime_error("group '" + name + "' (threads): rank " + std::to_string(rank) +
                         " timed out (QCOLL_TIMEOUT_S) in " + what + " waiting for rank(s) " +
                         missing + "; the group is now broken: destroy it and create it again");
  }
};

namespace {

class ThreadRankCommunicator final : public Communicator {
 public:
  ThreadRankCommunicator(std::shared_ptr<ThreadGroup::State> s, int rank)
      : s_(std::move(s)), rank_(rank) {}
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

  Status allgather_descriptors(const CallDescriptor& mine, std::vector<CallDescriptor>& all,
                               Clock::time_point deadline) override {
    std::unique_lock<std::mutex> lk(s_->mu);
    if (s_->broken) return s_->broken_status();
    auto& slot = s_->desc[s_->desc_seq[rank_]++ & 1];
    slot[rank_] = mine;
    Status st = s_->barrier(lk, rank_, deadline, "the call agreement");
    if (!st.ok()) return st;
    all = slot;
    return Status::Ok();
  }

  Status exchange(const ExchangeSpec& spec, const ChunkConsumer& consume,
                  Clock::time_point deadline) override {
    const int n = s_->n;
    std::vector<const uint8_t*> xs(n), ss(n);
    Status result;
    {
      std::unique_lock<std::mutex> lk(s_->mu);
      if (s_->broken) return s_->broken_status();
      auto& p = s_->pub[rank_];
      p.x = spec.x;
      p.scales = spec.scales;
      p.x_row_bytes = spec.x_row_bytes;
      p.s_row_bytes = spec.s_row_bytes;
      p.rows_per_rank = spec.rows_per_rank;
      Status st = s_->barrier(lk, rank_, deadline, "the exchange (publish)");
      if (!st.ok()) return st;
      for (int k = 0; k < n; ++k) {
        const auto& q = s_->pub[k];
        if (q.x_row_bytes != spec.x_row_bytes || q.s_row_bytes != spec.s_row_bytes ||
            q.rows_per_rank != spec.rows_per_rank) {
          result = runtime_error("group '" + s_->name + "' (threads): rank " + std::to_string(k) +
                                 " exchanges a different layout than rank " +
                                 std::to_string(rank_));
          break;
        }
        const std::size_t first = static_cast<std::size_t>(rank_) * spec.rows_per_rank;
        xs[k] = q.x + first * q.x_row_bytes;
        ss[k] = q.scales + first * q.s_row_bytes;
      }
    }
    if (result.ok() && spec.rows_per_rank > 0) {
      Chunk c;
      c.row_begin = 0;
      c.rows = spec.rows_per_rank;
      c.x = xs.data();
      c.scales = ss.data();
      try {
        result = consume(c);
      } catch (const std::bad_alloc&) {
        result = Status::Error(StatusCode::InnerError, "out of memory while reducing");
      } catch (const std::exception& e) {
        result = Status::Error(StatusCode::InnerError, std::string("reduction failed: ") + e.what());
      }
    }
    std::unique_lock<std::mutex> lk(s_->mu);
    Status st = s_->barrier(lk, rank_, deadline, "the exchange (release)");
    return result.ok() ? st : result;
  }

  Status allgather_inplace(void* buf, std::size_t block_bytes, Clock::time_point deadline) override {
    const int n = s_->n;
    auto* mine = static_cast<uint8_t*>(buf);
    std::vector<const uint8_t*> peers(n);
    Status result;
    {
      std::unique_lock<std::mutex> lk(s_->mu);
      if (s_->broken) return s_->broken_status();
      s_->pub[rank_].buf = mine;
      s_->pub[rank_].block_bytes = block_bytes;
      Status st = s_->barrier(lk, rank_, deadline, "the all-gather (publish)");
      if (!st.ok()) return st;
      for (int k = 0; k < n; ++k) {
        if (s_->pub[k].block_bytes != block_bytes) {
          result = runtime_error("group '" + s_->name + "' (threads): rank " + std::to_string(k) +
                                 " all-gathers blocks of a different size than rank " +
                                 std::to_string(rank_));
          break;
        }
        peers[k] = s_->pub[k].buf;
      }
    }
    if (result.ok()) {
      for (int k = 0; k < n; ++k) {
        if (k == rank_ || block_bytes == 0) continue;
        const std::size_t off = static_cast<std::size_t>(k) * block_bytes;
        std::memcpy(mine + off, peers[k] + off, block_bytes);
      }
    }
    std::unique_lock<std::mutex> lk(s_->mu);
    Status st = s_->barrier(lk, rank_, deadline, "the all-gather (release)");
    return result.ok() ? st : result;
  }

 private:
  std::shared_ptr<ThreadGroup::State> s_;
  const int rank_;
};

}  // namespace

Status ThreadGroup::create(const char* name, int nranks, std::unique_ptr<ThreadGroup>* out) {
  if (out == nullptr) return Status::Error(StatusCode::ParamNullptr, "group: must not be null");
  *out = nullptr;
  if (Status st = check_group_name(name, "name"); !st.ok()) return st;
  if (nranks < 1 || nranks > kMaxThreadGroupSize)
    return Status::Error(StatusCode::ParamInvalid,
                         "nranks: must be in [1, " + std::to_string(kMaxThreadGroupSize) +
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
    return Status::Error(StatusCode::ParamInvalid,
                         "rank: must be in [0, " + std::to_string(state_->n - 1) + "] for group '" +
                             state_->name + "', got " + std::to_string(rank));
  {
    std::lock_guard<std::mutex> lk(state_->mu);
    if (state_->joined[rank])
      return Status::Error(StatusCode::ParamInvalid,
                           "rank: rank " + std::to_string(rank) + " of group '" + state_->name +
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
    return Status::Error(StatusCode::ParamInvalid, "group: the calling thread has not joined group '" +
                                                       state_->name + "'");
  c.reset();
  unregister_for_thread(state_->name);
  return Status::Ok();
}

}  // namespace qcoll::comm
