#!/usr/bin/env bash
# Installs what sqlite-embed needs to build and test, when it is missing:
# Debian packages (apt-get, with sudo when not root) and sqlite-vec from npm (for the
# interoperability test). Safe to run again: it only acts on what is absent.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/include/x86_64-linux-gnu/$1" ] || [ -e "/usr/include/aarch64-linux-gnu/$1" ]; }
have_header sqlite3ext.h     || need_pkgs+=(libsqlite3-dev)
have_header cblas.h          || need_pkgs+=(libopenblas-dev)
have_header utf8proc.h       || need_pkgs+=(libutf8proc-dev)
have_header cjson/cJSON.h    || need_pkgs+=(libcjson-dev)
have_header xxhash.h         || need_pkgs+=(libxxhash-dev)
command -v sqlite3 >/dev/null || need_pkgs+=(sqlite3)
command -v cc >/dev/null      || need_pkgs+=(gcc)
command -v make >/dev/null    || need_pkgs+=(make)
command -v pkg-config >/dev/null || need_pkgs+=(pkg-config)
if [ "${EMBED_DEPS:-}" != "build" ]; then
    # For the tests: a Python that can load extensions, clang's libFuzzer, npm for sqlite-vec.
    [ -x /usr/bin/python3 ] || need_pkgs+=(python3)
    command -v clang >/dev/null || need_pkgs+=(clang)
    ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 \
        || [ "$(uname -m)" != x86_64 ] || need_pkgs+=(libclang-rt-dev)
    command -v npm >/dev/null || need_pkgs+=(npm)
fi

if [ ${#need_pkgs[@]} -gt 0 ]; then
    echo "deps: installing ${need_pkgs[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

# sqlite-vec's prebuilt loadable extension, for the test that loads both extensions.
if [ "${EMBED_DEPS:-}" != "build" ] && [ "$(uname -m)" = x86_64 ] && [ ! -f .deps/node_modules/sqlite-vec-linux-x64/vec0.so ]; then
    echo "deps: installing sqlite-vec-linux-x64 from npm into .deps/"
    mkdir -p .deps
    npm install --silent --no-audit --no-fund --prefix .deps sqlite-vec-linux-x64@0.1.9 >/dev/null 2>&1 \
        || echo "deps: warning: could not install sqlite-vec from npm; its interoperability tests will fail"
fi
exit 0
