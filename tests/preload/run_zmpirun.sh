#!/bin/sh
# zmpirun (tools/zmpirun) around preload_prog.
#
#   run_zmpirun.sh MODE ZMPIRUN PROG PYTHON CHECK_REPORT
#
# MODE:
#   eb      zmpirun --eb 1e-3 --abs --report DIR -n 2: float results within
#           1e-3, MPI_INT exact, the report shows compression
#   bad     zmpirun --eb abc: exit status 2, a message naming ZMPI_EB, and
#           the program never started
#   usage   zmpirun without -n: exit status 2 and a message
set -eu
mode=$1 zmpirun=$2 prog=$3 python=$4 check=$5
for v in $(env | sed -n 's/^\(ZMPI_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/zmpirun.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
case $mode in
    eb)
        "$zmpirun" --eb 1e-3 --abs --report "$dir/report" -n 2 "$prog" 1e-3 --expect-preload
        "$python" "$check" "$dir/report" 2 compressed ;;
    bad)
        st=0
        "$zmpirun" --eb abc -n 2 "$prog" 0 >"$dir/out" 2>&1 || st=$?
        cat "$dir/out"
        [ "$st" = 2 ] || { echo "run_zmpirun.sh: exit status $st, expected 2"; exit 1; }
        grep -q 'ZMPI_EB' "$dir/out" || { echo "run_zmpirun.sh: no message naming ZMPI_EB"; exit 1; }
        if grep -q 'preload_prog:' "$dir/out"; then echo "run_zmpirun.sh: the program ran"; exit 1; fi ;;
    usage)
        st=0
        "$zmpirun" "$prog" >"$dir/out" 2>&1 || st=$?
        cat "$dir/out"
        [ "$st" = 2 ] && grep -q -- '-n N' "$dir/out" || { echo "run_zmpirun.sh: status $st"; exit 1; } ;;
    *) echo "run_zmpirun.sh: unknown mode $mode" >&2; exit 2 ;;
esac
echo "run_zmpirun.sh: $mode ok"
