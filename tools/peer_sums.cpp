// The MPI peers' sums; see peer_sums.hpp.
#include "peer_sums.hpp"

#include <bit>

namespace qcoll::cli {
namespace {

// bf16 of an fp32, nearest even: add half an ulp of bf16 (less one, plus the kept bit's
// parity) and cut. A carry out of the mantissa moves the exponent up, so overflow lands on
// Inf; a NaN keeps its sign and top payload bits and is made quiet.
[[gnu::always_inline]] inline uint16_t to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
}

[[gnu::always_inline]] inline void bf16_loop(const uint16_t* __restrict in, uint16_t* __restrict inout,
                                             std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const float a = std::bit_cast<float>(static_cast<uint32_t>(in[i]) << 16);
    const float b = std::bit_cast<float>(static_cast<uint32_t>(inout[i]) << 16);
    inout[i] = to_bf16(a + b);
  }
}

[[gnu::always_inline]] inline void fp32_loop(const float* __restrict in, float* __restrict inout, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) inout[i] = in[i] + inout[i];
}

void bf16_baseline(const uint16_t* in, uint16_t* inout, std::size_t count) { bf16_loop(in, inout, count); }
void fp32_baseline(const float* in, float* inout, std::size_t count) { fp32_loop(in, inout, count); }

#if defined(__x86_64__) && defined(__GNUC__)
#define QCOLL_PEER_SUM_X86 1
[[gnu::target("avx2")]] void bf16_avx2(const uint16_t* in, uint16_t* inout, std::size_t count) {
  bf16_loop(in, inout, count);
}
[[gnu::target("avx2")]] void fp32_avx2(const float* in, float* inout, std::size_t count) {
  fp32_loop(in, inout, count);
}
[[gnu::target("avx512f,avx512bw,avx512vl")]] void bf16_avx512(const uint16_t* in, uint16_t* inout, std::size_t count) {
  bf16_loop(in, inout, count);
}
[[gnu::target("avx512f,avx512bw,avx512vl")]] void fp32_avx512(const float* in, float* inout, std::size_t count) {
  fp32_loop(in, inout, count);
}
#endif

struct Target {
  const char* name;
  bool (*runs)();
  void (*bf16)(const uint16_t*, uint16_t*, std::size_t);
  void (*fp32)(const float*, float*, std::size_t);
};

const Target kTargets[] = {
#ifdef QCOLL_PEER_SUM_X86
    {"AVX512BW",
     [] {
       return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vl");
     },
     bf16_avx512, fp32_avx512},
    {"AVX2", [] { return static_cast<bool>(__builtin_cpu_supports("avx2")); }, bf16_avx2, fp32_avx2},
#endif
    {"baseline", [] { return true; }, bf16_baseline, fp32_baseline},
};

const Target& best() {
  static const Target& t = []() -> const Target& {
    for (const Target& c : kTargets)
      if (c.runs()) return c;
    return kTargets[sizeof(kTargets) / sizeof(kTargets[0]) - 1];
  }();
  return t;
}

const Target* find(std::string_view name) {
  for (const Target& c : kTargets)
    if (name == c.name && c.runs()) return &c;
  return nullptr;
}

}  // namespace

void bf16_sum(const uint16_t* in, uint16_t* inout, std::size_t count) { best().bf16(in, inout, count); }
void fp32_sum(const float* in, float* inout, std::size_t count) { best().fp32(in, inout, count); }

std::vector<std::string> peer_sum_targets() {
  std::vector<std::string> names;
  for (const Target& c : kTargets)
    if (c.runs()) names.emplace_back(c.name);
  return names;
}

bool bf16_sum_on(std::string_view target, const uint16_t* in, uint16_t* inout, std::size_t count) {
  const Target* t = find(target);
  if (t != nullptr) t->bf16(in, inout, count);
  return t != nullptr;
}

bool fp32_sum_on(std::string_view target, const float* in, float* inout, std::size_t count) {
  const Target* t = find(target);
  if (t != nullptr) t->fp32(in, inout, count);
  return t != nullptr;
}

}  // namespace qcoll::cli
