#!/usr/bin/env python3
"""Ratios of the dequant_reduce kernels to memcpy and to the scalar path.

Usage: bench_kernels --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
           --benchmark_format=json > k.json
       scripts/bench_kernels_ratios.py k.json
Uses the medians of that one run. "wall" ratios use bytes/s over real time (what the
benchmark reports); "cpu" ratios use the same bytes over CPU time, which is the better
estimate of the work when other processes share the cores.
"""
import json
import sys


def main(path):
    with open(path) as f:
        doc = json.load(f)
    wall, cpu = {}, {}
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"].removesuffix("/real_time")
        wall[name] = b["bytes_per_second"]
        # bytes per iteration = bytes/s * real time; the same bytes over CPU time.
        cpu[name] = b["bytes_per_second"] * b["real_time"] / b["cpu_time"]
    print("target:", doc["context"].get("dequant_reduce_target", "?"),
          "| load average:", doc["context"].get("load_avg", "?"))
    print(f"{'case':<24}{'memcpy':>8}{'scalar':>8}{'simd':>8}{'2thr':>8}"
          f"{'simd/memcpy':>13}{'simd/scalar':>13}{'2thr/memcpy':>13}"
          f"{'cpu: simd/memcpy':>18}{'simd/scalar':>13}")
    for name in wall:
        if not name.startswith("memcpy/"):
            continue
        case = name[len("memcpy/"):]
        keys = [f"kernel/{case}/scalar", f"kernel/{case}/simd", f"kernel/{case}/threads:2"]
        if any(k not in wall for k in keys):
            continue
        mc, (sc, sd, t2) = wall[name], (wall[k] for k in keys)
        cmc, csc, csd = cpu[name], cpu[keys[0]], cpu[keys[1]]
        print(f"{case:<24}{mc / 1e9:>8.2f}{sc / 1e9:>8.2f}{sd / 1e9:>8.2f}{t2 / 1e9:>8.2f}"
              f"{sd / mc:>13.2f}{sd / sc:>13.2f}{t2 / mc:>13.2f}{csd / cmc:>18.2f}{csd / csc:>13.2f}")
    print("(GB/s = 1e9 bytes touched per second, wall-clock medians)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin")
