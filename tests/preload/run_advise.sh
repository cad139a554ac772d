#!/bin/sh
# preload_advise under libzmpi_preload.so, its report checked by check_advise.py:
#
#   run_advise.sh MODE NRANKS PRELOAD_LIB PROG PYTHON CHECK MPIEXEC [MPIEXEC_FLAGS...]
#
# MODE (check_advise.py says what each checks): values (ZMPI_EB=1e-4 abs),
# nosamples (profile-only, ZMPI_SAMPLES=0), slow / fast (profile-only,
# ZMPI_NET_BW=1Gbit / 100000Gbit), utf8 (an argument with the byte 0xff and
# a control character). The advisor samples without a time budget.
set -eu
mode=$1 np=$2 lib=$3 prog=$4 python=$5 check=$6
shift 6
. "$(dirname "$0")/common.sh" # no ZMPI_ variable of the caller; $dir
n=100000
run() { "$@" -n "$np" env LD_PRELOAD="$lib" ZMPI_SAMPLE_BUDGET=100 ZMPI_REPORT="$dir" $settings "$prog" $n $args; }
args=
case $mode in
    values) settings="ZMPI_EB=1e-4 ZMPI_EB_MODE=abs" ;;
    nosamples) settings="ZMPI_PROFILE_ONLY=1 ZMPI_EB=1e-4 ZMPI_SAMPLES=0" ;;
    slow) settings="ZMPI_PROFILE_ONLY=1 ZMPI_EB=1e-4 ZMPI_NET_BW=1Gbit" ;;
    fast) settings="ZMPI_PROFILE_ONLY=1 ZMPI_EB=1e-4 ZMPI_NET_BW=100000Gbit" ;;
    utf8) settings="ZMPI_PROFILE_ONLY=1"; args=$(printf 'caf\351-\377-\001') ;;
    *) echo "run_advise.sh: unknown mode $mode" >&2; exit 2 ;;
esac
run "$@" >"$dir/stdout"
cat "$dir/stdout"
"$python" "$check" "$dir" "$np" "$n" "$mode"
