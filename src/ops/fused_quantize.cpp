#include "ops/fused_quantize.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/worker_pool.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/formats.hpp"
#include "qcoll/quant.hpp"

namespace qcoll::ops {

namespace {

// Rows per part below which splitting a call over threads does not pay.
constexpr std::size_t kMinRowsPerThread = 4;

}  // namespace

Status RowQuantizer::operator()(const uint8_t* in, std::size_t rows, uint8_t* q, uint8_t* scales) const {
  const std::size_t parts =
      std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), rows / kMinRowsPerThread);
  if (parts <= 1) return rows_one_thread(in, rows, q, scales);
  // TODO(quantsimd): the quantizers' own `threads` option once it lands; until then the
  // rows are split here over the shared worker pool (rows are independent: same bits).
  const std::size_t srow = contract::scales_row_bytes(scales_dtype, H), irow = in_row_bytes();
  std::vector<Status> st(parts);
  core::WorkerPool::shared().run(static_cast<int>(parts), [&](int p) {
    const std::size_t r0 = rows * static_cast<std::size_t>(p) / parts;
    const std::size_t r1 = rows * static_cast<std::size_t>(p + 1) / parts;
    st[static_cast<std::size_t>(p)] = rows_one_thread(in + r0 * irow, r1 - r0, q + r0 * H, scales + r0 * srow);
  });
  for (const Status& s : st)
    if (!s.ok()) return s;
  return Status::Ok();
}

Status RowQuantizer::rows_one_thread(const uint8_t* in, std::size_t rows, uint8_t* q, uint8_t* scales) const {
  if (rows == 0) return Status::Ok();
  const bool kg = scales_dtype == DType::Float;
  quant::KgOptions opt;
  opt.hif8_target = hif8_target;
  auto* kg_scales = reinterpret_cast<float*>(scales);
  bool ok = false;
  switch (in_dtype) {
    case DType::Float: {
      const auto* x = reinterpret_cast<const float*>(in);
      ok = kg ? quant::quantize_kg(x, rows, H, x_dtype, q, kg_scales, opt)
              : quant::quantize_mx(x, rows, H, x_dtype, q, scales);
      break;
    }
    case DType::BFloat16: {
      const auto* x = reinterpret_cast<const uint16_t*>(in);
      ok = kg ? quant::quantize_kg_bf16(x, rows, H, x_dtype, q, kg_scales, opt)
              : quant::quantize_mx_bf16(x, rows, H, x_dtype, q, scales);
      break;
    }
    case DType::Float16: {
      // TODO(quantsimd): quantize_kg_fp16 / quantize_mx_fp16. Until then the rows go through
      // fp32 (exact), a few rows at a time.
      const auto* x = reinterpret_cast<const uint16_t*>(in);
      const std::size_t step = std::max<std::size_t>(1, (std::size_t{1} << 16) / H);
      std::vector<float> f(std::min(rows, step) * H);
      const std::size_t srow = contract::scales_row_bytes(scales_dtype, H);
      ok = true;
      for (std::size_t r = 0; r < rows && ok; r += step) {
        const std::size_t nr = std::min(step, rows - r);
        for (std::size_t i = 0; i < nr * H; ++i) f[i] = formats::decode_float16(x[r * H + i]);
        ok = kg ? quant::quantize_kg(f.data(), nr, H, x_dtype, q + r * H,
                                     reinterpret_cast<float*>(scales + r * srow), opt)
                : quant::quantize_mx(f.data(), nr, H, x_dtype, q + r * H, scales + r * srow);
      }
      break;
    }
    default:
      break;
  }
  if (!ok)
    return Status::Error(StatusCode::InnerError, "the quantizer refused a validated call (input " +
                                                     std::string(dtype_name(in_dtype)) + ", x " +
                                                     std::string(dtype_name(x_dtype)) + ")");
  return Status::Ok();
}

}  // namespace qcoll::ops
