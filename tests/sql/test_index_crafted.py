"""Crafted shadow-table values that tests/fuzz/index_db.py found handled badly: each is now the
usual 'shadow table "NAME_x" is damaged' error (SQLITE_CORRUPT_VTAB) naming the index's table,
checked here against the message and the error code."""
import os
import sqlite3

from harness import ROOT, FIXTURES, test, connect, one

MODEL = os.path.join(FIXTURES, "models", "minilm-tiny-st")
CE = os.path.join(ROOT, "tests", "references", "rerank", "bert")
TEXTS = ["the bus is late again", "broken printer in the office", "rain and snow on the bridge",
         "a café by the river", "the late train to the city"]


def index(options="", fts=False):
    con = connect()
    one(con, "SELECT embed_load('m', ?)", MODEL)
    one(con, "SELECT embed_load('ce', ?)", CE)
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(model = 'm'%s)" % options)
    con.executemany("INSERT INTO ix(rowid, text) VALUES (?, ?)", enumerate(TEXTS, 1))
    if fts:
        con.execute("CREATE VIRTUAL TABLE ix_fts USING fts5(body)")
        con.executemany("INSERT INTO ix_fts(rowid, body) VALUES (?, ?)", enumerate(TEXTS, 1))
    return con


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
