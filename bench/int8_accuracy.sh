#!/usr/bin/env bash
# Accuracy of int8 weights against float32 (bench/bench_int8_accuracy.c): random-weight BERTs at
# MiniLM-L6 and bert-base size (plain, and with outlier weights and dimensions), and every golden
# model folder (their reference cases, and 1,000 random-id sentences each), as distributions of
# the cosine of int8 vectors to float32 ones; exits 1 if a golden case is below issue 13's bounds.
# Usage: bench/int8_accuracy.sh BUILD_DIR [bench_int8_accuracy options, e.g. --quick]
# GOLDEN (default /work/shared/golden, else tests/fixtures) holds models/ and models2/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
bin="$build/bench/bench_int8_accuracy"
[ -x "$bin" ] || { echo "int8_accuracy.sh: $bin not built (make BUILD=$build $bin)" >&2; exit 1; }
golden=${GOLDEN:-/work/shared/golden}
[ -d "$golden/models" ] || golden=tests/fixtures
folders=()
for set in models models2; do
    for d in "$golden/$set"/*/; do
        d=${d%/}
        [ "$(basename "$d")" != refs ] && [ -f "$d/config.json" ] && folders+=("$d")
    done
done
echo "### int8 accuracy: $(uptime)"
"$bin" "$@" "${folders[@]}"
