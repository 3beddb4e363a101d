"""Run under mpirun by test_mpi.py: every rank builds all ranks' inputs from one seed, runs
both operators over an MpiGroup and checks its own output against the numpy reference.
Prints 'rank R: N checks ok' and exits 0, or exits 1 with the first mismatch."""

import sys

import numpy as np
from mpi4py import MPI

import qcoll
import qcoll.mpi
from reference import cast_output, random_rank_inputs, reduce_rows

H = 1024
comm = MPI.COMM_WORLD
rank, n = comm.Get_rank(), comm.Get_size()
rng = np.random.default_rng(1234)
checks = 0
try:
    qcoll.mpi.MpiGroup("not a communicator")
    sys.exit(f"rank {rank}: MpiGroup accepted a str")
except qcoll.InvalidParameterError:
    pass
with qcoll.mpi.MpiGroup(comm, "py-mpi") as g:
    assert (g.rank, g.size) == (rank, n)
    for x_dtype, scales_dtype, out_dtype in [("int8", "float", "bfloat16"),
                                             ("hifloat8", "float", "float16"),
                                             ("float8_e4m3fn", "float8_e8m0", "float")]:
        rows = 2 * n
        xs, ss = random_rank_inputs(rng, n, rows, H, scales_dtype)
        for op in ("rs", "ar"):
            fn = qcoll.quant_reduce_scatter if op == "rs" else qcoll.quant_all_reduce
            out = fn(xs[rank], ss[rank], g, output_dtype=out_dtype, x_dtype=x_dtype)
            block = slice(rank * 2, rank * 2 + 2) if op == "rs" else slice(0, rows)
            want = cast_output(reduce_rows(xs, ss, x_dtype, scales_dtype, block, H), out_dtype)
            got = np.asarray(out).view(want.dtype)
            if not np.array_equal(got, want):
                print(f"rank {rank}: {op} {x_dtype}/{scales_dtype}->{out_dtype} mismatch "
                      f"({int((got != want).sum())} elements)", flush=True)
                sys.exit(1)
            checks += 1
    if qcoll.get_contract() == "extended":
        # The 4-bit x of the extended contract (packed: every byte two valid codes): the
        # numpy reference and the thread transport in this process, bit for bit.
        for x_dtype, scales_dtype in [("float4_e2m1", "float8_e8m0"), ("float4_e1m2", "float")]:
            rows = 2 * n
            _, ss = random_rank_inputs(rng, n, rows, H, scales_dtype)
            xs = [rng.integers(0, 256, size=(rows, H // 2), dtype=np.uint8) for _ in range(n)]
            for op in ("rs", "ar"):
                fn = qcoll.quant_reduce_scatter if op == "rs" else qcoll.quant_all_reduce
                out = fn(xs[rank], ss[rank], g, output_dtype="float", x_dtype=x_dtype)
                block = slice(rank * 2, rank * 2 + 2) if op == "rs" else slice(0, rows)
                want = cast_output(reduce_rows(xs, ss, x_dtype, scales_dtype, block, H), "float")
                threads = qcoll.run_ranks(n, lambda k, tg: fn(xs[k], ss[k], tg, output_dtype="float",
                                                              x_dtype=x_dtype))[rank]
                got = np.asarray(out).view(want.dtype)
                if not (np.array_equal(got, want) and np.array_equal(np.asarray(threads).view(want.dtype), want)):
                    print(f"rank {rank}: {op} {x_dtype}/{scales_dtype} mismatch", flush=True)
                    sys.exit(1)
                checks += 1
    transport = g.transport
print(f"rank {rank}: {checks} checks ok over {transport}", flush=True)
