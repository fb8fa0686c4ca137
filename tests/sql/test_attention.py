"""Attention in SQL: embed_attention (the softmax weights of the forward pass, one row per layer,
head, query and key) and embed_attention_bias (the additive bias per head).

The weights are recomputed here in pure Python, in double precision, from the golden REFERENCE
hidden states (the input of layer l is embeddings_output for l = 1, layers[l - 2] after) and the
query and key weights read from model.safetensors with struct: softmax(Q K^T / sqrt(d)) for BERT,
plus ALiBi's bias for JinaBERT, rotary positions for NomicBERT and ModernBERT (its attention norm
and sliding window too). ALiBi slopes come from the paper's formula, 2^(-8h/n) for n heads."""
import atexit
import json
import math
import os
import shutil
import struct
import subprocess
import tempfile

from harness import test, connect, one, floats, assert_error, define_lesson, FIXTURES, EXT, ROOT
from harness import rope_rotate as rotate, safetensors_header

MODELS = os.path.join(FIXTURES, "models")
MODELS2 = os.path.join(FIXTURES, "models2")
TOL = 1e-5
LOADED = {"bert": "bert-tiny-uncased", "distil": "distilbert-tiny-uncased", "minilm": "minilm-tiny-st",
          "jina": "jina-bert-v2-tiny", "nomic": "nomic-bert-tiny", "modern": "modernbert-tiny",
          "xlmr": "xlmr-tiny", "xlmr-st": "xlmr-tiny-st", "unigram": "bert-unigram-tiny"}
con = connect()
for _name, _folder in LOADED.items():
    _root = MODELS if os.path.isdir(os.path.join(MODELS, _folder)) else MODELS2
    con.execute("SELECT embed_load(?, ?)", ("att-" + _name, os.path.join(_root, _folder)))
_tmp = tempfile.mkdtemp(prefix="attention-")
atexit.register(shutil.rmtree, _tmp, True)
_refs = {}


def ref(folder):
    if folder not in _refs:
        root = MODELS if os.path.isdir(os.path.join(MODELS, folder)) else MODELS2
        with open(os.path.join(root, "refs", folder + ".json")) as f:
            _refs[folder] = json.load(f)
    return _refs[folder]


def tensors(folder):
    """name -> (shape, flat float32 values) of a model.safetensors, read with struct."""
    root = MODELS if os.path.isdir(os.path.join(MODELS, folder)) else MODELS2
    with open(os.path.join(root, folder, "model.safetensors"), "rb") as f:
        data = f.read()
    header, start = safetensors_header(data)
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        a, b = t["data_offsets"]
        out[name] = (t["shape"], struct.unpack("<%df" % ((b - a) // 4), data[start + a:start + b]))
    return out


def linear(X, shape_w, b=None, rows=None):
    """X W^T (+ b) for W [out, in] given flat, keeping output rows `rows` of W (a slice of a
    fused Wqkv), in double precision."""
    (n_out, n_in), w = shape_w
    lo, hi = rows or (0, n_out)
    W = [w[r * n_in:(r + 1) * n_in] for r in range(lo, hi)]
    return [[sum(x[i] * wr[i] for i in range(n_in)) + (b[1][lo + k] if b else 0.0) for k, wr in enumerate(W)]
            for x in X]


def layer_norm(X, g, eps, bias=None):
    out = []
    for x in X:
        m = sum(x) / len(x)
        v = sum((a - m) ** 2 for a in x) / len(x)
        s = 1.0 / math.sqrt(v + eps)
        out.append([(a - m) * s * g[i] + (bias[i] if bias else 0.0) for i, a in enumerate(x)])
    return out


def alibi_slopes(n):
    """Press et al.: for n heads a power of two, head h (from 0) has slope 2^(-8 (h + 1) / n)."""
    assert n & (n - 1) == 0
    return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]


def weights(Q, K, heads, queries, slope=None, window=None, rope=None):
    """{(head, query): [weight of each key]}: softmax(q.k / sqrt(d) - slope |i - j|), keys beyond
    the half window masked, q and k rotated first when rope (a base) is given."""
    H = len(Q[0])
    d = H // heads
    out = {}
    for h in range(heads):
        ks = [k[h * d:(h + 1) * d] for k in K]
        if rope:
            ks = [rotate(k, j, rope) for j, k in enumerate(ks)]
        for i in queries:
            q = Q[i][h * d:(h + 1) * d]
            if rope:
                q = rotate(q, i, rope)
            s = [sum(a * b for a, b in zip(q, k)) / math.sqrt(d) for k in ks]
            if slope:
                s = [x - slope[h] * abs(i - j) for j, x in enumerate(s)]
            seen = [window is None or abs(i - j) <= window for j in range(len(s))]
            mx = max(x for x, ok in zip(s, seen) if ok)
            e = [math.exp(x - mx) if ok else 0.0 for x, ok in zip(s, seen)]
            out[(h, i)] = [x / sum(e) for x in e]
    return out


def layer_input(case, layer):
    return case["embeddings_output"] if layer == 1 else case["layers"][layer - 2]


def expected(folder, case, layer, queries):
    """The reference weights of layer `layer` (from 1) of a golden case, for the given queries."""
    r, t = ref(folder), tensors(folder)
    X, heads, H = layer_input(case, layer), r["num_heads"], r["hidden_size"]
    l = layer - 1
    if r["arch"] in ("bert", "jina_bert"):
        p = "encoder.layer.%d.attention.self." % l
        Q = linear(X, t[p + "query.weight"], t[p + "query.bias"])
        K = linear(X, t[p + "key.weight"], t[p + "key.bias"])
        slopes = alibi_slopes(heads) if r["arch"] == "jina_bert" else None
        if slopes:  # the paper's formula is the slopes the references were made with
            assert all(abs(a - b) < 1e-12 for a, b in zip(slopes, r["arch_params"]["alibi_slopes"]))
        return weights(Q, K, heads, queries, slope=slopes)
    if r["arch"] == "nomic_bert":
        w = t["encoder.layers.%d.attn.Wqkv.weight" % l]
        assert r["arch_params"]["rotary_emb_fraction"] == 1
        return weights(linear(X, w, rows=(0, H)), linear(X, w, rows=(H, 2 * H)), heads, queries,
                       rope=r["arch_params"]["rotary_emb_base"])
    assert r["arch"] == "modernbert", r["arch"]
    p, a = "layers.%d." % l, r["arch_params"]
    if l > 0:  # layer 0 has no attention norm; the others' LayerNorm has no bias
        X = layer_norm(X, t[p + "attn_norm.weight"][1], r["layer_norm_eps"])
    local = a["layer_types"][l] == "local"
    w = t[p + "attn.Wqkv.weight"]
    return weights(linear(X, w, rows=(0, H)), linear(X, w, rows=(H, 2 * H)), heads, queries,
                   window=a["local_attention"] // 2 if local else None,
                   rope=a["local_rope_theta" if local else "global_rope_theta"])


def sql_weights(name, text, layer, queries=None):
    """{(head, query): [weights]} from embed_attention for one layer."""
    out = {}
    for h, i, j, w in con.execute("SELECT head, query, key, weight FROM embed_attention(?, ?, ?)"
                                  " ORDER BY head, query, key", (name, text, layer)):
        if queries is None or i in queries:
            out.setdefault((h, i), []).append(w)
    return out


def compare(name, folder, case, layer, queries=None):
    n = case["seq_len"]
    want = expected(folder, case, layer, queries if queries is not None else range(n))
    got = sql_weights(name, case["text"], layer, queries)
    assert set(got) == set(want), (name, layer, sorted(set(want) - set(got))[:4])
    worst = 0.0
    for key, w in want.items():
        assert len(got[key]) == n, (name, key, len(got[key]))
        worst = max([worst] + [abs(a - b) for a, b in zip(got[key], w)])
    assert worst <= TOL, "%s %s layer %d: max abs diff %g" % (name, case["text"][:30], layer, worst)
    return worst


@test
def bert_weights_equal_softmax_of_the_reference_states():
    r, worst, checked = ref("bert-tiny-uncased"), 0.0, 0
    for cid in r["case_ids"]:
        case = r["cases"][cid]
        if "text_pair" in case or case["seq_len"] > 40:
            continue
        for layer in (1, 2):
            worst = max(worst, compare("att-bert", "bert-tiny-uncased", case, layer))
            checked += 1
    assert checked >= 40, checked
    print("  bert-tiny-uncased: %d case-layers, max abs diff %.2e" % (checked, worst))


@test
def alibi_weights_equal_the_recomputation():
    r = ref("jina-bert-v2-tiny")
    worst = 0.0
    for cid in ("left_phone", "time_flies", "email_url"):
        for layer in (1, 2):
            worst = max(worst, compare("att-jina", "jina-bert-v2-tiny", r["cases"][cid], layer))
    print("  jina-bert-v2-tiny: max abs diff %.2e" % worst)


@test
def rotary_weights_equal_the_recomputation():
    worst = 0.0
    for cid in ("left_phone", "email_url"):
        worst = max(worst, compare("att-nomic", "nomic-bert-tiny", ref("nomic-bert-tiny")["cases"][cid], 1))
        worst = max(worst, compare("att-nomic", "nomic-bert-tiny", ref("nomic-bert-tiny")["cases"][cid], 2))
        # ModernBERT: layer 1 global (base 160000), layer 2 local (base 10000, attention norm)
        for layer in (1, 2):
            worst = max(worst, compare("att-modern", "modernbert-tiny", ref("modernbert-tiny")["cases"][cid], layer))
    print("  nomic-bert-tiny, modernbert-tiny: max abs diff %.2e" % worst)


@test
def modernbert_long_text_window_against_the_recomputation():
    # 753 tokens, far past the window of 128: queries at both ends and in the middle of layer 2
    case = ref("modernbert-tiny")["cases"]["long_text"]
    assert case["seq_len"] == 753
    compare("att-modern", "modernbert-tiny", case, 2, queries={0, 376, 752})


@test
def rows_sum_to_one_and_masked_keys_are_exactly_zero():
    text = ref("modernbert-tiny")["cases"]["long_text"]["text"]
    # one pass: per (layer, head, query) its sum, its keys, and those outside the window
    rows = con.execute(
        "SELECT layer, sum(keys), count(DISTINCT head), sum(nonzero_outside), sum(outside), min(lo), max(hi),"
        " max(abs(s - 1)) FROM (SELECT layer, head, count(*) AS keys, sum(weight) AS s, min(weight) AS lo,"
        " max(weight) AS hi, sum(abs(query - key) > 64 AND weight <> 0) AS nonzero_outside,"
        " sum(abs(query - key) > 64) AS outside FROM embed_attention('att-modern', ?) GROUP BY layer, head, query)"
        " GROUP BY layer ORDER BY layer", (text,)).fetchall()
    n = 753
    assert [r[:3] for r in rows] == [(l, 4 * n * n, 4) for l in (1, 2, 3, 4)], [r[:3] for r in rows]
    outside = 2 * sum(n - d for d in range(65, n))  # pairs with |i - j| > 64
    for layer, _, _, nonzero_outside, n_outside, lo, hi, worst in rows:
        assert n_outside == 4 * outside
        if layer in (2, 3):   # local: every key outside the window weighs exactly 0
            assert nonzero_outside == 0, (layer, nonzero_outside)
        else:                 # global: they all count
            assert nonzero_outside > 0, layer
        assert 0 <= lo and hi <= 1 and worst < 1e-5, (layer, lo, hi, worst)


@test
def every_architecture_gives_rows_that_sum_to_one():
    text = "I left my phone on the left side of the table."
    for name in LOADED:
        info = con.execute("SELECT layers, heads FROM embed_models WHERE name = ?", ("att-" + name,)).fetchone()
        n = len(json.loads(one(con, "SELECT embed_token_ids(?, ?)", "att-" + name, text)))
        got = con.execute("SELECT count(*), count(DISTINCT layer), min(layer), count(DISTINCT head), min(head),"
                          " max(abs(s - 1)) FROM (SELECT layer, head, sum(weight) AS s, count(*) AS keys"
                          " FROM embed_attention(?, ?) GROUP BY layer, head, query HAVING keys = ?)",
                          ("att-" + name, text, n)).fetchone()
        assert got[:5] == (info[0] * info[1] * n, info[0], 1, info[1], 0), (name, got, info, n)
        assert got[5] < 1e-5, (name, got)


@test
def tokens_and_narrowing():
    rows = con.execute("SELECT layer, head, query, key, query_token, key_token FROM embed_attention("
                       "'att-bert', 'hello world', 2, 3) ORDER BY rowid").fetchall()
    toks = ["[CLS]", "hello", "world", "[SEP]"]
    assert rows == [(2, 3, i, j, toks[i], toks[j]) for i in range(4) for j in range(4)], rows
    # WHERE layer = / head = narrow the pass as the arguments do; a value no row has gives none
    assert one(con, "SELECT count(*) FROM embed_attention('att-bert', 'hello world') WHERE layer = 2 AND head = 3") == 16
    assert one(con, "SELECT count(*) FROM embed_attention('att-bert', 'hello') WHERE layer IN (1, 2, 7)") == 2 * 4 * 9
    assert one(con, "SELECT count(*) FROM embed_attention('att-bert', 'hello') WHERE layer = 1.5") == 0
    assert one(con, "SELECT count(*) FROM embed_attention('att-bert', 'hello', 1) WHERE layer = 2") == 0
    assert one(con, "SELECT count(*) FROM embed_attention('att-bert', 'hello') WHERE head = -1") == 0
    # the same weights whether one layer or all are asked
    one_layer = con.execute("SELECT weight FROM embed_attention('att-bert', 'a b c', 2, 1) ORDER BY rowid").fetchall()
    all_layers = con.execute("SELECT weight FROM embed_attention('att-bert', 'a b c') WHERE layer = 2 AND head = 1"
                             " ORDER BY rowid").fetchall()
    assert one_layer == all_layers and len(one_layer) == 25
    # joined to a table: one pass per row
    con.execute("CREATE TEMP TABLE texts(t TEXT)")
    con.execute("INSERT INTO texts VALUES ('a'), ('a b')")
    assert con.execute("SELECT t, count(*) FROM texts, embed_attention('att-bert', t, 1, 0) GROUP BY t ORDER BY t"
                       ).fetchall() == [("a", 9), ("a b", 16)]


@test
def huge_texts_are_truncated_and_chunked():
    # jina's limit is 512 tokens: 600 words give 512 positions
    text = " ".join(["word"] * 600)
    assert one(con, "SELECT max(query) + 1 FROM embed_attention('att-jina', ?, 1, 0)", text) == 512
    # 2,100 tokens of ModernBERT: one layer's 4 heads (17.6M weights) exceed a chunk of 16M floats,
    # so the heads come 3 then 1, and whole layers 3 then 1 for one head; the weights agree with
    # a pass that asks for one (layer, head) alone
    text = " ".join(["x%d" % (i % 50) for i in range(1049)])
    n = len(json.loads(one(con, "SELECT embed_token_ids('att-modern', ?)", text)))
    assert n > 2048, n
    probe = ("SELECT layer, head, key, weight FROM embed_attention('att-modern', ?%s) WHERE query = ?%s"
             " ORDER BY layer, head, key")
    heads = con.execute(probe % ("", " AND layer = 2"), (text, n - 1)).fetchall()        # heads 0-2, then 3
    layers = con.execute(probe % ("", " AND head = 1"), (text, n - 1)).fetchall()        # layers 1-3, then 4
    assert len(heads) == len(layers) == 4 * n, (len(heads), len(layers))
    for h in range(4):
        alone = con.execute(probe % (", 2, %d" % h, ""), (text, n - 1)).fetchall()
        assert [r for r in heads if r[1] == h] == alone and abs(sum(r[3] for r in alone) - 1) < 1e-5, h
    for layer in range(1, 5):
        alone = con.execute(probe % (", %d, 1" % layer, ""), (text, n - 1)).fetchall()
        assert [r for r in layers if r[0] == layer] == alone, layer


@test
def a_condition_on_query_reads_only_its_rows():
    text = "I left my phone on the left side of the table."
    full = con.execute("SELECT layer, head, query, key, weight FROM embed_attention('att-bert', ?)"
                       " ORDER BY layer, head, query, key", (text,)).fetchall()
    for q in (0, 2, 13, 14):
        got = con.execute("SELECT layer, head, query, key, weight FROM embed_attention('att-bert', ?)"
                          " WHERE query = ? ORDER BY rowid", (text, q)).fetchall()
        assert got == [r for r in full if r[2] == q], q
    assert one(con, "SELECT count(*) FROM embed_attention('att-bert', ?) WHERE query IN (2, 7)", text) == 2 * 4 * 2 * 14


def bias(*args):
    return floats(one(con, "SELECT embed_attention_bias(%s)" % ", ".join("?" * len(args)), *args))


def jina_copy(heads):
    """jina-bert-v2-tiny with another head count (32 dimensions split in `heads`; the weights'
    shapes do not change)."""
    src, dst = os.path.join(MODELS2, "jina-bert-v2-tiny"), os.path.join(_tmp, "jina-%d" % heads)
    os.mkdir(dst)
    for name in os.listdir(src):
        if name != "config.json":
            os.symlink(os.path.join(src, name), os.path.join(dst, name))
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    cfg["num_attention_heads"] = heads
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f)
    return dst


@test
def alibi_bias_is_minus_slope_times_distance():
    con.execute("SELECT embed_load('att-jina8', ?)", (jina_copy(8),))
    for name, heads in (("att-jina", 4), ("att-jina8", 8)):
        slopes = alibi_slopes(heads)
        for i, j in ((0, 0), (2, 5), (5, 2), (0, 511), (300, 17)):
            want = [-s * abs(i - j) for s in slopes]
            for got in (bias(name, i, j), bias(name, i, j, 1), bias(name, i, j, 2)):
                assert len(got) == heads and all(abs(g - w) <= 1e-7 * max(1, abs(w)) for g, w in zip(got, want)), \
                    (name, i, j, got, want)
    # the weights of the 8-head copy are a softmax too
    assert one(con, "SELECT max(abs(s - 1)) FROM (SELECT sum(weight) AS s FROM embed_attention('att-jina8', 'a b c d')"
                    " GROUP BY layer, head, query)") < 1e-5
    # at distance 0 the bias is +0, not -0
    assert one(con, "SELECT hex(embed_attention_bias('att-jina', 7, 7))") == "00" * 16
    # what position_encoding's message for an ALiBi model says
    msg = assert_error(con, "SELECT position_encoding('att-jina', 3)", "see embed_attention_bias")
    assert "-slope·|i−j|" in msg, msg


@test
def sliding_window_bias_is_minus_infinity_outside_the_window():
    # ModernBERT: layers 2 and 3 are local (|i - j| <= 64), 1 and 4 global
    for layer in (1, 2, 3, 4):
        for i, j in ((0, 64), (0, 65), (100, 36), (100, 35), (700, 764), (700, 765), (5, 5)):
            hidden = layer in (2, 3) and abs(i - j) > 64
            assert bias("att-modern", i, j, layer) == [float("-inf") if hidden else 0.0] * 4, (layer, i, j)
    # as bytes: float32 -inf is 00 00 80 ff; embed_json refuses it as every vector function does
    assert one(con, "SELECT hex(embed_attention_bias('att-modern', 0, 65, 2))") == "000080FF" * 4
    assert_error(con, "SELECT embed_json(embed_attention_bias('att-modern', 0, 65, 2))",
                 "embed_json: argument 1 has a non-finite value at index 0")


@test
def other_models_have_a_zero_bias():
    for name, heads in (("att-bert", 4), ("att-distil", 4), ("att-nomic", 4), ("att-xlmr-st", 6), ("att-minilm", 6)):
        assert bias(name, 3, 9) == [0.0] * heads, name
        assert bias(name, 3, 9, 1) == [0.0] * heads, name


@test
def errors_and_nulls():
    define_lesson(con)
    path = os.path.join(FIXTURES, "tokenizers", "vocab", "bert-base-cased")
    con.execute("SELECT embed_load('att-tok', ?)", (path,))
    exact = [
        ("SELECT embed_attention_bias('nope', 0, 1)",
         "embed_attention_bias: no model named 'nope' (load one with embed_load or embed_define)"),
        ("SELECT embed_attention_bias('att-bert', -1, 0)",
         "embed_attention_bias: the query position i must be from 0 to 511, not -1"),
        ("SELECT embed_attention_bias('att-bert', 0, 512)",
         "embed_attention_bias: the key position j must be from 0 to 511, not 512"),
        ("SELECT embed_attention_bias('att-bert', 'a', 1)",
         "embed_attention_bias: the query position i must be an integer, not text 'a'"),
        ("SELECT embed_attention_bias('att-bert', 0, 1, 0)", "embed_attention_bias: the layer must be from 1 to 2, not 0"),
        ("SELECT embed_attention_bias('att-bert', 0, 1, 3)", "embed_attention_bias: the layer must be from 1 to 2, not 3"),
        ("SELECT embed_attention_bias('att-modern', 0, 1)",
         "embed_attention_bias: the layers differ (layer 2 has a sliding window, layer 1 does not): give a layer "
         "from 1 to 4"),
        ("SELECT embed_attention_bias('lesson', 0, 1)", "embed_attention_bias: model 'lesson' has no layers, so no attention"),
        ("SELECT embed_attention_bias('att-tok', 0, 1)",
         "embed_attention_bias: model 'att-tok' is a tokenizer only: it has no attention"),
        ("SELECT * FROM embed_attention('nope', 'a')",
         "embed_attention: no model named 'nope' (load one with embed_load or embed_define)"),
        ("SELECT * FROM embed_attention('att-bert')",
         "embed_attention: needs a model and a text: embed_attention(model, text [, layer [, head]])"),
        ("SELECT * FROM embed_attention('att-bert', 'a', 0)",
         "embed_attention: layer 0 is out of range: model 'att-bert' has layers 1 to 2 (layer 0, the embedding "
         "output, has no attention)"),
        ("SELECT * FROM embed_attention('att-bert', 'a', 3)",
         "embed_attention: layer 3 is out of range: model 'att-bert' has layers 1 to 2 (layer 0, the embedding "
         "output, has no attention)"),
        ("SELECT * FROM embed_attention('att-bert', 'a', 1, 4)",
         "embed_attention: head 4 is out of range: model 'att-bert' has heads 0 to 3"),
        ("SELECT * FROM embed_attention('att-bert', 'a', 1, -1)",
         "embed_attention: head -1 is out of range: model 'att-bert' has heads 0 to 3"),
        ("SELECT * FROM embed_attention('att-bert', 'a', 'x')", "embed_attention: the layer must be an integer, not text 'x'"),
        ("SELECT * FROM embed_attention('att-bert', 'a', 1.5)",
         "embed_attention: the layer must be an integer, not the real 1.5"),
        ("SELECT * FROM embed_attention('att-bert', x'41')",
         "embed_attention: the text must be text, not a blob (write CAST(x AS TEXT) if its bytes are UTF-8 text)"),
        ("SELECT * FROM embed_attention(1, 'a')", "embed_attention: the model name must be text, not the integer 1"),
        ("SELECT * FROM embed_attention('lesson', 'bus is late')",
         "embed_attention: model 'lesson' has no layers, so no attention"),
        ("SELECT * FROM embed_attention('att-tok', 'Hello')",
         "embed_attention: model 'att-tok' is a tokenizer only: it has no attention"),
    ]
    for sql, message in exact:
        got = assert_error(con, sql)
        assert got == message, "%s\n got %r\nwant %r" % (sql, got, message)
    for args in (("NULL", "0", "1"), ("'att-jina'", "NULL", "1"), ("'att-jina'", "0", "NULL"),
                 ("'att-jina'", "0", "1", "NULL"), ("'nope'", "NULL", "1")):
        assert one(con, "SELECT embed_attention_bias(%s)" % ", ".join(args)) is None, args
    for args in ("NULL, 'a'", "'att-bert', NULL", "'att-bert', 'a', NULL", "'att-bert', 'a', 1, NULL", "'nope', NULL"):
        assert one(con, "SELECT count(*) FROM embed_attention(%s)" % args) == 0, args
    # a number is a text, as everywhere a text is tokenized
    assert one(con, "SELECT count(*) FROM embed_attention('att-bert', 42, 1, 0)") == 9
    con.execute("SELECT embed_unload('att-tok'), embed_unload('lesson')")


def run_walkthrough():
    script = open(os.path.join(ROOT, "sql", "attention.sql")).read()
    sqlite3 = shutil.which("sqlite3")
    assert sqlite3, "the sqlite3 shell is not installed (scripts/deps.sh installs it)"
    out = subprocess.run([sqlite3, "-list", "-noheader", "-cmd", ".load '%s'" % EXT, ":memory:"], input=script,
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and not out.stderr, out.stderr[:2000]
    lines = out.stdout.splitlines()
    sections, current = {}, None
    for line in lines:
        if line.startswith("== "):
            current = int(line[3:].split(".")[0])
            sections[current] = []
        elif current and "|" in line:
            sections[current].append(line.split("|"))
    return sections


@test
def the_attention_walkthrough_prints_what_the_formulas_say():
    s = run_walkthrough()
    assert [(r[0], r[1], r[2], float(r[3])) for r in s[1]] == \
        [(str(l), str(h), "14", 1.0) for l in (1, 2) for h in range(4)], s[1]
    # 2: the top keys of each "left", recomputed from the reference states of bert-tiny-uncased
    case = ref("bert-tiny-uncased")["cases"]["left_phone"]
    tops, pairs = s[2][:4], s[2][4:]
    for (layer, query, shown), (l, q) in zip(tops, ((1, 2), (1, 7), (2, 2), (2, 7))):
        assert (int(layer), int(query)) == (l, q)
        w = expected("bert-tiny-uncased", case, l, [q])
        mean = [sum(w[(h, q)][j] for h in range(4)) / 4 for j in range(14)]
        best = sorted(range(14), key=lambda j: -mean[j])[:3]
        assert shown == ", ".join("%s (%d) %.3f" % (case["tokens"][j], j, mean[j]) for j in best), (shown, best)
    w = expected("bert-tiny-uncased", case, 2, [2, 7])
    assert [(int(h), int(q), int(k)) for h, q, k, _ in pairs] == [(h, q, 9 - q) for h in range(4) for q in (2, 7)]
    for h, q, k, weight in pairs:
        assert abs(float(weight) - w[(int(h), int(q))][int(k)]) <= 5e-5, (h, q, k, weight)
    # 3: ALiBi's bias per head at each distance, and head 0 (slope 1/4) fading with distance
    slopes = alibi_slopes(4)
    for d, values in s[3][:4]:
        assert json.loads(values) == [-x * int(d) for x in slopes], (d, values)
    fading = [(int(r[0]), float(r[1]), float(r[2])) for r in s[3][4:]]
    assert [d for d, _, _ in fading] == [0, 1, 4, 16, 64]
    assert all(a[1] > b[1] for a, b in zip(fading, fading[1:])) and fading[-1][1] < fading[-1][2], fading
    # 4: -inf past the half window of the local layers only; those keys weigh 0, all of them
    assert s[4][:4] == [[str(l), "00" * 16, ("000080FF" if l in (2, 3) else "00000000") * 4] for l in (1, 2, 3, 4)]
    n = len(json.loads(one(con, "SELECT embed_token_ids('att-modern', replace(hex(zeroblob(100)), '00', 'the cat '))")))
    outside = 4 * 2 * sum(n - d for d in range(65, n))
    assert [r[:3] for r in s[4][4:8]] == [[str(l), str(outside), str(0 if l in (2, 3) else outside)] for l in (1, 2, 3, 4)]
