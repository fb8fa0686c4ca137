"""Unigram (XLM-R layout) and byte-level BPE (roberta-base) tokenizers through SQL:
embed_token_ids and embed_tokens against Hugging Face's output for the golden corpus
(tests/fixtures/tokenizers2), and a BERT model folder that carries a Unigram tokenizer.json."""
import json
import os
import shutil
import tempfile

from harness import test, connect, one, FIXTURES, assert_error

con = connect()
NAMES = ["xlmr-style-ml8k", "xlmr-style-spmtest", "roberta-base"]
VOCAB2 = os.path.join(FIXTURES, "tokenizers2", "vocab")
for _v in NAMES:
    con.execute("SELECT embed_load(?, ?)", ("tok-" + _v, os.path.join(VOCAB2, _v)))


def golden(name):
    with open(os.path.join(FIXTURES, "tokenizers", "public", "cases.jsonl")) as f:
        cases = [json.loads(line) for line in f]
    with open(os.path.join(FIXTURES, "tokenizers2", "public", name + ".jsonl")) as f:
        expected = [json.loads(line) for line in f]
    return list(zip(cases, expected))


@test
def issue_reproducer_roberta_base():
    assert json.loads(one(con, "SELECT embed_token_ids('tok-roberta-base', 'Hello world')")) == [0, 31414, 232, 2]


def rows_match(model, text, text_b, want):
    rows = con.execute("SELECT token_id, token, type_id, start, \"end\" FROM embed_tokens(?, ?, ?) ORDER BY position",
                       (model, text, text_b)).fetchall()
    if [r[0] for r in rows] != want["ids"] or [r[2] for r in rows] != want["type_ids"]:
        return False
    if [[r[3] or 0, r[4] or 0] for r in rows] != want["offsets"]:
        return False
    if [int(r[3] is None) for r in rows] != want["special_tokens_mask"]:
        return False
    # an unknown piece is named, as HF names it, by the text it could not segment
    return [r[1] for r in rows] == want["tokens"]


def make_corpus_test(name):
    def corpus():
        model = "tok-" + name
        mismatches = []
        records = golden(name)
        for case, want in records:
            text, text_b = case["text"], case.get("text_b")
            got = json.loads(one(con, "SELECT embed_token_ids(?, ?, ?)", model, text, text_b))
            if got != want["ids"]:
                mismatches.append((case["id"], "ids"))
            elif not rows_match(model, text, text_b, want):
                mismatches.append((case["id"], "rows"))
        assert not mismatches, "%d of %d records differ, first: %s" % (len(mismatches), len(records), mismatches[:5])
    corpus.__name__ = "golden_corpus_" + name.replace("-", "_")
    return test(corpus)


for _v in NAMES:
    make_corpus_test(_v)


@test
def mask_absorbs_the_space_before_it():
    # README2: in "a <mask> b" the xlmr-style span is bytes [1,8), roberta-base's [2,8)
    for name, span in (("xlmr-style-ml8k", (1, 8)), ("roberta-base", (2, 8))):
        rows = con.execute("SELECT start, \"end\" FROM embed_tokens(?, 'a <mask> b') WHERE token = '<mask>'",
                           ("tok-" + name,)).fetchall()
        assert rows == [span], (name, rows)


@test
def bert_model_with_a_unigram_tokenizer():
    """A BERT fixture's weights with the xlmr-style Unigram tokenizer.json (the layout of
    paraphrase-multilingual-MiniLM): ids through the model equal HF's, and embed() runs."""
    d = tempfile.mkdtemp(prefix="emb_unigram_bert_")
    try:
        src = os.path.join(FIXTURES, "models", "bert-tiny-uncased")
        for f in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(src, f), d)
        shutil.copy(os.path.join(VOCAB2, "xlmr-style-ml8k", "tokenizer.json"), d)
        con.execute("SELECT embed_load('bert-unigram', ?)", (d,))
        records = golden("xlmr-style-ml8k")
        for case, want in records[:300:7]:
            got = json.loads(one(con, "SELECT embed_token_ids('bert-unigram', ?, ?)", case["text"], case.get("text_b")))
            assert got == want["ids"], (case["id"], got, want["ids"])
        v = one(con, "SELECT embed('bert-unigram', 'Hello World!')")
        assert isinstance(v, bytes) and len(v) > 0
    finally:
        shutil.rmtree(d)


@test
def hostile_tokenizer_json_is_a_load_error():
    d = tempfile.mkdtemp(prefix="emb_bad_tok_")
    try:
        with open(os.path.join(VOCAB2, "xlmr-style-spmtest", "tokenizer.json")) as f:
            j = json.load(f)
        j["normalizer"]["normalizers"][0]["precompiled_charsmap"] = "AAAA"
        with open(os.path.join(d, "tokenizer.json"), "w") as f:
            json.dump(j, f)
        assert_error(con, "SELECT embed_load('bad', ?)", "embed_load", "precompiled_charsmap is truncated", args=(d,))
    finally:
        shutil.rmtree(d)


@test
def unknown_pieces_are_named_by_their_text():
    # HF's Unigram Token for an unknown piece is its normalized text, unknowns fused (tokenizers
    # npm 0.23.2: 'tag' + three tag characters -> '▁', 'tag', the three fused, id 3 = <unk>)
    text = "tag\U000e0001\U000e0041\U000e007f"
    rows = con.execute("SELECT token_id, token FROM embed_tokens('tok-xlmr-style-ml8k', ?) ORDER BY position",
                       (text,)).fetchall()
    assert rows == [(0, "<s>"), (4, "\u2581"), (3503, "tag"), (3, "\U000e0001\U000e0041\U000e007f"), (2, "</s>")], rows


@test
def attention_rows_name_unknown_pieces_by_their_text():
    con.execute("SELECT embed_load('xlmr-tiny-names', ?)", (os.path.join(FIXTURES, "models2", "xlmr-tiny"),))
    text = "tag\U000e0001\U000e0041\U000e007f"  # xlmr-tiny carries xlmr-style-ml8k's tokenizer.json
    keys = [r[0] for r in con.execute("SELECT key_token FROM embed_attention('xlmr-tiny-names', ?, 1, 0)"
                                      " WHERE query = 0 ORDER BY key", (text,))]
    assert keys == ["<s>", "\u2581", "tag", "\U000e0001\U000e0041\U000e007f", "</s>"], keys
