#!/usr/bin/env bash
# make model: trains sqlite-embed's own small model from scratch (models/train/) in two stages:
# masked-language pretraining on English text that Debian ships (models/train/corpus.json: packages
# fetched by name and version, checked by sha256, and the archive's English package descriptions),
# then in-batch negatives on (summary, description) pairs that keep the first stage's loss. Both
# stages checkpoint into build/model/ and resume where they stopped: MODEL_MINUTES bounds each
# run, so a 2-core machine trains it across several runs (hours in all); with CUDA, minutes.
# Stage 1 runs to MODEL_FIRST_STEPS (7,631: the shipped model's) and writes its weights to
# models/train/carry/mlm.safetensors (float16, committed) as it goes; a checkout without
# build/model/mlm.ckpt starts from there, so the steps outlive the build folder, and stage 2 starts
# from those weights (a checkout whose carry is already there goes straight to stage 2: an hour).
# The result goes to MODEL_OUT (default build/model/sqlite-embed-mini), never over the shipped
# folder unless asked; then its search quality and word-in-context AUC are measured.
# Needs Debian's python3-torch (installed here when missing) and the archive's Translation-en lists.
# Usage: scripts/make_model.sh EMBED_SO   (MODEL_OUT, MODEL_MINUTES, MODEL_THREADS, MODEL_FIRST_STEPS)
set -euo pipefail
cd "$(dirname "$0")/.."
ext=${1:?embed.so path}
out=${MODEL_OUT:-build/model/sqlite-embed-mini}
work=$(dirname "$out")
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "model: installing python3-torch (apt-get)"
    $sudo apt-get install -y -qq python3-torch >/dev/null
fi
if ! ls /var/lib/apt/lists/*_i18n_Translation-en* >/dev/null 2>&1; then
    echo "model: fetching the archive's English package descriptions (apt-get update)"
    $sudo apt-get -o Acquire::Languages=en update -qq
fi
mkdir -p "$work"
# Made once and kept: the archive's lists move on between runs, and a resumed stage must read the
# same text (mlm.py refuses a checkpoint made on another corpus).
if [ ! -s "$work/pairs.jsonl" ]; then
    echo "model: the pairs (models/train/debian_pairs.py)"
    /usr/bin/python3 models/train/debian_pairs.py "$work/pairs.jsonl"
fi
if [ ! -s "$work/corpus.txt" ]; then
    echo "model: the corpus (models/train/corpus.py)"
    /usr/bin/python3 models/train/corpus.py "$work/pairs.jsonl" "$work" "$work/corpus.txt"
fi
vocab=tests/fixtures/tokenizers/vocab/bert-base-uncased
common=(--ext "$ext" --vocab "$vocab" --work "$work" --threads "${MODEL_THREADS:-2}" --minutes "${MODEL_MINUTES:-0}")
stage() {  # a stage that stopped on its time budget (status 3) ends this run; the next resumes it
    local rc=0
    "$@" || rc=$?
    [ "$rc" -ne 3 ] || { echo "model: stopped on MODEL_MINUTES; run make model again to go on"; exit 0; }
    return "$rc"
}
echo "model: stage 1, masked-language pretraining (models/train/mlm.py; the log is $work/mlm.log)"
carry=models/train/carry/mlm.safetensors
stage /usr/bin/python3 models/train/mlm.py --corpus "$work/corpus.txt" "${common[@]}" \
    --carry "$carry" --steps "${MODEL_FIRST_STEPS:-7631}"
echo "model: stage 2, sentences (models/train/train.py; the log is $work/train.log)"
stage /usr/bin/python3 models/train/train.py --pairs "$work/pairs.jsonl" --init "$carry" \
    --corpus "$work/corpus.txt" --epochs 3 --lr 1e-3 --mlm-weight 1 --mlm-batch 8 --short-weight 1 \
    --out "$out" "${common[@]}"
tail -n 2 "$work/train.log"
echo "model: quality (bench/quality.py, models/train/wic.py)"
/usr/bin/python3 bench/quality.py "$ext" "$out" "$work/pairs.jsonl"
/usr/bin/python3 models/train/wic.py "$ext" "$out"
