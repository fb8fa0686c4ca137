#!/usr/bin/env bash
# Chunking benchmark (bench_chunks.c): emb_model_chunks against tokenizing the same English text
# in the same run, for WordPiece, Unigram and BPE; one thread, rounds alternated.
# usage: bench/chunks.sh [BUILD_DIR [MB [MAX_TOKENS [ROUNDS]]]]     (defaults build 10 256 2)
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BIN="$BUILD/bench/bench_chunks"
make --no-print-directory BUILD="$BUILD" "$BIN" >/dev/null || exit 1
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load: $(uptime | sed 's/.*load average: //')"
"$BIN" tests/fixtures "${2:-10}" "${3:-256}" "${4:-2}" | grep -v '^RESULT'
echo "load after: $(uptime | sed 's/.*load average: //')"
