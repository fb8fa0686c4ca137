#!/usr/bin/env bash
# embed_hybrid against the FTS5 query plus the KNN query run separately (bench_hybrid.py).
# usage: bench/hybrid.sh [BUILD_DIR]    (BENCH_HYBRID_N, BENCH_QUERIES, BENCH_ROUNDS)
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SO=$([ "$BUILD" = build ] && echo embed.so || echo "$BUILD/embed.so")
make --no-print-directory BUILD="$BUILD" "$SO" "$BUILD/bench/bench_index" >/dev/null
/usr/bin/python3 bench/bench_hybrid.py "$BUILD"
