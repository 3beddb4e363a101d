/* aclnnQuantAllReduce (vendor's aclnnop/aclnn_quant_all_reduce.h), computed by qcoll on the host
 * (docs/ascend.md; numerics: docs/contract.md). */
#ifndef QCOLL_ASCEND_ACLNNOP_ACLNN_QUANT_ALL_REDUCE_H
#define QCOLL_ASCEND_ACLNNOP_ACLNN_QUANT_ALL_REDUCE_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks the arguments in the vendor's order and builds an executor (docs/ascend.md). */
aclnnStatus aclnnQuantAllReduceGetWorkspaceSize(const aclTensor *x, const aclTensor *scales, const char *group,
                                                const char *reduceOp, aclTensor *output, uint64_t *workspaceSize,
                                                aclOpExecutor **executor);
/* Runs the executor; on a stream from aclrtCreateStream it is enqueued (aclrtSynchronizeStream
 * reports its outcome). */
aclnnStatus aclnnQuantAllReduce(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif
#endif
