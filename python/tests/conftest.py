"""pytest's setup for python/tests. With PYZMPI_TREE set to a checkout (scripts/test sets it), the tests
run only against that tree's package (PYZMPI_TREE/python/zmpi) and libraries ($LIBZMPI_DIR, else
PYZMPI_TREE/build/src): an installed zmpi shadowing them is a usage error, before any test runs.
(Not a ZMPI_ name: the C library rejects ZMPI_ variables it does not know.)"""
import os
from pathlib import Path

import pytest


def tree_mismatch(tree):
    """Why the imported zmpi is not tree's (a message), or None."""
    import zmpi
    from zmpi import _native

    root = Path(tree).resolve()
    pkg = Path(zmpi.__file__).resolve().parent
    if pkg != root / "python" / "zmpi":
        return f"zmpi is imported from {pkg}, not from the tree {root / 'python' / 'zmpi'} (set PYTHONPATH)"
    libdir = Path(os.environ["LIBZMPI_DIR"]).resolve() if os.environ.get("LIBZMPI_DIR") else root / "build" / "src"
    for name in ("libzmpi.so", "libzmpi_mpi.so"):
        lib = Path(_native.find_library(name)).resolve()
        if lib.parent != libdir:
            return f"zmpi loads {lib}, not the build's {libdir / name} (set LIBZMPI_DIR)"
    return None


def pytest_configure(config):
    tree = os.environ.get("PYZMPI_TREE")
    if tree:
        why = tree_mismatch(tree)
        if why:
            raise pytest.UsageError(f"PYZMPI_TREE={tree}: {why}")
