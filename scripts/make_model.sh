#!/usr/bin/env bash
# make model: trains sqlite-embed's own small model from scratch (models/train/), as the shipped
# models/sqlite-embed-mini was made: Debian's English package descriptions as (summary,
# description) pairs, the training script with its fixed seeds, then the quality measurement.
# The result goes to MODEL_OUT (default build/model/sqlite-embed-mini), never over the shipped
# folder unless asked. About an hour on two cores. Needs Debian's python3-torch (installed here
# when missing) and the archive's Translation-en lists (apt-get update with English descriptions).
# Usage: scripts/make_model.sh EMBED_SO   (MODEL_OUT, MODEL_EPOCHS, MODEL_THREADS)
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
echo "model: the pairs (models/train/debian_pairs.py)"
/usr/bin/python3 models/train/debian_pairs.py "$work/pairs.jsonl"
echo "model: training (models/train/train.py; the log is $work/train.log)"
rm -f "$work/train.log"
/usr/bin/python3 models/train/train.py --pairs "$work/pairs.jsonl" --ext "$ext" \
    --vocab tests/fixtures/tokenizers/vocab/bert-base-uncased --out "$out" \
    --epochs "${MODEL_EPOCHS:-1}" --threads "${MODEL_THREADS:-2}" --log "$work/train.log"
tail -n 2 "$work/train.log"
echo "model: quality (bench/quality.py)"
/usr/bin/python3 bench/quality.py "$ext" "$out" "$work/pairs.jsonl"
