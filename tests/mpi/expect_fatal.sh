#!/usr/bin/env bash
# expect_fatal.sh REGEX CMD...: CMD must fail (non-zero status) and print
# REGEX (extended, on stdout or stderr), and never "NOT STOPPED".
# Open MPI 4.1's launcher sometimes drops the output of a rank that aborts
# (it then logs "ORTE_ERROR_LOG ... show_help"): only in that case is the
# run repeated, at most three times; the stop itself is checked every time.
set -u
re=$1; shift
for try in 1 2 3; do
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -eq 0 ]; then echo "expect_fatal: '$*' exited 0"; echo "$out"; exit 1; fi
  if grep -q "NOT STOPPED" <<<"$out"; then echo "expect_fatal: the program went on after the error"; echo "$out"; exit 1; fi
  if grep -Eq "$re" <<<"$out"; then echo "expect_fatal: exit $rc with /$re/: ok (run $try)"; exit 0; fi
  grep -q "ORTE_ERROR_LOG" <<<"$out" || break
  echo "expect_fatal: run $try: the launcher lost the output (ORTE_ERROR_LOG); again"
done
echo "expect_fatal: no /$re/ in the output"; echo "$out"; exit 1
