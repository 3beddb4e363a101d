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
// FLOAT16 and BFLOAT16 are checked against reference decoders written here (bit formulas),
// the 8-bit formats against the library's decode tables (tests/ check them against contract.md §formats
// tables). INT8 and E8M0 against formulas (round-half-even + clamp; frexp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "qcoll/dtype.hpp"
#include "qcoll/formats.hpp"

namespace f = qcoll::formats;
using qcoll::DType;
using f::Saturation;

namespace {

[[noreturn]] void fail(const char* what, int format, float v, unsigned got, unsigned want) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  std::fprintf(stderr, "fuzz_codecs: %s: format %d, input %a (0x%08x): got 0x%x, want 0x%x\n", what,
               format, static_cast<double>(v), bits, got, want);
  std::abort();
}

// Independent reference decoders of the 16-bit formats.
double ref_decode_fp16(uint16_t h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1F) return m ? std::numeric_limits<double>::quiet_NaN() : s * INFINITY;
  if (e == 0) return s * std::ldexp(m, -24);
  return s * std::ldexp(1024 + m, e - 25);
}
double ref_decode_bf16(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

// One format's non-negative representable values, sorted, plus a virtual "overflow" entry
// one step above the largest finite value (where the next code would be).
struct Format {
  const char* name;
  std::vector<std::pair<double, uint32_t>> pos;  // (value, code), ascending; last = virtual
  uint32_t sign_bit;
  bool has_negative_zero;
  bool ties_away;            // HiF8; else ties to even code
  uint32_t max_code;         // largest finite
  uint32_t overflow_code;    // non-saturating overflow (Inf, or E4M3FN's NaN)
  bool overflow_is_nan;
};

Format make8(const char* name, DType t, double next_value, uint32_t next_code, bool ties_away,
             bool neg_zero, uint32_t overflow_code, bool overflow_nan) {
  Format fm{name, {}, 0x80, neg_zero, ties_away, 0, overflow_code, overflow_nan};
  const float* table = f::decode_table(t);
  for (uint32_t b = 0; b < 0x80; ++b)
    if (std::isfinite(table[b]) && table[b] >= 0) fm.pos.emplace_back(table[b], b);
  std::sort(fm.pos.begin(), fm.pos.end());
  fm.max_code = fm.pos.back().second;
  fm.pos.emplace_back(next_value, next_code);
  return fm;
}

Format make16(const char* name, double (*dec)(uint16_t), uint32_t inf_code, double next_value) {
  Format fm{name, {}, 0x8000, true, false, inf_code - 1, inf_code, false};
  for (uint32_t b = 0; b < inf_code; ++b) fm.pos.emplace_back(dec(static_cast<uint16_t>(b)), b);
  // Codes are monotonic in value for both formats; the search relies on sorted order.
  for (std::size_t i = 1; i < fm.pos.size(); ++i)
    if (!(fm.pos[i - 1].first < fm.pos[i].first)) std::abort();
  fm.pos.emplace_back(next_value, inf_code);
  return fm;
}

const std::vector<Format>& formats() {
  static const std::vector<Format> all = [] {
    std::vector<Format> v;
    v.push_back(make8("e4m3fn", DType::Float8E4M3FN, 480.0, 0x7F, false, true, 0x7F, true));
    v.push_back(make8("e5m2", DType::Float8E5M2, 65536.0, 0x7C, false, true, 0x7C, false));
    v.push_back(make8("hif8", DType::HiFloat8, 49152.0, 0x6F, true, false, 0x6F, false));
    v.push_back(make16("fp16", ref_decode_fp16, 0x7C00, 65536.0));
    v.push_back(make16("bf16", ref_decode_bf16, 0x7F80, std::ldexp(1.0, 128)));
    return v;
  }();
  return all;
}

// The expected code of v (not NaN) under the rules above; *overflow when it does not fit.
uint32_t expected_code(const Format& fm, float v, bool* overflow) {
  const double m = std::fabs(static_cast<double>(v));
  const auto& p = fm.pos;
  *overflow = false;
  std::size_t hi = std::lower_bound(p.begin(), p.end(), m,
                                    [](const auto& e, double x) { return e.first < x; }) - p.begin();
  std::size_t pick;
  if (hi == p.size()) {
    pick = p.size() - 1;  // beyond the virtual entry (Inf or huge): overflow
  } else if (p[hi].first == m || hi == 0) {
    pick = hi;
  } else {
    const std::size_t lo = hi - 1;
    const double dlo = m - p[lo].first, dhi = p[hi].first - m;
    if (dlo < dhi) pick = lo;
    else if (dhi < dlo) pick = hi;
    else pick = fm.ties_away ? hi : ((p[lo].second & 1) == 0 ? lo : hi);
  }
  if (pick == p.size() - 1) {
    *overflow = true;
    return 0;
  }
  uint32_t code = p[pick].second;
  if (std::signbit(v) && (code != 0 || fm.has_negative_zero)) code |= fm.sign_bit;
  return code;
}

uint32_t encode(int which, float v, Saturation s) {
  switch (which) {
    case 0: return f::encode_float8_e4m3fn(v, s);
    case 1: return f::encode_float8_e5m2(v, s);
    case 2: return f::encode_hifloat8(v, s);
    case 3: return f::encode_float16(v);
    default: return f::encode_bfloat16(v);
  }
}
double decode(int which, uint32_t code) {
  switch (which) {
    case 0: return f::decode_float8_e4m3fn(static_cast<uint8_t>(code));
    case 1: return f::decode_float8_e5m2(static_cast<uint8_t>(code));
    case 2: return f::decode_hifloat8(static_cast<uint8_t>(code));
    case 3: return f::decode_float16(static_cast<uint16_t>(code));
    default: return f::decode_bfloat16(static_cast<uint16_t>(code));
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
  int want = 0;
  if (!std::isnan(v)) {
    const double r = std::nearbyint(static_cast<double>(v));  // default mode: half to even
    want = static_cast<int>(std::clamp(r, -128.0, 127.0));
  }
  if (static_cast<int8_t>(got) != want) fail("int8 encode", 5, v, got, static_cast<uint8_t>(want));
}

void check_e8m0(float v, uint8_t low) {
  if (std::isfinite(v) && v > 0) {
    int x;
    const double m = std::frexp(static_cast<double>(v), &x);  // v = m * 2^x, m in [0.5, 1)
    int e = (x - 1) + (m >= 0.75 ? 1 : 0);
    e = std::clamp(e, -127, 127);
    const uint8_t got = f::encode_float8_e8m0(v);
    if (got != e + 127) fail("e8m0 encode", 6, v, got, static_cast<unsigned>(e + 127));
  }
  if (std::isnan(v) && f::encode_float8_e8m0(v) != 0xFF) fail("e8m0 NaN", 6, v, f::encode_float8_e8m0(v), 0xFF);
  if (low != 0xFF) {
    const float d = f::decode_float8_e8m0(low);
    if (d != std::ldexp(1.0f, low - 127)) fail("e8m0 decode", 6, d, low, 0);
    if (f::encode_float8_e8m0(d) != low) fail("e8m0 round trip", 6, d, f::encode_float8_e8m0(d), low);
  }
}

// 16-bit decoders against the reference formulas.
void check_decode16(uint16_t h) {
  const double a = f::decode_float16(h), b = ref_decode_fp16(h);
  // NaN: any NaN (the sign and payload of a decoded NaN are not specified).
  if (std::isnan(a) != std::isnan(b) || (!std::isnan(b) && (a != b || std::signbit(a) != std::signbit(b))))
    fail("fp16 decode", 3, static_cast<float>(a), h, 0);
  const double c = f::decode_bfloat16(h), d = ref_decode_bf16(h);
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
