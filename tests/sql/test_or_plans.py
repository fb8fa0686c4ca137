"""Ordinary SQL around the table-valued functions and embed_index: OR, IN, joins and correlated
subqueries. SQLite plans each branch of an OR on its own, and its branch plans never carry a
function's arguments; those plans must be refused or priced out, not fail the statement.

Every answer is SQLite's own on an ordinary table: the function's rows copied with CREATE TABLE
... AS, then the same WHERE run on both, and an OR checked also against the union of its two
sides run one at a time. A search's reference is the k nearest by embed_distance on a plain
table of the same vectors."""
import os

from harness import test, connect, one, assert_error, FIXTURES

MODEL = os.path.join(FIXTURES, "models", "minilm-tiny-st")
TEXT = "The bus is late again, and the rain today is cold."
DOCS = [(1, "The bus is late."), (2, "Rain again today"), (3, "a late train and a late bus"),
        (4, "Coffee in the garden")]


def setup():
    con = connect()
    one(con, "SELECT embed_load('or-m', ?)", MODEL)
    con.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT)")
    con.executemany("INSERT INTO docs VALUES (?, ?)", DOCS)
    return con


def rows(con, sql, args=()):
    return sorted(con.execute(sql, args).fetchall(), key=repr)


def copy(con, name, sql, args=()):
    """An ordinary table holding the rows of sql."""
    con.execute("DROP TABLE IF EXISTS " + name)
    con.execute("CREATE TABLE %s AS %s" % (name, sql), args)


def check_or(con, source, plain, cols, a, b, args=()):
    """cols FROM source WHERE a OR b equals the same on the plain table and the union of a and b."""
    got = rows(con, "SELECT %s FROM %s WHERE %s OR %s" % (cols, source, a, b), args)
    want = rows(con, "SELECT %s FROM %s WHERE %s OR %s" % (cols, plain, a, b))
    union = sorted(set(rows(con, "SELECT %s FROM %s WHERE %s" % (cols, source, a), args)) |
                   set(rows(con, "SELECT %s FROM %s WHERE %s" % (cols, source, b), args)), key=repr)
    assert got == want, "%s: %s OR %s\n got %s\nwant %s" % (source, a, b, got, want)
    assert got == union, "%s: %s OR %s is not the union of its sides\n got %s\nwant %s" % (source, a, b, got, union)
    assert got, "%s: %s OR %s selects nothing: a weak check" % (source, a, b)


TOKEN_COLS = 'position, token_id, token, type_id, start, "end", word'


@test
def tokens_or_equals_the_plain_table():
    con = setup()
    src = "embed_tokens('or-m', ?)"
    copy(con, "plain", "SELECT %s FROM %s" % (TOKEN_COLS, src), (TEXT,))
    for a, b in [("position = 1", "position = 3"), ("position = 1", "token = 'late'"),
                 ("word = 0", "start > 30"), ("position < 2", "token = 'the' AND type_id = 0"),
                 ("start IS NULL", "token LIKE 'r%'"), ("position IN (2, 4)", "token = 'cold'")]:
        check_or(con, src, "plain", TOKEN_COLS, a, b, (TEXT,))


@test
def tokens_in_lists_on_columns_and_arguments():
    con = setup()
    copy(con, "plain", "SELECT %s FROM embed_tokens('or-m', ?)" % TOKEN_COLS, (TEXT,))
    for cond in ["position IN (0, 2, 5)", "token IN ('bus', 'late', 'nothing')",
                 "position IN (0, 2) OR token IN ('rain', 'cold')"]:
        got = rows(con, "SELECT %s FROM embed_tokens('or-m', ?) WHERE %s" % (TOKEN_COLS, cond), (TEXT,))
        assert got and got == rows(con, "SELECT %s FROM plain WHERE %s" % (TOKEN_COLS, cond)), cond
    # an IN list on the text argument runs the function once per text
    got = rows(con, "SELECT text, position, token FROM embed_tokens WHERE model = 'or-m' AND text IN (?, ?)",
               (DOCS[0][1], DOCS[1][1]))
    want = sorted(rows(con, "SELECT ?, position, token FROM embed_tokens('or-m', ?)", (DOCS[0][1],) * 2) +
                  rows(con, "SELECT ?, position, token FROM embed_tokens('or-m', ?)", (DOCS[1][1],) * 2), key=repr)
    assert got == want
    got = rows(con, "SELECT text, position, token FROM embed_tokens WHERE model = 'or-m' AND (text = ? OR text = ?)",
               (DOCS[0][1], DOCS[1][1]))
    assert got == want


@test
def tokens_joined_to_a_table_of_texts():
    con = setup()
    join = "docs AS d JOIN embed_tokens('or-m', d.body) AS t"
    copy(con, "plain", "SELECT d.id AS id, t.position AS position, t.token AS token FROM " + join)
    assert one(con, "SELECT count(DISTINCT id) FROM plain") == len(DOCS)
    cols = "id, position, token"
    got = rows(con, "SELECT d.id, t.position, t.token FROM %s WHERE t.position = 1 OR t.token = 'late'" % join)
    want = rows(con, "SELECT %s FROM plain WHERE position = 1 OR token = 'late'" % cols)
    assert got == want and len(got) > len(DOCS), (got, want)
    got = rows(con, "SELECT d.id, t.token FROM %s WHERE d.id = 2 OR t.token = 'bus'" % join)
    assert got == rows(con, "SELECT id, token FROM plain WHERE id = 2 OR token = 'bus'")
    got = rows(con, "SELECT d.id, t.token FROM docs AS d LEFT JOIN embed_tokens('or-m', d.body) AS t "
                    "ON t.position = 1 OR t.token = 'late'")
    want = rows(con, "SELECT d.id, p.token FROM docs AS d LEFT JOIN plain AS p "
                     "ON p.id = d.id AND (p.position = 1 OR p.token = 'late')")
    assert got == want and len(got) > len(DOCS), (got, want)
    # the function twice: each token of the outer call tokenized again
    nested = "embed_tokens('or-m', 'late bus') AS a JOIN embed_tokens('or-m', a.token) AS b"
    copy(con, "plain2", "SELECT a.token AS outer_token, b.position AS position, b.token AS token FROM " + nested)
    got = rows(con, "SELECT a.token, b.position, b.token FROM %s WHERE b.position = 1 OR b.token = 'bus'" % nested)
    assert got and got == rows(con, "SELECT * FROM plain2 WHERE position = 1 OR token = 'bus'")


@test
def tokens_in_correlated_subqueries():
    con = setup()
    copy(con, "plain", "SELECT d.id AS id, t.position AS position, t.token AS token "
                       "FROM docs AS d JOIN embed_tokens('or-m', d.body) AS t")
    got = con.execute("SELECT id, (SELECT group_concat(token, ' ') FROM (SELECT token FROM embed_tokens('or-m', "
                      "docs.body) WHERE position = 1 OR position = 3 ORDER BY position)) FROM docs ORDER BY id"
                      ).fetchall()
    want = con.execute("SELECT d.id, (SELECT group_concat(token, ' ') FROM (SELECT token FROM plain WHERE "
                       "id = d.id AND (position = 1 OR position = 3) ORDER BY position)) FROM docs AS d ORDER BY id"
                       ).fetchall()
    assert got == want, (got, want)
    got = rows(con, "SELECT id FROM docs WHERE EXISTS (SELECT 1 FROM embed_tokens('or-m', docs.body) "
                    "WHERE token = 'late' OR token = 'rain')")
    assert got == [(1,), (2,), (3,)], got
    got = rows(con, "SELECT id FROM docs WHERE id IN (SELECT t.position FROM embed_tokens('or-m', docs.body) AS t "
                    "WHERE t.position = docs.id OR t.token = 'coffee')")
    assert got == rows(con, "SELECT id FROM docs AS d WHERE id IN (SELECT position FROM plain WHERE id = d.id "
                            "AND (position = d.id OR token = 'coffee'))") and got, got


CHUNK_COLS = 'chunk, text, start, "end", tokens'
LONG = ("The bus is late again. The rain today is cold and grey! Is the train on time? "
        "Coffee in the garden is a fine idea, said the old man.\nA late train and a late bus.")
CHUNK_OPTS = '{"max_tokens": 8}'


@test
def chunks_or_in_and_joins_equal_the_plain_table():
    con = setup()
    src = "embed_chunks('or-m', ?, '%s')" % CHUNK_OPTS
    copy(con, "plain", "SELECT %s FROM %s" % (CHUNK_COLS, src), (LONG,))
    assert one(con, "SELECT count(*) FROM plain") > 4
    for a, b in [("chunk = 1", "chunk = 3"), ("chunk = 0", "text LIKE '%rain%'"), ("tokens < 6", "start > 60"),
                 ("chunk IN (2, 4)", "text LIKE 'A late%'")]:
        check_or(con, src, "plain", CHUNK_COLS, a, b, (LONG,))
    # IN and OR on the text argument: the function once per text
    got = rows(con, "SELECT input, chunk, text FROM embed_chunks WHERE model = 'or-m' AND input IN (?, ?) "
                    "AND options = ?", (DOCS[0][1], DOCS[2][1], '{"max_tokens": 3}'))
    want = sorted(rows(con, "SELECT ?1, chunk, text FROM embed_chunks('or-m', ?1, '{\"max_tokens\": 3}')",
                       (DOCS[0][1],)) +
                  rows(con, "SELECT ?1, chunk, text FROM embed_chunks('or-m', ?1, '{\"max_tokens\": 3}')",
                       (DOCS[2][1],)), key=repr)
    assert got and got == want
    got = rows(con, "SELECT input, chunk, text FROM embed_chunks WHERE model = 'or-m' AND (input = ? OR input = ?) "
                    "AND options = ?", (DOCS[0][1], DOCS[2][1], '{"max_tokens": 3}'))
    assert got == want
    join = "docs AS d JOIN embed_chunks('or-m', d.body, '{\"max_tokens\": 3}') AS c"
    copy(con, "plain2", "SELECT d.id AS id, c.chunk AS chunk, c.text AS text FROM " + join)
    assert one(con, "SELECT count(DISTINCT id) FROM plain2") == len(DOCS)
    got = rows(con, "SELECT d.id, c.chunk, c.text FROM %s WHERE c.chunk = 1 OR d.id = 4" % join)
    assert got and got == rows(con, "SELECT * FROM plain2 WHERE chunk = 1 OR id = 4")
    got = con.execute("SELECT id, (SELECT count(*) FROM embed_chunks('or-m', docs.body, '{\"max_tokens\": 3}') "
                      "WHERE chunk = 0 OR text LIKE '%late%') FROM docs ORDER BY id").fetchall()
    want = con.execute("SELECT d.id, (SELECT count(*) FROM plain2 WHERE id = d.id AND (chunk = 0 OR text LIKE "
                       "'%late%')) FROM docs AS d ORDER BY id").fetchall()
    assert got == want, (got, want)


@test
def attention_or_equals_the_plain_table():
    con = setup()
    src = "embed_attention('or-m', ?)"
    cols = "layer, head, query, key, query_token, key_token, weight"
    copy(con, "plain", "SELECT %s FROM %s" % (cols, src), ("late bus again",))
    for a, b in [("layer = 1", "head = 1"), ("query = 1", "key = 2"), ("layer = 2 AND query = 0", "weight > 0.4"),
                 ("key_token = 'bus'", "query IN (0, 3)")]:
        check_or(con, src, "plain", cols, a, b, ("late bus again",))
    join = "docs AS d JOIN embed_attention('or-m', d.body, 1, 0) AS a"
    copy(con, "plain_join", "SELECT d.id AS id, a.layer AS layer, a.query AS query, a.key AS key FROM " + join)
    got = rows(con, "SELECT d.id, a.layer, a.query, a.key FROM %s WHERE a.query = 0 OR a.key = 0" % join)
    assert got and got == rows(con, "SELECT * FROM plain_join WHERE query = 0 OR key = 0")


def hybrid_corpus(con):
    words = "bus train late early rain snow city river office coffee garden report".split()
    notes = [(i, "%s %s %s" % (words[i % 12], words[(i * 5) % 12], words[(i * 7 + 3) % 12])) for i in range(1, 61)]
    con.execute("CREATE VIRTUAL TABLE notes_idx USING embed_index(model = 'or-m')")
    con.execute("CREATE VIRTUAL TABLE notes_fts USING fts5(body)")
    con.executemany("INSERT INTO notes_idx(rowid, text) VALUES (?, ?)", notes)
    con.executemany("INSERT INTO notes_fts(rowid, body) VALUES (?, ?)", notes)


@test
def hybrid_or_equals_the_plain_table():
    con = setup()
    hybrid_corpus(con)
    src = "embed_hybrid('notes_idx', 'notes_fts', 'late bus', 12)"
    cols = "rowid, score, vector_rank, text_rank, distance, bm25"
    copy(con, "plain", "SELECT %s FROM %s" % (cols.replace("rowid", "rowid AS rowid"), src))
    assert one(con, "SELECT count(*) FROM plain") == 12
    for a, b in [("vector_rank = 1", "text_rank = 1"), ("rowid = %d" % one(con, "SELECT max(rowid) FROM plain"),
                                                        "text_rank <= 2"),
                 ("vector_rank IS NULL", "score > %r" % one(con, "SELECT avg(score) FROM plain"))]:
        check_or(con, src, "plain", cols, a, b)
    ids = [r for r, in con.execute("SELECT rowid FROM plain ORDER BY rowid LIMIT 2")]
    got = rows(con, "SELECT rowid FROM %s WHERE rowid = ? OR rowid = ?" % src, ids)
    assert got == [(i,) for i in ids]
    # the query from a table: one fused search per row
    con.execute("CREATE TABLE queries(q TEXT)")
    con.executemany("INSERT INTO queries VALUES (?)", [("late bus",), ("rain",)])
    join = "queries AS q JOIN embed_hybrid('notes_idx', 'notes_fts', q.q, 5) AS h"
    copy(con, "plain_join", "SELECT q.q AS q, h.rowid AS id, h.vector_rank AS v, h.text_rank AS t FROM " + join)
    got = rows(con, "SELECT q.q, h.rowid FROM %s WHERE h.vector_rank = 1 OR h.text_rank = 1" % join)
    assert got and got == rows(con, "SELECT q, id FROM plain_join WHERE v = 1 OR t = 1")


def index_corpus(con):
    """ix (dims 3, l2, metadata lang and n) and plain(id, vec, lang, n) with the same rows."""
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(dims = 3, metric = 'l2', chunk_size = 8, lang text, "
                "n integer)")
    con.execute("CREATE TABLE plain(id INTEGER PRIMARY KEY, vec BLOB, lang TEXT, n INTEGER)")
    for i in range(1, 41):
        vec = "[%d, %d, %d]" % (i % 7, (i * 3) % 11, i % 5)
        meta = (["en", "fr", "de"][i % 3], i % 5)
        con.execute("INSERT INTO ix(rowid, vector, lang, n) VALUES (?, ?, ?, ?)", (i, vec) + meta)
        con.execute("INSERT INTO plain VALUES (?, embed_vector(?), ?, ?)", (i, vec) + meta)


def nearest(con, q, k, cond="1"):
    """The k nearest plain rows (ties by id) among those satisfying cond."""
    return [r for r, in con.execute("SELECT id FROM plain WHERE %s ORDER BY embed_distance(vec, embed_vector(?), "
                                    "'l2'), id LIMIT ?" % cond, (q, k))]


def ids(con, sql, args=()):
    return sorted(r for r, in con.execute(sql, args))


Q = "[3, 4, 2]"


@test
def index_rowid_ors_and_in_lists():
    con = setup()
    index_corpus(con)
    assert ids(con, "SELECT rowid FROM ix WHERE rowid = 1 OR rowid = 5") == [1, 5]
    assert ids(con, "SELECT rowid FROM ix WHERE rowid = 1 OR rowid > 37") == [1, 38, 39, 40]
    assert ids(con, "SELECT rowid FROM ix WHERE rowid IN (2, 9, 99)") == [2, 9]
    # inside a search, an OR of rowids is a condition of the search: the k nearest among those rows
    for cond in ["rowid = 1 OR rowid = 5", "rowid IN (1, 5)", "rowid = 3 OR rowid = 7 OR rowid = 30"]:
        want = sorted(nearest(con, Q, 2, cond.replace("rowid", "id")))
        for match in ("ix", "vector"):
            got = ids(con, "SELECT rowid FROM ix WHERE %s MATCH ? AND k = 2 AND (%s)" % (match, cond), (Q,))
            assert got == want, (match, cond, got)


@test
def index_search_ored_with_rowids_and_metadata():
    con = setup()
    index_corpus(con)
    knn = set(nearest(con, Q, 3))
    for other in ["rowid = 7", "rowid IN (7, 8)", "lang = 'de'", "n > 3", "lang = 'de' AND n > 2",
                  "rowid > 37"]:
        sql = "SELECT rowid FROM ix WHERE (ix MATCH ? AND k = 3) OR %s" % other
        want = sorted(knn | set(ids(con, "SELECT id FROM plain WHERE " + other.replace("rowid", "id"))))
        assert ids(con, sql, (Q,)) == want, other
        assert ids(con, sql.replace("ix MATCH", "vector MATCH"), (Q,)) == want, other
        assert sorted(set(ids(con, "SELECT rowid FROM ix WHERE ix MATCH ? AND k = 3", (Q,))) |
                      set(ids(con, "SELECT rowid FROM ix WHERE " + other))) == want, other
    # two searches ORed: the union of both
    got = ids(con, "SELECT rowid FROM ix WHERE (ix MATCH ? AND k = 2) OR (ix MATCH ? AND k = 2)", (Q, "[0, 0, 0]"))
    assert got == sorted(set(nearest(con, Q, 2)) | set(nearest(con, "[0, 0, 0]", 2)))
    # metadata ORs on a plain scan, SQLite's answer
    for cond in ["lang = 'en' OR n = 2", "lang = 'fr' OR rowid = 3", "n IN (1, 4) OR lang = 'de'"]:
        assert ids(con, "SELECT rowid FROM ix WHERE " + cond) == ids(con, "SELECT id FROM plain WHERE " +
                                                                       cond.replace("rowid", "id")), cond


@test
def models_or_in_join_and_subquery():
    con = setup()
    one(con, "SELECT embed_load('or-b', ?)", os.path.join(FIXTURES, "models", "bert-tiny-uncased"))
    cols = "name, architecture, hidden_size, layers, heads, vocab_size"
    copy(con, "plain", "SELECT %s FROM embed_models WHERE name IN ('or-m', 'or-b')" % cols)
    src = "embed_models"
    for a, b in [("name = 'or-m'", "name = 'or-b'"), ("name = 'or-m'", "layers = 99"),
                 ("architecture = 'bert' AND name LIKE 'or-%'", "name IN ('or-b', 'zz')")]:
        got = rows(con, "SELECT %s FROM %s WHERE (%s OR %s) AND name LIKE 'or-%%'" % (cols, src, a, b))
        assert got and got == rows(con, "SELECT %s FROM plain WHERE %s OR %s" % (cols, a, b)), (a, b)
    con.execute("CREATE TABLE uses(doc INTEGER, model TEXT)")
    con.executemany("INSERT INTO uses VALUES (?, ?)", [(1, "or-m"), (2, "or-b"), (3, "none")])
    got = rows(con, "SELECT u.doc, m.layers FROM uses AS u JOIN embed_models AS m ON m.name = u.model "
                    "WHERE m.layers > 2 OR u.doc = 2")
    assert got == rows(con, "SELECT u.doc, p.layers FROM uses AS u JOIN plain AS p ON p.name = u.model "
                            "WHERE p.layers > 2 OR u.doc = 2") and got
    got = con.execute("SELECT doc, (SELECT hidden_size FROM embed_models WHERE name = uses.model OR name = 'zz') "
                      "FROM uses ORDER BY doc").fetchall()
    assert got == con.execute("SELECT doc, (SELECT hidden_size FROM plain WHERE name = uses.model) FROM uses "
                              "ORDER BY doc").fetchall()


@test
def missing_arguments_still_say_what_is_needed():
    con = setup()
    hybrid_corpus(con)
    tokens = "embed_tokens: needs a model and a text"
    attention = "embed_attention: needs a model and a text"
    for sql, msg in [("SELECT * FROM embed_tokens", tokens), ("SELECT * FROM embed_tokens('or-m')", tokens),
                     ("SELECT * FROM embed_tokens WHERE position = 1 OR token = 'x'", tokens),
                     ("SELECT * FROM embed_attention('or-m')", attention),
                     ("SELECT * FROM embed_chunks WHERE chunk = 1 OR text = 'x'", "embed_chunks: needs a model and a text"),
                     ("SELECT * FROM embed_attention WHERE layer = 1 OR head = 0", attention),
                     ("SELECT * FROM embed_hybrid('notes_idx', 'notes_fts')", "embed_hybrid: needs an index"),
                     ("SELECT * FROM embed_hybrid WHERE rowid = 1 OR score > 0", "embed_hybrid: needs an index")]:
        assert_error(con, sql, msg)
