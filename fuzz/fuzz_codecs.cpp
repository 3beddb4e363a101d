// libFuzzer target: the number-format codecs (src/formats) against invariants checked here.
//
// The input is a sequence of 6-byte records: [format][flags][4 bytes of a float, little-endian].
// For each record:
//   - encode of the float (both saturation modes) equals the value-nearest representable
//     code, found here by a search over the format's sorted values, with the §encoders tie
//     rule (ties to even; HiF8 ties away from zero) and the overflow rule (decided after
//     rounding, as if the format had one more binade);
//   - saturating mode never turns a non-NaN into NaN, and NaN always stays NaN;
//   - the low byte(s) of the float, read as a code, decode and re-encode to the same code
//     (round trip of every finite code);
//   - saturating encode is monotonic: consecutive records of one format keep their order.
// Every reference is the test oracle's (tests/oracle.hpp: decoders from the contract.md §formats
// formulas, the nearest-value search, INT8 round-half-even + clamp, E8M0 by frexp), never the
// library's own tables.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "oracle.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/formats.hpp"

namespace f = qcoll::formats;
using f::Saturation;
using qcoll::DType;

namespace {

[[noreturn]] void fail(const char* what, int format, float v, unsigned got, unsigned want) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  std::fprintf(stderr, "fuzz_codecs: %s: format %d, input %a (0x%08x): got 0x%x, want 0x%x\n", what, format,
               static_cast<double>(v), bits, got, want);
  std::abort();
}

// One format's non-negative representable values, sorted (from the oracle's decoders), and
// the virtual value one step above the largest finite one (where the next code would be).
struct Format {
  const char* name;
  std::vector<oracle::Point> pts;  // ascending
  double beyond;                   // overflow threshold after rounding
  uint32_t sign_bit;
  bool has_negative_zero;
  oracle::Ties ties;       // HiF8 away from zero; else to the even code
  uint32_t max_code;       // largest finite
  uint32_t overflow_code;  // non-saturating overflow (Inf, or E4M3FN's NaN)
  bool overflow_is_nan;
};

template <class Decode>
Format make(const char* name, Decode dec, unsigned ncodes, double beyond, uint32_t sign_bit, bool neg_zero,
            oracle::Ties ties, uint32_t overflow_code, bool overflow_nan) {
  Format fm{name,        oracle::nonnegative_points(dec, ncodes), beyond, sign_bit, neg_zero, ties, 0, overflow_code,
            overflow_nan};
  fm.max_code = fm.pts.back().code;
  return fm;
}

const std::vector<Format>& formats() {
  using oracle::Ties;
  static const std::vector<Format> all = [] {
    auto e4m3 = [](unsigned b) { return oracle::decode_e4m3fn(static_cast<uint8_t>(b)); };
    auto e5m2 = [](unsigned b) { return oracle::decode_e5m2(static_cast<uint8_t>(b)); };
    auto hif8 = [](unsigned b) { return oracle::decode_hif8(static_cast<uint8_t>(b)); };
    auto fp16 = [](unsigned b) { return oracle::decode_fp16(static_cast<uint16_t>(b)); };
    auto bf16 = [](unsigned b) { return oracle::decode_bf16(static_cast<uint16_t>(b)); };
    std::vector<Format> v;
    v.push_back(make("e4m3fn", e4m3, 256, 480.0, 0x80, true, Ties::ToEven, 0x7F, true));
    v.push_back(make("e5m2", e5m2, 256, 65536.0, 0x80, true, Ties::ToEven, 0x7C, false));
    v.push_back(make("hif8", hif8, 256, 49152.0, 0x80, false, Ties::AwayFromZero, 0x6F, false));
    v.push_back(make("fp16", fp16, 0x7C00, 65536.0, 0x8000, true, Ties::ToEven, 0x7C00, false));
    v.push_back(make("bf16", bf16, 0x7F80, std::ldexp(1.0, 128), 0x8000, true, Ties::ToEven, 0x7F80, false));
    return v;
  }();
  return all;
}

// The expected code of v (not NaN) under the rules above; *overflow when it does not fit.
uint32_t expected_code(const Format& fm, float v, bool* overflow) {
  const auto mag = oracle::nearest(fm.pts, fm.beyond, fm.ties, std::fabs(static_cast<double>(v)));
  *overflow = !mag;
  if (!mag) return 0;
  uint32_t code = *mag;
  if (std::signbit(v) && (code != 0 || fm.has_negative_zero)) code |= fm.sign_bit;
  return code;
}

uint32_t encode(int which, float v, Saturation s) {
  switch (which) {
    case 0:
      return f::encode_float8_e4m3fn(v, s);
    case 1:
      return f::encode_float8_e5m2(v, s);
    case 2:
      return f::encode_hifloat8(v, s);
    case 3:
      return f::encode_float16(v);
    default:
      return f::encode_bfloat16(v);
  }
}
double decode(int which, uint32_t code) {
  switch (which) {
    case 0:
      return f::decode_float8_e4m3fn(static_cast<uint8_t>(code));
    case 1:
      return f::decode_float8_e5m2(static_cast<uint8_t>(code));
    case 2:
      return f::decode_hifloat8(static_cast<uint8_t>(code));
    case 3:
      return f::decode_float16(static_cast<uint16_t>(code));
    default:
      return f::decode_bfloat16(static_cast<uint16_t>(code));
  }
}

void check_float_format(int which, float v, uint32_t low_code) {
  const Format& fm = formats()[which];
  const bool is16 = which >= 3;
  const int modes = is16 ? 1 : 2;  // the 16-bit encoders have no saturating mode
  for (int mode = 0; mode < modes; ++mode) {
    const Saturation s = mode ? Saturation::Saturating : Saturation::NonSaturating;
    const uint32_t got = encode(which, v, s);
    const double back = decode(which, got);
    if (std::isnan(v)) {
      if (!std::isnan(back)) fail("NaN did not stay NaN", which, v, got, 0);
      if (is16 && (got & (which == 3 ? 0x200u : 0x40u)) == 0) fail("NaN is not quiet", which, v, got, 0);
      continue;
    }
    if (std::isnan(back) && s == Saturation::Saturating) fail("saturating gave NaN", which, v, got, 0);
    bool overflow = false;
    uint32_t want = expected_code(fm, v, &overflow);
    if (overflow) {
      const uint32_t sign = std::signbit(v) ? fm.sign_bit : 0;
      if (s == Saturation::Saturating) {
        want = fm.max_code | sign;
      } else if (fm.overflow_is_nan) {
        if (!std::isnan(back)) fail("overflow must give NaN", which, v, got, fm.overflow_code);
        continue;
      } else {
        want = fm.overflow_code | sign;
      }
    }
    if (got != want) fail(s == Saturation::Saturating ? "saturating encode" : "encode", which, v, got, want);
  }
  // Round trip of the code made of the input's low bits.
  const uint32_t code = is16 ? (low_code & 0xFFFF) : (low_code & 0xFF);
  const double val = decode(which, code);
  if (std::isfinite(val)) {
    for (int mode = 0; mode < modes; ++mode) {
      const Saturation s = mode ? Saturation::Saturating : Saturation::NonSaturating;
      const uint32_t again = encode(which, static_cast<float>(val), s);
      if (again != code) fail("round trip of a finite code", which, static_cast<float>(val), again, code);
    }
  }
}

void check_int8(float v) {
  const uint8_t got = f::encode_int8(v, Saturation::Saturating);
  const int want = oracle::encode_int8(v);
  if (static_cast<int8_t>(got) != want) fail("int8 encode", 5, v, got, static_cast<uint8_t>(want));
}

void check_e8m0(float v, uint8_t low) {
  if (std::isfinite(v) && v > 0) {
    const uint8_t got = f::encode_float8_e8m0(v);
    const unsigned want = oracle::encode_e8m0(v);
    if (got != want) fail("e8m0 encode", 6, v, got, want);
  }
  if (std::isnan(v) && f::encode_float8_e8m0(v) != 0xFF) fail("e8m0 NaN", 6, v, f::encode_float8_e8m0(v), 0xFF);
  if (low != 0xFF) {
    const float d = f::decode_float8_e8m0(low);
    if (d != oracle::decode_e8m0(low)) fail("e8m0 decode", 6, d, low, 0);
    if (f::encode_float8_e8m0(d) != low) fail("e8m0 round trip", 6, d, f::encode_float8_e8m0(d), low);
  }
}

// 16-bit decoders against the reference formulas.
void check_decode16(uint16_t h) {
  const double a = f::decode_float16(h), b = oracle::decode_fp16(h);
  // NaN: any NaN (the sign and payload of a decoded NaN are not specified).
  if (std::isnan(a) != std::isnan(b) || (!std::isnan(b) && (a != b || std::signbit(a) != std::signbit(b))))
    fail("fp16 decode", 3, static_cast<float>(a), h, 0);
  const double c = f::decode_bfloat16(h), d = oracle::decode_bf16(h);
  if (std::isnan(c) != std::isnan(d) || (!std::isnan(d) && (c != d || std::signbit(c) != std::signbit(d))))
    fail("bf16 decode", 4, static_cast<float>(c), h, 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Previous saturating result per format, for the monotonicity check.
  double prev_in[5], prev_out[5];
  bool have_prev[5] = {false, false, false, false, false};
  for (std::size_t i = 0; i + 6 <= size; i += 6) {
    const int sel = data[i] % 7;
    uint32_t bits;
    std::memcpy(&bits, data + i + 2, 4);
    if (data[i + 1] & 1) bits &= 0x8FFFFFFFu;  // bias toward the formats' small exponents
    if (data[i + 1] & 2) bits = (bits & 0x80000000u) | ((bits & 0x00FFFFFFu) + (0x3Fu << 24));
    float v;
    std::memcpy(&v, &bits, 4);
    if (sel < 5) {
      check_float_format(sel, v, bits);
      if (sel < 3 && !std::isnan(v)) {
        const double out = decode(sel, encode(sel, v, Saturation::Saturating));
        if (have_prev[sel]) {
          const bool bad = (prev_in[sel] < v && prev_out[sel] > out) || (prev_in[sel] > v && prev_out[sel] < out);
          if (bad) fail("saturating encode is not monotonic", sel, v, 0, 0);
        }
        prev_in[sel] = v;
        prev_out[sel] = out;
        have_prev[sel] = true;
      }
    } else if (sel == 5) {
      check_int8(v);
    } else {
      check_e8m0(v, static_cast<uint8_t>(bits));
    }
    check_decode16(static_cast<uint16_t>(bits));
  }
  return 0;
}
