// `qcoll quantize`: turn float32 .npy tensors into the operators' inputs (x and scales .npy)
// with the library's quantizers (contract.md §quantizers), one pair of files per rank.
//
//   qcoll quantize --ranks 4 --in act{rank}.npy --x-dtype e4m3 --scales-dtype e8m0 --x x{rank}.npy --scales s{rank}.npy
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "cli_error.hpp"
#include "command.hpp"
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

void run_quantize(const QuantizeArgs& a) {
  const DType x_dtype = parse_dtype_option("--x-dtype", a.x_dtype,
                                           {DType::Int8, DType::HiFloat8, DType::Float8E4M3FN, DType::Float8E5M2},
                                           "a quantized type");
  const DType s_dtype = parse_dtype_option("--scales-dtype", a.scales_dtype, {DType::Float, DType::Float8E8M0}, "a scales type");
  const bool mx = s_dtype == DType::Float8E8M0;
  if (mx && x_dtype != DType::Float8E4M3FN && x_dtype != DType::Float8E5M2)
    throw CliError(ErrorKind::Argument, "--x-dtype: MX quantization (float8_e8m0 scales) needs float8_e4m3fn or float8_e5m2, got " +
                                            std::string(dtype_name(x_dtype)));
  if (!(a.hif8_target >= 0.0f) || (a.hif8_target != 0.0f && x_dtype != DType::HiFloat8))
    throw CliError(ErrorKind::Argument, "--hif8-target applies to --x-dtype hifloat8 only and must be positive");
  if (a.ranks < 1 || a.ranks > 1024) throw CliError(ErrorKind::Argument, "--ranks must be in [1, 1024], got " + std::to_string(a.ranks));
  check_rank_pattern("--in", a.in_pattern, a.ranks);
  check_rank_pattern("--x", a.x_pattern, a.ranks);
  check_rank_pattern("--scales", a.scales_pattern, a.ranks);

  std::vector<std::pair<std::string, npy::Array>> files;
  for (int r = 0; r < a.ranks; ++r) {
    const std::string path = expand_rank(a.in_pattern, r);
    npy::Array in = load_npy(path);
    if (in.type != npy::ElemType::Float32)
      throw CliError(ErrorKind::File, path + ": element type " + std::string(npy::elem_name(in.type)) + " ('" + npy::descr(in.type) +
                                          "'); expected float32 ('<f4')");
    if (in.shape.size() != 2 && in.shape.size() != 3)
      throw CliError(ErrorKind::File, path + ": shape " + shape_text(in.shape) + " must be 2-D (BS, H) or 3-D (B, S, H)");
    const int64_t h = in.shape.back();
    const int64_t group = mx ? 64 : 128;  // MX scales come in pairs of 32-element blocks
    if (h <= 0 || h % group != 0)
      throw CliError(ErrorKind::File, path + ": H = " + std::to_string(h) + " must be a positive multiple of " +
                                          std::to_string(group) + " for " + (mx ? "MX" : "per-group") + " quantization");
    const std::size_t count = in.count();
    const std::size_t rows = count / static_cast<std::size_t>(h);
    std::vector<float> v(count);
    if (count) std::memcpy(v.data(), in.data.data(), count * 4);

    npy::Array x;
    x.type = x_dtype == DType::Int8 ? npy::ElemType::Int8 : npy::ElemType::UInt8;
    x.shape = in.shape;
    x.data.resize(count);
    npy::Array s;
    s.shape.assign(in.shape.begin(), in.shape.end() - 1);
    bool ok;
    if (mx) {
      s.type = npy::ElemType::UInt8;
      s.shape.push_back(h / 64);
      s.shape.push_back(2);
      s.data.resize(count / 32);
      ok = quant::quantize_mx(v.data(), rows, static_cast<std::size_t>(h), x_dtype, x.data.data(), s.data.data());
    } else {
      s.type = npy::ElemType::Float32;
      s.shape.push_back(h / 128);
      std::vector<float> scales(count / 128);
      quant::KgOptions opt;
      opt.hif8_target = a.hif8_target;
      ok = quant::quantize_kg(v.data(), rows, static_cast<std::size_t>(h), x_dtype, x.data.data(), scales.data(), opt);
      s.data.resize(scales.size() * 4);
      if (!scales.empty()) std::memcpy(s.data.data(), scales.data(), s.data.size());
    }
    if (!ok) {
      Status st = quant::check_quantize_args(v.data(), rows, static_cast<std::size_t>(h), x_dtype, s_dtype, x.data.data(),
                                             s.data.data(), a.hif8_target);
      if (st.ok()) st = Status::Error(StatusCode::InnerError, "the quantizer failed");
      throw CliError(ErrorKind::Status, path + ": " + st.message, static_cast<int32_t>(st.code));
    }
    files.emplace_back(expand_rank(a.x_pattern, r), std::move(x));
    files.emplace_back(expand_rank(a.scales_pattern, r), std::move(s));
  }
  write_npy_files(files);
  std::printf("qcoll quantize: %d tensor(s) to %s with %s scales; wrote %s and %s%s\n", a.ranks, std::string(dtype_name(x_dtype)).c_str(),
              std::string(dtype_name(s_dtype)).c_str(), files[0].first.c_str(), files[1].first.c_str(),
              a.ranks > 1 ? " (and the other ranks')" : "");
}

const CommandRegistrar reg_quantize([](CLI::App& app) {
  CLI::App* sub = app.add_subcommand("quantize", "Quantize float32 .npy tensors into x and scales .npy files for the operators");
  auto args = std::make_shared<QuantizeArgs>();
  sub->add_option("--ranks,-n", args->ranks, "Number of ranks (files)")->capture_default_str();
  sub->add_option("--in", args->in_pattern, "float32 input (BS, H) or (B, S, H); {rank} is replaced by the rank")->required();
  sub->add_option("--x-dtype", args->x_dtype, "int8, hifloat8, float8_e4m3fn (e4m3) or float8_e5m2 (e5m2)")->required();
  sub->add_option("--scales-dtype", args->scales_dtype, "float (per-token-per-group 128) or float8_e8m0 (MX, group 32)")->capture_default_str();
  sub->add_option("--hif8-target", args->hif8_target, "HiF8 only: scale = amax / target (default: the library's)");
  sub->add_option("--x", args->x_pattern, "Output x file (int8 or uint8 .npy)")->required();
  sub->add_option("--scales", args->scales_pattern, "Output scales file (float32 or uint8 .npy)")->required();
  sub->callback([args] {
    try {
      run_quantize(*args);
    } catch (const CliError& e) {
      throw CLI::RuntimeError(report(e));
    }
  });
});

}  // namespace
}  // namespace qcoll::cli
