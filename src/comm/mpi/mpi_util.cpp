#include "comm/mpi/mpi_util.hpp"

#include "comm/backoff.hpp"
#include "qcoll/settings.hpp"

namespace qcoll::comm::mpi {

Status check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  return Status::Error(
      StatusCode::RuntimeError,
      std::string(call) + " failed: " + (len > 0 ? std::string(text, len) : "error " + std::to_string(rc)));
}

Status test(MPI_Request& req, bool& done) {
  // A null request is complete (the MPI standard: flag = true), so it is not asked of MPI:
  // SimGrid's SMPI (3.32) leaves the flag unset for MPI_REQUEST_NULL with MPI_STATUS_IGNORE,
  // and its MPI_Testall nulls the requests that completed even when it returns false, so a
  // request tested again after a test_all() is often null there (docs/scale.md: that hung the
  // hosts schedule's forwards).
  if (req == MPI_REQUEST_NULL) {
    done = true;
    return Status::Ok();
  }
  int flag = 0;
  Status s = check(MPI_Test(&req, &flag, MPI_STATUS_IGNORE), "MPI_Test");
  done = s.ok() && flag != 0;
  return s;
}

Status test_all(MPI_Request* reqs, int count, bool& done) {
  int flag = 0;
  Status s = check(MPI_Testall(count, reqs, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
  done = s.ok() && flag != 0;
  return s;
}

Status allgather_small(const void* send, void* recv, int count, MPI_Datatype type, MPI_Comm comm,
                       Clock::time_point deadline, const std::string& what) {
#ifdef QCOLL_SMPI
  (void)deadline;
  Status s = check(MPI_Allgather(send, count, type, recv, count, type, comm), "MPI_Allgather");
  return s.ok() ? s : Status::Error(s.code, what + ": " + s.message);
#else
  MPI_Request req = MPI_REQUEST_NULL;
  Status s = check(MPI_Iallgather(send, count, type, recv, count, type, comm, &req), "MPI_Iallgather");
  return s.ok() ? wait(req, deadline, what) : s;
#endif
}

Status allreduce_small(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                       Clock::time_point deadline, const std::string& what) {
#ifdef QCOLL_SMPI
  (void)deadline;
  Status s = check(MPI_Allreduce(send, recv, count, type, op, comm), "MPI_Allreduce");
  return s.ok() ? s : Status::Error(s.code, what + ": " + s.message);
#else
  MPI_Request req = MPI_REQUEST_NULL;
  Status s = check(MPI_Iallreduce(send, recv, count, type, op, comm, &req), "MPI_Iallreduce");
  return s.ok() ? wait(req, deadline, what) : s;
#endif
}

Status wait(MPI_Request& req, Clock::time_point deadline, const std::string& what,
            const std::function<Status()>& between) {
  return wait_all(&req, 1, deadline, what, between);
}

Status wait_all(MPI_Request* reqs, int count, Clock::time_point deadline, const std::string& what,
                const std::function<Status()>& between) {
#ifdef QCOLL_SMPI
  // The SMPI build blocks in the simulator instead of polling (docs/scale.md): no deadline,
  // `between` runs once before; a wait that can never finish ends the simulation (SimGrid
  // reports the deadlock).
  (void)deadline;
  if (between) {
    if (Status s = between(); !s.ok()) return s;
  }
  Status s = check(MPI_Waitall(count, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
  return s.ok() ? s : Status::Error(s.code, what + ": " + s.message);
#else
  return wait_for([reqs, count](bool& done) { return test_all(reqs, count, done); }, deadline, what, between);
#endif
}

Status wait_for(const std::function<Status(bool& done)>& poll, Clock::time_point deadline, const std::string& what,
                const std::function<Status()>& between) {
  Backoff backoff;
  for (;;) {
    bool done = false;
    if (Status s = poll(done); !s.ok()) return Status::Error(s.code, what + ": " + s.message);
    if (done) return Status::Ok();
    if (between && backoff.time_to_check()) {
      if (Status s = between(); !s.ok()) return s;
    }
    if (Clock::now() >= deadline) {
      return Status::Error(StatusCode::RuntimeError,
                           what + ": timed out (QCOLL_TIMEOUT_S) waiting for the other ranks over MPI");
    }
    backoff.pause();
  }
}

Clock::time_point creation_deadline() {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(settings::call_timeout());
}

}  // namespace qcoll::comm::mpi
