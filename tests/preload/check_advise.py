#!/usr/bin/env python3
"""Checks the report preload_advise left (run_advise.sh): the profile's bytes
by value and the advisor's verdicts.

    check_advise.py REPORT_DIR NRANKS N MODE

MODE:
  values     a compressed run: every site's bytes are what the call's data that
             leaves each rank amounts to (Bcast and Scatter counted at the root,
             a Scatter's or an Alltoall's own block not at all, a Gather's root
             nothing, an in-place Allgatherv its own block), bytes on the wire
             never above them, an Alltoall's ratio that of its blocks that left
             (over 2 for these smooth doubles), every routed call (v-collectives,
             MPI_Send_c) given a verdict other than "pass-through", the in-place
             Allreduce sampled as floating point, and the Bcast's predicted saving
             larger on 1 GbE than on 10 GbE, and on 10 GbE than on 100 Gb/s;
             no MPI_Send_c site expected when the program said its MPI has none
             (an MPI before 4.0, Open MPI 4.1: REPORT_DIR/stdout)
  nosamples  ZMPI_SAMPLES=0, profile-only: every floating-point site "no samples"
             with no ratio
  slow       ZMPI_NET_BW=1Gbit: the Bcast's verdict "compress", decided on ZMPI_NET_BW
  fast       ZMPI_NET_BW=100000Gbit: the Bcast's verdict "not worth it"
  utf8       the command line holds a byte that is not UTF-8 and a control
             character: the report is valid JSON, the bytes replaced by U+FFFD
"""
import glob
import json
import sys

rdir, nranks, n, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
files = glob.glob(rdir + "/*.zmpi.json")
if len(files) != 1:
    sys.exit(f"check_advise: {len(files)} reports in {rdir}")
with open(files[0], "rb") as f:
    raw = f.read()
raw.decode("utf-8")  # a report is UTF-8 text
r = json.loads(raw)
sites = {}
for s in r["sites"]:
    sites.setdefault(s["call"], []).append(s)
errors = []
try:
    with open(rdir + "/stdout") as f:
        large_count = "no MPI_Send_c" not in f.read()
except OSError:
    large_count = True


def site(call):
    got = sites.get(call, [])
    if len(got) != 1:
        errors.append(f"{call}: {len(got)} sites")
        return None
    return got[0]


d = 8 * n  # bytes of one block of doubles
if mode == "values":
    want = {"MPI_Bcast": d, "MPI_Scatter": (nranks - 1) * d, "MPI_Allreduce": None,
            "MPI_Alltoall": nranks * (nranks - 1) * d, "MPI_Alltoallv": nranks * (nranks - 1) * d,
            "MPI_Allgatherv": nranks * d, "MPI_Gatherv": (nranks - 1) * d, "MPI_Scatterv": (nranks - 1) * d,
            "MPI_Reduce_scatter_block": nranks * nranks * d, "MPI_Send": 4 * n, "MPI_Send_c": d}
    if not large_count:
        if "MPI_Send_c" in sites:
            errors.append("MPI_Send_c: a site, but the program did not call it")
        del want["MPI_Send_c"]
    for call, b in want.items():
        if call == "MPI_Allreduce":
            al = sites.get(call, [])
            if len(al) != 2 or any(s["bytes"] != nranks * d for s in al):
                errors.append(f"MPI_Allreduce: bytes {[s['bytes'] for s in al]}, expected two sites of {nranks * d}")
            for s in al:
                v = (s.get("advice") or {}).get("verdict")
                if v in (None, "pass-through", "not floating point", "no samples"):
                    errors.append(f"MPI_Allreduce site {s['id']} ({s['location']}): verdict {v!r}")
            continue
        s = site(call)
        if s is None:
            continue
        if s["bytes"] != b:
            errors.append(f"{call}: bytes {s['bytes']}, expected {b}")
        if s["bytes_wire"] > s["bytes"]:
            errors.append(f"{call}: {s['bytes_wire']} bytes on the wire for {s['bytes']} sent")
        v = (s.get("advice") or {}).get("verdict")
        if v in (None, "pass-through", "not floating point"):
            errors.append(f"{call}: verdict {v!r}")
    a2a = site("MPI_Alltoall")
    if a2a and not a2a["bytes_wire"] * 2 < a2a["bytes"]:
        errors.append(f"MPI_Alltoall: ratio {a2a['bytes'] / max(a2a['bytes_wire'], 1):.2f} (blocks that left: > 2)")
    bc = site("MPI_Bcast")
    if bc:
        sv = bc["advice"]["saving_s"]
        if not sv["1GbE"] > sv["10GbE"] > sv["100Gb"]:
            errors.append(f"MPI_Bcast: savings {sv} not ordered 1 GbE > 10 GbE > 100 Gb/s")
elif mode == "nosamples":
    for s in r["sites"]:
        a = s.get("advice")
        if a and s["call"] not in ("MPI_Recv", "MPI_Recv_c") and a["verdict"] != "no samples":
            errors.append(f"{s['call']} site {s['id']}: verdict {a['verdict']!r} without samples")
        if a and a["verdict"] == "no samples" and a["ratio"] is not None:
            errors.append(f"{s['call']} site {s['id']}: ratio {a['ratio']} without samples")
elif mode in ("slow", "fast"):
    bc = site("MPI_Bcast")
    want = "compress" if mode == "slow" else "not worth it"
    if bc and (bc["advice"]["verdict"] != want or bc["advice"]["verdict_network"] != "ZMPI_NET_BW"):
        errors.append(f"MPI_Bcast on {mode}: verdict {bc['advice']['verdict']!r} on "
                      f"{bc['advice']['verdict_network']!r}, expected {want!r} on ZMPI_NET_BW")
elif mode == "utf8":
    if "\ufffd" not in r["command"] or "\x01" not in r["command"]:
        errors.append(f"command {r['command']!r}: the byte 0xff not replaced, or the control character lost")
else:
    sys.exit(f"check_advise: unknown mode {mode}")
for e in errors:
    print("check_advise:", e)
print(f"check_advise: {mode}: {'FAILED' if errors else 'ok'}")
sys.exit(1 if errors else 0)
