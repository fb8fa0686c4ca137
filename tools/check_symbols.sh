#!/usr/bin/env bash
# What the built libraries export, as the design fixes it: embed.so its entry point alone,
# embed_preload.so its three sqlite3_open entry points, and libembedcore.a (linked into other
# programs) only names with the project's prefix, which cannot collide with a user's own.
# Usage: tools/check_symbols.sh BUILD_DIR EXTENSION_PATH. Prints "N passed, N failed".
set -u
build=${1:-build}
ext=${2:-./embed.so}
preload="$(dirname "$ext")/embed_preload.so"
passed=0 failed=0
check() { # name, expected, got
    if [ "$2" = "$3" ]; then passed=$((passed + 1)); echo "ok $1"
    else failed=$((failed + 1)); printf 'FAIL %s\n  expected: %s\n  got: %s\n' "$1" "$2" "$3"; fi
}
exported() { nm -D --defined-only "$1" | awk '{print $3}' | sort | tr '\n' ' ' | sed 's/ $//'; }
check "embed.so exports sqlite3_embed_init alone" "sqlite3_embed_init" "$(exported "$ext")"
check "embed_preload.so exports its sqlite3_open entry points" "sqlite3_open sqlite3_open16 sqlite3_open_v2" \
    "$(exported "$preload")"
# (an ASan build adds its own __odr_asan.* markers: not ours)
foreign=$(nm -g --defined-only "$build/libembedcore.a" | awk 'NF == 3 {print $3}' | grep -v '^emb_' |
    grep -v '^__odr_asan' | sort -u | tr '\n' ' ')
check "every external symbol of libembedcore.a starts with emb_" "" "${foreign% }"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
