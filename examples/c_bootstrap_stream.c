/* Four processes, no MPI: a unique id, qcollCommInitRank in each process, then
 * QuantReduceScatter and QuantAllReduce enqueued on a stream and synchronized.
 *
 * The parent makes the id (and so serves the rendezvous), passes it to its children as hex
 * in an environment variable, the way a launcher would, and waits for them. Each child is one
 * rank: rank k's x is (k + 1) everywhere with scales 0.5, so every output element is
 * 0.5 * (1 + 2 + 3 + 4) = 5, except that rank 1 puts -100 at row 3, column 7. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qcoll/qcoll.h"

enum { RANKS = 4, BS = 8, H = 1024 };

#define CHECK(call)                                                                                        \
  do {                                                                                                     \
    qcollStatus st_ = (call);                                                                              \
    if (st_ != QCOLL_SUCCESS) {                                                                            \
      fprintf(stderr, "rank %d: %s: %s: %s\n", rank, #call, qcollStatusName(st_), qcollGetRecentErrMsg()); \
      return 1;                                                                                            \
    }                                                                                                      \
  } while (0)

static int8_t x[BS * H];
static float scales[BS * H / 128];
static float rs_out[BS / RANKS * H], ar_out[BS * H];

static int run_rank(int rank) {
  /* The id, as a launcher would hand it over. */
  qcollUniqueId id;
  CHECK(qcollUniqueIdFromHex(getenv("QCOLL_UID"), &id));
  qcollComm *comm = NULL;
  CHECK(qcollCommInitRank("tp", RANKS, &id, rank, &comm)); /* returns once all 4 joined */

  memset(x, rank + 1, sizeof x);
  for (int g = 0; g < BS * H / 128; ++g) scales[g] = 0.5f;
  if (rank == 1) x[3 * H + 7] = -100; /* row 3: rank 1's block of the reduce-scatter (rows 2..3) */
  int64_t xd[2] = {BS, H}, sd[2] = {BS, H / 128}, rd[2] = {BS / RANKS, H};
  qcollTensor *tx = qcollCreateContiguousTensor(xd, 2, QCOLL_DT_INT8, x);
  qcollTensor *ts = qcollCreateContiguousTensor(sd, 2, QCOLL_DT_FLOAT, scales);
  qcollTensor *trs = qcollCreateContiguousTensor(rd, 2, QCOLL_DT_FLOAT, rs_out);
  qcollTensor *tar = qcollCreateContiguousTensor(xd, 2, QCOLL_DT_FLOAT, ar_out);

  qcollStream stream = NULL;
  CHECK(qcollStreamCreate(&stream));
  /* Phase one checks the call; phase two on the stream enqueues it and returns at once. The
   * workspaces (shared memory stages each result) must live until the synchronize. */
  uint64_t ws1 = 0, ws2 = 0;
  qcollOpExecutor *e1 = NULL, *e2 = NULL;
  CHECK(qcollQuantReduceScatterGetWorkspaceSize(tx, ts, "tp", "sum", trs, &ws1, &e1));
  void *w1 = malloc(ws1);
  CHECK(qcollQuantReduceScatter(w1, ws1, e1, stream));
  CHECK(qcollQuantAllReduceGetWorkspaceSize(tx, ts, "tp", "sum", tar, &ws2, &e2));
  void *w2 = malloc(ws2);
  CHECK(qcollQuantAllReduce(w2, ws2, e2, stream));
  /* ... this rank could compute something else here ... */
  CHECK(qcollStreamSynchronize(stream, -1)); /* both calls done (or their failure here) */
  CHECK(qcollStreamDestroy(stream));
  free(w1);
  free(w2);
  qcollDestroyTensor(tx);
  qcollDestroyTensor(ts);
  qcollDestroyTensor(trs);
  qcollDestroyTensor(tar);
  CHECK(qcollCommDestroy(comm));

  const float special = 0.5f * (1 - 100 + 3 + 4);
  int bad = 0;
  for (int i = 0; i < BS / RANKS * H; ++i) {
    const float want = (rank == 1 && i == 1 * H + 7) ? special : 5.0f;
    if (rs_out[i] != want) ++bad;
  }
  for (int i = 0; i < BS * H; ++i)
    if (ar_out[i] != (i == 3 * H + 7 ? special : 5.0f)) ++bad;
  if (rank == 1)
    printf("rank 1: reduce-scatter out[1,7] = %g, all-reduce out[3,7] = %g (expected %g), elsewhere %g\n",
           rs_out[1 * H + 7], ar_out[3 * H + 7], special, ar_out[0]);
  fflush(stdout); /* the child leaves with _exit */
  return bad == 0 ? 0 : 1;
}

int main(void) {
  int rank = -1; /* the parent, for CHECK's messages */
  /* Small shared-memory windows (HCCL_BUFFSIZE MB per rank; the default is 200). */
  setenv("HCCL_BUFFSIZE", "8", 0);
  qcollUniqueId id;
  CHECK(qcollGetUniqueId(&id)); /* this process serves the rendezvous: stay alive until all joined */
  char hex[QCOLL_UNIQUE_ID_HEX_CHARS + 1];
  CHECK(qcollUniqueIdToHex(&id, hex, sizeof hex));
  setenv("QCOLL_UID", hex, 1);
  fflush(stdout);
  pid_t pids[RANKS];
  for (int r = 0; r < RANKS; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) _exit(run_rank(r));
  }
  int failed = 0;
  for (int r = 0; r < RANKS; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  printf("%d ranks over shared memory, no MPI: %s\n", RANKS, failed ? "FAILED" : "all results right");
  return failed ? 1 : 0;
}
