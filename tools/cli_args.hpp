// Option parsing shared by the qcoll commands: lists, ranges, sizes, dtype options,
// per-rank file patterns, and .npy loading that turns reader errors into CliError.
// Every failure is CliError(Argument) with a message that names the option.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "npy.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/settings.hpp"

namespace qcoll::cli {

constexpr const char* kRankPlaceholder = "{rank}";

// `pattern` with every "{rank}" replaced by the decimal rank.
std::string expand_rank(const std::string& pattern, int rank);
// A pattern must be non-empty and, for more than one rank, contain {rank} (every rank needs
// its own file). Throws CliError(Argument) naming `option`.
void check_rank_pattern(const std::string& option, const std::string& pattern, int nranks);
// Parses a dtype option value (canonical names and aliases such as e4m3, bf16) and checks
// it is one of `allowed` (e.g. contract::kOutDtypes); `role` completes "X is not <role>".
DType parse_dtype_option(const std::string& option, const std::string& value, std::span<const DType> allowed,
                         const char* role);

// The contract the command keeps: QCOLL_CONTRACT or the program's choice (settings::contract);
// a bad value is CliError(Argument) with the library's message naming QCOLL_CONTRACT.
settings::Contract current_contract();
// An x dtype option (--x-dtype): one of the current contract's x dtypes (contract::x_dtypes);
// under vendor a 4-bit one is "OPTION: float4_e2m1 needs QCOLL_CONTRACT=extended (the
// contract is vendor)", anything else as parse_dtype_option.
DType parse_x_dtype_option(const std::string& option, const std::string& value, const char* role);

// The non-empty items of a `sep`-separated list.
std::vector<std::string> split_list(const std::string& text, char sep = ',');
// "OPTION must be at least LO, got V" unless lo <= v.
void require_at_least(const std::string& option, double v, double lo);
// "OPTION must be in [LO, HI], got V" unless lo <= v <= hi (integers).
void require_in_range(const std::string& option, int64_t v, int64_t lo, int64_t hi);
// `text` if it is one of `choices`, else "OPTION: expected a, b or c, got 'TEXT'".
std::string parse_choice(const std::string& option, const std::string& text, std::span<const char* const> choices);

// A tensor size BS x H, written "1024x5120".
struct Size {
  int64_t bs = 0, h = 0;
};
// A comma list of sizes "BSxH,..."; BS and H positive.
std::vector<Size> parse_sizes(const std::string& option, const std::string& text);
// "(2, 3)"
std::string shape_text(const std::vector<int64_t>& shape);
// npy::read_file, with NpyError turned into CliError(File).
npy::Array load_npy(const std::string& path);

// Writes (path, array) pairs: every file to a temporary name first, then renames them all
// into place; on any failure removes what it created and throws CliError(File).
void write_npy_files(const std::vector<std::pair<std::string, npy::Array>>& files);

}  // namespace qcoll::cli
