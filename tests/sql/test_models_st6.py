"""Folders as sentence-transformers 6 and model2vec save them: static models against Hugging Face's
own references (tests/fixtures/models3, README3), a model2vec folder built here from static-tiny's
weights against the mean of its non-UNK rows computed here, the older golden models re-saved in
the sentence-transformers 6 layout against their own references, the six pooling modes and Dense
modules against the same formulas written here in double precision over contextual_embedding's
rows."""
import json
import math
import os
import random
import shutil
import struct
import tempfile

from harness import test, connect, one, floats, assert_close, assert_error, FIXTURES, safetensors_header

M3 = os.path.join(FIXTURES, "models3")
MINILM = os.path.join(FIXTURES, "models", "minilm-tiny-st")
TMP = tempfile.mkdtemp(prefix="embed-st6-")
con = connect()


def ref(name):
    with open(os.path.join(M3, "refs", name + ".json")) as f:
        return json.load(f)


PACK = {"F32": "f", "F16": "e", "I8": "b", "I64": "q", "I32": "i"}


class Tensor:
    """A tensor to write: its safetensors dtype, shape and flat values (plain Python: no numpy)."""

    def __init__(self, dtype, shape, values):
        self.dtype, self.shape, self.values = dtype, list(shape), list(values)

    def data(self):
        return struct.pack("<%d%s" % (len(self.values), PACK[self.dtype]), *self.values)

    def stored(self):
        """The values as the file holds them (float16 rounding included), as floats."""
        return [float(x) for x in struct.unpack("<%d%s" % (len(self.values), PACK[self.dtype]), self.data())]


def write_safetensors(path, tensors):
    header, blobs, at = {}, [], 0
    for name, t in tensors.items():
        b = t.data()
        header[name] = {"dtype": t.dtype, "shape": t.shape, "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_tensor(path, name):
    """A 2-D F32 tensor of a safetensors file as a list of rows."""
    with open(path, "rb") as f:
        data = f.read()
    head, start = safetensors_header(data)
    t = head[name]
    a, b = t["data_offsets"]
    flat = struct.unpack("<%df" % ((b - a) // 4), data[start + a:start + b])
    cols = t["shape"][1]
    return [list(flat[i:i + cols]) for i in range(0, len(flat), cols)]


def matvec(w, x):
    return [sum(wi * xi for wi, xi in zip(row, x)) for row in w]


def copy_folder(src, name):
    dst = os.path.join(TMP, name)
    shutil.copytree(src, dst)
    return dst


def write_json(folder, file, obj):
    os.makedirs(os.path.dirname(os.path.join(folder, file)), exist_ok=True)
    with open(os.path.join(folder, file), "w") as f:
        json.dump(obj, f)


def load(name, path):
    con.execute("SELECT embed_load(?, ?)", (name, path))
    return name


def normalized(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / max(n, 1e-12) for x in v]


# ---------- static models: sentence-transformers' StaticEmbedding ----------

@test
def static_models_equal_sentence_transformers():
    for folder in ("static-tiny", "static-tiny-norm"):
        r = ref(folder)
        name = load("st6-" + folder, os.path.join(M3, folder))
        for cid in r["case_ids"]:
            c = r["cases"][cid]
            got = floats(one(con, "SELECT embed(?, ?)", name, c["text"]))
            assert_close(got, c["embedding"], 1e-5, "%s %s" % (name, cid))
            # the ids without special tokens are what the mean is over
            ids = [row[0] for row in con.execute(
                "SELECT token_id FROM embed_tokens(?, ?) WHERE start IS NOT NULL", (name, c["text"]))]
            assert ids == c["input_ids"], (name, cid, ids[:8], c["input_ids"][:8])


@test
def a_static_model_shows_its_table_and_has_no_context():
    table = read_tensor(os.path.join(M3, "static-tiny", "model.safetensors"), "embedding.weight")
    rows = con.execute("SELECT token_id, token_embedding, input_embedding, contextual_embedding "
                       "FROM embed_tokens('st6-static-tiny', 'the left side')").fetchall()
    for tid, tok, inp, ctx in rows:
        assert_close(floats(tok), list(table[tid]), 0, "table row %d" % tid)
        assert inp == tok and ctx is None
    assert_error(con, "SELECT contextual_embedding('st6-static-tiny', 'left', 1)", "contextual_embedding",
                 "static embedding model")
    arch, dims, pooling, layers = con.execute(
        "SELECT architecture, dimensions, pooling, layers FROM embed_models WHERE name = 'st6-static-tiny'").fetchone()
    assert (arch, dims, pooling, layers) == ("static", 32, "mean", 0)
    assert_error(con, "SELECT embed_load('st6-int8', ?, '{\"weights\": \"int8\"}')", "static",
                 args=(os.path.join(M3, "static-tiny"),))


@test
def an_empty_text_is_a_zero_vector():
    assert floats(one(con, "SELECT embed('st6-static-tiny', '')")) == [0.0] * 32


# ---------- model2vec's own layout ----------

def model2vec_folder(name, embeddings, normalize, extra=None, modules=False):
    d = os.path.join(TMP, name)
    os.makedirs(d)
    shutil.copy(os.path.join(M3, "static-tiny", "tokenizer.json"), d)
    tensors = {"embeddings": embeddings}
    tensors.update(extra or {})
    write_safetensors(os.path.join(d, "model.safetensors"), tensors)
    write_json(d, "config.json", {"model_type": "model2vec", "normalize": normalize, "hidden_dim": 32})
    if modules:
        mods = [{"idx": 0, "name": "0", "path": ".", "type": "sentence_transformers.models.StaticEmbedding"}]
        if normalize:
            mods.append({"idx": 1, "name": "1", "path": "1_Normalize", "type": "sentence_transformers.models.Normalize"})
        write_json(d, "modules.json", mods)
    return d


def model2vec_expected(table, text, normalize):
    """model2vec: the ids without specials (from the ST reference's tokenizer), UNK dropped, mean."""
    ids = [row[0] for row in con.execute(
        "SELECT token_id FROM embed_tokens('st6-static-tiny', ?) WHERE start IS NOT NULL", (text,))]
    unk = one(con, "SELECT token_id FROM embed_tokens('st6-static-tiny', '[UNK]') WHERE start IS NOT NULL")
    ids = [i for i in ids if i != unk][:512]
    dims = len(table[0])
    v = [0.0] * dims if not ids else [sum(table[i][j] for i in ids) / len(ids) for j in range(dims)]
    return normalized(v) if normalize else v, len(ids)


TEXTS = ["I left my phone on the left side of the table.", "Ω≈ç√ ∫˜µ ≤≥÷ 🍕 [UNK] unknown", "",
         "time flies like an arrow; fruit flies like a banana"]


@test
def model2vec_folders_drop_unknown_tokens():
    table = read_tensor(os.path.join(M3, "static-tiny", "model.safetensors"), "embedding.weight")
    flat = [x for row in table for x in row]
    for dtype, tol in (("F32", 1e-6), ("F16", 2e-3)):
        t = Tensor(dtype, (len(table), 32), flat)
        stored = t.stored()
        stored = [stored[i:i + 32] for i in range(0, len(stored), 32)]
        for normalize, modules in ((True, False), (False, False), (True, True)):
            name = "st6-m2v-%s-%d-%d" % (dtype, normalize, modules)
            load(name, model2vec_folder(name, t, normalize, modules=modules))
            for text in TEXTS:
                want, n = model2vec_expected(stored, text, normalize)
                got = floats(one(con, "SELECT embed(?, ?)", name, text))
                assert_close(got, want, tol, "%s %r" % (name, text))
            arch = one(con, "SELECT architecture FROM embed_models WHERE name = ?", name)
            assert arch == "model2vec"
    ids = [r[0] for r in con.execute("SELECT token_id FROM embed_tokens('st6-static-tiny', ?)", (TEXTS[1],))]
    saw_unk = one(con, "SELECT token_id FROM embed_tokens('st6-static-tiny', '[UNK]')") in ids
    assert saw_unk, "a case must hold an unknown token"


@test
def model2vec_int8_mapping_and_weights():
    rng = random.Random(7)
    vocab = len(read_tensor(os.path.join(M3, "static-tiny", "model.safetensors"), "embedding.weight"))
    codes = [rng.randint(-127, 127) for _ in range(64 * 32)]  # 64 shared rows
    mapping = [rng.randrange(64) for _ in range(vocab)]
    weights = Tensor("F32", (vocab,), [rng.uniform(0.1, 2.0) for _ in range(vocab)])
    extra = {"mapping": Tensor("I64", (vocab,), mapping), "weights": weights}
    load("st6-m2v-q", model2vec_folder("m2v-q", Tensor("I8", (64, 32), codes), True, extra))
    w = weights.stored()
    folded = [[codes[mapping[t] * 32 + j] * w[t] for j in range(32)] for t in range(vocab)]
    for text in TEXTS:
        want, _ = model2vec_expected(folded, text, True)
        assert_close(floats(one(con, "SELECT embed('st6-m2v-q', ?)", text)), want, 1e-5, text)
    bad = model2vec_folder("m2v-bad", Tensor("I8", (64, 32), codes), True,
                           {"mapping": Tensor("I64", (vocab,), [64] * vocab)})
    assert_error(con, "SELECT embed_load('st6-m2v-bad', ?)", "mapping", args=(bad,))


# ---------- the older golden models in sentence-transformers 6's layout ----------

ST6_TYPES = {"Transformer": "sentence_transformers.base.modules.transformer.Transformer",
             "Pooling": "sentence_transformers.sentence_transformer.modules.pooling.Pooling",
             "Normalize": "sentence_transformers.base.modules.normalize.Normalize"}
OLD_MODE_KEYS = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean",
                 "pooling_mode_max_tokens": "max", "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                 "pooling_mode_weightedmean_tokens": "weightedmean", "pooling_mode_lasttoken": "lasttoken"}


def resave_st6(src, name):
    """src re-saved as sentence-transformers 6 writes it: new type names, the new Pooling keys."""
    d = copy_folder(src, name)
    with open(os.path.join(d, "modules.json")) as f:
        mods = json.load(f)
    for m in mods:
        m["type"] = ST6_TYPES[m["type"].rsplit(".", 1)[1]]
        if m["type"].endswith("Pooling"):
            with open(os.path.join(d, m["path"], "config.json")) as f:
                old = json.load(f)
            mode = [v for k, v in OLD_MODE_KEYS.items() if old.get(k)]
            write_json(d, os.path.join(m["path"], "config.json"),
                       {"embedding_dimension": old["word_embedding_dimension"], "pooling_mode": mode[0],
                        "include_prompt": True})
    write_json(d, "modules.json", mods)
    return d


@test
def older_golden_models_resaved_by_sentence_transformers_6_give_the_same_vectors():
    pairs = [(MINILM, os.path.join(FIXTURES, "models", "refs", "minilm-tiny-st.json")),
             (os.path.join(FIXTURES, "models2", "xlmr-tiny-st"),
              os.path.join(FIXTURES, "models2", "refs", "xlmr-tiny-st.json"))]
    for src, ref_path in pairs:
        base = os.path.basename(src)
        load("st6-old-" + base, src)
        load("st6-new-" + base, resave_st6(src, "st6-" + base))
        with open(ref_path) as f:
            r = json.load(f)
        cases = [r["cases"][c] for c in r["case_ids"] if r["cases"][c]["kind"] == "single"][:8]
        assert cases
        for c in cases:
            new = floats(one(con, "SELECT embed(?, ?)", "st6-new-" + base, c["text"]))
            old = floats(one(con, "SELECT embed(?, ?)", "st6-old-" + base, c["text"]))
            assert new == old, base
            want = c.get("pooled_mean_normalized") or c.get("st_embedding") or c.get("sentence_embedding")
            if want:
                assert_close(new, want, 1e-5, base)
        fp = con.execute("SELECT count(DISTINCT fingerprint) FROM embed_models WHERE name IN (?, ?)",
                         ("st6-old-" + base, "st6-new-" + base)).fetchone()[0]
        assert fp == 1, "the layout alone does not change the fingerprint"


# ---------- the six pooling modes, against formulas over contextual_embedding ----------

def token_rows(model, text):
    return [floats(r[0]) for r in con.execute(
        "SELECT contextual_embedding FROM embed_tokens(?, ?) ORDER BY position", (model, text))]


def pool_expected(rows, mode, first=0):
    n, dims = len(rows), len(rows[0])
    kept = rows[first:]
    if not kept:
        return [0.0] * dims
    col = lambda j: [r[j] for r in kept]  # noqa: E731
    if mode == "mean":
        return [sum(col(j)) / len(kept) for j in range(dims)]
    if mode == "mean_sqrt_len_tokens":
        return [sum(col(j)) / math.sqrt(len(kept)) for j in range(dims)]
    if mode == "weightedmean":
        w = list(range(first + 1, n + 1))
        return [sum(wi * x for wi, x in zip(w, col(j))) / sum(w) for j in range(dims)]
    if mode == "max":
        return [max(col(j)) for j in range(dims)]
    return list(kept[0]) if mode == "cls" else list(rows[-1])


def pooling_folder(name, mode, include_prompt=True, prompts=None, dense=None):
    d = resave_st6(MINILM, name)
    write_json(d, "1_Pooling/config.json",
               {"embedding_dimension": 48, "pooling_mode": mode, "include_prompt": include_prompt})
    if prompts is not None:
        write_json(d, "config_sentence_transformers.json", prompts)
    if dense:
        with open(os.path.join(d, "modules.json")) as f:
            mods = json.load(f)
        mods = [m for m in mods if not m["type"].endswith("Normalize")]
        for i, (w, b, act) in enumerate(dense):
            path = "%d_Dense" % (2 + i)
            cfg = {"in_features": len(w[0]), "out_features": len(w), "bias": b is not None,
                   "activation_function": act}
            write_json(d, os.path.join(path, "config.json"), cfg)
            t = {"linear.weight": Tensor("F32", (len(w), len(w[0])), [x for row in w for x in row])}
            if b is not None:
                t["linear.bias"] = Tensor("F32", (len(b),), b)
            write_safetensors(os.path.join(d, path, "model.safetensors"), t)
            mods.append({"idx": len(mods), "name": str(len(mods)), "path": path,
                         "type": "sentence_transformers.base.modules.dense.Dense"})
        mods.append({"idx": len(mods), "name": str(len(mods)), "path": "9_Normalize",
                     "type": ST6_TYPES["Normalize"]})
        write_json(d, "modules.json", mods)
    return d


@test
def every_pooling_mode_equals_its_formula():
    load("st6-ctx", MINILM)
    for mode in ("mean", "cls", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"):
        name = load("st6-pool-" + mode, pooling_folder("pool-" + mode, mode))
        assert one(con, "SELECT pooling FROM embed_models WHERE name = ?", name) == mode
        for text in TEXTS[:2] + TEXTS[3:]:
            want = normalized(pool_expected(token_rows("st6-ctx", text), mode))
            assert_close(floats(one(con, "SELECT embed(?, ?)", name, text)), want, 2e-6, "%s %r" % (mode, text))
            # the same mode asked of embed() on the plain folder
            got = floats(one(con, "SELECT embed('st6-ctx', ?, json_object('pooling', ?))", text, mode))
            assert_close(got, want, 2e-6, mode)


@test
def dense_modules_follow_the_pooling():
    rng = random.Random(3)
    f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]  # noqa: E731  (as the file stores it)
    w1 = [[f32(rng.gauss(0, 0.2)) for _ in range(48)] for _ in range(64)]
    b1 = [f32(rng.gauss(0, 0.1)) for _ in range(64)]
    w2 = [[f32(rng.gauss(0, 0.2)) for _ in range(64)] for _ in range(24)]
    d = pooling_folder("dense", "mean", dense=[(w1, b1, "torch.nn.modules.activation.Tanh"),
                                               (w2, None, "torch.nn.modules.linear.Identity")])
    load("st6-dense", d)
    assert one(con, "SELECT dimensions FROM embed_models WHERE name = 'st6-dense'") == 24
    for text in TEXTS[:2] + TEXTS[3:]:
        pooled = pool_expected(token_rows("st6-ctx", text), "mean")
        hidden = [math.tanh(v + b) for v, b in zip(matvec(w1, pooled), b1)]
        want = normalized(matvec(w2, hidden))
        got = floats(one(con, "SELECT embed('st6-dense', ?)", text))
        assert_close(got, want, 2e-6, text)
        assert len(floats(one(con, "SELECT embed('st6-dense', ?, '{\"dims\": 8}')", text))) == 8
    assert_error(con, "SELECT embed('st6-dense', 'x', '{\"dims\": 25}')", "dims", "24")
    # a Dense module whose in_features does not match is refused by name
    with open(os.path.join(d, "2_Dense", "config.json")) as f:
        cfg = json.load(f)
    cfg["in_features"] = 47
    write_json(d, "2_Dense/config.json", cfg)
    assert_error(con, "SELECT embed_load('st6-dense-bad', ?)", "2_Dense/config.json", "in_features", args=(d,))
    cfg["in_features"], cfg["activation_function"] = 48, "my.own.Activation"
    write_json(d, "2_Dense/config.json", cfg)
    assert_error(con, "SELECT embed_load('st6-dense-bad', ?)", "activation_function", args=(d,))
    os.remove(os.path.join(d, "2_Dense", "model.safetensors"))
    cfg["activation_function"] = "torch.nn.modules.activation.Tanh"
    write_json(d, "2_Dense/config.json", cfg)
    assert_error(con, "SELECT embed_load('st6-dense-bad', ?)", "2_Dense", "model.safetensors", args=(d,))


@test
def unknown_modules_are_named():
    d = resave_st6(MINILM, "lstm")
    with open(os.path.join(d, "modules.json")) as f:
        mods = json.load(f)
    mods.insert(2, {"idx": 9, "name": "9", "path": "9_LSTM", "type": "sentence_transformers.models.LSTM"})
    write_json(d, "modules.json", mods)
    assert_error(con, "SELECT embed_load('st6-lstm', ?)", "modules.json", "sentence_transformers.models.LSTM",
                 args=(d,))


@test
def a_static_model_reads_every_token():
    # sentence-transformers' StaticEmbedding has no max_seq_length: a tokenizer_config.json limit
    # does not cut its texts
    d = copy_folder(os.path.join(M3, "static-tiny"), "static-limited")
    write_json(d, "tokenizer_config.json", {"model_max_length": 8})
    load("st6-limited", d)
    text = " ".join(TEXTS)
    assert floats(one(con, "SELECT embed('st6-limited', ?)", text)) == \
        floats(one(con, "SELECT embed('st6-static-tiny', ?)", text))
    assert one(con, "SELECT max_tokens FROM embed_models WHERE name = 'st6-limited'") is None
