#!/usr/bin/env python3
"""The pinned Python packages (requirements/*.lock) against what an interpreter has.

    python scripts/pins.py check LOCK...   prints "name installed->pinned" for each locked
                                           package missing or at another version (nothing
                                           when all match); exit 0 either way
    python scripts/pins.py diff OLD NEW    what changed between two freezes/locks

Needs only the standard library, so it runs before anything is installed."""
import re
import sys
from importlib import metadata


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def read_lock(path: str) -> dict:
    pins = {}
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep:
            raise SystemExit(f"{path}: not a pin (name==version): {line!r}")
        pins[normalize(name)] = version.strip()
    return pins


def installed() -> dict:
    have = {}
    for d in metadata.distributions():
        name = d.metadata["Name"]
        if name:
            have.setdefault(normalize(name), d.version)
    return have


def check(paths) -> int:
    have = installed()
    stale = []
    for path in paths:
        for name, version in read_lock(path).items():
            got = have.get(name)
            if got != version:
                stale.append(f"{name} {got or 'missing'}->{version}")
    print(" ".join(stale))
    return 0


def diff(old: str, new: str) -> int:
    a, b = read_lock(old), read_lock(new)
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            print(f"{name}: {a.get(name, '-')} -> {b.get(name, '-')}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2:]))
    if len(sys.argv) == 4 and sys.argv[1] == "diff":
        sys.exit(diff(sys.argv[2], sys.argv[3]))
    raise SystemExit(__doc__)
