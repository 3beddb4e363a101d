// The rank side of unique-id rendezvous (comm/bootstrap.hpp): local checks, then one
// connection to the root, bounded by this rank's QCOLL_TIMEOUT_S.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "comm/bootstrap.hpp"
#include "comm/bootstrap_wire.hpp"
#include "comm/process_info.hpp"
#include "comm/registry.hpp"
#include "comm/shm_setup.hpp"
#include "comm/text.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/settings.hpp"

namespace qcoll::comm::bootstrap {
namespace {

using wire::Hello;
using wire::Mapped;
using wire::Reply;

// How long past its own deadline a rank waits for the root's verdict (the root decides at
// the earliest deadline of the ranks there, which is never later than this rank's).
constexpr auto kGrace = std::chrono::seconds(2);

class Socket {
 public:
  Socket() : fd_(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

std::string creator_text(const wire::IdLayout& id) { return "pid " + std::to_string(id.creator_pid); }

bool creator_gone(const wire::IdLayout& id) {
  const uint64_t ns = pid_namespace();
  return ns != 0 && ns == id.creator_pid_ns && !process_alive(id.creator_pid);
}

// Connects to the root of `id` before `deadline` (a full backlog is retried).
Status connect_root(const Socket& s, const wire::IdLayout& id, Clock::time_point deadline) {
  if (s.fd() < 0) return Status::Error(StatusCode::InnerError, std::string("socket(AF_UNIX): ") + std::strerror(errno));
  sockaddr_un addr;
  const socklen_t len = wire::root_address(id, addr);
  for (;;) {
    if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&addr), len) == 0) break;
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (err == ECONNREFUSED || err == ENOENT) {
      if (creator_gone(id))
        return Status::Error(StatusCode::ParamInvalid,
                             "id: stale: the process that made it (" + creator_text(id) +
                                 ", qcollGetUniqueId) has exited, and its rendezvous with it; make a new id");
      return Status::Error(StatusCode::ParamInvalid,
                           "id: stale: nobody serves its rendezvous any more (the id was used, or its rendezvous "
                           "failed, more than QCOLL_TIMEOUT_S ago), or it was made on another host or network "
                           "namespace (" +
                               creator_text(id) + "); make a new id");
    }
    return Status::Error(StatusCode::RuntimeError, "rendezvous: connecting to the id's creator (" + creator_text(id) +
                                                       "): " + std::strerror(err));
  }
  ucred cred{};
  socklen_t clen = sizeof cred;
  if (getsockopt(s.fd(), SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 && cred.uid != geteuid())
    return Status::Error(StatusCode::ParamInvalid, "id: its rendezvous is served by another user (uid " +
                                                       std::to_string(cred.uid) + "), expected uid " +
                                                       std::to_string(geteuid()));
  return Status::Ok();
}

Status send_all(int fd, const void* p, std::size_t n) {
  const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
  if (w == static_cast<ssize_t>(n)) return Status::Ok();
  return Status::Error(StatusCode::RuntimeError,
                       std::string("rendezvous: sending to the id's creator: ") + std::strerror(errno));
}

// This rank's own checks (in the order of bootstrap.hpp, after the id).
Status local_checks(const std::string& name, bool named, int nranks, int rank, std::size_t& window) {
  if (named) {
    if (Status s = check_group_name(name.c_str(), "name"); !s.ok()) return s;
  }
  if (Status s = contract::check_comm_size(nranks); !s.ok()) return s;
  if (rank < 0 || rank >= nranks)
    return Status::Error(StatusCode::ParamInvalid, "rank: must be in [0, " + std::to_string(nranks - 1) +
                                                       "] for nranks " + std::to_string(nranks) + ", got " +
                                                       std::to_string(rank));
  if (resolve(name) != nullptr)
    return Status::Error(StatusCode::ParamInvalid,
                         "name: a communicator named '" + name + "' is already registered for this thread or process");
  if (Status s = settings::window_bytes(window); !s.ok()) return s;
  settings::Transport t = settings::Transport::Auto;
  if (Status s = settings::transport(t); !s.ok()) return s;
  if (t == settings::Transport::Mpi)
    return Status::Error(StatusCode::ParamInvalid,
                         std::string(settings::kTransportName) +
                             ": must be auto or shm for a communicator made from a unique id (its ranks share "
                             "one host), got \"mpi\" (use qcollMpiCommCreate for MPI)");
  return Status::Ok();
}

// A hello to the root of `layout` from this rank (what every hello says).
Hello hello_for(const wire::IdLayout& layout, int nranks, int rank, const std::string& nm) {
  Hello h;
  std::memcpy(h.nonce, layout.nonce, sizeof h.nonce);
  h.nranks = nranks;
  h.rank = rank;
  h.pid = static_cast<int32_t>(getpid());
  wire::put(h.name, nm);
  return h;
}

// One rank's side of a rendezvous after its hello: the root's replies, until its verdict.
class Joining {
 public:
  Joining(const Socket& sock, const wire::IdLayout& layout, std::string nm, int nranks, int rank, std::size_t window,
          Clock::time_point start)
      : sock_(sock),
        layout_(layout),
        nm_(std::move(nm)),
        nranks_(nranks),
        rank_(rank),
        window_(window),
        start_(start) {}

  // Waits for the root's replies until `hard_deadline`; out on success.
  Status run(Clock::time_point hard_deadline, Joined& out);

 private:
  // Waits for one reply: true in *got when r holds one (false: wait again).
  Status receive(Clock::time_point hard_deadline, Reply& r, bool* got);
  // kSegment: maps the segment and tells the root the outcome.
  Status map_segment(const Reply& r);

  const Socket& sock_;
  const wire::IdLayout& layout_;
  const std::string nm_;
  const int nranks_, rank_;
  const std::size_t window_;
  const Clock::time_point start_;
  std::shared_ptr<Communicator> comm_;
};

Status Joining::receive(Clock::time_point hard_deadline, Reply& r, bool* got) {
  *got = false;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(hard_deadline - Clock::now()).count();
  if (left <= 0) {
    return Status::Error(StatusCode::RuntimeError, "rendezvous of communicator '" + nm_ +
                                                       "': no word from the id's creator (" + creator_text(layout_) +
                                                       ") within " + seconds_text(Clock::now() - start_) +
                                                       " s (QCOLL_TIMEOUT_S)");
  }
  pollfd p{sock_.fd(), POLLIN, 0};
  const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 60'000)));
  if (n < 0 && errno != EINTR)
    return Status::Error(StatusCode::RuntimeError, std::string("rendezvous: poll: ") + std::strerror(errno));
  if (n <= 0) return Status::Ok();
  const ssize_t bytes = ::recv(sock_.fd(), &r, sizeof r, MSG_DONTWAIT);
  if (bytes < 0 && (errno == EAGAIN || errno == EINTR)) return Status::Ok();
  if (bytes != static_cast<ssize_t>(sizeof r)) {
    const bool gone = creator_gone(layout_);
    return Status::Error(StatusCode::RuntimeError,
                         "rendezvous of communicator '" + nm_ + "': the id's creator (" + creator_text(layout_) +
                             (gone ? ") exited" : ") closed the connection") + " before every rank had joined");
  }
  r.message[wire::kMessageBytes - 1] = '\0';
  r.shm_name[sizeof r.shm_name - 1] = '\0';
  *got = true;
  return Status::Ok();
}

Status Joining::map_segment(const Reply& r) {
  Status a = attach_segment(nm_, rank_, nranks_, window_, wire::get(r.shm_name), ShmMapping(), comm_);
  Mapped m;
  m.code = static_cast<int32_t>(a.code);
  wire::put(m.message, a.message);
  Status sent = send_all(sock_.fd(), &m, sizeof m);
  if (!a.ok()) return a;
  return sent;
}

Status Joining::run(Clock::time_point hard_deadline, Joined& out) {
  for (;;) {
    Reply r;
    bool got = false;
    if (Status s = receive(hard_deadline, r, &got); !s.ok()) return s;
    if (!got) continue;
    if (r.kind == wire::kAbort) return Status::Error(static_cast<StatusCode>(r.code), wire::get(r.message));
    if (r.kind == wire::kSegment) {
      if (Status s = map_segment(r); !s.ok()) return s;
      continue;
    }
    if (r.kind == wire::kGo && comm_) {
      out.comm = std::move(comm_);
      out.ranks_in_process = r.ranks_in_process;
      return Status::Ok();
    }
    return Status::Error(StatusCode::InnerError, "rendezvous: unexpected message from the id's creator");
  }
}

}  // namespace

Status join(const char* name, int nranks, const Id& id, int rank, Joined& out) {
  const auto start = Clock::now();
  const auto timeout = settings::call_timeout();
  const auto deadline = start + timeout;
  wire::IdLayout layout;
  if (Status s = wire::read_id(id, layout, "id"); !s.ok()) return s;
  const std::string nm = name != nullptr ? std::string(name) : default_name(id);
  std::size_t window = 0;
  const Status local = local_checks(nm, name != nullptr, nranks, rank, window);

  Socket sock;
  Status s = connect_root(sock, layout, deadline);
  if (!local.ok()) {
    if (s.ok()) {
      // Tell the ranks already there, so that they fail now instead of at their timeout.
      Hello h = hello_for(layout, nranks, rank, nm);
      h.local_code = static_cast<int32_t>(local.code);
      wire::put(h.message, local.message);
      (void)send_all(sock.fd(), &h, sizeof h);
    }
    return local;
  }
  if (!s.ok()) return s;

  Hello h = hello_for(layout, nranks, rank, nm);
  h.window_bytes = window;
  h.wait_ms =
      std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
  if (s = send_all(sock.fd(), &h, sizeof h); !s.ok()) return s;
  return Joining(sock, layout, nm, nranks, rank, window, start).run(deadline + kGrace, out);
}

}  // namespace qcoll::comm::bootstrap
