"""Tokenization through SQL: embed_token_ids and embed_tokens against Hugging Face's own
output for the golden corpus (tests/fixtures/tokenizers/public)."""
import json
import os

from harness import test, connect, one, FIXTURES, assert_error

con = connect()
VOCABS = ["bert-base-uncased", "bert-base-cased", "bert-base-multilingual-cased", "bert-base-chinese"]
for _v in VOCABS:
    con.execute("SELECT embed_load(?, ?)", ("tok-" + _v, os.path.join(FIXTURES, "tokenizers", "vocab", _v)))


def golden(vocab):
    base = os.path.join(FIXTURES, "tokenizers", "public")
    with open(os.path.join(base, "cases.jsonl")) as f:
        cases = [json.loads(line) for line in f]
    with open(os.path.join(base, vocab + ".jsonl")) as f:
        expected = [json.loads(line) for line in f]
    return list(zip(cases, expected))


@test
def seed_sentence_ids():
    ids = one(con, "SELECT embed_token_ids('tok-bert-base-uncased', 'I left my phone on the left side of the table.')")
    assert json.loads(ids) == [101, 1045, 2187, 2026, 3042, 2006, 1996, 2187, 2217, 1997, 1996, 2795, 1012, 102]


def make_corpus_test(vocab):
    def corpus():
        model = "tok-" + vocab
        mismatches = []
        for case, want in golden(vocab):
            text, text_b = case["text"], case.get("text_b")
            got = json.loads(one(con, "SELECT embed_token_ids(?, ?, ?)", model, text, text_b))
            if got != want["ids"]:
                mismatches.append((case["id"], "ids"))
                continue
            rows = con.execute("SELECT token, type_id, start, \"end\" FROM embed_tokens(?, ?, ?) ORDER BY position",
                               (model, text, text_b)).fetchall()
            tokens = [r[0] for r in rows]
            offsets = [[r[2] or 0, r[3] or 0] for r in rows]
            if tokens != want["tokens"] or [r[1] for r in rows] != want["type_ids"] or offsets != want["offsets"]:
                mismatches.append((case["id"], "rows"))
        assert not mismatches, "%d of %d records differ, first: %s" % (len(mismatches), len(golden(vocab)), mismatches[:5])
    corpus.__name__ = "golden_corpus_" + vocab.replace("-", "_")
    return test(corpus)


for _v in VOCABS:
    make_corpus_test(_v)


@test
def offsets_slice_the_original_text():
    text = "Café au lait, s'il vous plaît! 😀 naïve"
    raw = text.encode()
    for token, start, end in con.execute("SELECT token, start, \"end\" FROM embed_tokens('tok-bert-base-cased', ?)"
                                         " WHERE start IS NOT NULL", (text,)):
        piece = raw[start:end].decode()
        assert token.replace("##", "") == piece or token == "[UNK]", (token, piece)


@test
def literal_special_tokens_and_pairs():
    rows = con.execute("SELECT token, start, \"end\", type_id FROM embed_tokens('tok-bert-base-uncased', 'x[MASK]y', 'b')").fetchall()
    assert rows == [("[CLS]", None, None, 0), ("x", 0, 1, 0), ("[MASK]", 1, 7, 0), ("y", 7, 8, 0),
                    ("[SEP]", None, None, 0), ("b", 0, 1, 1), ("[SEP]", None, None, 1)], rows


@test
def token_errors():
    assert_error(con, "SELECT embed_token_ids('nope', 'x')", "embed_token_ids", "no model named 'nope'")
    assert_error(con, "SELECT embed_token_ids('tok-bert-base-uncased', x'00')", "embed_token_ids", "text")
    assert_error(con, "SELECT embed_token_ids('tok-bert-base-uncased', CAST(x'e282' AS TEXT))", "embed_token_ids", "UTF-8")
    assert one(con, "SELECT embed_token_ids('tok-bert-base-uncased', NULL)") is None
    assert one(con, "SELECT embed_token_ids(NULL, 'x')") is None
