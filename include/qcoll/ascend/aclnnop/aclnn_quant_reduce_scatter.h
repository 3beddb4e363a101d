/* aclnnQuantReduceScatter (vendor's aclnnop/aclnn_quant_reduce_scatter.h), computed by qcoll on the host
 * (docs/ascend.md; numerics: docs/contract.md). */
#ifndef QCOLL_ASCEND_ACLNNOP_ACLNN_QUANT_REDUCE_SCATTER_H
#define QCOLL_ASCEND_ACLNNOP_ACLNN_QUANT_REDUCE_SCATTER_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks the arguments in the vendor's order and builds an executor (docs/ascend.md). */
aclnnStatus aclnnQuantReduceScatterGetWorkspaceSize(const aclTensor *x, const aclTensor *scales, const char *group,
                                                    const char *reduceOp, aclTensor *output, uint64_t *workspaceSize,
                                                    aclOpExecutor **executor);
/* Runs the executor; on a stream from aclrtCreateStream it is enqueued (aclrtSynchronizeStream
 * reports its outcome). */
aclnnStatus aclnnQuantReduceScatter(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif
#endif
