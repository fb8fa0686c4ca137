#!/usr/bin/env bash
# make check-haswell: every C suite of build/ under qemu-x86_64 -cpu Haswell, a CPU with AVX2 and
# FMA and no AVX-512 (as AMD Zen 1), so that a suite or a kernel reaching for AVX-512 on such a
# CPU dies with SIGILL here; EMBED_SIMD=avx2 on an AVX-512 machine cannot show that. The suites
# run emulated: several times slower than natively. Prints "N passed, N failed" last.
# Usage: scripts/check_haswell.sh [BUILD_DIR]   (make check-haswell builds build/ first)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
build=${1:-build}
if ! command -v qemu-x86_64 >/dev/null; then
    echo "check-haswell needs qemu-x86_64 (Debian: apt-get install qemu-user, or bash scripts/deps.sh qemu-user)" >&2
    exit 2
fi
if [ "$(uname -m)" != x86_64 ]; then
    echo "check-haswell runs x86-64 builds: this machine is $(uname -m)" >&2
    exit 2
fi
# shellcheck source=scripts/emulated_suites.sh
. scripts/emulated_suites.sh
run_emulated_suites "$build" qemu-x86_64 -cpu Haswell
