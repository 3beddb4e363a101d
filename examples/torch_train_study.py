"""A training study on real data: quantized gradient reduction (qcoll.torch) under DDP and
FSDP2 against fp32 and bf16, on scikit-learn's bundled digits set (no download).

    torchrun --nproc_per_node 2 examples/torch_train_study.py --json study-n2.json
    torchrun --nproc_per_node 4 examples/torch_train_study.py --json study-n4.json
    python examples/torch_train_study.py --plot docs/torch_study.png study-n2.json study-n4.json

An MLP (64 -> 512 -> 512 -> 10) learns the 8x8 digits (1437 training images split over the
ranks, 360 held out), batch 16 per rank, SGD with momentum, for every row of VARIANTS, under
DDP and under FSDP2 (``fully_shard`` on each layer), from the same initial weights and
batches per seed. The variants and seeds run interleaved: every model takes its step k
before any takes step k + 1, so a change of machine load falls on all of them alike.
Rank 0 writes every run's training loss (the mean over the ranks of the batch loss), the
held-out loss and accuracy every ``--eval-every`` steps, and the step times to the JSON
file; ``--plot`` draws the curves (gnuplot) and prints the table of final figures
(mean +- standard deviation over the seeds, and each run's mean distance of its training
loss from the fp32 run of the same seed) as Markdown. FP4 variants (mx-e2m1) set qcoll's
extended contract for the whole launch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

# (name, gradient reduction, error feedback): None is the wrapper's own fp32 reduction,
# "bf16" torch's bf16 (DDP: the bf16_compress_hook; FSDP2: reduce_dtype=bfloat16), any other
# a qcoll mode. The FP4 rows (mx-e2m1) need qcoll's extended contract: the launch sets it
# (qcoll.set_contract("extended"), for the whole process and every variant) when any
# variant it runs has a mode outside the vendor's six (qcoll.torch.MODES); the vendor's
# modes give the same bits under either contract. --variants picks rows by name.
VARIANTS = [
    ("fp32", None, False),
    ("bf16", "bf16", False),
    ("kg-int8", "kg-int8", False),
    ("mx-e4m3", "mx-e4m3", False),
    ("mx-e4m3+ef", "mx-e4m3", True),
    ("mx-e2m1", "mx-e2m1", False),
    ("mx-e2m1+ef", "mx-e2m1", True),
]
WRAPPERS = ("ddp", "fsdp2")


def load_digits(rank: int, n: int):
    """(this rank's training inputs and labels, the held-out set), standardized by the
    training set's mean and deviation; the split is fixed (seed 0), the same on every rank."""
    from sklearn.datasets import load_digits as sk_digits

    d = sk_digits()
    x = torch.tensor(d.data, dtype=torch.float32)
    y = torch.tensor(d.target, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    x, y = x[perm], y[perm]
    test = 360
    xtr, ytr, xte, yte = x[test:], y[test:], x[:test], y[:test]
    mu, sd = xtr.mean(0), xtr.std(0) + 1e-3
    xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
    return (xtr[rank::n], ytr[rank::n]), (xte, yte)


def mlp(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


class Run:
    """One (wrapper, variant, seed): its model, optimizer, batches and records."""

    def __init__(self, wrapper: str, variant: tuple, seed: int, train, lr: float):
        import qcoll.torch as qt

        self.wrapper, (self.name, self.reduce, self.ef), self.seed = wrapper, variant, seed
        model = mlp(seed)
        if wrapper == "ddp":
            from torch.nn.parallel import DistributedDataParallel as DDP

            model = DDP(model)
            if self.reduce == "bf16":
                from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

                model.register_comm_hook(None, default_hooks.bf16_compress_hook)
            elif self.reduce is not None:
                model.register_comm_hook(qt.QuantHookState(mode=self.reduce, error_feedback=self.ef),
                                         qt.quant_allreduce_hook)
        else:
            from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

            mp = MixedPrecisionPolicy(reduce_dtype=torch.bfloat16 if self.reduce == "bf16" else None)
            for layer in model:
                if isinstance(layer, nn.Linear):
                    fully_shard(layer, mp_policy=mp)
            fully_shard(model, mp_policy=mp)
            if self.reduce not in (None, "bf16"):
                qt.quantize_fsdp_gradients(model, mode=self.reduce, error_feedback=self.ef)
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        self.x, self.y = train
        self.gen = torch.Generator().manual_seed(1000 + seed)  # the same batches for every variant
        self.loss, self.evals, self.times = [], [], []

    def step(self, batch: int) -> None:
        idx = torch.randint(0, len(self.y), (batch,), generator=self.gen)
        t0 = time.perf_counter()
        self.opt.zero_grad()
        loss = nn.functional.cross_entropy(self.model(self.x[idx]), self.y[idx])
        loss.backward()
        self.opt.step()
        self.times.append(time.perf_counter() - t0)
        mean = loss.detach().reshape(1)
        dist.all_reduce(mean)
        self.loss.append(float(mean) / dist.get_world_size())

    @torch.no_grad()
    def evaluate(self, step: int, test) -> None:
        xte, yte = test
        out = self.model(xte)
        self.evals.append((step, float(nn.functional.cross_entropy(out, yte)),
                           float((out.argmax(1) == yte).float().mean())))

    def record(self, warmup: int) -> dict:
        t = self.times[warmup:]
        return {"wrapper": self.wrapper, "variant": self.name, "seed": self.seed, "loss": self.loss,
                "evals": self.evals, "step_ms_median": 1e3 * statistics.median(t), "step_ms_mean": 1e3 * statistics.mean(t)}


def train(args) -> None:
    import qcoll.torch as qt

    dist.init_process_group("gloo")
    n, rank = dist.get_world_size(), dist.get_rank()
    train_set, test = load_digits(rank, n)
    variants = [v for v in VARIANTS if v[0] in args.variants]
    if any(v[1] not in (None, "bf16") and v[1] not in qt.MODES for v in variants):
        import qcoll

        qcoll.set_contract("extended")  # FP4 modes: docs/contract.md §ext
    contract = qt_contract()
    if rank == 0:
        print(f"variants {', '.join(v[0] for v in variants)} under the {contract} contract", flush=True)
    runs = [Run(w, v, s, train_set, args.lr) for s in range(args.seeds) for w in args.wrappers for v in variants]
    t0 = time.monotonic()
    for step in range(1, args.steps + 1):
        for r in runs:  # interleaved: every run's step k before any run's step k + 1
            r.step(args.batch)
            if step % args.eval_every == 0 or step == args.steps:
                r.evaluate(step, test)
        if rank == 0 and step % 50 == 0:
            print(f"step {step}/{args.steps} ({time.monotonic() - t0:.0f} s)", flush=True)
    if rank == 0:
        meta = {"ranks": n, "steps": args.steps, "batch_per_rank": args.batch, "seeds": args.seeds, "lr": args.lr,
                "transport": qt.transport(), "contract": contract, "load": os.getloadavg(), "torch": torch.__version__}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "runs": [r.record(args.warmup) for r in runs]}, f)
        print(f"wrote {args.json} ({time.monotonic() - t0:.0f} s)", flush=True)
    qt.release()
    dist.destroy_process_group()


def qt_contract() -> str:
    import qcoll

    return qcoll.get_contract()


def _mean_sd(v: list) -> str:
    return f"{statistics.mean(v):.4f} ± {statistics.stdev(v) if len(v) > 1 else 0.0:.4f}"


def _groups(res: dict):
    """(wrapper, variant, its runs over the seeds), in the order of the runs."""
    names = list(dict.fromkeys(r["variant"] for r in res["runs"]))
    for w in WRAPPERS:
        for name in names:
            rs = [r for r in res["runs"] if r["wrapper"] == w and r["variant"] == name]
            if rs:
                yield w, name, names.index(name), rs


def _gap(res: dict, w: str, rs: list) -> list:
    """Per seed: the mean over the steps of |training loss - the fp32 run's| (same wrapper,
    seed, batches), or [] without an fp32 run."""
    ref = {r["seed"]: r["loss"] for r in res["runs"] if r["wrapper"] == w and r["variant"] == "fp32"}
    return [statistics.mean(abs(a - b) for a, b in zip(r["loss"], ref[r["seed"]])) for r in rs if r["seed"] in ref]


def table(results: list) -> str:
    rows = ["| ranks | wrapper | gradients | final held-out acc | final held-out loss | final train loss (last 10) "
            "| mean \\|train loss - fp32\\| | step ms (median) |", "|---|---|---|---|---|---|---|---|"]
    for res in results:
        n = res["meta"]["ranks"]
        for w, name, _, rs in _groups(res):
            acc = [r["evals"][-1][2] for r in rs]
            tl = [r["evals"][-1][1] for r in rs]
            tr = [statistics.mean(r["loss"][-10:]) for r in rs]
            gap = _gap(res, w, rs)
            ms = statistics.median(r["step_ms_median"] for r in rs)
            rows.append(f"| {n} | {w} | {name} | {_mean_sd(acc)} | {_mean_sd(tl)} | {_mean_sd(tr)} "
                        f"| {_mean_sd(gap) if gap else '-'} | {ms:.1f} |")
    return "\n".join(rows)


def plot(png: str, results: list) -> None:
    """One row of panels per launch (ranks): training loss (mean over seeds, smoothed over
    10 steps) and held-out accuracy (mean over seeds), DDP solid, FSDP2 dashed."""
    dat = png + ".dat"
    blocks, series = [], []
    for res in results:
        n = res["meta"]["ranks"]
        for w, name, colour, rs in _groups(res):
            steps = len(rs[0]["loss"])
            loss = [statistics.mean(r["loss"][k] for r in rs) for k in range(steps)]
            smooth = [statistics.mean(loss[max(0, k - 9):k + 1]) for k in range(steps)]
            ev = [(e[0], statistics.mean(r["evals"][j][2] for r in rs)) for j, e in enumerate(rs[0]["evals"])]
            lines = [f"{k + 1} {smooth[k]:.6g} nan" for k in range(steps)] + [f"{s} nan {a:.6g}" for s, a in ev]
            blocks.append("\n".join(lines))
            series.append((n, w, name, len(blocks) - 1, colour))
    with open(dat, "w") as f:
        f.write("\n\n\n".join(blocks) + "\n")
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        print(f"no gnuplot: data in {dat}")
        return
    launches = sorted({s[0] for s in series})
    script = [f"set terminal pngcairo size 1200,{420 * len(launches)} font ',9'" if _has_cairo(gnuplot)
              else f"set terminal png size 1200,{420 * len(launches)}",
              f"set output '{png}'", f"set multiplot layout {len(launches)},2", "set key outside right", "set grid"]
    for n in launches:
        mine = [s for s in series if s[0] == n]
        for col, ylabel, extra in ((2, "training loss (10-step mean)", "set logscale y"),
                                   (3, "held-out accuracy", "unset logscale y; set yrange [0.8:1]")):
            parts = [f"'{dat}' index {b} using 1:{col} with lines lw 2 lc {c + 1} dt {1 if w == 'ddp' else 2} "
                     f"title '{w} {name}'" for _, w, name, b, c in mine]
            script += [extra, f"set title '{n} ranks: {ylabel}'", "set xlabel 'step'", f"set ylabel '{ylabel}'",
                       "plot " + ", ".join(parts), "set autoscale y"]
    script.append("unset multiplot")
    subprocess.run([gnuplot], input="\n".join(script) + "\n", text=True, check=True)
    print(f"wrote {png}")


def _has_cairo(gnuplot: str) -> bool:
    r = subprocess.run([gnuplot, "-e", "set terminal"], capture_output=True, text=True)
    return "pngcairo" in (r.stdout + r.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16, help="per rank")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=10, help="steps left out of the step times")
    ap.add_argument("--wrappers", nargs="+", default=list(WRAPPERS), choices=WRAPPERS)
    ap.add_argument("--variants", nargs="+", default=[v[0] for v in VARIANTS], choices=[v[0] for v in VARIANTS],
                    help="rows of VARIANTS to run (FP4 ones set the extended contract)")
    ap.add_argument("--json", default="study.json")
    ap.add_argument("--plot", nargs="+", metavar=("PNG", "JSON"), help="draw PNG from JSON files, print the table")
    args = ap.parse_args()
    if args.plot:
        if len(args.plot) < 2:
            sys.exit("--plot PNG JSON...")
        results = [json.load(open(p)) for p in args.plot[1:]]
        plot(args.plot[0], results)
        print(table(results))
        return
    train(args)


if __name__ == "__main__":
    main()
