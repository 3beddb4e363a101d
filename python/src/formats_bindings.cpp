// Element-wise decode/encode of every contract dtype over flat, contiguous buffers.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/formats.hpp"
#include "status_error.hpp"

namespace qcoll::python {
namespace {

namespace f = qcoll::formats;

template <typename T>
using In1D = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <typename T>
using Out1D = nb::ndarray<T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

DType checked_dtype(int32_t id) {
  if (!is_known_dtype(id)) throw_param_invalid("dtype: unknown dtype value " + std::to_string(id));
  return static_cast<DType>(id);
}

void check_sizes(std::size_t in, std::size_t out) {
  if (in != out)
    throw_param_invalid("out: size must equal the input size " + std::to_string(in) + ", got " + std::to_string(out));
}

std::string name_of(DType t) { return std::string(dtype_name(t)); }

void decode8(In1D<uint8_t> codes, int32_t dtype, Out1D<float> out) {
  const DType t = checked_dtype(dtype);
  if (!is_8bit_format(t)) throw_param_invalid("dtype: decode of bytes needs an 8-bit format, got " + name_of(t));
  check_sizes(codes.size(), out.size());
  const float* table = f::decode_table(t);
  const uint8_t* in = codes.data();
  float* o = out.data();
  const std::size_t n = codes.size();
  nb::gil_scoped_release unlocked;
  for (std::size_t i = 0; i < n; ++i) o[i] = table[in[i]];
}

void decode16(In1D<uint16_t> codes, int32_t dtype, Out1D<float> out) {
  const DType t = checked_dtype(dtype);
  if (t != DType::Float16 && t != DType::BFloat16)
    throw_param_invalid("dtype: decode of 16-bit codes needs float16 or bfloat16, got " + name_of(t));
  check_sizes(codes.size(), out.size());
  const uint16_t* in = codes.data();
  float* o = out.data();
  const std::size_t n = codes.size();
  nb::gil_scoped_release unlocked;
  if (t == DType::Float16)
    for (std::size_t i = 0; i < n; ++i) o[i] = f::decode_float16(in[i]);
  else
    for (std::size_t i = 0; i < n; ++i) o[i] = f::decode_bfloat16(in[i]);
}

void encode8(In1D<float> values, int32_t dtype, bool saturating, Out1D<uint8_t> out) {
  const DType t = checked_dtype(dtype);
  if (!is_8bit_format(t)) throw_param_invalid("dtype: encode to bytes needs an 8-bit format, got " + name_of(t));
  if (saturating && t == DType::Float8E8M0)
    throw_param_invalid("saturating: float8_e8m0 has no saturating mode, got saturating=True");
  check_sizes(values.size(), out.size());
  const f::Saturation s = saturating ? f::Saturation::Saturating : f::Saturation::NonSaturating;
  const float* in = values.data();
  uint8_t* o = out.data();
  const std::size_t n = values.size();
  nb::gil_scoped_release unlocked;
  if (t == DType::Int8) {
    for (std::size_t i = 0; i < n; ++i) o[i] = f::encode_int8(in[i], f::Saturation::Saturating);
  } else if (t == DType::Float8E8M0) {
    for (std::size_t i = 0; i < n; ++i) o[i] = f::encode_float8_e8m0(in[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) o[i] = f::encode8(t, in[i], s);
  }
}

void encode16(In1D<float> values, int32_t dtype, Out1D<uint16_t> out) {
  const DType t = checked_dtype(dtype);
  if (t != DType::Float16 && t != DType::BFloat16)
    throw_param_invalid("dtype: encode to 16-bit codes needs float16 or bfloat16, got " + name_of(t));
  check_sizes(values.size(), out.size());
  const float* in = values.data();
  uint16_t* o = out.data();
  const std::size_t n = values.size();
  nb::gil_scoped_release unlocked;
  if (t == DType::Float16)
    for (std::size_t i = 0; i < n; ++i) o[i] = f::encode_float16(in[i]);
  else
    for (std::size_t i = 0; i < n; ++i) o[i] = f::encode_bfloat16(in[i]);
}

// The 4-bit formats (contract.md §ext-fp4): codes packed two a byte (the even element in
// bits 0-3), or one a byte in bits 0-3 (ml_dtypes' float4_e2m1fn arrays; bits 4-7 ignored).
DType checked_4bit(int32_t dtype) {
  const DType t = checked_dtype(dtype);
  if (!is_4bit_format(t))
    throw_param_invalid("dtype: needs a 4-bit format (float4_e2m1, float4_e1m2), got " + name_of(t));
  return t;
}

void decode4(In1D<uint8_t> codes, int32_t dtype, bool packed, Out1D<float> out) {
  const float* table = f::decode_table4(checked_4bit(dtype));
  check_sizes(packed ? 2 * codes.size() : codes.size(), out.size());
  const uint8_t* in = codes.data();
  float* o = out.data();
  const std::size_t n = out.size();
  nb::gil_scoped_release unlocked;
  for (std::size_t i = 0; i < n; ++i) o[i] = table[packed ? f::fp4_get(in, i) : in[i] & 0xF];
}

// Saturating RNE (the only mode of the 4-bit formats), written packed: out holds
// (values + 1) / 2 bytes.
void encode4(In1D<float> values, int32_t dtype, Out1D<uint8_t> out) {
  const DType t = checked_4bit(dtype);
  check_sizes(f::fp4_packed_bytes(values.size()), out.size());
  const float* in = values.data();
  uint8_t* o = out.data();
  const std::size_t n = values.size();
  nb::gil_scoped_release unlocked;
  for (std::size_t i = 0; i < out.size(); ++i) o[i] = 0;
  for (std::size_t i = 0; i < n; ++i) f::fp4_set(o, i, f::encode4(t, in[i]));
}

void pack4(In1D<uint8_t> codes, Out1D<uint8_t> out) {
  check_sizes(f::fp4_packed_bytes(codes.size()), out.size());
  nb::gil_scoped_release unlocked;
  f::pack_fp4(codes.data(), codes.size(), out.data());
}

void unpack4(In1D<uint8_t> packed, Out1D<uint8_t> out) {
  if (f::fp4_packed_bytes(out.size()) != packed.size())
    throw_param_invalid("out: " + std::to_string(packed.size()) + " packed bytes hold " +
                        std::to_string(2 * packed.size()) + " codes, got " + std::to_string(out.size()));
  nb::gil_scoped_release unlocked;
  f::unpack_fp4(packed.data(), out.size(), out.data());
}

}  // namespace

void bind_formats(nb::module_& m) {
  m.def("decode8", &decode8, nb::arg("codes").noconvert(), nb::arg("dtype"), nb::arg("out").noconvert(),
        "Decodes bytes of an 8-bit format into float32 (out).");
  m.def("decode16", &decode16, nb::arg("codes").noconvert(), nb::arg("dtype"), nb::arg("out").noconvert(),
        "Decodes float16/bfloat16 bit patterns into float32 (out).");
  m.def("encode8", &encode8, nb::arg("values").noconvert(), nb::arg("dtype"), nb::arg("saturating"),
        nb::arg("out").noconvert(), "Encodes float32 values into bytes of an 8-bit format (out).");
  m.def("encode16", &encode16, nb::arg("values").noconvert(), nb::arg("dtype"), nb::arg("out").noconvert(),
        "Encodes float32 values as float16/bfloat16 bit patterns (out).");
  m.def("decode4", &decode4, nb::arg("codes").noconvert(), nb::arg("dtype"), nb::arg("packed"),
        nb::arg("out").noconvert(), "Decodes 4-bit codes (packed two a byte, or one a byte) into float32 (out).");
  m.def("encode4", &encode4, nb::arg("values").noconvert(), nb::arg("dtype"), nb::arg("out").noconvert(),
        "Encodes float32 values into packed 4-bit codes (out: (n + 1) / 2 bytes), saturating.");
  m.def("pack4", &pack4, nb::arg("codes").noconvert(), nb::arg("out").noconvert(),
        "Packs 4-bit codes, one a byte, two a byte (the even element in bits 0-3).");
  m.def("unpack4", &unpack4, nb::arg("packed").noconvert(), nb::arg("out").noconvert(),
        "Unpacks packed 4-bit codes into one a byte (out's size: the number of codes).");
  m.def(
      "dtype_name", [](int32_t id) { return std::string(dtype_name(static_cast<DType>(id))); }, nb::arg("dtype"));
  m.def(
      "parse_dtype",
      [](const std::string& s) -> int32_t {
        auto t = parse_dtype(s);
        return t ? static_cast<int32_t>(*t) : -1;
      },
      nb::arg("name"), "dtype value of a SPEC name or alias, -1 if unknown.");
  m.def(
      "max_finite", [](int32_t id) { return f::max_finite(checked_dtype(id)); }, nb::arg("dtype"));
}

}  // namespace qcoll::python
