#!/usr/bin/env bash
# Static embedding models against their tokenizer and MiniLM-L6, one thread (bench_static.c), on
# the English package descriptions of this machine's /var/lib/dpkg/status, one per line.
# usage: bench/static.sh [BUILD_DIR [ROUNDS]]     (defaults build 3)
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${2:-3}
OUT=bench/out
mkdir -p "$OUT"
make --no-print-directory BUILD="$BUILD" "$BUILD/bench/bench_static" >/dev/null || exit 1
# each package's Description: its first line and the indented lines after it, joined
awk '/^Description:/ { if (d != "") print d; d = substr($0, 14); next }
     /^ / { if (d != "" && $0 != " .") { sub(/^ /, ""); d = d " " $0 }; next }
     { if (d != "") print d; d = "" }
     END { if (d != "") print d }' /var/lib/dpkg/status > "$OUT/static_texts.txt"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILD/bench/bench_static" "$OUT/static_texts.txt" "$OUT" "$ROUNDS" | grep -v '^RESULT'
