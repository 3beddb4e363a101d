// Small helpers for the MPI-based transports: MPI return codes as Status values, and waiting
// for a nonblocking MPI request against a deadline (MPI_Test polling, never a blocking wait
// that a dead peer could turn into a hang).
#pragma once
#include <mpi.h>

#include <functional>
#include <string>

#include "comm/communicator.hpp"
#include "qcoll/status.hpp"

namespace qcoll::comm::mpi {

// "MPI_Xxx failed: <MPI's error string>" as RUNTIME_ERROR; Ok for MPI_SUCCESS.
Status check(int rc, const char* call);

// Polls `req` until it completes or `deadline` passes (then RUNTIME_ERROR naming `what`; the
// request stays pending and its buffers must stay allocated). `check`, if given, runs now
// and then between polls; an error from it ends the wait with that error.
Status wait(MPI_Request& req, Clock::time_point deadline, const std::string& what,
            const std::function<Status()>& check = {});
// The same for `count` requests (all of them complete; completed ones become MPI_REQUEST_NULL).
Status wait_all(MPI_Request* reqs, int count, Clock::time_point deadline, const std::string& what,
                const std::function<Status()>& check = {});

// The same for a condition: calls `poll` (which sets done; an error from it ends the wait,
// with `what` in front) until it is done or the deadline passes.
Status wait_for(const std::function<Status(bool& done)>& poll, Clock::time_point deadline, const std::string& what,
                const std::function<Status()>& check = {});

// An all-gather (count elements of `type` from every rank) and an all-reduce of small data,
// nonblocking and waited for as wait() does, errors naming `what`. The SMPI build's are the
// blocking calls: SMPI's nonblocking collectives are n (n - 1) messages whatever its
// configuration, which at 256 ranks cost the simulator more than the data (docs/scale.md);
// its blocking ones take the algorithm of --cfg=smpi/allgather (simulate_cluster.sh: bruck)
// and SMPI's default all-reduce (a reduce and a broadcast, 2 (n - 1) messages).
Status allgather_small(const void* send, void* recv, int count, MPI_Datatype type, MPI_Comm comm,
                       Clock::time_point deadline, const std::string& what);
Status allreduce_small(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                       Clock::time_point deadline, const std::string& what);

// Tests `req` once; sets done (at once, without MPI, for MPI_REQUEST_NULL). Errors as check().
Status test(MPI_Request& req, bool& done);
// Tests `count` requests once (MPI_Testall); done when all completed.
Status test_all(MPI_Request* reqs, int count, bool& done);

// QCOLL_TIMEOUT_S (settings::call_timeout) from now: the deadline of communicator creation.
Clock::time_point creation_deadline();

}  // namespace qcoll::comm::mpi
