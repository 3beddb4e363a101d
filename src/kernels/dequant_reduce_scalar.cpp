// The reference dequant_reduce: one element at a time, exactly as contract.md §numerics states it.
#include <cstring>
#include <vector>

#include "core/float_env.hpp"
#include "kernels/dequant_reduce.hpp"
#include "kernels/output_cast.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::kernels {

void dequant_reduce_scalar(const ReduceArgs& a) {
  require_reduce_args(a);
  detail::dequant_reduce_scalar_valid(a);
}

void detail::dequant_reduce_scalar_valid(const ReduceArgs& a) {
  if (a.count == 0) return;
  const core::KeepSubnormals keep_subnormals;
  const bool fp4 = is_4bit_format(a.x_dtype);  // packed: element i is nibble i & 1 of byte i / 2
  const float* x_table = fp4 ? formats::decode_table4(a.x_dtype) : formats::decode_table(a.x_dtype);
  const bool mx = a.scales_dtype == DType::Float8E8M0;
  const float* e8m0_table = mx ? formats::decode_table(DType::Float8E8M0) : nullptr;
  const std::size_t g = group_size(a.scales_dtype);
  const auto n = static_cast<std::size_t>(a.nsrc);
  std::vector<float> scale(n);

  for (std::size_t group = 0; group < a.count / g; ++group) {
    for (std::size_t k = 0; k < n; ++k) {
      if (mx) {
        scale[k] = e8m0_table[a.scales[k][group]];
      } else {
        std::memcpy(&scale[k], a.scales[k] + 4 * group, 4);
      }
    }
    for (std::size_t i = group * g; i < (group + 1) * g; ++i) {
      float acc = 0.0f;
      for (std::size_t k = 0; k < n; ++k) {
        const uint8_t code = fp4 ? formats::fp4_get(a.x[k], i) : a.x[k][i];
        const float d = x_table[code] * scale[k];  // one fp32 multiply
        acc = acc + d;                             // one fp32 add (no contraction)
      }
      store_sum(a.out_dtype, a.out, i, acc);
    }
  }
}

}  // namespace qcoll::kernels
