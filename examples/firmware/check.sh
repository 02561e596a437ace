#!/bin/sh
# Builds examples/firmware outside the source tree against `meson install` of a build directory
# (into a temporary prefix, found through pkg-config), linked statically (liblaya.a, as a firmware
# image links it) and dynamically, and runs both with the heap counted during the decisions: the
# README's encoder request on ENCODER and a schema decision on DECODER. Exits non-zero on any
# failure, or when a decision touched the heap.
#   examples/firmware/check.sh BUILD_DIR ENCODER.laya REQUEST.json DECODER.gguf
set -eu
build=$(realpath "$1")
encoder=$(realpath "$2")
request=$(realpath "$3")
decoder=$(realpath "$4")
src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
DESTDIR="$tmp/root" meson install -C "$build" --no-rebuild --quiet >/dev/null
pc=$(dirname "$(find "$tmp/root" -name laya.pc | head -n 1)")
export PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
mkdir "$tmp/app"
cp "$src/firmware.c" "$src/heap_check.c" "$tmp/app/"
cd "$tmp/app"
flags="-std=c99 -pedantic -Wall -Wextra -Werror -O2"
# shellcheck disable=SC2046
cc $flags firmware.c heap_check.c $(pkg-config --cflags laya) \
  $(pkg-config --static --libs laya | sed 's/-llaya\b/-l:liblaya.a/') -o firmware-static
libdir=$(pkg-config --variable=libdir laya)
# shellcheck disable=SC2046
cc $flags firmware.c heap_check.c $(pkg-config --cflags --libs laya) -Wl,-rpath,"$libdir" \
  -o firmware-shared
for exe in firmware-static firmware-shared; do
  echo "== $exe"
  ./$exe "$encoder" "$request" "$decoder"
done
