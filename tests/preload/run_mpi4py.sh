#!/bin/sh
# One run of the mpi4py program preload_mpi4py.py under mpiexec, with or
# without libzmpi_preload.so.
#
#   run_mpi4py.sh MODE NRANKS PRELOAD_LIB PYTHON PROG MPIEXEC [MPIEXEC_FLAGS...]
#
# MODE:
#   plain     no preload (the program's own baseline), exact results
#   exact     LD_PRELOAD, no ZMPI_ setting: exact results, as without it
#   lossless  LD_PRELOAD, ZMPI_CODEC=zstd (no bound: lossless), ZMPI_REPORT:
#             exact results, and the report's zmpi totals show bytes
#             compressed (bytes_raw > 0, bytes_sent < bytes_raw)
#   eb        LD_PRELOAD, ZMPI_EB=1e-3 ZMPI_EB_MODE=abs, ZMPI_REPORT: float
#             results within 1e-3, the rest exact, the report shows
#             compression
# PYTHON must import mpi4py (and numpy); exit 77 (skipped) if it cannot
# import mpi4py. The program runs as `PYTHON -m mpi4py PROG`, so that an
# uncaught exception on one rank aborts the job instead of leaving the
# others waiting. Every ZMPI_ variable of the caller's environment is removed
# first; the settings reach the ranks through `env` in the launched command.
set -eu
mode=$1 n=$2 lib=$3 python=$4 prog=$5
shift 5
if ! "$python" -c 'import mpi4py' 2>/dev/null; then
    echo "run_mpi4py.sh: $python cannot import mpi4py (scripts/setup installs it into .venv): skipped"
    exit 77
fi
for v in $(env | sed -n 's/^\(ZMPI_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
export ZMPI_NODE_RANKS=1 ZMPI_DECISION=always # as common.sh, which says why
dir=$(mktemp -d "${TMPDIR:-/tmp}/zmpi-mpi4py.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
case $mode in
    plain) "$@" -n "$n" "$python" -m mpi4py "$prog" 0 ;;
    exact) "$@" -n "$n" env LD_PRELOAD="$lib" "$python" -m mpi4py "$prog" 0 ;;
    lossless)
        "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_CODEC=zstd ZMPI_REPORT="$dir/report" \
            "$python" -m mpi4py "$prog" 0 ;;
    eb)
        "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_EB=1e-3 ZMPI_EB_MODE=abs ZMPI_REPORT="$dir/report" \
            "$python" -m mpi4py "$prog" 1e-3 ;;
    *) echo "run_mpi4py.sh: unknown mode $mode" >&2; exit 2 ;;
esac
[ "$mode" = lossless ] || [ "$mode" = eb ] || exit 0
# the report's "zmpi" totals (MPI_COMM_WORLD): messages compressed, fewer bytes sent
"$python" - "$dir/report" <<'PY'
import glob, json, sys
files = glob.glob(sys.argv[1] + "/*.zmpi.json")
if len(files) != 1:
    sys.exit(f"run_mpi4py.sh: expected one *.zmpi.json, found {files}")
with open(files[0]) as f:
    z = json.load(f)["zmpi"]
print("run_mpi4py.sh: report:", z)
if not (z["compressed"] > 0 and z["bytes_raw"] > 0 and z["bytes_sent"] < z["bytes_raw"]):
    sys.exit("run_mpi4py.sh: the report shows no compression")
PY
