// The root side of unique-id rendezvous (comm/bootstrap.hpp): one background thread per
// process serves the rendezvous of every id the process made, with poll() over their
// sockets. All state is guarded by one mutex, held while events are handled and released
// while the thread sleeps in poll(). Around fork() the mutex is taken, so that the child
// sees a consistent state: it closes the inherited sockets (else a rank connecting after
// the parent's root closed would reach the child's copy and wait for nothing) and starts
// with no rendezvous of its own.
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/bootstrap.hpp"
#include "comm/bootstrap_rendezvous.hpp"
#include "comm/bootstrap_wire.hpp"
#include "comm/process_info.hpp"
#include "comm/shm_segment.hpp"
#include "comm/shm_setup.hpp"
#include "qcoll/settings.hpp"

namespace qcoll::comm::bootstrap {
namespace {

using namespace root;

class Service {
 public:
  static Service& get() {
    static Service* s = new Service;  // never destroyed: the thread may outlive static destruction
    return *s;
  }

  std::vector<std::string> segments() {
    std::lock_guard<std::mutex> lk(mu_);
    return segments_made();
  }

  int joined(const Id& id) {
    std::lock_guard<std::mutex> lk(mu_);
    for (const auto& rv : rvs_)
      if (std::memcmp(&rv->id, id.bytes, sizeof rv->id) == 0) return static_cast<int>(rv->members.size());
    return -1;
  }

  Status add(std::unique_ptr<Rendezvous> rv) {
    std::unique_lock<std::mutex> lk(mu_);
    if (!running_) {
      if (wake_fd_ < 0) wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (wake_fd_ < 0)
        return Status::Error(StatusCode::InnerError, std::string("unique id: eventfd: ") + std::strerror(errno));
      std::thread(&Service::loop, this).detach();
      running_ = true;
      // Return only once the thread runs its loop: its start-up (the runtime's allocations,
      // outside mu_) must not overlap a fork() by the caller, or the child can inherit a
      // locked allocator (seen under clang-14's ASan). From here on it allocates only under
      // mu_, which the fork handlers hold.
      loop_started_cv_.wait(lk, [&] { return loop_started_; });
    }
    rvs_.push_back(std::move(rv));
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    return Status::Ok();
  }

 private:
  Service() {
    pthread_atfork([] { get().mu_.lock(); }, [] { get().mu_.unlock(); }, [] { get().reset_in_child(); });
  }

  // In a forked child (the parent's state, no service thread): close what the parent's
  // root serves, forget it (the segment names stay the parent's to remove).
  void reset_in_child() {
    for (auto& rv : rvs_) rv->segment.name.clear();
    rvs_.clear();
    close_fd(wake_fd_);
    running_ = false;
    loop_started_ = false;
    mu_.unlock();
  }

  void loop() {
    std::vector<pollfd> pfds;
    std::unique_lock<std::mutex> lk(mu_);
    loop_started_ = true;
    loop_started_cv_.notify_all();
    for (;;) {
      pfds.clear();
      pfds.push_back({wake_fd_, POLLIN, 0});
      Clock::time_point next = Clock::time_point::max();
      for (const auto& rv : rvs_) {
        if (rv->listen_fd >= 0) pfds.push_back({rv->listen_fd, POLLIN, 0});
        for (const Fresh& f : rv->fresh) pfds.push_back({f.fd, POLLIN, 0});
        for (const Member& m : rv->members) pfds.push_back({m.fd, POLLIN, 0});
        next = std::min(next, rv->next_timer());
      }
      int timeout_ms = -1;
      if (next != Clock::time_point::max()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1;
        timeout_ms = static_cast<int>(std::clamp<long long>(left, 0, 60'000));
      }
      lk.unlock();
      const int n = ::poll(pfds.data(), pfds.size(), timeout_ms);
      lk.lock();
      if (n < 0 && errno != EINTR) {
        std::fprintf(stderr, "qcoll: unique-id root: poll failed: %s\n", std::strerror(errno));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      std::map<int, short> ready;
      for (const pollfd& p : pfds)
        if (p.revents != 0) ready[p.fd] = p.revents;
      if (ready.count(wake_fd_)) {
        uint64_t v;
        (void)!::read(wake_fd_, &v, sizeof v);
      }
      // The fds polled may have been closed meanwhile only by this thread, so `ready`
      // still names the sockets it polled.
      for (auto& rv : rvs_) handle(*rv, ready);
      const Clock::time_point now = Clock::now();
      for (auto& rv : rvs_) rv->on_timer(now);
      rvs_.erase(std::remove_if(rvs_.begin(), rvs_.end(),
                                [&](const std::unique_ptr<Rendezvous>& rv) {
                                  return rv->phase == Rendezvous::Phase::Over && now >= rv->close_at;
                                }),
                 rvs_.end());
    }
  }

  std::mutex mu_;
  std::vector<std::unique_ptr<Rendezvous>> rvs_;
  int wake_fd_ = -1;
  bool running_ = false;
  bool loop_started_ = false;  // the thread is in loop() (see add)
  std::condition_variable loop_started_cv_;
};

}  // namespace

Status make_id(Id& out) {
  wire::IdLayout id{};
  std::memcpy(id.magic, wire::kIdMagic, sizeof id.magic);
  id.version = wire::kVersion;
  id.creator_pid = static_cast<int32_t>(getpid());
  id.creator_pid_ns = pid_namespace();
  id.creator_uid = static_cast<uint32_t>(geteuid());
  if (Status s = random_bytes(id.nonce, wire::kNonceBytes); !s.ok())
    return Status::Error(s.code, "unique id: " + s.message);
  auto rv = std::make_unique<Rendezvous>();
  rv->id = id;
  rv->listen_fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (rv->listen_fd < 0)
    return Status::Error(StatusCode::InnerError, std::string("unique id: socket(AF_UNIX): ") + std::strerror(errno));
  sockaddr_un addr;
  const socklen_t len = wire::root_address(id, addr);
  if (::bind(rv->listen_fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 ||
      ::listen(rv->listen_fd, SOMAXCONN) != 0)
    return Status::Error(StatusCode::InnerError,
                         std::string("unique id: bind/listen on an abstract Unix socket: ") + std::strerror(errno));
  if (Status s = Service::get().add(std::move(rv)); !s.ok()) return s;
  std::memcpy(out.bytes, &id, sizeof id);
  return Status::Ok();
}

std::vector<std::string> segments_made_for_test() { return Service::get().segments(); }
int joined_for_test(const Id& id) { return Service::get().joined(id); }

}  // namespace qcoll::comm::bootstrap
