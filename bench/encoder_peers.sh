#!/usr/bin/env bash
# Our encoder, float32 and int8 weights (the same folder loaded twice, run in alternating passes),
# against ONNX Runtime (onnxruntime-node, float32), PyTorch float32 and PyTorch dynamic int8
# (quantize_dynamic), all measured in this run on the same random-weight checkpoints, token ids,
# thread counts (1 and 2) and timing rule, in alternating rounds (ours first in odd rounds, the
# peers first in even ones), with `uptime` before each and load averages at each round's start
# and end; then tables of ours / peer per workload and thread count (mean of the rounds and each
# round's figure), of our share of the same-run sgemm rate, and of issue 13's targets: ours f32 /
# ONNX Runtime, ours int8 / ours f32, ours int8 / PyTorch int8.
# Usage: bench/encoder_peers.sh BUILD_DIR [--quick] [--rounds N]
# Environment: MODELS (ours, default minilm,base,nomic,modernbert), ORT_MODELS (default the same),
# TORCH_MODELS (default minilm,base), PEERS_DIR (models and results; default a temporary folder,
# removed at the end unless PEERS_KEEP=1).
# OpenBLAS picks its own kernels here (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, as on users'
# machines; the environment's Haswell setting is for reproducible tests, and would hold our float32
# and Debian's PyTorch, which also calls OpenBLAS, to AVX2 while ONNX Runtime's own kernels use
# AVX-512); KEEP_OPENBLAS_ENV=1 keeps the environment's. SENTENCES=N overrides the sentence count;
# WEIGHTS (default f32,int8) is bench_encoder's --weights.
# One-thread runs of every engine are pinned (taskset) to one CPU, ONE_CPU (default the last one
# this process may use; ONE_CPU=none: not pinned): the two vCPUs of the shared machines seen here
# differ by up to a third at a time (another tenant on a core's sibling), and a process lands on
# either, so unpinned one-thread ratios mixed the two. Each round measures one thread then two,
# each with every engine in turn, and records both CPUs' FMA and VNNI peaks (bench_peak) at its
# start.
# Installs what it needs: Debian's python3-torch (apt-get) and npm onnxruntime-node into
# bench/node_modules (bench/package.json, --ignore-scripts). Tests do not depend on any of this.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
quick=""
rounds=2
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=--quick ;;
        --rounds) rounds=$2; shift ;;
        *) echo "encoder_peers.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
bin="$build/bench/bench_encoder"
[ -x "$bin" ] || { echo "encoder_peers.sh: $bin not built (make BUILD=$build $bin)" >&2; exit 1; }
models=${MODELS:-minilm,base,nomic,modernbert}
ort_models=${ORT_MODELS:-$models}
torch_models=${TORCH_MODELS:-minilm,base}
[ "${KEEP_OPENBLAS_ENV:-0}" = 1 ] || unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
sent=()
[ -z "${SENTENCES:-}" ] || sent=(--sentences "$SENTENCES")
py=/usr/bin/python3 # Debian's, where python3-torch installs
if ! "$py" -c 'import torch' 2>/dev/null; then
    echo "### installing python3-torch (apt-get)"
    apt-get install -y python3-torch >/dev/null
fi
if [ ! -d bench/node_modules/onnxruntime-node ]; then
    echo "### installing onnxruntime-node (npm, --ignore-scripts)"
    (cd bench && npm install --ignore-scripts --no-audit --no-fund >/dev/null)
fi
dir=${PEERS_DIR:-$(mktemp -d /tmp/encoder_peers_XXXXXX)}
[ -n "${PEERS_DIR:-}" ] || [ "${PEERS_KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT
all=$(echo "$models,$ort_models,$torch_models" | tr , '\n' | sort -u | paste -sd,)
echo "### writing the models ($all), workloads and our check outputs into $dir"
"$bin" --write "$dir" --model "$all" $quick "${sent[@]}"
for m in $(echo "$ort_models,$torch_models" | tr , '\n' | sort -u); do
    "$py" bench/peers/torch_encoder.py "$dir" "$m" $( [[ ",$ort_models," == *",$m,"* ]] && echo --export )
done
. bench/peers/one_cpu.sh # cpus, one_cpu, on TH CMD...
ours() { on "$2" "$bin" --dir "$dir" --model "$models" --threads "$2" --weights "${WEIGHTS:-f32,int8}" --results "$dir/results.$1" $quick "${sent[@]}"; }
# a peer that fails is reported and left out of the tables; the other measurements go on
peers() {
    for m in ${ort_models//,/ }; do
        on "$2" node bench/peers/ort_encoder.js "$dir" "$m" --threads "$2" --results "$dir/results.$1" $quick ||
            echo "### ONNX Runtime on $m failed"
    done
    for m in ${torch_models//,/ }; do
        on "$2" "$py" bench/peers/torch_encoder.py "$dir" "$m" --bench --threads "$2" --results "$dir/results.$1" $quick ||
            echo "### PyTorch on $m failed"
    done
}
# "peak CPU FMA_GFLOPS VNNI_GOPS" for each CPU (bench_peak pinned there)
peaks() {
    [ -x "$build/bench/bench_peak" ] || return 0
    for c in $cpus; do
        echo "peak $c $(taskset -c "$c" "$build/bench/bench_peak" |
            awk '$2 == "peak_fma_gflops" { f = $3 } $2 == "peak_vnni_gops" { v = $3 } END { print f + 0, v + 0 }')"
    done
}
# the CPU kind the figures belong to (bench/README.md keeps a table per kind)
awk -F': *' '/^model name/ && !n { n = $2 } /^cpu family/ && !f { f = $2 } /^model[ \t]*:/ && !m { m = $2 }
    /^flags/ && !fl { fl = $2 } END {
        k = split("avx2 fma avx512f avx512_vnni avx512_bf16 avx512_fp16 amx_bf16 amx_int8", want, " ")
        for (i = 1; i <= k; i++) if ((" " fl " ") ~ (" " want[i] " ")) has = has " " want[i]
        printf "### CPU: %s (family %s, model %s), %d CPUs; flags:%s\n", n, f, m, NCPU, has }' \
    NCPU="$(nproc)" /proc/cpuinfo
echo "### one-thread runs on CPU $one_cpu"
for r in $(seq 1 "$rounds"); do
    echo; echo "### round $r: $(uptime)"
    rm -f "$dir/results.$r"
    echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >"$dir/results.$r"
    peaks | tee -a "$dir/results.$r"
    for th in 1 2; do
        if [ $((r % 2)) = 1 ]; then ours "$r" "$th"; peers "$r" "$th"; else peers "$r" "$th"; ours "$r" "$th"; fi
    done
    echo "load_end $(cut -d' ' -f1-3 /proc/loadavg)" >>"$dir/results.$r"
done
echo; echo "### after the rounds: $(uptime)"
"$py" bench/peers/summarize.py "$dir"/results.*
