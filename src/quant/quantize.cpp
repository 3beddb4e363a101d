// The quantizer entry point quantize_rows (quantize_job.hpp): check once, describe the call
// as a QuantJob, and run it (run_quantize: rows over the worker pool, SIMD or reference path
// per part). The public quantizers (qcoll/quant.hpp) are thin wrappers over it.
#include <algorithm>
#include <cfenv>
#include <iterator>

#include "core/float_env.hpp"
#include "core/worker_pool.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/formats.hpp"
#include "qcoll/quant.hpp"
#include "qcoll/settings.hpp"
#include "quant/quantize_job.hpp"

namespace qcoll::quant {
namespace detail {

float kg_target(DType x_dtype, float hif8_target) {
  if (x_dtype != DType::HiFloat8) return formats::max_finite(x_dtype);  // 127, 448, 57344
  return hif8_target != 0.0f ? hif8_target : default_hif8_target();
}

QuantJob make_job(DType in_dtype, const void* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                  uint8_t* q, void* scales, const QuantOptions& opt) {
  const float target = scales_dtype == DType::Float ? kg_target(x_dtype, opt.hif8_target) : 0.0f;
  return QuantJob{.in_dtype = in_dtype,
                  .x = x,
                  .rows = rows,
                  .H = H,
                  .x_dtype = x_dtype,
                  .scales_dtype = scales_dtype,
                  .target = target,
                  .q = q,
                  .scales = scales};
}

QuantJob rows_of(const QuantJob& job, std::size_t first, std::size_t count) {
  QuantJob sub = job;
  const std::size_t in_bytes = job.in_dtype == DType::Float ? 4 : 2;
  const std::size_t group = contract::scale_group(job.scales_dtype);
  const std::size_t scale_bytes = job.scales_dtype == DType::Float ? 4 : 1;
  const std::size_t elem = first * job.H;
  sub.x = static_cast<const uint8_t*>(job.x) + elem * in_bytes;
  sub.q = job.q + contract::x_data_bytes(job.x_dtype, first, job.H);  // 4-bit: packed, H/2 a row
  sub.scales = static_cast<uint8_t*>(job.scales) + elem / group * scale_bytes;
  sub.rows = count;
  return sub;
}

void quantize_scalar(const QuantJob& job) {
  const core::KeepSubnormals keep_subnormals;
  if (job.scales_dtype == DType::Float) {
    quantize_kg_scalar(job);
  } else {
    quantize_mx_scalar(job);
  }
}

int quantize_parts(const QuantJob& job, int threads) {
  if (threads == 0) {
    const std::size_t elements = job.rows * job.H;
    threads = elements < kQuantAutoThreadElements ? 1 : core::WorkerPool::host_cores();
  }
  threads = std::clamp(threads, 1, kMaxQuantThreads);
  return static_cast<int>(std::min<std::size_t>(job.rows, static_cast<std::size_t>(threads)));
}

void run_quantize(const QuantJob& job, int threads) {
  if (job.rows == 0) return;
  // The SIMD encoders round with fp32 additions in the current mode; the reference's INT8
  // rounding follows the current mode. Both agree in round-to-nearest only.
  const int mode = std::fegetround();
  const bool simd = settings::kernel() != settings::Kernel::Scalar && mode == FE_TONEAREST;
  const auto run = [&](const QuantJob& part) {
    if (simd) {
      quantize_simd(part);
    } else {
      quantize_scalar(part);
    }
  };
  const int parts = quantize_parts(job, threads);
  if (parts <= 1) {
    run(job);
    return;
  }
  core::WorkerPool::shared().run(parts, [&](int p) {
    // Part p gets rows [rows*p/parts, rows*(p+1)/parts).
    const std::size_t first = job.rows * static_cast<std::size_t>(p) / parts;
    const std::size_t end = job.rows * static_cast<std::size_t>(p + 1) / parts;
    if (first == end) return;
    const core::ScopedRounding rounding(mode);
    run(rows_of(job, first, end - first));
  });
}

}  // namespace detail

namespace {

// The quantizers' input dtypes.
constexpr DType kInDtypes[] = {DType::Float, DType::BFloat16, DType::Float16};

bool is_in_dtype(DType t) { return std::find(std::begin(kInDtypes), std::end(kInDtypes), t) != std::end(kInDtypes); }

}  // namespace

Status quantize_rows(DType in_dtype, const void* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                     uint8_t* q, void* scales, const QuantOptions& opt) {
  if (!is_in_dtype(in_dtype))
    return Status::Error(StatusCode::ParamInvalid, "in_dtype: must be " + contract::dtype_list(kInDtypes) + ", got " +
                                                       contract::dtype_text(in_dtype));
  const float target = scales_dtype == DType::Float ? opt.hif8_target : 0.0f;
  Status st = check_quantize_args(x, rows, H, x_dtype, scales_dtype, q, scales, target, opt.threads, opt.contract);
  if (!st.ok()) return st;
  detail::run_quantize(detail::make_job(in_dtype, x, rows, H, x_dtype, scales_dtype, q, scales, opt), opt.threads);
  return Status::Ok();
}

bool quantize_kg(const float* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, float* scales,
                 const KgOptions& opt) {
  return quantize_rows(DType::Float, x, rows, H, x_dtype, DType::Float, q, scales, opt).ok();
}
bool quantize_kg_bf16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, float* scales,
                      const KgOptions& opt) {
  return quantize_rows(DType::BFloat16, x, rows, H, x_dtype, DType::Float, q, scales, opt).ok();
}
bool quantize_kg_fp16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, float* scales,
                      const KgOptions& opt) {
  return quantize_rows(DType::Float16, x, rows, H, x_dtype, DType::Float, q, scales, opt).ok();
}

bool quantize_mx(const float* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, uint8_t* scales,
                 const MxOptions& opt) {
  return quantize_rows(DType::Float, x, rows, H, x_dtype, DType::Float8E8M0, q, scales, opt).ok();
}
bool quantize_mx_bf16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, uint8_t* scales,
                      const MxOptions& opt) {
  return quantize_rows(DType::BFloat16, x, rows, H, x_dtype, DType::Float8E8M0, q, scales, opt).ok();
}
bool quantize_mx_fp16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, uint8_t* scales,
                      const MxOptions& opt) {
  return quantize_rows(DType::Float16, x, rows, H, x_dtype, DType::Float8E8M0, q, scales, opt).ok();
}

}  // namespace qcoll::quant
