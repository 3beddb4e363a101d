// The checked C++ convenience layer: quantize a whole (rows, H) tensor into std::vectors.
#include <utility>

#include "qcoll/contract.hpp"
#include "qcoll/quant.hpp"
#include "quant/quantize_job.hpp"

namespace qcoll::quant {

const void* QuantizedTensor::scales_data() const {
  return scales_dtype == DType::Float ? static_cast<const void*>(kg_scales.data())
                                      : static_cast<const void*>(mx_scales.data());
}

std::size_t QuantizedTensor::scales_bytes() const { return kg_scales.size() * sizeof(float) + mx_scales.size(); }

namespace {

Status quantize_tensor(DType in_dtype, const void* x, std::size_t rows, std::size_t H, DType x_dtype,
                       DType scales_dtype, QuantizedTensor& out, const KgOptions& opt) {
  // q and scales are ours; pass x itself where a non-null pointer is needed for them.
  Status st =
      check_quantize_args(x, rows, H, x_dtype, scales_dtype, x, x, opt.hif8_target, opt.threads, opt.contract);
  if (!st.ok()) return st;
  QuantizedTensor t;
  t.x_dtype = x_dtype;
  t.scales_dtype = scales_dtype;
  t.rows = rows;
  t.H = H;
  t.q.resize(contract::x_data_bytes(x_dtype, rows, H));
  const std::size_t nscales = contract::scales_count(scales_dtype, rows, H);
  const bool kg = scales_dtype == DType::Float;
  t.kg_scales.resize(kg ? nscales : 0);
  t.mx_scales.resize(kg ? 0 : nscales);
  // rows == 0: nothing to quantize (and empty vectors may have no data pointer).
  if (rows != 0) {
    void* scales = kg ? static_cast<void*>(t.kg_scales.data()) : static_cast<void*>(t.mx_scales.data());
    detail::run_quantize(detail::make_job(in_dtype, x, rows, H, x_dtype, scales_dtype, t.q.data(), scales, opt),
                         opt.threads);
  }
  out = std::move(t);
  return Status::Ok();
}

}  // namespace

Status quantize(const float* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                QuantizedTensor& out, const KgOptions& opt) {
  return quantize_tensor(DType::Float, x, rows, H, x_dtype, scales_dtype, out, opt);
}

Status quantize_bf16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                     QuantizedTensor& out, const KgOptions& opt) {
  return quantize_tensor(DType::BFloat16, x, rows, H, x_dtype, scales_dtype, out, opt);
}

Status quantize_fp16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                     QuantizedTensor& out, const KgOptions& opt) {
  return quantize_tensor(DType::Float16, x, rows, H, x_dtype, scales_dtype, out, opt);
}

std::vector<float> dequantize(const QuantizedTensor& t) {
  std::vector<float> out(t.rows * t.H);
  if (!dequantize(t.q.data(), t.scales_data(), t.rows, t.H, t.x_dtype, t.scales_dtype, out.data())) out.clear();
  return out;
}

}  // namespace qcoll::quant
