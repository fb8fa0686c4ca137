"""Qwen2-style and Gemma-style tokenizers through SQL (tests/fixtures/tokenizers3, tokenizer-only
folders): embed_token_ids and every column of embed_tokens against Hugging Face tokenizers 0.23's
output for the golden corpus, and a hostile Split regex as a load error naming the pattern."""
import json
import os
import shutil
import tempfile

from harness import test, connect, one, FIXTURES, assert_error

con = connect()
NAMES = ["qwen-style", "gemma-style"]
VOCAB3 = os.path.join(FIXTURES, "tokenizers3", "vocab")
for _v in NAMES:
    con.execute("SELECT embed_load(?, ?)", ("tok3-" + _v, os.path.join(VOCAB3, _v)))


def golden(name):
    with open(os.path.join(FIXTURES, "tokenizers3", "public", "cases.jsonl")) as f:
        cases = [json.loads(line) for line in f]
    with open(os.path.join(FIXTURES, "tokenizers3", "public", name + ".jsonl")) as f:
        expected = [json.loads(line) for line in f]
    return list(zip(cases, expected))


def rows_match(model, text, text_b, want):
    rows = con.execute("SELECT token_id, token, type_id, start, \"end\" FROM embed_tokens(?, ?, ?) ORDER BY position",
                       (model, text, text_b)).fetchall()
    return ([r[0] for r in rows] == want["ids"] and [r[1] for r in rows] == want["tokens"]
            and [r[2] for r in rows] == want["type_ids"]
            and [[r[3] or 0, r[4] or 0] for r in rows] == want["offsets"]
            and [int(r[3] is None) for r in rows] == want["special_tokens_mask"])


def make_corpus_test(name):
    def corpus():
        model = "tok3-" + name
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
def templates_wrap_the_text():
    # Qwen3-Embedding appends <|endoftext|> (50256); EmbeddingGemma wraps in <bos> (2) ... <eos> (1)
    assert json.loads(one(con, "SELECT embed_token_ids('tok3-qwen-style', '')")) == [50256]
    assert json.loads(one(con, "SELECT embed_token_ids('tok3-gemma-style', '')")) == [2, 1]


@test
def unknown_split_regex_is_a_load_error_naming_it():
    d = tempfile.mkdtemp(prefix="emb_bad_split_")
    try:
        with open(os.path.join(VOCAB3, "qwen-style", "tokenizer.json")) as f:
            j = json.load(f)
        j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\d+|\\w+"
        with open(os.path.join(d, "tokenizer.json"), "w") as f:
            json.dump(j, f)
        assert_error(con, "SELECT embed_load('bad-split', ?)", "embed_load",
                     "Split regex '\\d+|\\w+' is not supported", args=(d,))
    finally:
        shutil.rmtree(d)
