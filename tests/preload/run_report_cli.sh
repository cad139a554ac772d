#!/bin/sh
# `zmpi report` on a real report: preload_prog at 2 ranks under
# libzmpi_preload.so with a bound and ZMPI_REPORT, then
# `zmpi report FILE.json --plot OUT.png` must print the call sites with the
# advisor's verdicts and write a PNG; a file that is not a report is an error.
#
#   run_report_cli.sh PRELOAD_LIB PROG ZMPI_CLI MPIEXEC [MPIEXEC_FLAGS...]
set -eu
lib=$1 prog=$2 cli=$3
shift 3
. "$(dirname "$0")/common.sh" # no ZMPI_ variable of the caller; $dir
"$@" -n 2 env LD_PRELOAD="$lib" ZMPI_SAMPLE_BUDGET=100 ZMPI_EB=1e-3 ZMPI_EB_MODE=abs ZMPI_REPORT="$dir" "$prog" 1e-3 --expect-preload
"$cli" report "$dir"/*.zmpi.json --plot "$dir/sites.png" >"$dir/out"
cat "$dir/out"
grep -q 'Send preload_prog.c:' "$dir/out" || { echo "run_report_cli.sh: no MPI_Send site in the table"; exit 1; }
grep -q 'not floating point' "$dir/out" || { echo "run_report_cli.sh: no verdict for the MPI_INT Allreduce"; exit 1; }
[ "$(head -c 4 "$dir/sites.png" | od -An -c | tr -d ' ')" = "211PNG" ] || { echo "run_report_cli.sh: no PNG"; exit 1; }
echo '{"version": 2}' >"$dir/bad.json"
if "$cli" report "$dir/bad.json" >"$dir/out" 2>&1; then echo "run_report_cli.sh: a bad file was accepted"; exit 1; fi
grep -q 'not a zmpi report' "$dir/out" || { cat "$dir/out"; exit 1; }
echo "run_report_cli.sh: ok"
