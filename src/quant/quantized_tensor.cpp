// The checked C++ convenience layer: quantize a whole (rows, H) tensor into std::vectors.
#include <utility>

#include "qcoll/contract.hpp"
#include "qcoll/quant.hpp"

namespace qcoll::quant {

const void* QuantizedTensor::scales_data() const {
  return scales_dtype == DType::Float ? static_cast<const void*>(kg_scales.data())
                                      : static_cast<const void*>(mx_scales.data());
}

std::size_t QuantizedTensor::scales_bytes() const {
  return kg_scales.size() * sizeof(float) + mx_scales.size();
}

namespace {

template <DType In, class T>
Status quantize_any(const T* x, std::size_t rows, std::size_t H, DType x_dtype,
                    DType scales_dtype, QuantizedTensor& out, const KgOptions& opt) {
  // q and scales are ours; pass x itself where a non-null pointer is needed for them.
  Status st = check_quantize_args(x, rows, H, x_dtype, scales_dtype, x, x, opt.hif8_target,
                                  opt.threads);
  if (!st.ok()) return st;
  QuantizedTensor t;
  t.x_dtype = x_dtype;
  t.scales_dtype = scales_dtype;
  t.rows = rows;
  t.H = H;
  t.q.resize(rows * H);
  const std::size_t nscales = contract::scales_count(scales_dtype, rows, H);
  t.kg_scales.resize(scales_dtype == DType::Float ? nscales : 0);
  t.mx_scales.resize(scales_dtype == DType::Float8E8M0 ? nscales : 0);
  bool ok = true;
  if (rows == 0) {
    // nothing to quantize (and empty vectors may have no data pointer)
  } else if (scales_dtype == DType::Float) {
    if constexpr (In == DType::Float)
      ok = quantize_kg(x, rows, H, x_dtype, t.q.data(), t.kg_scales.data(), opt);
    else if constexpr (In == DType::BFloat16)
      ok = quantize_kg_bf16(x, rows, H, x_dtype, t.q.data(), t.kg_scales.data(), opt);
    else
      ok = quantize_kg_fp16(x, rows, H, x_dtype, t.q.data(), t.kg_scales.data(), opt);
  } else {
    if constexpr (In == DType::Float)
      ok = quantize_mx(x, rows, H, x_dtype, t.q.data(), t.mx_scales.data(), opt);
    else if constexpr (In == DType::BFloat16)
      ok = quantize_mx_bf16(x, rows, H, x_dtype, t.q.data(), t.mx_scales.data(), opt);
    else
      ok = quantize_mx_fp16(x, rows, H, x_dtype, t.q.data(), t.mx_scales.data(), opt);
  }
  if (!ok) return Status::Error(StatusCode::InnerError, "quantize: quantizer refused checked arguments");
  out = std::move(t);
  return Status::Ok();
}

}  // namespace

Status quantize(const float* x, std::size_t rows, std::size_t H, DType x_dtype,
                DType scales_dtype, QuantizedTensor& out, const KgOptions& opt) {
  return quantize_any<DType::Float>(x, rows, H, x_dtype, scales_dtype, out, opt);
}

Status quantize_bf16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype,
                     DType scales_dtype, QuantizedTensor& out, const KgOptions& opt) {
  return quantize_any<DType::BFloat16>(x, rows, H, x_dtype, scales_dtype, out, opt);
}

Status quantize_fp16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype,
                     DType scales_dtype, QuantizedTensor& out, const KgOptions& opt) {
  return quantize_any<DType::Float16>(x, rows, H, x_dtype, scales_dtype, out, opt);
}

std::vector<float> dequantize(const QuantizedTensor& t) {
  std::vector<float> out(t.rows * t.H);
  if (!dequantize(t.q.data(), t.scales_data(), t.rows, t.H, t.x_dtype, t.scales_dtype, out.data()))
    out.clear();
  return out;
}

}  // namespace qcoll::quant
