#!/bin/sh
# libzmpi_preload.so exports the MPI_ wrappers and nothing else.
#   check_exports.sh NM LIB
set -eu
LC_ALL=C
export LC_ALL
other=$("$1" -D --defined-only "$2" | awk 'NF >= 2 && $(NF - 1) != "A" { n = $NF; sub(/@.*/, "", n); if (n !~ /^MPI_/) print n }')
count=$("$1" -D --defined-only "$2" | awk 'NF >= 2 && $NF ~ /^MPI_/' | wc -l)
if [ -n "$other" ]; then
    echo "preload.exports: FAIL: exported but not an MPI_ wrapper:"
    echo "$other" | sed 's/^/    /'
    exit 1
fi
if [ "$count" -lt 300 ]; then
    echo "preload.exports: FAIL: only $count MPI_ functions exported"
    exit 1
fi
echo "preload.exports: OK: $count MPI_ wrappers, nothing else"
