# Sourced by the tests/install/ scripts: a temporary folder $tmp (removed at exit), the counts,
# check DESCRIPTION COMMAND... (one test: its output shown when it fails) and finish (the totals).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() { # check DESCRIPTION COMMAND...
    local what=$1; shift
    if "$@" >"$tmp/out" 2>&1; then passed=$((passed + 1)); echo "ok $what"
    else failed=$((failed + 1)); echo "FAIL $what"; sed 's/^/    /' "$tmp/out" | tail -n 15; fi
}
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
