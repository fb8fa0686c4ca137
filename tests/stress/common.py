"""Shared by the stress tests: connections with the extension loaded, deterministic rows, and
the check that an index holds exactly a given set of rows."""
import math
import os
import sqlite3
import struct

EXT = os.path.abspath(os.environ.get("EMBED_EXT", "./embed.so"))
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "tests", "fixtures", "models", "minilm-tiny-st")
DIMS = 8
ROWS_PER_BATCH = 7


def connect(path, busy_ms=10000):
    con = sqlite3.connect(path, isolation_level=None, timeout=busy_ms / 1000.0)
    con.enable_load_extension(True)
    con.load_extension(EXT)
    con.execute("PRAGMA busy_timeout = %d" % busy_ms)
    return con


def vector_of(rowid):
    """A vector that only its rowid decides, so any process can say what a row must hold."""
    return [math.sin(rowid * 0.37 + i) + (0.5 if i == 0 else 0.0) for i in range(DIMS)]


def blob(values):
    return struct.pack("<%df" % len(values), *values)


def floats(b):
    return list(struct.unpack("<%df" % (len(b) // 4), b))


def batch_rows(batch):
    return [batch * ROWS_PER_BATCH + i for i in range(ROWS_PER_BATCH)]


def create(path, journal):
    con = connect(path)
    con.execute("PRAGMA journal_mode = %s" % journal)
    con.execute("CREATE TABLE IF NOT EXISTS batches(id INTEGER PRIMARY KEY, writer)")
    con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS vix USING embed_index(dims = %d, metric = 'l2', "
                "chunk_size = 5)" % DIMS)
    con.execute("SELECT embed_load('m', ?)", (MODEL,))
    con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS tix USING embed_index(model = 'm', chunk_size = 5)")
    con.close()


def write_batch(con, batch, writer=0):
    """One transaction: a row in `batches`, vectors in vix and texts in tix, all or nothing."""
    con.execute("BEGIN")
    # the index first: a connection's first statement touching it starts the write
    for r in batch_rows(batch):
        con.execute("INSERT INTO vix(rowid, vector) VALUES (?, ?)", (r, blob(vector_of(r))))
    con.executemany("INSERT INTO tix(rowid, text) VALUES (?, ?)",
                    [(r, "note number %d" % r) for r in batch_rows(batch)])
    con.execute("INSERT INTO batches(id, writer) VALUES (?, ?)", (batch, writer))
    con.execute("COMMIT")


def check_exact_state(con, what):
    """The indexes hold exactly the rows of the committed batches, with the right vectors, and
    a search over each returns every row. Returns a list of problems (empty when all holds)."""
    problems = []
    ok = con.execute("PRAGMA integrity_check").fetchone()[0]
    if ok != "ok":
        problems.append("%s: integrity_check: %s" % (what, ok))
    batches = [b for b, in con.execute("SELECT id FROM batches")]
    want = sorted(r for b in batches for r in batch_rows(b))
    for table in ("vix", "tix"):
        got = sorted(r for r, in con.execute("SELECT rowid FROM %s" % table))
        if got != want:
            problems.append("%s: %s holds %d rows, the committed batches %d" % (what, table, len(got), len(want)))
        if not want:
            continue
        q = blob([0.1] * DIMS) if table == "vix" else "note"
        hits = con.execute("SELECT rowid FROM %s WHERE %s MATCH ? AND k = ?" % (table, table),
                           (q, len(want) + 5)).fetchall()
        if sorted(r for r, in hits) != want:
            problems.append("%s: a search of %s returns %d rows of %d" % (what, table, len(hits), len(want)))
    for r, v in con.execute("SELECT rowid, vector FROM vix"):
        if max(abs(a - b) for a, b in zip(floats(v), vector_of(r))) > 1e-6:
            problems.append("%s: vix row %d has another vector" % (what, r))
            break
    sample = want[:: max(1, len(want) // 5)]
    for r in sample:
        got = floats(con.execute("SELECT vector FROM tix WHERE rowid = ?", (r,)).fetchone()[0])
        exp = floats(con.execute("SELECT embed('m', ?)", ("note number %d" % r,)).fetchone()[0])
        if max(abs(a - b) for a, b in zip(got, exp)) > 1e-5:
            problems.append("%s: tix row %d is not the embedding of its text" % (what, r))
    return problems
