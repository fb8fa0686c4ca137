#!/usr/bin/env bash
# make wheel: a wheel of the Python package (bindings/python) for this platform in dist/,
# built offline with Debian's pip, setuptools and wheel; the package's build runs
# `make embed.so embed_preload.so` here (or bundles SQLITE_EMBED_SO, an absolute path).
set -euo pipefail
cd "$(dirname "$0")/.."
EMBED_DEPS=build bash scripts/deps.sh python3-pip python3-setuptools python3-wheel
echo "wheel: building the sqlite-embed wheel into dist/"
/usr/bin/python3 -m pip wheel -q --no-build-isolation --no-index --no-deps -w dist ./bindings/python
ls dist/sqlite_embed-"$(cat VERSION)"-*.whl
