#!/bin/sh
# liblaya.a from static libraries: one relocatable object (ld -r through the compiler driver) with
# the given symbols' references wrapped (--wrap), archived alone.
#   link_static.sh OUT.a COMPILER... -- SYMBOL... -- LIB.a...
set -eu
out=$1
shift
cc=""
while [ "$1" != "--" ]; do cc="$cc $1"; shift; done
shift
wraps=""
while [ "$1" != "--" ]; do wraps="$wraps -Wl,--wrap=$1"; shift; done
shift
obj="$out.o"
# shellcheck disable=SC2086
$cc -r -nostdlib -o "$obj" -Wl,--whole-archive "$@" -Wl,--no-whole-archive $wraps
rm -f "$out"
ar rcs "$out" "$obj"
rm -f "$obj"
