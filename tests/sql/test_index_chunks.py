"""Chunked indexes (embed_index(model = 'm', chunk_tokens = N [, chunk_overlap = M])) and
Matryoshka indexes (dims = n below the model's width). The reference is a brute force computed
here in double precision: every chunk of every row embedded on its own with SQL embed() of the
chunk's bytes (the offsets the index reports, checked against embed_chunks() where it exists),
each row at its best chunk; filters come from SQLite's own WHERE on an ordinary table holding the
same rows, kept in step through the same statements and savepoints."""
import math
import os
import random
import sqlite3
import tempfile

from harness import test, connect, one, floats, assert_error, FIXTURES

MODEL = os.path.join(FIXTURES, "models", "minilm-tiny-st")
WORDS = ("the a bus train tram late early again today tomorrow station river city office meeting report "
         "printer coffee garden broken fixed moved cancelled quickly slowly our new old morning night "
         "team school trip bicycle road bridge market music rain snow").split()
LANGS = ["en", "fr", "de"]
QUERIES = ["is the bus late?", "broken printer in the office", "rain snow bridge", "coffee", "music at night"]


def document(rng, sentences=None):
    out = []
    for _ in range(sentences or rng.randint(1, 6)):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
        out.append(" ".join(words).capitalize() + rng.choice([".", "!", "?"]))
    return " ".join(out)


def setup(con=None, n=40, seed=5, options="chunk_tokens = 8", name="ix"):
    """docs(id, body, lang, year) and index `name` over the same rows, in one transaction."""
    con = con or connect()
    one(con, "SELECT embed_load('m', ?)", MODEL)
    rng = random.Random(seed)
    con.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT, lang TEXT, year INTEGER)")
    con.execute("CREATE VIRTUAL TABLE %s USING embed_index(model = 'm', %s, lang text partition key, year integer)"
                % (name, options))
    rows = [(i, document(rng), rng.choice(LANGS), rng.randint(1990, 2020)) for i in range(1, n + 1)]
    con.execute("BEGIN")
    con.executemany("INSERT INTO docs VALUES (?, ?, ?, ?)", rows)
    con.execute("INSERT INTO %s(rowid, text, lang, year) SELECT id, body, lang, year FROM docs" % name)
    con.execute("COMMIT")
    return con


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return 1 - dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def has_embed_chunks(con):
    return one(con, "SELECT count(*) FROM pragma_module_list WHERE name = 'embed_chunks'") > 0


def chunk_offsets(con, name, rowid, text, tokens, overlap):
    """The (chunk, start, end) of a row as the index holds them, equal to embed_chunks' where it
    exists; every chunk's bytes are a slice of the text."""
    got = con.execute('SELECT chunk, start, "end" FROM "%s_parts" WHERE row = ? ORDER BY chunk' % name,
                      (rowid,)).fetchall()
    assert [c for c, _, _ in got] == list(range(len(got))), got
    if has_embed_chunks(con):
        want = con.execute("SELECT chunk, start, \"end\" FROM embed_chunks('m', ?, ?)",
                           (text, '{"max_tokens": %d, "overlap": %d}' % (tokens, overlap))).fetchall()
        if not want:  # only white space: the whole text is one part
            want = [(0, 0, len(text.encode()))]
        assert got == want, (rowid, got, want)
    return got


class Brute:
    """Every chunk of every row, embedded alone: (rowid, chunk, start, end, vector)."""

    def __init__(self, con, name="ix", tokens=8, overlap=0, dims=None):
        self.con, self.name, self.dims = con, name, dims
        self.parts = []
        for rowid, text in con.execute("SELECT id, body FROM docs ORDER BY id").fetchall():
            data = text.encode()
            for c, s, e in chunk_offsets(con, name, rowid, text, tokens, overlap):
                self.parts.append((rowid, c, s, e, self.embed(data[s:e].decode())))

    def embed(self, text):
        opts = '{"dims": %d}' % self.dims if self.dims else "{}"
        return floats(one(self.con, "SELECT embed('m', ?, ?)", text, opts))

    def nearest_parts(self, q):
        """Every part by distance to q: (distance, rowid, chunk, start, end)."""
        qv = self.embed(q)
        return sorted((cosine(qv, v), r, c, s_, e) for r, c, s_, e, v in self.parts)

    def reranked(self, q, k, depth):
        """The nearest `depth` parts (more when they hold fewer than k rows), each scored with
        embed_rerank on its chunk's text; each row at its best-scored part, highest first."""
        parts = self.nearest_parts(q)
        n, rows = 0, set()
        while n < len(parts) and (n < depth or len(rows) < k):
            rows.add(parts[n][1])
            n += 1
        best = {}
        for i, (d, r, c, s_, e) in enumerate(parts[:n]):
            text = one(self.con, "SELECT body FROM docs WHERE id = ?", r).encode()[s_:e].decode()
            score = one(self.con, "SELECT embed_rerank('ce', ?, ?)", q, text)
            if r not in best or score > best[r][0]:
                best[r] = (score, i, d, c, s_, e)
        order = sorted(best.items(), key=lambda x: (-x[1][0], x[1][1]))[:k]
        return [(r, sc, d, c, s_, e) for r, (sc, i, d, c, s_, e) in order]

    def search(self, q, k, allowed=None):
        qv = self.embed(q)
        best = {}
        for rowid, c, s, e, v in self.parts:
            if allowed is not None and rowid not in allowed:
                continue
            d = cosine(qv, v)
            if rowid not in best or d < best[rowid][0]:
                best[rowid] = (d, c, s, e)
        return sorted(((d, r, c, s, e) for r, (d, c, s, e) in best.items()))[:k]


def search(con, q, k, name="ix", where="", args=()):
    return con.execute("SELECT rowid, distance, chunk, chunk_start, chunk_end FROM %s WHERE %s MATCH ? AND k = ?%s"
                       % (name, name, where), (q, k) + tuple(args)).fetchall()


def assert_same(got, want, what):
    assert [r[0] for r in got] == [w[1] for w in want], "%s: rowids\n got %s\nwant %s" % (
        what, [r[0] for r in got], [w[1] for w in want])
    for g, w in zip(got, want):
        assert abs(g[1] - w[0]) <= 1e-6, "%s: rowid %d: distance %r, brute force %r" % (what, g[0], g[1], w[0])
        assert tuple(g[2:]) == tuple(w[2:]), "%s: rowid %d: chunk %r, brute force %r" % (what, g[0], g[2:], w[2:])


def check(con, brute, what, ks=(1, 5, 12), name="ix", where="", args=(), allowed_sql=None):
    allowed = None
    if allowed_sql:
        allowed = {r[0] for r in con.execute("SELECT id FROM docs WHERE " + allowed_sql, args)}
    for q in QUERIES:
        for k in ks:
            assert_same(search(con, q, k, name, where, args), brute.search(q, k, allowed), "%s %r k=%d" % (what, q, k))


@test
def a_chunked_index_answers_like_a_brute_force_over_its_chunks():
    con = setup()
    parts = one(con, "SELECT count(*) FROM ix_parts")
    assert parts > 2 * one(con, "SELECT count(*) FROM docs"), "the texts are not long enough for several chunks"
    check(con, Brute(con), "f32")
    # every row at most once, and k rows when k rows match (k past the number of rows: all of them)
    got = search(con, "bus", 100)
    assert len(got) == 40 and len({r[0] for r in got}) == 40
    # the columns of a hit: text is the row's, the chunk's bytes a slice of it
    for rowid, text, s, e in con.execute("SELECT rowid, text, chunk_start, chunk_end FROM ix WHERE ix MATCH 'late' "
                                         "AND k = 5"):
        assert text == one(con, "SELECT body FROM docs WHERE id = ?", rowid) and 0 <= s < e <= len(text.encode())


@test
def overlap_every_storage_type_and_the_ivf():
    for storage in ("f32", "f16", "int8", "bit"):
        opts = "chunk_tokens = 12, chunk_overlap = 4, storage = '%s'" % storage
        con = setup(options=opts, n=30, seed=7)
        brute = Brute(con, tokens=12, overlap=4)
        # oversample large enough that every part is a candidate: the rescored search is exact
        check(con, brute, storage, where=" AND oversample = 1000" if storage != "f32" else "")
    con = setup(options="chunk_tokens = 8, index = 'ivf'", n=40, seed=8)
    brute = Brute(con)
    con.execute("INSERT INTO ix(ix, text) VALUES ('build', '{\"lists\": 4}')")
    check(con, brute, "ivf, every list probed", where=" AND probes = 4")
    got = search(con, "late bus", 10, where=" AND probes = 1")
    assert len(got) == 10 and len({r[0] for r in got}) == 10, got


@test
def updates_deletes_rollback_and_reopen():
    path = os.path.join(tempfile.mkdtemp(), "chunks.db")
    con = setup(connect(path), n=30, seed=9)
    rng = random.Random(3)

    def both(sql_docs, sql_ix, args):
        con.execute(sql_docs, args)
        con.execute(sql_ix, args)
    con.execute("BEGIN")
    for i in range(1, 31, 4):
        both("UPDATE docs SET body = ? WHERE id = ?", "UPDATE ix SET text = ? WHERE rowid = ?", (document(rng), i))
    for i in range(2, 31, 5):
        both("DELETE FROM docs WHERE id = ?", "DELETE FROM ix WHERE rowid = ?", (i,))
    # a new rowid, and OR REPLACE: the old row's chunks go, the new row's come
    both("UPDATE docs SET id = 200 WHERE id = ?", "UPDATE ix SET rowid = 200 WHERE rowid = ?", (5,))
    both("INSERT OR REPLACE INTO docs(id, body, lang, year) VALUES (?, ?, 'de', 2001)",
         "INSERT OR REPLACE INTO ix(rowid, text, lang, year) VALUES (?, ?, 'de', 2001)", (6, document(rng, 4)))
    con.execute("COMMIT")
    assert one(con, "SELECT count(*) FROM ix_parts WHERE row = 5") == 0
    check(con, Brute(con), "after updates and deletes")
    # rows of equal texts: equal distances, in rowid order
    both("INSERT INTO docs(id, body) VALUES (?, 'The bus is late.')", "INSERT INTO ix(rowid, text) VALUES "
         "(?, 'The bus is late.')", (302,))
    both("INSERT INTO docs(id, body) VALUES (?, 'The bus is late.')", "INSERT INTO ix(rowid, text) VALUES "
         "(?, 'The bus is late.')", (301,))
    got = search(con, "The bus is late.", 2)
    assert [r[0] for r in got] == [301, 302] and got[0][1] == got[1][1], got
    # a savepoint rolled back takes the writes of both tables with it
    con.execute("SAVEPOINT s")
    both("INSERT INTO docs(id, body, lang, year) VALUES (?, ?, 'en', 2000)",
         "INSERT INTO ix(rowid, text, lang, year) VALUES (?, ?, 'en', 2000)", (100, document(rng, 5)))
    both("DELETE FROM docs WHERE id = ?", "DELETE FROM ix WHERE rowid = ?", (3,))
    check(con, Brute(con), "inside the savepoint", ks=(5,))
    con.execute("ROLLBACK TO s")
    con.execute("RELEASE s")
    assert one(con, "SELECT count(*) FROM ix_parts WHERE row IN (3, 100)") == \
        one(con, "SELECT count(*) FROM ix_parts WHERE row = 3") > 0
    check(con, Brute(con), "after the rollback")
    con.close()
    con = connect(path)
    one(con, "SELECT embed_load('m', ?)", MODEL)
    check(con, Brute(con), "reopened")
    # a row's update that leaves the text alone keeps its chunks (and moves its metadata)
    parts = con.execute("SELECT * FROM ix_parts ORDER BY id").fetchall()
    check(con, Brute(con), "before", where=" AND lang = 'fr'", allowed_sql="lang = 'fr'", ks=(30,))
    for i in (1, 4, 7):
        con.execute("UPDATE docs SET lang = 'fr', year = 1999 WHERE id = ?", (i,))
        con.execute("UPDATE ix SET lang = 'fr', year = 1999 WHERE rowid = ?", (i,))
    assert con.execute("SELECT * FROM ix_parts ORDER BY id").fetchall() == parts
    check(con, Brute(con), "metadata updated", where=" AND lang = 'fr' AND year = 1999",
          allowed_sql="lang = 'fr' AND year = 1999", ks=(5,))
    check(con, Brute(con), "metadata updated", where=" AND lang = 'fr'", allowed_sql="lang = 'fr'", ks=(30,))


@test
def filters_and_partitions_match_sqlites_own_filter():
    con = setup(n=60, seed=11)
    brute = Brute(con)
    for where, args in ((" AND lang = 'en'", ()), (" AND lang IN ('fr', 'de') AND year > ?", (2005,)),
                        (" AND year BETWEEN ? AND ?", (1995, 2010)), (" AND rowid > ?", (30,)),
                        (" AND lang != 'de' AND year IS NOT NULL AND rowid <= ?", (45,))):
        check(con, brute, "filter" + where, where=where, args=args, allowed_sql=where[5:])
    # the metadata of a hit is its row's
    for rowid, lang, year in con.execute("SELECT rowid, lang, year FROM ix WHERE ix MATCH 'bus' AND k = 10"):
        assert (lang, year) == con.execute("SELECT lang, year FROM docs WHERE id = ?", (rowid,)).fetchone()


def empty(tokens):
    """A connection with the model, an empty docs table and an empty chunked index ix."""
    con = connect()
    one(con, "SELECT embed_load('m', ?)", MODEL)
    con.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT, lang TEXT, year INTEGER)")
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(model = 'm', chunk_tokens = %d)" % tokens)
    return con


@test
def k_rows_when_the_nearest_chunks_are_all_one_rows():
    con = empty(4)
    long = " ".join(["The bus is late again."] * 60)  # 60+ chunks, each the nearest to the query
    rows = [(1, long)] + [(i, document(random.Random(i), 1)) for i in range(2, 8)]
    con.executemany("INSERT INTO docs(id, body) VALUES (?, ?)", rows)
    con.executemany("INSERT INTO ix(rowid, text) VALUES (?, ?)", rows)
    got = search(con, "The bus is late again.", 5)
    assert len(got) == 5 and got[0][0] == 1 and len({r[0] for r in got}) == 5, got
    assert_same(got, Brute(con, tokens=4).search("The bus is late again.", 5), "one row's many chunks")
    assert len(search(con, "bus", 50)) == 7


@test
def texts_without_chunks_and_bad_input():
    con = empty(8)
    con.execute("INSERT INTO ix(rowid, text) VALUES (1, '   '), (2, ''), (3, 'bus')")
    # a text of only white space is one part, the whole text, found like any other row
    assert sorted(r[0] for r in search(con, "bus", 10)) == [1, 2, 3]
    assert con.execute("SELECT chunk, start, \"end\" FROM ix_parts WHERE row = 1").fetchall() == [(0, 0, 3)]
    assert_error(con, "INSERT INTO ix(rowid, vector) VALUES (4, ?)", "chunked index embeds its rows' texts",
                 args=(one(con, "SELECT embed('m', 'x')"),))
    assert_error(con, "INSERT INTO ix(rowid, text) VALUES (4, NULL)", "chunked", "NULL")
    assert_error(con, "INSERT INTO ix(rowid, text, chunk) VALUES (4, 'a', 1)", "chunk", "cannot be written")
    assert_error(con, "CREATE VIRTUAL TABLE v USING embed_index(dims = 4, chunk_tokens = 8)", "needs a model")
    assert_error(con, "CREATE VIRTUAL TABLE v USING embed_index(model = 'm', chunk_tokens = 8, chunk_overlap = 8)",
                 "chunk_overlap", "less than")
    assert_error(con, "CREATE VIRTUAL TABLE v USING embed_index(model = 'm', chunk_tokens = 0)", "chunk_tokens")
    assert_error(con, "CREATE VIRTUAL TABLE v USING embed_index(model = 'm', chunk_tokens = 100000)", "reads at most")
    # an index without chunks has NULL chunk columns
    con.execute("CREATE VIRTUAL TABLE plain USING embed_index(model = 'm')")
    con.execute("INSERT INTO plain(rowid, text) VALUES (1, 'bus')")
    assert con.execute("SELECT chunk, chunk_start, chunk_end, rerank_score FROM plain WHERE plain MATCH 'bus' "
                       "AND k = 1").fetchall() == [(None, None, None, None)]
    # a scan of a chunked index: the row's text, no vector (one per chunk), no chunk
    assert con.execute("SELECT rowid, vector, chunk FROM ix WHERE rowid = 3").fetchall() == [(3, None, None)]


@test
def damaged_parts_are_reported():
    for damage in ("UPDATE ix_parts SET start = \"end\" + 1",
                   "UPDATE ix_parts SET \"end\" = 100000",
                   "UPDATE ix_parts SET chunk = 'x'"):
        con = setup(n=5, seed=1)
        con.execute(damage)
        msg = assert_error(con, "SELECT chunk_start FROM ix WHERE ix MATCH 'bus' AND k = 5", 'shadow table "ix_parts"',
                           "damaged")
        assert "part" in msg, msg
    con = setup(n=5, seed=1)
    con.execute("UPDATE ix_parts SET row = 999 WHERE id = (SELECT max(id) FROM ix_parts)")
    assert_error(con, "SELECT rowid FROM ix WHERE ix MATCH 'bus' AND k = 5", 'shadow table "ix_parts"', "damaged")
    path = os.path.join(tempfile.mkdtemp(), "damaged.db")
    setup(connect(path), n=5, seed=1).execute("UPDATE ix_config SET value = 0 WHERE key = 'chunk_tokens'")
    con = connect(path)  # the configuration is read once per connection: a new one reads it
    one(con, "SELECT embed_load('m', ?)", MODEL)
    assert_error(con, "SELECT rowid FROM ix WHERE ix MATCH 'bus' AND k = 5", 'shadow table "ix_config"',
                 "chunk_tokens")


@test
def offsets_inside_a_character_are_damage():
    # "é" is two bytes (c3 a9): byte 1 is inside it, whether it starts or ends a part
    text = "é bus is late. Über café naïve é é é é é é é é é."
    for column, shift in (("start", 1), ("\"end\"", -1)):
        con = connect()
        one(con, "SELECT embed_load('m', ?)", MODEL)
        one(con, "SELECT embed_load('ce', ?)", RERANKER)
        con.execute("CREATE VIRTUAL TABLE ix USING embed_index(model = 'm', chunk_tokens = 8)")
        con.execute("INSERT INTO ix(rowid, text) VALUES (1, ?)", (text,))
        first = one(con, "SELECT min(id) FROM ix_parts")
        con.execute("UPDATE ix_parts SET start = 1 WHERE id = ?" if shift > 0 else
                    "UPDATE ix_parts SET \"end\" = 1 WHERE id = ?", (first,))
        assert text.encode()[1:2] == b"\xa9", column
        for extra in ("", " AND rerank = 'ce'"):
            msg = assert_error(con, "SELECT chunk_start, chunk_end FROM ix WHERE ix MATCH 'late bus' AND k = 5" + extra,
                               'shadow table "ix_parts" is damaged', "part %d is not a chunk of rowid 1" % first,
                               "first bytes of its characters")
            assert "UTF-8 in text_b" not in msg, msg
    # offsets on characters, but the row's own text is not UTF-8: the rows are what is damaged
    con = connect()
    one(con, "SELECT embed_load('m', ?)", MODEL)
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(model = 'm', chunk_tokens = 8)")
    con.execute("INSERT INTO ix(rowid, text) VALUES (1, 'the bus is late')")
    con.execute("UPDATE ix_rows SET text = CAST(x'74ff6520627573206973206c617465' AS TEXT)")
    assert_error(con, "SELECT chunk_start FROM ix WHERE ix MATCH 'late bus' AND k = 5",
                 'shadow table "ix_rows" is damaged: the text of rowid 1 is not valid UTF-8')


@test
def embed_hybrid_fuses_rows_of_a_chunked_index():
    con = setup(n=50, seed=13)
    con.execute("CREATE VIRTUAL TABLE fts USING fts5(body)")
    con.execute("INSERT INTO fts(rowid, body) SELECT id, body FROM docs")
    got = con.execute("SELECT rowid, vector_rank, distance FROM embed_hybrid('ix', 'fts', 'late bus', 10)").fetchall()
    assert len(got) == 10 and len({r[0] for r in got}) == 10, got
    # the vector side's ranks are those of the chunked search: rows at their best chunk
    ranked = {r[0]: (i + 1, r[1]) for i, r in enumerate(search(con, "late bus", 100))}
    for rowid, rank, dist in got:
        if rank is not None:
            assert ranked[rowid][0] == rank and abs(ranked[rowid][1] - dist) < 1e-12, (rowid, rank, dist)


RERANKER = os.path.join(os.path.dirname(FIXTURES), "references", "rerank", "bert")


def assert_reranked(con, q, k, depth, want, name="ix", what=""):
    sql = ("SELECT rowid, rerank_score, distance, chunk, chunk_start, chunk_end FROM %s WHERE %s MATCH ? AND k = ? "
           "AND rerank = 'ce'%s" % (name, name, "" if depth is None else " AND rerank_depth = %d" % depth))
    got = con.execute(sql, (q, k)).fetchall()
    assert [g[0] for g in got] == [w[0] for w in want], "%s: rowids\n got %s\nwant %s" % (
        what, [g[0] for g in got], [w[0] for w in want])
    for g, w in zip(got, want):
        assert abs(g[1] - w[1]) <= 1e-5 and abs(g[2] - w[2]) <= 1e-6, (what, g, w)
        assert g[3] is None or tuple(g[3:]) == tuple(w[3:]), (what, g, w)


@test
def a_reranked_search_equals_embed_rerank_over_the_nearest_candidates():
    con = setup(n=30, seed=21)
    one(con, "SELECT embed_load('ce', ?)", RERANKER)
    brute = Brute(con)
    for q in QUERIES[:3]:
        for k, depth in ((5, None), (3, 10), (10, 4), (1, 1)):
            assert_reranked(con, q, k, depth, brute.reranked(q, k, 50 if depth is None else depth),
                            what="%r k=%d depth=%s" % (q, k, depth))
    # ordered by score: ORDER BY rerank_score DESC is the search's own order
    rows = con.execute("SELECT rowid, rerank_score FROM ix WHERE ix MATCH 'bus' AND k = 6 AND rerank = 'ce' "
                       "ORDER BY rerank_score DESC").fetchall()
    assert [r[1] for r in rows] == sorted((r[1] for r in rows), reverse=True) and len(rows) == 6
    # an index without chunks: the rows' own texts
    con.execute("CREATE VIRTUAL TABLE plain USING embed_index(model = 'm')")
    con.execute("INSERT INTO plain(rowid, text) SELECT id, body FROM docs")
    qv = floats(one(con, "SELECT embed('m', 'late bus')"))
    near = sorted((cosine(qv, floats(v)), r, t) for r, v, t in con.execute("SELECT rowid, vector, text FROM plain"))
    want = sorted(((one(con, "SELECT embed_rerank('ce', 'late bus', ?)", t), -i, r, d)
                   for i, (d, r, t) in enumerate(near[:8])), reverse=True)[:4]
    assert_reranked(con, "late bus", 4, 8, [(r, sc, d, None, None, None) for sc, _, r, d in want], "plain", "plain")
    assert_error(con, "SELECT * FROM ix WHERE ix MATCH 'bus' AND k = 3 AND rerank = 'm'", "rerank", "classifier")
    assert_error(con, "SELECT * FROM ix WHERE ix MATCH 'bus' AND k = 3 AND rerank = 'nope'", "rerank", "nope")
    assert_error(con, "SELECT * FROM ix WHERE ix MATCH ? AND k = 3 AND rerank = 'ce'", "query must be text",
                 args=(one(con, "SELECT embed('m', 'bus')"),))
    assert_error(con, "SELECT * FROM ix WHERE ix MATCH 'bus' AND k = 3 AND rerank_depth = 5", "rerank_depth needs")
    assert_error(con, "SELECT * FROM ix WHERE ix MATCH 'bus' AND k = 3 AND rerank = 'ce' AND rerank_depth = 0",
                 "rerank_depth", "positive")


@test
def matryoshka_dims_keep_the_first_components_renormalised():
    con = connect()
    one(con, "SELECT embed_load('m', ?)", MODEL)
    rng = random.Random(17)
    con.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT)")
    con.executemany("INSERT INTO docs VALUES (?, ?)", [(i, document(rng, 1)) for i in range(1, 41)])
    for dims in (8, 20):
        con.execute("CREATE VIRTUAL TABLE m%d USING embed_index(model = 'm', dims = %d)" % (dims, dims))
        con.execute("INSERT INTO m%d(rowid, text) SELECT id, body FROM docs" % dims)
        full = {}
        for rowid, body, vec in con.execute("SELECT d.id, d.body, x.vector FROM docs AS d JOIN m%d AS x "
                                            "ON x.rowid = d.id" % dims).fetchall():
            got = floats(vec)
            # the model's vector cut to dims and normalised again (the model normalises)
            v = floats(one(con, "SELECT embed('m', ?)", body))[:dims]
            n = math.sqrt(sum(x * x for x in v))
            assert len(got) == dims and max(abs(a - b / n) for a, b in zip(got, v)) < 1e-6, rowid
            full[rowid] = got
        for q in QUERIES:
            qv = floats(one(con, "SELECT embed('m', ?, ?)", q, '{"dims": %d}' % dims))
            want = sorted((cosine(qv, v), r) for r, v in full.items())[:7]
            got = con.execute("SELECT rowid, distance FROM m%d WHERE m%d MATCH ? AND k = 7" % (dims, dims),
                              (q,)).fetchall()
            assert [r for r, _ in got] == [r for _, r in want], (dims, q)
            assert max(abs(a[1] - b[0]) for a, b in zip(got, want)) < 1e-6
    # chunks and dims together
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(model = 'm', dims = 16, chunk_tokens = 8)")
    con.execute("INSERT INTO ix(rowid, text) SELECT id, body FROM docs")
    con.execute("ALTER TABLE docs ADD COLUMN lang TEXT")
    check(con, Brute(con, dims=16), "dims 16, chunks of 8", ks=(3, 10))
    assert_error(con, "CREATE VIRTUAL TABLE v USING embed_index(model = 'm', dims = 1000)", "dims", "1000")
