// `qcoll bench`: end-to-end time of qcoll's operators against MPI peers on the same ranks.
//
//   mpirun -np 4 qcoll bench --sizes 1024x5120,4096x5120 --repeats 5 --json r4.json
//   qcoll bench --ranks 4 --sizes 1024x5120          # in-process thread ranks, qcoll only
//   qcoll bench --from-json r2.json r4.json --plot speedup.png   # merge, table, plot
//
// Under mpirun every process is one rank: qcoll runs over its MPI communicator (shared
// memory on one host, MPI across hosts), and the peers (bench_peers.hpp) run on the same
// MPI_COMM_WORLD ranks. For every size and operator the contenders are timed in interleaved
// rounds (each peer, then each qcoll mode), so that a change of machine load hits them
// alike; each timed call is preceded by a barrier and its time is the maximum over ranks;
// the reported time is the median of the rounds after the warm-up. See docs/bench.md.
// The modes and the rank counts are the contract's (QCOLL_CONTRACT; contract.md §ext):
// under extended also the 4-bit modes and any rank count in [2, 1024]; every rank keeps
// the contract of its process (mpirun: pass it on with -x QCOLL_CONTRACT).

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "activations.hpp"
#include "bench_peers.hpp"
#include "bench_report.hpp"
#include "bench_sync.hpp"
#include "cli_args.hpp"
#include "cli_error.hpp"
#include "command.hpp"
#include "modes.hpp"
#include "operator_call.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/formats.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/quant.hpp"
#include "rank_runner.hpp"
#include "rank_runner_mpi.hpp"
#include "stats.hpp"

namespace qcoll::cli {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct BenchArgs {
  std::string sizes = "1024x5120,4096x5120,8192x8192";
  std::string ops = "reduce-scatter,all-reduce";
  std::string modes = "all";  // the contract's modes
  std::string inputs = "quantized";
  std::string out_dtype = "bfloat16";
  std::string transport = "auto";  // auto, mpi, threads
  int ranks = 0;                   // threads only
  int repeats = 3;
  int warmup = 1;
  std::string peers = "mpi,oneccl,gloo";
  std::string peer_inputs = "fp32,bf16";
  bool no_peers = false;
  PluginPaths plugins;  // empty: default_plugin_path()
  uint64_t seed = 1;
  std::string label;
  double link_gbit = 0;
  int ranks_per_host = 1;  // for the bound columns: ranks that share one host's link
  std::string json_path, plot_path, table_path;
  std::vector<std::string> from_json;
  bool quiet = false;
};

// qcoll's input in a row (bench_report.hpp kInputs).
enum class Input { Quantized = 0, Bf16 = 1, Fp32 = 2 };
const char* input_name(Input in) { return kInputs[static_cast<int>(in)]; }

// The checked arguments of a run.
struct BenchPlan {
  std::vector<Size> sizes;
  std::vector<const Mode*> modes;
  std::vector<Op> ops;
  std::vector<Input> inputs;
  std::vector<std::string> peer_families;  // empty: no peers
  std::vector<DType> peer_inputs;          // Float before BFloat16
  DType out_dtype = DType::BFloat16;
  bool use_mpi = false;
  bool reads(Input in) const { return std::find(inputs.begin(), inputs.end(), in) != inputs.end(); }
  bool peers_read(DType t) const {
    return !peer_families.empty() && std::find(peer_inputs.begin(), peer_inputs.end(), t) != peer_inputs.end();
  }
  // The float tensors a contender reads once timing starts.
  bool needs_bf16() const { return reads(Input::Bf16) || peers_read(DType::BFloat16); }
  bool needs_fp32() const { return reads(Input::Fp32) || peers_read(DType::Float); }
};

std::string read_first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// One rank's input of one size, in every form a contender takes.
struct RankInputs {
  std::size_t rows = 0, H = 0;
  std::size_t count() const { return rows * H; }
  std::vector<float> act;                 // fp32 (the fp32 peers; qcoll from fp32; empty when neither runs)
  std::vector<uint16_t> act16;            // bf16 (the bf16 peers; qcoll from bf16)
  std::vector<quant::QuantizedTensor> q;  // per mode: made before timing (qcoll, pre-quantized)
  std::vector<double> quant_s[3];         // [Input][mode]: quantizing from that input, max over ranks
  // Where the float-input rows quantize to: rows*H bytes of x and rows*H/32 bytes of scales,
  // the size of both modes' scales (H/128 fp32 = H/32 E8M0 bytes per row).
  std::vector<uint8_t> scratch_q, scratch_s;
};

// Quantizes rank input `in` (fp32 or bf16) in mode m into x and scales buffers (the public
// quantizers).
Status quantize_into(const Mode& m, Input in, const RankInputs& x, uint8_t* q, void* scales) {
  const bool bf16 = in == Input::Bf16;
  const void* src = bf16 ? static_cast<const void*>(x.act16.data()) : x.act.data();
  bool ok;
  if (m.mx())
    ok = bf16 ? quant::quantize_mx_bf16(x.act16.data(), x.rows, x.H, m.x, q, static_cast<uint8_t*>(scales))
              : quant::quantize_mx(x.act.data(), x.rows, x.H, m.x, q, static_cast<uint8_t*>(scales));
  else
    ok = bf16 ? quant::quantize_kg_bf16(x.act16.data(), x.rows, x.H, m.x, q, static_cast<float*>(scales))
              : quant::quantize_kg(x.act.data(), x.rows, x.H, m.x, q, static_cast<float*>(scales));
  if (ok) return Status::Ok();
  Status st = quant::check_quantize_args(src, x.rows, x.H, m.x, m.scales, q, scales);
  return st.ok() ? Status::Error(StatusCode::InnerError, "the quantizer failed") : st;
}

// One contender's timed rounds and the error of its result.
struct Timings {
  std::vector<double> samples;
  double rel_err = kNaN;
};

// What one rank does; rank 0 (of the process that has it) fills `rows`.
struct RankJob {
  const BenchArgs& args;
  const BenchPlan& plan;
  std::string transport;
  RankSync& sync;
  std::vector<std::unique_ptr<Peer>>& peers;  // empty: peers skipped
  std::vector<BenchRow> rows;
  std::mutex error_mu;
  std::string error;
  int32_t error_status = 0;

  // Times f() on every rank after a barrier; returns the maximum over ranks. Throws (on
  // every rank alike) if f failed on any rank: f returns a status and sets `why`.
  template <class F>
  double timed(int rank, F&& f, const std::string& what) {
    sync.barrier(rank);
    std::string why;
    const auto t0 = std::chrono::steady_clock::now();
    const int32_t st = f(why);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double v[2] = {dt, st != 0 ? 1.0 : 0.0};
    sync.max(rank, v, 2);
    if (v[1] != 0) {
      if (st != 0) throw CliError(ErrorKind::Status, what + ": " + why, st);
      throw CliError(ErrorKind::Status, what + ": failed on another rank",
                     static_cast<int32_t>(StatusCode::RuntimeError));
    }
    return v[0];
  }

  static int32_t status_of(const Status& st, std::string& why) {
    why = st.message;
    return static_cast<int32_t>(st.code);
  }

  // Relative RMS error of `got` against the fp32 result `ref` over all ranks' outputs.
  double rel_err(int rank, DType t, const uint8_t* got, const float* ref, std::size_t count) {
    ErrorAccumulator acc;
    for (std::size_t i = 0; i < count; ++i) acc.add(output_value(t, got, i), ref[i]);
    double v[2] = {acc.err2(), acc.ref2()};
    sync.sum(rank, v, 2);
    return v[1] > 0 ? std::sqrt(v[0] / v[1]) : kNaN;
  }

  void run(int rank, int n, const std::string& group) {
    for (const Size& sz : plan.sizes) {
      RankInputs in = make_inputs(rank, sz);
      for (Op op : plan.ops) run_op(rank, n, group, sz, in, op);
    }
  }

  RankInputs make_inputs(int rank, const Size& sz) {
    RankInputs in;
    in.rows = static_cast<std::size_t>(sz.bs);
    in.H = static_cast<std::size_t>(sz.h);
    ActivationSpec spec;
    spec.rows = in.rows;
    spec.hidden = in.H;
    spec.seed = args.seed;
    in.act = make_activations(spec, rank);
    if (plan.needs_bf16()) {
      in.act16.resize(in.act.size());
      for (std::size_t i = 0; i < in.act.size(); ++i) in.act16[i] = formats::encode_bfloat16(in.act[i]);
    }
    in.scratch_q.resize(in.act.size());
    in.scratch_s.resize(in.act.size() / contract::kMxGroup);
    in.q.resize(plan.modes.size());
    for (std::size_t m = 0; m < plan.modes.size(); ++m) {
      const Mode& mode = *plan.modes[m];
      // The pre-quantized input (untimed; timed() makes every rank fail alike).
      timed(
          rank,
          [&](std::string& w) {
            return status_of(quant::quantize(in.act.data(), in.rows, in.H, mode.x, mode.scales, in.q[m]), w);
          },
          std::string("quantize ") + mode.name);
      for (Input from : {Input::Fp32, Input::Bf16}) {
        if (from == Input::Bf16 && in.act16.empty()) continue;
        in.quant_s[static_cast<int>(from)].push_back(timed(
            rank,
            [&](std::string& w) {
              return status_of(quantize_into(mode, from, in, in.scratch_q.data(), in.scratch_s.data()), w);
            },
            std::string("quantize ") + mode.name + " from " + input_name(from)));
      }
    }
    in.quant_s[static_cast<int>(Input::Quantized)] = in.quant_s[static_cast<int>(Input::Fp32)];
    // What no contender reads from here on is given back: under smpirun every rank lives in
    // one process, and at n = 256 that process's memory is the limit (docs/scale.md).
    std::vector<uint8_t>().swap(in.scratch_q);
    std::vector<uint8_t>().swap(in.scratch_s);
    if (!plan.needs_fp32()) std::vector<float>().swap(in.act);
    return in;
  }

  // One qcoll call of a row: the operator on x quantized before timing, or the fused
  // operator (QuantizeReduceScatter / QuantizeAllReduce) on the float tensor itself.
  static int32_t qcoll_call(PreparedCall& call, const std::string& group, std::string& why) {
    CallResult r = call.run(group);
    why = r.message;
    return r.status;
  }

  // The outputs and prepared calls of one operator at one size.
  struct OpBuffers {
    bool rs = false;
    std::size_t out_count = 0;
    std::vector<float> ref;  // the first fp32 peer's result: the reference of the errors
    const Peer* ref_peer = nullptr;
    std::vector<std::vector<uint8_t>> peer_out;
    std::vector<uint8_t> qout;
    // Per input and mode: the quantized operator on in.q[m], the fused one on the fp32 / bf16 tensor.
    std::vector<std::vector<PreparedCall>> calls;
  };

  OpBuffers op_buffers(int n, const Size& sz, RankInputs& in, Op op) const {
    OpBuffers b;
    b.rs = op == Op::ReduceScatter;
    const std::size_t count = in.count();
    b.out_count = b.rs ? count / static_cast<std::size_t>(n) : count;
    const std::vector<int64_t> x_shape = {sz.bs, sz.h};
    const std::vector<int64_t> out_shape = expected_output_shape(op, x_shape, n);
    for (const auto& p : peers) {
      b.peer_out.emplace_back(b.out_count * dtype_size(p->input()));
      if (!b.ref_peer && p->input() == DType::Float) b.ref_peer = p.get();
    }
    if (b.ref_peer) b.ref.resize(b.out_count);
    b.qout.resize(b.out_count * dtype_size(plan.out_dtype));
    b.calls.resize(3);
    for (std::size_t m = 0; m < plan.modes.size(); ++m) {
      const Mode& mode = *plan.modes[m];
      const std::vector<int64_t> s_shape = contract::scales_shape(mode.scales, x_shape);
      const TensorArg out{plan.out_dtype, out_shape, b.qout.data()};
      const QuantConfig cfg{mode.x, mode.scales, 0.0f};
      b.calls[static_cast<int>(Input::Quantized)].emplace_back(
          op, TensorArg{mode.x, x_shape, const_cast<uint8_t*>(in.q[m].q.data())},
          TensorArg{mode.scales, s_shape, const_cast<void*>(in.q[m].scales_data())}, out);
      b.calls[static_cast<int>(Input::Fp32)].emplace_back(op, TensorArg{DType::Float, x_shape, in.act.data()}, cfg,
                                                          out);
      b.calls[static_cast<int>(Input::Bf16)].emplace_back(op, TensorArg{DType::BFloat16, x_shape, in.act16.data()}, cfg,
                                                          out);
    }
    return b;
  }

  // One round of every peer (round 0 also takes the reference and the peers' errors).
  void peer_round(int rank, int round, const RankInputs& in, OpBuffers& b, std::vector<Timings>& tp) {
    const bool keep = round >= args.warmup;
    for (std::size_t p = 0; p < peers.size(); ++p) {
      Peer& peer = *peers[p];
      const void* src = peer.input() == DType::Float ? static_cast<const void*>(in.act.data()) : in.act16.data();
      const double t = timed(
          rank,
          [&](std::string&) {
            if (b.rs)
              peer.reduce_scatter(src, b.peer_out[p].data(), b.out_count);
            else
              peer.all_reduce(src, b.peer_out[p].data(), b.out_count);
            return 0;
          },
          peer.name() + " peer");
      if (keep) tp[p].samples.push_back(t);
      if (round == 0 && &peer == b.ref_peer)
        std::memcpy(b.ref.data(), b.peer_out[p].data(), b.out_count * sizeof(float));
    }
    if (round == 0 && b.ref_peer)
      for (std::size_t p = 0; p < peers.size(); ++p)
        tp[p].rel_err = rel_err(rank, peers[p]->input(), b.peer_out[p].data(), b.ref.data(), b.out_count);
  }

  // One round of qcoll for every input and mode.
  void qcoll_round(int rank, int round, const std::string& group, Op op, OpBuffers& b,
                   std::vector<std::vector<Timings>>& tq) {
    const bool keep = round >= args.warmup;
    for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
      const Input input = plan.inputs[i];
      for (std::size_t m = 0; m < plan.modes.size(); ++m) {
        const Mode& mode = *plan.modes[m];
        const double t = timed(
            rank, [&](std::string& why) { return qcoll_call(b.calls[static_cast<int>(input)][m], group, why); },
            std::string("qcoll ") + command_name(op) + " " + mode.name + " from " + input_name(input));
        if (keep) tq[i][m].samples.push_back(t);
        if (round == 0 && b.ref_peer)
          tq[i][m].rel_err = rel_err(rank, plan.out_dtype, b.qout.data(), b.ref.data(), b.out_count);
      }
    }
  }

  // Interleaved rounds of one operator: every peer, then qcoll for every input and mode.
  void run_op(int rank, int n, const std::string& group, const Size& sz, RankInputs& in, Op op) {
    OpBuffers b = op_buffers(n, sz, in, op);
    std::vector<Timings> tp(peers.size());
    std::vector<std::vector<Timings>> tq(plan.inputs.size(), std::vector<Timings>(plan.modes.size()));
    for (int round = 0; round < args.warmup + args.repeats; ++round) {
      peer_round(rank, round, in, b, tp);
      qcoll_round(rank, round, group, op, b, tq);
    }
    if (rank == 0)
      for (std::size_t i = 0; i < plan.inputs.size(); ++i)
        for (std::size_t m = 0; m < plan.modes.size(); ++m)
          rows.push_back(make_row(n, sz, op, plan.inputs[i], m, in, tq[i][m], tp));
  }

  BenchRow make_row(int n, const Size& sz, Op op, Input input, std::size_t m, const RankInputs& in, const Timings& tq,
                    const std::vector<Timings>& tp) const {
    const bool rs = op == Op::ReduceScatter;
    const double count = static_cast<double>(in.count());
    BenchRow r;
    r.op = command_name(op);
    r.bs = sz.bs;
    r.h = sz.h;
    r.n = n;
    r.transport = transport;
    r.mode = plan.modes[m]->name;
    r.input = input_name(input);
    r.qcoll_path = input == Input::Quantized ? "operator" : "fused";
    r.out_dtype = std::string(dtype_name(plan.out_dtype));
    r.label = args.label;
    r.link_bits_per_s = args.link_gbit * 1e9;
    r.qcoll_samples = tq.samples;
    r.qcoll_s = median(tq.samples);
    r.qcoll_rel_err = tq.rel_err;
    r.quant_s = in.quant_s[static_cast<int>(input)][m];
    r.logical_bytes = count * 4.0;
    for (std::size_t p = 0; p < peers.size(); ++p)
      r.peers.push_back({peers[p]->name(), peers[p]->input() == DType::Float ? "fp32" : "bf16", median(tp[p].samples),
                         tp[p].samples, tp[p].rel_err});
    // Bytes that leave each host at least (ranks_per_host L ranks on each of h = n / L
    // hosts; L = 1: the bytes each rank sends). qcoll sums exactly, in rank order, so no
    // host can pre-reduce: a reduce-scatter sends the (n-L)/n of each local rank's quantized
    // input owned elsewhere; an all-reduce either adds its all-gather of the output dtype,
    // each rank's block crossing to each other host once (the hosts schedule), or sends
    // each local rank's whole quantized input to each other host once (QCOLL_ALL_REDUCE=
    // gather): the bound is the smaller of the two. The peers may
    // reduce inside a host first: (h-1)/h of the tensor per host for a reduce-scatter,
    // twice that for an all-reduce (reduce-scatter plus all-gather among the hosts).
    const double L = args.ranks_per_host, h = n / L;
    const double qbytes = static_cast<double>(in.q[m].q.size() + in.q[m].scales_bytes());
    const double block = count / n * static_cast<double>(dtype_size(plan.out_dtype));
    r.wire_qcoll =
        rs ? L * (n - L) / n * qbytes : std::min(L * (n - L) / n * qbytes + L * (h - 1) * block, L * (h - 1) * qbytes);
    const double peer_frac = (h - 1) / h * (rs ? 1 : 2);
    r.wire_fp32 = peer_frac * count * 4.0;
    r.wire_bf16 = peer_frac * count * 2.0;
    return r;
  }
};

nlohmann::json host_meta() {
  nlohmann::json m;
  utsname u{};
  if (uname(&u) == 0) {
    m["hostname"] = u.nodename;
    m["machine"] = u.machine;
  }
  m["online_cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  m["loadavg_before"] = read_first_line("/proc/loadavg");
  return m;
}

void write_outputs(const BenchArgs& args, const std::vector<BenchRun>& runs) {
  std::vector<BenchRow> rows;
  for (const auto& r : runs) rows.insert(rows.end(), r.rows.begin(), r.rows.end());
  const std::string table = markdown_table(rows);
  if (!args.quiet) std::printf("%s", table.c_str());
  if (!args.table_path.empty()) {
    std::ofstream t(args.table_path);
    if (!(t << table)) throw CliError(ErrorKind::File, args.table_path + ": cannot write");
  }
  if (!args.json_path.empty()) {
    std::ofstream j(args.json_path);
    if (!(j << merged_json(runs).dump(1) << "\n")) throw CliError(ErrorKind::File, args.json_path + ": cannot write");
  }
  if (!args.plot_path.empty()) plot_speedup(rows, args.plot_path);
}

int merge_command(const BenchArgs& args) {
  std::vector<BenchRun> runs;
  for (const auto& path : args.from_json) {
    std::ifstream f(path);
    if (!f) throw CliError(ErrorKind::File, path + ": cannot open");
    nlohmann::json j;
    try {
      f >> j;
    } catch (const nlohmann::json::exception& e) {
      throw CliError(ErrorKind::File, path + ": not JSON: " + e.what());
    }
    auto sub = runs_from_json(j, path);
    runs.insert(runs.end(), sub.begin(), sub.end());
  }
  write_outputs(args, runs);
  return 0;
}

BenchPlan make_plan(const BenchArgs& args) {
  require_at_least("--repeats", args.repeats, 1);
  require_at_least("--warmup", args.warmup, 0);
  require_at_least("--link-gbit", args.link_gbit, 0);
  require_at_least("--ranks-per-host", args.ranks_per_host, 1);
  BenchPlan plan;
  plan.sizes = parse_sizes("--sizes", args.sizes);
  plan.modes = parse_mode_list("--modes", args.modes);
  plan.ops = parse_op_list("--ops", args.ops);
  for (const std::string& item : split_list(args.inputs)) {
    const std::string in = parse_choice("--input", item, kInputs);
    const Input v = in == "quantized" ? Input::Quantized : in == "bf16" ? Input::Bf16 : Input::Fp32;
    if (std::find(plan.inputs.begin(), plan.inputs.end(), v) == plan.inputs.end()) plan.inputs.push_back(v);
  }
  if (plan.inputs.empty()) throw CliError(ErrorKind::Argument, "--input: no input given (quantized, bf16, fp32)");
  if (!args.no_peers && args.peers != "none")
    for (const std::string& item : split_list(args.peers))
      plan.peer_families.push_back(parse_choice("--peers", item, kPeerFamilies));
  bool fp32 = false, bf16 = false;
  for (const std::string& item : split_list(args.peer_inputs))
    (parse_choice("--peer-inputs", item, kPeerInputs) == "fp32" ? fp32 : bf16) = true;
  if (fp32) plan.peer_inputs.push_back(DType::Float);
  if (bf16) plan.peer_inputs.push_back(DType::BFloat16);
  if (plan.peer_inputs.empty()) throw CliError(ErrorKind::Argument, "--peer-inputs: no input given (fp32, bf16)");
  plan.out_dtype = parse_dtype_option("--out-dtype", args.out_dtype, contract::kOutDtypes, "an output type");
  static constexpr const char* kTransports[] = {"auto", "mpi", "threads"};
  const std::string t = parse_choice("--transport", args.transport, kTransports);
  plan.use_mpi = t == "mpi" || (t == "auto" && launched_by_mpi() && mpi_available());
  if (!plan.use_mpi) plan.peer_families.clear();  // the peers run one rank per process
  if (!plan.use_mpi && args.ranks == 0)
    throw CliError(ErrorKind::Argument, "--ranks is required with thread ranks (not started by mpirun)");
  return plan;
}

// Runs job on every local rank; the first failure of any rank is rethrown here.
void run_ranks(RankRunner& runner, RankJob& job) {
  runner.run([&](int rank, int size, const std::string& group) {
    try {
      job.run(rank, size, group);
    } catch (const CliError& e) {
      std::lock_guard<std::mutex> lock(job.error_mu);
      if (job.error.empty()) {
        job.error = e.what();
        job.error_status = e.kind() == ErrorKind::Status ? e.status() : -static_cast<int32_t>(e.kind());
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(job.error_mu);
      if (job.error.empty()) {
        job.error = e.what();
        job.error_status = static_cast<int32_t>(StatusCode::InnerError);
      }
    }
  });
  if (job.error.empty()) return;
  if (job.error_status < 0) throw CliError(static_cast<ErrorKind>(-job.error_status), job.error);
  throw CliError(ErrorKind::Status, job.error, job.error_status);
}

// The n ranks against the contract's rank counts, --ranks, --ranks-per-host and the sizes.
void check_rank_count(const BenchArgs& args, const BenchPlan& plan, int n, settings::Contract c) {
  if (!contract::rank_count_allowed(n, c))
    throw CliError(ErrorKind::Argument, std::string(plan.use_mpi ? "the MPI processes" : "--ranks") + " must be " +
                                            contract::rank_count_rule(c) + ", got " + std::to_string(n));
  if (plan.use_mpi && args.ranks != 0 && args.ranks != n)
    throw CliError(ErrorKind::Argument, "--ranks " + std::to_string(args.ranks) + " differs from the " +
                                            std::to_string(n) + " MPI processes");
  if (n % args.ranks_per_host != 0)
    throw CliError(ErrorKind::Argument, "--ranks-per-host: must divide the " + std::to_string(n) + " ranks, got " +
                                            std::to_string(args.ranks_per_host));
  for (const Size& s : plan.sizes)
    if (s.bs % n != 0)
      throw CliError(ErrorKind::Argument, "--sizes: BS " + std::to_string(s.bs) + " is not a multiple of the " +
                                              std::to_string(n) + " ranks");
}

int bench_command(const BenchArgs& args) {
  if (!args.from_json.empty()) return merge_command(args);
  const BenchPlan plan = make_plan(args);
  const settings::Contract c = current_contract();
  nlohmann::json meta = host_meta();
  meta["contract"] = settings::contract_name(c);
  std::unique_ptr<MpiSession> session;
  if (plan.use_mpi) session = std::make_unique<MpiSession>();
  std::vector<BenchRun> runs(1);
  {
    std::unique_ptr<RankRunner> runner = plan.use_mpi ? make_mpi_runner("qcoll-bench") : make_thread_runner(args.ranks);
    const int n = runner->size();
    check_rank_count(args, plan, n, c);
    std::unique_ptr<RankSync> sync = plan.use_mpi ? make_mpi_sync() : make_thread_sync(n);
    PeerSet peer_set;
    if (!plan.peer_families.empty()) peer_set = make_peers(plan.peer_families, plan.peer_inputs, args.plugins);
    RankJob job{args, plan, runner->transport(), *sync, peer_set.peers, {}, {}, {}, 0};
    run_ranks(*runner, job);
    meta["loadavg_after"] = read_first_line("/proc/loadavg");
    meta["ranks"] = n;
    meta["transport"] = runner->transport();
    std::string names;
    for (const auto& p : peer_set.peers) names += (names.empty() ? "" : ", ") + p->name();
    meta["peers"] = names.empty() ? std::string("skipped") : names;
    meta["peers_unavailable"] = peer_set.unavailable;
    meta["peer_info"] = peer_set.info;
    meta["inputs"] = args.inputs;
    meta["float_input_path"] =
        "fused (QuantizeReduceScatter / QuantizeAllReduce on the float tensor, quantize time included; quant_s: "
        "the public quantizer alone, for comparison)";
    meta["kernel"] = qcollKernelTarget();
    meta["repeats"] = args.repeats;
    meta["warmup"] = args.warmup;
    meta["label"] = args.label;
    meta["link_gbit"] = args.link_gbit;
    meta["ranks_per_host"] = args.ranks_per_host;
    runs[0].meta = meta;
    runs[0].rows = std::move(job.rows);
    if (runner->local_ranks().front() != 0) return 0;  // only the process of rank 0 reports
  }
  if (!args.quiet) {
    std::printf("qcoll bench: %d ranks (%s), peers: %s; median of %d after %d warm-up; kernel %s; load %s -> %s\n",
                meta["ranks"].get<int>(), meta["transport"].get<std::string>().c_str(),
                meta["peers"].get<std::string>().c_str(), args.repeats, args.warmup,
                meta["kernel"].get<std::string>().c_str(), meta["loadavg_before"].get<std::string>().c_str(),
                meta["loadavg_after"].get<std::string>().c_str());
    for (const auto& [family, why] : meta["peers_unavailable"].items())
      std::printf("  peer %s: unavailable: %s\n", family.c_str(), why.get<std::string>().c_str());
    if (plan.inputs.size() > 1 || plan.inputs.front() != Input::Quantized)
      std::printf("  qcoll from bf16/fp32 input: %s\n", meta["float_input_path"].get<std::string>().c_str());
  }
  write_outputs(args, runs);
  return 0;
}

const CommandRegistrar reg([](CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Time the operators end to end against MPI and oneCCL peers (run under mpirun; or --ranks N for thread ranks)");
  auto a = std::make_shared<BenchArgs>();
  sub->add_option("--sizes", a->sizes, "Comma-separated BSxH sizes of x on every rank")->capture_default_str();
  sub->add_option("--ops", a->ops, "Operators: reduce-scatter, all-reduce")->capture_default_str();
  sub->add_option("--modes", a->modes, "Quantization modes: all (the contract's), or a comma list of " + mode_help())
      ->capture_default_str();
  sub->add_option("--out-dtype", a->out_dtype, "qcoll's output dtype")->capture_default_str();
  sub->add_option("--transport", a->transport,
                  "auto (mpi when started by mpirun, else threads), mpi (one rank per process), threads (qcoll only)")
      ->capture_default_str();
  sub->add_option("--ranks,-n", a->ranks,
                  "Thread ranks (" + contract::rank_count_rule(settings::Contract::Vendor) +
                      "; QCOLL_CONTRACT=extended: " + contract::rank_count_rule(settings::Contract::Extended) +
                      ") when not under mpirun");
  sub->add_option("--repeats", a->repeats, "Timed rounds; the median is reported")->capture_default_str();
  sub->add_option("--warmup", a->warmup, "Untimed rounds first")->capture_default_str();
  sub->add_option("--input", a->inputs,
                  "qcoll's input: quantized (x quantized before timing), bf16, fp32 (quantize then operate); a comma "
                  "list")
      ->capture_default_str();
  sub->add_option("--peers", a->peers,
                  "Peers under mpirun: mpi, oneccl, gloo (the last two installed by bench/install_peers.sh); a comma "
                  "list, or none; one that cannot run is reported as unavailable")
      ->capture_default_str();
  sub->add_option("--peer-inputs", a->peer_inputs,
                  "What each peer family sums: fp32, bf16, or both (a comma list); without fp32 no errors are "
                  "reported (the fp32 peer's result is their reference)")
      ->capture_default_str();
  sub->add_flag("--no-peers", a->no_peers, "Skip the peers (--peers none)");
  sub->add_option("--ccl-peer", a->plugins.oneccl,
                  "The oneCCL plugin (default: " + default_plugin_path("oneccl") + ")");
  sub->add_option("--gloo-peer", a->plugins.gloo,
                  "The torch gloo plugin (default: " + default_plugin_path("gloo") + ")");
  sub->add_option("--seed", a->seed, "Seed of the synthetic activations")->capture_default_str();
  sub->add_option("--label", a->label, "Free text stored with every row (e.g. 'shaped 1gbit')");
  sub->add_option("--link-gbit", a->link_gbit,
                  "Link rate of each host in Gbit/s (shaped network): adds time / wire-bytes bound columns");
  sub->add_option("--ranks-per-host", a->ranks_per_host,
                  "Ranks sharing each host's link, for the bound columns (the ranks must divide evenly)")
      ->capture_default_str();
  sub->add_option("--json", a->json_path, "Write the results as JSON");
  sub->add_option("--plot", a->plot_path, "Write a PNG of speedup vs message size (gnuplot)");
  sub->add_option("--table", a->table_path, "Also write the markdown table to this file");
  sub->add_option("--from-json", a->from_json, "Run nothing: merge these result files into --json/--plot/--table")
      ->expected(1, -1);
  sub->add_flag("--quiet,-q", a->quiet, "Print no table");
  set_action(sub, [a] { return bench_command(*a); });
});

}  // namespace
}  // namespace qcoll::cli
