"""zmpi as a numcodecs codec, for Zarr and xarray: arrays stored with zmpi's
error bound.

    import zarr, zmpi.numcodecs
    z = zarr.array(field, chunks=(256, 256), compressor=zmpi.numcodecs.Zmpi(codec="fzl", rel=1e-3))

Registered under the id "zmpi" when this module is imported (importing zmpi
imports it when numcodecs is installed); its configuration keys are
zmpi.compress's keyword arguments: {"id": "zmpi", "codec": "fzl", "rel": 1e-3}.
"""
import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray, ndarray_copy
from numcodecs.registry import register_codec

from .codec import compress, decompress


class Zmpi(Codec):
    """numcodecs codec over zmpi.compress / zmpi.decompress (float32 and float64 chunks)."""

    codec_id = "zmpi"

    def __init__(self, codec="fzl", abs=None, rel=None, threads=1):
        self.codec, self.abs, self.rel, self.threads = codec, abs, rel, threads
        # bad settings raise here, not at the first chunk (every codec takes doubles)
        compress(np.zeros(1, np.float64), codec=codec, abs=abs, rel=rel, threads=threads)

    def encode(self, buf):
        """The chunk's memory as it is (as numcodecs' codecs take it): an F-ordered chunk (Zarr's order="F")
        is compressed as the C-ordered array of the reversed shape that its memory is, so its bytes come
        back in its order."""
        arr = np.asarray(buf) if isinstance(buf, np.ndarray) else ensure_contiguous_ndarray(buf)
        if arr.dtype.kind == "f" and not arr.dtype.isnative:
            raise TypeError(f"zmpi: a chunk of {arr.dtype.str} (not the machine's byte order): its decoded bytes "
                            "would be read in that order; store the array in the machine's byte order")
        if not arr.flags.c_contiguous:
            arr = arr.T if arr.flags.f_contiguous else np.ascontiguousarray(arr)
        return compress(arr, codec=self.codec, abs=self.abs, rel=self.rel, threads=self.threads)

    def decode(self, buf, out=None):
        """The chunk's bytes in the order they were encoded: into out's memory (C- or F-ordered) when given."""
        arr = decompress(ensure_contiguous_ndarray(buf))
        return ndarray_copy(arr.reshape(-1), out) if out is not None else arr

    def get_config(self):
        cfg = {"id": self.codec_id, "codec": self.codec, "threads": self.threads}
        if self.abs is not None:
            cfg["abs"] = self.abs
        if self.rel is not None:
            cfg["rel"] = self.rel
        return cfg

    def __repr__(self):
        return "Zmpi(" + ", ".join(f"{k}={v!r}" for k, v in self.get_config().items() if k != "id") + ")"


register_codec(Zmpi)
