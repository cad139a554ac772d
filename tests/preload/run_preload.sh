#!/bin/sh
# One run of preload_prog under mpiexec, with or without libzmpi_preload.so.
#
#   run_preload.sh MODE NRANKS PRELOAD_LIB PROG PYTHON CHECK_REPORT MPIEXEC [MPIEXEC_FLAGS...]
#
# MODE:
#   plain     no preload (the program's own baseline), exact results
#   exact     LD_PRELOAD, no ZMPI_ setting: exact results, as without it
#   eb        LD_PRELOAD, ZMPI_EB=1e-3 ZMPI_EB_MODE=abs, ZMPI_REPORT: float
#             results within 1e-3, MPI_INT exact, the report shows compression
#   lossless  LD_PRELOAD, ZMPI_CODEC=zstd (no bound), ZMPI_REPORT: exact
#             results, the report shows compression
#   report    LD_PRELOAD, ZMPI_REPORT only: exact results, the report's
#             counts are the program's calls and nothing was compressed
#   profile   LD_PRELOAD, ZMPI_PROFILE_ONLY=1 with a bound: exact results,
#             nothing compressed, the advisor sampled at the bound
#   onenode   as eb, but with the MPI's own nodes (ZMPI_NODE_RANKS=auto): all
#             ranks share this machine's node, so nothing is compressed
#             (exact results), rank 0 says so at MPI_Init, and the report
#             shows one node and the sends' same-node fallbacks
# Every ZMPI_ variable of the caller's environment is removed first; the
# advisor samples without a time budget (ZMPI_SAMPLE_BUDGET=100), so that
# this short program's sites are sampled. The
# variables reach the ranks through `env` in the launched command line
# (mpiexec -n N env LD_PRELOAD=... prog), whatever the launcher forwards.
set -eu
mode=$1 n=$2 lib=$3 prog=$4 python=$5 check=$6
shift 6
. "$(dirname "$0")/common.sh" # no ZMPI_ variable of the caller; $dir
case $mode in
    plain) "$@" -n "$n" "$prog" 0 ;;
    exact) "$@" -n "$n" env LD_PRELOAD="$lib" "$prog" 0 --expect-preload ;;
    eb)
        "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_SAMPLE_BUDGET=100 ZMPI_EB=1e-3 ZMPI_EB_MODE=abs ZMPI_REPORT="$dir/report" \
            "$prog" 1e-3 --expect-preload
        "$python" "$check" "$dir/report" "$n" compressed ;;
    lossless)
        "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_SAMPLE_BUDGET=100 ZMPI_CODEC=zstd ZMPI_REPORT="$dir/report" "$prog" 0 --expect-preload
        "$python" "$check" "$dir/report" "$n" compressed ;;
    report)
        "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_SAMPLE_BUDGET=100 ZMPI_REPORT="$dir/report" "$prog" 0 --expect-preload
        "$python" "$check" "$dir/report" "$n" plain ;;
    profile)
        "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_SAMPLE_BUDGET=100 ZMPI_PROFILE_ONLY=1 ZMPI_EB=1e-3 ZMPI_EB_MODE=abs \
            ZMPI_REPORT="$dir/report" "$prog" 0 --expect-preload
        "$python" "$check" "$dir/report" "$n" profile ;;
    onenode)
        "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_SAMPLE_BUDGET=100 ZMPI_EB=1e-3 ZMPI_EB_MODE=abs ZMPI_NODE_RANKS=auto \
            ZMPI_REPORT="$dir/report" "$prog" 0 --expect-preload 2>"$dir/stderr"
        cat "$dir/stderr" >&2
        grep -q "zmpi: the $n ranks share one node" "$dir/stderr" ||
            { echo "run_preload.sh: no one-node notice from rank 0" >&2; exit 1; }
        "$python" "$check" "$dir/report" "$n" onenode ;;
    *) echo "run_preload.sh: unknown mode $mode" >&2; exit 2 ;;
esac
