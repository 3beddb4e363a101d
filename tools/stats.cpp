// Medians, output values and errors; see stats.hpp.
#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "qcoll/formats.hpp"

namespace qcoll::cli {

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

float output_value(DType t, const uint8_t* data, std::size_t i) {
  if (t == DType::Float) {
    float f;
    std::memcpy(&f, data + 4 * i, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, data + 2 * i, 2);
  if (t == DType::Float16) return formats::decode_float16(bits);
  if (t == DType::BFloat16) return formats::decode_bfloat16(bits);
  return std::numeric_limits<float>::quiet_NaN();
}

void ErrorAccumulator::add(double y, double e) {
  const double d = y - e;
  err2_ += d * d;
  ref2_ += e * e;
  max_err_ = std::max(max_err_, std::fabs(d));
  if (std::isnan(d)) nan_ = true;
  max_ref_ = std::max(max_ref_, std::fabs(e));
}

ErrorStats ErrorAccumulator::stats() const {
  if (nan_) return {NAN, NAN};
  return {ref2_ > 0 ? std::sqrt(err2_ / ref2_) : std::sqrt(err2_), max_ref_ > 0 ? max_err_ / max_ref_ : max_err_};
}

}  // namespace qcoll::cli
