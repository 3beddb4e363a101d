#!/usr/bin/env python3
"""Ratios of the quantizers to memcpy of the same bytes (read + written), from one run.

Usage: bench_quant --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \\
           --benchmark_format=json > q.json
       scripts/bench_quant_ratios.py q.json
Uses the medians (or the single runs) of that one JSON. The paired/<case>/<target>
benchmarks (memcpy and the quantizer on one SIMD target back to back in every iteration)
get a table of their own: quant_vs_memcpy per target. "wall" ratios use real time; for
one thread, "cpu" ratios use the same bytes over the thread's CPU time, the better estimate
when other processes share the cores (with more threads the CPU time counts only the
calling thread, so only wall ratios are given).
"""
import json
import sys

from paired_table import print_paired


def main(path):
    with open(path) as f:
        doc = json.load(f)
    wall, cpu = {}, {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["run_name"].removesuffix("/real_time")
        if "bytes_per_second" not in b:  # the paired runs: their own table
            continue
        wall[name] = b["bytes_per_second"]
        cpu[name] = b["bytes_per_second"] * b["real_time"] / b["cpu_time"]
    ctx = doc["context"]
    print("quantize target:", ctx.get("quantize_target", "?"), "| load average:", ctx.get("load_avg", "?"),
          "| cpus:", ctx.get("num_cpus", "?"))
    if any(name.startswith("quant/") for name in wall):
        print(f"{'case':<30}{'memcpy GB/s':>12}{'quant GB/s':>12}{'ratio':>8}{'cpu ratio':>10}{'simd/scalar':>12}")
    for name, quant in wall.items():
        if not name.startswith("quant/") or name.endswith("/scalar"):
            continue
        case = name[len("quant/"):]
        mc = wall.get("memcpy/" + case)
        if mc is None:
            continue
        base = case.rsplit("/", 1)[0]
        sc = wall.get(f"quant/{base}/scalar")
        one = case.endswith("threads:1")
        cpu_txt = f"{cpu[name] / cpu['memcpy/' + case]:>10.2f}" if one else f"{'':>10}"
        sc_txt = f"{cpu[name] / cpu[f'quant/{base}/scalar']:>12.1f}" if one and sc else ""
        print(f"{case:<30}{mc / 1e9:>12.2f}{quant / 1e9:>12.2f}{quant / mc:>8.2f}{cpu_txt}{sc_txt}")
    if any(name.startswith("quant/") for name in wall):
        print("(GB/s = 1e9 bytes read + written per second, wall-clock; ratio = quantizer / memcpy)")
    print_paired(doc, "quant", "quantizer / memcpy throughput of the same bytes, one thread")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin")
