"""The paired/<case>/<target> tables of bench_kernels and bench_quant (bench/paired_timing.hpp).

Used by scripts/bench_kernels_ratios.py and scripts/bench_quant_ratios.py: the median (or the
single run) of every paired benchmark of one Google Benchmark JSON document, one table per
counter: <name>_vs_memcpy (wall clock) and <name>_vs_memcpy_cpu (the thread's CPU time; absent
from results of versions before it).
"""


def print_paired(doc, name, note):
    runs = {}
    for b in doc["benchmarks"]:
        run = b["run_name"].removesuffix("/real_time")
        if not run.startswith("paired/") or b.get("error_occurred"):
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        runs[run] = b
    cases, targets = [], []
    for run in runs:
        case, target = run[len("paired/"):].rsplit("/", 1)
        if case not in cases:
            cases.append(case)
        if target not in targets:
            targets.append(target)
    printed = False
    for key, head in ((f"{name}_vs_memcpy", "paired: case"), (f"{name}_vs_memcpy_cpu", "paired, CPU time: case")):
        if not any(key in b for b in runs.values()):
            continue
        print()
        print(f"{head:<24}" + "".join(f"{t:>10}" for t in targets) + f"{'memcpy GB/s':>14}")
        for case in cases:
            row, mc = f"{case:<24}", []
            for t in targets:
                b = runs.get(f"paired/{case}/{t}")
                row += f"{b[key]:>10.2f}" if b else f"{'-':>10}"
                if b:
                    mc.append(b["memcpy_GBps"])
            print(row + f"{(sum(mc) / len(mc) if mc else 0):>14.2f}")
        printed = True
    if printed:
        print(f"({note}, memcpy and the call back to back in every iteration; median of the repetitions; "
              "CPU time: the same bytes over the thread's CPU time, which leaves out the time other "
              "processes ran; memcpy GB/s: the mean over the row's runs, wall clock)")
