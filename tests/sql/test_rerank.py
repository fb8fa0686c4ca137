"""Cross-encoders: embed_rerank(model, query, text) and embed_rerank_batch(model, query, texts)
against tests/references/rerank/expected.json, the logits that tests/references/make_rerank.py
computed (and the scores sentence-transformers makes of them: Sigmoid for a single label unless the
folder names another activation) with PyTorch modules written from transformers' modeling code (BERT's classifier over
its pooler, RoBERTa's classification head, ModernBERT's prediction head with mean and cls
pooling), on tiny cross-encoders built from the golden tiny models plus seeded heads: short
pairs, pairs truncated longest first (only the text long, only the query, both, and a case where
tokenizers' early exit keeps other lengths than the classic rule), several scripts, an empty
text (the query alone, as transformers tokenizes it). Also: the sentence-transformers activations (v4's "sentence_transformers.activation_fn"
and the older key), a 2-label head's error, an embedding model's error, NULLs, bad arguments,
int8 weights, and that a cross-encoder folder still makes embeddings."""
import json
import math
import os
import shutil
import sqlite3
import struct
import tempfile

from harness import FIXTURES, ROOT, assert_error, connect, floats, one, test

REF = os.path.join(ROOT, "tests", "references", "rerank")
EXPECTED = json.load(open(os.path.join(REF, "expected.json"), encoding="utf-8"))
TOL = 1e-5


def loaded(names=None, options=None, suffix=""):
    """A connection with the reference folders loaded (as name + suffix: the registry is the
    process's, and one folder has one set of weights under one name)."""
    con = connect()
    for name in names or EXPECTED["models"]:
        if options:
            con.execute("SELECT embed_load(?, ?, ?)", (name + suffix, os.path.join(REF, name), options))
        else:
            con.execute("SELECT embed_load(?, ?)", (name, os.path.join(REF, name)))
    return con


def cases(model):
    return [c for c in EXPECTED["cases"] if c["model"] == model]


def check_one_at_a_time(model):
    con = loaded([model])
    for c in cases(model):
        got = one(con, "SELECT embed_rerank(?, ?, ?)", model, c["query"], c["text"])
        assert abs(got - c["score"]) <= TOL, (model, c["query"][:30], c["text"][:30], got, c["score"])


@test
def bert_scores_equal_the_references():
    check_one_at_a_time("bert")


@test
def xlm_roberta_scores_equal_the_references():
    check_one_at_a_time("xlmr")


@test
def modernbert_scores_equal_the_references():
    check_one_at_a_time("modernbert")  # mean pooling over 145-160 tokens: sliding-window layers too
    check_one_at_a_time("modernbert-cls")  # cls pooling, a dense bias


@test
def the_references_cover_truncation():
    for model in ("bert", "xlmr", "modernbert", "modernbert-cls"):
        assert any(c["truncated"] for c in cases(model)), model
        assert any(not c["truncated"] for c in cases(model)), model
        assert all(c["tokens"] <= EXPECTED["models"][model]["max_tokens"] for c in cases(model))
    assert any(c["early_exit_differs"] for c in EXPECTED["cases"])


@test
def sigmoid_activation_from_sentence_transformers_settings():
    for model in ("bert-sigmoid", "bert-sigmoid-v3"):
        check_one_at_a_time(model)
        for c in cases(model):
            assert abs(c["score"] - 1 / (1 + math.exp(-c["logits"][0]))) < 1e-6
    raw = {(c["query"], c["text"]): c["logits"][0] for c in cases("bert")}
    con = loaded(["bert", "bert-sigmoid"])
    for c in cases("bert-sigmoid"):  # the same head: the sigmoid of the raw logit
        s = one(con, "SELECT embed_rerank('bert-sigmoid', ?, ?)", c["query"], c["text"])
        assert abs(s - 1 / (1 + math.exp(-raw[(c["query"], c["text"])]))) <= TOL


@test
def a_single_label_folder_naming_no_activation_gets_sentence_transformers_sigmoid():
    con = loaded(["bert", "xlmr", "modernbert", "bert-2labels"])
    for model in ("bert", "xlmr", "modernbert"):
        assert EXPECTED["models"][model]["activation"] is None
        for c in cases(model):
            logit = c["logits"][0]
            assert abs(c["score"] - 1 / (1 + math.exp(-logit))) < 1e-6
            s = one(con, "SELECT embed_rerank(?, ?, ?)", model, c["query"], c["text"])
            assert abs(s - c["score"]) <= TOL
            # the logit on request, as transformers' model(**inputs).logits
            raw = one(con, "SELECT embed_rerank(?, ?, ?, '{\"activation\": \"none\"}')", model, c["query"], c["text"])
            assert abs(raw - logit) <= TOL
            sig = one(con, "SELECT embed_rerank(?, ?, ?, '{\"activation\": \"sigmoid\"}')", model, c["query"],
                      c["text"])
            assert abs(sig - c["score"]) <= TOL
        texts = [c["text"] for c in cases(model)]
        q = cases(model)[0]["query"]
        rows = con.execute("SELECT score FROM embed_rerank_batch(?, ?, ?, '{\"activation\": \"none\"}')",
                           (model, q, json.dumps(texts))).fetchall()
        want = [one(con, "SELECT embed_rerank(?, ?, ?, '{\"activation\": \"none\"}')", model, q, t) for t in texts]
        assert max(abs(r[0] - w) for r, w in zip(rows, want)) <= TOL
    assert_error(con, "SELECT embed_rerank('bert', 'q', 't', '{\"activation\": \"relu\"}')", "embed_rerank:",
                 "activation", "none")
    assert_error(con, "SELECT embed_rerank('bert', 'q', 't', '{\"scale\": 1}')", "embed_rerank:", "unknown option")
    assert_error(con, "SELECT * FROM embed_rerank_batch('bert', 'q', '[\"t\"]', '{\"activation\": 1}')",
                 "embed_rerank_batch:", "activation")


@test
def an_empty_text_is_scored_as_the_query_alone():
    # transformers' tokenizer(query, "") encodes the query alone ([CLS] panda [SEP]): the
    # references build the pair that way
    con = loaded(["bert", "xlmr", "modernbert"])
    for model in ("bert", "xlmr", "modernbert"):
        c = [c for c in cases(model) if c["text"] == ""][0]
        single = json.loads(one(con, "SELECT embed_token_ids(?, ?)", model, c["query"]))
        assert c["tokens"] == len(single)
        s = one(con, "SELECT embed_rerank(?, ?, '')", model, c["query"])
        assert abs(s - c["score"]) <= TOL, (model, s, c["score"])
        b = con.execute("SELECT score FROM embed_rerank_batch(?, ?, '[\"\", \"x\"]')", (model, c["query"])).fetchone()
        assert abs(b[0] - c["score"]) <= TOL


@test
def batch_equals_one_at_a_time():
    for model in ("bert", "xlmr", "modernbert", "bert-sigmoid"):
        con = loaded([model])
        cs = cases(model)
        for query in {c["query"] for c in cs}:
            mine = [c for c in cs if c["query"] == query]
            texts = [c["text"] for c in mine]
            rows = con.execute("SELECT i, text, score FROM embed_rerank_batch(?, ?, ?)",
                               (model, query, json.dumps(texts))).fetchall()
            assert [r[0] for r in rows] == list(range(len(texts)))
            assert [r[1] for r in rows] == texts
            for r, c in zip(rows, mine):
                assert abs(r[2] - c["score"]) <= TOL, (model, r, c["score"])
        # every text of the references against one query, in one batch, as the scalar gives them
        q = cs[0]["query"]
        texts = [c["text"] for c in cs] * 5  # 45: two batches of the encoder
        scalar = [one(con, "SELECT embed_rerank(?, ?, ?)", model, q, t) for t in texts]
        batch = [r[0] for r in con.execute("SELECT score FROM embed_rerank_batch(?, ?, ?)",
                                           (model, q, json.dumps(texts)))]
        assert len(batch) == 45
        assert max(abs(a - b) for a, b in zip(scalar, batch)) <= TOL


@test
def batch_from_a_table_with_json_group_array():
    con = loaded(["bert"])
    cs = cases("bert")[:4]
    con.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT)")
    con.executemany("INSERT INTO docs(body) VALUES (?)", [(c["text"],) for c in cs])
    rows = con.execute(
        "WITH l AS (SELECT json_group_array(body) AS texts FROM (SELECT body FROM docs ORDER BY id)) "
        "SELECT d.id, r.score FROM l, embed_rerank_batch('bert', ?, l.texts) AS r "
        "JOIN docs d ON d.id = r.i + 1 ORDER BY r.score DESC", (cs[0]["query"],)).fetchall()
    want = sorted(((i + 1, c["score"]) for i, c in enumerate(cs) if c["query"] == cs[0]["query"]),
                  key=lambda x: -x[1])
    got = [r for r in rows if r[0] in {w[0] for w in want}]
    assert [g[0] for g in got] == [w[0] for w in want]


@test
def nulls():
    con = loaded(["bert"])
    assert one(con, "SELECT embed_rerank('bert', NULL, 'x')") is None
    assert one(con, "SELECT embed_rerank('bert', 'x', NULL)") is None
    assert one(con, "SELECT embed_rerank(NULL, 'x', 'y')") is None
    assert con.execute("SELECT * FROM embed_rerank_batch('bert', NULL, '[\"a\"]')").fetchall() == []
    assert con.execute("SELECT * FROM embed_rerank_batch('bert', 'q', NULL)").fetchall() == []
    rows = con.execute("SELECT i, text, score FROM embed_rerank_batch('bert', 'q', '[\"a\", null, \"b\"]')").fetchall()
    assert [r[0] for r in rows] == [0, 1, 2] and rows[1][1:] == (None, None)
    assert rows[0][2] == one(con, "SELECT embed_rerank('bert', 'q', 'a')")
    assert rows[2][2] == one(con, "SELECT embed_rerank('bert', 'q', 'b')")
    assert con.execute("SELECT * FROM embed_rerank_batch('bert', 'q', '[]')").fetchall() == []


@test
def an_embedding_model_has_no_classifier():
    con = connect()
    con.execute("SELECT embed_load('mini', ?)", (os.path.join(FIXTURES, "models", "minilm-tiny-st"),))
    assert_error(con, "SELECT embed_rerank('mini', 'q', 't')", "embed_rerank: model 'mini' has no classifier",
                 "ForSequenceClassification")
    assert_error(con, "SELECT * FROM embed_rerank_batch('mini', 'q', '[\"t\"]')",
                 "embed_rerank_batch: model 'mini' has no classifier")


@test
def two_labels_are_an_error_naming_the_count():
    con = loaded(["bert-2labels"])
    assert_error(con, "SELECT embed_rerank('bert-2labels', 'q', 't')", "embed_rerank:", "2 labels")
    info = con.execute("SELECT * FROM embed_models WHERE name = 'bert-2labels'").fetchone()
    assert info is not None


def altered_copy(src, tmp, config=None, head=None):
    """Reference folder src copied under tmp with config.json's keys updated from `config` and
    head.safetensors rewritten with `head` ({name: list of floats as shape [n]}) replacing tensors."""
    dst = os.path.join(tmp, os.path.basename(src))
    shutil.copytree(os.path.join(REF, src), dst)
    if config:
        cfg = json.load(open(os.path.join(dst, "config.json")))
        cfg.update(config)
        json.dump(cfg, open(os.path.join(dst, "config.json"), "w"))
    if head:
        data = open(os.path.join(dst, "head.safetensors"), "rb").read()
        n = struct.unpack("<Q", data[:8])[0]
        old = json.loads(data[8:8 + n])
        tensors = {k: (v["shape"], data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
                   for k, v in old.items() if k != "__metadata__"}
        tensors.update({k: ([len(v)], struct.pack("<%df" % len(v), *v)) for k, v in head.items()})
        header, body = {}, b""
        for k, (shape, raw) in tensors.items():
            header[k] = {"dtype": "F32", "shape": shape, "data_offsets": [len(body), len(body) + len(raw)]}
            body += raw
        h = json.dumps(header).encode()
        open(os.path.join(dst, "head.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + body)
    return dst


def head_error(folder):
    """The message of loading folder as a cross-encoder and scoring one pair with it."""
    con = connect()
    try:
        con.execute("SELECT embed_load('bad-head', ?)", (folder,))
        con.execute("SELECT embed_rerank('bad-head', 'q', 't')").fetchall()
    except sqlite3.Error as e:
        return str(e)
    raise AssertionError("no error from %s" % folder)


@test
def malformed_heads_are_named_as_they_are():
    tmp = tempfile.mkdtemp()
    try:
        # a bias is a vector: shape [2] for one label is named as [2], against [1]
        msg = head_error(altered_copy("bert", tmp, head={"classifier.bias": [0.5, 0.25]}))
        assert "tensor 'classifier.bias' has shape [2], expected [1] (num_labels 1)" in msg, msg
        shutil.rmtree(os.path.join(tmp, "bert"))
        msg = head_error(altered_copy("bert", tmp, head={"classifier.weight": [0.5] * 32}))
        assert "tensor 'classifier.weight' has shape [32], expected [1, 32] (num_labels 1)" in msg, msg
        # settings of the wrong kind are named as such, not shown as an empty name
        shutil.rmtree(os.path.join(tmp, "bert"))
        msg = head_error(altered_copy("bert", tmp, config={"sentence_transformers": {"activation_fn": 5}}))
        want = 'activation_fn must be a string such as "torch.nn.modules.activation.Sigmoid", not a number'
        assert want in msg, msg
        msg = head_error(altered_copy("modernbert", tmp, config={"classifier_activation": 5}))
        assert "config.json: classifier_activation must be a string, not a number" in msg, msg
        shutil.rmtree(os.path.join(tmp, "modernbert"))
        msg = head_error(altered_copy("modernbert", tmp, config={"classifier_pooling": ["mean"]}))
        assert "config.json: classifier_pooling must be a string, not an array" in msg, msg
    finally:
        shutil.rmtree(tmp)


@test
def bad_arguments():
    con = loaded(["bert"])
    assert_error(con, "SELECT embed_rerank('nope', 'q', 't')", "embed_rerank:", "nope")
    assert_error(con, "SELECT embed_rerank('bert', x'00', 't')", "embed_rerank:", "query")
    assert_error(con, "SELECT embed_rerank('bert', 'q')", "embed_rerank(model, query, text)")
    assert_error(con, "SELECT * FROM embed_rerank_batch('bert', 'q', 'not json')", "embed_rerank_batch:",
                 "JSON array")
    assert_error(con, "SELECT * FROM embed_rerank_batch('bert', 'q', '{\"a\": 1}')", "JSON array")
    assert_error(con, "SELECT * FROM embed_rerank_batch('bert', 'q', '[\"a\", 3]')", "texts[1] is not a string")
    assert_error(con, "SELECT * FROM embed_rerank_batch('bert', 'q', 42)", "JSON array")
    # the array is the whole argument: text after it, and a NUL in an element, are refused
    batch = "SELECT * FROM embed_rerank_batch('bert', 'q', ?)"
    assert_error(con, batch, "embed_rerank_batch: texts has text after its JSON array (at byte 6): 'junk'",
                 args=('["a"] junk',))
    assert_error(con, batch, "texts has text after its JSON array (at byte 5): ', \"b\"]'", args=('["a"], "b"]',))
    assert_error(con, batch, "embed_rerank_batch: texts[0] contains a NUL character (\\u0000)", args=('["a\\u0000b"]',))
    assert_error(con, batch, "texts[2] contains a NUL character", args=('[null, "x\\"\\\\", "\\u0000"]',))
    assert_error(con, batch, "embed_rerank_batch: texts contains a NUL character (at byte 3)", args=('["a\x00b"]',))
    assert_error(con, "SELECT * FROM embed_rerank_batch('bert', 'q', CAST(x'5b2261ff62225d' AS TEXT))",
                 "embed_rerank_batch: texts is not valid UTF-8 (at byte 3)")
    # an escaped backslash before u0000 is the text \u0000, and white space may follow the array
    assert [r[0] for r in con.execute("SELECT text FROM embed_rerank_batch('bert', 'q', ?)",
                                      ('["\\\\u0000", null] \n',))] == ["\\u0000", None]
    assert_error(con, "SELECT * FROM embed_rerank_batch('bert', 'q')", "needs a model, a query and texts")
    assert_error(con, "SELECT * FROM embed_rerank_batch('nope', 'q', '[\"a\"]')", "embed_rerank_batch:", "nope")
    # numbers are texts, as embed() takes them
    assert one(con, "SELECT embed_rerank('bert', 42, 7)") == one(con, "SELECT embed_rerank('bert', '42', '7')")


@test
def int8_weights_score_close():
    con = loaded(["bert", "xlmr", "modernbert"], '{"weights": "int8"}', "_int8")
    for model in ("bert", "xlmr", "modernbert"):
        for c in cases(model):
            got = one(con, "SELECT embed_rerank(?, ?, ?)", model + "_int8", c["query"], c["text"])
            assert math.isfinite(got) and abs(got - c["score"]) < 0.1, (model, got, c["score"])


@test
def a_cross_encoder_folder_still_makes_embeddings():
    con = loaded(["bert", "xlmr"])
    src = {"bert": "models/bert-tiny-prefixed", "xlmr": "models2/xlmr-tiny"}
    for name, folder in src.items():
        con.execute("SELECT embed_load(?, ?)", ("plain_" + name, os.path.join(FIXTURES, folder)))
        a = floats(one(con, "SELECT embed(?, 'a short text')", name))
        b = floats(one(con, "SELECT embed(?, 'a short text')", "plain_" + name))
        assert a == b, name
    row = con.execute("SELECT architecture FROM embed_models WHERE name = 'xlmr'").fetchone()
    assert row[0] == "xlm-roberta"


@test
def the_fingerprint_covers_the_head():
    con = loaded(["bert", "bert-2labels"])
    con.execute("SELECT embed_load('plain', ?)", (os.path.join(FIXTURES, "models", "bert-tiny-prefixed"),))
    fp = dict(con.execute("SELECT name, fingerprint FROM embed_models"))
    assert len({fp["bert"], fp["bert-2labels"], fp["plain"]}) == 3
