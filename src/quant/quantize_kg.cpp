// The reference KG quantizer (per-token-per-group, group 128, fp32 scales;
// contract.md §quantizers-kg): one group at a time, quant_groups.hpp's element encoders.
#include "quant/quant_groups.hpp"
#include "quant/quantize_job.hpp"

namespace qcoll::quant::detail {

namespace {

template <ElementEncoder Encode, bool Packed, DType In>
void kg_rows(const QuantJob& job) {
  GroupSource<In> src(job.x);
  CodeSink<Packed> sink(job.q);
  const std::size_t count = job.rows * job.H;  // groups never straddle rows: H % 128 == 0
  float* scales = static_cast<float*>(job.scales);
  for (std::size_t g = 0; g * kKgGroup < count; ++g) {
    const std::size_t first = g * kKgGroup;
    scales[g] = quantize_kg_group<Encode>(src.group(first, kKgGroup), sink.codes(first), job.target);
    sink.done(first, kKgGroup);
  }
}

// Packed: 4-bit codes (two a byte).
template <ElementEncoder Encode, bool Packed = false>
void kg_input(const QuantJob& job) {
  switch (job.in_dtype) {
    case DType::BFloat16:
      return kg_rows<Encode, Packed, DType::BFloat16>(job);
    case DType::Float16:
      return kg_rows<Encode, Packed, DType::Float16>(job);
    default:
      return kg_rows<Encode, Packed, DType::Float>(job);
  }
}

}  // namespace

void quantize_kg_scalar(const QuantJob& job) {
  switch (job.x_dtype) {
    case DType::Int8:
      return kg_input<encode_int8_sym>(job);
    case DType::Float8E4M3FN:
      return kg_input<encode_e4m3_sat>(job);
    case DType::Float8E5M2:
      return kg_input<encode_e5m2_sat>(job);
    case DType::Float4E2M1:  // scale = amax / 6
      return kg_input<encode_e2m1_sat, true>(job);
    case DType::Float4E1M2:  // scale = amax / 1.75
      return kg_input<encode_e1m2_sat, true>(job);
    default:
      return kg_input<encode_hif8_sat>(job);  // HiFloat8 (the job is checked)
  }
}

}  // namespace qcoll::quant::detail
