"""embed_index with compact storage (f16, int8, sign bits), exact rescoring, the IVF index and
the process-wide copy. Expected neighbours and distances come from a double-precision brute
force computed here on the float32 vectors; recall thresholds (with margin) are for fixed
seeds. Every storage type and the IVF must show each write (insert, update, delete, rollback,
another connection's or another process's commit) in the next search."""
import gc
import math
import os
import random
import subprocess
import sys
import tempfile

from harness import test, connect, one, blob, floats, f32, assert_error, ROOT, EXT, FIXTURES

STORAGES = ["f32", "f16", "int8", "bit"]
VEC = os.path.join(ROOT, ".deps", "node_modules", "sqlite-vec-linux-x64", "vec0")


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [f32(x / n) for x in v]


def clustered(rng, n, d, centres=20, sigma=0.35):
    """The issue's benchmark data, small: Gaussian centres, points = centre + N(0, sigma^2), unit."""
    cs = [[rng.gauss(0, 1) for _ in range(d)] for _ in range(centres)]
    return [unit([x + rng.gauss(0, sigma) for x in rng.choice(cs)]) for _ in range(n)]


def near(rng, v, noise=0.05):
    return unit([x + rng.gauss(0, noise) for x in v])


def distance(metric, a, b):
    if metric == "cosine":
        dot = sum(x * y for x, y in zip(a, b))
        na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
        return 1 - dot / (na * nb)
    if metric == "l2":
        return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    if metric == "l1":
        return sum(abs(x - y) for x, y in zip(a, b))
    return -sum(x * y for x, y in zip(a, b))


def brute(rows, q, k, metric="cosine"):
    return sorted((distance(metric, v, q), r) for r, v in rows.items())[:k]


def make(con, storage, rows, name="ix", extra=""):
    d = len(next(iter(rows.values())))
    con.execute("CREATE VIRTUAL TABLE %s USING embed_index(dims = %d, storage = '%s', chunk_size = 64%s)"
                % (name, d, storage, extra))
    con.execute("BEGIN")
    con.executemany("INSERT INTO %s(rowid, vector) VALUES (?, ?)" % name, [(r, blob(v)) for r, v in rows.items()])
    con.execute("COMMIT")


def search(con, q, k=10, name="ix", extra="", args=()):
    return con.execute("SELECT rowid, distance FROM %s WHERE %s MATCH ? AND k = ? %s" % (name, name, extra),
                       (blob(q), k) + args).fetchall()


def assert_exact(got, rows, q, metric="cosine", what=""):
    """Every returned distance is the exact distance of that row, nearest first."""
    for r, dist in got:
        want = distance(metric, rows[r], q)
        assert abs(dist - want) < 1e-9, "%s: row %d distance %r, exact %r" % (what, r, dist, want)
    assert [d for _, d in got] == sorted(d for _, d in got), what


def recall(con, rows, queries, k=10, **kw):
    hit = 0
    for q in queries:
        got = search(con, q, k, **kw)
        assert_exact(got, rows, q)
        hit += len({r for r, _ in got} & {r for _, r in brute(rows, q, k)})
    return hit / (k * len(queries))


def data(seed=1, n=1200, d=48):
    rng = random.Random(seed)
    rows = {i + 1: v for i, v in enumerate(clustered(rng, n, d))}
    queries = [near(rng, rows[rng.randrange(1, n + 1)]) for _ in range(20)]
    return rows, queries


# ---------- compact storage: exact distances, recall ----------

@test
def compact_storage_returns_exact_distances_and_high_recall():
    rows, queries = data()
    # measured with these seeds and the default oversample (2, 4, 16): 1.0 for all four; with
    # oversample = 1: f16 1.0, int8 0.97, bit 0.41
    floor = {"f32": 1.0, "f16": 0.99, "int8": 0.97, "bit": 0.9}
    for storage in STORAGES:
        con = connect()
        make(con, storage, rows)
        r = recall(con, rows, queries)
        assert r >= floor[storage], (storage, r)


@test
def oversample_trades_recall_and_a_large_one_is_exact():
    rows, queries = data(seed=2)
    con = connect()
    make(con, "bit", rows)
    low = recall(con, rows, queries, extra="AND oversample = 1")
    exact = recall(con, rows, queries, extra="AND oversample = 2000")
    assert exact == 1.0, exact
    assert low < exact, (low, exact)


@test
def every_metric_is_rescored_exactly():
    rng = random.Random(3)
    d = 24
    rows = {i + 1: [f32(rng.uniform(-1, 1)) for _ in range(d)] for i in range(400)}
    for storage in STORAGES[1:]:
        for metric in ("cosine", "l2", "dot", "l1"):
            con = connect()
            make(con, storage, rows, extra=", metric = '%s'" % metric)
            q = [f32(rng.uniform(-1, 1)) for _ in range(d)]
            got = search(con, q, 10, extra="AND oversample = 1000")
            want = brute(rows, q, 10, metric)
            assert [r for r, _ in got] == [r for _, r in want], (storage, metric)
            assert_exact(got, rows, q, metric, "%s %s" % (storage, metric))


@test
def the_vector_column_gives_the_stored_float32_vector():
    rows, queries = data(n=200)
    for storage in STORAGES:
        con = connect()
        make(con, storage, rows)
        got = con.execute("SELECT rowid, vector FROM ix WHERE ix MATCH ? AND k = 3", (blob(queries[0]),)).fetchall()
        for r, v in got:
            assert floats(v) == rows[r], storage
        assert floats(one(con, "SELECT vector FROM ix WHERE rowid = 7")) == rows[7], storage
        assert [floats(v) for v, in con.execute("SELECT vector FROM ix ORDER BY rowid LIMIT 3")] == \
            [rows[1], rows[2], rows[3]], storage


@test
def without_rescoring_distances_are_those_of_the_codes():
    rows, queries = data(n=300)
    con = connect()
    make(con, "int8", rows, extra=", rescore = false")
    assert one(con, "SELECT count(*) FROM ix_vectors") == 0  # no float32 copy kept
    q = queries[0]
    got = search(con, q, 5, extra="AND oversample = 1000")
    # the int8 code of a vector decodes to code * scale, scale = max|x| / 127
    for r, dist in got:
        v = rows[r]
        scale = f32(max(abs(x) for x in v) / 127)
        decoded = [f32(math.copysign(math.floor(abs(x) / scale + 0.5), x) * scale) for x in v]
        assert abs(dist - distance("cosine", decoded, q)) < 1e-6, (r, dist)


@test
def sqlite_vec_int8_and_bit_vectors_are_converted_exactly():
    if not os.path.exists(VEC + ".so"):
        raise AssertionError("sqlite-vec not installed (scripts/deps.sh installs it from npm)")
    con = connect()
    con.load_extension(VEC)
    con.execute("CREATE VIRTUAL TABLE b USING embed_index(dims = 16, storage = 'bit')")
    con.execute("CREATE VIRTUAL TABLE i8 USING embed_index(dims = 4, storage = 'int8', metric = 'l2')")
    bits = [1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1]
    con.execute("INSERT INTO b(rowid, vector) VALUES (1, vec_quantize_binary(?))",
                (str([1.0 if x else -1.0 for x in bits]),))
    assert floats(one(con, "SELECT vector FROM b WHERE rowid = 1")) == [1.0 if x else -1.0 for x in bits]
    # the query as sqlite-vec bits too: the same bits are at distance 0
    assert one(con, "SELECT distance FROM b WHERE b MATCH vec_quantize_binary(?) AND k = 1",
               str([0.5 if x else -0.5 for x in bits])) == 0.0
    assert_error(con, "SELECT * FROM b WHERE b MATCH vec_quantize_binary('[1, 1, 1, 1, 1, 1, 1, 1]') AND k = 1",
                 "bit vector of 1 bytes")
    con.execute("INSERT INTO i8(rowid, vector) VALUES (1, vec_int8('[1, -2, 127, -128]'))")
    assert floats(one(con, "SELECT vector FROM i8 WHERE rowid = 1")) == [1, -2, 127, -128]
    assert one(con, "SELECT distance FROM i8 WHERE i8 MATCH vec_int8('[1, -2, 127, -128]') AND k = 1") == 0.0


@test
def texts_embedded_into_compact_storage_are_searched_by_text():
    con = connect()
    con.execute("SELECT embed_load('minilm', ?)", (os.path.join(FIXTURES, "models", "minilm-tiny-st"),))
    texts = ["the bus is late", "buy milk and eggs", "train delayed by twenty minutes", "a cat on the mat",
             "the weather is sunny", "invoice overdue", "meeting moved to friday", "bus stop closed"]
    try:
        search_texts_by_text(con, texts)
    finally:  # the model registry is the process's: the later suites load their own 'minilm'
        con.execute("SELECT embed_unload('minilm')")


def search_texts_by_text(con, texts):
    for storage in ("int8", "bit"):
        con.execute("CREATE VIRTUAL TABLE t_%s USING embed_index(model = 'minilm', storage = '%s', index = 'ivf')"
                    % (storage, storage))
        con.executemany("INSERT INTO t_%s(rowid, text) VALUES (?, ?)" % storage, enumerate(texts, 1))
        con.execute("INSERT INTO t_%s(t_%s, text) VALUES ('build', '{\"lists\": 2}')" % (storage, storage))
        got = con.execute("SELECT rowid, distance, text FROM t_%s WHERE t_%s MATCH 'is the bus late?' AND k = 8 "
                          "AND oversample = 8 AND probes = 2" % (storage, storage)).fetchall()
        want = sorted((one(con, "SELECT embed_distance(embed('minilm', ?), embed('minilm', 'is the bus late?'))", t), i)
                      for i, t in enumerate(texts, 1))
        assert [r for r, _, _ in got] == [i for _, i in want], storage
        for (r, dist, text), (wd, _) in zip(got, want):
            assert abs(dist - wd) < 1e-9 and text == texts[r - 1], (storage, r, dist, wd)


# ---------- every write shows in the next search ----------

def exact_search(con, q, storage_or_ivf, k=8, name="ix"):
    """A search that must equal the brute force: every candidate rescored, every list probed."""
    return search(con, q, k, name=name, extra="AND oversample = 100000 AND probes = 100000")


def check_same(con, rows, q, what):
    got = exact_search(con, q, None)
    want = brute(rows, q, 8)
    assert [r for r, _ in got] == [r for _, r in want], "%s: %s != %s" % (what, got, want)
    assert_exact(got, rows, q, what=what)


def lifecycle(path, storage, ivf):
    rng = random.Random(11)
    rows = {i + 1: v for i, v in enumerate(clustered(rng, 300, 16))}
    extra = ", index = 'ivf'" if ivf else ""
    a, b = connect(path), connect(path)
    make(a, storage, rows, extra=extra)
    if ivf:
        a.execute("INSERT INTO ix(ix, text) VALUES ('build', '{\"lists\": 8}')")
    q = near(rng, rows[5])
    for con in (a, b):
        check_same(con, rows, q, "%s start" % storage)
    # an insert equal to the query, an update moving a row onto it, a delete of the nearest
    rows[1000] = q
    a.execute("INSERT INTO ix(rowid, vector) VALUES (1000, ?)", (blob(q),))
    check_same(b, rows, q, "%s insert seen by another connection" % storage)
    rows[7] = near(rng, q, 0.01)
    a.execute("UPDATE ix SET vector = ? WHERE rowid = 7", (blob(rows[7]),))
    check_same(b, rows, q, "%s update" % storage)
    check_same(a, rows, q, "%s update, same connection" % storage)
    del rows[1000]
    b.execute("DELETE FROM ix WHERE rowid = 1000")
    check_same(a, rows, q, "%s delete by the other connection" % storage)
    # a rollback: the rows written and searched inside the transaction are gone after it
    a.execute("BEGIN")
    a.execute("INSERT INTO ix(rowid, vector) VALUES (2000, ?)", (blob(q),))
    a.execute("DELETE FROM ix WHERE rowid = 7")
    inside = dict(rows)
    inside[2000] = q
    del inside[7]
    check_same(a, inside, q, "%s inside a transaction" % storage)
    check_same(b, rows, q, "%s another connection does not see it" % storage)
    a.execute("ROLLBACK")
    check_same(a, rows, q, "%s after rollback" % storage)
    # a savepoint rolled back inside a transaction that goes on
    a.execute("BEGIN")
    a.execute("DELETE FROM ix WHERE rowid = 7")
    a.execute("SAVEPOINT s")
    a.execute("INSERT INTO ix(rowid, vector) VALUES (3000, ?)", (blob(q),))
    inside = dict(rows)
    del inside[7]
    inside[3000] = q
    check_same(a, inside, q, "%s before rollback to" % storage)
    a.execute("ROLLBACK TO s")
    del inside[3000]
    check_same(a, inside, q, "%s after rollback to" % storage)
    a.execute("COMMIT")
    del rows[7]
    check_same(b, rows, q, "%s committed" % storage)
    # many deletes (chunks emptied, rows moved), then reopen
    for r in list(rows)[:150]:
        a.execute("DELETE FROM ix WHERE rowid = ?", (r,))
        del rows[r]
    check_same(b, rows, q, "%s after many deletes" % storage)
    # another process's commit
    script = ("import sqlite3, struct, sys\n"
              "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
              "c.enable_load_extension(True); c.load_extension(sys.argv[2])\n"
              "c.execute('INSERT INTO ix(rowid, vector) VALUES (4000, ?)', (bytes.fromhex(sys.argv[3]),))\n")
    subprocess.run(["/usr/bin/python3", "-c", script, path, EXT, blob(q).hex()], check=True)
    rows[4000] = q
    check_same(a, rows, q, "%s another process's insert" % storage)
    check_same(b, rows, q, "%s another process's insert, second connection" % storage)
    a.close()
    b.close()
    c = connect(path)
    check_same(c, rows, q, "%s reopened" % storage)
    if ivf:  # rows inserted after the build are in lists: a default search finds the new row
        assert search(c, q, 1)[0][0] == 4000
    c.close()


@test
def every_storage_shows_every_write_in_the_next_search():
    for storage in STORAGES:
        with tempfile.TemporaryDirectory() as tmp:
            lifecycle(os.path.join(tmp, "t.db"), storage, ivf=False)


@test
def the_ivf_shows_every_write_in_the_next_search():
    for storage in ("f32", "int8"):
        with tempfile.TemporaryDirectory() as tmp:
            lifecycle(os.path.join(tmp, "t.db"), storage, ivf=True)


# ---------- one copy per process ----------

@test
def connections_to_one_file_share_one_copy():
    # the cache counts every index of the process: earlier tests' connections that only the
    # garbage collector closes would otherwise be freed in the middle of the counts
    gc.collect()
    rows, queries = data(n=2000, d=32)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.db")
        a = connect(path)
        make(a, "f32", rows)
        before = one(a, "SELECT embed_index_cache_bytes()")
        search(a, queries[0])
        first = one(a, "SELECT embed_index_cache_bytes()")
        assert first - before >= 2000 * 32 * 4, (before, first)  # the vectors, at least
        others = [connect(path) for _ in range(4)]
        for con in others:
            search(con, queries[1])
        assert one(a, "SELECT embed_index_cache_bytes()") == first  # still one copy
        for con in others + [a]:
            con.close()
        probe = connect()
        assert one(probe, "SELECT embed_index_cache_bytes()") == before  # the last one out frees it


@test
def in_memory_databases_are_not_shared():
    rows, queries = data(n=100, d=8)
    a, b = connect(), connect()
    make(a, "f32", rows)
    make(b, "f32", {1: rows[1]})
    assert [r for r, _ in search(b, queries[0], 5)] == [1]  # b's own index only, not a's rows
    assert len(search(a, queries[0], 5)) == 5


# ---------- the IVF ----------

@test
def ivf_default_search_reaches_high_recall_and_probes_trade_it():
    rng = random.Random(5)
    rows = {i + 1: v for i, v in enumerate(clustered(rng, 3000, 32, centres=40))}
    queries = [near(rng, rows[rng.randrange(1, 3001)]) for _ in range(20)]
    con = connect()
    make(con, "f32", rows, extra=", index = 'ivf'")
    con.execute("INSERT INTO ix(ix) VALUES ('build')")
    lists = one(con, "SELECT value FROM ix_config WHERE key = 'ivf_lists'")
    assert lists >= 10, lists
    assert one(con, "SELECT count(*) FROM ix_centroids") == lists
    full = recall(con, rows, queries)
    one_probe = recall(con, rows, queries, extra="AND probes = 1")
    every = recall(con, rows, queries, extra="AND probes = %d" % lists)
    assert every == 1.0, every
    assert full >= 0.95, full
    assert one_probe < full, (one_probe, full)
    # IVF over int8 codes, rescored
    con.execute("CREATE VIRTUAL TABLE i8 USING embed_index(dims = 32, storage = 'int8', index = 'ivf')")
    con.execute("INSERT INTO i8(rowid, vector) SELECT rowid, vector FROM ix")
    con.execute("INSERT INTO i8(i8, text) VALUES ('build', '{\"lists\": 30, \"iterations\": 5}')")
    assert one(con, "SELECT value FROM i8_config WHERE key = 'ivf_lists'") == 30
    assert recall(con, rows, queries, name="i8") >= 0.93


@test
def ivf_before_build_is_an_exact_scan_and_build_can_run_again():
    rows, queries = data(n=500, d=16)
    con = connect()
    make(con, "f32", rows, extra=", index = 'ivf'")
    assert recall(con, rows, queries) == 1.0
    con.execute("INSERT INTO ix(ix, text) VALUES ('build', '{\"lists\": 10}')")
    con.execute("INSERT INTO ix(ix, text) VALUES ('build', '{\"lists\": 5}')")
    assert one(con, "SELECT count(*) FROM ix_centroids") == 5
    assert recall(con, rows, queries, extra="AND probes = 5") == 1.0


@test
def ivf_filters_still_return_k_rows():
    rng = random.Random(8)
    rows = {i + 1: v for i, v in enumerate(clustered(rng, 1000, 16))}
    con = connect()
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(dims = 16, index = 'ivf', storage = 'int8', "
                "tag integer)")
    con.executemany("INSERT INTO ix(rowid, vector, tag) VALUES (?, ?, ?)",
                    [(r, blob(v), r % 50) for r, v in rows.items()])
    con.execute("INSERT INTO ix(ix, text) VALUES ('build', '{\"lists\": 20}')")
    q = near(rng, rows[3])
    for cond, keep in (("tag = 7", lambda r: r % 50 == 7), ("tag < 25", lambda r: r % 50 < 25)):
        got = con.execute("SELECT rowid, distance FROM ix WHERE ix MATCH ? AND k = 10 AND " + cond + " AND probes = 1",
                          (blob(q),)).fetchall()
        sub = {r: v for r, v in rows.items() if keep(r)}
        assert len(got) == 10, (cond, got)
        assert all(keep(r) for r, _ in got), cond
        assert_exact(got, rows, q, what=cond)
        if cond == "tag = 7":  # 20 rows: a selective filter scans them all, exactly
            assert [r for r, _ in got] == [r for _, r in brute(sub, q, 10)]


# ---------- bad input ----------

@test
def bad_options_and_settings_are_clear_errors():
    con = connect()
    assert_error(con, "CREATE VIRTUAL TABLE x USING embed_index(dims = 4, storage = 'int4')",
                 "embed_index: unknown storage 'int4' (use f32, f16, int8 or bit)")
    assert_error(con, "CREATE VIRTUAL TABLE x USING embed_index(dims = 4, index = 'hnsw')", "unknown index 'hnsw'")
    assert_error(con, "CREATE VIRTUAL TABLE x USING embed_index(dims = 4, rescore = false)",
                 "rescore = false needs compact storage")
    assert_error(con, "CREATE VIRTUAL TABLE x USING embed_index(dims = 4, storage = 'int8', rescore = maybe)",
                 "rescore must be true or false")
    assert_error(con, "CREATE VIRTUAL TABLE x USING embed_index(dims = 4, probes integer)",
                 "cannot be named 'probes'")
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(dims = 4, storage = 'int8', index = 'ivf')")
    assert_error(con, "INSERT INTO ix(ix) VALUES ('build')", "embed_index: build: \"ix\" is empty")
    con.execute("INSERT INTO ix(rowid, vector) VALUES (1, '[1, 2, 3, 4]'), (2, '[4, 3, 2, 1]')")
    assert_error(con, "INSERT INTO ix(ix, text) VALUES ('build', '{\"lists\": 3}')", "3 lists for 2 rows")
    assert_error(con, "INSERT INTO ix(ix, text) VALUES ('build', '{\"lists\": 0}')",
                 "option \"lists\" must be an integer from 1")
    assert_error(con, "INSERT INTO ix(ix, text) VALUES ('build', '{\"list\": 2}')", "unknown option \"list\"")
    assert_error(con, "INSERT INTO ix(ix, text) VALUES ('build', '{lists: 2}')", "JSON")
    q = "SELECT rowid FROM ix WHERE ix MATCH '[1, 2, 3, 4]' AND k = 1 AND "
    assert_error(con, q + "oversample = 0", "embed_index: oversample must be a positive integer, not 0")
    assert_error(con, q + "probes = -1", "embed_index: probes must be a positive integer, not -1")
    assert_error(con, q + "probes = 'x'", "probes must be a positive integer, not text")
    assert_error(con, "SELECT rowid FROM ix WHERE ix MATCH '[1, 2, 3]' AND k = 1", "has 3 dimensions")
    assert_error(con, "SELECT rowid FROM ix WHERE ix MATCH x'0000' AND k = 1", "the query is a blob of 2 bytes")
    assert_error(con, "SELECT rowid FROM ix WHERE probes = 2", "need")
    assert_error(con, "INSERT INTO ix(rowid, vector, oversample) VALUES (9, '[1, 2, 3, 4]', 3)",
                 "column oversample cannot be written")
    con.execute("CREATE VIRTUAL TABLE flat USING embed_index(dims = 4)")
    assert_error(con, "INSERT INTO flat(flat) VALUES ('build')", "has no IVF to build")
    assert_error(con, "SELECT embed_index_cache_bytes(1)", "expects embed_index_cache_bytes()")


@test
def threads_search_one_shared_copy_while_another_writes():
    """Each thread has its own connection to one file; the searches share the process's copy
    while a writer appends rows and commits. Rows are never changed, so every (rowid, distance)
    returned must be that row's exact distance, whatever the version the search saw."""
    import threading
    rng = random.Random(21)
    rows = {i + 1: v for i, v in enumerate(clustered(rng, 3000, 16))}
    extra_rows = {5000 + i: v for i, v in enumerate(clustered(rng, 300, 16))}
    queries = [near(rng, v) for v in list(rows.values())[:40]]
    every = dict(rows)
    every.update(extra_rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.db")
        for storage in ("f32", "int8"):
            w = connect(path)
            w.execute("PRAGMA journal_mode = WAL")
            make(w, storage, rows, name="ix_" + storage, extra=", index = 'ivf'")
            w.execute("INSERT INTO ix_%s(ix_%s, text) VALUES ('build', '{\"lists\": 20}')" % (storage, storage))
            errors = []

            def reader(seed):
                con = connect(path)
                con.execute("PRAGMA busy_timeout = 10000")
                try:
                    for q in queries[seed::4] * 5:
                        got = search(con, q, 10, name="ix_" + storage)
                        assert len(got) == 10, got
                        assert_exact(got, every, q, what="thread %d" % seed)
                except Exception as e:  # reported by the main thread
                    errors.append(repr(e))
                con.close()

            threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for r, v in extra_rows.items():
                w.execute("INSERT INTO ix_%s(rowid, vector) VALUES (?, ?)" % storage, (r, blob(v)))
            for t in threads:
                t.join()
            w.close()
            assert not errors, errors[:3]


@test
def damaged_shadow_tables_of_compact_and_ivf_indexes_are_errors_naming_them():
    rows, queries = data(n=200, d=8)
    q = queries[0]
    cases = [
        ("UPDATE ix_vectors SET vector = x'00' WHERE id = (SELECT id FROM ix_rows WHERE loc = 0)", "ix_vectors"),
        ("DELETE FROM ix_vectors", "ix_vectors"),
        ("DELETE FROM ix_centroids WHERE list = 1", "ix_centroids"),
        ("UPDATE ix_centroids SET centroid = x'0000' WHERE list = 0", "ix_centroids"),
        ("UPDATE ix_config SET value = 99999999 WHERE key = 'ivf_lists'", "ix_config"),
        ("UPDATE ix_config SET value = 'int4' WHERE key = 'storage'", "ix_config"),
        ("UPDATE ix_config SET value = 3 WHERE key = 'format'", "ix_config"),
        ("UPDATE ix_chunks SET lists = x'00' WHERE chunk_id = 0", "ix_chunks"),
        ("UPDATE ix_chunks SET vectors = x'00' WHERE chunk_id = 1", "ix_chunks"),
    ]
    for sql, table in cases:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.db")
            con = connect(path)
            make(con, "int8", rows, extra=", index = 'ivf'")
            con.execute("INSERT INTO ix(ix, text) VALUES ('build', '{\"lists\": 4}')")
            con.close()
            con = connect(path)  # a new process-wide copy: the damage is read
            con.execute(sql)
            assert_error(con, "SELECT rowid FROM ix WHERE ix MATCH ? AND k = 100 AND oversample = 100",
                         'shadow table "%s" is damaged' % table, args=(blob(q),))
            con.close()
