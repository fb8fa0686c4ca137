#!/usr/bin/env bash
# Builds every tests/fuzz/fuzz_*.c with clang's libFuzzer + ASan + UBSan into build-fuzz/ (or
# $FUZZ_OUT) and runs each for SECONDS (default 60; `make test` passes a few). core/*/*.c and core/*/*/*.c are compiled
# once (and again only when a source or header changes) and linked into every harness. Seed
# corpora: tests/fuzz/corpus/<harness>/ when present; fuzz_tokenizer also gets the golden texts.
# Prints "N passed, N failed" (one per harness); exit status 1 if any failed.
set -u
cd "$(dirname "$0")/../.."
SECONDS_PER=${1:-60}
CC=${FUZZ_CC:-clang}
OUT=${FUZZ_OUT:-build-fuzz}
mkdir -p "$OUT/core"
# OpenBLAS's own header and library (openblas.pc), as the Makefile takes them.
CFLAGS="-std=c11 -O1 -g -D_GNU_SOURCE -Iinclude -Icore $(pkg-config --cflags openblas) -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
LINK="-fsanitize=fuzzer,address,undefined"
LIBS="$(pkg-config --libs openblas) -lutf8proc -lcjson -lxxhash -lpthread -lm"
pass=0
fail=0

# core/*/*.c and core/*/*/*.c once, for every harness
objs=()
newest_header=$(ls -t core/*/*.h core/*/*/*.h include/sqlite-embed/*.h | head -n 1)
for src in core/*/*.c core/*/*/*.c; do
    rel=${src#core/}
    obj="$OUT/core/${rel//\//_}"
    obj="${obj%.c}.o"   # nn/gguf/bert.c and nn/arch/bert.c need distinct objects
    objs+=("$obj")
    if [ ! -e "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newest_header" -nt "$obj" ]; then
        if ! $CC $CFLAGS -c "$src" -o "$obj"; then
            echo "FAIL core: $src does not build"
            echo "0 passed, 1 failed"
            exit 1
        fi
    fi
done

for src in tests/fuzz/fuzz_*.c; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .c)
    bin="$OUT/$name"
    echo "== $name: build"
    if ! $CC $CFLAGS $LINK "$src" "${objs[@]}" -o "$bin" $LIBS; then
        echo "FAIL $name: build failed"
        fail=$((fail + 1))
        continue
    fi
    corpus="$OUT/corpus/$name"
    mkdir -p "$corpus"
    if [ -d "tests/fuzz/corpus/$name" ]; then cp -n tests/fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null; fi
    if [ "$name" = fuzz_tokenizer ] && [ ! -e "$corpus/case0000" ] && command -v python3 >/dev/null; then
        python3 - "$corpus" <<'PY'
import json, sys
out = sys.argv[1]
for i, line in enumerate(open("tests/fixtures/tokenizers/public/cases.jsonl", encoding="utf-8")):
    c = json.loads(line)
    a = c["text"].encode("utf-8", "surrogatepass")
    if "text_b" in c:
        b = c["text_b"].encode("utf-8", "surrogatepass")
        mode = 0x10 | ((len(a) * 7 // max(1, len(a) + len(b))) << 5)
        data = bytes([mode]) + a + b
    else:
        data = bytes([i & 0x0F]) + a
    open("%s/case%04d" % (out, i), "wb").write(data)
PY
    fi
    echo "== $name: run ${SECONDS_PER}s"
    if "$bin" -max_total_time="$SECONDS_PER" -timeout=20 -rss_limit_mb=2560 -max_len=8192 -artifact_prefix="$OUT/" \
        -print_final_stats=1 "$corpus" >"$OUT/$name.log" 2>&1; then
        tail -n 12 "$OUT/$name.log" | grep -E "stat::number_of_executed_runs|Done" || true
        echo "ok   $name"
        pass=$((pass + 1))
    else
        tail -n 40 "$OUT/$name.log"
        echo "FAIL $name (log: $OUT/$name.log)"
        fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
