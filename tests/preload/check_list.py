#!/usr/bin/env python3
"""The preload list agrees with zmpi.h, and the generator rejects bad lists.

    check_list.py GEN_WRAPPERS MPI_FUNCTIONS_TXT ZMPI_H

1. Every ZMPI_X that include/zmpi/zmpi.h declares and whose MPI_X is listed
   is marked zmpi (the preload routes every call zmpi implements), and every
   function marked zmpi has its ZMPI_ namesake in zmpi.h, with the same
   parameter types. Every large-count binding marked narrow (MPI_X_c) has
   ZMPI_X in zmpi.h, with the same parameter types but int for MPI_Count.
2. gen_wrappers.py exits non-zero, naming the line, on malformed lists.
"""
import os
import re
import subprocess
import sys
import tempfile


def types(params):
    out = []
    for p in params.split(","):
        p = " ".join(p.split())
        arr = p.endswith("]")
        p = re.sub(r"\s*\[[^\]]*\]$", "", p)
        p = re.sub(r"\s*\b\w+$", "", p) if p != "void" else p
        out.append(" ".join(p.replace("*", " * ").split()) + (" *" if arr else ""))
    return out


def main():
    gen, listing, header = sys.argv[1:4]
    text = " ".join(open(header).read().split())
    zmpi = {m.group(1): m.group(2) for m in re.finditer(r"ZMPI_API int ZMPI_(\w+)\(([^)]*)\);", text)}
    listed, marked, narrow = {}, set(), set()
    for line in open(listing):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        proto, _, marks = line.partition("|")
        m = re.search(r"\bMPI_(\w+)\((.*)\)\s*$", proto.strip())
        listed[m.group(1)] = m.group(2)
        if "zmpi" in marks.split():
            marked.add(m.group(1))
        if "narrow" in marks.split():
            narrow.add(m.group(1))
    errors = []
    for name in sorted(set(zmpi) & set(listed)):
        if name not in marked:
            errors.append(f"MPI_{name}: zmpi.h declares ZMPI_{name}, but the list does not mark it zmpi")
        elif types(zmpi[name]) != types(listed[name]):
            errors.append(f"MPI_{name}: parameter types differ from ZMPI_{name}'s: {listed[name]} / {zmpi[name]}")
    for name in sorted(marked - set(zmpi)):
        errors.append(f"MPI_{name} is marked zmpi, but zmpi.h declares no ZMPI_{name}")
    for name in sorted(narrow):
        base = name[:-2]
        if not name.endswith("_c") or base not in zmpi:
            errors.append(f"MPI_{name} is marked narrow, but zmpi.h declares no ZMPI_{base}")
        elif [t.replace("MPI_Count", "int") for t in types(listed[name])] != types(zmpi[base]):
            errors.append(f"MPI_{name}: parameter types differ from ZMPI_{base}'s (MPI_Count as int): "
                          f"{listed[name]} / {zmpi[base]}")

    bad = {
        "no prototype": "MPI_Send(int x)\n",
        "unknown mark": "int MPI_Send(int count) | fast\n",
        "unnamed parameter": "int MPI_Send(int)\n",
        "bytes= names no parameter": "int MPI_Send(int count, MPI_Datatype datatype) | bytes=n,datatype\n",
        "bytes=...[] without a communicator": "int MPI_Send(const int counts[], MPI_Datatype t) | bytes=counts[],t\n",
        "two of hand/skip/zmpi": "int MPI_Send(int count) | hand skip\n",
        "narrow, not a large-count binding": "int MPI_Send(int count) | narrow\n",
        "narrow without an MPI_Count": "int MPI_Send_c(int count) | narrow\n",
        "listed twice": "int MPI_Send(int count)\nint MPI_Send(int count)\n",
        "variadic, not hand-written": "int MPI_Pcontrol(const int level, ...)\n",
        "made= names no MPI_Comm *": "int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) | made=comm\n",
    }
    with tempfile.TemporaryDirectory() as d:
        for what, body in bad.items():
            path = os.path.join(d, "list.txt")
            with open(path, "w") as f:
                f.write("# a comment\n\n" + body)
            r = subprocess.run([sys.executable, gen, path, os.path.join(d, "g.c"), os.path.join(d, "g.h")],
                               capture_output=True, text=True)
            if r.returncode == 0 or "list.txt:" not in r.stderr:
                errors.append(f"gen_wrappers.py accepted a list with {what} (exit {r.returncode}: {r.stderr.strip()})")
    if errors:
        sys.exit("preload.list: FAIL:\n  " + "\n  ".join(errors))
    print(f"preload.list: OK: {len(marked)} functions and {len(narrow)} large-count bindings routed to zmpi, "
          f"{len(listed)} listed; "
          f"{len(bad)} malformed lists rejected")


if __name__ == "__main__":
    main()
