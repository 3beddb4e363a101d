// Polite waiting for a condition that another process or thread makes true: spin a little,
// then yield, then sleep in short naps, so that oversubscribed ranks (more ranks than
// cores) still make progress. The caller checks its deadline between calls to pause().
#pragma once
#include <sched.h>
#include <time.h>

#include <cstdint>

namespace qcoll::comm {

class Backoff {
 public:
  void pause() {
    ++n_;
    if (n_ < kSpins) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else if (n_ < kSpins + kYields) {
      sched_yield();
    } else {
      const timespec nap{0, kNapNanos};
      nanosleep(&nap, nullptr);
    }
  }
  // Every this many pauses the caller may run a slower check (peer liveness, the clock).
  bool time_to_check() const { return (n_ & 63) == 0; }

 private:
  static constexpr uint64_t kSpins = 64;
  static constexpr uint64_t kYields = 16;
  static constexpr long kNapNanos = 20'000;  // 20 us
  uint64_t n_ = 0;
};

}  // namespace qcoll::comm
