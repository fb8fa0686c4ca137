#!/usr/bin/env bash
# Encoder benchmark (see bench/bench_encoder.c; float32 and int8 weights side by side unless
# --weights says otherwise): once with OpenBLAS configured as the
# environment is (tests and CI force OPENBLAS_CORETYPE=Haswell), once with
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, as on users' machines; first, one core's peak
# (bench_peak).
# Usage: bench/encoder.sh BUILD_DIR [bench_encoder options, e.g. --quick --model minilm]
set -euo pipefail
build=${1:-build}
shift || true
bin="$build/bench/bench_encoder"
[ -x "$bin" ] || { echo "encoder.sh: $bin not built (make bench)" >&2; exit 1; }
peak="$build/bench/bench_peak"
if [ -x "$peak" ]; then echo "### one core's arithmetic peak (the ceiling for the GFLOP/s below)"; "$peak"; echo; fi
echo "### encoder benchmark, OpenBLAS as the environment sets it"
"$bin" "$@"
echo
echo "### encoder benchmark, OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (OpenBLAS picks its kernels)"
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$bin" "$@"
