#include "comm/mpi/process_communicator.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/mpi/mpi_communicator.hpp"
#include "comm/mpi/mpi_util.hpp"
#include "comm/registry.hpp"
#include "comm/shm_segment.hpp"
#include "comm/shm_setup.hpp"
#include "comm/window_plan.hpp"
#include "qcoll/settings.hpp"

namespace qcoll::comm::mpi {

namespace testing {
namespace {
int g_ranks_per_host = 0;
}
void set_ranks_per_host_for_test(int ranks) { g_ranks_per_host = ranks; }
}  // namespace testing

namespace {

// QCOLL_TRANSPORT (qcoll/settings.hpp) as an int: the ranks compare it in an all-reduce.
using settings::Transport;
constexpr int kAuto = static_cast<int>(Transport::Auto);
constexpr int kShm = static_cast<int>(Transport::Shm);
constexpr int kMpi = static_cast<int>(Transport::Mpi);
const char* transport_name(int t) { return settings::transport_name(static_cast<Transport>(t)); }

Status read_transport_env(int& t) {
  Transport v = Transport::Auto;
  Status st = settings::transport(v);
#ifdef QCOLL_SMPI
  // SMPI build (cmake/smpi.cmake): the ranks of a simulated host share no real memory that
  // the simulator would see; they talk through SMPI (its loopback model), so auto is mpi.
  if (st.ok() && v == Transport::Shm) {
    st = Status::Error(StatusCode::ParamInvalid,
                       "QCOLL_TRANSPORT: shm is not available in an SMPI build (simulated hosts have no shared "
                       "memory segment between ranks); use auto or mpi");
  }
  if (v == Transport::Auto) v = Transport::Mpi;
#endif
  t = static_cast<int>(v);
  return st;
}

// Lowest rank whose flag is set: every rank contributes size-rank when set, the max wins.
int lowest_flagged(long long reduced, int size) { return reduced > 0 ? size - static_cast<int>(reduced) : -1; }

Status peer_failed(int who, const char* what, const char* name) {
  return Status::Error(StatusCode::RuntimeError, "rank " + std::to_string(who) + " could not " + what +
                                                     " for communicator \"" + name + "\" (see that rank's message)");
}

// Shared-memory rendezvous: rank 0 creates the segment and announces its name; every rank
// maps it; once all have (or any failed) rank 0 removes the name.
struct Announce {
  int32_t code = 0;
  int32_t no_space = 0;  // /dev/shm too small for the segment
  char shm_name[64] = {0};
  char message[400] = {0};
};

Status attach_shared_memory(const char* name, MPI_Comm comm, int rank, int size, std::size_t window,
                            Clock::time_point deadline, bool& mpi_pending, bool& no_space,
                            std::shared_ptr<Communicator>& out) {
  Announce a;
  ShmSegment seg;
  Status mine;
  if (rank == 0) {
    bool full = false;
    mine = create_segment(size, window, seg, &full);
    a.no_space = full ? 1 : 0;
    a.code = static_cast<int32_t>(mine.code);
    std::snprintf(a.shm_name, sizeof a.shm_name, "%s", seg.name.c_str());
    std::snprintf(a.message, sizeof a.message, "%s", mine.message.c_str());
  }
  MPI_Request req = MPI_REQUEST_NULL;
  Status s = check(MPI_Ibcast(&a, sizeof a, MPI_BYTE, 0, comm, &req), "MPI_Ibcast");
  if (s.ok()) s = wait(req, deadline, "creating communicator: announcing the shared segment");
  if (!s.ok()) {
    mpi_pending = true;
    if (rank == 0) unlink_shm(seg.name);
    return s;
  }
  if (a.code != 0) {
    no_space = a.no_space != 0;  // the same on every rank: they can all fall back together
    if (rank == 0) return mine;
    return Status::Error(StatusCode::RuntimeError,
                         std::string("rank 0 could not create the shared memory segment: ") + a.message);
  }
  const std::string shm_name = a.shm_name;
  std::shared_ptr<Communicator> c;
  mine = attach_segment(name, rank, size, window, shm_name, std::move(seg.mapping), c);
  long long failed = mine.ok() ? 0 : size - rank, any_failed = 0;
  s = check(MPI_Iallreduce(&failed, &any_failed, 1, MPI_LONG_LONG, MPI_MAX, comm, &req), "MPI_Iallreduce");
  if (s.ok()) s = wait(req, deadline, "creating communicator: mapping the shared segment");
  if (rank == 0) unlink_shm(shm_name);  // mapped everywhere (or given up): nothing to leave behind
  if (!s.ok()) {
    mpi_pending = true;
    return s;
  }
  if (!mine.ok()) return mine;
  if (any_failed > 0) return peer_failed(lowest_flagged(any_failed, size), "map the shared memory segment", name);
  out = std::move(c);
  return Status::Ok();
}

// MPI initialised and `user` an intra-communicator.
Status check_user_comm(MPI_Comm user) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    return Status::Error(StatusCode::ParamInvalid,
                         "comm: MPI is not initialised (call MPI_Init before creating "
                         "an MPI communicator)");
  }
  if (user == MPI_COMM_NULL)
    return Status::Error(StatusCode::ParamInvalid, "comm: got MPI_COMM_NULL, expected a communicator");
  int inter = 0;
  if (Status s = check(MPI_Comm_test_inter(user, &inter), "MPI_Comm_test_inter"); !s.ok()) return s;
  if (inter)
    return Status::Error(StatusCode::ParamInvalid, "comm: got an inter-communicator, expected an intra-communicator");
  return Status::Ok();
}

// This rank's own checks (the name, HCCL_BUFFSIZE, QCOLL_TRANSPORT); the ranks agree on the
// outcome afterwards.
Status check_locally(const char* name, std::size_t& window, int& transport) {
  Status local = check_group_name(name, "name");
  if (local.ok() && resolve(name) != nullptr) {
    local = Status::Error(StatusCode::ParamInvalid,
                          std::string("name: a communicator named \"") + name + "\" already exists in this process");
  }
  if (local.ok()) local = read_buffsize_env(window);
  if (local.ok()) local = read_transport_env(transport);
  return local;
}

// This rank's host, named by its lowest rank (the host communicator's rank 0 in dup), and
// the ranks there. Frees dup when the split fails.
Status find_own_host(MPI_Comm& dup, int rank, int size, int& leader, int& host_size) {
  MPI_Comm host = MPI_COMM_NULL;
  if (Status s =
          check(MPI_Comm_split_type(dup, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host), "MPI_Comm_split_type");
      !s.ok()) {
    MPI_Comm_free(&dup);
    return s;
  }
  leader = rank;
  MPI_Comm_size(host, &host_size);
  MPI_Group dup_group = MPI_GROUP_NULL, host_group = MPI_GROUP_NULL;
  const int zero = 0;
  MPI_Comm_group(dup, &dup_group);
  MPI_Comm_group(host, &host_group);
  MPI_Group_translate_ranks(host_group, 1, &zero, dup_group, &leader);
  MPI_Group_free(&host_group);
  MPI_Group_free(&dup_group);
  MPI_Comm_free(&host);
  if (testing::g_ranks_per_host > 0) {
    leader = rank / testing::g_ranks_per_host * testing::g_ranks_per_host;
    host_size = std::min(testing::g_ranks_per_host, size - leader);
  }
  return Status::Ok();
}

// Every rank's host (find_own_host), gathered: host_of[k] names rank k's host.
Status find_hosts(MPI_Comm& dup, int rank, int size, Clock::time_point deadline, std::vector<int>& host_of,
                  int& host_size) {
  int leader = rank;
  if (Status s = find_own_host(dup, rank, size, leader, host_size); !s.ok()) return s;
  // Heap memory, left allocated (like dup) when the all-gather times out: it may still land.
  auto gathered = std::make_unique<int[]>(static_cast<std::size_t>(size) + 1);
  gathered[size] = leader;
  Status s = allgather_small(&gathered[size], gathered.get(), 1, MPI_INT, dup, deadline,
                             "creating communicator: finding the ranks' hosts");
  if (!s.ok()) {
    (void)gathered.release();
    return s;
  }
  host_of.assign(gathered.get(), gathered.get() + size);
  return Status::Ok();
}

// What the ranks agree on at creation (one MPI_Iallreduce, MPI_MAX): the lowest failed
// rank, HCCL_BUFFSIZE and QCOLL_TRANSPORT as max and -min, whether they span several
// hosts, QCOLL_MPI_CHUNK_KIB (the largest any rank asked for).
struct Agreed {
  long long v[7] = {0};
  long long failed() const { return v[0]; }
  bool one_host() const { return v[5] == 0; }
  std::size_t chunk_part_bytes() const { return static_cast<std::size_t>(v[6]) << 10; }
};

Status agree_settings(MPI_Comm dup, int rank, int size, const Status& local, std::size_t window, int transport,
                      int host_size, Clock::time_point deadline, Agreed& all) {
  const long long mb = static_cast<long long>(window / kMiB);
  const long long chunk_kib = static_cast<long long>(settings::mpi_chunk_kib());
  long long mine[7] = {local.ok() ? 0 : size - rank, mb,       -mb, transport, -transport,
                       host_size == size ? 0 : 1,    chunk_kib};
  return allreduce_small(mine, all.v, 7, MPI_LONG_LONG, MPI_MAX, dup, deadline,
                         "creating communicator: agreeing on the settings");
}

// The agreement's verdict: this rank's own error, a peer's, or settings that differ.
Status check_agreed(const Agreed& all, const Status& local, const char* name, int size, int transport) {
  if (!local.ok()) return local;
  if (all.failed() > 0) return peer_failed(lowest_flagged(all.failed(), size), "create", name ? name : "");
  if (all.v[1] != -all.v[2]) {
    return Status::Error(StatusCode::ParamInvalid, "HCCL_BUFFSIZE differs between ranks: from " +
                                                       std::to_string(-all.v[2]) + " to " + std::to_string(all.v[1]) +
                                                       " MB, expected the same value on every rank");
  }
  if (all.v[3] != -all.v[4]) {
    return Status::Error(StatusCode::ParamInvalid, std::string("QCOLL_TRANSPORT differs between ranks: ") +
                                                       transport_name(static_cast<int>(-all.v[4])) + " and " +
                                                       transport_name(static_cast<int>(all.v[3])) +
                                                       ", expected the same value on every rank");
  }
  if (transport == kShm && !all.one_host()) {
    return Status::Error(StatusCode::ParamInvalid,
                         "QCOLL_TRANSPORT: shm needs every rank on one host, got ranks on several hosts "
                         "(use auto or mpi)");
  }
  return Status::Ok();
}

// Everything a rank knows once the ranks agreed.
struct Creation {
  const char* name = nullptr;
  MPI_Comm dup = MPI_COMM_NULL;
  int rank = 0, size = 0, transport = kAuto;
  std::size_t window = 0;
  std::vector<int> host_of;
  Agreed all;
};

// Opens the transport the ranks agreed on: MPI, or shared memory (falling back to MPI under
// auto when /dev/shm has no room for the windows).
Status open_transport(Creation& k, Clock::time_point deadline, std::shared_ptr<Communicator>& out) {
  auto open_mpi = [&] {
    out = std::make_shared<MpiCommunicator>(k.name, k.dup, k.window, k.host_of, settings::mpi_schedule(),
                                            k.all.chunk_part_bytes());
    return Status::Ok();
  };
  if (k.transport == kMpi || (k.transport == kAuto && !k.all.one_host())) return open_mpi();
  bool mpi_pending = false, no_space = false;
  Status s = attach_shared_memory(k.name, k.dup, k.rank, k.size, k.window, deadline, mpi_pending, no_space, out);
  if (mpi_pending) return s;  // dup stays allocated: an operation on it may still be pending
  if (!s.ok() && no_space && k.transport == kAuto) {
    // /dev/shm cannot hold the windows (containers often give it 64 MB): the MPI transport
    // needs only private memory. Every rank saw the same announcement, so all fall back.
    if (k.rank == 0) {
      std::fprintf(stderr,
                   "qcoll: communicator \"%s\": /dev/shm has no room for %zu x %zu MB windows; using the "
                   "MPI transport (lower HCCL_BUFFSIZE or enlarge /dev/shm for shared memory)\n",
                   k.name, static_cast<std::size_t>(k.size), k.window / kMiB);
    }
    return open_mpi();
  }
  MPI_Comm_free(&k.dup);  // the shared-memory transport needs MPI no more
  return s;
}

}  // namespace

Status create_process_communicator(const char* name, MPI_Comm user, std::shared_ptr<Communicator>& out) {
  if (Status s = check_user_comm(user); !s.ok()) return s;
  const Clock::time_point deadline = creation_deadline();
  Creation k;
  k.name = name;
#ifdef QCOLL_SMPI
  // SimGrid's SMPI (3.32) has no MPI_Comm_idup: the blocking duplicate, without a deadline.
  Status s = check(MPI_Comm_dup(user, &k.dup), "MPI_Comm_dup");
#else
  MPI_Request req = MPI_REQUEST_NULL;
  Status s = check(MPI_Comm_idup(user, &k.dup, &req), "MPI_Comm_idup");
  if (s.ok()) s = wait(req, deadline, "creating communicator: duplicating the MPI communicator");
#endif
  if (!s.ok()) return s;
  MPI_Comm_set_errhandler(k.dup, MPI_ERRORS_RETURN);
  MPI_Comm_rank(k.dup, &k.rank);
  MPI_Comm_size(k.dup, &k.size);

  const Status local = check_locally(name, k.window, k.transport);
  int host_size = 0;
  if (s = find_hosts(k.dup, k.rank, k.size, deadline, k.host_of, host_size); !s.ok()) return s;
  s = agree_settings(k.dup, k.rank, k.size, local, k.window, k.transport, host_size, deadline, k.all);
  if (!s.ok()) return s;  // dup stays allocated: the reduction may still be pending
  if (s = check_agreed(k.all, local, name, k.size, k.transport); !s.ok()) {
    MPI_Comm_free(&k.dup);
    return s;
  }
  return open_transport(k, deadline, out);
}

}  // namespace qcoll::comm::mpi
