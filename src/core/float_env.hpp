// Keeps subnormals for the duration of a kernel or quantizer call: clears flush-to-zero and
// denormals-are-zero (x86 MXCSR FTZ/DAZ, AArch64 FPCR FZ) and restores the caller's
// setting afterwards. A process (or a library in it) may have turned them on, and new
// threads inherit the creating thread's setting; contract.md §numerics-reduction forbids flushing.
#pragma once
#include <cfenv>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace qcoll::core {

class KeepSubnormals {
 public:
#if defined(__x86_64__) || defined(__i386__)
  static constexpr unsigned kFlushBits = 0x8040u;  // FTZ (bit 15) | DAZ (bit 6)
  KeepSubnormals() : saved_(_mm_getcsr()) {
    if (saved_ & kFlushBits) _mm_setcsr(saved_ & ~kFlushBits);
  }
  ~KeepSubnormals() {  // control bits back, exception flags raised meanwhile kept
    if (saved_ & kFlushBits) _mm_setcsr(_mm_getcsr() | kFlushBits);
  }
#elif defined(__aarch64__)
  static constexpr uint64_t kFlushBits = uint64_t{1} << 24;  // FPCR.FZ
  KeepSubnormals() : saved_(__builtin_aarch64_get_fpcr64()) {
    if (saved_ & kFlushBits) __builtin_aarch64_set_fpcr64(saved_ & ~kFlushBits);
  }
  ~KeepSubnormals() {
    if (saved_ & kFlushBits) __builtin_aarch64_set_fpcr64(saved_);
  }
#else
  KeepSubnormals() = default;
#endif
  KeepSubnormals(const KeepSubnormals&) = delete;
  KeepSubnormals& operator=(const KeepSubnormals&) = delete;

 private:
#if defined(__x86_64__) || defined(__i386__)
  unsigned saved_;
#elif defined(__aarch64__)
  uint64_t saved_;
#endif
};

// Runs the scope in the rounding mode `mode` (an FE_* value from the caller's fegetround())
// and restores the thread's own afterwards: the worker pool's threads compute in the mode of
// the thread that handed them the work.
class ScopedRounding {
 public:
  explicit ScopedRounding(int mode) : saved_(std::fegetround()) {
    if (saved_ != mode) std::fesetround(mode);
  }
  ~ScopedRounding() {
    if (std::fegetround() != saved_) std::fesetround(saved_);
  }
  ScopedRounding(const ScopedRounding&) = delete;
  ScopedRounding& operator=(const ScopedRounding&) = delete;

 private:
  int saved_;
};

}  // namespace qcoll::core
