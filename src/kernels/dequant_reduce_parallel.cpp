// dequant_reduce over several threads: the element range is cut at multiples of
// max(group size, 64 bytes of x) elements (64 elements, 128 for the packed 4-bit x dtypes),
// each piece reduced by dequant_reduce on its own; a 4-bit piece starting at element e
// starts at byte e / 2 of x (e is even: a multiple of the group size). The
// arguments are checked once, here; the pieces are cut from them and not checked again.
#include <algorithm>
#include <vector>

#include "core/worker_pool.hpp"
#include "kernels/dequant_reduce.hpp"

namespace qcoll::kernels {

void dequant_reduce_parallel(const ReduceArgs& a, int nthreads) {
  require_reduce_args(a);
  const std::size_t g = group_size(a.scales_dtype);
  const bool fp4 = is_4bit_format(a.x_dtype);                         // two elements a byte of x
  const std::size_t unit = std::max<std::size_t>(g, fp4 ? 128 : 64);  // whole groups, 64-byte steps of x
  const std::size_t units = (a.count + unit - 1) / unit;
  const int parts = static_cast<int>(std::min<std::size_t>(
      units, static_cast<std::size_t>(std::clamp(nthreads, 1, core::WorkerPool::kMaxWorkers + 1))));
  if (parts <= 1) {
    detail::dequant_reduce_valid(a);
    return;
  }
  const std::size_t scale_bytes = a.scales_dtype == DType::Float ? 4 : 1;
  const std::size_t out_bytes = dtype_size(a.out_dtype);
  const auto n = static_cast<std::size_t>(a.nsrc);
  core::WorkerPool::shared().run(parts, [&](int p) {
    // Part p gets units [units*p/parts, units*(p+1)/parts).
    const std::size_t begin = std::min(a.count, units * p / parts * unit);
    const std::size_t end = std::min(a.count, units * (p + 1) / parts * unit);
    if (begin == end) return;
    std::vector<const uint8_t*> x(n), s(n);
    for (std::size_t k = 0; k < n; ++k) {
      x[k] = a.x[k] + (fp4 ? begin / 2 : begin);
      s[k] = a.scales[k] + begin / g * scale_bytes;
    }
    ReduceArgs sub = a;
    sub.x = x.data();
    sub.scales = s.data();
    sub.count = end - begin;
    sub.out = static_cast<uint8_t*>(a.out) + begin * out_bytes;
    detail::dequant_reduce_valid(sub);
  });
}

}  // namespace qcoll::kernels
