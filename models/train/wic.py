"""sqlite-embed's own word-in-context check (wic.json): does a model's vector for a word tell one
sense from another?

For each word, every pair of its sentences is a same-sense or a different-sense pair; the score
of a pair is the cosine of the word's two vectors (the mean of its WordPiece rows when it is
split). The AUC is the chance that a same-sense pair scores above a different-sense pair (ties
count half): 0.5 is chance, 1.0 a perfect separation. Reported at three levels of embed_tokens:
the token rows (a lookup: 0.5 by construction), the inputs (token + position) and the contextual
vectors. Standard library only; the model runs in sqlite-embed.

Usage: /usr/bin/python3 wic.py EMBED_SO MODEL_DIR [MODEL_DIR ...]"""
import json
import math
import os
import re
import sqlite3
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LEVELS = ("token_embedding", "input_embedding", "contextual_embedding")


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def word_vectors(con, model, sentence, word):
    """The word's vector at each level: the mean of the rows of the tokens inside its span."""
    m = re.search(r"\b%s\b" % re.escape(word), sentence, re.I)
    if not m:
        raise ValueError("%r is not in %r" % (word, sentence))
    rows = con.execute("SELECT start, \"end\", %s FROM embed_tokens(?, ?)" % ", ".join(LEVELS),
                       (model, sentence)).fetchall()
    inside = [r for r in rows if r[0] is not None and r[0] >= m.start() and r[1] <= m.end() and r[1] > r[0]]
    if not inside:
        raise ValueError("no token of %r in %r" % (word, sentence))
    out = []
    for k in range(len(LEVELS)):
        vecs = [struct.unpack("<%df" % (len(r[2 + k]) // 4), r[2 + k]) for r in inside]
        out.append([sum(col) / len(vecs) for col in zip(*vecs)])
    return out


def auc(same, different):
    wins = 0.0
    for s in same:
        for d in different:
            wins += 1.0 if s > d else 0.5 if s == d else 0.0
    return wins / (len(same) * len(different))


def pair_scores(con, model, words):
    """(level -> same-sense scores, level -> different-sense scores) over every word's pairs."""
    same, diff = [[] for _ in LEVELS], [[] for _ in LEVELS]
    for w in words:
        vecs = [(s, word_vectors(con, model, text, w["word"])) for s, texts in enumerate(w["senses"])
                for text in texts]
        for i in range(len(vecs)):
            for j in range(i + 1, len(vecs)):
                into = same if vecs[i][0] == vecs[j][0] else diff
                for k in range(len(LEVELS)):
                    into[k].append(cosine(vecs[i][1][k], vecs[j][1][k]))
    return same, diff


def evaluate(con, model, words=None):
    """{level: AUC} for a loaded model."""
    words = words or json.load(open(os.path.join(HERE, "wic.json")))["words"]
    same, diff = pair_scores(con, model, words)
    return {LEVELS[k].split("_")[0]: auc(same[k], diff[k]) for k in range(len(LEVELS))}


def main(ext, *models):
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(ext)
    for i, path in enumerate(models):
        con.execute("SELECT embed_load(?, ?)", ("m%d" % i, path))
        r = evaluate(con, "m%d" % i)
        print("%s: word-in-context AUC token %.3f input %.3f contextual %.3f" % (
            path, r["token"], r["input"], r["contextual"]))


if __name__ == "__main__":
    main(*sys.argv[1:])
