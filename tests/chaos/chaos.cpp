// Chaos trials (issue 18, item 3): 4 ranks make operator calls back to back while one rank,
// chosen at random, is killed (SIGKILL) or stopped (SIGSTOP) at a random moment. After every
// trial the driver checks:
//   - every surviving rank returned a status from every call within QCOLL_TIMEOUT_S + 2 s;
//   - no call that began after the signal succeeded, no call ended with an error before it;
//   - every output is the full bit-exact result (success) or untouched (failure: the buffer
//     was filled with a sentinel first); on threads, which write in place without staging
//     (docs/hardening.md), a failed call may also leave the rank's own reduced rows, never
//     anything else: counted apart as "own rows";
//   - no process of the trial is left (its process group, and for mpirun every process whose
//     environment carries the trial's QCOLL_CHAOS_TAG); on threads no thread is left;
//   - nothing of qcoll is left in /dev/shm or as an abstract socket (/proc/net/unix), judged
//     on the names this trial's processes used (see "Attribution" below);
//   - a new communicator of the survivors then works (bit-exact results).
//
// Transports (argv[1]):
//   threads   4 threads of this process in a thread group. A thread cannot be signalled, so
//             the signal is simulated: at the random moment the victim's fate is set; it acts
//             on it at its next point of control: inside a call (the executor's test-only
//             reduce-step hook) or between calls. "kill": it fails its call there (the hook
//             returns an error, as a dying rank's last word) or makes no further call, then
//             leaves the group and its thread ends. "stop": it blocks there until the trial
//             is over (a hung rank).
//   shm       4 forked processes joined by the MPI-free bootstrap: rank 0 makes the id
//             (qcollGetUniqueId, so it also serves the rendezvous) and the others join with
//             qcollCommInitRank; real signals from the driver.
//   mpi-shm   mpirun -np 4 of this program (QCOLL_TRANSPORT=shm), real signals.
//   mpi       the same with QCOLL_TRANSPORT=mpi (--enable-recovery; Open MPI's btl self,vader,
//             or --btl self,tcp to see Open MPI 4.1 abort survivors over TCP).
//   all       each of the above in turn.
// Options: --trials N (per transport; signals alternate kill/stop), --seed S, --window-ms W
// (the signal comes uniformly in [0, W] ms after every rank started calling), --timeout S
// (QCOLL_TIMEOUT_S, default 3), --btl LIST (Open MPI's, default self,vader), --mpirun PATH.
// Output: one "CHAOS | transport | signal | outcome |" line per trial, then the table of
// outcome counts; exit status 0 when every trial passed.
//
// Attribution (other programs on the machine create qcoll segments and sockets at the same
// time, so /dev/shm is never judged as a whole): every rank reads its own /proc/self/maps
// once its communicator exists and records the /dev/shm/qcoll-* segment it maps, and a rank
// that makes an id records the abstract socket name of its rendezvous ("@qcoll-boot-" and
// the id's nonce, which the id's default name carries). After the trial (its processes
// gone) none of those names may exist. In addition, qcoll names that appeared during the
// trial and that no living process holds (open or mapped) are listed as "unattributed";
// they may come from other programs and are reported, not failed on.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/bootstrap.hpp"
#include "fault_matrix.hpp"
#include "ops/executor.hpp"
#include "qcoll/qcoll.h"
#if QCOLL_HAVE_MPI
#include <mpi.h>

#include "qcoll/qcoll_mpi.h"
#endif

namespace {

constexpr int kRanks = 4;
constexpr int kHealthRanks = 2;  // the survivors' new communicator: the first two of them
constexpr int kMaxRecs = 400;
constexpr int kVariants = 4;
constexpr uint32_t kSeed = 11;
constexpr uint32_t kHealthSeed = 23;
constexpr double kMaxCallingS = 30;  // a rank stops calling after this long (a failed trial)
// The deadline of an MPI rank's communicator creations (QCOLL_TIMEOUT_S for their scope).
// The chaos is judged on the calls, which keep --timeout. The survivors' creation starts when
// each of them has finished its own calls, seconds apart on a loaded machine. Under ASan at
// load 58, four ranks' MPI_Comm_idup did not finish in a 2 s deadline: two trials of 16
// failed in one of the sanitizer repeats (scripts/repeat-tests.sh).
constexpr const char* kCreateTimeoutS = "30";
class CreationTimeout {
 public:
  CreationTimeout() {
    if (const char* t = std::getenv("QCOLL_TIMEOUT_S")) saved_ = t;
    setenv("QCOLL_TIMEOUT_S", kCreateTimeoutS, 1);
  }
  ~CreationTimeout() {
    if (saved_.empty())
      unsetenv("QCOLL_TIMEOUT_S");
    else
      setenv("QCOLL_TIMEOUT_S", saved_.c_str(), 1);
  }
  CreationTimeout(const CreationTimeout&) = delete;
  CreationTimeout& operator=(const CreationTimeout&) = delete;

 private:
  std::string saved_;
};

// QCOLL_CHAOS_MUTATE (a check of the checks; every trial must then fail): "partial" (a failed
// call writes one output byte), "slow" (a failed call returns QCOLL_TIMEOUT_S + 3 s late),
// "leak-shm" (each process rank leaves a /dev/shm/qcoll-* name), "linger" (each process
// rank leaves a child behind), "no-health" (the survivors' communicator is not tried).
std::string mutation() {
  const char* m = std::getenv("QCOLL_CHAOS_MUTATE");
  return m ? m : "";
}

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // system-wide: comparable across the processes
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// ---- What the ranks record, in memory shared with the driver -----------------------------

enum OutClass : int32_t { kCorrect = 0, kUntouched = 1, kOwnRows = 2, kPartial = 3 };
const char* out_class_name(int c) {
  switch (c) {
    case kCorrect:
      return "correct";
    case kUntouched:
      return "untouched";
    case kOwnRows:
      return "own rows";
    default:
      return "PARTLY WRITTEN";
  }
}

struct Rec {
  int32_t variant = 0, status = 0, out_class = 0;
  double t0 = 0, secs = 0;
  char msg[200] = {};
};

struct RankSlot {
  std::atomic<int32_t> pid, ready, started, in_call, finished, ncalls;
  std::atomic<int32_t> entered;  // calls begun
  std::atomic<int32_t> health;   // 0 not run, 1 worked, 2 failed
  double health_secs;
  char health_msg[240];
  char shm_names[3][96];     // the segment of the trial's communicator, of the health one; a mutant's
  char socket_names[2][96];  // the rendezvous socket of an id this rank made
  Rec recs[kMaxRecs];
};

struct Control {
  std::atomic<int32_t> go;      // the driver: start calling
  std::atomic<int32_t> victim;  // set once the signal was sent
  std::atomic<int32_t> end;     // the driver: the trial is over (threads: stopped victim resumes)
  std::atomic<int32_t> id_ready, health_id_ready;
  char id_hex[QCOLL_UNIQUE_ID_HEX_CHARS + 1];
  char health_id_hex[QCOLL_UNIQUE_ID_HEX_CHARS + 1];
  RankSlot ranks[kRanks];
};

// ---- The calls: precomputed inputs and expected outputs -----------------------------------

struct Plan {
  int n = 0;
  std::vector<faults::RankCall> calls;
  // [variant][rank]
  std::vector<std::vector<std::vector<uint8_t>>> x, s, want;
};

std::vector<faults::RankCall> variants() {
  faults::RankCall a;  // small reduce-scatter e4m3/fp32 -> bf16
  a.rows = 24;
  faults::RankCall b;  // small all-reduce int8 -> fp32
  b.reduce_scatter = false;
  b.x_dtype = QCOLL_DT_INT8;
  b.out_dtype = QCOLL_DT_FLOAT;
  b.rows = 12;
  faults::RankCall c;  // large all-reduce, MX: several chunks through a 3 MB window
  c.reduce_scatter = false;
  c.scales_dtype = QCOLL_DT_FLOAT8_E8M0;
  c.rows = 384;
  c.H = 2048;
  faults::RankCall d;  // large reduce-scatter e5m2 -> fp16
  d.x_dtype = QCOLL_DT_FLOAT8_E5M2;
  d.out_dtype = QCOLL_DT_FLOAT16;
  d.rows = 384;
  d.H = 2048;
  return {a, b, c, d};
}

// Rows must divide by n (reduce-scatter) for n = 4 and 3 (the survivors' communicator).
Plan make_plan(int n, uint32_t seed, int only_rank = -1) {
  Plan p;
  p.n = n;
  p.calls = variants();
  for (auto& c : p.calls)
    if (n == 3) c.rows = c.rows / 4 * 3;
  p.x.resize(p.calls.size());
  p.s.resize(p.calls.size());
  p.want.resize(p.calls.size());
  for (std::size_t v = 0; v < p.calls.size(); ++v) {
    p.x[v].resize(n);
    p.s[v].resize(n);
    p.want[v].resize(n);
    for (int r = 0; r < n; ++r) {
      if (only_rank >= 0 && r != only_rank) continue;
      p.x[v][r] = faults::make_x(r, p.calls[v], seed + static_cast<uint32_t>(v));
      p.s[v][r] = faults::make_scales(r, p.calls[v], seed + static_cast<uint32_t>(v));
      p.want[v][r] = faults::reference_output(p.calls[v], n, r, seed + static_cast<uint32_t>(v));
    }
  }
  return p;
}

int classify(qcollDataType odt_c, const std::vector<uint8_t>& out, const std::vector<uint8_t>& want) {
  const auto odt = static_cast<qcoll::DType>(odt_c);
  const std::size_t osz = qcoll::dtype_size(odt);
  if (want.size() != out.size()) return kPartial;
  bool all_right = true, all_sentinel = true, each_one = true;
  const std::vector<uint8_t> sentinel(osz, faults::kSentinel);
  for (std::size_t i = 0; i < out.size(); i += osz) {
    const bool right = oracle::same_result(odt, out.data() + i, want.data() + i);
    const bool untouched = std::memcmp(out.data() + i, sentinel.data(), osz) == 0;
    all_right = all_right && right;
    all_sentinel = all_sentinel && untouched;
    each_one = each_one && (right || untouched);
  }
  if (all_right) return kCorrect;
  if (all_sentinel) return kUntouched;
  return each_one ? kOwnRows : kPartial;
}

// One call of variant v as rank r of p.n on `group`; records it.
qcollStatus one_call(const Plan& p, int v, int r, const char* group, Rec* rec, std::atomic<int32_t>* in_call) {
  const faults::RankCall& c = p.calls[v];
  std::vector<uint8_t> out(faults::out_bytes(c, p.n), faults::kSentinel);
  const std::vector<int64_t> xsh = {c.rows, c.H}, ssh = faults::scales_shape(c), osh = faults::out_shape(c, p.n);
  qcollTensor* tx = qcollCreateContiguousTensor(xsh.data(), 2, c.x_dtype, const_cast<uint8_t*>(p.x[v][r].data()));
  qcollTensor* ts =
      qcollCreateContiguousTensor(ssh.data(), ssh.size(), c.scales_dtype, const_cast<uint8_t*>(p.s[v][r].data()));
  qcollTensor* to = qcollCreateContiguousTensor(osh.data(), 2, c.out_dtype, out.data());
  if (in_call) in_call->store(1);
  const double t0 = now_s();
  uint64_t ws = 0;
  qcollOpExecutor* e = nullptr;
  qcollStatus st = c.reduce_scatter ? qcollQuantReduceScatterGetWorkspaceSize(tx, ts, group, "sum", to, &ws, &e)
                                    : qcollQuantAllReduceGetWorkspaceSize(tx, ts, group, "sum", to, &ws, &e);
  if (st == QCOLL_SUCCESS) {
    std::vector<uint8_t> w(ws);
    void* wp = ws ? w.data() : nullptr;
    st = c.reduce_scatter ? qcollQuantReduceScatter(wp, ws, e, nullptr) : qcollQuantAllReduce(wp, ws, e, nullptr);
  }
  if (st != QCOLL_SUCCESS && mutation() == "partial") out[out.size() / 2] ^= 0x5A;
  if (st != QCOLL_SUCCESS && mutation() == "slow") {
    const char* t = std::getenv("QCOLL_TIMEOUT_S");
    std::this_thread::sleep_for(std::chrono::duration<double>((t ? std::atof(t) : 3) + 3));
  }
  const double t1 = now_s();
  if (in_call) in_call->store(0);
  rec->variant = v;
  rec->status = st;
  rec->t0 = t0;
  rec->secs = t1 - t0;
  std::snprintf(rec->msg, sizeof rec->msg, "%s", st == QCOLL_SUCCESS ? "" : qcollGetRecentErrMsg());
  rec->out_class = classify(c.out_dtype, out, p.want[v][r]);
  qcollDestroyTensor(tx);
  qcollDestroyTensor(ts);
  qcollDestroyTensor(to);
  return st;
}

// Calls back to back until one fails, then one more (it must fail too); bounded.
void call_loop(const Plan& p, int r, const char* group, RankSlot& slot) {
  slot.started = 1;
  const double t_begin = now_s();
  int k = 0;
  bool failed = false;
  while (k < kMaxRecs && now_s() - t_begin < kMaxCallingS) {
    slot.entered = k + 1;
    const qcollStatus st = one_call(p, k % kVariants, r, group, &slot.recs[k], &slot.in_call);
    ++k;
    slot.ncalls = k;
    if (failed) break;
    failed = st != QCOLL_SUCCESS;
  }
}

bool wait_flag(const std::atomic<int32_t>& f, double limit_s, int32_t want = 1) {
  const double t0 = now_s();
  while (f.load() < want) {
    if (now_s() - t0 > limit_s) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// The qcoll segment this process maps (the newest one not in `skip`), "" if none.
std::string mapped_qcoll_segment(const std::string& skip = "") {
  std::ifstream f("/proc/self/maps");
  std::string line, found;
  while (std::getline(f, line)) {
    const auto at = line.find("/dev/shm/qcoll-");
    if (at == std::string::npos) continue;
    std::string nm = line.substr(at + 8);
    const auto sp = nm.find(' ');
    if (sp != std::string::npos) nm = nm.substr(0, sp);
    if (nm != skip) found = nm;
  }
  return found;
}

std::string socket_name_of(const qcollUniqueId& id) {
  qcoll::comm::bootstrap::Id bid;
  std::memcpy(bid.bytes, id.internal, sizeof bid.bytes);
  return "@qcoll-boot-" + qcoll::comm::bootstrap::default_name(bid).substr(4);
}

void put(char* dst, std::size_t cap, const std::string& s) { std::snprintf(dst, cap, "%s", s.c_str()); }

// What the process-rank mutations leave behind.
void mutate_process(RankSlot& slot) {
  if (mutation() == "leak-shm") {
    const std::string nm = "/qcoll-chaos-mutant-" + std::to_string(getpid());
    const int fd = shm_open(nm.c_str(), O_CREAT | O_RDWR, 0600);
    if (fd >= 0) close(fd);
    put(slot.shm_names[2], sizeof slot.shm_names[2], nm);
  }
  if (mutation() == "linger" && fork() == 0) {
    sleep(40);
    _exit(0);
  }
}

// Health check: calls of each size on the survivors' new communicator.
void health_calls(const Plan& hp, int hr, const char* group, RankSlot& slot) {
  if (mutation() == "no-health") {
    slot.health = 2;
    put(slot.health_msg, sizeof slot.health_msg, "not tried (QCOLL_CHAOS_MUTATE=no-health)");
    return;
  }
  Rec rec;
  const double t0 = now_s();
  std::string why;
  for (int v : {0, 2, 3}) {
    const qcollStatus st = one_call(hp, v, hr, group, &rec, nullptr);
    if (st != QCOLL_SUCCESS || rec.out_class != kCorrect) {
      why = "variant " + std::to_string(v) + ": " + qcollStatusName(st) + " " + out_class_name(rec.out_class) + ": " +
            rec.msg;
      break;
    }
  }
  slot.health_secs = now_s() - t0;
  put(slot.health_msg, sizeof slot.health_msg, why);
  slot.health = why.empty() ? 1 : 2;
}

// ---- Process ranks over the MPI-free bootstrap ---------------------------------------------

int bootstrap_rank(Control& ctl, int r, const Plan& p, const Plan& hp) {
  RankSlot& slot = ctl.ranks[r];
  slot.pid = static_cast<int32_t>(getpid());
  qcollUniqueId id;
  if (r == 0) {
    if (qcollGetUniqueId(&id) != QCOLL_SUCCESS) return 10;
    qcollUniqueIdToHex(&id, ctl.id_hex, sizeof ctl.id_hex);
    put(slot.socket_names[0], sizeof slot.socket_names[0], socket_name_of(id));
    ctl.id_ready = 1;
  } else {
    if (!wait_flag(ctl.id_ready, 30)) return 11;
    if (qcollUniqueIdFromHex(ctl.id_hex, &id) != QCOLL_SUCCESS) return 12;
  }
  qcollComm* comm = nullptr;
  if (qcollCommInitRank("chaos", kRanks, &id, r, &comm) != QCOLL_SUCCESS) {
    std::fprintf(stderr, "rank %d: init: %s\n", r, qcollGetRecentErrMsg());
    return 13;
  }
  const std::string seg = mapped_qcoll_segment();
  put(slot.shm_names[0], sizeof slot.shm_names[0], seg);
  mutate_process(slot);
  slot.ready = 1;
  if (!wait_flag(ctl.go, 60)) return 14;
  call_loop(p, r, "chaos", slot);
  // Survivor: the victim is known once the driver has sent its signal.
  if (!wait_flag(ctl.victim, 30, 0)) return 15;
  qcollCommDestroy(comm);
  const int victim = ctl.victim.load();
  const int hr = r < victim ? r : r - 1;  // rank among the survivors
  if (hr >= kHealthRanks) {
    slot.health = 1;  // not in the new communicator
    slot.finished = 1;
    return 0;
  }
  qcollUniqueId hid;
  if (hr == 0) {
    if (qcollGetUniqueId(&hid) != QCOLL_SUCCESS) return 16;
    qcollUniqueIdToHex(&hid, ctl.health_id_hex, sizeof ctl.health_id_hex);
    put(slot.socket_names[1], sizeof slot.socket_names[1], socket_name_of(hid));
    ctl.health_id_ready = 1;
  } else {
    if (!wait_flag(ctl.health_id_ready, 30)) return 17;
    if (qcollUniqueIdFromHex(ctl.health_id_hex, &hid) != QCOLL_SUCCESS) return 18;
  }
  qcollComm* hc = nullptr;
  if (qcollCommInitRank("chaos-health", kHealthRanks, &hid, hr, &hc) != QCOLL_SUCCESS) {
    put(slot.health_msg, sizeof slot.health_msg, std::string("init: ") + qcollGetRecentErrMsg());
    slot.health = 2;
  } else {
    put(slot.shm_names[1], sizeof slot.shm_names[1], mapped_qcoll_segment(seg));
    health_calls(hp, hr, "chaos-health", slot);
    qcollCommDestroy(hc);
  }
  slot.finished = 1;
  // The rendezvous root's socket stays for QCOLL_TIMEOUT_S; exiting closes it.
  return 0;
}

#if QCOLL_HAVE_MPI
// ---- Process ranks under mpirun ---------------------------------------------------------------

int mpi_rank_main(int argc, char** argv) {
  // argv: chaos rank-mpi CONTROL_FILE
  if (argc < 3) return 2;
  MPI_Init(&argc, &argv);
  int r = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int fd = open(argv[2], O_RDWR);
  if (fd < 0 || size != kRanks) return 3;
  void* mem = mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (mem == MAP_FAILED) return 4;
  Control& ctl = *static_cast<Control*>(mem);
  RankSlot& slot = ctl.ranks[r];
  slot.pid = static_cast<int32_t>(getpid());
  // The survivors' MPI communicators, one per possible victim, made while every rank lives.
  std::vector<MPI_Comm> without(kRanks, MPI_COMM_NULL);
  for (int v = 0; v < kRanks; ++v) MPI_Comm_split(MPI_COMM_WORLD, r == v ? MPI_UNDEFINED : 0, r, &without[v]);
  const Plan p = make_plan(kRanks, kSeed, r);
  const Plan hp3 = make_plan(kHealthRanks, kHealthSeed);
  // The ranks meet before the creation (its deadline: kCreateTimeoutS): under ASan on a
  // loaded machine one rank's plan can take seconds longer than another's, and the chaos is
  // about calls, not about ranks that start apart.
  MPI_Barrier(MPI_COMM_WORLD);
  qcollMpiComm* comm = nullptr;
  qcollStatus created = QCOLL_SUCCESS;
  {
    CreationTimeout longer;
    created = qcollMpiCommCreateWorld("chaos", &comm);
  }
  if (created != QCOLL_SUCCESS) {
    std::fprintf(stderr, "rank %d: create: %s\n", r, qcollGetRecentErrMsg());
    _exit(13);
  }
  const std::string seg = mapped_qcoll_segment();
  put(slot.shm_names[0], sizeof slot.shm_names[0], seg);
  mutate_process(slot);
  MPI_Barrier(MPI_COMM_WORLD);
  slot.ready = 1;
  if (!wait_flag(ctl.go, 60)) _exit(14);
  call_loop(p, r, "chaos", slot);
  if (!wait_flag(ctl.victim, 30, 0)) _exit(15);
  qcollMpiCommDestroy(comm);
  const int victim = ctl.victim.load();
  const int hr = r < victim ? r : r - 1;
  qcollMpiComm* hc = nullptr;
  MPI_Comm pair = MPI_COMM_NULL;  // the first two survivors
  MPI_Comm_split(without[victim], hr < kHealthRanks ? 0 : MPI_UNDEFINED, hr, &pair);
  if (hr >= kHealthRanks) {
    slot.health = 1;
    slot.finished = 1;
    _exit(0);
  }
  {
    CreationTimeout longer;
    created = qcollMpiCommCreate("chaos-health", pair, &hc);
  }
  if (created != QCOLL_SUCCESS) {
    put(slot.health_msg, sizeof slot.health_msg, std::string("create: ") + qcollGetRecentErrMsg());
    slot.health = 2;
  } else {
    put(slot.shm_names[1], sizeof slot.shm_names[1], mapped_qcoll_segment(seg));
    health_calls(hp3, hr, "chaos-health", slot);
    qcollMpiCommDestroy(hc);
  }
  slot.finished = 1;
  std::fflush(stdout);
  // A member is gone: MPI_Finalize may wait for it (docs/transports.md); leave as it did.
  _exit(0);
}
#endif

// ---- Threads: a simulated death or stop ------------------------------------------------------

struct ThreadFate {
  std::atomic<int> victim{-1};
  std::atomic<int> fate{0};   // 0 none, 1 kill, 2 stop
  std::atomic<int> acted{0};  // 1 mid-call (in the hook), 2 between calls
  std::atomic<bool> end{false};
  std::string group;  // the trial's group name (set before the threads start)
};
ThreadFate g_fate;

void stop_until_end() {
  while (!g_fate.end.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

qcoll::Status fate_hook(const std::string& group, int rank, std::size_t) {
  if (rank != g_fate.victim.load() || group != g_fate.group) return qcoll::Status::Ok();
  const int f = g_fate.fate.load();
  if (f == 0) return qcoll::Status::Ok();
  int expected = 0;
  g_fate.acted.compare_exchange_strong(expected, 1);
  if (f == 2) {
    stop_until_end();
    return qcoll::Status::Ok();
  }
  return qcoll::Status::Error(qcoll::StatusCode::InnerError, "chaos: this rank died in the middle of the call");
}

// ---- The driver -------------------------------------------------------------------------------

struct Options {
  int trials = 100;
  uint32_t seed = 1;
  int window_ms = 1500;
  double timeout_s = 3;
  bool verbose = false;
  std::string self;
  std::string mpirun = "mpirun";
  // Open MPI's transports under mpirun (--btl). Shared memory by default: over TCP a peer's
  // death with messages under way can abort or hang the survivors inside Open MPI 4.1
  // (docs/transports.md, Failures), which no deadline of qcoll's can help.
  std::string btl = "self,vader";
};

std::set<std::string> qcoll_shm_names() {
  std::set<std::string> s;
  for (const std::string& nm : faults::qcoll_shm_segments()) s.insert("/" + nm);
  return s;
}

// Abstract socket names of qcoll in /proc/net/unix ("@qcoll-...").
std::set<std::string> qcoll_socket_names() {
  std::set<std::string> s;
  std::ifstream f("/proc/net/unix");
  std::string line;
  while (std::getline(f, line)) {
    const auto at = line.find("@qcoll");
    if (at != std::string::npos) s.insert(line.substr(at));
  }
  return s;
}

// Every /dev/shm/qcoll-* name some living process has open or mapped.
std::set<std::string> held_shm_names() {
  std::set<std::string> held;
  DIR* d = opendir("/proc");
  if (d == nullptr) return held;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string base = std::string("/proc/") + e->d_name;
    std::ifstream maps(base + "/maps");
    std::string line;
    while (std::getline(maps, line)) {
      const auto at = line.find("/dev/shm/qcoll-");
      if (at == std::string::npos) continue;
      std::string nm = line.substr(at + 8);
      nm = nm.substr(0, nm.find(' '));
      held.insert(nm);
    }
    if (DIR* fd = opendir((base + "/fd").c_str())) {
      while (dirent* x = readdir(fd)) {
        char target[512];
        const ssize_t n = readlink((base + "/fd/" + x->d_name).c_str(), target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        if (std::strncmp(target, "/dev/shm/qcoll-", 15) == 0) {
          std::string nm(target + 8);
          held.insert(nm.substr(0, nm.find(' ')));
        }
      }
      closedir(fd);
    }
  }
  closedir(d);
  return held;
}

// Pids of processes whose environment holds `tag` (QCOLL_CHAOS_TAG=...), or in process group pgid.
std::vector<int> tagged_processes(const std::string& tag, pid_t pgid) {
  std::vector<int> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int pid = std::atoi(e->d_name);
    if (pid == getpid()) continue;
    bool mine = pgid > 0 && getpgid(pid) == pgid;
    if (!mine && !tag.empty()) {
      std::ifstream f(std::string("/proc/") + e->d_name + "/environ", std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      mine = ss.str().find(tag) != std::string::npos;
    }
    if (mine) out.push_back(pid);
  }
  closedir(d);
  return out;
}

struct TrialResult {
  std::string outcome;  // "pass: ..." or "FAIL: ..."
  std::vector<std::string> problems;
  std::vector<std::string> unattributed;
};

// Judges the survivors' records of a trial whose signal went at t_signal.
void judge_records(const Control& ctl, int victim, double t_signal, double timeout_s, bool threads, TrialResult& tr,
                   double* slowest_failure, int* own_rows) {
  *slowest_failure = 0;
  *own_rows = 0;
  for (int r = 0; r < kRanks; ++r) {
    if (r == victim) continue;
    const RankSlot& s = ctl.ranks[r];
    const std::string who = "rank " + std::to_string(r);
    if (!s.finished.load()) tr.problems.push_back(who + ": did not finish (hang or crash)");
    const int n = s.ncalls.load();
    if (n == 0) {
      tr.problems.push_back(who + ": made no call");
      continue;
    }
    bool saw_failure = false;
    for (int k = 0; k < n; ++k) {
      const Rec& rc = s.recs[k];
      const std::string what = who + " call " + std::to_string(k) + " (variant " + std::to_string(rc.variant) + ")";
      if (rc.secs > timeout_s + 2) tr.problems.push_back(what + ": returned after " + std::to_string(rc.secs) + " s");
      if (rc.status == QCOLL_SUCCESS) {
        if (rc.out_class != kCorrect)
          tr.problems.push_back(what + ": succeeded with output " + out_class_name(rc.out_class));
        // A call the victim never began cannot succeed (one it was in may: its part done).
        if (rc.t0 > t_signal && k >= ctl.ranks[victim].entered.load())
          tr.problems.push_back(what + ": succeeded although the victim never began it");
      } else {
        if (!saw_failure) *slowest_failure = std::max(*slowest_failure, rc.t0 + rc.secs - t_signal);
        saw_failure = true;
        if (threads && (rc.out_class == kOwnRows || rc.out_class == kCorrect)) {
          ++*own_rows;  // written in place (threads): its own reduced rows, nothing else
        } else if (rc.out_class != kUntouched) {
          tr.problems.push_back(what + ": failed with output " + out_class_name(rc.out_class));
        }
        if (rc.t0 + rc.secs < t_signal)
          tr.problems.push_back(what + ": failed before the signal: " + qcollStatusName(rc.status) + " " + rc.msg);
        if (rc.status != QCOLL_RUNTIME_ERROR)
          tr.problems.push_back(what + ": " + qcollStatusName(rc.status) + " (expected RUNTIME_ERROR): " + rc.msg);
        if (rc.msg[0] == 0) tr.problems.push_back(what + ": no message");
      }
    }
    if (!saw_failure) tr.problems.push_back(who + ": no call failed after the signal");
    if (s.health.load() != 1)
      tr.problems.push_back(who + ": a new communicator of the survivors did not work: " + s.health_msg);
  }
}

// Names this trial's ranks recorded: none may be left.
void judge_leftovers(const Control& ctl, const std::set<std::string>& shm_before,
                     const std::set<std::string>& sock_before, TrialResult& tr) {
  const std::set<std::string> shm_now = qcoll_shm_names(), sock_now = qcoll_socket_names();
  std::set<std::string> ours_shm, ours_sock;
  for (const RankSlot& s : ctl.ranks)
    for (int k = 0; k < 3; ++k) {
      if (s.shm_names[k][0]) ours_shm.insert(s.shm_names[k]);
      if (k < 2 && s.socket_names[k][0]) ours_sock.insert(s.socket_names[k]);
    }
  for (const std::string& nm : ours_shm)
    if (shm_now.count(nm)) tr.problems.push_back("left in /dev/shm: " + nm);
  for (const std::string& nm : ours_sock)
    if (sock_now.count(nm)) tr.problems.push_back("abstract socket left: " + nm);
  std::set<std::string> held;
  bool held_known = false;
  for (const std::string& nm : shm_now) {
    if (shm_before.count(nm) || ours_shm.count(nm)) continue;
    if (!held_known) {
      held = held_shm_names();
      held_known = true;
    }
    struct stat sb {};  // (a name that went meanwhile was another program's, in use)
    if (!held.count(nm) && stat(("/dev/shm" + nm).c_str(), &sb) == 0) tr.unattributed.push_back("shm " + nm);
  }
  (void)sock_before;  // a socket cannot outlive its processes: new ones belong to live programs
}

// Waits for the survivors (each reports `finished`) at most limit_s.
bool wait_survivors(const Control& ctl, int victim, double limit_s) {
  const double t0 = now_s();
  for (;;) {
    bool all = true;
    for (int r = 0; r < kRanks; ++r)
      if (r != victim && !ctl.ranks[r].finished.load()) all = false;
    if (all) return true;
    if (now_s() - t0 > limit_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::string where_text(int in_call) { return in_call ? "mid-call" : "between calls"; }
std::string how_text(double slowest) { return slowest < 1.0 ? "noticed < 1 s" : "noticed at the deadline"; }

Control* new_control_anon() {
  void* m = mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  std::memset(m, 0, sizeof(Control));
  static_cast<Control*>(m)->victim = -1;
  return static_cast<Control*>(m);
}

// ---- One trial per transport ---------------------------------------------------------------

TrialResult trial_threads(const Options& o, std::mt19937& rng, int trial, int sig, const Plan& p4, const Plan& p3) {
  TrialResult tr;
  Control* ctlp = new_control_anon();
  Control& ctl = *ctlp;
  const int victim = static_cast<int>(rng() % kRanks);
  const int delay_ms = static_cast<int>(rng() % (o.window_ms + 1));
  const std::string group = "chaos-t" + std::to_string(trial);
  const int threads_before = faults::settled_thread_count();
  g_fate.victim = victim;
  g_fate.fate = 0;
  g_fate.acted = 0;
  g_fate.end = false;
  g_fate.group = group;
  qcollThreadGroup* g = nullptr;
  if (qcollThreadGroupCreate(group.c_str(), kRanks, &g) != QCOLL_SUCCESS) {
    tr.outcome = "FAIL: group create";
    return tr;
  }
  std::atomic<qcollThreadGroup*> hg{nullptr};
  std::vector<std::thread> ts;
  for (int r = 0; r < kRanks; ++r)
    ts.emplace_back([&, r] {
      RankSlot& slot = ctl.ranks[r];
      if (qcollThreadGroupJoin(g, r) != QCOLL_SUCCESS) return;
      slot.ready = 1;
      wait_flag(ctl.go, 60);
      slot.started = 1;
      const double t_begin = now_s();
      int k = 0;
      bool failed = false;
      while (k < kMaxRecs && now_s() - t_begin < kMaxCallingS) {
        if (r == victim && g_fate.fate.load() != 0) {  // acts on its fate between calls
          int expected = 0;
          g_fate.acted.compare_exchange_strong(expected, 2);
          if (g_fate.fate.load() == 2) stop_until_end();
          break;
        }
        slot.entered = k + 1;
        const qcollStatus st = one_call(p4, k % kVariants, r, group.c_str(), &slot.recs[k], &slot.in_call);
        ++k;
        slot.ncalls = k;
        if (r == victim && g_fate.acted.load() == 1) break;  // died (or was stopped) in that call
        if (failed) break;
        failed = st != QCOLL_SUCCESS;
      }
      qcollThreadGroupLeave(g);
      if (r == victim) return;  // its thread ends
      wait_flag(ctl.victim, 30, 0);
      const int hr = r < victim ? r : r - 1;
      if (hr >= kHealthRanks) {
        slot.health = 1;
        slot.finished = 1;
        return;
      }
      // The survivors' new group, created by the first survivor.
      if (hr == 0) {
        qcollThreadGroup* h = nullptr;
        qcollThreadGroupCreate((group + "-health").c_str(), kHealthRanks, &h);
        hg = h;
        ctl.health_id_ready = 1;
      }
      wait_flag(ctl.health_id_ready, 30);
      qcollThreadGroup* h = hg.load();
      if (h == nullptr || qcollThreadGroupJoin(h, hr) != QCOLL_SUCCESS) {
        put(slot.health_msg, sizeof slot.health_msg, std::string("join: ") + qcollGetRecentErrMsg());
        slot.health = 2;
      } else {
        health_calls(p3, hr, (group + "-health").c_str(), slot);
        qcollThreadGroupLeave(h);
      }
      slot.finished = 1;
    });
  for (int r = 0; r < kRanks; ++r) wait_flag(ctl.ranks[r].ready, 30);
  ctl.go = 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  const int in_call = ctl.ranks[victim].in_call.load();
  const double t_signal = now_s();
  g_fate.fate = sig == SIGKILL ? 1 : 2;
  ctl.victim = victim;
  const bool all = wait_survivors(ctl, victim, o.timeout_s + 2 + 30);
  g_fate.end = true;
  for (auto& t : ts) t.join();
  // The survivors' group: they have left it.
  if (hg.load() != nullptr) qcollThreadGroupDestroy(hg.load());
  qcollThreadGroupDestroy(g);
  double slowest = 0;
  int own_rows = 0;
  judge_records(ctl, victim, t_signal, o.timeout_s, true, tr, &slowest, &own_rows);
  if (!all) tr.problems.push_back("survivors did not finish in time");
  if (!faults::no_thread_left(threads_before))
    tr.problems.push_back("threads left: " + std::to_string(faults::thread_count() - threads_before));
  const int acted = g_fate.acted.load();
  (void)in_call;
  const std::string where = acted == 1 ? "mid-call" : "between calls";
  tr.outcome = tr.problems.empty()
                   ? "pass: " + where + ", " + how_text(slowest) + (own_rows ? ", own rows left (in place)" : "")
                   : "FAIL";
  munmap(ctlp, sizeof(Control));
  return tr;
}

// Forked ranks over the bootstrap.
// A process trial's moment of chaos: once every rank is ready (within ready_s), they start
// calling; delay_ms later the victim (victim_pid(), read then) gets `sig`; then the survivors
// have survive_s to finish. A start that fails is a problem named after `what`.
struct Strike {
  double t_signal;
  bool ready = false;
  int in_call = 0;
  bool all = false;
};
Strike strike(Control& ctl, int victim, int sig, int delay_ms, double ready_s, double survive_s, const char* what,
              const std::function<pid_t()>& victim_pid, TrialResult& tr) {
  bool ready = true;
  for (int r = 0; r < kRanks; ++r) ready = ready && wait_flag(ctl.ranks[r].ready, ready_s);
  Strike k{now_s(), ready};
  if (!ready) {
    tr.problems.push_back(std::string("the ranks did not get ready (") + what + ")");
    return k;
  }
  ctl.go = 1;
  for (int r = 0; r < kRanks; ++r) wait_flag(ctl.ranks[r].started, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  k.in_call = ctl.ranks[victim].in_call.load();
  k.t_signal = now_s();
  kill(victim_pid(), sig);
  ctl.victim = victim;
  k.all = wait_survivors(ctl, victim, survive_s);
  return k;
}

TrialResult trial_shm(const Options& o, std::mt19937& rng, int sig, const Plan& p4, const Plan& p3) {
  TrialResult tr;
  Control* ctlp = new_control_anon();
  Control& ctl = *ctlp;
  const int victim = static_cast<int>(rng() % kRanks);
  const int delay_ms = static_cast<int>(rng() % (o.window_ms + 1));
  const auto shm_before = qcoll_shm_names();
  const auto sock_before = qcoll_socket_names();
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids(kRanks, -1);
  pid_t pgid = 0;
  for (int r = 0; r < kRanks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, pgid);
      _exit(bootstrap_rank(ctl, r, p4, p3));
    }
    if (pgid == 0) pgid = pid;
    setpgid(pid, pgid);
    pids[r] = pid;
  }
  const Strike k = strike(
      ctl, victim, sig, delay_ms, 60, o.timeout_s + 2 + 30, "bootstrap", [&] { return pids[victim]; }, tr);
  const double t_signal = k.t_signal;
  const bool ready = k.ready;
  const int in_call = k.in_call;
  const bool all = k.all;
  // Over: the stopped victim goes too; every child is reaped.
  kill(pids[victim], SIGKILL);
  std::vector<int> codes(kRanks, -1);
  const double t_reap = now_s();
  for (int r = 0; r < kRanks; ++r) {
    int st = 0;
    for (;;) {
      const pid_t w = waitpid(pids[r], &st, WNOHANG);
      if (w == pids[r]) break;
      if (now_s() - t_reap > 20) {
        tr.problems.push_back("rank " + std::to_string(r) + " did not exit");
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    codes[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
  }
  for (int r = 0; r < kRanks; ++r)
    if (r != victim && codes[r] != 0)
      tr.problems.push_back("rank " + std::to_string(r) + " exit code " + std::to_string(codes[r]));
  for (int pid : tagged_processes("", pgid)) {
    tr.problems.push_back("process left: " + std::to_string(pid));
    kill(pid, SIGKILL);
  }
  double slowest = 0;
  int own_rows = 0;
  if (ready) judge_records(ctl, victim, t_signal, o.timeout_s, false, tr, &slowest, &own_rows);
  if (ready && !all) tr.problems.push_back("survivors did not finish in time");
  judge_leftovers(ctl, shm_before, sock_before, tr);
  tr.outcome = tr.problems.empty() ? "pass: " + where_text(in_call) + ", " + how_text(slowest) : "FAIL";
  munmap(ctlp, sizeof(Control));
  return tr;
}

// mpirun -np 4 of this program.
TrialResult trial_mpirun(const Options& o, std::mt19937& rng, int sig, const std::string& transport,
                         const std::string& dir, int trial) {
  TrialResult tr;
  const int victim = static_cast<int>(rng() % kRanks);
  const int delay_ms = static_cast<int>(rng() % (o.window_ms + 1));
  const std::string ctl_path = dir + "/control-" + std::to_string(trial);
  const std::string log_path = dir + "/mpirun-" + std::to_string(trial) + ".log";
  const int fd = open(ctl_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, sizeof(Control)) != 0) {
    tr.outcome = "FAIL: control file";
    return tr;
  }
  void* mem = mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  Control& ctl = *static_cast<Control*>(mem);
  ctl.victim = -1;
  const auto shm_before = qcoll_shm_names();
  const auto sock_before = qcoll_socket_names();
  const std::string tag = "QCOLL_CHAOS_TAG=" + std::to_string(getpid()) + "-" + std::to_string(trial);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t mpirun = fork();
  if (mpirun == 0) {
    setpgid(0, 0);
    const int lf = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (lf >= 0) {
      dup2(lf, 1);
      dup2(lf, 2);
    }
    putenv(const_cast<char*>(tag.c_str()));
    setenv("QCOLL_TRANSPORT", transport == "mpi" ? "mpi" : "shm", 1);
    execlp(o.mpirun.c_str(), o.mpirun.c_str(), "--allow-run-as-root", "--oversubscribe", "--enable-recovery", "--mca",
           "btl", o.btl.c_str(), "--mca", "btl_vader_single_copy_mechanism", "none", "-np", "4", o.self.c_str(),
           "rank-mpi", ctl_path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(mpirun, mpirun);
  const Strike k = strike(
      ctl, victim, sig, delay_ms, 90, o.timeout_s + 2 + 40, "mpirun start",
      [&] { return static_cast<pid_t>(ctl.ranks[victim].pid.load()); }, tr);
  const double t_signal = k.t_signal;
  const bool ready = k.ready;
  const int in_call = k.in_call;
  const bool all = k.all;
  if (ctl.ranks[victim].pid.load() > 0) kill(ctl.ranks[victim].pid.load(), SIGKILL);
  // mpirun ends once every rank is gone.
  int st = 0;
  const double t_reap = now_s();
  bool exited = false;
  while (now_s() - t_reap < 30) {
    if (waitpid(mpirun, &st, WNOHANG) == mpirun) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!exited) {
    tr.problems.push_back("mpirun did not exit within 30 s of the end");
    kill(-mpirun, SIGKILL);
    waitpid(mpirun, &st, 0);
  }
  for (int pid : tagged_processes(tag, mpirun)) {
    tr.problems.push_back("process left: " + std::to_string(pid));
    kill(pid, SIGKILL);
  }
  double slowest = 0;
  int own_rows = 0;
  if (ready) judge_records(ctl, victim, t_signal, o.timeout_s, false, tr, &slowest, &own_rows);
  if (ready && !all) tr.problems.push_back("survivors did not finish in time");
  judge_leftovers(ctl, shm_before, sock_before, tr);
  tr.outcome = tr.problems.empty() ? "pass: " + where_text(in_call) + ", " + how_text(slowest) : "FAIL";
  if (tr.problems.empty()) {
    std::remove(log_path.c_str());
  } else {
    std::ifstream lf(log_path);
    std::string line;
    int shown = 0;
    while (std::getline(lf, line) && shown < 12) {
      tr.problems.push_back("mpirun: " + line);
      ++shown;
    }
  }
  munmap(mem, sizeof(Control));
  std::remove(ctl_path.c_str());
  return tr;
}

// One call of each variant on a fresh group: the kernel worker pool starts its threads on
// first use and keeps them, which is not a thread left by a trial.
void warm_threads(const Plan& p4) {
  qcollThreadGroup* g = nullptr;
  if (qcollThreadGroupCreate("chaos-warm", kRanks, &g) != QCOLL_SUCCESS) return;
  std::vector<std::thread> ts;
  for (int r = 0; r < kRanks; ++r)
    ts.emplace_back([&, r] {
      if (qcollThreadGroupJoin(g, r) != QCOLL_SUCCESS) return;
      Rec rec;
      for (int v = 0; v < kVariants; ++v) one_call(p4, v, r, "chaos-warm", &rec, nullptr);
      qcollThreadGroupLeave(g);
    });
  for (auto& t : ts) t.join();
  qcollThreadGroupDestroy(g);
}

int driver(const Options& o, const std::vector<std::string>& transports) {
  std::mt19937 rng(o.seed);
  std::map<std::string, int> table;  // "transport | signal | outcome" -> count
  std::map<std::string, int> unattributed;
  int failures = 0, total = 0;
  qcoll::ops::testing::set_reduce_fault_for_test(fate_hook);
  char dir_tmpl[] = "/tmp/qcoll-chaos-XXXXXX";
  const std::string dir = mkdtemp(dir_tmpl) ? dir_tmpl : "/tmp";
  Plan p4, p3;
  for (const std::string& t : transports) {
    if (t == "threads" || t == "shm") {
      if (p4.n == 0) p4 = make_plan(kRanks, kSeed);
      if (p3.n == 0) p3 = make_plan(kHealthRanks, kHealthSeed);
    }
    if (t == "threads") warm_threads(p4);
    const double t0 = now_s();
    for (int i = 0; i < o.trials; ++i) {
      const int sig = i % 2 == 0 ? SIGKILL : SIGSTOP;
      const std::string sig_name = sig == SIGKILL ? "SIGKILL" : "SIGSTOP";
      TrialResult tr;
      if (t == "threads") {
        tr = trial_threads(o, rng, i, sig, p4, p3);
      } else if (t == "shm") {
        tr = trial_shm(o, rng, sig, p4, p3);
      } else {
        tr = trial_mpirun(o, rng, sig, t, dir, i);
      }
      ++total;
      const std::string sname = t == "threads" ? (sig == SIGKILL ? "kill (simulated)" : "stop (simulated)") : sig_name;
      if (!tr.problems.empty()) {
        ++failures;
        tr.outcome = "FAIL: " + tr.problems[0];
      }
      ++table[t + " | " + sname + " | " + (tr.problems.empty() ? tr.outcome : std::string("FAIL"))];
      std::printf("CHAOS | %s | %d | %s | %s |\n", t.c_str(), i, sname.c_str(), tr.outcome.c_str());
      for (std::size_t k = 1; k < tr.problems.size() && k < 20; ++k) std::printf("    %s\n", tr.problems[k].c_str());
      for (const std::string& u : tr.unattributed) {
        ++unattributed[t];
        std::printf("    unattributed (not held by any process; maybe another program's): %s\n", u.c_str());
      }
      std::fflush(stdout);
    }
    std::printf("CHAOS | %s | %d trials in %.1f s |\n", t.c_str(), o.trials, now_s() - t0);
  }
  rmdir(dir.c_str());
  std::printf("\n| transport | signal | outcome | trials |\n|---|---|---|---|\n");
  for (const auto& [k, v] : table) std::printf("| %s | %d |\n", k.c_str(), v);
  for (const auto& [k, v] : unattributed) std::printf("(%s: %d unattributed qcoll names seen)\n", k.c_str(), v);
  std::printf("\nchaos: %d trials, %d failed -> %s\n", total, failures, failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
#if QCOLL_HAVE_MPI
  if (argc > 1 && std::strcmp(argv[1], "rank-mpi") == 0) return mpi_rank_main(argc, argv);
#endif
  Options o;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  o.self = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : argv[0];
  std::vector<std::string> transports;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--trials")
      o.trials = std::atoi(next().c_str());
    else if (a == "--seed")
      o.seed = static_cast<uint32_t>(std::strtoul(next().c_str(), nullptr, 10));
    else if (a == "--window-ms")
      o.window_ms = std::atoi(next().c_str());
    else if (a == "--timeout")
      o.timeout_s = std::atof(next().c_str());
    else if (a == "--mpirun")
      o.mpirun = next();
    else if (a == "--btl")
      o.btl = next();
    else if (a == "--verbose")
      o.verbose = true;
    else if (a == "all") {
      transports.insert(transports.end(), {"threads", "shm"});
#if QCOLL_HAVE_MPI
      transports.insert(transports.end(), {"mpi-shm", "mpi"});
#endif
    } else if (a == "threads" || a == "shm" || a == "mpi-shm" || a == "mpi") {
#if !QCOLL_HAVE_MPI
      if (a == "mpi-shm" || a == "mpi") {
        std::fprintf(stderr, "chaos: built without MPI: %s not available\n", a.c_str());
        return 77;
      }
#endif
      transports.push_back(a);
    } else {
      std::fprintf(stderr,
                   "usage: chaos threads|shm|mpi-shm|mpi|all [--trials N] [--seed S] [--window-ms W] [--timeout S]\n");
      return 2;
    }
  }
  if (transports.empty() || o.trials < 1) {
    std::fprintf(stderr, "chaos: name a transport (threads, shm, mpi-shm, mpi, all)\n");
    return 2;
  }
  // Every rank (threads, forked, and mpirun's, which inherit the environment) reads these.
  setenv("QCOLL_TIMEOUT_S", std::to_string(o.timeout_s).c_str(), 1);
  setenv("HCCL_BUFFSIZE", "3", 1);
  unsetenv("QCOLL_TRANSPORT");
  unsetenv("QCOLL_ALL_REDUCE");
  return driver(o, transports);
}
