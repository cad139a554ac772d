#!/usr/bin/env python3
"""Writes the prototype part of src/preload/mpi_functions.txt (run once by hand;
the build never runs it and never parses mpi.h).

    extract_prototypes.py MPICH_INCLUDE_DIR OPENMPI_MPI_H > prototypes.txt

Reads the MPI_ function prototypes of MPICH (mpi_proto.h and the MPI-IO part
of mpio.h in MPICH_INCLUDE_DIR; mpi_proto.h up to its first PMPI_, e.g. /usr/include/x86_64-linux-gnu/mpich) and
of Open MPI (its mpi.h, e.g. /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h),
and prints, sorted by name, the MPICH prototype of every function that both
declare, with MPICH's attribute macros stripped. Left out: the predefined
callbacks (MPI_DUP_FN, MPI_COMM_NULL_COPY_FN, ...: names in capitals), the
functions Open MPI declares removed (__mpi_interface_removed__), MPI-4's
large-count variants (..._c), which Open MPI 4.1 does not declare anyway, and
the Fortran handle conversions (..._c2f, ..._f2c: macros in MPICH).
A function whose parameter types differ between the two headers (beyond
parameter names) is reported on stderr with both prototypes.
"""
import os
import re
import sys

PROTO = re.compile(r"^\s*(?P<ret>[A-Za-z_][A-Za-z_0-9 ]*?[A-Za-z_0-9*])\s*\b(?P<name>MPI_\w+)\s*\((?P<params>.*)\)\s*$", re.S)


def strip_comments(text):
    """Also empties string literals (Open MPI's deprecation messages hold ';')."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)
    return re.sub(r"//[^\n]*", " ", text)


def drop_ifndef_mpich(text):
    """Drops '#ifndef MPICH' and "#ifndef HAVE_MPI_..." blocks (mpio.h's fallbacks for
    what MPICH's mpi.h provides) and then every preprocessor line."""
    out, depth, skip = [], 0, None
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("#"):
            d = s[1:].strip()
            if d.startswith("if"):
                depth += 1
                if skip is None and re.match(r"ifndef\s+(MPICH|HAVE_MPI_\w+)\b", d):
                    skip = depth
            elif d.startswith("endif"):
                if skip == depth:
                    skip = None
                depth -= 1
            continue
        if skip is None:
            out.append(line)
    return "\n".join(out)


def statements(text):
    for st in text.split(";"):
        st = " ".join(st.split())
        if st:
            yield st


def parse(st, attr_res):
    for r in attr_res:
        st = r.sub(" ", st)
    st = " ".join(st.split())
    m = PROTO.match(st)
    if not m:
        return None
    name = m.group("name")
    if re.fullmatch(r"MPI_[A-Z0-9_]+", name) or re.search(r"(_c|_c2f|_f2c)$", name):
        return None
    params = m.group("params").strip().replace("MPIO_Request", "MPI_Request")  # MPICH: #define MPIO_Request MPI_Request
    params = re.sub(r"\s*,\s*", ", ", params)
    params = re.sub(r"\(\s+", "(", params)
    params = re.sub(r"\s+\)", ")", params)
    return name, m.group("ret").strip(), params


def mpich(incdir):
    attrs = [re.compile(r"MPICH_ATTR_\w+\s*\([^)]*\)"), re.compile(r"\b(MPICH_API_PUBLIC|ROMIO_API_PUBLIC)\b")]
    protos = {}
    text = open(os.path.join(incdir, "mpi_proto.h")).read()
    text = text.split("/* Begin Prototypes */", 1)[1]
    text = text[:re.search(r"^\w[\w ]*\bPMPI_", text, re.M).start()]  # the MPI_ part, before PMPI_
    io = open(os.path.join(incdir, "mpio.h")).read()
    io = io.split("/* MPI-IO function prototypes */", 1)[1].split("BINDINGS FOR THE PROFILING INTERFACE", 1)[0]
    for part in (text, drop_ifndef_mpich(io)):
        for st in statements(strip_comments(part)):
            p = parse(st, attrs)
            if p and p[0] not in protos:
                protos[p[0]] = p
    return protos


def openmpi(path):
    attrs = [re.compile(r"\bOMPI_DECLSPEC\b"), re.compile(r"__mpi_interface_deprecated__\s*\([^)]*\)")]
    protos = {}
    for st in statements(strip_comments(drop_ifndef_mpich(open(path).read()))):
        if "OMPI_DECLSPEC" not in st or "__mpi_interface_removed__" in st:
            continue
        p = parse(st, attrs)
        if p:
            protos[p[0]] = p
    return protos


def param_types(params):
    """The parameter types without names, const kept: for comparing headers."""
    if params == "void":
        return ["void"]
    out = []
    for p in params.split(", "):
        p = re.sub(r"\(\s*\*\s*\w+\s*\)", "(*)", p)  # function pointer names
        arr = p.endswith("]")
        p = re.sub(r"\s*\[[^\]]*\]$", "", p)
        p = re.sub(r"\s*\b\w+$", "", p) if re.search(r"[\w\*]\s+\*?\s*\w+$|\*\w+$", p) else p
        out.append(" ".join(p.replace("*", " * ").split()) + (" *" if arr else ""))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = mpich(sys.argv[1]), openmpi(sys.argv[2])
    for name in sorted(set(a) & set(b)):
        _, ret, params = a[name]
        if param_types(params) != param_types(b[name][2]) or ret != b[name][1]:
            print(f"differs: {name}\n  mpich:   {ret} {name}({params})\n  openmpi: {b[name][1]} {name}({b[name][2]})",
                  file=sys.stderr)
        print(f"{ret} {name}({params})")
    only_a = sorted(set(a) - set(b))
    only_b = sorted(set(b) - set(a))
    print(f"only in MPICH: {len(only_a)}: {' '.join(only_a)}", file=sys.stderr)
    print(f"only in Open MPI: {len(only_b)}: {' '.join(only_b)}", file=sys.stderr)


if __name__ == "__main__":
    main()
