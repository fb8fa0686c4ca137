"""embed_index with metadata columns: a search with conditions returns the k nearest rows among
those that satisfy every condition. The rows that satisfy a condition are decided by SQLite
itself on an ordinary table with the same declared types (so affinity and NULLs are SQLite's),
and the nearest among them by a double-precision brute force computed here."""
import math
import os
import random
import tempfile

from harness import test, connect, one, blob, floats, f32, assert_error, FIXTURES

DIMS = 6
COLS = "author text, year integer, score real, tag blob, user_id integer partition key"
AUTHORS = ["ann", "bob", "cy", "dee", None, "42"]


def l2(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def make(con, rng, n=300, name="ix"):
    con.execute("CREATE VIRTUAL TABLE %s USING embed_index(dims = %d, metric = 'l2', chunk_size = 16, %s)"
                % (name, DIMS, COLS))
    con.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, author TEXT, year INTEGER, score REAL, tag BLOB, "
                "user_id INTEGER)")
    rows = {}
    con.execute("BEGIN")
    for r in range(1, n + 1):
        v = [f32(rng.uniform(-1, 1)) for _ in range(DIMS)]
        meta = (rng.choice(AUTHORS), rng.choice([None, 2019, 2020, 2021, 2022, "2023", 2024.0]),
                rng.choice([None, 0.5, 1, 2.25, "3.5"]), rng.choice([None, b"x", b"yz", "x"]),
                rng.choice([1, 2, 3, 4, 5, None]))
        rows[r] = v
        con.execute("INSERT INTO %s(rowid, vector, author, year, score, tag, user_id) VALUES (?, ?, ?, ?, ?, ?, ?)"
                    % name, (r, blob(v)) + meta)
        con.execute("INSERT INTO ref VALUES (?, ?, ?, ?, ?, ?)", (r,) + meta)
    con.execute("COMMIT")
    return rows


CONDITIONS = [
    ("author = 'ann'", ()), ("author != 'ann'", ()), ("author < 'c'", ()), ("author >= 'cy'", ()),
    ("author IS NULL", ()), ("author IS NOT NULL", ()), ("author IN ('bob', 'dee', 'zz')", ()),
    ("author = 42", ()),  # text affinity: the number compares as '42'
    ("year = 2020", ()), ("year > 2021", ()), ("year <= '2021'", ()), ("year BETWEEN 2020 AND 2022", ()),
    ("year IN (2019, 2023)", ()), ("year = 2024", ()), ("year IS 2020", ()), ("year IS NOT 2020", ()),
    ("score > 1", ()), ("score = 3.5", ()), ("score < 2.25", ()), ("tag = x'78'", ()), ("tag = 'x'", ()),
    ("user_id = 3", ()), ("user_id IN (1, 5)", ()), ("user_id = 3 AND year >= 2021", ()),
    ("user_id = 2 AND author IN ('ann', 'bob') AND score IS NOT NULL", ()),
    ("rowid IN (1, 12, 40, 77)", ()), ("rowid BETWEEN 50 AND 90", ()), ("rowid > 250 AND year != 2020", ()),
    ("year IN (SELECT year FROM ref WHERE id < 5)", ()), ("author = ?", ("dee",)), ("year > ?", (2021,)),
    ("user_id = 999", ()),
]


def check(con, rows, cond, args, q, k, what):
    want_ids = [r for r, in con.execute("SELECT id FROM ref WHERE " + cond.replace("rowid", "id"), args)]
    want = sorted((l2(rows[r], q), r) for r in want_ids)[:k]
    got = con.execute("SELECT rowid, distance FROM ix WHERE ix MATCH ? AND k = ? AND " + cond,
                      (blob(q), k) + args).fetchall()
    assert len(got) == len(want), "%s [%s] k=%d: %d rows, want %d" % (what, cond, k, len(got), len(want))
    for (gr, gd), (wd, wr) in zip(got, want):
        assert abs(gd - wd) <= 1e-5 and gr in want_ids, "%s [%s]: %r vs %r" % (what, cond, (gr, gd), (wr, wd))


def check_all(con, rows, rng, what):
    for cond, args in CONDITIONS:
        q = [rng.uniform(-1, 1) for _ in range(DIMS)]
        for k in (1, 5, 1000):
            check(con, rows, cond, args, q, k, what)


@test
def filtered_search_equals_brute_force_over_the_matching_rows():
    rng = random.Random(11)
    con = connect()
    rows = make(con, rng)
    check_all(con, rows, rng, "fresh")


@test
def filters_after_updates_deletes_rollback_and_reopen():
    rng = random.Random(12)
    path = tempfile.mktemp(suffix=".db")
    con = connect(path)
    rows = make(con, rng, n=200)
    for r in rng.sample(sorted(rows), 30):
        con.execute("DELETE FROM ix WHERE rowid = ?", (r,))
        con.execute("DELETE FROM ref WHERE id = ?", (r,))
        del rows[r]
    for r in rng.sample(sorted(rows), 30):  # metadata only
        con.execute("UPDATE ix SET year = 2030, author = 'new' WHERE rowid = ?", (r,))
        con.execute("UPDATE ref SET year = 2030, author = 'new' WHERE id = ?", (r,))
    for r in rng.sample(sorted(rows), 20):  # vector only
        rows[r] = [f32(rng.uniform(-1, 1)) for _ in range(DIMS)]
        con.execute("UPDATE ix SET vector = ? WHERE rowid = ?", (blob(rows[r]), r))
    check_all(con, rows, rng, "after writes")
    con.execute("BEGIN")
    con.execute("UPDATE ix SET user_id = 77")
    con.execute("SAVEPOINT s")
    con.execute("DELETE FROM ix WHERE user_id = 77")
    con.execute("ROLLBACK TO s")
    assert one(con, "SELECT count(*) FROM ix WHERE ix MATCH ? AND k = 1000 AND user_id = 77",
               blob([0.0] * DIMS)) == len(rows)
    con.execute("ROLLBACK")
    check_all(con, rows, rng, "after rollback")
    con.close()
    con = connect(path)
    check_all(con, rows, rng, "after reopen")


@test
def metadata_columns_read_and_write_like_ordinary_columns():
    con = connect()
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(dims = 2, author text, year integer, w real)")
    con.execute("INSERT INTO ix(rowid, vector, author, year, w) VALUES (1, '[1, 0]', 'ann', '2020', 3)")
    con.execute("INSERT INTO ix(rowid, vector) VALUES (2, '[0, 1]')")
    assert con.execute("SELECT rowid, author, year, typeof(year), w, typeof(w) FROM ix ORDER BY rowid").fetchall() \
        == [(1, "ann", 2020, "integer", 3.0, "real"), (2, None, None, "null", None, "null")]
    got = con.execute("SELECT rowid, author, year FROM ix WHERE ix MATCH '[1, 0]' AND k = 2").fetchall()
    assert got == [(1, "ann", 2020), (2, None, None)], got
    con.execute("UPDATE ix SET author = 'bo' WHERE rowid = 2")
    assert one(con, "SELECT author FROM ix WHERE rowid = 2") == "bo"
    assert floats(one(con, "SELECT vector FROM ix WHERE rowid = 2")) == [0.0, 1.0]


@test
def text_indexes_take_metadata_too():
    con = connect()
    con.execute("SELECT embed_load('m', ?)", (os.path.join(FIXTURES, "models", "minilm-tiny-st"),))
    con.execute("CREATE VIRTUAL TABLE notes USING embed_index(model = 'm', lang text)")
    con.executemany("INSERT INTO notes(rowid, text, lang) VALUES (?, ?, ?)",
                    [(1, "the bus is late", "en"), (2, "der Bus ist spät", "de"), (3, "the bus is early", "en")])
    got = con.execute("SELECT rowid FROM notes WHERE notes MATCH 'the bus is late' AND k = 3 AND lang = 'de'").fetchall()
    assert got == [(2,)], got


@test
def bad_column_declarations_are_clear_errors():
    con = connect()
    for decl, frag in (("author varchar", "types are integer, real, text and blob"),
                       ("text text", "cannot be named 'text'"), ("distance real", "cannot be named 'distance'"),
                       ("model text", "an option"), ("k integer", "cannot be named 'k'"),
                       ("a text, a integer", "declared twice"), ("a real partition key", "integer or text"),
                       ("a text partition key, b integer partition key", "only one"),
                       ("a text primary key", "only 'partition key' may follow"), ("ix text", "table's name")):
        assert_error(con, "CREATE VIRTUAL TABLE ix USING embed_index(dims = 2, %s)" % decl, "embed_index", frag)
        assert one(con, "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'ix%'") == 0
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(dims = 2, author text)")
    assert_error(con, "SELECT rowid FROM ix WHERE ix MATCH '[1, 0]' AND k = 2 AND nope = 1", "no such column")


@test
def partitioned_search_equals_brute_force_within_the_partition():
    rng = random.Random(13)
    for key_type, tenant in (("integer", lambda t: t), ("text", lambda t: "team-%d" % t)):
        con = connect()
        con.execute("CREATE VIRTUAL TABLE ix USING embed_index(dims = %d, metric = 'cosine', chunk_size = 8, "
                    "tenant %s partition key, year integer)" % (DIMS, key_type))
        rows, owner = {}, {}
        con.execute("BEGIN")
        for r in range(1, 401):
            rows[r] = [f32(rng.uniform(-1, 1)) for _ in range(DIMS)]
            owner[r] = tenant(rng.randrange(40))
            con.execute("INSERT INTO ix(rowid, vector, tenant, year) VALUES (?, ?, ?, ?)",
                        (r, blob(rows[r]), owner[r], 2000 + r % 7))
        con.execute("COMMIT")

        def cos_d(a, b):
            return 1 - sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

        for t in range(0, 41, 5):
            q = [rng.uniform(-1, 1) for _ in range(DIMS)]
            for extra, keep in (("", lambda r: True), (" AND year > 2003", lambda r: 2000 + r % 7 > 2003)):
                want = sorted((cos_d(rows[r], q), r) for r in rows if owner[r] == tenant(t) and keep(r))[:4]
                got = con.execute("SELECT rowid, distance FROM ix WHERE ix MATCH ? AND k = 4 AND tenant = ?" + extra,
                                  (blob(q), tenant(t))).fetchall()
                assert [r for r, _ in got] == [r for _, r in want], (key_type, t, extra, got, want)
                assert all(abs(d - w) < 1e-6 for (_, d), (w, _) in zip(got, want))
        both = con.execute("SELECT count(*) FROM ix WHERE ix MATCH ? AND k = 1000 AND tenant IN (?, ?)",
                           (blob([1.0] * DIMS), tenant(1), tenant(2))).fetchone()[0]
        assert both == sum(1 for r in rows if owner[r] in (tenant(1), tenant(2)))


@test
def writes_between_filtered_searches_keep_the_copy_right():
    # the connection's own writes update its copy of vectors and metadata in place; another
    # connection's commit makes it reload
    rng = random.Random(14)
    path = tempfile.mktemp(suffix=".db")
    con, other = connect(path), connect(path)
    rows = make(con, rng, n=120)
    for step in range(120):
        r = rng.randrange(1, 160)
        op = rng.random()
        c = other if step % 17 == 0 else con
        if op < 0.3 and r in rows:
            c.execute("DELETE FROM ix WHERE rowid = ?", (r,))
            c.execute("DELETE FROM ref WHERE id = ?", (r,))
            del rows[r]
        elif op < 0.6 and r in rows:
            y = rng.choice([2019, 2020, 2021, None])
            c.execute("UPDATE ix SET year = ?, user_id = ? WHERE rowid = ?", (y, r % 5, r))
            c.execute("UPDATE ref SET year = ?, user_id = ? WHERE id = ?", (y, r % 5, r))
        else:
            v = [f32(rng.uniform(-1, 1)) for _ in range(DIMS)]
            meta = (rng.choice(AUTHORS), rng.choice([2019, 2020, 2021]), 1.5, None, rng.randrange(5))
            c.execute("INSERT OR REPLACE INTO ix(rowid, vector, author, year, score, tag, user_id) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?)", (r, blob(v)) + meta)
            c.execute("INSERT OR REPLACE INTO ref VALUES (?, ?, ?, ?, ?, ?)", (r,) + meta)
            rows[r] = v
        q = [rng.uniform(-1, 1) for _ in range(DIMS)]
        for cond in ("year = 2020", "user_id = %d" % (step % 5), "author IN ('ann', 'cy') AND year >= 2020"):
            check(con, rows, cond, (), q, 7, "step %d" % step)


@test
def conditions_with_another_collation_filter_as_sqlite_does():
    # a COLLATE NOCASE condition was taken into the search and compared as BINARY: no rows
    con = connect()
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(dims = 2, metric = 'l2', author text)")
    con.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, author TEXT)")
    for r, a in enumerate(["ann", "Ann", "ANN", "bob", None], 1):
        con.execute("INSERT INTO ix(rowid, vector, author) VALUES (?, ?, ?)", (r, blob([r, 0]), a))
        con.execute("INSERT INTO ref VALUES (?, ?)", (r, a))
    for cond in ("author = 'ANN' COLLATE NOCASE", "author COLLATE NOCASE IN ('ann', 'BOB')",
                 "author > 'B' COLLATE NOCASE", "author = 'ANN' COLLATE RTRIM"):
        want = [r for r, in con.execute("SELECT id FROM ref WHERE %s ORDER BY id" % cond)]
        got = [r for r, in con.execute("SELECT rowid FROM ix WHERE ix MATCH '[0, 0]' AND k = 10 AND %s "
                                        "ORDER BY rowid" % cond)]
        assert got == want, (cond, got, want)


@test
def an_empty_index_with_metadata_searches_and_builds():
    # no row was ever placed: the copy's metadata columns were never grown (under UBSan, resetting
    # them to no rows once passed memset a null pointer)
    for options in ("", ", index = 'ivf'", ", storage = 'int8', index = 'ivf'"):
        con = connect()
        con.execute("CREATE VIRTUAL TABLE e USING embed_index(dims = %d, %s%s)" % (DIMS, COLS, options))
        q = blob([0.5] * DIMS)
        assert con.execute("SELECT rowid FROM e WHERE e MATCH ? AND k = 3", (q,)).fetchall() == []
        assert con.execute("SELECT rowid FROM e WHERE e MATCH ? AND k = 3 AND author = 'ann' AND user_id = 1",
                           (q,)).fetchall() == []
        if "ivf" in options:
            assert_error(con, "INSERT INTO e(e) VALUES ('build')", 'build: "e" is empty')
        con.execute("INSERT INTO e(rowid, vector, author, user_id) VALUES (1, ?, 'ann', 1)", (q,))
        assert con.execute("SELECT rowid FROM e WHERE e MATCH ? AND k = 3 AND author = 'ann' AND user_id = 1",
                           (q,)).fetchall() == [(1,)]
