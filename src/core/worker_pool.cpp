#include "core/worker_pool.hpp"

#include <algorithm>
#include <exception>

namespace qcoll::core {

struct WorkerPool::Batch {
  const std::function<void(int)>* part = nullptr;
  int pending = 0;           // parts not finished yet (guarded by mutex_)
  std::exception_ptr error;  // first exception (guarded by mutex_)
};

WorkerPool& WorkerPool::shared() {
  static WorkerPool pool;
  return pool;
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

int WorkerPool::host_cores() {
  static const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return cores;
}

int WorkerPool::workers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(threads_.size());
}

void WorkerPool::start_workers_locked(int wanted) {
  wanted = std::min(wanted, kMaxWorkers);
  while (static_cast<int>(threads_.size()) < wanted) threads_.emplace_back([this] { worker_loop(); });
}

void WorkerPool::execute(const Task& t) {
  std::exception_ptr err;
  try {
    (*t.batch->part)(t.index);
  } catch (...) {
    err = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (err && !t.batch->error) t.batch->error = err;
  --t.batch->pending;
  // After this unlock the caller may return and destroy the batch: no touching it below.
  done_cv_.notify_all();
}

void WorkerPool::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and nothing left
    const Task t = queue_.front();
    queue_.pop_front();
    lock.unlock();
    execute(t);
    lock.lock();
  }
}

void WorkerPool::run(int parts, const std::function<void(int)>& part) {
  if (parts <= 0) return;
  if (parts == 1) {
    part(0);
    return;
  }
#ifdef QCOLL_SMPI
  // SMPI build (cmake/smpi.cmake): every part on the calling rank, in order. The ranks are
  // actors of one OS thread and a simulated host has a core per rank; a worker thread would
  // run outside the simulation. The parts are independent, so the bits are the same.
  run_inline(parts, part);
  return;
#endif
  Batch batch;
  batch.part = &part;
  batch.pending = parts;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    start_workers_locked(parts - 1);
    for (int i = 1; i < parts; ++i) queue_.push_back(Task{&batch, i});
  }
  work_cv_.notify_all();
  execute(Task{&batch, 0});
  std::unique_lock<std::mutex> lock(mutex_);
  while (batch.pending > 0) {
    // Help: run a queued task (of this or another caller's batch) instead of idling.
    if (!queue_.empty()) {
      const Task t = queue_.front();
      queue_.pop_front();
      lock.unlock();
      execute(t);
      lock.lock();
      continue;
    }
    done_cv_.wait(lock);
  }
  if (batch.error) std::rethrow_exception(batch.error);
}

void WorkerPool::run_inline(int parts, const std::function<void(int)>& part) {
  std::exception_ptr first;
  for (int i = 0; i < parts; ++i) {
    try {
      part(i);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace qcoll::core
