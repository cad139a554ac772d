#!/bin/sh
# preload_semantics (MPI's point-to-point promises) plain and under
# libzmpi_preload.so:
#
#   run_semantics.sh MODE NRANKS PRELOAD_LIB PROG MPIEXEC [MPIEXEC_FLAGS...]
#
# MODE: plain (no preload, exact), eb (ZMPI_EB=1e-3 ZMPI_EB_MODE=abs: floats
# within 1e-3), lossless (ZMPI_CODEC=zstd: exact). Every ZMPI_ variable of the
# caller's environment is removed first.
set -eu
mode=$1 n=$2 lib=$3 prog=$4
shift 4
. "$(dirname "$0")/common.sh" # no ZMPI_ variable of the caller; $dir
# one rank sends only to itself, on its own node: compressed all the same, to check the codec's paths
[ "$n" != 1 ] || export ZMPI_INTRA_NODE=compress
case $mode in
    plain) "$@" -n "$n" "$prog" 0; exit 0 ;;
    eb) "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_EB=1e-3 ZMPI_EB_MODE=abs ZMPI_REPORT="$dir" "$prog" 1e-3 ;;
    lossless) "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_CODEC=zstd ZMPI_REPORT="$dir" "$prog" 0 ;;
    *) echo "run_semantics.sh: unknown mode $mode" >&2; exit 2 ;;
esac
# MPI_Pcontrol(3) wrote a numbered report with the program's sends, and
# after MPI_Pcontrol(2) the final one has none of them
set -- "$dir"/*.[0-9].zmpi.json
[ $# = 1 ] && [ -f "$1" ] && [ -f "${1%.1.zmpi.json}.zmpi.json" ] || { ls "$dir"; echo "run_semantics.sh: no report .1 and final"; exit 1; }
numbered=$1 final=${1%.1.zmpi.json}.zmpi.json
grep -q '"call": "MPI_Send"' "$numbered" || { echo "run_semantics.sh: the Pcontrol(3) report has no MPI_Send"; exit 1; }
if grep -q '"call": "MPI_Send"' "$final"; then echo "run_semantics.sh: MPI_Pcontrol(2) did not reset"; exit 1; fi
[ -f "${numbered%.json}.txt" ] || { echo "run_semantics.sh: no text report .1"; exit 1; }
# the numbered report's MPI_COMM_WORLD totals: messages went compressed
z=$(sed -n 's/.*"zmpi": {[^}]*"compressed": \([0-9]*\), "bytes_raw": \([0-9]*\), "bytes_sent": \([0-9]*\)[,}].*/\1 \2 \3/p' "$numbered")
echo "run_semantics.sh: compressed, bytes raw, bytes sent: $z"
set -- $z
[ "${1:-0}" -gt 0 ] && [ "$3" -lt "$2" ] || { echo "run_semantics.sh: nothing compressed"; exit 1; }
