// `qcoll reduce-scatter` and `qcoll all-reduce`: run an operator on .npy files.
//
//   qcoll reduce-scatter --ranks 4 --x-dtype int8 --x x{rank}.npy --scales s{rank}.npy --out out{rank}.npy
//   mpirun -np 4 qcoll reduce-scatter --x-dtype int8 --x x{rank}.npy ...   (one rank per process)
//   qcoll reduce-scatter --ranks 4 --in act{rank}.npy --mode kg-int8 --out out{rank}.npy   (fused: from floats)
//   QCOLL_CONTRACT=extended qcoll all-reduce --ranks 16 --x-dtype e2m1 --x x{rank}.npy ...   (contract.md §ext)
//
// A 4-bit x (float4_e2m1, float4_e1m2: the extended contract) is read packed: a uint8 file
// whose last dimension is H/2, two codes a byte, the even element in bits 0-3; the operator
// sees its logical shape (..., H).
// With --in the fused operator (QuantizeReduceScatter / QuantizeAllReduce) quantizes each
// rank's float input (float32, float16, or uint16 holding bfloat16 bits) in --mode and
// reduces it in one call: the bits of `qcoll quantize` followed by the quantized operator.
// Every rank r reads its x and scales from the patterns with {rank} replaced by r, the
// operator runs on all ranks, and only when every rank succeeded are the outputs written
// (each to a temporary name, then renamed), so a failed run leaves no output file.

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "cli_error.hpp"
#include "command.hpp"
#include "modes.hpp"
#include "npy.hpp"
#include "operator_call.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/dtype.hpp"
#include "rank_runner.hpp"

namespace qcoll::cli {
namespace {

struct OperatorArgs {
  int ranks = 0;  // 0: not given (required without mpirun)
  bool ranks_given = false;
  std::string x_dtype;
  std::string scales_dtype;  // empty: from the scales file's element type
  std::string out_dtype = "bfloat16";
  std::string x_pattern, scales_pattern, out_pattern;
  std::string in_pattern, mode;  // the fused operators
  float hif8_target = 0.0f;
  bool x_dtype_given = false, scales_dtype_given = false;
  bool quiet = false;
};

// The .npy element types that may hold data of operator dtype t.
void check_file_type(const std::string& path, const npy::Array& a, DType t, const char* what) {
  bool ok = false;
  const char* expected = "";
  switch (t) {
    case DType::Int8:
      ok = a.type == npy::ElemType::Int8 || a.type == npy::ElemType::UInt8;
      expected = "int8 ('|i1') or uint8 ('|u1')";
      break;
    case DType::HiFloat8:
    case DType::Float8E4M3FN:
    case DType::Float8E5M2:
    case DType::Float8E8M0:
      ok = a.type == npy::ElemType::UInt8;
      expected = "uint8 ('|u1') holding the raw bytes";
      break;
    case DType::Float4E2M1:
    case DType::Float4E1M2:
      ok = a.type == npy::ElemType::UInt8;
      expected = "uint8 ('|u1') holding two codes a byte (last dimension H/2)";
      break;
    case DType::Float:
      ok = a.type == npy::ElemType::Float32;
      expected = "float32 ('<f4')";
      break;
    default:
      break;
  }
  if (!ok)
    throw CliError(ErrorKind::File, path + ": " + what + " has element type " + npy::elem_name(a.type) + " ('" +
                                        npy::descr(a.type) + "'), which cannot hold " + std::string(dtype_name(t)) +
                                        " data; expected " + expected);
}

npy::ElemType output_elem_type(DType out) {
  switch (out) {
    case DType::Float:
      return npy::ElemType::Float32;
    case DType::Float16:
      return npy::ElemType::Float16;
    default:
      return npy::ElemType::UInt16;  // bfloat16 bit patterns
  }
}

struct RankData {
  int rank = 0;
  npy::Array x, scales;          // fused operators: x holds the float input
  std::vector<int64_t> x_shape;  // x's logical shape: x.shape, or for 4-bit x the unpacked one
  DType scales_dtype = DType::Float;
  std::vector<int64_t> out_shape;
  std::vector<uint8_t> out;
  CallResult result;
};

// Prints one line per distinct (status, message), naming the ranks that returned it.
void report_failures(const std::vector<RankData>& ranks) {
  std::map<std::pair<int32_t, std::string>, std::vector<int>> groups;
  for (const auto& r : ranks)
    if (!r.result.ok()) groups[{r.result.status, r.result.message}].push_back(r.rank);
  for (const auto& [key, who] : groups) {
    std::string list;
    for (int r : who) list += (list.empty() ? "" : ", ") + std::to_string(r);
    std::string msg = key.second + (who.size() == 1 ? " [rank " : " [ranks ") + list + "]";
    std::fprintf(stderr, "%s\n", status_line(key.first, msg).c_str());
  }
}

// The dtype a fused operator's .npy input holds: float32, float16, or uint16 (bfloat16 bits).
DType input_dtype_of(const std::string& path, const npy::Array& a) {
  switch (a.type) {
    case npy::ElemType::Float32:
      return DType::Float;
    case npy::ElemType::Float16:
      return DType::Float16;
    case npy::ElemType::UInt16:
      return DType::BFloat16;
    default:
      throw CliError(ErrorKind::File, path + ": input has element type " + std::string(npy::elem_name(a.type)) + " ('" +
                                          npy::descr(a.type) +
                                          "'); expected float32 ('<f4'), float16 ('<f2') or uint16 ('<u2', "
                                          "bfloat16 bits)");
  }
}

// The fused operators' arguments: --in and --mode, none of the quantized inputs' options.
const Mode& fused_mode(const OperatorArgs& args) {
  for (const auto& [given, name] : {std::pair{!args.x_pattern.empty(), "--x"},
                                    {!args.scales_pattern.empty(), "--scales"},
                                    {args.x_dtype_given, "--x-dtype"},
                                    {args.scales_dtype_given, "--scales-dtype"}})
    if (given)
      throw CliError(ErrorKind::Argument, std::string("--in: the fused operator quantizes the input itself, so ") +
                                              name + " cannot be given with it");
  if (args.mode.empty()) throw CliError(ErrorKind::Argument, "--mode: required with --in (" + mode_names() + ")");
  const Mode* m = find_mode("--mode", args.mode);
  if (m == nullptr)
    throw CliError(ErrorKind::Argument, "--mode: must be one of " + mode_names() + ", got '" + args.mode + "'");
  if (args.hif8_target != 0.0f && m->x != DType::HiFloat8)
    throw CliError(ErrorKind::Argument,
                   std::string("--hif8-target: applies to --mode kg-hif8 only, got --mode ") + m->name);
  if (Status st = contract::check_hif8_target(args.hif8_target); !st.ok())
    throw CliError(ErrorKind::Argument, "--hif8-target" + st.message.substr(st.message.find(':')));
  return *m;
}

// The dtypes of a call, from the arguments (all checked before anything is read).
struct CallTypes {
  bool fused = false;
  const Mode* mode = nullptr;  // the fused operators
  DType x_dtype = DType::Int8;
  std::optional<DType> scales_dtype;  // empty: from each scales file's element type
  DType out_dtype = DType::BFloat16;
};

void check_quantized_inputs_given(const OperatorArgs& args) {
  if (!args.mode.empty()) throw CliError(ErrorKind::Argument, "--mode: needs --in (the fused operator's input)");
  for (const auto& [missing, name] : {std::pair{args.x_pattern.empty(), "--x"},
                                      {args.scales_pattern.empty(), "--scales"},
                                      {args.x_dtype.empty(), "--x-dtype"}})
    if (missing)
      throw CliError(ErrorKind::Argument, std::string(name) +
                                              ": required (or --in and --mode to quantize a float input in the "
                                              "same call)");
}

CallTypes call_types(const OperatorArgs& args) {
  CallTypes t;
  t.fused = !args.in_pattern.empty();
  t.mode = t.fused ? &fused_mode(args) : nullptr;
  if (!t.fused) check_quantized_inputs_given(args);
  t.x_dtype = t.fused ? t.mode->x : parse_x_dtype_option("--x-dtype", args.x_dtype, "a quantized input type");
  if (t.fused)
    t.scales_dtype = t.mode->scales;
  else if (!args.scales_dtype.empty())
    t.scales_dtype = parse_dtype_option("--scales-dtype", args.scales_dtype, contract::kScalesDtypes, "a scales type");
  t.out_dtype = parse_dtype_option("--out-dtype", args.out_dtype, contract::kOutDtypes, "an output type");
  if (args.ranks < 0 || (args.ranks == 0 && args.ranks_given))
    throw CliError(ErrorKind::Argument, "--ranks must be at least 1, got " + std::to_string(args.ranks));
  return t;
}

void check_patterns(const OperatorArgs& args, bool fused, int n) {
  if (fused) {
    check_rank_pattern("--in", args.in_pattern, n);
  } else {
    check_rank_pattern("--x", args.x_pattern, n);
    check_rank_pattern("--scales", args.scales_pattern, n);
  }
  check_rank_pattern("--out", args.out_pattern, n);
}

// The scales dtype of a quantized call's rank: --scales-dtype, else the file's element type.
DType scales_dtype_of(const std::string& path, const npy::Array& s, const std::optional<DType>& given) {
  if (given) return *given;
  if (s.type == npy::ElemType::Float32) return DType::Float;
  if (s.type == npy::ElemType::UInt8) return DType::Float8E8M0;
  throw CliError(ErrorKind::File, path + ": scales have element type " + std::string(npy::elem_name(s.type)) +
                                      "; expected float32 ('<f4', fp32 scales) or uint8 ('|u1', E8M0 scales)");
}

// H as the scales say it (KG (..., H/128), MX (..., H/64, 2) for an x of `x_rank`
// dimensions), or 0 when their shape is not of that form (the operator then says why).
int64_t scales_h(const npy::Array& s, DType scales_dtype, std::size_t x_rank) {
  const std::vector<int64_t>& sh = s.shape;
  if (contract::is_mx(scales_dtype))
    return sh.size() == x_rank + 1 && sh.back() == static_cast<int64_t>(contract::kMxScalePair)
               ? sh[sh.size() - 2] * static_cast<int64_t>(contract::kMxHMultiple)
               : 0;
  return sh.size() == x_rank && !sh.empty() ? sh.back() * static_cast<int64_t>(contract::kKgGroup) : 0;
}

// A 4-bit x file's logical shape: the last dimension doubled (two codes a byte). When the
// scales give another H, a file error saying what the last dimension should be (a file of
// one code a byte, say).
std::vector<int64_t> fp4_x_shape(const std::string& path, const RankData& d, DType x_dtype) {
  if (d.x.shape.empty())
    throw CliError(ErrorKind::File, path + ": a " + std::string(dtype_name(x_dtype)) +
                                        " x must have a shape (BS, H/2) or (B, S, H/2), got a scalar");
  std::vector<int64_t> logical = npy::fp4_logical_shape(d.x.shape);
  const int64_t h = scales_h(d.scales, d.scales_dtype, d.x.shape.size());
  if (h > 0 && h != logical.back())
    throw CliError(ErrorKind::File, path + ": " + std::string(dtype_name(x_dtype)) +
                                        " x is packed, two codes a byte, so its last " +
                                        "dimension must be H/2 = " + std::to_string(h / 2) +
                                        " for the scales' H = " + std::to_string(h) + "; got shape " +
                                        shape_text(d.x.shape) + " (H = " + std::to_string(logical.back()) + ")");
  return logical;
}

// Rank r's inputs, read from the patterns, and its zeroed output.
RankData load_rank(Op op, const OperatorArgs& args, const CallTypes& t, int r, int n) {
  RankData d;
  d.rank = r;
  if (t.fused) {
    const std::string ip = expand_rank(args.in_pattern, r);
    d.x = load_npy(ip);
    input_dtype_of(ip, d.x);
    d.scales_dtype = t.mode->scales;
  } else {
    const std::string xp = expand_rank(args.x_pattern, r), sp = expand_rank(args.scales_pattern, r);
    d.x = load_npy(xp);
    check_file_type(xp, d.x, t.x_dtype, "x");
    d.scales = load_npy(sp);
    d.scales_dtype = scales_dtype_of(sp, d.scales, t.scales_dtype);
    check_file_type(sp, d.scales, d.scales_dtype, "scales");
  }
  d.x_shape =
      !t.fused && is_4bit_format(t.x_dtype) ? fp4_x_shape(expand_rank(args.x_pattern, r), d, t.x_dtype) : d.x.shape;
  d.out_shape = expected_output_shape(op, d.x_shape, n);
  std::size_t count = 1;
  for (int64_t v : d.out_shape) count *= static_cast<std::size_t>(v);
  d.out.assign(count * dtype_size(t.out_dtype), 0);
  return d;
}

void print_summary(Op op, const OperatorArgs& args, const CallTypes& t, const RankRunner& runner, const RankData& first,
                   const std::vector<std::pair<std::string, npy::Array>>& outputs) {
  if (args.quiet) return;
  const std::string out = std::string(dtype_name(t.out_dtype));
  if (t.fused) {
    std::printf("qcoll %s: %d ranks (%s), input %s %s quantized %s in the call (fused) -> %s %s per rank; wrote %s",
                command_name(op), runner.size(), runner.transport(),
                std::string(dtype_name(input_dtype_of(args.in_pattern, first.x))).c_str(),
                shape_text(first.x.shape).c_str(), t.mode->name, out.c_str(), shape_text(first.out_shape).c_str(),
                outputs.front().first.c_str());
  } else {
    const std::string x_shape =
        shape_text(first.x_shape) +
        (first.x_shape != first.x.shape ? " (packed: uint8 " + shape_text(first.x.shape) + ")" : std::string());
    std::printf("qcoll %s: %d ranks (%s), x %s %s, scales %s %s -> %s %s per rank; wrote %s", command_name(op),
                runner.size(), runner.transport(), std::string(dtype_name(t.x_dtype)).c_str(), x_shape.c_str(),
                std::string(dtype_name(first.scales_dtype)).c_str(), shape_text(first.scales.shape).c_str(),
                out.c_str(), shape_text(first.out_shape).c_str(), outputs.front().first.c_str());
  }
  if (outputs.size() > 1) std::printf(" .. %s", outputs.back().first.c_str());
  std::printf("\n");
}

// Runs the operator on every rank of this process.
void run_ranks(Op op, const OperatorArgs& args, const CallTypes& t, RankRunner& runner, std::vector<RankData>& ranks) {
  std::vector<RankData*> by_rank(static_cast<std::size_t>(runner.size()), nullptr);
  for (auto& d : ranks) by_rank[static_cast<std::size_t>(d.rank)] = &d;
  runner.run([&](int rank, int, const std::string& group) {
    RankData& d = *by_rank[static_cast<std::size_t>(rank)];
    TensorArg o{t.out_dtype, d.out_shape, d.out.data()};
    if (t.fused) {
      const TensorArg in{input_dtype_of(args.in_pattern, d.x), d.x.shape, d.x.data.data()};
      const QuantConfig cfg{t.mode->x, t.mode->scales, args.hif8_target};
      d.result = PreparedCall(op, in, cfg, o).run(group);
      return;
    }
    TensorArg x{t.x_dtype, d.x_shape, d.x.data.data()};
    TensorArg s{d.scales_dtype, d.scales.shape, d.scales.data.data()};
    d.result = call_operator(op, group, x, s, o);
  });
}

int run_operator_command(Op op, const OperatorArgs& args) {
  // Arguments first: nothing is read before they are all valid.
  const CallTypes t = call_types(args);

  // Threads, or under mpirun one rank per process ({rank} is then this process's rank).
  std::unique_ptr<RankRunner> runner = make_rank_runner(args.ranks, "qcoll-cli");
  const int n = runner->size();
  check_patterns(args, t.fused, n);

  std::vector<RankData> ranks;  // inputs of this process's ranks
  for (int r : runner->local_ranks()) ranks.push_back(load_rank(op, args, t, r, n));
  run_ranks(op, args, t, *runner, ranks);

  bool local_ok = true;
  for (const auto& d : ranks) local_ok = local_ok && d.result.ok();
  if (!runner->all_ok(local_ok)) {
    if (local_ok) std::fprintf(stderr, "qcoll: another rank failed; no output written\n");
    report_failures(ranks);
    return static_cast<int>(ErrorKind::Status);
  }

  std::vector<std::pair<std::string, npy::Array>> outputs;
  for (auto& d : ranks) {
    npy::Array a;
    a.type = output_elem_type(t.out_dtype);
    a.shape = d.out_shape;
    a.data = std::move(d.out);
    outputs.emplace_back(expand_rank(args.out_pattern, d.rank), std::move(a));
  }
  write_npy_files(outputs);
  print_summary(op, args, t, *runner, ranks.front(), outputs);
  return 0;
}

void add_operator_command(CLI::App& app, Op op) {
  const bool rs = op == Op::ReduceScatter;
  CLI::App* sub = app.add_subcommand(
      command_name(op), rs ? "Run QuantReduceScatter (or, with --in, QuantizeReduceScatter) on .npy files: rank r gets "
                             "row block r of the sum over ranks"
                           : "Run QuantAllReduce (or, with --in, QuantizeAllReduce) on .npy files: every rank gets "
                             "the full sum over ranks");
  auto args = std::make_shared<OperatorArgs>();
  sub->add_option("--ranks,-n", args->ranks,
                  "Number of ranks (the operators accept " + contract::rank_count_rule(settings::Contract::Vendor) +
                      "; QCOLL_CONTRACT=extended: " + contract::rank_count_rule(settings::Contract::Extended) +
                      "), run as threads; under mpirun one rank per process: omit it or give the number of processes")
      ->each([args](const std::string&) { args->ranks_given = true; });
  sub->add_option("--x-dtype", args->x_dtype,
                  "Type of x: int8, hifloat8, float8_e4m3fn (e4m3), float8_e5m2 (e5m2); QCOLL_CONTRACT=extended adds "
                  "float4_e2m1 (e2m1, float4_e2m1fn) and float4_e1m2 (e1m2), read packed")
      ->each([args](const std::string&) { args->x_dtype_given = true; });
  sub->add_option("--scales-dtype", args->scales_dtype,
                  "Type of scales: float (per-group 128) or float8_e8m0 (MX); default: float for a float32 file, "
                  "float8_e8m0 for a uint8 file")
      ->each([args](const std::string&) { args->scales_dtype_given = true; });
  sub->add_option("--out-dtype", args->out_dtype, "Output type: float, float16 or bfloat16 (stored as uint16 bits)")
      ->capture_default_str();
  sub->add_option("--x", args->x_pattern,
                  "x file of each rank; {rank} is replaced by the rank (int8/uint8 .npy; 4-bit x: uint8 with the last "
                  "dimension H/2, two codes a byte, the even element in bits 0-3)");
  sub->add_option("--scales", args->scales_pattern, "Scales file of each rank, with {rank} (float32 or uint8 .npy)");
  sub->add_option("--in", args->in_pattern,
                  "Instead of --x and --scales: the float input of each rank, with {rank} (float32, float16, or "
                  "uint16 holding bfloat16 bits), quantized in --mode by the fused operator");
  sub->add_option("--mode", args->mode,
                  "With --in: " + mode_help() + "; a KG mode may be named by its format alone (int8, e2m1, ...)");
  sub->add_option("--hif8-target", args->hif8_target, "With --in --mode kg-hif8: scale = amax / target (0: default)");
  sub->add_option("--out", args->out_pattern, "Output file of each rank, with {rank}")->required();
  sub->add_flag("--quiet,-q", args->quiet, "Print nothing on success");
  set_action(sub, [op, args] { return run_operator_command(op, *args); });
}

const CommandRegistrar reg_reduce_scatter([](CLI::App& app) { add_operator_command(app, Op::ReduceScatter); });
const CommandRegistrar reg_all_reduce([](CLI::App& app) { add_operator_command(app, Op::AllReduce); });

}  // namespace
}  // namespace qcoll::cli
