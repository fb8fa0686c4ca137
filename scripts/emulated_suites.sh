# shellcheck shell=bash
# Sourced by scripts/check_haswell.sh and scripts/check_arm64.sh: runs every C suite of a build
# folder under an emulator and prints each suite's counts, then "N passed, N failed" last.
# run_emulated_suites BUILD_DIR RUNNER...: RUNNER is the emulator's command line (qemu-x86_64
# -cpu Haswell, qemu-aarch64); it is also EMBED_TEST_RUNNER, so a suite's own children
# (test_int8_gemm's) run in it too. SUITE_TIMEOUT (seconds, default 1800) bounds each suite.
# Returns non-zero when a suite failed, crashed or printed no counts.

run_emulated_suites() {
    local build=$1
    shift
    local runner="$*" passed=0 failed=0 logdir bin name rc p f start
    logdir=$(mktemp -d)
    for bin in "$build"/tests/test_*; do
        [ -x "$bin" ] || continue
        name=$(basename "$bin")
        start=$SECONDS
        printf '%-24s ' "$name"
        # QEMU warns on stderr about each CPU feature it does not emulate (TSX, x2apic...): not ours.
        EMBED_TEST_RUNNER="$runner" timeout "${SUITE_TIMEOUT:-1800}" "$@" "$bin" >"$logdir/$name.log" \
            2>"$logdir/$name.err"
        rc=$?
        grep -v "warning: TCG doesn't support requested feature" "$logdir/$name.err" >>"$logdir/$name.log"
        # the suite's last "N passed, N failed"; a crash, a timeout (124) or no counts is a failure
        read -r p f < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$logdir/$name.log" | tail -n 1)
        p=${p:-0} f=${f:-0}
        [ "$rc" -eq 0 ] || [ "$f" -ne 0 ] || f=1
        passed=$((passed + p)) failed=$((failed + f))
        printf '%6d passed %4d failed  (%ds)\n' "$p" "$f" $((SECONDS - start))
        if [ "$f" -ne 0 ]; then
            echo "---- $name (exit $rc), last lines:"
            grep -v '^ok ' "$logdir/$name.log" | tail -n 30
            echo "----"
        fi
    done
    rm -rf "$logdir"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
}
