// Support for the MPI test programs (run under mpirun, one rank per process): a pass/fail
// tally that every rank agrees on, deterministic operator inputs, and the operator calls.
#pragma once
#include <mpi.h>

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "oracle.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/qcoll.h"

namespace mpitest {

// Counts checks; failures are printed at once with the rank.
class Tally {
 public:
  explicit Tally(int rank) : rank_(rank) {}
  bool check(bool ok, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    ++checks_;
    if (!ok) {
      ++failures_;
      char buf[1024];
      va_list ap;
      va_start(ap, fmt);
      std::vsnprintf(buf, sizeof buf, fmt, ap);
      va_end(ap);
      std::printf("[rank %d] FAIL: %s\n", rank_, buf);
      std::fflush(stdout);
    }
    return ok;
  }
  // Collective: prints the summary on rank 0; returns the process exit code (0 = all passed).
  int finish(const char* program, MPI_Comm comm = MPI_COMM_WORLD) const {
    long long mine[2] = {checks_, failures_}, sum[2] = {0, 0};
    MPI_Allreduce(mine, sum, 2, MPI_LONG_LONG, MPI_SUM, comm);
    int size = 0;
    MPI_Comm_size(comm, &size);
    if (rank_ == 0) {
      std::printf("%s, %d processes: %lld checks, %lld failed -> %s\n", program, size, sum[0], sum[1],
                  sum[1] == 0 ? "PASS" : "FAIL");
      std::fflush(stdout);
    }
    return sum[1] == 0 ? 0 : 1;
  }
  long long failures() const { return failures_; }
  long long checks() const { return checks_; }

 private:
  int rank_;
  long long checks_ = 0, failures_ = 0;
};

// A quantization mode and output type of the operators (contract.md §modes).
struct Mode {
  qcoll::DType x, scales, out;
  std::string name() const {
    return std::string(qcoll::dtype_name(x)) + "/" + std::string(qcoll::dtype_name(scales)) + "->" +
           std::string(qcoll::dtype_name(out));
  }
  std::size_t scale_bytes(std::size_t rows, std::size_t H) const {
    return scales == qcoll::DType::Float ? rows * H / 128 * 4 : rows * H / 32;
  }
  // x's bytes: one a byte, a 4-bit x packed two a byte (contract.md §ext-fp4-layout).
  std::size_t x_bytes(std::size_t rows, std::size_t H) const { return qcoll::dtype_bytes(x, rows * H); }
};

inline std::vector<Mode> all_modes() {
  using qcoll::DType;
  std::vector<Mode> m;
  for (DType out : {DType::Float, DType::Float16, DType::BFloat16}) {
    for (DType x : {DType::Int8, DType::HiFloat8, DType::Float8E4M3FN, DType::Float8E5M2})
      m.push_back({x, DType::Float, out});
    for (DType x : {DType::Float8E4M3FN, DType::Float8E5M2}) m.push_back({x, DType::Float8E8M0, out});
  }
  return m;
}

// The extended contract's 4-bit modes (contract.md §ext-fp4): E2M1 and E1M2 x, KG and MX
// scales, every output dtype.
inline std::vector<Mode> fp4_modes() {
  using qcoll::DType;
  std::vector<Mode> m;
  for (DType out : {DType::Float, DType::BFloat16, DType::Float16})
    for (DType s : {DType::Float, DType::Float8E8M0})
      for (DType x : {DType::Float4E2M1, DType::Float4E1M2}) m.push_back({x, s, out});
  return m;
}

// Inputs of one rank, a function of (seed, rank) only, so every process can make every rank's.
struct Inputs {
  std::vector<uint8_t> x, scales;
};

inline Inputs make_inputs(const Mode& m, std::size_t BS, std::size_t H, uint64_t seed, int rank) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(rank) * 0xBF58476D1CE4E5B9ULL + 1;
  auto next = [&s] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  Inputs in;
  in.x.resize(m.x_bytes(BS, H));
  for (auto& b : in.x) b = static_cast<uint8_t>(next() >> 24);
  in.scales.resize(m.scale_bytes(BS, H));
  if (m.scales == qcoll::DType::Float) {
    for (std::size_t i = 0; i < in.scales.size() / 4; ++i) {
      const uint64_t u = next();
      float v = std::ldexp(1.0f + static_cast<float>(u % 256) / 256.0f, static_cast<int>((u >> 8) % 24) - 12);
      if ((u >> 20) & 1) v = -v;
      if ((u >> 21) % 64 == 0) v = 0.0f;
      std::memcpy(in.scales.data() + i * 4, &v, 4);
    }
  } else {
    for (auto& b : in.scales) b = static_cast<uint8_t>(110 + (next() >> 32) % 34);
  }
  return in;
}

inline qcollDataType c_dtype(qcoll::DType t) { return static_cast<qcollDataType>(static_cast<int32_t>(t)); }

enum class Op { ReduceScatter, AllReduce };

// The message of the last failed call_op on this thread (qcollGetRecentErrMsg is reset by the
// tensor calls that follow the operator).
inline std::string& last_error() {
  thread_local std::string m;
  return m;
}
inline const char* op_name(Op op) { return op == Op::ReduceScatter ? "reduce-scatter" : "all-reduce"; }

// Both phases of one operator call on this rank's inputs; output bytes in `out`.
// `phase` tells which phase failed (1 or 2; 0 on success). ndim 3: x is (2, BS/2, H) (its
// scales 3-D too; the all-reduce's output shaped like x).
inline qcollStatus call_op(Op op, const Mode& m, Inputs& in, std::size_t BS, std::size_t H, int n, const char* group,
                           std::vector<uint8_t>& out, int* phase = nullptr, int ndim = 2) {
  const std::vector<int64_t> xd = ndim == 3
                                      ? std::vector<int64_t>{2, static_cast<int64_t>(BS / 2), static_cast<int64_t>(H)}
                                      : std::vector<int64_t>{static_cast<int64_t>(BS), static_cast<int64_t>(H)};
  const std::vector<int64_t> sd = qcoll::contract::scales_shape(m.scales, xd);
  const std::size_t out_rows = op == Op::ReduceScatter ? BS / n : BS;
  const std::vector<int64_t> od =
      op == Op::AllReduce ? xd : std::vector<int64_t>{static_cast<int64_t>(out_rows), static_cast<int64_t>(H)};
  out.assign(out_rows * H * qcoll::dtype_size(m.out), 0xA5);
  qcollTensor* x = qcollCreateContiguousTensor(xd.data(), xd.size(), c_dtype(m.x), in.x.data());
  qcollTensor* s = qcollCreateContiguousTensor(sd.data(), sd.size(), c_dtype(m.scales), in.scales.data());
  qcollTensor* o = qcollCreateContiguousTensor(od.data(), od.size(), c_dtype(m.out), out.data());
  uint64_t ws = 0;
  qcollOpExecutor* e = nullptr;
  qcollStatus st = op == Op::ReduceScatter ? qcollQuantReduceScatterGetWorkspaceSize(x, s, group, "sum", o, &ws, &e)
                                           : qcollQuantAllReduceGetWorkspaceSize(x, s, group, "sum", o, &ws, &e);
  if (phase) *phase = st == QCOLL_SUCCESS ? 0 : 1;
  if (st == QCOLL_SUCCESS) {
    std::vector<uint8_t> w(ws);
    st = op == Op::ReduceScatter ? qcollQuantReduceScatter(ws ? w.data() : nullptr, ws, e, nullptr)
                                 : qcollQuantAllReduce(ws ? w.data() : nullptr, ws, e, nullptr);
    if (phase && st != QCOLL_SUCCESS) *phase = 2;
  }
  last_error() = st == QCOLL_SUCCESS ? "" : qcollGetRecentErrMsg();
  qcollDestroyTensor(x);
  qcollDestroyTensor(s);
  qcollDestroyTensor(o);
  return st;
}

// The expected output of `rank` from the contract's formulas (tests/oracle.hpp).
inline std::vector<uint8_t> expected(Op op, const Mode& m, const std::vector<Inputs>& all, std::size_t BS,
                                     std::size_t H, int rank) {
  std::vector<std::vector<uint8_t>> xs, ss;
  for (const Inputs& in : all) {
    xs.push_back(in.x);
    ss.push_back(in.scales);
  }
  const int n = static_cast<int>(all.size());
  return op == Op::ReduceScatter ? oracle::reduce_rows(m.x, m.scales, m.out, xs, ss, H, rank * BS / n, BS / n)
                                 : oracle::reduce_rows(m.x, m.scales, m.out, xs, ss, H, 0, BS);
}

// Index of the first element that differs (NaN equals NaN), or -1.
inline long long first_difference(const Mode& m, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return 0;
  const std::size_t sz = qcoll::dtype_size(m.out);
  for (std::size_t i = 0; i < a.size() / sz; ++i) {
    if (!oracle::same_result(m.out, a.data() + i * sz, b.data() + i * sz)) return static_cast<long long>(i);
  }
  return -1;
}

}  // namespace mpitest
