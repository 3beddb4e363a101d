"""Started as a subprocess by test_comm_streams.py, the way a launcher (torchrun) starts
ranks: the id comes as hex in QCOLL_UID, the rank and size in QCOLL_RANK / QCOLL_NRANKS.

Mode "run": joins, runs both operators (synchronously and on a stream) and checks its output
bit for bit against the same calls over the thread transport (a ThreadGroup inside this
process) and against the numpy reference; prints 'rank R: N checks ok'.
Mode "join": joins and prints 'OK' or 'ERROR <status name> <seconds>: <message>'."""

import os
import sys
import time

import numpy as np

import qcoll
from reference import cast_output, random_rank_inputs, reduce_rows

H = 1024
mode = sys.argv[1]
rank, n = int(os.environ["QCOLL_RANK"]), int(os.environ["QCOLL_NRANKS"])
uid = qcoll.UniqueId(os.environ["QCOLL_UID"])
t0 = time.monotonic()
try:
    g = qcoll.init_comm(os.environ.get("QCOLL_NAME", "py-uid"), n, uid, rank)
except qcoll.Error as e:
    print(f"ERROR {e.status_name} {time.monotonic() - t0:.2f}: {e.message}", flush=True)
    sys.exit(0)
if mode == "join":
    print("OK", flush=True)
    g.destroy()
    sys.exit(0)

assert (g.rank, g.size, g.transport) == (rank, n, "shm"), (g.rank, g.size)
rng = np.random.default_rng(99)
checks = 0
with g, qcoll.Stream() as stream:
    for x_dtype, scales_dtype, out_dtype in [("int8", "float", "bfloat16"), ("hifloat8", "float", "float16"),
                                             ("float8_e4m3fn", "float8_e8m0", "float")]:
        rows = 2 * n
        xs, ss = random_rank_inputs(rng, n, rows, H, scales_dtype)
        kw = dict(x_dtype=x_dtype, scales_dtype=scales_dtype, output_dtype=out_dtype)
        for op in (qcoll.quant_reduce_scatter, qcoll.quant_all_reduce):
            mine = np.asarray(op(xs[rank], ss[rank], g, **kw))
            work = op(xs[rank], ss[rank], g, stream=stream, **kw)
            threads = qcoll.run_ranks(n, lambda r, tg: np.asarray(op(xs[r], ss[r], tg, **kw)))[rank]
            block = slice(rank * 2, rank * 2 + 2) if op is qcoll.quant_reduce_scatter else slice(0, rows)
            want = cast_output(reduce_rows(xs, ss, x_dtype, scales_dtype, block, H), out_dtype)
            on_stream = np.asarray(work.wait())
            for name, got in (("sync", mine), ("stream", on_stream)):
                if got.tobytes() != threads.tobytes():
                    sys.exit(f"rank {rank}: {op.__name__} {x_dtype} {name}: differs from the thread transport")
                if got.tobytes() != want.tobytes():
                    sys.exit(f"rank {rank}: {op.__name__} {x_dtype} {name}: differs from the reference")
                checks += 1
print(f"rank {rank}: {checks} checks ok", flush=True)
