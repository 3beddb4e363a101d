// Synthetic activations; see activations.hpp. Uses its own generator and Box-Muller so the
// values are the same with every standard library.
#include "activations.hpp"

#include <algorithm>
#include <cmath>

namespace qcoll::cli {
namespace {

// splitmix64: small, fast, and good enough for test data.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  // Standard normal pair by Box-Muller.
  void normal2(double& a, double& b) {
    double u1 = 1.0 - uniform();  // (0, 1]
    double u2 = uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    a = r * std::cos(6.283185307179586 * u2);
    b = r * std::sin(6.283185307179586 * u2);
  }

 private:
  uint64_t s_;
};

}  // namespace

std::vector<OutlierChannel> outlier_channels(const ActivationSpec& spec) {
  std::size_t count = spec.outlier_channels ? spec.outlier_channels : std::max<std::size_t>(4, spec.hidden / 512);
  count = std::min(count, spec.hidden);
  Rng rng(spec.seed * 0x2545F4914F6CDD1Dull + 17);
  std::vector<OutlierChannel> out;
  while (out.size() < count) {
    std::size_t c = static_cast<std::size_t>(rng.next() % spec.hidden);
    bool seen = std::any_of(out.begin(), out.end(), [&](const OutlierChannel& o) { return o.channel == c; });
    if (seen) continue;
    float factor = static_cast<float>(10.0 * std::pow(10.0, rng.uniform()));  // 10..100
    out.push_back({c, factor});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.channel < b.channel; });
  return out;
}

std::vector<float> make_activations(const ActivationSpec& spec, int rank) {
  const std::size_t h = spec.hidden;
  std::vector<float> v(spec.rows * h);
  std::vector<float> channel_factor(h, 1.0f);
  for (const auto& o : outlier_channels(spec)) channel_factor[o.channel] = o.factor;
  Rng rng((spec.seed << 8) ^ (static_cast<uint64_t>(rank) * 0x9E3779B97F4A7C15ull) ^ 0x5DEECE66Dull);
  for (std::size_t r = 0; r < spec.rows; ++r) {
    double a, b;
    rng.normal2(a, b);
    const double token_scale = std::exp(0.25 * a);  // tokens differ in norm
    float* row = v.data() + r * h;
    for (std::size_t i = 0; i < h; i += 2) {
      rng.normal2(a, b);
      row[i] = static_cast<float>(a * token_scale * channel_factor[i]);
      if (i + 1 < h) row[i + 1] = static_cast<float>(b * token_scale * channel_factor[i + 1]);
    }
  }
  return v;
}

}  // namespace qcoll::cli
