"""Codecs on numpy arrays: compress, decompress, info, codecs, evaluate.

A compressed array is zmpi's C stream (the format every zmpi tool reads)
behind a prefix that keeps the array's shape:

    b"ZMPY", version (1 byte), ndim (1 byte), 2 reserved bytes,
    ndim little-endian uint64 dimensions, then the C stream.

decompress() also takes a bare C stream (from the C API or `zmpi codec`),
which comes back one-dimensional.
"""
import struct
import time
import warnings

import numpy as np

from ._native import CODEC_COUNT, ERR_CORRUPT, ERR_VERSION, P_THREADS, ffi, lib
from .errors import raise_for

MAGIC = b"ZMPY"
VERSION = 1
_DTYPES = {np.dtype(np.float32): lib.ZMPI_FLOAT, np.dtype(np.float64): lib.ZMPI_DOUBLE}
_NUMPY = {lib.ZMPI_FLOAT: np.float32, lib.ZMPI_DOUBLE: np.float64, lib.ZMPI_BYTE: np.uint8}


def codecs():
    """{name: description} of every codec of the library."""
    out = {}
    for c in range(CODEC_COUNT):
        name = lib.zmpi_codec_name(c)
        if name != ffi.NULL:
            out[ffi.string(name).decode()] = ffi.string(lib.zmpi_codec_description(c)).decode()
    return out


def _codec_id(codec):
    if not isinstance(codec, str):
        raise TypeError(f"codec must be a name (one of {', '.join(codecs())}), not {type(codec).__name__}")
    c = lib.zmpi_codec_from_name(codec.encode())
    if c < 0:
        raise ValueError(f"unknown codec {codec!r} (one of {', '.join(codecs())})")
    return c


def _bound(abs, rel):
    if abs is not None and rel is not None:
        raise ValueError("give abs= or rel=, not both")
    for name, v in (("abs", abs), ("rel", rel)):
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
                raise TypeError(f"{name} must be a number, not {type(v).__name__}")
            if not np.isfinite(v) or v <= 0:
                raise ValueError(f"{name}={v!r}: the bound must be finite and > 0")
            return (lib.ZMPI_EB_ABS if name == "abs" else lib.ZMPI_EB_REL), float(v)
    return lib.ZMPI_EB_NONE, 0.0


class _Ctx:
    """A C context (zmpi_ctx), freed with the object."""

    def __init__(self, codec="fzl", abs=None, rel=None, threads=1):
        self.ptr = ffi.gc(lib.zmpi_ctx_create(), lib.zmpi_ctx_free)
        if self.ptr == ffi.NULL:
            raise MemoryError("zmpi: no memory for a context")
        cid = _codec_id(codec)
        raise_for(lib.zmpi_ctx_set_codec(self.ptr, cid), f"codec {codec!r}")
        mode, eb = _bound(abs, rel)
        kind = lib.zmpi_codec_kind(cid)
        if kind == 1 and mode == lib.ZMPI_EB_NONE:
            raise ValueError(f"codec {codec!r} is error-bounded: give abs= or rel=")
        if kind != 1 and mode != lib.ZMPI_EB_NONE:
            raise ValueError(f"codec {codec!r} takes no error bound (it is "
                             f"{'lossless' if kind == 0 else 'fixed-precision'})")
        if lib.zmpi_codec_needs_channel(cid):
            raise ValueError(f"codec {codec!r} codes a message against the previous one of its channel: "
                             "it is for zmpi.Comm, not for single arrays")
        if mode != lib.ZMPI_EB_NONE:
            raise_for(lib.zmpi_ctx_set_bound(self.ptr, mode, eb), "the bound")
        if not isinstance(threads, int) or threads < 0:
            raise ValueError(f"threads={threads!r}: a count >= 0 (0: all cores)")
        raise_for(lib.zmpi_ctx_set_param(self.ptr, P_THREADS, threads), "threads")


def _as_array(arr):
    a = np.asarray(arr)
    if a.dtype not in _DTYPES:
        if a.dtype.kind == "f" and a.dtype.newbyteorder("=") in _DTYPES:  # another byte order: by value
            a = a.astype(a.dtype.newbyteorder("="))
        else:
            raise TypeError(f"zmpi compresses float32 and float64 arrays, not {a.dtype}")
    if not a.flags.c_contiguous:
        warnings.warn("zmpi: the array is not C-contiguous: compressing a C-ordered copy", stacklevel=3)
        a = np.ascontiguousarray(a)
    if a.ndim > 255:
        raise ValueError("zmpi: more than 255 dimensions")
    return a


def compress(arr, codec="fzl", abs=None, rel=None, threads=1):
    """Compresses a float32/float64 array of any shape; returns bytes. An array
    of the other byte order (">f8" here) is compressed by value: it comes
    back in the machine's byte order.

    codec: a name of zmpi.codecs() ("fzl", "zstd", "xorlzc", "trunc", ...).
    abs / rel: the error bound of an error-bounded codec: every element of
    the decompressed array is within abs of the original, or within
    rel * (max - min) of the array's finite values. NaN and Inf come back
    bit-exactly. threads: OpenMP threads (0: all cores). The array's shape
    is the shape hint of "fzr" (2-D / 3-D prediction); a 1-D array of a
    field that has rows can be given its shape with a reshape.
    """
    a = _as_array(arr)
    ctx = _Ctx(codec, abs, rel, threads)
    if a.ndim >= 2 and 0 not in a.shape and max(a.shape[-1], a.shape[-1] * a.shape[-2]) < 2**32:
        raise_for(lib.zmpi_ctx_set_dims(ctx.ptr, min(a.ndim, 8), ffi.new("size_t[]", list(a.shape[-8:]))),
                  "shape hint")
    dt = _DTYPES[a.dtype]
    cap = lib.zmpi_max_compressed_size(ctx.ptr, a.size, dt)
    head = MAGIC + struct.pack("<BBH", VERSION, a.ndim, 0) + struct.pack(f"<{a.ndim}Q", *a.shape)
    out = bytearray(len(head) + cap)
    out[:len(head)] = head
    dst = ffi.from_buffer(out)
    n = lib.zmpi_compress(ctx.ptr, ffi.from_buffer(a), a.size, dt, dst + len(head), cap)
    raise_for(n, "compress")
    return bytes(out[:len(head) + n])


def _split(buf):
    """(shape or None, memoryview of the C stream)."""
    try:
        mv = memoryview(buf).cast("B")
    except TypeError:
        raise TypeError(f"decompress takes bytes-like data, not {type(buf).__name__}") from None
    if bytes(mv[:4]) != MAGIC:
        return None, mv
    if len(mv) < 8:
        raise_for(ERR_CORRUPT, "the array header is truncated")
    version, ndim, _ = struct.unpack("<BBH", mv[4:8])
    if version != VERSION:
        raise_for(ERR_VERSION, f"array header version {version}")
    end = 8 + 8 * ndim
    if len(mv) < end:
        raise_for(ERR_CORRUPT, "the array header is truncated")
    return tuple(struct.unpack(f"<{ndim}Q", mv[8:end])), mv[end:]


def _stream_info(stream):
    info = ffi.new("zmpi_stream_info *")
    raise_for(lib.zmpi_stream_info_get(ffi.from_buffer(stream), len(stream), info), "stream")
    return info


def info(buf):
    """What a compressed buffer holds: codec, dtype, shape, count, bound, sizes."""
    shape, stream = _split(buf)
    i = _stream_info(stream)
    dtype = np.dtype(_NUMPY[i.dtype])
    nbytes = memoryview(buf).nbytes
    return {"codec": ffi.string(lib.zmpi_codec_name(i.codec)).decode(), "dtype": dtype.name,
            "shape": shape if shape is not None else (int(i.count),), "count": int(i.count),
            "eb_abs": float(i.eb), "param": int(i.param), "segments": int(i.nsegments),
            "checksum": bool(i.flags & 1), "stream_bytes": int(i.stream_size), "bytes": nbytes,
            "ratio": int(i.count) * dtype.itemsize / max(1, nbytes)}


def decompress(buf, out=None):
    """Decompresses zmpi.compress's bytes (or a bare C stream) into a new
    array of the original shape and dtype, or into `out` (C-contiguous, of
    that dtype and size)."""
    shape, stream = _split(buf)
    i = _stream_info(stream)
    if i.dtype not in (lib.ZMPI_FLOAT, lib.ZMPI_DOUBLE):
        raise TypeError("zmpi.decompress: the stream holds bytes, not an array of floats")
    dtype = np.dtype(_NUMPY[i.dtype])
    if shape is None:
        shape = (int(i.count),)
    elif int(np.prod(shape, dtype=np.uint64)) != int(i.count):
        raise_for(ERR_CORRUPT, f"the array header says {shape}, the stream {int(i.count)} elements")
    if out is None:
        out = np.empty(shape, dtype)
    else:
        if not isinstance(out, np.ndarray) or out.dtype != dtype or out.size != int(i.count) \
                or not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError(f"out must be a writeable C-contiguous {dtype.name} array of {int(i.count)} elements")
    ctx = _Ctx("stored")
    n = lib.zmpi_decompress(ctx.ptr, ffi.from_buffer(stream), len(stream), ffi.from_buffer(out), out.nbytes)
    raise_for(n, "decompress")
    return out


def evaluate(arr, codec="fzl", abs=None, rel=None, threads=1, repeat=3):
    """Compresses and decompresses arr (best of `repeat` timings) and returns
    ratio, speeds (bytes of the array per second), max error / bound, PSNR."""
    a = _as_array(arr)
    tc = td = float("inf")
    for _ in range(max(1, repeat)):
        t = time.perf_counter()
        z = compress(a, codec, abs, rel, threads)
        tc = min(tc, time.perf_counter() - t)
        t = time.perf_counter()
        r = decompress(z)
        td = min(td, time.perf_counter() - t)
    q = ffi.new("zmpi_quality *")
    raise_for(lib.zmpi_quality_compare(ffi.from_buffer(a), ffi.from_buffer(r), a.size, _DTYPES[a.dtype], q),
              "quality")
    eb = _stream_info(_split(z)[1]).eb
    return {"codec": codec, "ratio": a.nbytes / len(z), "compress_Bps": a.nbytes / tc if tc else float("inf"),
            "decompress_Bps": a.nbytes / td if td else float("inf"), "max_abs_err": q.max_abs_err,
            "max_err_over_bound": q.max_abs_err / eb if eb > 0 else None, "psnr": q.psnr, "nrmse": q.nrmse,
            "nonfinite_mismatch": int(q.nonfinite_mismatch), "bytes": len(z)}


