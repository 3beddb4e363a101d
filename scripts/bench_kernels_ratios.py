#!/usr/bin/env python3
"""Ratios of the dequant_reduce kernels to memcpy and to the scalar path.

Usage: bench_kernels --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
           --benchmark_format=json > k.json
       scripts/bench_kernels_ratios.py k.json
Uses the median bytes/s of each benchmark (all measured in that one run).
"""
import json
import sys


def main(path):
    with open(path) as f:
        doc = json.load(f)
    med = {}
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") == "median":
            med[b["run_name"]] = b["bytes_per_second"]
    print("target:", doc["context"].get("dequant_reduce_target", "?"))
    print(f"{'case':<28}{'memcpy GB/s':>12}{'scalar':>9}{'simd':>9}{'2 thr':>9}"
          f"{'simd/memcpy':>13}{'simd/scalar':>13}{'2thr/memcpy':>13}")
    for name in med:
        if not name.startswith("memcpy/"):
            continue
        case = name[len("memcpy/"):]
        mc = med[name]
        sc = med.get(f"kernel/{case}/scalar")
        sd = med.get(f"kernel/{case}/simd")
        t2 = med.get(f"kernel/{case}/threads:2")
        if None in (sc, sd, t2):
            continue
        print(f"{case:<28}{mc / 1e9:>12.2f}{sc / 1e9:>9.2f}{sd / 1e9:>9.2f}{t2 / 1e9:>9.2f}"
              f"{sd / mc:>13.2f}{sd / sc:>13.2f}{t2 / mc:>13.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin")
