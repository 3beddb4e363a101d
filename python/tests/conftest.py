"""Markers of qcoll's Python tests."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "wheel: runs against an installed wheel from outside the repository (scripts/test-wheel.sh)")
