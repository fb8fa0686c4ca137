"""embed_hybrid(index, fts, query, k [, options]): keyword (FTS5, bm25) and vector (embed_index)
search of one query fused by reciprocal rank fusion. Expected answers come from a reference
written in plain SQL -- the FTS5 query and the KNN query run on their own, ranked with
row_number(), joined with FULL OUTER JOIN and scored with the RRF sum -- on a corpus of a few
hundred generated sentences in an index that embeds them with the MiniLM-shaped fixture model
(random weights, but deterministic)."""
import json
import os
import sqlite3
import tempfile

from harness import test, connect, one, assert_error, FIXTURES

from hybrid_corpus import corpus


def words_query(q):
    """The FTS5 query embed_hybrid makes of plain words: each word quoted, joined by OR."""
    return " OR ".join('"%s"' % w.replace('"', '""') for w in q.split())


REFERENCE = """
WITH v AS (SELECT id, distance, row_number() OVER (ORDER BY distance, id) AS r
             FROM (SELECT rowid AS id, distance FROM notes_idx WHERE notes_idx MATCH :q AND k = :depth)
            WHERE :wv > 0),
     t AS (SELECT id, b, row_number() OVER (ORDER BY b, id) AS r
             FROM (SELECT rowid AS id, bm25(notes_fts) AS b FROM notes_fts WHERE notes_fts MATCH :fq
                    ORDER BY b, id LIMIT :depth)
            WHERE :wt > 0)
SELECT coalesce(v.id, t.id) AS id,
       coalesce(:wv / (:rrf_k + v.r), 0.0) + coalesce(:wt / (:rrf_k + t.r), 0.0) AS score,
       v.r, t.r, v.distance, t.b
  FROM v FULL OUTER JOIN t ON v.id = t.id
 ORDER BY score DESC, id
 LIMIT :k
"""


def reference(con, q, k, rrf_k=60.0, weights=(1.0, 1.0), depth=100, fts_query=None):
    fq = fts_query if fts_query is not None else words_query(q)
    if not fq:  # no words: the keyword side has no rows (an empty MATCH is an FTS5 error)
        fq, weights = '"x"', (weights[0], 0.0)
    return con.execute(REFERENCE, {"q": q, "fq": fq, "k": k, "rrf_k": float(rrf_k), "wv": float(weights[0]),
                                   "wt": float(weights[1]), "depth": depth}).fetchall()


def hybrid(con, q, k, options=None):
    sql = ("SELECT rowid, score, vector_rank, text_rank, distance, bm25 "
           "FROM embed_hybrid('notes_idx', 'notes_fts', ?, ?%s)")
    args = (q, k) if options is None else (q, k, options)
    return con.execute(sql % ("" if options is None else ", ?"), args).fetchall()


def assert_same(got, want, what):
    assert [r[0] for r in got] == [r[0] for r in want], "%s: rowids\n got %s\nwant %s" % (
        what, [r[0] for r in got], [r[0] for r in want])
    for g, w in zip(got, want):
        assert abs(g[1] - w[1]) <= 1e-12, "%s: rowid %d: score %r, reference %r" % (what, g[0], g[1], w[1])
        assert g[2:] == w[2:], "%s: rowid %d: ranks/values %r, reference %r" % (what, g[0], g[2:], w[2:])


QUERIES = ["is the bus late?", "coffee", "broken printer in the office", "Train TRAM station!",
           'say "hello" to the team', "nothingmatcheshere", "rain snow bridge road market music",
           "a", "42", "late-night (bus)"]


@test
def equals_the_plain_sql_reference_with_default_options():
    con = corpus()
    both = 0
    for q in QUERIES:
        for k in (1, 10, 25):
            got = hybrid(con, q, k)
            want = reference(con, q, k)
            assert_same(got, want, "%r k=%d" % (q, k))
            both += sum(1 for r in got if r[2] is not None and r[3] is not None)
    assert both > 0, "no row was found by both sides: the corpus does not exercise the fusion"
    # a word no text has: the vector side alone, text_rank and bm25 NULL
    rows = hybrid(con, "nothingmatcheshere", 5)
    assert len(rows) == 5 and all(r[3] is None and r[5] is None and r[2] is not None for r in rows), rows


@test
def equals_the_reference_with_custom_options():
    con = corpus()
    cases = [
        ({"rrf_k": 1}, {"rrf_k": 1}),
        ({"rrf_k": 0.5}, {"rrf_k": 0.5}),
        ({"rrf_k": 1000}, {"rrf_k": 1000}),
        ({"weights": [2, 0.5]}, {"weights": (2, 0.5)}),
        ({"weights": [0, 1]}, {"weights": (0, 1)}),
        ({"weights": [1, 0]}, {"weights": (1, 0)}),
        ({"depth": 3}, {"depth": 3}),
        ({"depth": 7, "rrf_k": 10, "weights": [1, 3]}, {"depth": 7, "rrf_k": 10, "weights": (1, 3)}),
        ({"depth": 1}, {"depth": 1}),
        ({"fts_query": "bus NEAR late"}, {"fts_query": "bus NEAR late"}),
        ({"fts_query": "tra*"}, {"fts_query": "tra*"}),
        ({"fts_query": "late NOT bus", "depth": 20}, {"fts_query": "late NOT bus", "depth": 20}),
        ({"fts_query": "body:coffee OR printer", "weights": [0.3, 1.7]},
         {"fts_query": "body:coffee OR printer", "weights": (0.3, 1.7)}),
    ]
    for opts, ref in cases:
        for q in QUERIES[:5]:
            for k in (5, 10, 40):
                got = hybrid(con, q, k, json.dumps(opts))
                assert_same(got, reference(con, q, k, **ref), "%r k=%d %s" % (q, k, opts))
    # depth smaller than k: at most 2 * depth rows
    rows = hybrid(con, "is the bus late?", 10, '{"depth": 3}')
    assert 3 <= len(rows) <= 6 and max(r[2] or 0 for r in rows) <= 3 and max(r[3] or 0 for r in rows) <= 3, rows


@test
def weights_of_zero_leave_that_side_out():
    con = corpus()
    q = "broken printer in the office"
    knn = con.execute("SELECT rowid, distance FROM notes_idx WHERE notes_idx MATCH ? AND k = 10", (q,)).fetchall()
    rows = hybrid(con, q, 10, '{"weights": [1, 0]}')
    assert [(r[0], r[4]) for r in rows] == knn and all(r[3] is None for r in rows), rows
    assert [r[2] for r in rows] == list(range(1, 11))
    fts = con.execute("SELECT rowid, bm25(notes_fts) FROM notes_fts WHERE notes_fts MATCH ? "
                      "ORDER BY bm25(notes_fts), rowid LIMIT 10", (words_query(q),)).fetchall()
    rows = hybrid(con, q, 10, '{"weights": [0, 1]}')
    assert [(r[0], r[5]) for r in rows] == fts and all(r[2] is None for r in rows), rows
    assert [r[1] for r in rows] == [1 / (60 + i) for i in range(1, 11)]


@test
def the_score_is_the_rrf_sum_and_ties_go_by_rowid():
    con = corpus()
    rows = hybrid(con, "is the bus late?", 200)
    for rowid, score, vr, tr, dist, b in rows:
        want = (1 / (60 + vr) if vr else 0) + (1 / (60 + tr) if tr else 0)
        assert abs(score - want) <= 1e-15, (rowid, score, want)
        assert (vr is None) == (dist is None) and (tr is None) == (b is None)
    ties = [(a, b) for a, b in zip(rows, rows[1:]) if a[1] == b[1]]
    assert ties, "no tie in 200 rows: the rule is not exercised"
    assert all(a[0] < b[0] for a, b in ties), ties
    assert all(a[1] >= b[1] for a, b in zip(rows, rows[1:]))


@test
def keyword_side_takes_plain_words_not_fts5_syntax():
    con = corpus()
    # the question is an FTS5 syntax error as it is; here it is four words
    assert_error(con, "SELECT * FROM notes_fts WHERE notes_fts MATCH 'is the bus late?'", "fts5: syntax error")
    assert hybrid(con, "is the bus late?", 5)
    for q in ['"', 'AND OR NOT', 'bus*', 'body:bus', 'NEAR(bus late)', '(late', '-', 'a"b']:
        assert_same(hybrid(con, q, 10), reference(con, q, 10), repr(q))
    # no words: the vector side alone
    for q in ["", "   \t\n"]:
        rows = hybrid(con, q, 5)
        assert len(rows) == 5 and all(r[3] is None for r in rows), (q, rows)
    # a number is its text, as FTS5 and embed_index take it
    assert hybrid(con, 42, 5) == hybrid(con, "42", 5)


@test
def fts_query_option_is_fts5_syntax_and_its_errors_are_fts5s():
    con = corpus()
    msg = assert_error(con, "SELECT * FROM embed_hybrid('notes_idx', 'notes_fts', 'bus', 5, ?)",
                       "embed_hybrid: fts5: syntax error near", args=('{"fts_query": "late AND ("}',))
    assert msg.startswith("embed_hybrid: fts5: "), msg
    assert_error(con, "SELECT * FROM embed_hybrid('notes_idx', 'notes_fts', 'bus', 5, ?)",
                 "embed_hybrid: no such column: nosuch", args=('{"fts_query": "nosuch: bus"}',))
    rows = hybrid(con, "anything at all", 50, '{"fts_query": "\\"bus\\" AND \\"late\\"", "weights": [0, 1]}')
    bodies = [one(con, "SELECT lower(body) FROM notes WHERE id = ?", r[0]) for r in rows]
    assert bodies and all("bus" in b and "late" in b for b in bodies), bodies


@test
def joins_back_to_the_source_and_takes_queries_from_a_table():
    con = corpus()
    rows = con.execute("SELECT n.id, n.body, h.score FROM embed_hybrid('notes_idx', 'notes_fts', 'late bus', 3) AS h "
                       "JOIN notes AS n ON n.id = h.rowid ORDER BY h.score DESC").fetchall()
    assert [r[0] for r in rows] == [r[0] for r in hybrid(con, "late bus", 3)]
    con.execute("CREATE TABLE questions(q TEXT)")
    con.executemany("INSERT INTO questions VALUES (?)", [(q,) for q in QUERIES[:4]])
    got = con.execute("SELECT q.q, h.rowid FROM questions AS q, embed_hybrid('notes_idx', 'notes_fts', q.q, 4) AS h "
                      "ORDER BY q.rowid, h.score DESC, h.rowid").fetchall()
    want = [(q, r[0]) for q in QUERIES[:4] for r in hybrid(con, q, 4)]
    assert got == want, (got, want)
    # the hidden columns are the arguments
    row = con.execute("SELECT \"index\", fts, query, k, options "
                      "FROM embed_hybrid('notes_idx', 'notes_fts', 'bus', 2, "
                      "'{\"depth\": 5}')").fetchone()
    assert row == ("notes_idx", "notes_fts", "bus", 2, '{"depth": 5}'), row


@test
def sees_the_transaction_and_its_pending_rows():
    con = corpus()
    con.execute("BEGIN")
    con.execute("INSERT INTO notes_idx(rowid, text) VALUES (1001, 'zebra crossing closed')")
    con.execute("INSERT INTO notes_fts(rowid, body) VALUES (1001, 'zebra crossing closed')")
    rows = hybrid(con, "zebra", 3)
    assert rows[0][0] == 1001 and rows[0][3] == 1, rows
    assert_same(rows, reference(con, "zebra", 3), "in a transaction")
    con.execute("ROLLBACK")
    assert 1001 not in [r[0] for r in hybrid(con, "zebra", 300)]


@test
def odd_and_qualified_table_names():
    con = corpus()
    # the same rows again under names with quotes, spaces and SQL in them
    con.execute('CREATE VIRTUAL TABLE "my ""idx"" 1" USING embed_index(model = \'hybrid-minilm\')')
    con.execute('INSERT INTO "my ""idx"" 1"(rowid, text) SELECT id, body FROM notes')
    con.execute('CREATE VIRTUAL TABLE "fts \'table\'; --" USING fts5(body)')
    con.execute('INSERT INTO "fts \'table\'; --"(rowid, body) SELECT id, body FROM notes')
    want = hybrid(con, "late bus", 8)
    sql = "SELECT rowid, score, vector_rank, text_rank, distance, bm25 FROM embed_hybrid(?, ?, 'late bus', 8)"
    for ix, ft in [('my "idx" 1', "fts 'table'; --"), ('MY "IDX" 1', "FTS 'TABLE'; --"),
                   ('main.my "idx" 1', "main.fts 'table'; --")]:
        assert con.execute(sql, (ix, ft)).fetchall() == want, (ix, ft)
    # a name is a name, never SQL
    assert_error(con, sql, 'embed_hybrid: the index "x\" WHERE 1; --" does not exist', args=('x" WHERE 1; --', "fts"))
    # a table whose name has a dot is found before schema.table
    con.execute('CREATE VIRTUAL TABLE "main.dotted" USING fts5(body)')
    con.execute('INSERT INTO "main.dotted"(rowid, body) VALUES (5, \'late bus\')')
    rows = con.execute("SELECT rowid, text_rank FROM embed_hybrid('my \"idx\" 1', 'main.dotted', 'late', 50) "
                       "WHERE text_rank IS NOT NULL").fetchall()
    assert rows == [(5, 1)], rows
    # temp and attached schemas
    con.execute("CREATE VIRTUAL TABLE temp.tf USING fts5(body)")
    con.execute("INSERT INTO temp.tf(rowid, body) VALUES (7, 'late bus')")
    rows = con.execute("SELECT rowid, text_rank FROM embed_hybrid('my \"idx\" 1', 'temp.tf', 'late', 50) "
                       "WHERE text_rank IS NOT NULL").fetchall()
    assert rows == [(7, 1)], rows
    assert con.execute("SELECT rowid, text_rank FROM embed_hybrid('my \"idx\" 1', 'tf', 'late', 50) "
                       "WHERE text_rank IS NOT NULL").fetchall() == [(7, 1)]
    with tempfile.TemporaryDirectory() as d:
        con.execute("ATTACH ? AS \"other db\"", (os.path.join(d, "other.db"),))
        con.execute('CREATE VIRTUAL TABLE "other db".af USING fts5(body)')
        con.execute('INSERT INTO "other db".af(rowid, body) VALUES (9, \'late bus\')')
        rows = con.execute("SELECT rowid, text_rank FROM embed_hybrid('my \"idx\" 1', 'other db.af', 'late', 50) "
                           "WHERE text_rank IS NOT NULL").fetchall()
        assert rows == [(9, 1)], rows
        assert_error(con, "SELECT * FROM embed_hybrid('my \"idx\" 1', 'nodb.af', 'late', 5)",
                     'the FTS5 table "nodb.af" does not exist')
        con.execute('DETACH "other db"')


@test
def null_arguments():
    con = corpus()
    base = "SELECT * FROM embed_hybrid(%s, %s, %s, %s)"
    assert_error(con, base % ("NULL", "'notes_fts'", "'bus'", "5"), "embed_hybrid: the index name is NULL")
    assert_error(con, base % ("'notes_idx'", "NULL", "'bus'", "5"), "embed_hybrid: the FTS5 table name is NULL")
    assert con.execute(base % ("'notes_idx'", "'notes_fts'", "NULL", "5")).fetchall() == []
    assert_error(con, base % ("'notes_idx'", "'notes_fts'", "'bus'", "NULL"), "embed_hybrid: k is NULL")
    # NULL options: the defaults
    assert hybrid(con, "bus", 5, None) == con.execute(
        "SELECT rowid, score, vector_rank, text_rank, distance, bm25 FROM embed_hybrid('notes_idx', 'notes_fts', "
        "'bus', 5, NULL)").fetchall()


@test
def k_must_be_a_positive_integer():
    con = corpus()
    for k, shown in [("0", "the integer 0"), ("-3", "the integer -3"), ("2.5", "the real 2.5"),
                     ("'10'", "text '10'"), ("x'01'", "a blob of 1 bytes")]:
        assert_error(con, "SELECT * FROM embed_hybrid('notes_idx', 'notes_fts', 'bus', %s)" % k,
                     "embed_hybrid: k must be a positive integer, not " + shown)
    assert len(con.execute("SELECT * FROM embed_hybrid('notes_idx', 'notes_fts', 'bus', 3.0)").fetchall()) == 3
    assert len(hybrid(con, "bus", 10 ** 12)) <= 200


@test
def missing_arguments_name_the_signature():
    con = corpus()
    for args in ["'notes_idx', 'notes_fts', 'bus'", "'notes_idx'", ""]:
        assert_error(con, "SELECT * FROM embed_hybrid(%s)" % args,
                     "embed_hybrid: needs an index, an FTS5 table, a query and k: "
                     "embed_hybrid(index, fts, query, k [, options])")
    assert_error(con, "SELECT * FROM embed_hybrid('notes_idx', 'notes_fts', 'bus', 5, NULL, 6)", "too many arguments")


@test
def tables_that_do_not_exist_or_are_not_the_right_kind():
    con = corpus()
    con.execute("CREATE VIEW notes_view AS SELECT * FROM notes")
    con.execute("CREATE VIRTUAL TABLE notes_fts4 USING fts4(body)")
    con.execute("CREATE VIRTUAL TABLE Notes_Cased USING FTS5(body)")
    sql = "SELECT * FROM embed_hybrid(?, ?, 'bus', 5)"
    fts5, idx = "is not an FTS5 table: it is", "is not an embed_index table: it is"
    cases = [
        (("nosuch", "notes_fts"), 'embed_hybrid: the index "nosuch" does not exist'),
        (("notes_idx", "nosuch"), 'embed_hybrid: the FTS5 table "nosuch" does not exist'),
        (("notes_idx", "notes"), 'embed_hybrid: "notes" %s an ordinary table' % fts5),
        (("notes_idx", "notes_view"), 'embed_hybrid: "notes_view" %s a view' % fts5),
        (("notes_idx", "notes_fts4"), 'embed_hybrid: "notes_fts4" %s a virtual table using fts4' % fts5),
        (("notes_idx", "notes_idx"), 'embed_hybrid: "notes_idx" %s a virtual table using embed_index' % fts5),
        (("notes_idx", "notes_fts_data"), 'embed_hybrid: "notes_fts_data" %s a shadow table' % fts5),
        (("notes_fts", "notes_fts"), 'embed_hybrid: "notes_fts" %s a virtual table using fts5' % idx),
        (("notes", "notes_fts"), 'embed_hybrid: "notes" %s an ordinary table' % idx),
        (("notes_idx_rows", "notes_fts"), 'embed_hybrid: "notes_idx_rows" %s a shadow table' % idx),
        ((1, "notes_fts"), "embed_hybrid: the index name must be text, not the integer 1"),
        (("notes_idx", "notes_fts\x00x"), "embed_hybrid: the FTS5 table name contains a NUL character"),
    ]
    for args, msg in cases:
        assert_error(con, sql, msg, args=args)
    # the module's name in any case, as SQLite takes it
    con.execute("INSERT INTO Notes_Cased(rowid, body) VALUES (3, 'bus')")
    assert con.execute("SELECT rowid FROM embed_hybrid('notes_idx', 'notes_cased', 'bus', 1, "
                       "'{\"weights\": [0, 1]}')").fetchall() == [(3,)]
    # a table dropped and made again as another kind between calls is checked anew
    assert hybrid(con, "bus", 2)
    con.execute("DROP TABLE notes_fts")
    assert_error(con, sql, 'the FTS5 table "notes_fts" does not exist', args=("notes_idx", "notes_fts"))
    con.execute("CREATE TABLE notes_fts(body)")
    assert_error(con, sql, '"notes_fts" %s an ordinary table' % fts5, args=("notes_idx", "notes_fts"))


@test
def an_index_without_a_model_cannot_embed_the_query():
    con = corpus()
    con.execute("CREATE VIRTUAL TABLE vec_only USING embed_index(dims = 4)")
    con.execute("INSERT INTO vec_only(rowid, vector) VALUES (1, '[1, 0, 0, 0]')")
    assert_error(con, "SELECT * FROM embed_hybrid('vec_only', 'notes_fts', 'late bus', 5)",
                 "embed_hybrid: embed_index:", '"vec_only" has no model', "not text")
    # the keyword side alone does not need it
    assert con.execute("SELECT count(*) FROM embed_hybrid('vec_only', 'notes_fts', 'late bus', 5, "
                       "'{\"weights\": [0, 1]}')").fetchone()[0] == 5


@test
def query_must_be_valid_utf8_text():
    con = corpus()
    sql = "SELECT * FROM embed_hybrid('notes_idx', 'notes_fts', ?, 5)"
    assert_error(con, sql.replace("?", "CAST(x'627573ff' AS TEXT)"),
                 "embed_hybrid: the query is not valid UTF-8 (at byte 3)")
    assert_error(con, sql, "embed_hybrid: the query must be text, not a blob", args=(b"bus",))
    assert_error(con, sql, "embed_hybrid: the query contains a NUL character", args=("bus\x00late",))


@test
def options_are_checked():
    con = corpus()
    sql = "SELECT * FROM embed_hybrid('notes_idx', 'notes_fts', 'bus', 5, ?)"
    cases = [
        ("{", "embed_hybrid: options must be a JSON object"),
        ("[1, 2]", "embed_hybrid: options must be a JSON object"),
        ('{"rrf_k": 60} trailing', "embed_hybrid: options must be a JSON object"),
        ('{"k": 3}', 'embed_hybrid: unknown option "k" (known: rrf_k, weights, depth, fts_query, rerank, rerank_depth)'),
        ('{"rrf_k": 0}', 'embed_hybrid: option "rrf_k" must be a number above 0, not 0'),
        ('{"rrf_k": -1}', 'option "rrf_k" must be a number above 0, not -1'),
        ('{"rrf_k": "60"}', 'option "rrf_k" must be a number above 0, not "60"'),
        ('{"rrf_k": null}', 'option "rrf_k" must be a number above 0, not null'),
        ('{"weights": [1]}',
         'option "weights" must be [vector weight, text weight], two numbers of 0 or more, not [1]'),
        ('{"weights": [1, 2, 3]}', 'option "weights" must be [vector weight, text weight]'),
        ('{"weights": [1, -1]}', 'option "weights" must be [vector weight, text weight]'),
        ('{"weights": [1, "a"]}', 'option "weights" must be [vector weight, text weight]'),
        ('{"weights": 1}', 'option "weights" must be [vector weight, text weight]'),
        ('{"weights": [0, 0]}', 'embed_hybrid: option "weights" must not be both 0'),
        ('{"depth": 0}', 'embed_hybrid: option "depth" must be an integer from 1 to 100000, not 0'),
        ('{"depth": 100001}', 'option "depth" must be an integer from 1 to 100000, not 100001'),
        ('{"depth": 1.0000000000000002}', 'option "depth" must be an integer from 1 to 100000, not 1.0000000000000002'),
        ('{"depth": 2.5}', 'option "depth" must be an integer from 1 to 100000, not 2.5'),
        ('{"depth": "10"}', 'option "depth" must be an integer from 1 to 100000, not "10"'),
        ('{"fts_query": 5}', 'embed_hybrid: option "fts_query" must be a text (an FTS5 query), not 5'),
        ('{"depth": 5, "depth": 6}', 'embed_hybrid: option "depth" is given twice'),
    ]
    for opts, msg in cases:
        assert_error(con, sql, msg, args=(opts,))
    assert_error(con, sql, "embed_hybrid: options must be JSON text, not the integer 5", args=(5,))
    assert_error(con, sql, "embed_hybrid: options must be JSON text, not a blob", args=(b"{}",))
    assert len(con.execute(sql, ('{"depth": 100000, "rrf_k": 1e-9}',)).fetchall()) == 5
    assert len(con.execute(sql, ("{}",)).fetchall()) == 5


@test
def sqlite_supports_the_reference_joins():
    # the reference above relies on FULL OUTER JOIN (SQLite 3.39 and later)
    con = sqlite3.connect(":memory:")
    assert con.execute("SELECT count(*) FROM (SELECT 1 AS a) FULL JOIN (SELECT 2 AS b) ON a = b").fetchone()[0] == 2
