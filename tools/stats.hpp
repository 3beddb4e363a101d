// Measurements shared by `qcoll demo` and `qcoll bench`: medians of timings, the error of an
// operator's output against an exact sum, and reading one value of an output tensor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "qcoll/dtype.hpp"

namespace qcoll::cli {

// The median (mean of the middle two for an even count); NaN for an empty vector.
double median(std::vector<double> v);

// Element i of an output tensor of dtype Float, Float16 or BFloat16 (the library's
// decoders), as fp32; NaN for another dtype.
float output_value(DType t, const uint8_t* data, std::size_t i);

// The errors of values y against exact values e.
struct ErrorStats {
  double rel_rms = 0;      // sqrt(sum (y - e)^2 / sum e^2)
  double max_abs_rel = 0;  // max |y - e| / max |e|
};

class ErrorAccumulator {
 public:
  void add(double y, double e);
  // Sums of the accumulated values, so that ranks can combine them: {sum d^2, sum e^2}.
  double err2() const { return err2_; }
  double ref2() const { return ref2_; }
  ErrorStats stats() const;  // NaN in both if any y - e was NaN

 private:
  double err2_ = 0, ref2_ = 0, max_err_ = 0, max_ref_ = 0;
  bool nan_ = false;
};

}  // namespace qcoll::cli
