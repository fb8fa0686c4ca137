#!/usr/bin/env bash
# embed_index benchmark: KNN search against sqlite-vec's vec0, an ORDER BY embed_distance scan and
# the memory-bandwidth bound; bulk text inserts against the encoder alone. Needs Debian's
# /usr/bin/python3 (its sqlite3 module loads extensions) and sqlite-vec from scripts/deps.sh.
# usage: bench/index.sh [BUILD_DIR]     (BENCH_N, BENCH_QUERIES, BENCH_TEXTS: see bench_index.py)
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SO=$([ "$BUILD" = build ] && echo embed.so || echo "$BUILD/embed.so")
make --no-print-directory BUILD="$BUILD" "$SO" "$BUILD/bench/bench_index" >/dev/null
/usr/bin/python3 bench/bench_index.py "$BUILD"
