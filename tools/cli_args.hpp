// Argument helpers shared by the qcoll commands: per-rank file patterns, dtype options,
// and .npy loading that turns reader errors into CliError.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "npy.hpp"
#include "qcoll/dtype.hpp"

namespace qcoll::cli {

constexpr const char* kRankPlaceholder = "{rank}";

// `pattern` with every "{rank}" replaced by the decimal rank.
std::string expand_rank(const std::string& pattern, int rank);
// A pattern must be non-empty and, for more than one rank, contain {rank} (every rank needs
// its own file). Throws CliError(Argument) naming `option`.
void check_rank_pattern(const std::string& option, const std::string& pattern, int nranks);
// Parses a dtype option value (canonical names and aliases such as e4m3, bf16) and checks
// it is one of `allowed`; `role` completes "X is not <role>". Throws CliError(Argument).
DType parse_dtype_option(const std::string& option, const std::string& value, std::initializer_list<DType> allowed,
                         const char* role);
// "(2, 3)"
std::string shape_text(const std::vector<int64_t>& shape);
// npy::read_file, with NpyError turned into CliError(File).
npy::Array load_npy(const std::string& path);

// Writes (path, array) pairs: every file to a temporary name first, then renames them all
// into place; on any failure removes what it created and throws CliError(File).
void write_npy_files(const std::vector<std::pair<std::string, npy::Array>>& files);

}  // namespace qcoll::cli
