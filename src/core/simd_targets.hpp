// The Highway SIMD targets of this build that this CPU runs, shared by the layers that
// dispatch (kernels, quant). Every layer compiles with the same Highway settings
// (src/CMakeLists.txt: HWY_WANT_AVX3_DL), so HWY_TARGETS is the same set everywhere.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qcoll::core {

// Compiled targets this CPU supports, best first (e.g. AVX3_DL, AVX3, AVX2, SSE4, SSSE3,
// and the fallback). Computed once: hwy::SupportedTargets() runs CPUID every call, which
// traps to the hypervisor in a VM.
const std::vector<int64_t>& usable_simd_targets();

// Their names ("AVX3_DL", ...), and the best one's ("scalar" if there is none).
std::vector<std::string> usable_simd_target_names();
const char* best_simd_target_name();

// The target of that name among usable_simd_targets(), or 0.
int64_t usable_simd_target(std::string_view name);

// Where target t's entry sits in a HWY_DISPATCH_TABLE: the index ChosenTarget would
// compute for a CPU whose best target is t (see hwy/targets.h).
std::size_t dispatch_table_index(int64_t t);

}  // namespace qcoll::core
