#!/bin/sh
# Checks that a generated section of a document equals its generator's output:
#   check_generated.sh DOC BEGIN-MARKER END-MARKER COMMAND [ARGS...]
# The section is the lines strictly between the line containing BEGIN-MARKER
# and the line containing END-MARKER. On a difference, prints it and how to
# regenerate.
doc=$1 begin=$2 end=$3
shift 3
tmp=${TMPDIR:-/tmp}/zmpi-docs.$$
trap 'rm -f "$tmp.doc" "$tmp.gen"' EXIT
awk -v b="$begin" -v e="$end" 'index($0, e) { on = 0 } on { print } index($0, b) { on = 1 }' "$doc" >"$tmp.doc" || exit 1
"$@" >"$tmp.gen" || { echo "generator failed: $*"; exit 1; }
[ -s "$tmp.doc" ] || { echo "$doc: no section between '$begin' and '$end'"; exit 1; }
if ! diff -u "$tmp.doc" "$tmp.gen"; then
  echo "$doc is out of date: replace the section with the output of: $*"
  exit 1
fi
echo "$doc: generated section up to date"
