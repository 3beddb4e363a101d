/* QuantReduceScatter with the C API: 4 pthread ranks, INT8 x with fp32 scales (KG mode). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "qcoll/qcoll.h"

enum { RANKS = 4, BS = 8, H = 1024 };
static qcollThreadGroup *group;
static int8_t x[RANKS][BS * H];
static float scales[RANKS][BS * H / 128];
static float out[RANKS][BS / RANKS * H];
static qcollStatus status[RANKS];

static void *rank_main(void *arg) {
  int r = (int)(size_t)arg;
  int64_t xd[2] = {BS, H}, sd[2] = {BS, H / 128}, od[2] = {BS / RANKS, H};
  qcollThreadGroupJoin(group, r);
  qcollTensor *tx = qcollCreateContiguousTensor(xd, 2, QCOLL_DT_INT8, x[r]);
  qcollTensor *ts = qcollCreateContiguousTensor(sd, 2, QCOLL_DT_FLOAT, scales[r]);
  qcollTensor *to = qcollCreateContiguousTensor(od, 2, QCOLL_DT_FLOAT, out[r]);
  uint64_t ws = 0;
  qcollOpExecutor *exec = NULL;
  status[r] = qcollQuantReduceScatterGetWorkspaceSize(tx, ts, "tp", "sum", to, &ws, &exec);
  if (status[r] == QCOLL_SUCCESS) status[r] = qcollQuantReduceScatter(NULL, 0, exec, NULL); /* ws is 0 for threads */
  if (status[r] != QCOLL_SUCCESS) printf("rank %d: %s: %s\n", r, qcollStatusName(status[r]), qcollGetRecentErrMsg());
  qcollDestroyTensor(tx);
  qcollDestroyTensor(ts);
  qcollDestroyTensor(to);
  qcollThreadGroupLeave(group);
  return NULL;
}

int main(void) {
  /* Known inputs: rank k's x is (k + 1) everywhere, its scales 0.5; so every output element
   * is 0.5 * (1 + 2 + 3 + 4) = 5. Row 3, column 7 of rank 1's x is -100 instead. */
  for (int k = 0; k < RANKS; ++k) {
    memset(x[k], k + 1, sizeof x[k]);
    for (int g = 0; g < BS * H / 128; ++g) scales[k][g] = 0.5f;
  }
  x[1][3 * H + 7] = -100; /* row 3 belongs to rank 1's block (rows 2..3): out[1][1, 7] */
  pthread_t t[RANKS];
  if (qcollThreadGroupCreate("tp", RANKS, &group) != QCOLL_SUCCESS) return 1;
  for (int r = 0; r < RANKS; ++r) pthread_create(&t[r], NULL, rank_main, (void *)(size_t)r);
  for (int r = 0; r < RANKS; ++r) pthread_join(t[r], NULL);
  qcollThreadGroupDestroy(group);
  for (int r = 0; r < RANKS; ++r)
    if (status[r] != QCOLL_SUCCESS) return 1;
  float special = out[1][1 * H + 7], plain = out[2][0];
  printf("reduce-scatter over %d ranks: out[1][1,7] = %g (expected %g), out[2][0,0] = %g (expected 5)\n", RANKS,
         special, 0.5 * (1 - 100 + 3 + 4), plain);
  return (special == 0.5f * (1 - 100 + 3 + 4) && plain == 5.0f) ? 0 : 1;
}
