#!/usr/bin/env python3
"""Ratios of the dequant_reduce kernels to memcpy and to the scalar path.

Usage: bench_kernels --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
           --benchmark_format=json > k.json
       scripts/bench_kernels_ratios.py [--stat median|min] k.json
Uses the medians (default) or the fastest repetitions ("min": bytes per iteration over the
least real time; the least disturbed estimate when other processes load the machine) of
that one run. "wall" ratios use bytes/s over real time (what the
benchmark reports); "cpu" ratios use the same bytes over CPU time, which is the better
estimate of the work when other processes share the cores. Prints the path table (memcpy,
scalar, simd, 2 threads; cases where all ran) and the per-target table (kernel/.../target:T
against the same case's memcpy), each for the cases present in the JSON.
"""
import json
import sys

from paired_table import print_paired


def main(path, stat):
    with open(path) as f:
        doc = json.load(f)
    agg = {}
    for b in doc["benchmarks"]:
        if (b.get("run_type") == "aggregate" and not b.get("error_occurred")
                and not b["run_name"].startswith("paired/")):
            agg.setdefault(b["run_name"].removesuffix("/real_time"), {})[b["aggregate_name"]] = b
    wall, cpu = {}, {}
    for name, a in agg.items():
        if "median" not in a or stat not in a:
            continue
        # bytes per iteration = median bytes/s * median real time (the same every iteration).
        per_iter = a["median"]["bytes_per_second"] * a["median"]["real_time"]
        wall[name] = per_iter / a[stat]["real_time"]
        cpu[name] = per_iter / a[stat]["cpu_time"]
    print("target:", doc["context"].get("dequant_reduce_target", "?"),
          "| load average:", doc["context"].get("load_avg", "?"), "| statistic:", stat)
    cases = [n[len("memcpy/"):] for n in wall if n.startswith("memcpy/")]

    rows = []
    for case in cases:
        keys = [f"kernel/{case}/scalar", f"kernel/{case}/simd", f"kernel/{case}/threads:2"]
        if all(k in wall for k in keys):
            rows.append((case, keys))
    if rows:
        print(f"{'case':<24}{'memcpy':>8}{'scalar':>8}{'simd':>8}{'2thr':>8}"
              f"{'simd/memcpy':>13}{'simd/scalar':>13}{'2thr/memcpy':>13}"
              f"{'cpu: simd/memcpy':>18}{'simd/scalar':>13}")
        for case, keys in rows:
            name = f"memcpy/{case}"
            mc, (sc, sd, t2) = wall[name], (wall[k] for k in keys)
            cmc, csc, csd = cpu[name], cpu[keys[0]], cpu[keys[1]]
            print(f"{case:<24}{mc / 1e9:>8.2f}{sc / 1e9:>8.2f}{sd / 1e9:>8.2f}{t2 / 1e9:>8.2f}"
                  f"{sd / mc:>13.2f}{sd / sc:>13.2f}{t2 / mc:>13.2f}{csd / cmc:>18.2f}"
                  f"{csd / csc:>13.2f}")
        print(f"(GB/s = 1e9 bytes touched per second, wall clock, {stat} of the repetitions)")

    targets = []
    for n in wall:
        if "/target:" in n:
            t = n.split("/target:")[1]
            if t not in targets:
                targets.append(t)
    if targets:
        print()
        head = f"{'case':<24}{'memcpy GB/s':>12}"
        head += "".join(f"{t:>10}" for t in targets) + "   cpu:" + "".join(f"{t:>10}" for t in targets)
        print(head)
        for case in cases:
            name = f"memcpy/{case}"
            line = f"{case:<24}{wall[name] / 1e9:>12.2f}"
            wr, cr = [], []
            for t in targets:
                k = f"kernel/{case}/target:{t}"
                wr.append(f"{wall[k] / wall[name]:>10.2f}" if k in wall else f"{'-':>10}")
                cr.append(f"{cpu[k] / cpu[name]:>10.2f}" if k in cpu else f"{'-':>10}")
            print(line + "".join(wr) + "      " + "".join(cr))
        print(f"(kernel / memcpy bytes-touched throughput, {stat} of the repetitions; left wall "
              "clock, right CPU time)")


def paired_table(path):
    """kernel_vs_memcpy (wall clock and CPU time) of the paired/<case>/<target> benchmarks."""
    with open(path) as f:
        print_paired(json.load(f), "kernel", "kernel / memcpy throughput")


if __name__ == "__main__":
    args = sys.argv[1:]
    stat = "median"
    if len(args) >= 2 and args[0] == "--stat":
        stat, args = args[1], args[2:]
    main(args[0] if args else "/dev/stdin", stat)
    paired_table(args[0] if args else "/dev/stdin")
