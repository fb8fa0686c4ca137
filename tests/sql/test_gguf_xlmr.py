"""XLM-R GGUF files (multilingual E5, BGE-M3 and the like as llama.cpp's converter writes
XLMRobertaModel: arch "bert", the position table without its first pad + 1 rows, the Unigram
tokenizer as tokenizer.ggml.model "t5" with scores, types and the precompiled charsmap), written
from the golden XLM-R folders by tests/references/gguf_xlmr.py (`make check-gguf` has llama.cpp
read the same files and agree with Hugging Face) and read back by embed_load: token ids equal to
Hugging Face's on every golden case, sentence vectors (the pooled mean, unit vectors) within
1e-5 (F32), 1e-3 (F16) and 1e-2 (Q8_0) of Hugging Face's."""
import json
import math
import os
import shutil
import sys
import tempfile

import struct

from harness import test, connect, one, floats, assert_error, FIXTURES

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "references"))
import gguf_xlmr  # noqa: E402
from gguf_layout import ARR, F32, I32, STR, kv, write_file  # noqa: E402

TMP = tempfile.mkdtemp(prefix="embed-gguf-xlmr-")
MODELS = ("xlmr-tiny", "xlmr-tiny-st")
BOUND = {"f32": 1e-5, "f16": 1e-3, "q8_0": 1e-2}
con = connect()
for _m in MODELS:
    for _t in BOUND:
        _path = os.path.join(TMP, "%s-%s.gguf" % (_m, _t))
        gguf_xlmr.write(os.path.join(FIXTURES, "models2", _m), _path, _t)
        one(con, "SELECT embed_load(?, ?)", "gguf-x-%s-%s" % (_m, _t), _path)


def refs(m):
    with open(os.path.join(FIXTURES, "models2", "refs", m + ".json"), encoding="utf-8") as f:
        r = json.load(f)
    cases = [r["cases"][i] for i in r["case_ids"]]
    return [c for c in cases if c["kind"] == "single" and not c["truncated"]]


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


@test
def xlmr_gguf_files_load_as_bert_with_the_files_type():
    for m in MODELS:
        for t in BOUND:
            row = con.execute("SELECT architecture, pooling, weight_type FROM embed_models WHERE name = ?",
                              ("gguf-x-%s-%s" % (m, t),)).fetchone()
            assert row == ("bert", "mean", t.upper()), (m, t, row)


@test
def xlmr_token_ids_equal_hugging_faces():
    for m in MODELS:
        cases = refs(m)
        assert len(cases) >= 20, len(cases)
        for c in cases:
            ids = json.loads(one(con, "SELECT embed_token_ids(?, ?)", "gguf-x-%s-f32" % m, c["text"]))
            assert ids == c["input_ids"], (m, c["text"][:40], ids[:10], c["input_ids"][:10])


@test
def xlmr_sentence_vectors_equal_hugging_faces_within_the_types_bound():
    for m in MODELS:
        for t, bound in BOUND.items():
            worst = 0.0
            for c in refs(m):
                got = unit(floats(one(con, "SELECT embed(?, ?)", "gguf-x-%s-%s" % (m, t), c["text"])))
                worst = max(worst, max(abs(a - b) for a, b in zip(got, unit(c["pooled_mean"]))))
            assert worst <= bound, (m, t, worst)


@test
def a_damaged_unigram_vocabulary_is_refused_by_name():
    good = gguf_xlmr.t5_vocab(os.path.join(FIXTURES, "models2", "xlmr-tiny"))[0]
    n = 8002
    for label, change, want in (
            ("nan", ("tokenizer.ggml.scores", ARR, (F32, [0.0] * 5 + [float("nan")] + [0.0] * (n - 6))),
             "token 5's score is not finite"),
            ("short", ("tokenizer.ggml.scores", ARR, (F32, [0.0] * 7)), "tokenizer.ggml.scores or token_type"),
            ("charsmap", ("tokenizer.ggml.precompiled_charsmap", ARR, (I32, [1, 2, 3])), "not a list of bytes")):
        key = change[0]
        kvs = [kv(key, *change[1:]) if k.startswith(struct.pack("<Q", len(key)) + key.encode()) else k for k in good]
        path = os.path.join(TMP, "bad-%s.gguf" % label)
        write_file(path, [kv("general.architecture", STR, "bert")] + kvs, [])
        assert_error(con, "SELECT embed_load('bad-t5', ?)", "bad-%s.gguf" % label, want, args=(path,))


@test
def cleanup():
    for m in MODELS:
        for t in BOUND:
            one(con, "SELECT embed_unload(?)", "gguf-x-%s-%s" % (m, t))
    shutil.rmtree(TMP, ignore_errors=True)
