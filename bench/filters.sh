#!/usr/bin/env bash
# embed_index filtered and partitioned search against sqlite-vec's vec0 (bench_filters.py).
# usage: bench/filters.sh [BUILD_DIR]    (BENCH_N, BENCH_QUERIES, BENCH_ROUNDS)
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SO=$([ "$BUILD" = build ] && echo embed.so || echo "$BUILD/embed.so")
make --no-print-directory BUILD="$BUILD" "$SO" >/dev/null
/usr/bin/python3 bench/bench_filters.py "$BUILD"
