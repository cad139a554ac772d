#!/bin/sh
# zmpirun (tools/zmpirun) around preload_prog.
#
#   run_zmpirun.sh MODE ZMPIRUN PROG PYTHON CHECK_REPORT [CHECK_POLICY]
#
# MODE:
#   eb      zmpirun --eb 1e-3 --abs --report DIR -n 2: float results within
#           1e-3, MPI_INT exact, the report shows compression
#   profile zmpirun --profile-only --config FILE (a bound in the file):
#           exact results, the report in ./zmpi-report, nothing compressed,
#           the advisor sampled at the file's bound
#   policy  a config file excluding Bcast and Allreduce, then also the first
#           MPI_Send's site (ZMPI_EXCLUDE_SITES): check_policy.py finds them
#           plain and the other sends compressed
#   bad     zmpirun --eb abc: exit status 2, a message naming ZMPI_EB, and
#           the program never started
#   usage   zmpirun without -n: exit status 2 and a message
#   space   a program, a report directory and a settings file whose paths
#           hold spaces: the run works, the report is written there
#   glob    a setting value with a glob character ('1e-?') next to a file
#           the glob would match: passed as written (and refused as a bound)
#   dash    --eb -n 2 PROG: exit status 2 ("--eb needs a value"), nothing run
#   nodes   ZMPI_NODE_RANKS unset, zmpirun --node-ranks 1 --eb 1e-3 --abs:
#           each rank a node, so the report shows compression and 2 nodes
set -eu
mode=$1 zmpirun=$2 prog=$3 python=$4 check=$5 policy=${6:-}
. "$(dirname "$0")/common.sh" # no ZMPI_ variable of the caller; $dir
export ZMPI_SAMPLE_BUDGET=100 # the advisor samples every site it is due to, however short the run
case $mode in
    eb)
        "$zmpirun" --eb 1e-3 --abs --report "$dir/report" -n 2 "$prog" 1e-3 --expect-preload
        "$python" "$check" "$dir/report" 2 compressed ;;
    profile)
        printf '# a settings file\nZMPI_EB = 1e-3\nZMPI_EB_MODE=abs\n' >"$dir/zmpi.conf"
        (cd "$dir" && "$zmpirun" --profile-only --config zmpi.conf -n 2 "$prog" 0 --expect-preload)
        "$python" "$check" "$dir/zmpi-report" 2 profile ;;
    policy)
        # calls and sites left out of compression: the report of a first
        # run names the first MPI_Send's site, which the second run excludes
        printf 'ZMPI_EB=1e-3\nZMPI_EB_MODE=abs\nZMPI_EXCLUDE_CALLS=Bcast,MPI_Allreduce\n' >"$dir/zmpi.conf"
        "$zmpirun" --config "$dir/zmpi.conf" --report "$dir/r1" -n 2 "$prog" 1e-3 --expect-preload
        site=$("$python" "$policy" "$dir/r1" first-send)
        ZMPI_EXCLUDE_SITES="$site" "$zmpirun" --config "$dir/zmpi.conf" --report "$dir/r2" -n 2 \
            "$prog" 1e-3 --expect-preload
        "$python" "$policy" "$dir/r2" excluded "$site" ;;
    bad)
        st=0
        "$zmpirun" --eb abc -n 2 "$prog" 0 >"$dir/out" 2>&1 || st=$?
        cat "$dir/out"
        [ "$st" = 2 ] || { echo "run_zmpirun.sh: exit status $st, expected 2"; exit 1; }
        grep -q 'ZMPI_EB' "$dir/out" || { echo "run_zmpirun.sh: no message naming ZMPI_EB"; exit 1; }
        if grep -q 'preload_prog:' "$dir/out"; then echo "run_zmpirun.sh: the program ran"; exit 1; fi ;;
    space)
        mkdir "$dir/a b"
        cp "$prog" "$dir/a b/preload_prog"
        printf 'ZMPI_EB=1e-3\nZMPI_EB_MODE=abs\n' >"$dir/a b/z conf"
        (cd "$dir/a b" && "$zmpirun" --config "z conf" --report "$dir/a b/the report" -n 2 "$dir/a b/preload_prog" 1e-3 \
            --expect-preload)
        "$python" "$check" "$dir/a b/the report" 2 compressed ;;
    glob)
        touch "$dir/ZMPI_EB=1e-9"
        st=0
        (cd "$dir" && "$zmpirun" --dry-run --eb '1e-?' -n 2 "$prog" 0) >"$dir/out" 2>&1 || st=$?
        cat "$dir/out"
        [ "$st" = 2 ] && grep -q 'ZMPI_EB  *1e-?' "$dir/out" && ! grep -q '1e-9' "$dir/out" ||
            { echo "run_zmpirun.sh: a setting's value was glob-expanded (status $st)"; exit 1; } ;;
    dash)
        st=0
        "$zmpirun" --eb -n 2 "$prog" 0 >"$dir/out" 2>&1 || st=$?
        cat "$dir/out"
        [ "$st" = 2 ] && grep -q -- "--eb needs a value" "$dir/out" && ! grep -q 'preload_prog:' "$dir/out" ||
            { echo "run_zmpirun.sh: --eb took -n as its value (status $st)"; exit 1; } ;;
    nodes)
        unset ZMPI_NODE_RANKS # common.sh set it; the option alone must make the nodes
        "$zmpirun" --node-ranks 1 --eb 1e-3 --abs --report "$dir/report" -n 2 "$prog" 1e-3 --expect-preload
        "$python" "$check" "$dir/report" 2 compressed ;;
    usage)
        st=0
        "$zmpirun" "$prog" >"$dir/out" 2>&1 || st=$?
        cat "$dir/out"
        [ "$st" = 2 ] && grep -q -- '-n N' "$dir/out" || { echo "run_zmpirun.sh: status $st"; exit 1; } ;;
    *) echo "run_zmpirun.sh: unknown mode $mode" >&2; exit 2 ;;
esac
echo "run_zmpirun.sh: $mode ok"
