// The reference MX quantizer (OCP MX v1.0, blocks of 32, E8M0 scales;
// contract.md §quantizers-mx): one block at a time, quant_groups.hpp's element encoders.
#include "formats/traits.hpp"
#include "quant/quant_groups.hpp"
#include "quant/quantize_job.hpp"

namespace qcoll::quant::detail {

namespace {

template <ElementEncoder Encode, int EmaxElem, DType In>
void mx_rows(const QuantJob& job) {
  GroupSource<In> src(job.x);
  const std::size_t count = job.rows * job.H;
  uint8_t* scales = static_cast<uint8_t*>(job.scales);
  for (std::size_t b = 0; b * kMxGroup < count; ++b) {
    const std::size_t first = b * kMxGroup;
    // Flat block index b = (row*H + h) / 32: the (rows, H/64, 2) layout of contract.md §modes.
    scales[b] = quantize_mx_block<Encode, EmaxElem>(src.group(first, kMxGroup), job.q + first);
  }
}

template <ElementEncoder Encode, int EmaxElem>
void mx_input(const QuantJob& job) {
  switch (job.in_dtype) {
    case DType::BFloat16:
      return mx_rows<Encode, EmaxElem, DType::BFloat16>(job);
    case DType::Float16:
      return mx_rows<Encode, EmaxElem, DType::Float16>(job);
    default:
      return mx_rows<Encode, EmaxElem, DType::Float>(job);
  }
}

}  // namespace

void quantize_mx_scalar(const QuantJob& job) {
  using formats::Traits;
  if (job.x_dtype == DType::Float8E4M3FN) {  // emax_elem 8: max 448 = 1.75 * 2^8
    mx_input<encode_e4m3_sat, Traits<DType::Float8E4M3FN>::kMxEmax>(job);
  } else {  // Float8E5M2 (the job is checked); emax_elem 15: max 57344 = 1.75 * 2^15
    mx_input<encode_e5m2_sat, Traits<DType::Float8E5M2>::kMxEmax>(job);
  }
}

}  // namespace qcoll::quant::detail
