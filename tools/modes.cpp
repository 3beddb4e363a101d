// The mode table; see modes.hpp.
#include "modes.hpp"

#include "cli_args.hpp"
#include "cli_error.hpp"
#include "qcoll/contract.hpp"

namespace qcoll::cli {
namespace {

constexpr Mode kModes[] = {
    {"kg-int8", "INT8 KG", DType::Int8, DType::Float},
    {"kg-hif8", "HiF8 KG", DType::HiFloat8, DType::Float},
    {"kg-e4m3", "E4M3 KG", DType::Float8E4M3FN, DType::Float},
    {"kg-e5m2", "E5M2 KG", DType::Float8E5M2, DType::Float},
    {"mx-e4m3", "E4M3 MX", DType::Float8E4M3FN, DType::Float8E8M0},
    {"mx-e5m2", "E5M2 MX", DType::Float8E5M2, DType::Float8E8M0},
};

}  // namespace

bool Mode::mx() const { return contract::is_mx(scales); }
const char* Mode::format() const { return short_dtype_name(x); }
const char* Mode::short_name() const { return mx() ? name : format(); }
std::size_t Mode::group() const { return contract::scale_group(scales); }
std::string Mode::types_text() const {
  return std::string(format()) + " + " + short_dtype_name(scales) + " per " + std::to_string(group());
}

std::span<const Mode> all_modes() { return kModes; }

const Mode* find_mode(std::string_view text) {
  // The spellings are the contract's (as in Python's mode=); this table adds the labels.
  const contract::QuantMode* q = contract::find_quant_mode(text);
  if (q == nullptr) return nullptr;
  for (const Mode& m : kModes)
    if (m.x == q->x && m.scales == q->scales) return &m;
  return nullptr;
}

std::string mode_names() {
  std::string s;
  for (const Mode& m : kModes) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
}

std::vector<const Mode*> parse_mode_list(const std::string& option, const std::string& text) {
  std::vector<const Mode*> out;
  if (text == "all") {
    for (const Mode& m : kModes) out.push_back(&m);
    return out;
  }
  for (const std::string& item : split_list(text)) {
    const Mode* m = find_mode(item);
    if (m == nullptr)
      throw CliError(ErrorKind::Argument, option + ": unknown mode '" + item + "' (expected all or a comma list of " +
                                              mode_names() + "; " + contract::quant_mode_short_names() +
                                              " also name the KG modes)");
    bool seen = false;
    for (const Mode* o : out) seen = seen || o == m;
    if (!seen) out.push_back(m);
  }
  if (out.empty()) throw CliError(ErrorKind::Argument, option + ": no mode given");
  return out;
}

const char* short_dtype_name(DType t) {
  switch (t) {
    case DType::Int8:
      return "int8";
    case DType::HiFloat8:
      return "hif8";
    case DType::Float8E4M3FN:
      return "e4m3";
    case DType::Float8E5M2:
      return "e5m2";
    case DType::Float8E8M0:
      return "e8m0";
    case DType::Float:
      return "fp32";
    case DType::Float16:
      return "fp16";
    case DType::BFloat16:
      return "bf16";
    default:
      return "?";
  }
}

}  // namespace qcoll::cli
