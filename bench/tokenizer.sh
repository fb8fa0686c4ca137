#!/usr/bin/env bash
# Tokenizer benchmark: ours (build/bench/bench_tokenizer) against Hugging Face tokenizers (npm
# binding, bench/hf_tokenize.js) on the same ~10 MB corpora, one thread each; prints the ratios.
# usage: bench/tokenizer.sh [BUILD_DIR [MB]]     (defaults build 10)
# Hugging Face's package is installed on first use into bench/node_modules (untracked).
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build}
MB=${2:-10}
OUT=bench/out
mkdir -p "$OUT" "$BUILD/bench"
BIN="$BUILD/bench/bench_tokenizer"
make --no-print-directory BUILD="$BUILD" "$BIN" >/dev/null || exit 1
"$BIN" tests/fixtures "$OUT" "$MB" | tee "$OUT/ours.txt" | grep -v '^RESULT'

HF_OK=0
if command -v node >/dev/null; then
    if [ ! -d bench/node_modules/tokenizers ] && command -v npm >/dev/null; then
        (cd bench && npm install --no-audit --no-fund >/dev/null 2>&1) || true
    fi
    if [ -d bench/node_modules/tokenizers ]; then
        echo
        RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false node bench/hf_tokenize.js tests/fixtures "$OUT" \
            | tee "$OUT/hf.txt" | grep -v '^RESULT' && HF_OK=1
    fi
fi
if [ "$HF_OK" != 1 ]; then
    echo "Hugging Face baseline unavailable (node / npm package 'tokenizers' missing): ours only."
    exit 0
fi
echo
echo "ratio: ours MB/s / Hugging Face MB/s (same documents, one thread)"
/usr/bin/env python3 - "$OUT/ours.txt" "$OUT/hf.txt" <<'PY' 2>/dev/null || awk '
    FNR==NR && $1=="RESULT" { ours[$3" "$4]=$5; next }
    $1=="RESULT" { hf[$3" "$4" "$2]=$5; keys[$3" "$4]=1 }
    END { printf "%-30s %-8s %9s %9s %9s %9s %9s\n", "vocabulary", "corpus", "ours", "hf-single", "hf-batch", "x single", "x batch";
          for (k in keys) { split(k, a, " "); s=hf[k" hf-single"]; b=hf[k" hf-batch"];
            printf "%-30s %-8s %9.2f %9.2f %9.2f %9.1f %9.1f\n", a[1], a[2], ours[k], s, b, ours[k]/s, ours[k]/b } }' "$OUT/ours.txt" "$OUT/hf.txt"
import sys
ours, hf, order = {}, {}, []
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "RESULT":
        ours[(f[2], f[3])] = float(f[4]); order.append((f[2], f[3]))
for line in open(sys.argv[2]):
    f = line.split()
    if f and f[0] == "RESULT":
        hf[(f[2], f[3], f[1])] = float(f[4])
print("%-30s %-8s %9s %9s %9s %9s %9s" % ("vocabulary", "corpus", "ours", "hf-single", "hf-batch", "x single", "x batch"))
worst = None
for k in order:
    s, b = hf.get(k + ("hf-single",)), hf.get(k + ("hf-batch",))
    if s is None or b is None:
        continue
    r = min(ours[k] / s, ours[k] / b)
    worst = r if worst is None else min(worst, r)
    print("%-30s %-8s %9.2f %9.2f %9.2f %9.1f %9.1f" % (k[0], k[1], ours[k], s, b, ours[k] / s, ours[k] / b))
print("smallest ratio: %.1fx" % worst)
PY
