// Shared pieces of the fault-matrix tests: what one rank does in a case, what it observed,
// and the row printed per case; scripts/fault_matrix_table.py turns the rows into the
// table "case x transport -> statuses, slowest time" of docs/hardening.md §Fault matrix.
// (The GoogleTest checks of a case: fault_cases.hpp.)
#pragma once
#include <dirent.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ops/executor.hpp"
#include "oracle.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/quant.hpp"

namespace faults {

constexpr uint8_t kSentinel = 0xA5;

// The case "exception in the reduce step mid-protocol", through the executor's test-only
// hook (ops/executor.hpp): rank kReduceFaultRank throws from its reduce step once it reaches
// row reduce_fault_row() of its block (0 on threads, where a call is one chunk; the middle
// elsewhere, so that it has reduced some chunks and its peers are in the middle of the
// exchange). Process-wide: set it around the call, on every process of the case.
constexpr int kReduceFaultRank = 2;
inline std::atomic<std::size_t>& reduce_fault_row() {
  static std::atomic<std::size_t> row{0};
  return row;
}
inline qcoll::Status throw_in_reduce(const std::string&, int rank, std::size_t row_begin) {
  if (rank == kReduceFaultRank && row_begin >= reduce_fault_row().load())
    throw std::runtime_error("injected fault in the reduce step");
  return qcoll::Status::Ok();
}
inline void inject_reduce_fault(bool on, std::size_t from_row = 0) {
  reduce_fault_row() = from_row;
  qcoll::ops::testing::set_reduce_fault_for_test(on ? throw_in_reduce : nullptr);
}

// One rank's call in a case: a valid default call, with the deviations a case asks for.
struct RankCall {
  bool reduce_scatter = true;
  qcollDataType x_dtype = QCOLL_DT_FLOAT8_E4M3FN;
  qcollDataType scales_dtype = QCOLL_DT_FLOAT;
  qcollDataType out_dtype = QCOLL_DT_BFLOAT16;
  int64_t rows = 16;  // BS
  int64_t H = 1024;
  std::string group;                    // the group's name by default
  bool null_x = false;                  // phase one: x tensor pointer null
  bool pass_stream = false;             // phase two: non-null stream (PARAM_INVALID there)
  bool wrong_phase_two = false;         // runs the other operator's phase two on its executor
  bool destroy_instead = false;         // releases its executor instead of running it
  bool absent = false;                  // never calls at all
  std::function<void()> on_call_start;  // runs right before phase one (after inputs are made)
  bool check_written = false;           // after a failure, check what was written (RankResult::written_right)
  // The fused operator (QuantizeReduceScatter / QuantizeAllReduce) on a float input of this
  // dtype (FLOAT or BFLOAT16), quantized as x_dtype / scales_dtype say; false: the quantized one.
  bool fused = false;
  qcollDataType in_dtype = QCOLL_DT_BFLOAT16;
  // x as a view at this offset (in elements) into a storage of offset + elements - x_short
  // elements (rule 10; a 4-bit x: two elements a byte); both 0: a contiguous tensor.
  int64_t x_offset = 0;
  int64_t x_short = 0;
};

// A call with a 4-bit x (the extended contract, contract.md §ext-fp4): E2M1 or E1M2 x, KG
// (FLOAT) or MX (FLOAT8_E8M0) scales; the fused operator quantizes to that mode.
inline RankCall fp4_call(qcollDataType x = QCOLL_DT_FLOAT4_E2M1, qcollDataType scales = QCOLL_DT_FLOAT,
                         bool reduce_scatter = true, bool fused = false) {
  RankCall c;
  c.x_dtype = x;
  c.scales_dtype = scales;
  c.reduce_scatter = reduce_scatter;
  c.fused = fused;
  return c;
}

// The rank-count cases (contract.md §ext-ranks): 3 ranks, refused under vendor (2, 4 or 8),
// accepted under extended; BS a multiple of 3.
constexpr int kOddRanks = 3;
constexpr int64_t kOddRanksRows = 24;

// What a rank observed.
struct RankResult {
  bool called = false;
  qcollStatus status = QCOLL_SUCCESS;
  std::string message;
  double seconds = 0;
  bool output_untouched = true;  // every output byte still the sentinel
  bool output_correct = false;   // equals the reference (success cases)
  // (check_written) every output element is either untouched or the reference's value.
  bool written_right = false;
};

// Deterministic input of `rank` for a call: x bytes (a 4-bit x packed, from its offset on)
// and scales bytes.
inline std::vector<uint8_t> make_x(int rank, const RankCall& c, uint32_t seed) {
  std::mt19937 g(seed * 131u + static_cast<uint32_t>(rank));
  std::vector<uint8_t> x(
      qcoll::dtype_bytes(static_cast<qcoll::DType>(c.x_dtype), static_cast<std::size_t>(c.x_offset + c.rows * c.H)));
  for (auto& b : x) {
    b = static_cast<uint8_t>(g());
    if (c.x_dtype == QCOLL_DT_FLOAT8_E4M3FN && (b & 0x7F) == 0x7F) b ^= 1;  // no NaN inputs
  }
  return x;
}
inline std::vector<uint8_t> make_scales(int rank, const RankCall& c, uint32_t seed) {
  std::mt19937 g(seed * 977u + static_cast<uint32_t>(rank));
  const bool mx = c.scales_dtype == QCOLL_DT_FLOAT8_E8M0;
  const std::size_t count = static_cast<std::size_t>(c.rows * c.H / (mx ? 32 : 128));
  std::vector<uint8_t> s(count * (mx ? 1 : 4));
  for (std::size_t i = 0; i < count; ++i) {
    if (mx) {
      s[i] = static_cast<uint8_t>(120 + g() % 10);
    } else {
      const float v = std::ldexp(1.0f + static_cast<float>(g() % 256) / 256.0f, -static_cast<int>(g() % 8));
      std::memcpy(s.data() + 4 * i, &v, 4);
    }
  }
  return s;
}
inline std::vector<int64_t> scales_shape(const RankCall& c) {
  if (c.scales_dtype == QCOLL_DT_FLOAT8_E8M0) return {c.rows, c.H / 64, 2};
  return {c.rows, c.H / 128};
}
inline std::vector<int64_t> out_shape(const RankCall& c, int n) {
  if (c.reduce_scatter) return {c.rows / n, c.H};
  return {c.rows, c.H};
}
inline std::size_t out_bytes(const RankCall& c, int n) {
  const std::size_t elem = c.out_dtype == QCOLL_DT_FLOAT ? 4 : 2;
  auto s = out_shape(c, n);
  return static_cast<std::size_t>(s[0] * s[1]) * elem;
}

// A fused call's float input of `rank`: FLOAT, or BFLOAT16 (the top halves of the same
// draws); and that input as fp32 values (exact).
inline std::vector<uint8_t> make_input(int rank, const RankCall& c, uint32_t seed) {
  std::mt19937 g(seed * 7919u + static_cast<uint32_t>(rank));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::size_t count = static_cast<std::size_t>(c.rows * c.H);
  const bool bf16 = c.in_dtype == QCOLL_DT_BFLOAT16;
  std::vector<uint8_t> in(count * (bf16 ? 2 : 4));
  for (std::size_t i = 0; i < count; ++i) {
    const float v = std::ldexp(normal(g), static_cast<int>(i / 128 % 9) - 4);
    uint32_t u;
    std::memcpy(&u, &v, 4);
    if (bf16) {
      const uint16_t h = static_cast<uint16_t>(u >> 16);
      std::memcpy(in.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(in.data() + 4 * i, &u, 4);
    }
  }
  return in;
}
inline std::vector<float> input_values(const RankCall& c, const std::vector<uint8_t>& in) {
  const std::size_t count = static_cast<std::size_t>(c.rows * c.H);
  std::vector<float> f(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (c.in_dtype == QCOLL_DT_BFLOAT16) {
      uint16_t h;
      std::memcpy(&h, in.data() + 2 * i, 2);
      f[i] = oracle::bf16_value(h);
    } else {
      std::memcpy(&f[i], in.data() + 4 * i, 4);
    }
  }
  return f;
}

// The reference result of rank r when every rank made call c with seed's inputs (a fused
// call: each rank's input quantized by the public quantizer, then the oracle's sum).
inline std::vector<uint8_t> reference_output(const RankCall& c, int n, int r, uint32_t seed) {
  std::vector<std::vector<uint8_t>> xs, ss;
  for (int k = 0; k < n; ++k) {
    if (c.fused) {
      const std::vector<float> f = input_values(c, make_input(k, c, seed));
      qcoll::quant::QuantizedTensor q;
      if (!qcoll::quant::quantize(f.data(), static_cast<std::size_t>(c.rows), static_cast<std::size_t>(c.H),
                                  static_cast<qcoll::DType>(c.x_dtype), static_cast<qcoll::DType>(c.scales_dtype), q)
               .ok())
        return {};
      xs.push_back(q.q);
      const auto* sp = static_cast<const uint8_t*>(q.scales_data());
      ss.emplace_back(sp, sp + q.scales_bytes());
      continue;
    }
    xs.push_back(make_x(k, c, seed));
    ss.push_back(make_scales(k, c, seed));
  }
  const auto xdt = static_cast<qcoll::DType>(c.x_dtype);
  const auto sdt = static_cast<qcoll::DType>(c.scales_dtype);
  const auto odt = static_cast<qcoll::DType>(c.out_dtype);
  const std::size_t H = static_cast<std::size_t>(c.H), rows = static_cast<std::size_t>(c.rows);
  if (c.reduce_scatter) return oracle::reduce_rows(xdt, sdt, odt, xs, ss, H, r * rows / n, rows / n);
  return oracle::reduce_rows(xdt, sdt, odt, xs, ss, H, 0, rows);
}

// Runs rank `rank`'s part of a case on the calling thread (which joined the group, or is
// the process of a process-per-rank transport). Measures phase one to the last return.
inline RankResult run_rank(int rank, int n, const RankCall& c, const std::string& group, uint32_t seed) {
  RankResult res;
  if (c.absent) return res;
  res.called = true;
  std::vector<uint8_t> x = c.fused ? make_input(rank, c, seed) : make_x(rank, c, seed), s = make_scales(rank, c, seed);
  std::vector<uint8_t> out(out_bytes(c, n), kSentinel);
  const std::vector<int64_t> xsh = {c.rows, c.H}, ssh = scales_shape(c), osh = out_shape(c, n);
  const qcollDataType xdt = c.fused ? c.in_dtype : c.x_dtype;
  const int64_t xstorage = c.x_offset + c.rows * c.H - c.x_short;
  qcollTensor* tx = c.null_x                            ? nullptr
                    : c.x_offset == 0 && c.x_short == 0 ? qcollCreateContiguousTensor(xsh.data(), 2, xdt, x.data())
                                                        : qcollCreateTensor(xsh.data(), 2, xdt, nullptr, c.x_offset,
                                                                            QCOLL_FORMAT_ND, &xstorage, 1, x.data());
  qcollTensor* ts = qcollCreateContiguousTensor(ssh.data(), ssh.size(), c.scales_dtype, s.data());
  const qcollQuantConfig cfg{c.x_dtype, c.scales_dtype, 0.0f};
  qcollTensor* to = qcollCreateContiguousTensor(osh.data(), 2, c.out_dtype, out.data());
  const std::string name = c.group.empty() ? group : c.group;

  if (c.on_call_start) c.on_call_start();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t ws = 0;
  qcollOpExecutor* e = nullptr;
  qcollStatus st =
      c.fused
          ? (c.reduce_scatter ? qcollQuantizeReduceScatterGetWorkspaceSize(tx, &cfg, name.c_str(), "sum", to, &ws, &e)
                              : qcollQuantizeAllReduceGetWorkspaceSize(tx, &cfg, name.c_str(), "sum", to, &ws, &e))
      : c.reduce_scatter ? qcollQuantReduceScatterGetWorkspaceSize(tx, ts, name.c_str(), "sum", to, &ws, &e)
                         : qcollQuantAllReduceGetWorkspaceSize(tx, ts, name.c_str(), "sum", to, &ws, &e);
  if (st == QCOLL_SUCCESS) {
    std::vector<uint8_t> w(ws);
    void* wp = ws ? w.data() : nullptr;
    qcollStream stream = c.pass_stream ? reinterpret_cast<qcollStream>(&w) : nullptr;
    if (c.destroy_instead) {
      st = qcollDestroyExecutor(e);
    } else {
      const bool rs = c.reduce_scatter != c.wrong_phase_two;
      if (c.fused)
        st = rs ? qcollQuantizeReduceScatter(wp, ws, e, stream) : qcollQuantizeAllReduce(wp, ws, e, stream);
      else
        st = rs ? qcollQuantReduceScatter(wp, ws, e, stream) : qcollQuantAllReduce(wp, ws, e, stream);
    }
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.status = st;
  res.message = st == QCOLL_SUCCESS ? "" : qcollGetRecentErrMsg();
  for (uint8_t b : out)
    if (b != kSentinel) res.output_untouched = false;
  if ((st == QCOLL_SUCCESS && !c.destroy_instead) || (st != QCOLL_SUCCESS && c.check_written)) {
    const auto want = reference_output(c, n, rank, seed);
    const auto odt = static_cast<qcoll::DType>(c.out_dtype);
    const std::size_t osz = qcoll::dtype_size(odt);
    const std::vector<uint8_t> untouched(osz, kSentinel);
    res.output_correct = want.size() == out.size();
    res.written_right = want.size() == out.size();
    for (std::size_t i = 0; i < out.size() && want.size() == out.size(); i += osz) {
      const bool right = oracle::same_result(odt, out.data() + i, want.data() + i);
      res.output_correct = res.output_correct && right;
      res.written_right = res.written_right && (right || std::memcmp(out.data() + i, untouched.data(), osz) == 0);
    }
    if (st != QCOLL_SUCCESS) res.output_correct = false;
  }
  qcollDestroyTensor(tx);
  qcollDestroyTensor(ts);
  qcollDestroyTensor(to);
  return res;
}

// Threads of this process (/proc/self/task entries).
inline int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// A thread that has been joined can stay in /proc/self/task for a moment (the kernel wakes
// the joiner before it removes the task): the count once it no longer falls, read at most
// `limit_ms` after the last change.
inline int settled_thread_count(int limit_ms = 2000) {
  int last = thread_count();
  for (int waited = 0; waited < limit_ms; waited += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int now = thread_count();
    if (now == last) return now;
    last = now;
  }
  return last;
}

// True when the threads are back to at most `before` within `limit_ms` (a thread left
// behind keeps the count above it).
inline bool no_thread_left(int before, int limit_ms = 5000) {
  for (int waited = 0; waited < limit_ms; waited += 20) {
    if (thread_count() <= before) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return thread_count() <= before;
}

// Names of /dev/shm entries starting with "qcoll".
inline std::set<std::string> qcoll_shm_segments() {
  std::set<std::string> s;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::strncmp(e->d_name, "qcoll", 5) == 0) s.insert(e->d_name);
    closedir(d);
  }
  return s;
}

// "RUNTIME_ERROR x3, PARAM_INVALID (r2)" style summary and the slowest surviving rank.
inline std::string summarize(const std::vector<RankResult>& rs, double* max_seconds) {
  std::string out;
  *max_seconds = 0;
  for (std::size_t r = 0; r < rs.size(); ++r) {
    if (!rs[r].called) {
      out += (out.empty() ? "" : ", ") + std::string("r") + std::to_string(r) + " absent";
      continue;
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, "%sr%zu %s %.2fs", out.empty() ? "" : ", ", r, qcollStatusName(rs[r].status),
                  rs[r].seconds);
    out += buf;
    if (rs[r].seconds > *max_seconds) *max_seconds = rs[r].seconds;
  }
  return out;
}

// One table row on stdout: | case | transport | per-rank status and time | slowest |
inline void print_row(const std::string& transport, const std::string& name, const std::vector<RankResult>& rs) {
  double mx = 0;
  const std::string s = summarize(rs, &mx);
  std::printf("FAULT-MATRIX | %s | %s | %s | %.2f s |\n", name.c_str(), transport.c_str(), s.c_str(), mx);
  std::fflush(stdout);
}

}  // namespace faults
