# Sourced by the CLI tests: `expect` runs one command line of the tool under test and checks its
# exit code and output. The test sets, before calling it:
#   expect_bin   the program (e.g. build/tools/laya-run)
#   expect_name  how reports name it (e.g. laya-run)
# and counts failures in `fails`.
fails=${fails:-0}

# expect CODE PATTERN -- ARGS...: exit code CODE and PATTERN (grep -E) somewhere in stdout+stderr.
# A run longer than 60 s fails (a hang, e.g. on a FIFO, must not stall the suite).
expect() {
  local code=$1 pattern=$2
  shift 3
  local out rc
  out=$(timeout 60 "$expect_bin" "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $code ]] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: $expect_name $* -> exit $rc (want $code), pattern '$pattern'"
    echo "$out" | head -20 | sed 's/^/    /'
    fails=$((fails + 1))
  else
    echo "ok:   $expect_name $*"
  fi
}
