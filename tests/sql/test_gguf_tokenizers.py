"""Tokenizers read from GGUF metadata, on the public tokenizer corpora: each golden vocabulary
folder written as a vocabulary-only GGUF file (tests/references/gguf_vocab.py, llama.cpp's
converter's tokenizer.ggml.* keys, no tensors, as llama.cpp's own ggml-vocab-*.gguf), loaded by
embed_load as a tokenizer, and its ids and tokens compared with Hugging Face's on all
2,004 cases of each corpus: bert-base-uncased, -cased, -multilingual-cased and -chinese
(WordPiece, tokenizer.ggml.model "bert"), the two XLM-R-style SentencePiece Unigram vocabularies
("t5", with their precompiled charsmaps) and the Qwen2-style byte-level BPE ("gpt2", pre "qwen2").

A GGUF WordPiece vocabulary does not say whether its tokenizer lowercases; embed_load takes a
vocabulary that holds the capital letters as tokens for cased. bert-base-chinese is cased yet
holds no capitals, so it is read as uncased: its texts with capitals or with characters that
decompose (accents, Hangul), which an uncased BERT lowercases and decomposes, are the only ones
allowed to differ, and they are counted."""
import json
import os
import shutil
import sys
import tempfile
import unicodedata

from harness import test, connect, one, FIXTURES

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "references"))
import gguf_vocab  # noqa: E402

TMP = tempfile.mkdtemp(prefix="embed-gguf-tok-")
WORDPIECE = ["bert-base-uncased", "bert-base-cased", "bert-base-multilingual-cased", "bert-base-chinese"]
con = connect()


def load(vocab, folder, kind):
    path = os.path.join(TMP, vocab + ".gguf")
    gguf_vocab.write(folder, path, kind)
    one(con, "SELECT embed_load(?, ?)", "gguftok-" + vocab, path)
    return "gguftok-" + vocab


def golden(corpus_dir, vocab, expected_dir=None):
    with open(os.path.join(corpus_dir, "cases.jsonl"), encoding="utf-8") as f:
        cases = [json.loads(line) for line in f]
    with open(os.path.join(expected_dir or corpus_dir, "public", vocab + ".jsonl") if expected_dir else
              os.path.join(corpus_dir, vocab + ".jsonl"), encoding="utf-8") as f:
        expected = [json.loads(line) for line in f]
    assert len(cases) == len(expected) == 2004, (vocab, len(cases), len(expected))
    return list(zip(cases, expected))


def caseless(text):
    """True when an uncased BERT's normalizer (lowercase; strip accents: NFD, then the marks
    dropped) leaves the text as it is."""
    nfd = unicodedata.normalize("NFD", text)
    return text.lower() == text and nfd == text and not any(unicodedata.category(c) == "Mn" for c in nfd)


def compare(model, pairs):
    """The cases whose ids or tokens differ from Hugging Face's."""
    bad = []
    for case, want in pairs:
        text, text_b = case["text"], case.get("text_b")
        got = json.loads(one(con, "SELECT embed_token_ids(?, ?, ?)", model, text, text_b))
        if got != want["ids"]:
            bad.append(case)
            continue
        rows = con.execute("SELECT token FROM embed_tokens(?, ?, ?) ORDER BY position", (model, text, text_b))
        if [r[0] for r in rows] != want["tokens"]:
            bad.append(case)
    return bad


def wordpiece_test(vocab):
    def corpus():
        model = load(vocab, os.path.join(FIXTURES, "tokenizers", "vocab", vocab), "bert")
        bad = compare(model, golden(os.path.join(FIXTURES, "tokenizers", "public"), vocab))
        if vocab != "bert-base-chinese":
            assert not bad, (vocab, len(bad), [c["id"] for c in bad[:10]])
            return
        pairs = golden(os.path.join(FIXTURES, "tokenizers", "public"), vocab)
        held = [c["id"] for c, _ in pairs if caseless(c["text"]) and caseless(c.get("text_b") or "")]
        wrong = [c["id"] for c in bad if c["id"] in set(held)]
        assert not wrong, ("differs on caseless texts", wrong[:10])
        assert len(held) >= 500, len(held)  # the comparison holds on a good part of the corpus
    corpus.__name__ = "gguf_" + vocab.replace("-", "_") + "_equals_hugging_face"
    test(corpus)


for _v in WORDPIECE:
    wordpiece_test(_v)


@test
def gguf_qwen2_bpe_equals_hugging_face():
    base = os.path.join(FIXTURES, "tokenizers3")
    model = load("qwen-style", os.path.join(base, "vocab", "qwen-style"), "qwen2")
    bad = compare(model, golden(os.path.join(base, "public"), "qwen-style"))
    assert not bad, (len(bad), [c["id"] for c in bad[:10]])


def unigram_test(vocab):
    def corpus():
        base = os.path.join(FIXTURES, "tokenizers2")
        model = load(vocab, os.path.join(base, "vocab", vocab), "t5")
        bad = compare(model, golden(os.path.join(FIXTURES, "tokenizers", "public"), vocab, base))
        assert not bad, (vocab, len(bad), [c["id"] for c in bad[:10]])
    corpus.__name__ = "gguf_t5_" + vocab.replace("-", "_") + "_equals_hugging_face"
    test(corpus)


for _v in ("xlmr-style-ml8k", "xlmr-style-spmtest"):
    unigram_test(_v)


@test
def a_vocabulary_alone_is_a_tokenizer():
    arch, dims = con.execute("SELECT architecture, dimensions FROM embed_models WHERE name = 'gguftok-bert-base-cased'").fetchone()
    assert (arch, dims) == ("tokenizer", None), (arch, dims)
    try:
        one(con, "SELECT embed('gguftok-bert-base-cased', 'x')")
        raise AssertionError("embed of a tokenizer answered")
    except Exception as e:  # sqlite3.OperationalError
        assert "tokenizer only" in str(e), e


@test
def cleanup():
    for name in con.execute("SELECT name FROM embed_models WHERE name LIKE 'gguftok-%'").fetchall():
        one(con, "SELECT embed_unload(?)", name[0])
    shutil.rmtree(TMP, ignore_errors=True)
