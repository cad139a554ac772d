#!/usr/bin/env python3
"""Checks what the compression policy left out, from a preload_prog report.

    check_policy.py DIR first-send          prints FILE:LINE of the first MPI_Send site
    check_policy.py DIR excluded FILE:LINE  checks a run with ZMPI_EXCLUDE_CALLS=Bcast,
                                            MPI_Allreduce and ZMPI_EXCLUDE_SITES=FILE:LINE

excluded: the sites of MPI_Bcast, MPI_Allreduce and the named MPI_Send sent
every byte plain; the other float sends (the other MPI_Send, MPI_Isend) went
compressed; nothing else changed (the counts are the program's).
"""
import glob
import json
import sys


def load(d):
    files = glob.glob(f"{d}/*.zmpi.json")
    if len(files) != 1:
        sys.exit(f"check_policy: expected one *.zmpi.json in {d}, found {files}")
    with open(files[0]) as f:
        return json.load(f)["sites"]


def main():
    sites = load(sys.argv[1])
    sends = sorted((s for s in sites if s["call"] == "MPI_Send"), key=lambda s: int(s["location"].rsplit(":", 1)[1]))
    if sys.argv[2] == "first-send":
        print(sends[0]["location"])
        return
    excluded, errors = sys.argv[3], []
    for s in sites:
        plain = s["compressed_calls"] == 0 and s["bytes_wire"] == s["bytes"]
        if s["call"] in ("MPI_Bcast", "MPI_Allreduce") or (s["call"] == "MPI_Send" and s["location"] == excluded):
            if not plain:
                errors.append(f"{s['call']} at {s['location']}: compressed, but excluded")
        elif s["call"] in ("MPI_Send", "MPI_Isend") and (plain or not s["bytes_wire"] < s["bytes"]):
            errors.append(f"{s['call']} at {s['location']}: not compressed")
    if not any(s["location"] == excluded for s in sends):
        errors.append(f"no MPI_Send site at {excluded}")
    if errors:
        sys.exit("check_policy: " + "; ".join(errors))
    print(f"check_policy: Bcast, Allreduce and the MPI_Send at {excluded} plain; the other sends compressed")


if __name__ == "__main__":
    main()
