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

# expect_streams CODE STDOUT_PATTERN STDERR_PATTERN -- ARGS...: exit code CODE, and each stream
# matches its pattern (grep -E); an empty STDOUT_PATTERN means nothing may be printed there, an
# empty STDERR_PATTERN accepts anything. The streams stay in $expect_tmp/out and $expect_tmp/err
# (the test sets expect_tmp) for the test to read. A run longer than 120 s fails.
expect_streams() {
  local code=$1 out_pat=$2 err_pat=$3
  shift 4
  local rc
  timeout 120 "$expect_bin" "$@" >"$expect_tmp/out" 2>"$expect_tmp/err" </dev/null
  rc=$?
  local ok=1
  [[ $rc -eq $code ]] || ok=0
  if [[ -z "$out_pat" ]]; then [[ ! -s "$expect_tmp/out" ]] || ok=0
  else grep -qE -- "$out_pat" "$expect_tmp/out" || ok=0; fi
  [[ -z "$err_pat" ]] || grep -qE -- "$err_pat" "$expect_tmp/err" || ok=0
  if [[ $ok -eq 1 ]]; then
    echo "ok:   $expect_name $*"
  else
    echo "FAIL: $expect_name $* -> exit $rc (want $code)"
    head -c 600 "$expect_tmp/out" | sed 's/^/    out: /'
    head -c 600 "$expect_tmp/err" | sed 's/^/    err: /'
    fails=$((fails + 1))
  fi
}
