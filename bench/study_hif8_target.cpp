// Study: which HiF8 KG target (scale = amax / target) loses the least?
//
// For each target, on Gaussian and Student-t(3) data (fixed seeds), it measures
//   - rel RMS   = ||dequant(quant(v)) - v||_2 / ||v||_2                 (one tensor)
//   - max/amax  = max over elements of |dequant(quant(v)) - v| / amax(group of v)
//   - sum rel RMS: the operator's view: n ranks each quantize their own tensor, the
//     dequantized values are summed in fp32 in rank order (contract.md §numerics-reduction), compared to the
//     exact (fp64) sum of the unquantized fp32 inputs.
// INT8 / E4M3 / E5M2 KG are measured the same way for comparison. Prints markdown tables.
//
//   study_hif8_target [--rows R] [--H H] [--ranks N] [--sum-rows R] [--targets a,b,...]
// Defaults: one 4096 x 4096 tensor; 8 ranks x 1024 x 4096 for the sum.
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "qcoll/quant.hpp"

namespace {

using qcoll::DType;
namespace qq = qcoll::quant;

enum class Dist { Gaussian, StudentT3 };
const char* dist_name(Dist d) { return d == Dist::Gaussian ? "Gaussian" : "Student-t(3)"; }

std::vector<float> make_data(Dist d, std::size_t n, uint32_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<float> v(n);
  if (d == Dist::Gaussian) {
    std::normal_distribution<double> nd(0.0, 1.0);
    for (auto& x : v) x = static_cast<float>(nd(gen));
  } else {
    std::student_t_distribution<double> td(3.0);
    for (auto& x : v) x = static_cast<float>(td(gen));
  }
  return v;
}

struct Method {
  std::string name;
  DType dtype;
  float target;  // HiF8 only
};

std::vector<float> round_trip(const std::vector<float>& x, std::size_t rows, std::size_t H, const Method& m,
                              std::vector<float>* scales_out = nullptr) {
  std::vector<uint8_t> q(x.size());
  std::vector<float> s(x.size() / 128);
  qq::KgOptions opt;
  opt.hif8_target = m.dtype == DType::HiFloat8 ? m.target : 0.0f;
  if (!qq::quantize_kg(x.data(), rows, H, m.dtype, q.data(), s.data(), opt)) {
    std::fprintf(stderr, "quantize_kg failed for %s\n", m.name.c_str());
    std::exit(1);
  }
  std::vector<float> d(x.size());
  if (!qq::dequantize(q.data(), s.data(), rows, H, m.dtype, DType::Float, d.data())) {
    std::fprintf(stderr, "dequantize failed for %s\n", m.name.c_str());
    std::exit(1);
  }
  if (scales_out) *scales_out = std::move(s);
  return d;
}

struct TensorError {
  double rel_rms = 0;
  double max_over_amax = 0;
};

TensorError tensor_error(const std::vector<float>& x, std::size_t rows, std::size_t H, const Method& m) {
  std::vector<float> d = round_trip(x, rows, H, m);
  double num = 0, den = 0, worst = 0;
  for (std::size_t g = 0; g < x.size() / 128; ++g) {
    double amax = 0;
    for (std::size_t i = g * 128; i < g * 128 + 128; ++i) amax = std::max(amax, std::fabs(double(x[i])));
    for (std::size_t i = g * 128; i < g * 128 + 128; ++i) {
      const double e = double(d[i]) - double(x[i]);
      num += e * e;
      den += double(x[i]) * double(x[i]);
      if (amax > 0) worst = std::max(worst, std::fabs(e) / amax);
    }
  }
  return {std::sqrt(num / den), worst};
}

double sum_error(const std::vector<std::vector<float>>& xs, std::size_t rows, std::size_t H, const Method& m) {
  const std::size_t n = xs[0].size();
  std::vector<float> acc(n, 0.0f);
  std::vector<double> exact(n, 0.0);
  for (const auto& x : xs) {
    std::vector<float> d = round_trip(x, rows, H, m);
    for (std::size_t i = 0; i < n; ++i) {
      acc[i] = acc[i] + d[i];  // fp32, rank order
      exact[i] += double(x[i]);
    }
  }
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = double(acc[i]) - exact[i];
    num += e * e;
    den += exact[i] * exact[i];
  }
  return std::sqrt(num / den);
}

constexpr const char* kUsage =
    "usage: study_hif8_target [--rows R] [--H H] [--ranks N] [--sum-rows R] [--targets a,b,...]\n"
    "Which HiF8 KG target (scale = amax / target) loses the least: markdown tables of the\n"
    "round-trip and rank-sum errors of HiF8 at each target, and of INT8 / E4M3 / E5M2 KG.\n"
    "  --rows R      rows of the single tensor (default 4096)\n"
    "  --H H         hidden size, a positive multiple of 128 (default 4096)\n"
    "  --ranks N     ranks of the sum (default 8)\n"
    "  --sum-rows R  rows of each rank's tensor in the sum (default 1024)\n"
    "  --targets L   comma list of HiF8 targets (default 1,2,4,8,15,16,32,64,256,32768)\n"
    "  -h, --help    print this and exit\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "study_hif8_target: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

std::size_t parse_count(const std::string& option, const char* text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (*text == '\0' || *text == '-' || *end != '\0' || errno != 0 || v == 0)
    usage_error(option + " must be a positive whole number, got '" + text + "'");
  return static_cast<std::size_t>(v);
}

// A comma list of HiF8 targets, each a finite positive number.
std::vector<float> parse_list(const char* text) {
  std::vector<float> out;
  const std::string all = text;
  std::size_t pos = 0;
  while (pos <= all.size()) {
    std::size_t end = all.find(',', pos);
    if (end == std::string::npos) end = all.size();
    const std::string item = all.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    char* stop = nullptr;
    const float v = std::strtof(item.c_str(), &stop);
    if (*stop != '\0' || !(v > 0.0f) || !std::isfinite(v))
      usage_error("--targets: '" + item + "' is not a positive number");
    out.push_back(v);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t rows = 4096, H = 4096, ranks = 8, sum_rows = 1024;
  std::vector<float> targets = {1, 2, 4, 8, 15, 16, 32, 64, 256, 32768};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a != "--rows" && a != "--H" && a != "--ranks" && a != "--sum-rows" && a != "--targets")
      usage_error("unknown option '" + a + "'");
    if (i + 1 >= argc) usage_error(a + " needs a value");
    const char* v = argv[++i];
    if (a == "--rows")
      rows = parse_count(a, v);
    else if (a == "--H")
      H = parse_count(a, v);
    else if (a == "--ranks")
      ranks = parse_count(a, v);
    else if (a == "--sum-rows")
      sum_rows = parse_count(a, v);
    else
      targets = parse_list(v);
  }
  if (H % 128 != 0) usage_error("--H must be a positive multiple of 128, got " + std::to_string(H));
  if (targets.empty()) usage_error("--targets: no target given");

  std::vector<Method> methods;
  for (float t : targets) {
    char name[64];
    std::snprintf(name, sizeof name, "hifloat8 target %g", double(t));
    methods.push_back({name, DType::HiFloat8, t});
  }
  methods.push_back({"int8 (amax -> 127)", DType::Int8, 0});
  methods.push_back({"float8_e4m3fn (amax -> 448)", DType::Float8E4M3FN, 0});
  methods.push_back({"float8_e5m2 (amax -> 57344)", DType::Float8E5M2, 0});

  const auto t0 = std::chrono::steady_clock::now();
  std::printf(
      "HiF8 KG target study: one %zu x %zu tensor per distribution; sum over %zu ranks of "
      "%zu x %zu each (fp32 rank-order sum vs exact fp64 sum of the inputs). "
      "Default target now: %g.\n\n",
      rows, H, ranks, sum_rows, H, double(qq::default_hif8_target()));
  std::printf(
      "| method | Gaussian rel RMS | Gaussian max/amax | Gaussian %zu-rank sum rel RMS | "
      "t(3) rel RMS | t(3) max/amax | t(3) %zu-rank sum rel RMS |\n",
      ranks, ranks);
  std::printf("|---|---|---|---|---|---|---|\n");

  const Dist dists[2] = {Dist::Gaussian, Dist::StudentT3};
  std::vector<float> single[2];
  std::vector<std::vector<float>> per_rank[2];
  for (int d = 0; d < 2; ++d) {
    single[d] = make_data(dists[d], rows * H, 1000 + d);
    for (std::size_t r = 0; r < ranks; ++r)
      per_rank[d].push_back(make_data(dists[d], sum_rows * H, 2000 + 100 * d + r));
  }
  for (const Method& m : methods) {
    TensorError te[2];
    double se[2];
    for (int d = 0; d < 2; ++d) {
      te[d] = tensor_error(single[d], rows, H, m);
      se[d] = sum_error(per_rank[d], sum_rows, H, m);
    }
    std::printf("| %s | %.4e | %.4e | %.4e | %.4e | %.4e | %.4e |\n", m.name.c_str(), te[0].rel_rms,
                te[0].max_over_amax, se[0], te[1].rel_rms, te[1].max_over_amax, se[1]);
    std::fflush(stdout);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "\nSeeds (std::mt19937_64): tensor 1000+d, rank r 2000+100d+r, d = 0 %s, 1 %s. "
      "%.1f s.\n",
      dist_name(dists[0]), dist_name(dists[1]), secs);
  return 0;
}
