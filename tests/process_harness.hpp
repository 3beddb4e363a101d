// Forked ranks for the tests of process communicators made from a unique id: one child per
// rank runs a body and reports an Outcome through a pipe; memory shared with the children
// for their outputs; the operator calls of one rank with deterministic inputs.
#pragma once
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "fault_matrix.hpp"
#include "qcoll/qcoll.h"

namespace procs {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// What a child reports.
struct Outcome {
  int status = -1;     // -1: never reported (killed after the limit: a hang)
  double seconds = 0;  // of the call that gave `status`
  int checks_failed = 0;
  char message[600] = {};

  void set(qcollStatus st, double s) {
    status = st;
    seconds = s;
    std::snprintf(message, sizeof message, "%s", st == QCOLL_SUCCESS ? "" : qcollGetRecentErrMsg());
  }
  std::string text() const {
    return std::string(status >= 0 ? qcollStatusName(status) : "NO REPORT") + " after " + std::to_string(seconds) +
           " s: " + message;
  }
};

// Memory the children write and the parent reads.
class SharedBuf {
 public:
  explicit SharedBuf(std::size_t bytes) : bytes_(bytes ? bytes : 1) {
    p_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p_ == MAP_FAILED) p_ = nullptr;
  }
  ~SharedBuf() {
    if (p_) munmap(p_, bytes_);
  }
  SharedBuf(const SharedBuf&) = delete;
  SharedBuf& operator=(const SharedBuf&) = delete;
  uint8_t* data() const { return static_cast<uint8_t*>(p_); }

 private:
  std::size_t bytes_;
  void* p_ = nullptr;
};

// Forks one child per body (body i gets i); returns their outcomes. A child that has not
// reported after limit_s is killed (its outcome stays status -1). started(pids) runs in the
// parent once every child is forked.
inline std::vector<Outcome> run_children(int n, const std::function<Outcome(int)>& body, double limit_s = 60,
                                         const std::function<void(const std::vector<pid_t>&)>& started = nullptr) {
  std::vector<int> fds(n, -1);
  std::vector<pid_t> pids(n, -1);
  std::fflush(stdout);
  std::fflush(stderr);
  for (int i = 0; i < n; ++i) {
    int p[2];
    if (pipe(p) != 0) {
      ADD_FAILURE() << "pipe";
      break;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      Outcome o = body(i);
      const bool ok = write(p[1], &o, sizeof o) == static_cast<ssize_t>(sizeof o);
      _exit(ok ? 0 : 3);
    }
    close(p[1]);
    fds[i] = p[0];
    pids[i] = pid;
  }
  if (started) started(pids);
  std::vector<Outcome> out(n);
  std::vector<bool> done(n, false);
  const auto t0 = Clock::now();
  int left = n;
  while (left > 0 && since(t0) < limit_s) {
    std::vector<pollfd> pf;
    std::vector<int> who;
    for (int i = 0; i < n; ++i)
      if (!done[i] && fds[i] >= 0) {
        pf.push_back({fds[i], POLLIN, 0});
        who.push_back(i);
      }
    if (pf.empty()) break;
    if (poll(pf.data(), pf.size(), 100) <= 0) continue;
    for (std::size_t k = 0; k < pf.size(); ++k) {
      if (pf[k].revents == 0) continue;
      const int i = who[k];
      Outcome o;
      if (read(fds[i], &o, sizeof o) == static_cast<ssize_t>(sizeof o)) out[i] = o;
      done[i] = true;
      --left;
    }
  }
  for (int i = 0; i < n; ++i) {
    if (pids[i] <= 0) continue;
    if (!done[i]) kill(pids[i], SIGKILL);
    int st = 0;
    waitpid(pids[i], &st, 0);
    if (fds[i] >= 0) close(fds[i]);
  }
  return out;
}

// One operator call of a test: the deviation-free faults::RankCall with its shape and dtypes.
using Call = faults::RankCall;

inline Call make_call(bool rs, qcollDataType x, qcollDataType s, qcollDataType o, int64_t rows, int64_t H) {
  Call c;
  c.reduce_scatter = rs;
  c.x_dtype = x;
  c.scales_dtype = s;
  c.out_dtype = o;
  c.rows = rows;
  c.H = H;
  return c;
}

// The inputs of one rank for one call, kept alive as long as the object (for streams).
struct RankInputs {
  std::vector<uint8_t> x, scales, workspace;
  RankInputs(int rank, const Call& c, uint32_t seed)
      : x(faults::make_x(rank, c, seed)), scales(faults::make_scales(rank, c, seed)) {}
};

// Both phases of `c` on rank `rank` of group `group` into `out` (out_bytes(c, n) bytes);
// on `stream` (NULL: synchronous) phase two only enqueues, and `in` must outlive the call.
inline qcollStatus call(const Call& c, RankInputs& in, int n, const char* group, uint8_t* out,
                        qcollStream stream = nullptr) {
  const std::vector<int64_t> xsh = {c.rows, c.H}, ssh = faults::scales_shape(c), osh = faults::out_shape(c, n);
  qcollTensor* tx = qcollCreateContiguousTensor(xsh.data(), 2, c.x_dtype, in.x.data());
  qcollTensor* ts = qcollCreateContiguousTensor(ssh.data(), ssh.size(), c.scales_dtype, in.scales.data());
  qcollTensor* to = qcollCreateContiguousTensor(osh.data(), 2, c.out_dtype, out);
  uint64_t ws = 0;
  qcollOpExecutor* e = nullptr;
  qcollStatus st = c.reduce_scatter ? qcollQuantReduceScatterGetWorkspaceSize(tx, ts, group, "sum", to, &ws, &e)
                                    : qcollQuantAllReduceGetWorkspaceSize(tx, ts, group, "sum", to, &ws, &e);
  // The tensors may go right after phase one.
  qcollDestroyTensor(tx);
  qcollDestroyTensor(ts);
  qcollDestroyTensor(to);
  if (st != QCOLL_SUCCESS) return st;
  in.workspace.assign(ws, 0);
  void* wp = ws ? in.workspace.data() : nullptr;
  return c.reduce_scatter ? qcollQuantReduceScatter(wp, ws, e, stream) : qcollQuantAllReduce(wp, ws, e, stream);
}

// Names of this process's root's segments still in /dev/shm.
inline std::vector<std::string> left_in_dev_shm(const std::vector<std::string>& names) {
  std::vector<std::string> left;
  for (const std::string& nm : names) {
    struct stat sb {};
    if (stat(("/dev/shm" + nm).c_str(), &sb) == 0) left.push_back(nm);
  }
  return left;
}

}  // namespace procs
