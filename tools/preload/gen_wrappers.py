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
(with excl=FUNC: `zp_f.route ? ZMPI_Name(ARGS) : zp_f.excluded ? FUNC(ARGS) :
PMPI_Name(ARGS)`, FUNC taking the call's int arguments: the ZMPI_ paths run
but the policy leaves this call's send uncompressed)
and COMM is the function's communicator (MPI_COMM_NULL otherwise); RC is
zp_rc for a function returning int (MPI_SUCCESS otherwise); BYTES is the
expression of the function's bytes= mark (0 without one), evaluated after
the call and only when it returned MPI_SUCCESS; DATA is `BUF, COUNT, TYPE`
of a data=BUF mark (the bytes= mark's count and type: the advisor samples
the data), `NULL, 0, MPI_DATATYPE_NULL` without one.


A large-count binding MPI_Name_c marked narrow calls ZMPI_Name with its
MPI_Count parameters as int when zmpi routes and they all fit in an int,
else PMPI_Name_c (MPI's own call: plain data, which any receive takes).
Marked narrow=clamp:P[,P...] (the receive capacities P of a call that
receives), zmpi's receive always takes it when zmpi routes, with P clamped
to INT_MAX (only a message of more elements fails, truncated); the other
MPI_Count parameters must fit in an int, else the call is an error
(MPI_ERR_COUNT through the communicator's handler): MPI's own receive could
not decode a compressed message. Python 3 standard library only; the output
depends on LIST alone. Exits with a
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
                      "hand": False, "skip": False, "zmpi": False, "narrow": False, "clamp": [], "only": None,
                      "bytes": None, "data": None, "excl": None}
                if fn["name"] in names:
                    raise ListError(f"{fn['name']} listed twice")
                names.add(fn["name"])
                for mark in marks.split():
                    if mark in ("hand", "skip", "zmpi", "narrow"):
                        fn[mark] = True
                    elif mark.startswith("narrow=clamp:"):
                        fn["narrow"] = True
                        fn["clamp"] = mark[len("narrow=clamp:"):].split(",")
                    elif mark in ("only=mpich", "only=openmpi", "only=mpi4"):
                        fn["only"] = mark[5:]
                    elif mark.startswith("excl="):
                        fn["excl"] = mark[len("excl="):]
                        if not re.match(r"^\w+$", fn["excl"]):
                            raise ListError(f"malformed mark '{mark}'")
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
                if fn["hand"] + fn["skip"] + fn["zmpi"] + fn["narrow"] > 1:
                    raise ListError("at most one of hand, skip, zmpi, narrow")
                if fn["excl"] and not (fn["zmpi"] or fn["narrow"]):
                    raise ListError("excl= goes with zmpi or narrow")
                if fn["params"] == "void":
                    fn["args"] = []
                elif fn["hand"] or fn["skip"]:
                    fn["args"] = None  # variadic prototypes (MPI_Pcontrol) are hand-written
                else:
                    fn["args"] = [param_name(p) for p in split_params(fn["params"])]
                    if "..." in fn["args"]:
                        raise ListError("a variadic function must be hand-written")
                if fn["narrow"]:
                    check_narrow(fn)
                if fn["bytes"]:
                    check_bytes(fn)
                if fn["data"] and (not fn["bytes"] or (fn["args"] is not None and fn["data"] not in fn["args"])):
                    raise ListError(f"data={fn['data']} needs a bytes= mark and names a parameter")
                funcs.append(fn)
            except ListError as e:
                sys.exit(f"{path}:{lineno}: {e}")
    return funcs


def count_params(fn):
    """The names of the scalar MPI_Count parameters."""
    return [param_name(p) for p in split_params(fn["params"]) if re.match(r"^MPI_Count\s+\w+$", p)]


def check_narrow(fn):
    if not fn["name"].endswith("_c") or fn["ret"] != "int":
        raise ListError("narrow marks a large-count binding: int MPI_Name_c(...)")
    if not count_params(fn):
        raise ListError(f"narrow: {fn['name']} has no MPI_Count parameter")
    if any(re.search(r"\bMPI_Count\b", p) and not re.match(r"^MPI_Count\s+\w+$", p)
           for p in split_params(fn["params"])):
        raise ListError(f"narrow: {fn['name']} has an MPI_Count array or pointer (not narrowed)")
    for c in fn["clamp"]:
        if c not in count_params(fn):
            raise ListError(f"narrow=clamp:{c}: not an MPI_Count parameter of {fn['name']}")
    if [c for c in count_params(fn) if c not in fn["clamp"]] and fn["clamp"]:
        comm_param(fn)  # the error of a count that does not fit is raised on it


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


def narrow_call(fn, args, comm):
    """The call of a narrow large-count wrapper (the module docstring)."""
    counts = count_params(fn)
    must = [c for c in counts if c not in fn["clamp"]]
    fits = " && ".join(f"{c} >= INT_MIN && {c} <= INT_MAX" for c in must) or "1"
    narrowed = ", ".join(f"zp_clamp({a})" if a in fn["clamp"] else f"(int){a}" if a in counts else a
                         for a in fn["args"])
    zcall = f"ZMPI_{fn['name'][4:-2]}({narrowed})"
    if fn["excl"]:
        zcall = f"(zp_f.route ? ZMPI_{fn['name'][4:-2]} : {fn['excl']})({narrowed})"
    pcall = f"PMPI_{fn['name'][4:]}({args})"
    route = "(zp_f.route || zp_f.excluded)" if fn["excl"] else "zp_f.route"
    if not fn["clamp"]:
        return ["    int zp_rc;", f"    if ({route} && {fits})", f"        zp_rc = {zcall};", "    else",
                f"        zp_rc = {pcall};"]
    if not must:
        return [f"    int zp_rc = {route} ? {zcall} : {pcall};"]
    return ["    int zp_rc;", f"    if (!{route})", f"        zp_rc = {pcall};", f"    else if ({fits})",
            f"        zp_rc = {zcall};", "    else",
            f"        zp_rc = zp_count_error({comm}, \"{fn['name']}\");"]


GUARD = {"mpich": "defined(MPICH_VERSION)", "openmpi": "defined(OPEN_MPI)", "mpi4": "MPI_VERSION >= 4"}


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
           "#include <limits.h>",
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
        call = [f"    {fn['ret']} zp_rc = PMPI_{fn['name'][4:]}({args});"]
        comm = "MPI_COMM_NULL"
        if fn["zmpi"] or fn["narrow"]:
            try:
                comm = comm_param(fn)
            except ListError:
                pass
        if fn["zmpi"] and fn["excl"]:
            call = [f"    {fn['ret']} zp_rc = zp_f.route ? ZMPI_{fn['name'][4:]}({args})",
                    f"                : zp_f.excluded ? {fn['excl']}({args}) : PMPI_{fn['name'][4:]}({args});"]
        elif fn["zmpi"]:
            call = [f"    {fn['ret']} zp_rc = zp_f.route ? ZMPI_{fn['name'][4:]}({args}) : PMPI_{fn['name'][4:]}({args});"]
        elif fn["narrow"]:
            call = narrow_call(fn, args, comm)
        data = "NULL, 0, MPI_DATATYPE_NULL"
        if fn["data"]:
            cnt = fn["bytes"].group("count")
            data = f"{fn['data']}, {'zp_clamp(' + cnt + ')' if fn['narrow'] else cnt}, {fn['bytes'].group('type')}"
        rc = "zp_rc" if fn["ret"] == "int" else "MPI_SUCCESS"
        body = [f"ZP_EXPORT {fn['ret']} {fn['name']}({fn['params']})",
                "{",
                "    zp_frame zp_f;",
                f"    zp_begin(&zp_f, ZP_{fn['name']}, __builtin_return_address(0), {comm});"] + call + [
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
