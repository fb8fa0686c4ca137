"""The shipped model (models/sqlite-embed-mini) loads, keeps its fingerprint, and still finds
things: each held-out package summary (tests/references/quality: pairs the training never saw,
from Debian's package descriptions) retrieves its own description among the 299 in the top 10 at
least as often as the model card says, less a margin. The share is measured here, through
embed_index, against the card's statement of it."""
import json
import os
import re

from harness import ROOT, test, connect, one

MODEL = os.path.join(ROOT, "models", "sqlite-embed-mini")
CARD = os.path.join(MODEL, "README.md")
PAIRS = json.load(open(os.path.join(ROOT, "tests", "references", "quality", "heldout.json"), encoding="utf-8"))["pairs"]
MARGIN = 0.03


def card_share():
    m = re.search(r"held-out subset of the tests \(299 pairs\): recall@10 ([0-9.]+)", open(CARD).read())
    assert m, "the model card states no recall@10 for the tests' held-out subset"
    return float(m.group(1))


@test
def the_shipped_model_loads_as_a_normalising_bert():
    con = connect()
    one(con, "SELECT embed_load('quality-mini', ?)", MODEL)
    row = con.execute("SELECT architecture, hidden_size, layers, heads, vocab_size, max_tokens, pooling, normalize, "
                      "weight_type FROM embed_models WHERE name = 'quality-mini'").fetchone()
    assert row == ("bert", 256, 4, 4, 30522, 128, "mean", 1, "F16"), row
    # the weights and settings as shipped: a change to the folder (or to what the fingerprint
    # covers) shows here, and the model card's figures must then be measured again
    assert one(con, "SELECT fingerprint FROM embed_models WHERE name = 'quality-mini'") == "8f7d44e152b2922d"


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
