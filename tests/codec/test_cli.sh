#!/usr/bin/env bash
# End-to-end checks of the `zmpi codec` command line: outputs, JSON keys,
# round trips between files, and one-line errors with non-zero exits.
#   test_cli.sh ZMPI_BINARY DATA_DIR
set -u
zmpi=$1
data=${ZMPI_DATA:-$2}
work=$(mktemp -d "${TMPDIR:-/tmp}/zmpi-cli.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
ok()   { pass=$((pass + 1)); }
bad()  { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
expect_fail() { # expect_fail DESCRIPTION CMD...: non-zero exit and exactly one line on stderr
  local what=$1; shift
  if "$@" >"$work/out" 2>"$work/err"; then bad "$what: exit 0"; return; fi
  [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q '^zmpi: ' "$work/err" && ok || bad "$what: stderr: $(cat "$work/err")"
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
"$zmpi" codec eval "$field" --dtype f32 --codec fzl --rel 1e-2 --repeat 1 | grep -q '^ratio' && ok || bad "eval text"

# compress / decompress between files
"$zmpi" codec compress "$field" "$work/a.zmpi" --dtype f32 --codec zstd && \
  "$zmpi" codec decompress "$work/a.zmpi" "$work/a.raw" && cmp -s "$field" "$work/a.raw" && ok || bad "zstd file round trip"
"$zmpi" codec compress "$dfield" "$work/b.zmpi" --dtype f64 --codec fzl --abs 0.01 --threads 2 && \
  "$zmpi" codec decompress "$work/b.zmpi" "$work/b.raw" && \
  [ "$(stat -c %s "$work/b.raw")" = "$(stat -c %s "$dfield")" ] && ok || bad "fzl file round trip"
"$zmpi" codec info "$work/b.zmpi" | grep -q '^codec *fzl' && ok || bad "codec info"
head -c 1000 /dev/urandom >"$work/u8.raw"
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
head -c 1001 "$field" >"$work/odd.f32"
expect_fail "odd size" "$zmpi" codec eval "$work/odd.f32" --dtype f32 --codec fzl --rel 1e-3
expect_fail "bad option" "$zmpi" codec eval "$field" --dtype f32 --codec fzl --rel 1e-3 --frobnicate
expect_fail "bad threads" "$zmpi" codec eval "$field" --dtype f32 --codec fzl --rel 1e-3 --threads x
expect_fail "dp2sp on f32" "$zmpi" codec eval "$field" --dtype f32 --codec dp2sp
head -c 5000 /dev/urandom >"$work/junk.zmpi"
expect_fail "garbage stream" "$zmpi" codec decompress "$work/junk.zmpi" "$work/junk.raw"
[ ! -e "$work/junk.raw" ] && ok || bad "garbage stream left an output file"
head -c 300 "$work/b.zmpi" >"$work/trunc.zmpi"
expect_fail "truncated stream" "$zmpi" codec decompress "$work/trunc.zmpi" "$work/trunc.raw"
[ -z "$(ls "$work" | grep -F .tmp.)" ] && ok || bad "temporary files left behind"
expect_fail "unknown command" "$zmpi" frobnicate

echo "test_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
