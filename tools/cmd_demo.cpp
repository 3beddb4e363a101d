// `qcoll demo`: what quantized reduce-scatter buys and costs on realistic data.
//
// N ranks (threads of this process, or under mpirun one per process) each generate an
// LLM-like activation tensor (BS x H), quantize it in every mode, and run QuantReduceScatter. For each mode the table shows the bytes a rank
// sends compared with a bf16 reduce-scatter, the operator's wall time (median of --reps
// runs), and the error of the result against the exact (fp64) sum of the unquantized
// tensors. The first row is the usual baseline: a bf16 ring reduce-scatter (inputs rounded
// to bf16, the partial sum rounded to bf16 at every hop, in ring order).
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "activations.hpp"
#include "cli_error.hpp"
#include "command.hpp"
#include "operator_call.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/formats.hpp"
#include "qcoll/qcoll.hpp"
#include "qcoll/quant.hpp"
#include "rank_runner.hpp"

namespace qcoll::cli {
namespace {

struct DemoArgs {
  int ranks = 8;
  bool ranks_given = false;  // under mpirun the number of processes is used unless given
  int64_t bs = 1024;
  int64_t hidden = 4096;
  std::string modes = "all";
  std::string out_dtype = "bfloat16";
  uint64_t seed = 1;
  int reps = 5;
  bool json = false;
};

struct Mode {
  const char* key;    // --modes name
  const char* label;  // table label
  DType x;
  DType scales;
};

// Short type names for the table.
const char* short_name(DType t) {
  switch (t) {
    case DType::Int8: return "int8";
    case DType::HiFloat8: return "hif8";
    case DType::Float8E4M3FN: return "e4m3";
    case DType::Float8E5M2: return "e5m2";
    case DType::Float8E8M0: return "e8m0";
    case DType::Float: return "fp32";
    default: return "?";
  }
}
constexpr Mode kModes[] = {
    {"int8", "INT8 KG", DType::Int8, DType::Float},
    {"hif8", "HiF8 KG", DType::HiFloat8, DType::Float},
    {"e4m3", "E4M3 KG", DType::Float8E4M3FN, DType::Float},
    {"e5m2", "E5M2 KG", DType::Float8E5M2, DType::Float},
    {"mx-e4m3", "E4M3 MX", DType::Float8E4M3FN, DType::Float8E8M0},
    {"mx-e5m2", "E5M2 MX", DType::Float8E5M2, DType::Float8E8M0},
};

std::string mode_keys() {
  std::string s;
  for (const Mode& m : kModes) s += (s.empty() ? "" : ", ") + std::string(m.key);
  return s;
}

std::vector<const Mode*> parse_modes(const std::string& list) {
  std::vector<const Mode*> out;
  if (list == "all") {
    for (const Mode& m : kModes) out.push_back(&m);
    return out;
  }
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const Mode* found = nullptr;
    for (const Mode& m : kModes)
      if (item == m.key) found = &m;
    if (!found) throw CliError(ErrorKind::Argument, "--modes: unknown mode '" + item + "' (expected all or a comma list of " + mode_keys() + ")");
    if (std::find(out.begin(), out.end(), found) == out.end()) out.push_back(found);
  }
  if (out.empty()) throw CliError(ErrorKind::Argument, "--modes: no mode given");
  return out;
}

struct ErrorStats {
  double rel_rms = 0;      // sqrt(sum (y - e)^2 / sum e^2)
  double max_abs_rel = 0;  // max |y - e| / max |e|
};

// Accumulates the errors of values y against the exact sums e.
class ErrorAccumulator {
 public:
  void add(double y, double e) {
    const double d = y - e;
    err2_ += d * d;
    ref2_ += e * e;
    max_err_ = std::max(max_err_, std::fabs(d));
    if (std::isnan(d)) nan_ = true;
    max_ref_ = std::max(max_ref_, std::fabs(e));
  }
  ErrorStats stats() const {
    if (nan_) return {NAN, NAN};
    return {ref2_ > 0 ? std::sqrt(err2_ / ref2_) : std::sqrt(err2_), max_ref_ > 0 ? max_err_ / max_ref_ : max_err_};
  }

 private:
  double err2_ = 0, ref2_ = 0, max_err_ = 0, max_ref_ = 0;
  bool nan_ = false;
};

float decode_output(DType t, const uint8_t* p) {
  if (t == DType::Float) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return t == DType::Float16 ? formats::decode_float16(bits) : formats::decode_bfloat16(bits);
}

float round_bf16(float v) { return formats::decode_bfloat16(formats::encode_bfloat16(v)); }

struct Row {
  std::string mode, label;
  std::string x_dtype, scales_dtype;
  std::string types;  // short form for the table
  int group = 0;  // elements per scale; 0 for the baseline
  double bytes_sent = 0;
  double ratio = 0;
  std::optional<double> time_ms;
  ErrorStats err;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

int run_demo(const DemoArgs& a) {
  // Ranks as threads, or under mpirun one rank per process (every process then makes every
  // rank's activations, which are a function of the seed and the rank, for the exact sums).
  std::unique_ptr<RankRunner> runner = make_rank_runner(a.ranks_given ? a.ranks : 0, "qcoll-demo", a.ranks);
  const int n = runner->size();
  if (n != 2 && n != 4 && n != 8)
    throw CliError(ErrorKind::Argument, "--ranks must be 2, 4 or 8, got " + std::to_string(n));
  if (a.bs < n || a.bs % n != 0)
    throw CliError(ErrorKind::Argument, "--bs must be a positive multiple of --ranks (" + std::to_string(n) + "), got " + std::to_string(a.bs));
  if (a.hidden % 128 != 0 || a.hidden < 1024 || a.hidden > 8192)
    throw CliError(ErrorKind::Argument, "--hidden must be a multiple of 128 in [1024, 8192], got " + std::to_string(a.hidden));
  if (a.reps < 1 || a.reps > 1000) throw CliError(ErrorKind::Argument, "--reps must be in [1, 1000], got " + std::to_string(a.reps));
  std::optional<DType> out_t = parse_dtype(a.out_dtype);
  if (!out_t || (*out_t != DType::Float && *out_t != DType::Float16 && *out_t != DType::BFloat16))
    throw CliError(ErrorKind::Argument, "--out-dtype must be float, float16 or bfloat16, got '" + a.out_dtype + "'");
  const DType out_dtype = *out_t;
  const std::vector<const Mode*> modes = parse_modes(a.modes);

  const std::size_t bs = static_cast<std::size_t>(a.bs), h = static_cast<std::size_t>(a.hidden);
  const std::size_t rows_per_rank = bs / n;
  const std::size_t count = bs * h;

  // Inputs (each rank generates its own, in parallel) and the exact fp64 sum.
  ActivationSpec spec;
  spec.rows = bs;
  spec.hidden = h;
  spec.seed = a.seed;
  std::vector<std::vector<float>> act(n);
  runner->run([&](int rank, int, const std::string&) { act[rank] = make_activations(spec, rank); });
  for (int k = 0; k < n; ++k)
    if (act[k].empty()) act[k] = make_activations(spec, k);  // ranks of other processes
  std::vector<double> exact(count, 0.0);
  for (int k = 0; k < n; ++k)
    for (std::size_t i = 0; i < count; ++i) exact[i] += static_cast<double>(act[k][i]);

  std::vector<Row> rows;
  const double bf16_bytes = static_cast<double>(count) * 2.0 * (n - 1) / n;

  // Baseline: bf16 ring reduce-scatter. Row block r travels r+1 -> r+2 -> ... -> r.
  {
    ErrorAccumulator acc;
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = r * rows_per_rank * h; i < (r + 1) * rows_per_rank * h; ++i) {
        float partial = round_bf16(act[(r + 1) % n][i]);
        for (int step = 2; step <= n; ++step) partial = round_bf16(partial + round_bf16(act[(r + step) % n][i]));
        acc.add(partial, exact[i]);
      }
    }
    Row row;
    row.mode = "bf16-ring";
    row.label = "bf16 ring (baseline)";
    row.x_dtype = "bfloat16";
    row.scales_dtype = "-";
    row.types = "bf16";
    row.bytes_sent = bf16_bytes;
    row.ratio = 1.0;
    row.err = acc.stats();
    rows.push_back(row);
  }

  for (const Mode* m : modes) {
    const std::size_t group = m->scales == DType::Float ? 128 : 32;
    const std::size_t scale_bytes = count / group * (m->scales == DType::Float ? 4 : 1);
    std::vector<std::vector<uint8_t>> q(n, std::vector<uint8_t>(count)), s(n, std::vector<uint8_t>(scale_bytes));
    std::vector<std::vector<uint8_t>> out(n, std::vector<uint8_t>(rows_per_rank * h * dtype_size(out_dtype)));
    std::vector<std::vector<std::chrono::steady_clock::time_point>> t0(n), t1(n);
    std::vector<CallResult> result(n);
    std::vector<bool> quant_ok(n, true);
    std::barrier<> sync(static_cast<std::ptrdiff_t>(runner->local_ranks().size()));
    runner->run([&](int rank, int, const std::string& group_name) {
      bool ok = m->scales == DType::Float
                    ? quant::quantize_kg(act[rank].data(), bs, h, m->x, q[rank].data(), reinterpret_cast<float*>(s[rank].data()))
                    : quant::quantize_mx(act[rank].data(), bs, h, m->x, q[rank].data(), s[rank].data());
      quant_ok[rank] = ok;
      const std::vector<int64_t> x_shape = {a.bs, a.hidden};
      const std::vector<int64_t> s_shape = m->scales == DType::Float
                                               ? std::vector<int64_t>{a.bs, a.hidden / 128}
                                               : std::vector<int64_t>{a.bs, a.hidden / 64, 2};
      TensorArg x{m->x, x_shape, q[rank].data()};
      TensorArg sc{m->scales, s_shape, s[rank].data()};
      TensorArg o{out_dtype, {static_cast<int64_t>(rows_per_rank), a.hidden}, out[rank].data()};
      for (int rep = 0; rep < a.reps; ++rep) {
        sync.arrive_and_wait();
        if (rank == runner->local_ranks().front()) runner->process_barrier();
        sync.arrive_and_wait();
        t0[rank].push_back(std::chrono::steady_clock::now());
        CallResult res = call_operator(Operator::ReduceScatter, group_name, x, sc, o);
        t1[rank].push_back(std::chrono::steady_clock::now());
        if (!res.ok() && result[rank].ok()) result[rank] = res;
      }
    });
    bool local_ok = true;
    for (int r : runner->local_ranks()) local_ok = local_ok && quant_ok[r] && result[r].ok();
    const bool all_ok = runner->all_ok(local_ok);  // collective: every process learns of a failure
    for (int r : runner->local_ranks()) {
      if (!quant_ok[r])
        throw CliError(ErrorKind::Status, std::string("quantizing rank ") + std::to_string(r) + "'s tensor as " + m->label + " failed", 561000);
      if (!result[r].ok())
        throw CliError(ErrorKind::Status, result[r].message + " [" + m->label + ", rank " + std::to_string(r) + "]", result[r].status);
    }
    if (!all_ok) throw CliError(ErrorKind::Status, std::string("another rank failed [") + m->label + "]", 361001);
    // Every rank's times and output, in every process (a no-op when all ranks are threads here).
    std::vector<std::vector<uint8_t>> spans(n, std::vector<uint8_t>(a.reps * 2 * sizeof(int64_t)));
    for (int r : runner->local_ranks())
      for (int rep = 0; rep < a.reps; ++rep) {
        const int64_t ns[2] = {std::chrono::duration_cast<std::chrono::nanoseconds>(t0[r][rep].time_since_epoch()).count(),
                               std::chrono::duration_cast<std::chrono::nanoseconds>(t1[r][rep].time_since_epoch()).count()};
        std::memcpy(spans[r].data() + rep * sizeof ns, ns, sizeof ns);
      }
    runner->share(spans);
    runner->share(out);
    // Time of one call: first start to last end over the ranks (threads: one clock); with
    // ranks in several processes, possibly on several hosts, the slowest rank's own time.
    const bool one_clock = static_cast<int>(runner->local_ranks().size()) == n;
    std::vector<double> times;
    for (int rep = 0; rep < a.reps; ++rep) {
      int64_t begin = INT64_MAX, end = INT64_MIN, longest = 0;
      for (int r = 0; r < n; ++r) {
        int64_t ns[2];
        std::memcpy(ns, spans[r].data() + rep * sizeof ns, sizeof ns);
        begin = std::min(begin, ns[0]);
        end = std::max(end, ns[1]);
        longest = std::max(longest, ns[1] - ns[0]);
      }
      times.push_back(1e-6 * static_cast<double>(one_clock ? end - begin : longest));
    }
    ErrorAccumulator acc;
    const std::size_t osize = dtype_size(out_dtype);
    for (int r = 0; r < n; ++r)
      for (std::size_t i = 0; i < rows_per_rank * h; ++i)
        acc.add(decode_output(out_dtype, out[r].data() + i * osize), exact[r * rows_per_rank * h + i]);

    Row row;
    row.mode = m->key;
    row.label = m->label;
    row.x_dtype = dtype_name(m->x);
    row.scales_dtype = dtype_name(m->scales);
    row.group = static_cast<int>(group);
    row.types = std::string(short_name(m->x)) + " + " + short_name(m->scales) + " per " + std::to_string(group);
    row.bytes_sent = static_cast<double>(count + scale_bytes) * (n - 1) / n;
    row.ratio = row.bytes_sent / bf16_bytes;
    row.time_ms = median(times);
    row.err = acc.stats();
    rows.push_back(row);
  }

  const std::size_t outliers = outlier_channels(spec).size();
  if (!runner->prints_summary()) return 0;  // under mpirun: the process of rank 0 prints
  const bool threads = static_cast<int>(runner->local_ranks().size()) == n;
  const std::string title = "qcoll demo: QuantReduceScatter on " + std::to_string(n) + (threads ? " in-process ranks (" : " ranks, one per process (") + runner->transport() + "), x (" + std::to_string(bs) + ", " + std::to_string(h) + ") per rank -> " +
                            std::string(dtype_name(out_dtype)) + " (" + std::to_string(rows_per_rank) + ", " +
                            std::to_string(h) + ") per rank";
  if (a.json) {
    nlohmann::ordered_json j;
    j["title"] = title;
    j["operator"] = "QuantReduceScatter";
    j["ranks"] = n;
    j["transport"] = runner->transport();
    j["bs"] = a.bs;
    j["hidden"] = a.hidden;
    j["out_dtype"] = dtype_name(out_dtype);
    j["seed"] = a.seed;
    j["reps"] = a.reps;
    j["outlier_channels"] = outliers;
    j["kernel"] = qcoll::kernel_target();
    j["rows"] = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
      nlohmann::ordered_json o;
      o["mode"] = r.mode;
      o["label"] = r.label;
      o["x_dtype"] = r.x_dtype;
      o["scales_dtype"] = r.scales_dtype == "-" ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.scales_dtype);
      o["group"] = r.group ? nlohmann::ordered_json(r.group) : nlohmann::ordered_json(nullptr);
      o["bytes_sent_per_rank"] = r.bytes_sent;
      o["ratio_vs_bf16"] = r.ratio;
      o["time_ms_median"] = r.time_ms ? nlohmann::ordered_json(*r.time_ms) : nlohmann::ordered_json(nullptr);
      o["rel_rms_error"] = r.err.rel_rms;
      o["max_abs_error_rel"] = r.err.max_abs_rel;
      j["rows"].push_back(o);
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }

  std::printf("%s\n", title.c_str());
  std::printf("data: Gaussian activations, per-token scale, %zu outlier channels at 10-100x; seed %llu (rank r uses seed+r)\n",
              outliers, static_cast<unsigned long long>(a.seed));
  std::printf("errors vs the exact fp64 sum of the unquantized tensors; time: median of %d runs, all ranks (kernel %s)\n\n",
              a.reps, qcoll::kernel_target().c_str());
  std::printf("%-21s %-20s %13s %8s %10s %12s %12s\n", "mode", "x + scales", "sent/rank", "vs bf16", "time", "rel RMS err", "max abs err");
  std::printf("%-21s %-20s %13s %8s %10s %12s %12s\n", "", "", "(x+scales)", "", "(ms)", "", "(/max|sum|)");
  for (const Row& r : rows) {
    std::printf("%-21s %-20s %9.2f MiB %8.3f %10s %12.2e %12.2e\n", r.label.c_str(), r.types.c_str(), r.bytes_sent / 1048576.0,
                r.ratio, r.time_ms ? fmt("%.2f", *r.time_ms).c_str() : "-", r.err.rel_rms, r.err.max_abs_rel);
  }
  std::printf("\nsent/rank: bytes each rank sends to the others, (n-1)/n of its input; a bf16 reduce-scatter sends\n"
              "2 bytes per element. The baseline row is computed (bf16 arithmetic, ring order), not timed.\n");
  return 0;
}

const CommandRegistrar reg_demo([](CLI::App& app) {
  CLI::App* sub = app.add_subcommand("demo", "Quantized reduce-scatter on realistic activations: bytes, time and error per mode");
  auto args = std::make_shared<DemoArgs>();
  sub->add_option("--ranks,-n", args->ranks, "Ranks (2, 4 or 8); under mpirun: the number of processes")
      ->capture_default_str()
      ->each([args](const std::string&) { args->ranks_given = true; });
  sub->add_option("--bs", args->bs, "Rows (tokens) per rank's input")->capture_default_str();
  sub->add_option("--hidden", args->hidden, "Hidden size H (multiple of 128 in [1024, 8192])")->capture_default_str();
  sub->add_option("--modes", args->modes, "all, or a comma list of " + mode_keys())->capture_default_str();
  sub->add_option("--out-dtype", args->out_dtype, "Output type: float, float16, bfloat16")->capture_default_str();
  sub->add_option("--seed", args->seed, "Seed of the synthetic activations")->capture_default_str();
  sub->add_option("--reps", args->reps, "Timed runs per mode (the median is shown)")->capture_default_str();
  sub->add_flag("--json", args->json, "Print the results as JSON");
  sub->callback([args] {
    int rc = 0;
    try {
      rc = run_demo(*args);
    } catch (const CliError& e) {
      rc = report(e);
    }
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
});

}  // namespace
}  // namespace qcoll::cli
