#!/usr/bin/env python3
"""One correctness case of a reference application (tests/apps, ctest apps.*).

  run_app.py --app EXE --np N --launcher "mpiexec ..." --mode api|preload|plain
             [--preload LIB] [--setting "--abs 1e-4" | "--codec zstd" ...] [--save-np N]
             [--envelope EPS] [--expect-fail] [--min-bytes B] -- APP-ARGS...

Runs the application plainly with --save, then the case with --reference
to that output, and checks what the application reported (its JSON line):
quality_ok must be true (its acceptance rule met: the bound on its final
output, or bit-identical output for lossless and plain runs), and a
compressed case on more than one rank must have compressed something
(compressed_calls > 0, ratio > 1). --mode plain: the second run is plain again (bit-identical).
--mode preload: the application runs unchanged (--api mpi) with LIB
preloaded and the setting given as ZMPI_ variables, as zmpirun sets them.
--save-np: the plain run at another rank count (a result the same at every
rank count). --envelope EPS (atmos): a third run perturbed by EPS writes its
difference curve (--perturb EPS --curve), and the case judges itself against
it (--envelope): the perturbation-growth test. --expect-fail: the case must
report quality_ok false (a setting the application's rule must reject).
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile


def run(cmd, env):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    res = next((json.loads(x) for x in r.stdout.splitlines() if x.startswith('{"app"')), None)
    if res is None or r.returncode not in (0, 1):
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    return res


def zmpi_vars(setting):
    """ZMPI_ variables of an --api zmpi setting ("--abs 1e-4", "--codec zstd --rel 1e-3", ...)."""
    out, args = {}, shlex.split(setting)
    for flag, value in zip(args[::2], args[1::2]):
        if flag == "--codec":
            out["ZMPI_CODEC"] = value
        elif flag in ("--abs", "--rel"):
            out["ZMPI_EB"], out["ZMPI_EB_MODE"] = value, flag[2:]
        else:
            sys.exit(f"run_app.py: unknown setting {flag}")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--np", required=True)
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--mode", required=True, choices=("api", "preload", "plain"))
    ap.add_argument("--preload")
    ap.add_argument("--setting", default="")
    ap.add_argument("--save-np")
    ap.add_argument("--envelope")
    ap.add_argument("--expect-fail", action="store_true")
    ap.add_argument("--min-bytes", default="1024")
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    app_args = [x for x in a.rest if x != "--"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZMPI_") or k == "ZMPI_DATA"}
    env["ZMPI_MIN_BYTES"] = a.min_bytes
    env["ZMPI_NODE_RANKS"] = "1"  # a node per rank: ranks sharing this machine's node would send plain
    env["ZMPI_DECISION"] = "always"  # compressed where it can be (measuring would follow this machine's noise)
    launcher = shlex.split(a.launcher)
    launch = launcher + ["-n", a.np]
    with tempfile.TemporaryDirectory() as tmp:
        ref = os.path.join(tmp, "plain.out")
        base = run(launcher + ["-n", a.save_np or a.np, a.app, "--quiet", "--save", ref] + app_args, env)
        if a.envelope:
            env_csv = os.path.join(tmp, "envelope.csv")
            run(launch + [a.app, "--quiet", "--perturb", a.envelope, "--reference", ref, "--curve", env_csv]
                + app_args, env)
            app_args = app_args + ["--envelope", env_csv]
        if a.mode == "plain":
            res = run(launch + [a.app, "--quiet", "--reference", ref] + app_args, env)
        elif a.mode == "api":
            res = run(launch + [a.app, "--quiet", "--api", "zmpi", "--reference", ref] + shlex.split(a.setting)
                      + app_args, env)
        else:
            penv = dict(env, **zmpi_vars(a.setting))
            res = run(launch + ["env", f"LD_PRELOAD={a.preload}", a.app, "--quiet", "--reference", ref] + app_args,
                      penv)
    print(json.dumps(res))
    fails = []
    if a.expect_fail:
        if res.get("quality_ok") is not False:
            fails.append(f"quality_ok is {res.get('quality_ok')}, expected false (quality {res.get('quality')})")
    elif res.get("quality_ok") is not True:
        fails.append(f"quality_ok is {res.get('quality_ok')} (rule: {res.get('rule')}; quality {res.get('quality')})")
    if a.mode != "plain" and int(a.np) > 1 and (res["compressed_calls"] == 0 or res["ratio"] <= 1):
        fails.append(f"nothing compressed (compressed_calls {res['compressed_calls']}, ratio {res['ratio']})")
    if a.mode == "plain" and res["compressed_calls"] != 0:
        fails.append("a plain run compressed")
    if a.mode == "preload" and not res.get("preload"):
        fails.append("the preload library was not loaded")
    if base["quality_ok"] is False:
        fails.append("the plain run failed its own checks")
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
