// libFuzzer target: the root of a unique-id rendezvous (src/comm/bootstrap_rendezvous.hpp)
// on what joining processes send it: Hello and Mapped messages of any bytes and any length
// (short, long, empty), in any order, from up to kPeers connections, any of which may hang
// up at any point; deadlines passing at any point.
//
// The root's state machine is the one the service thread runs (comm/bootstrap_root.cpp):
// each peer is a real SOCK_SEQPACKET socket pair (the root's end non-blocking, as accept4
// gives it), readiness comes from poll() as in the service's loop, and the root's replies are
// read back from the peers' ends. No thread, no listening socket: the connections are added
// as the service's accept would add them.
//
// Checked on every input, beside ASan/UBSan/LSan: every reply a peer receives is a whole
// Reply of a known kind with a NUL-terminated message and shm name; an Abort carries a
// contract.md §status code and a non-empty message; a Segment names a /qcoll- segment; no
// more members than the first Hello's nranks; after Over nobody is a member; the root
// never blocks (every input ends in bounded time: libFuzzer's -timeout) and removes every
// segment it made (checked in /dev/shm when the rendezvous is destroyed).
#include <fcntl.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/bootstrap_rendezvous.hpp"
#include "comm/bootstrap_wire.hpp"
#include "qcoll/status.hpp"

namespace wire = qcoll::comm::bootstrap::wire;
namespace root = qcoll::comm::bootstrap::root;
using qcoll::comm::Clock;

namespace {

constexpr int kPeers = 6;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_bootstrap_root: %s\n", what.c_str());
  std::abort();
}

struct Peer {
  int mine = -1;  // the joining process's end
  bool gone = false;
};

bool nul_terminated(const char* p, std::size_t n) { return std::memchr(p, '\0', n) != nullptr; }

bool known_status(int32_t c) { return c == 161001 || c == 161002 || c == 361001 || c == 561000; }

// What the root sent peer p so far: every message must be a well-formed Reply.
void drain(Peer& p) {
  if (p.mine < 0) return;
  for (;;) {
    unsigned char buf[sizeof(wire::Reply) + 16];
    const ssize_t n = ::recv(p.mine, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) return;  // nothing more now, or the root closed its end
    if (n != static_cast<ssize_t>(sizeof(wire::Reply))) fail("a reply of " + std::to_string(n) + " bytes");
    wire::Reply r;
    std::memcpy(&r, buf, sizeof r);
    if (!nul_terminated(r.message, sizeof r.message) || !nul_terminated(r.shm_name, sizeof r.shm_name))
      fail("a reply whose text is not NUL-terminated");
    if (r.kind == wire::kAbort) {
      if (!known_status(r.code)) fail("an Abort with status " + std::to_string(r.code));
      if (r.message[0] == '\0') fail("an Abort without a message");
    } else if (r.kind == wire::kSegment) {
      if (std::strncmp(r.shm_name, "/qcoll-", 7) != 0) fail(std::string("a Segment naming '") + r.shm_name + "'");
      if (r.ranks_in_process < 1) fail("a Segment with ranks_in_process < 1");
    } else if (r.kind == wire::kGo) {
      if (r.ranks_in_process < 1) fail("a Go with ranks_in_process < 1");
    } else {
      fail("a reply of kind " + std::to_string(r.kind));
    }
  }
}

// A Hello that the root may take (the fields a joining rank sends, from small ranges), or
// any bytes, then cut or grown to any length.
std::vector<unsigned char> make_message(FuzzedDataProvider& p, const wire::IdLayout& id, bool hello) {
  std::vector<unsigned char> bytes;
  if (hello) {
    wire::Hello h;
    std::memcpy(h.nonce, id.nonce, sizeof h.nonce);
    const int nr = p.ConsumeIntegralInRange<int>(0, 7);
    h.nranks = nr < 5 ? nr : (nr == 5 ? p.ConsumeIntegral<int32_t>() : p.ConsumeIntegralInRange<int32_t>(1, 1100));
    h.rank = p.ConsumeBool() ? p.ConsumeIntegralInRange<int32_t>(-1, 5) : p.ConsumeIntegral<int32_t>();
    h.local_code = p.ConsumeIntegralInRange<int>(0, 7) == 0 ? 161002 : 0;
    h.pid = p.ConsumeIntegral<int32_t>();
    switch (p.ConsumeIntegralInRange<int>(0, 3)) {
      case 0:
        h.window_bytes = std::size_t{1} << 20;
        break;
      case 1:
        h.window_bytes = std::size_t{2} << 20;
        break;
      case 2:
        h.window_bytes = p.ConsumeIntegralInRange<uint64_t>(0, 8u << 20);
        break;
      default:
        h.window_bytes = p.ConsumeIntegral<uint64_t>();
        break;
    }
    switch (p.ConsumeIntegralInRange<int>(0, 3)) {
      case 0:
        h.wait_ms = 1000;
        break;
      case 1:
        h.wait_ms = p.ConsumeIntegralInRange<int64_t>(-10, 100000);
        break;
      default:
        h.wait_ms = p.ConsumeIntegral<int64_t>();
        break;
    }
    const std::string name = p.ConsumeBool() ? std::string("c") : p.ConsumeRandomLengthString(140);
    std::memcpy(h.name, name.data(), std::min(name.size(), sizeof h.name));  // maybe no NUL
    const std::string msg = p.ConsumeRandomLengthString(16);
    std::memcpy(h.message, msg.data(), std::min(msg.size(), sizeof h.message));
    bytes.resize(sizeof h);
    std::memcpy(bytes.data(), &h, sizeof h);
  } else {
    wire::Mapped m;
    m.code = p.ConsumeIntegralInRange<int>(0, 3) == 0 ? p.ConsumeIntegral<int32_t>() : 0;
    const std::string msg = p.ConsumeRandomLengthString(16);
    std::memcpy(m.message, msg.data(), std::min(msg.size(), sizeof m.message));
    bytes.resize(sizeof m);
    std::memcpy(bytes.data(), &m, sizeof m);
  }
  // Overwrite a few bytes anywhere (kind, version, nonce, fields), then the length.
  const int flips = p.ConsumeIntegralInRange<int>(0, 7) == 0 ? p.ConsumeIntegralInRange<int>(1, 4) : 0;
  for (int i = 0; i < flips; ++i)
    bytes[p.ConsumeIntegralInRange<std::size_t>(0, bytes.size() - 1)] = p.ConsumeIntegral<uint8_t>();
  switch (p.ConsumeIntegralInRange<int>(0, 9)) {
    case 0:
      bytes.resize(p.ConsumeIntegralInRange<std::size_t>(0, bytes.size()));
      break;  // short
    case 1:
      bytes.resize(bytes.size() + p.ConsumeIntegralInRange<std::size_t>(1, 64), 0x5A);
      break;  // long
    default:
      break;
  }
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  auto rv = std::make_unique<root::Rendezvous>();
  std::memcpy(rv->id.magic, wire::kIdMagic, sizeof rv->id.magic);
  rv->id.version = wire::kVersion;
  for (std::size_t i = 0; i < wire::kNonceBytes; ++i) rv->id.nonce[i] = static_cast<unsigned char>(0xA0 + i);
  std::vector<Peer> peers;
  root::segments_made().clear();  // the list the root appends to: this input's segments only

  auto connect_peer = [&]() {
    if (peers.size() >= static_cast<std::size_t>(kPeers)) return;
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) fail("socketpair");
    // The root's end as accept4 gives it: non-blocking.
    if (::fcntl(sv[0], F_SETFL, O_NONBLOCK) != 0) fail("fcntl");
    // Peers 0 and 1 share a process (ranks_in_process 2), the others have one each.
    const int32_t pid = 4000 + (peers.size() < 2 ? 0 : static_cast<int32_t>(peers.size()));
    rv->fresh.push_back({sv[0], pid, Clock::now()});
    peers.push_back({sv[1], false});
  };

  int events = 0;
  while (p.remaining_bytes() > 0 && events++ < 64) {
    const int what = p.ConsumeIntegralInRange<int>(0, 9);
    if (what == 0 || peers.empty()) {
      connect_peer();
      continue;
    }
    Peer& peer = peers[p.ConsumeIntegralInRange<std::size_t>(0, peers.size() - 1)];
    switch (what) {
      case 1:
      case 2:
      case 3:
      case 4: {  // a message from a peer (mostly Hellos, then Mapped)
        if (peer.gone) break;
        const auto bytes = make_message(p, rv->id, what <= 2);
        (void)::send(peer.mine, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
      }
      case 5:  // the peer hangs up (gave up, or its process died)
        if (!peer.gone) {
          ::close(peer.mine);
          peer.mine = -1;
          peer.gone = true;
        }
        break;
      case 6: {  // a deadline passes: now, after a Hello's wait, after the 10 s Hello limit, much later
        static const int64_t offsets_ms[] = {0, 1100, 10'500, 3'600'000};
        rv->on_timer(Clock::now() + std::chrono::milliseconds(offsets_ms[p.ConsumeIntegralInRange<int>(0, 3)]));
        break;
      }
      default:
        break;  // 7-9: the service's turn (below)
    }
    // The service's turn: poll every socket of the rendezvous, as its loop does, and handle
    // what is ready; the peers read their replies.
    std::vector<pollfd> pfds;
    for (const auto& f : rv->fresh) pfds.push_back({f.fd, POLLIN, 0});
    for (const auto& m : rv->members) pfds.push_back({m.fd, POLLIN, 0});
    if (!pfds.empty() && ::poll(pfds.data(), pfds.size(), 0) > 0) {
      std::map<int, short> ready;
      for (const pollfd& q : pfds)
        if (q.revents != 0) ready[q.fd] = q.revents;
      root::handle(*rv, ready);
    }
    for (Peer& q : peers) drain(q);
    // The rendezvous's invariants.
    if (rv->phase == root::Rendezvous::Phase::Over && !rv->members.empty()) fail("members left after Over");
    if (!rv->members.empty() && rv->members.size() > static_cast<std::size_t>(rv->nranks()))
      fail("more members than nranks");
    if (rv->phase != root::Rendezvous::Phase::Mapping && rv->segment.mapping) fail("a segment outside Mapping");
  }
  // Destroyed (the process's exit, or the service dropping it): every segment it made is gone.
  rv.reset();
  for (Peer& q : peers)
    if (q.mine >= 0) ::close(q.mine);
  const std::vector<std::string>& made = root::segments_made();
  for (const std::string& name : made)
    if (::access(("/dev/shm" + name).c_str(), F_OK) == 0) fail("segment " + name + " left in /dev/shm");
  return 0;
}
