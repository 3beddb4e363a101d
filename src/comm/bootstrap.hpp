// Bootstrap without MPI, in the manner of ncclGetUniqueId / ncclCommInitRank: one process
// makes a unique id, the id travels to the ranks by any means (a file, an environment
// variable, a store), and every rank joins with it. The ranks must share one host: they get
// the shared-memory transport (comm/shm_communicator.hpp, set up by comm/shm_setup.hpp).
//
// The id names a rendezvous served by the process that made it (its "root"): a listening
// Unix socket in the abstract namespace (nothing in the file system, gone with the process)
// named by 128 random bits, served by one background thread of that process. Protocol, one
// fixed-size message each way per step (SOCK_SEQPACKET), see comm/bootstrap_wire.hpp:
//
//   rank -> root   Hello: nranks, rank, name, HCCL_BUFFSIZE, how long it waits, its own
//                  checks' outcome (a rank whose checks failed says so and returns at once)
//   root           checks every Hello against the first: same nranks, name and window; no
//                  rank twice; the peer runs as the same user. Any problem: Abort to all.
//   root -> rank   Segment (once all nranks ranks joined): the shared-memory segment the
//                  root created, and how many ranks share the rank's process
//   rank -> root   Mapped: whether the rank attached to it
//   root -> rank   Go (all attached; the root has removed the segment's name) or Abort
//
// Bounds: the root gives up (Abort, naming the ranks that did not come) at the earliest
// deadline of the ranks that came (arrival + that rank's QCOLL_TIMEOUT_S); a rank that
// leaves or dies aborts the others at once; a rank waits for the root at most its own
// QCOLL_TIMEOUT_S plus a grace period. After the rendezvous (done or failed) the root keeps
// answering for QCOLL_TIMEOUT_S, so that a rank using the id again learns why; later the
// socket is gone and connecting says the id is stale. An id that is never used keeps its
// socket (one file descriptor, no thread of its own) until the process exits. A forked
// child does not inherit the root's sockets.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "qcoll/status.hpp"

namespace qcoll::comm::bootstrap {

constexpr std::size_t kIdBytes = 128;
struct Id {
  unsigned char bytes[kIdBytes];
};

// A fresh id; this process serves its rendezvous from now on.
Status make_id(Id& out);

// 256 lowercase hex digits, and back (PARAM_INVALID naming `param` for any other text, or
// bytes that are not an id).
std::string to_hex(const Id& id);
Status from_hex(const char* text, Id& out, const char* param = "hex");

// The name a communicator gets when none is given: "uid-" + 32 hex digits of the id's random
// part, the same on every rank.
std::string default_name(const Id& id);

struct Joined {
  std::shared_ptr<Communicator> comm;
  int ranks_in_process = 1;  // ranks of this communicator in the calling process
};

// Rank `rank` of `nranks` joins the rendezvous of `id` (name: see default_name when null).
// Checks first, locally, in this order: the id, the name, nranks (contract::check_comm_size),
// rank in [0, nranks), the name not registered yet for this thread or process, HCCL_BUFFSIZE
// and QCOLL_TRANSPORT (auto or shm); a failure is returned (PARAM_INVALID) after telling the
// root, so that the ranks already there fail at once. Then waits for every rank, bounded as
// above. Does not register the name.
Status join(const char* name, int nranks, const Id& id, int rank, Joined& out);

// For tests: the names of the shared-memory segments this process's root has created, and
// how many ranks have joined the rendezvous of `id` so far (-1: not served here).
std::vector<std::string> segments_made_for_test();
int joined_for_test(const Id& id);

}  // namespace qcoll::comm::bootstrap
