// Sweeps of the encoders over fp32 inputs.
//  - E4M3FN, E5M2, HiF8 (both modes): the non-negative fp32s walked in increasing order
//    against an incremental nearest-value reference built from the reference decoders
//    (tests/oracle.hpp); negative inputs on a stride. By default every 97th
//    bit pattern; with QCOLL_EXHAUSTIVE=1 all 2^31 (minutes).
//  - FP16 against _Float16 and BF16 against a double-distance rule over all 2^32 inputs:
//    only with QCOLL_EXHAUSTIVE=1, otherwise skipped.
//  - E2M1, E1M2 against the value-list oracle (tests/fp4_oracle.hpp): every 97th fp32 bit
//    pattern, all 2^32 with QCOLL_EXHAUSTIVE=1; E2M1 against ml_dtypes' float4_e2m1fn (a
//    Python child process) for every finite fp32: only with QCOLL_EXHAUSTIVE=1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "fp4_oracle.hpp"
#include "ml_dtypes_child.hpp"
#include "oracle.hpp"
#include "qcoll/formats.hpp"

namespace f = qcoll::formats;
using f::Saturation;
using namespace oracle;

namespace {

float from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

struct Format {
  const char* name;
  uint8_t (*encode)(float, Saturation);
  double (*ref_decode)(uint8_t);
  double beyond;
  Ties ties;
  unsigned max_code, overflow_code;
  bool negative_zero;
};

// Walks every fp32 from +0 to +Inf in increasing order. Between neighbouring
// representable values lo < hi, inputs below the midpoint give lo, above it hi, at it the
// tie rule's choice; from the virtual value `beyond` on (and Inf) overflow.
bool exhaustive_requested() {
  const char* e = std::getenv("QCOLL_EXHAUSTIVE");
  return e && std::string(e) == "1";
}

void sweep_nonnegative(const Format& fm, Saturation s) {
  const uint64_t stride = exhaustive_requested() ? 1 : 97;
  const auto pts = nonnegative_points(fm.ref_decode);
  const unsigned overflow = s == Saturation::Saturating ? fm.max_code : fm.overflow_code;
  std::vector<Point> all = pts;
  all.push_back({fm.beyond, overflow});  // reaching it means overflow
  size_t i = 0;
  uint64_t mismatches = 0;
  for (uint64_t step = 0;; ++step) {
    // every stride-th pattern, then +Inf last
    const uint64_t bits = std::min<uint64_t>(step * stride, 0x7F800000u);
    const float x = from_bits(static_cast<uint32_t>(bits));
    const double xd = x;
    while (i + 1 < all.size() && xd >= all[i + 1].value) ++i;
    unsigned want;
    if (i + 1 == all.size()) {
      want = overflow;
    } else {
      const Point lo = all[i], hi = all[i + 1];
      const double mid = (lo.value + hi.value) / 2;
      if (xd < mid)
        want = lo.code;
      else if (xd > mid)
        want = hi.code;
      else if (fm.ties == Ties::AwayFromZero)
        want = hi.code;
      else
        want = (i + 1 == all.size() - 1) ? ((lo.code & 1) ? overflow : lo.code) : ((lo.code & 1) ? hi.code : lo.code);
    }
    const unsigned got = fm.encode(x, s);
    if (got != want && mismatches++ < 10)
      ADD_FAILURE() << fm.name << " sat=" << int(s) << " x=" << std::hexfloat << x << " got 0x" << std::hex << got
                    << " want 0x" << want;
    // negative inputs: the same magnitude with the sign bit (HiF8: no negative zero)
    if (stride > 1 || (bits & 0xFF) == 0x5B) {
      const unsigned got_neg = fm.encode(-x, s);
      const unsigned want_neg = (want == 0 && !fm.negative_zero) ? 0u : (want | 0x80u);
      if (got_neg != want_neg && mismatches++ < 10)
        ADD_FAILURE() << fm.name << " sat=" << int(s) << " x=" << std::hexfloat << -x;
    }
    if (bits == 0x7F800000u) break;
  }
  EXPECT_EQ(mismatches, 0u) << fm.name;
}

const Format kE4M3 = {"e4m3fn", f::encode_float8_e4m3fn, decode_e4m3fn, 480.0, Ties::ToEven, 0x7E, 0x7F, true};
const Format kE5M2 = {"e5m2", f::encode_float8_e5m2, decode_e5m2, 65536.0, Ties::ToEven, 0x7B, 0x7C, true};
const Format kHiF8 = {"hifloat8", f::encode_hifloat8, decode_hif8, 49152.0, Ties::AwayFromZero, 0x6E, 0x6F, false};

}  // namespace

TEST(FormatsExhaustive, E4M3FNNonNegativeSweep) {
  sweep_nonnegative(kE4M3, Saturation::NonSaturating);
  sweep_nonnegative(kE4M3, Saturation::Saturating);
}
TEST(FormatsExhaustive, E5M2NonNegativeSweep) {
  sweep_nonnegative(kE5M2, Saturation::NonSaturating);
  sweep_nonnegative(kE5M2, Saturation::Saturating);
}
TEST(FormatsExhaustive, HiF8NonNegativeSweep) {
  sweep_nonnegative(kHiF8, Saturation::NonSaturating);
  sweep_nonnegative(kHiF8, Saturation::Saturating);
}

#ifdef __FLT16_MAX__
TEST(FormatsExhaustive, Float16AllInputsAgainstCompiler) {
  if (!exhaustive_requested()) GTEST_SKIP() << "set QCOLL_EXHAUSTIVE=1 to run (2^32 inputs)";
  uint64_t mismatches = 0;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; ++bits) {
    const float x = from_bits(static_cast<uint32_t>(bits));
    if (std::isnan(x)) continue;
    const _Float16 h = static_cast<_Float16>(x);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    if (f::encode_float16(x) != want && mismatches++ < 10) ADD_FAILURE() << std::hexfloat << x;
  }
  EXPECT_EQ(mismatches, 0u);
}
#endif

TEST(FormatsExhaustive, BFloat16AllInputs) {
  if (!exhaustive_requested()) GTEST_SKIP() << "set QCOLL_EXHAUSTIVE=1 to run (2^32 inputs)";
  // the oracle's fp32 -> bf16 rounding (nearest, ties to even, overflow after rounding)
  uint64_t mismatches = 0;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; ++bits) {
    const float x = from_bits(static_cast<uint32_t>(bits));
    if (std::isnan(x)) continue;
    const uint16_t want = to_bf16(x);
    if (f::encode_bfloat16(x) != want && mismatches++ < 10) ADD_FAILURE() << std::hexfloat << x;
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(FormatsExhaustive, Fp4AllInputsAgainstOracle) {
  const uint64_t stride = exhaustive_requested() ? 1 : 97;
  struct Codec {
    const fp4_oracle::Fp4& fm;
    uint8_t (*encode)(float);
  };
  for (const Codec& c :
       {Codec{fp4_oracle::kE2M1, f::encode_float4_e2m1}, Codec{fp4_oracle::kE1M2, f::encode_float4_e1m2}}) {
    const fp4_oracle::Fp4& fm = c.fm;
    uint64_t mismatches = 0;
    for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += stride) {
      const float x = from_bits(static_cast<uint32_t>(bits));
      const uint8_t want = fp4_oracle::encode(fm, x);
      if (c.encode(x) != want && mismatches++ < 10)
        ADD_FAILURE() << fm.name << " x=" << std::hexfloat << x << " want " << std::dec << unsigned{want};
    }
    EXPECT_EQ(mismatches, 0u) << fm.name;
  }
}

TEST(FormatsExhaustive, E2M1AgainstMlDtypes) {
  if (!exhaustive_requested()) GTEST_SKIP() << "set QCOLL_EXHAUSTIVE=1 to run (2^32 inputs)";
  if (!ml_dtypes_child::ml_dtypes_available())
    GTEST_SKIP() << "python3 with ml_dtypes >= 0.5 (float4_e2m1fn) not found (" << ml_dtypes_child::python() << ")";
  const auto r = ml_dtypes_child::compare(f::encode_float4_e2m1, {}, {{0, 1, uint64_t{1} << 32}});
  EXPECT_TRUE(r.ran) << r.error;
  EXPECT_EQ(r.compared, (uint64_t{1} << 32) - 2 * ((uint64_t{1} << 23) - 1));  // all but the NaNs
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
}
