#!/usr/bin/env python3
"""Ratios of the dequant_reduce kernels to memcpy and to the scalar path.

Usage: bench_kernels --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
           --benchmark_format=json > k.json
       scripts/bench_kernels_ratios.py k.json
Uses the medians of that one run. "wall" ratios use bytes/s over real time (what the
benchmark reports); "cpu" ratios use the same bytes over CPU time, which is the better
estimate of the work when other processes share the cores. Prints the path table (memcpy,
scalar, simd, 2 threads; cases where all ran) and the per-target table (kernel/.../target:T
against the same case's memcpy), each for the cases present in the JSON.
"""
import json
import sys


def main(path):
    with open(path) as f:
        doc = json.load(f)
    wall, cpu = {}, {}
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") != "median" or b.get("error_occurred"):
            continue
        name = b["run_name"].removesuffix("/real_time")
        wall[name] = b["bytes_per_second"]
        # bytes per iteration = bytes/s * real time; the same bytes over CPU time.
        cpu[name] = b["bytes_per_second"] * b["real_time"] / b["cpu_time"]
    print("target:", doc["context"].get("dequant_reduce_target", "?"),
          "| load average:", doc["context"].get("load_avg", "?"))
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
        print("(GB/s = 1e9 bytes touched per second, wall-clock medians)")

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
        print("(kernel / memcpy bytes-touched throughput, medians; left wall clock, right CPU time)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin")
