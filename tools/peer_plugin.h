/* The C interface between `qcoll bench` and a peer plugin: a shared object, built apart from
 * qcoll against a peer library's own headers (bench/install_peers.sh builds the oneCCL one,
 * bench/peers/ccl_peer.cpp), that `qcoll bench` loads at run time with dlopen. So qcoll
 * builds and tests without the peer installed, and a missing peer is reported as
 * unavailable, not as an error.
 *
 * The plugin exports `qcoll_peer_plugin`, which returns its table of functions. Every
 * function returns 0 on success, or non-zero with a message in last_error(). The
 * collectives are blocking and collective over the `size` ranks given to init().
 */
#ifndef QCOLL_TOOLS_PEER_PLUGIN_H
#define QCOLL_TOOLS_PEER_PLUGIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QCOLL_PEER_PLUGIN_ABI 1
#define QCOLL_PEER_PLUGIN_SYMBOL "qcoll_peer_plugin"
#define QCOLL_PEER_ADDRESS_MAX 4096

/* Element types of the collectives: a plain sum of fp32 or bf16 (bit patterns) data. */
enum { QCOLL_PEER_FP32 = 0, QCOLL_PEER_BF16 = 1 };

typedef struct qcoll_peer_plugin_v1 {
  int abi;                      /* QCOLL_PEER_PLUGIN_ABI */
  const char *name;             /* "oneccl": the peers are named <name>-fp32, <name>-bf16 */
  const char *(*version)(void); /* the peer library's version, e.g. "2022.2.0" */
  /* On rank 0, before init: the rendezvous address the other ranks pass to init
   * (at most QCOLL_PEER_ADDRESS_MAX bytes, written to buf, its length to *len). */
  int (*main_address)(void *buf, size_t cap, size_t *len);
  /* Collective: joins rank `rank` of `size` ranks, rendezvous at `address`. */
  int (*init)(int rank, int size, const void *address, size_t len);
  /* in: size*recv_count elements; out: recv_count (rank r gets block r of the sum). */
  int (*reduce_scatter)(const void *in, void *out, size_t recv_count, int dtype);
  /* in, out: count elements; every rank gets the whole sum. */
  int (*all_reduce)(const void *in, void *out, size_t count, int dtype);
  const char *(*last_error)(void);
  void (*finalize)(void); /* after the last collective; init is not called again */
} qcoll_peer_plugin_v1;

typedef const qcoll_peer_plugin_v1 *(*qcoll_peer_plugin_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* QCOLL_TOOLS_PEER_PLUGIN_H */
