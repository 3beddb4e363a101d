// `qcoll quantize`: turn float32 .npy tensors into the operators' inputs (x and scales .npy)
// with the library's quantizers (contract.md §quantizers), one pair of files per rank.
//
//   qcoll quantize --ranks 4 --in act{rank}.npy --x-dtype e4m3 --scales-dtype e8m0 --x x{rank}.npy --scales s{rank}.npy
//
// Under QCOLL_CONTRACT=extended also the 4-bit x dtypes (float4_e2m1, float4_e1m2; §ext-fp4):
// their x file is packed, uint8 with the last dimension H/2 (two codes a byte, the even
// element in bits 0-3).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli_args.hpp"
#include "cli_error.hpp"
#include "command.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/quant.hpp"
#include "qcoll/status.hpp"

namespace qcoll::cli {
namespace {

struct QuantizeArgs {
  int ranks = 1;
  std::string in_pattern;
  std::string x_dtype;
  std::string scales_dtype = "float";
  float hif8_target = 0.0f;
  std::string x_pattern, scales_pattern;
};

// One rank's float32 input as x and scales arrays; throws CliError naming `path`.
std::pair<npy::Array, npy::Array> quantize_file(const std::string& path, DType x_dtype, DType s_dtype,
                                                float hif8_target) {
  npy::Array in = load_npy(path);
  if (in.type != npy::ElemType::Float32)
    throw CliError(ErrorKind::File, path + ": element type " + std::string(npy::elem_name(in.type)) + " ('" +
                                        npy::descr(in.type) + "'); expected float32 ('<f4')");
  if (in.shape.size() != 2 && in.shape.size() != 3)
    throw CliError(ErrorKind::File, path + ": shape " + shape_text(in.shape) + " must be 2-D (BS, H) or 3-D (B, S, H)");
  const int64_t h = in.shape.back();
  if (h <= 0 || !contract::check_quant_h(s_dtype, static_cast<std::size_t>(h)).ok())
    throw CliError(ErrorKind::File, path + ": H = " + std::to_string(h) + " must be a positive multiple of " +
                                        std::to_string(contract::h_multiple(s_dtype)) + " for " +
                                        (contract::is_mx(s_dtype) ? "MX" : "per-group") + " quantization");
  const std::size_t count = in.count(), H = static_cast<std::size_t>(h), rows = count / H;
  std::vector<float> v(count);
  if (count) std::memcpy(v.data(), in.data.data(), count * 4);

  quant::KgOptions opt;
  opt.hif8_target = hif8_target;
  quant::QuantizedTensor q;
  const Status st = quant::quantize(v.data(), rows, H, x_dtype, s_dtype, q, opt);
  if (!st.ok()) throw CliError(ErrorKind::Status, path + ": " + st.message, static_cast<int32_t>(st.code));

  npy::Array x;
  x.type = x_dtype == DType::Int8 ? npy::ElemType::Int8 : npy::ElemType::UInt8;
  x.shape = is_4bit_format(x_dtype) ? npy::fp4_packed_shape(in.shape) : in.shape;  // H even: checked above
  x.data = std::move(q.q);
  npy::Array s;
  s.type = contract::is_mx(s_dtype) ? npy::ElemType::UInt8 : npy::ElemType::Float32;
  s.shape = contract::scales_shape(s_dtype, in.shape);
  const auto* sp = static_cast<const uint8_t*>(q.scales_data());
  s.data.assign(sp, sp + q.scales_bytes());
  return {std::move(x), std::move(s)};
}

int run_quantize(const QuantizeArgs& a) {
  const DType x_dtype = parse_x_dtype_option("--x-dtype", a.x_dtype, "a quantized type");
  const DType s_dtype = parse_dtype_option("--scales-dtype", a.scales_dtype, contract::kScalesDtypes, "a scales type");
  if (a.hif8_target != 0.0f && (x_dtype != DType::HiFloat8 || contract::is_mx(s_dtype)))
    throw CliError(ErrorKind::Argument, "--hif8-target: applies to --x-dtype hifloat8 with float scales only");
  // The quantizers' rule under the contract, with the options' names (H: each file's, below).
  const contract::QuantParamNames names{"--x-dtype", "--scales-dtype", "--hif8-target"};
  const Status st = contract::check_quant_call(x_dtype, s_dtype, contract::h_multiple(s_dtype), a.hif8_target,
                                               current_contract(), names);
  if (!st.ok()) throw CliError(ErrorKind::Argument, st.message);
  require_in_range("--ranks", a.ranks, 1, 1024);
  check_rank_pattern("--in", a.in_pattern, a.ranks);
  check_rank_pattern("--x", a.x_pattern, a.ranks);
  check_rank_pattern("--scales", a.scales_pattern, a.ranks);

  std::vector<std::pair<std::string, npy::Array>> files;
  for (int r = 0; r < a.ranks; ++r) {
    auto [x, s] = quantize_file(expand_rank(a.in_pattern, r), x_dtype, s_dtype, a.hif8_target);
    files.emplace_back(expand_rank(a.x_pattern, r), std::move(x));
    files.emplace_back(expand_rank(a.scales_pattern, r), std::move(s));
  }
  write_npy_files(files);
  std::printf("qcoll quantize: %d tensor(s) to %s with %s scales; wrote %s and %s%s\n", a.ranks,
              std::string(dtype_name(x_dtype)).c_str(), std::string(dtype_name(s_dtype)).c_str(),
              files[0].first.c_str(), files[1].first.c_str(), a.ranks > 1 ? " (and the other ranks')" : "");
  return 0;
}

const CommandRegistrar reg_quantize([](CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("quantize", "Quantize float32 .npy tensors into x and scales .npy files for the operators");
  auto args = std::make_shared<QuantizeArgs>();
  sub->add_option("--ranks,-n", args->ranks, "Number of ranks (files)")->capture_default_str();
  sub->add_option("--in", args->in_pattern, "float32 input (BS, H) or (B, S, H); {rank} is replaced by the rank")
      ->required();
  sub->add_option("--x-dtype", args->x_dtype,
                  "int8, hifloat8, float8_e4m3fn (e4m3) or float8_e5m2 (e5m2); QCOLL_CONTRACT=extended adds "
                  "float4_e2m1 (e2m1, float4_e2m1fn) and float4_e1m2 (e1m2), written packed")
      ->required();
  sub->add_option("--scales-dtype", args->scales_dtype, "float (per-token-per-group 128) or float8_e8m0 (MX, group 32)")
      ->capture_default_str();
  sub->add_option("--hif8-target", args->hif8_target, "HiF8 only: scale = amax / target (default: the library's)");
  sub->add_option("--x", args->x_pattern,
                  "Output x file (int8 or uint8 .npy; 4-bit x: uint8 with the last dimension H/2, two codes a byte, "
                  "the even element in bits 0-3)")
      ->required();
  sub->add_option("--scales", args->scales_pattern, "Output scales file (float32 or uint8 .npy)")->required();
  set_action(sub, [args] { return run_quantize(*args); });
});

}  // namespace
}  // namespace qcoll::cli
