// The test oracle: every reference decode, encode, dequantize and sum the C++ tests, the
// MPI tests and the fuzz targets compare the library with. Written from the formulas of
// docs/contract.md (§formats, §encoders, §numerics) in double or integer arithmetic, and
// independent of the library: it includes only the public dtype enumeration and never calls
// a qcoll codec, table, quantizer or kernel, so a bug there cannot hide in the reference.
// Its own correctness is pinned by the contract's vectors (§vectors) in the suites' self-checks
// (KernelReference, OpsReference, FormatsDecode.Spec6Vectors, ...).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "fp4_oracle.hpp"
#include "qcoll/dtype.hpp"

namespace oracle {

using qcoll::DType;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline double p2(int e) { return std::ldexp(1.0, e); }

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float bf16_value(uint16_t b) { return bits_f32(uint32_t(b) << 16); }

// ---- Decoders (§formats): the exact value of each code, NaN as a quiet NaN -----------------

inline double decode_int8(uint8_t b) { return b < 128 ? double(b) : double(b) - 256.0; }

inline double decode_e4m3fn(uint8_t b) {
  const double s = (b & 0x80) ? -1.0 : 1.0;
  const int e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return kNaN;
  if (e == 0) return s * m * p2(-9);
  return s * (1.0 + m / 8.0) * p2(e - 7);
}

inline double decode_e5m2(uint8_t b) {
  const double s = (b & 0x80) ? -1.0 : 1.0;
  const int e = (b >> 2) & 31, m = b & 3;
  if (e == 31) return m == 0 ? s * kInf : kNaN;
  if (e == 0) return s * m * p2(-16);
  return s * (1.0 + m / 4.0) * p2(e - 15);
}

inline double decode_e8m0(uint8_t b) { return b == 0xFF ? kNaN : p2(int(b) - 127); }

// The §formats-hifloat8 table: dot field, exponent magnitude, exponent sign bit, mantissa.
inline double decode_hif8(uint8_t b) {
  if (b == 0x00) return 0.0;
  if (b == 0x80) return kNaN;
  const double s = (b & 0x80) ? -1.0 : 1.0;
  const int v = b & 0x7F;
  if (v == 0x6F) return s * kInf;
  if (v < 0x08) return s * p2(v - 23);  // 0000: denormal
  int mag, mbits, m;
  bool neg;
  if (v >= 0x60) {
    mag = 8 + ((v >> 1) & 7), neg = v & 0x10, mbits = 1, m = v & 1;
  } else if (v >= 0x40) {
    mag = 4 + ((v >> 2) & 3), neg = v & 0x10, mbits = 2, m = v & 3;
  } else if (v >= 0x20) {
    mag = 2 + ((v >> 3) & 1), neg = v & 0x10, mbits = 3, m = v & 7;
  } else if (v >= 0x10) {
    mag = 1, neg = v & 0x08, mbits = 3, m = v & 7;
  } else {
    mag = 0, neg = false, mbits = 3, m = v & 7;
  }
  return s * (1.0 + m / double(1 << mbits)) * p2(neg ? -mag : mag);
}

// A 16-bit IEEE-like code: sign, 15 - kMbits exponent bits, kMbits mantissa bits; IEEE
// binary16 (kMbits 10) and bfloat16 (kMbits 7).
template <int kMbits>
double decode_ieee16(uint16_t h) {
  constexpr int kEbits = 15 - kMbits, kBias = (1 << (kEbits - 1)) - 1, kEmax = (1 << kEbits) - 1;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  const int e = (h >> kMbits) & kEmax, m = h & ((1 << kMbits) - 1);
  if (e == kEmax) return m ? kNaN : s * kInf;
  if (e == 0) return s * m * p2(1 - kBias - kMbits);
  return s * ((1 << kMbits) + m) * p2(e - kBias - kMbits);
}
inline double decode_fp16(uint16_t h) { return decode_ieee16<10>(h); }
inline double decode_bf16(uint16_t b) { return decode_ieee16<7>(b); }

// The 8-bit formats by dtype, and the 4-bit ones (code b in 0..15, tests/fp4_oracle.hpp);
// NaN for any other dtype.
inline double decode(DType t, uint8_t b) {
  switch (t) {
    case DType::Float4E2M1:
      return fp4_oracle::value(fp4_oracle::kE2M1, b & 0xF);
    case DType::Float4E1M2:
      return fp4_oracle::value(fp4_oracle::kE1M2, b & 0xF);
    case DType::Int8:
      return decode_int8(b);
    case DType::HiFloat8:
      return decode_hif8(b);
    case DType::Float8E4M3FN:
      return decode_e4m3fn(b);
    case DType::Float8E5M2:
      return decode_e5m2(b);
    case DType::Float8E8M0:
      return decode_e8m0(b);
    default:
      return kNaN;
  }
}
// The same value in fp32 (exact: every 8-bit and 4-bit code is representable).
inline float decode_f(DType t, uint8_t b) { return static_cast<float>(decode(t, b)); }

inline double max_finite(DType t) {
  switch (t) {
    case DType::Int8:
      return 127;
    case DType::Float8E4M3FN:
      return 448;
    case DType::Float8E5M2:
      return 57344;
    case DType::HiFloat8:
      return 32768;
    default:
      return 0;
  }
}

// ---- Encoders (§encoders) --------------------------------------------------------------------

// Round half to even, written out (no reliance on the FP environment).
inline double round_half_even(double r) {
  const double f = std::floor(r);
  const double d = r - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return std::fmod(f, 2.0) == 0.0 ? f : f + 1;
}

// INT8 encode: NaN -> 0, round half to even, clamp to [lo, 127] (-128 for the codec, -127 for
// the symmetric quantizer code).
inline int encode_int8(double v, int lo = -128) {
  if (std::isnan(v)) return 0;
  return static_cast<int>(std::clamp(round_half_even(v), double(lo), 127.0));
}

// E8M0 of a value: the nearest power of two, the exponent rounded up when the mantissa is
// >= 1.5; then the documented clamps (docs/formats.md): sign ignored, NaN/Inf -> 0xFF, zero
// and tiny -> 0x00, huge -> 0xFE.
inline unsigned encode_e8m0(double v) {
  if (std::isnan(v) || std::isinf(v)) return 0xFF;
  const double a = std::fabs(v);
  if (a == 0) return 0x00;
  int k;
  const double m = std::frexp(a, &k);  // a = m * 2^k, m in [0.5, 1)
  int e = k - 1;                       // a = (2m) * 2^e, 2m in [1, 2)
  if (2 * m >= 1.5) ++e;
  if (e < -127) return 0x00;
  if (e > 127) return 0xFE;
  return static_cast<unsigned>(e + 127);
}

// One finite, non-negative representable value with its code.
struct Point {
  double value;
  unsigned code;
};

// The non-negative finite values of a format sorted ascending (one code per value: +0
// only), from a decoder of codes 0 .. ncodes-1.
template <class Decode>
std::vector<Point> nonnegative_points(Decode decode, unsigned ncodes = 256) {
  std::vector<Point> pts;
  for (unsigned b = 0; b < ncodes; ++b) {
    const double v = decode(b);
    if (std::isnan(v) || std::isinf(v) || v < 0 || (v == 0 && b != 0)) continue;
    pts.push_back({v, b});
  }
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& c) { return a.value < c.value; });
  return pts;
}

enum class Ties { ToEven, AwayFromZero };

// Brute-force nearest-value encoder over the sorted non-negative points plus a virtual
// next value `beyond` (one more binade): returns the chosen magnitude code, or nullopt
// for overflow (|x| rounds to `beyond` or lies above it). Even = code with LSB 0; the
// virtual value's code is max_code + 1.
inline std::optional<unsigned> nearest(const std::vector<Point>& pts, double beyond, Ties ties, double ax) {
  if (ax > beyond) return std::nullopt;
  const Point virt{beyond, pts.back().code + 1};
  auto it = std::lower_bound(pts.begin(), pts.end(), ax, [](const Point& p, double x) { return p.value < x; });
  Point chosen;
  if (it == pts.begin()) {
    chosen = *it;
  } else {
    const Point hi = it == pts.end() ? virt : *it, lo = *(it - 1);
    const double dlo = ax - lo.value, dhi = hi.value - ax;
    if (dlo < dhi)
      chosen = lo;
    else if (dhi < dlo)
      chosen = hi;
    else if (ties == Ties::AwayFromZero)
      chosen = hi;
    else
      chosen = (lo.code & 1) == 0 ? lo : hi;
  }
  if (chosen.value == beyond) return std::nullopt;
  return chosen.code;
}

// The saturating encoder the quantizers use (§encoders): NaN -> the format's NaN
// (E4M3FN 0x7F, E5M2 0x7E, HiF8 0x80), overflow and +-Inf -> +-max finite, otherwise the
// nearest code with r's sign (HiF8: no negative zero). INT8 is the symmetric quantizer code,
// clamped to [-127, 127].
inline uint8_t encode_sat(DType t, double r) {
  if (t == DType::Int8) return static_cast<uint8_t>(static_cast<int8_t>(encode_int8(r, -127)));
  if (std::isnan(r)) return t == DType::Float8E4M3FN ? 0x7F : t == DType::Float8E5M2 ? 0x7E : 0x80;
  const bool hif8 = t == DType::HiFloat8;
  static const std::vector<Point> e4m3 = nonnegative_points([](unsigned b) { return decode_e4m3fn(uint8_t(b)); });
  static const std::vector<Point> e5m2 = nonnegative_points([](unsigned b) { return decode_e5m2(uint8_t(b)); });
  static const std::vector<Point> hif = nonnegative_points([](unsigned b) { return decode_hif8(uint8_t(b)); });
  const auto& pts = hif8 ? hif : t == DType::Float8E4M3FN ? e4m3 : e5m2;
  const double maxf = max_finite(t);
  const double ax = std::min(std::fabs(r), maxf);  // saturating: never the virtual value
  const unsigned mag = *nearest(pts, 2 * maxf, hif8 ? Ties::AwayFromZero : Ties::ToEven, ax);
  const bool neg = std::signbit(r) && !(hif8 && mag == 0);
  return static_cast<uint8_t>(mag | (neg ? 0x80u : 0u));
}

// Equal codes, where any two NaN codes count as equal (the sign of a NaN is not specified).
inline bool same_code(DType t, uint8_t a, uint8_t b) {
  if (t != DType::Int8 && std::isnan(decode(t, a)) && std::isnan(decode(t, b))) return true;
  return a == b;
}

// ---- Output cast (§numerics-output-cast) -----------------------------------------------------

// Rounds the finite v to `mant` fraction bits with minimum exponent `emin` (below it a
// fixed quantum), ties to even; exact in double for these widths.
inline double round_to_format(double v, int mant, int emin) {
  if (v == 0) return v;
  int e;
  std::frexp(std::fabs(v), &e);  // |v| = f * 2^e, f in [0.5, 1)
  const double quantum = p2(std::max(e - 1, emin) - mant);
  const double q = v / quantum;  // exact: a power-of-two scaling
  const double f = std::floor(q);
  const double d = q - f;
  const double r = d > 0.5 ? f + 1 : d < 0.5 ? f : (std::fmod(f, 2.0) == 0.0 ? f : f + 1);
  return std::copysign(r * quantum, v);  // a value rounding to zero keeps its sign
}

// fp32 -> fp16 / bf16 bits: nearest, ties to even, subnormals kept, overflow to +-Inf,
// NaN -> the kernels' canonical quiet NaN (§numerics-nan: 0x7E00 / 0x7FC0).
inline uint16_t to_fp16(float f) {
  if (std::isnan(f)) return 0x7E00;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::isinf(f) ? kInf : std::fabs(round_to_format(f, 10, -14));
  if (a >= 65536.0) return sign | 0x7C00;
  if (a < p2(-14)) return sign | static_cast<uint16_t>(a / p2(-24));
  int e;
  std::frexp(a, &e);  // a = f * 2^e
  const int exp = e - 1;
  const auto mant = static_cast<uint16_t>(a / p2(exp - 10) - 1024.0);
  return sign | static_cast<uint16_t>((exp + 15) << 10) | mant;
}
inline uint16_t to_bf16(float f) {
  if (std::isnan(f)) return 0x7FC0;
  const double r = std::isinf(f) ? f : round_to_format(f, 7, -126);
  if (std::fabs(r) >= p2(128)) return std::signbit(f) ? 0xFF80 : 0x7F80;
  return static_cast<uint16_t>(f32_bits(static_cast<float>(r)) >> 16);  // r is exact in fp32
}

// Writes the accumulator cast to `out` at p (fp32 NaN canonical too: 0x7FC00000).
inline void store(DType out, float acc, uint8_t* p) {
  if (out == DType::Float) {
    const uint32_t u = std::isnan(acc) ? 0x7FC00000u : f32_bits(acc);
    std::memcpy(p, &u, 4);
  } else {
    const uint16_t h = out == DType::Float16 ? to_fp16(acc) : to_bf16(acc);
    std::memcpy(p, &h, 2);
  }
}

inline bool is_nan_bits(DType out, const uint8_t* p) {
  if (out == DType::Float) {
    uint32_t u;
    std::memcpy(&u, p, 4);
    return (u & 0x7FFFFFFF) > 0x7F800000;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (out == DType::Float16) return (h & 0x7FFF) > 0x7C00;
  return (h & 0x7FFF) > 0x7F80;
}

// Equal as results: same bits, or both NaN (for suites that do not pin the NaN bits).
inline bool same_result(DType out, const uint8_t* a, const uint8_t* b) {
  if (std::memcmp(a, b, qcoll::dtype_size(out)) == 0) return true;
  return is_nan_bits(out, a) && is_nan_bits(out, b);
}

// ---- Dequantize and sum (§modes, §numerics) ------------------------------------------------

// Elements per scale: 128 for fp32 scales (KG), 32 for E8M0 scales (MX).
inline std::size_t group_size(DType scales) { return scales == DType::Float ? 128 : 32; }

// The scale of flat element i of one rank: fp32 scales[i/128] or E8M0 scales[i/32].
inline float scale_at(DType sdt, const uint8_t* scales, std::size_t i) {
  if (sdt == DType::Float) {
    float s;
    std::memcpy(&s, scales + (i / 128) * 4, 4);
    return s;
  }
  return static_cast<float>(decode_e8m0(scales[i / 32]));
}

// The code of flat element i of x: byte i, or for a 4-bit x nibble i of the packed data (the
// even flat index in bits 0-3, contract.md §ext-fp4-layout).
inline uint8_t x_code(DType xdt, const uint8_t* x, std::size_t i) {
  if (xdt == DType::Float4E2M1 || xdt == DType::Float4E1M2) return (x[i / 2] >> (4 * (i % 2))) & 0xF;
  return x[i];
}

// One fp32 multiply: fp32(decode(code)) * fp32(scale).
inline float dequant(DType xdt, uint8_t code, float scale) {
  volatile float d = decode_f(xdt, code);  // volatile: one rounded fp32 operation at a time
  d = d * scale;
  return d;
}

// out[i - begin] = cast(((0 + d_0[i]) + d_1[i]) + ... + d_{n-1}[i]) for flat elements
// i in [begin, begin + count), where d_k[i] = dequant(x[k][i], scale of element i of rank k).
inline void reduce(DType xdt, DType sdt, DType odt, const uint8_t* const* x, const uint8_t* const* scales,
                   std::size_t n, std::size_t begin, std::size_t count, uint8_t* out) {
  const std::size_t osz = qcoll::dtype_size(odt);
  for (std::size_t i = begin; i < begin + count; ++i) {
    volatile float acc = 0.0f;
    for (std::size_t k = 0; k < n; ++k) {
      const float d = dequant(xdt, x_code(xdt, x[k], i), scale_at(sdt, scales[k], i));
      acc = acc + d;
    }
    store(odt, acc, out + (i - begin) * osz);
  }
}

// Rows [row0, row0 + nrows) of the sum over all ranks' (x, scales) of H columns.
inline std::vector<uint8_t> reduce_rows(DType xdt, DType sdt, DType odt, const std::vector<std::vector<uint8_t>>& x,
                                        const std::vector<std::vector<uint8_t>>& scales, std::size_t H,
                                        std::size_t row0, std::size_t nrows) {
  std::vector<const uint8_t*> xp, sp;
  for (const auto& v : x) xp.push_back(v.data());
  for (const auto& v : scales) sp.push_back(v.data());
  std::vector<uint8_t> out(nrows * H * qcoll::dtype_size(odt));
  reduce(xdt, sdt, odt, xp.data(), sp.data(), x.size(), row0 * H, nrows * H, out.data());
  return out;
}

// ---- Test data -----------------------------------------------------------------------------

// Gaussian test data with a spread of magnitudes per group (fixed seed).
inline std::vector<float> random_values(std::size_t n, uint32_t seed, double sigma = 1.0) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, static_cast<float>(sigma));
  std::vector<float> v(n);
  for (auto& x : v) x = nd(gen);
  return v;
}

}  // namespace oracle
