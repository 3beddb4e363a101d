// The quantization modes of the qcoll tools: one table, one spelling (contract.md §modes).
//
//   kg-int8, kg-hif8, kg-e4m3, kg-e5m2   per-token-per-group: fp32 scale per 128 elements
//   mx-e4m3, mx-e5m2                     OCP MX: E8M0 scale per 32 elements
//
// A KG mode may also be named by its format alone (int8, hif8, e4m3, e5m2), as everywhere
// (contract::find_quant_mode resolves the names; `qcoll demo` prints it as its rows' "mode").
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qcoll/dtype.hpp"

namespace qcoll::cli {

struct Mode {
  const char* name;   // "kg-int8": the spelling the tools print
  const char* label;  // "INT8 KG": for tables
  DType x;
  DType scales;  // Float (KG) or Float8E8M0 (MX)

  bool mx() const;
  // The x format in short: "int8", "hif8", "e4m3", "e5m2".
  const char* format() const;
  // The short spelling: a KG mode's format alone ("int8"), an MX mode's name ("mx-e4m3").
  const char* short_name() const;
  // Elements per scale: 128 (KG), 32 (MX).
  std::size_t group() const;
  // "int8 + fp32 per 128"
  std::string types_text() const;
};

// Every mode, in the order above.
std::span<const Mode> all_modes();
// The mode named `text` (its name or its short name), or nullptr.
const Mode* find_mode(std::string_view text);
// "kg-int8, kg-hif8, kg-e4m3, kg-e5m2, mx-e4m3, mx-e5m2"
std::string mode_names();
// A comma list of modes, or "all"; duplicates dropped, the order kept. Throws
// CliError(Argument) naming `option` for an unknown or missing mode.
std::vector<const Mode*> parse_mode_list(const std::string& option, const std::string& text);

// Short dtype names for tables: int8, hif8, e4m3, e5m2, e8m0, fp32, fp16, bf16.
const char* short_dtype_name(DType t);

}  // namespace qcoll::cli
