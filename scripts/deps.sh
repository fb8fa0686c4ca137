#!/usr/bin/env bash
# Installs what sqlite-embed needs to build and test, when it is missing: Debian packages
# (apt-get, with sudo when not root) and sqlite-vec from npm (for the interoperability test).
# Safe to run again: it only acts on what is absent.
#
# What is installed is decided by Debian package name (dpkg-query), never by looking for a
# header: another package's header can stand in for the one the build needs (the reference
# BLAS's cblas.h once hid a missing OpenBLAS).
# EMBED_DEPS=build: only what `make` and `make demo` need. Arguments: more Debian packages
# a make target needs (make valgrind: valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."

build_pkgs=(gcc make libc6-dev pkg-config sqlite3 libsqlite3-dev libopenblas-dev
            libutf8proc-dev libcjson-dev libxxhash-dev)
# For the tests: clang's libFuzzer runtime, CA certificates (npm over HTTPS), clang-format;
# go-dqlite: dqlite-demo and the dqlite shell, for the cluster test.
test_pkgs=(libclang-rt-dev ca-certificates go-dqlite clang-format)
# Programs the tests run, checked by the exact path or command they use (npm may come from
# Debian's npm or from a nodejs package that bundles it; either works).
test_cmds=(/usr/bin/python3:python3 clang:clang npm:npm)

fail() { echo "deps: error: $*" >&2; exit 1; }

installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; }

command -v dpkg-query >/dev/null || fail "this script installs Debian packages; on another system install: ${build_pkgs[*]} ${test_pkgs[*]} python3 clang npm"

wanted=("${build_pkgs[@]}" "$@")
[ "${EMBED_DEPS:-}" = build ] || wanted+=("${test_pkgs[@]}")
missing=()
for p in "${wanted[@]}"; do installed "$p" || missing+=("$p"); done
if [ "${EMBED_DEPS:-}" != build ]; then
    for c in "${test_cmds[@]}"; do command -v "${c%%:*}" >/dev/null || missing+=("${c##*:}"); done
fi

if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || fail "not root and no sudo: install as root: apt-get install ${missing[*]}"
        sudo="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq || fail "apt-get update failed (is the network or the package mirror reachable?)"
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || fail "apt-get install ${missing[*]} failed; run it by hand to see why"
    for p in "${missing[@]}"; do installed "$p" || fail "package $p is still not installed"; done
fi

# The build takes OpenBLAS's own header and library from OpenBLAS's pkg-config file
# (openblas.pc), never a cblas.h that another BLAS provides: check exactly that.
pkg-config --exists openblas || fail "libopenblas-dev is installed but pkg-config finds no openblas.pc; reinstall libopenblas-dev"
ob_inc=$(pkg-config --variable=includedir openblas)
[ -f "$ob_inc/openblas_config.h" ] || fail "OpenBLAS's header $ob_inc/openblas_config.h is missing; reinstall libopenblas-dev"

# sqlite-vec's prebuilt loadable extension, for the tests that load both extensions.
if [ "${EMBED_DEPS:-}" != build ] && [ "$(uname -m)" = x86_64 ] && [ ! -f .deps/node_modules/sqlite-vec-linux-x64/vec0.so ]; then
    echo "deps: installing sqlite-vec-linux-x64 from npm into .deps/"
    mkdir -p .deps
    if ! npm install --silent --no-audit --no-fund --prefix .deps sqlite-vec-linux-x64@0.1.9 >.deps/npm.log 2>&1; then
        cat .deps/npm.log >&2
        fail "npm could not install sqlite-vec-linux-x64@0.1.9 (needed by the tests). Check that the
      npm registry is reachable and that HTTPS works (CA certificates: update-ca-certificates),
      then run 'bash scripts/deps.sh' again"
    fi
fi
exit 0
