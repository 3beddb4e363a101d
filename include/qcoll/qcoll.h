/* qcoll: quantized reduce-scatter and all-reduce (C API).
 *
 * Mirrors aclnnQuantReduceScatter / aclnnQuantAllReduce: a two-phase call pair per operator.
 * Phase one (…GetWorkspaceSize) validates every argument (contract.md §validation, in order) and builds a
 * single-use executor; phase two runs it and releases the executor whatever the outcome.
 * An executor that is never run must be released with qcollDestroyExecutor.
 * Every non-zero status leaves a message for the calling thread: qcollGetRecentErrMsg().
 */
#ifndef QCOLL_QCOLL_H
#define QCOLL_QCOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t qcollStatus;
#define QCOLL_SUCCESS 0
#define QCOLL_PARAM_NULLPTR 161001
#define QCOLL_PARAM_INVALID 161002
#define QCOLL_RUNTIME_ERROR 361001
#define QCOLL_INNER_ERROR 561000

/* The enums below take every int32_t value in C++ as in C (a fixed underlying type), so a
 * value outside them, e.g. from a vendor enum, is well defined and refused by phase one. */
#ifdef __cplusplus
#define QCOLL_ENUM_INT32 : int32_t
#else
#define QCOLL_ENUM_INT32
#endif

/* Values follow ACL's aclDataType where it has them. */
typedef enum QCOLL_ENUM_INT32 {
  QCOLL_DT_FLOAT = 0,
  QCOLL_DT_FLOAT16 = 1,
  QCOLL_DT_INT8 = 2,
  QCOLL_DT_UINT8 = 4,
  QCOLL_DT_BFLOAT16 = 27,
  QCOLL_DT_HIFLOAT8 = 34,
  QCOLL_DT_FLOAT8_E5M2 = 35,
  QCOLL_DT_FLOAT8_E4M3FN = 36,
  QCOLL_DT_FLOAT8_E8M0 = 37,
  /* 4-bit floats, two per byte, the even flat index in bits 0-3. Taken only under the
   * extended contract (docs/contract.md §ext-fp4); the vendor contract refuses them. */
  QCOLL_DT_FLOAT4_E2M1 = 40,
  QCOLL_DT_FLOAT4_E1M2 = 41
} qcollDataType;

typedef enum QCOLL_ENUM_INT32 { QCOLL_FORMAT_ND = 2 } qcollFormat; /* ACL_FORMAT_ND is 2 */

typedef struct qcollTensor qcollTensor;
typedef struct qcollOpExecutor qcollOpExecutor;
/* NULL: run synchronously; else a stream from qcollStreamCreate (see Streams below). */
typedef void *qcollStream;

/* Like aclCreateTensor: view shape, dtype, strides (elements), offset (elements), format,
 * storage shape, data pointer. The tensor does not own the data. Returns NULL on bad
 * arguments (message in qcollGetRecentErrMsg). At most 8 dimensions. */
qcollTensor *qcollCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, qcollDataType dataType,
                               const int64_t *stride, int64_t offset, qcollFormat format, const int64_t *storageDims,
                               uint64_t storageDimsNum, void *tensorData);
/* Convenience: contiguous ND tensor of the given shape. */
qcollTensor *qcollCreateContiguousTensor(const int64_t *dims, uint64_t dimsNum, qcollDataType dataType,
                                         void *tensorData);
qcollStatus qcollDestroyTensor(const qcollTensor *tensor);

/* ---- Communicators -------------------------------------------------------------------
 * A communicator has a size, a rank and a name (< 128 chars). The `group` argument of the
 * operators is resolved to a communicator the calling thread (in-process threads) or the
 * calling process (shared memory / MPI, see qcoll_mpi.h) registered earlier. */
typedef struct qcollThreadGroup qcollThreadGroup;

/* Creates an in-process group of nranks threads named `name` (1 <= nranks <= 1024; the
 * operators need 2, 4 or 8, under QCOLL_CONTRACT=extended 2 to 1024). Names must be unique among live thread groups. */
qcollStatus qcollThreadGroupCreate(const char *name, int32_t nranks, qcollThreadGroup **group);
/* Called by the thread that acts as `rank`: registers the group's name for this thread. */
qcollStatus qcollThreadGroupJoin(qcollThreadGroup *group, int32_t rank);
/* Unregisters the name for the calling thread. */
qcollStatus qcollThreadGroupLeave(qcollThreadGroup *group);
/* Destroys the group once no thread is inside an operator call on it. */
qcollStatus qcollThreadGroupDestroy(qcollThreadGroup *group);

/* ---- Communicators of processes without MPI: a unique id (docs/api.md §Bootstrap) ------
 * As ncclGetUniqueId / ncclCommInitRank: one process makes an id, passes it to the ranks by
 * any means (a file, an environment variable through qcollUniqueIdToHex, a store), and each
 * rank joins with qcollCommInitRank. The ranks must run on one host (shared memory, up to
 * HCCL_BUFFSIZE MB per rank in /dev/shm reserved as the calls need it, no name left there once
 * every rank has joined). The process that
 * made the id serves the rendezvous: it must stay alive until every rank has joined. */
#define QCOLL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[QCOLL_UNIQUE_ID_BYTES];
} qcollUniqueId;
/* Characters of an id in hex (no NUL): 256. */
#define QCOLL_UNIQUE_ID_HEX_CHARS (2 * QCOLL_UNIQUE_ID_BYTES)

typedef struct qcollComm qcollComm;

/* A fresh id; this process serves its rendezvous (a background thread and an abstract Unix
 * socket, nothing in the file system) until it is over, or until the process exits. */
qcollStatus qcollGetUniqueId(qcollUniqueId *id);
/* Writes the id as 256 lowercase hex digits and a NUL; hexSize must be at least 257. */
qcollStatus qcollUniqueIdToHex(const qcollUniqueId *id, char *hex, size_t hexSize);
/* Reads 256 hex digits (either case) back into an id. */
qcollStatus qcollUniqueIdFromHex(const char *hex, qcollUniqueId *id);

/* Called once by every rank 0..nranks-1 (1 <= nranks <= 1024; the operators need 2, 4 or 8,
 * under QCOLL_CONTRACT=extended 2 to 1024),
 * each with the same id, nranks and name; returns once every rank has joined, or with an
 * error within QCOLL_TIMEOUT_S (default 60 s): PARAM_INVALID for a bad rank, nranks or name,
 * a rank joining twice, ranks that disagree on nranks, name or HCCL_BUFFSIZE, or a stale id
 * (already used, or its creator has exited); RUNTIME_ERROR on the other ranks, and when a
 * rank does not come in time. name: as a group name (< 128 characters), the same on every
 * rank; NULL gives "uid-" and 32 hex digits of the id. On success the name is registered for
 * the calling process (the operators' `group`); when several ranks of the communicator are
 * threads of one process, for the calling thread only. */
qcollStatus qcollCommInitRank(const char *name, int32_t nranks, const qcollUniqueId *id, int32_t rank,
                              qcollComm **comm);
/* Unregisters the name and releases the communicator (never waits for peers; calls already
 * enqueued on a stream keep it alive until they finish). A communicator registered for a
 * thread is destroyed on that thread. NULL is accepted. */
qcollStatus qcollCommDestroy(qcollComm *comm);
qcollStatus qcollCommRank(const qcollComm *comm, int32_t *rank);
qcollStatus qcollCommSize(const qcollComm *comm, int32_t *size);
/* The name the operators resolve (NULL for a NULL comm); valid until qcollCommDestroy. */
const char *qcollCommName(const qcollComm *comm);

/* ---- Streams (docs/api.md §Streams) ----------------------------------------------------
 * Phase two of an operator on a stream enqueues the call and returns at once: the calls of
 * one stream run in order on the stream's own thread, different streams run concurrently.
 * x, scales, the output and the workspace must stay valid until the call finished (a
 * synchronize returned). A failure is reported by the next synchronize (or the destroy);
 * the outputs of a failed call are left untouched. Calls on one communicator rank must be
 * ordered: put them on one stream (or synchronize in between). */
qcollStatus qcollStreamCreate(qcollStream *stream);
/* Waits until every call enqueued on the stream before this one has finished, at most
 * timeoutMs milliseconds (-1: no limit; 0: just look). Returns the first failure of those
 * calls since the last synchronize (status and message; later ones are counted in it), or
 * SUCCESS. When the time runs out: RUNTIME_ERROR "stream: synchronize timed out ..."; the
 * calls go on and their failures stay for the next synchronize. A NULL stream has nothing
 * pending. */
qcollStatus qcollStreamSynchronize(qcollStream stream, int32_t timeoutMs);
/* As qcollStreamSynchronize; *timedOut (if non-NULL) is 1 when the time ran out, else 0. */
qcollStatus qcollStreamSynchronizeEx(qcollStream stream, int32_t timeoutMs, int32_t *timedOut);
/* Waits for every call enqueued (with no limit: each call is bounded by QCOLL_TIMEOUT_S),
 * then releases the stream and its thread; returns the failure a synchronize would have
 * reported (the stream is released either way). NULL is accepted. */
qcollStatus qcollStreamDestroy(qcollStream stream);

/* ---- Communicators over the caller's own collectives ----------------------------------
 * For a program that already has a communication library (torch.distributed, gloo, ...):
 * the bytes move through two functions the caller supplies, each collective over the
 * caller's group of nranks processes; qcoll agrees on the call, sums with its own kernels
 * and stages the output, so the operators give the same bits as on every other transport.
 *
 *   allGather(ctx, send, recv, bytes, ...)  send: `bytes` bytes; recv: nranks * bytes, the
 *                                           ranks' contributions in rank order
 *   allToAll(ctx, send, recv, bytes, ...)   send: nranks parts of `bytes`, part k for rank k;
 *                                           recv: nranks parts, part k from rank k
 *
 * `timeoutMs` (>= 1) is how long the call may wait for its peers (what is left of
 * QCOLL_TIMEOUT_S). On failure a function returns non-zero and may write a NUL-terminated
 * message of at most errBytes bytes to err; the operator then returns QCOLL_RUNTIME_ERROR
 * with it, and the communicator is broken (every later call fails: destroy it). The
 * buffers are the communicator's own, never the user's tensors; after a failure they stay
 * allocated for the life of the process. Every rank makes the same calls in the same order
 * (operators on one communicator from one thread at a time).
 */
typedef struct {
  void *ctx;
  qcollStatus (*allGather)(void *ctx, const void *send, void *recv, uint64_t bytes, int64_t timeoutMs, char *err,
                           uint64_t errBytes);
  qcollStatus (*allToAll)(void *ctx, const void *send, void *recv, uint64_t bytes, int64_t timeoutMs, char *err,
                          uint64_t errBytes);
  void (*release)(void *ctx); /* called once when the communicator is gone; may be NULL */
} qcollCollectives;

/* Rank `rank` of `nranks` (1..1024): registers `name` for the calling process (the operators
 * accept it as their `group`). Local: nothing is sent. The functions are copied; on failure
 * `release` is not called. Destroyed by qcollCommDestroy (which calls `release` once no
 * operator uses the communicator any more); qcollCommRank/Size/Name apply. */
qcollStatus qcollCommInitExternal(const char *name, int32_t nranks, int32_t rank, const qcollCollectives *collectives,
                                  qcollComm **comm);

/* ---- Operators (contract.md §api) ----------------------------------------------------- */
qcollStatus qcollQuantReduceScatterGetWorkspaceSize(const qcollTensor *x, const qcollTensor *scales, const char *group,
                                                    const char *reduceOp, qcollTensor *output, uint64_t *workspaceSize,
                                                    qcollOpExecutor **executor);
qcollStatus qcollQuantReduceScatter(void *workspace, uint64_t workspaceSize, qcollOpExecutor *executor,
                                    qcollStream stream);

qcollStatus qcollQuantAllReduceGetWorkspaceSize(const qcollTensor *x, const qcollTensor *scales, const char *group,
                                                const char *reduceOp, qcollTensor *output, uint64_t *workspaceSize,
                                                qcollOpExecutor **executor);
qcollStatus qcollQuantAllReduce(void *workspace, uint64_t workspaceSize, qcollOpExecutor *executor, qcollStream stream);

/* ---- Fused operators (contract.md §fused) ------------------------------------------------
 * Quantize a float tensor and reduce in one call: the rows each rank sends are quantized
 * straight into the transport's buffers, chunk by chunk, while earlier chunks move. The
 * result has the bits of quantizing `input` with the public quantizers (qcoll/quant.hpp,
 * the mode `config` names) and passing that to qcollQuantReduceScatter / qcollQuantAllReduce.
 * `input` is FLOAT, FLOAT16 or BFLOAT16, (BS, H) or (B, S, H), with the shape rules and the
 * collective safety of the quantized operators; every rank passes the same config. */
typedef struct {
  qcollDataType xDtype;      /* INT8, HIFLOAT8, FLOAT8_E4M3FN, FLOAT8_E5M2 (extended: FLOAT4_E2M1, FLOAT4_E1M2) */
  qcollDataType scalesDtype; /* FLOAT (KG, group 128) or FLOAT8_E8M0 (MX, group 32) */
  float hif8Target;          /* HiF8 KG target (scale = amax / target); 0 = the default */
} qcollQuantConfig;

qcollStatus qcollQuantizeReduceScatterGetWorkspaceSize(const qcollTensor *input, const qcollQuantConfig *config,
                                                       const char *group, const char *reduceOp, qcollTensor *output,
                                                       uint64_t *workspaceSize, qcollOpExecutor **executor);
qcollStatus qcollQuantizeReduceScatter(void *workspace, uint64_t workspaceSize, qcollOpExecutor *executor,
                                       qcollStream stream);

qcollStatus qcollQuantizeAllReduceGetWorkspaceSize(const qcollTensor *input, const qcollQuantConfig *config,
                                                   const char *group, const char *reduceOp, qcollTensor *output,
                                                   uint64_t *workspaceSize, qcollOpExecutor **executor);
qcollStatus qcollQuantizeAllReduce(void *workspace, uint64_t workspaceSize, qcollOpExecutor *executor,
                                   qcollStream stream);

/* Releases an executor that will not be run. Its call still takes part in the group's
 * agreement, as a rank whose checks failed does: the peers' calls fail at once with
 * RUNTIME_ERROR, and this returns once they arrived (at most QCOLL_TIMEOUT_S). */
qcollStatus qcollDestroyExecutor(qcollOpExecutor *executor);

/* Message of the last non-zero status returned to the calling thread ("" if none). */
const char *qcollGetRecentErrMsg(void);
/* "SUCCESS", "PARAM_NULLPTR", "PARAM_INVALID", "RUNTIME_ERROR", "INNER_ERROR" or "UNKNOWN". */
const char *qcollStatusName(qcollStatus status);
/* The library's version, "MAJOR.MINOR.PATCH" (the repository's VERSION file; the same as
 * the CMake package's, the Python package's and `qcoll --version`). A static string. */
const char *qcollGetVersion(void);

/* The communicator `group` as the calling thread sees it: its rank, size and transport
 * ("threads", "shm" or "mpi"; a static string). Any out-pointer may be null. Returns
 * PARAM_NULLPTR for a null name and PARAM_INVALID when no communicator of that name is
 * registered for the calling thread or process. */
qcollStatus qcollGroupInfo(const char *group, int32_t *rank, int32_t *size, const char **transport);

/* ---- The contract (docs/contract.md §ext, §settings QCOLL_CONTRACT) ---------------------
 * VENDOR is the vendor's contract, the default; EXTENDED adds the 4-bit x dtypes and any
 * rank count in [2, 1024]. FROM_ENV: no choice of the program, QCOLL_CONTRACT decides. */
typedef enum QCOLL_ENUM_INT32 {
  QCOLL_CONTRACT_FROM_ENV = -1,
  QCOLL_CONTRACT_VENDOR = 0,
  QCOLL_CONTRACT_EXTENDED = 1
} qcollContract;
/* Chooses the contract of this process's later calls, taking precedence over
 * QCOLL_CONTRACT (FROM_ENV, the initial state, returns the choice to it). Ranks must
 * agree, as on QCOLL_CONTRACT. PARAM_INVALID for another value (nothing changes). */
qcollStatus qcollSetContract(qcollContract contract);
/* The contract a call made now keeps: the program's choice, else QCOLL_CONTRACT (never
 * FROM_ENV). PARAM_NULLPTR for a null pointer; PARAM_INVALID naming QCOLL_CONTRACT and the
 * text seen for a bad value of it (*contract is then VENDOR). */
qcollStatus qcollGetContract(qcollContract *contract);

/* The path the dequantize-and-reduce kernels take on this CPU: "scalar" (QCOLL_KERNEL=scalar)
 * or the SIMD target's name ("AVX3_DL", "AVX3", "AVX2", "NEON", ...). A static string. */
const char *qcollKernelTarget(void);

#ifdef __cplusplus
}
#endif
#endif /* QCOLL_QCOLL_H */
