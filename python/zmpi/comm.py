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
Buffers are numpy arrays (C-contiguous) or mpi4py's buffer specs
[array, MPI.FLOAT]; v-collectives take [array, counts] or [array, counts,
displs] or [array, (counts, displs), MPI.FLOAT].
"""
import dataclasses

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
}} ZMPI_Stats;
int ZMPI_Comm_set_config(MPI_Comm comm, const ZMPI_Config *cfg);
int ZMPI_Comm_get_config(MPI_Comm comm, ZMPI_Config *cfg);
int ZMPI_Comm_get_stats(MPI_Comm comm, ZMPI_Stats *stats);
int ZMPI_Comm_prepare(MPI_Comm comm);
int ZMPI_Error_class(int errorcode, int *errorclass);
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


class _Buf:
    """A buffer spec: pointer, count, MPI datatype (and counts/displs of a v-spec), keeping its array alive."""

    def __init__(self, spec, vector=False, writable=False, what="buffer"):
        self.counts = self.displs = None
        if spec is MPI.IN_PLACE:
            self.ptr, self.count, self.type, self.arr = ffi.cast("void *", int(MPI.IN_PLACE)), 0, MPI.DATATYPE_NULL, None
            self.in_place = True
            return
        self.in_place = False
        items = list(spec) if isinstance(spec, (list, tuple)) else [spec]
        arr, rest = items[0], items[1:]
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"{what}: a numpy array (or [array, ...] spec), not {type(arr).__name__}")
        if not arr.flags.c_contiguous:
            raise ValueError(f"{what}: the array must be C-contiguous")
        if writable and not arr.flags.writeable:
            raise ValueError(f"{what}: the array is read-only")
        dtype = None
        if rest and isinstance(rest[-1], MPI.Datatype):
            dtype = rest.pop()
        if dtype is None:
            dtype = _FLOATS.get(arr.dtype)
            if dtype is None:  # mpi4py's predefined datatype of the array's type code (plain MPI for zmpi)
                dtype = MPI._typedict.get(arr.dtype.char)
            if dtype is None:
                raise TypeError(f"{what}: no predefined MPI datatype for {arr.dtype}: give [array, datatype]")
        size = dtype.Get_size()
        if size <= 0 or arr.nbytes % size:
            raise ValueError(f"{what}: {arr.nbytes} bytes are not a whole number of {dtype.Get_name()}")
        self.arr, self.type, self.count = arr, dtype, arr.nbytes // size
        self.ptr = ffi.from_buffer(arr, require_writable=writable) if arr.nbytes else ffi.NULL
        if vector:
            if len(rest) == 1 and isinstance(rest[0], tuple) and len(rest[0]) == 2:
                rest = list(rest[0])
            if not rest:
                raise ValueError(f"{what}: a v-collective needs [array, counts] or [array, counts, displs]")
            counts = np.ascontiguousarray(rest[0], dtype=np.intc)
            displs = (np.ascontiguousarray(rest[1], dtype=np.intc) if len(rest) > 1 and rest[1] is not None
                      else np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intc))
            if counts.size and (counts.min() < 0 or int((displs + counts).max()) > self.count):
                raise ValueError(f"{what}: counts and displacements reach past the array ({self.count} elements)")
            self.counts, self.displs = counts, displs
            self.cptr, self.dptr = ffi.from_buffer("int[]", counts), ffi.from_buffer("int[]", displs)
        elif rest:
            raise ValueError(f"{what}: [array, MPI datatype] only (counts belong to v-collectives)")


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
    alone) and the settings must agree on every rank. The settings are config's (a zmpi.Config),
    else the ZMPI_* environment's, with the keyword arguments on top: eb with mode "abs" or "rel"
    (default "rel"); eb=None and no ZMPI_EB: lossless codecs only (codec="zstd" or "xorlzc").
    """

    def __init__(self, comm, eb=None, mode=None, scope=None, codec=None, min_bytes=None, threads=None,
                 config=None):
        if not isinstance(comm, MPI.Intracomm):
            raise TypeError("zmpi.Comm needs an mpi4py intracommunicator")
        cfg = dataclasses.replace(config) if config is not None else _config.Config()
        if not isinstance(cfg, _config.Config):
            raise TypeError("config must be a zmpi.Config")
        if eb is not None:
            if isinstance(eb, bool) or not isinstance(eb, (int, float, np.floating)) or not np.isfinite(eb) or eb <= 0:
                raise ValueError(f"eb={eb!r}: a finite bound > 0 (or None: lossless)")
            cfg.eb, cfg.eb_mode = float(eb), mode or cfg.eb_mode or "rel"
            if cfg.eb_mode == "none":
                cfg.eb_mode = "rel"
        elif mode is not None:
            cfg.eb_mode = mode
        if cfg.eb_mode is not None and cfg.eb_mode not in ("none", "abs", "rel"):
            raise ValueError(f"mode={cfg.eb_mode!r}: 'abs' or 'rel'")
        for name, v in (("scope", scope), ("codec", codec), ("min_bytes", min_bytes), ("threads", threads)):
            if v is not None:
                setattr(cfg, name, v)
        c = cfg.to_c(ffi.new("ZMPI_Config *"))
        self.comm = comm.Dup()
        self.comm.Set_errhandler(MPI.ERRORS_RETURN)
        self._c = _h(self.comm)
        _check(lib.ZMPI_Comm_set_config(self._c, c), "settings")
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()

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

    def Send(self, buf, dest, tag=0):
        """Sends buf (compressed if float32/float64 and compression pays) to dest; matches any zmpi receive."""
        b = _Buf(buf, what="Send")
        _check(lib.ZMPI_Send(b.ptr, b.count, _h(b.type), dest, tag, self._c), "Send")

    def Recv(self, buf, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=None):
        """Receives into buf (a compressed message is decoded into it); status: source, tag, element count."""
        b = _Buf(buf, writable=True, what="Recv")
        status = status if status is not None else MPI.Status()
        _check(lib.ZMPI_Recv(b.ptr, b.count, _h(b.type), source, tag, self._c, _status(status)), "Recv")

    def Ssend(self, buf, dest, tag=0):
        """Send that completes only once the receive has started (MPI_Ssend's semantics)."""
        b = _Buf(buf, what="Ssend")
        _check(lib.ZMPI_Ssend(b.ptr, b.count, _h(b.type), dest, tag, self._c), "Ssend")

    def Issend(self, buf, dest, tag=0):
        """Starts an Ssend; returns a zmpi.Request."""
        b = _Buf(buf, what="Issend")
        r = Request(b)
        _check(lib.ZMPI_Issend(b.ptr, b.count, _h(b.type), dest, tag, self._c, r._req), "Issend")
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
        b = _Buf(buf, what="Isend")
        r = Request(b)
        _check(lib.ZMPI_Isend(b.ptr, b.count, _h(b.type), dest, tag, self._c, r._req), "Isend")
        return r

    def Irecv(self, buf, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG):
        """Starts a Recv; returns a zmpi.Request whose Wait/Test decode the message into buf."""
        b = _Buf(buf, writable=True, what="Irecv")
        r = Request(b)
        _check(lib.ZMPI_Irecv(b.ptr, b.count, _h(b.type), source, tag, self._c, r._req), "Irecv")
        return r

    def Sendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=MPI.ANY_SOURCE, recvtag=MPI.ANY_TAG,
                 status=None):
        """Send to dest and Recv from source in one call (no deadlock between pairs)."""
        s = _Buf(sendbuf, what="Sendrecv send")
        r = _Buf(recvbuf, writable=True, what="Sendrecv receive")
        status = status if status is not None else MPI.Status()
        _check(lib.ZMPI_Sendrecv(s.ptr, s.count, _h(s.type), dest, sendtag, r.ptr, r.count, _h(r.type), source,
                                 recvtag, self._c, _status(status)), "Sendrecv")

    def Bcast(self, buf, root=0):
        """Broadcasts root's buf to every rank (each element within the bound of root's data)."""
        b = _Buf(buf, writable=True, what="Bcast")
        _check(lib.ZMPI_Bcast(b.ptr, b.count, _h(b.type), root, self._c), "Bcast")

    def _block(self, b, n, what):
        if b.count % n:
            raise ValueError(f"{what}: {b.count} elements do not split into {n} equal blocks")
        return b.count // n

    def Scatter(self, sendbuf, recvbuf, root=0):
        """Root's sendbuf in equal blocks, block i to rank i (recvbuf may be MPI.IN_PLACE at root)."""
        r = _Buf(recvbuf, writable=True, what="Scatter receive")
        if self.rank == root:
            s = _Buf(sendbuf, what="Scatter send")
            sp, sc, st = s.ptr, self._block(s, self.size, "Scatter"), s.type
        else:
            sp, sc, st = ffi.NULL, 0, r.type
        rcnt, rt = (sc, st) if r.in_place else (r.count, r.type)
        _check(lib.ZMPI_Scatter(sp, sc, _h(st), r.ptr, rcnt, _h(rt), root, self._c), "Scatter")

    def Gather(self, sendbuf, recvbuf, root=0):
        """Every rank's sendbuf into root's recvbuf, in rank order (sendbuf may be MPI.IN_PLACE at root)."""
        s = _Buf(sendbuf, what="Gather send")
        if self.rank == root:
            r = _Buf(recvbuf, writable=True, what="Gather receive")
            rp, rcnt, rt = r.ptr, self._block(r, self.size, "Gather"), r.type
        else:
            rp, rcnt, rt = ffi.NULL, 0, s.type
        sc, st = (rcnt, rt) if s.in_place else (s.count, s.type)
        _check(lib.ZMPI_Gather(s.ptr, sc, _h(st), rp, rcnt, _h(rt), root, self._c), "Gather")

    def Allgather(self, sendbuf, recvbuf):
        """Every rank's sendbuf into every rank's recvbuf, in rank order (sendbuf may be MPI.IN_PLACE)."""
        s = _Buf(sendbuf, what="Allgather send")
        r = _Buf(recvbuf, writable=True, what="Allgather receive")
        rcnt = self._block(r, self.size, "Allgather")
        sc, st = (rcnt, r.type) if s.in_place else (s.count, s.type)
        _check(lib.ZMPI_Allgather(s.ptr, sc, _h(st), r.ptr, rcnt, _h(r.type), self._c), "Allgather")

    def Alltoall(self, sendbuf, recvbuf):
        """Block j of each rank's sendbuf to rank j's block i (sendbuf may be MPI.IN_PLACE)."""
        s = _Buf(sendbuf, what="Alltoall send")
        r = _Buf(recvbuf, writable=True, what="Alltoall receive")
        rcnt = self._block(r, self.size, "Alltoall")
        sc, st = (rcnt, r.type) if s.in_place else (self._block(s, self.size, "Alltoall"), s.type)
        _check(lib.ZMPI_Alltoall(s.ptr, sc, _h(st), r.ptr, rcnt, _h(r.type), self._c), "Alltoall")

    def Scatterv(self, sendbuf, recvbuf, root=0):
        """Scatter with counts and displacements at root: sendbuf is [array, counts(, displs)]."""
        s = _Buf(sendbuf, vector=True, what="Scatterv send") if self.rank == root else None
        r = _Buf(recvbuf, writable=True, what="Scatterv receive")
        if s is None:
            sp, cp, dp, st = ffi.NULL, ffi.NULL, ffi.NULL, r.type
        else:
            sp, cp, dp, st = s.ptr, s.cptr, s.dptr, s.type
        _check(lib.ZMPI_Scatterv(sp, cp, dp, _h(st), r.ptr, r.count, _h(r.type if not r.in_place else st), root,
                                 self._c), "Scatterv")

    def Gatherv(self, sendbuf, recvbuf, root=0):
        """Gather with counts and displacements at root: recvbuf is [array, counts(, displs)]."""
        s = _Buf(sendbuf, what="Gatherv send")
        r = _Buf(recvbuf, vector=True, writable=True, what="Gatherv receive") if self.rank == root else None
        if r is None:
            rp, cp, dp, rt = ffi.NULL, ffi.NULL, ffi.NULL, s.type
        else:
            rp, cp, dp, rt = r.ptr, r.cptr, r.dptr, r.type
        _check(lib.ZMPI_Gatherv(s.ptr, s.count, _h(s.type if not s.in_place else rt), rp, cp, dp, _h(rt), root,
                                self._c), "Gatherv")

    def Allgatherv(self, sendbuf, recvbuf):
        """Allgather with per-rank counts: recvbuf is [array, counts(, displs)]."""
        s = _Buf(sendbuf, what="Allgatherv send")
        r = _Buf(recvbuf, vector=True, writable=True, what="Allgatherv receive")
        _check(lib.ZMPI_Allgatherv(s.ptr, s.count, _h(s.type if not s.in_place else r.type), r.ptr, r.cptr, r.dptr,
                                   _h(r.type), self._c), "Allgatherv")

    def Alltoallv(self, sendbuf, recvbuf):
        """Alltoall with per-rank counts: sendbuf and recvbuf are [array, counts(, displs)]."""
        s = _Buf(sendbuf, vector=True, what="Alltoallv send")
        r = _Buf(recvbuf, vector=True, writable=True, what="Alltoallv receive")
        if s.in_place:
            sp, cp, dp, st = s.ptr, ffi.NULL, ffi.NULL, r.type
        else:
            sp, cp, dp, st = s.ptr, s.cptr, s.dptr, s.type
        _check(lib.ZMPI_Alltoallv(sp, cp, dp, _h(st), r.ptr, r.cptr, r.dptr, _h(r.type), self._c), "Alltoallv")

    def Allreduce(self, sendbuf, recvbuf, op=MPI.SUM):
        """Reduces (op: SUM, PROD, MIN, MAX ...) every rank's sendbuf into every rank's recvbuf; with scope
        "result" the bound holds on the result, with "message" on each message (sendbuf may be MPI.IN_PLACE)."""
        s = _Buf(sendbuf, what="Allreduce send")
        r = _Buf(recvbuf, writable=True, what="Allreduce receive")
        if not s.in_place and s.count != r.count:
            raise ValueError(f"Allreduce: {s.count} elements sent, {r.count} received")
        _check(lib.ZMPI_Allreduce(s.ptr, r.ptr, r.count, _h(r.type), _h(op), self._c), "Allreduce")

    def Reduce(self, sendbuf, recvbuf, op=MPI.SUM, root=0):
        """Allreduce's result at root only (recvbuf is ignored elsewhere; sendbuf may be MPI.IN_PLACE at root)."""
        s = _Buf(sendbuf, what="Reduce send")
        r = _Buf(recvbuf, writable=True, what="Reduce receive") if self.rank == root else None
        count, dtype = (r.count, r.type) if s.in_place else (s.count, s.type)
        _check(lib.ZMPI_Reduce(s.ptr, r.ptr if r else ffi.NULL, count, _h(dtype), _h(op), root, self._c), "Reduce")

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=MPI.SUM):
        """Reduces sendbuf (size x len(recvbuf) elements) and gives block i of the result to rank i."""
        s = _Buf(sendbuf, what="Reduce_scatter_block send")
        r = _Buf(recvbuf, writable=True, what="Reduce_scatter_block receive")
        if s.in_place:
            count = self._block(r, self.size, "Reduce_scatter_block")
            ptr = r.ptr
        else:
            count, ptr = r.count, r.ptr
        _check(lib.ZMPI_Reduce_scatter_block(s.ptr, ptr, count, _h(r.type), _h(op), self._c), "Reduce_scatter_block")

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts, op=MPI.SUM):
        """Reduces sendbuf and gives rank i recvcounts[i] elements of the result, in rank order."""
        s = _Buf(sendbuf, what="Reduce_scatter send")
        r = _Buf(recvbuf, writable=True, what="Reduce_scatter receive")
        counts = np.ascontiguousarray(recvcounts, dtype=np.intc)
        if counts.size != self.size:
            raise ValueError(f"Reduce_scatter: {counts.size} counts for {self.size} ranks")
        _check(lib.ZMPI_Reduce_scatter(s.ptr, r.ptr, ffi.from_buffer("int[]", counts), _h(r.type), _h(op), self._c),
               "Reduce_scatter")

    def stats(self):
        """Counters of the calls on this communicator (dict): calls, compressed, bytes_raw, bytes_sent, ..."""
        s = ffi.new("ZMPI_Stats *")
        _check(lib.ZMPI_Comm_get_stats(self._c, s), "stats")
        out = {k: int(getattr(s, k)) for k in ("calls", "compressed", "fallback_type", "fallback_small",
                                                "fallback_config", "fallback_model", "codec_errors", "bytes_raw",
                                                "bytes_sent", "scratch_bytes", "ns_compress", "ns_decompress",
                                                "channel_bytes", "grid_sums")}
        out["ratio"] = out["bytes_raw"] / out["bytes_sent"] if out["bytes_sent"] else None
        return out

    def estimate(self, coll, count, dtype=np.float32):
        """zmpi's model for a call: (pays, t_plain, t_zmpi) in seconds (0 without ZMPI_NET_BW)."""
        c = len(COLLS) if coll == "p2p" else COLLS.index(coll.lower())
        tp, tz = ffi.new("double *"), ffi.new("double *")
        pays = lib.ZMPI_Model_estimate(self._c, c, int(count), _h(_FLOATS[np.dtype(dtype)]), tp, tz)
        return bool(pays), tp[0], tz[0]
