// The mode table; see modes.hpp.
#include "modes.hpp"

#include <cctype>
#include <span>

#include "cli_args.hpp"
#include "cli_error.hpp"
#include "qcoll/contract.hpp"

namespace qcoll::cli {
namespace {

using settings::Contract;

// "INT8", "HiF8", "E4M3", ...: a format as the tables' labels spell it.
std::string format_label(DType x) {
  if (x == DType::HiFloat8) return "HiF8";
  std::string s = short_dtype_name(x);
  for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

// One Mode per mode of the extended contract (every mode), in the contract's order; the
// labels live beside them.
struct Table {
  std::vector<std::string> labels;
  std::vector<Mode> modes;
};

const Table& table() {
  static const Table t = [] {
    Table made;
    const std::span<const contract::QuantMode> all = contract::quant_modes(Contract::Extended);
    made.labels.reserve(all.size());
    for (const contract::QuantMode& q : all)
      made.labels.push_back(format_label(q.x) + " " + contract::mode_name(q.scales));
    for (std::size_t i = 0; i < all.size(); ++i)
      made.modes.push_back({all[i].name, made.labels[i].c_str(), all[i].x, all[i].scales});
    return made;
  }();
  return t;
}

// The Mode of a mode of the contract.
const Mode* mode_of(const contract::QuantMode& q) {
  for (const Mode& m : table().modes)
    if (m.x == q.x && m.scales == q.scales) return &m;
  return nullptr;
}

std::string join(std::span<const contract::QuantMode> modes) {
  std::string s;
  for (const contract::QuantMode& q : modes) s += (s.empty() ? "" : ", ") + std::string(q.name);
  return s;
}

}  // namespace

bool Mode::mx() const { return contract::is_mx(scales); }
const char* Mode::format() const { return short_dtype_name(x); }
const char* Mode::short_name() const { return mx() ? name : format(); }
std::size_t Mode::group() const { return contract::scale_group(scales); }
std::string Mode::types_text() const {
  return std::string(format()) + " + " + short_dtype_name(scales) + " per " + std::to_string(group());
}

std::vector<const Mode*> all_modes(Contract c) {
  std::vector<const Mode*> out;
  for (const contract::QuantMode& q : contract::quant_modes(c)) out.push_back(mode_of(q));
  return out;
}
std::vector<const Mode*> all_modes() { return all_modes(current_contract()); }

const Mode* find_mode(const std::string& option, std::string_view text) {
  // The spellings and the contract's refusal are the contract's (as in Python's mode=).
  const Contract c = current_contract();
  const contract::QuantMode* q = nullptr;
  const Status st = contract::resolve_quant_mode(text, c, q, option.c_str());
  if (st.ok()) return mode_of(*q);
  if (contract::find_quant_mode(text, Contract::Extended) != nullptr) throw CliError(ErrorKind::Argument, st.message);
  return nullptr;
}

std::string mode_names() { return join(contract::quant_modes(current_contract())); }

std::string mode_help() {
  const auto vendor = contract::quant_modes(Contract::Vendor), all = contract::quant_modes(Contract::Extended);
  return join(vendor) + " (" + settings::kContractName + "=extended adds " + join(all.subspan(vendor.size())) + ")";
}

std::vector<const Mode*> parse_mode_list(const std::string& option, const std::string& text) {
  if (text == "all") return all_modes();
  std::vector<const Mode*> out;
  for (const std::string& item : split_list(text)) {
    const Mode* m = find_mode(option, item);
    if (m == nullptr)
      throw CliError(ErrorKind::Argument,
                     option + ": unknown mode '" + item + "' (expected all or a comma list of " + mode_names() + "; " +
                         contract::quant_mode_short_names(current_contract()) + " also name the KG modes)");
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
    case DType::Float4E2M1:
      return "e2m1";
    case DType::Float4E1M2:
      return "e1m2";
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
