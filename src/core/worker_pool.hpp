// A small persistent pool of worker threads for splitting one call over cores (shared
// infrastructure: the kernels and the quantizers use it).
// One process-wide pool (WorkerPool::shared()) grows on demand up to kMaxWorkers threads
// and is joined when the process exits (static destruction); idle workers sleep on a
// condition variable. Several threads may call run() at once: every caller also runs
// queued parts itself while it waits, so no call waits on a busy pool.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qcoll::core {

class WorkerPool {
 public:
  static constexpr int kMaxWorkers = 63;

  WorkerPool() = default;
  ~WorkerPool();  // stops and joins the workers
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // The process-wide pool.
  static WorkerPool& shared();

  // The host's cores (std::thread::hardware_concurrency(), at least 1), read once per
  // process: glibc reads it from /sys on every call, an open file and three system calls
  // per operator call otherwise (and a descriptor a soak's count could catch in flight).
  static int host_cores();

  // Calls part(i) once for each i in [0, parts): part 0 on the calling thread, the others
  // on workers (or on the caller, whichever comes first). Returns when all have returned;
  // if any threw, rethrows the first exception after all parts ended.
  void run(int parts, const std::function<void(int)>& part);

  // Worker threads started so far.
  int workers() const;

 private:
  struct Batch;
  struct Task {
    Batch* batch;
    int index;
  };

  void start_workers_locked(int wanted);
  void worker_loop();
  void execute(const Task& t);  // runs one task without holding the mutex
  // Every part on the caller, in order (the SMPI build: no worker threads).
  static void run_inline(int parts, const std::function<void(int)>& part);

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;  // tasks queued or stopping
  std::condition_variable done_cv_;  // some batch finished a part
  std::deque<Task> queue_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

}  // namespace qcoll::core
