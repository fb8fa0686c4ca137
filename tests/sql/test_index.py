"""embed_index: the similarity-search table. Every KNN answer is checked against a brute force
computed here in double precision, after inserts, updates, deletes, rollbacks and reopening."""
import math
import os
import random
import sqlite3
import tempfile

from harness import test, connect, one, blob, floats, f32, assert_close, assert_error, FIXTURES, ROOT

MINILM = os.path.join(FIXTURES, "models", "minilm-tiny-st")
VEC = os.path.join(ROOT, ".deps", "node_modules", "sqlite-vec-linux-x64", "vec0")
METRICS = ("cosine", "l2", "dot", "l1")


def distance(metric, a, b):
    if metric == "cosine":
        na = math.sqrt(sum(x * x for x in a))
        nb = math.sqrt(sum(x * x for x in b))
        return 1.0 - sum(x * y for x, y in zip(a, b)) / (na * nb)
    if metric == "l2":
        return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    if metric == "l1":
        return sum(abs(x - y) for x, y in zip(a, b))
    return -sum(x * y for x, y in zip(a, b))


def rand_vec(rng, d):
    return [f32(rng.uniform(-1, 1)) for _ in range(d)]


def quote(name):
    return '"' + name.replace('"', '""') + '"'


def knn(con, table, q, k):
    t = quote(table)
    return con.execute("SELECT rowid, distance FROM %s WHERE %s MATCH ? AND k = ?" % (t, t),
                       (q, k)).fetchall()


def check_knn(con, table, rows, metric, q, k, what=""):
    """The index's answer equals the brute force: same distances rank by rank, and each
    returned rowid really is at the distance reported."""
    got = knn(con, table, blob(q), k)
    want = sorted((distance(metric, v, q), r) for r, v in rows.items())[:k]
    assert len(got) == len(want), "%s: %d rows, want %d" % (what, len(got), len(want))
    assert len({r for r, _ in got}) == len(got), "%s: repeated rowids" % what
    for rank, ((gr, gd), (wd, wr)) in enumerate(zip(got, want)):
        tol = 1e-5 * max(1.0, abs(wd))
        assert abs(gd - wd) <= tol, "%s k=%d rank %d: distance %r, want %r (rowid %d vs %d)" % (
            what, k, rank, gd, wd, gr, wr)
        assert gr in rows and abs(distance(metric, rows[gr], q) - gd) <= tol, (what, rank, gr)
    assert [d for _, d in got] == sorted(d for _, d in got), "%s: not ordered by distance" % what


def check_all(con, table, rows, metric, rng, what, ks=(1, 10, 100, None), queries=3):
    for _ in range(queries):
        q = rand_vec(rng, len(next(iter(rows.values()))) if rows else 8)
        for k in ks:
            check_knn(con, table, rows, metric, q, k if k else len(rows) + 7, what)
    # the stored vectors, read back by a scan, are the ones given
    got = {r: floats(v) for r, v in con.execute("SELECT rowid, vector FROM %s" % quote(table))}
    assert got == rows, "%s: stored vectors differ" % what


def make_index(con, name, dims, metric, chunk=7):
    con.execute("CREATE VIRTUAL TABLE %s USING embed_index(dims = %d, metric = '%s', chunk_size = %d)"
                % (quote(name), dims, metric, chunk))


def insert_many(con, name, rows):
    con.execute("BEGIN")
    con.executemany("INSERT INTO %s(rowid, vector) VALUES (?, ?)" % quote(name),
                    [(r, blob(v)) for r, v in rows.items()])
    con.execute("COMMIT")


def shadow_state(con, name):
    return [con.execute("SELECT * FROM %s" % quote(name + suffix)).fetchall()
            for suffix in ("_config", "_rows", "_chunks", "_pending")]


@test
def knn_equals_brute_force_for_every_metric_and_k():
    rng = random.Random(1)
    for metric in METRICS:
        con = connect()
        make_index(con, "idx", 16, metric)
        rows = {r: rand_vec(rng, 16) for r in range(1, 151)}
        insert_many(con, "idx", rows)
        assert one(con, "SELECT count(*) FROM idx") == 150
        check_all(con, "idx", rows, metric, rng, metric)


@test
def knn_after_updates_deletes_and_rowid_changes():
    rng = random.Random(2)
    for metric in METRICS:
        con = connect()
        make_index(con, "idx", 12, metric, chunk=5)
        rows = {r: rand_vec(rng, 12) for r in range(1, 121)}
        insert_many(con, "idx", rows)
        for r in rng.sample(sorted(rows), 35):  # deletes move the last vector into the hole
            con.execute("DELETE FROM idx WHERE rowid = ?", (r,))
            del rows[r]
        check_all(con, "idx", rows, metric, rng, metric + " after deletes")
        for r in rng.sample(sorted(rows), 20):
            rows[r] = rand_vec(rng, 12)
            con.execute("UPDATE idx SET vector = ? WHERE rowid = ?", (blob(rows[r]), r))
        for r in rng.sample(sorted(rows), 5):
            con.execute("UPDATE idx SET rowid = ? WHERE rowid = ?", (r + 1000, r))
            rows[r + 1000] = rows.pop(r)
        for r in range(2000, 2030):  # JSON vectors too
            rows[r] = rand_vec(rng, 12)
            con.execute("INSERT INTO idx(rowid, vector) VALUES (?, ?)", (r, str(rows[r])))
        con.execute("DELETE FROM idx WHERE rowid > 2020")
        for r in range(2021, 2030):
            del rows[r]
        check_all(con, "idx", rows, metric, rng, metric + " after updates")
        con.execute("DELETE FROM idx")
        assert knn(con, "idx", blob(rand_vec(rng, 12)), 10) == []
        assert one(con, "SELECT count(*) FROM idx_chunks") == 0


@test
def rollback_leaves_the_index_exactly_as_before():
    rng = random.Random(3)
    con = connect()
    make_index(con, "idx", 8, "l2", chunk=4)
    rows = {r: rand_vec(rng, 8) for r in range(1, 41)}
    insert_many(con, "idx", rows)
    q = rand_vec(rng, 8)
    before_state, before_knn = shadow_state(con, "idx"), knn(con, "idx", blob(q), 100)
    con.execute("BEGIN")
    for r in range(1, 20, 2):
        con.execute("DELETE FROM idx WHERE rowid = ?", (r,))
    con.execute("UPDATE idx SET vector = ? WHERE rowid = 2", (blob(rand_vec(rng, 8)),))
    con.executemany("INSERT INTO idx(rowid, vector) VALUES (?, ?)",
                    [(r, blob(rand_vec(rng, 8))) for r in range(100, 130)])
    inside = knn(con, "idx", blob(q), 100)   # the transaction sees its own writes
    assert len(inside) == 40 - 10 + 30 and inside != before_knn
    con.execute("ROLLBACK")
    assert shadow_state(con, "idx") == before_state
    assert knn(con, "idx", blob(q), 100) == before_knn
    check_all(con, "idx", rows, "l2", rng, "after rollback")
    # savepoints: ROLLBACK TO undoes only what came after
    con.execute("BEGIN")
    con.execute("INSERT INTO idx(rowid, vector) VALUES (500, ?)", (blob([0.5] * 8),))
    con.execute("SAVEPOINT s")
    con.execute("DELETE FROM idx WHERE rowid = 500")
    con.execute("INSERT INTO idx(rowid, vector) VALUES (501, ?)", (blob([0.25] * 8),))
    assert knn(con, "idx", blob([0.25] * 8), 1)[0][0] == 501
    con.execute("ROLLBACK TO s")
    con.execute("RELEASE s")
    con.execute("COMMIT")
    rows[500] = [0.5] * 8
    check_all(con, "idx", rows, "l2", rng, "after savepoint")


@test
def text_rows_rolled_back_before_commit_are_gone():
    con = connect()
    con.execute("SELECT embed_load('minilm', ?)", (MINILM,))
    con.execute("CREATE VIRTUAL TABLE t USING embed_index(model = 'minilm')")
    con.execute("INSERT INTO t(rowid, text) VALUES (1, 'kept')")
    con.execute("BEGIN")
    con.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", [(i, "note %d" % i) for i in range(2, 50)])
    con.execute("ROLLBACK")
    assert con.execute("SELECT rowid, text FROM t").fetchall() == [(1, "kept")]
    assert one(con, "SELECT count(*) FROM t_pending") == 0
    assert one(con, "SELECT value FROM t_config WHERE key = 'count'") == 1


@test
def index_survives_close_and_reopen():
    rng = random.Random(4)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "notes.db")
        for metric in ("cosine", "dot"):
            con = connect(path)
            make_index(con, "idx_" + metric, 10, metric, chunk=6)
            rows = {r: rand_vec(rng, 10) for r in range(1, 80)}
            insert_many(con, "idx_" + metric, rows)
            con.close()
            con = connect(path)
            check_all(con, "idx_" + metric, rows, metric, rng, "reopened")
            con.execute("DELETE FROM %s WHERE rowid < 10" % ("idx_" + metric))
            for r in range(1, 10):
                del rows[r]
            con.close()
            con = connect(path)
            check_all(con, "idx_" + metric, rows, metric, rng, "reopened twice")
            con.close()


@test
def another_connections_writes_are_seen():
    rng = random.Random(5)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "shared.db")
        a, b = connect(path), connect(path)
        make_index(a, "idx", 6, "cosine")
        rows = {r: rand_vec(rng, 6) for r in range(1, 30)}
        insert_many(a, "idx", rows)
        check_all(b, "idx", rows, "cosine", rng, "b first")   # b fills its cache
        rows[99] = rand_vec(rng, 6)
        a.execute("INSERT INTO idx(rowid, vector) VALUES (99, ?)", (blob(rows[99]),))
        a.execute("DELETE FROM idx WHERE rowid = 3")
        del rows[3]
        check_all(b, "idx", rows, "cosine", rng, "b after a wrote")
        assert knn(b, "idx", blob(rows[99]), 1) == [(99, knn(b, "idx", blob(rows[99]), 1)[0][1])]


@test
def text_inserts_equal_embed_and_bulk_equals_row_by_row():
    con = connect()
    con.execute("SELECT embed_load('minilm', ?)", (MINILM,))
    subjects = ["the bus", "a train", "my cat", "the weather", "our meeting", "the printer",
                "dinner", "the garden"]
    verbs = ["is late", "was cancelled", "looks fine", "needs attention", "starts at noon",
             "broke again", "smells wonderful today and everyone noticed it"]
    docs = [(i + 1, "%s %s (note %d)" % (subjects[i % 8], verbs[(i // 8) % 7], i)) for i in range(300)]
    con.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
    con.executemany("INSERT INTO notes VALUES (?, ?)", docs)
    con.execute("CREATE VIRTUAL TABLE one_by_one USING embed_index(model = 'minilm', metric = 'cosine')")
    con.execute("CREATE VIRTUAL TABLE bulk USING embed_index(model = 'minilm', metric = 'cosine')")
    for i, body in docs[:60]:   # autocommit: each row embedded alone
        con.execute("INSERT INTO one_by_one(rowid, text) VALUES (?, ?)", (i, body))
    con.execute("BEGIN")
    for i, body in docs[60:]:
        con.execute("INSERT INTO one_by_one(rowid, text) VALUES (?, ?)", (i, body))
    con.execute("COMMIT")
    con.execute("INSERT INTO bulk(rowid, text) SELECT id, body FROM notes")
    assert one(con, "SELECT count(*) FROM bulk") == 300
    assert one(con, "SELECT count(*) FROM bulk_pending") == 0
    a = dict(con.execute("SELECT rowid, vector FROM one_by_one"))
    b = dict(con.execute("SELECT rowid, vector FROM bulk"))
    for i, body in docs:
        want = floats(one(con, "SELECT embed('minilm', ?)", body))
        assert_close(floats(b[i]), want, 1e-5, "bulk row %d vs embed()" % i)
        assert_close(floats(a[i]), floats(b[i]), 1e-5, "row %d: bulk vs one by one" % i)
    assert con.execute("SELECT text FROM bulk WHERE rowid = 7").fetchone()[0] == docs[6][1]
    # a text query equals the query by its embedding
    for question in ("is the bus late?", "the cat", "printer broke"):
        qv = one(con, "SELECT embed('minilm', ?)", question)
        by_text = con.execute("SELECT rowid, distance FROM bulk WHERE bulk MATCH ? AND k = 10", (question,)).fetchall()
        by_vec = con.execute("SELECT rowid, distance FROM bulk WHERE bulk MATCH ? AND k = 10", (qv,)).fetchall()
        assert [r for r, _ in by_text] == [r for r, _ in by_vec], question
        assert_close([d for _, d in by_text], [d for _, d in by_vec], 1e-6, question)
        vecs = {i: floats(v) for i, v in b.items()}
        check_knn(con, "bulk", vecs, "cosine", floats(qv), 10, question)
    # joined with the source table
    got = con.execute("SELECT n.body FROM bulk JOIN notes AS n ON n.id = bulk.rowid"
                      " WHERE bulk MATCH ? AND k = 3 ORDER BY distance", (docs[41][1],)).fetchall()
    assert got[0][0] == docs[41][1]
    # updating the text re-embeds it; updating another column keeps it
    con.execute("UPDATE bulk SET text = 'my cat needs attention' WHERE rowid = 1")
    assert_close(floats(one(con, "SELECT vector FROM bulk WHERE rowid = 1")),
                 floats(one(con, "SELECT embed('minilm', 'my cat needs attention')")), 1e-5, "re-embedded")
    con.execute("UPDATE bulk SET rowid = 1001 WHERE rowid = 1")
    assert one(con, "SELECT text FROM bulk WHERE rowid = 1001") == "my cat needs attention"
    assert_close(floats(one(con, "SELECT vector FROM bulk WHERE rowid = 1001")),
                 floats(one(con, "SELECT embed('minilm', 'my cat needs attention')")), 1e-5, "moved")


@test
def queries_in_a_transaction_see_pending_text_rows():
    con = connect()
    con.execute("SELECT embed_load('minilm', ?)", (MINILM,))
    con.execute("CREATE VIRTUAL TABLE t USING embed_index(model = 'minilm', metric = 'l2')")
    con.execute("BEGIN")
    con.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)",
                    [(i, "document number %d about item %d" % (i, i * 7)) for i in range(1, 41)])
    assert one(con, "SELECT count(*) FROM t_pending") == 40   # not yet embedded
    got = con.execute("SELECT rowid, distance FROM t WHERE t MATCH 'document number 5 about item 35'"
                      " AND k = 1").fetchall()
    assert got[0][0] == 5 and got[0][1] < 1e-3, got
    assert one(con, "SELECT count(*) FROM t_pending") == 0
    con.execute("INSERT INTO t(rowid, text) VALUES (41, 'one more')")
    con.execute("COMMIT")
    assert one(con, "SELECT count(*) FROM t_pending") == 0
    assert one(con, "SELECT count(*) FROM t") == 41
    # text and vector together: the given vector is stored, the text kept beside it
    con.execute("INSERT INTO t(rowid, vector, text) VALUES (42, ?, 'labelled')", (blob([0.0] * 47 + [1.0]),))
    assert floats(one(con, "SELECT vector FROM t WHERE rowid = 42"))[-1] == 1.0
    assert one(con, "SELECT text FROM t WHERE rowid = 42") == "labelled"


def assert_unchanged(con, name, state, sql, *fragments, args=()):
    msg = assert_error(con, sql, *fragments, args=args)
    assert "embed_index" in msg, msg
    assert shadow_state(con, name) == state, "%s stored something half-way" % sql


@test
def bad_input_is_a_clear_error_and_stores_nothing():
    con = connect()
    con.execute("SELECT embed_load('minilm', ?)", (MINILM,))
    assert_error(con, "CREATE VIRTUAL TABLE x USING embed_index(model = 'no_such_model')",
                 "embed_index", "no_such_model")
    assert_error(con, "CREATE VIRTUAL TABLE x USING embed_index(metric = 'cosine')", "embed_index", "dims")
    assert_error(con, "CREATE VIRTUAL TABLE x USING embed_index(dims = 0)", "embed_index", "dims")
    assert_error(con, "CREATE VIRTUAL TABLE x USING embed_index(dims = 4, metric = 'hamming')",
                 "embed_index", "hamming")
    assert_error(con, "CREATE VIRTUAL TABLE x USING embed_index(dims = 4, colour = 'red')",
                 "embed_index", "colour")
    # more dims than the model makes (fewer keep the first dims: test_index_chunks' Matryoshka test)
    assert_error(con, "CREATE VIRTUAL TABLE x USING embed_index(model = 'minilm', dims = 49)",
                 "embed_index", "48")
    assert one(con, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'x%'") == 0
    make_index(con, "v", 3, "cosine")
    con.execute("INSERT INTO v(rowid, vector) VALUES (1, '[1, 2, 3]'), (2, '[0, 1, 0]')")
    state = shadow_state(con, "v")
    i = "INSERT INTO v(rowid, vector) VALUES "
    assert_unchanged(con, "v", state, i + "(3, '[1, 2]')", "dimensions", "3")
    assert_unchanged(con, "v", state, i + "(3, ?)", "dimensions", args=(blob([1, 2, 3, 4]),))
    assert_unchanged(con, "v", state, i + "(3, x'0000')", "multiple of 4")
    assert_unchanged(con, "v", state, i + "(3, 42)", "integer")
    assert_unchanged(con, "v", state, i + "(3, '[1, \"a\", 3]')", "not a number")
    assert_unchanged(con, "v", state, i + "(3, ?)", "non-finite", args=(blob([1, float("nan"), 3]),))
    assert_unchanged(con, "v", state, i + "(3, NULL)", "NULL")
    assert_unchanged(con, "v", state, i + "(3, '[0, 0, 0]')", "zero vector")
    assert_unchanged(con, "v", state, "INSERT INTO v(rowid, text) VALUES (3, 'words')", "no model")
    assert_error(con, i + "('three', '[1, 1, 1]')", "datatype mismatch")  # SQLite's own check
    assert shadow_state(con, "v") == state
    assert_unchanged(con, "v", state, i + "(1, '[1, 1, 1]')", "rowid 1", "already")
    assert_unchanged(con, "v", state, "INSERT INTO v(rowid, vector, distance) VALUES (3, '[1,1,1]', 0.5)",
                     "distance")
    # a statement that fails on its third row stores none of them
    assert_unchanged(con, "v", state, i + "(3, '[1, 1, 1]'), (4, '[1, 0, 1]'), (5, '[1, 0]')", "dimensions")
    assert_unchanged(con, "v", state, "UPDATE v SET vector = '[1, 2]' WHERE rowid = 1", "dimensions")
    assert_unchanged(con, "v", state, "UPDATE v SET vector = NULL WHERE rowid = 1", "NULL")
    assert_unchanged(con, "v", state, "UPDATE v SET rowid = 2 WHERE rowid = 1", "already")
    q = "SELECT rowid FROM v WHERE v MATCH ? AND k = ?"
    assert_error(con, "SELECT rowid FROM v WHERE v MATCH '[1, 0, 0]'", "embed_index", "k = 10")
    for k in (0, -3):
        assert_error(con, q, "embed_index", "k must be a positive integer", args=("[1, 0, 0]", k))
    assert_error(con, q, "embed_index", "k must be a positive integer", args=("[1, 0, 0]", "ten"))
    assert_error(con, q, "embed_index", "k must be a positive integer", args=("[1, 0, 0]", 2.5))
    assert_error(con, q, "embed_index", "dimensions", args=("[1, 0]", 1))
    assert_error(con, q, "embed_index", "NULL", args=(None, 1))
    assert_error(con, q, "embed_index", "integer", args=(7, 1))
    assert_error(con, q, "embed_index", "no model", args=("a text", 1))
    assert_error(con, q, "embed_index", "zero vector", args=("[0, 0, 0]", 1))
    assert con.execute(q, ("[1, 0, 0]", 1.0)).fetchall() == [(1,)]
    # a model index: text problems, and a model that is not loaded
    con.execute("CREATE VIRTUAL TABLE m USING embed_index(model = 'minilm')")
    con.execute("INSERT INTO m(rowid, text) VALUES (1, 'hello')")
    state = shadow_state(con, "m")
    assert_unchanged(con, "m", state, "INSERT INTO m(rowid, text) VALUES (2, CAST(x'41ff42' AS TEXT))", "UTF-8")
    assert_error(con, "SELECT rowid FROM m WHERE m MATCH CAST(x'41ff42' AS TEXT) AND k = 1", "embed_index", "UTF-8")
    assert_unchanged(con, "m", state, "INSERT INTO m(rowid, text) VALUES (2, x'3132')", "text must be text")
    assert_unchanged(con, "m", state, "INSERT INTO m(rowid, text, vector) VALUES (2, NULL, NULL)", "NULL")
    con.execute("SELECT embed_unload('minilm')")
    assert_unchanged(con, "m", state, "INSERT INTO m(rowid, text) VALUES (2, 'hi')", "minilm", "not loaded")
    assert_error(con, "SELECT rowid FROM m WHERE m MATCH 'hi' AND k = 1", "embed_index", "not loaded")
    con.execute("INSERT INTO m(rowid, vector) VALUES (2, ?)", (blob([0.5] * 48),))  # vectors still work
    assert one(con, "SELECT count(*) FROM m") == 2


@test
def insert_or_replace_and_or_ignore():
    con = connect()
    make_index(con, "v", 2, "l2")
    con.execute("INSERT INTO v(rowid, vector) VALUES (1, '[1, 0]'), (2, '[0, 1]')")
    con.execute("INSERT OR REPLACE INTO v(rowid, vector) VALUES (1, '[5, 5]')")
    assert floats(one(con, "SELECT vector FROM v WHERE rowid = 1")) == [5, 5]
    con.execute("INSERT OR IGNORE INTO v(rowid, vector) VALUES (2, '[7, 7]')")
    assert floats(one(con, "SELECT vector FROM v WHERE rowid = 2")) == [0, 1]
    assert one(con, "SELECT count(*) FROM v") == 2
    r = con.execute("INSERT INTO v(vector) VALUES ('[3, 3]')").lastrowid
    assert r == 3 and one(con, "SELECT count(*) FROM v") == 3


@test
def vectors_from_the_index_are_valid_sqlite_vec_vectors():
    assert os.path.exists(VEC + ".so"), "sqlite-vec not installed (scripts/deps.sh installs it from npm)"
    rng = random.Random(6)
    con = connect()
    con.load_extension(VEC)
    make_index(con, "idx", 384, "cosine", chunk=16)
    rows = {r: rand_vec(rng, 384) for r in range(1, 41)}
    insert_many(con, "idx", rows)
    q = rand_vec(rng, 384)
    got = con.execute("SELECT rowid, vector, distance FROM idx WHERE idx MATCH ? AND k = 5", (blob(q),)).fetchall()
    assert len(got) == 5
    for r, v, d in got:
        assert one(con, "SELECT vec_length(?)", v) == 384
        assert one(con, "SELECT vec_distance_cosine(?, ?)", v, blob(q)) - d < 1e-5
        assert abs(one(con, "SELECT vec_distance_cosine(?, vec_f32(?))", v, blob(q)) - d) < 1e-5
    # and sqlite-vec's vectors go in: vec_f32() output as the vector
    con.execute("INSERT INTO idx(rowid, vector) SELECT 1000, vec_f32(?)", (str(q),))
    assert knn(con, "idx", blob(q), 1)[0][0] == 1000
    # the vector column works with embed_distance in ORDER BY ... LIMIT, as any BLOB column
    by_order = con.execute("SELECT rowid FROM idx ORDER BY embed_distance(vector, ?) LIMIT 5", (blob(q),)).fetchall()
    assert [r for r, in by_order] == [r for r, _ in knn(con, "idx", blob(q), 5)]


@test
def names_with_quotes_and_spaces():
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "names.db")
        con = connect(path)
        for name in ('we"ird idx', "it's; DROP TABLE t; --", "Ünïcode tbl"):
            make_index(con, name, 4, "l2", chunk=3)
            rows = {r: rand_vec(rng, 4) for r in range(1, 12)}
            insert_many(con, name, rows)
            check_all(con, name, rows, "l2", rng, name, ks=(1, 5, 20))
            con.execute("DELETE FROM %s WHERE rowid = 4" % quote(name))
            del rows[4]
            check_all(con, name, rows, "l2", rng, name, ks=(3,))
        con.close()
        con = connect(path)
        t = quote('we"ird idx')
        assert one(con, "SELECT count(*) FROM %s" % t) == 10
        con.execute("ALTER TABLE %s RENAME TO %s" % (t, quote("re named")))
        assert one(con, "SELECT count(*) FROM \"re named\" WHERE \"re named\" MATCH '[1,0,0,0]' AND k = 3") == 3
        assert one(con, "SELECT count(*) FROM \"re named_chunks\"") == 4
        con.execute("DROP TABLE \"re named\"")
        left = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 're named%'")]
        assert left == [], left


@test
def vector_column_match_and_select_star():
    con = connect()
    make_index(con, "v", 2, "dot")
    con.execute("INSERT INTO v(rowid, vector, text) VALUES (1, '[1, 0]', 'east'), (2, '[0, 1]', 'north'),"
                " (3, '[-1, 0]', 'west')")
    got = con.execute("SELECT rowid, text, distance, k FROM v WHERE vector MATCH '[2, 0.5]' AND k = 2").fetchall()
    assert got == [(1, "east", -2.0, 2), (2, "north", -0.5, 2)], got
    star = con.execute("SELECT * FROM v WHERE rowid = 3").fetchall()
    assert len(star) == 1 and floats(star[0][0]) == [-1, 0] and star[0][1] == "west"
    assert one(con, "SELECT count(*) FROM v WHERE rowid = 'x'") == 0
    assert con.execute("SELECT rowid FROM v WHERE v MATCH '[1,0]' AND k = 5 ORDER BY rowid DESC").fetchall() == [(3,), (2,), (1,)]


@test
def writes_between_queries_keep_each_connections_cache_right():
    """A connection's own writes update its cached copy in place; rollbacks, failed statements,
    open cursors and other connections' writes make it reload. Every query is checked."""
    rng = random.Random(8)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mixed.db")
        a, b = connect(path), connect(path)
        make_index(a, "idx", 5, "l2", chunk=4)
        rows = {}
        next_id = 1
        for step in range(300):
            op = rng.random()
            con = a if rng.random() < 0.7 else b
            if op < 0.45 or len(rows) < 5:
                rows[next_id] = rand_vec(rng, 5)
                con.execute("INSERT INTO idx(rowid, vector) VALUES (?, ?)", (next_id, blob(rows[next_id])))
                next_id += 1
            elif op < 0.65:
                r = rng.choice(sorted(rows))
                con.execute("DELETE FROM idx WHERE rowid = ?", (r,))
                del rows[r]
            elif op < 0.75:
                r = rng.choice(sorted(rows))
                rows[r] = rand_vec(rng, 5)
                con.execute("UPDATE idx SET vector = ? WHERE rowid = ?", (blob(rows[r]), r))
            elif op < 0.8:
                con.execute("BEGIN")
                con.execute("INSERT INTO idx(rowid, vector) VALUES (?, ?)", (next_id, blob(rand_vec(rng, 5))))
                knn(con, "idx", blob(rand_vec(rng, 5)), 3)
                con.execute("DELETE FROM idx WHERE rowid = ?", (rng.choice(sorted(rows)),))
                knn(con, "idx", blob(rand_vec(rng, 5)), 3)
                # a statement that fails after writing two rows
                assert_error(con, "INSERT INTO idx(rowid, vector) VALUES (?, ?), (?, ?), (?, '[1]')",
                             "dimensions", args=(next_id + 1, blob(rand_vec(rng, 5)), next_id + 2,
                                                 blob(rand_vec(rng, 5)), next_id + 3))
                con.execute("ROLLBACK")
            elif op < 0.85:
                con.execute("BEGIN")
                knn(con, "idx", blob(rand_vec(rng, 5)), 2)
                assert_error(con, "INSERT INTO idx(rowid, vector) VALUES (?, ?), (?, ?), (?, 'x')",
                             "embed_index", args=(next_id, blob(rand_vec(rng, 5)), next_id + 1,
                                                  blob(rand_vec(rng, 5)), next_id + 2))
                rows[next_id + 5] = rand_vec(rng, 5)
                con.execute("INSERT INTO idx(rowid, vector) VALUES (?, ?)", (next_id + 5, blob(rows[next_id + 5])))
                con.execute("COMMIT")
                next_id += 6
            else:
                # copy the nearest row under a new rowid while the search's cursor is open
                q = rand_vec(rng, 5)
                got = knn(con, "idx", blob(q), 1)
                con.execute("INSERT INTO idx(rowid, vector) SELECT ?, vector FROM idx"
                            " WHERE idx MATCH ? AND k = 1", (next_id, blob(q)))
                rows[next_id] = rows[got[0][0]]
                next_id += 1
            if step % 3 == 0:
                for c in (a, b):
                    q = rand_vec(rng, 5)
                    for k in (1, 7, len(rows) + 1):
                        check_knn(c, "idx", rows, "l2", q, k, "step %d" % step)
        check_all(a, "idx", rows, "l2", rng, "a at the end", ks=(1, 50, None))
        check_all(connect(path), "idx", rows, "l2", rng, "a new connection", ks=(1, 50, None))


@test
def last_insert_rowid_is_the_inserted_row_after_the_commit_flush():
    # the flush at COMMIT wrote a new chunk's chunk_id over last_insert_rowid()
    con = connect()
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(dims = 2, chunk_size = 1)")
    con.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, v)")
    for sql in ("INSERT INTO %s(rowid, %s) VALUES (100, '[1, 1]')", "INSERT INTO %s(%s) VALUES ('[2, 1]')"):
        con.execute(sql % ("ix", "vector"))
        got = con.execute("SELECT last_insert_rowid()").fetchone()[0]
        con.execute(sql % ("ref", "v"))
        assert got == con.execute("SELECT last_insert_rowid()").fetchone()[0] == 100 + (sql.count("rowid") == 0)
    con.execute("BEGIN")
    con.execute("INSERT INTO ix(vector) VALUES ('[3, 1]')")
    con.execute("COMMIT")
    assert con.execute("SELECT last_insert_rowid()").fetchone()[0] == 102
