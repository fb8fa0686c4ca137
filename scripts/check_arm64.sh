#!/usr/bin/env bash
# make check-arm64: libembedcore and the C suites cross-compiled for arm64 Linux (the generic C
# kernels: no x86 set exists there) with aarch64-linux-gnu-gcc into build-arm64/, then every C
# suite run under qemu-aarch64. Prints "N passed, N failed" last; exits non-zero on a failure,
# and with 2, naming what to install, when a cross tool or an arm64 library is missing.
# JOBS (default 2) builds in parallel; SUITE_TIMEOUT bounds each suite (scripts/emulated_suites.sh).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
build="build-arm64"
libdir=/usr/lib/aarch64-linux-gnu
missing=()
command -v aarch64-linux-gnu-gcc >/dev/null || missing+=("aarch64-linux-gnu-gcc (apt-get install gcc-aarch64-linux-gnu)")
command -v qemu-aarch64 >/dev/null || missing+=("qemu-aarch64 (apt-get install qemu-user)")
[ -e /lib/ld-linux-aarch64.so.1 ] || missing+=("/lib/ld-linux-aarch64.so.1 (apt-get install libc6:arm64)")
[ -f "$libdir/pkgconfig/openblas.pc" ] || missing+=("$libdir/pkgconfig/openblas.pc (apt-get install libopenblas-dev:arm64)")
for lib in utf8proc cjson xxhash; do
    ls "$libdir/lib$lib".so* >/dev/null 2>&1 || missing+=("$libdir/lib$lib.so (apt-get install lib$lib-dev:arm64)")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "check-arm64: missing (arm64 packages need 'dpkg --add-architecture arm64' and 'apt-get update' first):" >&2
    printf '  %s\n' "${missing[@]}" >&2
    echo "'bash scripts/deps.sh arm64' installs all of them (Debian)." >&2
    exit 2
fi
# OpenBLAS's flags from the arm64 pkg-config files, not the host's.
export PKG_CONFIG_LIBDIR=$libdir/pkgconfig:/usr/share/pkgconfig
tests=()
for src in tests/c/test_*.c; do
    t=${src#tests/c/}
    tests+=("$build/tests/${t%.c}")
done
mkdir -p "$build"
echo "check-arm64: building $build/ with aarch64-linux-gnu-gcc"
if ! make --no-print-directory -j"${JOBS:-2}" BUILD="$build" CC=aarch64-linux-gnu-gcc \
    "$build/libembedcore.a" "${tests[@]}" >"$build/build.log" 2>&1; then
    grep -E 'error|Error' "$build/build.log" | head -n 30
    echo "check-arm64: the build failed (whole log: $build/build.log)"
    echo "0 passed, 1 failed"
    exit 1
fi
# shellcheck source=scripts/emulated_suites.sh
. scripts/emulated_suites.sh
# The programs run on the arm64 C library of Debian's multiarch (libc6:arm64, which the arm64
# libraries above come with): qemu-aarch64 -L / takes its loader, /lib/ld-linux-aarch64.so.1.
# With -L /usr/aarch64-linux-gnu the loader was the cross toolchain's (libc6-arm64-cross, another
# glibc build) and libc.so.6 still the multiarch one: the two share private structures, and the
# first pthread_create looped for ever in the loader's stack list (every suite starting a thread,
# and OpenBLAS's own threads, hung).
QEMU_LD_PREFIX=/ run_emulated_suites "$build" qemu-aarch64 -L /
