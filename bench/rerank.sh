#!/usr/bin/env bash
# Cross-encoder reranking: embed_rerank's C entry (emb_model_rerank over 50 candidates, one call)
# against the encoder alone on the same pairs' tokens (bench_rerank, alternating passes), and
# against ONNX Runtime (onnxruntime-node, float32) on the same cross-encoder graph
# (bench/peers/rerank_onnx.py from the same weights; its logits checked against ours), in
# alternating rounds (ours first in odd rounds, ONNX Runtime first in even ones), with `uptime`
# before each. One-thread runs are pinned (taskset) to ONE_CPU (default the last CPU).
# Usage: bench/rerank.sh BUILD_DIR [--rounds N]     (make BUILD=BUILD_DIR BUILD_DIR/bench/bench_rerank first)
# Installs what it needs: python3-torch (apt-get), onnxruntime-node (npm, --ignore-scripts).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=2
[ "${2:-}" = --rounds ] && rounds=$3
bin="$build/bench/bench_rerank"
[ -x "$bin" ] || { echo "rerank.sh: $bin not built (make BUILD=$build $bin)" >&2; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || apt-get install -y python3-torch >/dev/null
[ -d bench/node_modules/onnxruntime-node ] ||
    (cd bench && npm install --ignore-scripts --no-audit --no-fund >/dev/null)
dir=$(mktemp -d /tmp/bench_rerank_XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$bin" --write "$dir"
/usr/bin/python3 bench/peers/rerank_onnx.py "$dir/minilm-ce" >/dev/null
cpu=${ONE_CPU:-$(($(nproc) - 1))}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) vCPUs"
for r in $(seq 1 "$rounds"); do
    for th in 1 2; do
        pin=()
        [ "$th" = 1 ] && pin=(taskset -c "$cpu")
        ours=("${pin[@]}" "$bin" --dir "$dir" --threads "$th" --rounds 1)
        ort=("${pin[@]}" node bench/peers/ort_rerank.js "$dir/minilm-ce" --threads "$th")
        echo "### round $r, $th thread(s): $(uptime | sed 's/.*load/load/')"
        if [ $((r % 2)) = 1 ]; then "${ours[@]}" | tail -1; "${ort[@]}"; else "${ort[@]}"; "${ours[@]}" | tail -1; fi
    done
done
