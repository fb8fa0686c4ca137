#!/usr/bin/env bash
# make check-gguf: golden folders written as GGUF by llama.cpp's converter's rules (gguf_bert.py:
# the BERT family, also bert-tiny-uncased as Q4_0, Q4_1, Q5_0, Q5_1; gguf_xlmr.py: XLM-R;
# gguf_nomic_jina.py: NomicBERT, JinaBERT v2; gguf_decoder.py: Qwen3, and Gemma3
# with and without its Dense layers) into build/gguf/, F32, F16
# and Q8_0, then read by llama.cpp itself (node-llama-cpp, bench/package.json) and compared with
# the Hugging Face references (gguf_llama_check.mjs; the rerankers' scores: gguf_llama_rank.mjs). It proves the writer whose files the GGUF
# loader is tested on. Then a probe file per block type (gguf_probe.py: Q4_0 ... Q6_K, the K types
# included) that llama.cpp embeds against our vectors on the same file: equal to float32 rounding
# when both widen the blocks alike.
# Needs npm (node-llama-cpp's prebuilt binaries, installed into bench/node_modules); not part of
# make test. Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
out=build/gguf
mkdir -p "$out"
# llama.cpp from bench/'s install when there is one, else node-llama-cpp alone (its CPU build for
# linux-x64, about 70 MB, not the CUDA and Vulkan ones) into build/npm-llama.
if [ -d bench/node_modules/node-llama-cpp ]; then
    export LLAMA_NODE_PACKAGE=bench/package.json
else
    export LLAMA_NODE_PACKAGE=build/npm-llama/package.json
    if [ ! -d build/npm-llama/node_modules/@node-llama-cpp/linux-x64 ]; then
        mkdir -p build/npm-llama && echo '{"private": true}' >"$LLAMA_NODE_PACKAGE"
        v=$(sed -n 's/.*"node-llama-cpp": "\([0-9.]*\)".*/\1/p' bench/package.json)
        (cd build/npm-llama && npm install --ignore-scripts --omit=optional --no-audit --no-fund \
            "node-llama-cpp@$v" "@node-llama-cpp/linux-x64@$v" >/dev/null) ||
            { echo "check-gguf: npm install node-llama-cpp@$v failed"; echo "0 passed, 1 failed"; exit 1; }
    fi
fi
pass=0 fail=0
for m in bert-tiny-uncased minilm-tiny-st bert-tiny-prefixed bert-tiny-f16; do
    files=()
    types="f32 f16 q8_0"
    [ "$m" = bert-tiny-uncased ] && types="$types q4_0 q4_1 q5_0 q5_1"  # rows of 32 and 64: every matrix blocks
    for t in $types; do
        /usr/bin/python3 tests/references/gguf_bert.py "tests/fixtures/models/$m" "$out/$m-$t.gguf" "$t" || { fail=$((fail + 1)); continue; }
        files+=("$out/$m-$t.gguf")
    done
    line=$(node tests/references/gguf_llama_check.mjs "tests/fixtures/models/refs/$m.json" "${files[@]}" | tee /dev/stderr | tail -n 1)
    pass=$((pass + ${line%% passed*}))
    f=${line#* passed, }
    fail=$((fail + ${f%% failed*}))
done
# XLM-R (tokenizer t5, the position table cut by pad + 1) by gguf_xlmr.py; NomicBERT and JinaBERT v2
# (arch nomic-bert, jina-bert-v2) by gguf_nomic_jina.py: F32, F16, Q8_0
for m in xlmr-tiny xlmr-tiny-st nomic-bert-tiny jina-bert-v2-tiny; do
    writer=gguf_nomic_jina.py
    case $m in xlmr-*) writer=gguf_xlmr.py ;; esac
    files=()
    for t in f32 f16 q8_0; do
        /usr/bin/python3 "tests/references/$writer" "tests/fixtures/models2/$m" "$out/$m-$t.gguf" "$t" || { fail=$((fail + 1)); continue; }
        files+=("$out/$m-$t.gguf")
    done
    line=$(node tests/references/gguf_llama_check.mjs "tests/fixtures/models2/refs/$m.json" "${files[@]}" | tee /dev/stderr | tail -n 1)
    pass=$((pass + ${line%% passed*}))
    f=${line#* passed, }
    fail=$((fail + ${f%% failed*}))
done
# JinaBERT v2 as the converters of 2024 wrote it (gated layers split in ffn_gate and ffn_up)
files=()
for t in f32 f16 q8_0; do
    /usr/bin/python3 tests/references/gguf_nomic_jina.py tests/fixtures/models2/jina-bert-v2-tiny "$out/jina-split-$t.gguf" "$t" split || { fail=$((fail + 1)); continue; }
    files+=("$out/jina-split-$t.gguf")
done
line=$(node tests/references/gguf_llama_check.mjs tests/fixtures/models2/refs/jina-bert-v2-tiny.json "${files[@]}" | tee /dev/stderr | tail -n 1)
pass=$((pass + ${line%% passed*}))
f=${line#* passed, }
fail=$((fail + ${f%% failed*}))
# rerankers: the BERT and XLM-R cross-encoders of tests/references/rerank (gguf_bert.py,
# gguf_xlmr.py), F32, F16, Q8_0, scored by llama.cpp's rank pooling (gguf_llama_rank.mjs) against
# the references gguf_rank_refs.py makes of expected.json (it needs embed.so: BERT's with type ids 0)
make -s embed.so >/dev/null || { echo "check-gguf: make embed.so failed"; fail=$((fail + 1)); }
for m in bert xlmr; do
    writer=gguf_bert.py
    [ "$m" = xlmr ] && writer=gguf_xlmr.py
    files=()
    for t in f32 f16 q8_0; do
        /usr/bin/python3 "tests/references/$writer" "tests/references/rerank/$m" "$out/$m-rank-$t.gguf" "$t" || { fail=$((fail + 1)); continue; }
        files+=("$out/$m-rank-$t.gguf")
    done
    EMBED_EXT=embed.so /usr/bin/python3 tests/references/gguf_rank_refs.py tests/references/rerank/expected.json "$m" \
        "$out/$m-rank-f32.gguf" "$out/$m-rank.json" || { fail=$((fail + 1)); continue; }
    line=$(node tests/references/gguf_llama_rank.mjs "$out/$m-rank.json" "${files[@]}" | tee /dev/stderr | tail -n 1)
    pass=$((pass + ${line%% passed*}))
    f=${line#* passed, }
    fail=$((fail + ${f%% failed*}))
done
# Qwen3 (the decoder's golden folder): F32, F16, Q8_0
files=()
for t in f32 f16 q8_0; do
    /usr/bin/python3 tests/references/gguf_decoder.py tests/fixtures/models3/qwen3-tiny-st "$out/qwen3-tiny-st-$t.gguf" "$t" || { fail=$((fail + 1)); continue; }
    files+=("$out/qwen3-tiny-st-$t.gguf")
done
line=$(node tests/references/gguf_llama_check.mjs tests/fixtures/models3/refs/qwen3-tiny.json "${files[@]}" | tee /dev/stderr | tail -n 1)
pass=$((pass + ${line%% passed*}))
f=${line#* passed, }
fail=$((fail + ${f%% failed*}))
# every block type on a probe (gguf_probe.py): llama.cpp's vectors against ours on the same file
make -s embed.so >/dev/null || { echo "check-gguf: make embed.so failed"; fail=$((fail + 1)); }
for f in $(/usr/bin/python3 tests/references/gguf_probe.py "$out"); do
    line=$(node tests/references/gguf_llama_check.mjs "${f%.gguf}.json" "$f" | tee /dev/stderr | tail -n 1)
    pass=$((pass + ${line%% passed*}))
    f=${line#* passed, }
    fail=$((fail + ${f%% failed*}))
done
# Gemma3 (EmbeddingGemma's golden folder): F32, F16, Q8_0, each without and with the Dense layers
files=()
for t in f32 f16 q8_0; do
    for d in "" dense; do
        f="$out/gemma3-tiny-st${d:+-$d}-$t.gguf"
        /usr/bin/python3 tests/references/gguf_decoder.py tests/fixtures/models3/gemma3-tiny-st "$f" "$t" $d || { fail=$((fail + 1)); continue; }
        files+=("$f")
    done
done
line=$(node tests/references/gguf_llama_check.mjs tests/fixtures/models3/refs/gemma3-tiny.json "${files[@]}" | tee /dev/stderr | tail -n 1)
pass=$((pass + ${line%% passed*}))
f=${line#* passed, }
fail=$((fail + ${f%% failed*}))
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
