#!/bin/sh
# The exported ABI of zmpi's shared libraries is its public headers.
#
#   check_exports.sh NM LIBRARY_TYPE 'LIB.so...' HEADER...
#
# Compares two sets of names:
#   exported: the defined dynamic symbols (functions and data) of the shared
#             libraries, `NM -D --defined-only` (linker-defined version nodes,
#             type A, left out);
#   public:   the names declared with ZMPI_API in the headers: a declaration
#             starts its line with ZMPI_API and names its function before the
#             first '(' (or its object before ';', '[' or '=') on that line.
# Prints each name exported but not public and each name public but not
# exported, and fails if there is any, or if a name is exported by two of
# the libraries. LIBRARY_TYPE is the CMake type of libzmpi: anything but
# SHARED_LIBRARY (a static build, nothing to export) skips the test (exit 77).
set -eu
LC_ALL=C
export LC_ALL

nm=$1 type=$2 libs=$3
shift 3
if [ "$type" != SHARED_LIBRARY ]; then
    echo "abi.exports: skipped: libzmpi is a $type (BUILD_SHARED_LIBS=OFF), nothing is exported"
    exit 77
fi
if [ $# -eq 0 ] || [ -z "$libs" ]; then
    echo "usage: $0 NM LIBRARY_TYPE 'LIB.so...' HEADER..." >&2
    exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zmpi-abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# exported: "name library" per defined dynamic symbol
: >"$tmp/exported_by"
for lib in $libs; do
    if [ ! -f "$lib" ]; then
        echo "abi.exports: FAIL: no library $lib" >&2
        exit 1
    fi
    "$nm" -D --defined-only "$lib" >"$tmp/nm" || {
        echo "abi.exports: FAIL: $nm -D --defined-only $lib failed" >&2
        exit 1
    }
    # "ADDRESS TYPE NAME[@VERSION]"; lines of 2 fields have no address
    awk -v lib="${lib##*/}" 'NF >= 2 {
        type = $(NF - 1); name = $NF
        if (type == "A") next
        sub(/@.*/, "", name)
        print name, lib
    }' "$tmp/nm" >>"$tmp/exported_by"
done
names=$(for lib in $libs; do printf ' %s' "${lib##*/}"; done)
cut -d' ' -f1 "$tmp/exported_by" | sort -u >"$tmp/exported"
cut -d' ' -f1 "$tmp/exported_by" | sort | uniq -d >"$tmp/twice"

# public: the names of the ZMPI_API declarations
for h in "$@"; do
    if [ ! -f "$h" ]; then
        echo "abi.exports: FAIL: no header $h" >&2
        exit 1
    fi
    awk '/^[ \t]*ZMPI_API[ \t]/ {
        decl = $0
        sub(/\/\*.*/, "", decl)            # a trailing comment
        cut = length(decl) + 1             # up to the first ( ; [ or =
        for (i = 1; i <= 4; i++) {
            p = index(decl, substr("(;[=", i, 1))
            if (p > 0 && p < cut) cut = p
        }
        decl = substr(decl, 1, cut - 1)
        sub(/[ \t]+$/, "", decl)
        n = split(decl, w, /[^A-Za-z0-9_]+/)
        while (n > 0 && w[n] == "") n--
        if (n > 0) print w[n]
    }' "$h"
done | sort -u >"$tmp/public"

status=0
if [ ! -s "$tmp/public" ]; then
    echo "abi.exports: FAIL: no ZMPI_API declaration found in: $*"
    status=1
fi
comm -23 "$tmp/exported" "$tmp/public" >"$tmp/extra"
comm -13 "$tmp/exported" "$tmp/public" >"$tmp/missing"

if [ -s "$tmp/extra" ]; then
    echo "abi.exports: FAIL: $(wc -l <"$tmp/extra") symbol(s) exported but not public" \
         "(not declared with ZMPI_API in the public headers): internal symbols that escaped" \
         "hidden visibility, or public ones whose declaration lacks ZMPI_API"
    while read -r s; do
        grep "^$s " "$tmp/exported_by" | sed 's/^\([^ ]*\) \(.*\)/    \1  (\2)/'
    done <"$tmp/extra"
    status=1
fi
if [ -s "$tmp/missing" ]; then
    echo "abi.exports: FAIL: $(wc -l <"$tmp/missing") public symbol(s) not exported" \
         "(declared with ZMPI_API but not a defined dynamic symbol of any of:$names):"
    sed 's/^/    /' "$tmp/missing"
    status=1
fi
if [ -s "$tmp/twice" ]; then
    echo "abi.exports: FAIL: symbol(s) exported by more than one library:"
    while read -r s; do
        grep "^$s " "$tmp/exported_by" | sed 's/^\([^ ]*\) \(.*\)/    \1  (\2)/'
    done <"$tmp/twice"
    status=1
fi
if [ $status -eq 0 ]; then
    echo "abi.exports: OK: the $(wc -l <"$tmp/public") public symbols are exactly the exported ones of" \
         "$(for l in $libs; do printf '%s (%s)  ' "${l##*/}" "$(grep -c " ${l##*/}\$" "$tmp/exported_by")"; done)"
fi
exit $status
