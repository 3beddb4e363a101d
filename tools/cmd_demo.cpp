// `qcoll demo`: what quantized reduce-scatter buys and costs on realistic data.
//
// N ranks (threads of this process, or under mpirun one per process) each generate an
// LLM-like activation tensor (BS x H) and, for every mode, (1) quantize it with the public
// quantizer and run QuantReduceScatter on the result, and (2) run the fused
// QuantizeReduceScatter on the float tensor itself (quantize and exchange in one call; the
// demo checks that both give the same bits). For each mode the table shows the bytes a rank
// sends compared with a bf16 reduce-scatter, the wall times (median of --reps runs) of the
// quantizer, of the operator on pre-quantized data and of the fused call, and the error of
// the result against the exact (fp64) sum of the unquantized tensors. The first row is the usual baseline: a bf16
// ring reduce-scatter (inputs rounded to bf16, the partial sum rounded to bf16 at every hop,
// in ring order).
//
// Under QCOLL_CONTRACT=extended (contract.md §ext) the rows include the 4-bit modes (kg-e2m1,
// kg-e1m2, mx-e2m1, mx-e1m2) and --ranks takes any count in [2, 1024]; every rank, thread or
// process, keeps that contract (mpirun: pass it on with -x QCOLL_CONTRACT).
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "activations.hpp"
#include "cli_args.hpp"
#include "cli_error.hpp"
#include "command.hpp"
#include "modes.hpp"
#include "operator_call.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/formats.hpp"
#include "qcoll/qcoll.hpp"
#include "qcoll/quant.hpp"
#include "qcoll/settings.hpp"
#include "rank_runner.hpp"
#include "stats.hpp"

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

// The checked arguments and the ranks that run them.
struct Demo {
  std::unique_ptr<RankRunner> runner;
  settings::Contract contract = settings::Contract::Vendor;
  int n = 0;
  std::size_t bs = 0, h = 0, rows_per_rank = 0, count = 0;  // count: elements of x per rank
  DType out_dtype = DType::BFloat16;
  std::vector<const Mode*> modes;
  ActivationSpec spec;
  int reps = 0;
  std::vector<std::vector<float>> act;  // every rank's input
  std::vector<double> exact;            // their exact (fp64) sum
};

struct Row {
  std::string mode, label;
  std::string x_dtype, scales_dtype;  // scales_dtype empty for the baseline
  std::string types;                  // short form for the table
  int group = 0;                      // elements per scale; 0 for the baseline
  double bytes_sent = 0;
  double ratio = 0;
  std::optional<double> time_ms;      // the operator on pre-quantized x
  std::optional<double> quantize_ms;  // the public quantizer on one rank's input (all ranks at once)
  std::optional<double> fused_ms;     // the fused call from the float input
  ErrorStats err;
};

// Ranks as threads, or under mpirun one rank per process.
Demo make_demo(const DemoArgs& a) {
  Demo d;
  d.contract = current_contract();
  d.runner = make_rank_runner(a.ranks_given ? a.ranks : 0, "qcoll-demo", a.ranks);
  d.n = d.runner->size();
  if (!contract::rank_count_allowed(d.n, d.contract))
    throw CliError(ErrorKind::Argument,
                   "--ranks must be " + contract::rank_count_rule(d.contract) + ", got " + std::to_string(d.n));
  if (a.bs < d.n || a.bs % d.n != 0)
    throw CliError(ErrorKind::Argument, "--bs must be a positive multiple of --ranks (" + std::to_string(d.n) +
                                            "), got " + std::to_string(a.bs));
  if (!contract::op_h_ok(a.hidden))
    throw CliError(ErrorKind::Argument, "--hidden must be a multiple of " + std::to_string(contract::kOpHMultiple) +
                                            " in [" + std::to_string(contract::kOpHMin) + ", " +
                                            std::to_string(contract::kOpHMax) + "], got " + std::to_string(a.hidden));
  require_in_range("--reps", a.reps, 1, 1000);
  d.out_dtype = parse_dtype_option("--out-dtype", a.out_dtype, contract::kOutDtypes, "an output type");
  d.modes = parse_mode_list("--modes", a.modes);
  d.bs = static_cast<std::size_t>(a.bs);
  d.h = static_cast<std::size_t>(a.hidden);
  d.rows_per_rank = d.bs / static_cast<std::size_t>(d.n);
  d.count = d.bs * d.h;
  d.spec.rows = d.bs;
  d.spec.hidden = d.h;
  d.spec.seed = a.seed;
  d.reps = a.reps;
  return d;
}

// Every rank's activations (each local rank makes its own, in parallel; under mpirun every
// process also makes the other ranks', a function of the seed and the rank) and their sum.
void make_inputs(Demo& d) {
  d.act.assign(static_cast<std::size_t>(d.n), {});
  d.runner->run([&](int rank, int, const std::string&) { d.act[rank] = make_activations(d.spec, rank); });
  for (int k = 0; k < d.n; ++k)
    if (d.act[k].empty()) d.act[k] = make_activations(d.spec, k);
  d.exact.assign(d.count, 0.0);
  for (int k = 0; k < d.n; ++k)
    for (std::size_t i = 0; i < d.count; ++i) d.exact[i] += static_cast<double>(d.act[k][i]);
}

double bf16_bytes_sent(const Demo& d) { return static_cast<double>(d.count) * 2.0 * (d.n - 1) / d.n; }

// The bf16 ring reduce-scatter, computed: row block r travels r+1 -> r+2 -> ... -> r.
Row baseline_row(const Demo& d) {
  auto round_bf16 = [](float v) { return formats::decode_bfloat16(formats::encode_bfloat16(v)); };
  const std::size_t block = d.rows_per_rank * d.h;
  ErrorAccumulator acc;
  for (int r = 0; r < d.n; ++r) {
    for (std::size_t i = r * block; i < (r + 1) * block; ++i) {
      float partial = round_bf16(d.act[(r + 1) % d.n][i]);
      for (int step = 2; step <= d.n; ++step) partial = round_bf16(partial + round_bf16(d.act[(r + step) % d.n][i]));
      acc.add(partial, d.exact[i]);
    }
  }
  Row row;
  row.mode = "bf16-ring";
  row.label = "bf16 ring (baseline)";
  row.x_dtype = "bfloat16";
  row.types = "bf16";
  row.bytes_sent = bf16_bytes_sent(d);
  row.ratio = 1.0;
  row.err = acc.stats();
  return row;
}

// What the ranks of one mode produced: every rank's output and the times.
struct ModeResult {
  std::vector<std::vector<uint8_t>> out;  // per rank
  std::vector<double> times_ms;           // per rep: the operator on pre-quantized x
  std::vector<double> quantize_ms;        // per rep: the quantizer
  std::vector<double> fused_ms;           // per rep: the fused operator
  double bytes_per_rank = 0;              // x plus scales of one rank
};

// Time of each call: first start to last end over the ranks (threads: one clock); with ranks
// in several processes, possibly on several hosts, the slowest rank's own time. `spans` holds
// every rank's (start, end) in ns per rep.
std::vector<double> call_times_ms(const Demo& d, const std::vector<std::vector<uint8_t>>& spans) {
  const bool one_clock = static_cast<int>(d.runner->local_ranks().size()) == d.n;
  std::vector<double> times;
  for (int rep = 0; rep < d.reps; ++rep) {
    int64_t begin = INT64_MAX, end = INT64_MIN, longest = 0;
    for (int r = 0; r < d.n; ++r) {
      int64_t ns[2];
      std::memcpy(ns, spans[r].data() + rep * sizeof ns, sizeof ns);
      begin = std::min(begin, ns[0]);
      end = std::max(end, ns[1]);
      longest = std::max(longest, ns[1] - ns[0]);
    }
    times.push_back(1e-6 * static_cast<double>(one_clock ? end - begin : longest));
  }
  return times;
}

// Threads of one rank's quantizer call: QCOLL_RANK_THREADS, else the cores shared among the
// ranks of this process (as the operators share them).
int quantize_threads(const Demo& d) {
  if (const int t = settings::rank_threads(); t > 0) return t;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / static_cast<int>(d.runner->local_ranks().size()));
}

// Every rank's (start, end) of each rep, as call_times_ms wants them, from every process.
std::vector<double> shared_times_ms(Demo& d, const std::vector<std::vector<std::chrono::steady_clock::time_point>>& t0,
                                    const std::vector<std::vector<std::chrono::steady_clock::time_point>>& t1) {
  std::vector<std::vector<uint8_t>> spans(d.n, std::vector<uint8_t>(d.reps * 2 * sizeof(int64_t)));
  for (int r : d.runner->local_ranks())
    for (int rep = 0; rep < d.reps; ++rep) {
      const int64_t ns[2] = {
          std::chrono::duration_cast<std::chrono::nanoseconds>(t0[r][rep].time_since_epoch()).count(),
          std::chrono::duration_cast<std::chrono::nanoseconds>(t1[r][rep].time_since_epoch()).count()};
      std::memcpy(spans[r].data() + rep * sizeof ns, ns, sizeof ns);
    }
  d.runner->share(spans);
  return call_times_ms(d, spans);
}

// For mode m, d.reps times, each step after a barrier: every rank quantizes its input (the
// public quantizer), the ranks run QuantReduceScatter on it, then the fused
// QuantizeReduceScatter on the float input. Throws CliError (in every process) if any rank
// failed or the two results differ.
ModeResult run_mode(Demo& d, const Mode& m) {
  using Clock = std::chrono::steady_clock;
  using Times = std::vector<std::vector<Clock::time_point>>;
  const int n = d.n;
  std::vector<quant::QuantizedTensor> q(n);
  ModeResult res;
  const std::size_t out_bytes = d.rows_per_rank * d.h * dtype_size(d.out_dtype);
  res.out.assign(n, std::vector<uint8_t>(out_bytes));
  std::vector<std::vector<uint8_t>> fused_out(n, std::vector<uint8_t>(out_bytes));
  Times q0(n), q1(n), t0(n), t1(n), f0(n), f1(n);
  std::vector<Status> quantized(n);
  std::vector<CallResult> called(n);
  std::vector<bool> same(n, true);
  quant::QuantOptions qopt;
  qopt.threads = quantize_threads(d);
  std::barrier<> sync(static_cast<std::ptrdiff_t>(d.runner->local_ranks().size()));
  d.runner->run([&](int rank, int, const std::string& group) {
    const std::vector<int64_t> x_shape = {static_cast<int64_t>(d.bs), static_cast<int64_t>(d.h)};
    const std::vector<int64_t> out_shape = {static_cast<int64_t>(d.rows_per_rank), x_shape[1]};
    auto step = [&](Times& begin, Times& end, auto&& work) {
      sync.arrive_and_wait();
      if (rank == d.runner->local_ranks().front()) d.runner->process_barrier();
      sync.arrive_and_wait();
      begin[rank].push_back(Clock::now());
      work();
      end[rank].push_back(Clock::now());
    };
    PreparedCall fused(Op::QuantizeReduceScatter, {DType::Float, x_shape, d.act[rank].data()},
                       QuantConfig{m.x, m.scales, 0.0f}, {d.out_dtype, out_shape, fused_out[rank].data()});
    for (int rep = 0; rep < d.reps; ++rep) {
      step(q0, q1, [&] {
        const Status st = quant::quantize(d.act[rank].data(), d.bs, d.h, m.x, m.scales, q[rank], qopt);
        if (!st.ok() && quantized[rank].ok()) quantized[rank] = st;
      });
      PreparedCall call(Op::ReduceScatter, {m.x, x_shape, q[rank].q.data()},
                        {m.scales, contract::scales_shape(m.scales, x_shape), const_cast<void*>(q[rank].scales_data())},
                        {d.out_dtype, out_shape, res.out[rank].data()});
      step(t0, t1, [&] {
        CallResult r = call.run(group);
        if (!r.ok() && called[rank].ok()) called[rank] = r;
      });
      step(f0, f1, [&] {
        CallResult r = fused.run(group);
        if (!r.ok() && called[rank].ok()) called[rank] = r;
      });
      same[rank] = same[rank] && fused_out[rank] == res.out[rank];
    }
  });
  bool local_ok = true;
  for (int r : d.runner->local_ranks()) local_ok = local_ok && quantized[r].ok() && called[r].ok() && same[r];
  const bool all_ok = d.runner->all_ok(local_ok);  // collective: every process learns of a failure
  for (int r : d.runner->local_ranks()) {
    const std::string where = std::string(" [") + m.label + ", rank " + std::to_string(r) + "]";
    if (!quantized[r].ok())
      throw CliError(ErrorKind::Status, "quantizing: " + quantized[r].message + where,
                     static_cast<int32_t>(quantized[r].code));
    if (!called[r].ok()) throw CliError(ErrorKind::Status, called[r].message + where, called[r].status);
    if (!same[r])
      throw CliError(ErrorKind::Status, "the fused operator's result differs from quantize-then-operate" + where,
                     static_cast<int32_t>(StatusCode::InnerError));
  }
  if (!all_ok)
    throw CliError(ErrorKind::Status, std::string("another rank failed [") + m.label + "]",
                   static_cast<int32_t>(StatusCode::RuntimeError));
  // Every rank's times and output, in every process (a no-op when all ranks are threads here).
  res.times_ms = shared_times_ms(d, t0, t1);
  res.quantize_ms = shared_times_ms(d, q0, q1);
  res.fused_ms = shared_times_ms(d, f0, f1);
  d.runner->share(res.out);
  res.bytes_per_rank = static_cast<double>(contract::x_data_bytes(m.x, d.bs, d.h)) +
                       static_cast<double>(contract::scales_count(m.scales, d.bs, d.h) * dtype_size(m.scales));
  return res;
}

Row mode_row(const Demo& d, const Mode& m, const ModeResult& res) {
  ErrorAccumulator acc;
  const std::size_t block = d.rows_per_rank * d.h;
  for (int r = 0; r < d.n; ++r)
    for (std::size_t i = 0; i < block; ++i)
      acc.add(output_value(d.out_dtype, res.out[r].data(), i), d.exact[r * block + i]);
  Row row;
  row.mode = m.short_name();
  row.label = m.label;
  row.x_dtype = dtype_name(m.x);
  row.scales_dtype = dtype_name(m.scales);
  row.group = static_cast<int>(m.group());
  row.types = m.types_text();
  row.bytes_sent = res.bytes_per_rank * (d.n - 1) / d.n;
  row.ratio = row.bytes_sent / bf16_bytes_sent(d);
  row.time_ms = median(res.times_ms);
  row.quantize_ms = median(res.quantize_ms);
  row.fused_ms = median(res.fused_ms);
  row.err = acc.stats();
  return row;
}

std::string title(const Demo& d) {
  const bool threads = static_cast<int>(d.runner->local_ranks().size()) == d.n;
  return std::string("qcoll demo: ") + contract::op_name(Op::ReduceScatter) + " on " + std::to_string(d.n) +
         (threads ? " in-process ranks (" : " ranks, one per process (") + d.runner->transport() + "), x (" +
         std::to_string(d.bs) + ", " + std::to_string(d.h) + ") per rank -> " + std::string(dtype_name(d.out_dtype)) +
         " (" + std::to_string(d.rows_per_rank) + ", " + std::to_string(d.h) + ") per rank" +
         (d.contract == settings::Contract::Extended ? std::string(", ") + settings::kContractName + "=extended" : "");
}

void print_json(const Demo& d, const DemoArgs& a, const std::vector<Row>& rows) {
  using J = nlohmann::ordered_json;
  auto or_null = [](bool has, auto v) { return has ? J(v) : J(nullptr); };
  J j;
  j["title"] = title(d);
  j["operator"] = contract::op_name(Op::ReduceScatter);
  j["ranks"] = d.n;
  j["contract"] = settings::contract_name(d.contract);
  j["transport"] = d.runner->transport();
  j["bs"] = a.bs;
  j["hidden"] = a.hidden;
  j["out_dtype"] = dtype_name(d.out_dtype);
  j["seed"] = a.seed;
  j["reps"] = a.reps;
  j["outlier_channels"] = outlier_channels(d.spec).size();
  j["kernel"] = qcoll::kernel_target();
  j["quantize_target"] = quant::quantize_target();
  j["quantize_threads"] = quantize_threads(d);
  j["rows"] = J::array();
  for (const Row& r : rows) {
    J o;
    o["mode"] = r.mode;
    o["label"] = r.label;
    o["x_dtype"] = r.x_dtype;
    o["scales_dtype"] = or_null(!r.scales_dtype.empty(), r.scales_dtype);
    o["group"] = or_null(r.group != 0, r.group);
    o["bytes_sent_per_rank"] = r.bytes_sent;
    o["ratio_vs_bf16"] = r.ratio;
    o["time_ms_median"] = or_null(r.time_ms.has_value(), r.time_ms.value_or(0));
    o["quantize_ms_median"] = or_null(r.quantize_ms.has_value(), r.quantize_ms.value_or(0));
    o["fused_ms_median"] = or_null(r.fused_ms.has_value(), r.fused_ms.value_or(0));
    o["rel_rms_error"] = r.err.rel_rms;
    o["max_abs_error_rel"] = r.err.max_abs_rel;
    j["rows"].push_back(o);
  }
  std::printf("%s\n", j.dump(2).c_str());
}

void print_table(const Demo& d, const DemoArgs& a, const std::vector<Row>& rows) {
  std::printf("%s\n", title(d).c_str());
  std::printf(
      "data: Gaussian activations, per-token scale, %zu outlier channels at 10-100x; seed %llu (rank r uses seed+r)\n",
      outlier_channels(d.spec).size(), static_cast<unsigned long long>(a.seed));
  std::printf(
      "errors vs the exact fp64 sum of the unquantized tensors; times: median of %d runs, all ranks (kernel %s, "
      "quantizer %s, %d thread(s) per rank)\n\n",
      a.reps, qcoll::kernel_target().c_str(), quant::quantize_target(), quantize_threads(d));
  std::printf("%-21s %-20s %13s %8s %9s %9s %9s %12s %12s\n", "mode", "x + scales", "sent/rank", "vs bf16", "quantize",
              "operator", "fused", "rel RMS err", "max abs err");
  std::printf("%-21s %-20s %13s %8s %9s %9s %9s %12s %12s\n", "", "", "(x+scales)", "", "(ms)", "(ms)", "(ms)", "",
              "(/max|sum|)");
  auto ms = [](const std::optional<double>& v) {
    char buf[32] = "-";
    if (v) std::snprintf(buf, sizeof buf, "%.2f", *v);
    return std::string(buf);
  };
  for (const Row& r : rows) {
    std::printf("%-21s %-20s %9.2f MiB %8.3f %9s %9s %9s %12.2e %12.2e\n", r.label.c_str(), r.types.c_str(),
                r.bytes_sent / 1048576.0, r.ratio, ms(r.quantize_ms).c_str(), ms(r.time_ms).c_str(),
                ms(r.fused_ms).c_str(), r.err.rel_rms, r.err.max_abs_rel);
  }
  std::printf(
      "\nsent/rank: bytes each rank sends to the others, (n-1)/n of its input; a bf16 reduce-scatter sends\n"
      "2 bytes per element. The baseline row is computed (bf16 arithmetic, ring order), not timed.\n"
      "quantize: the public quantizer on each rank's fp32 input; operator: QuantReduceScatter on the result;\n"
      "fused: QuantizeReduceScatter on the fp32 input (quantized chunk by chunk into the transport's buffers),\n"
      "checked to give the operator's bits.\n");
}

int run_demo(const DemoArgs& a) {
  Demo d = make_demo(a);
  make_inputs(d);
  std::vector<Row> rows = {baseline_row(d)};
  for (const Mode* m : d.modes) rows.push_back(mode_row(d, *m, run_mode(d, *m)));
  if (!d.runner->prints_summary()) return 0;  // under mpirun: the process of rank 0 prints
  if (a.json)
    print_json(d, a, rows);
  else
    print_table(d, a, rows);
  return 0;
}

const CommandRegistrar reg_demo([](CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("demo", "Quantized reduce-scatter on realistic activations: bytes, time and error per mode");
  auto args = std::make_shared<DemoArgs>();
  sub->add_option("--ranks,-n", args->ranks,
                  "Ranks (" + contract::rank_count_rule(settings::Contract::Vendor) +
                      "; QCOLL_CONTRACT=extended: " + contract::rank_count_rule(settings::Contract::Extended) +
                      "); under mpirun: the number of processes")
      ->capture_default_str()
      ->each([args](const std::string&) { args->ranks_given = true; });
  sub->add_option("--bs", args->bs, "Rows (tokens) per rank's input")->capture_default_str();
  sub->add_option("--hidden", args->hidden, "Hidden size H (multiple of 128 in [1024, 8192])")->capture_default_str();
  sub->add_option("--modes", args->modes, "all (the contract's modes), or a comma list of " + mode_help())
      ->capture_default_str();
  sub->add_option("--out-dtype", args->out_dtype, "Output type: float, float16, bfloat16")->capture_default_str();
  sub->add_option("--seed", args->seed, "Seed of the synthetic activations")->capture_default_str();
  sub->add_option("--reps", args->reps, "Timed runs per mode (the median is shown)")->capture_default_str();
  sub->add_flag("--json", args->json, "Print the results as JSON");
  set_action(sub, [args] { return run_demo(*args); });
});

}  // namespace
}  // namespace qcoll::cli
