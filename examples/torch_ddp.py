"""DDP training with quantized gradient all-reduce (qcoll.torch), against plain fp32 DDP.

    torchrun --nproc_per_node 2 examples/torch_ddp.py [--steps 300] [--png torch_ddp_loss.png]

Trains the same small MLP on the same synthetic data (a fixed random "teacher" network
labels Gaussian inputs) three times, from the same initial weights: with DDP's own fp32
all-reduce, with the qcoll kg-int8 hook and with the qcoll mx-e4m3 hook
(``model.register_comm_hook(qcoll.torch.QuantHookState(mode=...),
qcoll.torch.quant_allreduce_hook)``). Rank 0 prints the step times (median and mean of a
training step, after a warm-up) and the final losses, and writes the loss curves to a PNG
(matplotlib if it is installed, else gnuplot; with neither, a .dat file only).
Also runs under mpirun (``mpirun -n 2 python examples/torch_ddp.py``) through
``qcoll.torch.init_process_group``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import qcoll.torch as qt

RUNS = ("fp32", "kg-int8", "mx-e4m3")


def make_data(steps: int, batch: int, dim: int, classes: int, rank: int):
    """This rank's batches: Gaussian inputs labelled by a fixed random teacher network."""
    g = torch.Generator().manual_seed(1234)
    teacher = nn.Sequential(nn.Linear(dim, 256), nn.Tanh(), nn.Linear(256, classes))
    for p in teacher.parameters():
        with torch.no_grad():
            p.copy_(torch.randn(p.shape, generator=g) * (2.0 / p.shape[-1]) ** 0.5)
    g = torch.Generator().manual_seed(99 + rank)
    xs = torch.randn(steps, batch, dim, generator=g)
    with torch.no_grad():
        ys = teacher(xs).argmax(-1)
    return xs, ys


def train(run: str, args, xs, ys) -> tuple[list, list]:
    torch.manual_seed(0)  # the same initial weights for every run (and DDP broadcasts rank 0's)
    model = nn.Sequential(nn.Linear(args.dim, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden),
                          nn.ReLU(), nn.Linear(args.hidden, args.classes))
    ddp = DDP(model)
    if run != "fp32":
        ddp.register_comm_hook(qt.QuantHookState(mode=run), qt.quant_allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    losses, times = [], []
    world = dist.get_world_size()
    for step in range(args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(ddp(xs[step]), ys[step])
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)  # for the curve only: the mean over the ranks
        losses.append(float(mean_loss) / world)
    return losses, times


def plot(png: str, curves: dict, title: str) -> str:
    """Two panels: the loss curves, and each hook's loss minus the fp32 run's."""
    steps = range(1, len(curves["fp32"]) + 1)
    diffs = {run: [a - b for a, b in zip(ys, curves["fp32"])] for run, ys in curves.items() if run != "fp32"}
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True, height_ratios=[2, 1])
        for run, ys in curves.items():
            top.plot(steps, ys, label=run, linestyle="-" if run == "fp32" else "--")
        top.set_yscale("log")
        top.set_ylabel("training loss")
        top.legend()
        top.set_title(title)
        for run, ys in diffs.items():
            bottom.plot(steps, ys, label=f"{run} - fp32")
        bottom.axhline(0, color="gray", lw=0.5)
        bottom.set_xlabel("step")
        bottom.set_ylabel("loss - fp32 loss")
        bottom.legend()
        fig.tight_layout()
        fig.savefig(png, dpi=100)
        return "matplotlib"
    except ImportError:
        pass
    dat = os.path.splitext(png)[0] + ".dat"
    runs = list(curves)
    with open(dat, "w", encoding="ascii") as f:
        f.write("# step " + " ".join(runs) + " " + " ".join(f"{r}-fp32" for r in diffs) + "\n")
        for i in range(len(steps)):
            row = [curves[r][i] for r in runs] + [d[i] for d in diffs.values()]
            f.write(f"{i + 1} " + " ".join(f"{v:.6g}" for v in row) + "\n")
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        return f"no matplotlib or gnuplot: data in {dat}"
    top = ", ".join(f"'{dat}' using 1:{k + 2} with lines lw 2 lt {k + 1} title '{r}'" for k, r in enumerate(runs))
    bottom = ", ".join(f"'{dat}' using 1:{len(runs) + k + 2} with lines lw 2 lt {k + 2} title '{r} - fp32'"
                       for k, r in enumerate(diffs))
    script = (f"set terminal png size 800,600\nset output '{png}'\nset multiplot\n"
              f"set size 1,0.62\nset origin 0,0.38\nset logscale y\nset ylabel 'training loss'\n"
              f"set title '{title}'\nset key top right\nplot {top}\n"
              f"set size 1,0.38\nset origin 0,0\nunset logscale y\nunset title\nset xlabel 'step'\n"
              f"set ylabel 'loss - fp32 loss'\nset key top left\nset xzeroaxis\nplot {bottom}\nunset multiplot\n")
    subprocess.run([gnuplot], input=script, text=True, check=True)
    return "gnuplot"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20, help="steps left out of the step times")
    ap.add_argument("--batch", type=int, default=64, help="per rank")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--png", default="torch_ddp_loss.png")
    args = ap.parse_args()
    qt.init_process_group("gloo")
    rank = dist.get_rank()
    xs, ys = make_data(args.steps, args.batch, args.dim, args.classes, rank)
    curves, rows = {}, []
    for run in RUNS:
        losses, times = train(run, args, xs, ys)
        curves[run] = losses
        t = times[args.warmup:] or times
        rows.append((run, statistics.median(t) * 1e3, statistics.mean(t) * 1e3, losses[-1]))
    if rank == 0:
        params = sum(p.numel() for p in nn.Sequential(nn.Linear(args.dim, args.hidden), nn.Linear(args.hidden, args.hidden),
                                                      nn.Linear(args.hidden, args.classes)).parameters())
        print(f"DDP on {dist.get_world_size()} ranks (gloo, CPU), {params} parameters, batch {args.batch} per rank, "
              f"{args.steps} steps (times: steps {args.warmup + 1}..{args.steps}); qcoll path: {qt.transport()}")
        print("| gradient all-reduce | step ms (median) | step ms (mean) | final loss |")
        print("|---|---|---|---|")
        for run, med, mean, last in rows:
            print(f"| {run} | {med:.2f} | {mean:.2f} | {last:.4f} |")
        title = f"DDP on {dist.get_world_size()} ranks: fp32 all-reduce vs qcoll hooks"
        how = plot(args.png, curves, title)
        print(f"loss curves: {args.png} ({how})")
    qt.release()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
