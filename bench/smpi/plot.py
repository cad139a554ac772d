#!/usr/bin/env python3
"""Plots of bench/smpi/run results.

  plot.py --sweep SWEEP.csv [--response RESPONSE.csv] --outdir DIR

From a sweep CSV (bench/smpi/run without --coll):
  speedup_vs_size_<platform>.png   speed-up of zmpi's default algorithm over
                                   plain MPI vs bytes per rank, one line per
                                   collective, at the largest rank count
  speedup_vs_ranks_<platform>.png  the same vs the number of ranks, at the
                                   largest size
From a response CSV (bench/smpi/run --response):
  response_<platform>.png          time vs message size for p2p and Alltoall,
                                   plain MPI and zmpi (log-log): where the
                                   latency "knee" is and where compression
                                   starts to pay
Prints the paths it wrote.
"""
import argparse
import collections
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def label_size(b):
    b = int(b)
    for unit, m in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= m and b % m == 0:
            return f"{b // m} {unit}"
    return f"{b} B"


def sweep_plots(path, outdir, rel):
    rows = [r for r in csv.DictReader(open(path)) if r["algo"] in ("default", "zmpi")]
    if rel:
        rows = [r for r in rows if r["rel"] == rel]
    if not rows:
        return []
    written = []
    by_plat = collections.defaultdict(list)
    for r in rows:
        by_plat[r["platform"]].append(r)
    for plat, rs in sorted(by_plat.items()):
        maxn = max(int(r["ranks"]) for r in rs)
        maxb = max(int(r["bytes_per_rank"]) for r in rs)
        for kind in ("size", "ranks"):
            fig, ax = plt.subplots(figsize=(7, 4.5))
            series = collections.defaultdict(list)
            for r in rs:
                if kind == "size" and int(r["ranks"]) == maxn:
                    series[r["coll"]].append((int(r["bytes_per_rank"]), fnum(r["speedup"])))
                if kind == "ranks" and int(r["bytes_per_rank"]) == maxb and r["coll"] != "p2p":
                    series[r["coll"]].append((int(r["ranks"]), fnum(r["speedup"])))
            for coll, pts in sorted(series.items()):
                pts = sorted(p for p in pts if p[1])
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=coll)
            ax.axhline(1.0, color="k", lw=0.8, ls="--")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_ylabel("speed-up over plain MPI (simulated time)")
            if kind == "size":
                ax.set_xlabel("bytes per rank")
                xs = sorted({p[0] for pts in series.values() for p in pts})
                ax.set_xticks(xs, [label_size(x) for x in xs])
                ax.set_title(f"{plat}, {maxn} ranks, REL {rel or 'all'}: zmpi default vs MPI")
            else:
                ax.set_xlabel("ranks")
                xs = sorted({p[0] for pts in series.values() for p in pts})
                ax.set_xticks(xs, [str(x) for x in xs])
                ax.set_title(f"{plat}, {label_size(maxb)} per rank, REL {rel or 'all'}: zmpi default vs MPI")
            ax.legend(fontsize=8, ncol=2)
            ax.grid(True, which="both", alpha=0.3)
            fig.tight_layout()
            out = os.path.join(outdir, f"speedup_vs_{kind}_{plat}.png")
            fig.savefig(out, dpi=110)
            plt.close(fig)
            written.append(out)
    return written


def response_plots(path, outdir):
    rows = list(csv.DictReader(open(path)))
    written = []
    for plat in sorted({r["platform"] for r in rows}):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for ax, coll in zip(axes, ("p2p", "alltoall")):
            rs = [r for r in rows if r["platform"] == plat and r["coll"] == coll]
            for algo, style in (("mpi", "s-"), ("zmpi", "o-"), ("default", "o-")):
                pts = sorted((int(r["bytes"]), float(r["time_s"])) for r in rs if r["algo"] == algo)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style,
                            label="plain MPI" if algo == "mpi" else "zmpi")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("message bytes" + (" (per rank)" if coll == "alltoall" else ""))
            ax.set_ylabel("time per call, s (simulated)")
            n = rs[0]["ranks"] if rs else "?"
            ax.set_title(f"{coll}, {plat}" + (f", {n} ranks" if coll != "p2p" else ", ping-pong, one way"))
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
        fig.tight_layout()
        out = os.path.join(outdir, f"response_{plat}.png")
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep")
    ap.add_argument("--response")
    ap.add_argument("--rel", help="only rows of this REL (as written in the CSV, e.g. 1e-4)")
    ap.add_argument("--outdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    written = []
    if args.sweep:
        written += sweep_plots(args.sweep, args.outdir, args.rel)
    if args.response:
        written += response_plots(args.response, args.outdir)
    for w in written:
        print(w)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
