"""zmpi demo: ratio, speed and error of the error-bounded codec on real fields.

Runs `zmpi codec eval --json` for fzl (error-bounded) and zstd (lossless
reference) on every field of the shared data directory and prints a table.
Exits non-zero if any element violates the bound.
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
    print("Next: `scripts/test` runs the test suite; `.venv/bin/python bench/codec/run` the full benchmark.")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
