// The root of a unique-id rendezvous (comm/bootstrap_rendezvous.hpp) on Hellos that a
// joining rank's own checks would never send: the root must refuse them with a message
// naming the field, never overflow or loop on them. Driven over socket pairs, as
// fuzz/fuzz_bootstrap_root.cpp does (which found the first two), without the service thread.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "comm/bootstrap_rendezvous.hpp"

namespace {

namespace wire = qcoll::comm::bootstrap::wire;
namespace root = qcoll::comm::bootstrap::root;
using qcoll::comm::Clock;

struct Harness {
  root::Rendezvous rv;
  int peer = -1;  // the joining process's end

  Harness() {
    std::memcpy(rv.id.magic, wire::kIdMagic, sizeof rv.id.magic);
    rv.id.version = wire::kVersion;
    for (std::size_t i = 0; i < wire::kNonceBytes; ++i) rv.id.nonce[i] = static_cast<unsigned char>(i + 1);
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    EXPECT_EQ(::fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    rv.fresh.push_back({sv[0], 4242, Clock::now()});
    peer = sv[1];
  }
  ~Harness() {
    if (peer >= 0) ::close(peer);
  }
  wire::Hello hello() const {
    wire::Hello h;
    std::memcpy(h.nonce, rv.id.nonce, sizeof h.nonce);
    h.nranks = 2;
    h.rank = 0;
    h.pid = 4242;
    h.window_bytes = std::size_t{4} << 20;
    h.wait_ms = 30000;
    wire::put(h.name, "c");
    return h;
  }
  template <class T>
  void send(const T& m) {
    ASSERT_EQ(::send(peer, &m, sizeof m, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof m));
  }
  // One turn of the service: poll the root's sockets, handle what is ready.
  void turn() {
    std::vector<pollfd> pfds;
    for (const auto& f : rv.fresh) pfds.push_back({f.fd, POLLIN, 0});
    for (const auto& m : rv.members) pfds.push_back({m.fd, POLLIN, 0});
    ASSERT_GT(::poll(pfds.data(), pfds.size(), 1000), 0);
    std::map<int, short> ready;
    for (const pollfd& q : pfds)
      if (q.revents) ready[q.fd] = q.revents;
    root::handle(rv, ready);
  }
  // The root's next reply to the peer (kind 0: none).
  wire::Reply reply() {
    wire::Reply r;
    r.kind = 0;
    const ssize_t n = ::recv(peer, &r, sizeof r, MSG_DONTWAIT);
    if (n != static_cast<ssize_t>(sizeof r)) r.kind = 0;
    return r;
  }
};

void expect_refused(wire::Hello h, const char* field) {
  Harness t;
  t.send(h);
  t.turn();
  const wire::Reply r = t.reply();
  ASSERT_EQ(r.kind, wire::kAbort) << "the root took a Hello with a bad " << field;
  EXPECT_EQ(r.code, static_cast<int32_t>(qcoll::StatusCode::ParamInvalid));
  EXPECT_NE(std::string(r.message).find(field), std::string::npos) << r.message;
  EXPECT_TRUE(t.rv.members.empty());
  EXPECT_EQ(t.rv.phase, root::Rendezvous::Phase::Over);
  EXPECT_NE(t.rv.late_message.find(field), std::string::npos) << t.rv.late_message;
}

TEST(BootstrapRoot, RefusesAWaitThatOverflowsTheDeadline) {
  Harness t;
  wire::Hello h = t.hello();
  h.wait_ms = std::numeric_limits<int64_t>::max();
  expect_refused(h, "wait: must be in [0, 1000000000] ms");
  h.wait_ms = -1;
  expect_refused(h, "wait: must be in [0, 1000000000] ms");
}

TEST(BootstrapRoot, RefusesAnNranksOutsideTheCommunicatorRule) {
  Harness t;
  wire::Hello h = t.hello();
  h.nranks = std::numeric_limits<int32_t>::max();
  h.rank = 0;
  expect_refused(h, "nranks: must be in [1, 1024]");
  h.nranks = 1025;
  expect_refused(h, "nranks: must be in [1, 1024]");
}

TEST(BootstrapRoot, RefusesAWindowThatIsNotAWholeNumberOfMegabytes) {
  Harness t;
  wire::Hello h = t.hello();
  h.window_bytes = 3;
  expect_refused(h, "HCCL_BUFFSIZE: the window must be a whole number of MB");
  h.window_bytes = (std::size_t{1} << 20) * ((std::size_t{1} << 20) + 1);  // 1 TiB + 1 MiB
  expect_refused(h, "HCCL_BUFFSIZE: the window must be a whole number of MB");
}

TEST(BootstrapRoot, AValidOneRankRendezvousStillCompletes) {
  Harness t;
  wire::Hello h = t.hello();
  h.nranks = 1;
  h.wait_ms = 0;  // the least a rank may send (its deadline is now)
  t.send(h);
  t.turn();
  const wire::Reply seg = t.reply();
  ASSERT_EQ(seg.kind, wire::kSegment);
  EXPECT_EQ(std::string(seg.shm_name).rfind("/qcoll-", 0), 0u);
  wire::Mapped m;
  t.send(m);
  t.turn();
  EXPECT_EQ(t.reply().kind, wire::kGo);
  EXPECT_EQ(t.rv.phase, root::Rendezvous::Phase::Over);
  EXPECT_EQ(::access(("/dev/shm" + std::string(seg.shm_name)).c_str(), F_OK), -1) << "segment left";
}

}  // namespace
