"""GGUF files of ggml's block types through embed_load. The golden BERT folder bert-tiny-uncased
written as Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 by tests/references/gguf_bert.py (its pure-Python
quantizers; rows of 32 and 64, so every matrix is blocks), and a random 256-wide BERT
(tests/references/gguf_wide.py) in every block type, the K ones included; each file with its F32
twin, the same weights dequantized by tests/references/gguf_quant.py (separate code from the C
reader). Ours on each file loaded with float32 weights equals ours on its twin (unit vectors within
1e-5: the weights are the same float32 values, to a rounding); bert-tiny's are near Hugging Face's
within what 4 to 8 bits allow (Q8_0 1e-2, Q5_x 8e-2, Q4_x 1.5e-1; measured Q8_0 4.8e-3, Q5_1
3.5e-2, Q5_0 4.8e-2, Q4_1 7.0e-2, Q4_0 9.0e-2: a 32-wide model has little to average quantization
error over). A Q8_0 file by default multiplies with its blocks as they are (weights q8_0: int8
products, activations quantized per token): bert-tiny within the same 1e-2 of Hugging Face's
(measured 5.5e-3), the wide model near its twin, its linear layers in about 36 bytes per 32
weights instead of 128.
embed_models names the file's type (general.file_type). Files of a type not read (Q2_K, IQ4_NL) are
refused naming the type and the file."""
import json
import math
import os
import random
import shutil
import sys
import tempfile

from harness import test, connect, one, floats, assert_error, FIXTURES

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "references"))
import gguf_bert  # noqa: E402
import gguf_wide  # noqa: E402
from gguf_layout import read_safetensors, write_file  # noqa: E402

TMP = tempfile.mkdtemp(prefix="embed-gguf-quant-")
TINY = os.path.join(FIXTURES, "models", "bert-tiny-uncased")
HF_BOUND = {"q8_0": 1e-2, "q5_0": 8e-2, "q5_1": 8e-2, "q4_0": 1.5e-1, "q4_1": 1.5e-1}
WIDE = ("q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k", "q5_k", "q6_k")
SHOWN = {"q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1", "q8_0": "Q8_0", "q4_k": "Q4_K_S",
         "q5_k": "Q5_K_S", "q6_k": "Q6_K"}
con = connect()


def path(name):
    return os.path.join(TMP, name + ".gguf")


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def worst(a_name, b_name, texts):
    w = 0.0
    for t in texts:
        a = unit(floats(one(con, "SELECT embed(?, ?)", a_name, t)))
        b = unit(floats(one(con, "SELECT embed(?, ?)", b_name, t)))
        w = max(w, max(abs(x - y) for x, y in zip(a, b)))
    return w


def tiny_cases():
    with open(os.path.join(FIXTURES, "models", "refs", "bert-tiny-uncased.json"), encoding="utf-8") as f:
        r = json.load(f)
    return [c for c in (r["cases"][i] for i in r["case_ids"]) if c["kind"] == "single" and not c["truncated"]]


@test
def bert_tiny_in_each_type_equals_its_dequantized_twin_and_nears_hugging_face():
    cases = tiny_cases()
    assert len(cases) >= 20, len(cases)
    for t, bound in HF_BOUND.items():
        q, f = "gq-tiny-%s" % t, "gq-tiny-%s-twin" % t
        gguf_bert.write(TINY, path(q), t, twin=path(f))
        one(con, "SELECT embed_load(?, ?, '{\"weights\": \"f32\"}')", q, path(q))
        one(con, "SELECT embed_load(?, ?)", f, path(f))
        assert con.execute("SELECT weight_type, weights FROM embed_models WHERE name = ?", (q,)).fetchone() == (
            t.upper(), "f32")
        texts = [c["text"] for c in cases]
        w = worst(q, f, texts)
        assert w <= 1e-5, (t, w)
        hf = 0.0
        for c in cases:
            got = unit(floats(one(con, "SELECT embed(?, ?)", q, c["text"])))
            hf = max(hf, max(abs(a - b) for a, b in zip(got, unit(c["pooled_mean"]))))
        assert hf <= bound, (t, hf)
        one(con, "SELECT embed_unload(?)", q)
        one(con, "SELECT embed_unload(?)", f)


@test
def a_wide_model_in_every_block_type_equals_its_dequantized_twin():
    for t in WIDE:
        q, f = "gq-wide-%s" % t, "gq-wide-%s-twin" % t
        gguf_wide.write(path(q), t, twin=path(f), seed=len(t) + WIDE.index(t))
        one(con, "SELECT embed_load(?, ?, '{\"weights\": \"f32\"}')", q, path(q))
        one(con, "SELECT embed_load(?, ?)", f, path(f))
        row = con.execute("SELECT architecture, pooling, weight_type FROM embed_models WHERE name = ?", (q,)).fetchone()
        assert row == ("bert", "mean", SHOWN[t]), (t, row)
        w = worst(q, f, gguf_wide.TEXTS)
        assert w <= 1e-5, (t, w)
        # the blocks are random: vectors differ from type to type and are not degenerate
        v = floats(one(con, "SELECT embed(?, ?)", q, gguf_wide.TEXTS[0]))
        assert all(math.isfinite(x) for x in v) and max(abs(x) for x in v) > 1e-3, (t, v[:4])
        one(con, "SELECT embed_unload(?)", q)
        one(con, "SELECT embed_unload(?)", f)


def linear_weights(h, ff, layers):
    return layers * (4 * h * h + 2 * h * ff)


@test
def q8_0_files_multiply_with_their_blocks_by_default():
    # bert-tiny (rows of 32 and 64: every matrix Q8_0): weights q8_0, near Hugging Face's and near
    # the same file on float32 weights
    q = "gq-tiny-q8_0-blocks"
    one(con, "SELECT embed_load(?, ?)", q, path("gq-tiny-q8_0"))
    assert con.execute("SELECT weight_type, weights FROM embed_models WHERE name = ?", (q,)).fetchone() == (
        "Q8_0", "q8_0")
    hf = 0.0
    for c in tiny_cases():
        got = unit(floats(one(con, "SELECT embed(?, ?)", q, c["text"])))
        hf = max(hf, max(abs(a - b) for a, b in zip(got, unit(c["pooled_mean"]))))
    assert hf <= HF_BOUND["q8_0"], hf
    one(con, "SELECT embed_load('gq-tiny-q8_0-f32', ?, '{\"weights\": \"f32\"}')", path("gq-tiny-q8_0"))
    assert worst(q, "gq-tiny-q8_0-f32", [c["text"] for c in tiny_cases()]) <= 1e-2
    # loading it again with the default options finds the model; asking f32 of it does not
    assert one(con, "SELECT embed_load(?, ?)", q, path("gq-tiny-q8_0")) == q
    assert_error(con, "SELECT embed_load(?, ?, '{\"weights\": \"f32\"}')", "already loaded", "with q8_0 weights",
                 args=(q, path("gq-tiny-q8_0")))
    for name in (q, "gq-tiny-q8_0-f32"):
        one(con, "SELECT embed_unload(?)", name)
    # the wide model (hidden 256, feed-forward 512, one layer; its token table Q8_0 too, widened):
    # near its dequantized twin; the linear layers' bytes from 4 a weight to 36 / 32
    gguf_wide.write(path("gq-wide8"), "q8_0", twin=path("gq-wide8-twin"), seed=77)
    one(con, "SELECT embed_load('gq-wide8', ?)", path("gq-wide8"))
    one(con, "SELECT embed_load('gq-wide8-f32', ?, '{\"weights\": \"f32\"}')", path("gq-wide8"))
    one(con, "SELECT embed_load('gq-wide8-int8', ?, '{\"weights\": \"int8\"}')", path("gq-wide8"))
    one(con, "SELECT embed_load('gq-wide8-twin', ?)", path("gq-wide8-twin"))
    rows = dict(con.execute("SELECT name, weights FROM embed_models WHERE name LIKE 'gq-wide8%'").fetchall())
    assert rows == {"gq-wide8": "q8_0", "gq-wide8-f32": "f32", "gq-wide8-int8": "int8", "gq-wide8-twin": "f32"}, rows
    for t in gguf_wide.TEXTS:
        a = unit(floats(one(con, "SELECT embed('gq-wide8', ?)", t)))
        b = unit(floats(one(con, "SELECT embed('gq-wide8-twin', ?)", t)))
        assert sum(x * y for x, y in zip(a, b)) >= 0.999, t
    assert worst("gq-wide8-f32", "gq-wide8-twin", gguf_wide.TEXTS) <= 1e-5
    lin = linear_weights(gguf_wide.H, gguf_wide.FF, 1)
    b8, b32 = (one(con, "SELECT bytes FROM embed_models WHERE name = ?", n) for n in ("gq-wide8", "gq-wide8-f32"))
    # the same bytes but the linear layers': 4 bytes a weight as float32, 36 / 32 (codes and a float
    # scale per block) and 4 per output channel (1,792 of them) as blocks
    blocks = b8 - (b32 - 4 * lin)
    channels = 4 * gguf_wide.H + gguf_wide.FF + gguf_wide.H
    assert lin * 36 // 32 + 4 * channels <= blocks <= lin * 36 // 32 + 4 * channels + 1024, (b8, b32, lin, blocks)
    assert blocks * 3.5 < 4 * lin, (blocks, lin)
    fps = {one(con, "SELECT fingerprint FROM embed_models WHERE name = ?", n) for n in ("gq-wide8", "gq-wide8-f32",
                                                                                         "gq-wide8-int8")}
    assert len(fps) == 3, fps
    # q8_0 asked of files whose layers hold no Q8_0: refused
    assert_error(con, "SELECT embed_load('gq-no-q8', ?, '{\"weights\": \"q8_0\"}')",
                 "q8_0 weights: the linear layers hold no Q8_0 tensor", args=(path("gq-wide8-twin"),))
    assert_error(con, "SELECT embed_load('gq-no-q8', ?, '{\"weights\": \"q8_0\"}')",
                 "q8_0 weights: the linear layers hold no Q8_0 tensor", args=(path("gq-tiny-q4_0"),))
    for n in ("gq-wide8", "gq-wide8-f32", "gq-wide8-int8", "gq-wide8-twin"):
        one(con, "SELECT embed_unload(?)", n)


@test
def int8_weights_from_a_k_quant_file():
    one(con, "SELECT embed_load('gq-int8', ?, '{\"weights\": \"int8\"}')", path("gq-wide-q6_k"))
    one(con, "SELECT embed_load('gq-int8-ref', ?)", path("gq-wide-q6_k-twin"))
    for t in gguf_wide.TEXTS:
        a = unit(floats(one(con, "SELECT embed('gq-int8', ?)", t)))
        b = unit(floats(one(con, "SELECT embed('gq-int8-ref', ?)", t)))
        assert sum(x * y for x, y in zip(a, b)) >= 0.99, t
    one(con, "SELECT embed_unload('gq-int8')")
    one(con, "SELECT embed_unload('gq-int8-ref')")


@test
def types_not_read_are_refused_by_name():
    """bert-tiny with its first layer's query matrix (rows of 32) in IQ4_NL; the wide model's in Q2_K."""
    gb = gguf_bert
    p = path("gq-iq4nl")
    rng = random.Random(5)
    voc, _ = gb.vocab(TINY)
    cfg = json.load(open(os.path.join(TINY, "config.json")))
    kvs = gb.metadata(TINY, cfg, "f32", voc)
    tensors = []
    for hf, (shape, vals) in sorted(read_safetensors(os.path.join(TINY, "model.safetensors")).items()):
        name = gb.gguf_name(hf)
        if not name:
            continue
        typ, blob = gb.encode(shape, vals, "f32")
        if name == "blk.0.attn_q.weight":  # IQ4_NL: 18 bytes per 32 values
            typ, blob = 20, rng.randbytes(len(vals) // 32 * 18)
        tensors.append((name, shape, typ, blob))
    write_file(p, kvs, tensors)
    assert_error(con, "SELECT embed_load('gq-bad', ?)", "gq-iq4nl.gguf", "blk.0.attn_q.weight",
                 "has type IQ4_NL, which is not read", args=(p,))
    p = path("gq-q2k")
    voc, n = gguf_wide.vocab()
    ts = [(name, shape, 10, rng.randbytes(shape[0] * shape[1] // 256 * 84)) if name == "blk.0.ffn_up.weight"
          else (name, shape, typ, blob) for name, shape, typ, blob in gguf_wide.tensors("q4_k", n, False, rng)]
    write_file(p, gguf_wide.metadata("q4_k", voc), ts)
    assert_error(con, "SELECT embed_load('gq-bad', ?)", "gq-q2k.gguf", "has type Q2_K, which is not read", args=(p,))
    assert one(con, "SELECT count(*) FROM embed_models WHERE name = 'gq-bad'") == 0


@test
def a_k_quant_file_cut_short_is_refused_by_name():
    src = path("gq-wide-q4_k")
    cut = path("gq-cut")
    with open(src, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:-5000])
    assert_error(con, "SELECT embed_load('gq-bad', ?)", "gq-cut.gguf: ", "past the end of the file", args=(cut,))


@test
def cleanup():
    shutil.rmtree(TMP)
