#!/usr/bin/env bash
# Runs every test suite and prints the total as its last line: "N passed, N failed".
# Usage: tests/run.sh BUILD_DIR EXTENSION_PATH   (SANITIZE=1 for the sanitizer build)
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
ext=${2:-./embed.so}
passed=0
failed=0
logdir=$(mktemp -d)
failures=$logdir/failures  # "suite: message" of every failure, listed again at the end

# The kernel sets this CPU runs (core/base/simd.c's test): the C suites run on each, the SQL suites
# whose results depend on the kernels on each set below the best (EMBED_SIMD forces one).
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { case " ${flags#*:} " in *" $1 "*) return 0 ;; esac; return 1; }
sets=(generic)
if has avx2 && has fma && has popcnt; then
    sets=(avx2 generic)
    if has avx512f && has avx512bw && has avx512vl && has avx512dq; then sets=(avx512 avx2 generic); fi
fi

sanitizer_env=()
if [ "${SANITIZE:-0}" = 1 ]; then
    # Python is not built with ASan: preload the runtime. Python's own allocations are not
    # ours to judge, so leak checking is done by the C suites and the sqlite3-shell check.
    sanitizer_env=(LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
                   ASAN_OPTIONS=detect_leaks=0)
fi

run_suite() {
    local name=$1; shift
    local log="$logdir/$name.log"
    local start=$SECONDS
    # The suite's name goes out before it runs (some take a minute), its counts on the same line after.
    printf '%-28s ' "$name"
    "$@" >"$log" 2>&1
    local rc=$?
    local line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    local p=0 f=0
    if [ -n "$line" ]; then
        p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
        f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # a crash or a missing count is a failure
    passed=$((passed + p))
    failed=$((failed + f))
    printf '%6d passed %4d failed  (%ds)\n' "$p" "$f" $((SECONDS - start))
    if [ "$f" -ne 0 ]; then
        echo "---- $name (exit $rc), last lines:"
        grep -v '^ok ' "$log" | tail -n 40
        echo "----"
        local msgs
        msgs=$(grep -E '^(FAIL|not ok)' "$log" | head -n 20)
        [ -n "$msgs" ] || msgs="exit $rc: $(grep -v '^ok ' "$log" | tail -n 1)"
        echo "$msgs" | sed "s/^/$name: /" >>"$failures"
    fi
}

for set in "${sets[@]}"; do
    suffix=""
    [ "$set" = "${sets[0]}" ] || suffix="[$set]"
    for bin in "$build"/tests/test_*; do
        [ -x "$bin" ] || continue
        if [ "${SANITIZE:-0}" = 1 ]; then
            run_suite "$(basename "$bin")$suffix" env EMBED_SIMD="$set" ASAN_OPTIONS=detect_leaks=1 "$bin"
        else
            run_suite "$(basename "$bin")$suffix" env EMBED_SIMD="$set" "$bin"
        fi
    done
done
# Layers: no call or include cycle between the files of core/ and of ext/, and none against the
# order of core's folders (from the objects).
run_suite layers bash -c '/usr/bin/python3 tools/check_layers.py "$0" core ext && echo "1 passed, 0 failed"' "$build"
# What the libraries export, and the C style (.clang-format).
run_suite symbols bash tools/check_symbols.sh "$build" "$ext"
run_suite format bash tools/check_format.sh
run_suite sql env "${sanitizer_env[@]}" EMBED_EXT="$ext" /usr/bin/python3 tests/sql/run.py
# The SQL suites whose numbers come from the kernels, again on each lower set: the models against
# their references, threads, batches and chunks (same bits), int8 weights, search scans.
PARITY_SUITES=(test_models_bert test_models_architectures test_models_mpnet test_threads test_rerank test_index_chunks
               test_int8_weights test_attention test_relpos test_matryoshka test_vectors test_index_quant test_index
               test_models_st6 test_prompts test_decoders_st test_models_decoders)
for set in "${sets[@]:1}"; do
    run_suite "sql[$set]" env "${sanitizer_env[@]}" EMBED_SIMD="$set" EMBED_EXT="$ext" \
        /usr/bin/python3 tests/sql/run.py "${PARITY_SUITES[@]}"
done
# Short forms of the stress tests (the long forms: make stress).
run_suite stress_crash_kill env "${sanitizer_env[@]}" EMBED_EXT="$ext" \
    /usr/bin/python3 tests/stress/crash_kill.py "${STRESS_TRIALS:-2}"
run_suite stress_writers env "${sanitizer_env[@]}" EMBED_EXT="$ext" \
    /usr/bin/python3 tests/stress/writers.py "${STRESS_TRANSACTIONS:-15}"
run_suite stress_differential env "${sanitizer_env[@]}" EMBED_EXT="$ext" \
    /usr/bin/python3 tests/stress/differential.py "${DIFF_OPERATIONS:-300}"
# Crafted shadow-table values on every index kind, each case in a child (tests/fuzz/index_db.py;
# long form: index_db.py --seconds 1800). About 20 s under the sanitizers, 10 s otherwise.
fuzz_seconds=10
[ "${SANITIZE:-0}" = 1 ] && fuzz_seconds=20
run_suite index_db_fuzz env "${sanitizer_env[@]}" EMBED_EXT="$ext" /usr/bin/python3 tests/fuzz/index_db.py \
    --seed "${INDEX_FUZZ_SEED:-1}" --seconds "${INDEX_FUZZ_SECONDS:-$fuzz_seconds}"
if [ "${SANITIZE:-0}" = 1 ]; then
    run_suite sql_leaks bash tests/sql/leak_check.sh "$ext"
fi
if [ -f tests/fuzz/run.sh ] && [ "${SANITIZE:-0}" != 1 ]; then
    run_suite fuzz_short bash tests/fuzz/run.sh "${FUZZ_SECONDS:-4}"  # per harness (5): about 20 s
fi
if [ "${SANITIZE:-0}" != 1 ]; then
    # Fault injection, short form: allocations failed in turn on an ASan build of its own
    # (build-faults); the full sweep: make faults.
    run_suite faults_short bash -c 'make -j2 --no-print-directory faults-build >/dev/null &&
        build-faults/faults/faults --jobs 2 --points "${FAULTS_POINTS:-100}"'
fi
if [ "${SANITIZE:-0}" != 1 ]; then
    # embed_preload.so in the sqlite3 shell and Python, and a three-node dqlite cluster
    # (short form; the long one: make cluster-test).
    run_suite cluster /usr/bin/python3 tests/cluster/test_cluster.py "$build" "$ext"
    run_suite install bash tests/install/test_install.sh "$build"
    # make dist's archives; the Python and npm packages installed as users install them; sqlite-utils.
    run_suite dist bash tests/install/test_dist.sh "$build" "$ext"
    run_suite python_package /usr/bin/python3 tests/packages/test_python.py "$ext"
    run_suite python_plot /usr/bin/python3 tests/packages/test_plot.py "$ext"
    run_suite node_package /usr/bin/python3 tests/packages/test_node.py "$ext"
    run_suite sqlite_utils /usr/bin/python3 tests/packages/test_sqlite_utils.py "$ext"
fi
if [ -s "$failures" ]; then
    echo "==== every failure (suite: message):"
    cat "$failures"
fi
rm -rf "$logdir"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
