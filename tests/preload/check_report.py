#!/usr/bin/env python3
"""Checks the profile libzmpi_preload.so wrote for a run of preload_prog.

    check_report.py DIR NRANKS compressed|plain|profile

DIR must hold exactly one *.zmpi.json. It must parse, name NRANKS ranks, and
list exactly the MPI calls preload_prog makes (its header comment; none
made between MPI_Pcontrol(0) and MPI_Pcontrol(1)), with
their counts summed over the ranks: any other call (MPI_Comm_dup,
MPI_Comm_get_attr, ... that zmpi makes through PMPI_) would be zmpi's own
traffic counted. MPI_Send's bytes must be what the program asked to send.
compressed: zmpi's MPI_COMM_WORLD statistics must show compressed messages
with fewer bytes sent than raw; plain and profile (ZMPI_PROFILE_ONLY=1): none
compressed.

The call sites (check_sites): the JSON's "sites" hold the keys tools read,
their counts add up to the calls', the MPI_Send sites are located at
preload_prog.c:<line> in main (the program is built with -g), compressed
sites sent fewer bytes than raw, every sampled error is within the bound,
and the advisor's verdicts are what the data implies (float sends sampled
with ratio > 1; the MPI_INT Allreduce "not floating point"). The text file
has mpiP's header lines and section headings in mpiP's order, then zmpi's.
"""
import math
import glob
import json
import sys

N, M = 100000, 50000


def main():
    d, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    files = glob.glob(f"{d}/*.zmpi.json")
    if len(files) != 1:
        sys.exit(f"check_report: expected one *.zmpi.json in {d}, found {files}")
    name = files[0].rsplit("/", 1)[-1]
    if not name.startswith(f"preload_prog.{n}."):
        sys.exit(f"check_report: file name {name}: expected preload_prog.{n}.<pid>.zmpi.json")
    with open(files[0]) as f:
        r = json.load(f)
    want = {"MPI_Init": n, "MPI_Comm_rank": n, "MPI_Comm_size": n, "MPI_Send": 2, "MPI_Recv": 2, "MPI_Isend": n,
            "MPI_Irecv": n, "MPI_Waitall": n, "MPI_Sendrecv_replace": n, "MPI_Bcast": n, "MPI_Allreduce": 3 * n, "MPI_Probe": 1,
            "MPI_Get_count": 1, "MPI_Pcontrol": 2 * n, "MPI_Finalize": n}
    got = {c["call"]: c["count"] for c in r["calls"]}
    errors = []
    if r.get("version") != 1 or r.get("ranks") != n:
        errors.append(f"version {r.get('version')} ranks {r.get('ranks')}, expected 1 and {n}")
    if "preload_prog" not in r.get("command", ""):
        errors.append(f"command {r.get('command')!r}")
    for k in sorted(set(want) | set(got)):
        if want.get(k) != got.get(k):
            errors.append(f"{k}: count {got.get(k)}, expected {want.get(k)}")
    calls = {c["call"]: c for c in r["calls"]}
    send_bytes = calls.get("MPI_Send", {}).get("bytes")
    if send_bytes != 4 * (N + M):
        errors.append(f"MPI_Send bytes {send_bytes}, expected {4 * (N + M)}")
    isend_bytes = calls.get("MPI_Isend", {}).get("bytes")
    if isend_bytes != 4 * N * n:
        errors.append(f"MPI_Isend bytes {isend_bytes}, expected {4 * N * n}")
    if not (r["app_time_s"] > 0 and 0 < r["mpi_time_s"] <= r["app_time_s"] * 1.01 + 1e-3):
        errors.append(f"app_time_s {r['app_time_s']} mpi_time_s {r['mpi_time_s']}")
    if abs(sum(c["time_s"] for c in r["calls"] if c["call"] not in ("MPI_Init", "MPI_Init_thread"))
           - r["mpi_time_s"]) > 1e-6 * max(1.0, r["mpi_time_s"]):
        errors.append("mpi_time_s is not the sum of the calls' times")
    z = r["zmpi"]
    if mode == "compressed":
        if not (z["compressed"] > 0 and 0 < z["bytes_sent"] < z["bytes_raw"]):
            errors.append(f"zmpi statistics show no compression: {z}")
        if z.get("nodes") != n:  # ZMPI_NODE_RANKS=1: a node per rank
            errors.append(f"zmpi nodes {z.get('nodes')}, expected {n} (ZMPI_NODE_RANKS=1)")
    elif mode == "onenode":
        same = sum(s["fallbacks"].get("same_node", 0) for s in r.get("sites", []) if s["call"] == "MPI_Send")
        if z["compressed"] != 0 or z["bytes_raw"] != 0 or z.get("nodes") != 1 or same < 2:
            errors.append(f"one node: compressed something, or not one node, or MPI_Send's same-node fallbacks "
                          f"{same} < 2: {z}")
    elif z["compressed"] != 0 or z["bytes_raw"] != 0:
        errors.append(f"zmpi compressed without settings: {z}")
    errors += check_sites(r, mode, got)
    errors += check_text(files[0][: -len(".json")] + ".txt")
    if mode == "onenode":
        with open(files[0][: -len(".json")] + ".txt") as f:
            line = next((x for x in f if x.startswith("@ zmpi nodes")), "")
        if ": 1 (" not in line or "nothing is compressed" not in line:
            errors.append(f"text report: the nodes line {line.strip()!r} does not say one node, nothing compressed")
    if errors:
        sys.exit("check_report: " + files[0] + ":\n  " + "\n  ".join(errors))
    print(f"check_report: {name}: {len(got)} calls as expected; zmpi: {z}")


SITE_KEYS = {"id", "call", "location", "function", "count", "time_s", "bytes", "bytes_wire", "compressed_calls",
             "fallbacks", "max_err_over_eb", "advice"}
VERDICTS = {"compress", "not worth it", "too small", "not floating point", "pass-through", "no samples"}
HEADINGS = ["@ mpiP", "@ Command :", "@ Version", "@ Collector Rank", "@ MPI Task Assignment",
            "@--- MPI Time (seconds) ", "@--- Callsites: ", "@--- Aggregate Time (top twenty, descending, milliseconds) ",
            "@--- Aggregate Sent Message Size (top twenty, descending, bytes) ",
            "@--- Callsite Time statistics (all, milliseconds): ",
            "@--- Callsite Message Sent statistics (all, sent bytes) ", "@--- zmpi Compression",
            "@--- zmpi Advisor", "@--- End of Report"]


def check_sites(r, mode, calls):
    errors, per_call = [], {}
    for s in r.get("sites", []):
        if not SITE_KEYS <= set(s):
            errors.append(f"site {s.get('id')}: keys {sorted(SITE_KEYS - set(s))} missing")
            continue
        per_call[s["call"]] = per_call.get(s["call"], 0) + s["count"]
        if s["max_err_over_eb"] is not None and s["max_err_over_eb"] > 1:
            errors.append(f"site {s['id']} {s['call']}: sampled error {s['max_err_over_eb']} times the bound")
        a = s["advice"]
        if a is not None and a["verdict"] not in VERDICTS:
            errors.append(f"site {s['id']}: verdict {a['verdict']!r}")
        if mode != "compressed" and (s["compressed_calls"] or s["bytes_wire"] != s["bytes"]):
            errors.append(f"site {s['id']} {s['call']}: compressed without settings")
    want_mode = {"compressed": "compress", "plain": "profile", "profile": "profile-only", "onenode": "compress"}[mode]
    if r.get("mode") != want_mode:
        errors.append(f"mode {r.get('mode')!r}, expected {want_mode!r}")
    if mode == "profile" and (r.get("mode") != "profile-only" or r.get("setting") != "fzl abs 0.001"):
        errors.append(f"profile-only run: mode {r.get('mode')!r}, setting {r.get('setting')!r} (expected the bound's)")
    t = r.get("totals", {})
    if t.get("bytes") != sum(s["bytes"] for s in r.get("sites", [])) or \
            t.get("bytes_wire") != sum(s["bytes_wire"] for s in r.get("sites", [])):
        errors.append(f"totals {t} are not the sums of the sites")
    if per_call != calls:
        errors.append(f"sites' counts per call {per_call} differ from the calls' {calls}")
    sends = [s for s in r.get("sites", []) if s["call"] == "MPI_Send"]
    for s in sends:
        if not (s["location"].startswith("preload_prog.c:") and s["function"] == "main"):
            errors.append(f"MPI_Send site at {s['location']} in {s['function']}, expected preload_prog.c:<line> in main")
        a = s["advice"]
        if not a or a["samples"] < 1 or not a["ratio"] > 1 or len(a["ladder"]) != 6:
            errors.append(f"MPI_Send site {s['id']}: advice {a}")
        if mode == "compressed" and not (s["compressed_calls"] == s["count"] and s["bytes_wire"] < s["bytes"]):
            errors.append(f"MPI_Send site {s['id']} not compressed: {s}")
    ints = [s for s in r.get("sites", []) if s["call"] == "MPI_Allreduce" and s["bytes"] == 4 * r["ranks"]]
    if len(ints) != 1 or ints[0]["advice"]["verdict"] != "not floating point":
        errors.append(f"the MPI_INT Allreduce site: {ints}")
    return errors


def check_text(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        return [f"{path}: {e}"]
    at, errors = 0, []
    for h in HEADINGS:
        i = text.find("\n" + h, at - 1) if at else (0 if text.startswith(h) else -1)
        if i < 0:
            errors.append(f"{path}: no {h!r} after position {at}")
        else:
            at = i + 1
    return errors


if __name__ == "__main__":
    main()
