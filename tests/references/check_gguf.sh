#!/usr/bin/env bash
# make check-gguf: the golden BERT-family folders, Qwen3's and Gemma3's (with and without its Dense layers) written as GGUF F32, F16 and Q8_0 by
# gguf_bert.py and gguf_decoder.py (llama.cpp's converter's rules) into build/gguf/, then read by llama.cpp itself
# (node-llama-cpp 3.21.1, bench/package.json) and compared with the Hugging Face references
# (gguf_llama_check.mjs). It proves the writer whose files the GGUF loader will be tested on.
# Needs npm (node-llama-cpp's prebuilt binaries, installed into bench/node_modules); not part of
# make test. Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ ! -d bench/node_modules/node-llama-cpp ]; then
    (cd bench && npm install --ignore-scripts --no-audit --no-fund >/dev/null) || { echo "check-gguf: npm install failed"; echo "0 passed, 1 failed"; exit 1; }
fi
out=build/gguf
mkdir -p "$out"
pass=0 fail=0
for m in bert-tiny-uncased minilm-tiny-st bert-tiny-prefixed bert-tiny-f16; do
    files=()
    for t in f32 f16 q8_0; do
        /usr/bin/python3 tests/references/gguf_bert.py "tests/fixtures/models/$m" "$out/$m-$t.gguf" "$t" || { fail=$((fail + 1)); continue; }
        files+=("$out/$m-$t.gguf")
    done
    line=$(node tests/references/gguf_llama_check.mjs "tests/fixtures/models/refs/$m.json" "${files[@]}" | tee /dev/stderr | tail -n 1)
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
