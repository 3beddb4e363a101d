// Independent reference definitions of the 8-bit formats, written for the tests from the
// field definitions of contract.md §formats (and, for HiF8, from the paper's field structure:
// dot prefix -> exponent width). They never call the code under test.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace qcoll_test {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

inline double p2(int e) { return std::pow(2.0, e); }

inline double ref_int8(unsigned b) { return b < 128 ? double(b) : double(b) - 256.0; }

inline double ref_e4m3fn(unsigned b) {
  const double s = (b & 0x80) ? -1.0 : 1.0;
  const unsigned exp = (b >> 3) & 15, man = b & 7;
  if (exp == 15 && man == 7) return kNaN;
  if (exp == 0) return s * (man / 8.0) * p2(1 - 7);
  return s * (1.0 + man / 8.0) * p2(int(exp) - 7);
}

inline double ref_e5m2(unsigned b) {
  const double s = (b & 0x80) ? -1.0 : 1.0;
  const unsigned exp = (b >> 2) & 31, man = b & 3;
  if (exp == 31) return man == 0 ? s * kInf : kNaN;
  if (exp == 0) return s * (man / 4.0) * p2(1 - 15);
  return s * (1.0 + man / 4.0) * p2(int(exp) - 15);
}

inline double ref_e8m0(unsigned b) { return b == 255 ? kNaN : p2(int(b) - 127); }

// HiF8 read bit by bit: sign, then the dot prefix, then a D-bit sign-magnitude exponent
// whose magnitude has an implied leading 1 (D = 0: exponent 0), then the mantissa.
inline double ref_hif8(unsigned b) {
  if (b == 0x00) return 0.0;
  if (b == 0x80) return kNaN;
  const double s = (b & 0x80) ? -1.0 : 1.0;
  // bits 6..0 as a string of 7 bits, consumed from the top
  int pos = 6;
  auto bit = [&](void) { return int((b >> pos--) & 1); };
  int d;  // exponent width
  if (bit() == 1) {
    d = bit() == 1 ? 4 : 3;
  } else if (bit() == 1) {
    d = 2;
  } else if (bit() == 1) {
    d = 1;
  } else if (bit() == 1) {
    d = 0;
  } else {
    return s * p2(int(b & 7) - 23);  // 0000: denormal
  }
  int e = 0;
  if (d > 0) {
    const int esign = bit();
    int mag = 1;
    for (int i = 1; i < d; ++i) mag = mag * 2 + bit();
    e = esign ? -mag : mag;
  }
  const int mbits = pos + 1;
  int m = 0;
  while (pos >= 0) m = m * 2 + bit();
  if (d == 4 && e == 15 && m == 1) return s * kInf;
  return s * (1.0 + m / p2(mbits)) * p2(e);
}

// One finite, non-negative representable value with its code.
struct Point {
  double value;
  unsigned code;
};

// The non-negative finite values of a format sorted ascending (one code per value:
// +0 only), from a reference decoder.
template <class Decode>
std::vector<Point> nonnegative_points(Decode decode) {
  std::vector<Point> pts;
  for (unsigned b = 0; b < 256; ++b) {
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
inline std::optional<unsigned> ref_nearest(const std::vector<Point>& pts, double beyond, Ties ties,
                                           double ax) {
  if (ax > beyond) return std::nullopt;
  std::vector<Point> all = pts;
  all.push_back({beyond, pts.back().code + 1});
  auto it = std::lower_bound(all.begin(), all.end(), ax,
                             [](const Point& p, double x) { return p.value < x; });
  Point chosen;
  if (it == all.begin()) {
    chosen = *it;
  } else {
    const Point hi = *it, lo = *(it - 1);
    const double dlo = ax - lo.value, dhi = hi.value - ax;
    if (dlo < dhi) chosen = lo;
    else if (dhi < dlo) chosen = hi;
    else if (ties == Ties::AwayFromZero) chosen = hi;
    else chosen = (lo.code & 1) == 0 ? lo : hi;
  }
  if (chosen.value == beyond) return std::nullopt;
  return chosen.code;
}

}  // namespace qcoll_test
