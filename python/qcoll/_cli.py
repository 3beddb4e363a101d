"""The console script ``qcoll`` of the wheel: runs the ``qcoll`` program that the wheel carries
in qcoll/_bin/ (the same program as build/tools/qcoll), with this process's arguments."""

from __future__ import annotations

import os
import sys


def program() -> str:
    """Path of the packaged ``qcoll`` program."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "qcoll")


def main() -> None:
    exe = program()
    if not os.access(exe, os.X_OK):
        sys.exit(f"qcoll: the program {exe} is not in this installation (built with QCOLL_BUILD_TOOLS=OFF?)")
    os.execv(exe, ["qcoll", *sys.argv[1:]])


if __name__ == "__main__":
    main()
