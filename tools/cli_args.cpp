// Argument helpers; see cli_args.hpp.
#include "cli_args.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

#include "cli_error.hpp"
#include "qcoll/contract.hpp"

namespace qcoll::cli {

std::string expand_rank(const std::string& pattern, int rank) {
  const std::string ph = kRankPlaceholder;
  std::string out;
  std::size_t pos = 0;
  for (;;) {
    std::size_t hit = pattern.find(ph, pos);
    if (hit == std::string::npos) break;
    out.append(pattern, pos, hit - pos);
    out += std::to_string(rank);
    pos = hit + ph.size();
  }
  out.append(pattern, pos, std::string::npos);
  return out;
}

void check_rank_pattern(const std::string& option, const std::string& pattern, int nranks) {
  if (pattern.empty()) throw CliError(ErrorKind::Argument, option + ": empty file name");
  if (nranks > 1 && pattern.find(kRankPlaceholder) == std::string::npos)
    throw CliError(ErrorKind::Argument,
                   option + " '" + pattern + "' has no {rank} placeholder; with " + std::to_string(nranks) +
                       " ranks every rank needs its own file (for example " + option + " data{rank}.npy)");
}

DType parse_dtype_option(const std::string& option, const std::string& value, std::span<const DType> allowed,
                         const char* role) {
  std::string expected;
  for (DType t : allowed) expected += (expected.empty() ? "" : ", ") + std::string(dtype_name(t));
  std::optional<DType> t = parse_dtype(value);
  if (!t) throw CliError(ErrorKind::Argument, option + ": unknown dtype '" + value + "' (expected " + expected + ")");
  for (DType a : allowed)
    if (a == *t) return *t;
  throw CliError(ErrorKind::Argument,
                 option + ": " + std::string(dtype_name(*t)) + " is not " + role + " (expected " + expected + ")");
}

settings::Contract current_contract() {
  settings::Contract c = settings::Contract::Vendor;
  if (const Status st = settings::contract(c); !st.ok()) throw CliError(ErrorKind::Argument, st.message);
  return c;
}

DType parse_x_dtype_option(const std::string& option, const std::string& value, const char* role) {
  const settings::Contract c = current_contract();
  const std::optional<DType> t = parse_dtype(value);
  if (t && !contract::x_dtype_allowed(*t, c) && contract::x_dtype_allowed(*t, settings::Contract::Extended))
    throw CliError(ErrorKind::Argument, option + ": " + std::string(dtype_name(*t)) + " needs " +
                                            settings::kContractName + "=extended (the contract is " +
                                            settings::contract_name(c) + ")");
  return parse_dtype_option(option, value, contract::x_dtypes(c), role);
}

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(sep, pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

namespace {
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
}  // namespace

void require_at_least(const std::string& option, double v, double lo) {
  if (!(v >= lo))
    throw CliError(ErrorKind::Argument, option + " must be at least " + number_text(lo) + ", got " + number_text(v));
}

void require_in_range(const std::string& option, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    throw CliError(ErrorKind::Argument, option + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                            "], got " + std::to_string(v));
}

std::string parse_choice(const std::string& option, const std::string& text, std::span<const char* const> choices) {
  std::string expected;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (text == choices[i]) return text;
    expected += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(choices[i]);
  }
  throw CliError(ErrorKind::Argument, option + ": expected " + expected + ", got '" + text + "'");
}

std::vector<Size> parse_sizes(const std::string& option, const std::string& text) {
  std::vector<Size> out;
  for (const std::string& item : split_list(text)) {
    const std::size_t x = item.find('x');
    Size s;
    bool ok = x != std::string::npos && x > 0 && x + 1 < item.size();
    if (ok) {
      try {
        std::size_t used = 0;
        s.bs = std::stoll(item.substr(0, x), &used);
        ok = used == x;
        s.h = std::stoll(item.substr(x + 1), &used);
        ok = ok && used == item.size() - x - 1;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok) throw CliError(ErrorKind::Argument, option + ": '" + item + "' is not BSxH (for example 1024x5120)");
    if (s.bs <= 0 || s.h <= 0)
      throw CliError(ErrorKind::Argument, option + ": '" + item + "': BS and H must be positive");
    out.push_back(s);
  }
  if (out.empty()) throw CliError(ErrorKind::Argument, option + ": no size given (for example 1024x5120)");
  return out;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

npy::Array load_npy(const std::string& path) {
  try {
    return npy::read_file(path);
  } catch (const npy::NpyError& e) {
    throw CliError(ErrorKind::File, e.what());
  }
}

// Writes every file to a temporary name first, then renames them all; on any failure removes
// what it created and throws.
void write_npy_files(const std::vector<std::pair<std::string, npy::Array>>& outputs) {
  const std::string suffix = ".tmp-" + std::to_string(::getpid());
  std::vector<std::string> temps;
  auto remove_temps = [&] {
    for (const auto& t : temps) std::remove(t.c_str());
  };
  try {
    for (const auto& [path, array] : outputs) {
      std::string tmp = path + suffix;
      temps.push_back(tmp);
      npy::write_bytes(tmp, npy::serialize(array));
    }
  } catch (const npy::NpyError& e) {
    remove_temps();
    throw CliError(ErrorKind::File, e.what());
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (std::rename(temps[i].c_str(), outputs[i].first.c_str()) != 0) {
      std::string msg = outputs[i].first + ": cannot rename the finished output into place: " + std::strerror(errno);
      // Undo the outputs already moved into place and drop the remaining temporaries.
      for (std::size_t j = 0; j < i; ++j) std::remove(outputs[j].first.c_str());
      for (std::size_t j = i; j < temps.size(); ++j) std::remove(temps[j].c_str());
      throw CliError(ErrorKind::File, msg);
    }
  }
}

}  // namespace qcoll::cli
