"""zmpi.Comm under MPI (run as `mpiexec -n N python -m pytest python/tests/test_comm.py`):
every call against plain mpi4py's result within the bound, in place, zero-size,
requests, errors as exceptions. Every rank runs every test in the same order."""
import dataclasses
import warnings

import numpy as np
import pytest

mpi4py = pytest.importorskip("mpi4py")
from mpi4py import MPI  # noqa: E402

import zmpi  # noqa: E402

W = MPI.COMM_WORLD
R, N = W.Get_rank(), W.Get_size()
EB = 1e-3


def data(n, dtype=np.float32, seed=0):
    x = np.arange(n, dtype=np.float64)
    return (np.sin(x * 1e-3 + seed) * 10 + np.cos(x * 7e-3) * (seed + 1)).astype(dtype)


def within(got, ref, eb):
    assert got.shape == ref.shape
    err = np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))) if got.size else 0.0
    assert err <= eb * (1 + 1e-6), f"max error {err} > {eb}"


@pytest.fixture(scope="module", params=[np.float32, np.float64])
def dtype(request):
    return request.param


@pytest.fixture(scope="module")
def zc():
    c = zmpi.Comm(W, eb=EB, mode="abs", min_bytes=0)
    yield c
    c.Free()


def test_bcast(zc, dtype):
    for n in (0, 1, 1000, 100000):
        x = data(n, dtype, 3) if R == 0 else np.zeros(n, dtype)
        zc.Bcast(x, root=0)
        within(x, data(n, dtype, 3), EB)


def test_p2p_and_requests(zc, dtype):
    n = 50000
    right, left = (R + 1) % N, (R - 1) % N
    out = np.zeros(n, dtype)
    st = MPI.Status()
    zc.Sendrecv(data(n, dtype, R), right, 5, out, left, 5, status=st)
    within(out, data(n, dtype, left), EB)
    assert st.Get_source() == left and st.Get_count(MPI.FLOAT if dtype == np.float32 else MPI.DOUBLE) == n
    got = np.zeros(n, dtype)
    rq = zc.Irecv(got, left, 6)
    sq = zc.Isend(data(n, dtype, R + 10), right, 6)
    sq.Wait()
    while not rq.Test():
        pass
    within(got, data(n, dtype, left + 10), EB)
    if N > 1:
        if R == 0:
            zc.Send(data(n, dtype, 7), 1, 8)
        elif R == 1:
            r = np.zeros(n, dtype)
            zc.Recv(r, 0, 8)
            within(r, data(n, dtype, 7), EB)


def test_allreduce_reduce(zc, dtype):
    n = 40000
    ref = sum(data(n, np.float64, r) for r in range(N))
    out = np.zeros(n, dtype)
    zc.Allreduce(data(n, dtype, R), out)
    within(out, ref.astype(dtype), EB + 1e-5 * N * np.abs(ref).max())
    buf = data(n, dtype, R)
    zc.Allreduce(MPI.IN_PLACE, buf)
    within(buf, ref.astype(dtype), EB + 1e-5 * N * np.abs(ref).max())
    out = np.zeros(n, dtype)
    zc.Reduce(data(n, dtype, R), out, root=N - 1)
    if R == N - 1:
        within(out, ref.astype(dtype), EB + 1e-5 * N * np.abs(ref).max())


def test_scatter_gather_allgather_alltoall(zc, dtype):
    m = 3000
    full = data(m * N, dtype, 1)
    mine = np.zeros(m, dtype)
    zc.Scatter(full if R == 0 else None, mine, root=0)
    within(mine, full[R * m:(R + 1) * m], EB)
    g = np.zeros(m * N, dtype)
    zc.Gather(data(m, dtype, R), g if R == 0 else None, root=0)
    ref = np.concatenate([data(m, dtype, r) for r in range(N)])
    if R == 0:
        within(g, ref, EB)
    ag = np.zeros(m * N, dtype)
    zc.Allgather(data(m, dtype, R), ag)
    within(ag, ref, EB)
    send = np.concatenate([data(m, dtype, 100 * R + j) for j in range(N)])
    recv = np.zeros(m * N, dtype)
    zc.Alltoall(send, recv)
    within(recv, np.concatenate([data(m, dtype, 100 * j + R) for j in range(N)]), EB)


def test_v_collectives(zc, dtype):
    counts = np.array([1000 + 37 * r for r in range(N)])
    displs = np.concatenate(([0], np.cumsum(counts)[:-1]))
    full = data(int(counts.sum()), dtype, 2)
    mine = np.zeros(counts[R], dtype)
    zc.Scatterv([full, counts, displs] if R == 0 else None, mine, root=0)
    within(mine, full[displs[R]:displs[R] + counts[R]], EB)
    got = np.zeros(int(counts.sum()), dtype)
    zc.Allgatherv(full[displs[R]:displs[R] + counts[R]].copy(), [got, counts, displs])
    within(got, full, EB)
    g = np.zeros(int(counts.sum()), dtype)
    zc.Gatherv(mine, [g, counts] if R == 0 else None, root=0)
    if R == 0:
        within(g, full, EB)
    sc = np.full(N, 500 + R)
    rc = np.array([500 + j for j in range(N)])
    send = np.concatenate([data(500 + R, dtype, 10 * R + j) for j in range(N)])
    recv = np.zeros(int(rc.sum()), dtype)
    zc.Alltoallv([send, sc], [recv, rc])
    within(recv, np.concatenate([data(500 + j, dtype, 10 * j + R) for j in range(N)]), EB)


def test_reduce_scatter(zc, dtype):
    m = 2000
    ref = sum(data(m * N, np.float64, r) for r in range(N))
    out = np.zeros(m, dtype)
    zc.Reduce_scatter_block(data(m * N, dtype, R), out)
    tol = EB + 1e-5 * N * np.abs(ref).max()
    within(out, ref[R * m:(R + 1) * m].astype(dtype), tol)
    counts = [m + r for r in range(N)]
    tot = sum(counts)
    ref2 = sum(data(tot, np.float64, r) for r in range(N))
    out2 = np.zeros(counts[R], dtype)
    zc.Reduce_scatter(data(tot, dtype, R), out2, counts)
    off = sum(counts[:R])
    within(out2, ref2[off:off + counts[R]].astype(dtype), tol)


def test_stats_show_compression(zc):
    before = zc.stats()
    x = data(1 << 18, np.float32, 4)
    zc.Bcast(x, root=0)
    after = zc.stats()
    assert after["calls"] > before["calls"]
    if N > 1:
        assert after["compressed"] > before["compressed"]
    pays, tp, tz = zc.estimate("bcast", 1 << 20)
    assert isinstance(pays, bool)


def test_sum_on_grid_codes(zc):
    """A float SUM under the default codec (auto) adds packed grid codes: counted, within the bound."""
    if zc.config().codec != "auto":
        pytest.skip("the grid path runs under ZMPI_CODEC=auto only")
    x = data(1 << 16, np.float32, R)
    out = np.empty_like(x)
    before = zc.stats()
    zc.Allreduce(x, out)
    after = zc.stats()
    ref = np.empty(x.size, np.float64)
    MPI.COMM_WORLD.Allreduce(x.astype(np.float64), ref)
    within(out, ref, EB + 1e-6 * np.abs(ref).max())  # the bound plus the result's one rounding to float
    if N > 1:
        assert after["grid_sums"] == before["grid_sums"] + 1


def test_plain_types_pass_through(zc):
    x = np.arange(1000, dtype=np.int64) * (R + 1)
    out = np.zeros_like(x)
    zc.Allreduce(x, out)
    assert np.array_equal(out, np.arange(1000, dtype=np.int64) * (N * (N + 1) // 2))


def test_errors_are_exceptions(zc):
    with pytest.raises(TypeError):
        zc.Bcast([1.0, 2.0])
    with pytest.raises(ValueError):
        zc.Allreduce(np.zeros(10, np.float32), np.zeros(11, np.float32))
    with pytest.raises(BufferError):  # as mpi4py
        zc.Bcast(np.zeros((10, 10), np.float32)[:, ::2])
    with pytest.raises(ValueError):
        zmpi.Comm(W, eb=-1)
    if N > 1:  # a compressed message of more elements than the receive: zmpi's truncation error, raised
        n = 100000  # smooth data: the stream fits the receive's bytes (else it is MPI's own truncation,
        smooth = np.sin(np.arange(n) * 1e-3).astype(np.float32)  # which Open MPI 4.1 writes past the buffer)
        if R == 0:
            zc.Send(smooth, 1, 9)
        elif R == 1:
            with pytest.raises(zmpi.Error, match="compressed message of 100000"):
                zc.Recv(np.zeros(n // 10, np.float32), 0, 9)
    W.Barrier()


def test_config():
    cfg = zmpi.Config.from_env()
    assert cfg.codec and cfg.scope in ("result", "message") and cfg.min_bytes >= 0
    c = zmpi.Comm(W, config=zmpi.Config(eb_mode="abs", eb=1e-2, min_bytes=0), scope="message")
    got = c.config()
    assert got.eb_mode == "abs" and got.eb == 1e-2 and got.scope == "message" and got.min_bytes == 0
    x = data(10000, np.float32, 1) if R == 0 else np.zeros(10000, np.float32)
    c.Bcast(x)
    within(x, data(10000, np.float32, 1), 1e-2)
    c.Free()
    with pytest.raises(ValueError):
        zmpi.Comm(W, config=zmpi.Config(scope="nowhere"))
    with pytest.raises(ValueError):
        zmpi.Comm(W, config=zmpi.Config(threads=-1))


# ---- the same bytes as the C API: zmpi.Comm adds no conversion of its own ----
def _wire_counters(zc):
    s = zc.stats()
    return s["compressed"], s["bytes_raw"], s["bytes_sent"]


def test_wire_bytes_equal_c_api(zc, dtype):
    """A Send through zmpi.Comm and the C ZMPI_Send with the same arguments put the same bytes on the
    wire (received raw, as bytes, by plain mpi4py on the same communicator), and that stream is the C
    library's (zmpi.decompress reads it); each collective moves as many compressed bytes and gives a
    bit-identical result whether called from Python or from C."""
    from zmpi import comm as zcomm
    lib, ffi, h = zcomm.lib, zcomm.ffi, zcomm._h
    mt = MPI.FLOAT if dtype == np.float32 else MPI.DOUBLE
    n = 30000
    x = data(n, dtype, 11)
    if N > 1:
        if R == 0:
            zc.Send(x, 1, 21)
            assert lib.ZMPI_Send(ffi.from_buffer(x), n, h(mt), 1, 22, zc._c) == 0
        elif R == 1:
            wires = []
            for tag in (21, 22):
                st = MPI.Status()
                zc.comm.Probe(0, tag, st)
                w = np.empty(st.Get_count(MPI.BYTE), np.uint8)
                zc.comm.Recv([w, MPI.BYTE], 0, tag)
                wires.append(w.tobytes())
            assert wires[0] == wires[1]
            assert len(wires[0]) < x.nbytes  # compressed
            within(zmpi.decompress(wires[0]), x, EB)

    def both(py, c):
        """Runs the call from Python then from C; returns the two outputs and the counters' deltas."""
        outs, deltas = [], []
        for f in (py, c):
            before = _wire_counters(zc)
            outs.append(f())
            deltas.append(tuple(a - b for a, b in zip(_wire_counters(zc), before)))
        assert deltas[0] == deltas[1]
        assert outs[0].tobytes() == outs[1].tobytes()
        return deltas[0]

    p = lambda a: ffi.from_buffer(a)  # noqa: E731
    m = 20000

    def bcast(c):
        b = x.copy() if R == 0 else np.zeros(n, dtype)
        if c:
            assert lib.ZMPI_Bcast(p(b), n, h(mt), 0, zc._c) == 0
        else:
            zc.Bcast(b, root=0)
        return b

    def allreduce(c):
        o = np.zeros(n, dtype)
        s = data(n, dtype, R)
        if c:
            assert lib.ZMPI_Allreduce(p(s), p(o), n, h(mt), h(MPI.SUM), zc._c) == 0
        else:
            zc.Allreduce(s, o)
        return o

    def alltoall(c):
        s = np.concatenate([data(m, dtype, 7 * R + j) for j in range(N)])
        o = np.zeros(m * N, dtype)
        if c:
            assert lib.ZMPI_Alltoall(p(s), m, h(mt), p(o), m, h(mt), zc._c) == 0
        else:
            zc.Alltoall(s, o)
        return o

    def allgatherv(c):
        counts = np.array([m + 13 * r for r in range(N)], np.intc)
        displs = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intc)
        s = data(int(counts[R]), dtype, R)
        o = np.zeros(int(counts.sum()), dtype)
        if c:
            assert lib.ZMPI_Allgatherv(p(s), int(counts[R]), h(mt), p(o), ffi.from_buffer("int[]", counts),
                                       ffi.from_buffer("int[]", displs), h(mt),
                                       zc._c) == 0
        else:
            zc.Allgatherv(s, [o, counts, displs])
        return o

    for f in (bcast, allreduce, alltoall, allgatherv):
        d = both(lambda: f(False), lambda: f(True))
        if N > 1 and f is not allreduce:
            assert d[0] > 0, f"{f.__name__}: nothing compressed"


def test_many_requests_probes_ssend(zc, dtype):
    """Waitall/Testall/Waitany over zmpi requests with statuses, Cancel of a receive nobody sends,
    Probe/Iprobe counting decoded elements, Ssend/Issend."""
    mt = MPI.FLOAT if dtype == np.float32 else MPI.DOUBLE
    n = 20000
    right, left = (R + 1) % N, (R - 1) % N
    got = [np.zeros(n, dtype) for _ in range(3)]
    reqs = [zc.Irecv(got[k], left, 30 + k) for k in range(3)]
    sends = [zc.Isend(data(n, dtype, 10 * R + k), right, 30 + k) for k in range(3)]
    st = [MPI.Status() for _ in range(3)]
    zmpi.Request.Waitall(reqs, st)
    for k in range(3):
        within(got[k], data(n, dtype, 10 * left + k), EB)
        assert st[k].Get_source() == left and st[k].Get_tag() == 30 + k and st[k].Get_count(mt) == n
    while not zmpi.Request.Testall(sends):
        pass
    a, b = np.zeros(n, dtype), np.zeros(n, dtype)
    pend = [zc.Irecv(a, left, 40), zc.Irecv(b, left, 41)]
    s2 = [zc.Isend(data(n, dtype, R), right, 41), zc.Isend(data(n, dtype, R + 1), right, 40)]
    done = {zmpi.Request.Waitany(pend), zmpi.Request.Waitany(pend)}
    assert done == {0, 1} and zmpi.Request.Waitany(pend) == MPI.UNDEFINED
    within(a, data(n, dtype, left + 1), EB)
    within(b, data(n, dtype, left), EB)
    zmpi.Request.Waitall(s2)
    never = zc.Irecv(np.zeros(10, dtype), left, 99)
    never.Cancel()
    cst = MPI.Status()
    never.Wait(cst)
    assert cst.Is_cancelled()
    with pytest.raises(TypeError):
        zmpi.Request.Waitall([MPI.REQUEST_NULL])
    with pytest.raises(ValueError):
        zmpi.Request.Waitall(reqs, [MPI.Status()])
    if N > 1:
        if R == 0:
            zc.Ssend(data(n, dtype, 5), 1, 50)
            zc.Issend(data(n + 1, dtype, 6), 1, 51).Wait()
        elif R == 1:
            ps = MPI.Status()
            zc.Probe(0, 50, ps)
            assert ps.Get_count(mt) == n
            x = np.zeros(ps.Get_count(mt), dtype)
            zc.Recv(x, 0, 50)
            within(x, data(n, dtype, 5), EB)
            while not zc.Iprobe(0, 51, ps):
                pass
            y = np.zeros(ps.Get_count(mt), dtype)
            zc.Recv(y, 0, 51)
            within(y, data(n + 1, dtype, 6), EB)
    W.Barrier()


# ---- buffers as mpi4py takes them: its checks, the same exception classes (issue 32, items 3, 10) ----
S = MPI.COMM_SELF  # one rank: every check is local, so a call that does not raise cannot hang the others


@pytest.fixture(scope="module")
def zs():
    c = zmpi.Comm(S, eb=EB, mode="abs", min_bytes=0)
    yield c
    c.Free()


def f4(n):
    return np.zeros(n, np.float32)


def f8(n):
    return np.zeros(n, np.float64)


def readonly(n):
    return np.frombuffer(bytes(4 * n), np.float32)


def _cases():
    """(name, method, args, kwargs) that mpi4py 4 refuses before any communication on one rank (nonblocking
    point-to-point: a call that wrongly goes through leaves a request, never a hang)."""
    be = np.arange(8.0).astype(">f8")
    nc = np.zeros((10, 10), np.float32)[:, ::2]
    st = np.zeros(3, "f4,i4")
    return [
        ("Isend big-endian", "Isend", (be, 0, 1), {}),
        ("Issend big-endian", "Issend", (be, 0, 1), {}),
        ("Isend big-endian int", "Isend", (np.zeros(3, ">i4"), 0, 1), {}),
        ("Irecv into big-endian", "Irecv", (np.zeros(8, ">f4"), 0, 1), {}),
        ("Bcast big-endian", "Bcast", (be,), {}),
        ("Allreduce big-endian", "Allreduce", (be, f8(8)), {}),
        ("Allgather big-endian", "Allgather", (be, f8(8)), {}),
        ("Isend not contiguous", "Isend", (nc, 0, 1), {}),
        ("Bcast not contiguous", "Bcast", (nc,), {}),
        ("Irecv read-only", "Irecv", (readonly(4), 0, 1), {}),
        ("Allreduce read-only receive", "Allreduce", (f4(4), readonly(4)), {}),
        ("Sendrecv read-only receive", "Sendrecv", (f4(4), 0, 3, readonly(4), 0, 3), {}),
        ("Isend structured", "Isend", (st, 0, 1), {}),
        ("Isend unknown type code", "Isend", ([f4(8), "x"], 0, 1), {}),
        ("Isend negative count", "Isend", ([f4(8), -1, MPI.FLOAT], 0, 1), {}),
        ("Isend displacement out", "Isend", ([f4(8), (2, 9), MPI.FLOAT], 0, 1), {}),
        ("Isend null datatype", "Isend", ([f4(8), MPI.DATATYPE_NULL], 0, 1), {}),
        ("Bcast bytes not whole", "Bcast", ([f4(3), MPI.DOUBLE],), {}),
        ("Isend a list", "Isend", ([1.0, 2.0], 0, 1), {}),
        ("Isend None", "Isend", (None, 0, 1), {}),
        ("Allreduce types", "Allreduce", (f4(10), f8(10)), {}),
        ("Allreduce counts", "Allreduce", (f4(10), f4(11)), {}),
        ("Reduce types", "Reduce", (f8(10), f4(10)), {"root": 0}),
        ("Reduce spec types", "Reduce", (f8(10), [f4(10), MPI.FLOAT]), {"root": 0}),
        ("Reduce counts", "Reduce", (f8(10), f8(11)), {"root": 0}),
        ("Reduce no receive at root", "Reduce", (f4(3), None), {"root": 0}),
        ("Reduce_scatter_block short send", "Reduce_scatter_block", (f4(1), f4(2)), {}),
        ("Reduce_scatter_block types", "Reduce_scatter_block", (f8(2), f4(2)), {}),
        ("Reduce_scatter small receive", "Reduce_scatter", (f4(3), f4(1), [3]), {}),
        ("Reduce_scatter types", "Reduce_scatter", (f8(3), f4(3), [3]), {}),
        ("Reduce_scatter sum", "Reduce_scatter", (f4(4), f4(3), [3]), {}),
        ("Reduce_scatter counts length", "Reduce_scatter", (f4(3), f4(3), [3, 0]), {}),
        ("Reduce_scatter in place sum", "Reduce_scatter", (MPI.IN_PLACE, f4(4), [3]), {}),
        ("Reduce_scatter in place no counts", "Reduce_scatter", (MPI.IN_PLACE, f4(3)), {}),
        ("Allgatherv counts length", "Allgatherv", (f4(3), [f4(3), [3, 0]]), {}),
        ("Alltoallv counts length", "Alltoallv", ([f4(3), [3, 0]], [f4(3), [3]]), {}),
        ("Scatter no send at root", "Scatter", (None, f4(3)), {"root": 0}),
    ]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
def test_refused_as_mpi4py_refuses(zs, case):
    """Each case raises in mpi4py's own call; zmpi.Comm's raises the same class, before any communication."""
    _, method, args, kw = case
    with pytest.raises(Exception) as want:
        getattr(S, method)(*args, **kw)
    assert want.type in (ValueError, BufferError, KeyError, TypeError), want.value
    with pytest.raises(want.type):
        getattr(zs, method)(*args, **kw)


def test_accepted_as_mpi4py_accepts(zs):
    """What mpi4py takes, zmpi takes: an F-ordered array (its memory), a read-only buffer at the root of
    Bcast, bytes-like objects, [array, count, datatype] and [array, (count, displ), datatype]."""
    x = np.asfortranarray(data(600, np.float32, 2).reshape(20, 30))
    zs.Bcast(x)
    out = np.zeros((20, 30), np.float32, order="F")
    zs.Allreduce(x, out)
    within(out, x, EB)
    zs.Bcast(np.frombuffer(data(100, np.float32).tobytes(), np.float32), root=0)
    src = data(100, np.float64, 3)
    got = bytearray(800)
    zs.Sendrecv([src, 40, MPI.DOUBLE], 0, 2, [got, MPI.DOUBLE], 0, 2)
    within(np.frombuffer(got, np.float64)[:40], src[:40], EB)
    dst = np.full(100, -1.0)
    zs.Sendrecv([src, (30, 10), MPI.DOUBLE], 0, 3, [dst, (30, 50), MPI.DOUBLE], 0, 3)
    within(dst[50:80], src[10:40], EB)
    assert (dst[:50] == -1).all() and (dst[80:] == -1).all()


def test_blocking_calls_check_too(zs):
    """The blocking point-to-point calls make the same checks (to MPI.PROC_NULL: nothing to wait for)."""
    be, nc, null = np.arange(8.0).astype(">f8"), np.zeros((10, 10), np.float32)[:, ::2], MPI.PROC_NULL
    for call in (lambda: zs.Send(be, null), lambda: zs.Ssend(be, null), lambda: zs.Recv(np.zeros(3, ">f4"), null),
                 lambda: zs.Send(nc, null), lambda: zs.Recv(readonly(4), null),
                 lambda: zs.Sendrecv(f4(4), null, 0, readonly(4), null)):
        with pytest.raises(BufferError):
            call()
    with pytest.raises(KeyError):
        zs.Send(np.zeros(3, "f4,i4"), null)
    with pytest.raises(ValueError):
        zs.Ssend([f4(8), -1, MPI.FLOAT], null)


def test_checks_mpi4py_leaves_to_mpi(zs):
    """Sizes mpi4py passes on unchecked (MPI reads past the array, truncates, or zmpi's data would not fit):
    ValueError before any communication."""
    with pytest.raises(ValueError, match="past"):  # mpi4py sends 9 floats from an array of 8
        zs.Send([f4(8), 9, MPI.FLOAT], 0, 1)
    with pytest.raises(ValueError, match="past"):  # counts and displacements past the array
        zs.Allgatherv(f4(3), [f4(3), [3], [1]])
    with pytest.raises(ValueError, match="negative"):
        zs.Allgatherv(f4(3), [f4(3), [3], [-1]])
    with pytest.raises(ValueError, match="negative"):
        zs.Alltoallv([f4(3), [-1]], [f4(3), [3]])
    with pytest.raises(ValueError, match="past"):
        zs.Scatterv([f4(4), [5]], f4(5), root=0)
    with pytest.raises(ValueError):  # a rank's own block: 4 floats sent, 3 received (zmpi truncated it)
        zs.Allgather(f4(4), f4(3))
    with pytest.raises(ValueError):  # 2 sent, 3 received (zmpi left the rest as it was)
        zs.Allgather(f4(2), f4(3))
    with pytest.raises(ValueError, match="datatypes"):  # doubles into floats
        zs.Allgather(f8(3), f4(3))
    with pytest.raises(ValueError):
        zs.Allgatherv(f4(5), [f4(3), [3]])
    with pytest.raises(ValueError):
        zs.Alltoallv([f4(4), [4]], [f4(4), [3]])
    with pytest.raises(ValueError):
        zs.Gather(f8(3), f4(3), root=0)
    with pytest.raises(ValueError):
        zs.Gatherv(f4(4), [f4(4), [3]], root=0)
    with pytest.raises(ValueError):
        zs.Scatter(f4(3), f4(2), root=0)
    with pytest.raises(ValueError):
        zs.Scatterv([f4(4), [4]], f4(3), root=0)
    with pytest.raises(ValueError):
        zs.Alltoall(f8(3), f4(3))
    with pytest.raises(ValueError, match="IN_PLACE"):  # where MPI has no in-place form
        zs.Send(MPI.IN_PLACE, 0, 1)
    with pytest.raises(ValueError, match="IN_PLACE"):
        zs.Allgather(f4(3), MPI.IN_PLACE)
    with pytest.raises(ValueError, match="IN_PLACE"):
        zs.Bcast(MPI.IN_PLACE)
    x = data(100, np.float32)
    with pytest.raises(ValueError, match="overlap"):  # send and receive overlapping: MPI needs them apart
        zs.Allreduce(x[:60], x[40:])
    with pytest.raises(ValueError, match="overlap"):
        zs.Sendrecv(x[:60], 0, 1, x[50:], 0, 1)
    y = x.copy()
    zs.Allreduce(y, y)  # the same array twice: MPI.IN_PLACE, as mpi4py takes it
    within(y, x, EB)


def test_size_checks_on_every_rank(zc):
    """Checks that depend on the communicator's size raise on every rank (none is left in a collective)."""
    if N == 1:
        pytest.skip("needs blocks")
    with pytest.raises(ValueError, match="blocks"):
        zc.Allgather(f4(3), f4(3 * N + 1))
    with pytest.raises(ValueError, match="blocks"):
        zc.Alltoall(f4(3 * N + 1), f4(3 * N))
    with pytest.raises(ValueError, match="blocks"):
        zc.Reduce_scatter_block(f4(2 * N - 1), f4(2))
    with pytest.raises(ValueError, match="blocks"):
        zc.Reduce_scatter_block(MPI.IN_PLACE, f4(2 * N + 1))
    with pytest.raises(ValueError):
        zc.Reduce_scatter(f4(3 * N), f4(1), [3] * N)
    with pytest.raises(ValueError):
        zc.Allgatherv(f4(3), [f4(3 * N), [3] * (N + 1)])
    with pytest.raises(ValueError):  # IN_PLACE at a rank that is not the root; the root's types differ
        if R == 0:
            zc.Reduce(f8(10), f4(10), root=0)
        else:
            zc.Reduce(MPI.IN_PLACE, f4(10), root=0)
    W.Barrier()


def test_reduce_scatter_counts_from_receives(zc, dtype):
    """recvcounts=None: every rank's receive count, gathered (as mpi4py does)."""
    counts = [100 + 7 * r for r in range(N)]
    tot = sum(counts)
    out = np.zeros(counts[R], dtype)
    zc.Reduce_scatter(data(tot, dtype, R), out)
    ref = sum(data(tot, np.float64, r) for r in range(N))
    off = sum(counts[:R])
    within(out, ref[off:off + counts[R]].astype(dtype), EB + 1e-5 * N * np.abs(ref).max())


# ---- byte order (issue 32, item 3): refused as mpi4py refuses it, never reinterpreted ----
def test_big_endian_refused_or_moved_exactly(zc):
    x = data(5000, np.float64, 4).astype(">f8")
    for call in (lambda: zc.Send(x, MPI.PROC_NULL), lambda: zc.Bcast(x), lambda: zc.Allreduce(x, f8(5000)),
                 lambda: zc.Allgather(x, f8(5000 * N)), lambda: zc.Recv(np.zeros(5000, ">f8"), MPI.PROC_NULL),
                 lambda: zc.Isend(x, MPI.PROC_NULL),
                 lambda: zc.Gather(x, f8(5000 * N), root=0), lambda: zc.Alltoall(np.zeros(N, ">f4"), f4(N))):
        with pytest.raises(BufferError, match="byte order"):
            call()
    # with an explicit datatype mpi4py moves the bytes as they are: so does zmpi (no compression)
    if N > 1:
        if R == 0:
            zc.Send([x, MPI.DOUBLE], 1, 61)
        elif R == 1:
            y = np.zeros(5000, ">f8")
            zc.Recv([y, MPI.DOUBLE], 0, 61)
            assert y.tobytes() == x.tobytes()
    b = x.copy() if R == 0 else np.zeros(5000, ">f8")
    zc.Bcast([b, MPI.DOUBLE], root=0)
    assert b.tobytes() == x.tobytes()
    W.Barrier()


# ---- explicit datatypes that are not the array's (issue 32, item 13): the bytes moved exactly ----
def test_explicit_datatype_moves_bytes_exactly(zc):
    """[float64 array, MPI.FLOAT] is 2n floats of the array's bytes: mpi4py moves them exactly, so zmpi
    does not compress them (before: compressed as floats, the doubles read back off by 1.02)."""
    n = 20000
    x = data(n, np.float64, 5)
    right, left = (R + 1) % N, (R - 1) % N
    xl = data(n, np.float64, 5 + left)
    mine = data(n, np.float64, 5 + R)
    # point-to-point: into the same kind of spec, into a float32 array of 2n, and through every send call
    got = np.zeros(n)
    zc.Sendrecv([mine, MPI.FLOAT], right, 70, [got, MPI.FLOAT], left, 70)
    assert got.tobytes() == xl.tobytes()
    got32 = np.zeros(2 * n, np.float32)
    zc.Sendrecv([mine, MPI.FLOAT], right, 71, got32, left, 71)
    assert got32.tobytes() == xl.tobytes()
    for k, send in enumerate((zc.Isend, zc.Issend)):
        rq = zc.Irecv([got, MPI.FLOAT], left, 72 + k)
        send([mine, MPI.FLOAT], right, 72 + k).Wait()
        rq.Wait()
        assert got.tobytes() == xl.tobytes()
    if N > 1:
        if R == 0:
            zc.Send([x, MPI.FLOAT], 1, 74)
            zc.Ssend([np.frombuffer(x.tobytes(), np.uint8), MPI.DOUBLE], 1, 75)
        elif R == 1:
            y = np.zeros(n)
            zc.Recv([y, MPI.FLOAT], 0, 74)
            assert y.tobytes() == x.tobytes()
            z = bytearray(8 * n)
            zc.Recv([z, MPI.DOUBLE], 0, 75)
            assert bytes(z) == x.tobytes()
    # collectives: every rank gives such a spec; the call is plain MPI, bytes exact
    b = x.copy() if R == 0 else np.zeros(n)
    zc.Bcast([b, MPI.FLOAT], root=0)
    assert b.tobytes() == x.tobytes()
    ag = np.zeros(n * N)
    zc.Allgather([mine, MPI.FLOAT], [ag, MPI.FLOAT])
    assert ag.tobytes() == np.concatenate([data(n, np.float64, 5 + r) for r in range(N)]).tobytes()
    out, ref = np.zeros(n), np.zeros(n)
    zc.Allreduce([mine, MPI.FLOAT], [out, MPI.FLOAT], op=MPI.MAX)
    W.Allreduce([mine, MPI.FLOAT], [ref, MPI.FLOAT], op=MPI.MAX)
    assert out.tobytes() == ref.tobytes()
    W.Barrier()


def test_raw_bytes_that_read_as_a_stream_arrive_as_bytes(zc):
    """Bytes sent raw with a float datatype that happen to be a zmpi message of exactly their size are framed
    (as the C library frames raw data), so the receiver gets the bytes, not their decoding."""
    if N == 1:
        pytest.skip("needs two ranks")
    for n in range(12000, 12100):  # a real message (its bytes as they travel, caught by a plain byte receive)
        if R == 0:  # whose length is a whole number of floats, beyond the 8 KiB that always travel raw
            zc.Send([data(n, np.float32, 8) + np.random.default_rng(n).random(n, np.float32), MPI.FLOAT], 1, 79)
        elif R == 1:
            st = MPI.Status()
            zc.comm.Probe(0, 79, st)  # the plain communicator under zc
            z = bytearray(st.Get_count(MPI.BYTE))
            zc.comm.Recv([z, MPI.BYTE], 0, 79)
            z = bytes(z)
            assert z[:4] == b"ZMPI", "not a compressed message"
        z = W.bcast(z if R == 1 else None, root=1)
        if len(z) % 4 == 0:
            break
    assert len(z) % 4 == 0
    raw = zmpi.Comm(W, eb=EB, mode="abs", min_bytes=1 << 30)  # sends raw: the bytes as they are, framed
    try:
        if R == 0:
            raw.Send([np.frombuffer(z, np.uint8), MPI.FLOAT], 1, 80)
        elif R == 1:  # room for the frame's header (libzmpi_mpi's receive takes the framed stream whole)
            got = np.zeros(len(z) + 256, np.uint8)
            st = MPI.Status()
            raw.Recv([got, MPI.FLOAT], 0, 80, status=st)
            assert got[:len(z)].tobytes() == z and st.Get_count(MPI.FLOAT) == len(z) // 4
    finally:
        raw.Free()
    W.Barrier()


# ---- settings: a field left None is the environment's (issue 32, item 12) ----
ENV = {"ZMPI_EB": "0.5", "ZMPI_EB_MODE": "abs", "ZMPI_EB_SCOPE": "message", "ZMPI_CODEC": "fzr",
       "ZMPI_MIN_BYTES": "12345", "ZMPI_CHUNK": "4096", "ZMPI_NET_BW": "1Gbit", "ZMPI_NET_LAT": "50us",
       "ZMPI_CODEC_SPEED": "1G,2G", "ZMPI_RATIO": "3", "ZMPI_SCRATCH": "1M", "ZMPI_CHANNEL_MEM": "2M",
       "ZMPI_TRUNC_BITS": "10"}


@pytest.fixture
def env(monkeypatch):
    for k in ENV:
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def test_unset_fields_take_the_environment(env):
    for k, v in ENV.items():
        env.setenv(k, v)
    want = zmpi.Config.from_env()
    assert want.eb == 0.5 and want.eb_mode == "abs" and want.min_bytes == 12345 and want.trunc_bits == 10
    c = zmpi.Comm(W)
    assert c.config() == want
    c.Free()
    c = zmpi.Comm(W, config=zmpi.Config(threads=1))
    assert c.config() == want
    c.Free()
    c = zmpi.Comm(W, eb=1e-3)  # the environment's mode (abs), everything else the environment's
    assert c.config() == dataclasses.replace(want, eb=1e-3)
    c.Free()


def test_bound_without_mode_takes_the_environment_mode(env):
    """Comm(comm, eb=1e-3) under ZMPI_EB_MODE=abs (no ZMPI_EB) is an absolute bound: every element within
    1e-3 (before: relative, errors of 0.02 on this data)."""
    env.setenv("ZMPI_EB_MODE", "abs")
    c = zmpi.Comm(W, eb=1e-3, min_bytes=0)
    assert c.config().eb_mode == "abs" and c.config().eb == 1e-3
    x = data(50000, np.float32, 9) * 10 if R == 0 else f4(50000)
    c.Bcast(x)
    within(x, data(50000, np.float32, 9) * 10, 1e-3)
    c.Free()
    c = zmpi.Comm(W, config=zmpi.Config(eb=1e-3))
    assert c.config().eb_mode == "abs"
    c.Free()
    env.delenv("ZMPI_EB_MODE")
    c = zmpi.Comm(W, eb=1e-3)
    assert c.config().eb_mode == "rel"  # the built-in default
    c.Free()


def test_config_with_a_bound_alone_compresses(env):
    """Config(eb=1e-3) without ZMPI_EB: a relative bound of 1e-3 (before: no bound, nothing compressed)."""
    c = zmpi.Comm(W, config=zmpi.Config(eb=1e-3, min_bytes=0))
    got = c.config()
    assert got.eb_mode == "rel" and got.eb == 1e-3
    ref = data(100000, np.float32, 2)
    x = ref.copy() if R == 0 else f4(100000)
    before = c.stats()["compressed"]
    c.Bcast(x)
    within(x, ref, 1e-3 * float(ref.max() - ref.min()))
    if N > 1:
        assert c.stats()["compressed"] == before + 1
    c.Free()


def test_settings_that_cannot_compress_say_so(env):
    with pytest.raises(ValueError, match="no error bound"):  # an error-bounded codec asked for, no bound
        zmpi.Comm(W, codec="fzl")
    with pytest.raises(ValueError, match="no error bound"):
        zmpi.Comm(W, config=zmpi.Config(codec="auto", min_bytes=0))
    with pytest.raises(ValueError, match="without a bound"):
        zmpi.Comm(W, config=zmpi.Config(eb_mode="abs"))
    with pytest.raises(ValueError, match="without a bound"):
        zmpi.Comm(W, mode="rel")
    with pytest.raises(ValueError, match="takes no bound"):
        zmpi.Comm(W, config=zmpi.Config(eb_mode="none", eb=1e-3))
    with pytest.warns(RuntimeWarning, match="plain MPI"):  # nothing asked: the default, plain MPI, said
        c = zmpi.Comm(W)
    c.Free()
    c = zmpi.Comm(W, codec="zstd")  # lossless: compresses without a bound
    assert zmpi.Config.from_env().eb_mode == "none" and c.config().codec == "zstd"
    c.Free()
    c = zmpi.Comm(W, config=zmpi.Config.from_env(), eb=1e-3)  # a bound on top of a config without one
    assert c.config().eb_mode == "rel"
    c.Free()
    env.setenv("ZMPI_EB", "abc")
    with pytest.raises(ValueError, match="ZMPI_EB"):  # a malformed variable is named, never a silent default
        zmpi.Comm(W, eb=1e-3)


# ---- v-calls with reversed and gapped displacements, MAX and MIN (issue 32, item 25) ----
def test_v_collectives_reversed_and_gapped(zc, dtype):
    """Blocks in reverse rank order with gaps between them: every element within the bound, the gaps
    untouched."""
    counts = np.array([900 + 31 * r for r in range(N)])
    gap = 17
    displs = np.zeros(N, np.int64)
    pos = gap
    for r in reversed(range(N)):  # rank N-1's block first
        displs[r] = pos
        pos += counts[r] + gap
    size = int(pos)
    full = data(size, dtype, 6)
    fill = dtype(-7)
    mine = np.zeros(counts[R], dtype)
    zc.Scatterv([full, counts, displs] if R == 0 else None, mine, root=0)
    within(mine, full[displs[R]:displs[R] + counts[R]], EB)
    blocks = [data(int(counts[r]), dtype, 20 + r) for r in range(N)]
    ref = np.full(size, fill, dtype)
    for r in range(N):
        ref[displs[r]:displs[r] + counts[r]] = blocks[r]
    got = np.full(size, fill, dtype)
    zc.Allgatherv(blocks[R], [got, counts, displs])
    if N == 1:  # one rank is plain MPI, and MPICH 4.0's MPI_Allgatherv puts the block at 0 there: MPI's layout
        ref = np.full(size, fill, dtype)
        W.Allgatherv(blocks[R], [ref, counts, displs, MPI.FLOAT if dtype == np.float32 else MPI.DOUBLE])
    within(got, ref, EB)
    assert (got[ref == fill] == fill).all()
    ref = np.full(size, fill, dtype)
    for r in range(N):
        ref[displs[r]:displs[r] + counts[r]] = blocks[r]
    g = np.full(size, fill, dtype)
    zc.Gatherv(blocks[R], [g, (counts, displs), MPI.FLOAT if dtype == np.float32 else MPI.DOUBLE] if R == 0
               else None, root=0)
    if R == 0:
        within(g, ref, EB)
    # Alltoallv: send blocks reversed with gaps, receive blocks gapped in rank order
    sc = np.array([300 + 11 * j for j in range(N)])
    sd = np.zeros(N, np.int64)
    pos = 5
    for j in reversed(range(N)):
        sd[j] = pos
        pos += sc[j] + 5
    send = np.full(int(pos), fill, dtype)
    for j in range(N):
        send[sd[j]:sd[j] + sc[j]] = data(int(sc[j]), dtype, 50 * R + j)
    rc = np.array([300 + 11 * R] * N)
    rd = np.array([3 + j * (rc[0] + 3) for j in range(N)])
    recv = np.full(int(rd[-1] + rc[-1] + 3), fill, dtype)
    zc.Alltoallv([send, sc, sd], [recv, rc, rd])
    for j in range(N):
        within(recv[rd[j]:rd[j] + rc[j]], data(int(rc[j]), dtype, 50 * j + R), EB)
    mask = np.ones(recv.size, bool)
    for j in range(N):
        mask[rd[j]:rd[j] + rc[j]] = False
    assert (recv[mask] == fill).all()


@pytest.mark.parametrize("op", ["MAX", "MIN"])
def test_allreduce_reduce_max_min(zc, dtype, op):
    """MAX and MIN: every element of the result within the bound of the exact one (plain MPI's, on the
    original data)."""
    n = 40000
    mop = getattr(MPI, op)
    x = data(n, dtype, R) * (1 + R)
    ref = np.empty(n, dtype)
    W.Allreduce(x, ref, op=mop)
    out = np.zeros(n, dtype)
    zc.Allreduce(x, out, op=mop)
    within(out, ref, EB)
    buf = x.copy()
    zc.Allreduce(MPI.IN_PLACE, buf, op=mop)
    within(buf, ref, EB)
    red = np.zeros(n, dtype)
    zc.Reduce(x, red, op=mop, root=N - 1)
    if R == N - 1:
        within(red, ref, EB)


def test_one_node_said():
    """The ranks of one machine share one node, where zmpi sends plain: zmpi.Comm says so on rank 0 (a
    RuntimeWarning), and nothing is compressed; a node per rank (node_ranks=1) compresses, unsaid."""
    if W.Get_size() < 2:
        return
    x = np.linspace(0, 1, 1 << 16, dtype=np.float32)
    for node_ranks in (0, 1):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            c = zmpi.Comm(W, eb=1e-3, mode="abs", config=zmpi.Config(node_ranks=node_ranks))
        said = [w for w in got if issubclass(w.category, RuntimeWarning) and "share one node" in str(w.message)]
        assert len(said) == (1 if node_ranks == 0 and W.Get_rank() == 0 else 0), [str(w.message) for w in got]
        y = x.copy() if c.rank == 0 else np.empty_like(x)
        c.Bcast(y, root=0)
        assert np.all(np.abs(y - x) <= 1e-3)
        s = c.stats()
        assert s["nodes"] == (1 if node_ranks == 0 else W.Get_size())
        assert (s["compressed"] > 0) == (node_ranks == 1), s  # a first call compresses, measured or not
        c.Free()
