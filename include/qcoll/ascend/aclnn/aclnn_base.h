/* aclnn base types (vendor's aclnn/aclnn_base.h), emulated by qcoll (docs/ascend.md). */
#ifndef QCOLL_ASCEND_ACLNN_ACLNN_BASE_H
#define QCOLL_ASCEND_ACLNN_ACLNN_BASE_H

#include <stdint.h>

#include "acl/acl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t aclnnStatus;
#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000
#define ACLNN_ERR_INNER_INFERSHAPE_ERROR 561001
#define ACLNN_ERR_INNER_TILING_ERROR 561002
#define ACLNN_ERR_INNER_FIND_KERNEL_ERROR 561003
#define ACLNN_ERR_INNER_CREATE_EXECUTOR 561101
#define ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR 561102
#define ACLNN_ERR_INNER_NULLPTR 561103

typedef struct aclTensor aclTensor;
typedef struct aclOpExecutor aclOpExecutor;

/* As the vendor's: view shape, dtype, strides and offset (elements), format, storage shape,
 * data (not owned). Any dtype and format value is accepted here; the operators decide.
 * NULL on bad arguments (more than 8 dimensions, a negative one, offset < 0). */
aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData);
aclnnStatus aclDestroyTensor(const aclTensor *tensor);

#ifdef __cplusplus
}
#endif
#endif /* QCOLL_ASCEND_ACLNN_ACLNN_BASE_H */
