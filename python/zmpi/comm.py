"""Compressed communication on mpi4py communicators (upper-case, buffer style).

    from mpi4py import MPI
    import numpy as np, zmpi
    zc = zmpi.Comm(MPI.COMM_WORLD, eb=1e-4, mode="rel")   # collective: duplicates the communicator
    x = np.empty(1 << 20, np.float32)
    zc.Bcast(x, root=0)                                  # every element within the bound
    zc.Allreduce(MPI.IN_PLACE, x)                        # the bound holds on the result (scope="result")

The calls are libzmpi_mpi's (the C library, through cffi, with the GIL
released): float32/float64 data are compressed under the communicator's
bound, anything else (or a call below ZMPI_MIN_BYTES) runs as plain MPI.
Buffers are what mpi4py takes, with mpi4py's checks: a contiguous numpy
array (or another buffer), [array, datatype], [array, count, datatype],
[array, (count, displ), datatype]; v-collectives [array, counts],
[array, counts, displs], [array, (counts, displs), datatype]. An explicit
datatype zmpi compresses (MPI.FLOAT, MPI.DOUBLE) over an array of another
type moves the array's bytes exactly, uncompressed, as mpi4py does.
"""
import dataclasses
import operator
import sys
import warnings

import numpy as np
from cffi import FFI
from mpi4py import MPI

from . import config as _config
from ._native import DLOPEN_FLAGS, find_library
from .errors import CodecError, Error

_H = "int" if MPI._sizeof(MPI.Comm) == 4 else "void *"  # MPICH's handles are ints, Open MPI's pointers

_CDEF = f"""
typedef {_H} MPI_Comm;
typedef {_H} MPI_Datatype;
typedef {_H} MPI_Op;
typedef {_H} MPI_Request;
typedef struct ZMPI_Stats {{
    unsigned long long calls, compressed, fallback_type, fallback_small, fallback_config, fallback_model,
        codec_errors, bytes_raw, bytes_sent, scratch_bytes, ns_compress, ns_decompress;
    int last_algorithm[8];
    unsigned long long channel_bytes, grid_sums;
    int nodes;
    unsigned long long fallback_node;
}} ZMPI_Stats;
int ZMPI_Comm_set_config(MPI_Comm comm, const ZMPI_Config *cfg);
int ZMPI_Comm_get_config(MPI_Comm comm, ZMPI_Config *cfg);
int ZMPI_Comm_get_stats(MPI_Comm comm, ZMPI_Stats *stats);
int ZMPI_Comm_prepare(MPI_Comm comm);
int ZMPI_Comm_nodes(MPI_Comm comm, int *nnodes, int *node, int *local_rank, int *local_size, int *node_of);
int ZMPI_Error_class(int errorcode, int *errorclass);
int ZMPI_Type_compressible(MPI_Datatype datatype, int *flag);
int ZMPI_Model_estimate(MPI_Comm comm, int coll, long long count, MPI_Datatype datatype, double *t_plain,
                        double *t_zmpi);
int ZMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int ZMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, void *status);
int ZMPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request);
int ZMPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
               MPI_Request *request);
int ZMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                  MPI_Comm comm, void *status);
int ZMPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int ZMPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request *request);
int ZMPI_Wait(MPI_Request *request, void *status);
int ZMPI_Test(MPI_Request *request, int *flag, void *status);
int ZMPI_Waitall(int count, MPI_Request requests[], void *statuses);
int ZMPI_Waitany(int count, MPI_Request requests[], int *index, void *status);
int ZMPI_Testall(int count, MPI_Request requests[], int *flag, void *statuses);
int ZMPI_Cancel(MPI_Request *request);
int ZMPI_Probe(int source, int tag, MPI_Comm comm, void *status);
int ZMPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, void *status);
int ZMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int ZMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm);
int ZMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int ZMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm);
int ZMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm);
int ZMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm);
int ZMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm);
int ZMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm);
int ZMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                   MPI_Comm comm);
int ZMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm);
int ZMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm);
int ZMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm);
int ZMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm);
"""

ffi = FFI()
ffi.include(_config.ffi)  # ZMPI_Config
ffi.cdef(_CDEF)


lib = ffi.dlopen(find_library("libzmpi_mpi.so"), DLOPEN_FLAGS)


COLLS = ("bcast", "scatter", "gather", "allgather", "alltoall", "reduce_scatter", "allreduce", "reduce")
_FLOATS = {np.dtype(np.float32): MPI.FLOAT, np.dtype(np.float64): MPI.DOUBLE}
_F4, _F8 = np.dtype(np.float32), np.dtype(np.float64)
_INT_MAX = 2**31 - 1
_LITTLE = sys.byteorder == "little"


def _h(obj):
    """The C handle of an mpi4py object, as cffi wants it."""
    v = MPI._handleof(obj)
    if _H == "int":  # MPICH's handles are C ints (mpi4py gives them as unsigned 64-bit values)
        return ((v & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000
    return ffi.cast("void *", v)


_REQUEST_NULL = _h(MPI.REQUEST_NULL)


def _check(rc, what):
    """Raises the exception of an MPI/zmpi error code: ValueError for bad arguments, CodecError for
    data zmpi cannot take as declared (doubles into floats), zmpi.Error for the rest."""
    if rc == MPI.SUCCESS:
        return
    cls = ffi.new("int *")
    lib.ZMPI_Error_class(rc, cls)
    msg = f"zmpi: {what}: {MPI.Get_error_string(rc)}"
    if cls[0] == MPI.ERR_ARG:
        raise ValueError(msg)
    raise (CodecError if cls[0] == MPI.ERR_TYPE else Error)(msg, None)


_PREDEFINED_FLOATS = {}  # handle of a predefined datatype -> numpy dtype of its elements if zmpi compresses it, or None


def _float_elements(dt):
    """The numpy type (float32 / float64) of the elements zmpi compresses for the MPI datatype dt (MPI_FLOAT,
    MPI_DOUBLE, the Fortran reals, derived types made only of one of them), or None: zmpi passes dt to MPI."""
    if dt == MPI.FLOAT:
        return _F4
    if dt == MPI.DOUBLE:
        return _F8
    key = MPI._handleof(dt)
    if key in _PREDEFINED_FLOATS:
        return _PREDEFINED_FLOATS[key]
    flag = ffi.new("int *")
    if dt == MPI.DATATYPE_NULL or lib.ZMPI_Type_compressible(_h(dt), flag) != MPI.SUCCESS or not flag[0]:
        el = None
    else:
        leaf = dt
        while not leaf.is_predefined:  # a derived type of one float type: any of its leaves says which
            leaf = leaf.Get_contents()[3][0]
        el = np.dtype(f"f{leaf.Get_size()}")
    if dt.is_predefined:
        _PREDEFINED_FLOATS[key] = el
    return el



def _implicit_type(arr, what):
    """The MPI datatype mpi4py takes for an array given without one (its buffer format): BufferError for a
    byte order that is not the machine's, KeyError for a type MPI has no datatype for."""
    fmt = memoryview(arr).format
    order = fmt[:1]
    if order in ("@", "="):
        fmt = fmt[1:]
    elif order in ("<", ">", "!"):
        if (order == "<") != _LITTLE:
            raise BufferError(f"{what}: the array's byte order is not the machine's ({arr.dtype.str}): convert it "
                              f"(a.astype(a.dtype.newbyteorder('='))) or give [array, datatype] to move its "
                              "bytes as they are")
        fmt = fmt[1:]
    if fmt == "B":
        return MPI.BYTE
    dt = MPI._typedict.get(fmt)
    if dt is None:
        raise KeyError(f"{what}: no MPI datatype for an array of {arr.dtype} (format {fmt!r}): give [array, datatype]")
    return dt


def _index(v, what, name):
    try:
        i = operator.index(v)
    except TypeError:
        raise TypeError(f"{what}: {name} must be an integer, not {type(v).__name__}") from None
    if i < 0:
        raise ValueError(f"{what}: negative {name} {i}")
    if i > _INT_MAX:
        raise OverflowError(f"{what}: {name} {i} does not fit zmpi's C int (MPI-3 counts)")
    return i


def _int_array(v, n, what, name):
    """n non-negative C ints from an integer, a sequence of n of them, or None (returns None)."""
    if v is None:
        return None
    if isinstance(v, (int, np.integer)):
        v = [v] * n
    a = np.asarray(v)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise TypeError(f"{what}: {name} must be {n} integers")
    if a.size != n:
        raise ValueError(f"{what}: {a.size} {name} for {n} ranks")
    if a.size and int(a.min()) < 0:
        raise ValueError(f"{what}: negative {name} {int(a.min())}")
    if a.size and int(a.max()) > _INT_MAX:
        raise OverflowError(f"{what}: {name} {int(a.max())} does not fit zmpi's C int (MPI-3 counts)")
    return np.ascontiguousarray(a, dtype=np.intc)


def _is_type(x):
    return isinstance(x, (MPI.Datatype, str))


def _tname(dt):
    return dt.Get_name() or "the derived datatype"


class _Buf:
    """A buffer spec resolved as mpi4py resolves it - pointer, count (per block with blocks > 1), MPI datatype,
    counts and displacements of a v-spec - with the checks mpi4py makes (BufferError: not contiguous,
    read-only receive, byte order; KeyError: no datatype; ValueError: sizes) and those it leaves to MPI
    that zmpi makes itself (counts and displacements inside the array). raw: the spec's explicit datatype
    is one zmpi compresses but the array holds something else, so its bytes must move exactly."""

    __slots__ = ("arr", "ptr", "count", "type", "displ", "in_place", "counts", "displs", "cptr", "dptr", "raw",
                 "base")

    def __init__(self, spec, vector=False, writable=False, what="buffer", blocks=1, in_place=True):
        self.counts = self.displs = self.cptr = self.dptr = None
        self.raw = False
        self.displ = 0
        if spec is MPI.IN_PLACE:
            if not in_place:
                raise ValueError(f"{what}: MPI.IN_PLACE is not allowed here")
            self.ptr, self.count, self.type = ffi.cast("void *", int(MPI.IN_PLACE)), 0, MPI.DATATYPE_NULL
            self.arr = self.base = None
            self.in_place = True
            return
        self.in_place = False
        count = displ = dtype = None
        if isinstance(spec, np.ndarray):
            buf = spec
        elif isinstance(spec, (list, tuple)):
            buf, rest = (spec[0], list(spec[1:])) if spec else (None, [])
            if not 1 <= len(rest) <= 3:
                raise ValueError(f"{what}: a buffer spec has 2 to 4 items: [array, (count(s), (displ(s),)) datatype]")
            if _is_type(rest[-1]):
                dtype = rest.pop()
            if len(rest) == 1 and isinstance(rest[0], tuple if vector else (tuple, list)):
                if len(rest[0]) != 2:
                    raise ValueError(f"{what}: (counts, displs) has 2 items")
                rest = list(rest[0])
            if len(rest) > 2:
                raise ValueError(f"{what}: [array, count(s), displ(s), datatype] at most")
            count = rest[0] if rest else None
            displ = rest[1] if len(rest) > 1 else None
        else:
            buf = spec
        if isinstance(buf, np.ndarray):
            arr = buf
        else:  # any object with the buffer protocol (bytes, bytearray, memoryview, array.array, ...)
            try:
                arr = np.asarray(memoryview(buf))
            except TypeError:
                raise TypeError(f"{what}: a numpy array or another buffer (or an [array, ...] spec), "
                                f"not {type(buf).__name__}") from None
        flags = arr.flags
        c_order = flags.c_contiguous
        if not c_order and not flags.f_contiguous:
            raise BufferError(f"{what}: the array is not contiguous (np.ascontiguousarray copies it)")
        if writable and not flags.writeable:
            raise BufferError(f"{what}: the array is read-only (a receive buffer must be writable)")
        if dtype is None:
            dtype = _FLOATS.get(arr.dtype)
            if dtype is None:
                dtype = _implicit_type(arr, what)
            explicit = False
        else:
            if isinstance(dtype, str):
                try:
                    dtype = MPI._typedict[dtype]
                except KeyError:
                    raise KeyError(f"{what}: no MPI datatype for the type code {dtype!r}") from None
            if dtype == MPI.DATATYPE_NULL:
                raise ValueError(f"{what}: the datatype is MPI.DATATYPE_NULL")
            explicit = True
        if dtype is MPI.FLOAT or dtype is MPI.DOUBLE:
            extent, derived = (4 if dtype is MPI.FLOAT else 8), False
        else:
            extent, derived = dtype.Get_extent()[1], not dtype.is_predefined
            if extent <= 0:
                raise ValueError(f"{what}: the datatype's extent is {extent}")
        nbytes = arr.nbytes
        total = nbytes // extent
        self.arr, self.type = arr, dtype
        if vector:
            if count is None and nbytes % extent:
                raise ValueError(f"{what}: {nbytes} bytes are not a whole number of {_tname(dtype)}")
            counts = _int_array(count, blocks, what, "counts")
            if counts is None:  # mpi4py: the elements split as evenly as they go
                counts = np.array([total // blocks + (i < total % blocks) for i in range(blocks)], np.intc)
            if isinstance(displ, (int, np.integer)):  # one integer: a stride, as mpi4py takes it
                displ = [_index(displ, what, "displacement stride") * i for i in range(blocks)]
            displs = _int_array(displ, blocks, what, "displs")
            if displs is None:
                ends = np.cumsum(counts, dtype=np.int64)
                if int(ends[-1]) > _INT_MAX:
                    raise OverflowError(f"{what}: {int(ends[-1])} elements do not fit zmpi's C int displacements")
                displs = np.ascontiguousarray(ends - counts, dtype=np.intc)
            used = counts > 0
            if used.any():
                end = int((displs[used].astype(np.int64) + counts[used]).max())
                if end > total or (derived and not self._fits(dtype, extent, end, nbytes)):
                    raise ValueError(f"{what}: counts and displacements reach element {end}, past the array's "
                                     f"{total} {_tname(dtype)}")
            self.counts, self.displs = counts, displs
            self.cptr, self.dptr = ffi.from_buffer("int[]", counts), ffi.from_buffer("int[]", displs)
            self.count = 0
        else:
            d = 0 if displ is None else _index(displ, what, "displacement")
            if d > total:
                raise ValueError(f"{what}: displacement {d} is past the array's {total} {_tname(dtype)}")
            if count is None:
                left = nbytes - d * extent
                if left % extent:
                    raise ValueError(f"{what}: {left} bytes are not a whole number of {_tname(dtype)} "
                                     f"(extent {extent})")
                n = left // extent
                if blocks > 1 and n % blocks:
                    raise ValueError(f"{what}: {n} elements do not split into {blocks} equal blocks")
                c = n // blocks
            else:
                c = _index(count, what, "count")
                if d + c * blocks > total:
                    raise ValueError(f"{what}: {c * blocks} elements from element {d} reach past the array's "
                                     f"{total} {_tname(dtype)}")
            if derived and c and not self._fits(dtype, extent, d + c * blocks, nbytes):
                raise ValueError(f"{what}: {c * blocks} of the datatype reach past the array")
            if c * blocks > _INT_MAX:
                raise OverflowError(f"{what}: {c * blocks} elements do not fit zmpi's C int (MPI-3 counts)")
            self.count, self.displ = c, d
        mem = arr if c_order else arr.T  # an F-ordered array: its memory, as mpi4py takes it
        if nbytes:
            self.base = ffi.from_buffer(mem, require_writable=writable)
            self.ptr = self.base + self.displ * extent if self.displ else self.base
        else:
            self.ptr = self.base = ffi.NULL
        if explicit:
            el = _float_elements(dtype)
            self.raw = el is not None and arr.dtype != el

    @staticmethod
    def _fits(dtype, extent, end, nbytes):
        """The first end elements of a derived datatype lie inside nbytes (its true extent may pass its extent)."""
        tlb, text = dtype.Get_true_extent()
        return tlb >= 0 and (end - 1) * extent + tlb + text <= nbytes

    def span(self):
        """The array's memory: (first address, address past the last)."""
        lo = int(ffi.cast("uintptr_t", self.base))
        return lo, lo + self.arr.nbytes

    def overlaps(self, other):
        if self.in_place or other.in_place or self.base == ffi.NULL or other.base == ffi.NULL:
            return False
        (a, b), (c, d) = self.span(), other.span()
        return a < d and c < b

    def same(self, other):
        return self.base != ffi.NULL and self.base == other.base and self.arr.nbytes == other.arr.nbytes

    def spec(self):
        """The buffer as a spec mpi4py's own calls take."""
        if self.in_place:
            return MPI.IN_PLACE
        if self.counts is not None:
            return [self.arr, self.counts.tolist(), self.displs.tolist(), self.type]
        return [self.arr, self.count, self.displ, self.type]


def _bytes_of(b, count):
    return count * b.type.Get_size()


def _match(what, s, scount, r, rcount):
    """A rank's own send and receive of one block must be the same data: equal sizes in bytes and, where zmpi
    compresses either, the same float type (MPI requires it; zmpi would truncate or misread otherwise)."""
    if s.type == r.type:
        if scount != rcount:
            raise ValueError(f"{what}: mismatch in send count {scount} and receive count {rcount}")
        return
    se, re = _float_elements(s.type), _float_elements(r.type)
    if (se is not None or re is not None) and se != re:
        raise ValueError(f"{what}: mismatch in send and receive MPI datatypes ({_tname(s.type)}, "
                         f"{_tname(r.type)})")
    sb, rb = _bytes_of(s, scount), _bytes_of(r, rcount)
    if sb != rb:
        raise ValueError(f"{what}: the send ({scount} {_tname(s.type)}, {sb} bytes) and the receive "
                         f"({rcount} {_tname(r.type)}, {rb} bytes) differ")


def _same_op_args(what, s, r):
    """mpi4py's checks of a reduction: the same datatype and count on both sides."""
    if s.type != r.type:
        raise ValueError(f"{what}: mismatch in send and receive MPI datatypes ({_tname(s.type)}, "
                         f"{_tname(r.type)})")
    if s.count != r.count:
        raise ValueError(f"{what}: mismatch in send count {s.count} and receive count {r.count}")


class Request:
    """A nonblocking zmpi operation: Wait(), Test(); keeps its buffer alive until it completes."""

    def __init__(self, buf):
        self._req = ffi.new("MPI_Request *")
        self._buf = buf

    def Wait(self, status=None):
        """Waits for completion (a receive's data is decoded into its buffer); status as Recv's."""
        status = status if status is not None else MPI.Status()
        _check(lib.ZMPI_Wait(self._req, _status(status)), "Wait")
        self._buf = None

    def Test(self, status=None):
        """True if the operation has completed (then as Wait), else False at once."""
        flag = ffi.new("int *")
        status = status if status is not None else MPI.Status()
        _check(lib.ZMPI_Test(self._req, flag, _status(status)), "Test")
        if flag[0]:
            self._buf = None
        return bool(flag[0])

    def Cancel(self):
        """Asks MPI to cancel the operation; complete it with Wait/Test as usual."""
        _check(lib.ZMPI_Cancel(self._req), "Cancel")

    @staticmethod
    def _many(requests, what):
        requests = list(requests)
        if not all(isinstance(r, Request) for r in requests):
            raise TypeError(f"{what}: zmpi.Request objects (mpi4py's own requests go to mpi4py's calls)")
        arr = ffi.new("MPI_Request[]", max(len(requests), 1))
        for i, r in enumerate(requests):
            arr[i] = r._req[0]
        return requests, arr

    @staticmethod
    def _back(requests, arr):
        for i, r in enumerate(requests):
            r._req[0] = arr[i]
            if arr[i] == _REQUEST_NULL:
                r._buf = None

    @staticmethod
    def Waitall(requests, statuses=None):
        """Waits for all of requests (a list of zmpi.Request); statuses: None or a list of as many
        mpi4py Status objects, filled as Wait's."""
        requests, arr = Request._many(requests, "Waitall")
        st = _Statuses(len(requests), statuses, "Waitall")
        try:
            _check(lib.ZMPI_Waitall(len(requests), arr, st.ptr), "Waitall")
        finally:
            Request._back(requests, arr)
            st.copy_out()

    @staticmethod
    def Testall(requests, statuses=None):
        """True (statuses filled as Waitall's) if all of requests have completed, else False."""
        requests, arr = Request._many(requests, "Testall")
        st = _Statuses(len(requests), statuses, "Testall")
        flag = ffi.new("int *")
        try:
            _check(lib.ZMPI_Testall(len(requests), arr, flag, st.ptr), "Testall")
        finally:
            Request._back(requests, arr)
            if flag[0]:
                st.copy_out()
        return bool(flag[0])

    @staticmethod
    def Waitany(requests, status=None):
        """Waits for one of requests; returns its index (MPI.UNDEFINED if none is active)."""
        requests, arr = Request._many(requests, "Waitany")
        index = ffi.new("int *")
        status = status if status is not None else MPI.Status()
        try:
            _check(lib.ZMPI_Waitany(len(requests), arr, index, _status(status)), "Waitany")
        finally:
            Request._back(requests, arr)
        return index[0]


class _Statuses:
    """A C array of MPI_Status for the multi-request calls, copied into mpi4py Status objects."""

    def __init__(self, n, statuses, what):
        if statuses is not None and (len(statuses) != n or not all(isinstance(s, MPI.Status) for s in statuses)):
            raise ValueError(f"{what}: statuses must be None or {n} mpi4py Status objects")
        self.statuses, self.size = statuses, MPI._sizeof(MPI.Status)
        self.buf = ffi.new("char[]", max(n, 1) * self.size)
        self.ptr = ffi.cast("void *", self.buf)

    def copy_out(self):
        for i, s in enumerate(self.statuses or ()):
            ffi.memmove(ffi.cast("char *", MPI._addressof(s)), self.buf[i * self.size:(i + 1) * self.size], self.size)


def _status(status):
    """The address of an mpi4py Status (a caller that ignores the status passes a fresh one: MPI's
    MPI_STATUS_IGNORE is a library-specific constant mpi4py does not expose)."""
    return ffi.cast("void *", MPI._addressof(status))


class Comm:
    """zmpi on an mpi4py intracommunicator (see the module's docstring).

    Comm(comm, eb=None, mode=None, scope=None, codec=None, min_bytes=None, threads=None, config=None)
    is collective over comm: it duplicates it (zmpi's settings belong to the duplicate, comm is left
    alone) and the settings must agree on every rank. The settings are config's (a zmpi.Config), with
    the keyword arguments on top; whatever both leave None is the ZMPI_* environment's (or the built-in
    default). eb without mode: ZMPI_EB_MODE's mode, else "rel". No bound anywhere (eb=None, no ZMPI_EB):
    only the lossless codecs compress (codec="zstd" or "xorlzc"); an error-bounded codec then compresses
    nothing, which raises ValueError if it was asked for by name and warns (RuntimeWarning) otherwise.
    """

    def __init__(self, comm, eb=None, mode=None, scope=None, codec=None, min_bytes=None, threads=None,
                 config=None):
        if not isinstance(comm, MPI.Intracomm):
            raise TypeError("zmpi.Comm needs an mpi4py intracommunicator")
        if config is not None and not isinstance(config, _config.Config):
            raise TypeError("config must be a zmpi.Config")
        cfg = dataclasses.replace(config) if config is not None else _config.Config()
        if eb is not None:
            if isinstance(eb, bool) or not isinstance(eb, (int, float, np.floating)) or not np.isfinite(eb) or eb <= 0:
                raise ValueError(f"eb={eb!r}: a finite bound > 0 (or None: the environment's, else lossless)")
            cfg.eb = float(eb)
            if mode is None and cfg.eb_mode == "none":  # a config without a bound (Config.from_env()): the
                cfg.eb_mode = None                       # mode comes from ZMPI_EB_MODE, as for eb_mode=None
        if mode is not None:
            if mode not in ("abs", "rel", "none"):
                raise ValueError(f"mode={mode!r}: 'abs' or 'rel' (or 'none': no bound)")
            cfg.eb_mode = mode
        for name, v in (("scope", scope), ("codec", codec), ("min_bytes", min_bytes), ("threads", threads)):
            if v is not None:
                setattr(cfg, name, v)
        c = cfg.to_c(ffi.new("ZMPI_Config *"))
        _config.say_if_plain(cfg, c)
        self.comm = comm.Dup()
        self.comm.Set_errhandler(MPI.ERRORS_RETURN)
        self._c = _h(self.comm)
        _check(lib.ZMPI_Comm_set_config(self._c, c), "settings")
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        if self.size > 1 and _config.lib.ZMPI_Config_compresses(c) and not c.intra_node:
            self._say_one_node()

    def _say_one_node(self):
        """Collective: zmpi learns the nodes now; where every rank shares one, nothing will be compressed
        (what stays on a node travels plain), and rank 0 says so (RuntimeWarning) - the workstation case."""
        nnodes = ffi.new("int *")
        _check(lib.ZMPI_Comm_nodes(self._c, nnodes, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL), "nodes")
        if nnodes[0] == 1 and self.rank == 0:
            warnings.warn(f"zmpi.Comm: the {self.size} ranks share one node, where messages travel plain (shared "
                          "memory is faster than any codec): nothing will be compressed; to try zmpi on one "
                          "machine, make every rank a node of its own: ZMPI_NODE_RANKS=1 or "
                          "config=zmpi.Config(node_ranks=1)", RuntimeWarning, stacklevel=3)

    def __getattr__(self, name):
        """Everything zmpi does not wrap (Get_rank, Barrier, the lower-case pickled calls, ...) is the
        mpi4py duplicate's own: plain MPI, on the same communicator."""
        if name == "comm":  # not yet set: __init__ failed before duplicating
            raise AttributeError(name)
        return getattr(self.comm, name)

    def config(self):
        """The communicator's settings (zmpi.Config)."""
        c = ffi.new("ZMPI_Config *")
        _check(lib.ZMPI_Comm_get_config(self._c, c), "config")
        return _config.Config.from_c(c)

    def Free(self):
        """Frees the duplicate (collective)."""
        if self.comm != MPI.COMM_NULL:
            self.comm.Free()

    # ---- point-to-point ----
    def _send_args(self, b):
        """(pointer, count, datatype, what to keep alive) of a zmpi send of b. A raw buffer (an explicit
        datatype zmpi compresses, over an array of another type) goes as its bytes, MPI_BYTE, which zmpi
        sends as they are, so that a zmpi receive gets them exactly (bytes that happen to read as a zmpi
        message are framed by libzmpi_mpi, so that no receive decodes them)."""
        if not b.raw:
            return b.ptr, b.count, _h(b.type), b
        n = b.count * b.type.Get_size()
        data, keep = b.ptr, b
        if n and not b.type.is_predefined:  # a derived type's elements, packed as MPI packs them
            packed = np.empty(b.type.Pack_size(b.count, self.comm), np.uint8)
            n = b.type.Pack([ffi.buffer(b.ptr, b.count * b.type.Get_extent()[1]), b.count, b.type], packed, 0,
                            self.comm)
            data, keep = ffi.from_buffer(packed), (b, packed)
        if n > _INT_MAX:
            raise OverflowError(f"{n} bytes do not fit zmpi's C int (MPI-3 counts)")
        return data, n, _h(MPI.BYTE), keep

    def Send(self, buf, dest, tag=0):
        """Sends buf (compressed if float32/float64 and compression pays) to dest; matches any zmpi receive."""
        p, n, t, _ = self._send_args(_Buf(buf, what="Send", in_place=False))
        _check(lib.ZMPI_Send(p, n, t, dest, tag, self._c), "Send")

    def Recv(self, buf, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=None):
        """Receives into buf (a compressed message is decoded into it); status: source, tag, element count."""
        b = _Buf(buf, writable=True, what="Recv", in_place=False)
        status = status if status is not None else MPI.Status()
        _check(lib.ZMPI_Recv(b.ptr, b.count, _h(b.type), source, tag, self._c, _status(status)), "Recv")

    def Ssend(self, buf, dest, tag=0):
        """Send that completes only once the receive has started (MPI_Ssend's semantics)."""
        p, n, t, _ = self._send_args(_Buf(buf, what="Ssend", in_place=False))
        _check(lib.ZMPI_Ssend(p, n, t, dest, tag, self._c), "Ssend")

    def Issend(self, buf, dest, tag=0):
        """Starts an Ssend; returns a zmpi.Request."""
        p, n, t, keep = self._send_args(_Buf(buf, what="Issend", in_place=False))
        r = Request(keep)
        _check(lib.ZMPI_Issend(p, n, t, dest, tag, self._c, r._req), "Issend")
        return r

    def Probe(self, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=None):
        """Waits for a matching message; status.Get_count(MPI.FLOAT/DOUBLE) is the count of elements it holds
        (decoded, not its bytes on the wire). Receive it with this Comm's Recv/Irecv/Sendrecv."""
        status = status if status is not None else MPI.Status()
        _check(lib.ZMPI_Probe(source, tag, self._c, _status(status)), "Probe")

    def Iprobe(self, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=None):
        """True (status as Probe's) if a matching message has arrived, else False."""
        flag = ffi.new("int *")
        status = status if status is not None else MPI.Status()
        _check(lib.ZMPI_Iprobe(source, tag, self._c, flag, _status(status)), "Iprobe")
        return bool(flag[0])

    def Isend(self, buf, dest, tag=0):
        """Starts a Send; returns a zmpi.Request (Wait/Test). buf must not change until it completes."""
        p, n, t, keep = self._send_args(_Buf(buf, what="Isend", in_place=False))
        r = Request(keep)
        _check(lib.ZMPI_Isend(p, n, t, dest, tag, self._c, r._req), "Isend")
        return r

    def Irecv(self, buf, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG):
        """Starts a Recv; returns a zmpi.Request whose Wait/Test decode the message into buf."""
        b = _Buf(buf, writable=True, what="Irecv", in_place=False)
        r = Request(b)
        _check(lib.ZMPI_Irecv(b.ptr, b.count, _h(b.type), source, tag, self._c, r._req), "Irecv")
        return r

    def Sendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=MPI.ANY_SOURCE, recvtag=MPI.ANY_TAG,
                 status=None):
        """Send to dest and Recv from source in one call (no deadlock between pairs)."""
        s = _Buf(sendbuf, what="Sendrecv send", in_place=False)
        r = _Buf(recvbuf, writable=True, what="Sendrecv receive", in_place=False)
        if s.overlaps(r):
            raise ValueError("Sendrecv: the send and receive buffers overlap (MPI needs them apart)")
        sp, sn, st, _ = self._send_args(s)
        status = status if status is not None else MPI.Status()
        _check(lib.ZMPI_Sendrecv(sp, sn, st, dest, sendtag, r.ptr, r.count, _h(r.type), source, recvtag, self._c,
                                 _status(status)), "Sendrecv")

    # ---- collectives ----
    # A buffer with an explicit datatype zmpi compresses over an array of another type (raw) moves its bytes
    # exactly, as mpi4py does: the whole call is then mpi4py's own on the duplicate (plain MPI), which the
    # other ranks match only by doing the same (giving such a buffer too), since zmpi decides per call, on
    # every rank alike, from the datatype and count.
    @staticmethod
    def _raw(*bufs):
        return any(b is not None and b.raw for b in bufs)

    @staticmethod
    def _apart(what, s, r):
        """A send and a receive buffer of one rank: the same memory is MPI.IN_PLACE (as mpi4py takes it),
        overlapping memory an error (MPI needs them apart)."""
        if s.in_place or r is None or r.in_place:
            return s
        if s.same(r) and s.ptr == r.ptr and s.type == r.type and s.count == r.count:
            return _Buf(MPI.IN_PLACE)
        if s.overlaps(r):
            raise ValueError(f"{what}: the send and receive buffers overlap (MPI.IN_PLACE is the in-place form)")
        return s

    def Bcast(self, buf, root=0):
        """Broadcasts root's buf to every rank (each element within the bound of root's data)."""
        b = _Buf(buf, writable=self.rank != root, what="Bcast", in_place=False)
        if b.raw:
            return self.comm.Bcast(b.spec(), root)
        _check(lib.ZMPI_Bcast(b.ptr, b.count, _h(b.type), root, self._c), "Bcast")

    def Scatter(self, sendbuf, recvbuf, root=0):
        """Root's sendbuf in equal blocks, block i to rank i (recvbuf may be MPI.IN_PLACE at root)."""
        is_root = self.rank == root
        r = _Buf(recvbuf, writable=True, what="Scatter receive", in_place=is_root)
        s = _Buf(sendbuf, what="Scatter send", blocks=self.size, in_place=False) if is_root else None
        if s is not None:
            if not r.in_place:
                _match("Scatter", s, s.count, r, r.count)
                r = self._apart("Scatter", r, s)
            if self._raw(s, r):
                return self.comm.Scatter(s.spec(), r.spec(), root)
            sp, sc, st = s.ptr, s.count, s.type
        else:
            if r.raw:
                return self.comm.Scatter(None, r.spec(), root)
            sp, sc, st = ffi.NULL, 0, r.type
        rcnt, rt = (sc, st) if r.in_place else (r.count, r.type)
        _check(lib.ZMPI_Scatter(sp, sc, _h(st), r.ptr, rcnt, _h(rt), root, self._c), "Scatter")

    def Gather(self, sendbuf, recvbuf, root=0):
        """Every rank's sendbuf into root's recvbuf, in rank order (sendbuf may be MPI.IN_PLACE at root)."""
        is_root = self.rank == root
        s = _Buf(sendbuf, what="Gather send", in_place=is_root)
        r = _Buf(recvbuf, writable=True, what="Gather receive", blocks=self.size, in_place=False) if is_root else None
        if r is not None:
            if not s.in_place:
                _match("Gather", s, s.count, r, r.count)
                s = self._apart("Gather", s, r)
            if self._raw(s, r):
                return self.comm.Gather(s.spec(), r.spec(), root)
            rp, rcnt, rt = r.ptr, r.count, r.type
        else:
            if s.raw:
                return self.comm.Gather(s.spec(), None, root)
            rp, rcnt, rt = ffi.NULL, 0, s.type
        sc, st = (rcnt, rt) if s.in_place else (s.count, s.type)
        _check(lib.ZMPI_Gather(s.ptr, sc, _h(st), rp, rcnt, _h(rt), root, self._c), "Gather")

    def Allgather(self, sendbuf, recvbuf):
        """Every rank's sendbuf into every rank's recvbuf, in rank order (sendbuf may be MPI.IN_PLACE)."""
        s = _Buf(sendbuf, what="Allgather send")
        r = _Buf(recvbuf, writable=True, what="Allgather receive", blocks=self.size, in_place=False)
        if not s.in_place:
            _match("Allgather", s, s.count, r, r.count)
            s = self._apart("Allgather", s, r)
        if self._raw(s, r):
            return self.comm.Allgather(s.spec(), r.spec())
        sc, st = (r.count, r.type) if s.in_place else (s.count, s.type)
        _check(lib.ZMPI_Allgather(s.ptr, sc, _h(st), r.ptr, r.count, _h(r.type), self._c), "Allgather")

    def Alltoall(self, sendbuf, recvbuf):
        """Block j of each rank's sendbuf to rank j's block i (sendbuf may be MPI.IN_PLACE)."""
        s = _Buf(sendbuf, what="Alltoall send", blocks=self.size)
        r = _Buf(recvbuf, writable=True, what="Alltoall receive", blocks=self.size, in_place=False)
        if not s.in_place:
            _match("Alltoall", s, s.count, r, r.count)
            s = self._apart("Alltoall", s, r)
        if self._raw(s, r):
            return self.comm.Alltoall(s.spec(), r.spec())
        sc, st = (r.count, r.type) if s.in_place else (s.count, s.type)
        _check(lib.ZMPI_Alltoall(s.ptr, sc, _h(st), r.ptr, r.count, _h(r.type), self._c), "Alltoall")

    def Scatterv(self, sendbuf, recvbuf, root=0):
        """Scatter with counts and displacements at root: sendbuf is [array, counts(, displs)]."""
        is_root = self.rank == root
        r = _Buf(recvbuf, writable=True, what="Scatterv receive", in_place=is_root)
        s = _Buf(sendbuf, vector=True, what="Scatterv send", blocks=self.size, in_place=False) if is_root else None
        if s is not None:
            if not r.in_place:
                _match("Scatterv", s, int(s.counts[root]), r, r.count)
                r = self._apart("Scatterv", r, s)
            if self._raw(s, r):
                return self.comm.Scatterv(s.spec(), r.spec(), root)
            sp, cp, dp, st = s.ptr, s.cptr, s.dptr, s.type
        else:
            if r.raw:
                return self.comm.Scatterv(None, r.spec(), root)
            sp, cp, dp, st = ffi.NULL, ffi.NULL, ffi.NULL, r.type
        rcnt = int(s.counts[root]) if r.in_place else r.count
        _check(lib.ZMPI_Scatterv(sp, cp, dp, _h(st), r.ptr, rcnt, _h(r.type if not r.in_place else st), root,
                                 self._c), "Scatterv")

    def Gatherv(self, sendbuf, recvbuf, root=0):
        """Gather with counts and displacements at root: recvbuf is [array, counts(, displs)]."""
        is_root = self.rank == root
        s = _Buf(sendbuf, what="Gatherv send", in_place=is_root)
        r = (_Buf(recvbuf, vector=True, writable=True, what="Gatherv receive", blocks=self.size, in_place=False)
             if is_root else None)
        if r is not None:
            if not s.in_place:
                _match("Gatherv", s, s.count, r, int(r.counts[root]))
                s = self._apart("Gatherv", s, r)
            if self._raw(s, r):
                return self.comm.Gatherv(s.spec(), r.spec(), root)
            rp, cp, dp, rt = r.ptr, r.cptr, r.dptr, r.type
        else:
            if s.raw:
                return self.comm.Gatherv(s.spec(), None, root)
            rp, cp, dp, rt = ffi.NULL, ffi.NULL, ffi.NULL, s.type
        _check(lib.ZMPI_Gatherv(s.ptr, s.count, _h(s.type if not s.in_place else rt), rp, cp, dp, _h(rt), root,
                                self._c), "Gatherv")

    def Allgatherv(self, sendbuf, recvbuf):
        """Allgather with per-rank counts: recvbuf is [array, counts(, displs)]."""
        s = _Buf(sendbuf, what="Allgatherv send")
        r = _Buf(recvbuf, vector=True, writable=True, what="Allgatherv receive", blocks=self.size, in_place=False)
        if not s.in_place:
            _match("Allgatherv", s, s.count, r, int(r.counts[self.rank]))
            s = self._apart("Allgatherv", s, r)
        if self._raw(s, r):
            return self.comm.Allgatherv(s.spec(), r.spec())
        _check(lib.ZMPI_Allgatherv(s.ptr, s.count, _h(s.type if not s.in_place else r.type), r.ptr, r.cptr, r.dptr,
                                   _h(r.type), self._c), "Allgatherv")

    def Alltoallv(self, sendbuf, recvbuf):
        """Alltoall with per-rank counts: sendbuf and recvbuf are [array, counts(, displs)]."""
        s = _Buf(sendbuf, vector=True, what="Alltoallv send", blocks=self.size)
        r = _Buf(recvbuf, vector=True, writable=True, what="Alltoallv receive", blocks=self.size, in_place=False)
        if not s.in_place:
            _match("Alltoallv", s, int(s.counts[self.rank]), r, int(r.counts[self.rank]))
            s = self._apart("Alltoallv", s, r)
        if self._raw(s, r):
            return self.comm.Alltoallv(s.spec(), r.spec())
        if s.in_place:
            sp, cp, dp, st = s.ptr, ffi.NULL, ffi.NULL, r.type
        else:
            sp, cp, dp, st = s.ptr, s.cptr, s.dptr, s.type
        _check(lib.ZMPI_Alltoallv(sp, cp, dp, _h(st), r.ptr, r.cptr, r.dptr, _h(r.type), self._c), "Alltoallv")

    # ---- reductions: mpi4py's checks (the same datatype and count on both sides) ----
    def _op_bufs(self, what, sendbuf, recvbuf, blocks=1):
        s = _Buf(sendbuf, what=f"{what} send", blocks=blocks)
        r = _Buf(recvbuf, writable=True, what=f"{what} receive", in_place=False)
        if not s.in_place:
            _same_op_args(what, s, r)
            s = self._apart(what, s, r)
        return s, r

    def Allreduce(self, sendbuf, recvbuf, op=MPI.SUM):
        """Reduces (op: SUM, PROD, MIN, MAX ...) every rank's sendbuf into every rank's recvbuf; with scope
        "result" the bound holds on the result, with "message" on each message (sendbuf may be MPI.IN_PLACE)."""
        s, r = self._op_bufs("Allreduce", sendbuf, recvbuf)
        if self._raw(s, r):
            return self.comm.Allreduce(s.spec(), r.spec(), op)
        _check(lib.ZMPI_Allreduce(s.ptr, r.ptr, r.count, _h(r.type), _h(op), self._c), "Allreduce")

    def Reduce(self, sendbuf, recvbuf, op=MPI.SUM, root=0):
        """Allreduce's result at root only (recvbuf is ignored elsewhere; sendbuf may be MPI.IN_PLACE at root)."""
        if self.rank == root:
            s, r = self._op_bufs("Reduce", sendbuf, recvbuf)
            count, dtype = r.count, r.type
        else:
            s, r = _Buf(sendbuf, what="Reduce send", in_place=False), None
            count, dtype = s.count, s.type
        if self._raw(s, r):
            return self.comm.Reduce(s.spec(), r.spec() if r is not None else None, op, root)
        _check(lib.ZMPI_Reduce(s.ptr, r.ptr if r else ffi.NULL, count, _h(dtype), _h(op), root, self._c), "Reduce")

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=MPI.SUM):
        """Reduces sendbuf (size x len(recvbuf) elements) and gives block i of the result to rank i (sendbuf may
        be MPI.IN_PLACE: recvbuf holds the size blocks, the result lands in its first)."""
        if sendbuf is MPI.IN_PLACE:
            s = _Buf(MPI.IN_PLACE)
            r = _Buf(recvbuf, writable=True, what="Reduce_scatter_block receive", blocks=self.size, in_place=False)
        else:
            s, r = self._op_bufs("Reduce_scatter_block", sendbuf, recvbuf, blocks=self.size)
        if self._raw(s, r):
            return self.comm.Reduce_scatter_block(s.spec(), r.spec(), op)
        _check(lib.ZMPI_Reduce_scatter_block(s.ptr, r.ptr, r.count, _h(r.type), _h(op), self._c),
               "Reduce_scatter_block")

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=MPI.SUM):
        """Reduces sendbuf and gives rank i recvcounts[i] elements of the result, in rank order (recvcounts
        None: every rank's len(recvbuf), as mpi4py takes them; sendbuf may be MPI.IN_PLACE, then recvbuf holds
        all sum(recvcounts) elements and recvcounts must be given)."""
        s = _Buf(sendbuf, what="Reduce_scatter send")
        r = _Buf(recvbuf, writable=True, what="Reduce_scatter receive", in_place=False)
        if recvcounts is None:
            if s.in_place:
                raise TypeError("Reduce_scatter: MPI.IN_PLACE needs recvcounts")
            recvcounts = self.comm.allgather(r.count)
        counts = _int_array(recvcounts, self.size, "Reduce_scatter", "recvcounts")
        total = int(counts.sum(dtype=np.int64))
        if s.in_place:
            if r.count != total:
                raise ValueError(f"Reduce_scatter: mismatch in receive count {r.count} and sum(counts) {total}")
        else:
            if s.type != r.type:
                raise ValueError(f"Reduce_scatter: mismatch in send and receive MPI datatypes ({_tname(s.type)}, "
                                 f"{_tname(r.type)})")
            if s.count != total:
                raise ValueError(f"Reduce_scatter: mismatch in send count {s.count} and sum(counts) {total}")
            if r.count != int(counts[self.rank]):
                raise ValueError(f"Reduce_scatter: mismatch in receive count {r.count} and "
                                 f"counts[{self.rank}] {int(counts[self.rank])}")
            s = self._apart("Reduce_scatter", s, r)
        if self._raw(s, r):
            return self.comm.Reduce_scatter(s.spec(), r.spec(), counts.tolist(), op)
        _check(lib.ZMPI_Reduce_scatter(s.ptr, r.ptr, ffi.from_buffer("int[]", counts), _h(r.type), _h(op), self._c),
               "Reduce_scatter")

    def stats(self):
        """Counters of the calls on this communicator (dict): calls, compressed, bytes_raw, bytes_sent, ..."""
        s = ffi.new("ZMPI_Stats *")
        _check(lib.ZMPI_Comm_get_stats(self._c, s), "stats")
        out = {k: int(getattr(s, k)) for k in ("calls", "compressed", "fallback_type", "fallback_small",
                                                "fallback_config", "fallback_model", "codec_errors", "bytes_raw",
                                                "bytes_sent", "scratch_bytes", "ns_compress", "ns_decompress",
                                                "channel_bytes", "grid_sums", "nodes", "fallback_node")}
        out["ratio"] = out["bytes_raw"] / out["bytes_sent"] if out["bytes_sent"] else None
        return out

    def estimate(self, coll, count, dtype=np.float32):
        """zmpi's model for a call: (pays, t_plain, t_zmpi) in seconds (0 without ZMPI_NET_BW)."""
        c = len(COLLS) if coll == "p2p" else COLLS.index(coll.lower())
        tp, tz = ffi.new("double *"), ffi.new("double *")
        pays = lib.ZMPI_Model_estimate(self._c, c, int(count), _h(_FLOATS[np.dtype(dtype)]), tp, tz)
        return bool(pays), tp[0], tz[0]
