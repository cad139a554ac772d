"""zmpi for Python: error-bounded and lossless compression of numpy arrays
over zmpi's C library.

    import numpy as np, zmpi
    z = zmpi.compress(field, codec="fzl", rel=1e-3)   # bytes
    back = zmpi.decompress(z)                          # same shape and dtype
    zmpi.info(z), zmpi.codecs(), zmpi.evaluate(field, rel=1e-3)

and of MPI messages on mpi4py communicators (zmpi.Comm: help(zmpi.Comm)),
the numcodecs/Zarr codec "zmpi" (zmpi.numcodecs), typed settings
(zmpi.Config) and the profiler's reports (zmpi.report).
"""
from ._native import ffi, lib
from .codec import codecs, compress, decompress, evaluate, info
from .config import Config
from .errors import BoundError, CodecError, CorruptStreamError, Error

__version__ = ffi.string(lib.zmpi_version()).decode()

try:  # registers the numcodecs codec "zmpi" (Zarr, xarray) when numcodecs is installed
    from . import numcodecs  # noqa: F401
except ImportError:
    pass
__all__ = ["Config", "compress", "decompress", "info", "codecs", "evaluate", "Error", "BoundError", "CodecError",
           "CorruptStreamError", "__version__"]


def __getattr__(name):
    # zmpi.Comm needs mpi4py (and MPI initialised): imported on first use only
    if name in ("Comm", "Request"):
        try:
            import mpi4py  # noqa: F401
        except ImportError as e:
            raise ImportError("zmpi.Comm needs mpi4py, built against the MPI zmpi's libraries were built "
                              "with (docs/python.md, Install)") from e
        from . import comm
        return getattr(comm, name)
    raise AttributeError(f"module 'zmpi' has no attribute {name!r}")
