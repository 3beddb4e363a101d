#include "comm/mpi/mpi_util.hpp"

#include <cstdlib>

#include "comm/backoff.hpp"

namespace qcoll::comm::mpi {

Status check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  return Status::Error(StatusCode::RuntimeError,
                       std::string(call) + " failed: " + (len > 0 ? std::string(text, len) : "error " + std::to_string(rc)));
}

Status test(MPI_Request& req, bool& done) {
  int flag = 0;
  Status s = check(MPI_Test(&req, &flag, MPI_STATUS_IGNORE), "MPI_Test");
  done = s.ok() && flag != 0;
  return s;
}

Status wait(MPI_Request& req, Clock::time_point deadline, const std::string& what) {
  Backoff backoff;
  for (;;) {
    bool done = false;
    if (Status s = test(req, done); !s.ok()) return Status::Error(s.code, what + ": " + s.message);
    if (done) return Status::Ok();
    if (Clock::now() >= deadline) {
      return Status::Error(StatusCode::RuntimeError,
                           what + ": timed out (QCOLL_TIMEOUT_S) waiting for the other ranks over MPI");
    }
    backoff.pause();
  }
}

Clock::time_point creation_deadline() {
  double seconds = 60;
  if (const char* v = std::getenv("QCOLL_TIMEOUT_S"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const double d = std::strtod(v, &end);
    if (end != v && *end == '\0' && d > 0 && d < 1e7) seconds = d;
  }
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace qcoll::comm::mpi
