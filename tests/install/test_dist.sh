#!/usr/bin/env bash
# make dist: the source archive is exactly the committed tree (git ls-tree HEAD) under
# sqlite-embed-VERSION/; the binary archive holds exactly the libraries, the public headers, the
# .pc and the licences, its embed.so is the one built and answers embed_version() = VERSION, its
# .pc (found by pkg-config wherever it is unpacked) says VERSION and builds a C program;
# SHA256SUMS checks both and holds the sums sha256sum computes here.
# Usage: tests/install/test_dist.sh [BUILD_DIR [EMBED_SO]]. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
build=${1:-build}
ext=${2:-$(if [ "$build" = build ]; then echo embed.so; else echo "$build/embed.so"; fi)}
. tests/install/check.sh
if ! git rev-parse --git-dir >/dev/null 2>&1; then  # an unpacked source archive: make dist needs git archive
    echo "skip: not a git clone, so make dist cannot run here"; echo "0 passed, 0 failed"; exit 0
fi
version=$(cat VERSION)
arch=$(uname -m)
src=sqlite-embed-$version
bin=sqlite-embed-$version-linux-$arch
dist=$tmp/dist

check "VERSION is one line x.y.z" bash -c "grep -qxE '[0-9]+\.[0-9]+\.[0-9]+' VERSION && test \$(wc -l <VERSION) -eq 1"
check "make dist" make --no-print-directory BUILD="$build" DIST_DIR="$dist" dist
check "dist/ holds the two archives and SHA256SUMS" test "$(ls "$dist")" = "$(printf '%s\n' SHA256SUMS "$bin.tar.gz" "$src.tar.gz" | LC_ALL=C sort)"
check "sha256sum -c SHA256SUMS" bash -c "cd '$dist' && sha256sum -c --strict SHA256SUMS"
check "SHA256SUMS lists both archives with their sums" bash -c "cd '$dist' &&
    test \"\$(sort -k2 SHA256SUMS)\" = \"\$(sha256sum '$bin.tar.gz' '$src.tar.gz' | sort -k2)\""

# The source archive: the committed files, nothing else, under one folder.
tar -tzf "$dist/$src.tar.gz" 2>/dev/null | grep -v '/$' | LC_ALL=C sort >"$tmp/src.list"
git ls-tree -r --name-only HEAD | sed "s|^|$src/|" | LC_ALL=C sort >"$tmp/head.list"
check "the source archive holds exactly the committed files" diff "$tmp/head.list" "$tmp/src.list"
check "the source archive's VERSION is $version" test "$(tar -xzOf "$dist/$src.tar.gz" "$src/VERSION" 2>/dev/null)" = "$version"
for f in LICENSE LICENSE-MIT LICENSE-APACHE CHANGELOG.md Makefile; do
    check "the source archive has $f" grep -qx "$src/$f" "$tmp/src.list"
done

# The binary archive: exactly these files.
{
    for f in CHANGELOG.md LICENSE LICENSE-APACHE LICENSE-MIT README.md VERSION lib/embed.so lib/embed_preload.so \
        lib/libembedcore.a lib/pkgconfig/sqlite-embed.pc; do echo "$bin/$f"; done
    for h in include/sqlite-embed/*.h; do echo "$bin/$h"; done
} | LC_ALL=C sort >"$tmp/bin.want"
tar -tzf "$dist/$bin.tar.gz" 2>/dev/null | grep -v '/$' | LC_ALL=C sort >"$tmp/bin.list"
check "the binary archive holds exactly libraries, headers, .pc and licences" diff "$tmp/bin.want" "$tmp/bin.list"
mkdir -p "$tmp/unpacked" && tar -xzf "$dist/$bin.tar.gz" -C "$tmp/unpacked"
u=$tmp/unpacked/$bin
check "its embed.so is the one built" cmp "$ext" "$u/lib/embed.so"
check "its libembedcore.a is the one built" cmp "$build/libembedcore.a" "$u/lib/libembedcore.a"
for h in include/sqlite-embed/*.h; do check "its $(basename "$h") is the repository's" cmp "$h" "$u/$h"; done
check "its embed.so answers embed_version() = $version" test "$(cd "$tmp" && sqlite3 :memory: ".load $u/lib/embed" 'SELECT embed_version()')" = "$version"
check "its licence files are the repository's" bash -c "for f in LICENSE LICENSE-MIT LICENSE-APACHE; do cmp \$f '$u/'\$f || exit 1; done"
export PKG_CONFIG_PATH=$u/lib/pkgconfig
check "pkg-config --modversion of the unpacked .pc is $version" test "$(pkg-config --modversion sqlite-embed)" = "$version"
check "the unpacked .pc points into the unpacked folder" test "$(realpath "$(pkg-config --variable=includedir sqlite-embed)")" = "$(realpath "$u/include")"
check "a C program builds against the unpacked archive" bash -c \
    "cc -std=c11 -Wall -Wextra -Werror tests/install/use_core.c -o '$tmp/use_core' \$(pkg-config --cflags --libs sqlite-embed)"
check "the C program runs and gets the expected values" "$tmp/use_core"

finish
