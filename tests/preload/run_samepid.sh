#!/bin/sh
# Two runs whose rank 0 has the same process id (each in a new PID
# namespace, where the launcher's processes get the same small ids) write
# their reports to one ZMPI_REPORT directory: the second never replaces the
# first (its files take the suffix -2).
#
#   run_samepid.sh PRELOAD_LIB PROG MPIEXEC [MPIEXEC_FLAGS...]
#
# Exit 77 (skipped) where a PID namespace cannot be made (unshare needs root
# or user namespaces).
set -eu
lib=$1 prog=$2
shift 2
. "$(dirname "$0")/common.sh" # no ZMPI_ variable of the caller; $dir
unshare --pid --fork --mount-proc true 2>/dev/null || { echo "run_samepid.sh: no PID namespace here: skipped"; exit 77; }
for run in 1 2; do
    unshare --pid --fork --mount-proc "$@" -n 2 env LD_PRELOAD="$lib" ZMPI_REPORT="$dir/rep" "$prog" 0 >/dev/null
    [ "$run" = 1 ] && sum=$(cat "$dir"/rep/*.zmpi.json | cksum)
done
ls "$dir/rep"
n=$(ls "$dir"/rep/*.zmpi.json | wc -l)
[ "$n" = 2 ] || { echo "run_samepid.sh: $n JSON reports after two runs, expected 2"; exit 1; }
first=$(ls "$dir"/rep/*.zmpi.json | grep -v -- '-2\.zmpi\.json$')
[ "$(cat "$first" | cksum)" = "$sum" ] || { echo "run_samepid.sh: the first report was changed"; exit 1; }
ls "$dir"/rep/*-2.zmpi.txt >/dev/null || { echo "run_samepid.sh: no -2 text report"; exit 1; }
echo "run_samepid.sh: ok"
