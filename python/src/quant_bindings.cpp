// Quantizers (KG per-token-per-group, OCP MX) and the matching dequantizer.
#include <nanobind/ndarray.h>

#include <string>

#include "bindings.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/quant.hpp"
#include "status_error.hpp"

namespace qcoll::python {
namespace {

template <typename T>
using In2D = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
template <typename T>
using InAny = nb::ndarray<const T, nb::c_contig, nb::device::cpu>;
template <typename T>
using OutAny = nb::ndarray<T, nb::c_contig, nb::device::cpu>;

std::string str(std::size_t v) { return std::to_string(v); }

void check_size(const char* param, std::size_t got, std::size_t want) {
  if (got != want) throw_param_invalid(std::string(param) + ": must hold " + str(want) + " elements, got " + str(got));
}

// The contract's rule of a quantize / dequantize call (under the current contract), then
// the buffers' sizes: q holds the codes' bytes, rows*H (8-bit) or rows*H/2 (4-bit, packed).
void check_call(DType x_dtype, DType scales_dtype, std::size_t rows, std::size_t H, float hif8_target,
                const char* q_param, std::size_t q_size, std::size_t s_size) {
  check_quant_current(x_dtype, scales_dtype, H, hif8_target);
  check_size(q_param, q_size, dtype_bytes(x_dtype, rows * H));
  check_size("scales", s_size, contract::scales_count(scales_dtype, rows, H));
}

template <typename T, typename Fn>
void run_kg(In2D<T> x, int32_t x_dtype, OutAny<uint8_t> q, OutAny<float> scales, float hif8_target, Fn fn) {
  const std::size_t rows = x.shape(0), H = x.shape(1);
  const auto t = static_cast<DType>(x_dtype);
  check_call(t, DType::Float, rows, H, hif8_target, "q", q.size(), scales.size());
  quant::KgOptions opt;
  opt.hif8_target = hif8_target;
  bool ok;
  {
    nb::gil_scoped_release unlocked;
    ok = fn(x.data(), rows, H, t, q.data(), scales.data(), opt);
  }
  if (!ok)
    throw StatusError(static_cast<int32_t>(StatusCode::InnerError),
                      "quantize_kg: the quantizer refused checked arguments");
}

template <typename T, typename Fn>
void run_mx(In2D<T> x, int32_t x_dtype, OutAny<uint8_t> q, OutAny<uint8_t> scales, Fn fn) {
  const std::size_t rows = x.shape(0), H = x.shape(1);
  const auto t = static_cast<DType>(x_dtype);
  check_call(t, DType::Float8E8M0, rows, H, 0.0f, "q", q.size(), scales.size());
  bool ok;
  {
    nb::gil_scoped_release unlocked;
    ok = fn(x.data(), rows, H, t, q.data(), scales.data());
  }
  if (!ok)
    throw StatusError(static_cast<int32_t>(StatusCode::InnerError),
                      "quantize_mx: the quantizer refused checked arguments");
}

void dequantize(InAny<uint8_t> q, nb::ndarray<nb::c_contig, nb::device::cpu> scales, std::size_t rows, std::size_t H,
                int32_t x_dtype, int32_t scales_dtype, OutAny<float> out) {
  const auto xt = static_cast<DType>(x_dtype);
  const auto st = static_cast<DType>(scales_dtype);
  check_call(xt, st, rows, H, 0.0f, "x", q.size(), scales.size());
  check_size("out", out.size(), rows * H);
  if (scales.itemsize() != dtype_size(st))
    throw_param_invalid("scales: element size must be " + str(dtype_size(st)) + " bytes for " +
                        std::string(dtype_name(st)) + ", got " + str(scales.itemsize()));
  bool ok;
  {
    nb::gil_scoped_release unlocked;
    ok = quant::dequantize(q.data(), scales.data(), rows, H, xt, st, out.data());
  }
  if (!ok) throw StatusError(static_cast<int32_t>(StatusCode::InnerError), "dequantize: refused checked arguments");
}

}  // namespace

void bind_quant(nb::module_& m) {
  m.def(
      "quantize_kg_f32",
      [](In2D<float> x, int32_t t, OutAny<uint8_t> q, OutAny<float> s, float target) {
        run_kg(x, t, q, s, target, [](auto... a) { return quant::quantize_kg(a...); });
      },
      nb::arg("x").noconvert(), nb::arg("x_dtype"), nb::arg("q").noconvert(), nb::arg("scales").noconvert(),
      nb::arg("hif8_target"));
  m.def(
      "quantize_kg_bf16",
      [](In2D<uint16_t> x, int32_t t, OutAny<uint8_t> q, OutAny<float> s, float target) {
        run_kg(x, t, q, s, target, [](auto... a) { return quant::quantize_kg_bf16(a...); });
      },
      nb::arg("x").noconvert(), nb::arg("x_dtype"), nb::arg("q").noconvert(), nb::arg("scales").noconvert(),
      nb::arg("hif8_target"));
  m.def(
      "quantize_kg_fp16",
      [](In2D<uint16_t> x, int32_t t, OutAny<uint8_t> q, OutAny<float> s, float target) {
        run_kg(x, t, q, s, target, [](auto... a) { return quant::quantize_kg_fp16(a...); });
      },
      nb::arg("x").noconvert(), nb::arg("x_dtype"), nb::arg("q").noconvert(), nb::arg("scales").noconvert(),
      nb::arg("hif8_target"));
  m.def(
      "quantize_mx_f32",
      [](In2D<float> x, int32_t t, OutAny<uint8_t> q, OutAny<uint8_t> s) {
        run_mx(x, t, q, s, [](auto... a) { return quant::quantize_mx(a...); });
      },
      nb::arg("x").noconvert(), nb::arg("x_dtype"), nb::arg("q").noconvert(), nb::arg("scales").noconvert());
  m.def(
      "quantize_mx_bf16",
      [](In2D<uint16_t> x, int32_t t, OutAny<uint8_t> q, OutAny<uint8_t> s) {
        run_mx(x, t, q, s, [](auto... a) { return quant::quantize_mx_bf16(a...); });
      },
      nb::arg("x").noconvert(), nb::arg("x_dtype"), nb::arg("q").noconvert(), nb::arg("scales").noconvert());
  m.def(
      "quantize_mx_fp16",
      [](In2D<uint16_t> x, int32_t t, OutAny<uint8_t> q, OutAny<uint8_t> s) {
        run_mx(x, t, q, s, [](auto... a) { return quant::quantize_mx_fp16(a...); });
      },
      nb::arg("x").noconvert(), nb::arg("x_dtype"), nb::arg("q").noconvert(), nb::arg("scales").noconvert());
  m.def("quantize_target", &quant::quantize_target);
  m.def("dequantize", &dequantize, nb::arg("q").noconvert(), nb::arg("scales").noconvert(), nb::arg("rows"),
        nb::arg("H"), nb::arg("x_dtype"), nb::arg("scales_dtype"), nb::arg("out").noconvert());
  m.def("default_hif8_target", &quant::default_hif8_target);
}

}  // namespace qcoll::python
