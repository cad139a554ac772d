#!/usr/bin/env bash
# End-to-end checks of the `zmpi codec` command line: outputs, JSON keys,
# round trips between files, one-line errors with non-zero exits, and the
# output-path rules (symlinks, devices, FIFOs, descriptors, modes, temporaries).
#   test_cli.sh ZMPI_BINARY DATA_DIR
# Every command's status is checked: a crash (death by a signal) fails a test,
# also where a failure is expected, and pipelines fail with their first stage.
set -u -o pipefail
zmpi=$1
data=${ZMPI_DATA:-$2}
case $zmpi in /*) ;; *) zmpi=$PWD/$zmpi ;; esac
case $data in /*) ;; *) data=$PWD/$data ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/zmpi-cli.XXXXXX") || { echo "FAIL: mktemp -d" >&2; exit 1; }
reader=
trap '[ -n "$reader" ] && kill "$reader" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work" || exit 1 # a stray output (a file named "-", say) lands in $work
pass=0 fail=0
ok()   { pass=$((pass + 1)); }
bad()  { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
expect_fail() { # expect_fail DESCRIPTION CMD...: exit 1 or 2 (not a crash) and exactly one line on stderr
  local what=$1 st; shift
  "$@" >"$work/out" 2>"$work/err"
  st=$?
  if [ "$st" -eq 0 ]; then bad "$what: exit 0"; return; fi
  if [ "$st" -gt 2 ]; then bad "$what: exit $st (crash?): $(cat "$work/err")"; return; fi
  [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q '^zmpi: ' "$work/err" && ok || bad "$what: stderr: $(cat "$work/err")"
}
no_tmp() { # no_tmp DIR...: no temporary (NAME.tmp.PID) left in these directories
  local left
  left=$(find "$@" -maxdepth 1 -name '*.tmp.*' -print) || return 1
  [ -z "$left" ] || { echo "left behind: $left" >&2; return 1; }
}

field="$data/pop_t_384x320.f32"
dfield="$data/hsurf_smooth_438x450.f64"
[ -f "$field" ] && [ -f "$dfield" ] || { echo "FAIL: data files missing under $data" >&2; exit 1; }

"$zmpi" codec list >"$work/list" && grep -q '^fzl ' "$work/list" && grep -q '^xorlzc-inter ' "$work/list" && ok || bad "codec list"

# eval --json: exactly the documented keys, bound respected
for spec in "fzl f32 $field --rel 1e-3" "fzl f64 $dfield --abs 0.5" "linpred-bit f32 $field --rel 1e-4" \
            "linpred-byte f64 $dfield --rel 1e-3" "xorlzc f32 $field --rel 1e-3" "zstd f64 $dfield" \
            "trunc f64 $dfield" "dp2sp f64 $dfield" "xorlzc-inter f64 $dfield"; do
  set -- $spec
  codec=$1 dt=$2 file=$3; shift 3
  if "$zmpi" codec eval "$file" --dtype "$dt" --codec "$codec" "$@" --repeat 2 --json >"$work/j"; then
    python3 - "$work/j" "$codec" <<'PY' && ok || bad "eval json $spec"
import json, sys
o = json.loads(open(sys.argv[1]).read())
keys = ["codec", "dtype", "count", "eb", "ratio", "comp_gbps", "decomp_gbps", "max_abs_err",
        "max_err_over_eb", "psnr", "nrmse"]
assert list(o.keys()) == keys, o.keys()
assert o["codec"] == sys.argv[2]
assert o["ratio"] > 1.0, o
if sys.argv[2] in ("fzl", "linpred-bit", "linpred-byte"):
    assert o["eb"] > 0 and o["max_err_over_eb"] <= 1.0, o
if sys.argv[2] in ("xorlzc", "zstd", "xorlzc-inter"):
    assert o["eb"] == 0 and o["max_abs_err"] == 0, o
PY
  else bad "eval $spec exited non-zero"; fi
done
"$zmpi" codec eval "$field" --dtype f32 --codec fzl --rel 1e-2 --repeat 1 >"$work/e" && grep -q '^ratio' "$work/e" && ok || bad "eval text"

# compress / decompress between files
"$zmpi" codec compress "$field" "$work/a.zmpi" --dtype f32 --codec zstd && \
  "$zmpi" codec decompress "$work/a.zmpi" "$work/a.raw" && cmp -s "$field" "$work/a.raw" && ok || bad "zstd file round trip"
"$zmpi" codec compress "$dfield" "$work/b.zmpi" --dtype f64 --codec fzl --abs 0.01 --threads 2 && \
  "$zmpi" codec decompress "$work/b.zmpi" "$work/b.raw" && \
  [ "$(stat -c %s "$work/b.raw")" = "$(stat -c %s "$dfield")" ] && ok || bad "fzl file round trip"
"$zmpi" codec info "$work/b.zmpi" >"$work/i" && grep -q '^codec *fzl' "$work/i" && ok || bad "codec info"
head -c 1000 /dev/urandom >"$work/u8.raw" && \
"$zmpi" codec compress "$work/u8.raw" "$work/u8.zmpi" --dtype u8 --codec zstd && \
  "$zmpi" codec decompress "$work/u8.zmpi" "$work/u8.out" && cmp -s "$work/u8.raw" "$work/u8.out" && ok || bad "u8 round trip"

# errors: one line, non-zero exit, nothing left behind
expect_fail "missing bound" "$zmpi" codec eval "$field" --dtype f32 --codec fzl
expect_fail "zero bound" "$zmpi" codec eval "$field" --dtype f32 --codec fzl --rel 0
expect_fail "nan bound" "$zmpi" codec eval "$field" --dtype f32 --codec fzl --abs nan
expect_fail "two bounds" "$zmpi" codec eval "$field" --dtype f32 --codec fzl --abs 1 --rel 1e-3
expect_fail "unknown codec" "$zmpi" codec eval "$field" --dtype f32 --codec sz9 --rel 1e-3
expect_fail "unknown dtype" "$zmpi" codec eval "$field" --dtype f16 --codec fzl --rel 1e-3
expect_fail "missing file" "$zmpi" codec eval "$work/none.f32" --dtype f32 --codec fzl --rel 1e-3
head -c 1001 "$field" >"$work/odd.f32" || bad "head"
expect_fail "odd size" "$zmpi" codec eval "$work/odd.f32" --dtype f32 --codec fzl --rel 1e-3
expect_fail "bad option" "$zmpi" codec eval "$field" --dtype f32 --codec fzl --rel 1e-3 --frobnicate
expect_fail "bad threads" "$zmpi" codec eval "$field" --dtype f32 --codec fzl --rel 1e-3 --threads x
expect_fail "dp2sp on f32" "$zmpi" codec eval "$field" --dtype f32 --codec dp2sp
head -c 5000 /dev/urandom >"$work/junk.zmpi" || bad "head"
expect_fail "garbage stream" "$zmpi" codec decompress "$work/junk.zmpi" "$work/junk.raw"
[ ! -e "$work/junk.raw" ] && ok || bad "garbage stream left an output file"
head -c 300 "$work/b.zmpi" >"$work/trunc.zmpi" || bad "head"
expect_fail "truncated stream" "$zmpi" codec decompress "$work/trunc.zmpi" "$work/trunc.raw"
no_tmp "$work" && ok || bad "temporary files left behind"
expect_fail "unknown command" "$zmpi" frobnicate
# a fixed-precision codec promises no bound: a bound given to it is refused
expect_fail "trunc with a bound" "$zmpi" codec compress "$dfield" "$work/t.zmpi" --dtype f64 --codec trunc --rel 1e-9
expect_fail "dp2sp with a bound" "$zmpi" codec eval "$dfield" --dtype f64 --codec dp2sp --abs 1e-9
[ ! -e "$work/t.zmpi" ] && ok || bad "trunc with a bound wrote an output"
# the output never replaces the input: the same name, a hard link, a symbolic link
cp "$field" "$work/self.f32" && ln "$work/self.f32" "$work/self.hard" && ln -s "$work/self.f32" "$work/self.sym" || bad "links"
sum=$(sha256sum <"$work/self.f32")
for out in "$work/self.f32" "$work/self.hard" "$work/self.sym" "$work/../${work##*/}/self.f32"; do
  expect_fail "compress onto its input ($out)" "$zmpi" codec compress "$work/self.f32" "$out" --dtype f32 --codec fzl --rel 1e-3
done
"$zmpi" codec compress "$work/self.f32" "$work/self.z" --dtype f32 --codec zstd && ok || bad "compress self.f32"
cp "$work/self.z" "$work/self.z.orig"
expect_fail "decompress onto its input" "$zmpi" codec decompress "$work/self.z" "$work/self.z"
[ "$(sha256sum <"$work/self.f32")" = "$sum" ] && cmp -s "$work/self.z" "$work/self.z.orig" && ok || bad "an input was changed"

# ---- output paths: OUT is written, never replaced by something else ----
zc=(--dtype f32 --codec zstd)
"$zmpi" codec compress "$field" "$work/ref.zmpi" "${zc[@]}" && \
  "$zmpi" codec decompress "$work/ref.zmpi" "$work/ref.raw" && cmp -s "$field" "$work/ref.raw" || {
  bad "reference outputs"; echo "test_cli: $pass passed, $fail failed"; exit 1; }
ref_sum=$(sha256sum <"$work/ref.zmpi") || bad "sha256sum"
stdout_link=; [ -L /dev/stdout ] && stdout_link=1

# '-' and /dev/stdout: the bytes arrive on standard output, as in a regular file
sum=$("$zmpi" codec compress "$field" - "${zc[@]}" | sha256sum) && [ "$sum" = "$ref_sum" ] && ok || bad "compress to -"
sum=$("$zmpi" codec compress "$field" /dev/stdout "${zc[@]}" | sha256sum) && [ "$sum" = "$ref_sum" ] && ok ||
  bad "compress to /dev/stdout"
"$zmpi" codec decompress "$work/ref.zmpi" - | cmp -s - "$work/ref.raw" && ok || bad "decompress to -"
"$zmpi" codec decompress "$work/ref.zmpi" /dev/stdout | cmp -s - "$work/ref.raw" && ok || bad "decompress to /dev/stdout"
[ -z "$stdout_link" ] || [ -L /dev/stdout ] && ok || bad "/dev/stdout is no longer a symlink"
[ ! -e "$work/-" ] && ok || bad "'-' created a file named '-'"
# /dev/stdout redirected to a file: written at the descriptor's position (a shell redirection's semantics)
{ printf 'head'; "$zmpi" codec compress "$field" /dev/stdout "${zc[@]}"; } >"$work/cat.out" && \
  { printf 'head'; cat "$work/ref.zmpi"; } | cmp -s - "$work/cat.out" && ok || bad "/dev/stdout after other output"
printf 'pre' >"$work/app.out" && "$zmpi" codec decompress "$work/ref.zmpi" /dev/stdout >>"$work/app.out" && \
  { printf 'pre'; cat "$work/ref.raw"; } | cmp -s - "$work/app.out" && ok || bad "/dev/stdout appending"
"$zmpi" codec compress "$field" /dev/fd/3 "${zc[@]}" 3>"$work/fd3.out" && cmp -s "$work/ref.zmpi" "$work/fd3.out" && ok ||
  bad "compress to /dev/fd/3"
"$zmpi" codec decompress "$work/ref.zmpi" /dev/fd/3 3>&1 >/dev/null | cmp -s - "$work/ref.raw" && ok ||
  bad "decompress to /dev/fd/3"
ln -s /dev/stdout "$work/to-stdout" && "$zmpi" codec compress "$field" "$work/to-stdout" "${zc[@]}" | \
  cmp -s - "$work/ref.zmpi" && [ -L "$work/to-stdout" ] && ok || bad "compress to a symlink to /dev/stdout"
# '-' as IN
"$zmpi" codec compress - "$work/stdin.zmpi" "${zc[@]}" <"$field" && cmp -s "$work/ref.zmpi" "$work/stdin.zmpi" && ok ||
  bad "compress from -"
"$zmpi" codec decompress - - <"$work/ref.zmpi" | cmp -s - "$work/ref.raw" && ok || bad "decompress - to -"
"$zmpi" codec info - <"$work/ref.zmpi" >"$work/i" && grep -q '^codec *zstd' "$work/i" && ok || bad "info -"

# a closed pipe (EPIPE) is an error: message, non-zero exit, no silent success
"$zmpi" codec decompress "$work/ref.zmpi" - 2>"$work/err" | head -c 10 >/dev/null
st=${PIPESTATUS[0]}
[ "$st" -eq 1 ] && grep -q '^zmpi: .*Broken pipe' "$work/err" && ok || bad "EPIPE: exit $st, stderr: $(cat "$work/err")"

# symlinks: the final target gets the data (a temporary in its own directory), the links stay links
mkdir "$work/d1" "$work/d2" && printf 'old' >"$work/d2/target" && ln -s ../d2/target "$work/d1/link" && \
  ln -s link "$work/d1/chain" || bad "setup"
"$zmpi" codec compress "$field" "$work/d1/link" "${zc[@]}" && cmp -s "$work/ref.zmpi" "$work/d2/target" && \
  [ -L "$work/d1/link" ] && [ "$(readlink "$work/d1/link")" = ../d2/target ] && no_tmp "$work/d1" "$work/d2" && ok ||
  bad "compress to a symlink"
"$zmpi" codec decompress "$work/ref.zmpi" "$work/d1/chain" && cmp -s "$work/ref.raw" "$work/d2/target" && \
  [ -L "$work/d1/chain" ] && [ -L "$work/d1/link" ] && no_tmp "$work/d1" "$work/d2" && ok || bad "decompress to a symlink chain"
# a dangling symlink is refused, as cp does; nothing is created
ln -s nowhere "$work/d1/dangling" || bad "setup"
expect_fail "dangling symlink" "$zmpi" codec compress "$field" "$work/d1/dangling" "${zc[@]}"
expect_fail "dangling symlink (decompress)" "$zmpi" codec decompress "$work/ref.zmpi" "$work/d1/dangling"
[ -L "$work/d1/dangling" ] && [ ! -e "$work/d1/nowhere" ] && no_tmp "$work/d1" && ok || bad "dangling symlink changed"

# modes: an existing file keeps its mode (and owner as root); a new file gets 0666 & ~umask
printf 'old' >"$work/m600" && chmod 600 "$work/m600" || bad "setup"
"$zmpi" codec compress "$field" "$work/m600" "${zc[@]}" && [ "$(stat -c %a "$work/m600")" = 600 ] && \
  cmp -s "$work/ref.zmpi" "$work/m600" && ok || bad "compress: mode 600 not kept"
chmod 640 "$work/m600" && "$zmpi" codec decompress "$work/ref.zmpi" "$work/m600" && \
  [ "$(stat -c %a "$work/m600")" = 640 ] && cmp -s "$work/ref.raw" "$work/m600" && ok || bad "decompress: mode 640 not kept"
(umask 027 && exec "$zmpi" codec compress "$field" "$work/new640" "${zc[@]}") && \
  [ "$(stat -c %a "$work/new640")" = 640 ] && ok || bad "new file: mode not 0666 & ~umask"
if [ "$(id -u)" = 0 ]; then
  printf 'old' >"$work/owned" && chown 12345:23456 "$work/owned" && chmod 604 "$work/owned" && \
    "$zmpi" codec compress "$field" "$work/owned" "${zc[@]}" && [ "$(stat -c %u:%g:%a "$work/owned")" = 12345:23456:604 ] && \
    ok || bad "owner not kept as root"
else
  printf 'keep' >"$work/ro" && chmod 444 "$work/ro" || bad "setup"
  expect_fail "read-only file" "$zmpi" codec compress "$field" "$work/ro" "${zc[@]}"
  [ "$(cat "$work/ro")" = keep ] && ok || bad "read-only file changed"
fi

# failures leave the old target untouched and no temporary behind
printf 'keep' >"$work/keep" && chmod 600 "$work/keep" || bad "setup"
expect_fail "garbage stream over a file" "$zmpi" codec decompress "$work/junk.zmpi" "$work/keep"
[ "$(cat "$work/keep")" = keep ] && [ "$(stat -c %a "$work/keep")" = 600 ] && no_tmp "$work" && ok ||
  bad "failed decompress changed the target"
# a write error on the temporary (EFBIG under ulimit -f; SIGXFSZ ignored so write() reports it)
expect_fail "write error (EFBIG)" bash -c 'trap "" XFSZ; ulimit -f 64 && exec "$@"' _ \
  "$zmpi" codec decompress "$work/ref.zmpi" "$work/keep"
[ "$(cat "$work/keep")" = keep ] && no_tmp "$work" && ok || bad "failed write changed the target"

# FIFOs: a reader gets every byte, the FIFO stays a FIFO (timeouts: the old code left the reader waiting)
fifo_case() { # fifo_case DESCRIPTION EXPECTED OUT ZMPI_ARGS...; OUT is $work/fifo or a link to it
  local what=$1 expected=$2 out=$3 st rst; shift 3
  rm -f "$work/fifo" "$work/fifo.got" && mkfifo "$work/fifo" || { bad "$what: mkfifo"; return; }
  timeout 20 cat "$work/fifo" >"$work/fifo.got" &
  reader=$!
  timeout 20 "$zmpi" "$@" "$out"
  st=$?
  wait "$reader"
  rst=$?
  reader=
  [ "$st" -eq 0 ] && [ "$rst" -eq 0 ] && cmp -s "$expected" "$work/fifo.got" && [ -p "$work/fifo" ] && no_tmp "$work" &&
    ok || bad "$what: zmpi exit $st, reader exit $rst"
}
fifo_case "compress to a FIFO" "$work/ref.zmpi" "$work/fifo" codec compress "$field" "${zc[@]}"
fifo_case "decompress to a FIFO" "$work/ref.raw" "$work/fifo" codec decompress "$work/ref.zmpi"
ln -s fifo "$work/fifo-link" || bad "setup"
fifo_case "compress to a symlink to a FIFO" "$work/ref.zmpi" "$work/fifo-link" codec compress "$field" "${zc[@]}"
[ -L "$work/fifo-link" ] && ok || bad "symlink to a FIFO replaced"

# devices: /dev/null takes the data and stays a device; /dev/full fails (ENOSPC)
"$zmpi" codec compress "$field" /dev/null "${zc[@]}" && [ -c /dev/null ] && ok || bad "compress to /dev/null"
"$zmpi" codec decompress "$work/ref.zmpi" /dev/null && [ -c /dev/null ] && ok || bad "decompress to /dev/null"
ln -s /dev/null "$work/null-link" && "$zmpi" codec compress "$field" "$work/null-link" "${zc[@]}" && \
  [ -L "$work/null-link" ] && [ -c /dev/null ] && ok || bad "compress to a symlink to /dev/null"
if [ -c /dev/full ]; then
  expect_fail "compress to /dev/full" "$zmpi" codec compress "$field" /dev/full "${zc[@]}"
  grep -q 'No space left' "$work/err" && ok || bad "/dev/full: $(cat "$work/err")"
  expect_fail "decompress to /dev/full" "$zmpi" codec decompress "$work/ref.zmpi" /dev/full
  [ -c /dev/full ] && [ -c /dev/null ] && [ -z "$(find /dev -maxdepth 1 -name '*.tmp.*' -print)" ] && ok ||
    bad "/dev changed"
fi

# terminals: binary data is refused (exit 1, one message, nothing written); skipped without a pseudo-terminal
tty_case() { # tty_case DESCRIPTION ZMPI_ARGS... : standard output is a pseudo-terminal
  local what=$1 st; shift
  python3 - "$zmpi" "$@" <<'PY'
import os, sys, subprocess
try:
    import pty
    m, s = pty.openpty()
except (ImportError, OSError):
    sys.exit(77)
p = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=s, stderr=subprocess.PIPE, timeout=60)
os.close(s)
os.set_blocking(m, False)
try:
    got = os.read(m, 1 << 16)
except OSError:
    got = b""
err = p.stderr.decode(errors="replace")
good = p.returncode == 1 and err.count("\n") == 1 and err.startswith("zmpi: ") and "terminal" in err and not got
if not good:
    print("exit %d, %d bytes on the terminal, stderr: %s" % (p.returncode, len(got), err), file=sys.stderr)
sys.exit(0 if good else 1)
PY
  st=$?
  [ "$st" -eq 77 ] && { echo "test_cli: no pseudo-terminal, '$what' skipped" >&2; return; }
  [ "$st" -eq 0 ] && ok || bad "$what"
}
tty_case "compress to - on a terminal" codec compress "$field" - "${zc[@]}"
tty_case "compress to /dev/stdout on a terminal" codec compress "$field" /dev/stdout "${zc[@]}"
tty_case "decompress to - on a terminal" codec decompress "$work/ref.zmpi" -
[ -z "$stdout_link" ] || [ -L /dev/stdout ] && [ ! -e "$work/-" ] && ok || bad "terminal cases created files"

no_tmp "$work" "$work/d1" "$work/d2" && [ -z "$(find "$work" -name '*.tmp.*' -print)" ] && ok || bad "temporaries left behind"

# zmpi config reads ZMPI_CONFIG as the preload does: each name's last value,
# the environment winning, and the settings checked together
cfg() { env -i PATH="$PATH" "$@" "$zmpi" config >"$work/cfg.out" 2>&1; }
printf 'ZMPI_EB=1e-2\nZMPI_EB_MODE=abs\n# a tighter bound later\nZMPI_EB=1e-6\n' >"$work/z.conf"
cfg ZMPI_CONFIG="$work/z.conf" && grep -Eq '^ZMPI_EB +1e-6 +file ' "$work/cfg.out" &&
  grep -Eq '^ZMPI_EB_MODE +abs +file ' "$work/cfg.out" && ok || bad "config: the file's last value ($(grep '^ZMPI_EB ' "$work/cfg.out"))"
cfg ZMPI_CONFIG="$work/z.conf" ZMPI_EB=1e-4 && grep -Eq '^ZMPI_EB +1e-4 +environment ' "$work/cfg.out" &&
  grep -q "wins over the file's 1e-6" "$work/cfg.out" && ok || bad "config: the environment over the file"
printf 'ZMPI_CODEC=trunc\nZMPI_EB=1e-9\n' >"$work/t.conf"
cfg ZMPI_CONFIG="$work/t.conf" && bad "config: trunc with a bound in a file: exit 0" ||
  { grep -q 'keeps a fixed precision' "$work/cfg.out" && ok || bad "config: trunc with a bound: $(tail -1 "$work/cfg.out")"; }
cfg ZMPI_CODEC=dp2sp ZMPI_EB=1e-9 && bad "config: dp2sp with a bound: exit 0" ||
  { grep -q 'keeps a fixed precision' "$work/cfg.out" && ok || bad "config: dp2sp with a bound: $(tail -1 "$work/cfg.out")"; }
printf 'ZMPI_EB=abc\n' >"$work/b.conf"
cfg ZMPI_CONFIG="$work/b.conf" && bad "config: a bad file: exit 0" ||
  { grep -q 'b.conf:1: ZMPI_EB=abc' "$work/cfg.out" && ok || bad "config: a bad file: $(head -1 "$work/cfg.out")"; }

echo "test_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
