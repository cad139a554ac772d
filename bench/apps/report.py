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
                "kmeans": ("agreement", "sse_rel_diff"), "fft2d": ("spec_rel_l2", "rt_rms"),
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
        bound = f"{r['eb_mode'].upper()} {r['eb']:g}" if r.get("eb") else r.get("codec", "")
        if r.get("scope") == "message":
            bound += " (message scope)"
            goal = None
        tgt = "" if goal is None else f"≥ {goal:g}×: " + ("met" if r["speedup"] >= goal else "**not met**")
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
        cols = (len(ops) + 1) // 2
        fig, axes = plt.subplots(2, cols, figsize=(3.3 * cols, 6.2), squeeze=False)
        for ax, op in zip([a for row in axes for a in row], ops):
            for run, pts in sorted(data[op].items()):
                pts.sort()
                ax.loglog([p[0] for p in pts], [p[1] for p in pts], "-" if run == "zmpi" else ":",
                          label="zmpi REL 1e-4" if run == "zmpi" else run.replace("plain-", "plain "))
            ax.set_title(f"{op}, {ranks} ranks")
            ax.set_xlabel("bytes")
        axes[0][0].set_ylabel("time per call, s (simulated GbE)")
        axes[1][0].set_ylabel("time per call, s (simulated GbE)")
        axes[0][0].legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, f"response-{ranks}.png"), dpi=100)
        plt.close(fig)


def plot_growth(study_dir, outdir):
    """The perturbation-growth plot (the 2008 study's Fig. 6): RMS difference of h
    against the control over 15 days, the 1e-14 perturbation and every codec."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    for d in sorted(glob.glob(os.path.join(study_dir, "growth-L*"))):
        curves = sorted(glob.glob(os.path.join(d, "*.csv")))
        if not curves:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for c in curves:
            name = os.path.basename(c)[:-4]
            pts = [(float(r["hours"]) / 24, float(r["rms"])) for r in csv.DictReader(open(c))]
            pts = [p for p in pts if p[1] > 0]
            if not pts:
                continue
            style = dict(color="k", lw=2.5) if name == "perturbed" else {}
            ax.semilogy([p[0] for p in pts], [p[1] for p in pts],
                        label="1e-14 perturbation" if name == "perturbed" else name, **style)
        ax.set_xlabel("days")
        ax.set_ylabel("RMS difference of h from the control, m")
        ax.set_title(f"Perturbation growth, Galewsky jet, T42{os.path.basename(d)[7:]} (15 days, 2 ranks)")
        ax.legend(fontsize=7, ncol=2)
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, f"growth-{os.path.basename(d)[7:]}.png"), dpi=110)
        plt.close(fig)


def table_growth(rs):
    print("| layers | codec | ratio | largest RMS difference of h | growth rate /day (envelope) | ÷ h_scale | "
          "acceptable |")
    print("|---:|---|---:|---:|---:|---:|:---:|")
    for r in sorted(rs, key=lambda r: (r["case"]["levels"], r["case"]["codec"], r["case"]["abs"] or 0)):
        q, c = r["quality"], r["case"]
        name = c["codec"] + (f" ABS {c['abs']:g}" if c["abs"] else "")
        print(f"| {c['levels']} | {name} | {r['ratio']:.2f} | {q.get('rms_max', 0):.2g} m | "
              f"{q.get('growth', 0):.2f} ({q.get('env_growth', 0):.2f}) | {q.get('rms_max_over_scale', 0):.2g} | "
              f"{'yes' if r['quality_ok'] else 'no' if r['quality_ok'] is False else '—'} |")


def atmos_series(rs):
    """{codec label: {ranks: row}} and the plain time at each rank count."""
    by, plain = {}, {}
    for r in rs:
        c = r["case"]
        label = c["codec"] + (f" ABS {c['abs']:g}" if c.get("abs") else "")
        by.setdefault(label, {})[r["ranks"]] = r
        plain[r["ranks"]] = min(plain.get(r["ranks"], r["t_plain"]), r["t_plain"])
    return by, plain


def table_atmos(rs):
    by, plain = atmos_series(rs)
    if 1 not in plain:
        return
    ranks = sorted(plain)
    print("| codec | ratio | " + " | ".join(f"{n}" for n in ranks) + " |")
    print("|---|---:|" + "---:|" * len(ranks))
    print("| plain (fastest selector) | 1 | " + " | ".join(f"{plain[1] / plain[n]:.2f}" for n in ranks) + " |")
    for label, rows in sorted(by.items()):
        ratio = max(r["ratio"] for r in rows.values())
        print(f"| {label} | {ratio:.2f} | " + " | ".join(
            "(as plain)" if n == 1 else f"{plain[1] / rows[n]['t_zmpi']:.2f}" if n in rows else ""
            for n in ranks) + " |")


def plot_atmos(rs, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    by, plain = atmos_series(rs)
    if 1 not in plain:
        return
    ranks = sorted(plain)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    ax.plot(ranks, [plain[1] / plain[n] for n in ranks], "k-o", lw=2, label="plain MPI (fastest selector)")
    for label, rows in sorted(by.items()):  # one rank sends nothing: it is the plain run
        ns = [n for n in ranks if n in rows]
        ax.plot(ns, [1.0 if n == 1 else plain[1] / rows[n]["t_zmpi"] for n in ns], "-o", ms=3, label=label)
    ax.plot(ranks, ranks, ":", color="grey", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("simulated GbE nodes")
    ax.set_ylabel("speed-up over 1 node (plain)")
    ax.set_title("atmos T42L26: scaling")
    ax.legend(fontsize=7)
    labels = ["plain"] + sorted(by)
    for k, n in enumerate(n for n in ranks if n > 1):
        for j, label in enumerate(labels):
            row = next(iter(by[labels[1]].values())) if False else None
            if label == "plain":
                r = next((by[l][n] for l in by if n in by[l]), None)
                t, cm = (r["t_plain"], r["comm_plain"]) if r else (0, 0)
            else:
                r = by[label].get(n)
                t, cm = (r["t_zmpi"], r["comm_zmpi"]) if r else (0, 0)
            x = k * (len(labels) + 1) + j
            bx.bar(x, t - cm, color="tab:blue", label="computation" if k == 0 and j == 0 else None)
            bx.bar(x, cm, bottom=t - cm, color="tab:orange", label="communication" if k == 0 and j == 0 else None)
    bx.set_xticks([k * (len(labels) + 1) + (len(labels) - 1) / 2 for k in range(len([n for n in ranks if n > 1]))])
    bx.set_xticklabels([str(n) for n in ranks if n > 1])
    bx.set_xlabel("simulated GbE nodes")
    bx.set_ylabel("simulated seconds (slowest rank)")
    bx.set_title("time split; bars: " + ", ".join(labels), fontsize=8)
    bx.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "atmos-scaling.png"), dpi=110)
    plt.close(fig)


def profile_of(study_dir, app, ranks, which):
    """The calls of a run's zmpi report: {call: (count, time_s, bytes)} and the app's MPI share."""
    files = glob.glob(os.path.join(study_dir, f"report-{app}-{ranks}", which, "*.zmpi.json"))
    if not files:
        return None
    d = json.load(open(sorted(files)[-1]))
    return {c["call"]: (c["count"], c["time_s"], c["bytes"]) for c in d["calls"]}, d


def table_profile(study_dir, rs):
    for app in ("atmos", "himeno"):
        rows = sorted((r for r in rs if r["app"] == app and r["mode"] == "preload"), key=lambda r: r["ranks"])
        if not rows:
            continue
        print(f"\n{app}: MPI share of the run and the largest calls (time per rank, calls per rank, mean bytes)\n")
        print("| nodes | run | time s | MPI % | " + " | ".join(["call 1", "call 2", "call 3"]) + " |")
        print("|---:|---|---:|---:|---|---|---|")
        for r in rows:
            for which, t, cm in (("plain-" + r["selector_best"], r["t_plain"], r["comm_plain"]),
                                 ("zmpi", r["t_zmpi"], r["comm_zmpi"])):
                p = profile_of(study_dir, app, r["ranks"], which)
                if not p:
                    continue
                calls = sorted(p[0].items(), key=lambda kv: -kv[1][1])[:3]
                n = r["ranks"]
                cells = [f"{c[4:]}: {v[1] / n:.3g} s, {v[0] / n:.0f}, {v[2] / max(v[0], 1):.3g} B" for c, v in calls]
                print(f"| {n} | {'plain' if which != 'zmpi' else 'zmpi'} | {t:.3g} | {100 * cm / t:.0f} | "
                      + " | ".join(cells) + " |")


def plot_profile(study_dir, rs, outdir):
    """The MM5-style characterisation: MPI share, time per call and mean message
    size per call as the ranks grow, plain (dashed) and compressed (solid)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    for app in ("atmos", "himeno"):
        rows = sorted((r for r in rs if r["app"] == app and r["mode"] == "preload"), key=lambda r: r["ranks"])
        if not rows:
            continue
        prof = {}
        for r in rows:
            for which in ("plain-" + r["selector_best"], "zmpi"):
                p = profile_of(study_dir, app, r["ranks"], which)
                if p:
                    prof[(r["ranks"], which[:5])] = p[0]
        calls = {}
        for (n, w), p in prof.items():
            for c, v in p.items():
                calls[c] = calls.get(c, 0) + v[1]
        top = [c for c, _ in sorted(calls.items(), key=lambda kv: -kv[1])[:4]]
        fig, (ax, bx, cx) = plt.subplots(1, 3, figsize=(13, 3.8))
        ns = [r["ranks"] for r in rows]
        ax.plot(ns, [100 * r["comm_plain"] / r["t_plain"] for r in rows], "k--o", label="plain")
        ax.plot(ns, [100 * r["comm_zmpi"] / r["t_zmpi"] for r in rows], "k-s", label="zmpi")
        ax.set_ylabel("% of run time in MPI")
        for k, c in enumerate(top):
            for w, style in (("plain", "--"), ("zmpi", "-")):
                pts = [(n, prof[(n, w)][c]) for n in ns if (n, w) in prof and c in prof[(n, w)]]
                if not pts:
                    continue
                col = f"C{k}"
                bx.plot([p[0] for p in pts], [p[1][1] / p[0] for p in pts], style, color=col,
                        label=f"{c[4:]} ({w})")
                cx.plot([p[0] for p in pts], [p[1][2] / max(p[1][0], 1) for p in pts], style, color=col,
                        label=f"{c[4:]} ({w})")
        bx.set_ylabel("seconds per rank in the call")
        cx.set_ylabel("mean bytes sent per call")
        for x in (ax, bx, cx):
            x.set_xscale("log", base=2)
            x.set_xlabel("simulated GbE nodes")
        bx.set_yscale("log")
        cx.set_yscale("log")
        ax.legend(fontsize=7)
        bx.legend(fontsize=6)
        fig.suptitle(f"{app}: communication as the nodes grow (zmpi's profiler; dashed plain, solid compressed)")
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, f"profile-{app}.png"), dpi=110)
        plt.close(fig)


NET_BW = ("1Gbps", "10Gbps", "100Gbps")
NET_LAT = ("1us", "10us", "100us")


def network_rows(rs):
    """{(bandwidth, latency): row} of atmos's runs on the net:BW:LAT platforms."""
    return {tuple(r["platform"].split(":")[1:]): r for r in rs
            if r["platform"].startswith("net:") and r["app"] == "atmos"}


def table_network(rs):
    net = network_rows(rs)
    if not net:
        return
    print("\natmos T42L26 at 16 nodes as the network varies: plain / trunc (DP-Lossy_32), simulated seconds "
          "of one day, speed-up\n")
    print("| bandwidth | " + " | ".join(f"latency {lat[:-2]} µs" for lat in NET_LAT) + " |")
    print("|---|" + "---:|" * len(NET_LAT))
    for bw in NET_BW:
        cells = []
        for lat in NET_LAT:
            r = net.get((bw, lat))
            cells.append(f"{r['t_plain']:.3g} / {r['t_zmpi']:.3g} s, {r['speedup']:.2f}×" if r else "")
        print(f"| {bw[:-4]} Gb/s | " + " | ".join(cells) + " |")


def plot_network(rs, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    net = network_rows(rs)
    if not net:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for k, lat in enumerate(NET_LAT):
        pts = [(float(bw[:-4]), net[(bw, lat)]) for bw in NET_BW if (bw, lat) in net]
        if not pts:
            continue
        colour = f"C{k}"
        ax.loglog([p[0] for p in pts], [p[1]["t_plain"] for p in pts], "--o", color=colour, label=f"plain, {lat}")
        ax.loglog([p[0] for p in pts], [p[1]["t_zmpi"] for p in pts], "-s", color=colour, label=f"trunc, {lat}")
    ax.set_xlabel("link bandwidth, Gb/s")
    ax.set_ylabel("simulated seconds (1 day)")
    ax.set_title("atmos T42L26, 16 nodes: bandwidth and latency")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "network.png"), dpi=110)
    plt.close(fig)


BEGIN = "<!-- tables: generated by bench/apps/report.py --docs -->"
END = "<!-- end of generated tables -->"


def write_docs(text, path):
    """Replaces the generated part of docs/apps.md (between BEGIN and END)."""
    doc = open(path).read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"report.py: {path} has no '{BEGIN}' ... '{END}' section")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n" + text.rstrip("\n") + "\n" + END + tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", default=os.path.join(ROOT, "build", "bench-apps", "study"))
    ap.add_argument("--outdir", default=os.path.join(ROOT, "docs", "bench", "apps"))
    ap.add_argument("--docs", action="store_true", help="write the tables into docs/apps.md (between its markers)")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    if args.docs:
        import contextlib
        import io
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            tables(args)
        write_docs(buf.getvalue(), os.path.join(ROOT, "docs", "apps.md"))
        return 0
    tables(args)
    return 0


def tables(args):
    t = rows(args.study, "targets")
    if t:
        print("### The applications at 2, 16 and 64 GbE nodes\n")
        table_targets(t)
        plot_targets(t, args.outdir)
    m = rows(args.study, "modes")
    if m:
        print("\n### Unchanged under the preload, and on the real shaped network\n")
        table_targets(m)
    plot_response(args.study, args.outdir)
    g = rows(args.study, "growth")
    if g:
        print("\n### The perturbation-growth test (native, 2 ranks, 15 days)\n")
        table_growth(g)
    plot_growth(args.study, args.outdir)
    a = rows(args.study, "atmos")
    if a:
        print("\n### atmos T42L26 on 1-64 GbE nodes: speed-up over one node\n")
        table_atmos(a)
        plot_atmos(a, args.outdir)
    p = rows(args.study, "profile")
    if p:
        print("\n### The communication of atmos and himeno (zmpi's profiler)\n")
        table_profile(args.study, p)
        plot_profile(args.study, p, args.outdir)
        table_network(p)
        plot_network(p, args.outdir)


if __name__ == "__main__":
    sys.exit(main())
