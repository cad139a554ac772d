"""zmpi demo: the codec on real fields, then compressed MPI collectives.

1. Runs `zmpi codec eval --json` for fzl (error-bounded) and zstd (lossless
   reference) on every field of the shared data directory: ratio, speed, error.
2. Runs zmpi-bench under real MPI (MPICH, 4 ranks oversubscribed on this
   machine): Bcast and Allreduce of 4 MiB of a real field, compressed, with
   the ratio and the error checked on every element (times on 2 shared cores
   say nothing about a network, so they are not shown).
3. Runs a reference application unchanged under zmpirun (the transparent
   mode): the 2-D FFT of a real field at 4 ranks, plain and at ABS 1e-4 -
   the ratio and the error of its spectrum and round trip against their
   bounds (docs/apps.md).
4. Runs the same collectives on a simulated 64-node Gigabit Ethernet cluster
   (SimGrid SMPI, bench/smpi/run): the fastest plain MPI against zmpi, 16 MiB
   per rank of a real field at REL 1e-4 - the speed-up, ratio and error.
Exits non-zero if any element violates its bound.
"""
import argparse
import json
import math
import os
import subprocess
import sys


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--zmpi", default=os.path.join(here, "build", "tools", "zmpi"))
    ap.add_argument("--data", default=os.environ.get("ZMPI_DATA", os.path.join(here, "..", "shared", "data")))
    ap.add_argument("--rel", type=float, default=1e-3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--codec-only", action="store_true", help="only part 1 (no MPI runs)")
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        sys.exit(f"demo: data directory {args.data} not found (set ZMPI_DATA)")
    files = sorted(f for f in os.listdir(args.data) if f.endswith((".f32", ".f64")))
    if not files:
        sys.exit(f"demo: no .f32/.f64 files in {args.data}")

    def ev(path, dtype, codec, bound):
        cmd = [args.zmpi, "codec", "eval", path, "--dtype", dtype, "--codec", codec,
               "--repeat", str(args.repeat), "--json"] + bound
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"demo: {' '.join(cmd)} failed: {out.stderr.strip()}")
        return json.loads(out.stdout)

    print(f"zmpi codec demo: fzl at REL {args.rel:g} (|x - x'| <= {args.rel:g} x value range, "
          f"checked on every element) vs lossless zstd -1, one core\n")
    hdr = (f"{'field':30s} {'MB':>6s} {'fzl ratio':>9s} {'comp GB/s':>9s} {'dec GB/s':>8s} "
           f"{'maxerr/eb':>9s} {'PSNR dB':>8s} {'zstd ratio':>10s} {'zstd GB/s':>9s}")
    print(hdr)
    print("-" * len(hdr))
    ratios, worst = [], 0.0
    for f in files:
        path = os.path.join(args.data, f)
        dtype = f[-3:]
        a = ev(path, dtype, "fzl", ["--rel", str(args.rel)])
        z = ev(path, dtype, "zstd", [])
        mb = a["count"] * (4 if dtype == "f32" else 8) / 1e6
        ratios.append(a["ratio"])
        worst = max(worst, a["max_err_over_eb"])
        print(f"{f[:-4]:30s} {mb:6.2f} {a['ratio']:9.2f} {a['comp_gbps']:9.2f} {a['decomp_gbps']:8.2f} "
              f"{a['max_err_over_eb']:9.4f} {a['psnr']:8.1f} {z['ratio']:10.2f} {z['comp_gbps']:9.2f}")
    gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\ngeometric-mean fzl ratio {gm:.2f}; worst error {worst:.4f} of the bound "
          f"({'bound held on every element' if worst <= 1.0 else 'BOUND VIOLATED'})")
    ok = worst <= 1.0
    if not args.codec_only:
        ok = mpi_demo(here, args) and ok
        ok = app_demo(here, args) and ok
        ok = smpi_demo(here, args) and ok
    print("\nNext: `scripts/test` runs the test suite; `.venv/bin/python bench/codec/run`, "
          "`bench/smpi/run` and `bench/netrig/run` the benchmarks (README).")
    return 0 if ok else 1


def mpi_demo(here, args):
    bench = os.path.join(here, "build", "bench", "mpi", "zmpi-bench")
    field = os.path.join(args.data, "trinidad_data_1201x2401.f32")
    print("\n== real MPI (MPICH), 4 ranks on this machine, each a node of its own (ZMPI_NODE_RANKS=1: ranks sharing "
          "a node send plain), every call compressed (ZMPI_DECISION=always: measured, this machine's shared memory "
          "would win): Bcast and Allreduce, 4 MiB, REL 1e-4 ==")
    cmd = ["mpiexec", "-n", "4", "env", "ZMPI_NODE_RANKS=1", "ZMPI_DECISION=always", bench, "--coll", "bcast,allreduce", "--bytes", "4M", "--rel", "1e-4",
           "--repeat", "2", "--warmup", "1", "--algos", "default", "--file", field]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or "coll," not in r.stdout:
        print(f"demo: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
        return False
    import csv
    import io
    rows = [x for x in csv.DictReader(io.StringIO(r.stdout[r.stdout.index("coll,"):])) if x["algo"] != "mpi"]
    print(f"{'call':10s} {'ratio':>6s} {'max err / bound':>15s} {'elements beyond':>15s}")
    good = True
    for x in rows:
        print(f"{x['coll']:10s} {float(x['ratio']):6.2f} {float(x['max_err_over_eb']):15.4f} {x['violations']:>15s}")
        good = good and x["violations"] in ("0", "")
    return good


def app_demo(here, args):
    import tempfile
    app = os.path.join(here, "build", "apps", "zmpi-fft2d")
    zmpirun = os.path.join(here, "build", "tools", "zmpirun")
    print("\n== an unmodified application under zmpirun: 2-D FFT of trinidad_data (1201 x 2401), 4 ranks (a node "
          "each), ABS 1e-4 ==")
    env = dict(os.environ, ZMPI_DATA=args.data, ZMPI_DECISION="always")
    with tempfile.TemporaryDirectory() as tmp:
        ref = os.path.join(tmp, "plain.out")
        runs = [["mpiexec", "-n", "4", app, "--quiet", "--iters", "2", "--save", ref],
                [zmpirun, "--eb", "1e-4", "--abs", "--node-ranks", "1", "-n", "4", app, "--quiet", "--iters", "2", "--reference", ref]]
        res = []
        for cmd in runs:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            d = next((json.loads(x) for x in r.stdout.splitlines() if x.startswith('{"app"')), None)
            if d is None:
                print(f"demo: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
                return False
            res.append(d)
    q = res[1]["quality"]
    print(f"transposes (Alltoallv): {res[1]['bytes'] / 1e6:.1f} MB sent, {res[1]['bytes_sent'] / 1e6:.1f} MB on the "
          f"wire (ratio {res[1]['ratio']:.2f}), through libzmpi_preload.so: {res[1]['preload']}")
    print(f"spectrum vs the plain run: relative L2 error {q['spec_rel_l2']:.2e} (bound {q['spec_bound']:.2e}); "
          f"round trip RMS {q['rt_rms']:.2e} (bound {q['rt_rms_bound']:.2e}); acceptance rule met: "
          f"{res[1]['quality_ok']}")
    return res[1]["quality_ok"] is True


def smpi_demo(here, args):
    import json
    import shutil
    if not shutil.which("smpirun"):
        print("\n(SimGrid is not installed: skipping the simulated cluster)")
        return True
    field = os.path.join(args.data, "trinidad_data_1201x2401.f32")
    print("\n== simulated cluster: 64 nodes, 1 Gb/s Ethernet (SimGrid SMPI), 16 MiB per rank, REL 1e-4 ==")
    print(f"{'call':10s} {'plain MPI s':>11s} {'(fastest of)':>12s} {'zmpi s':>9s} {'speed-up':>8s} {'ratio':>6s} "
          f"{'max err/eb':>10s}")
    good = True
    for coll in ("bcast", "scatter", "allgather", "allreduce"):
        cmd = [sys.executable, os.path.join(here, "bench", "smpi", "run"), "--platform", "gige64", "--ranks", "64",
               "--coll", coll, "--bytes", "16M", "--rel", "1e-4", "--algos", "default", "--repeat", "1",
               "--file", field]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"demo: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
            return False
        for line in r.stdout.splitlines():
            d = json.loads(line)
            print(f"{coll:10s} {d['t_mpi_best']:11.4f} {d['selector_best']:>12s} {d['t_zmpi']:9.4f} "
                  f"{d['speedup']:7.2f}x {d['ratio']:6.2f} "
                  f"{d['max_err_over_eb'] or 0:10.4f}", flush=True)
            good = good and d["violations"] == 0
    print("(times are simulated seconds; plain MPI: the fastest of the collective algorithms SMPI models for MPICH,"
          " Open MPI,\n MVAPICH2 and Intel MPI (mpich, ompi, mvapich2, impi), which zmpi runs on too;"
          " Allreduce in result scope: the bound holds on the sum)")
    return good


if __name__ == "__main__":
    sys.exit(main())
