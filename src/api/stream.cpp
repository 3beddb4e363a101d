#include "api/stream.hpp"

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

namespace qcoll::api {

Stream::~Stream() { (void)close(); }

bool Stream::enqueue(Task task) {
  std::lock_guard<std::mutex> lk(mu_);
  if (closing_) return false;
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  queue_.push_back(std::move(task));
  ++enqueued_;
  work_cv_.notify_one();
  return true;
}

void Stream::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    work_cv_.wait(lk, [&] { return !queue_.empty() || closing_; });
    if (queue_.empty()) return;  // closing, nothing left
    Task task = std::move(queue_.front());
    queue_.pop_front();
    lk.unlock();
    Status st;
    try {
      st = task();
    } catch (const std::bad_alloc&) {
      st = Status::Error(StatusCode::InnerError, "out of memory");
    } catch (const std::exception& e) {
      st = Status::Error(StatusCode::InnerError, std::string("internal error: ") + e.what());
    } catch (...) {
      st = Status::Error(StatusCode::InnerError, "internal error: unknown exception");
    }
    task = nullptr;  // the executor (and what it holds) goes before the call counts as finished
    lk.lock();
    if (!st.ok()) {
      if (failure_.ok())
        failure_ = std::move(st);
      else
        ++more_failures_;
    }
    ++finished_;
    done_cv_.notify_all();
  }
}

Status Stream::take_failure_locked() {
  Status f = std::move(failure_);
  failure_ = Status::Ok();
  if (more_failures_ > 0) {
    f.message += " (and " + std::to_string(more_failures_) + " later call" + (more_failures_ > 1 ? "s" : "") +
                 " on this stream failed too)";
  }
  more_failures_ = 0;
  return f;
}

Status Stream::synchronize(int32_t timeout_ms, bool* timed_out) {
  if (timed_out) *timed_out = false;
  std::unique_lock<std::mutex> lk(mu_);
  const uint64_t target = enqueued_;
  auto done = [&] { return finished_ >= target; };
  if (timeout_ms < 0) {
    done_cv_.wait(lk, done);
  } else if (!done_cv_.wait_for(lk, std::chrono::milliseconds(timeout_ms), done)) {
    if (timed_out) *timed_out = true;
    return Status::Error(StatusCode::RuntimeError, "stream: synchronize timed out after " + std::to_string(timeout_ms) +
                                                       " ms with " + std::to_string(target - finished_) +
                                                       " of its calls still to finish (they go on; "
                                                       "synchronize again to wait for them)");
  }
  return take_failure_locked();
}

Status Stream::close() {
  std::thread t;
  {
    std::unique_lock<std::mutex> lk(mu_);
    closing_ = true;
    work_cv_.notify_all();
    done_cv_.wait(lk, [&] { return finished_ >= enqueued_; });
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
  std::lock_guard<std::mutex> lk(mu_);
  return take_failure_locked();
}

namespace {
struct Registry {
  std::mutex mu;
  std::map<void*, std::shared_ptr<Stream>> live;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: usable from exit-time destructors
  return *r;
}
}  // namespace

void* register_stream(std::shared_ptr<Stream> s) {
  void* h = s.get();
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  r.live.emplace(h, std::move(s));
  return h;
}

std::shared_ptr<Stream> find_stream(void* handle) {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  auto it = r.live.find(handle);
  return it == r.live.end() ? nullptr : it->second;
}

std::shared_ptr<Stream> remove_stream(void* handle) {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  auto it = r.live.find(handle);
  if (it == r.live.end()) return nullptr;
  std::shared_ptr<Stream> s = std::move(it->second);
  r.live.erase(it);
  return s;
}

Status not_a_stream(const void* handle) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", handle);
  return Status::Error(StatusCode::ParamInvalid,
                       std::string("stream: must be NULL or a live stream from qcollStreamCreate (not destroyed), "
                                   "got ") +
                           buf);
}

}  // namespace qcoll::api
