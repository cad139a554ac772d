#!/usr/bin/env python3
"""The cost of zmpi's Python layer over its C call.

    mpiexec -n 2 .venv/bin/python bench/python/overhead.py [--sizes 64K,1M,4M,16M] [--rounds 101]

For each size, rank 0 broadcasts a float32 field (pop_t tiled; REL 1e-4,
every element checked after the last round) with zmpi.Comm.Bcast (the
Python call: argument checks, buffer and datatype resolution) and with the
same C function ZMPI_Bcast called through cffi with its arguments prepared
once (the C call plus cffi's dispatch, a fraction of a microsecond), in
interleaved rounds on the same communicator and data (the order alternates
per round); prints the medians, the overhead as the median of the rounds'
paired differences (Python minus C, the steadier figure on a shared machine)
and its share of the C median, and writes build/bench-python/overhead.csv.
Each round also makes the C call a second time: the paired difference of the
two C calls (the "control") is the noise floor of the overhead figure.
"""
import argparse
import csv
import os
import time

import numpy as np
from mpi4py import MPI

import zmpi
from zmpi import comm as zc_mod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * mult[s[-1].upper()]) if s[-1].upper() in mult else int(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64K,1M,4M,16M")
    ap.add_argument("--rounds", type=int, default=101)
    ap.add_argument("--rel", type=float, default=1e-4)
    ap.add_argument("--data", default=os.environ.get("ZMPI_DATA", os.path.join(ROOT, "..", "shared", "data")))
    args = ap.parse_args()
    w = MPI.COMM_WORLD
    zc = zmpi.Comm(w, eb=args.rel, mode="rel", min_bytes=0)
    src = np.fromfile(os.path.join(args.data, "pop_t_384x320.f32"), np.float32)
    src = src[np.isfinite(src)]
    rows = []
    for size in [parse_size(s) for s in args.sizes.split(",")]:
        n = size // 4
        ref = np.resize(src, n).astype(np.float32)
        x = ref.copy() if zc.rank == 0 else np.zeros(n, np.float32)
        ptr, typ = zc_mod.ffi.from_buffer(x), zc_mod._h(MPI.FLOAT)
        t = {"py": [], "c": [], "c2": []}
        orders = [("py", "c", "c2"), ("c", "c2", "py"), ("c2", "py", "c")]
        for r in range(args.rounds + 3):  # three warm-up rounds
            for way in orders[r % 3]:
                w.Barrier()
                t0 = time.perf_counter()
                if way == "py":
                    zc.Bcast(x, root=0)
                else:
                    zc_mod._check(zc_mod.lib.ZMPI_Bcast(ptr, n, typ, 0, zc._c), "Bcast")
                dt = w.allreduce(time.perf_counter() - t0, op=MPI.MAX)
                if r >= 3:
                    t[way].append(dt)
        fin = np.isfinite(ref)
        err = float(np.max(np.abs(x[fin].astype(np.float64) - ref[fin]))) if n else 0.0
        bound = args.rel * float(ref[fin].max() - ref[fin].min())
        ok = w.allreduce(err <= bound, op=MPI.LAND)
        mp, mc = float(np.median(t["py"])), float(np.median(t["c"]))
        d = float(np.median(np.subtract(t["py"], t["c"])))  # paired per round
        d0 = float(np.median(np.subtract(t["c2"], t["c"])))  # the same call twice: the noise floor
        rows.append({"bytes": size, "ranks": zc.size, "rounds": args.rounds, "t_python_s": mp, "t_c_s": mc,
                     "overhead_pct": 100 * d / mc, "overhead_us": 1e6 * d, "control_pct": 100 * d0 / mc,
                     "control_us": 1e6 * d0, "within_bound": ok})
        if zc.rank == 0:
            o = rows[-1]
            print(f"{size:>10} B  python {mp * 1e3:9.3f} ms  C {mc * 1e3:9.3f} ms  overhead {o['overhead_pct']:+6.2f} %"
                  f" ({o['overhead_us']:+.1f} us)  control C-C {o['control_pct']:+6.2f} % ({o['control_us']:+.1f} us)"
                  f"  bound {'ok' if ok else 'VIOLATED'}", flush=True)
    if zc.rank == 0:
        out = os.path.join(ROOT, "build", "bench-python")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "overhead.csv"), "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows[0]))
            wr.writeheader()
            wr.writerows(rows)
        print(f"wrote {os.path.join(out, 'overhead.csv')}")
    zc.Free()


if __name__ == "__main__":
    main()
