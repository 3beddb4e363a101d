/* qcoll: communicators for one rank per process (shared memory on one host, MPI across hosts).
 *
 * Available when qcoll was built with MPI (QCOLL_HAVE_MPI). Creating a communicator is
 * collective over the MPI communicator: every rank calls it with the same name. The name is
 * then registered for the whole process, and the operators accept it as their `group`.
 *
 * Transport: when every rank is on one host, ranks exchange through a shared-memory window
 * of HCCL_BUFFSIZE MB per rank (default 200; read at creation); otherwise through MPI
 * (nonblocking all-to-all, chunked, staging buffers of 2 x HCCL_BUFFSIZE MB per rank, up to
 * 3 x with the exchange bundled per host). QCOLL_TRANSPORT=shm|mpi|auto (default auto) forces
 * one. MPI must be initialised before and finalised after; calls on one communicator must
 * come from one thread at a time, and from a thread allowed to call MPI
 * (MPI_THREAD_SERIALIZED or better if that is not the main thread).
 * A peer that dies or never calls makes the others return QCOLL_RUNTIME_ERROR within
 * QCOLL_TIMEOUT_S (default 60) seconds; the communicator is then broken (destroy it).
 */
#ifndef QCOLL_QCOLL_MPI_H
#define QCOLL_QCOLL_MPI_H

#include <mpi.h>

#include "qcoll/qcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qcollMpiComm qcollMpiComm;

/* Collective over `comm` (duplicated inside; `comm` itself is not kept). */
qcollStatus qcollMpiCommCreate(const char *name, MPI_Comm comm, qcollMpiComm **out);
/* The same over MPI_COMM_WORLD. */
qcollStatus qcollMpiCommCreateWorld(const char *name, qcollMpiComm **out);
/* Unregisters the name and releases the communicator. Not collective: never waits for peers.
 * Call it before MPI_Finalize. NULL is accepted. */
qcollStatus qcollMpiCommDestroy(qcollMpiComm *comm);

qcollStatus qcollMpiCommRank(const qcollMpiComm *comm, int32_t *rank);
qcollStatus qcollMpiCommSize(const qcollMpiComm *comm, int32_t *size);
/* Ranks of the communicator on this rank's host (MPI_Comm_split_type SHARED): they share its
 * cores (the default reduction threads per rank divide them) and its network link. */
qcollStatus qcollMpiCommLocalSize(const qcollMpiComm *comm, int32_t *local_size);
/* "shm" or "mpi" (NULL for a NULL comm). */
const char *qcollMpiCommTransport(const qcollMpiComm *comm);
/* Bytes of the staging window per rank (HCCL_BUFFSIZE MB). */
qcollStatus qcollMpiCommWindowBytes(const qcollMpiComm *comm, uint64_t *bytes);

#ifdef __cplusplus
}
#endif
#endif /* QCOLL_QCOLL_MPI_H */
