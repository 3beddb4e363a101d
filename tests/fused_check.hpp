// The check of the fused operators (qcollQuantizeReduceScatter / qcollQuantizeAllReduce) that
// every transport's suite runs: on each rank, the fused call on a float input must give the
// bits of the public quantizer (qcoll/quant.hpp) on that input followed by the quantized
// operator (qcollQuantReduceScatter / qcollQuantAllReduce) on the same group. Both calls are
// collective: every rank of the group runs check_fused_rank with the same case.
//
// Inputs mix moderate values of every binade the input dtype has with the groups that stress
// a quantizer: all-zero groups (+0 and -0), subnormal-only groups, NaN and +-Inf elements,
// groups near the largest finite value and groups of random bit patterns.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "qcoll/contract.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/quant.hpp"

namespace fused {

using qcoll::DType;

using Mode = qcoll::contract::QuantMode;
inline constexpr const auto& kModes = qcoll::contract::kQuantModes;  // kg-int8 .. mx-e5m2
inline constexpr DType kInputs[] = {DType::Float, DType::Float16, DType::BFloat16};
inline constexpr DType kOutputs[] = {DType::Float, DType::Float16, DType::BFloat16};

struct Case {
  Mode mode = kModes[0];
  DType in = DType::Float;
  DType out = DType::BFloat16;
  bool all_reduce = false;
  std::vector<int64_t> shape{8, 1024};  // the input's shape, 2-D or 3-D
  float hif8_target = 0.0f;
  uint32_t seed = 1;

  int64_t rows() const {
    int64_t r = 1;
    for (std::size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
    return r;
  }
  int64_t H() const { return shape.back(); }
  std::string text() const {
    std::string s = std::string(all_reduce ? "all-reduce " : "reduce-scatter ") + mode.name + " " +
                    std::string(qcoll::dtype_name(in)) + "->" + std::string(qcoll::dtype_name(out)) + " [";
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (i) s += ',';
      s += std::to_string(shape[i]);
    }
    return s + "] seed " + std::to_string(seed);
  }
};

// Every mode of `modes` x input dtype x output dtype x operator (reduce-scatter, then
// all-reduce), each once per shape that shapes_of(seed) gives, one seed per case from `seed` on.
template <class Modes, class ShapesOf>
std::vector<Case> combinations(const Modes& modes, uint32_t seed, const ShapesOf& shapes_of) {
  std::vector<Case> cases;
  for (const Mode& m : modes)
    for (DType in : kInputs)
      for (DType out : kOutputs)
        for (bool ar : {false, true})
          for (const std::vector<int64_t>& shape : shapes_of(seed)) {
            Case c;
            c.mode = m;
            c.in = in;
            c.out = out;
            c.all_reduce = ar;
            c.shape = shape;
            c.seed = seed++;
            cases.push_back(c);
          }
  return cases;
}

// The vendor's modes, each combination with the input shape shape_of(case's seed).
template <class ShapeOf>
std::vector<Case> every_combination(uint32_t seed, const ShapeOf& shape_of) {
  return combinations(kModes, seed, [&](uint32_t s) { return std::vector<std::vector<int64_t>>{shape_of(s)}; });
}

// The modes `modes` for n ranks, each combination 2-D (3 rows per rank) and 3-D (B = 3,
// S = n: several one-row chunks per rank), seeds 1, 2, ...
template <class Modes>
std::vector<Case> every_combination_2d_3d(const Modes& modes, int n) {
  return combinations(modes, 1, [n](uint32_t) {
    return std::vector<std::vector<int64_t>>{{3 * n, 1024}, {3, n, 2048}};
  });
}

// One element's bits in the input dtype (fp32: 32 bits, fp16/bf16: 16) with a biased exponent
// drawn from [e_lo, e_hi] and random sign and mantissa.
inline uint32_t element_bits(DType in, std::mt19937& g, int e_lo, int e_hi) {
  const int mbits = in == DType::Float ? 23 : in == DType::Float16 ? 10 : 7;
  const int width = in == DType::Float ? 32 : 16;
  const uint32_t e = static_cast<uint32_t>(e_lo + static_cast<int>(g() % static_cast<uint32_t>(e_hi - e_lo + 1)));
  const uint32_t m = g() & ((1u << mbits) - 1u);
  const uint32_t sign = (g() & 1u) << (width - 1);
  return sign | (e << mbits) | m;
}

// Rank `rank`'s input: rows*H elements of c.in, as bytes.
inline std::vector<uint8_t> make_input(const Case& c, int rank) {
  const DType in = c.in;
  const std::size_t esize = qcoll::dtype_size(in);
  const int bias = in == DType::Float16 ? 15 : 127;
  const int emax = in == DType::Float16 ? 30 : 254;  // largest finite biased exponent
  const int width = in == DType::Float ? 32 : 16;
  const int mbits = in == DType::Float ? 23 : in == DType::Float16 ? 10 : 7;
  const uint32_t nan = ((1u << (width - mbits - 1)) - 1u) << mbits | 1u;
  const uint32_t inf = ((1u << (width - mbits - 1)) - 1u) << mbits;
  std::mt19937 g(c.seed * 7919u + static_cast<uint32_t>(rank) * 104729u + static_cast<uint32_t>(in));
  const std::size_t count = static_cast<std::size_t>(c.rows() * c.H());
  std::vector<uint8_t> bytes(count * esize);
  auto put = [&](std::size_t i, uint32_t v) {
    if (esize == 4) {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    } else {
      const uint16_t h = static_cast<uint16_t>(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  };
  constexpr std::size_t kGroup = 128;  // a KG group; an MX group is a quarter of it
  for (std::size_t g0 = 0; g0 < count; g0 += kGroup) {
    const std::size_t kind = (g0 / kGroup + static_cast<std::size_t>(rank) * 5) % 16;
    // Each group lives around its own binade (the spread of a KG group is what its scale sees).
    const int centre = bias + static_cast<int>(g() % 21) - 10;
    for (std::size_t i = g0; i < g0 + kGroup && i < count; ++i) {
      uint32_t v;
      switch (kind) {
        case 1:
          v = (g() & 1u) ? (1u << (width - 1)) : 0u;
          break;  // +-0
        case 4:
          v = element_bits(in, g, 0, 0);
          break;  // subnormals only
        case 7:
          v = element_bits(in, g, centre - 3, centre + 3);
          break;  // plus NaN/Inf below
        case 9:
          v = in == DType::Float ? static_cast<uint32_t>(g()) : g() & 0xFFFFu;
          break;  // any bits
        case 11:
          v = element_bits(in, g, emax - 1, emax);
          break;  // near the largest finite
        case 13:
          v = element_bits(in, g, 1, 3);
          break;  // tiny normals
        default:
          v = element_bits(in, g, std::max(1, centre - 6), std::min(emax, centre + 6));
          break;
      }
      put(i, v);
    }
    if (kind == 7 && g0 + 40 < count) {
      put(g0 + 3, nan);
      put(g0 + 17, inf);
      put(g0 + 40, inf | (1u << (width - 1)));
    }
  }
  return bytes;
}

// The public quantizer on the whole input of one rank.
inline qcoll::Status quantize_input(const Case& c, const std::vector<uint8_t>& bytes,
                                    qcoll::quant::QuantizedTensor& q) {
  const std::size_t rows = static_cast<std::size_t>(c.rows()), H = static_cast<std::size_t>(c.H());
  qcoll::quant::KgOptions opt;
  opt.hif8_target = c.hif8_target;
  const auto* u16 = reinterpret_cast<const uint16_t*>(bytes.data());
  switch (c.in) {
    case DType::BFloat16:
      return qcoll::quant::quantize_bf16(u16, rows, H, c.mode.x, c.mode.scales, q, opt);
    case DType::Float16:
      return qcoll::quant::quantize_fp16(u16, rows, H, c.mode.x, c.mode.scales, q, opt);
    default:
      return qcoll::quant::quantize(reinterpret_cast<const float*>(bytes.data()), rows, H, c.mode.x, c.mode.scales, q,
                                    opt);
  }
}

inline std::vector<int64_t> output_shape(const Case& c, int n) {
  using qcoll::contract::Op;
  return *qcoll::contract::output_shape(c.all_reduce ? Op::AllReduce : Op::ReduceScatter, c.shape, n);
}

// Both phases of a C operator call; status and message of the first failure.
struct Outcome {
  qcollStatus status = QCOLL_SUCCESS;
  std::string message;
};

// Phase one (prepare(&workspace_size, &executor)), then phase two (run), with a workspace.
template <class Prepare, class Run>
Outcome both_phases(const Prepare& prepare, Run run) {
  uint64_t ws = 0;
  qcollOpExecutor* e = nullptr;
  Outcome o;
  o.status = prepare(&ws, &e);
  if (o.status == QCOLL_SUCCESS) {
    std::vector<uint8_t> w(ws);
    o.status = run(ws ? w.data() : nullptr, ws, e, nullptr);
  }
  if (o.status != QCOLL_SUCCESS) o.message = qcollGetRecentErrMsg();
  return o;
}

inline Outcome run_fused(const Case& c, const char* group, int n, const void* input, void* out) {
  const std::vector<int64_t> oshape = output_shape(c, n);
  qcollTensor* ti = qcollCreateContiguousTensor(c.shape.data(), c.shape.size(), static_cast<qcollDataType>(c.in),
                                                const_cast<void*>(input));
  qcollTensor* to = qcollCreateContiguousTensor(oshape.data(), oshape.size(), static_cast<qcollDataType>(c.out), out);
  qcollQuantConfig cfg{static_cast<qcollDataType>(c.mode.x), static_cast<qcollDataType>(c.mode.scales), c.hif8_target};
  const Outcome o = both_phases(
      [&](uint64_t* ws, qcollOpExecutor** e) {
        return c.all_reduce ? qcollQuantizeAllReduceGetWorkspaceSize(ti, &cfg, group, "sum", to, ws, e)
                            : qcollQuantizeReduceScatterGetWorkspaceSize(ti, &cfg, group, "sum", to, ws, e);
      },
      c.all_reduce ? qcollQuantizeAllReduce : qcollQuantizeReduceScatter);
  qcollDestroyTensor(ti);
  qcollDestroyTensor(to);
  return o;
}

inline Outcome run_quantized(const Case& c, const char* group, int n, const qcoll::quant::QuantizedTensor& q,
                             void* out) {
  const std::vector<int64_t> oshape = output_shape(c, n);
  const std::vector<int64_t> sshape = qcoll::contract::scales_shape(c.mode.scales, c.shape);
  qcollTensor* tx = qcollCreateContiguousTensor(c.shape.data(), c.shape.size(), static_cast<qcollDataType>(c.mode.x),
                                                const_cast<uint8_t*>(q.q.data()));
  qcollTensor* ts = qcollCreateContiguousTensor(sshape.data(), sshape.size(), static_cast<qcollDataType>(c.mode.scales),
                                                const_cast<void*>(q.scales_data()));
  qcollTensor* to = qcollCreateContiguousTensor(oshape.data(), oshape.size(), static_cast<qcollDataType>(c.out), out);
  const Outcome o = both_phases(
      [&](uint64_t* ws, qcollOpExecutor** e) {
        return c.all_reduce ? qcollQuantAllReduceGetWorkspaceSize(tx, ts, group, "sum", to, ws, e)
                            : qcollQuantReduceScatterGetWorkspaceSize(tx, ts, group, "sum", to, ws, e);
      },
      c.all_reduce ? qcollQuantAllReduce : qcollQuantReduceScatter);
  qcollDestroyTensor(tx);
  qcollDestroyTensor(ts);
  qcollDestroyTensor(to);
  return o;
}

// On rank `rank` of the n-rank `group`: the fused call, then quantize-then-operate, compared
// bit for bit. Returns "" when they agree, else what went wrong.
inline std::string check_fused_rank(const Case& c, const char* group, int rank, int n) {
  const std::vector<uint8_t> input = make_input(c, rank);
  std::size_t out_count = 1;
  for (int64_t d : output_shape(c, n)) out_count *= static_cast<std::size_t>(d);
  const std::size_t obytes = out_count * qcoll::dtype_size(c.out);
  std::vector<uint8_t> fused_out(obytes, 0xA5), ref_out(obytes, 0x5A);
  const Outcome f = run_fused(c, group, n, input.data(), fused_out.data());
  qcoll::quant::QuantizedTensor q;
  const qcoll::Status qs = quantize_input(c, input, q);
  if (!qs.ok()) return c.text() + ": the public quantizer failed: " + qs.message;
  const Outcome r = run_quantized(c, group, n, q, ref_out.data());
  if (f.status != QCOLL_SUCCESS) return c.text() + ": fused call failed: " + f.message;
  if (r.status != QCOLL_SUCCESS) return c.text() + ": quantized call failed: " + r.message;
  if (std::memcmp(fused_out.data(), ref_out.data(), obytes) != 0) {
    const std::size_t es = qcoll::dtype_size(c.out);
    for (std::size_t i = 0; i < out_count; ++i) {
      if (std::memcmp(fused_out.data() + i * es, ref_out.data() + i * es, es) == 0) continue;
      uint32_t a = 0, b = 0;
      std::memcpy(&a, fused_out.data() + i * es, es);
      std::memcpy(&b, ref_out.data() + i * es, es);
      char buf[96];
      std::snprintf(buf, sizeof buf, ": rank %d element %zu: fused 0x%x vs quantize-then-operate 0x%x", rank, i, a, b);
      return c.text() + buf;
    }
  }
  return "";
}

}  // namespace fused
