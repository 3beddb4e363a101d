// Quantizers (KG per-token-per-group, OCP MX) and the matching dequantizer.
#include <nanobind/ndarray.h>

#include <string>

#include "bindings.hpp"
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
  if (got != want)
    throw_param_invalid(std::string(param) + ": must hold " + str(want) + " elements, got " + str(got));
}

void check_kg(std::size_t rows, std::size_t H, int32_t x_dtype, std::size_t q_size, std::size_t s_size) {
  const auto t = static_cast<DType>(x_dtype);
  if (t != DType::Int8 && t != DType::HiFloat8 && t != DType::Float8E4M3FN && t != DType::Float8E5M2)
    throw_param_invalid("x_dtype: KG quantization supports int8, hifloat8, float8_e4m3fn, "
                        "float8_e5m2, got " + std::string(dtype_name(t)));
  if (H == 0 || H % 128 != 0)
    throw_param_invalid("x: the last dimension must be a positive multiple of 128 (group 128), got " + str(H));
  check_size("q", q_size, rows * H);
  check_size("scales", s_size, rows * H / 128);
}

void check_mx(std::size_t rows, std::size_t H, int32_t x_dtype, std::size_t q_size, std::size_t s_size) {
  const auto t = static_cast<DType>(x_dtype);
  if (t != DType::Float8E4M3FN && t != DType::Float8E5M2)
    throw_param_invalid("x_dtype: MX quantization supports float8_e4m3fn, float8_e5m2, got " +
                        std::string(dtype_name(t)));
  if (H == 0 || H % 64 != 0)
    throw_param_invalid("x: the last dimension must be a positive multiple of 64 (MX scale layout "
                        "(rows, H/64, 2)), got " + str(H));
  check_size("q", q_size, rows * H);
  check_size("scales", s_size, rows * H / 32);
}

template <typename T, typename Fn>
void run_kg(In2D<T> x, int32_t x_dtype, OutAny<uint8_t> q, OutAny<float> scales, float hif8_target, Fn fn) {
  const std::size_t rows = x.shape(0), H = x.shape(1);
  check_kg(rows, H, x_dtype, q.size(), scales.size());
  if (!(hif8_target >= 0.0f) || hif8_target > 32768.0f)
    throw_param_invalid("hif8_target: must be in (0, 32768] (0 = default), got " + std::to_string(hif8_target));
  quant::KgOptions opt;
  opt.hif8_target = hif8_target;
  bool ok;
  {
    nb::gil_scoped_release unlocked;
    ok = fn(x.data(), rows, H, static_cast<DType>(x_dtype), q.data(), scales.data(), opt);
  }
  if (!ok) throw_param_invalid("quantize_kg: rejected by the quantizer (dtype or H)");
}

template <typename T, typename Fn>
void run_mx(In2D<T> x, int32_t x_dtype, OutAny<uint8_t> q, OutAny<uint8_t> scales, Fn fn) {
  const std::size_t rows = x.shape(0), H = x.shape(1);
  check_mx(rows, H, x_dtype, q.size(), scales.size());
  bool ok;
  {
    nb::gil_scoped_release unlocked;
    ok = fn(x.data(), rows, H, static_cast<DType>(x_dtype), q.data(), scales.data());
  }
  if (!ok) throw_param_invalid("quantize_mx: rejected by the quantizer (dtype or H)");
}

void dequantize(InAny<uint8_t> q, nb::ndarray<nb::c_contig, nb::device::cpu> scales, std::size_t rows,
                std::size_t H, int32_t x_dtype, int32_t scales_dtype, OutAny<float> out) {
  const auto st = static_cast<DType>(scales_dtype);
  if (st != DType::Float && st != DType::Float8E8M0)
    throw_param_invalid("scales_dtype: must be float (KG) or float8_e8m0 (MX), got " +
                        std::string(dtype_name(st)));
  const std::size_t group = st == DType::Float ? 128 : 32;
  if (H == 0 || H % group != 0)
    throw_param_invalid("x: the last dimension must be a positive multiple of " + str(group) + ", got " + str(H));
  check_size("x", q.size(), rows * H);
  check_size("out", out.size(), rows * H);
  check_size("scales", scales.size(), rows * H / group);
  if (scales.itemsize() != dtype_size(st))
    throw_param_invalid("scales: element size must be " + str(dtype_size(st)) + " bytes for " +
                        std::string(dtype_name(st)) + ", got " + str(scales.itemsize()));
  bool ok;
  {
    nb::gil_scoped_release unlocked;
    ok = quant::dequantize(q.data(), scales.data(), rows, H, static_cast<DType>(x_dtype), st, out.data());
  }
  if (!ok) throw_param_invalid("dequantize: rejected (x_dtype " + std::string(dtype_name(static_cast<DType>(x_dtype))) +
                               " with scales " + std::string(dtype_name(st)) + ")");
}

}  // namespace

void bind_quant(nb::module_& m) {
  m.def("quantize_kg_f32",
        [](In2D<float> x, int32_t t, OutAny<uint8_t> q, OutAny<float> s, float target) {
          run_kg(x, t, q, s, target, [](auto... a) { return quant::quantize_kg(a...); });
        },
        nb::arg("x").noconvert(), nb::arg("x_dtype"), nb::arg("q").noconvert(),
        nb::arg("scales").noconvert(), nb::arg("hif8_target"));
  m.def("quantize_kg_bf16",
        [](In2D<uint16_t> x, int32_t t, OutAny<uint8_t> q, OutAny<float> s, float target) {
          run_kg(x, t, q, s, target, [](auto... a) { return quant::quantize_kg_bf16(a...); });
        },
        nb::arg("x").noconvert(), nb::arg("x_dtype"), nb::arg("q").noconvert(),
        nb::arg("scales").noconvert(), nb::arg("hif8_target"));
  m.def("quantize_mx_f32",
        [](In2D<float> x, int32_t t, OutAny<uint8_t> q, OutAny<uint8_t> s) {
          run_mx(x, t, q, s, [](auto... a) { return quant::quantize_mx(a...); });
        },
        nb::arg("x").noconvert(), nb::arg("x_dtype"), nb::arg("q").noconvert(), nb::arg("scales").noconvert());
  m.def("quantize_mx_bf16",
        [](In2D<uint16_t> x, int32_t t, OutAny<uint8_t> q, OutAny<uint8_t> s) {
          run_mx(x, t, q, s, [](auto... a) { return quant::quantize_mx_bf16(a...); });
        },
        nb::arg("x").noconvert(), nb::arg("x_dtype"), nb::arg("q").noconvert(), nb::arg("scales").noconvert());
  m.def("dequantize", &dequantize, nb::arg("q").noconvert(), nb::arg("scales").noconvert(),
        nb::arg("rows"), nb::arg("H"), nb::arg("x_dtype"), nb::arg("scales_dtype"),
        nb::arg("out").noconvert());
  m.def("default_hif8_target", &quant::default_hif8_target);
}

}  // namespace qcoll::python
