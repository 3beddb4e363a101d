#include "ops/fused_quantize.hpp"

#include <string>

#include "qcoll/quant.hpp"
#include "quant/quantize_job.hpp"

namespace qcoll::ops {

Status RowQuantizer::operator()(const uint8_t* in, std::size_t rows, uint8_t* q, uint8_t* scales) const {
  if (rows == 0) return Status::Ok();
  quant::QuantOptions opt;
  opt.hif8_target = hif8_target;
  opt.threads = threads;
  opt.contract = contract;
  const Status st = quant::quantize_rows(in_dtype, in, rows, H, x_dtype, scales_dtype, q, scales, opt);
  if (!st.ok())
    return Status::Error(StatusCode::InnerError, "the quantizer refused a validated call (input " +
                                                     std::string(dtype_name(in_dtype)) + ", x " +
                                                     std::string(dtype_name(x_dtype)) + "): " + st.message);
  return Status::Ok();
}

}  // namespace qcoll::ops
