// Argument helpers; see cli_args.hpp.
#include "cli_args.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "cli_error.hpp"

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
    throw CliError(ErrorKind::Argument, option + " '" + pattern + "' has no {rank} placeholder; with " +
                                            std::to_string(nranks) +
                                            " ranks every rank needs its own file (for example " + option +
                                            " data{rank}.npy)");
}

DType parse_dtype_option(const std::string& option, const std::string& value, std::initializer_list<DType> allowed,
                         const char* role) {
  std::string expected;
  for (DType t : allowed) expected += (expected.empty() ? "" : ", ") + std::string(dtype_name(t));
  std::optional<DType> t = parse_dtype(value);
  if (!t) throw CliError(ErrorKind::Argument, option + ": unknown dtype '" + value + "' (expected " + expected + ")");
  for (DType a : allowed)
    if (a == *t) return *t;
  throw CliError(ErrorKind::Argument, option + ": " + std::string(dtype_name(*t)) + " is not " + role + " (expected " +
                                          expected + ")");
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
