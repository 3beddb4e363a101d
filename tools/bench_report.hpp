// Results of `qcoll bench`: one row per (operator, size, ranks, input, mode), and their
// outputs: a markdown table, JSON (written and read back, so runs can be merged), and a
// gnuplot PNG of qcoll's speedup over the fastest peer against the message size.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qcoll::cli {

// What qcoll's input is in a row:
//   "quantized"  x and scales made before timing (the quantized operator alone);
//   "bf16", "fp32"  a float tensor: the time covers quantizing it and the operator.
inline constexpr const char* kInputs[] = {"quantized", "bf16", "fp32"};

// One peer's time in a row (the same for every mode and input of one operator and size).
struct PeerTime {
  std::string name;   // "mpi-fp32", "oneccl-bf16", ...
  std::string input;  // "fp32" or "bf16": the data it reduces
  double s = 0;       // median, seconds
  std::vector<double> samples;
  double rel_err = 0;  // of its result against the reference (NaN: not measured)
};

struct BenchRow {
  std::string op;                   // "reduce-scatter" or "all-reduce"
  int64_t bs = 0, h = 0;            // x is (BS, H) on every rank
  int n = 0;                        // ranks
  std::string transport;            // qcoll's: "shm", "mpi" or "threads"
  std::string mode;                 // "kg-int8", ..., "mx-e5m2"
  std::string input = "quantized";  // kInputs
  // How qcoll ran: "operator" (the quantized operator on x quantized before timing) or
  // "fused" (QuantizeReduceScatter / QuantizeAllReduce on the float input, timed whole).
  std::string qcoll_path = "operator";
  std::string out_dtype;       // qcoll's output dtype
  std::string label;           // free text of the run (e.g. "shaped 1gbit"); may be empty
  double link_bits_per_s = 0;  // shaped runs: each rank's link rate (0: not shaped)

  // Medians over the timed repeats, seconds.
  double qcoll_s = 0;
  std::vector<double> qcoll_samples;
  double quant_s = 0;  // quantizing one rank's input (fp32; bf16 for a bf16 row), max over ranks, 1 sample
  // Relative RMS error of the result against the reference: the first fp32 peer's result
  // (NaN without peers).
  double qcoll_rel_err = 0;
  std::vector<PeerTime> peers;  // empty without peers

  // Bytes per rank: the fp32 logical input, and what each contender sends at least.
  double logical_bytes = 0;
  double wire_qcoll = 0, wire_fp32 = 0, wire_bf16 = 0;

  // The peer named `name`, or nullptr.
  const PeerTime* peer(const std::string& name) const;
  // The fastest peer this row is compared with: any peer for pre-quantized input, else the
  // peers of the row's input type. nullptr when none was measured.
  const PeerTime* fastest_peer() const;
  double speedup(const PeerTime* p) const;  // p->s / qcoll_s; NaN for nullptr
  double wire(const PeerTime& p) const { return p.input == "fp32" ? wire_fp32 : wire_bf16; }
  // Time over the bytes-on-the-wire bound (wire / link rate); NaN when not shaped.
  double over_bound(double t, double wire) const;
};

struct BenchRun {
  nlohmann::json meta;  // command, host, load, settings of one run
  std::vector<BenchRow> rows;
};

nlohmann::json to_json(const BenchRun& run);
// Accepts what to_json wrote (one run) or a merged file ({"runs": [...]}), also the rows of
// earlier versions (MPI peers only, as fp32_s / bf16_s); throws CliError(File).
std::vector<BenchRun> runs_from_json(const nlohmann::json& j, const std::string& path);
nlohmann::json merged_json(const std::vector<BenchRun>& runs);

// Markdown table of the rows (peers' and bound columns only where measured).
std::string markdown_table(const std::vector<BenchRow>& rows);

// Writes PNG `png` (gnuplot, pngcairo or png terminal): speedup over the fastest peer vs
// message size, one panel per operator, one line per (mode, input, ranks, label); without
// peers, qcoll's GB/s. Also leaves `png`.dat and `png`.gp. Throws CliError(File) if
// gnuplot is missing or fails.
void plot_speedup(const std::vector<BenchRow>& rows, const std::string& png);

}  // namespace qcoll::cli
