#!/bin/sh
# ann-benchmarks-style curves of embed_index (bench/ann.py): recall@10 against queries per
# second for every storage x index setting, on uniform, clustered and Debian-text vectors, with
# sqlite-vec and sqlite-vector as points; writes bench/ann_results.json and bench/ann.svg.
# BENCH_N (default 20000), BENCH_DIMS (256), BENCH_QUERIES (100), BENCH_ROUNDS (2).
set -e
cd "$(dirname "$0")/.."
EMBED_EXT="${EMBED_EXT:-$PWD/embed.so}"
[ -f "$EMBED_EXT" ] || { echo "ann.sh: build first (make), or set EMBED_EXT" >&2; exit 1; }
echo "ann.sh: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
EMBED_EXT="$EMBED_EXT" exec /usr/bin/python3 bench/ann.py
