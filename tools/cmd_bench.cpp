// `qcoll bench`: end-to-end time of qcoll's operators against MPI peers on the same ranks.
//
//   mpirun -np 4 qcoll bench --sizes 1024x5120,4096x5120 --repeats 5 --json r4.json
//   qcoll bench --ranks 4 --sizes 1024x5120          # in-process thread ranks, qcoll only
//   qcoll bench --from-json r2.json r4.json --plot speedup.png   # merge, table, plot
//
// Under mpirun every process is one rank: qcoll runs over its MPI communicator (shared
// memory on one host, MPI across hosts), and the peers -- MPI_Reduce_scatter_block /
// MPI_Allreduce on fp32, and on bf16 with a user-defined sum -- run on the same
// MPI_COMM_WORLD ranks. For every size and operator the contenders are timed in
// interleaved rounds (fp32 peer, bf16 peer, then each qcoll mode), so that a change of
// machine load hits them alike; each timed call is preceded by a barrier and its time is
// the maximum over ranks; the reported time is the median of the rounds after the warm-up.
// See docs/bench.md.

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
#include <sstream>
#include <string>
#include <vector>

#include "activations.hpp"
#include "bench_peers.hpp"
#include "bench_report.hpp"
#include "bench_sync.hpp"
#include "cli_error.hpp"
#include "command.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/quant.hpp"
#include "rank_runner.hpp"
#include "rank_runner_mpi.hpp"

namespace qcoll::cli {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct BenchMode {
  const char* name;
  DType x, scales;
};
constexpr BenchMode kModes[] = {
    {"kg-int8", DType::Int8, DType::Float},          {"kg-hif8", DType::HiFloat8, DType::Float},
    {"kg-e4m3", DType::Float8E4M3FN, DType::Float},  {"kg-e5m2", DType::Float8E5M2, DType::Float},
    {"mx-e4m3", DType::Float8E4M3FN, DType::Float8E8M0}, {"mx-e5m2", DType::Float8E5M2, DType::Float8E8M0},
};

struct BenchArgs {
  std::string sizes = "1024x5120,4096x5120,8192x8192";
  std::string ops = "reduce-scatter,all-reduce";
  std::string modes = "kg-int8,kg-hif8,kg-e4m3,kg-e5m2,mx-e4m3,mx-e5m2";
  std::string out_dtype = "bfloat16";
  std::string transport = "auto";  // auto, mpi, threads
  int ranks = 0;                   // threads only
  int repeats = 3;
  int warmup = 1;
  bool no_peers = false;
  uint64_t seed = 1;
  std::string label;
  double link_gbit = 0;
  std::string json_path, plot_path, table_path;
  std::vector<std::string> from_json;
  bool quiet = false;
};

struct Size {
  int64_t bs, h;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<Size> parse_sizes(const std::string& text) {
  std::vector<Size> out;
  for (const auto& item : split(text, ',')) {
    const auto x = item.find('x');
    Size s{0, 0};
    try {
      if (x == std::string::npos) throw std::invalid_argument("no x");
      std::size_t used = 0;
      s.bs = std::stoll(item.substr(0, x), &used);
      if (used != x) throw std::invalid_argument("junk");
      s.h = std::stoll(item.substr(x + 1), &used);
      if (used != item.size() - x - 1) throw std::invalid_argument("junk");
    } catch (const std::exception&) {
      throw CliError(ErrorKind::Argument, "--sizes: '" + item + "' is not BSxH (for example 1024x5120)");
    }
    if (s.bs <= 0 || s.h <= 0)
      throw CliError(ErrorKind::Argument, "--sizes: '" + item + "': BS and H must be positive");
    out.push_back(s);
  }
  if (out.empty()) throw CliError(ErrorKind::Argument, "--sizes: no size given (for example 1024x5120)");
  return out;
}

std::vector<BenchMode> parse_modes(const std::string& text) {
  std::vector<BenchMode> out;
  for (const auto& item : split(text, ',')) {
    auto it = std::find_if(std::begin(kModes), std::end(kModes), [&](const BenchMode& m) { return item == m.name; });
    if (it == std::end(kModes))
      throw CliError(ErrorKind::Argument, "--modes: unknown mode '" + item +
                                              "'; expected kg-int8, kg-hif8, kg-e4m3, kg-e5m2, mx-e4m3 or mx-e5m2");
    out.push_back(*it);
  }
  if (out.empty()) throw CliError(ErrorKind::Argument, "--modes: no mode given");
  return out;
}

std::vector<std::string> parse_ops(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& item : split(text, ',')) {
    if (item != "reduce-scatter" && item != "all-reduce")
      throw CliError(ErrorKind::Argument, "--ops: unknown operator '" + item + "'; expected reduce-scatter or all-reduce");
    out.push_back(item);
  }
  if (out.empty()) throw CliError(ErrorKind::Argument, "--ops: no operator given");
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

std::string read_first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

struct TensorDeleter {
  void operator()(qcollTensor* t) const {
    if (t) qcollDestroyTensor(t);
  }
};
using TensorPtr = std::unique_ptr<qcollTensor, TensorDeleter>;

TensorPtr make_tensor(std::vector<int64_t> shape, DType t, const void* data) {
  return TensorPtr(qcollCreateContiguousTensor(shape.data(), shape.size(), static_cast<qcollDataType>(t),
                                               const_cast<void*>(data)));
}

// One qcoll operator call (both phases) with a workspace the caller keeps across calls,
// as an application reusing its buffers would.
qcollStatus call_qcoll(bool rs, const qcollTensor* x, const qcollTensor* s, const std::string& group, qcollTensor* out,
                       std::vector<uint8_t>& workspace) {
  uint64_t ws = 0;
  qcollOpExecutor* exec = nullptr;
  qcollStatus st = rs ? qcollQuantReduceScatterGetWorkspaceSize(x, s, group.c_str(), "sum", out, &ws, &exec)
                      : qcollQuantAllReduceGetWorkspaceSize(x, s, group.c_str(), "sum", out, &ws, &exec);
  if (st != QCOLL_SUCCESS) return st;
  if (workspace.size() < ws) workspace.resize(ws);
  return rs ? qcollQuantReduceScatter(workspace.data(), ws, exec, nullptr)
            : qcollQuantAllReduce(workspace.data(), ws, exec, nullptr);
}

float output_value(DType t, const uint8_t* p, std::size_t i) {
  if (t == DType::Float) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t b;
  std::memcpy(&b, p + 2 * i, 2);
  if (t == DType::BFloat16) return bf16_to_float(b);
  // fp16
  const uint32_t sign = (b & 0x8000u) << 16, e = (b >> 10) & 0x1F, m = b & 0x3FF;
  if (e == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(m), -24);
  uint32_t u = e == 31 ? (sign | 0x7F800000u | (m << 13)) : (sign | ((e + 112) << 23) | (m << 13));
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// What one rank does; rank 0 (of the process that has it) fills `rows`.
struct RankJob {
  const BenchArgs& args;
  std::vector<Size> sizes;
  std::vector<BenchMode> modes;
  std::vector<std::string> ops;
  DType out_dtype;
  std::string transport;
  RankSync& sync;
  MpiPeers* peers;  // null: peers skipped
  std::vector<BenchRow> rows;
  std::mutex error_mu;
  std::string error;
  int32_t error_status = 0;

  // Times f() on every rank after a barrier; returns the maximum over ranks. Throws (on
  // every rank alike) if f failed on any rank.
  // `detail`, if set by f, explains a local failure (else qcollGetRecentErrMsg()).
  template <class F>
  double timed(int rank, F&& f, const std::string& what, const std::string* detail = nullptr) {
    sync.barrier(rank);
    const auto t0 = std::chrono::steady_clock::now();
    const int32_t st = f();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double v[2] = {dt, st != 0 ? 1.0 : 0.0};
    sync.max(rank, v, 2);
    if (v[1] != 0) {
      if (st != 0)
        throw CliError(ErrorKind::Status, what + ": " + (detail && !detail->empty() ? *detail : qcollGetRecentErrMsg()),
                       st);
      throw CliError(ErrorKind::Status, what + ": failed on another rank", QCOLL_RUNTIME_ERROR);
    }
    return v[0];
  }

  // Relative RMS error of `got` against the fp32 result `ref` over all ranks' outputs.
  double rel_err(int rank, DType t, const uint8_t* got, const float* ref, std::size_t count) {
    double v[2] = {0, 0};
    for (std::size_t i = 0; i < count; ++i) {
      const double r = ref[i], d = static_cast<double>(output_value(t, got, i)) - r;
      v[0] += d * d;
      v[1] += r * r;
    }
    sync.sum(rank, v, 2);
    return v[1] > 0 ? std::sqrt(v[0] / v[1]) : kNaN;
  }

  void run(int rank, int n, const std::string& group) {
    for (const Size& sz : sizes) run_size(rank, n, group, sz);
  }

  void run_size(int rank, int n, const std::string& group, const Size& sz) {
    const std::size_t BS = static_cast<std::size_t>(sz.bs), H = static_cast<std::size_t>(sz.h);
    const std::size_t count = BS * H;
    ActivationSpec spec;
    spec.rows = BS;
    spec.hidden = H;
    spec.seed = args.seed;
    const std::vector<float> act = make_activations(spec, rank);

    // Inputs of every contender, made before any timing.
    std::vector<quant::QuantizedTensor> q(modes.size());
    std::vector<double> quant_s(modes.size());
    for (std::size_t m = 0; m < modes.size(); ++m) {
      std::string why;
      quant_s[m] = timed(
          rank,
          [&] {
            Status st = quant::quantize(act.data(), BS, H, modes[m].x, modes[m].scales, q[m]);
            why = st.message;
            return static_cast<int32_t>(st.code);
          },
          std::string("quantize ") + modes[m].name, &why);
    }
    std::vector<uint16_t> act16;
    if (peers) {
      act16.resize(count);
      for (std::size_t i = 0; i < count; ++i) act16[i] = float_to_bf16(act[i]);
    }

    for (const std::string& op : ops) {
      const bool rs = op == "reduce-scatter";
      const std::size_t out_count = rs ? count / static_cast<std::size_t>(n) : count;
      const std::vector<int64_t> out_shape = {static_cast<int64_t>(rs ? BS / static_cast<std::size_t>(n) : BS),
                                              static_cast<int64_t>(H)};
      std::vector<float> out32(peers ? out_count : 0);
      std::vector<uint16_t> out16(peers ? out_count : 0);
      std::vector<uint8_t> qout(out_count * dtype_size(out_dtype)), workspace;
      std::vector<TensorPtr> tx, ts;
      for (std::size_t m = 0; m < modes.size(); ++m) {
        tx.push_back(make_tensor({sz.bs, sz.h}, modes[m].x, q[m].q.data()));
        const std::vector<int64_t> sshape =
            modes[m].scales == DType::Float ? std::vector<int64_t>{sz.bs, sz.h / 128}
                                            : std::vector<int64_t>{sz.bs, sz.h / 64, 2};
        ts.push_back(make_tensor(sshape, modes[m].scales, q[m].scales_data()));
      }
      TensorPtr to = make_tensor(out_shape, out_dtype, qout.data());
      if (!to || std::any_of(tx.begin(), tx.end(), [](auto& t) { return !t; }) ||
          std::any_of(ts.begin(), ts.end(), [](auto& t) { return !t; }))
        throw CliError(ErrorKind::Status, std::string("creating tensors: ") + qcollGetRecentErrMsg(), QCOLL_PARAM_INVALID);

      std::vector<double> t32, t16;
      std::vector<std::vector<double>> tq(modes.size());
      std::vector<double> err_q(modes.size(), kNaN);
      double err16 = kNaN;
      const int rounds = args.warmup + args.repeats;
      for (int round = 0; round < rounds; ++round) {
        const bool keep = round >= args.warmup;
        if (peers) {
          double t = timed(
              rank,
              [&] {
                if (rs) peers->reduce_scatter(PeerKind::Fp32, act.data(), out32.data(), out_count);
                else peers->all_reduce(PeerKind::Fp32, act.data(), out32.data(), out_count);
                return 0;
              },
              "MPI fp32 peer");
          if (keep) t32.push_back(t);
          t = timed(
              rank,
              [&] {
                if (rs) peers->reduce_scatter(PeerKind::Bf16, act16.data(), out16.data(), out_count);
                else peers->all_reduce(PeerKind::Bf16, act16.data(), out16.data(), out_count);
                return 0;
              },
              "MPI bf16 peer");
          if (keep) t16.push_back(t);
          if (round == 0)
            err16 = rel_err(rank, DType::BFloat16, reinterpret_cast<const uint8_t*>(out16.data()), out32.data(),
                            out_count);
        }
        for (std::size_t m = 0; m < modes.size(); ++m) {
          const double t = timed(
              rank, [&] { return call_qcoll(rs, tx[m].get(), ts[m].get(), group, to.get(), workspace); },
              std::string("qcoll ") + op + " " + modes[m].name);
          if (keep) tq[m].push_back(t);
          if (round == 0 && peers) err_q[m] = rel_err(rank, out_dtype, qout.data(), out32.data(), out_count);
        }
      }

      if (rank != 0) continue;
      const double nn = n, logical = static_cast<double>(count) * 4.0;
      for (std::size_t m = 0; m < modes.size(); ++m) {
        BenchRow r;
        r.op = op;
        r.bs = sz.bs;
        r.h = sz.h;
        r.n = n;
        r.transport = transport;
        r.mode = modes[m].name;
        r.out_dtype = std::string(dtype_name(out_dtype));
        r.label = args.label;
        r.link_bits_per_s = args.link_gbit * 1e9;
        r.qcoll_samples = tq[m];
        r.qcoll_s = median(tq[m]);
        r.fp32_samples = t32;
        r.fp32_s = median(t32);
        r.bf16_samples = t16;
        r.bf16_s = median(t16);
        r.quant_s = quant_s[m];
        r.qcoll_rel_err = err_q[m];
        r.bf16_rel_err = err16;
        r.logical_bytes = logical;
        // Bytes each rank sends at least: a reduce-scatter sends (n-1)/n of its input; an
        // all-reduce as a reduce-scatter plus an all-gather sends that plus (n-1)/n of the
        // output. qcoll's all-gather moves its output dtype.
        const double frac = (nn - 1) / nn;
        const double qbytes = static_cast<double>(q[m].q.size() + q[m].scales_bytes());
        const double out_bytes = static_cast<double>(count * dtype_size(out_dtype));
        r.wire_qcoll = frac * qbytes + (rs ? 0 : frac * out_bytes);
        r.wire_fp32 = frac * static_cast<double>(count) * 4.0 * (rs ? 1 : 2);
        r.wire_bf16 = frac * static_cast<double>(count) * 2.0 * (rs ? 1 : 2);
        rows.push_back(std::move(r));
      }
    }
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

int bench_command(const BenchArgs& args) {
  if (!args.from_json.empty()) return merge_command(args);
  if (args.repeats < 1) throw CliError(ErrorKind::Argument, "--repeats must be at least 1, got " + std::to_string(args.repeats));
  if (args.warmup < 0) throw CliError(ErrorKind::Argument, "--warmup must be at least 0, got " + std::to_string(args.warmup));
  if (args.link_gbit < 0) throw CliError(ErrorKind::Argument, "--link-gbit must be >= 0");
  const std::vector<Size> sizes = parse_sizes(args.sizes);
  const std::vector<BenchMode> modes = parse_modes(args.modes);
  const std::vector<std::string> ops = parse_ops(args.ops);
  const auto out = parse_dtype(args.out_dtype);
  if (!out || (*out != DType::Float && *out != DType::Float16 && *out != DType::BFloat16))
    throw CliError(ErrorKind::Argument, "--out-dtype: expected float, float16 or bfloat16, got '" + args.out_dtype + "'");

  bool use_mpi;
  if (args.transport == "auto") use_mpi = launched_by_mpi() && mpi_available();
  else if (args.transport == "mpi") use_mpi = true;
  else if (args.transport == "threads") use_mpi = false;
  else throw CliError(ErrorKind::Argument, "--transport: expected auto, mpi or threads, got '" + args.transport + "'");
  if (!use_mpi && args.ranks == 0)
    throw CliError(ErrorKind::Argument, "--ranks is required with thread ranks (not started by mpirun)");

  nlohmann::json meta = host_meta();
  std::unique_ptr<MpiSession> session;
  if (use_mpi) session = std::make_unique<MpiSession>();
  std::vector<BenchRun> runs(1);
  {
    std::unique_ptr<RankRunner> runner = use_mpi ? make_mpi_runner("qcoll-bench") : make_thread_runner(args.ranks);
    const int n = runner->size();
    if (use_mpi && args.ranks != 0 && args.ranks != n)
      throw CliError(ErrorKind::Argument, "--ranks " + std::to_string(args.ranks) + " differs from the " +
                                              std::to_string(n) + " MPI processes");
    for (const Size& s : sizes)
      if (s.bs % n != 0)
        throw CliError(ErrorKind::Argument, "--sizes: BS " + std::to_string(s.bs) + " is not a multiple of the " +
                                                std::to_string(n) + " ranks");
    std::unique_ptr<RankSync> sync = use_mpi ? make_mpi_sync() : make_thread_sync(n);
    std::unique_ptr<MpiPeers> peers;
    if (use_mpi && !args.no_peers) peers = std::make_unique<MpiPeers>();
    RankJob job{args, sizes, modes, ops, *out, runner->transport(), *sync, peers.get(), {}, {}, {}, 0};
    const bool print = runner->local_ranks().front() == 0;
    runner->run([&](int rank, int size, const std::string& group) {
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
          job.error_status = QCOLL_INNER_ERROR;
        }
      }
    });
    if (!job.error.empty()) {
      if (job.error_status < 0) throw CliError(static_cast<ErrorKind>(-job.error_status), job.error);
      throw CliError(ErrorKind::Status, job.error, job.error_status);
    }
    meta["loadavg_after"] = read_first_line("/proc/loadavg");
    meta["ranks"] = n;
    meta["transport"] = runner->transport();
    meta["peers"] = peers ? "mpi-fp32, mpi-bf16 (MPI_Reduce_scatter_block / MPI_Allreduce)" : "skipped";
    meta["repeats"] = args.repeats;
    meta["warmup"] = args.warmup;
    meta["label"] = args.label;
    meta["link_gbit"] = args.link_gbit;
    runs[0].meta = meta;
    runs[0].rows = std::move(job.rows);
    if (!print) return 0;  // only the process of rank 0 reports
  }
  if (!args.quiet) {
    std::printf("qcoll bench: %d ranks (%s), %s, median of %d after %d warm-up; load %s -> %s\n",
                meta["ranks"].get<int>(), meta["transport"].get<std::string>().c_str(),
                meta["peers"].get<std::string>().c_str(), args.repeats, args.warmup,
                meta["loadavg_before"].get<std::string>().c_str(), meta["loadavg_after"].get<std::string>().c_str());
  }
  write_outputs(args, runs);
  return 0;
}

const CommandRegistrar reg([](CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "bench", "Time the operators end to end against MPI peers (run under mpirun; or --ranks N for thread ranks)");
  auto a = std::make_shared<BenchArgs>();
  sub->add_option("--sizes", a->sizes, "Comma-separated BSxH sizes of x on every rank")->capture_default_str();
  sub->add_option("--ops", a->ops, "Operators: reduce-scatter, all-reduce")->capture_default_str();
  sub->add_option("--modes", a->modes, "Quantization modes")->capture_default_str();
  sub->add_option("--out-dtype", a->out_dtype, "qcoll's output dtype")->capture_default_str();
  sub->add_option("--transport", a->transport,
                  "auto (mpi when started by mpirun, else threads), mpi (one rank per process), threads (qcoll only)")
      ->capture_default_str();
  sub->add_option("--ranks,-n", a->ranks, "Thread ranks (2, 4 or 8) when not under mpirun");
  sub->add_option("--repeats", a->repeats, "Timed rounds; the median is reported")->capture_default_str();
  sub->add_option("--warmup", a->warmup, "Untimed rounds first")->capture_default_str();
  sub->add_flag("--no-peers", a->no_peers, "Skip the MPI fp32/bf16 peers");
  sub->add_option("--seed", a->seed, "Seed of the synthetic activations")->capture_default_str();
  sub->add_option("--label", a->label, "Free text stored with every row (e.g. 'shaped 1gbit')");
  sub->add_option("--link-gbit", a->link_gbit,
                  "Link rate of each rank in Gbit/s (shaped network): adds time / wire-bytes bound columns");
  sub->add_option("--json", a->json_path, "Write the results as JSON");
  sub->add_option("--plot", a->plot_path, "Write a PNG of speedup vs message size (gnuplot)");
  sub->add_option("--table", a->table_path, "Also write the markdown table to this file");
  sub->add_option("--from-json", a->from_json, "Run nothing: merge these result files into --json/--plot/--table")
      ->expected(1, -1);
  sub->add_flag("--quiet,-q", a->quiet, "Print no table");
  sub->callback([a] {
    int rc = 0;
    try {
      rc = bench_command(*a);
    } catch (const CliError& e) {
      rc = report(e);
    }
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
});

}  // namespace
}  // namespace qcoll::cli
