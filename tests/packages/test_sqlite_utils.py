"""docs/sqlite-utils.md's recipes run as written with Debian's sqlite-utils (its ```sh blocks, in
order, by bash in a folder laid out as the page assumes: ./embed.so, ./embed_preload.so,
models/sqlite-embed-mini -- the model that comes with the repository): the stored vectors are
embed()'s, and both searches return the rows and distances that a double-precision cosine
distance over the stored vectors ranks first: the note about the bus. Usage: test_sqlite_utils.py EMBED_SO."""
import json
import math
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

from check import test, run, main, ROOT

EXT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "embed.so"))
PAGE = os.path.join(ROOT, "docs", "sqlite-utils.md")
TMP = tempfile.mkdtemp(prefix="embed-sqlite-utils-")
QUERY = "is the bus late?"
MINI = os.path.join(ROOT, "models", "sqlite-embed-mini")   # what the page loads
OUT = {}


def sh_blocks():
    text = open(PAGE, encoding="utf-8").read()
    return re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)


def vec(b):
    return struct.unpack("<%df" % (len(b) // 4), b)


def cosine_distance(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return 1.0 - dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def expected_top(k):
    """(id, body, distance) of the k nearest notes, in double precision from the stored vectors."""
    con = sqlite3.connect(os.path.join(TMP, "notes.db"))
    con.enable_load_extension(True)
    con.load_extension(EXT)
    con.execute("SELECT embed_load('mini', ?)", (MINI,))
    q = vec(con.execute("SELECT embed('mini', ?)", (QUERY,)).fetchone()[0])
    rows = [(i, body, cosine_distance(vec(e), q)) for i, body, e in con.execute("SELECT id, body, embedding FROM notes")]
    con.close()
    return sorted(rows, key=lambda r: r[2])[:k]


@test
def the_page_has_the_two_recipes():
    assert shutil.which("sqlite-utils"), "sqlite-utils is not installed (scripts/deps.sh installs it)"
    assert len(sh_blocks()) == 2, "docs/sqlite-utils.md: expected 2 sh blocks"
    os.symlink(EXT, os.path.join(TMP, "embed.so"))
    os.symlink(os.path.join(os.path.dirname(EXT), "embed_preload.so"), os.path.join(TMP, "embed_preload.so"))
    os.makedirs(os.path.join(TMP, "models"))
    os.symlink(MINI, os.path.join(TMP, "models", "sqlite-embed-mini"))
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "EMBED_MODELS", "EMBED_EXTENSION")}
    for i, block in enumerate(sh_blocks()):
        OUT[i] = run(["bash", "-e", "-c", block], cwd=TMP, env=env).stdout


@test
def the_column_recipe_stores_embed_vectors():
    con = sqlite3.connect(os.path.join(TMP, "notes.db"))
    con.enable_load_extension(True)
    con.load_extension(EXT)
    con.execute("SELECT embed_load('mini', ?)", (MINI,))
    rows = con.execute("SELECT id, embedding = embed('mini', body), length(embedding) FROM notes ORDER BY id").fetchall()
    dims = json.load(open(os.path.join(MINI, "config.json")))["hidden_size"]
    assert rows == [(1, 1, 4 * dims), (2, 1, 4 * dims), (3, 1, 4 * dims)], rows


@test
def the_column_search_ranks_as_a_double_precision_cosine():
    got = json.loads(OUT[0][OUT[0].rindex('[{"id"'):])
    want = expected_top(2)
    assert want[0][1] == "The bus is late again.", want   # the shipped model is trained
    assert [(g["id"], g["body"]) for g in got] == [(w[0], w[1]) for w in want], (got, want)
    assert all(abs(g["distance"] - w[2]) < 1e-5 for g, w in zip(got, want)), (got, want)


@test
def the_index_recipe_finds_the_same_rows():
    lines = OUT[1].splitlines()
    rows = [line.split() for line in lines[lines.index(next(l for l in lines if l.startswith("---"))) + 1:]]
    want = expected_top(2)
    assert [int(r[0]) for r in rows] == [w[0] for w in want], (OUT[1], want)
    assert all(abs(float(r[-1]) - w[2]) < 1e-5 for r, w in zip(rows, want)), (OUT[1], want)
    con = sqlite3.connect(os.path.join(TMP, "notes.db"))
    names = {n for (n,) in con.execute("SELECT name FROM sqlite_schema")}
    assert {"notes", "notes_idx"} <= names, names


if __name__ == "__main__":
    rc = main()
    subprocess.run(["rm", "-rf", TMP])
    sys.exit(rc)
