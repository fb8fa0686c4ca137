#!/usr/bin/env bash
# KNN search at 100,000 (default) or 1,000,000 rows x 384: embed_index's storage types and IVF
# index against sqlite-vector 1.1.2 (vector_full_scan, vector_quantize_scan) and sqlite-vec's vec0,
# same data and process, with recall@10 against an exact brute force (bench/bench_search.c says how).
# usage: bench/search.sh [BUILD_DIR]     (BENCH_N, BENCH_QUERIES, BENCH_DATA, BENCH_ENGINES, ...:
#                                         see bench/bench_search.c; the full run: BENCH_N=1000000)
# sqlite-vector is installed on first use into bench/node_modules (bench/package-lock.json pins
# it); vec0 comes from scripts/deps.sh (.deps/). A peer that is missing is reported and skipped.
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SO=$([ "$BUILD" = build ] && echo embed.so || echo "$BUILD/embed.so")
BIN="$BUILD/bench/bench_search"
make --no-print-directory BUILD="$BUILD" "$SO" "$BIN" >/dev/null
if [ ! -f bench/node_modules/@sqliteai/sqlite-vector-linux-x86_64/vector.so ] && command -v npm >/dev/null; then
    npm ci --prefix bench --no-audit --no-fund >/dev/null 2>&1 || echo "npm ci --prefix bench failed: sqlite-vector skipped"
fi
[ -f .deps/node_modules/sqlite-vec-linux-x64/vec0.so ] || echo "vec0 missing: run 'make deps' (scripts/deps.sh)"
DB_DIR="$BUILD/bench/search-db"
mkdir -p "$DB_DIR"
"$BIN" "$SO" "$DB_DIR"
rmdir "$DB_DIR" 2>/dev/null || true
