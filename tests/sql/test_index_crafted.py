"""Crafted shadow-table values that tests/fuzz/index_db.py found handled badly: each is now the
usual 'shadow table "NAME_x" is damaged' error (SQLITE_CORRUPT_VTAB) naming the index's table,
checked here against the message and the error code."""
import os
import sqlite3
import tempfile

from harness import ROOT, FIXTURES, test, connect, one

MODEL = os.path.join(FIXTURES, "models", "minilm-tiny-st")
CE = os.path.join(ROOT, "tests", "references", "rerank", "bert")
TEXTS = ["the bus is late again", "broken printer in the office", "rain and snow on the bridge",
         "a café by the river", "the late train to the city"]


def index(options="", fts=False, path=":memory:"):
    con = connect(path)
    one(con, "SELECT embed_load('m', ?)", MODEL)
    one(con, "SELECT embed_load('ce', ?)", CE)
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(model = 'm'%s)" % options)
    con.executemany("INSERT INTO ix(rowid, text) VALUES (?, ?)", enumerate(TEXTS, 1))
    if fts:
        con.execute("CREATE VIRTUAL TABLE ix_fts USING fts5(body)")
        con.executemany("INSERT INTO ix_fts(rowid, body) VALUES (?, ?)", enumerate(TEXTS, 1))
    return con


def changed_and_reopened(sql, *args, options=""):
    """A file index changed by sql with no connection open on it, then opened again."""
    path = os.path.join(tempfile.mkdtemp(), "crafted.db")
    index(options, path=path).close()
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute(sql, args)
    raw.close()
    return connect(path)


def damaged(con, sql, table, *fragments):
    try:
        con.execute(sql).fetchall()
    except sqlite3.DatabaseError as e:
        msg = str(e)
        assert 'shadow table "%s" is damaged' % table in msg, msg
        for f in fragments:
            assert f in msg, (msg, f)
        assert e.sqlite_errorcode == sqlite3.SQLITE_CORRUPT_VTAB, (msg, e.sqlite_errorname)
        return msg
    raise AssertionError("no error from " + sql)


@test
def a_row_text_that_is_not_utf8_is_damage_for_rerank():
    for bad in (b"\xaa\x84\xfb", b"late bus \xc3", b"\xff"):
        for options in ("", ", storage = 'int8'"):
            con = index(options)
            con.execute("UPDATE ix_rows SET text = CAST(? AS TEXT) WHERE id = 1", (bad,))
            # the plain search does not read the text; rerank scores it
            assert len(con.execute("SELECT rowid FROM ix WHERE ix MATCH 'bus' AND k = 5").fetchall()) == 5
            damaged(con, "SELECT rowid, rerank_score FROM ix WHERE ix MATCH 'bus' AND k = 5 AND rerank = 'ce'",
                    "ix_rows", "the text of rowid 1 is not valid UTF-8", "embed_index: ")


@test
def a_row_text_that_is_not_utf8_is_damage_for_hybrid_rerank():
    con = index(fts=True)
    con.execute("UPDATE ix_rows SET text = CAST(x'6c617465c3' AS TEXT) WHERE id = 1")
    sql = ("SELECT rowid, rerank_score FROM embed_hybrid('ix', 'ix_fts', 'late bus', 5, "
           "'{\"rerank\": \"ce\", \"rerank_depth\": 10}')")
    damaged(con, sql, "ix_rows", "embed_hybrid: ", "the text of rowid 1 is not valid UTF-8")
    # without rerank the text is not read: the fused list is whole
    assert len(con.execute("SELECT rowid FROM embed_hybrid('ix', 'ix_fts', 'late bus', 5)").fetchall()) == 5


@test
def config_names_that_are_not_utf8_are_damage_not_copied_into_messages():
    q = "SELECT rowid FROM ix WHERE ix MATCH 'bus' AND k = 2"
    for key in ("model", "fingerprint"):
        for bad in (b"A\xc3(", b"\xff", b"m\x80"):
            con = changed_and_reopened("UPDATE ix_config SET value = CAST(? AS TEXT) WHERE key = ?", bad, key)
            damaged(con, q, "ix_config", "%s is not UTF-8 text" % key)
    # the folder's path is only a hint in the 'not loaded' message: it is left out, not copied
    con = index()
    con.execute("UPDATE ix_config SET value = CAST(x'2f746d70ff' AS TEXT) WHERE key = 'model_path'")
    con.execute("UPDATE ix_config SET value = 'gone' WHERE key = 'model'")
    try:
        con.execute(q).fetchall()
        raise AssertionError("no error")
    except sqlite3.Error as e:
        assert "model 'gone' of \"ix\" is not loaded" in str(e), e


@test
def a_position_that_is_not_an_integer_is_reported_without_its_bytes():
    for bad in (b"\x80", b"1x", b"\xc3"):
        for options in ("", ", storage = 'bit'"):
            con = index(options)
            con.execute("UPDATE ix_rows SET loc = CAST(? AS TEXT) WHERE id = 2", (bad,))
            damaged(con, "SELECT rowid FROM ix WHERE ix MATCH 'bus' AND k = 5", "ix_rows",
                    "rowid 2 has a position that is not an integer")
    con = index()
    con.execute("UPDATE ix_rows SET loc = 77 WHERE id = 2")
    damaged(con, "SELECT rowid FROM ix WHERE ix MATCH 'bus' AND k = 5", "ix_rows",
            "rowid 2 has position 77, outside the 5 vectors")


@test
def a_chunk_blob_too_short_or_missing_is_damage_for_writes():
    for options in ("", ", storage = 'bit'", ", storage = 'int8'"):
        for col, value in (("vectors", b"\x00\x11"), ("rowids", b"\x00"), ("vectors", None)):
            con = changed_and_reopened("UPDATE ix_chunks SET %s = ? WHERE chunk_id = 0" % col, value, options=options)
            want = ("chunk 0 has no %s BLOB" % col if value is None else
                    "chunk 0's %s BLOB of %d bytes is too short for its positions" % (col, len(value)))
            for sql in ("DELETE FROM ix WHERE rowid = 3", "UPDATE ix SET text = 'snow' WHERE rowid = 2"):
                damaged(con, sql, "ix_chunks", want, "embed_index: ")
