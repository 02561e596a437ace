#!/bin/sh
# Builds the libFuzzer targets (tests/fuzz/) in build-fuzz (clang-14, -Dfuzz=true, ASan + UBSan)
# and runs one of them, or each in turn, for SECONDS:
#
#   tools/fuzz.sh TARGET SECONDS [libFuzzer flags...]    e.g. tools/fuzz.sh laya 1800
#   tools/fuzz.sh all SECONDS                           every tests/fuzz/fuzz_*.cpp (what CI runs),
#                                                       FUZZ_JOBS of them at once
#
# The corpus grows in build-fuzz/corpus/TARGET (kept between runs) from the seeds in
# tests/fuzz/seeds/TARGET, the ones tests/fuzz/seeds_TARGET.cpp writes, and the regression inputs in
# tests/fuzz/regressions/TARGET. A crash leaves its input in build-fuzz/artifacts/TARGET/ and fails
# the script; fix it, then commit the input to tests/fuzz/regressions/TARGET/ (tests/fuzz/README.md).
# FUZZ_JOBS sets ninja's parallelism and how many fuzzers `all` runs at once (default: all cores).
set -eu
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: tools/fuzz.sh TARGET|all SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
target=$1 seconds=$2
shift 2
case $seconds in '' | *[!0-9]*)
  echo "tools/fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2
  exit 2
  ;;
esac
jobs=${FUZZ_JOBS:-$(nproc)}
build=build-fuzz
if [ "$target" != all ] && [ ! -f "tests/fuzz/fuzz_$target.cpp" ]; then
  echo "tools/fuzz.sh: no fuzz target '$target' (tests/fuzz/fuzz_$target.cpp)" >&2
  exit 2
fi

if [ ! -d $build ]; then
  # Meson wraps its compilers in ccache only when CC / CXX are unset: say it here when it exists.
  cc=clang-14 cxx=clang++-14
  if command -v ccache >/dev/null; then cc="ccache $cc" cxx="ccache $cxx"; fi
  # -gline-tables-only: reports keep file:line; full -g made the Highway kernel units ~1.3x slower
  # to compile.
  CC=$cc CXX=$cxx meson setup $build --buildtype=debugoptimized -Dfuzz=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dtests=false -Dbenchmarks=false \
    -Dcpp_args=-gline-tables-only
fi
if [ "$target" = all ]; then
  # Every target built in one ninja call, then FUZZ_JOBS of them fuzzing at once (each fuzzer
  # runs on one core).
  targets="" outputs=""
  for f in tests/fuzz/fuzz_*.cpp; do
    t=${f#tests/fuzz/fuzz_}
    t=${t%.cpp}
    targets="$targets $t"
    outputs="$outputs tests/fuzz/fuzz_$t"
    [ -f "tests/fuzz/seeds_$t.cpp" ] && outputs="$outputs tests/fuzz/fuzz_seeds_$t"
  done
  # shellcheck disable=SC2086  # lists of words
  ninja -C $build -j "$jobs" $outputs
  # shellcheck disable=SC2086
  printf '%s\n' $targets | LAYA_FUZZ_BUILT=1 xargs -P "$jobs" -I{} "$0" {} "$seconds" "$@" ||
    exit 1
  exit 0
fi
gen=""
[ -f "tests/fuzz/seeds_$target.cpp" ] && gen="tests/fuzz/fuzz_seeds_$target"
[ -n "${LAYA_FUZZ_BUILT:-}" ] || ninja -C $build -j "$jobs" "tests/fuzz/fuzz_$target" $gen

corpus=$build/corpus/$target
seeds=$build/seeds/$target
artifacts=$build/artifacts/$target
mkdir -p "$corpus" "$seeds" "$artifacts"
[ -n "$gen" ] && "$build/$gen" "$seeds" >/dev/null
dirs="$corpus $seeds"
for d in "tests/fuzz/seeds/$target" "tests/fuzz/regressions/$target"; do
  [ -d "$d" ] && dirs="$dirs $d"
done
dict=""
[ -f "tests/fuzz/$target.dict" ] && dict="-dict=tests/fuzz/$target.dict"

log=$build/fuzz-$target.log
echo "fuzz $target: ${seconds}s, corpus $corpus, log $log"
status=0
# shellcheck disable=SC2086  # $dirs and $dict are lists of words
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2560 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" $dict "$@" $dirs >"$log" 2>&1 || status=$?
# The last status line has the totals: "#<runs> DONE cov: <edges> ft: <features> corp: ...".
grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" | tail -n 2 | sed "s/^/fuzz $target: /"
grep -E '^Done [0-9]+ runs' "$log" | sed "s/^/fuzz $target: /" || true
if [ $status -ne 0 ]; then
  echo "fuzz $target: FAILED (exit $status); the report:" >&2
  grep -E -A 30 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error:' "$log" |
    head -n 60 >&2 || tail -n 40 "$log" >&2
  ls "$artifacts" >&2
  exit 1
fi
