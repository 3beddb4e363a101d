// OCP MX v1.0 quantization, blocks of 32, E8M0 scales (contract.md §quantizers-mx).
#include "qcoll/quant.hpp"
#include "quant/quant_groups.hpp"

namespace qcoll::quant {

namespace {

template <detail::ElementEncoder Encode, int EmaxElem, class T>
void mx_rows(const T* x, std::size_t count, uint8_t* q, uint8_t* scales) {
  detail::GroupSource<T> src(x);
  for (std::size_t b = 0; b * detail::kMxGroup < count; ++b) {
    const std::size_t first = b * detail::kMxGroup;
    // Flat block index b = (row*H + h) / 32: the (rows, H/64, 2) layout of contract.md §modes.
    scales[b] = detail::quantize_mx_block<Encode, EmaxElem>(src.group(first, detail::kMxGroup),
                                                            q + first);
  }
}

template <class T>
bool quantize_mx_any(const T* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q,
                     uint8_t* scales) {
  if (!check_quantize_args(x, rows, H, x_dtype, DType::Float8E8M0, q, scales).ok()) return false;
  const std::size_t count = rows * H;
  switch (x_dtype) {
    case DType::Float8E4M3FN:  // emax_elem 8: max 448 = 1.75 * 2^8
      mx_rows<detail::encode_e4m3_sat, formats::Traits<DType::Float8E4M3FN>::kMxEmax>(x, count, q, scales);
      break;
    case DType::Float8E5M2:  // emax_elem 15: max 57344 = 1.75 * 2^15
      mx_rows<detail::encode_e5m2_sat, formats::Traits<DType::Float8E5M2>::kMxEmax>(x, count, q, scales);
      break;
    default:
      return false;  // unreachable: rejected by check_quantize_args
  }
  return true;
}

}  // namespace

bool quantize_mx(const float* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q,
                 uint8_t* scales) {
  return quantize_mx_any(x, rows, H, x_dtype, q, scales);
}

bool quantize_mx_bf16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype,
                      uint8_t* q, uint8_t* scales) {
  return quantize_mx_any(x, rows, H, x_dtype, q, scales);
}

}  // namespace qcoll::quant
