// Results of `qcoll bench`: one row per (operator, size, ranks, mode), and their outputs: a
// markdown table, JSON (written and read back, so runs can be merged), and a gnuplot PNG of
// qcoll's speedup over the peers against the message size.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qcoll::cli {

struct BenchRow {
  std::string op;         // "reduce-scatter" or "all-reduce"
  int64_t bs = 0, h = 0;  // x is (BS, H) on every rank
  int n = 0;              // ranks
  std::string transport;  // qcoll's: "shm", "mpi" or "threads"
  std::string mode;       // "kg-int8", ..., "mx-e5m2"
  std::string out_dtype;  // qcoll's output dtype
  std::string label;      // free text of the run (e.g. "shaped 1gbit"); may be empty
  double link_bits_per_s = 0;  // shaped runs: each rank's link rate (0: not shaped)

  // Medians over the timed repeats, seconds; NaN where not measured (peers without MPI).
  double qcoll_s = 0, fp32_s = 0, bf16_s = 0;
  std::vector<double> qcoll_samples, fp32_samples, bf16_samples;
  double quant_s = 0;  // quantizing one rank's fp32 input in this mode (max over ranks, 1 sample)
  // Relative RMS error of the result against the fp32 peer's (NaN without peers).
  double qcoll_rel_err = 0, bf16_rel_err = 0;

  // Bytes per rank: the fp32 logical input, and what each contender sends at least.
  double logical_bytes = 0;
  double wire_qcoll = 0, wire_fp32 = 0, wire_bf16 = 0;

  double speedup_fp32() const { return fp32_s / qcoll_s; }
  double speedup_bf16() const { return bf16_s / qcoll_s; }
  // Time over the bytes-on-the-wire bound (wire / link rate); NaN when not shaped.
  double over_bound(double t, double wire) const;
};

struct BenchRun {
  nlohmann::json meta;  // command, host, load, settings of one run
  std::vector<BenchRow> rows;
};

nlohmann::json to_json(const BenchRun& run);
// Accepts what to_json wrote (one run) or a merged file ({"runs": [...]}); throws CliError(File).
std::vector<BenchRun> runs_from_json(const nlohmann::json& j, const std::string& path);
nlohmann::json merged_json(const std::vector<BenchRun>& runs);

// Markdown table of the rows (peers' and bound columns only where measured).
std::string markdown_table(const std::vector<BenchRow>& rows);

// Writes PNG `png` (gnuplot, pngcairo or png terminal): speedup vs message size, one panel
// per (operator, peer), one line per (mode, ranks, label). Also leaves `png`.dat and `png`.gp.
// Throws CliError(File) if gnuplot is missing or fails.
void plot_speedup(const std::vector<BenchRow>& rows, const std::string& png);

}  // namespace qcoll::cli
