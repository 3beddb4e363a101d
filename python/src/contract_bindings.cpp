// The contract module (qcoll/contract.hpp) for the Python package: the checks and shapes it
// needs before it allocates, so that python/qcoll asks the C++ rules instead of re-coding them.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/settings.hpp"
#include "status_error.hpp"

namespace qcoll::python {
namespace {

DType as_dtype(int32_t t) { return static_cast<DType>(t); }

contract::Op parse_op(const std::string& op) {
  if (op == "rs") return contract::Op::ReduceScatter;
  if (op == "ar") return contract::Op::AllReduce;
  throw_param_invalid("op: must be \"rs\" or \"ar\", got \"" + op + "\"");
}

}  // namespace

void bind_contract(nb::module_& m) {
  m.def(
      "check_quant",
      [](int32_t x_dtype, int32_t scales_dtype, std::size_t H, float hif8_target, const std::string& x_param,
         const std::string& scales_param) {
        contract::QuantParamNames names;
        names.x_dtype = x_param.c_str();
        names.scales_dtype = scales_param.c_str();
        throw_if_error(contract::check_quant_call(as_dtype(x_dtype), as_dtype(scales_dtype), H, hif8_target, names));
      },
      nb::arg("x_dtype"), nb::arg("scales_dtype"), nb::arg("H"), nb::arg("hif8_target") = 0.0f,
      nb::arg("x_param") = "x_dtype", nb::arg("scales_param") = "scales_dtype",
      "Raises InvalidParameterError unless (x_dtype, scales_dtype, H, hif8_target) is a valid quantize / "
      "dequantize call (contract::check_quant_call); the messages name x_param / scales_param.");
  m.def("is_rank_count", &contract::is_rank_count, nb::arg("nranks"),
        "Whether the operators take a group of nranks ranks (contract.md rule 3).");
  m.def("rank_count_list", &contract::rank_count_list, "\"2, 4 or 8\": the rank counts, for a message.");
  // QCOLL_CONTRACT (contract.md §ext): the program's choice, the contract a call keeps, and
  // the rank-count rule under it.
  m.def(
      "set_contract",
      [](std::optional<std::string> name) {
        if (!name) return settings::set_contract_override(std::nullopt);
        const std::optional<settings::Contract> c = settings::parse_contract(name->c_str());
        if (!c)
          throw_param_invalid("contract: must be 'vendor' or 'extended' (or None: QCOLL_CONTRACT decides), got '" +
                              *name + "'");
        settings::set_contract_override(*c);
      },
      nb::arg("name").none(), "Chooses the contract for the whole process (None: QCOLL_CONTRACT decides).");
  m.def(
      "get_contract",
      [] {
        settings::Contract c{};
        throw_if_error(settings::contract(c));
        return std::string(settings::contract_name(c));
      },
      "The contract a call made now keeps: 'vendor' or 'extended'.");
  m.def(
      "rank_count_allowed",
      [](int nranks) {
        settings::Contract c{};
        throw_if_error(settings::contract(c));
        return contract::rank_count_allowed(nranks, c);
      },
      nb::arg("nranks"), "Whether the operators take a group of nranks ranks under the current contract (rule 3).");
  m.def(
      "rank_count_rule",
      [] {
        settings::Contract c{};
        throw_if_error(settings::contract(c));
        return contract::rank_count_rule(c);
      },
      "The rank-count rule under the current contract, for a message: '2, 4 or 8' or 'in [2, 1024]'.");
  m.def(
      "scales_shape",
      [](int32_t scales_dtype, const std::vector<int64_t>& x_shape) {
        return contract::scales_shape(as_dtype(scales_dtype), x_shape);
      },
      nb::arg("scales_dtype"), nb::arg("x_shape"),
      "The scales' shape for x's shape: (..., H/128) (KG) or (..., H/64, 2) (MX); [] otherwise.");
  m.def(
      "output_shape",
      [](const std::string& op, const std::vector<int64_t>& x_shape, int nranks) {
        return contract::output_shape(parse_op(op), x_shape, nranks);
      },
      nb::arg("op"), nb::arg("x_shape"), nb::arg("nranks"),
      "The operator's output shape ('rs': (BS/n, H), 'ar': x's shape), or None where there is none.");
  m.def(
      "dtype_size", [](int32_t t) { return dtype_size(as_dtype(t)); }, nb::arg("dtype"),
      "Bytes per element (1, 2 or 4); 0 for an unknown value.");
  m.def(
      "is_8bit_format", [](int32_t t) { return is_8bit_format(as_dtype(t)); }, nb::arg("dtype"));
  m.attr("HIF8_TARGET_MAX") = contract::kHif8TargetMax;
  m.def(
      "quant_mode",
      [](const std::string& name) {
        const contract::QuantMode* mode = contract::find_quant_mode(name);
        if (mode == nullptr)
          throw_param_invalid("mode: must be " + contract::quant_mode_names() + ", got '" + name + "' (" +
                              contract::quant_mode_short_names() + " also name the KG modes)");
        return std::make_tuple(static_cast<int32_t>(mode->x), static_cast<int32_t>(mode->scales));
      },
      nb::arg("name"), "(x_dtype, scales_dtype) of a quantization mode (contract::kQuantModes).");
  m.def("quant_mode_names", [] {
    std::vector<std::string> names;
    for (const contract::QuantMode& mode : contract::kQuantModes) names.emplace_back(mode.name);
    return names;
  });
}

}  // namespace qcoll::python
