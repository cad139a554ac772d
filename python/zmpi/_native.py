"""The C library under the package, through cffi in ABI mode.

cffi reads the declarations below (the subset of <zmpi/codec.h> the package
uses) and calls libzmpi directly; it releases the GIL around every call, so
compression runs beside other Python threads. The libraries are looked up in
the installed package (zmpi/lib, where `pip install` puts them), then in the
directory $LIBZMPI_DIR, then in a build tree of the repository (build/src).
(Not a ZMPI_ variable: the C library rejects ZMPI_ names it does not know.)
"""
import os
from pathlib import Path

from cffi import FFI

CDEF = """
typedef enum zmpi_dtype { ZMPI_BYTE = 0, ZMPI_FLOAT = 1, ZMPI_DOUBLE = 2 } zmpi_dtype;
typedef int zmpi_codec;
typedef enum zmpi_eb_mode { ZMPI_EB_NONE = 0, ZMPI_EB_ABS = 1, ZMPI_EB_REL = 2 } zmpi_eb_mode;
typedef int zmpi_param;
typedef struct zmpi_ctx zmpi_ctx;
typedef struct zmpi_stream_info {
    zmpi_codec codec;
    zmpi_dtype dtype;
    uint64_t count;
    double eb;
    uint32_t param;
    uint32_t segment;
    uint32_t nsegments;
    uint32_t flags;
    uint64_t seq;
    size_t header_size;
    size_t stream_size;
} zmpi_stream_info;
typedef struct zmpi_quality {
    double max_abs_err;
    double rmse;
    double nrmse;
    double psnr;
    double value_range;
    uint64_t nonfinite_mismatch;
} zmpi_quality;

const char *zmpi_strerror(int code);
const char *zmpi_error_name(int code);
const char *zmpi_codec_name(zmpi_codec codec);
int zmpi_codec_from_name(const char *name);
const char *zmpi_codec_description(zmpi_codec codec);
int zmpi_codec_kind(zmpi_codec codec);
int zmpi_codec_needs_channel(zmpi_codec codec);
zmpi_ctx *zmpi_ctx_create(void);
void zmpi_ctx_free(zmpi_ctx *ctx);
int zmpi_ctx_set_codec(zmpi_ctx *ctx, zmpi_codec codec);
int zmpi_ctx_set_bound(zmpi_ctx *ctx, zmpi_eb_mode mode, double value);
long long zmpi_ctx_set_param(zmpi_ctx *ctx, zmpi_param param, long long value);
int zmpi_ctx_set_dims(zmpi_ctx *ctx, int ndims, const size_t *dims);
size_t zmpi_max_compressed_size(const zmpi_ctx *ctx, size_t count, zmpi_dtype dtype);
ptrdiff_t zmpi_compress(zmpi_ctx *ctx, const void *src, size_t count, zmpi_dtype dtype, void *dst, size_t dst_cap);
ptrdiff_t zmpi_decompress(zmpi_ctx *ctx, const void *src, size_t src_size, void *dst, size_t dst_cap);
int zmpi_stream_info_get(const void *src, size_t src_size, zmpi_stream_info *info);
int zmpi_quality_compare(const void *orig, const void *recon, size_t count, zmpi_dtype dtype, zmpi_quality *out);
const char *zmpi_version(void);
"""

CODEC_COUNT = 12  # ZMPI_CODEC_COUNT_
ERR_CORRUPT, ERR_VERSION = -7, -8  # ZMPI_ERR_CORRUPT, ZMPI_ERR_VERSION
P_THREADS, P_SEGMENT, P_BLOCK, P_LEVEL, P_TRUNC_BITS, P_CHECKSUM = range(6)

ffi = FFI()
ffi.cdef(CDEF)


# Never unloaded: MPI_Finalize (mpi4py's, at exit) calls the attribute callbacks
# libzmpi_mpi registered on communicators, after Python has dropped its objects.
DLOPEN_FLAGS = ffi.RTLD_NOW | getattr(ffi, "RTLD_NODELETE", 0)


def find_library(name):
    """The path of one of zmpi's shared libraries (ImportError if there is none)."""
    here = Path(__file__).resolve().parent
    paths = [here / "lib" / name]
    if os.environ.get("LIBZMPI_DIR"):
        paths.append(Path(os.environ["LIBZMPI_DIR"]) / name)
    paths.append(here.parent.parent / "build" / "src" / name)
    for p in paths:
        if p.exists():
            return str(p)
    raise ImportError(f"zmpi: {name} not found (looked in " + ", ".join(map(str, paths)) +
                      "); install the package with pip, or set LIBZMPI_DIR")


def _load():
    return ffi.dlopen(find_library("libzmpi.so"), DLOPEN_FLAGS)


lib = _load()
