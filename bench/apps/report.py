#!/usr/bin/env python3
"""Tables and plots of the application studies (bench/apps/study).

  .venv/bin/python bench/apps/report.py [--study DIR] [--outdir docs/bench/apps]

Reads DIR/*.jsonl (default build/bench-apps/study), prints the Markdown
tables of docs/apps.md (targets met or not, speed-ups, ratios, output
quality, the atmos scaling and its perturbation test, the characterisation)
and writes the plots into --outdir.
"""
import argparse
import csv
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# (app, nodes) -> the speed-up target (2021 study at 2 GbE nodes, ABS 1e-4)
TARGETS = {("pingpong", 2): 2.3, ("himeno", 2): 1.9, ("kmeans", 2): 2.2, ("fft2d", 2): 2.6, ("stacking", 64): 4.5}
PUBLISHED = {"pingpong": (2.1, 2.4), "himeno": (1.7, 6.6), "kmeans": (2.0, 4.3), "fft2d": (2.4, 2.7)}
QUALITY_KEYS = {"pingpong": ("max_err_over_bound",), "himeno": ("max_dp", "bound"),
                "kmeans": ("agreement", "centroid_err"), "fft2d": ("spec_rel_l2", "rt_rms"),
                "stacking": ("psnr", "nrmse"), "atmos": ("rms_final", "growth")}


def rows(study_dir, name):
    path = os.path.join(study_dir, name + ".jsonl")
    return [json.loads(x) for x in open(path)] if os.path.exists(path) else []


def fmt_t(t):
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


def quality_text(r):
    q = r.get("quality") or {}
    keys = QUALITY_KEYS.get(r["app"], ())
    parts = []
    for k in keys:
        if k in q:
            v = q[k]
            parts.append(f"{k} {v:.3g}" if isinstance(v, (int, float)) else f"{k} {v}")
    return ", ".join(parts)


def comm_share(r):
    return r["comm_plain"] / r["t_plain"] if r["t_plain"] else 0


def table_targets(rs):
    print("| app | nodes | bound | plain MPI (fastest selector) | zmpi | speed-up | ratio | comm. share (plain) | "
          "comm. speed-up | output | ok | target |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---|:---:|---|")
    for r in sorted(rs, key=lambda r: (r["app"] != "pingpong", r["app"], r["ranks"], r["eb"] or 0)):
        goal = TARGETS.get((r["app"], r["ranks"]))
        if r["app"] == "stacking" and r["eb"] != 1e-4:
            goal = None
        tgt = "" if goal is None else f"≥ {goal:g}×: " + ("met" if r["speedup"] >= goal else "**not met**")
        bound = f"{r['eb_mode'].upper()} {r['eb']:g}" if r.get("eb") else r.get("codec", "")
        csp = r["comm_plain"] / r["comm_zmpi"] if r["comm_zmpi"] else 0
        print(f"| {r['app']} | {r['ranks']} | {bound} | {fmt_t(r['t_plain'])} ({r['selector_best']}) | "
              f"{fmt_t(r['t_zmpi'])} | {r['speedup']:.2f}× | {r['ratio']:.2f} | {100 * comm_share(r):.0f} % | "
              f"{csp:.2f}× | {quality_text(r)} | {'yes' if r['quality_ok'] else 'no' if r['quality_ok'] is False else '—'} | "
              f"{tgt} |")


def plot_targets(rs, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    apps = [a for a in ("pingpong", "himeno", "kmeans", "fft2d") if any(r["app"] == a for r in rs)]
    if not apps:
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.25
    for k, n in enumerate((2, 16, 64)):
        ys = [next((r["speedup"] for r in rs if r["app"] == a and r["ranks"] == n), 0) for a in apps]
        ax.bar([i + (k - 1) * width for i in range(len(apps))], ys, width, label=f"{n} GbE nodes")
    for i, a in enumerate(apps):
        if a in PUBLISHED:
            ax.plot([i - 0.4, i + 0.4], [PUBLISHED[a][0]] * 2, "k--", lw=1)
        if (a, 2) in TARGETS:
            ax.plot([i - 0.4, i + 0.4], [TARGETS[(a, 2)]] * 2, "r:", lw=1.5)
    ax.axhline(1, color="grey", lw=0.5)
    ax.set_xticks(range(len(apps)))
    ax.set_xticklabels(apps)
    ax.set_ylabel("speed-up over the fastest plain MPI")
    ax.set_title("Applications on simulated GbE clusters, ABS 1e-4 (dashed: 2021 study; dotted: target)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "targets.png"), dpi=110)
    plt.close(fig)


def plot_response(study_dir, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    for ranks in (2, 16):
        files = sorted(glob.glob(os.path.join(study_dir, f"response-{ranks}-*.csv")))
        if not files:
            continue
        data = {}
        for f in files:
            run = os.path.basename(f)[len(f"response-{ranks}-"):-4]
            for row in csv.DictReader(open(f)):
                data.setdefault(row["op"], {}).setdefault(run, []).append((int(row["bytes"]), float(row["time_s"])))
        ops = sorted(data)
        fig, axes = plt.subplots(1, len(ops), figsize=(3.2 * len(ops), 3.2), squeeze=False)
        for ax, op in zip(axes[0], ops):
            for run, pts in sorted(data[op].items()):
                pts.sort()
                ax.loglog([p[0] for p in pts], [p[1] for p in pts], "-" if run == "zmpi" else ":",
                          label="zmpi REL 1e-4" if run == "zmpi" else run.replace("plain-", "plain "))
            ax.set_title(f"{op}, {ranks} ranks")
            ax.set_xlabel("bytes")
        axes[0][0].set_ylabel("time per call, s (simulated GbE)")
        axes[0][0].legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, f"response-{ranks}.png"), dpi=100)
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", default=os.path.join(ROOT, "build", "bench-apps", "study"))
    ap.add_argument("--outdir", default=os.path.join(ROOT, "docs", "bench", "apps"))
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    t = rows(args.study, "targets")
    if t:
        print("## Targets\n")
        table_targets(t)
        plot_targets(t, args.outdir)
    m = rows(args.study, "modes")
    if m:
        print("\n## Transparent mode and the real shaped network\n")
        table_targets(m)
    plot_response(args.study, args.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
