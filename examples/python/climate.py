#!/usr/bin/env python3
"""Annual mean and seasonal cycle of near-surface air temperature, with mpi4py and zmpi.

    mpiexec -n 2 .venv/bin/python examples/python/climate.py [--abs 0.01] [--repeat 30]
    examples/python/run            # the same on a shaped 1 Gb/s network (netrig; root)

The field is tas: 12 monthly maps of near-surface air temperature (K) on a 96 x 192
latitude-longitude grid (../shared/data/tas_tas_12x96x192.f32). Each rank reads its share of
the months, as a parallel reader of a time series would, and the program does what a
climatology does:

  1. the annual-mean map on every rank: each rank sums its months, Allreduce adds the ranks'
     sums (float64), and from the map the area-weighted (cos latitude) global mean;
  2. a transpose from months-per-rank to latitude-bands-per-rank (Alltoall, float32), so that
     every rank holds whole 12-month series and computes the seasonal amplitude (warmest minus
     coldest month) at each point of its band.

Both steps run with plain mpi4py and with zmpi.Comm at an absolute bound in kelvin (--abs,
default 0.01 K), alternately, --repeat times; rank 0 prints the median time of each step, the
speed-up, the compression ratio, and the error of every result against the plain run's: every
element of the annual-mean map and of the transposed months within the bound, the global mean
within it, the seasonal amplitude within twice it (a difference of two values). The exit status
is 1 if any is not.

zmpi decides per call whether compression pays on the network it is told about (ZMPI_NET_BW,
ZMPI_NET_LAT: examples/python/run sets them for the shaped link). Without them it compresses
every call above ZMPI_MIN_BYTES, which is what shared memory between two ranks on one machine
does not reward: run it on a real or shaped network for the speed-up.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

import zmpi

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "..", "shared", "data", "tas_tas_12x96x192.f32")
MONTHS, NLAT, NLON = 12, 96, 192


def annual_mean(comm, mine):
    """The annual-mean map (float64) on every rank, from this rank's months."""
    total = np.zeros((NLAT, NLON))
    comm.Allreduce(mine.sum(axis=0, dtype=np.float64) / MONTHS, total)
    return total


def global_mean(amap):
    """Area-weighted mean of a lat-lon map (equally spaced latitudes, cell centres)."""
    lat = np.deg2rad(-90 + (np.arange(NLAT) + 0.5) * 180 / NLAT)
    w = np.cos(lat)[:, None] * np.ones(NLON)
    return float((amap * w).sum() / w.sum())


def transpose(comm, mine, months, bands):
    """Months-per-rank (m, NLAT, NLON) -> latitude-bands-per-rank (MONTHS, b, NLON), with Alltoall.
    Block j of the send buffer is this rank's months of rank j's band; every block is padded to the
    largest month and band count so that one Alltoall (equal blocks) moves them."""
    size, rank = comm.Get_size(), comm.Get_rank()
    mm, bb = max(months), max(bands)
    send = np.zeros((size, mm, bb, NLON), np.float32)
    b0 = np.cumsum([0] + bands)
    for j in range(size):
        send[j, :mine.shape[0], :bands[j]] = mine[:, b0[j]:b0[j + 1]]
    recv = np.empty_like(send)
    comm.Alltoall(send, recv)
    return np.concatenate([recv[j, :months[j], :bands[rank]] for j in range(size)], axis=0)


def split(n, parts):
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--abs", type=float, default=0.01, help="error bound in kelvin (default 0.01)")
    ap.add_argument("--codec", default="fzl")
    ap.add_argument("--repeat", type=int, default=30, help="timed rounds of each step (default 30)")
    ap.add_argument("--data", default=DATA)
    args = ap.parse_args()

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    if size > MONTHS:
        if rank == 0:
            print(f"climate: at most {MONTHS} ranks (one month each)", file=sys.stderr)
        return 2
    months, bands = split(MONTHS, size), split(NLAT, size)
    m0 = sum(months[:rank])
    field = np.fromfile(args.data, np.float32).reshape(MONTHS, NLAT, NLON)
    mine = np.ascontiguousarray(field[m0:m0 + months[rank]])  # this rank's months, as read
    del field

    plain = world.Dup()
    zc = zmpi.Comm(world, eb=args.abs, mode="abs", codec=args.codec)

    steps = {"annual mean (Allreduce)": lambda c: annual_mean(c, mine),
             "transpose (Alltoall)": lambda c: transpose(c, mine, months, bands)}
    times = {(s, k): [] for s in steps for k in ("mpi", "zmpi")}
    ratio = {}
    results = {}
    for s, f in steps.items():
        for _ in range(3):  # untimed: connections, zmpi's calibration
            f(plain), f(zc)
        before = zc.stats()
        for _ in range(args.repeat):
            for k, c in (("mpi", plain), ("zmpi", zc)):
                world.Barrier()
                t = time.perf_counter()
                out = f(c)
                t = time.perf_counter() - t
                times[s, k].append(world.allreduce(t, op=MPI.MAX))
                results[s, k] = out
        after = zc.stats()
        raw, sent = after["bytes_raw"] - before["bytes_raw"], after["bytes_sent"] - before["bytes_sent"]
        counts = world.gather((raw, sent))
        if rank == 0:
            raw, sent = sum(r for r, _ in counts), sum(t for _, t in counts)
            ratio[s] = raw / sent if sent else None

    # accuracy: every element against the plain run's, and the derived quantities
    ok = True
    checks = []

    def check(name, err, bound, unit="K"):
        nonlocal ok
        good = err <= bound
        ok &= good
        checks.append(f"  {name:<34} max error {err:.2e} {unit} (bound {bound:g} {unit}) "
                      f"{'ok' if good else 'VIOLATED'}")

    for s in steps:
        err = float(np.max(np.abs(results[s, "zmpi"].astype(np.float64) - results[s, "mpi"]))) \
            if results[s, "mpi"].size else 0.0
        err = world.allreduce(err, op=MPI.MAX)
        check(s.split(" (")[0] + ": every element", err, args.abs)
    gm_mpi, gm_z = global_mean(results["annual mean (Allreduce)", "mpi"]), \
        global_mean(results["annual mean (Allreduce)", "zmpi"])
    check("global-mean temperature", abs(gm_z - gm_mpi), args.abs)
    tr = "transpose (Alltoall)"
    amp = [np.ptp(results[tr, k].astype(np.float64), axis=0) for k in ("mpi", "zmpi")]
    err = world.allreduce(float(np.max(np.abs(amp[1] - amp[0]))) if amp[0].size else 0.0, op=MPI.MAX)
    check("seasonal amplitude: every point", err, 2 * args.abs)
    amp_max = world.allreduce(float(amp[0].max()) if amp[0].size else 0.0, op=MPI.MAX)

    if rank == 0:
        net = os.environ.get("ZMPI_NET_BW")
        where = f"network {net}, latency {os.environ.get('ZMPI_NET_LAT', '?')} (told to zmpi)" if net \
            else "no network given to zmpi (ZMPI_NET_BW unset): it compresses every call"
        print(f"tas, 12 months x {NLAT} x {NLON}, {size} ranks; {where}; zmpi {args.codec}, "
              f"ABS {args.abs:g} K; medians of {args.repeat} rounds")
        print(f"  {'step':<26} {'mpi4py ms':>10} {'zmpi ms':>9} {'speed-up':>9} {'ratio':>7}")
        tot = {"mpi": 0.0, "zmpi": 0.0}
        for s in steps:
            med = {k: statistics.median(times[s, k]) for k in ("mpi", "zmpi")}
            for k in med:
                tot[k] += med[k]
            r = f"{ratio[s]:.2f}" if ratio[s] else "plain"
            print(f"  {s:<26} {med['mpi'] * 1e3:>10.3f} {med['zmpi'] * 1e3:>9.3f} "
                  f"{med['mpi'] / med['zmpi']:>8.2f}x {r:>7}")
        print(f"  {'both':<26} {tot['mpi'] * 1e3:>10.3f} {tot['zmpi'] * 1e3:>9.3f} "
              f"{tot['mpi'] / tot['zmpi']:>8.2f}x")
        print(f"global-mean temperature {gm_mpi:.4f} K (mpi4py), {gm_z:.4f} K (zmpi); "
              f"largest seasonal amplitude {amp_max:.2f} K")
        print("\n".join(checks))
        print("bound held on every result" if ok else "BOUND VIOLATED")
    zc.Free()
    plain.Free()
    return 0 if world.allreduce(ok, op=MPI.LAND) else 1


if __name__ == "__main__":
    sys.exit(main())
