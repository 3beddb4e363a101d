// A peer process that is gone: the last rank leaves right after the communicator is made,
// without destroying anything (as a crash after setup would); the other ranks call both
// operators and must get RUNTIME_ERROR within QCOLL_TIMEOUT_S (+ margin), with their output
// buffers untouched.
//   test_mpi_peer_exit shm|mpi          the rank calls MPI_Finalize, then _exit(0). Open MPI
//                                       keeps it waiting inside MPI_Finalize until the others
//                                       finalize, so to them it is a peer that never calls.
//   test_mpi_peer_exit shm|mpi exit     the rank _exit(0)s without MPI_Finalize: really dead.
//                                       Needs mpirun --enable-recovery (else mpirun kills the
//                                       whole job). On shm the others notice at once.
//   test_mpi_peer_exit shm|mpi midcall  the rank takes part in an all-reduce and _exit(0)s in
//                                       the middle of it, at its first reduce step (the
//                                       exchange of a several-chunk tensor under way, its
//                                       later chunks still to send). Needs --enable-recovery;
//                                       tests/mpi/two_hosts.sh runs it with the ranks on two
//                                       hosts (MPI over TCP). Then the survivors call a
//                                       reduce-scatter, which must fail at once (broken).
//   test_mpi_peer_exit mpi midcall-stop the same, but the rank stops (SIGSTOP: a hung rank or
//                                       host, its sockets open) instead of exiting; rank 0
//                                       kills it (SIGKILL) at the end. Over TCP a rank that
//                                       really dies with messages under way makes Open MPI
//                                       4.1's ob1 abort its peers ("pml_ob1_sendreq.c FATAL"),
//                                       before qcoll can see an error; see docs/transports.md.
//   test_mpi_peer_exit mpi midcall-linkdown  (tests/mpi/two_hosts.sh) the rank takes its
//                                       host off the network in the middle of the call: it
//                                       sets the host's link (TWO_HOSTS_LINK_B) down, as a
//                                       host that loses power or its switch port, and goes
//                                       on. Every rank, on both hosts, must return
//                                       RUNTIME_ERROR by the deadline, outputs untouched.
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test_support.hpp"
#include "ops/executor.hpp"
#include "qcoll/qcoll_mpi.h"

using namespace mpitest;

namespace {
int g_victim = -1;
bool g_stop = false;
const char* g_link_down = nullptr;  // midcall-linkdown: the victim's host link
// The reduce-fault hook (test only): the victim leaves (or stops) at its first reduce step.
qcoll::Status leave_mid_call(const std::string&, int rank, std::size_t) {
  if (rank == g_victim && g_link_down != nullptr) {
    static bool done = false;  // once, at the first reduce step
    if (!done) {
      done = true;
      const std::string cmd = std::string("ip link set dev ") + g_link_down + " down";
      if (std::system(cmd.c_str()) != 0) std::printf("[rank %d] FAIL: %s\n", rank, cmd.c_str());
    }
    return qcoll::Status::Ok();
  }
  if (rank == g_victim) {
    std::fflush(stdout);
    if (g_stop) raise(SIGSTOP);
    _exit(0);
  }
  return qcoll::Status::Ok();
}
// Mid-call: Open MPI over TCP may be unusable among the survivors once a peer died with
// messages under way (a collective among them can hang), so they report through files: each
// writes "<checks> <failures>" to DIR/rank<r>; rank 0 waits for all (30 s at most), prints
// the summary line and removes them. DIR is shared by every "host" (the namespaces share
// the file system). Returns the exit code.
int finish_through_files(const std::string& dir, int rank, int size, int reporters, const Tally& t,
                         const char* program) {
  { std::ofstream(dir + "/rank" + std::to_string(rank)) << t.checks() << " " << t.failures() << "\n"; }
  if (rank != 0) return t.failures() == 0 ? 0 : 1;
  long long checks = 0, failures = 0;
  int seen = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  (void)size;
  for (int k = 0; k < reporters; ++k) {
    const std::string f = dir + "/rank" + std::to_string(k);
    long long c = -1, fl = -1;
    while (std::chrono::steady_clock::now() < give_up) {
      std::ifstream in(f);
      if (in >> c >> fl) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (c >= 0) {
      ++seen;
      checks += c;
      failures += fl;
    } else {
      std::printf("[rank 0] FAIL: no report from rank %d\n", k);
      ++failures;
    }
    std::remove(f.c_str());
  }
  rmdir(dir.c_str());
  std::printf("%s, %d processes: %lld checks, %lld failed -> %s\n", program, seen, checks, failures,
              failures == 0 ? "PASS" : "FAIL");
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* transport = argc > 1 ? argv[1] : "shm";
  const bool stop_mid_call = argc > 2 && std::strcmp(argv[2], "midcall-stop") == 0;
  const bool link_down = argc > 2 && std::strcmp(argv[2], "midcall-linkdown") == 0;
  const bool mid_call = stop_mid_call || link_down || (argc > 2 && std::strcmp(argv[2], "midcall") == 0);
  const bool exit_without_finalize = mid_call || (argc > 2 && std::strcmp(argv[2], "exit") == 0);
  const double timeout_s = 5;
  setenv("QCOLL_TRANSPORT", transport, 1);
  setenv("HCCL_BUFFSIZE", "8", 1);
  setenv("QCOLL_TIMEOUT_S", "5", 1);
  Tally t(rank);

  qcollMpiComm* c = nullptr;
  const qcollStatus created = qcollMpiCommCreateWorld("peer-exit", &c);
  t.check(created == QCOLL_SUCCESS, "create: %d %s", created, qcollGetRecentErrMsg());
  // The survivors' own communicator for the summary (MPI_COMM_WORLD loses a member).
  MPI_Comm survivors = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank == size - 1 ? MPI_UNDEFINED : 0, rank, &survivors);
  // Mid-call: rank 0 makes the report directory and tells everyone (MPI is still healthy).
  char report_dir[64] = {0};
  if (mid_call && rank == 0) {
    std::snprintf(report_dir, sizeof report_dir, "/tmp/qcoll-peer-exit-XXXXXX");
    if (mkdtemp(report_dir) == nullptr) report_dir[0] = 0;
  }
  if (mid_call) MPI_Bcast(report_dir, sizeof report_dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  int victim_pid = static_cast<int>(getpid());  // the hosts share one pid namespace here
  MPI_Bcast(&victim_pid, 1, MPI_INT, size - 1, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);

  const Mode m{qcoll::DType::Float8E4M3FN, qcoll::DType::Float8E8M0, qcoll::DType::BFloat16};
  // Mid-call: 512 rows per rank of 2048 + 64 bytes, an exchange of many chunks.
  const std::size_t BS = (mid_call ? 512 : 4) * size, H = 2048;
  Inputs in = make_inputs(m, BS, H, 7, rank);
  if (mid_call) {
    g_victim = size - 1;
    g_stop = stop_mid_call;
    if (link_down) {
      g_link_down = std::getenv("TWO_HOSTS_LINK_B");
      t.check(g_link_down != nullptr, "midcall-linkdown: TWO_HOSTS_LINK_B is not set (run by tests/mpi/two_hosts.sh)");
    }
    qcoll::ops::testing::set_reduce_fault_for_test(leave_mid_call);
  } else if (rank == size - 1) {
    if (!exit_without_finalize) MPI_Finalize();  // Open MPI: waits here until the others finalize
    _exit(0);  // no destructor, no qcollMpiCommDestroy: the peers only see that it is gone
  } else {
    usleep(200 * 1000);
  }

  const std::vector<Op> ops =
      mid_call ? std::vector<Op>{Op::AllReduce, Op::ReduceScatter} : std::vector<Op>{Op::ReduceScatter, Op::AllReduce};
  for (Op op : ops) {
    std::vector<uint8_t> out;
    const double t0 = MPI_Wtime();
    int phase = 0;
    const qcollStatus st = call_op(op, m, in, BS, H, size, "peer-exit", out, &phase);
    const double secs = MPI_Wtime() - t0;
    t.check(st == QCOLL_RUNTIME_ERROR, "%s %s: expected RUNTIME_ERROR, got %d (phase %d): %s", transport, op_name(op),
            st, phase, last_error().c_str());
    t.check(secs <= timeout_s + 3, "%s %s: returned after %.1f s, expected <= %.0f s", transport, op_name(op), secs,
            timeout_s + 3);
    if (mid_call && op == ops.back()) {
      // The communicator broke in the first call: the next one fails at once.
      t.check(secs < 1, "%s %s after the failed call: took %.1f s, expected < 1 s", transport, op_name(op), secs);
    }
    if (exit_without_finalize && !mid_call && std::strcmp(transport, "shm") == 0) {
      // A dead process is seen at once (its pid is gone), long before the deadline.
      t.check(secs < timeout_s / 2, "%s %s: a dead peer took %.1f s to notice, expected < %.1f s", transport,
              op_name(op), secs, timeout_s / 2);
    }
    bool untouched = true;
    for (uint8_t b : out) untouched = untouched && b == 0xA5;
    t.check(untouched, "%s %s: output buffer was written", transport, op_name(op));
    if (rank == 0)
      std::printf("%s %s: RUNTIME_ERROR after %.2f s: %s\n", transport, op_name(op), secs, last_error().c_str());
  }
  qcollMpiCommDestroy(c);
  const std::string program = std::string("test_mpi_peer_exit ") + transport +
                              (stop_mid_call ? " midcall-stop"
                               : link_down   ? " midcall-linkdown"
                               : mid_call    ? " midcall"
                                             : "");
  // Cut off, the victim checks its own calls too and reports like the others.
  const int reporters = link_down ? size : size - 1;
  const int rc = mid_call && report_dir[0] ? finish_through_files(report_dir, rank, size, reporters, t, program.c_str())
                                           : t.finish(program.c_str(), survivors);
  if (stop_mid_call && rank == 0) kill(victim_pid, SIGKILL);
  MPI_Comm_free(&survivors);
  if (exit_without_finalize) {
    // With a dead member, Open MPI's MPI_Finalize may wait for it forever (its closing fence
    // includes every process); the test is over, so leave the way the dead one did.
    std::fflush(stdout);
    _exit(rc);
  }
  MPI_Finalize();
  return rc;
}
