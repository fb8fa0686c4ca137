#!/usr/bin/env bash
# Installs what sqlite-embed needs to build and test, when it is missing: Debian packages
# (apt-get, with sudo when not root) and sqlite-vec from npm (for the interoperability test).
# Safe to run again: it only acts on what is absent.
#
# What is installed is decided by Debian package name (dpkg-query), never by looking for a
# header: another package's header can stand in for the one the build needs (the reference
# BLAS's cblas.h once hid a missing OpenBLAS).
# EMBED_DEPS=build: only what `make` and `make demo` need. Arguments: more Debian packages
# a make target needs (make valgrind: valgrind; make check-haswell: qemu-user), or arm64: what
# make check-arm64 needs (the arm64 architecture added to dpkg, then arm64_pkgs below).
set -euo pipefail
cd "$(dirname "$0")/.."

build_pkgs=(gcc make libc6-dev pkg-config sqlite3 libsqlite3-dev libopenblas-dev
            libutf8proc-dev libcjson-dev libxxhash-dev)
# For the tests: clang's libFuzzer runtime, CA certificates (npm over HTTPS), clang-format;
# go-dqlite: dqlite-demo and the dqlite shell, for the cluster test; the Python package's test:
# a venv with Debian's setuptools and wheel (offline), apsw and tqdm; sqlite-utils for its recipe;
# g++ for better-sqlite3 (the npm package's test), which npm builds when no prebuilt binary downloads.
test_pkgs=(libclang-rt-dev ca-certificates go-dqlite clang-format python3-venv python3-setuptools python3-wheel
           python3-apsw python3-tqdm sqlite-utils g++)
# Programs the tests run, checked by the exact path or command they use (npm may come from
# Debian's npm or from a nodejs package that bundles it; either works).
test_cmds=(/usr/bin/python3:python3 clang:clang npm:npm)
# make check-arm64: the cross compiler, QEMU, and the arm64 libraries of Debian's multiarch
# (libc6:arm64's loader runs the programs under qemu-aarch64).
arm64_pkgs=(gcc-aarch64-linux-gnu qemu-user libc6:arm64 libopenblas-dev:arm64 libutf8proc-dev:arm64
            libcjson-dev:arm64 libxxhash-dev:arm64)

fail() { echo "deps: error: $*" >&2; exit 1; }

# A library can be known to dpkg once per architecture (libc6-dev:amd64 and, with a foreign
# architecture added, libc6-dev:arm64): one line each; the native (or "all") one must be
# installed, or the one a NAME:ARCH names.
native_arch=$(dpkg --print-architecture 2>/dev/null || echo none)
installed() {
    local arch=$native_arch
    case $1 in *:*) arch=${1##*:} ;; esac
    dpkg-query -W -f='${db:Status-Status} ${Architecture}\n' "$1" 2>/dev/null |
        grep -Eqx "installed ($arch|all)"
}

command -v dpkg-query >/dev/null || fail "this script installs Debian packages; on another system install: ${build_pkgs[*]} ${test_pkgs[*]} python3 clang npm"

wanted=("${build_pkgs[@]}")
foreign_arch=""
for a in "$@"; do
    if [ "$a" = arm64 ]; then foreign_arch=arm64 wanted+=("${arm64_pkgs[@]}"); else wanted+=("$a"); fi
done
[ "${EMBED_DEPS:-}" = build ] || wanted+=("${test_pkgs[@]}")
missing=()
for p in "${wanted[@]}"; do installed "$p" || missing+=("$p"); done
if [ "${EMBED_DEPS:-}" != build ]; then
    for c in "${test_cmds[@]}"; do command -v "${c%%:*}" >/dev/null || missing+=("${c##*:}"); done
fi

if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: missing Debian packages: ${missing[*]}"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || fail "not root and no sudo: install as root: apt-get install ${missing[*]}"
        sudo="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    if [ -n "$foreign_arch" ] && ! dpkg --print-foreign-architectures | grep -qx "$foreign_arch"; then
        echo "deps: dpkg --add-architecture $foreign_arch"
        $sudo dpkg --add-architecture "$foreign_arch" || fail "dpkg --add-architecture $foreign_arch failed"
    fi
    echo "deps: apt-get update (the package lists: up to a minute)"
    $sudo apt-get update -qq || fail "apt-get update failed (is the network or the package mirror reachable?)"
    echo "deps: apt-get install ${#missing[@]} packages (a minute or more the first time)"
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
    echo "deps: npm install sqlite-vec-linux-x64 into .deps/ (a few seconds)"
    mkdir -p .deps
    if ! npm install --silent --no-audit --no-fund --prefix .deps sqlite-vec-linux-x64@0.1.9 >.deps/npm.log 2>&1; then
        cat .deps/npm.log >&2
        fail "npm could not install sqlite-vec-linux-x64@0.1.9 (needed by the tests). Check that the
      npm registry is reachable and that HTTPS works (CA certificates: update-ca-certificates),
      then run 'bash scripts/deps.sh' again"
    fi
fi

# better-sqlite3 from npm, for the npm package's test: 12.x where Node is 20 or later, 11.x on
# Debian 12's Node 18 (12.x needs 20). Without a prebuilt binary (they come from GitHub) npm
# builds it from source with node-gyp and g++, once; .deps/ keeps it.
if [ "${EMBED_DEPS:-}" != build ] && [ ! -f .deps/node_modules/better-sqlite3/build/Release/better_sqlite3.node ]; then
    node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
    bs3=better-sqlite3@12
    [ "$node_major" -ge 20 ] || bs3=better-sqlite3@11
    echo "deps: npm install $bs3 into .deps/ (Node $node_major; building it from source takes a minute or two)"
    mkdir -p .deps
    if ! npm install --no-audit --no-fund --prefix .deps "$bs3" >.deps/npm-better-sqlite3.log 2>&1; then
        tail -n 30 .deps/npm-better-sqlite3.log >&2
        fail "npm could not install $bs3 (needed by the npm package's test); see .deps/npm-better-sqlite3.log.
      It needs the npm registry, and to build from source: g++, make and python3"
    fi
fi
exit 0
