// The quantization modes of the qcoll tools: the contract's modes (contract::quant_modes),
// with the labels the tables print (contract.md §modes, §ext-fp4).
//
//   kg-int8, kg-hif8, kg-e4m3, kg-e5m2   per-token-per-group: fp32 scale per 128 elements
//   mx-e4m3, mx-e5m2                     OCP MX: E8M0 scale per 32 elements
//   kg-e2m1, kg-e1m2, mx-e2m1, mx-e1m2   the 4-bit x formats, QCOLL_CONTRACT=extended only
//
// A KG mode may also be named by its format alone (int8, hif8, e4m3, e5m2, e2m1, e1m2), as
// everywhere (contract::find_quant_mode resolves the names; `qcoll demo` prints it as its
// rows' "mode"). The functions without a Contract take the current one (cli_args.hpp:
// current_contract).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "qcoll/dtype.hpp"
#include "qcoll/settings.hpp"

namespace qcoll::cli {

struct Mode {
  const char* name;   // "kg-int8": the spelling the tools print
  const char* label;  // "INT8 KG": for tables
  DType x;
  DType scales;  // Float (KG) or Float8E8M0 (MX)

  bool mx() const;
  // The x format in short: "int8", "hif8", "e4m3", "e5m2", "e2m1", "e1m2".
  const char* format() const;
  // The short spelling: a KG mode's format alone ("int8"), an MX mode's name ("mx-e4m3").
  const char* short_name() const;
  // Elements per scale: 128 (KG), 32 (MX).
  std::size_t group() const;
  // "int8 + fp32 per 128"
  std::string types_text() const;
};

// The modes of contract c (of the current one), in the contract's order.
std::vector<const Mode*> all_modes(settings::Contract c);
std::vector<const Mode*> all_modes();
// The mode named `text` (its name or its short name) under the current contract, or
// nullptr for a name no contract has. A mode of the extended contract under vendor throws
// CliError(Argument): "OPTION: mx-e2m1 needs QCOLL_CONTRACT=extended (the contract is vendor)".
const Mode* find_mode(const std::string& option, std::string_view text);
// "kg-int8, kg-hif8, kg-e4m3, kg-e5m2, mx-e4m3, mx-e5m2" (the current contract's)
std::string mode_names();
// For help texts, whatever the contract: the vendor's modes, then "(QCOLL_CONTRACT=extended
// adds kg-e2m1, kg-e1m2, mx-e2m1, mx-e1m2)".
std::string mode_help();
// A comma list of modes, or "all" (the current contract's); duplicates dropped, the order
// kept. Throws CliError(Argument) naming `option` for an unknown or missing mode, or a mode
// the contract does not have.
std::vector<const Mode*> parse_mode_list(const std::string& option, const std::string& text);

// Short dtype names for tables: int8, hif8, e4m3, e5m2, e2m1, e1m2, e8m0, fp32, fp16, bf16.
const char* short_dtype_name(DType t);

}  // namespace qcoll::cli
