#!/usr/bin/env python3
"""zmpi report: reads the JSON report libzmpi_preload.so writes (ZMPI_REPORT)
and prints its call sites and the advisor's verdicts; --plot draws them.

    zmpi report FILE.zmpi.json [--top N] [--plot OUT.png]
    python -m zmpi.report FILE.zmpi.json [--top N] [--plot OUT.png]

From Python: zmpi.report.load(path) returns the report (a dict; ValueError if
the file is not one), print_table(r, top) and plot(r, top, out) show it.

The table: the call sites by time, with what each sent (bytes the program
asked to send, bytes on the wire), and the advisor's ratio, predicted
seconds saved per rank on 1 GbE / 10 GbE / 100 Gb/s and verdict. The plot
(matplotlib): time per call site; bytes raw vs on the wire; the advisor's
predicted saving per network. Standard library only, but for the plot.
"""
import argparse
import json
import numbers
import os
import sys

# What a report must hold to be read: the keys and their kinds, for the
# report and for each of its call sites (the others are optional).
REPORT_KEYS = {"command": str, "ranks": numbers.Integral, "app_time_s": numbers.Real, "mpi_time_s": numbers.Real,
               "sites": list}
SITE_KEYS = {"id": numbers.Integral, "call": str, "location": str, "count": numbers.Integral,
             "time_s": numbers.Real, "bytes": numbers.Integral, "bytes_wire": numbers.Integral}


def _check(obj, keys, where):
    for k, kind in keys.items():
        if k not in obj:
            raise ValueError(f"{where} has no '{k}'")
        if not isinstance(obj[k], kind) or isinstance(obj[k], bool):
            raise ValueError(f"{where}: '{k}' is {type(obj[k]).__name__}, not {kind.__name__}")


def load(path):
    """The report in path (a dict); OSError if unreadable, ValueError if not a
    zmpi report (naming what is missing or malformed)."""
    with open(path) as f:
        r = json.load(f)
    if not isinstance(r, dict) or r.get("version") != 1 or "sites" not in r:
        raise ValueError("not a zmpi report of version 1 with call sites")
    _check(r, REPORT_KEYS, "the report")
    for i, s in enumerate(r["sites"]):
        if not isinstance(s, dict):
            raise ValueError(f"site {i + 1} is not an object")
        _check(s, SITE_KEYS, f"site {s.get('id', i + 1)}")
        if s.get("advice") is not None and not isinstance(s["advice"], dict):
            raise ValueError(f"site {s['id']}: 'advice' is not an object")
    return r


def label(s):
    return f"{s['call'][4:]} {s['location']}"


def fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0


def print_table(r, top):
    sites = sorted(r["sites"], key=lambda s: -s["time_s"])[:top]
    nets = list(r.get("networks", {"1GbE": 0, "10GbE": 0, "100Gb": 0}))
    print(f"{r['command']}: {r['ranks']} ranks, {r.get('mode', '?')}, setting {r.get('setting', '?')}")
    print(f"application {r['app_time_s']:.3f} s, MPI {r['mpi_time_s']:.3f} s (summed over the ranks)")
    vnet = {(s.get("advice") or {}).get("verdict_network") for s in r["sites"]} - {None}
    if vnet:
        print(f"verdicts decided on {', '.join(sorted(vnet))}")
    head = f"{'site':>4} {'call':<34} {'calls':>7} {'time s':>9} {'sent':>11} {'wire':>11} {'ratio':>6}"
    print(head + "".join(f" {n + ' s':>9}" for n in nets) + "  verdict")
    for s in sites:
        a = s.get("advice") or {}
        saving = a.get("saving_s") or {}
        ratio = a.get("ratio")
        line = (f"{s['id']:>4} {label(s)[:34]:<34} {s['count']:>7} {s['time_s']:>9.3g} {fmt_bytes(s['bytes']):>11} "
                f"{fmt_bytes(s['bytes_wire']):>11} " + (f"{ratio:>6.2f}" if isinstance(ratio, (int, float)) else
                                                         f"{'-':>6}"))
        line += "".join(f" {saving[n]:>9.2g}" if isinstance(saving.get(n), (int, float)) else f" {'-':>9}"
                        for n in nets)
        print(line + "  " + str(a.get("verdict") or "-"))


def plot(r, top, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("zmpi report: --plot needs matplotlib (scripts/setup installs it into .venv; "
                          "run with ZMPI_PYTHON=.venv/bin/python)") from e
    sites = sorted(r["sites"], key=lambda s: -s["time_s"])[:top]
    names = [f"{s['id']}: {label(s)}" for s in sites][::-1]
    y = range(len(sites))
    fig, ax = plt.subplots(1, 3, figsize=(16, 0.45 * len(sites) + 2.5), sharey=True)
    ax[0].barh(y, [s["time_s"] for s in sites][::-1], color="tab:gray")
    ax[0].set_xlabel("time in the call, s (summed over ranks)")
    ax[0].set_yticks(list(y), names, fontsize=8)
    raw = [s["bytes"] / 2**20 for s in sites][::-1]
    wire = [s["bytes_wire"] / 2**20 for s in sites][::-1]
    ax[1].barh([i + 0.2 for i in y], raw, height=0.4, label="asked to send", color="tab:blue")
    ax[1].barh([i - 0.2 for i in y], wire, height=0.4, label="on the wire", color="tab:orange")
    ax[1].set_xlabel("MiB (summed over ranks)")
    ax[1].legend(fontsize=8)
    nets = list(r.get("networks", {}))
    for k, n in enumerate(nets):
        v = [((s.get("advice") or {}).get("saving_s") or {}).get(n) or 0 for s in sites][::-1]
        ax[2].barh([i + 0.27 * (k - 1) for i in y], v, height=0.27, label=n)
    ax[2].axvline(0, color="black", lw=0.6)
    ax[2].set_xlabel(f"predicted saving per rank, s ({r.get('setting', '')})")
    ax[2].legend(fontsize=8)
    for s, i in zip(sites[::-1], y):
        v = (s.get("advice") or {}).get("verdict")
        if v:
            ax[2].annotate(v, (0, i), xytext=(3, 0), textcoords="offset points", fontsize=7, va="center")
    fig.suptitle(f"{r['command'][:90]} ({r['ranks']} ranks, {r.get('mode', '')})", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"zmpi report: wrote {out}")


def main(argv=None):
    p = argparse.ArgumentParser(prog="zmpi report", description=__doc__.split("\n\n")[0])
    p.add_argument("file", help="a .zmpi.json report (ZMPI_REPORT=DIR)")
    p.add_argument("--top", type=int, default=20, help="call sites shown, by time (default 20)")
    p.add_argument("--plot", metavar="OUT.png", help="also draw the sites into OUT.png (matplotlib)")
    a = p.parse_args(argv)
    if a.top < 1:
        p.error("--top must be 1 or more")
    try:
        r = load(a.file)
    except (OSError, ValueError) as e:
        sys.exit(f"zmpi report: {a.file}: {e}")
    print_table(r, a.top)
    if a.plot:
        try:
            os.makedirs(os.path.dirname(a.plot) or ".", exist_ok=True)
            plot(r, a.top, a.plot)
        except ImportError as e:
            sys.exit(str(e))
        except (OSError, ValueError) as e:
            sys.exit(f"zmpi report: --plot {a.plot}: {e}")


if __name__ == "__main__":
    main()
