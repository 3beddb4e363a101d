// The SIMD quantizers against the reference quantizers (quantize_scalar), bit for bit, on
// every SIMD target this CPU runs: KG int8/hifloat8/e4m3/e5m2 and MX e4m3/e5m2, from fp32,
// bf16 and fp16 rows; random data of several distributions and magnitudes, random bit
// patterns, edge groups (zero, NaN, +-Inf, subnormal, huge, scale underflow, rounding
// midpoints), HiF8 targets, odd row counts; and the public functions over 1..4 threads,
// in other rounding modes and under flush-to-zero.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "qcoll/formats.hpp"
#include "qcoll/quant.hpp"
#include "quant/quantize_job.hpp"
#include "quant_inputs.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

using qcoll::DType;
namespace qq = qcoll::quant;
namespace qd = qcoll::quant::detail;

namespace {

using quant_inputs::Input;
using quant_inputs::make_input;
using quant_inputs::normal_values;
using quant_inputs::random_bits;

constexpr DType kKgTypes[] = {DType::Int8, DType::HiFloat8, DType::Float8E4M3FN, DType::Float8E5M2};
constexpr DType kMxTypes[] = {DType::Float8E4M3FN, DType::Float8E5M2};
constexpr DType kInputs[] = {DType::Float, DType::BFloat16, DType::Float16};

float f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

struct Output {
  std::vector<uint8_t> q;
  std::vector<uint8_t> scales;  // raw bytes (fp32 bits for KG)
};

std::size_t scale_bytes(DType scales_dtype, std::size_t elements) {
  return scales_dtype == DType::Float ? elements / 128 * 4 : elements / 32;
}

qd::QuantJob make_job(const Input& x, std::size_t H, DType x_dtype, DType scales_dtype, Output& out,
                      float hif8_target = 0.0f) {
  qd::QuantJob job;
  job.in_dtype = x.dtype;
  job.x = x.data();
  job.H = H;
  job.rows = x.size() / H;
  job.x_dtype = x_dtype;
  job.scales_dtype = scales_dtype;
  job.target = scales_dtype == DType::Float ? qd::kg_target(x_dtype, hif8_target) : 0.0f;
  out.q.assign(x.size(), 0xA5);
  out.scales.assign(scale_bytes(scales_dtype, x.size()), 0xA5);
  job.q = out.q.data();
  job.scales = out.scales.data();
  return job;
}

std::string describe(const std::string& target, DType in, DType x, DType s, std::size_t H, float hif8_target) {
  return target + " in=" + std::string(qcoll::dtype_name(in)) + " x=" + std::string(qcoll::dtype_name(x)) +
         (s == DType::Float ? " KG" : " MX") + " H=" + std::to_string(H) +
         (hif8_target != 0.0f ? " target=" + std::to_string(hif8_target) : "");
}

// First difference of two outputs, for the failure message.
std::string first_diff(const Output& got, const Output& want, const std::vector<float>* values) {
  for (std::size_t i = 0; i < want.q.size(); ++i) {
    if (got.q[i] != want.q[i]) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "q[%zu] = 0x%02X, reference 0x%02X", i, got.q[i], want.q[i]);
      std::string s = buf;
      if (values != nullptr && i < values->size()) {
        std::snprintf(buf, sizeof buf, " (v = %a, bits 0x%08X)", (*values)[i], bits((*values)[i]));
        s += buf;
      }
      return s;
    }
  }
  for (std::size_t i = 0; i < want.scales.size(); ++i)
    if (got.scales[i] != want.scales[i]) return "scale byte " + std::to_string(i) + " differs";
  return "no difference";
}

std::vector<std::string> targets() {
  const std::vector<std::string> t = qd::quantize_simd_targets();
  EXPECT_FALSE(t.empty());
  return t;
}

// Every SIMD target vs the reference, for one input and mode.
void expect_targets_match(const Input& x, std::size_t H, DType x_dtype, DType scales_dtype, float hif8_target = 0.0f,
                          const std::vector<float>* values = nullptr) {
  Output want;
  qd::quantize_scalar(make_job(x, H, x_dtype, scales_dtype, want, hif8_target));
  for (const std::string& t : targets()) {
    Output got;
    ASSERT_TRUE(qd::quantize_on_target(t, make_job(x, H, x_dtype, scales_dtype, got, hif8_target)));
    ASSERT_TRUE(got.q == want.q && got.scales == want.scales)
        << describe(t, x.dtype, x_dtype, scales_dtype, H, hif8_target) << ": "
        << first_diff(got, want, x.dtype == DType::Float ? values : nullptr);
  }
}

// All modes (KG x 4 dtypes, MX x 2) for fp32 values given as rows of H.
void expect_all_modes_match(const std::vector<float>& v, std::size_t H, DType in = DType::Float) {
  const Input x = make_input(in, v);
  for (DType t : kKgTypes) expect_targets_match(x, H, t, DType::Float, 0.0f, &v);
  for (DType t : kMxTypes) expect_targets_match(x, H, t, DType::Float8E8M0, 0.0f, &v);
}

// Random magnitudes 2^[lo, hi) with random mantissas and signs.
std::vector<float> log_uniform(std::size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> e(lo, hi - 1);
  std::uniform_real_distribution<float> m(1.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = std::ldexp(m(gen), e(gen)) * (gen() & 1 ? -1.0f : 1.0f);
  return v;
}

}  // namespace

TEST(QuantSimd, TargetsListed) {
  const auto t = targets();
  for (const auto& name : t) std::printf("quantize SIMD target %s\n", name.c_str());
  std::printf("quantize_target() = %s\n", qq::quantize_target());
  EXPECT_EQ(std::string(qq::quantize_target()), t.front());
  Output out;
  const Input x = make_input(DType::Float, std::vector<float>(128, 1.0f));
  EXPECT_FALSE(qd::quantize_on_target("NO_SUCH_TARGET", make_job(x, 128, DType::Int8, DType::Float, out)));
  EXPECT_EQ(out.q[0], 0xA5);  // nothing written
}

TEST(QuantSimd, RandomDistributionsAndMagnitudes) {
  uint32_t seed = 1;
  for (DType in : kInputs) {
    for (float sigma : {1.0f, 1e-3f, 1e3f, 0x1p-100f, 0x1p-126f, 0x1p-140f, 0x1p100f, 0x1p120f}) {
      SCOPED_TRACE(sigma);
      expect_all_modes_match(normal_values(7 * 640, seed++, sigma), 640, in);  // 7 rows
    }
    expect_all_modes_match(log_uniform(3 * 1024, seed++, -30, 30), 1024, in);
    expect_all_modes_match(log_uniform(5 * 256, seed++, -149, 128), 256, in);
    expect_all_modes_match(random_bits(3 * 384, seed++), 384, in);
  }
}

TEST(QuantSimd, RandomBitPatternsFp32) {
  const auto v = random_bits(64 * 1024, 77);
  expect_all_modes_match(v, 1024);
}

TEST(QuantSimd, EveryHalfPrecisionBitPattern) {
  // All 65536 bf16 and fp16 codes (NaNs, Infs, subnormals, both zeros), in their own order
  // and shuffled across groups.
  for (DType in : {DType::BFloat16, DType::Float16}) {
    for (int shuffle = 0; shuffle < 2; ++shuffle) {
      const Input x = quant_inputs::every_half_pattern(in, shuffle != 0);
      for (DType t : kKgTypes) expect_targets_match(x, 512, t, DType::Float);
      for (DType t : kMxTypes) expect_targets_match(x, 512, t, DType::Float8E8M0);
    }
  }
}

TEST(QuantSimd, EncodersOnAStrideOfAllFp32) {
  // Groups whose scale is exactly 1 (KG: one element equal to the target; MX: one element
  // 2^emax_elem, other magnitudes below 2^(emax_elem + 1)), so the encoders see the values
  // themselves: a stride through all 2^32 patterns, magnitudes folded below the limit.
  struct Mode {
    DType x;
    DType s;
    float one;    // the element that makes the scale 1
    float limit;  // other elements are below it (amax stays `one`)
  };
  const Mode modes[] = {
      {DType::Int8, DType::Float, 127.0f, 127.0f},
      {DType::HiFloat8, DType::Float, 32768.0f, 32768.0f},
      {DType::Float8E4M3FN, DType::Float, 448.0f, 448.0f},
      {DType::Float8E5M2, DType::Float, 57344.0f, 57344.0f},
      {DType::Float8E4M3FN, DType::Float8E8M0, 256.0f, 512.0f},
      {DType::Float8E5M2, DType::Float8E8M0, 32768.0f, 65536.0f},
  };
  for (const Mode& m : modes) {
    const std::size_t group = m.s == DType::Float ? 128 : 32;
    std::vector<float> v;
    v.reserve(1 << 20);
    for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) {
      if (v.size() % group == 0) v.push_back(m.one);
      float x = f32(static_cast<uint32_t>(b));
      if (std::isfinite(x) && !(std::fabs(x) < m.limit)) x = std::fmod(x, m.limit);
      v.push_back(x);
    }
    v.resize(v.size() / 1024 * 1024);
    const Input x = make_input(DType::Float, v);
    // HiF8 with target 32768 sees every HiF8 binade, denormals included.
    expect_targets_match(x, 1024, m.x, m.s, m.x == DType::HiFloat8 ? 32768.0f : 0.0f, &v);
  }
}

TEST(QuantSimd, RoundingMidpoints) {
  // Scale 1 again; elements at the midpoints between neighbouring codes and one fp32 ulp
  // either side of them (ties: even for INT8/E4M3/E5M2, away from zero for HiF8).
  for (DType t : kKgTypes) {
    const float target = t == DType::HiFloat8 ? 32768.0f : qcoll::formats::max_finite(t);
    std::vector<float> codes;
    for (int c = 0; c < 256; ++c) {
      const float d = qcoll::formats::decode8(t, static_cast<uint8_t>(c));
      if (std::isfinite(d) && d >= 0) codes.push_back(d);
    }
    std::sort(codes.begin(), codes.end());
    std::vector<float> v;
    for (std::size_t i = 0; i + 1 < codes.size(); ++i) {
      const float mid = codes[i] + (codes[i + 1] - codes[i]) / 2;  // exact: one more bit
      for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f), codes[i]})
        for (float s : {1.0f, -1.0f}) {
          if (v.size() % 128 == 0) v.push_back(target);
          v.push_back(s * x);
        }
    }
    // Beyond the largest code: the overflow midpoint and above (saturate).
    for (float x : {target * 1.0625f, target * 1.125f, target * 1.25f, target * 1.5f}) {
      v.push_back(x);
      v.push_back(-x);
    }
    v.resize((v.size() + 127) / 128 * 128, 0.0f);
    const Input x = make_input(DType::Float, v);
    expect_targets_match(x, 128, t, DType::Float, t == DType::HiFloat8 ? 32768.0f : 0.0f, &v);
  }
}

TEST(QuantSimd, QuotientsNearRoundingBoundaries) {
  // Groups whose elements divide by the group's scale to within a few fp32 ulps of the
  // midpoints between neighbouring codes: v = RN(m * scale) +- k ulps. Here a quotient
  // computed any other way than RN(v / scale) (e.g. v * RN(1/scale)) would round to the
  // other code now and then.
  std::mt19937 gen(123);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  for (DType t : kKgTypes) {
    const float target = qd::kg_target(t, 0.0f);
    std::vector<float> mids;
    std::vector<float> codes;
    for (int c = 0; c < 256; ++c) {
      const float d = qcoll::formats::decode8(t, static_cast<uint8_t>(c));
      if (std::isfinite(d) && d >= 0) codes.push_back(d);
    }
    std::sort(codes.begin(), codes.end());
    for (std::size_t i = 0; i + 1 < codes.size(); ++i) mids.push_back(codes[i] + (codes[i + 1] - codes[i]) / 2);
    std::vector<float> v;
    for (int group = 0; group < 400; ++group) {
      // amax from 2^-100 to 2^100; scale = amax / target as the quantizer computes it.
      const float amax = std::ldexp(mant(gen), static_cast<int>(gen() % 200) - 100);
      const float scale = amax / target;
      v.push_back(amax);
      while (v.size() % 128 != 0) {
        const float m = mids[gen() % mids.size()];
        float x = m * scale;
        const int k = static_cast<int>(gen() % 9) - 4;
        for (int j = 0; j < std::abs(k); ++j) x = std::nextafter(x, k > 0 ? 1e38f : -1e38f);
        if (!(std::fabs(x) <= amax)) x = amax;
        v.push_back(gen() & 1 ? -x : x);
      }
    }
    expect_targets_match(make_input(DType::Float, v), 1024, t, DType::Float, 0.0f, &v);
  }
}

TEST(QuantSimd, EdgeGroups) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float min_sub = std::numeric_limits<float>::denorm_min();
  std::vector<std::vector<float>> groups;
  auto fill = [&](auto f) {
    std::vector<float> g(128);
    for (std::size_t i = 0; i < 128; ++i) g[i] = f(i);
    groups.push_back(g);
  };
  fill([](std::size_t) { return 0.0f; });
  fill([](std::size_t) { return -0.0f; });
  fill([&](std::size_t) { return nan; });
  fill([&](std::size_t) { return -nan; });
  fill([&](std::size_t i) { return i % 2 ? inf : -inf; });
  fill([&](std::size_t i) { return i % 3 == 0 ? nan : (i % 3 == 1 ? inf : -inf); });
  fill([&](std::size_t i) { return i == 5 ? inf : std::sin(float(i)); });
  fill([&](std::size_t i) { return i == 9 ? nan : std::sin(float(i)); });
  fill([&](std::size_t i) { return i % 4 == 0 ? -nan : -std::cos(float(i)) * 3.0f; });
  fill([&](std::size_t i) { return min_sub * float(i % 7) * (i % 2 ? -1.0f : 1.0f); });  // scale underflow
  fill([&](std::size_t i) { return min_sub * float(i) * 1000.0f; });                     // subnormal amax
  fill([&](std::size_t i) { return std::ldexp(float(i) - 64.0f, -130); });
  fill([&](std::size_t i) { return std::numeric_limits<float>::max() * (i % 2 ? -1.0f : 0.5f); });
  fill([&](std::size_t i) { return i == 0 ? std::numeric_limits<float>::max() : std::sin(float(i)); });
  fill([&](std::size_t i) { return i == 0 ? 0x1p-126f : 0x1p-149f * float(i); });
  fill([&](std::size_t i) { return i == 0 ? 63.5f * min_sub : -float(i % 64) * min_sub; });  // INT8 underflow edge
  fill([&](std::size_t i) { return i == 0 ? 64.0f * min_sub : float(i % 65) * min_sub; });
  fill([&](std::size_t i) { return i < 64 ? 1.0f : nan; });
  fill([&](std::size_t i) { return i == 127 ? -1e-45f : 0.0f; });
  std::vector<float> v;
  for (const auto& g : groups) v.insert(v.end(), g.begin(), g.end());
  for (DType in : kInputs) {
    SCOPED_TRACE(qcoll::dtype_name(in));
    expect_all_modes_match(v, 128, in);
    expect_all_modes_match(v, 128 * groups.size(), in);  // one row
  }
}

TEST(QuantSimd, Hif8Targets) {
  const auto v = normal_values(3 * 512, 11, 2.0f);
  const auto b = random_bits(3 * 512, 12);
  for (DType in : kInputs) {
    for (float target : {1.0f, 3.0f, 16.0f, 100.0f, 1000.5f, 32768.0f}) {
      expect_targets_match(make_input(in, v), 512, DType::HiFloat8, DType::Float, target, &v);
      expect_targets_match(make_input(in, b), 512, DType::HiFloat8, DType::Float, target, &b);
    }
  }
}

TEST(QuantSimd, OddShapes) {
  uint32_t seed = 40;
  for (std::size_t rows : {1, 2, 3, 5, 7, 13}) {
    for (std::size_t H : {128, 384, 1152}) {
      const auto v = normal_values(rows * H, seed++, 1.0f);
      for (DType in : kInputs) expect_all_modes_match(v, H, in);
    }
  }
  // MX alone allows H = 64, 192.
  for (std::size_t H : {64, 192}) {
    const auto v = normal_values(3 * H, seed++, 1.0f);
    for (DType in : kInputs)
      for (DType t : kMxTypes) expect_targets_match(make_input(in, v), H, t, DType::Float8E8M0, 0.0f, &v);
  }
}

// ---- The public functions: the fast path, threads, rounding modes, flush-to-zero --------

namespace {

// One public call per mode and input, with `threads`; the reference bits for comparison.
struct PublicRun {
  std::vector<uint8_t> q;
  std::vector<uint8_t> s;
};

PublicRun run_public(const Input& x, std::size_t H, DType t, DType s, int threads, float hif8_target = 0.0f) {
  const std::size_t rows = x.size() / H;
  PublicRun r{std::vector<uint8_t>(x.size(), 0xA5), std::vector<uint8_t>(scale_bytes(s, x.size()), 0xA5)};
  qq::QuantOptions opt;
  opt.threads = threads;
  opt.hif8_target = hif8_target;
  bool ok = false;
  float* kg = reinterpret_cast<float*>(r.s.data());
  if (s == DType::Float) {
    switch (x.dtype) {
      case DType::Float:
        ok = qq::quantize_kg(x.f.data(), rows, H, t, r.q.data(), kg, opt);
        break;
      case DType::BFloat16:
        ok = qq::quantize_kg_bf16(x.h.data(), rows, H, t, r.q.data(), kg, opt);
        break;
      default:
        ok = qq::quantize_kg_fp16(x.h.data(), rows, H, t, r.q.data(), kg, opt);
        break;
    }
  } else {
    switch (x.dtype) {
      case DType::Float:
        ok = qq::quantize_mx(x.f.data(), rows, H, t, r.q.data(), r.s.data(), opt);
        break;
      case DType::BFloat16:
        ok = qq::quantize_mx_bf16(x.h.data(), rows, H, t, r.q.data(), r.s.data(), opt);
        break;
      default:
        ok = qq::quantize_mx_fp16(x.h.data(), rows, H, t, r.q.data(), r.s.data(), opt);
        break;
    }
  }
  EXPECT_TRUE(ok);
  return r;
}

PublicRun run_reference(const Input& x, std::size_t H, DType t, DType s, float hif8_target = 0.0f) {
  Output out;
  qd::quantize_scalar(make_job(x, H, t, s, out, hif8_target));
  return {out.q, out.scales};
}

struct ModeCase {
  DType x;
  DType s;
};
constexpr ModeCase kAllModes[] = {
    {DType::Int8, DType::Float},       {DType::HiFloat8, DType::Float},          {DType::Float8E4M3FN, DType::Float},
    {DType::Float8E5M2, DType::Float}, {DType::Float8E4M3FN, DType::Float8E8M0}, {DType::Float8E5M2, DType::Float8E8M0},
};

}  // namespace

TEST(QuantSimd, PublicFunctionsSameBitsForEveryThreadCount) {
  auto v = normal_values(37 * 768, 90, 1.0f);  // 37 rows: parts of unequal size
  const auto b = random_bits(37 * 768, 91);
  for (std::size_t i = 0; i < v.size(); i += 3) v[i] = b[i];
  for (DType in : kInputs) {
    const Input x = make_input(in, v);
    for (const ModeCase& m : kAllModes) {
      const PublicRun want = run_reference(x, 768, m.x, m.s);
      for (int threads : {0, 1, 2, 3, 4}) {
        const PublicRun got = run_public(x, 768, m.x, m.s, threads);
        ASSERT_TRUE(got.q == want.q && got.s == want.s)
            << describe("public threads=" + std::to_string(threads), in, m.x, m.s, 768, 0.0f);
      }
    }
  }
}

TEST(QuantSimd, ThreadPartsAndAuto) {
  Output out;
  const Input big = make_input(DType::Float, std::vector<float>(qq::kQuantAutoThreadElements, 1.0f));
  const Input small = make_input(DType::Float, std::vector<float>(4 * 128, 1.0f));
  const auto job_big = make_job(big, 1024, DType::Int8, DType::Float, out);
  const auto job_small = make_job(small, 128, DType::Int8, DType::Float, out);
  EXPECT_EQ(qd::quantize_parts(job_small, 0), 1);  // small calls stay on the caller
  EXPECT_EQ(qd::quantize_parts(job_small, 3), 3);
  EXPECT_EQ(qd::quantize_parts(job_small, 9), 4);  // at most one part per row
  EXPECT_GE(qd::quantize_parts(job_big, 0), 1);
  EXPECT_EQ(qd::quantize_parts(job_big, 64), 64);
  // threads outside [0, 64] is an argument error that writes nothing.
  std::vector<uint8_t> q(128, 0xA5);
  std::vector<float> s(1, -1.0f);
  qq::QuantOptions opt;
  for (int bad : {-1, 65}) {
    opt.threads = bad;
    EXPECT_FALSE(qq::quantize_kg(small.f.data(), 1, 128, DType::Int8, q.data(), s.data(), opt));
    const auto st =
        qq::check_quantize_args(small.f.data(), 1, 128, DType::Int8, DType::Float, q.data(), s.data(), 0.0f, bad);
    EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
    EXPECT_NE(st.message.find("threads: must be 0 (auto) or in [1, 64], got " + std::to_string(bad)), std::string::npos)
        << st.message;
  }
  EXPECT_EQ(q[0], 0xA5);
  EXPECT_EQ(s[0], -1.0f);
}

TEST(QuantSimd, HalfInputsEqualTheirFp32Values) {
  // bf16 / fp16 decode exactly to fp32, so their quantizers equal the fp32 one on the
  // decoded values (a check of the fp16 input that shares nothing with GroupSource).
  auto v = normal_values(4 * 256, 7, 3.0f);
  const auto b = random_bits(4 * 256, 8);
  for (std::size_t i = 0; i < v.size(); i += 5) v[i] = b[i];
  for (DType in : {DType::BFloat16, DType::Float16}) {
    const Input half = make_input(in, v);
    std::vector<float> decoded(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      decoded[i] = in == DType::BFloat16 ? qcoll::formats::decode_bfloat16(half.h[i])
                                         : qcoll::formats::decode_float16(half.h[i]);
    const Input wide = make_input(DType::Float, decoded);
    for (const ModeCase& m : kAllModes) {
      const PublicRun a = run_public(half, 256, m.x, m.s, 2);
      const PublicRun c = run_public(wide, 256, m.x, m.s, 1);
      ASSERT_TRUE(a.s == c.s) << describe("half vs fp32", in, m.x, m.s, 256, 0.0f);
      for (std::size_t i = 0; i < a.q.size(); ++i) {
        // NaN codes may differ only in the NaN's sign, which decode keeps: so they must not.
        ASSERT_EQ(a.q[i], c.q[i]) << describe("half vs fp32", in, m.x, m.s, 256, 0.0f) << " at " << i;
      }
    }
  }
}

TEST(QuantSimd, ConvenienceFp16) {
  const auto v = normal_values(2 * 128, 3, 1.0f);
  const Input half = make_input(DType::Float16, v);
  qq::QuantizedTensor t;
  ASSERT_TRUE(qq::quantize_fp16(half.h.data(), 2, 128, DType::Float8E4M3FN, DType::Float8E8M0, t).ok());
  const PublicRun want = run_reference(half, 128, DType::Float8E4M3FN, DType::Float8E8M0);
  EXPECT_EQ(t.q, want.q);
  EXPECT_EQ(t.mx_scales, want.s);
  const auto bad = qq::quantize_fp16(half.h.data(), 2, 100, DType::Int8, DType::Float, t);
  EXPECT_EQ(bad.code, qcoll::StatusCode::ParamInvalid);
}

TEST(QuantSimd, OtherRoundingModesFollowTheReference) {
  // The reference's INT8 rounding follows the current mode; the public functions then take
  // the reference path, on every thread of the pool too.
  auto v = normal_values(6 * 128, 21, 30.0f);
  for (std::size_t i = 0; i < v.size(); i += 2) v[i] = std::floor(v[i]) + 0.5f;  // ties
  const Input x = make_input(DType::Float, v);
  const PublicRun nearest = run_reference(x, 128, DType::Int8, DType::Float);
  for (int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    ASSERT_EQ(std::fesetround(mode), 0);
    const PublicRun want = run_reference(x, 128, DType::Int8, DType::Float);
    const PublicRun one = run_public(x, 128, DType::Int8, DType::Float, 1);
    const PublicRun four = run_public(x, 128, DType::Int8, DType::Float, 4);
    std::fesetround(FE_TONEAREST);
    EXPECT_NE(want.q, nearest.q) << "mode " << mode << " should change some INT8 codes";
    EXPECT_EQ(one.q, want.q) << "mode " << mode;
    EXPECT_EQ(four.q, want.q) << "mode " << mode;
    EXPECT_EQ(four.s, want.s) << "mode " << mode;
  }
  EXPECT_EQ(std::fegetround(), FE_TONEAREST);
}

#if defined(__x86_64__) || defined(__i386__)
TEST(QuantSimd, CallerWithFlushToZeroStillGetsSubnormals) {
  std::vector<float> v = log_uniform(8 * 128, 31, -149, -110);
  for (std::size_t i = 0; i < v.size(); i += 128) v[i] = 0x1p-100f;  // scale ~2^-107 (KG)
  for (DType in : {DType::Float, DType::Float16}) {
    const Input x = make_input(in, in == DType::Float ? v : normal_values(8 * 128, 32, 1e-6f));
    for (const ModeCase& m : kAllModes) {
      const PublicRun want = run_reference(x, 128, m.x, m.s);
      const unsigned saved = _mm_getcsr();
      _mm_setcsr(saved | 0x8040u);  // FTZ | DAZ
      const PublicRun got = run_public(x, 128, m.x, m.s, 2);
      std::vector<PublicRun> per_target;
      for (const std::string& t : targets()) {
        Output out;
        ASSERT_TRUE(qd::quantize_on_target(t, make_job(x, 128, m.x, m.s, out)));
        per_target.push_back({out.q, out.scales});
      }
      const unsigned after = _mm_getcsr();
      _mm_setcsr(saved);
      EXPECT_EQ(after & 0x8040u, 0x8040u) << "the caller's FTZ/DAZ are restored";
      EXPECT_TRUE(got.q == want.q && got.s == want.s) << describe("FTZ public", in, m.x, m.s, 128, 0);
      for (const PublicRun& r : per_target)
        EXPECT_TRUE(r.q == want.q && r.s == want.s) << describe("FTZ target", in, m.x, m.s, 128, 0);
    }
  }
}
#endif
