#!/usr/bin/env bash
# make check-gguf: the golden BERT-family folders written as GGUF F32, F16 and Q8_0 by
# gguf_bert.py (llama.cpp's converter's rules) into build/gguf/, then read by llama.cpp itself
# (node-llama-cpp 3.21.1, bench/package.json) and compared with the Hugging Face references
# (gguf_llama_check.mjs). It proves the writer whose files the GGUF loader will be tested on.
# Needs npm (node-llama-cpp's prebuilt binaries, installed into bench/node_modules) and
# python3-numpy; not part of make test. Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ ! -d bench/node_modules/node-llama-cpp ]; then
    (cd bench && npm install --ignore-scripts --no-audit --no-fund >/dev/null) || { echo "check-gguf: npm install failed"; echo "0 passed, 1 failed"; exit 1; }
fi
/usr/bin/python3 -c 'import numpy' 2>/dev/null || apt-get install -y python3-numpy >/dev/null
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
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
