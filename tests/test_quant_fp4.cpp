// The 4-bit x quantizers (FLOAT4_E2M1, FLOAT4_E1M2; contract.md §ext-fp4-quantizers) in KG
// and MX, from fp32, bf16 and fp16 rows:
//   - against an oracle written from the rules alone (amax over the finite elements, the
//     fp32 scale division / the floor-log2 shared exponent with its clamps, the value-list
//     encoder of tests/fp4_oracle.hpp, the packed layout: even element in bits 0-3);
//   - every SIMD target against the reference (quantize_scalar), bit for bit;
//   - edge groups: all zero, -0, amax at the largest value, E2M1's MX saturation (amax in
//     (6, 8)·2^k), NaN / +-Inf elements, subnormal inputs, scale underflow, E8M0 clamps;
//   - E2M1's codes against ml_dtypes' float4_e2m1fn (tests/ml_dtypes_child.hpp);
//   - the contract gate (vendor refuses with the vendor message naming the dtype and
//     QCOLL_CONTRACT, extended accepts), threads, the convenience layer, dequantize.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "fp4_oracle.hpp"
#include "ml_dtypes_child.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/formats.hpp"
#include "qcoll/quant.hpp"
#include "qcoll/settings.hpp"
#include "quant/quantize_job.hpp"
#include "quant_inputs.hpp"

using qcoll::DType;
using qcoll::Status;
namespace qq = qcoll::quant;
namespace qd = qcoll::quant::detail;
namespace s = qcoll::settings;
namespace c = qcoll::contract;

namespace {

using quant_inputs::every_half_pattern;
using quant_inputs::Input;
using quant_inputs::make_input;
using quant_inputs::normal_values;
using quant_inputs::random_bits;

constexpr DType kFp4[] = {DType::Float4E2M1, DType::Float4E1M2};
constexpr DType kScales[] = {DType::Float, DType::Float8E8M0};
constexpr DType kInputs[] = {DType::Float, DType::BFloat16, DType::Float16};
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

const fp4_oracle::Fp4& oracle_format(DType t) { return t == DType::Float4E2M1 ? fp4_oracle::kE2M1 : fp4_oracle::kE1M2; }
// The rules' constants (contract.md §ext-fp4), typed here, not read from the library.
float max_finite(DType t) { return t == DType::Float4E2M1 ? 6.0f : 1.75f; }
int emax(DType t) { return t == DType::Float4E2M1 ? 2 : 0; }

// The extended contract for the scope of the object (the program's choice, as a caller
// would make it), then back to the environment's.
struct Extended {
  Extended() { s::set_contract_override(s::Contract::Extended); }
  ~Extended() { s::set_contract_override(std::nullopt); }
};

struct Output {
  std::vector<uint8_t> q;       // packed codes
  std::vector<uint8_t> scales;  // raw bytes (fp32 bits for KG)
  bool operator==(const Output&) const = default;
};

std::size_t scale_bytes(DType sd, std::size_t n) { return sd == DType::Float ? n / 128 * 4 : n / 32; }

// ---- The oracle ----

uint8_t packed_code(const std::vector<uint8_t>& q, std::size_t i) { return (q[i / 2] >> (4 * (i % 2))) & 0xF; }

float finite_amax(const std::vector<float>& v, std::size_t first, std::size_t n) {
  float amax = 0;
  for (std::size_t i = first; i < first + n; ++i)
    if (std::isfinite(v[i])) amax = std::max(amax, std::fabs(v[i]));
  return amax;
}

// The rules of §ext-fp4-quantizers on the values, codes unpacked (one a byte).
struct Expected {
  std::vector<uint8_t> codes;
  std::vector<float> kg_scales;
  std::vector<uint8_t> mx_scales;
};

Expected oracle(const std::vector<float>& v, DType t, DType sd) {
  const fp4_oracle::Fp4& fm = oracle_format(t);
  Expected e;
  e.codes.resize(v.size());
  if (sd == DType::Float) {
    for (std::size_t g = 0; g < v.size(); g += 128) {
      const float scale = finite_amax(v, g, 128) / max_finite(t);  // one fp32 division
      e.kg_scales.push_back(scale);
      for (std::size_t i = g; i < g + 128; ++i)
        e.codes[i] = scale == 0 ? fp4_oracle::encode(fm, std::isfinite(v[i]) ? 0.0f : v[i])
                                : fp4_oracle::encode(fm, v[i] / scale);
    }
    return e;
  }
  for (std::size_t b = 0; b < v.size(); b += 32) {
    const double amax = finite_amax(v, b, 32);
    int se = -127;
    if (amax > 0) {
      int ex;
      std::frexp(amax, &ex);  // amax = m * 2^ex, m in [0.5, 1): floor(log2(amax)) = ex - 1
      se = std::clamp(ex - 1 - emax(t), -127, 127);
    }
    e.mx_scales.push_back(static_cast<uint8_t>(se + 127));
    // v / 2^se: exact in double, rounded once to fp32 (the fp32 quotient).
    for (std::size_t i = b; i < b + 32; ++i)
      e.codes[i] = fp4_oracle::encode(fm, static_cast<float>(std::ldexp(static_cast<double>(v[i]), -se)));
  }
  return e;
}

// Expected against an output: codes unpacked from the output's layout, scales by value.
void expect_oracle(const std::vector<float>& v, DType t, DType sd, const Output& got, const std::string& what) {
  const Expected want = oracle(v, t, sd);
  ASSERT_EQ(got.q.size(), v.size() / 2) << what;
  for (std::size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(packed_code(got.q, i), want.codes[i])
        << what << ": element " << i << " v " << std::hexfloat << v[i] << " group amax "
        << (sd == DType::Float ? finite_amax(v, i / 128 * 128, 128) : finite_amax(v, i / 32 * 32, 32));
  if (sd == DType::Float) {
    ASSERT_EQ(got.scales.size(), want.kg_scales.size() * 4);
    for (std::size_t g = 0; g < want.kg_scales.size(); ++g) {
      float sc;
      std::memcpy(&sc, got.scales.data() + 4 * g, 4);
      ASSERT_EQ(std::bit_cast<uint32_t>(sc), std::bit_cast<uint32_t>(want.kg_scales[g])) << what << " group " << g;
    }
  } else {
    ASSERT_EQ(got.scales, want.mx_scales) << what;
  }
}

// ---- The paths ----

qd::QuantJob make_job(const Input& x, std::size_t H, DType t, DType sd, Output& out) {
  qd::QuantJob job;
  job.in_dtype = x.dtype;
  job.x = x.data();
  job.H = H;
  job.rows = x.size() / H;
  job.x_dtype = t;
  job.scales_dtype = sd;
  job.target = sd == DType::Float ? qd::kg_target(t, 0.0f) : 0.0f;
  out.q.assign(x.size() / 2, 0xA5);
  out.scales.assign(scale_bytes(sd, x.size()), 0xA5);
  job.q = out.q.data();
  job.scales = out.scales.data();
  return job;
}

Output run_reference(const Input& x, std::size_t H, DType t, DType sd) {
  Output out;
  qd::quantize_scalar(make_job(x, H, t, sd, out));
  return out;
}

// The public function of x's input dtype and sd's mode.
Output run_public(const Input& x, std::size_t H, DType t, DType sd, int threads) {
  const std::size_t rows = x.size() / H;
  Output r{std::vector<uint8_t>(x.size() / 2, 0xA5), std::vector<uint8_t>(scale_bytes(sd, x.size()), 0xA5)};
  qq::QuantOptions opt;
  opt.threads = threads;
  const Extended ext;
  const auto* h = x.h.data();
  bool ok;
  if (sd == DType::Float) {
    float* kg = reinterpret_cast<float*>(r.scales.data());
    ok = x.dtype == DType::Float      ? qq::quantize_kg(x.f.data(), rows, H, t, r.q.data(), kg, opt)
         : x.dtype == DType::BFloat16 ? qq::quantize_kg_bf16(h, rows, H, t, r.q.data(), kg, opt)
                                      : qq::quantize_kg_fp16(h, rows, H, t, r.q.data(), kg, opt);
  } else {
    uint8_t* mx = r.scales.data();
    ok = x.dtype == DType::Float      ? qq::quantize_mx(x.f.data(), rows, H, t, r.q.data(), mx, opt)
         : x.dtype == DType::BFloat16 ? qq::quantize_mx_bf16(h, rows, H, t, r.q.data(), mx, opt)
                                      : qq::quantize_mx_fp16(h, rows, H, t, r.q.data(), mx, opt);
  }
  EXPECT_TRUE(ok);
  return r;
}

std::string describe(const std::string& path, DType in, DType t, DType sd, std::size_t H) {
  return path + " in=" + std::string(qcoll::dtype_name(in)) + " x=" + std::string(qcoll::dtype_name(t)) +
         (sd == DType::Float ? " KG" : " MX") + " H=" + std::to_string(H);
}

std::string first_diff(const Output& got, const Output& want, const std::vector<float>& v) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (packed_code(got.q, i) != packed_code(want.q, i)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %zu: 0x%X, reference 0x%X (v = %a)", i, packed_code(got.q, i),
                    packed_code(want.q, i), v[i]);
      return buf;
    }
  return got.q == want.q ? "scales differ" : "packing differs";
}

// The reference against the oracle, then every SIMD target against the reference, for one
// input, format and mode.
void expect_all_paths(const Input& x, std::size_t H, DType t, DType sd) {
  ASSERT_EQ(x.size() % H, 0u) << "the test's input is whole rows";
  const Output want = run_reference(x, H, t, sd);
  expect_oracle(x.values, t, sd, want, describe("reference", x.dtype, t, sd, H));
  const std::vector<std::string> targets = qd::quantize_simd_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& target : targets) {
    Output got;
    ASSERT_TRUE(qd::quantize_on_target(target, make_job(x, H, t, sd, got)));
    ASSERT_TRUE(got == want) << describe(target, x.dtype, t, sd, H) << ": " << first_diff(got, want, x.values);
  }
}

// Both formats, both modes, every input dtype.
void expect_everything(const std::vector<float>& v, std::size_t H) {
  for (DType in : kInputs) {
    const Input x = make_input(in, v);
    for (DType t : kFp4)
      for (DType sd : kScales) expect_all_paths(x, H, t, sd);
  }
}

std::vector<float> log_uniform(std::size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> e(lo, hi - 1);
  std::uniform_real_distribution<float> m(1.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = std::ldexp(m(gen), e(gen)) * (gen() & 1 ? -1.0f : 1.0f);
  return v;
}

// 128-element groups from a generator of element i.
template <class F>
std::vector<float> group(F f) {
  std::vector<float> g(128);
  for (std::size_t i = 0; i < 128; ++i) g[i] = f(i);
  return g;
}

}  // namespace

TEST(QuantFp4, SpecVectorsKg) {
  // amax 6 -> scale 1: the codes are the encoder's test vectors (contract.md §ext-status).
  std::vector<float> v(128, 0.0f);
  const float in[] = {6, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, 5.5f, -0.0f, -0.1f, -6, kNaN, -kInf, kInf};
  const uint8_t want[] = {0x7, 0x0, 0x2, 0x2, 0x4, 0x4, 0x6, 0x6, 0x7, 0x8, 0x8, 0xF, 0x0, 0xF, 0x7};
  std::copy(std::begin(in), std::end(in), v.begin());
  const Output r = run_public(make_input(DType::Float, v), 128, DType::Float4E2M1, DType::Float, 1);
  float scale;
  std::memcpy(&scale, r.scales.data(), 4);
  EXPECT_EQ(scale, 1.0f);
  for (std::size_t i = 0; i < std::size(want); ++i) EXPECT_EQ(packed_code(r.q, i), want[i]) << i;
  EXPECT_EQ(r.q[0], 0x07);  // element 0 in bits 0-3, element 1 (0.25 -> 0) in bits 4-7
  EXPECT_EQ(r.q[1], 0x22);
  for (std::size_t i = std::size(want); i < 128; ++i) EXPECT_EQ(packed_code(r.q, i), 0) << i;
}

TEST(QuantFp4, SpecVectorsMx) {
  // E2M1: amax 7 (in (6, 8)): shared_exp = 2 - 2 = 0, so 7 saturates to 6; E1M2: amax 1.9 ->
  // shared_exp 0, 1.9 saturates to 1.75. A second block of zeros: shared_exp -127 (0x00).
  std::vector<float> v(64, 0.0f);
  v[0] = 7, v[1] = -6.5f, v[2] = 0.75f, v[3] = 5;
  Output r = run_public(make_input(DType::Float, v), 64, DType::Float4E2M1, DType::Float8E8M0, 1);
  EXPECT_EQ(r.scales, (std::vector<uint8_t>{127, 0}));
  EXPECT_EQ(r.q[0], 0xF7);  // 6, -6
  EXPECT_EQ(r.q[1], 0x62);  // 1 (0.75 ties to the even code), 4 (5 ties to the even code)
  v[0] = 1.9f, v[1] = -1.7f, v[2] = 0.375f, v[3] = 1.625f;
  r = run_public(make_input(DType::Float, v), 64, DType::Float4E1M2, DType::Float8E8M0, 1);
  EXPECT_EQ(r.scales, (std::vector<uint8_t>{127, 0}));
  EXPECT_EQ(r.q[0], 0xF7);  // 1.75, -1.75 (1.7 rounds up: nearest)
  EXPECT_EQ(r.q[1], 0x62);  // 0.5 (0.375 ties to even), 1.5 (1.625 ties to even)
}

TEST(QuantFp4, RandomDistributionsAndMagnitudes) {
  uint32_t seed = 1;
  for (float sigma : {1.0f, 1e-3f, 1e3f, 0x1p-100f, 0x1p-126f, 0x1p-140f, 0x1p100f, 0x1p120f}) {
    SCOPED_TRACE(sigma);
    expect_everything(normal_values(5 * 640, seed++, sigma), 640);
  }
  expect_everything(log_uniform(3 * 1024, seed++, -30, 30), 1024);
  expect_everything(log_uniform(5 * 256, seed++, -149, 128), 256);
  expect_everything(random_bits(3 * 384, seed++), 384);
  expect_everything(random_bits(64 * 1024, seed++), 1024);
}

TEST(QuantFp4, EveryHalfPrecisionBitPattern) {
  for (DType in : {DType::BFloat16, DType::Float16}) {
    for (int shuffle = 0; shuffle < 2; ++shuffle) {
      const Input x = every_half_pattern(in, shuffle != 0);
      for (DType t : kFp4)
        for (DType sd : kScales) expect_all_paths(x, 512, t, sd);
    }
  }
}

TEST(QuantFp4, EveryCodeAndMidpointAtScaleOne) {
  // Groups whose scale is 1 (KG: an element equal to max_finite; MX: an element 2^emax), so
  // the encoder sees the values themselves: every code's value, the midpoints between
  // neighbours (ties to the even code) and one fp32 ulp either side, both signs, in every
  // lane position; the MX blocks also go up to 2^(emax+1) (saturation).
  for (DType t : kFp4) {
    const fp4_oracle::Fp4& fm = oracle_format(t);
    std::vector<float> pts;
    for (int k = 0; k < 8; ++k) {
      pts.push_back(fm.magnitudes[k]);
      const float next = k < 7 ? fm.magnitudes[k + 1] : std::ldexp(1.0f, emax(t) + 1);
      const float mid = fm.magnitudes[k] + (next - fm.magnitudes[k]) / 2;
      for (float p : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 100.0f)}) pts.push_back(p);
    }
    for (DType sd : kScales) {
      const std::size_t G = sd == DType::Float ? 128 : 32;
      const float one = sd == DType::Float ? max_finite(t) : std::ldexp(1.0f, emax(t));
      const float limit = sd == DType::Float ? max_finite(t) : std::ldexp(1.0f, emax(t) + 1);
      std::vector<float> v;
      for (int rot = 0; rot < 3; ++rot)
        for (std::size_t i = 0; i < 7 * 128; ++i) {
          if (v.size() % G == 0) {
            v.push_back(rot == 1 ? -one : one);
            continue;
          }
          const float p = pts[(i + rot) % pts.size()];
          if (p >= limit) continue;
          v.push_back((i / pts.size() + rot) % 2 ? -p : p);
        }
      v.resize(v.size() / 128 * 128);
      for (DType in : kInputs) {
        const Input x = make_input(in, v);
        expect_all_paths(x, 128, t, sd);
      }
    }
  }
}

TEST(QuantFp4, QuotientsNearRoundingBoundaries) {
  // KG groups whose elements divide by the scale to within a few ulps of a midpoint: the
  // SIMD path's v * RN(1/scale) must fall back to the division there.
  std::mt19937 gen(123);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  for (DType t : kFp4) {
    const fp4_oracle::Fp4& fm = oracle_format(t);
    std::vector<float> v;
    for (int g = 0; g < 304; ++g) {  // 38 rows of 1024
      const float amax = std::ldexp(mant(gen), static_cast<int>(gen() % 200) - 100);
      const float scale = amax / max_finite(t);
      v.push_back(amax);
      while (v.size() % 128 != 0) {
        const unsigned k = gen() % 7;
        float x = (fm.magnitudes[k] + fm.magnitudes[k + 1]) / 2 * scale;
        const int d = static_cast<int>(gen() % 9) - 4;
        for (int j = 0; j < std::abs(d); ++j) x = std::nextafter(x, d > 0 ? 1e38f : -1e38f);
        if (!(std::fabs(x) <= amax)) x = amax;
        v.push_back(gen() & 1 ? -x : x);
      }
    }
    expect_all_paths(make_input(DType::Float, v), 1024, t, DType::Float);
  }
}

TEST(QuantFp4, EdgeGroups) {
  const float min_sub = std::numeric_limits<float>::denorm_min();
  const float fmax = std::numeric_limits<float>::max();
  std::vector<std::vector<float>> groups = {
      group([](std::size_t) { return 0.0f; }),
      group([](std::size_t) { return -0.0f; }),
      group([](std::size_t) { return kNaN; }),
      group([](std::size_t) { return -kNaN; }),
      group([](std::size_t i) { return i % 2 ? kInf : -kInf; }),
      group([](std::size_t i) { return i % 3 == 0 ? kNaN : (i % 3 == 1 ? kInf : -kInf); }),
      group([](std::size_t i) { return i == 5 ? kInf : std::sin(float(i)); }),
      group([](std::size_t i) { return i == 9 ? -kNaN : std::sin(float(i)); }),
      group([](std::size_t i) { return i == 0 ? 6.0f : std::sin(float(i)) * 6.0f; }),  // amax = max (E2M1)
      group([](std::size_t i) { return i == 0 ? 1.75f : std::sin(float(i)) * 1.75f; }),
      group([](std::size_t i) { return i % 32 == 0 ? 7.0f : std::sin(float(i)) * 7.0f; }),  // (6, 8)
      group([](std::size_t i) { return i % 32 == 0 ? 0x1.fffffep2f * 1024 : std::sin(float(i)) * 8000; }),
      group([](std::size_t i) { return i % 32 == 0 ? -1.99f : std::cos(float(i)) * 1.99f; }),
      group([&](std::size_t i) { return min_sub * float(i % 7) * (i % 2 ? -1.0f : 1.0f); }),  // scale underflow
      group([&](std::size_t i) { return min_sub * float(i) * 1000.0f; }),                     // subnormal amax
      group([](std::size_t i) { return std::ldexp(float(i) - 64.0f, -130); }),
      group([](std::size_t i) { return i == 0 ? 0x1p-126f : 0x1p-149f * float(i); }),
      group([&](std::size_t i) { return fmax * (i % 2 ? -1.0f : 0.5f); }),  // E8M0 upper clamp region
      group([&](std::size_t i) { return i % 32 == 0 ? fmax : std::sin(float(i)); }),
      group([](std::size_t i) { return i % 32 == 0 ? 0x1p127f : std::sin(float(i)) * 0x1p127f; }),
      group([](std::size_t i) { return i % 32 == 0 ? 0x1.8p127f : -0x1p120f * float(i % 5); }),
      group([](std::size_t i) { return i < 64 ? 1.0f : kNaN; }),
      group([](std::size_t i) { return i == 127 ? -1e-45f : 0.0f; }),
  };
  std::vector<float> v;
  for (const auto& g : groups) v.insert(v.end(), g.begin(), g.end());
  expect_everything(v, 128);
  expect_everything(v, 128 * groups.size());  // one row
}

TEST(QuantFp4, E8M0Clamps) {
  // MX: amax >= 2^127 with E1M2 (emax 0) gives shared_exp 127, 0xFE, the largest scale,
  // 1/scale the fp32 subnormal 2^-127; amax below 2^-127 gives -127 (0x00), as does 0.
  std::vector<float> v(128, 0.0f);
  v[0] = 0x1.8p127f, v[1] = -0x1p127f, v[2] = 0x1p126f;  // block 0
  v[32] = 0x1p-140f, v[33] = -0x1p-149f;                 // block 1; blocks 2, 3 zero
  const Input x = make_input(DType::Float, v);
  const Output e1m2 = run_public(x, 128, DType::Float4E1M2, DType::Float8E8M0, 1);
  EXPECT_EQ(e1m2.scales, (std::vector<uint8_t>{0xFE, 0x00, 0x00, 0x00}));
  EXPECT_EQ(e1m2.q[0], 0xC6);   // 1.5, -1
  EXPECT_EQ(e1m2.q[1], 0x02);   // 0.5
  EXPECT_EQ(e1m2.q[16], 0x80);  // 2^-140 * 2^127 = 2^-13 -> 0; -2^-149 * 2^127 -> -0
  const Output e2m1 = run_public(x, 128, DType::Float4E2M1, DType::Float8E8M0, 1);
  EXPECT_EQ(e2m1.scales, (std::vector<uint8_t>{0xFC, 0x00, 0x00, 0x00}));  // 127 - 2
  EXPECT_EQ(e2m1.q[0], 0xE7);                                              // 6, -4
  for (DType in : kInputs)
    for (DType t : kFp4) expect_all_paths(make_input(in, v), 128, t, DType::Float8E8M0);
}

TEST(QuantFp4, OddShapesAndThreads) {
  uint32_t seed = 40;
  for (std::size_t rows : {1, 2, 3, 7}) {
    for (std::size_t H : {128, 384, 1152}) expect_everything(normal_values(rows * H, seed++, 1.0f), H);
  }
  for (std::size_t H : {64, 192}) {  // MX alone allows these
    const auto v = normal_values(3 * H, seed++, 1.0f);
    for (DType in : kInputs)
      for (DType t : kFp4) expect_all_paths(make_input(in, v), H, t, DType::Float8E8M0);
  }
  // The public functions: the same bits for every thread count (rows split over the pool,
  // each part's packed codes at row * H / 2).
  auto v = normal_values(37 * 768, 90, 1.0f);
  const auto b = random_bits(v.size(), 91);
  for (std::size_t i = 0; i < v.size(); i += 3) v[i] = b[i];
  for (DType in : kInputs) {
    const Input x = make_input(in, v);
    for (DType t : kFp4)
      for (DType sd : kScales) {
        const Output want = run_reference(x, 768, t, sd);
        for (int threads : {0, 1, 2, 3, 4})
          ASSERT_TRUE(run_public(x, 768, t, sd, threads) == want)
              << describe("public threads=" + std::to_string(threads), in, t, sd, 768);
      }
  }
}

namespace {

// The codes the quantizer gave for fp32 values at scale 1, looked up by value for
// ml_dtypes_child::compare (which asks an encoder function).
std::unordered_map<uint32_t, uint8_t>& quantized_codes() {
  static std::unordered_map<uint32_t, uint8_t> m;
  return m;
}
uint8_t quantized_code(float x) { return quantized_codes().at(std::bit_cast<uint32_t>(x)); }

}  // namespace

TEST(QuantFp4, E2M1AgreesWithMlDtypes) {
  if (!ml_dtypes_child::ml_dtypes_available())
    GTEST_SKIP() << "python3 with ml_dtypes >= 0.5 (float4_e2m1fn) not found (" << ml_dtypes_child::python() << ")";
  // MX blocks led by 4 (shared_exp 0: scale 1) with magnitudes below 8: the quantizer's code
  // of v is encode(v), saturation (6, 8) included; KG groups led by 6 likewise (scale 1).
  std::mt19937 gen(7);
  for (DType sd : kScales) {
    const std::size_t G = sd == DType::Float ? 128 : 32;
    const float lead = sd == DType::Float ? 6.0f : 4.0f, limit = sd == DType::Float ? 6.0f : 8.0f;
    std::vector<float> v;
    while (v.size() < 64 * 1024) {
      if (v.size() % G == 0) {
        v.push_back(lead);
        continue;
      }
      float x = std::bit_cast<float>(static_cast<uint32_t>(gen()));
      if (gen() % 4 == 0) x = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(gen), 3);  // near codes
      if (!(std::fabs(x) < limit)) x = std::isfinite(x) ? std::fmod(x, limit) : x;
      v.push_back(std::isnan(x) ? 0.0f : x);
    }
    const Output r = run_public(make_input(DType::Float, v), 1024, DType::Float4E2M1, sd, 2);
    quantized_codes().clear();
    std::vector<uint32_t> patterns;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const uint32_t bits = std::bit_cast<uint32_t>(v[i]);
      if (quantized_codes().emplace(bits, packed_code(r.q, i)).second) patterns.push_back(bits);
    }
    const auto cmp = ml_dtypes_child::compare(quantized_code, patterns, {});
    ASSERT_TRUE(cmp.ran) << cmp.error;
    EXPECT_EQ(cmp.mismatches, 0u) << cmp.first_mismatch;
    EXPECT_EQ(cmp.compared, patterns.size());
  }
}

TEST(QuantFp4, ContractGate) {
  std::vector<float> x(128, 1.0f);
  std::vector<uint8_t> q(128, 0xA5);  // an 8-bit call's 128 codes too
  std::vector<float> kg(1, -1.0f);
  std::vector<uint8_t> mx(4, 0xA5);
  s::set_contract_override(s::Contract::Vendor);
  for (DType t : kFp4) {
    const std::string name(qcoll::dtype_name(t));
    EXPECT_FALSE(qq::quantize_kg(x.data(), 1, 128, t, q.data(), kg.data()));
    EXPECT_FALSE(qq::quantize_mx(x.data(), 1, 128, t, q.data(), mx.data()));
    Status st = qq::check_quantize_args(x.data(), 1, 128, t, DType::Float, q.data(), kg.data());
    EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
    EXPECT_EQ(st.message, "x_dtype: KG (float scales) takes int8, hifloat8, float8_e4m3fn or float8_e5m2, got " + name +
                              "; " + name + " needs QCOLL_CONTRACT=extended");
    st = qq::check_quantize_args(x.data(), 1, 128, t, DType::Float8E8M0, q.data(), mx.data());
    EXPECT_EQ(st.message, "x_dtype: MX (float8_e8m0 scales) takes float8_e4m3fn or float8_e5m2, got " + name + "; " +
                              name + " needs QCOLL_CONTRACT=extended");
    qq::QuantizedTensor qt;
    EXPECT_EQ(qq::quantize(x.data(), 1, 128, t, DType::Float, qt).code, qcoll::StatusCode::ParamInvalid);
    std::vector<float> out(128);
    EXPECT_FALSE(qq::dequantize(q.data(), kg.data(), 1, 128, t, DType::Float, out.data()));
    // A caller that checked its call under extended passes that contract.
    qq::QuantOptions opt;
    opt.contract = s::Contract::Extended;
    EXPECT_TRUE(qq::quantize_rows(DType::Float, x.data(), 1, 128, t, DType::Float, q.data(), kg.data(), opt).ok());
  }
  // Nothing written by the refused calls before the last one.
  s::set_contract_override(std::nullopt);
  {
    const Extended ext;
    for (DType t : kFp4) {
      EXPECT_TRUE(qq::quantize_kg(x.data(), 1, 128, t, q.data(), kg.data()));
      EXPECT_TRUE(qq::quantize_mx(x.data(), 1, 128, t, q.data(), mx.data()));
      // The rules that do not depend on the contract: H, the scales dtype, the MX 8-bit ones.
      EXPECT_EQ(qq::check_quantize_args(x.data(), 1, 96, t, DType::Float, q.data(), kg.data()).message.substr(0, 2),
                "H:");
      EXPECT_EQ(qq::check_quantize_args(x.data(), 1, 128, t, DType::Float16, q.data(), kg.data()).message,
                "scales_dtype: must be float (KG) or float8_e8m0 (MX), got float16");
    }
    EXPECT_EQ(
        qq::check_quantize_args(x.data(), 1, 128, DType::Int8, DType::Float8E8M0, q.data(), mx.data()).message,
        "x_dtype: MX (float8_e8m0 scales) takes float8_e4m3fn, float8_e5m2, float4_e2m1 or float4_e1m2, got int8");
  }
  // A bad QCOLL_CONTRACT is an error for the 4-bit x dtypes only (the only ones it decides).
  ::setenv("QCOLL_CONTRACT", "bogus", 1);
  Status st = qq::check_quantize_args(x.data(), 1, 128, DType::Float4E2M1, DType::Float, q.data(), kg.data());
  EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
  EXPECT_NE(st.message.find("QCOLL_CONTRACT"), std::string::npos) << st.message;
  EXPECT_TRUE(qq::quantize_kg(x.data(), 1, 128, DType::Int8, q.data(), kg.data()));
  ::setenv("QCOLL_CONTRACT", "extended", 1);
  EXPECT_TRUE(qq::quantize_kg(x.data(), 1, 128, DType::Float4E2M1, q.data(), kg.data()));
  ::unsetenv("QCOLL_CONTRACT");
  EXPECT_FALSE(qq::quantize_kg(x.data(), 1, 128, DType::Float4E2M1, q.data(), kg.data()));
}

TEST(QuantFp4, ConvenienceLayerAndDequantize) {
  const Extended ext;
  const auto v = normal_values(3 * 256, 5, 2.0f);
  for (DType t : kFp4)
    for (DType sd : kScales) {
      qq::QuantizedTensor qt;
      ASSERT_TRUE(qq::quantize(v.data(), 3, 256, t, sd, qt).ok());
      const Output want = run_reference(make_input(DType::Float, v), 256, t, sd);
      ASSERT_EQ(qt.q, want.q);  // 3 * 256 / 2 bytes
      ASSERT_EQ(qt.scales_bytes(), want.scales.size());
      ASSERT_EQ(std::memcmp(qt.scales_data(), want.scales.data(), want.scales.size()), 0);
      // decode(q) * scale, one fp32 multiply, by the oracle's value list.
      const std::vector<float> d = qq::dequantize(qt);
      ASSERT_EQ(d.size(), v.size());
      const std::size_t G = sd == DType::Float ? 128 : 32;
      for (std::size_t i = 0; i < v.size(); ++i) {
        const float scale = sd == DType::Float ? qt.kg_scales[i / G] : std::ldexp(1.0f, int(qt.mx_scales[i / G]) - 127);
        const float want_d = fp4_oracle::value(oracle_format(t), packed_code(qt.q, i)) * scale;
        ASSERT_EQ(std::bit_cast<uint32_t>(d[i]), std::bit_cast<uint32_t>(want_d)) << i;
      }
    }
}

TEST(QuantFp4, ModeNames) {
  using K = s::Contract;
  // The vendor's table and names are unchanged; the 4-bit modes are the extended contract's.
  EXPECT_EQ(std::size(c::kQuantModes), 6u);
  EXPECT_EQ(c::quant_mode_names(), "kg-int8, kg-hif8, kg-e4m3, kg-e5m2, mx-e4m3 or mx-e5m2");
  EXPECT_EQ(c::quant_mode_names(K::Extended),
            "kg-int8, kg-hif8, kg-e4m3, kg-e5m2, mx-e4m3, mx-e5m2, kg-e2m1, kg-e1m2, mx-e2m1 or mx-e1m2");
  EXPECT_EQ(c::quant_mode_short_names(K::Extended), "int8, hif8, e4m3, e5m2, e2m1, e1m2");
  const struct {
    const char* name;
    DType x, sd;
  } fp4_modes[] = {{"kg-e2m1", DType::Float4E2M1, DType::Float},
                   {"kg-e1m2", DType::Float4E1M2, DType::Float},
                   {"mx-e2m1", DType::Float4E2M1, DType::Float8E8M0},
                   {"mx-e1m2", DType::Float4E1M2, DType::Float8E8M0}};
  for (const auto& m : fp4_modes) {
    EXPECT_EQ(c::find_quant_mode(m.name), nullptr) << m.name;
    EXPECT_EQ(c::find_quant_mode(m.name, K::Vendor), nullptr) << m.name;
    const c::QuantMode* mode = c::find_quant_mode(m.name, K::Extended);
    ASSERT_NE(mode, nullptr) << m.name;
    EXPECT_EQ(mode->x, m.x);
    EXPECT_EQ(mode->scales, m.sd);
    EXPECT_TRUE(c::dtypes_fit(mode->x, mode->scales, K::Extended));
    const c::QuantMode* got = nullptr;
    Status st = c::resolve_quant_mode(m.name, K::Vendor, got);
    EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
    EXPECT_EQ(st.message, std::string("mode: ") + m.name + " needs QCOLL_CONTRACT=extended (the contract is vendor)");
    EXPECT_TRUE(c::resolve_quant_mode(m.name, K::Extended, got).ok());
    EXPECT_EQ(got, mode);
  }
  EXPECT_EQ(c::find_quant_mode("e2m1", K::Extended), c::find_quant_mode("kg-e2m1", K::Extended));
  for (const c::QuantMode& m : c::quant_modes(K::Vendor)) EXPECT_EQ(c::find_quant_mode(m.name, K::Extended), &m);
  const c::QuantMode* got = nullptr;
  EXPECT_EQ(c::resolve_quant_mode("mx-int8", K::Vendor, got).message,
            "mode: must be kg-int8, kg-hif8, kg-e4m3, kg-e5m2, mx-e4m3 or mx-e5m2, got 'mx-int8' (int8, hif8, e4m3, "
            "e5m2 also name the KG modes)");
  // The fused operators' config rule under each contract.
  EXPECT_EQ(c::check_quant_config(DType::Float4E2M1, DType::Float8E8M0, 0.0f, K::Vendor).message,
            "config.xDtype: MX (float8_e8m0 scales) takes float8_e4m3fn or float8_e5m2, got float4_e2m1; float4_e2m1 "
            "needs QCOLL_CONTRACT=extended");
  EXPECT_EQ(c::check_quant_config(DType::Float4E2M1, DType::Float8E8M0, 0.0f, K::Vendor)
                .message.find(c::check_quant_config(DType::Float4E2M1, DType::Float8E8M0, 0.0f).message),
            0u);  // the vendor twin's message, then the hint
  EXPECT_TRUE(c::check_quant_config(DType::Float4E1M2, DType::Float, 0.0f, K::Extended).ok());
  EXPECT_EQ(c::check_quant_config(DType::HiFloat8, DType::Float, 0.5f, K::Extended).message,
            c::check_quant_config(DType::HiFloat8, DType::Float, 0.5f).message);
}
