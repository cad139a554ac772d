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
        unsigned long long zp_nb = BYTES;
        zp_end(&zp_f, RC, zp_nb, DATA);
        return zp_rc;
    }

With a made=P mark (P the function's MPI_Comm * result), a successful call
is followed by zp_comm_made(*P): zmpi's one-time set-up of the new
communicator, inside the call's time.

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
COUNT = re.compile(r"^(?P<count>\w+)(?P<form>\*n|\*others|\[\]|\[others\]|\[rank\])?$")

# The model collective of the advisor for every call the preload routes to
# zmpi that sends data (ZMPI_COLL_COUNT: point-to-point), and whether its
# root sends the data of the whole operation: by the call's name without
# MPI_ and _c. A routed call with a bytes= mark missing here stops the build.
ADVISOR = {name: ("ZMPI_COLL_COUNT", 0) for name in (
    "Send", "Ssend", "Isend", "Issend", "Sendrecv", "Sendrecv_replace", "Isendrecv", "Isendrecv_replace")}
ADVISOR.update({"Bcast": ("ZMPI_COLL_BCAST", 1), "Scatter": ("ZMPI_COLL_SCATTER", 1),
                "Scatterv": ("ZMPI_COLL_SCATTER", 1), "Gather": ("ZMPI_COLL_GATHER", 0),
                "Gatherv": ("ZMPI_COLL_GATHER", 0), "Allgather": ("ZMPI_COLL_ALLGATHER", 0),
                "Allgatherv": ("ZMPI_COLL_ALLGATHER", 0), "Alltoall": ("ZMPI_COLL_ALLTOALL", 0),
                "Alltoallv": ("ZMPI_COLL_ALLTOALL", 0), "Reduce_scatter": ("ZMPI_COLL_REDUCE_SCATTER", 0),
                "Reduce_scatter_block": ("ZMPI_COLL_REDUCE_SCATTER", 0), "Allreduce": ("ZMPI_COLL_ALLREDUCE", 0),
                "Reduce": ("ZMPI_COLL_REDUCE", 0)})


def parse_bytes(spec):
    """bytes=COUNT,TYPE[,root][,nonroot][,inplace=BUF[:COUNT:TYPE]] as a dict."""
    parts = spec.split(",")
    if len(parts) < 2:
        raise ListError(f"malformed mark 'bytes={spec}'")
    c = COUNT.match(parts[0])
    if not c or not re.match(r"^\w+$", parts[1]):
        raise ListError(f"malformed mark 'bytes={spec}'")
    b = {"count": c.group("count"), "form": c.group("form") or "", "type": parts[1], "root": False,
         "nonroot": False, "inplace": None, "alt": None}
    for opt in parts[2:]:
        if opt in ("root", "nonroot"):
            b[opt] = True
        elif opt.startswith("inplace="):
            m = re.match(r"^inplace=(\w+)(?::(\w+(?:\*n|\*others|\[\]|\[others\]|\[rank\])?):(\w+))?$", opt)
            if not m:
                raise ListError(f"malformed mark 'bytes={spec}'")
            b["inplace"] = m.group(1)
            if m.group(2):
                a = COUNT.match(m.group(2))
                b["alt"] = {"count": a.group("count"), "form": a.group("form") or "", "type": m.group(3)}
        else:
            raise ListError(f"malformed mark 'bytes={spec}'")
    if b["root"] and b["nonroot"]:
        raise ListError(f"bytes={spec}: root and nonroot")
    return b


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
                      "bytes": None, "data": None, "excl": None, "made": None}
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
                    elif mark.startswith("made="):
                        fn["made"] = mark[len("made="):]
                        if not re.match(r"^\w+$", fn["made"]):
                            raise ListError(f"malformed mark '{mark}'")
                    elif mark.startswith("data="):
                        fn["data"] = [d.split(":") for d in mark[5:].split("|")]
                        if len(fn["data"]) > 2 or not all(1 <= len(d) <= 3 and all(re.match(r"^\w+$", x) for x in d)
                                                          for d in fn["data"]):
                            raise ListError(f"malformed mark '{mark}'")
                    elif mark.startswith("bytes="):
                        fn["bytes"] = parse_bytes(mark[6:])
                    else:
                        raise ListError(f"unknown mark '{mark}'")
                if fn["hand"] + fn["skip"] + fn["zmpi"] + fn["narrow"] > 1:
                    raise ListError("at most one of hand, skip, zmpi, narrow")
                if fn["excl"] and not (fn["zmpi"] or fn["narrow"]):
                    raise ListError("excl= goes with zmpi or narrow")
                if fn["made"] and (fn["hand"] or fn["skip"] or fn["ret"] != "int" or not any(
                        re.match(r"^MPI_Comm\s*\*\s*" + fn["made"] + "$", p) for p in split_params(fn["params"]))):
                    raise ListError("made=P names a parameter MPI_Comm *P of a generated function returning int")
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
                if fn["data"] and (not fn["bytes"] or (fn["args"] is not None and
                                                       any(x not in fn["args"] for d in fn["data"] for x in d))):
                    raise ListError("data= needs a bytes= mark and names parameters")
                if fn["data"] and len(fn["data"]) == 2 and not fn["bytes"]["alt"]:
                    raise ListError("data=BUF|ALT needs bytes=...,inplace=BUF:COUNT:TYPE")
                for d, b in zip(fn["data"] or [], [fn["bytes"], fn["bytes"] and fn["bytes"]["alt"]]):
                    if b and len(d) == 1 and b["form"].startswith("["):
                        raise ListError("data=BUF for an array count needs BUF:COUNTS[:DISPLS]")
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
    names = [b["count"], b["type"]] + ([b["inplace"]] if b["inplace"] else [])
    if b["alt"]:
        names += [b["alt"]["count"], b["alt"]["type"]]
    for n in names:
        if n not in fn["args"]:
            raise ListError(f"bytes= names '{n}', not a parameter of {fn['name']}")
    if b["form"] or b["root"] or b["nonroot"] or (b["alt"] and b["alt"]["form"]):
        comm_param(fn)
        if (b["root"] or b["nonroot"]) and "root" not in fn["args"]:
            raise ListError(f"bytes=...,root: {fn['name']} has no parameter root")


def count_expr(count, form, typ, comm):
    """COUNT x the size of TYPE, in the form's way (mpi_functions.txt's header)."""
    return {"": f"zp_bytes({count}, {typ})", "*n": f"zp_bytes_n({count}, {typ}, {comm})",
            "*others": f"zp_bytes_others({count}, {typ}, {comm})", "[]": f"zp_bytes_v({count}, {typ}, {comm})",
            "[others]": f"zp_bytes_v_others({count}, {typ}, {comm})",
            "[rank]": f"zp_bytes_at_rank({count}, {typ}, {comm})"}[form]


def bytes_expr(fn):
    b = fn["bytes"]
    if not b:
        return "0"
    comm = comm_param(fn) if (b["form"] or b["root"] or b["nonroot"] or
                              (b["alt"] and b["alt"]["form"])) else "MPI_COMM_NULL"
    e = count_expr(b["count"], b["form"], b["type"], comm)
    if b["root"]:
        e = f"(zp_is_root(root, {comm}) ? {e} : 0)"
    if b["nonroot"]:
        e = f"(zp_is_root(root, {comm}) ? 0 : {e})"
    if b["inplace"]:
        alt = count_expr(b["alt"]["count"], b["alt"]["form"], b["alt"]["type"], comm) if b["alt"] else "0"
        e = f"({b['inplace']} == MPI_IN_PLACE ? {alt} : {e})"
    return f"(zp_rc == MPI_SUCCESS ? {e} : 0)"


def data_expr(fn):
    """BUF, COUNT, TYPE of the data the advisor samples (COUNT elements per
    destination; for BUF:COUNTS[:DISPLS] the first block with a positive
    count), evaluated only when the call counted bytes (zp_nb: an array
    count may be insignificant on this rank)."""
    if not fn["data"]:
        return "NULL, 0, MPI_DATATYPE_NULL"
    b = fn["bytes"]
    comm = comm_param(fn)
    clamp = (lambda c: f"zp_clamp({c})") if fn["narrow"] else (lambda c: c)

    def one(d, spec):
        if len(d) == 1:
            return d[0], clamp(spec["count"]), spec["type"]
        counts = d[1]
        buf = f"zp_vbuf({d[0]}, {counts}, {d[2]}, {spec['type']}, {comm})" if len(d) == 3 else d[0]
        return buf, f"zp_vcount({counts}, {comm})", spec["type"]
    main = one(fn["data"][0], b)
    if len(fn["data"]) == 1:
        parts = main
    else:
        alt = one(fn["data"][1], b["alt"])
        cond = f"{b['inplace']} == MPI_IN_PLACE"
        parts = tuple(f"({cond} ? {a} : {m})" for m, a in zip(main, alt))
    return f"zp_nb ? {parts[0]} : NULL, zp_nb ? {parts[1]} : 0, {parts[2]}"


def routed(fn):
    """1 if the wrapper goes through zmpi (marked zmpi or narrow, or
    hand-written with a bytes= mark: MPI_Sendrecv_replace(_c))."""
    return fn["zmpi"] or fn["narrow"] or (fn["hand"] and fn["bytes"] is not None)


def advisor_row(fn):
    """(model collective, root sends) for the advisor; None for a call zmpi
    does not route or that sends nothing."""
    if not routed(fn) or not fn["bytes"]:
        return None
    base = fn["name"][4:-2] if fn["name"].endswith("_c") else fn["name"][4:]
    if base not in ADVISOR:
        raise ListError(f"{fn['name']} is routed to zmpi and sends data, but the advisor has no model for "
                        f"{base} (ADVISOR in {__file__})")
    return ADVISOR[base]


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
    out += ["    ZP_NCALLS", "};", "", "extern const char *const zp_call_names[ZP_NCALLS];",
            "/* The advisor's model of each call: the ZMPI_Coll whose model predicts it",
            " * (ZMPI_COLL_COUNT: point-to-point) for a call routed to zmpi that sends",
            " * data, -1 for the others (passed through); and whether its root sends the",
            " * data of the whole operation. */",
            "extern const signed char zp_call_model[ZP_NCALLS];",
            "extern const unsigned char zp_call_root_sends[ZP_NCALLS];", "",
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
    out += ["};", "", "const signed char zp_call_model[ZP_NCALLS] = {"]
    rows = [(fn, advisor_row(fn)) for fn in funcs if not fn["skip"]]
    out += [f"    {row[0] if row else -1}, /* {fn['name']} */" for fn, row in rows]
    out += ["};", "", "const unsigned char zp_call_root_sends[ZP_NCALLS] = {"]
    out += [f"    {row[1] if row else 0}, /* {fn['name']} */" for fn, row in rows]
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
        if fn["made"]:
            call += [f"    if (zp_rc == MPI_SUCCESS)", f"        zp_comm_made(*{fn['made']});"]
        data = data_expr(fn)
        rc = "zp_rc" if fn["ret"] == "int" else "MPI_SUCCESS"
        body = [f"ZP_EXPORT {fn['ret']} {fn['name']}({fn['params']})",
                "{",
                "    zp_frame zp_f;",
                f"    zp_begin(&zp_f, ZP_{fn['name']}, __builtin_return_address(0), {comm});"] + call + [
                f"    unsigned long long zp_nb = {bytes_expr(fn)};",
                f"    zp_end(&zp_f, {rc}, zp_nb, {data});",
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
            advisor_row(fn)
    except ListError as e:
        sys.exit(f"{sys.argv[1]}: {e}")
    write_h(funcs, sys.argv[3])
    write_c(funcs, sys.argv[2], sys.argv[3].replace("\\", "/").rsplit("/", 1)[-1])


if __name__ == "__main__":
    main()
