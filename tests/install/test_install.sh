#!/usr/bin/env bash
# make install / make uninstall: a staged install (DESTDIR, PREFIX=/usr/local) has the right
# files and a .pc that names /usr/local; an install into a temporary PREFIX is used as a user
# would use it: `.load embed` by bare name from another folder, a C program built with
# `pkg-config --cflags --libs sqlite-embed`; uninstall removes every file.
# Usage: tests/install/test_install.sh [BUILD_DIR]. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
build=${1:-build}
. tests/install/check.sh
mk() { make --no-print-directory BUILD="$build" "$@"; }
# The public headers: all of include/sqlite-embed/ and nothing else (core/*/*.h are internal).
headers=$(cd include/sqlite-embed && ls -- *.h)
installed_files() { (cd "$1" && find . \( -type f -o -type l \) | sort); }

# 1. Staged, as a package build does it.
stage=$tmp/stage
check "make install DESTDIR PREFIX=/usr/local" mk install DESTDIR="$stage" PREFIX=/usr/local
lib=$stage/usr/local/lib
check "embed.so installed, executable" test -x "$lib/embed.so"
check "libembed.so links to embed.so (so ldconfig lists it)" test "$(readlink "$lib/libembed.so")" = embed.so
check "embed.so has SONAME embed.so" bash -c "readelf -d '$lib/embed.so' | grep -q 'Library soname: \[embed.so\]'"
check "libembedcore.a installed" test -f "$lib/libembedcore.a"
for h in $headers; do
    check "header sqlite-embed/$h" cmp "include/sqlite-embed/$h" "$stage/usr/local/include/sqlite-embed/$h"
done
check "installed headers are exactly the public ones" test "$(cd "$stage/usr/local/include/sqlite-embed" && ls)" = "$headers"
check "sqlite-embed.pc names prefix /usr/local, not DESTDIR" grep -qx 'prefix=/usr/local' "$lib/pkgconfig/sqlite-embed.pc"
check "nothing installed outside PREFIX" test -z "$(cd "$stage" && find . -mindepth 1 -maxdepth 2 ! -path ./usr ! -path ./usr/local)"
check "make uninstall DESTDIR" mk uninstall DESTDIR="$stage" PREFIX=/usr/local
check "staged uninstall leaves no file" test -z "$(installed_files "$stage")"
check "staged uninstall removes include/sqlite-embed" test ! -e "$stage/usr/local/include/sqlite-embed"
check "staged uninstall removes the emptied lib/pkgconfig" test ! -e "$stage/usr/local/lib/pkgconfig"

# 2. Into a temporary PREFIX, then used.
prefix=$tmp/prefix
check "make install PREFIX" mk install PREFIX="$prefix"
installed_files "$prefix" >"$tmp/files"
n_files=$((5 + $(echo "$headers" | wc -w))) # embed.so, embed_preload.so, libembed.so, libembedcore.a, sqlite-embed.pc
check "install wrote $n_files files" test "$(wc -l <"$tmp/files")" -eq "$n_files"
if command -v ldconfig >/dev/null || [ -x /sbin/ldconfig ]; then
    # The loader's cache that ldconfig would build for this folder lists embed.so (-X: touch no links).
    check "ldconfig lists embed.so for PREFIX/lib" bash -c "PATH=\$PATH:/sbin; ldconfig -X -C '$tmp/ld.cache' -f /dev/null '$prefix/lib' &&
        ldconfig -p -C '$tmp/ld.cache' | grep -qF 'embed.so (libc6,x86-64) => $prefix/lib/embed.so'"
fi
mkdir -p "$tmp/elsewhere"
check ".load embed by bare name from another folder" bash -c "cd '$tmp/elsewhere' &&
    out=\$(LD_LIBRARY_PATH='$prefix/lib' sqlite3 :memory: '.load embed' \"SELECT embed_json(embed_add('[1, 2, 3]', '[0.5, 0.5, 0.5]'))\") &&
    test \"\$out\" = '[1.5,2.5,3.5]'"
check "the installed embed_preload.so registers the installed embed.so in a shell without .load" bash -c "cd '$tmp/elsewhere' &&
    out=\$(env -u EMBED_EXTENSION -u EMBED_MODELS LD_PRELOAD='$prefix/lib/embed_preload.so' sqlite3 :memory: \"SELECT embed_json(embed_add('[1]', '[2]'))\") &&
    test \"\$out\" = '[3]'"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
check "pkg-config version equals embed_version()" bash -c "test \"\$(pkg-config --modversion sqlite-embed)\" = \
    \"\$(sqlite3 :memory: '.load $prefix/lib/embed' 'SELECT embed_version()')\""
check "a C program compiles against the installed headers and library" bash -c \
    "cc -std=c11 -Wall -Wextra -Werror tests/install/use_core.c -o '$tmp/use_core' \$(pkg-config --cflags --libs sqlite-embed)"
check "the C program runs and gets the expected values" "$tmp/use_core"
check "make uninstall PREFIX" mk uninstall PREFIX="$prefix"
check "uninstall leaves none of the installed files" test -z "$(installed_files "$prefix")"
check "uninstall leaves no empty include/sqlite-embed or lib/pkgconfig" test ! -e "$prefix/include/sqlite-embed" -a ! -e "$prefix/lib/pkgconfig"

finish
