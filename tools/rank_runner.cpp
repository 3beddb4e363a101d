// The in-process rank runner: one std::thread per rank on a qcoll thread group.
#include "rank_runner.hpp"

#include <unistd.h>

#include <atomic>
#include <barrier>
#include <mutex>
#include <thread>

#include "cli_error.hpp"
#include "qcoll/qcoll.h"

namespace qcoll::cli {
namespace {

class ThreadRunner final : public RankRunner {
 public:
  explicit ThreadRunner(int nranks) : size_(nranks) {
    static std::atomic<unsigned> counter{0};
    name_ = "qcoll-cli-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    qcollStatus st = qcollThreadGroupCreate(name_.c_str(), nranks, &group_);
    if (st != QCOLL_SUCCESS) {
      group_ = nullptr;
      throw CliError(
          ErrorKind::Status,
          std::string("creating a group of ") + std::to_string(nranks) + " thread ranks: " + qcollGetRecentErrMsg(),
          st);
    }
  }
  ~ThreadRunner() override {
    if (group_) qcollThreadGroupDestroy(group_);
  }

  int size() const override { return size_; }
  std::vector<int> local_ranks() const override {
    std::vector<int> r(static_cast<std::size_t>(size_));
    for (int i = 0; i < size_; ++i) r[static_cast<std::size_t>(i)] = i;
    return r;
  }
  const char* transport() const override { return "threads"; }

  void run(const RankFn& fn) override {
    std::mutex mu;
    std::string join_error;
    int32_t join_status = QCOLL_SUCCESS;
    std::atomic<bool> all_joined{true};
    std::barrier<> joined(size_);
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      threads.emplace_back([&, r] {
        qcollStatus st = qcollThreadGroupJoin(group_, r);
        if (st != QCOLL_SUCCESS) {
          std::lock_guard<std::mutex> lock(mu);
          join_status = st;
          join_error = "rank " + std::to_string(r) + " could not join group '" + name_ + "': " + qcollGetRecentErrMsg();
          all_joined = false;
        }
        // No rank enters the operator unless every rank joined (else the others would wait
        // for it until the timeout).
        joined.arrive_and_wait();
        if (all_joined) fn(r, size_, name_);
        if (st == QCOLL_SUCCESS) qcollThreadGroupLeave(group_);
      });
    }
    for (auto& t : threads) t.join();
    if (join_status != QCOLL_SUCCESS) throw CliError(ErrorKind::Status, join_error, join_status);
  }

  bool all_ok(bool local_ok) override { return local_ok; }

 private:
  int size_;
  std::string name_;
  qcollThreadGroup* group_ = nullptr;
};

}  // namespace

std::unique_ptr<RankRunner> make_thread_runner(int nranks) { return std::make_unique<ThreadRunner>(nranks); }

}  // namespace qcoll::cli
