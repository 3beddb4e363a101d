#!/usr/bin/env python3
"""Turns the FAULT-MATRIX rows printed by the fault tests into one markdown table
(case x transport -> observed statuses and the slowest rank's time).
Usage: some-test | scripts/fault_matrix_table.py   (reads stdin; several programs' output)"""
import re
import sys
from collections import OrderedDict

cases = OrderedDict()
transports = []
for line in sys.stdin:
    m = re.match(r"FAULT-MATRIX \| (.*?) \| (\S+) \| (.*?) \| ([0-9.]+) s \|", line.strip())
    if not m:
        continue
    case, transport, ranks, slowest = m.groups()
    statuses = OrderedDict()
    for part in ranks.split(", "):
        p = part.split()
        if len(p) == 2 and p[1] == "absent":
            statuses[p[0]] = "absent"
        elif len(p) >= 2:
            statuses[p[0]] = p[1]
    counts = OrderedDict()
    for r, s in statuses.items():
        counts.setdefault(s, []).append(r)
    if len(counts) == 1:
        text = "all " + next(iter(counts))
    else:
        major = max(counts, key=lambda k: len(counts[k]))
        text = ", ".join(f"{'+'.join(v)} {k}" for k, v in counts.items() if k != major)
        text += f", others {major}"
    if transport not in transports:
        transports.append(transport)
    cases.setdefault(case, {})[transport] = f"{text}; {slowest} s"

print("| case | " + " | ".join(transports) + " |")
print("|---|" + "---|" * len(transports))
for case, by in cases.items():
    print(f"| {case} | " + " | ".join(by.get(t, "n/a") for t in transports) + " |")
