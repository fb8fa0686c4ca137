#!/usr/bin/env bash
# Search quality of the shipped model (or MODEL=folder) on Debian's package descriptions:
# bench/quality.py's tasks (held-out summaries to their descriptions, natural queries) for FTS5
# bm25 alone, the model alone, embed_hybrid, with float32 and int8 weights. Makes the pairs with
# models/train/debian_pairs.py (the archive's English descriptions: apt-get update when missing).
# Usage: bench/quality.sh [BUILD_DIR]    (about 10 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
model=${MODEL:-models/sqlite-embed-mini}
[ -f "$build/embed.so" ] || make --no-print-directory BUILD="$build" "$build/embed.so" >/dev/null
if ! ls /var/lib/apt/lists/*_i18n_Translation-en* >/dev/null 2>&1; then
    echo "quality: fetching the archive's English package descriptions (apt-get update)"
    apt-get -o Acquire::Languages=en update -qq
fi
mkdir -p "$build/quality"
/usr/bin/python3 models/train/debian_pairs.py "$build/quality/pairs.jsonl"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load: $(uptime | sed 's/.*load average: //')"
/usr/bin/python3 bench/quality.py "$build/embed.so" "$model" "$build/quality/pairs.jsonl" --int8 \
    --json "$build/quality/quality.json"
echo "load after: $(uptime | sed 's/.*load average: //')"
