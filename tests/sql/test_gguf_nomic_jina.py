"""GGUF files of architectures nomic-bert and jina-bert-v2 through embed_load: the golden NomicBERT
and JinaBERT v2 folders (fixtures/models2) written as GGUF F32, F16 and Q8_0 by
tests/references/gguf_nomic_jina.py (llama.cpp's converter's rules; `make check-gguf` proves the
files with llama.cpp itself), then read back: token ids equal to Hugging Face's on every single-text
case, mean-pooled unit vectors against Hugging Face's (F32 within 1e-5, F16 1e-3, Q8_0 1.5e-2:
measured 1.4e-7 / 4.4e-4 / 9.1e-3 on NomicBERT, 1.5e-7 / 2.7e-4 / 1.0e-2 on JinaBERT, where
llama.cpp itself is 1.7e-4 / 5.9e-4 / 1.3e-2 and 3.2e-4 / 4.2e-4 / 1.3e-2); JinaBERT written
as the converters of 2024 did (its gated layers split in ffn_gate and ffn_up) gives the same
vectors as the safetensors folder; files with a key missing, dimensions that do not agree, or a
layout not read yet refused naming the file and key."""
import json
import math
import os
import shutil
import struct
import sys
import tempfile

from harness import test, connect, one, floats, assert_error, FIXTURES

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "references"))
import gguf_nomic_jina  # noqa: E402
from gguf_layout import BOOL, U32, kv  # noqa: E402

TMP = tempfile.mkdtemp(prefix="embed-gguf-nj-")
MODELS = {"nomic-bert-tiny": "nomic_bert", "jina-bert-v2-tiny": "jina_bert"}
BOUND = {"f32": 1e-5, "f16": 1e-3, "q8_0": 2.5e-2}
# Q8_0 by default multiplies with its blocks (weights q8_0: int8 products, activations quantized per
# token; measured nomic 1.71e-2, jina 1.00e-2); on float32 weights the bound it had (0.91e-2, 1.02e-2)
Q8_0_F32_BOUND = 1.5e-2
con = connect()
files = {}
for m in MODELS:
    for t in BOUND:
        files[m, t] = os.path.join(TMP, "%s-%s.gguf" % (m, t))
        gguf_nomic_jina.write(os.path.join(FIXTURES, "models2", m), files[m, t], t)


def refs(m):
    with open(os.path.join(FIXTURES, "models2", "refs", m + ".json"), encoding="utf-8") as f:
        return json.load(f)


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def singles(r):
    return [c for c in (r["cases"][i] for i in r["case_ids"]) if c["kind"] == "single" and not c["truncated"]]


@test
def gguf_files_load_with_their_architecture_and_type():
    for m, arch in MODELS.items():
        for t in BOUND:
            name = "gnj-%s-%s" % (m, t)
            one(con, "SELECT embed_load(?, ?)", name, files[m, t])
            row = con.execute("SELECT architecture, pooling, weight_type, normalize FROM embed_models WHERE name = ?",
                              (name,)).fetchone()
            assert row == (arch, "mean", t.upper(), 0), (name, row)


@test
def token_ids_equal_hugging_faces():
    for m in MODELS:
        cases = singles(refs(m))
        assert len(cases) >= 20, len(cases)
        for c in cases:
            ids = [r[0] for r in con.execute("SELECT value FROM json_each(embed_token_ids(?, ?))",
                                             ("gnj-%s-f32" % m, c["text"]))]
            assert ids == c["input_ids"], (m, c["text"], ids, c["input_ids"])


@test
def sentence_vectors_equal_hugging_faces_within_the_types_bound():
    for m in MODELS:
        cases = singles(refs(m))
        for t, bound in BOUND.items():
            worst = 0.0
            for c in cases:
                got = unit(floats(one(con, "SELECT embed(?, ?)", "gnj-%s-%s" % (m, t), c["text"])))
                want = unit(c["pooled_mean"])
                worst = max(worst, max(abs(a - b) for a, b in zip(got, want)))
            assert worst <= bound, (m, t, worst)


@test
def q8_0_files_use_their_blocks_and_keep_their_bound_on_float32_weights():
    for m in MODELS:
        assert one(con, "SELECT weights FROM embed_models WHERE name = ?", "gnj-%s-q8_0" % m) == "q8_0"
        name = "gnj-%s-q8_0-f32" % m
        one(con, "SELECT embed_load(?, ?, '{\"weights\": \"f32\"}')", name, files[m, "q8_0"])
        assert one(con, "SELECT weights FROM embed_models WHERE name = ?", name) == "f32"
        worst = 0.0
        for c in singles(refs(m)):
            got = unit(floats(one(con, "SELECT embed(?, ?)", name, c["text"])))
            worst = max(worst, max(abs(a - b) for a, b in zip(got, unit(c["pooled_mean"]))))
        assert worst <= Q8_0_F32_BOUND, (m, worst)
        one(con, "SELECT embed_unload(?)", name)


@test
def the_safetensors_folder_and_its_f32_gguf_give_the_same_vectors():
    for m in MODELS:
        one(con, "SELECT embed_load(?, ?)", "gnj-st-" + m, os.path.join(FIXTURES, "models2", m))
        for c in singles(refs(m))[:5]:
            a = one(con, "SELECT embed(?, ?)", "gnj-st-" + m, c["text"])
            b = one(con, "SELECT embed(?, ?)", "gnj-%s-f32" % m, c["text"])
            assert a == b, (m, c["text"])
        one(con, "SELECT embed_unload(?)", "gnj-st-" + m)


@test
def jina_files_of_the_older_converter_with_split_gated_layers_give_the_folders_vectors():
    m = "jina-bert-v2-tiny"
    one(con, "SELECT embed_load(?, ?)", "gnj-st-split", os.path.join(FIXTURES, "models2", m))
    for t, bound in BOUND.items():
        path = os.path.join(TMP, "jina-split-%s.gguf" % t)
        gguf_nomic_jina.write(os.path.join(FIXTURES, "models2", m), path, t, split=True)
        one(con, "SELECT embed_load(?, ?)", "gnj-split-" + t, path)
        worst = 0.0
        for c in singles(refs(m)):
            got = floats(one(con, "SELECT embed(?, ?)", "gnj-split-" + t, c["text"]))
            if t == "f32":  # the same weights, read from two tensors instead of one: the same floats
                assert got == floats(one(con, "SELECT embed(?, ?)", "gnj-st-split", c["text"])), c["text"]
            want = unit(c["pooled_mean"])
            worst = max(worst, max(abs(a - b) for a, b in zip(unit(got), want)))
        assert worst <= bound, (t, worst)
        one(con, "SELECT embed_unload(?)", "gnj-split-" + t)
    one(con, "SELECT embed_unload(?)", "gnj-st-split")


def key_bytes(key):
    return struct.pack("<Q", len(key)) + key.encode()


def variant(m, label, drop=(), put=(), add_tensor=None):
    """An F32 file of model m with keys dropped, keys set (key, type, value) and a tensor added."""
    def edit(kvs, tensors):
        gone = [key_bytes(k) for k in drop] + [key_bytes(k) for k, _, _ in put]
        kvs[:] = [p for p in kvs if not any(p.startswith(g) for g in gone)]  # the length makes it exact
        kvs.extend(kv(k, t, v) for k, t, v in put)
        if add_tensor:
            tensors.append(add_tensor(tensors))
    path = os.path.join(TMP, label + ".gguf")
    gguf_nomic_jina.write(os.path.join(FIXTURES, "models2", m), path, "f32", edit)
    return path


def copy_of(name):
    def add(tensors):
        t = next(t for t in tensors if t[0] == name)
        return (t[0].replace("ffn_up", "ffn_gate"),) + t[1:]
    return add


@test
def files_that_lack_a_key_or_disagree_are_refused_naming_file_and_key():
    nomic, jina = "nomic-bert-tiny", "jina-bert-v2-tiny"
    cases = [
        (variant(nomic, "nomic-nokey", drop=["nomic-bert.context_length"]),
         "key 'nomic-bert.context_length' is missing"),
        (variant(jina, "jina-nokey", drop=["jina-bert-v2.attention.head_count"]),
         "key 'jina-bert-v2.attention.head_count' is missing"),
        (variant(nomic, "nomic-heads", put=[("nomic-bert.attention.head_count", U32, 5)]),
         "nomic-bert.embedding_length 32 is not a multiple of the 5 heads"),
        (variant(nomic, "nomic-causal", put=[("nomic-bert.attention.causal", BOOL, True)]),
         "nomic-bert.attention.causal is set"),
        (variant(jina, "jina-ff", put=[("jina-bert-v2.feed_forward_length", U32, 48)]),
         "blk.0.ffn_up.weight has 128 rows, not 2 x jina-bert-v2.feed_forward_length 48"),
        (variant(jina, "jina-split", add_tensor=copy_of("blk.0.ffn_up.weight")),
         "blk.0.ffn_gate.weight and ffn_up.weight have 128 and 128 rows, not jina-bert-v2.feed_forward_length 64 "
         "each"),
        (variant(nomic, "nomic-ff", put=[("nomic-bert.feed_forward_length", U32, 48)]),
         "tensor 'blk.0.ffn_up.weight' has 64 rows, not 48 (nomic-bert.feed_forward_length)"),
    ]
    for path, msg in cases:
        assert_error(con, "SELECT embed_load('gnj-bad', ?)", os.path.basename(path), msg, args=(path,))
    assert one(con, "SELECT count(*) FROM embed_models WHERE name = 'gnj-bad'") == 0


@test
def cleanup():
    for m in MODELS:
        for t in BOUND:
            one(con, "SELECT embed_unload(?)", "gnj-%s-%s" % (m, t))
    shutil.rmtree(TMP)
