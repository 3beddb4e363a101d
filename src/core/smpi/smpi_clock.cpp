// The SMPI build's steady clock (cmake/smpi.cmake): the qcoll program is linked with
// --wrap of std::chrono::steady_clock::now(), so every call of it in the program and in the
// static libraries it holds (the bench's timings, the library's deadlines) reads the
// simulated time of the calling rank, MPI_Wtime(), and not the wall time of the simulator,
// which runs all ranks in turn on one thread. Not part of the normal build.
#include <mpi.h>

#include <chrono>
#include <cmath>

// The wrapped symbol's own name (the Itanium C++ ABI name of steady_clock::now()).
extern "C" std::chrono::steady_clock::time_point __wrap__ZNSt6chrono3_V212steady_clock3nowEv() noexcept;

extern "C" std::chrono::steady_clock::time_point __wrap__ZNSt6chrono3_V212steady_clock3nowEv() noexcept {
  const double seconds = MPI_Wtime();  // SMPI: the rank's simulated clock, from 0 at the start
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(std::llround(seconds * 1e9)));
}
