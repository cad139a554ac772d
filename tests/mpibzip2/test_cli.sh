#!/usr/bin/env bash
# mpibzip2 end to end: output byte-identical to bzip2 (sha256) at 1-4 ranks x
# 1-2 threads, -9 and -1, at every MPI thread level, single-threaded, with --shared-input; round trips; files made by bzip2 / pbzip2 / lbzip2
# and concatenations; corrupt input (exit 2, nothing half-written left); the
# file handling of bzip2 (-k -f -c -t, suffixes, existing output, unreadable
# input, full disk); no compressed data to or from a terminal.
# Every run of mpibzip2 must also exit with the status expected (0, or
# bzip2's code for the error cases) and leave no sign of a crash on standard
# error (an abort after the output was complete still fails the check).
#   test_cli.sh MPIBZIP2 MPIEXEC
set -uo pipefail
bin=$1 mpiexec=${2:-mpiexec}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
d=$(mktemp -d /tmp/test-mpibzip2.XXXXXX)
trap 'rm -rf "$d"' EXIT
fails=0 checks=0 why= rc=0
ok() { checks=$((checks + 1)); why=; }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*${why:+ ($why)}" >&2; why=; }
sha() { sha256sum | cut -d' ' -f1; }
run() { # run R ARGS...: mpibzip2 on R ranks (oversubscribed on small machines)
    local r=$1; shift
    if [ "$r" = 0 ]; then "$bin" "$@"; else "$mpiexec" -n "$r" "$bin" "$@"; fi
}
# What a crash leaves on standard error: glibc's heap checks and abort, the sanitizers, MPICH's
# hydra ("BAD TERMINATION", "(signal 6)"), Open MPI's mpirun ("exited on signal"), a shell
# (case-sensitive: Open MPI says "the job has been aborted" for a plain exit 1)
crash='Abort|ABORT|abort\(|Segmentation|double free|free\(\)|malloc\(\)|corrupted|stack smashing|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error|BAD TERMINATION|exited on signal|signal [0-9]|core dumped|Assertion|Killed'
# mb R ARGS...: mpibzip2 on R ranks (0: no launcher); stdout in $d/out, stderr in $d/err, exit status in $rc
mb() { run "$@" > "$d/out" 2> "$d/err"; rc=$?; }
# fine [WANT [ERRFILE]]: the last run exited WANT (default 0) and ERRFILE (default $d/err) shows no crash
fine() {
    local want=${1:-0} err=${2:-$d/err}
    if [ "$rc" != "$want" ]; then
        why="exit $rc, want $want; stderr: $(head -c 600 "$err" | tr -c '[:print:]' ' ')"
        return 1
    fi
    if grep -aEq "$crash" "$err"; then
        why="exit $rc but a crash on stderr: $(grep -aE "$crash" "$err" | head -3 | tr -c '[:print:]' ' ')"
        return 1
    fi
}
# Does the launcher give rank 0 a terminal for standard output? Open MPI's mpirun does (a
# pseudo-terminal, even when its own output is a file or a pipe), and mpibzip2, as bzip2, writes
# no compressed data to a terminal: compressed output is then checked through files.
launcher_tty=0
"$mpiexec" -n 1 sh -c 'test -t 1' < /dev/null > /dev/null 2>&1 && launcher_tty=1
# mbz R ARGS... FILE: FILE compressed by mpibzip2 on R ranks, in $d/out (-c; through FILE.bz2,
# -k -f, where the launcher gives rank 0 a terminal)
mbz() {
    local r=$1 f=${!#}
    shift
    if [ "$r" != 0 ] && [ "$launcher_tty" = 1 ]; then
        rm -f "$f.bz2"
        run "$r" -k -f "$@" > "$d/out" 2> "$d/err"; rc=$?
        if [ -e "$f.bz2" ]; then mv -f "$f.bz2" "$d/out"; else : > "$d/out"; fi
    else
        run "$r" -c "$@" > "$d/out" 2> "$d/err"; rc=$?
    fi
}

# ---- inputs ----
python3 - "$d" <<'EOF'
import os, random, sys
d = sys.argv[1]
r = random.Random(7)
def w(name, data):
    open(os.path.join(d, name), "wb").write(data)
w("empty", b"")
w("one", b"x")
w("runs", b"a" * 1000 + b"b" * 255 + b"c" * 256 + b"d" * 259 + bytes(range(256)) * 4 + b"z" * 3_000_000)
# runs of 250..260 equal bytes everywhere: block boundaries (-1: 99981 RLE bytes) fall inside runs
w("runs_cross", b"".join(bytes([r.randrange(4)]) * r.randrange(250, 261) for _ in range(12000)))
# exactly one -1 block: 99981 bytes without runs, and one byte more
w("one_block", bytes((i * 7 + i // 256) % 251 for i in range(99981)))
w("one_block_plus", bytes((i * 7 + i // 256) % 251 for i in range(99982)))
w("random", os.urandom(1_500_000))
text = b""
for root, _, files in os.walk("/usr/include"):
    for f in sorted(files):
        try:
            text += open(os.path.join(root, f), "rb").read()
        except OSError:
            pass
        if len(text) > 2_500_000:
            break
    if len(text) > 2_500_000:
        break
w("text", text[:2_500_000])
EOF
inputs="empty one runs runs_cross one_block one_block_plus random text"

# ---- identical to bzip2 ----
for lvl in 9 1; do
    for f in $inputs; do
        ref=$(bzip2 -"$lvl" -c "$d/$f" | sha)
        for cfg in "0 1" "0 2" "1 1" "2 1" "2 2" "3 1" "4 2"; do
            set -- $cfg
            mbz "$1" -"$lvl" -n "$2" "$d/$f"
            fine && [ "$(sha < "$d/out")" = "$ref" ] && ok || bad "$f -$lvl ranks $1 threads $2: output differs from bzip2"
        done
    done
done

# ---- random run structures (runs of 1..100000 bytes, cut anywhere), -1 and -9 ----
python3 - "$d" <<'EOF2'
import os, random, sys
r = random.Random(11)
for t in range(12):
    out, size, total = [], 0, r.choice([120_000, 400_000, 1_100_000])
    alphabet = r.choice([2, 3, 256])
    while size < total:
        n = r.choice([1, 1, 2, 3, 4, 5, 7, 8, 9, 254, 255, 256, 259, r.randrange(1, 300), 5000, 100000])
        out.append(bytes([r.randrange(alphabet)]) * n)
        size += n
    open(os.path.join(sys.argv[1], f"rr{t}"), "wb").write(b"".join(out))
EOF2
for t in $(seq 0 11); do
    lvl=$(( t % 2 ? 9 : 1 ))
    ref=$(bzip2 -$lvl -c "$d/rr$t" | sha)
    mbz 0 -$lvl -n 2 "$d/rr$t"
    fine && [ "$(sha < "$d/out")" = "$ref" ] && ok || bad "rr$t -$lvl: output differs from bzip2"
done
mbz 3 -1 -n 1 "$d/rr0"
fine && [ "$(sha < "$d/out")" = "$(bzip2 -1 -c "$d/rr0" | sha)" ] && ok || bad "rr0 -1 ranks 3: output differs from bzip2"

# ---- runs of 6 (a block's input: 1.2 block sizes, kept as input bytes) and of 8
# (1.6 block sizes: kept as RLE1 bytes), with small and default queues ----
python3 - "$d" <<'EOF2'
import os, sys
for k in (6, 8):
    open(os.path.join(sys.argv[1], f"runs{k}"), "wb").write(b"".join(bytes([i % 3 + 97]) * k for i in range(300_000)))
EOF2
for f in runs6 runs8; do
    for lvl in 1 9; do
        ref=$(bzip2 -$lvl -c "$d/$f" | sha)
        for a in "0 --queue=1" "2 --queue=2" "0 --queue=64"; do
            set -- $a
            mbz "$1" -$lvl "$2" -n 2 "$d/$f"
            fine && [ "$(sha < "$d/out")" = "$ref" ] && ok || bad "$f -$lvl ranks $1 $2: output differs from bzip2"
        done
    done
done
mb 0 --queue=0 -c "$d/one"
fine 1 && grep -q "queue needs a count" "$d/err" && ok || bad "--queue=0 is not refused with a message"

# ---- every MPI thread level, and the single-threaded master (no threads anywhere) ----
for f in runs_cross text; do
    ref=$(bzip2 -9 -c "$d/$f" | sha)
    for lv in serialized funneled single; do
        for cfg in "1 2" "2 2" "3 1"; do
            set -- $cfg
            mbz "$1" --thread-level=$lv -n "$2" "$d/$f"
            fine && [ "$(sha < "$d/out")" = "$ref" ] && ok ||
                bad "$f --thread-level=$lv ranks $1 threads $2: output differs from bzip2"
        done
    done
    for r in 0 2 4; do
        mbz "$r" --single-threaded "$d/$f"
        fine && [ "$(sha < "$d/out")" = "$ref" ] && ok || bad "$f --single-threaded ranks $r: output differs from bzip2"
    done
done
# --shared-input: workers read their blocks from the file (offsets travel, not bytes); runs8 and
# zeros have blocks whose input is longer than a block buffer (runs8: 1.6 block sizes; 6 MB of
# zeros: 5.1 MB per -1 block), which the workers stream from the file
head -c 6000000 /dev/zero > "$d/zeros"
for f in text runs rr3 runs8 zeros; do
    ref=$(bzip2 -9 -c "$d/$f" | sha)
    for a in "2 --thread-level=multiple" "3 --thread-level=funneled" "3 --single-threaded"; do
        set -- $a
        mbz "$1" "$2" --shared-input -n 2 "$d/$f"
        fine && [ "$(sha < "$d/out")" = "$ref" ] && ok || bad "$f --shared-input ranks $1 $2: output differs from bzip2"
    done
done
# a worker that cannot open the file (here: a tmpfs over its directory, in the worker's own mount
# namespace; root only): exit 1 naming the option, nothing written
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    mkdir -p "$d/hidden"
    cp "$d/text" "$d/hidden/t"
    for how in --single-threaded --thread-level=multiple; do
        "$mpiexec" -n 1 "$bin" $how --shared-input -k "$d/hidden/t" : -n 1 unshare -m bash -c \
            'mount -t tmpfs none "$1" && shift && exec "$@"' _ "$d/hidden" "$bin" $how --shared-input -k "$d/hidden/t" \
            > /dev/null 2> "$d/err"; rc=$?
        fine 1 && grep -q "shared-input needs" "$d/err" && [ ! -e "$d/hidden/t.bz2" ] &&
            ! ls "$d/hidden" | grep -q mpibzip2- && ok ||
            bad "$how: a worker that cannot read the file: want exit 1 and no output ($(cat "$d/err"))"
    done
fi
for f in runs8 zeros; do
    mbz 3 --single-threaded --shared-input -1 "$d/$f"
    fine && [ "$(sha < "$d/out")" = "$(bzip2 -1 -c "$d/$f" | sha)" ] && ok ||
        bad "$f -1 --shared-input: output differs from bzip2"
done
mbz 2 --single-threaded -vv "$d/one"
fine && grep -q "single-threaded master" "$d/err" && ok ||
    bad "-vv does not name the single-threaded master"
# started plainly, mpibzip2 leaves MPI alone (one process); a launcher or MPIBZIP2_MPI=1 starts it
mb 0 -vv -c "$d/one"
fine && grep -q "MPI not started" "$d/err" && ok || bad "a plain run starts MPI"
for how in launcher MPIBZIP2_MPI=1; do
    if [ "$how" = launcher ]; then
        mbz 1 -vv "$d/one"
    else
        MPIBZIP2_MPI=1 "$bin" -vv -c "$d/one" > "$d/out" 2> "$d/err"; rc=$?
    fi
    fine && cmp -s "$d/out" <(bzip2 -9 -c "$d/one") && ok || bad "$how: output differs from bzip2"
    grep -q "MPI thread level MPI_THREAD_" "$d/err" && ok || bad "$how does not start MPI"
done

# ---- round trips and decompression of other tools' files ----
for f in $inputs; do
    bzip2 -9 -c "$d/$f" > "$d/$f.ref.bz2"
    for t in 1 2; do
        mb 0 -d -c -n "$t" "$d/$f.ref.bz2"
        fine && cmp -s "$d/out" "$d/$f" && ok || bad "$f: decompressing bzip2's file with $t threads"
    done
done
for tool in pbzip2 lbzip2; do
    if command -v "$tool" >/dev/null; then
        "$tool" -9 -c < "$d/text" > "$d/text.$tool.bz2"
        mb 0 -d -c -n 2 "$d/text.$tool.bz2"
        fine && cmp -s "$d/out" "$d/text" && ok || bad "decompressing $tool's file"
    else
        bad "$tool is not installed (scripts/setup installs it)"
    fi
done
cat "$d/text.ref.bz2" "$d/runs.ref.bz2" > "$d/cat.bz2"
mb 0 -d -c "$d/cat.bz2"
fine && [ "$(sha < "$d/out")" = "$(cat "$d/text" "$d/runs" | sha)" ] && ok || bad "concatenated streams"

# ---- decompression on several ranks (remote decoders: MPI_THREAD_MULTIPLE) ----
for f in text runs random; do
    for cfg in "2 1" "3 2" "4 1"; do
        set -- $cfg
        mb "$1" -d -c -n "$2" "$d/$f.ref.bz2"
        fine && cmp -s "$d/out" "$d/$f" && ok || bad "$f: decompressing on $1 ranks x $2 threads"
    done
done
mb 3 -d -c -n 1 "$d/cat.bz2"
fine && [ "$(sha < "$d/out")" = "$(cat "$d/text" "$d/runs" | sha)" ] && ok || bad "concatenated streams on 3 ranks"
mb 3 -t -n 1 "$d/text.ref.bz2"
fine && ok || bad "-t on 3 ranks"
mb 3 --thread-level=funneled -d -c "$d/text.ref.bz2"
fine && cmp -s "$d/out" "$d/text" && grep -q "MPI_THREAD_MULTIPLE not provided" "$d/err" && ok ||
    bad "decompression below MPI_THREAD_MULTIPLE: rank 0's threads, said on stderr"
mb 3 -vv -d -c "$d/one.ref.bz2"
fine && grep -q "one decoding thread per remote channel" "$d/err" && ok || bad "-vv does not name the remote decoders"

# ---- corrupt input: exit 2, no output file, input kept ----
cp "$d/text.ref.bz2" "$d/trunc.bz2"
truncate -s $(( $(stat -c%s "$d/trunc.bz2") / 2 )) "$d/trunc.bz2"
cp "$d/text.ref.bz2" "$d/flip.bz2"
printf '\x55' | dd of="$d/flip.bz2" bs=1 seek=$(( $(stat -c%s "$d/flip.bz2") / 3 )) conv=notrunc status=none
printf 'this is not bzip2 data\n' > "$d/plain.bz2"
for f in trunc flip plain; do
    mb 0 -d -q "$d/$f.bz2"
    fine 2 && grep -q "$f" "$d/err" && ok || bad "$f: want exit 2 and a message naming the file"
    [ -e "$d/$f" ] && bad "$f: output file left behind" || ok
    [ -e "$d/$f.bz2" ] && ok || bad "$f: input removed"
    ls "$d" | grep -q mpibzip2- && bad "$f: temporary file left behind" || ok
    mb 0 -t "$d/$f.bz2"
    fine 2 && ok || bad "$f: -t, want exit 2"
done
# every byte written for a corrupt stream is right (a prefix of the original), on one rank and on three
for r in 0 3; do
    mb "$r" -d -c "$d/flip.bz2"
    n=$(wc -c < "$d/out")
    fine 2 && [ "$(sha < "$d/out")" = "$(head -c "$n" "$d/text" | sha)" ] && ok ||
        bad "flip, $r ranks: want exit 2 and the bytes written a prefix of the original"
done
mb 3 -d -q "$d/trunc.bz2"
fine 2 && [ ! -e "$d/trunc" ] && ok || bad "trunc on 3 ranks: want exit 2, no output"

# ---- several files with a bad one among them, against bzip2 1.0.8 itself: bzip2 stops at a
# file whose data are corrupt or truncated (the files after it are not touched; exit 2) but goes
# on after one that is not bzip2 at all, and -t tests every file; either way no output of the bad
# file is left and the exit status is the worst file's ----
# pair CASE RANKS ARGS...: mpibzip2 and bzip2 on copies of the same files in $d/pm and $d/pb
pair() {
    local what=$1 r=$2 bz
    shift 2
    rm -rf "$d/pm" "$d/pb" && mkdir "$d/pm" "$d/pb"
    for f in trunc flip plain good; do cp "$d/$f.bz2" "$d/pm/" && cp "$d/$f.bz2" "$d/pb/"; done
    (cd "$d/pb" && bzip2 "$@" > "$d/pb.out" 2> /dev/null); bz=$?
    (cd "$d/pm" && run "$r" "$@" > "$d/pm.out" 2> "$d/err"); rc=$?
    fine "$bz" && [ "$(ls "$d/pm" | tr '\n' ' ')" = "$(ls "$d/pb" | tr '\n' ' ')" ] && ok ||
        bad "$what (ranks $r): exit $rc and files $(ls "$d/pm" | tr '\n' ' '), bzip2: exit $bz and $(ls "$d/pb" | tr '\n' ' ')"
    ls "$d/pm" | grep -q mpibzip2- && bad "$what: temporary file left behind" || ok
}
cp "$d/text.ref.bz2" "$d/good.bz2"
for r in 0 2; do
    for b in trunc flip; do
        pair "-d $b good" "$r" -d "$b.bz2" good.bz2
        pair "-d good $b" "$r" -d good.bz2 "$b.bz2"
        pair "-dk $b good" "$r" -dk "$b.bz2" good.bz2
        pair "-t $b good" "$r" -t "$b.bz2" good.bz2
        # to standard output: nothing after the corrupt file (bzip2 also writes the bad file's
        # unverified bytes; mpibzip2 its verified blocks only, a prefix of the original)
        pair "-dc $b good" "$r" -dc "$b.bz2" good.bz2
        n=$(wc -c < "$d/pm.out")
        [ "$n" -le "$(wc -c < "$d/text")" ] && [ "$(sha < "$d/pm.out")" = "$(head -c "$n" "$d/text" | sha)" ] && ok ||
            bad "-dc $b good (ranks $r): the $n bytes written are not a prefix of the bad file's data"
    done
    pair "-d plain good" "$r" -d plain.bz2 good.bz2
    cmp -s "$d/pm/good" "$d/text" && ok || bad "-d plain good (ranks $r): good not decompressed"
    pair "-d missing good" "$r" -d missing.bz2 good.bz2
    pair "-d trunc missing good" "$r" -d trunc.bz2 missing.bz2 good.bz2
done
mb 0 -d -c "$d/good.bz2" "$d/flip.bz2" "$d/good.bz2"
n=$(wc -c < "$d/text")
k=$(( $(wc -c < "$d/out") - n ))
fine 2 && cmp -s <(head -c "$n" "$d/out") "$d/text" && [ "$k" -ge 0 ] && [ "$k" -lt "$n" ] &&
    cmp -s <(tail -c "$k" "$d/out") <(head -c "$k" "$d/text") && grep -q "1 of 3 files not processed" "$d/err" && ok ||
    bad "-dc good flip good: want exit 2, good's data, flip's verified blocks and no more, the file left out named"

# ---- file handling ----
cp "$d/text" "$d/f1"
mb 0 "$d/f1"
fine && [ -e "$d/f1.bz2" ] && [ ! -e "$d/f1" ] && ok || bad "compress: f1.bz2 made, f1 removed"
mb 0 -d "$d/f1.bz2"
fine && [ -e "$d/f1" ] && [ ! -e "$d/f1.bz2" ] && cmp -s "$d/f1" "$d/text" && ok ||
    bad "decompress: f1 back, f1.bz2 removed"
mb 0 -k "$d/f1"
fine && [ -e "$d/f1" ] && [ -e "$d/f1.bz2" ] && ok || bad "-k keeps the input"
mb 0 -q "$d/f1"
fine 1 && grep -q "already exists" "$d/err" && [ -e "$d/f1" ] && ok || bad "existing output without -f: want exit 1, input kept"
mb 0 -f "$d/f1"
fine && [ ! -e "$d/f1" ] && ok || bad "-f overwrites"
mb 0 -q "$d/f1.bz2"
fine 1 && ok || bad "compressing a .bz2 file: want exit 1"
mb 0 -q "$d/missing"
fine 1 && grep -q "Can't open input file" "$d/err" && ok || bad "missing input: want exit 1"
cp "$d/f1.bz2" "$d/noext"
mb 0 -d -q "$d/noext"
fine && cmp -s "$d/noext.out" "$d/text" && ok || bad "no suffix: decompressed to noext.out"
mb 0 -t "$d/f1.bz2"
fine && [ -e "$d/f1.bz2" ] && ok || bad "-t on a good file"
mb 0 -c < "$d/text"
fine && [ "$(sha < "$d/out")" = "$(bzip2 -c < "$d/text" | sha)" ] && ok || bad "stdin to stdout"
mb 0 -d < "$d/f1.bz2"
fine && cmp -s "$d/out" "$d/text" && ok || bad "stdin to stdout, -d"
if [ -w /dev/full ]; then
    run 0 -c "$d/text" > /dev/full 2> "$d/err"; rc=$?
    fine 1 && ok || bad "full disk (stdout /dev/full): want exit 1"
fi
# progress bar: on standard error when it is a terminal (here a pseudo-terminal from script(1)), silent otherwise
for i in 1 2 3 4 5 6 7 8; do cat "$d/text"; done > "$d/big"
mb 0 -k -f "$d/big"
fine && [ ! -s "$d/err" ] && ok || bad "no terminal: something on standard error"
if command -v script >/dev/null; then
    script -qec "'$bin' -k -f -n 1 '$d/big'" /dev/null > "$d/tty.out" 2>&1; rc=$?
    fine 0 "$d/tty.out" && grep -q "MB/s" "$d/tty.out" && grep -q "ETA" "$d/tty.out" && ok ||
        bad "no progress bar on a terminal"
    cmp -s "$d/big.bz2" <(bzip2 -9 -c "$d/big") && ok || bad "output with a progress bar differs from bzip2"
fi

# ---- no compressed data to a terminal, nor from one (bzip2's messages, exit 1): standard output
# or input a pseudo-terminal from script(1), whose output is $d/tty.out ----
# onterm EXPECTED-EXIT 'SHELL COMMAND' (mpibzip2 as "$bin", the directory as "$d")
onterm() {
    local want=$1
    timeout 120 script -qec "bin='$bin'; d='$d'; $2" /dev/null < /dev/null > "$d/tty.out" 2>&1; rc=$?
    fine "$want" "$d/tty.out"
}
refused() { # refused WHAT N: $d/tty.out holds bzip2's refusal N times (WHAT: write / read), and no stream
    local what=$1 n=$2 prep=to
    [ "$what" = read ] && prep=from
    [ "$(grep -c "mpibzip2: I won't $what compressed data $prep a terminal\." "$d/tty.out")" = "$n" ] &&
        [ "$(grep -c "For help, type: \`mpibzip2 --help'" "$d/tty.out")" = "$n" ] && ! grep -aq "BZh9" "$d/tty.out"
}
if command -v script >/dev/null; then
    bzip2 -c "$d/one" > "$d/one.bz2"
    onterm 1 '"$bin" -c "$d/one"' && refused write 1 && ok || bad "-c FILE to a terminal: not refused"
    onterm 1 '"$bin" -c "$d/one" "$d/text"' && refused write 2 && ok || bad "-c FILE FILE to a terminal: not refused for each"
    onterm 1 '"$bin" -f -c "$d/one"' && refused write 1 && ok || bad "-f -c FILE to a terminal: not refused"
    onterm 1 '"$bin" -zc -n 2 "$d/one" "$d/missing"' && refused write 1 && grep -q "Can't open input file" "$d/tty.out" &&
        ok || bad "-c FILE MISSING to a terminal: want the refusal, then the missing file"
    onterm 1 '"$bin" < "$d/one"' && refused write 1 && ok || bad "stdin to a terminal: not refused"
    onterm 1 '"$bin" -d' && refused read 1 && ok || bad "-d from a terminal: not refused"
    onterm 1 '"$bin" -t' && refused read 1 && ok || bad "-t from a terminal: not refused"
    # decompressed data may go to a terminal (bzip2 too); files are no terminal
    onterm 0 '"$bin" -d -c "$d/one.bz2"' && [ "$(head -c 1 "$d/tty.out")" = x ] && ok ||
        bad "-d -c FILE to a terminal: refused, or not the data"
    onterm 0 '"$bin" -d < "$d/one.bz2"' && [ "$(head -c 1 "$d/tty.out")" = x ] && ok ||
        bad "-d < FILE to a terminal: refused, or not the data"
    onterm 0 '"$bin" -t "$d/one.bz2" && "$bin" -c "$d/one" > "$d/one.tty.bz2"' && cmp -s "$d/one.tty.bz2" "$d/one.bz2" && ok ||
        bad "-t FILE, or -c FILE > FILE, on a terminal: refused, or wrong output"
fi
# a launcher whose ranks write to a terminal (Open MPI): compression to standard output is
# refused; file arguments work (checked throughout through mbz)
if [ "$launcher_tty" = 1 ]; then
    mb 2 -c "$d/one"
    fine 1 && grep -q "won't write compressed data to a terminal" "$d/err" && [ ! -s "$d/out" ] && ok ||
        bad "-c under a launcher that gives rank 0 a terminal: not refused"
    mb 2 < "$d/one"
    fine 1 && grep -q "won't write compressed data to a terminal" "$d/err" && [ ! -s "$d/out" ] && ok ||
        bad "stdin to stdout under a launcher that gives rank 0 a terminal: not refused"
    mb 2 -d < "$d/text.ref.bz2"
    fine && cmp -s "$d/out" "$d/text" && ok || bad "-d stdin to stdout under a launcher that gives rank 0 a terminal"
fi

# a full disk while writing a file: 200 kB of random data (incompressible) on a 320 KiB tmpfs
# in a private mount namespace (root only)
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    mkdir -p "$d/small"
    head -c 200000 "$d/random" > "$d/r200k"
    unshare -m bash -c 'mount -t tmpfs -o size=320k none "$1" && cp "$2" "$1/f2" &&
        { "$3" -q "$1/f2" 2>"$4"; echo "rc=$?"; ls "$1"; }' _ "$d/small" "$d/r200k" "$bin" "$d/err" > "$d/full.out"
    rc=$(sed -n 's/^rc=//p' "$d/full.out")
    fine 1 && grep -qx f2 "$d/full.out" && ! grep -q 'f2.bz2\|mpibzip2-' "$d/full.out" && ok ||
        bad "full disk: want exit 1, input kept, no output or temporary file ($(tr '\n' ' ' < "$d/full.out"))"
else
    echo "test_cli: not root: the full-disk case (a tmpfs mount) is skipped" >&2
fi

note=
[ "$launcher_tty" = 1 ] && note=" (the launcher gives rank 0 a terminal: compressed output checked through files)"
echo "test_cli: $checks checks, $fails failures$note"
[ "$fails" = 0 ]
