// Per-token-per-group (KG) quantization, group 128, fp32 scales (contract.md §quantizers-kg).
#include "qcoll/quant.hpp"
#include "quant/quant_groups.hpp"

namespace qcoll::quant {

namespace {

using formats::Traits;

template <detail::ElementEncoder Encode, class T>
void kg_rows(const T* x, std::size_t count, uint8_t* q, float* scales, float target) {
  detail::GroupSource<T> src(x);
  for (std::size_t g = 0; g * detail::kKgGroup < count; ++g) {
    const std::size_t first = g * detail::kKgGroup;
    scales[g] = detail::quantize_kg_group<Encode>(src.group(first, detail::kKgGroup), q + first,
                                                  target);
  }
}

template <class T>
bool quantize_kg_any(const T* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q,
                     float* scales, const KgOptions& opt) {
  if (!check_quantize_args(x, rows, H, x_dtype, DType::Float, q, scales, opt.hif8_target).ok())
    return false;
  const std::size_t count = rows * H;  // groups never straddle rows: H % kKgGroup == 0
  switch (x_dtype) {
    // The target of each format is its largest finite value (INT8: 127, symmetric).
    case DType::Int8:
      kg_rows<detail::encode_int8_sym>(x, count, q, scales, Traits<DType::Int8>::kMaxFinite);
      break;
    case DType::Float8E4M3FN:
      kg_rows<detail::encode_e4m3_sat>(x, count, q, scales, Traits<DType::Float8E4M3FN>::kMaxFinite);
      break;
    case DType::Float8E5M2:
      kg_rows<detail::encode_e5m2_sat>(x, count, q, scales, Traits<DType::Float8E5M2>::kMaxFinite);
      break;
    case DType::HiFloat8: {
      const float target = opt.hif8_target != 0.0f ? opt.hif8_target : default_hif8_target();
      kg_rows<detail::encode_hif8_sat>(x, count, q, scales, target);
      break;
    }
    default:
      return false;  // unreachable: rejected by check_quantize_args
  }
  return true;
}

}  // namespace

bool quantize_kg(const float* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q,
                 float* scales, const KgOptions& opt) {
  return quantize_kg_any(x, rows, H, x_dtype, q, scales, opt);
}

bool quantize_kg_bf16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype,
                      uint8_t* q, float* scales, const KgOptions& opt) {
  return quantize_kg_any(x, rows, H, x_dtype, q, scales, opt);
}

}  // namespace qcoll::quant
