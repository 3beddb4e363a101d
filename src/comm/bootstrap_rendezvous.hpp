// The root side of one unique-id rendezvous (comm/bootstrap.hpp describes the protocol):
// the state of the ranks that connected and joined, and what the root does with each
// message it receives, each hang-up and each deadline. Served by the thread of
// comm/bootstrap_root.cpp, which owns the sockets' poll() and calls handle() and on_timer()
// under its mutex; kept apart so that fuzz/fuzz_bootstrap_root.cpp can drive it over
// socket pairs without that thread. Internal to the comm layer.
#pragma once
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "comm/bootstrap.hpp"
#include "comm/bootstrap_wire.hpp"
#include "comm/shm_segment.hpp"
#include "comm/shm_setup.hpp"
#include "comm/text.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/settings.hpp"

namespace qcoll::comm::bootstrap::root {

using wire::Hello;
using wire::Mapped;
using wire::Reply;

inline constexpr auto kHelloWait = std::chrono::seconds(10);  // a connection that never says Hello

inline std::vector<std::string>& segments_made() {  // guarded by the service's mutex
  static auto* v = new std::vector<std::string>;
  return *v;
}

template <class T>
void send_msg(int fd, const T& m) {
  // Never blocks (an empty socket buffer holds a message) and never raises SIGPIPE; a rank
  // that is gone is noticed by poll().
  (void)::send(fd, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

inline void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

struct Fresh {  // a connection whose Hello has not come yet
  int fd = -1;
  int32_t pid = 0;  // from SO_PEERCRED
  Clock::time_point since;
};

struct Member {  // a rank that joined
  int fd = -1;
  int32_t pid = 0;
  Hello hello;
  bool answered = false;  // its Mapped came
  Mapped mapped;
};

struct Rendezvous {
  enum class Phase { Joining, Mapping, Over };

  wire::IdLayout id{};
  int listen_fd = -1;
  Phase phase = Phase::Joining;
  std::vector<Fresh> fresh;
  std::vector<Member> members;  // in order of arrival
  Clock::time_point deadline = Clock::time_point::max();
  double deadline_seconds = 0;  // the QCOLL_TIMEOUT_S behind the deadline
  int deadline_rank = -1;       // ... and whose it is
  ShmSegment segment;           // while Mapping
  // Over: what a rank that comes now is told, and when the socket closes.
  int32_t late_code = 0;
  std::string late_message;
  Clock::time_point close_at = Clock::time_point::max();

  Rendezvous() = default;
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;
  ~Rendezvous() {
    close_fd(listen_fd);
    for (Fresh& f : fresh) close_fd(f.fd);
    for (Member& m : members) close_fd(m.fd);
    if (segment.mapping) unlink_shm(segment.name);
  }

  std::string comm_name() const { return members.empty() ? std::string() : wire::get(members[0].hello.name); }
  int nranks() const { return members.empty() ? 0 : members[0].hello.nranks; }
  std::string what() const { return "rendezvous of communicator '" + comm_name() + "'"; }
  std::string who(const Member& m) const {
    return "rank " + std::to_string(m.hello.rank) + " (pid " + std::to_string(m.pid) + ")";
  }

  // Empty when a Hello's fields obey the rules a joining rank checks locally (join's
  // local_checks), else "FIELD: must be RULE, got VALUE".
  static std::string hello_rule_broken(const Hello& h) {
    if (Status s = contract::check_comm_size(h.nranks); !s.ok()) return s.message;
    constexpr uint64_t kMiB = uint64_t{1} << 20;
    if (h.window_bytes % kMiB != 0 || h.window_bytes < kMiB || h.window_bytes / kMiB > settings::kMaxBuffSizeMiB)
      return std::string(settings::kBuffSizeName) + ": the window must be a whole number of MB in [1, " +
             std::to_string(settings::kMaxBuffSizeMiB) + "], got " + std::to_string(h.window_bytes) + " bytes";
    constexpr int64_t kMaxWaitMs = static_cast<int64_t>(settings::kMaxTimeoutSeconds * 1000.0);
    if (h.wait_ms < 0 || h.wait_ms > kMaxWaitMs)
      return "wait: must be in [0, " + std::to_string(kMaxWaitMs) + "] ms (" + settings::kTimeoutName + " at most " +
             seconds_text(settings::kMaxTimeoutSeconds) + " s), got " + std::to_string(h.wait_ms) + " ms";
    return {};
  }

  // Connections that have not said Hello yet stay: they get late_message.
  void over(int32_t code, std::string message) {
    phase = Phase::Over;
    for (Member& m : members) close_fd(m.fd);
    members.clear();
    late_code = code;
    late_message = std::move(message);
    close_at = Clock::now() + settings::call_timeout();
  }

  // Every rank there gets `code` and `message`; the rendezvous is over.
  void abort(StatusCode code, const std::string& message) {
    Reply r;
    r.kind = wire::kAbort;
    r.code = static_cast<int32_t>(code);
    wire::put(r.message, message);
    for (const Member& m : members) send_msg(m.fd, r);
    if (segment.mapping) {
      unlink_shm(segment.name);
      segment = ShmSegment();
    }
    over(static_cast<int32_t>(StatusCode::RuntimeError),
         "id: its rendezvous failed earlier (" + message + "); make a new id with qcollGetUniqueId");
  }

  // A Hello that comes after every rank joined (Mapping) or after the rendezvous ended
  // (Over): refused, the connection closed.
  void refuse_late(const Fresh& f, const Hello& h) {
    Reply r;
    r.kind = wire::kAbort;
    if (phase == Phase::Over) {
      r.code = late_code;
      wire::put(r.message, late_message);
    } else {
      r.code = static_cast<int32_t>(StatusCode::ParamInvalid);
      wire::put(r.message, "rank: all " + std::to_string(nranks()) +
                               " ranks of this id have joined already, got rank " + std::to_string(h.rank) +
                               " again (pid " + std::to_string(f.pid) + ")");
    }
    send_msg(f.fd, r);
    ::close(f.fd);
  }

  // True (and the rendezvous aborted) when the joining rank m failed its own checks or sent
  // fields those checks would not pass.
  bool rejected(const Member& m, const std::string& name) {
    const Hello& h = m.hello;
    const std::string joining = "rendezvous of communicator '" + name + "': a process (pid " + std::to_string(m.pid) +
                                ") joining as rank " + std::to_string(h.rank);
    if (h.local_code != 0 || h.rank < 0 || h.rank >= h.nranks) {
      // It returns its own error without waiting: tell the others.
      int fd = m.fd;
      close_fd(fd);
      abort(StatusCode::RuntimeError, joining + " failed its own checks: " + wire::get(m.hello.message));
      return true;
    }
    // The fields a joining rank's own checks guarantee, checked again: the bytes come from
    // another process. Before this check a Hello's wait_ms of 2^63 - 1 overflowed the
    // deadline arithmetic (undefined; found by fuzz/fuzz_bootstrap_root.cpp), and an nranks
    // of 2^31 - 1 would have made the message listing the missing ranks loop 2^31 times.
    const std::string bad = hello_rule_broken(h);
    if (bad.empty()) return false;
    Reply r;
    r.kind = wire::kAbort;
    r.code = static_cast<int32_t>(StatusCode::ParamInvalid);
    wire::put(r.message, "rendezvous: the id's creator cannot take this rank's Hello: " + bad);
    send_msg(m.fd, r);
    int fd = m.fd;
    close_fd(fd);
    abort(StatusCode::RuntimeError, joining + " sent a Hello the id's creator cannot take: " + bad);
    return true;
  }

  // Empty when m agrees with the ranks already there (nranks, name, window, a rank of its
  // own), else the rule it breaks.
  std::string mismatch_of(const Member& m, const std::string& name) const {
    if (members.empty()) return {};
    const Member& first = members[0];
    const Hello& a = first.hello;
    const Hello& h = m.hello;
    auto both = [&](const std::string& va, const std::string& vb) {
      auto at = [](const Member& x) {
        return " (rank " + std::to_string(x.hello.rank) + ", pid " + std::to_string(x.pid) + ")";
      };
      return "got " + va + at(first) + " and " + vb + at(m);
    };
    if (h.nranks != a.nranks) {
      return "nranks: must be the same on every rank of an id, " +
             both(std::to_string(a.nranks), std::to_string(h.nranks));
    }
    if (name != comm_name()) {
      return "name: must be the same on every rank of an id, " + both("'" + comm_name() + "'", "'" + name + "'");
    }
    if (h.window_bytes != a.window_bytes) {
      return std::string(settings::kBuffSizeName) + ": must be the same on every rank of an id, " +
             both(std::to_string(a.window_bytes >> 20) + " MB", std::to_string(h.window_bytes >> 20) + " MB");
    }
    for (const Member& o : members) {
      if (o.hello.rank != h.rank) continue;
      return "rank: must be unique among the ranks of an id, got " + std::to_string(h.rank) + " twice (pids " +
             std::to_string(o.pid) + " and " + std::to_string(m.pid) + ")";
    }
    return {};
  }

  // A rank's Hello, checked against the ranks already there.
  void on_hello(const Fresh& f, const Hello& h) {
    if (phase != Phase::Joining) return refuse_late(f, h);
    Member m;
    m.fd = f.fd;
    m.pid = f.pid;
    m.hello = h;
    m.hello.name[wire::kNameBytes - 1] = '\0';
    m.hello.message[wire::kMessageBytes - 1] = '\0';
    const std::string name = wire::get(m.hello.name);
    if (rejected(m, name)) return;
    const std::string mismatch = mismatch_of(m, name);
    members.push_back(m);
    if (!mismatch.empty()) {
      abort(StatusCode::ParamInvalid, mismatch);
      return;
    }
    const auto d = Clock::now() + std::chrono::milliseconds(h.wait_ms);
    if (d < deadline) {
      deadline = d;
      deadline_seconds = static_cast<double>(h.wait_ms) / 1000.0;
      deadline_rank = h.rank;
    }
    if (static_cast<int>(members.size()) == h.nranks) start_mapping();
  }

  // Every rank is there: the segment, announced to each.
  void start_mapping() {
    const Hello& a = members[0].hello;
    ShmSegment seg;
    Status s = create_segment(a.nranks, a.window_bytes, seg);
    if (!s.ok()) {
      abort(StatusCode::RuntimeError, what() + ": the id's creator (pid " + std::to_string(getpid()) +
                                          ") could not create the shared memory segment: " + s.message);
      return;
    }
    segment = std::move(seg);
    segments_made().push_back(segment.name);
    for (const Member& m : members) {
      Reply r;
      r.kind = wire::kSegment;
      r.ranks_in_process = static_cast<int32_t>(
          std::count_if(members.begin(), members.end(), [&](const Member& o) { return o.pid == m.pid; }));
      wire::put(r.shm_name, segment.name);
      send_msg(m.fd, r);
    }
    phase = Phase::Mapping;
  }

  // Every rank answered: the name goes, then Go (or Abort if one could not attach).
  void finish_mapping() {
    unlink_shm(segment.name);
    segment = ShmSegment();
    for (const Member& m : members) {
      if (m.mapped.code == 0) continue;
      abort(StatusCode::RuntimeError,
            what() + ": " + who(m) + " could not attach to the shared memory segment: " + wire::get(m.mapped.message));
      return;
    }
    for (const Member& m : members) {
      Reply r;
      r.kind = wire::kGo;
      r.ranks_in_process = static_cast<int32_t>(
          std::count_if(members.begin(), members.end(), [&](const Member& o) { return o.pid == m.pid; }));
      send_msg(m.fd, r);
    }
    const std::string done = "id: already used: communicator '" + comm_name() + "' of " + std::to_string(nranks()) +
                             " ranks was made from it (each rank joins once per id; make a new id with "
                             "qcollGetUniqueId)";
    over(static_cast<int32_t>(StatusCode::ParamInvalid), done);
  }

  // A rank's socket became readable or hung up.
  void on_member(std::size_t i) {
    Member& m = members[i];
    if (phase == Phase::Mapping && !m.answered) {
      Mapped got;
      const ssize_t n = ::recv(m.fd, &got, sizeof got, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      if (n == static_cast<ssize_t>(sizeof got) && got.kind == wire::kMapped) {
        m.answered = true;
        m.mapped = got;
        m.mapped.message[wire::kMessageBytes - 1] = '\0';
        if (std::all_of(members.begin(), members.end(), [](const Member& o) { return o.answered; })) finish_mapping();
        return;
      }
    } else {
      char byte;
      const ssize_t n = ::recv(m.fd, &byte, sizeof byte, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    }
    // It hung up (gave up at its deadline, or exited) or sent what it should not.
    const std::string who_left = who(m);
    abort(StatusCode::RuntimeError, what() + ": " + who_left +
                                        " left the rendezvous before it completed (it gave up or exited)" +
                                        (phase == Phase::Joining ? "; not joined: " + missing_ranks() : std::string()));
  }

  std::string missing_ranks() const {
    std::string out;
    int count = 0;
    for (int r = 0; r < nranks(); ++r) {
      const bool here = std::any_of(members.begin(), members.end(), [&](const Member& m) {
        return m.hello.rank == r && (phase == Phase::Joining || m.answered);
      });
      if (here) continue;
      if (++count <= 16) out += (out.empty() ? "" : ", ") + std::to_string(r);
    }
    if (count > 16) out += ", ...";
    return "rank(s) " + out + " of " + std::to_string(nranks());
  }

  void on_timer(Clock::time_point now) {
    for (std::size_t i = 0; i < fresh.size();) {
      if (now - fresh[i].since < kHelloWait) {
        ++i;
        continue;
      }
      ::close(fresh[i].fd);
      fresh.erase(fresh.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (phase == Phase::Over || now < deadline) return;
    const std::string why = phase == Phase::Joining ? " did not join" : " did not attach to the shared memory segment";
    abort(StatusCode::RuntimeError, what() + ": timed out after " + seconds_text(deadline_seconds) +
                                        " s (QCOLL_TIMEOUT_S of rank " + std::to_string(deadline_rank) +
                                        "): " + missing_ranks() + why);
  }

  Clock::time_point next_timer() const {
    Clock::time_point t = phase == Phase::Over ? close_at : deadline;
    for (const Fresh& f : fresh) t = std::min(t, f.since + kHelloWait);
    return t;
  }
};

inline void accept_all(Rendezvous& rv) {
  for (;;) {
    const int fd = ::accept4(rv.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: no more; anything else: the next poll tells
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != geteuid()) {
      ::close(fd);  // only processes of this user may join
      continue;
    }
    rv.fresh.push_back({fd, static_cast<int32_t>(cred.pid), Clock::now()});
  }
}

// The sockets of `rv` that poll() reported in `ready` (fd -> revents): new connections,
// Hellos of fresh connections, messages and hang-ups of members.
inline void handle(Rendezvous& rv, const std::map<int, short>& ready) {
  auto is_ready = [&](int fd) { return fd >= 0 && ready.count(fd) != 0; };
  if (is_ready(rv.listen_fd)) accept_all(rv);
  for (std::size_t i = 0; i < rv.fresh.size();) {
    Fresh f = rv.fresh[i];
    if (!is_ready(f.fd)) {
      ++i;
      continue;
    }
    Hello h;
    const ssize_t n = ::recv(f.fd, &h, sizeof h, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      ++i;
      continue;
    }
    rv.fresh.erase(rv.fresh.begin() + static_cast<std::ptrdiff_t>(i));
    if (n != static_cast<ssize_t>(sizeof h) || h.kind != wire::kHello || h.version != wire::kVersion ||
        std::memcmp(h.nonce, rv.id.nonce, wire::kNonceBytes) != 0) {
      ::close(f.fd);  // not one of ours
      continue;
    }
    rv.on_hello(f, h);
  }
  for (std::size_t i = 0; i < rv.members.size() && rv.phase != Rendezvous::Phase::Over; ++i)
    if (is_ready(rv.members[i].fd)) rv.on_member(i);
}

}  // namespace qcoll::comm::bootstrap::root
