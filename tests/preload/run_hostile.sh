#!/bin/sh
# preload_hostile (hostile but legal MPI usage) plain and under
# libzmpi_preload.so:
#
#   run_hostile.sh MODE NRANKS PRELOAD_LIB PROG SRCDIR MPIEXEC [MPIEXEC_FLAGS...]
#
# MODE:
#   plain     no preload: every case, exact
#   eb        ZMPI_EB=1e-3 ZMPI_EB_MODE=abs: every case, doubles within 1e-3
#   lossless  ZMPI_CODEC=zstd: every case, exact
#   partial   a bound on rank 0 only (an MPMD launch): the receives MPI makes
#             itself on the other ranks decode or refuse, never deliver
#             stream bytes; Sendrecv_replace there decodes
#   calls     ZMPI_EB=1e-3 (relative: integers change) and ZMPI_CALLS=Allreduce:
#             integer ids in doubles through Sendrecv(_replace) stay exact
#   excluded  the same with ZMPI_EXCLUDE_CALLS=Send,Isend,Ssend,Issend,Sendrecv,Sendrecv_replace
#   sites     the same with the two call sites in ZMPI_EXCLUDE_SITES, one as
#             ./FILE:LINE, one as an absolute path, and an entry that matches
#             nothing, which MPI_Finalize must name
#   config    a ZMPI_CONFIG file naming ZMPI_EB twice (1e-2, then 1e-6, abs):
#             the last value holds (doubles within 1e-6)
#   nul       a ZMPI_CONFIG file with a NUL byte: MPI_Init stops, naming it
#   fixed     ZMPI_CODEC=trunc with ZMPI_EB: MPI_Init stops, naming both
# Every ZMPI_ variable of the caller's environment is removed first.
set -eu
mode=$1 n=$2 lib=$3 prog=$4 src=$5
shift 5
. "$(dirname "$0")/common.sh" # no ZMPI_ variable of the caller; $dir
pre="LD_PRELOAD=$lib"
# the line of a call marked /* site:NAME */ in the program's source
site_line() { grep -n "/\* site:$1 \*/" "$src/preload_hostile.c" | cut -d: -f1; }
# expect_stop WHAT REGEX CMD...: CMD fails and prints REGEX
expect_stop() {
    what=$1 re=$2
    shift 2
    st=0
    "$@" >"$dir/out" 2>&1 || st=$?
    cat "$dir/out"
    [ "$st" != 0 ] || { echo "run_hostile.sh: $what: the program did not stop"; exit 1; }
    grep -Eq "$re" "$dir/out" || { echo "run_hostile.sh: $what: no /$re/ in the output"; exit 1; }
}
case $mode in
    plain) "$@" -n "$n" "$prog" 0 ;;
    eb) "$@" -n "$n" env "$pre" ZMPI_EB=1e-3 ZMPI_EB_MODE=abs "$prog" 1e-3 ;;
    lossless) "$@" -n "$n" env "$pre" ZMPI_CODEC=zstd "$prog" 0 ;;
    partial)
        "$@" -n 1 env "$pre" ZMPI_EB=1e-3 ZMPI_EB_MODE=abs "$prog" 1e-3 partial replace bytes : \
            -n $((n - 1)) env "$pre" "$prog" 1e-3 partial replace bytes ;;
    calls) "$@" -n "$n" env "$pre" ZMPI_EB=1e-3 ZMPI_CALLS=Allreduce "$prog" 0 ids ;;
    excluded)
        "$@" -n "$n" env "$pre" ZMPI_EB=1e-3 ZMPI_EXCLUDE_CALLS=Send,Isend,Ssend,Issend,Sendrecv,MPI_Sendrecv_replace \
            "$prog" 0 ids ;;
    sites)
        l1=$(site_line ids-1) l2=$(site_line ids-2)
        [ -n "$l1" ] && [ -n "$l2" ] || { echo "run_hostile.sh: no site markers in $src/preload_hostile.c"; exit 1; }
        abs=$(cd "$src" && pwd)/preload_hostile.c
        "$@" -n "$n" env "$pre" ZMPI_EB=1e-3 ZMPI_EXCLUDE_SITES="./preload_hostile.c:$l1,$abs:$l2,nothere.c:7" \
            "$prog" 0 ids >"$dir/out" 2>&1 || { cat "$dir/out"; exit 1; }
        cat "$dir/out"
        grep -q 'ZMPI_EXCLUDE_SITES: nothere.c:7 matched no call site' "$dir/out" ||
            { echo "run_hostile.sh: MPI_Finalize did not name the entry that matched nothing"; exit 1; }
        if grep -q "preload_hostile.c:$l1 matched no\|preload_hostile.c:$l2 matched no" "$dir/out"; then
            echo "run_hostile.sh: a matching entry was called unmatched"; exit 1
        fi ;;
    config)
        printf 'ZMPI_EB=1e-2\nZMPI_EB_MODE=abs\n# later, a tighter bound\nZMPI_EB=1e-6\n' >"$dir/zmpi.conf"
        "$@" -n "$n" env "$pre" ZMPI_CONFIG="$dir/zmpi.conf" "$prog" 1e-6 bytes replace ;;
    nul)
        printf 'ZMPI_EB=1e-3\nZMPI_\000EB_MODE=abs\n' >"$dir/zmpi.conf"
        expect_stop "a NUL byte" 'zmpi.conf:2: a NUL byte' \
            "$@" -n "$n" env "$pre" ZMPI_CONFIG="$dir/zmpi.conf" "$prog" 0 replace ;;
    fixed)
        for codec in trunc dp2sp trunc-inter; do
            expect_stop "ZMPI_CODEC=$codec with a bound" "codec $codec keeps a fixed precision" \
                "$@" -n "$n" env "$pre" ZMPI_CODEC=$codec ZMPI_EB=1e-9 "$prog" 0 replace
        done ;;
    *) echo "run_hostile.sh: unknown mode $mode" >&2; exit 2 ;;
esac
echo "run_hostile.sh: $mode ok"
