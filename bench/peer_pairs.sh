#!/usr/bin/env bash
# One cell of bench/encoder_peers.sh settled by short pairs: ours and one peer, each in a process of
# its own, PAIRS times, ours first in odd pairs and second in even ones, one-thread runs pinned to
# one CPU (ONE_CPU, as in encoder_peers.sh); prints each pair's tokens/s and ratio, then the median
# ratio and its quartiles. The shared machine's rate moves with other tenants over minutes: a pair
# takes seconds, so both of its sides meet the same load, where a whole encoder_peers.sh run takes
# 20 minutes and its rounds of one cell have differed by 1.5x.
# Usage: bench/peer_pairs.sh BUILD_DIR PEERS_DIR MODEL WORKLOAD THREADS PAIRS [ort|torch_int8|torch_fp32]
#   PEERS_DIR  a folder that encoder_peers.sh kept (PEERS_KEEP=1 PEERS_DIR=...): models, workloads,
#              model.onnx
#   WORKLOAD   1x16, 1x128, 32x128 or sentences
#   peer       ort (default): ours float32 against ONNX Runtime; torch_int8: ours int8 against
#              PyTorch's dynamic int8; torch_fp32: ours float32 against PyTorch float32
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: bench/peer_pairs.sh BUILD_DIR PEERS_DIR MODEL WORKLOAD THREADS PAIRS [ort|torch_int8|torch_fp32]"
[ $# -ge 6 ] || { echo "$usage" >&2; exit 2; }
build=$1 dir=$2 model=$3 work=$4 th=$5 pairs=$6 peer=${7:-ort}
bin="$build/bench/bench_encoder"
[ -x "$bin" ] || { echo "peer_pairs.sh: $bin not built" >&2; exit 1; }
[ -f "$dir/$model/workloads.txt" ] || { echo "peer_pairs.sh: no $dir/$model/workloads.txt (run encoder_peers.sh with PEERS_KEEP=1 first)" >&2; exit 1; }
case $peer in
    ort) weights=f32 ours_impl=ours ;;
    torch_fp32) weights=f32 ours_impl=ours ;;
    torch_int8) weights=int8 ours_impl=ours_int8 ;;
    *) echo "$usage" >&2; exit 2 ;;
esac
[ "${KEEP_OPENBLAS_ENV:-0}" = 1 ] || unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
. bench/peers/one_cpu.sh # cpus, one_cpu, on TH CMD...
res=$(mktemp /tmp/peer_pairs_XXXXXX)
trap 'rm -f "$res"' EXIT
# each appends "IMPL MODEL THREADS WORKLOAD TOKENS_PER_S" to $res; its own output is dropped
ours() {
    on "$th" "$bin" --dir "$dir" --model "$model" --threads "$th" --weights "$weights" --workload "$work" --no-sgemm \
        --results "$res" >/dev/null 2>&1 || { echo "peer_pairs.sh: bench_encoder failed" >&2; exit 1; }
}
them() {
    if [ "$peer" = ort ]; then
        on "$th" node bench/peers/ort_encoder.js "$dir" "$model" --threads "$th" --workload "$work" --results "$res" >/dev/null
    else
        on "$th" /usr/bin/python3 bench/peers/torch_encoder.py "$dir" "$model" --bench --threads "$th" --workload "$work" \
            --impl "$peer" --results "$res" >/dev/null 2>&1
    fi || { echo "peer_pairs.sh: $peer failed" >&2; exit 1; }
}
last() { awk -v i="$1" '$1 == i { v = $5 } END { print v }' "$res"; }
echo "### $model $work, $th thread(s)$([ "$th" = 1 ] && [ "$one_cpu" != none ] && echo " on CPU $one_cpu"), $ours_impl against $peer, $pairs pairs; $(uptime)"
ratios=()
for p in $(seq 1 "$pairs"); do
    if [ $((p % 2)) = 1 ]; then ours; them; else them; ours; fi
    a=$(last "$ours_impl") b=$(last "$peer")
    r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')
    ratios+=("$r")
    echo "pair $p: ours $a, $peer $b tokens/s: $r (load $(cut -d' ' -f1 /proc/loadavg))"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk -v n="$pairs" '{ v[NR] = $1 }
    function q(f,  x, i) { x = 1 + f * (n - 1); i = int(x); return v[i] + (x - i) * (v[i + 1 < n ? i + 1 : n] - v[i]) }
    END { printf "median ratio %.3f (quartiles %.3f-%.3f, lowest %.3f, highest %.3f)\n", q(0.5), q(0.25), q(0.75), v[1], v[n] }'
