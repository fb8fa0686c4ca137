#!/usr/bin/env bash
# make dist: the release archives and their checksums, in ${DIST_DIR:-dist}/:
#   sqlite-embed-VERSION.tar.gz              the committed source (git archive HEAD)
#   sqlite-embed-VERSION-linux-ARCH.tar.gz   lib/embed.so, lib/embed_preload.so, lib/libembedcore.a,
#                                            lib/pkgconfig/sqlite-embed.pc, include/sqlite-embed/*.h,
#                                            the licences, README.md, CHANGELOG.md, VERSION
#   SHA256SUMS                               sha256sum's lines for both (sha256sum -c SHA256SUMS)
# The binary archive's .pc finds its folder itself (${pcfiledir}), so it works wherever it is unpacked.
# Usage: scripts/dist.sh BUILD_DIR EMBED_SO PRELOAD_SO
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1 ext=$2 preload=$3
version=$(cat VERSION)
arch=$(uname -m)
out=${DIST_DIR:-dist}
mkdir -p "$out"
src=sqlite-embed-$version
bin=sqlite-embed-$version-linux-$arch

git rev-parse --git-dir >/dev/null 2>&1 || { echo "dist: the source archive is made from git (git archive); this is no clone" >&2; exit 1; }
if [ "$(git show HEAD:VERSION 2>/dev/null)" != "$version" ]; then
    echo "dist: VERSION ($version) differs from the committed one; commit it first" >&2; exit 1
fi
if ! git diff --quiet HEAD -- . 2>/dev/null; then
    echo "dist: note: the source archive holds the committed HEAD, not the uncommitted changes"
fi
echo "dist: $out/$src.tar.gz (git archive HEAD)"
git archive --format=tar.gz --prefix="$src/" -o "$out/$src.tar.gz" HEAD

echo "dist: $out/$bin.tar.gz"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$bin
install -d "$root/lib/pkgconfig" "$root/include/sqlite-embed"
install -m 755 "$ext" "$root/lib/embed.so"
install -m 755 "$preload" "$root/lib/embed_preload.so"
install -m 644 "$build/libembedcore.a" "$root/lib/libembedcore.a"
install -m 644 include/sqlite-embed/*.h "$root/include/sqlite-embed/"
install -m 644 LICENSE LICENSE-MIT LICENSE-APACHE README.md CHANGELOG.md VERSION "$root/"
sed -e 's|^prefix=@PREFIX@|prefix=${pcfiledir}/../..|' -e "s|@VERSION@|$version|" sqlite-embed.pc.in \
    >"$root/lib/pkgconfig/sqlite-embed.pc"
# Sorted names, fixed owner and times: the same build gives the same archive.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$(git log -1 --format=%ct)" \
    -C "$stage" -cf - "$bin" | gzip -n >"$out/$bin.tar.gz"

(cd "$out" && sha256sum "$src.tar.gz" "$bin.tar.gz" >SHA256SUMS)
echo "dist: $out/SHA256SUMS"
