"""The shipped model (models/sqlite-embed-mini) loads, keeps its fingerprint, and still finds
things: each held-out package summary (tests/references/quality: pairs the training never saw,
from Debian's package descriptions) retrieves its own description among the 299 in the top 10 at
least as often as the model card says, less a margin. The share is measured here, through
embed_index, against the card's statement of it. Likewise its word-in-context AUC on the project's
own sentences (models/train/wic.json)."""
import json
import os
import re

import sys

from harness import ROOT, test, connect, one

sys.path.insert(0, os.path.join(ROOT, "models", "train"))
import wic  # noqa: E402  (the project's own word-in-context check; standard library only)

MODEL = os.path.join(ROOT, "models", "sqlite-embed-mini")
CARD = os.path.join(MODEL, "README.md")
PAIRS = json.load(open(os.path.join(ROOT, "tests", "references", "quality", "heldout.json"), encoding="utf-8"))["pairs"]
MARGIN = 0.03


def card_figure(pattern, what):
    m = re.search(pattern, open(CARD).read())
    assert m, "the model card states no " + what
    return float(m.group(1))


def card_share():
    return card_figure(r"held-out subset of the tests \(299 pairs\): recall@10 ([0-9.]+)",
                       "recall@10 for the tests' held-out subset")


@test
def the_shipped_model_loads_as_a_normalising_bert():
    con = connect()
    one(con, "SELECT embed_load('quality-mini', ?)", MODEL)
    row = con.execute("SELECT architecture, hidden_size, layers, heads, vocab_size, max_tokens, pooling, normalize, "
                      "weight_type FROM embed_models WHERE name = 'quality-mini'").fetchone()
    assert row == ("bert", 256, 4, 4, 30522, 128, "mean", 1, "F16"), row
    # the weights and settings as shipped: a change to the folder (or to what the fingerprint
    # covers) shows here, and the model card's figures must then be measured again
    assert one(con, "SELECT fingerprint FROM embed_models WHERE name = 'quality-mini'") == "a8f3b87e718bb2fa"


@test
def its_summaries_find_their_descriptions():
    con = connect()
    one(con, "SELECT embed_load('quality-mini', ?)", MODEL)
    con.execute("CREATE VIRTUAL TABLE q USING embed_index(model = 'quality-mini')")
    con.executemany("INSERT INTO q(rowid, text) VALUES (?, ?)", [(i, p["description"]) for i, p in enumerate(PAIRS)])
    hits = 0
    for i, p in enumerate(PAIRS):
        top = [r[0] for r in con.execute("SELECT rowid FROM q WHERE q MATCH ? AND k = 10", (p["summary"],))]
        hits += i in top
    share = hits / len(PAIRS)
    assert share >= card_share() - MARGIN, (share, card_share())


def card_wic():
    return card_figure(r"word-in-context AUC of its contextual vectors is ([0-9.]+)", "word-in-context AUC")


@test
def its_words_in_context_are_as_the_card_says():
    con = connect()
    one(con, "SELECT embed_load('wic-mini', ?)", MODEL)
    words = json.load(open(os.path.join(ROOT, "models", "train", "wic.json"), encoding="utf-8"))["words"]
    assert len(words) == 40 and all(len(w["senses"]) == 2 and all(len(s) == 3 for s in w["senses"]) for w in words)
    r = wic.evaluate(con, "wic-mini", words)
    assert r["token"] == 0.5, r  # a lookup: every pair of token rows is equal, so every pair ties
    assert r["contextual"] >= card_wic() - MARGIN, (r, card_wic())


@test
def the_word_in_context_auc_counts_ties_as_half():
    assert wic.auc([0.9, 0.5], [0.1, 0.5]) == 3.5 / 4  # three wins and a tie of four pairs
    assert wic.auc([0.2], [0.8]) == 0.0 and wic.auc([0.3], [0.3]) == 0.5
