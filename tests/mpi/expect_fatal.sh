#!/usr/bin/env bash
# expect_fatal.sh REGEX CMD...: CMD must fail (non-zero status) and print
# REGEX (extended, on stdout or stderr), and never "NOT STOPPED".
set -u
re=$1; shift
out=$("$@" 2>&1); rc=$?
if [ "$rc" -eq 0 ]; then echo "expect_fatal: '$*' exited 0"; echo "$out"; exit 1; fi
if grep -q "NOT STOPPED" <<<"$out"; then echo "expect_fatal: the program went on after the error"; echo "$out"; exit 1; fi
if ! grep -Eq "$re" <<<"$out"; then echo "expect_fatal: no /$re/ in the output"; echo "$out"; exit 1; fi
echo "expect_fatal: exit $rc with /$re/: ok"
