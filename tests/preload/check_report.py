#!/usr/bin/env python3
"""Checks the profile libzmpi_preload.so wrote for a run of preload_prog.

    check_report.py DIR NRANKS compressed|plain

DIR must hold exactly one *.zmpi.json. It must parse, name NRANKS ranks, and
list exactly the MPI calls preload_prog makes (its header comment; none
made between MPI_Pcontrol(0) and MPI_Pcontrol(1)), with
their counts summed over the ranks: any other call (MPI_Comm_dup,
MPI_Comm_get_attr, ... that zmpi makes through PMPI_) would be zmpi's own
traffic counted. MPI_Send's bytes must be what the program asked to send.
compressed: zmpi's MPI_COMM_WORLD statistics must show compressed messages
with fewer bytes sent than raw; plain: none compressed.
"""
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
    elif z["compressed"] != 0 or z["bytes_raw"] != 0:
        errors.append(f"zmpi compressed without settings: {z}")
    if errors:
        sys.exit("check_report: " + files[0] + ":\n  " + "\n  ".join(errors))
    print(f"check_report: {name}: {len(got)} calls as expected; zmpi: {z}")


if __name__ == "__main__":
    main()
