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

// The contract a call made now keeps (PARAM_INVALID for a bad QCOLL_CONTRACT).
settings::Contract current_contract() {
  settings::Contract c{};
  throw_if_error(settings::contract(c));
  return c;
}

}  // namespace

void check_quant_current(DType x_dtype, DType scales_dtype, std::size_t H, float hif8_target,
                         const contract::QuantParamNames& names) {
  // The vendor's rule first: the contract setting is read only for a call it refuses (as
  // quant::check_quantize_args), so a bad QCOLL_CONTRACT fails only such a call.
  if (contract::check_quant_call(x_dtype, scales_dtype, H, hif8_target, names).ok()) return;
  throw_if_error(contract::check_quant_call(x_dtype, scales_dtype, H, hif8_target, current_contract(), names));
}

void bind_contract(nb::module_& m) {
  m.def(
      "check_quant",
      [](int32_t x_dtype, int32_t scales_dtype, std::size_t H, float hif8_target, const std::string& x_param,
         const std::string& scales_param) {
        contract::QuantParamNames names;
        names.x_dtype = x_param.c_str();
        names.scales_dtype = scales_param.c_str();
        check_quant_current(as_dtype(x_dtype), as_dtype(scales_dtype), H, hif8_target, names);
      },
      nb::arg("x_dtype"), nb::arg("scales_dtype"), nb::arg("H"), nb::arg("hif8_target") = 0.0f,
      nb::arg("x_param") = "x_dtype", nb::arg("scales_param") = "scales_dtype",
      "Raises InvalidParameterError unless (x_dtype, scales_dtype, H, hif8_target) is a valid quantize / "
      "dequantize call under the current contract (contract::check_quant_call); the messages name x_param / "
      "scales_param.");
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
      "get_contract", [] { return std::string(settings::contract_name(current_contract())); },
      "The contract a call made now keeps: 'vendor' or 'extended'.");
  m.def(
      "rank_count_allowed", [](int nranks) { return contract::rank_count_allowed(nranks, current_contract()); },
      nb::arg("nranks"), "Whether the operators take a group of nranks ranks under the current contract (rule 3).");
  m.def(
      "rank_count_rule", [] { return contract::rank_count_rule(current_contract()); },
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
        // A vendor mode needs no setting; any other name is resolved under the current
        // contract (an FP4 mode under vendor: "mode: mx-e2m1 needs QCOLL_CONTRACT=extended ...").
        const contract::QuantMode* mode = contract::find_quant_mode(name);
        if (mode == nullptr) throw_if_error(contract::resolve_quant_mode(name, current_contract(), mode));
        return std::make_tuple(static_cast<int32_t>(mode->x), static_cast<int32_t>(mode->scales));
      },
      nb::arg("name"),
      "(x_dtype, scales_dtype) of a quantization mode under the current contract (contract::resolve_quant_mode).");
  m.def(
      "quant_mode_names",
      [](bool extended) {
        std::vector<std::string> names;
        const settings::Contract c = extended ? settings::Contract::Extended : settings::Contract::Vendor;
        for (const contract::QuantMode& mode : contract::quant_modes(c)) names.emplace_back(mode.name);
        return names;
      },
      nb::arg("extended") = false,
      "The modes of the vendor contract (contract::kQuantModes), or with extended=True of the extended one.");
  m.def(
      "quant_mode_table",
      [](bool extended) {
        std::vector<std::tuple<std::string, int32_t, int32_t>> rows;
        const settings::Contract c = extended ? settings::Contract::Extended : settings::Contract::Vendor;
        for (const contract::QuantMode& mode : contract::quant_modes(c))
          rows.emplace_back(mode.name, static_cast<int32_t>(mode.x), static_cast<int32_t>(mode.scales));
        return rows;
      },
      nb::arg("extended") = false, "(name, x_dtype, scales_dtype) of every mode of the contract (quant_modes).");
  m.def(
      "is_4bit_format", [](int32_t t) { return is_4bit_format(as_dtype(t)); }, nb::arg("dtype"));
  m.def(
      "dtype_bytes", [](int32_t t, std::size_t count) { return dtype_bytes(as_dtype(t), count); }, nb::arg("dtype"),
      nb::arg("count"), "Bytes that count elements occupy (a 4-bit format's packed: (count + 1) / 2).");
}

}  // namespace qcoll::python
