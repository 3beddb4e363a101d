// Streams (qcollStream): an ordered queue of calls run by one thread of its own.
//
// enqueue() appends a task; the stream's thread runs the tasks one after another, in order,
// each to the end whatever the previous ones returned, and destroys each task right after
// it ran (an executor is freed as soon as it has run). The first failure since the last
// synchronize is kept with a count of the later ones. synchronize() waits until every task
// enqueued before it has finished; close() refuses new tasks, waits for the queued ones and
// joins the thread. Handles are looked up in a registry of live streams, so a pointer that
// is not a live stream is refused without being read.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "qcoll/status.hpp"

namespace qcoll::api {

class Stream {
 public:
  using Task = std::function<Status()>;

  Stream() = default;
  ~Stream();  // close()
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // False when the stream is closing (the task is not run).
  bool enqueue(Task task);
  // timeout_ms: -1 no limit, >= 0 milliseconds. *timed_out tells whether the time ran out.
  Status synchronize(int32_t timeout_ms, bool* timed_out);
  // Refuses new tasks, waits for the queued ones, joins the thread; returns what a
  // synchronize would report.
  Status close();

 private:
  void loop();
  Status take_failure_locked();

  std::mutex mu_;
  std::condition_variable work_cv_;  // a task queued, or closing
  std::condition_variable done_cv_;  // a task finished
  std::deque<Task> queue_;
  uint64_t enqueued_ = 0, finished_ = 0;
  Status failure_;  // the first failure not reported yet
  uint64_t more_failures_ = 0;
  bool closing_ = false;
  std::thread thread_;  // started by the first enqueue
};

// The registry of live streams (qcollStream values are Stream addresses).
void* register_stream(std::shared_ptr<Stream> s);
std::shared_ptr<Stream> find_stream(void* handle);    // nullptr if not live
std::shared_ptr<Stream> remove_stream(void* handle);  // nullptr if not live

// "stream: must be a live stream from qcollStreamCreate (...), got 0x..." (PARAM_INVALID).
Status not_a_stream(const void* handle);

}  // namespace qcoll::api
