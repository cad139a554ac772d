#!/usr/bin/env python3
"""Generates the MPI_ wrappers of libzmpi_preload.so from mpi_functions.txt.

    gen_wrappers.py LIST OUT_C OUT_H

LIST is src/preload/mpi_functions.txt (its header documents the format).
OUT_H declares the table of profiled calls: enum zp_call, one ZP_<name> per
listed function not marked skip (hand-written ones included), ZP_NCALLS, and
the names zp_call_names[]. OUT_C defines zp_call_names and, for every
function neither hand-written nor skipped,

    RET MPI_Name(PARAMS)
    {
        zp_frame zp_f;
        zp_begin(&zp_f, ZP_MPI_Name, __builtin_return_address(0), COMM);
        RET zp_rc = PMPI_Name(ARGS);
        zp_end(&zp_f, RC, BYTES, DATA);
        return zp_rc;
    }

For a zmpi mark the call is `zp_f.route ? ZMPI_Name(ARGS) : PMPI_Name(ARGS)`
and COMM is the function's communicator (MPI_COMM_NULL otherwise); RC is
zp_rc for a function returning int (MPI_SUCCESS otherwise); BYTES is the
expression of the function's bytes= mark (0 without one), evaluated after
the call and only when it returned MPI_SUCCESS; DATA is `BUF, COUNT, TYPE`
of a data=BUF mark (the bytes= mark's count and type: the advisor samples
the data), `NULL, 0, MPI_DATATYPE_NULL` without one. Python 3
standard library only; the output depends on LIST alone. Exits with a
message naming the line for a malformed line.
"""
import re
import sys

LINE = re.compile(r"^(?P<ret>[A-Za-z_][A-Za-z_0-9 ]*?[A-Za-z_0-9*])\s*\b(?P<name>MPI_\w+)\((?P<params>.*)\)$")
BYTES = re.compile(r"^(?P<count>\w+)(?P<form>\*n|\[\])?,(?P<type>\w+)(?P<opts>(,root|,inplace=\w+)*)$")


class ListError(Exception):
    pass


def split_params(params):
    """Splits a parameter list at its top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def param_name(p):
    """The name a parameter declares: its last identifier before any [...]."""
    m = re.search(r"(\w+)\s*(\[[^\]]*\])*$", p)
    if not m or not re.search(r"[\w*\]]\s*[*\s]\s*\w+\s*(\[[^\]]*\])*$", p):
        raise ListError(f"parameter without a name: '{p}'")
    return m.group(1)


def parse(path):
    funcs, names = [], set()
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                proto, _, marks = line.partition("|")
                m = LINE.match(proto.strip())
                if not m:
                    raise ListError("not 'RETURN_TYPE MPI_Name(PARAMETERS) [| MARK ...]'")
                fn = {"ret": m.group("ret"), "name": m.group("name"), "params": m.group("params").strip(),
                      "hand": False, "skip": False, "zmpi": False, "only": None, "bytes": None, "data": None}
                if fn["name"] in names:
                    raise ListError(f"{fn['name']} listed twice")
                names.add(fn["name"])
                for mark in marks.split():
                    if mark in ("hand", "skip", "zmpi"):
                        fn[mark] = True
                    elif mark in ("only=mpich", "only=openmpi"):
                        fn["only"] = mark[5:]
                    elif mark.startswith("data="):
                        fn["data"] = mark[5:]
                        if not re.match(r"^\w+$", fn["data"]):
                            raise ListError(f"malformed mark '{mark}'")
                    elif mark.startswith("bytes="):
                        b = BYTES.match(mark[6:])
                        if not b:
                            raise ListError(f"malformed mark '{mark}'")
                        fn["bytes"] = b
                    else:
                        raise ListError(f"unknown mark '{mark}'")
                if fn["hand"] + fn["skip"] + fn["zmpi"] > 1:
                    raise ListError("at most one of hand, skip, zmpi")
                if fn["params"] == "void":
                    fn["args"] = []
                elif fn["hand"] or fn["skip"]:
                    fn["args"] = None  # variadic prototypes (MPI_Pcontrol) are hand-written
                else:
                    fn["args"] = [param_name(p) for p in split_params(fn["params"])]
                    if "..." in fn["args"]:
                        raise ListError("a variadic function must be hand-written")
                if fn["bytes"]:
                    check_bytes(fn)
                if fn["data"] and (not fn["bytes"] or (fn["args"] is not None and fn["data"] not in fn["args"])):
                    raise ListError(f"data={fn['data']} needs a bytes= mark and names a parameter")
                funcs.append(fn)
            except ListError as e:
                sys.exit(f"{path}:{lineno}: {e}")
    return funcs


def comm_param(fn):
    for p in split_params(fn["params"]):
        if re.match(r"^MPI_Comm\s+\w+$", p):
            return param_name(p)
    raise ListError(f"bytes= needs the communicator: {fn['name']} has no MPI_Comm parameter")


def check_bytes(fn):
    b = fn["bytes"]
    if fn["ret"] != "int":
        raise ListError("bytes= on a function that does not return int")
    if fn["args"] is None:
        return
    for n in (b.group("count"), b.group("type")) + tuple(re.findall(r"inplace=(\w+)", b.group("opts"))):
        if n not in fn["args"]:
            raise ListError(f"bytes= names '{n}', not a parameter of {fn['name']}")
    if b.group("form") or ",root" in b.group("opts"):
        comm_param(fn)
        if ",root" in b.group("opts") and "root" not in fn["args"]:
            raise ListError(f"bytes=...,root: {fn['name']} has no parameter root")


def bytes_expr(fn):
    b = fn["bytes"]
    if not b:
        return "0"
    count, typ, form = b.group("count"), b.group("type"), b.group("form")
    if form == "*n":
        e = f"zp_bytes_n({count}, {typ}, {comm_param(fn)})"
    elif form == "[]":
        e = f"zp_bytes_v({count}, {typ}, {comm_param(fn)})"
    else:
        e = f"zp_bytes({count}, {typ})"
    if ",root" in b.group("opts"):
        e = f"(zp_is_root(root, {comm_param(fn)}) ? {e} : 0)"
    for buf in re.findall(r"inplace=(\w+)", b.group("opts")):
        e = f"({buf} == MPI_IN_PLACE ? 0 : {e})"
    return f"(zp_rc == MPI_SUCCESS ? {e} : 0)"


GUARD = {"mpich": "defined(MPICH_VERSION)", "openmpi": "defined(OPEN_MPI)"}


def write_h(funcs, path):
    out = ["/* Generated by tools/preload/gen_wrappers.py from src/preload/mpi_functions.txt: do not edit. */",
           "#ifndef ZMPI_PRELOAD_GEN_H", "#define ZMPI_PRELOAD_GEN_H", "",
           "/* The profiled MPI functions: every listed function not marked skip. */", "enum zp_call {"]
    out += [f"    ZP_{fn['name']}," for fn in funcs if not fn["skip"]]
    out += ["    ZP_NCALLS", "};", "", "extern const char *const zp_call_names[ZP_NCALLS];", "",
            "#endif /* ZMPI_PRELOAD_GEN_H */", ""]
    with open(path, "w") as f:
        f.write("\n".join(out))


def write_c(funcs, path, header):
    out = ["/* Generated by tools/preload/gen_wrappers.py from src/preload/mpi_functions.txt: do not edit. */",
           '#include "preload/profile.h"',
           f'#include "{header}"',
           "",
           "#include <zmpi/zmpi.h>",
           "",
           "/* The wrappers of deprecated functions (MPI_Attr_get, ...) call their",
           " * PMPI_ namesakes, which Open MPI declares deprecated. */",
           "#pragma GCC diagnostic ignored \"-Wdeprecated-declarations\"",
           "",
           "const char *const zp_call_names[ZP_NCALLS] = {"]
    out += [f'    "{fn["name"]}",' for fn in funcs if not fn["skip"]]
    out += ["};", ""]
    for fn in funcs:
        if fn["skip"] or fn["hand"]:
            continue
        args = ", ".join(fn["args"])
        call = f"PMPI_{fn['name'][4:]}({args})"
        comm = "MPI_COMM_NULL"
        if fn["zmpi"]:
            call = f"zp_f.route ? ZMPI_{fn['name'][4:]}({args}) : {call}"
            try:
                comm = comm_param(fn)
            except ListError:
                pass
        data = "NULL, 0, MPI_DATATYPE_NULL"
        if fn["data"]:
            data = f"{fn['data']}, {fn['bytes'].group('count')}, {fn['bytes'].group('type')}"
        rc = "zp_rc" if fn["ret"] == "int" else "MPI_SUCCESS"
        body = [f"ZP_EXPORT {fn['ret']} {fn['name']}({fn['params']})",
                "{",
                "    zp_frame zp_f;",
                f"    zp_begin(&zp_f, ZP_{fn['name']}, __builtin_return_address(0), {comm});",
                f"    {fn['ret']} zp_rc = {call};",
                f"    zp_end(&zp_f, {rc}, {bytes_expr(fn)}, {data});",
                "    return zp_rc;",
                "}"]
        if fn["only"]:
            body = [f"#if {GUARD[fn['only']]}"] + body + ["#endif"]
        out += body + [""]
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    funcs = parse(sys.argv[1])
    try:
        for fn in funcs:
            bytes_expr(fn)
    except ListError as e:
        sys.exit(f"{sys.argv[1]}: {e}")
    write_h(funcs, sys.argv[3])
    write_c(funcs, sys.argv[2], sys.argv[3].replace("\\", "/").rsplit("/", 1)[-1])


if __name__ == "__main__":
    main()
