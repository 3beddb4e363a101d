"""The installed package loads the Highway library it carries, not the system's."""
import os

import qcoll
import qcoll._core  # noqa: F401  (loads the extension and its libraries)


def test_highway_loaded_from_the_package():
    pkg_dir = os.path.dirname(os.path.realpath(qcoll.__file__))
    with open("/proc/self/maps") as f:
        hwy = {line.split()[-1] for line in f if "libhwy" in line and "/" in line}
    assert hwy, "libhwy is not mapped"
    assert all(os.path.dirname(os.path.realpath(p)) == pkg_dir for p in hwy), hwy
