// The reference MX quantizer (OCP MX v1.0, blocks of 32, E8M0 scales;
// contract.md §quantizers-mx): one block at a time, quant_groups.hpp's element encoders.
#include "formats/traits.hpp"
#include "quant/quant_groups.hpp"
#include "quant/quantize_job.hpp"

namespace qcoll::quant::detail {

namespace {

template <ElementEncoder Encode, int EmaxElem, bool Packed, DType In>
void mx_rows(const QuantJob& job) {
  GroupSource<In> src(job.x);
  CodeSink<Packed> sink(job.q);
  const std::size_t count = job.rows * job.H;
  uint8_t* scales = static_cast<uint8_t*>(job.scales);
  for (std::size_t b = 0; b * kMxGroup < count; ++b) {
    const std::size_t first = b * kMxGroup;
    // Flat block index b = (row*H + h) / 32: the (rows, H/64, 2) layout of contract.md §modes.
    scales[b] = quantize_mx_block<Encode, EmaxElem>(src.group(first, kMxGroup), sink.codes(first));
    sink.done(first, kMxGroup);
  }
}

// X: the element format (its encoder, its emax, 4-bit codes packed).
template <ElementEncoder Encode, DType X>
void mx_input(const QuantJob& job) {
  constexpr int kEmax = formats::Traits<X>::kMxEmax;
  constexpr bool kPacked = formats::Traits<X>::kBits == 4;
  switch (job.in_dtype) {
    case DType::BFloat16:
      return mx_rows<Encode, kEmax, kPacked, DType::BFloat16>(job);
    case DType::Float16:
      return mx_rows<Encode, kEmax, kPacked, DType::Float16>(job);
    default:
      return mx_rows<Encode, kEmax, kPacked, DType::Float>(job);
  }
}

}  // namespace

void quantize_mx_scalar(const QuantJob& job) {
  switch (job.x_dtype) {
    case DType::Float8E4M3FN:  // emax_elem 8: max 448 = 1.75 * 2^8
      return mx_input<encode_e4m3_sat, DType::Float8E4M3FN>(job);
    case DType::Float4E2M1:  // emax_elem 2: max 6 = 1.5 * 2^2
      return mx_input<encode_e2m1_sat, DType::Float4E2M1>(job);
    case DType::Float4E1M2:  // emax_elem 0: max 1.75 = 1.75 * 2^0
      return mx_input<encode_e1m2_sat, DType::Float4E1M2>(job);
    default:  // Float8E5M2 (the job is checked); emax_elem 15: max 57344 = 1.75 * 2^15
      return mx_input<encode_e5m2_sat, DType::Float8E5M2>(job);
  }
}

}  // namespace qcoll::quant::detail
