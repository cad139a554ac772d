#!/bin/sh
# The package installs and works from a clean venv: `pip install REPO` into a
# new venv (pip fetches numpy, cffi and the build backend, scikit-build-core
# builds the C libraries), then, from outside the repository, a round trip
# through the installed libraries; without mpi4py, zmpi.Comm says what it needs.
#   python/tests/clean_venv.sh REPO
set -eu
repo=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --disable-pip-version-check "$repo"
cd "$tmp"
"$tmp/venv/bin/python" - <<'PY'
import numpy as np
import zmpi
assert zmpi.__file__.startswith(__import__("sys").prefix), zmpi.__file__  # the installed package
x = np.sin(np.linspace(0, 30, 60000)).reshape(300, 200).astype(np.float32)
back = zmpi.decompress(zmpi.compress(x, codec="fzl", abs=1e-3))
assert back.shape == x.shape and back.dtype == x.dtype
assert np.max(np.abs(back.astype(np.float64) - x)) <= 1e-3
assert zmpi.decompress(zmpi.compress(x, codec="zstd")).tobytes() == x.tobytes()
try:
    zmpi.Comm
except ImportError as e:
    assert "mpi4py" in str(e)
else:
    raise AssertionError("zmpi.Comm without mpi4py")
print(f"clean venv: zmpi {zmpi.__version__} installed and imported, codecs {', '.join(sorted(zmpi.codecs()))}")
PY
