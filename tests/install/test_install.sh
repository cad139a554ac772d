#!/usr/bin/env bash
# Installs the build tree into a temporary prefix and builds a downstream
# program against it twice: with find_package(zmpi) and with pkg-config.
#   test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/zmpi-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(ls -d "$work"/prefix/lib*/ | head -1)
cmake -S "$src/tests/install/consumer" -B "$work/b" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/b" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/b/consumer"
PKG_CONFIG_PATH="$libdir/pkgconfig" cc -std=c11 "$src/tests/install/consumer/main.c" -o "$work/c2" \
  $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs zmpi)
LD_LIBRARY_PATH="$libdir" "$work/c2"
[ -x "$work/prefix/bin/zmpi" ] && "$work/prefix/bin/zmpi" version
