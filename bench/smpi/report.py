#!/usr/bin/env python3
"""Markdown table of a bench/smpi/run CSV against the issue's speed targets.

  report.py TARGETS.csv [EXTRA.jsonl ...]

TARGETS.csv: bench/smpi/run --rank-list 64 --sizes 16M --rels 1e-4 ... (the
default algorithm and the cprp2p baseline of every collective on every
platform). EXTRA.jsonl: single-measurement lines of bench/smpi/run (e.g.
Allreduce in message scope), listed below the table.
"""
import csv
import json
import sys

# (collective, platform) -> (goal, kind): kind "x" = speed-up >= goal, "s" = time <= goal seconds,
# "never" = not slower than plain MPI (speed-up >= 0.99: the decision's own cost)
TARGETS = {
    ("allreduce", "gige64"): (6.0, "x"), ("allreduce", "omnipath64"): (None, "never"),
    ("bcast", "gige64"): (9.5, "x"), ("bcast", "omnipath64"): (1.4, "x"),
    ("scatter", "gige64"): (7.0, "x"), ("scatter", "omnipath64"): (None, "never"),
    ("allgather", "gige64"): (3.5, "x"), ("allgather", "omnipath64"): (None, "never"),
}
TENGIGE_GOAL = 2.0  # every collective on 10 GbE


def fmt_t(t):
    t = float(t)
    return f"{t * 1e3:.2f} ms" if t < 0.1 else f"{t:.3f} s"


def verdict(coll, plat, sp):
    if plat == "tengige64" and coll != "p2p":
        return f"≥ {TENGIGE_GOAL:g}×: " + ("met" if sp >= TENGIGE_GOAL else "**not met**")
    goal = TARGETS.get((coll, plat))
    if not goal:
        return ""
    g, kind = goal
    if kind == "never":
        return "never slower: " + ("met" if sp >= 0.99 else "**not met**")
    return f"≥ {g:g}×: " + ("met" if sp >= g else "**not met**")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(sys.argv[1])))
    print("| platform | call | plain MPI (fastest selector) | zmpi default | speed-up | ratio | max err / eb | "
          "compressed | cprp2p baseline | target |")
    print("|---|---|---:|---:|---:|---:|---:|:---:|---:|---|")
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
            print(f"| {plat} | {r['coll']} | {fmt_t(best)} ({sel}) | {fmt_t(r['t_zmpi'])} | {sp:.2f}× | "
                  f"{float(r['ratio']):.2f} | {float(r['max_err_over_eb'] or 0):.3f} | "
                  f"{'yes' if comp else 'no (model)'} | "
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
