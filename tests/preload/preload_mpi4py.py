"""A plain mpi4py program for the libzmpi_preload.so tests: it knows nothing
of zmpi and checks its own results.

    python preload_mpi4py.py [TOL]

TOL 0 (the default): every float result must equal the exact value; TOL > 0:
within TOL (absolute; for the reductions, of the reduced value). Needs 2 or
more ranks. Prints one line per rank, OK or its failures, and exits non-zero
if any rank failed.

Buffer (upper-case) calls on numpy float64 and float32 arrays of N elements
(128 KiB and up, smooth data): Send/Recv, Isend/Irecv + Waitall, Isend +
Wait, Irecv polled with Request.Get_status, Recv_init + Send_init started
twice (the send buffer changed in between), Sendrecv, Bcast, Allreduce (SUM), Reduce (SUM), Gather, Scatter,
Allgather, Alltoall, and Probe + Status.Get_count sizing a Recv. An int32
array (Send/Recv, Allreduce) must arrive exactly whatever TOL. Pickled
(lower-case) calls of Python objects - send/recv, bcast, allreduce - must
arrive exactly.

The float data are multiples of 2**-10, sin(ramp) + r for small integers r
(below size**2), so they and every sum the program forms are exact in float32
and float64 whatever the order of the additions (up to 100 ranks).
"""
import sys

import numpy as np
from mpi4py import MPI

N = 1 << 15  # elements per buffer: 256 KiB of float64, 128 KiB of float32


def value(r, dtype, n=N):
    """Rank r's smooth data: sin of a ramp, quantized to 2**-10, plus r."""
    x = np.arange(n, dtype=np.float64)
    return (np.round(np.sin(x * 1e-3 + r) * 1024.0) / 1024.0 + r).astype(dtype)


class Checker:
    def __init__(self, comm, tol):
        self.comm, self.tol, self.errors = comm, tol, []

    def floats(self, what, got, want):
        got, want = np.asarray(got), np.asarray(want, dtype=got.dtype)
        if got.shape != want.shape:
            self.errors.append(f"{what}: shape {got.shape}, expected {want.shape}")
            return
        g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
        bad = ~(g == w) if self.tol == 0 else ~(np.abs(g - w) <= self.tol)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            self.errors.append(f"{what} ({got.dtype}): {int(bad.sum())} of {g.size} elements wrong, "
                               f"first [{i}] = {float(g[i])!r}, expected {float(w[i])!r}")

    def exact(self, what, got, want):
        ok = np.array_equal(got, want) if isinstance(want, np.ndarray) else got == want
        if not ok:
            self.errors.append(f"{what}: got {got!r:.200}, expected {want!r:.200}")


def buffers(comm, ck, dtype):
    rank, size = comm.Get_rank(), comm.Get_size()
    left, right = (rank - 1) % size, (rank + 1) % size
    mine = value(rank, dtype)

    # Send / Recv: rank 0 to rank 1
    if rank == 0:
        comm.Send(mine, dest=1, tag=1)
    elif rank == 1:
        buf = np.empty(N, dtype)
        comm.Recv(buf, source=0, tag=1)
        ck.floats("Send/Recv", buf, value(0, dtype))

    # a ring of Isend / Irecv, completed by Waitall
    buf = np.empty(N, dtype)
    reqs = [comm.Irecv(buf, source=left, tag=2), comm.Isend(mine, dest=right, tag=2)]
    MPI.Request.Waitall(reqs)
    ck.floats("Isend/Irecv/Waitall", buf, value(left, dtype))

    # the other way round, each request completed by Wait
    buf = np.empty(N, dtype)
    rr = comm.Irecv(buf, source=right, tag=3)
    sr = comm.Isend(mine, dest=left, tag=3)
    sr.Wait()
    rr.Wait()
    ck.floats("Isend/Irecv/Wait", buf, value(right, dtype))

    # an Irecv polled with Request.Get_status (MPI_Request_get_status) to its end
    buf = np.empty(N, dtype)
    rr = comm.Irecv(buf, source=left, tag=6)
    sr = comm.Isend(mine, dest=right, tag=6)
    polls = 0
    while not rr.Get_status() and polls < 50_000_000:
        polls += 1
    if polls >= 50_000_000:
        ck.errors.append(f"Request.Get_status ({np.dtype(dtype)}): never true")
    else:
        ck.floats("Irecv/Get_status", buf, value(left, dtype))
    rr.Wait()
    sr.Wait()

    # persistent requests: Recv_init / Send_init, started twice
    buf = np.empty(N, dtype)
    snd = mine.copy()
    reqs = [comm.Recv_init(buf, source=left, tag=7), comm.Send_init(snd, dest=right, tag=7)]
    for k in range(2):
        snd[:] = value(rank + k, dtype)
        MPI.Prequest.Startall(reqs)
        MPI.Request.Waitall(reqs)
        ck.floats(f"Recv_init/Send_init start {k}", buf, value(left + k, dtype))
    for q in reqs:
        q.Free()

    # Sendrecv around the ring
    buf = np.empty(N, dtype)
    comm.Sendrecv(mine, dest=right, sendtag=4, recvbuf=buf, source=left, recvtag=4)
    ck.floats("Sendrecv", buf, value(left, dtype))

    # Bcast from the last rank
    buf = value(size - 1, dtype) if rank == size - 1 else np.full(N, -1, dtype)
    comm.Bcast(buf, root=size - 1)
    ck.floats("Bcast", buf, value(size - 1, dtype))

    # Allreduce and Reduce (SUM): exact sums of the ranks' data
    total = sum(value(r, np.float64) for r in range(size))
    buf = np.empty(N, dtype)
    comm.Allreduce(mine, buf, op=MPI.SUM)
    ck.floats("Allreduce", buf, total)
    buf = np.zeros(N, dtype)
    comm.Reduce(mine, buf, op=MPI.SUM, root=0)
    if rank == 0:
        ck.floats("Reduce", buf, total)

    # Gather to rank 1, Scatter from rank 0 (one block of N per rank)
    rows = np.stack([value(r, dtype) for r in range(size)])
    buf = np.empty((size, N), dtype) if rank == 1 else None
    comm.Gather(mine, buf, root=1)
    if rank == 1:
        ck.floats("Gather", buf, rows)
    buf = np.empty(N, dtype)
    comm.Scatter(rows if rank == 0 else None, buf, root=0)
    ck.floats("Scatter", buf, rows[rank])

    # Allgather; Alltoall: block j of rank r's is value(r * size + j)
    buf = np.empty((size, N), dtype)
    comm.Allgather(mine, buf)
    ck.floats("Allgather", buf, rows)
    out = np.stack([value(rank * size + j, dtype) for j in range(size)])
    buf = np.empty((size, N), dtype)
    comm.Alltoall(out, buf)
    ck.floats("Alltoall", buf, np.stack([value(r * size + rank, dtype) for r in range(size)]))

    # Probe + Get_count: rank 1 sends m elements (not N), rank 0 sizes its receive
    m = N * 3 // 4 + 7
    if rank == 1:
        comm.Send(value(1, dtype, m), dest=0, tag=5)
    elif rank == 0:
        st = MPI.Status()
        comm.Probe(source=1, tag=5, status=st)
        count = st.Get_count(MPI.DOUBLE if dtype == np.float64 else MPI.FLOAT)
        if count != m:
            ck.errors.append(f"Probe/Get_count ({np.dtype(dtype)}): {count} elements, expected {m}")
        else:
            buf = np.empty(count, dtype)
            comm.Recv(buf, source=1, tag=5)
            ck.floats("Probe/Recv", buf, value(1, dtype, m))


def others(comm, ck):
    rank, size = comm.Get_rank(), comm.Get_size()

    # int32: always exact
    ints = (np.arange(N, dtype=np.int32) * 7 + rank * 1000003).astype(np.int32)
    if rank == 0:
        comm.Send(ints, dest=1, tag=6)
    elif rank == 1:
        buf = np.empty(N, np.int32)
        comm.Recv(buf, source=0, tag=6)
        ck.exact("Send/Recv int32", buf, (np.arange(N, dtype=np.int32) * 7).astype(np.int32))
    buf = np.empty(N, np.int32)
    comm.Allreduce(ints, buf, op=MPI.SUM)
    want = (np.arange(N, dtype=np.int64) * 7 * size + 1000003 * size * (size - 1) // 2).astype(np.int32)
    ck.exact("Allreduce int32", buf, want)

    # pickled objects: MPI_BYTE messages, exact
    def obj(r):
        return {"rank": r, "x": [0.1 * i + r for i in range(2000)], "name": f"r{r}", "t": (1.5, -0.0, 1e300)}

    if rank == 0:
        comm.send(obj(0), dest=1, tag=7)
    elif rank == 1:
        ck.exact("send/recv (pickle)", comm.recv(source=0, tag=7), obj(0))
    ck.exact("bcast (pickle)", comm.bcast(obj(size - 1) if rank == size - 1 else None, root=size - 1), obj(size - 1))
    ck.exact("allreduce (pickle, list +)", comm.allreduce([rank, 0.1 * rank], op=MPI.SUM),
             sum(([r, 0.1 * r] for r in range(size)), []))
    ck.exact("allreduce (pickle, float)", comm.allreduce(0.25 * rank, op=MPI.SUM), 0.25 * size * (size - 1) / 2)


def main():
    tol = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if size < 2:
        print("preload_mpi4py: needs 2 or more ranks", file=sys.stderr)
        comm.Abort(2)
    ck = Checker(comm, tol)
    for dtype in (np.float64, np.float32):
        buffers(comm, ck, dtype)
    others(comm, ck)
    failed = comm.allreduce(len(ck.errors), op=MPI.SUM)
    if ck.errors:
        for e in ck.errors:
            print(f"preload_mpi4py: rank {rank}: FAILED: {e}", file=sys.stderr, flush=True)
    else:
        print(f"preload_mpi4py: rank {rank} of {size}, tolerance {tol:g}: OK", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
