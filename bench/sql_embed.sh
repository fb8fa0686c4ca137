#!/usr/bin/env bash
# embed() from SQL on short single sentences, one call per row (see bench/bench_sql_embed.c):
# tokens/s and the ratio to the encoder alone on the same tokens, once with OpenBLAS configured
# as the environment is, once with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset; then with int8
# weights, whose faster forward pass leaves the fixed costs a larger share.
# Usage: bench/sql_embed.sh [BUILD_DIR [ROWS [REPS]]]   (defaults build, 300, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
so=$([ "$build" = build ] && echo ./embed.so || echo "$build/embed.so")
make --no-print-directory BUILD="$build" "$so" "$build/bench/bench_sql_embed" >/dev/null
echo "### SQL embed() benchmark, OpenBLAS as the environment sets it"
"$build/bench/bench_sql_embed" "$so" "$@"
echo
echo "### SQL embed() benchmark, OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (OpenBLAS picks its kernels)"
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$build/bench/bench_sql_embed" "$so" "$@"
echo
echo "### SQL embed() benchmark, int8 weights"
"$build/bench/bench_sql_embed" "$so" "${1:-300}" "${2:-3}" int8
