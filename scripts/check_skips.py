#!/usr/bin/env python3
"""Fails when a test suite skipped a test that tests/allowed_skips.txt does not allow.

    python scripts/check_skips.py ALLOWED REPORT.xml...

REPORT.xml: JUnit reports of ctest (--output-junit) and pytest (--junitxml). ALLOWED: one
rule a line, `SUITE PATTERN [if VAR]  # why`, SUITE ctest or pytest, PATTERN a Python regex
searched in the test's name (ctest: its name; pytest: file::test[params]); `if VAR` allows
the skip only when the environment has VAR=1 (a suite the caller opted out of). Prints every
skip with its reason and whether it is allowed; exit 1 if one is not. Standard library only."""
import os
import re
import sys
import xml.etree.ElementTree as ET


def read_rules(path):
    rules = []
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if parts[0] not in ("ctest", "pytest") or len(parts) not in (2, 4) or (len(parts) == 4 and parts[2] != "if"):
            raise SystemExit(f"{path}:{n}: expected 'ctest|pytest PATTERN [if VAR]', got {line!r}")
        rules.append((parts[0], re.compile(parts[1]), parts[3] if len(parts) == 4 else None))
    return rules


def skips(report):
    """(suite, name, reason) of each skipped test case in a JUnit report (pytest's has a
    <testsuite name="pytest">; ctest's is named after the project)."""
    root = ET.parse(report).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    out = []
    for suite in suites:
        kind = "pytest" if suite.get("name") == "pytest" else "ctest"
        for case in suite.iter("testcase"):
            skipped = case.find("skipped")
            status = case.get("status", "")
            if skipped is None and status not in ("notrun", "disabled"):
                continue
            reason = ((skipped.get("message") or skipped.text or "") if skipped is not None else status).strip()
            name = case.get("name", "")
            if kind == "pytest" and case.get("classname"):
                name = case.get("classname").replace(".", "/") + ".py::" + name
            out.append((kind, name, reason))
    return out


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    rules = read_rules(argv[1])
    found = []
    for report in argv[2:]:
        found += skips(report)
    bad = 0
    for suite, name, reason in found:
        ok = any(s == suite and rx.search(name) and (var is None or os.environ.get(var) == "1")
                 for s, rx, var in rules)
        bad += not ok
        print(f"skip: {suite} {name}: {reason[:200]} [{'allowed' if ok else 'NOT ALLOWED'}]")
    print(f"check_skips: {len(found)} skipped, {bad} not allowed by {argv[1]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
