// `qcoll generate`: write synthetic LLM-like activations (float32 .npy), one file per rank,
// the same data `qcoll demo` uses. Input for `qcoll quantize`.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "activations.hpp"
#include "cli_args.hpp"
#include "cli_error.hpp"
#include "command.hpp"

namespace qcoll::cli {
namespace {

struct GenerateArgs {
  int ranks = 1;
  int64_t bs = 1024;
  int64_t hidden = 4096;
  uint64_t seed = 1;
  std::string out_pattern;
};

int run_generate(const GenerateArgs& a) {
  require_in_range("--ranks", a.ranks, 1, 1024);
  require_in_range("--bs", a.bs, 1, int64_t{1} << 24);
  require_in_range("--hidden", a.hidden, 1, int64_t{1} << 20);
  check_rank_pattern("--out", a.out_pattern, a.ranks);
  ActivationSpec spec;
  spec.rows = static_cast<std::size_t>(a.bs);
  spec.hidden = static_cast<std::size_t>(a.hidden);
  spec.seed = a.seed;
  std::vector<std::pair<std::string, npy::Array>> files;
  for (int r = 0; r < a.ranks; ++r) {
    std::vector<float> v = make_activations(spec, r);
    npy::Array arr;
    arr.type = npy::ElemType::Float32;
    arr.shape = {a.bs, a.hidden};
    arr.data.resize(v.size() * 4);
    std::memcpy(arr.data.data(), v.data(), arr.data.size());
    files.emplace_back(expand_rank(a.out_pattern, r), std::move(arr));
  }
  write_npy_files(files);
  std::printf("qcoll generate: %d float32 arrays of shape (%lld, %lld), seed %llu; wrote %s%s%s\n", a.ranks,
              static_cast<long long>(a.bs), static_cast<long long>(a.hidden), static_cast<unsigned long long>(a.seed),
              files.front().first.c_str(), a.ranks > 1 ? " .. " : "", a.ranks > 1 ? files.back().first.c_str() : "");
  return 0;
}

const CommandRegistrar reg_generate([](CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "generate", "Write synthetic activations (float32 .npy: Gaussian plus outlier channels), one file per rank");
  auto args = std::make_shared<GenerateArgs>();
  sub->add_option("--ranks,-n", args->ranks, "Number of files (rank r uses the seed's stream r)")
      ->capture_default_str();
  sub->add_option("--bs", args->bs, "Rows (tokens)")->capture_default_str();
  sub->add_option("--hidden", args->hidden, "Columns (hidden size H)")->capture_default_str();
  sub->add_option("--seed", args->seed, "Seed")->capture_default_str();
  sub->add_option("--out", args->out_pattern, "Output file; {rank} is replaced by the rank")->required();
  set_action(sub, [args] { return run_generate(*args); });
});

}  // namespace
}  // namespace qcoll::cli
