"""Unique-id communicators (qcoll.UniqueId, qcoll.init_comm) across processes started the way
a launcher starts ranks (the id as hex in an environment variable), and across threads; and
streams (qcoll.Stream, stream= on the operators, Work.wait)."""

import gc
import os
import pathlib
import pickle
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import qcoll

HERE = pathlib.Path(__file__).resolve().parent


def start_ranks(uid, ranks, nranks, mode, **env):
    """One subprocess per entry of ranks (the rank it joins as); returns their outputs."""
    procs = []
    for r in ranks:
        e = dict(os.environ, QCOLL_UID=uid.hex(), QCOLL_RANK=str(r), QCOLL_NRANKS=str(nranks),
                 HCCL_BUFFSIZE="4", PYTHONPATH=str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""), **env)
        procs.append(subprocess.Popen([sys.executable, str(HERE / "uid_worker.py"), mode], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, out
        outs.append(out)
    return outs


# ---- UniqueId --------------------------------------------------------------------------------

def test_unique_id_round_trips():
    u = qcoll.UniqueId()
    assert len(u.bytes) == 128 and len(u.hex()) == 256
    assert qcoll.UniqueId(u.hex()) == u == qcoll.UniqueId.from_bytes(u.bytes) == qcoll.UniqueId.from_hex(u.hex())
    assert pickle.loads(pickle.dumps(u)) == u
    assert qcoll.UniqueId() != u


@pytest.mark.parametrize("bad,msg", [("00" * 128, "must be a unique id made by qcollGetUniqueId"),
                                     ("abc", "must be 256 hex digits"),
                                     (b"\x00" * 12, "uid: must be 128 bytes, got 12"),
                                     (3, "expected None, a hex str or 128 bytes")])
def test_unique_id_refusals(bad, msg):
    with pytest.raises(qcoll.InvalidParameterError, match=msg):
        qcoll.UniqueId(bad)


# ---- processes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 4])
def test_processes_match_the_thread_transport(n):
    uid = qcoll.UniqueId()  # this process serves the rendezvous; the subprocesses are the ranks
    outs = start_ranks(uid, range(n), n, "run", QCOLL_TIMEOUT_S="60")
    for r, out in enumerate(outs):
        assert f"rank {r}: 12 checks ok" in out, out


def test_duplicate_rank_fails_every_rank():
    outs = start_ranks(qcoll.UniqueId(), [0, 0], 2, "join", QCOLL_TIMEOUT_S="30")
    for out in outs:
        assert out.startswith("ERROR PARAM_INVALID"), out
        assert "rank: must be unique among the ranks of an id, got 0 twice" in out, out


def test_mismatched_nranks():
    uid = qcoll.UniqueId()
    e = dict(os.environ, QCOLL_UID=uid.hex(), QCOLL_TIMEOUT_S="30",
             PYTHONPATH=str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, str(HERE / "uid_worker.py"), "join"],
                              env=dict(e, QCOLL_RANK=str(r), QCOLL_NRANKS=str(nr)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r, nr in ((0, 2), (1, 4))]
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert "ERROR PARAM_INVALID" in out and "nranks: must be the same on every rank of an id" in out, out


def test_late_rank_fails_the_others_in_bounded_time():
    # The deadline leaves room for three Python processes to start on a loaded machine (a
    # 1 s deadline failed there: rank 2 joined after ranks 0 and 1 had given up); the bound is
    # the deadline plus slack, not a race.
    outs = start_ranks(qcoll.UniqueId(), [0, 1, 2], 4, "join", QCOLL_TIMEOUT_S="8")
    for out in outs:
        assert out.startswith("ERROR RUNTIME_ERROR"), out
        assert "rank(s) 3 of 4 did not join" in out, out
        assert float(out.split()[2].rstrip(":")) < 8.0 + 10.0, out


def test_wrong_rank_and_stale_id():
    uid = qcoll.UniqueId()
    with pytest.raises(qcoll.InvalidParameterError, match=r"rank: must be in \[0, 1\] for nranks 2, got 2"):
        qcoll.init_comm("py-bad", 2, uid, 2)
    # The rendezvous failed (rank 2 told the root): the id is spent, and a late comer hears why.
    with pytest.raises(qcoll.CommunicationError, match="its rendezvous failed earlier"):
        qcoll.init_comm("py-bad", 2, uid, 0)


# ---- threads of one process ----------------------------------------------------------------------

def test_threads_of_one_process():
    uid = qcoll.UniqueId()
    rng = np.random.default_rng(5)
    xs = [rng.integers(1, 0x70, size=(4, 1024), dtype=np.uint8).view(np.int8) for _ in range(2)]
    ss = [rng.random((4, 8)).astype(np.float32) for _ in range(2)]
    results, errors = [None, None], []

    def rank(r):
        try:
            with qcoll.init_comm("py-uid-threads", 2, uid, r) as g:
                results[r] = np.asarray(qcoll.quant_all_reduce(xs[r], ss[r], g, output_dtype="float"))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    want = qcoll.run_ranks(2, lambda r, g: np.asarray(qcoll.quant_all_reduce(xs[r], ss[r], g, output_dtype="float")))
    for r in range(2):
        assert results[r].tobytes() == want[r].tobytes()


# ---- streams ------------------------------------------------------------------------------------------

def inputs(r, rows=8, seed=0):
    rng = np.random.default_rng(seed * 10 + r)
    return (rng.integers(1, 0x70, size=(rows, 1024), dtype=np.uint8).view(np.int8),
            rng.random((rows, 8)).astype(np.float32))


def test_stream_results_equal_synchronous_ones_and_keep_their_arrays():
    def fn(r, g):
        x, s = inputs(r)
        sync = np.asarray(qcoll.quant_reduce_scatter(x, s, g))
        with qcoll.Stream() as st:
            # Temporaries: only the stream holds them once this line is done.
            works = [qcoll.quant_reduce_scatter(*inputs(r), g, stream=st) for _ in range(3)]
            gc.collect()
            return sync, [np.asarray(w.wait()) for w in works]

    for sync, on_stream in qcoll.run_ranks(2, fn):
        for a in on_stream:
            assert a.tobytes() == sync.tobytes()


def test_failure_is_raised_by_wait_and_output_untouched():
    def fn(r, g):
        x, s = inputs(r, rows=8 if r == 0 else 4)  # the ranks disagree on the shape
        st = qcoll.Stream()
        w = qcoll.quant_all_reduce(x, s, g, stream=st)  # enqueued: no error yet
        with pytest.raises(qcoll.CommunicationError, match="ranks disagree on the call"):
            w.wait()
        assert not np.asarray(w._result).view(np.uint16).any()  # never written (zeros as allocated)
        assert st.synchronize() is True  # reported once
        st.destroy()
        return True

    assert qcoll.run_ranks(2, fn) == [True, True]


def test_synchronize_timeout_and_destroy_waits():
    go = threading.Event()
    out = {}

    def fn(r, g):
        x, s = inputs(r)
        if r == 0:
            st = qcoll.Stream()
            w = qcoll.quant_reduce_scatter(x, s, g, stream=st)
            assert st.synchronize(timeout_ms=50) is False  # rank 1 has not called yet
            with pytest.raises(qcoll.CommunicationError, match="timed out"):
                w.wait(timeout_ms=0)
            go.set()
            st.destroy()  # waits for the call
            out[r] = np.asarray(w._result).copy()
        else:
            go.wait()
            time.sleep(0.1)
            out[r] = np.asarray(qcoll.quant_reduce_scatter(x, s, g))

    qcoll.run_ranks(2, fn)
    want = qcoll.run_ranks(2, lambda r, g: np.asarray(qcoll.quant_reduce_scatter(*inputs(r), g)))
    assert out[0].tobytes() == want[0].tobytes()


def test_stream_argument_checks():
    with pytest.raises(qcoll.InvalidParameterError, match="stream: expected a qcoll.Stream"):
        qcoll.quant_all_reduce(*inputs(0), "nobody", stream=object())
    st = qcoll.Stream()
    st.destroy()
    assert not st.alive
    with pytest.raises(qcoll.InvalidParameterError, match="stream: was destroyed"):
        st.synchronize()
