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

/* Values follow ACL's aclDataType where it has them. */
typedef enum {
  QCOLL_DT_FLOAT = 0,
  QCOLL_DT_FLOAT16 = 1,
  QCOLL_DT_INT8 = 2,
  QCOLL_DT_UINT8 = 4,
  QCOLL_DT_BFLOAT16 = 27,
  QCOLL_DT_HIFLOAT8 = 34,
  QCOLL_DT_FLOAT8_E5M2 = 35,
  QCOLL_DT_FLOAT8_E4M3FN = 36,
  QCOLL_DT_FLOAT8_E8M0 = 37
} qcollDataType;

typedef enum { QCOLL_FORMAT_ND = 2 } qcollFormat; /* ACL_FORMAT_ND is 2 */

typedef struct qcollTensor qcollTensor;
typedef struct qcollOpExecutor qcollOpExecutor;
typedef void *qcollStream; /* NULL: run synchronously (the only mode of this version) */

/* Like aclCreateTensor: view shape, dtype, strides (elements), offset (elements), format,
 * storage shape, data pointer. The tensor does not own the data. Returns NULL on bad
 * arguments (message in qcollGetRecentErrMsg). At most 8 dimensions. */
qcollTensor *qcollCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                               qcollDataType dataType, const int64_t *stride, int64_t offset,
                               qcollFormat format, const int64_t *storageDims,
                               uint64_t storageDimsNum, void *tensorData);
/* Convenience: contiguous ND tensor of the given shape. */
qcollTensor *qcollCreateContiguousTensor(const int64_t *dims, uint64_t dimsNum,
                                         qcollDataType dataType, void *tensorData);
qcollStatus qcollDestroyTensor(const qcollTensor *tensor);

/* ---- Communicators -------------------------------------------------------------------
 * A communicator has a size, a rank and a name (< 128 chars). The `group` argument of the
 * operators is resolved to a communicator the calling thread (in-process threads) or the
 * calling process (shared memory / MPI, see qcoll_mpi.h) registered earlier. */
typedef struct qcollThreadGroup qcollThreadGroup;

/* Creates an in-process group of nranks threads named `name` (1 <= nranks <= 1024; the
 * operators need 2, 4 or 8). Names must be unique among live thread groups. */
qcollStatus qcollThreadGroupCreate(const char *name, int32_t nranks, qcollThreadGroup **group);
/* Called by the thread that acts as `rank`: registers the group's name for this thread. */
qcollStatus qcollThreadGroupJoin(qcollThreadGroup *group, int32_t rank);
/* Unregisters the name for the calling thread. */
qcollStatus qcollThreadGroupLeave(qcollThreadGroup *group);
/* Destroys the group once no thread is inside an operator call on it. */
qcollStatus qcollThreadGroupDestroy(qcollThreadGroup *group);

/* ---- Operators (contract.md §api) ----------------------------------------------------- */
qcollStatus qcollQuantReduceScatterGetWorkspaceSize(const qcollTensor *x, const qcollTensor *scales,
                                                    const char *group, const char *reduceOp,
                                                    qcollTensor *output, uint64_t *workspaceSize,
                                                    qcollOpExecutor **executor);
qcollStatus qcollQuantReduceScatter(void *workspace, uint64_t workspaceSize,
                                    qcollOpExecutor *executor, qcollStream stream);

qcollStatus qcollQuantAllReduceGetWorkspaceSize(const qcollTensor *x, const qcollTensor *scales,
                                                const char *group, const char *reduceOp,
                                                qcollTensor *output, uint64_t *workspaceSize,
                                                qcollOpExecutor **executor);
qcollStatus qcollQuantAllReduce(void *workspace, uint64_t workspaceSize,
                                qcollOpExecutor *executor, qcollStream stream);

/* Releases an executor that will not be run. */
qcollStatus qcollDestroyExecutor(qcollOpExecutor *executor);

/* Message of the last non-zero status returned to the calling thread ("" if none). */
const char *qcollGetRecentErrMsg(void);
/* "SUCCESS", "PARAM_NULLPTR", "PARAM_INVALID", "RUNTIME_ERROR", "INNER_ERROR" or "UNKNOWN". */
const char *qcollStatusName(qcollStatus status);

/* The communicator `group` as the calling thread sees it: its rank, size and transport
 * ("threads", "shm" or "mpi"; a static string). Any out-pointer may be null. Returns
 * PARAM_NULLPTR for a null name and PARAM_INVALID when no communicator of that name is
 * registered for the calling thread or process. */
qcollStatus qcollGroupInfo(const char *group, int32_t *rank, int32_t *size, const char **transport);

/* The path the dequantize-and-reduce kernels take on this CPU: "scalar" (QCOLL_KERNEL=scalar)
 * or the SIMD target's name ("AVX3_DL", "AVX3", "AVX2", "NEON", ...). A static string. */
const char *qcollKernelTarget(void);

#ifdef __cplusplus
}
#endif
#endif /* QCOLL_QCOLL_H */
