#!/usr/bin/env python3
"""Markdown table of a bench/smpi/run CSV against the issue's speed targets.

  report.py TARGETS.csv [EXTRA.jsonl ...]

TARGETS.csv: bench/smpi/run --rank-list 64 --sizes 16M --rels 1e-4 ... (the
default algorithm and the cprp2p baseline of every collective on every
platform). EXTRA.jsonl: single-measurement lines of bench/smpi/run (e.g.
Allreduce in message scope), listed below the table. "Link bound": the
seconds the call's bytes need on one rank's link at the platform's bandwidth
with a bandwidth-optimal plain algorithm (p2p S/B; Bcast, Allreduce, Reduce
2fS/B; the others fS/B; f = (N-1)/N, latencies left out), and the same at
the ratio reached; "zmpi ÷ its bound" is zmpi's time over the latter (over
the plain bound when the call ran plain).
"""
import csv
import json
import sys

# The performance targets against the fastest plain selector: (collective, platform) -> goal
# speed-up; every collective on 10 GbE >= TENGIGE_GOAL; on 100 Gb/s (omnipath64) every collective
# >= NEVER_SLOWER (the decision's own cost), Bcast more.
TARGETS = {("bcast", "gige64"): 6.0, ("scatter", "gige64"): 4.5, ("allgather", "gige64"): 4.0,
           ("allreduce", "gige64"): 3.0, ("bcast", "omnipath64"): 1.3}
TENGIGE_GOAL = 1.5
NEVER_SLOWER = 0.97
# Link bandwidth of each platform (bytes/s) and the bytes a bandwidth-optimal plain algorithm
# moves over one rank's link per byte of the call's size S (f = (N-1)/N): the link bound of the
# call is factor * S / B; compressed at ratio r it is that / r (latencies left out).
LINK_BW = {"gige64": 1.25e8, "tengige64": 1.25e9, "omnipath64": 1.25e10}
LINK_FACTOR = {"p2p": lambda f: 1.0, "bcast": lambda f: 2 * f, "allreduce": lambda f: 2 * f,
               "reduce": lambda f: 2 * f}  # the others (scatter, gather, allgather, alltoall, reduce_scatter): f


def link_bound(r):
    """Seconds the call's bytes need on one link at the platform's bandwidth (plain)."""
    n = int(r["ranks"])
    f = (n - 1) / n
    return LINK_FACTOR.get(r["coll"], lambda f: f)(f) * float(r["bytes_per_rank"]) / LINK_BW[r["platform"]]


def fmt_t(t):
    t = float(t)
    return f"{t * 1e3:.2f} ms" if t < 0.1 else f"{t:.3f} s"


def verdict(coll, plat, sp):
    if coll == "p2p":
        return ""
    goal = TARGETS.get((coll, plat))
    if goal is None and plat == "tengige64":
        goal = TENGIGE_GOAL
    if goal is None and plat == "omnipath64":
        return f"≥ {NEVER_SLOWER:g}×: " + ("met" if sp >= NEVER_SLOWER else "**not met**")
    if goal is None:
        return ""
    return f"≥ {goal:g}×: " + ("met" if sp >= goal else "**not met**")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(sys.argv[1])))
    print("| platform | call | plain MPI (fastest selector) | zmpi default | speed-up | ratio | max err / eb | "
          "compressed | link bound plain / compressed | zmpi ÷ its bound | cprp2p baseline | target |")
    print("|---|---|---:|---:|---:|---:|---:|:---:|---:|---:|---:|---|")
    for plat in ("gige64", "tengige64", "omnipath64"):
        for r in rows:
            if r["platform"] != plat or r["algo"] not in ("default", "zmpi"):
                continue
            base = next((x for x in rows if x["platform"] == plat and x["coll"] == r["coll"]
                         and x["algo"] == "cprp2p"), None)
            sp = float(r["speedup"])
            comp = float(r["compressed"] or 0) > 0
            cp = f"{float(base['speedup']):.2f}×" if base else "—"
            best = r.get("t_mpi_best") or r["t_mpi"]
            sel = r.get("selector_best") or r.get("selector", "")
            lb = link_bound(r)
            ratio = float(r["ratio"]) if comp and float(r["ratio"] or 0) > 0 else 1.0
            print(f"| {plat} | {r['coll']} | {fmt_t(best)} ({sel}) | {fmt_t(r['t_zmpi'])} | {sp:.2f}× | "
                  f"{float(r['ratio']):.2f} | {float(r['max_err_over_eb'] or 0):.3f} | "
                  f"{'yes' if comp else 'no (model)'} | {fmt_t(lb)} / {fmt_t(lb / ratio)} | "
                  f"{float(r['t_zmpi']) / (lb / ratio):.2f} | "
                  f"{cp} | {verdict(r['coll'], plat, sp)} |")
    for path in sys.argv[2:]:
        print()
        print("| platform | call | scope | algorithm | plain MPI (fastest selector) | zmpi | speed-up | ratio | "
              "max err / eb |")
        print("|---|---|---|---|---:|---:|---:|---:|---:|")
        for line in open(path):
            d = json.loads(line)
            print(f"| {d['platform']} | {d['coll']} | {d['scope']} | {d['algo']} | "
                  f"{fmt_t(d.get('t_mpi_best') or d['t_mpi'])} ({d.get('selector_best', '')}) | "
                  f"{fmt_t(d['t_zmpi'])} | {d['speedup']:.2f}× | {d['ratio']:.2f} | {d['max_err_over_eb'] or 0:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
