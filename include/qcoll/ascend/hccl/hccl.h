/* HCCL communicators (vendor's hccl/hccl.h), emulated by qcoll (docs/ascend.md): a
 * communicator of HcclCommInitAll is a qcoll thread group (one thread per device); one of
 * HcclCommInitRootInfo is a qcoll communicator of processes on one host (the root info
 * carries a qcoll unique id). */
#ifndef QCOLL_ASCEND_HCCL_HCCL_H
#define QCOLL_ASCEND_HCCL_HCCL_H

#include <stdint.h>

#include "acl/acl.h"
#include "hccl/hccl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ndev communicators of one process, rank i on device devices[i] (distinct device ids).
 * Every comms[i] has the same name; an operator's group resolves to the rank of the calling
 * thread's current device. */
HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms);
/* A fresh root info; this process serves its rendezvous until every rank has joined. */
HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo);
/* Called once by each rank 0..nRanks-1 (processes, or threads, of one host). */
HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, HcclComm *comm);
/* commName: at least HCCL_COMM_NAME_MAX_LENGTH (128) bytes. */
HcclResult HcclGetCommName(HcclComm comm, char *commName);
HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize);
HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank);
HcclResult HcclCommDestroy(HcclComm comm);

#ifdef __cplusplus
}
#endif
#endif /* QCOLL_ASCEND_HCCL_HCCL_H */
