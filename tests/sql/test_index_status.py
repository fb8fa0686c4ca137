"""embed_index_status over crafted NAME_config and NAME_chunks values: every value it formats or
sizes memory by is checked first, the way the index's own searches check it, and damage is the
usual 'shadow table "NAME_x" is damaged' error (SQLITE_CORRUPT_VTAB), never a crash, an empty
message or a huge allocation."""
import calendar
import random
import sqlite3

from harness import test, connect, blob, assert_error

KINDS = {"flat": "dims = 4", "ivf": "dims = 4, index = 'ivf'", "int8": "dims = 4, storage = 'int8'",
         "bit": "dims = 8, storage = 'bit'", "metadata": "dims = 4, lang text"}


def index(kind, rows=40, build=True):
    con = connect()
    con.execute("CREATE VIRTUAL TABLE t USING embed_index(%s)" % KINDS[kind])
    rng = random.Random(5)
    d = 8 if kind == "bit" else 4
    con.execute("BEGIN")
    for i in range(1, rows + 1):
        con.execute("INSERT INTO t(rowid, vector) VALUES (?, ?)", (i, blob([rng.gauss(0, 1) for _ in range(d)])))
    con.execute("COMMIT")
    if kind == "ivf" and build:
        con.execute("""INSERT INTO t(t, text) VALUES ('build', '{"lists": 4}')""")
    return con


def status(con):
    return dict(con.execute("SELECT name, value FROM embed_index_status('t')"))


def set_config(con, key, value):
    con.execute("INSERT OR REPLACE INTO t_config VALUES (?, ?)", (key, value))


def damaged(con, sql, *fragments):
    try:
        con.execute(sql).fetchall()
    except sqlite3.DatabaseError as e:
        msg = str(e)
        assert 'shadow table "t_config" is damaged' in msg, msg
        for f in fragments:
            assert f in msg, (msg, f)
        assert e.sqlite_errorcode == sqlite3.SQLITE_CORRUPT_VTAB, e.sqlite_errorname
        return msg
    raise AssertionError("no error from " + sql)


@test
def built_at_is_formatted_as_utc_or_reported_as_damage():
    for kind in KINDS:
        con = index(kind)
        for seconds in (0, 1700000000, calendar.timegm((9999, 12, 31, 23, 59, 59))):
            set_config(con, "built_at", seconds)
            want = "%04d-%02d-%02d %02d:%02d:%02d" % __import__("time").gmtime(seconds)[:6]
            assert status(con)["built_at"] == want, (kind, seconds, status(con)["built_at"], want)
        # past year 9999, past gmtime's years, the largest integer: no time a build wrote
        for seconds in (calendar.timegm((9999, 12, 31, 23, 59, 59)) + 1, 1 << 55, 9223372036854775807):
            set_config(con, "built_at", seconds)
            damaged(con, "SELECT * FROM embed_index_status('t')", "built_at %d is not a time" % seconds)
        con.execute("DELETE FROM t_config WHERE key = 'built_at'")
        assert status(con)["built_at"] is None


@test
def ivf_lists_past_what_a_build_makes_is_damage_for_status_and_searches_alike():
    q = blob([1.0, 0.0, 0.0, 0.0])
    for lists in (1 << 61, 2147483647, 1 << 25, (1 << 20) + 1, -1):
        con = index("ivf")
        set_config(con, "ivf_lists", lists)
        if lists < 0:  # negative: the setting check that covers every key
            damaged(con, "SELECT * FROM embed_index_status('t')", "not a whole number")
            continue
        want = "ivf_lists %d is not a number of lists (0 to 1048576)" % lists
        a = damaged(con, "SELECT * FROM embed_index_status('t')", want)
        b = assert_error(con, "SELECT rowid FROM t WHERE t MATCH x'%s' AND k = 2" % q.hex(), want)
        assert b.startswith("embed_index: " + a.split(": ", 1)[1]), (a, b)  # the one check, worded once
    # the largest a build makes is read (its centroids are what is then missing)
    con = index("ivf")
    set_config(con, "ivf_lists", 1 << 20)
    st = status(con)
    assert st["lists"] == 1 << 20 and st["list_min"] == 0 and st["list_max"] <= 40, st
    assert_error(con, "INSERT INTO t(t, text) VALUES ('build', '{\"lists\": 1048577}')", "lists")


@test
def chunk_ids_and_sizes_that_overflow_are_not_multiplied():
    for chunk_id in (1 << 62, -(1 << 62), 9223372036854775807):
        con = index("ivf", rows=10)
        con.execute("UPDATE t_chunks SET chunk_id = ?", (chunk_id,))
        st = status(con)  # the chunk holds none of the vectors: none is counted in a list
        assert st["vectors"] == 10 and st["list_max"] == 0 and st["unassigned"] == 0, st
        assert_error(con, "SELECT rowid FROM t WHERE t MATCH x'%s' AND k = 2" % blob([1, 0, 0, 0]).hex(),
                     'shadow table "t_chunks" is damaged')
    con = index("ivf", rows=10)
    set_config(con, "count", 9223372036854775807)  # rows * 4 bytes of lists would overflow
    set_config(con, "chunk_size", 9223372036854775807)
    assert_error(con, "SELECT * FROM embed_index_status('t')", 'shadow table "t_chunks" is damaged',
                 "lists are shorter than its rows")


@test
def empty_indexes_report_without_lists():
    for kind in KINDS:
        con = connect()
        con.execute("CREATE VIRTUAL TABLE t USING embed_index(%s)" % KINDS[kind])
        st = status(con)
        assert st["rows"] == 0 and st["vectors"] == 0 and st["list_min"] is None and st["built_at"] is None, st
