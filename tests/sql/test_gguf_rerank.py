"""GGUF rerankers: the BERT and XLM-R cross-encoders of tests/references/rerank written as llama.cpp's
converter writes BertForSequenceClassification and XLMRobertaForSequenceClassification
(tests/references/gguf_bert.py, gguf_xlmr.py: no pooling_type key, the head as cls / cls.output,
the output labels; BERT's pooler kept as cls, which the converter drops) in F32, F16 and Q8_0, and
read back by embed_load as cross-encoders: embed_rerank's scores against expected.json (Hugging
Face's, Sigmoid of the logit: a GGUF names no activation) within 1e-5 (F32, the folders' bound),
1e-3 (F16) and 2e-2 (Q8_0) on the pairs Hugging Face did not truncate (a GGUF has no
model_max_length: its pairs are cut only at the position table), equal to the folder's scores;
pooling_type 4 read as the missing key is; embed_rerank_batch and embed_index's rerank with the
GGUF model; embed() of a reranker file (the mean, as a cross-encoder folder gives); a 2-label
head; refusals: no cls.output, no cls (the converter's BERT file without its pooler), a
cls.output of the wrong shape. `make check-gguf` has llama.cpp score the same files."""
import json
import os
import shutil
import sys
import tempfile

from harness import FIXTURES, ROOT, assert_error, connect, floats, one, test

sys.path.insert(0, os.path.join(ROOT, "tests", "references"))
import gguf_bert  # noqa: E402
import gguf_xlmr  # noqa: E402

REF = os.path.join(ROOT, "tests", "references", "rerank")
EXPECTED = json.load(open(os.path.join(REF, "expected.json"), encoding="utf-8"))
BOUND = {"f32": 1e-5, "f16": 1e-3, "q8_0": 2e-2}
WRITER = {"bert": gguf_bert.write, "xlmr": lambda src, dst, t, mode="", labels=None: gguf_xlmr.write(
    src, dst, t, mode, labels)}
TMP = tempfile.mkdtemp(prefix="embed-gguf-rerank-")
con = connect()
for _m in WRITER:
    for _t in BOUND:
        _p = os.path.join(TMP, "%s-%s.gguf" % (_m, _t))
        WRITER[_m](os.path.join(REF, _m), _p, _t)
        one(con, "SELECT embed_load(?, ?)", "gr-%s-%s" % (_m, _t), _p)
    one(con, "SELECT embed_load(?, ?)", "gr-%s-folder" % _m, os.path.join(REF, _m))


def cases(model, truncated=False):
    return [c for c in EXPECTED["cases"] if c["model"] == model and c["truncated"] == truncated]


def path(name):
    return os.path.join(TMP, name)


@test
def scores_equal_hugging_faces():
    for m in WRITER:
        assert len(cases(m)) >= 4
        for t, bound in BOUND.items():
            worst = 0
            for c in cases(m):
                got = one(con, "SELECT embed_rerank(?, ?, ?)", "gr-%s-%s" % (m, t), c["query"], c["text"])
                worst = max(worst, abs(got - c["score"]))
            assert worst <= bound, (m, t, worst)


@test
def f32_scores_equal_the_folders_and_the_logit_is_hugging_faces():
    for m in WRITER:
        for c in cases(m) + cases(m, True):
            args = (c["query"], c["text"])
            a = one(con, "SELECT embed_rerank(?, ?, ?)", "gr-%s-f32" % m, *args)
            b = one(con, "SELECT embed_rerank(?, ?, ?)", "gr-%s-folder" % m, *args)
            if not c["truncated"]:
                assert abs(a - b) <= 1e-6, (m, c["text"][:30], a, b)
                logit = one(con, "SELECT embed_rerank(?, ?, ?, '{\"activation\": \"none\"}')", "gr-%s-f32" % m, *args)
                assert abs(logit - c["logits"][0]) <= 1e-4, (m, logit, c["logits"][0])
    # no model_max_length in a GGUF: the limit is the position table (the folders' is 48 / 49)
    rows = dict(con.execute("SELECT name, max_tokens FROM embed_models WHERE name LIKE 'gr-%-f32'"))
    assert rows == {"gr-bert-f32": 512, "gr-xlmr-f32": 512}, rows


@test
def pooling_type_4_reads_as_the_missing_key_does():
    for m in WRITER:
        WRITER[m](os.path.join(REF, m), path(m + "-key.gguf"), "f32", mode="rank-key")
        with open(path(m + "-key.gguf"), "rb") as f:
            assert b"bert.pooling_type" in f.read(1 << 16)
        one(con, "SELECT embed_load(?, ?)", "gr-%s-key" % m, path(m + "-key.gguf"))
        for c in cases(m):
            args = (c["query"], c["text"])
            assert one(con, "SELECT embed_rerank(?, ?, ?)", "gr-%s-key" % m, *args) == \
                one(con, "SELECT embed_rerank(?, ?, ?)", "gr-%s-f32" % m, *args)
        one(con, "SELECT embed_unload(?)", "gr-%s-key" % m)


@test
def the_batch_and_the_index_score_with_the_gguf_model():
    for m in WRITER:
        name = "gr-%s-q8_0" % m
        q = cases(m)[0]["query"]
        texts = [c["text"] for c in cases(m)]
        each = [one(con, "SELECT embed_rerank(?, ?, ?)", name, q, t) for t in texts]
        got = con.execute("SELECT text, score FROM embed_rerank_batch(?, ?, ?)", (name, q, json.dumps(texts))).fetchall()
        assert [g[0] for g in got] == texts, (m, got)
        assert max(abs(g[1] - w) for g, w in zip(got, each)) <= 1e-6, (m, got, each)  # as test_rerank's
    one(con, "SELECT embed_load('gr-embedder', ?)", os.path.join(FIXTURES, "models", "bert-tiny-prefixed"))
    con.execute("CREATE VIRTUAL TABLE gr_ix USING embed_index(model = 'gr-embedder')")
    texts = sorted({c["text"] for c in EXPECTED["cases"] if c["model"] == "bert" and c["text"]})
    con.executemany("INSERT INTO gr_ix(rowid, text) VALUES (?, ?)", list(enumerate(texts, 1)))
    q = "what do pandas eat?"
    for m in WRITER:
        got = con.execute("SELECT rowid, rerank_score FROM gr_ix WHERE gr_ix MATCH ? AND k = 3 AND rerank = ?",
                          (q, "gr-%s-f32" % m)).fetchall()
        assert len(got) == 3
        want = sorted(((one(con, "SELECT embed_rerank(?, ?, ?)", "gr-%s-f32" % m, q, texts[r - 1]), r)
                       for r, _ in got), reverse=True)
        assert [g[0] for g in got] == [w[1] for w in want], (got, want)
        assert all(abs(g[1] - w[0]) <= 1e-6 for g, w in zip(got, want)), (got, want)
    con.execute("DROP TABLE gr_ix")


@test
def a_reranker_file_makes_the_mean_as_its_folder_does():
    for m in WRITER:
        a = floats(one(con, "SELECT embed(?, 'a short text')", "gr-%s-f32" % m))
        b = floats(one(con, "SELECT embed(?, 'a short text')", "gr-%s-folder" % m))
        assert max(abs(x - y) for x, y in zip(a, b)) <= 1e-6, m
    assert one(con, "SELECT pooling FROM embed_models WHERE name = 'gr-bert-f32'") == "mean"


@test
def two_labels_load_and_are_refused_for_a_score():
    gguf_bert.write(os.path.join(REF, "bert-2labels"), path("two.gguf"), "f32", labels=["no", "yes"])
    one(con, "SELECT embed_load('gr-two', ?)", path("two.gguf"))
    assert_error(con, "SELECT embed_rerank('gr-two', 'q', 't')",
                 "model 'gr-two' has a classifier of 2 labels; a relevance score needs a single label")
    one(con, "SELECT embed_unload('gr-two')")


@test
def broken_heads_are_refused_by_name():
    src = os.path.join(REF, "bert")
    # the converter's own file: BERT's pooler dropped
    gguf_bert.write(src, path("nopool.gguf"), "f32", mode="no-pooler")
    assert_error(con, "SELECT embed_load('gr-bad', ?)", "nopool.gguf", "no tensor 'cls.weight'",
                 "llama.cpp's converter leaves BERT's pooler out", args=(path("nopool.gguf"),))
    # pooling_type 4 without the output layer
    head = dict(gguf_bert.HEAD)
    try:
        del gguf_bert.HEAD["classifier"]
        gguf_bert.write(src, path("noout.gguf"), "f32", mode="rank-key")
    finally:
        gguf_bert.HEAD.update(head)
    assert_error(con, "SELECT embed_load('gr-bad', ?)", "noout.gguf", "no tensor 'cls.output.weight'",
                 args=(path("noout.gguf"),))
    # two labels named, one row written
    gguf_bert.write(src, path("shape.gguf"), "f32", labels=["no", "yes"])
    assert_error(con, "SELECT embed_load('gr-bad', ?)", "tensor 'cls.output.weight' has shape [1, 32], expected [2, 32]",
                 "(labels 2)", args=(path("shape.gguf"),))
    assert one(con, "SELECT count(*) FROM embed_models WHERE name = 'gr-bad'") == 0


@test
def cleanup():
    for (name,) in con.execute("SELECT name FROM embed_models WHERE name LIKE 'gr-%'").fetchall():
        one(con, "SELECT embed_unload(?)", name)
    shutil.rmtree(TMP)
