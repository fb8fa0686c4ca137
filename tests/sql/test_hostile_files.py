"""Database files written behind the extension's back, and ordinary SQL values: a forged uid,
IVF lists and vectors that are not what the extension writes, empty metadata values, and what a
database's own views may call. Expected rows come from the rows written and a double-precision
brute force, or from SQLite's answers on an ordinary table holding the same values."""
import math
import os
import random
import sqlite3
import struct
import tempfile

from harness import test, connect, one, blob, floats, f32, assert_error, FIXTURES

BERT = os.path.join(FIXTURES, "models", "bert-tiny-uncased")

INT32_MIN = -2 ** 31


def l2(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def nearest(rows, q, k):
    return [r for _, r in sorted((l2(v, q), r) for r, v in rows.items())[:k]]


def fill(con, name, dims, n, rng, extra=""):
    con.execute("CREATE VIRTUAL TABLE %s USING embed_index(dims = %d, metric = 'l2'%s)" % (name, dims, extra))
    rows = {r: [f32(rng.uniform(-1, 1)) for _ in range(dims)] for r in range(1, n + 1)}
    con.execute("BEGIN")
    for r, v in rows.items():
        con.execute("INSERT INTO %s(rowid, vector) VALUES (?, ?)" % name, (r, blob(v)))
    con.execute("COMMIT")
    return rows


def search(con, name, q, k):
    return [r for r, in con.execute("SELECT rowid FROM %s WHERE %s MATCH ? AND k = ? AND probes = 1000000"
                                    % (name, name), (blob(q), k))]


def copy_uid(path, src, dst):
    """What an attacker does with plain sqlite3: dst takes src's uid and chunk versions."""
    raw = sqlite3.connect(path, isolation_level=None)
    uid = raw.execute("SELECT value FROM %s_config WHERE key = 'uid'" % src).fetchone()[0]
    raw.execute("UPDATE %s_config SET value = ? WHERE key = 'uid'" % dst, (uid,))
    for chunk, ver in raw.execute("SELECT chunk_id, ver FROM %s_chunks" % src).fetchall():
        raw.execute("UPDATE %s_chunks SET ver = ? WHERE chunk_id = ?" % dst, (ver, chunk))
    raw.close()


# ---------- the process-wide copy cannot be shared by a forged uid ----------

@test
def a_copied_uid_never_gives_one_index_another_ones_vectors():
    # the reproducer: y (64 dims, int8, IVF built) read x's 4-dimensional copy past its end
    rng = random.Random(31)
    path = tempfile.mktemp(suffix=".db")
    con = connect(path)
    xs = fill(con, "x", 4, 20, rng)
    ys = fill(con, "y", 64, 40, rng, ", storage = 'int8', index = 'ivf', chunk_size = 16")
    con.execute("INSERT INTO y(y, text) VALUES ('build', '{\"lists\": 4}')")
    assert search(con, "x", xs[3], 3) == nearest(xs, xs[3], 3)
    con.close()
    copy_uid(path, "x", "y")
    con = connect(path)
    for r in (100, 101):  # each index answers with its own rows, however the copies are taken
        assert search(con, "x", xs[5], 3) == nearest(xs, xs[5], 3)
        assert search(con, "y", ys[7], 5) == nearest(ys, ys[7], 5)
        xs[r] = [f32(rng.uniform(-1, 1)) for _ in range(4)]
        con.execute("INSERT INTO x(rowid, vector) VALUES (?, ?)", (r, blob(xs[r])))
    other = connect(path)  # a second connection shares the copies
    assert search(other, "y", ys[9], 5) == nearest(ys, ys[9], 5)
    assert search(other, "x", xs[101], 1) == [101]


@test
def a_copied_uid_between_indexes_of_one_shape_keeps_them_apart():
    rng = random.Random(32)
    path = tempfile.mktemp(suffix=".db")
    con = connect(path)
    xs = fill(con, "x", 4, 12, rng)
    ys = fill(con, "y", 4, 12, rng)
    con.close()
    copy_uid(path, "x", "y")
    con = connect(path)
    assert search(con, "x", xs[2], 12) == nearest(xs, xs[2], 12)
    got = con.execute("SELECT rowid, vector FROM y WHERE y MATCH ? AND k = 12", (blob(ys[4]),)).fetchall()
    assert [r for r, _ in got] == nearest(ys, ys[4], 12)
    assert all(floats(v) == ys[r] for r, v in got)


# ---------- numbers and floats in the shadow tables ----------

def ivf_file(rng, storage="f32"):
    path = tempfile.mktemp(suffix=".db")
    con = connect(path)
    rows = fill(con, "ix", 8, 60, rng, ", storage = '%s', index = 'ivf', chunk_size = 16" % storage)
    con.execute("INSERT INTO ix(ix, text) VALUES ('build', '{\"lists\": 4}')")
    con.close()
    return path, rows


def poke(path, sql, *args):
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute(sql, args)
    raw.execute("UPDATE ix_chunks SET ver = ver + 1")  # so that the copies read the chunks again
    raw.execute("UPDATE ix_config SET value = value + 1 WHERE key = 'version'")
    raw.close()


def list_blob(path, value, slot=3):
    raw = sqlite3.connect(path)
    lists = bytearray(raw.execute("SELECT lists FROM ix_chunks WHERE chunk_id = 0").fetchone()[0])
    raw.close()
    lists[4 * slot:4 * slot + 4] = struct.pack("<i", value)
    return bytes(lists)


@test
def ivf_lists_out_of_range_are_damage():
    # INT32_MIN was signed overflow (list + 1 stored); a list past the built ones was a wrong group
    rng = random.Random(33)
    for value in (INT32_MIN, -1, 5, 2 ** 31 - 1):
        path, rows = ivf_file(rng)
        poke(path, "UPDATE ix_chunks SET lists = ? WHERE chunk_id = 0", list_blob(path, value))
        con = connect(path)
        assert_error(con, "SELECT rowid FROM ix WHERE ix MATCH ? AND k = 3", "embed_index",
                     'shadow table "ix_chunks" is damaged', args=(blob(rows[1]),))


def non_finite_f32(n):
    return struct.pack("<%df" % n, *([float("nan")] + [0.5] * (n - 1)))


@test
def non_finite_vectors_in_the_chunks_vectors_and_centroids_are_damage():
    # NaN written into NAME_vectors behind the extension's back came back at distance 1.0
    rng = random.Random(34)
    f16_nan = b"\x00\x7e"  # binary16 0x7e00, little-endian
    cases = [
        ("f32", "UPDATE ix_chunks SET vectors = ? WHERE chunk_id = 0",
         lambda p: non_finite_f32(16 * 8), "ix_chunks"),
        ("int8", "UPDATE ix_vectors SET vector = ? WHERE id = 2", lambda p: non_finite_f32(8), "ix_vectors"),
        ("f32", "UPDATE ix_centroids SET centroid = ? WHERE list = 1",
         lambda p: struct.pack("<8f", *([float("inf")] * 8)), "ix_centroids"),
        ("f16", "UPDATE ix_chunks SET vectors = ? WHERE chunk_id = 0",
         lambda p: f16_nan * (16 * 8), "ix_chunks"),
        ("int8", "UPDATE ix_chunks SET vectors = ? WHERE chunk_id = 0",
         lambda p: (b"\x01" * 8 + struct.pack("<f", float("nan"))) * 16, "ix_chunks"),
    ]
    for storage, sql, value, table in cases:
        path, rows = ivf_file(rng, storage)
        poke(path, sql, value(path))
        con = connect(path)
        q = blob(rows[2])
        assert_error(con, "SELECT rowid, distance FROM ix WHERE ix MATCH ? AND k = 60 AND probes = 4",
                     "embed_index", 'shadow table "%s" is damaged' % table, "not finite", args=(q,))


@test
def writes_to_an_index_found_damaged_are_refused_with_the_same_error():
    rng = random.Random(35)
    path, rows = ivf_file(rng)
    poke(path, "UPDATE ix_chunks SET lists = ? WHERE chunk_id = 0", list_blob(path, -7))
    con = connect(path)
    msg = assert_error(con, "SELECT rowid FROM ix WHERE ix MATCH ? AND k = 3", "damaged", args=(blob(rows[1]),))
    for sql, args in (("INSERT INTO ix(rowid, vector) VALUES (500, ?)", (blob([0.0] * 8),)),
                      ("DELETE FROM ix WHERE rowid = 1", ()), ("UPDATE ix SET vector = ? WHERE rowid = 2",
                                                                (blob([1.0] * 8),))):
        got = assert_error(con, sql, "damaged", args=args)
        assert msg.split("damaged:")[1] in got, (msg, got)
    assert one(sqlite3.connect(path), "SELECT count(*) FROM ix_rows") == 60  # nothing was written


@test
def embed_rotate_refuses_a_result_that_overflows_as_embed_add_does():
    con = connect()
    assert_error(con, "SELECT embed_add('[3e38, 3e38]', '[3e38, 3e38]')", "embed_add", "overflows float32")
    assert_error(con, "SELECT embed_rotate('[3e38, 3e38]', 1)", "embed_rotate", "overflows float32")
    got = floats(one(con, "SELECT embed_rotate('[1e38, 1e38]', 1)"))  # large but finite stays a vector
    assert all(math.isfinite(x) for x in got)


# ---------- empty text and blob metadata are values ----------

@test
def empty_text_and_blob_metadata_read_back_and_filter_as_sqlite_does():
    # the reproducer: when every non-NULL value of a column was empty, they read back as NULL
    for values in ((["", None], [b"", None]), (["", "a", None, ""], [b"", b"\x00", None, b""])):
        con = connect()
        con.execute("CREATE VIRTUAL TABLE ix USING embed_index(dims = 2, t text, b blob)")
        con.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, t TEXT, b BLOB)")
        for r in range(1, 9):
            t, b = values[0][r % len(values[0])], values[1][r % len(values[1])]
            con.execute("INSERT INTO ix(rowid, vector, t, b) VALUES (?, ?, ?, ?)", (r, blob([r, 1]), t, b))
            con.execute("INSERT INTO ref VALUES (?, ?, ?)", (r, t, b))
        assert (con.execute("SELECT rowid, t, b, typeof(t), typeof(b) FROM ix ORDER BY rowid").fetchall() ==
                con.execute("SELECT id, t, b, typeof(t), typeof(b) FROM ref ORDER BY id").fetchall())
        for cond in ("t = ''", "b = x''", "t IS NULL", "b IS NOT NULL", "t > ''", "t = '' AND b = x''",
                     "t IN ('', 'a')", "length(t) = 0"):
            want = [r for r, in con.execute("SELECT id FROM ref WHERE %s ORDER BY id" % cond)]
            got = [r for r, in con.execute("SELECT rowid FROM ix WHERE %s ORDER BY rowid" % cond)]
            knn = sorted(r for r, in con.execute("SELECT rowid FROM ix WHERE ix MATCH '[1, 0]' AND k = 100 AND "
                                                 + cond))
            assert got == want == knn, (values, cond, got, want, knn)
        row = con.execute("SELECT t, b FROM ix WHERE ix MATCH '[1, 0]' AND k = 1 AND t = ''").fetchone()
        assert row is not None and row[0] == "" and row[1] in (b"", None)


# ---------- what a database's own schema may call ----------

@test
def a_database_schema_cannot_read_the_process_or_run_unbounded_attention():
    path = tempfile.mktemp(suffix=".db")
    con = connect(path)
    con.execute("SELECT embed_unload('schema_tiny')")
    con.execute("SELECT embed_unload('schema_bert')")
    con.execute("SELECT embed_load('schema_bert', ?)", (BERT,))
    con.execute("SELECT embed_define('schema_tiny', ?)", ('{"vocab": ["a", "b"], "embeddings": [[1, 0], [0, 1]],'
                                                   ' "positions": "sinusoidal"}',))
    views = {"models": "SELECT name FROM embed_models", "debug": "SELECT embed_debug()",
             "cache": "SELECT embed_index_cache_bytes()",
             "att": "SELECT count(*) FROM embed_attention('schema_bert', 'a b')",
             "vec": "SELECT embed_json(embed_add('[1, 2]', '[3, 4]'))",
             "rot": "SELECT embed_dims(embed_rotate('[1, 2]', 3))",
             "tok": "SELECT count(*) FROM embed_tokens('schema_tiny', 'a b a')",
             "emb": "SELECT embed_dims(embed('schema_tiny', 'a b'))"}
    for name, sql in views.items():
        con.execute("CREATE VIEW v_%s AS %s" % (name, sql))
    con.close()
    for trusted in ("ON", "OFF"):
        con = connect(path)
        con.execute("PRAGMA trusted_schema = " + trusted)
        for name in ("models", "debug", "cache", "att"):  # SQLITE_DIRECTONLY, whatever trusted_schema says
            assert_error(con, "SELECT * FROM v_%s" % name, "unsafe use of")
            con.execute(views[name]).fetchall()  # in a statement of the application's own: allowed
        assert one(con, "SELECT * FROM v_vec") == "[4,6]"
        assert one(con, "SELECT * FROM v_rot") == 2
        assert one(con, "SELECT * FROM v_emb") == 2
        assert one(con, "SELECT * FROM v_tok") == 3
        con.close()
    for model in ("schema_tiny", "schema_bert"):  # the registry is the process's
        connect().execute("SELECT embed_unload(?)", (model,))
