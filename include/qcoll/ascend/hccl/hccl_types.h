/* HCCL types (vendor's hccl/hccl_types.h), emulated by qcoll (docs/ascend.md). */
#ifndef QCOLL_ASCEND_HCCL_HCCL_TYPES_H
#define QCOLL_ASCEND_HCCL_HCCL_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  HCCL_SUCCESS = 0,
  HCCL_E_PARA = 1,
  HCCL_E_PTR = 2,
  HCCL_E_MEMORY = 3,
  HCCL_E_INTERNAL = 4,
  HCCL_E_NOT_SUPPORT = 5,
  HCCL_E_NOT_FOUND = 6,
  HCCL_E_UNAVAIL = 7,
  HCCL_E_SYSCALL = 8,
  HCCL_E_TIMEOUT = 9,
  HCCL_E_OPEN_FILE_FAILURE = 10,
  HCCL_E_TCP_CONNECT = 11,
  HCCL_E_ROCE_CONNECT = 12,
  HCCL_E_TCP_TRANSFER = 13,
  HCCL_E_ROCE_TRANSFER = 14,
  HCCL_E_RUNTIME = 15,
  HCCL_E_DRV = 16,
  HCCL_E_PROFILING = 17,
  HCCL_E_CCE = 18,
  HCCL_E_NETWORK = 19,
  HCCL_E_AGAIN = 20,
  HCCL_E_REMOTE = 21,
  HCCL_E_SUSPENDING = 22,
  HCCL_E_RESERVED
} HcclResult;

typedef void *HcclComm;

#define HCCL_ROOT_INFO_BYTES 4108
typedef struct HcclRootInfoDef {
  char internal[HCCL_ROOT_INFO_BYTES];
} HcclRootInfo;

/* The buffer HcclGetCommName writes: names are shorter than 128 characters. */
#define HCCL_COMM_NAME_MAX_LENGTH 128

#ifdef __cplusplus
}
#endif
#endif /* QCOLL_ASCEND_HCCL_HCCL_TYPES_H */
