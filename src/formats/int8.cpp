// INT8: two's complement integer -128..127 (contract.md §formats-int8); encoder rounds half to even and
// clamps (contract.md §encoders). NaN encodes to 0. There is no overflow code, so both saturation
// modes clamp.
#include <cstdint>

#include "formats/traits.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {

float decode_int8(uint8_t b) { return static_cast<float>(static_cast<int8_t>(b)); }

uint8_t encode_int8(float v, Saturation /*s: INT8 always clamps*/) {
  if (!(v == v)) return 0;  // NaN
  using T = Traits<DType::Int8>;
  if (v >= T::kMaxFinite) return T::kMaxCode;
  if (v <= T::kMinValue) return T::kMinCode;
  // |v| < 128 here: truncation and the remaining fraction are exact in fp32,
  // so the rounding below does not depend on the FPU rounding mode.
  const int t = static_cast<int>(v);
  const float frac = v - static_cast<float>(t);
  const int odd = t & 1;
  // Branch-free (random data would defeat a branch predictor here).
  const int r = t + static_cast<int>(frac > 0.5f) - static_cast<int>(frac < -0.5f) +
                (static_cast<int>(frac == 0.5f) & odd) - (static_cast<int>(frac == -0.5f) & odd);
  return static_cast<uint8_t>(static_cast<int8_t>(r));
}

}  // namespace qcoll::formats
