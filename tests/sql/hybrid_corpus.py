"""The corpus of the embed_hybrid suites: a few hundred generated sentences in an ordinary table,
an embed_index over them (the MiniLM-shaped fixture model: random weights, but deterministic) and
an FTS5 table of the same rows."""
import os
import random

from harness import connect, one, FIXTURES

MODEL = os.path.join(FIXTURES, "models", "minilm-tiny-st")
WORDS = ("the a bus train tram late early again today tomorrow station river city office meeting report "
         "printer coffee garden broken fixed moved cancelled quickly slowly our new old morning night "
         "team school trip bicycle road bridge market music rain snow").split()
N = 300


def sentences(n=N, seed=10):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 9))]
        out.append(" ".join(words).capitalize() + rng.choice([".", "!", "?", ""]))
    return out


def corpus(con=None, index="notes_idx", fts="notes_fts"):
    """notes(id, body) with an embed_index and an FTS5 table of the same rows."""
    con = con or connect()
    one(con, "SELECT embed_load('hybrid-minilm', ?)", MODEL)
    con.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
    con.executemany("INSERT INTO notes(id, body) VALUES (?, ?)", enumerate(sentences(), 1))
    con.execute('CREATE VIRTUAL TABLE "%s" USING embed_index(model = \'hybrid-minilm\')' % index.replace('"', '""'))
    con.execute('CREATE VIRTUAL TABLE "%s" USING fts5(body)' % fts.replace('"', '""'))
    con.execute('INSERT INTO "%s"(rowid, text) SELECT id, body FROM notes' % index.replace('"', '""'))
    con.execute('INSERT INTO "%s"(rowid, body) SELECT id, body FROM notes' % fts.replace('"', '""'))
    return con
