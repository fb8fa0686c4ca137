#!/usr/bin/env bash
# Our decoder embedders (bench_decoder: Qwen3-Embedding-0.6B's and EmbeddingGemma-300m's shapes,
# random weights) against llama.cpp (node-llama-cpp 3.21.1's prebuilt CPU build) on GGUF files
# of the same weights (bench/peers/gguf_write.py, llama.cpp's converter's names and metadata):
# ours float32 against F32, bf16 against F16, int8 against Q8_0, on 1 x 16, 1 x 128 and 32 x 128
# tokens, 1 and 2 threads. Each engine runs in a process of its own, ours first in odd rounds
# and llama.cpp first in even ones, one-thread runs pinned to one CPU (one_cpu.sh); llama.cpp's
# vectors are checked against ours before it is timed. Ends with a table of ours / llama.cpp per
# cell (each round's ratio, then their mean).
# Usage: bench/decoder_peers.sh BUILD_DIR [--rounds N]
# Environment: MODELS (default qwen3,gemma3), THREADS (default "1 2"), PEERS_DIR (models, GGUF
# files and results; default a temporary folder, removed at the end unless PEERS_KEEP=1; the
# models already there are reused). Installs node-llama-cpp into bench/node_modules (npm,
# --ignore-scripts) and needs Debian's python3-numpy for the GGUF writer; tests depend on none
# of this.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
rounds=2
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift ;;
        *) echo "decoder_peers.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
bin="$build/bench/bench_decoder"
[ -x "$bin" ] || { echo "decoder_peers.sh: $bin not built (make BUILD=$build $bin)" >&2; exit 1; }
models=${MODELS:-qwen3,gemma3}
threads=${THREADS:-1 2}
[ "${KEEP_OPENBLAS_ENV:-0}" = 1 ] || unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
if [ ! -d bench/node_modules/node-llama-cpp ]; then
    echo "### installing node-llama-cpp (npm, --ignore-scripts)"
    (cd bench && npm install --ignore-scripts --no-audit --no-fund >/dev/null)
fi
/usr/bin/python3 -c 'import numpy' 2>/dev/null || apt-get install -y python3-numpy >/dev/null
dir=${PEERS_DIR:-$(mktemp -d /tmp/decoder_peers_XXXXXX)}
[ -n "${PEERS_DIR:-}" ] || [ "${PEERS_KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT
. bench/peers/one_cpu.sh
res="$dir/results.txt"
: >"$res"
echo "### $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) ($(nproc) CPUs); one-thread runs on CPU $one_cpu"
for m in ${models//,/ }; do
    [ -f "$dir/$m/check.f32" ] || "$bin" --write "$dir" --model "$m"
    for t in f32 f16 q8_0; do
        [ -f "$dir/$m/$t.gguf" ] || /usr/bin/python3 bench/peers/gguf_write.py "$dir/$m" "$dir/$m/$t.gguf" "$t"
    done
done
ours() {
    on "$2" "$bin" --dir "$dir" --model "$1" --threads "$2" --weights f32,bf16,int8 --results "$res"
}
them() {
    for t in f32 f16 q8_0; do
        on "$2" node bench/peers/llama_decoder.mjs "$dir" "$1" "$t" --threads "$2" --results "$res"
    done
}
for r in $(seq 1 "$rounds"); do
    for m in ${models//,/ }; do
        for th in $threads; do
            echo "### round $r, $m, $th thread(s): $(uptime)"
            if [ $((r % 2)) = 1 ]; then ours "$m" "$th"; them "$m" "$th"; else them "$m" "$th"; ours "$m" "$th"; fi
        done
    done
done
echo "### ours / llama.cpp, tokens/s (each round, then the mean); $(uptime)"
awk '{ k = $2 " " $3 " " $4; v[$1 " " k] = v[$1 " " k] " " $5; keys[k] = 1 }
    END {
        split("ours:llama_f32 ours_bf16:llama_f16 ours_int8:llama_q8_0", pairs, " ")
        printf "%-8s %-8s %-8s %-22s %-28s %s\n", "model", "threads", "workload", "pair", "ours (each round)", "ratios, mean"
        for (k in keys) for (p = 1; p <= 3; p++) {
            split(pairs[p], ab, ":"); na = split(v[ab[1] " " k], a, " "); nb = split(v[ab[2] " " k], b, " ")
            if (!na || !nb) continue
            s = ""; tot = 0; n = na < nb ? na : nb
            for (i = 1; i <= n; i++) { s = s sprintf(" %.2f", a[i] / b[i]); tot += a[i] / b[i] }
            split(k, kk, " ")
            printf "%-8s %-8s %-8s %-22s %-28s%s  mean %.2f\n", kk[1], kk[2], kk[3], ab[1] "/" ab[2], v[ab[1] " " k], s, tot / n
        }
    }' "$res" | sort
