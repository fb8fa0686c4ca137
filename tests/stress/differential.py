"""Differential test of embed_index: seeded random sequences of operations run against an
embed_index and, side by side in the same database file, an ordinary SQLite table `ref` holding
the same rows (rowid, the vector as a little-endian float32 BLOB, the same metadata columns with
the same declared types). SQLite itself says which rows a condition passes (on `ref`), and a
double-precision brute force here says which of them are nearest.

Every table of a run is one configuration: storage f32 / f16 / int8 / bit x index flat / ivf
(and compact storage with rescore = false), a metric (cosine, l2, dot, l1), a partition key
(integer or text), a journal mode (wal or delete). Operations: INSERT (one row, many rows, with
and without a rowid, JSON or BLOB vectors), INSERT OR REPLACE / OR IGNORE, statements that must
fail and change nothing (a rowid in use, a row of the wrong size in a multi-row INSERT), UPDATE
of the vector, of metadata (one row, or every row a condition passes), of the rowid, DELETE
(by rowid, by condition, of the k nearest), INSERT ... SELECT from a search, BEGIN / COMMIT /
ROLLBACK, SAVEPOINT / ROLLBACK TO / RELEASE, the IVF's 'build' (also inside a transaction, and
again later; rows keep coming after it), a second connection that writes (its commits must be
seen by the first) and reads (in WAL, while the first has a transaction open, or inside its own
read transaction while the first commits), a fresh third connection, closing and reopening.

Checks, after every operation and at random:
- kNN searches with random conditions (=, !=, <, <=, >, >=, BETWEEN, IN lists and subqueries,
  IS, IS NOT, IS NULL, IS NOT NULL on metadata and the rowid, the partition key) and random k.
  Exact paths (f32 flat; any storage or IVF with oversample / probes large enough to score every
  row: every candidate is rescored exactly) must equal the brute force rank by rank (distances
  within 1e-5 relative, so ties in rowid order do not matter). Approximate paths (default
  settings) must return min(k, rows passing) rows, each passing the conditions (as `ref` says),
  each at its exact distance, nearest first; their recall is printed, not judged.
- Conditions the index cannot take (LIKE, functions of a column) are applied by SQLite after the
  search: every row returned passes all conditions, and the rows returned are a prefix of the
  rows passing all conditions in distance order (no nearer passing row is skipped).
- Scans (every column, typeof of the metadata), scans with conditions, count(*), rowid lookups
  (=, IN, a rowid given as text) equal `ref`; PRAGMA integrity_check at reopen.
- An IVF keeps each row in the list of its nearest centroid (read from NAME_centroids): a search
  for a row's own vector with probes = 1 finds a row at least as near. With the default probes
  covering every list (lists <= 8), an f32 IVF search is held to the exact answer.
- Statements that must fail (a rowid in use, a vector of the wrong size, a zero vector under
  cosine) fail with a message that says why and change nothing; INSERT without a rowid gives
  last_insert_rowid() the new row's rowid, and COMMIT / ROLLBACK leave last_insert_rowid().

Bugs found this way are listed in KNOWN_BUGS with their reproductions; small fixed cases of
each run first (edge_cases), and a failing check that a known bug explains is reported as known,
not counted as failed (a line says when a known bug's checks pass again).

Usage: differential.py [OPERATIONS_PER_TABLE] [ROUNDS]  (or DIFF_OPERATIONS, DIFF_ROUNDS;
DIFF_SEED changes the seeds; DIFF_ONLY=substring runs the configurations whose name has it).
A round is the 11 configurations, each its own table and seed; every round rotates the metrics.
make test runs the short form (300 operations per table, one round: about 3,300 operations and
10,000 checks, under 10 s on one core); make stress the long one (2,000 operations per table,
4 rounds: 88,000 operations and about 240,000 checks, 5 to 8 minutes). A failure names the
configuration, seed and operation; DIFF_SEED and DIFF_ONLY run it again alone.
Prints "N passed, N failed" as its last line: one verdict per configuration and edge case."""
import math
import os
import random
import shutil
import sqlite3
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

STORAGES = ("f32", "f16", "int8", "bit")
METRICS = ("cosine", "l2", "dot", "l1")
EXHAUSTIVE = 100000  # probes / oversample that make every search score every row

# Checks that fail because of a bug in the extension, reported and not counted as failures
# until it is fixed: name -> what is wrong. A check whose SQL contains the key is "known".
# When one of them passes again, the line says so: remove it from this list.
KNOWN_BUGS = {
}
# Found by this test and fixed since (their checks stay): an empty text or blob metadata value
# ('' or x'') came out of a search as NULL when the column's copy held no bytes; a condition with
# COLLATE NOCASE was compared as BINARY inside the search (it is now left to SQLite, after the
# search, as the other conditions the index cannot take); the flush at COMMIT overwrote
# last_insert_rowid().

AUTHORS = [None, "ann", "bob", "cy", "dee", "Ann", "a_b", "42", "", "zo\u00eb", "Bea"]
AUTHOR_IN = AUTHORS + [42, 3.5]          # 42 and 3.5 become '42' and '3.5' (text affinity)
YEARS = [None, 2019, 2020, 2021, 2022, 2023, 2024]
YEAR_IN = YEARS + ["2023", 2024.0, "20x", 2021.5]   # integer affinity: 2023, 2024, '20x', 2021.5
SCORES = [None, 0.5, 1, 2.25, -1.0, 7]
SCORE_IN = SCORES + ["3.5", "abc", 1e10]
TAGS = [None, b"x", b"yz", "x", b"", 5]  # blob: no affinity
TEXTS = [None, "the bus is late", "buy milk", "Bus stop", "note %d", 42]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f16(x):
    return struct.unpack("<e", struct.pack("<e", x))[0]


def blob(v):
    return struct.pack("<%df" % len(v), *v)


def floats(b):
    return list(struct.unpack("<%df" % (len(b) // 4), b))


def decode(storage, v):
    """What a compact code decodes to (core/quant.c), as rescore = false returns it."""
    if storage == "f16":
        return [f16(x) for x in v]
    if storage == "bit":
        return [1.0 if x > 0 else -1.0 for x in v]
    if storage == "int8":
        scale = f32(f32(max(abs(x) for x in v)) / 127.0)
        out = []
        for x in v:
            c = 0.0
            if scale > 0:
                t = abs(x / scale)
                c = math.floor(t)
                if t - c >= 0.5:  # C's round(): halves away from zero
                    c += 1
                c = min(c, 127.0) * (1 if x >= 0 else -1)
            out.append(f32(c * scale))
        return out
    return list(v)


def distance(metric, a, b):
    if metric == "cosine":
        na = math.sqrt(sum(x * x for x in a))
        nb = math.sqrt(sum(x * x for x in b))
        if na == 0 or nb == 0:
            return 1.0
        return 1.0 - sum(x * y for x, y in zip(a, b)) / (na * nb)
    if metric == "l2":
        return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    if metric == "l1":
        return sum(abs(x - y) for x, y in zip(a, b))
    return -sum(x * y for x, y in zip(a, b))


def tol(d):
    return 1e-5 * max(1.0, abs(d))


def known(sql):
    return next((key for key in KNOWN_BUGS if key in sql), None)


class Failure(Exception):
    pass


META = ("author", "year", "score", "tag", "tenant")
IX_COLS = "rowid, vector, text, " + ", ".join("%s, typeof(%s)" % (c, c) for c in META)
REF_COLS = "id, vec, txt, " + ", ".join("%s, typeof(%s)" % (c, c) for c in META)


class Run:
    """One table, one configuration, one seeded sequence of operations."""

    def __init__(self, cfg, seed, n_ops, folder):
        self.cfg = cfg
        self.rng = random.Random(seed)
        self.seed = seed
        self.n_ops = n_ops
        self.path = os.path.join(folder, "%s.db" % cfg["name"].replace("/", "_"))
        self.storage, self.metric, self.d = cfg["storage"], cfg["metric"], cfg["dims"]
        self.ivf, self.rescore = cfg["index"] == "ivf", cfg["rescore"]
        self.exact_default = self.storage == "f32" and not self.ivf
        self.checks = {}     # kind -> count
        self.fails = {}      # kind -> [messages]
        self.known = {}      # known bug key -> count of failures
        self.known_passed = {}
        self.recall = [0, 0]
        self.ivf_searches = 0  # searches over built lists
        self.rows_at_end = 0
        self.op_no = 0
        self.op_name = "create"
        self.in_txn = False
        self.savepoints = []
        self.sp_serial = 0
        self.built = False
        self.log = []        # the operations, for a failure's report

    # ---------- plumbing ----------

    def where(self):
        return "%s seed %d op %d (%s)" % (self.cfg["name"], self.seed, self.op_no, self.op_name)

    def fail(self, kind, msg, sql=""):
        key = known(sql) if sql else None
        if key:
            self.known[key] = self.known.get(key, 0) + 1
            return
        self.fails.setdefault(kind, []).append("%s: %s" % (self.where(), msg))

    def count(self, kind, sql=""):
        self.checks[kind] = self.checks.get(kind, 0) + 1
        key = known(sql) if sql else None
        if key:
            self.known_passed[key] = self.known_passed.get(key, 0) + 1

    def connect(self):
        con = common.connect(self.path)
        # no fsync (crash_kill.py is the test of durability); commits still run the index's xSync
        con.execute("PRAGMA synchronous = OFF")
        return con

    def open(self):
        self.a = self.connect()
        self.b = self.connect()

    def close(self):
        for con in (self.a, self.b):
            con.close()

    def who(self, con):
        return "a" if con is self.a else "b" if con is self.b else "c"

    def ix_exec(self, con, sql, args=()):
        self.log.append((self.who(con), sql, args))
        return con.execute(sql, args)

    def ref_exec(self, con, sql, args=()):
        """The ordinary table's side of a write: an error here is this test's own mistake, or a
        rowid the index gave out twice."""
        self.log.append((self.who(con), sql, args))
        try:
            return con.execute(sql, args)
        except sqlite3.Error as e:
            raise Failure("ref: %s: %s %r" % (e, sql, args))

    def write(self, con, ix_sql, ix_args, ref_sql, ref_args):
        """A write that must succeed on both tables. False when the index refused it (counted as
        a failure; the statement is undone as a whole, so the tables still agree)."""
        try:
            cur = self.ix_exec(con, ix_sql, ix_args)
        except sqlite3.Error as e:
            self.fail("writes", "%s: %s %r" % (e, ix_sql, ix_args[:3]))
            return None
        self.count("writes")
        if ref_sql:
            self.ref_exec(con, ref_sql, ref_args)
        return cur

    def must_fail(self, con, sql, args, *fragments):
        """A statement the index must refuse, changing nothing (the later checks see that)."""
        try:
            self.ix_exec(con, sql, args)
        except sqlite3.Error as e:
            msg = str(e)
            if all(f in msg for f in fragments):
                self.count("errors")
            else:
                self.fail("errors", "error %r lacks %r: %s" % (msg, fragments, sql))
            return
        self.fail("errors", "succeeded, should fail: %s %r" % (sql, args[:3]))
        raise Failure("the index took a statement it should refuse; the tables differ now")

    def ref_rows(self, con):
        return {r[0]: r for r in con.execute("SELECT %s FROM ref" % REF_COLS)}

    def ref_vectors(self, con):
        """rowid -> the vector the index should give back and score (decoded codes without
        rescoring)."""
        out = {}
        for r, v in con.execute("SELECT id, vec FROM ref"):
            v = floats(v)
            out[r] = v if self.rescore else decode(self.storage, v)
        return out

    def expected_blob(self, ref_vec_blob):
        return ref_vec_blob if self.rescore else blob(decode(self.storage, floats(ref_vec_blob)))

    # ---------- values ----------

    def rand_vec(self, con=None):
        rng = self.rng
        p = rng.random()
        if con is not None and p < 0.08:  # a copy of a stored vector (ties), or a scaled copy
            got = self.random_vec_of(con)
            if got:
                v = floats(got[0])
                if p < 0.03 and self.metric in ("cosine",):
                    v = [f32(x * 2.0) for x in v]
                return v
        if p < 0.11 and self.metric != "cosine":
            return [0.0] * self.d
        scale = rng.choice([1, 1, 1, 1, 0.01, 30])
        v = [f32(rng.uniform(-1, 1) * scale) for _ in range(self.d)]
        if all(x == 0 for x in v):
            v[0] = 1.0
        return v

    def vec_arg(self, v):
        if self.rng.random() < 0.2:
            return "[" + ", ".join(repr(x) for x in v) + "]"
        return blob(v)

    def meta_values(self):
        rng = self.rng
        tenants = ([1, 2, 3, 4, 5, None, "3"] if self.cfg["tenant"] == "integer"
                   else ["t1", "t2", "t3", "t4", "t5", None, 7])
        return [rng.choice(AUTHOR_IN), rng.choice(YEAR_IN), rng.choice(SCORE_IN), rng.choice(TAGS),
                rng.choice(tenants)]

    def text_value(self):
        t = self.rng.choice(TEXTS)
        return t % self.rng.randrange(100) if isinstance(t, str) and "%d" in t else t

    def tenant_value(self):
        if self.cfg["tenant"] == "integer":
            return self.rng.choice([1, 2, 3, 4, 5, 6, "2"])
        return self.rng.choice(["t1", "t2", "t3", "t4", "t5", "t9", 7])

    def existing(self, con, n=1):
        """n rowids in use, chosen by this run's generator (not SQLite's random(): a seed
        replays the same run)."""
        ids = [r for r, in con.execute("SELECT id FROM ref ORDER BY id")]
        return self.rng.sample(ids, min(n, len(ids)))

    def random_vec_of(self, con):
        ids = self.existing(con)
        return con.execute("SELECT vec FROM ref WHERE id = ?", ids).fetchone() if ids else None

    def new_rowid(self, con):
        n = con.execute("SELECT count(*), max(id) FROM ref").fetchone()
        for _ in range(100):
            p = self.rng.random()
            if p < 0.03:
                r = -self.rng.randrange(1, 50)
            elif p < 0.06:
                r = (1 << 40) + self.rng.randrange(1000)
            else:
                r = self.rng.randrange(1, max(60, 2 * n[0] + 20))
            if not con.execute("SELECT 1 FROM ref WHERE id = ?", (r,)).fetchone():
                return r
        return (n[1] or 0) + 1

    # ---------- conditions ----------

    def condition(self, con):
        """One condition: (SQL for the index, SQL for ref, arguments, taken by the search?).
        {r} is the rowid (id in ref), {t} the text column (txt in ref)."""
        rng = self.rng
        a, y, s = rng.choice(AUTHOR_IN), rng.choice(YEAR_IN), rng.choice(SCORE_IN)
        ids = self.existing(con, 4)
        ids += [self.rng.randrange(-5, 200) for _ in range(5 - len(ids))]
        lo, hi = sorted(rng.sample(range(-5, 250), 2))
        cands = [
            ("author = ?", [a]), ("author != ?", [a]), ("author < ?", [a]), ("author <= ?", [a]),
            ("author > ?", [a]), ("author >= ?", [a]), ("author IS NULL", []), ("author IS NOT NULL", []),
            ("author IN (?, ?, ?)", [a, rng.choice(AUTHOR_IN), rng.choice(AUTHOR_IN)]),
            ("author IS ?", [a]), ("author IS NOT ?", [a]), ("author = 42", []),
            ("author IN (SELECT author FROM ref WHERE id % 3 = 0)", []),
            ("year = ?", [y]), ("year > ?", [y]), ("year >= ?", [y]), ("year < ?", [y]),
            ("year <= ?", [y]), ("year != ?", [y]), ("year BETWEEN ? AND ?", sorted([2019 + rng.randrange(3),
                                                                                  2020 + rng.randrange(4)])),
            ("year IN (?, ?)", [y, rng.choice(YEAR_IN)]), ("year IS NULL", []), ("year IS NOT ?", [y]),
            ("year = '2021'", []), ("year > 2021.5", []),
            ("year IN (SELECT year FROM ref WHERE id < ?)", [rng.randrange(1, 60)]),
            ("score > ?", [s]), ("score < ?", [s]), ("score = ?", [s]), ("score BETWEEN ? AND ?", [0.5, 2.25]),
            ("score IS NOT NULL", []),
            ("tag = ?", [rng.choice(TAGS)]), ("tag IS NULL", []), ("tag > ?", [b"x"]),
            ("tenant = ?", [self.tenant_value()]), ("tenant = ?", [self.tenant_value()]),
            ("tenant IN (?, ?)", [self.tenant_value(), self.tenant_value()]), ("tenant IS NULL", []),
            ("tenant != ?", [self.tenant_value()]),
            ("{r} IN (?, ?, ?, ?, ?)", ids), ("{r} BETWEEN ? AND ?", [lo, hi]), ("{r} > ?", [lo]),
            ("{r} <= ?", [hi]), ("{r} = ?", ids[:1]),
        ]
        post = [
            # the search compares as BINARY: SQLite applies another collation after the search
            ("author = ? COLLATE NOCASE", [rng.choice(["ANN", "bob", "BEA"])]),
            ("author LIKE ?", [rng.choice(["a%", "b%", "%n%", "_n_", "A%", "z%"])]),
            ("lower(author) = ?", [rng.choice(["ann", "bea", "bob"])]),
            ("{t} LIKE ?", [rng.choice(["%bus%", "note%", "buy%"])]),
            ("abs(year - 2021) <= 1", []),
        ]
        taken = rng.random() >= 0.12
        sql, args = rng.choice(cands if taken else post)
        return (sql.format(r="rowid", t="text"), sql.format(r="id", t="txt"), args, taken)

    def conditions(self, con):
        n = self.rng.choice([0, 0, 1, 1, 1, 2, 2, 3])
        return [self.condition(con) for _ in range(n)]

    def ref_ids(self, con, conds):
        if not conds:
            return {r for r, in con.execute("SELECT id FROM ref")}
        sql = "SELECT id FROM ref WHERE " + " AND ".join("(%s)" % c[1] for c in conds)
        return {r for r, in con.execute(sql, [x for c in conds for x in c[2]])}

    # ---------- checks ----------

    def query_vector(self, con):
        rng = self.rng
        p = rng.random()
        if p < 0.25:
            got = self.random_vec_of(con)
            if got:
                v = floats(got[0])
                if p < 0.15:
                    v = [f32(x + rng.gauss(0, 0.05)) for x in v]
                if any(x != 0 for x in v):
                    return v
        if p > 0.97 and self.metric != "cosine":
            return [0.0] * self.d
        v = [f32(rng.uniform(-1, 1)) for _ in range(self.d)]
        if all(x == 0 for x in v):
            v[0] = 1.0
        return v

    def check_knn(self, con, who="a"):
        rng = self.rng
        conds = self.conditions(con)
        q = self.query_vector(con)
        n = con.execute("SELECT count(*) FROM ref").fetchone()[0]
        k = rng.choice([1, 2, 3, 5, 10, 10, 25, n + 3])
        lists = None
        if self.ivf:
            got = con.execute("SELECT value FROM ix_config WHERE key = 'ivf_lists'").fetchone()
            lists = got[0] if got else None
        # f32 over an IVF whose default probes, max(8, lists / 50), are all its lists: exact too
        exact_default = self.exact_default or (self.storage == "f32" and (lists is None or lists <= 8))
        exact = exact_default or rng.random() < 0.6
        settings = ""
        if exact and not exact_default:
            settings = " AND oversample = %d AND probes = %d" % (EXHAUSTIVE, EXHAUSTIVE)
            if self.storage == "f32":
                settings = " AND probes = %d" % EXHAUSTIVE
            elif not self.ivf:
                settings = " AND oversample = %d" % EXHAUSTIVE
        elif rng.random() < 0.25:  # harmless on f32 flat; lower recall elsewhere
            settings = rng.choice([" AND oversample = 1", " AND probes = 1", " AND probes = 2 AND oversample = 3"]
                                  if not (exact_default and self.ivf) else [" AND oversample = 1"])
        extra = rng.random() < 0.3
        cols = "rowid, distance" + (", vector, author, typeof(author), year, typeof(year), tenant, typeof(tenant)"
                                    if extra else "")
        target = rng.choice(["ix", "ix", "vector"])
        sql = "SELECT %s FROM ix WHERE %s MATCH ? AND k = ?%s" % (cols, target, settings)
        args = [self.vec_arg(q), k]
        for c in conds:
            sql += " AND " + c[0]
            args += c[2]
        if rng.random() < 0.15:
            sql += " ORDER BY distance"
        kind = "knn_exact" if exact else "knn_default"
        if lists is not None:
            self.ivf_searches += 1
        if any(not c[3] for c in conds):
            kind = "knn_after_filter"
        try:
            got = con.execute(sql, args).fetchall()
        except sqlite3.Error as e:
            self.fail(kind, "%s: %s" % (e, sql), sql)
            return
        vecs = self.ref_vectors(con)
        pre = self.ref_ids(con, [c for c in conds if c[3]])
        post = self.ref_ids(con, conds)
        dist = {r: distance(self.metric, vecs[r], q) for r in pre}
        ranked = sorted((dist[r], r) for r in pre)
        problems = self.judge(got, ranked, dist, pre, post, k, exact, kind == "knn_after_filter")
        if extra and not problems:
            rows = self.ref_rows(con)
            for g in got:
                want = (self.expected_blob(rows[g[0]][1]),) + rows[g[0]][3:7] + rows[g[0]][11:13]
                if g[2:] != want:
                    problems.append("row %d's columns %r, ref %r" % (g[0], g[2:], want))
                    break
        if problems:
            self.fail(kind, "%s [%s] k=%d q=%s: %s" % (who, sql, k, q, "; ".join(problems[:3])), sql)
        else:
            self.count(kind, sql)

    def judge(self, got, ranked, dist, pre, post, k, exact, after_filter):
        problems = []
        ids = [g[0] for g in got]
        ds = [g[1] for g in got]
        if len(set(ids)) != len(ids):
            problems.append("a rowid returned twice: %r" % ids)
        for r, d in zip(ids, ds):
            if r not in post:
                problems.append("row %r does not pass the conditions (ref)" % r)
            elif abs(d - dist[r]) > tol(dist[r]):
                problems.append("row %d at distance %r, exact %r" % (r, d, dist[r]))
        if any(ds[i] > ds[i + 1] for i in range(len(ds) - 1)):
            problems.append("not in distance order: %r" % ds)
        if problems:
            return problems
        want_n = min(k, len(ranked))
        if not after_filter:
            if len(got) != want_n:
                problems.append("%d rows, want %d (of %d passing)" % (len(got), want_n, len(ranked)))
            elif exact:
                for i, (d, (wd, wr)) in enumerate(zip(ds, ranked)):
                    if abs(d - wd) > tol(wd):
                        problems.append("rank %d: row %d at %r, the brute force has row %d at %r"
                                        % (i, ids[i], d, wr, wd))
                        break
            else:
                top = {r for _, r in ranked[:want_n]}
                self.recall[0] += len(top & set(ids))
                self.recall[1] += want_n
        else:
            if len(got) > want_n:
                problems.append("%d rows for k = %d" % (len(got), k))
            if exact and got:
                # no nearer row passing every condition is left out
                last = ds[-1]
                missing = [r for r in post if dist[r] < last - tol(last) and r not in set(ids)]
                if missing:
                    problems.append("rows %r pass and are nearer than the last returned" % missing[:5])
                kth = ranked[want_n - 1][0] if want_n else 0
                left = [r for r in post if dist[r] < kth - tol(kth) and r not in set(ids)]
                if left:
                    problems.append("rows %r pass and are among the k nearest" % left[:5])
        return problems

    def check_scan(self, con, who="a"):
        rng = self.rng
        want = self.ref_rows(con)
        order = rng.choice(["", " ORDER BY rowid", " ORDER BY rowid DESC"])
        try:
            got_list = con.execute("SELECT %s FROM ix%s" % (IX_COLS, order)).fetchall()
        except sqlite3.Error as e:
            self.fail("scan", "%s: %s" % (who, e))
            return
        got = {g[0]: g for g in got_list}
        problems = []
        if len(got) != len(got_list):
            problems.append("a rowid twice in a scan")
        if order == " ORDER BY rowid" and [g[0] for g in got_list] != sorted(got):
            problems.append("ORDER BY rowid not in order")
        if set(got) != set(want):
            problems.append("rowids: index only %r, ref only %r" % (sorted(set(got) - set(want))[:5],
                                                                     sorted(set(want) - set(got))[:5]))
        for r in sorted(set(got) & set(want)):
            w = want[r]
            w = (w[0], self.expected_blob(w[1])) + w[2:]
            if got[r] != w:
                problems.append("row %d: index %r, ref %r" % (r, got[r][2:], w[2:]))
                if got[r][1] != w[1]:
                    problems.append("row %d: vector %r, ref %r" % (r, floats(got[r][1]), floats(w[1])))
                break
        n = con.execute("SELECT count(*) FROM ix").fetchone()[0]
        if n != len(want):
            problems.append("count(*) %d, ref %d" % (n, len(want)))
        # a scan with conditions, which SQLite applies to the scanned rows
        conds = self.conditions(con) or [self.condition(con)]
        sql = "SELECT rowid FROM ix WHERE " + " AND ".join("(%s)" % c[0] for c in conds)
        args = [x for c in conds for x in c[2]]
        got_ids = sorted(r for r, in con.execute(sql, args))
        want_ids = sorted(self.ref_ids(con, conds))
        if got_ids != want_ids:
            problems.append("[%s] %r: %d rows, ref %d" % (sql, args, len(got_ids), len(want_ids)))
        if problems:
            self.fail("scan", "%s: %s" % (who, "; ".join(problems[:3])))
        else:
            self.count("scan")

    def check_lookup(self, con, who="a"):
        rng = self.rng
        ids = self.existing(con, 3)
        ids += [rng.randrange(-5, 300) for _ in range(3 - len(ids))] + [rng.randrange(-5, 300),
                                                                        (1 << 40) + rng.randrange(1000)]
        problems = []
        rows = self.ref_rows(con)
        for r in ids:
            arg = str(r) if rng.random() < 0.2 else r
            got = con.execute("SELECT %s FROM ix WHERE rowid = ?" % IX_COLS, (arg,)).fetchall()
            want = [rows[r][:1] + (self.expected_blob(rows[r][1]),) + rows[r][2:]] if r in rows else []
            if got != want:
                problems.append("rowid = %r: %r, ref %r" % (arg, got, want))
        got = sorted(r for r, in con.execute("SELECT rowid FROM ix WHERE rowid IN (?, ?, ?, ?, ?)", ids))
        if got != sorted({r for r in ids if r in rows}):
            problems.append("rowid IN %r: %r" % (ids, got))
        got = con.execute("SELECT count(*) FROM ix WHERE rowid = 'x'").fetchone()[0]
        if got:
            problems.append("rowid = 'x' gives %d rows" % got)
        if problems:
            self.fail("lookup", "%s: %s" % (who, "; ".join(problems[:3])))
        else:
            self.count("lookup")

    def check_ivf_lists(self, con, who="a"):
        """Each row is in the list of its nearest centroid: a search for a row's own vector with
        probes = 1 (every row of that list rescored) finds a row at least as near as it. A build
        places f16 and int8 rows by their decoded codes (ext_index_build.c's floats_at), later
        writes by their float32 vectors, so only rows whose vector and code have the same nearest
        centroid are checked; rows whose two nearest centroids are within rounding of each other
        are skipped, and so are indexes without float32 vectors."""
        if not self.ivf or not self.rescore:
            return
        cents = [floats(c) for _, c in con.execute("SELECT list, centroid FROM ix_centroids ORDER BY list")]
        if not cents:
            return
        sph = self.metric in ("cosine", "dot")

        def nearest(v):
            keys = sorted((-sum(a * b for a, b in zip(v, c)) if sph else
                           math.sqrt(sum((a - b) ** 2 for a, b in zip(v, c))), i) for i, c in enumerate(cents))
            if len(keys) > 1 and keys[1][0] - keys[0][0] <= 1e-4 * max(1.0, abs(keys[0][0])):
                return None
            return keys[0][1]

        vecs = self.ref_vectors(con)
        for r in self.existing(con, 2):
            v = vecs[r]
            best = nearest(v)
            if best is None or (self.storage in ("f16", "int8") and nearest(decode(self.storage, v)) != best):
                continue
            sql = ("SELECT rowid, distance FROM ix WHERE ix MATCH ? AND k = 1 AND probes = 1"
                   + ("" if self.storage == "f32" else " AND oversample = %d" % EXHAUSTIVE))
            got = con.execute(sql, (blob(v),)).fetchall()
            own = distance(self.metric, v, v)
            if not got or got[0][1] > own + tol(own):
                self.fail("ivf_lists", "%s: row %d's own vector, probes = 1: %r, the row is at %r (%d lists)"
                          % (who, r, got, own, len(cents)), sql)
            else:
                self.count("ivf_lists", sql)

    def check_all(self, con, who="a", knn=2):
        for _ in range(knn):
            self.check_knn(con, who)
        self.check_scan(con, who)
        self.check_lookup(con, who)
        self.check_ivf_lists(con, who)

    # ---------- writes ----------

    def op_insert(self, con):
        rng = self.rng
        n = rng.choice([1, 1, 1, 2, 3, 6])
        rows = []
        for _ in range(n):
            r = self.new_rowid(con)
            while r in [x[0] for x in rows]:
                r = self.new_rowid(con)
            rows.append([r, self.rand_vec(con), self.text_value()] + self.meta_values())
        auto = n == 1 and rng.random() < 0.15
        for row in rows:
            if row[1] == [0.0] * self.d and self.metric == "cosine":
                row[1][0] = 1.0
        cols = "vector, text, author, year, score, tag, tenant"
        if auto:
            row = rows[0]
            cur = self.write(con, "INSERT INTO ix(%s) VALUES (?, ?, ?, ?, ?, ?, ?)" % cols,
                             [self.vec_arg(row[1])] + row[2:], None, None)
            if cur is None:
                return
            # the new row is the one rowid the index has and ref has not
            new = ({x for x, in con.execute("SELECT rowid FROM ix")} -
                   {x for x, in con.execute("SELECT id FROM ref")})
            if len(new) != 1:
                self.fail("writes", "INSERT without a rowid: the index has new rows %r" % sorted(new))
                raise Failure("the tables differ")
            r = new.pop()
            if cur.lastrowid != r:
                self.fail("writes", "INSERT without a rowid%s: last_insert_rowid() is %r, the new row's rowid %d"
                          % (" in a transaction" if self.in_txn else "", cur.lastrowid, r), "last_insert_rowid")
            else:
                self.count("writes", "last_insert_rowid")
            self.ref_exec(con, "INSERT INTO ref VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [r, blob(row[1])] + row[2:])
            return
        if n > 1 and rng.random() < 0.5:
            self.write(con, "INSERT INTO ix(rowid, %s) VALUES %s" % (cols, ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * n)),
                       [x for row in rows for x in [row[0], self.vec_arg(row[1])] + row[2:]],
                       "INSERT INTO ref VALUES %s" % ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * n),
                       [x for row in rows for x in [row[0], blob(row[1])] + row[2:]])
            return
        for row in rows:
            self.write(con, "INSERT INTO ix(rowid, %s) VALUES (?, ?, ?, ?, ?, ?, ?, ?)" % cols,
                       [row[0], self.vec_arg(row[1])] + row[2:],
                       "INSERT INTO ref VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [row[0], blob(row[1])] + row[2:])

    def op_insert_batch(self, con):
        """Many rows in one statement (executemany), in the current transaction or a new one."""
        rng = self.rng
        rows, taken = [], set()
        for _ in range(rng.randrange(10, 60)):
            r = self.new_rowid(con)
            while r in taken:
                r = self.new_rowid(con)
            taken.add(r)
            v = self.rand_vec(con)
            if self.metric == "cosine" and all(x == 0 for x in v):
                v[0] = 1.0
            rows.append([r, v, self.text_value()] + self.meta_values())
        own = not self.in_txn and rng.random() < 0.7
        if own:
            self.ix_exec(con, "BEGIN")
        sql = "INSERT INTO ix(rowid, vector, text, author, year, score, tag, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        args = [[r[0], self.vec_arg(r[1])] + r[2:] for r in rows]
        self.log.append((self.who(con), "executemany " + sql, args))
        try:
            con.executemany(sql, args)
            ok = True
        except sqlite3.Error as e:
            self.fail("writes", "executemany of %d rows: %s" % (len(rows), e))
            ok = False
        if ok:
            self.count("writes")
            sql, args = "INSERT INTO ref VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [[r[0], blob(r[1])] + r[2:] for r in rows]
            self.log.append((self.who(con), "executemany " + sql, args))
            con.executemany(sql, args)
        if own:
            self.ix_exec(con, "COMMIT" if ok else "ROLLBACK")

    def op_insert_or(self, con):
        rng = self.rng
        verb = rng.choice(["REPLACE", "REPLACE", "IGNORE"])
        r = (self.existing(con) or [self.new_rowid(con)])[0] if rng.random() < 0.8 else self.new_rowid(con)
        v = self.rand_vec(con)
        meta = self.meta_values()
        txt = self.text_value()
        if not self.write(con, "INSERT OR %s INTO ix(rowid, vector, text, author, year, score, tag, tenant) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?, ?)" % verb, [r, self.vec_arg(v), txt] + meta, None, None):
            return
        self.ref_exec(con, "INSERT OR %s INTO ref VALUES (?, ?, ?, ?, ?, ?, ?, ?)" % verb,
                      [r, blob(v), txt] + meta)

    def op_must_fail(self, con):
        rng = self.rng
        have = self.existing(con)
        p = rng.random()
        if have and p < 0.35:
            self.must_fail(con, "INSERT INTO ix(rowid, vector, author) VALUES (?, ?, 'dup')",
                           [have[0], blob(self.rand_vec())], "already")
        elif p < 0.65:
            a, b = self.new_rowid(con), self.new_rowid(con) + 5000
            self.must_fail(con, "INSERT INTO ix(rowid, vector, year) VALUES (?, ?, 2020), (?, ?, 2021), (?, ?, 2022)",
                           [a, blob(self.rand_vec()), b, blob(self.rand_vec()), b + 1, blob([0.5] * (self.d + 1))],
                           "dimensions")
        elif have and p < 0.8:
            others = self.existing(con, 2)
            if len(others) == 2:
                self.must_fail(con, "UPDATE ix SET rowid = ? WHERE rowid = ?", [others[0], others[1]], "already")
        elif self.metric == "cosine":
            self.must_fail(con, "INSERT INTO ix(rowid, vector) VALUES (?, ?)",
                           [self.new_rowid(con), blob([0.0] * self.d)], "zero vector")
        elif have:
            self.must_fail(con, "UPDATE ix SET vector = ? WHERE rowid = ?", [blob([1.0] * (self.d - 1) or [1.0, 1.0]),
                                                                          have[0]], "dimensions")

    def op_update(self, con):
        rng = self.rng
        have = self.existing(con)
        if not have:
            return self.op_insert(con)
        r = have[0]
        p = rng.random()
        if p < 0.35:
            v = self.rand_vec(con)
            self.write(con, "UPDATE ix SET vector = ? WHERE rowid = ?", [self.vec_arg(v), r],
                       "UPDATE ref SET vec = ? WHERE id = ?", [blob(v), r])
        elif p < 0.7:
            cols = rng.sample(META + ("text",), rng.randrange(1, 4))
            vals = self.meta_values() + [self.text_value()]
            args = [vals[(META + ("text",)).index(c)] for c in cols]
            if "tenant" in cols and rng.random() < 0.5:
                args[cols.index("tenant")] = self.tenant_value()
            self.write(con, "UPDATE ix SET %s WHERE rowid = ?" % ", ".join("%s = ?" % c for c in cols), args + [r],
                       "UPDATE ref SET %s WHERE id = ?" % ", ".join("%s = ?" % ("txt" if c == "text" else c)
                                                                    for c in cols), args + [r])
        elif p < 0.85:
            v = self.rand_vec(con)
            meta = self.meta_values()
            self.write(con, "UPDATE ix SET vector = ?, author = ?, year = ?, score = ?, tag = ?, tenant = ? "
                            "WHERE rowid = ?", [self.vec_arg(v)] + meta + [r],
                       "UPDATE ref SET vec = ?, author = ?, year = ?, score = ?, tag = ?, tenant = ? WHERE id = ?",
                       [blob(v)] + meta + [r])
        else:
            new = self.new_rowid(con)
            self.write(con, "UPDATE ix SET rowid = ? WHERE rowid = ?", [new, r],
                       "UPDATE ref SET id = ? WHERE id = ?", [new, r])

    def op_update_where(self, con):
        """One statement over every row a condition passes (SQLite scans the index)."""
        rng = self.rng
        c = self.condition(con)
        if rng.random() < 0.3 and self.rescore:
            # the vectors read back and written again, halved (exact in float32)
            self.write(con, "UPDATE ix SET vector = embed_scale(vector, 0.5) WHERE " + c[0], c[2],
                       "UPDATE ref SET vec = embed_scale(vec, 0.5) WHERE " + c[1], c[2])
            return
        col = rng.choice(META)
        val = self.tenant_value() if col == "tenant" else self.meta_values()[META.index(col)]
        self.write(con, "UPDATE ix SET %s = ? WHERE %s" % (col, c[0]), [val] + c[2],
                   "UPDATE ref SET %s = ? WHERE %s" % (col, c[1]), [val] + c[2])

    def op_delete(self, con):
        rng = self.rng
        p = rng.random()
        if p < 0.6:
            for r in self.existing(con, rng.choice([1, 1, 2, 4])):
                self.write(con, "DELETE FROM ix WHERE rowid = ?", [r], "DELETE FROM ref WHERE id = ?", [r])
        elif p < 0.85:
            c = self.condition(con)
            self.write(con, "DELETE FROM ix WHERE " + c[0], c[2], "DELETE FROM ref WHERE " + c[1], c[2])
        else:
            # the k nearest, deleted by a statement that searches: which rows they are, the
            # same search says first (checked)
            q = self.query_vector(con)
            k = rng.choice([1, 2, 3])
            settings = "" if self.exact_default else " AND oversample = %d AND probes = %d" % (EXHAUSTIVE, EXHAUSTIVE)
            sql = "SELECT rowid FROM ix WHERE ix MATCH ? AND k = ?" + settings
            ids = [r for r, in con.execute(sql, (blob(q), k))]
            if self.write(con, "DELETE FROM ix WHERE ix MATCH ? AND k = ?" + settings, [blob(q), k], None, None):
                still = {r for r, in con.execute("SELECT rowid FROM ix WHERE rowid IN (%s)"
                                                 % ",".join("?" * len(ids)), ids)} if ids else set()
                if still:
                    self.fail("writes", "DELETE ... MATCH left rows %r" % sorted(still))
                for r in ids:
                    self.ref_exec(con, "DELETE FROM ref WHERE id = ?", [r])

    def op_copy_nearest(self, con):
        """INSERT ... SELECT from a search of the same index (the search's cursor open while
        rows are written)."""
        if not self.rescore:
            return self.op_insert(con)
        q = self.query_vector(con)
        off = self.rng.choice([100000, 200000, 300000]) + self.rng.randrange(1000)
        settings = "" if self.exact_default else " AND oversample = %d AND probes = %d" % (EXHAUSTIVE, EXHAUSTIVE)
        ids = [r for r, in con.execute("SELECT rowid FROM ix WHERE ix MATCH ? AND k = 2" + settings, (blob(q),))]
        ids = [r for r in ids if not con.execute("SELECT 1 FROM ref WHERE id = ?", (r + off,)).fetchone()]
        if len(ids) != 2:
            return
        self.write(con, "INSERT INTO ix(rowid, vector, text, author, year, score, tag, tenant) "
                        "SELECT rowid + ?, vector, text, author, year, score, tag, tenant FROM ix "
                        "WHERE ix MATCH ? AND k = 2" + settings, [off, blob(q)],
                   "INSERT INTO ref SELECT id + ?, vec, txt, author, year, score, tag, tenant FROM ref "
                   "WHERE id IN (?, ?)", [off] + ids)

    def op_build(self, con):
        if not self.ivf:
            return
        n = con.execute("SELECT count(*) FROM ref").fetchone()[0]
        if n == 0:
            return self.must_fail(con, "INSERT INTO ix(ix) VALUES ('build')", [], "empty")
        if self.rng.random() < 0.15:
            return self.must_fail(con, "INSERT INTO ix(ix, text) VALUES ('build', ?)",
                                  ['{"lists": %d}' % (n + 1)], "lists for")
        if self.rng.random() < 0.2:
            sql, args = "INSERT INTO ix(ix) VALUES ('build')", []
        else:
            lists = self.rng.randint(1, max(1, min(16, n // 3)))
            sql, args = ("INSERT INTO ix(ix, text) VALUES ('build', ?)",
                         ['{"lists": %d, "iterations": %d}' % (lists, self.rng.choice([2, 5, 10]))])
        if self.write(con, sql, args, None, None):
            self.built = True

    # ---------- transactions, connections ----------

    def op_begin(self, con):
        if self.in_txn:
            return self.op_savepoint(con)
        self.ix_exec(con, self.rng.choice(["BEGIN", "BEGIN IMMEDIATE", "SAVEPOINT outer"]))
        self.in_txn = True
        self.savepoints = []

    def op_savepoint(self, con):
        if not self.in_txn:
            return self.op_begin(con)
        self.sp_serial += 1
        name = "sp%d" % self.sp_serial
        self.ix_exec(con, "SAVEPOINT " + name)
        self.savepoints.append(name)

    def op_rollback_to(self, con):
        if not self.savepoints:
            return self.op_savepoint(con)
        i = self.rng.randrange(len(self.savepoints))
        self.ix_exec(con, "ROLLBACK TO " + self.savepoints[i])
        del self.savepoints[i + 1:]

    def op_release(self, con):
        if not self.savepoints:
            return self.op_savepoint(con)
        i = self.rng.randrange(len(self.savepoints))
        self.ix_exec(con, "RELEASE " + self.savepoints[i])
        del self.savepoints[i:]

    def op_end(self, con, commit=None):
        if not self.in_txn:
            return
        if commit is None:
            commit = self.rng.random() < 0.6
        before = con.execute("SELECT last_insert_rowid()").fetchone()[0]
        self.ix_exec(con, "COMMIT" if commit else "ROLLBACK")
        after = con.execute("SELECT last_insert_rowid()").fetchone()[0]
        if after != before:  # as with ordinary tables, the end of a transaction leaves it
            self.fail("txn", "%s changed last_insert_rowid() from %d to %d"
                      % ("COMMIT" if commit else "ROLLBACK", before, after), "last_insert_rowid")
        else:
            self.count("txn", "last_insert_rowid")
        self.in_txn = False
        self.savepoints = []

    def op_commit(self, con):
        self.op_end(con, True)

    def op_rollback(self, con):
        self.op_end(con, False)

    def op_other_writes(self, con):
        """The second connection writes and commits; the first must see it at once."""
        self.op_end(self.a)
        b = self.b
        txn = self.rng.random() < 0.5
        if txn:
            self.ix_exec(b, "BEGIN")
        for _ in range(self.rng.randrange(1, 4)):
            self.rng.choice([self.op_insert, self.op_update, self.op_delete, self.op_insert_or,
                             self.op_update_where, self.op_build])(b)
        if txn:
            self.ix_exec(b, "COMMIT" if self.rng.random() < 0.8 else "ROLLBACK")
        self.check_knn(self.a, "a after b's commit")
        self.check_scan(self.a, "a after b's commit")

    def op_other_reads(self, con):
        """The second connection searches: in WAL while the first has a transaction open (it
        sees the committed rows only), else after the first has ended its transaction."""
        if self.in_txn and self.cfg["journal"] != "wal":
            self.op_end(self.a)
        self.check_knn(self.b, "b")
        self.check_knn(self.b, "b")
        if self.rng.random() < 0.3:
            self.check_scan(self.b, "b")

    def op_snapshot(self, con):
        """WAL: the second connection inside a read transaction keeps its snapshot while the
        first commits, and sees the commit after."""
        if self.cfg["journal"] != "wal":
            return self.op_other_reads(con)
        self.op_end(self.a)
        b = self.b
        self.ix_exec(b, "BEGIN")
        self.check_knn(b, "b in a read transaction")
        self.log.append(("b", "-- read", ()))
        for _ in range(self.rng.randrange(1, 3)):
            self.rng.choice([self.op_insert, self.op_update, self.op_delete])(self.a)
        self.check_knn(b, "b in a read transaction, after a's commit")
        self.check_scan(b, "b in a read transaction, after a's commit")
        self.ix_exec(b, "COMMIT")
        self.check_knn(b, "b after its read transaction")

    def op_fresh(self, con):
        if self.in_txn and self.cfg["journal"] != "wal":
            self.op_end(self.a)
        c = self.connect()
        self.log.append(("-", "fresh", ()))
        self.check_knn(c, "a fresh connection")
        self.check_scan(c, "a fresh connection")
        c.close()

    def op_reopen(self, con):
        if self.in_txn and self.rng.random() < 0.7:
            self.op_end(self.a)
        # else closed with the transaction open: SQLite rolls it back (ref with it)
        self.in_txn = False
        self.savepoints = []
        self.close()
        self.log.append(("-", "reopen", ()))
        self.open()
        ok = self.a.execute("PRAGMA integrity_check").fetchone()[0]
        if ok != "ok":
            self.fail("reopen", "integrity_check: %s" % ok)
        else:
            self.count("reopen")
        self.check_all(self.a, "a reopened", knn=1)

    def op_check(self, con):
        self.check_all(con, "a", knn=2)

    OPS = [("insert", 20), ("insert_or", 6), ("must_fail", 4), ("update", 14), ("update_where", 3),
           ("delete", 9), ("copy_nearest", 1), ("build", 2), ("begin", 6), ("savepoint", 3),
           ("rollback_to", 2), ("release", 2), ("commit", 4), ("rollback", 3), ("other_writes", 4),
           ("other_reads", 3), ("snapshot", 1), ("fresh", 1), ("reopen", 1), ("check", 6)]

    # ---------- the run ----------

    def create(self):
        cfg = self.cfg
        con = self.a
        self.ix_exec(con, "PRAGMA journal_mode = %s" % cfg["journal"])
        opts = "dims = %d, metric = '%s', storage = '%s', index = '%s', chunk_size = %d" % (
            self.d, self.metric, self.storage, cfg["index"], cfg["chunk"])
        if not self.rescore:
            opts += ", rescore = false"
        tenant = cfg["tenant"]
        self.ix_exec(con, "CREATE VIRTUAL TABLE ix USING embed_index(%s, author text, year integer, score real, "
                     "tag blob, tenant %s partition key)" % (opts, tenant))
        self.ix_exec(con, "CREATE TABLE ref(id INTEGER PRIMARY KEY, vec BLOB NOT NULL, txt TEXT, author TEXT, "
                    "year INTEGER, score REAL, tag BLOB, tenant %s)" % tenant.upper())
        self.b.close()
        self.b = self.connect()  # sees the new table
        n0 = self.rng.randrange(20, 120)
        self.ix_exec(con, "BEGIN")
        for _ in range(n0):
            self.op_insert(con) if self.rng.random() < 0.2 else self.insert_one(con)
        self.ix_exec(con, "COMMIT")

    def insert_one(self, con):
        r = self.new_rowid(con)
        v = self.rand_vec(con)
        if self.metric == "cosine" and all(x == 0 for x in v):
            v[0] = 1.0
        row = [r, v, self.text_value()] + self.meta_values()
        self.write(con, "INSERT INTO ix(rowid, vector, text, author, year, score, tag, tenant) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [r, blob(v)] + row[2:],
                   "INSERT INTO ref VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [r, blob(v)] + row[2:])

    def run(self):
        self.open()
        try:
            self.create()
            self.check_all(self.a, "a after the first rows")
            names = [n for n, _ in self.OPS]
            weights = [w for _, w in self.OPS]
            build_at = self.n_ops // 3 if self.ivf else -1
            low = self.rng.choice([40, 80, 200])
            for i in range(self.n_ops):
                self.op_no = i + 1
                name = "build" if i == build_at and not self.built else self.rng.choices(names, weights)[0]
                # keep between about `low` and 600 rows: deletes by condition can empty the table
                rows = self.a.execute("SELECT count(*) FROM ref").fetchone()[0]
                if name in ("delete", "update_where") and rows < low and self.rng.random() < 0.8:
                    name = "insert_batch"
                elif name == "insert" and rows < low and self.rng.random() < 0.3:
                    name = "insert_batch"
                elif name in ("insert", "insert_or") and rows > 600:
                    name = "delete"
                self.op_name = name
                getattr(self, "op_" + name)(self.a)
                self.check_knn(self.a)
                if i % 7 == 6:
                    self.check_scan(self.a)
                if i % 3 == 0:
                    self.check_ivf_lists(self.a)
                if sum(len(f) for f in self.fails.values()) >= 8:
                    break  # the tables have parted: later checks would only repeat it
            self.op_name = "end"
            self.op_end(self.a, True)
            self.check_all(self.a, "a at the end", knn=4)
            self.close()
            self.open()
            self.check_all(self.a, "a reopened at the end", knn=4)
            self.check_all(self.b, "b at the end", knn=2)
            self.rows_at_end = self.a.execute("SELECT count(*) FROM ref").fetchone()[0]
            if self.ivf and not self.ivf_searches:
                self.fail("build", "no search ran over a built IVF")
        except Failure as e:
            self.fail("run", str(e))
        except sqlite3.Error as e:
            self.fail("run", "%s: %r" % (type(e).__name__, e))
        finally:
            try:
                self.close()
            except Exception:
                pass


def edge_cases(folder):
    """Small fixed cases, one per bug found by the random runs (see KNOWN_BUGS): (label, ok,
    detail) each."""
    out = []
    con = common.connect(os.path.join(folder, "edge.db"))
    con.execute("CREATE VIRTUAL TABLE e1 USING embed_index(dims = 2, metric = 'l2', author text, tag blob)")
    con.execute("INSERT INTO e1(rowid, vector, author, tag) VALUES (1, '[0, 0]', '', x''), (2, '[1, 0]', NULL, NULL)")
    got = con.execute("SELECT rowid, author, typeof(author), typeof(tag) FROM e1 WHERE e1 MATCH '[0, 0]' AND k = 5"
                      ).fetchall()
    out.append(("empty values: '' and x'' come out of a search as text and blob",
                got == [(1, "", "text", "blob"), (2, None, "null", "null")], got))
    got = con.execute("SELECT rowid FROM e1 WHERE e1 MATCH '[0, 0]' AND k = 5 AND author = ''").fetchall()
    out.append(("empty values: author = '' finds the row", got == [(1,)], got))
    con.execute("CREATE VIRTUAL TABLE e2 USING embed_index(dims = 2, metric = 'l2', author text)")
    con.execute("INSERT INTO e2(rowid, vector, author) VALUES (1, '[0, 0]', 'ann')")
    got = con.execute("SELECT rowid FROM e2 WHERE e2 MATCH '[0, 0]' AND k = 3 AND author = 'ANN' COLLATE NOCASE"
                      ).fetchall()
    out.append(("COLLATE NOCASE: author = 'ANN' COLLATE NOCASE finds 'ann'", got == [(1,)], got))
    con.execute("CREATE VIRTUAL TABLE e3 USING embed_index(dims = 2, chunk_size = 1)")
    con.execute("INSERT INTO e3(rowid, vector) VALUES (100, '[1, 1]')")
    r = con.execute("INSERT INTO e3(vector) VALUES ('[2, 1]')").lastrowid
    got = (r, con.execute("SELECT max(rowid) FROM e3").fetchone()[0])
    out.append(("last_insert_rowid: an INSERT without a rowid in autocommit gives the row's rowid",
                got[0] == got[1], "last_insert_rowid() %r, the row %r" % got))
    con.execute("BEGIN")
    con.execute("INSERT INTO e3(vector) VALUES ('[3, 1]')")
    before = con.execute("SELECT last_insert_rowid()").fetchone()[0]
    con.execute("COMMIT")
    after = con.execute("SELECT last_insert_rowid()").fetchone()[0]
    out.append(("last_insert_rowid: COMMIT leaves it", before == after, "%r before COMMIT, %r after" % (before, after)))
    con.close()
    return out


def configurations(seed, rnd):
    rng = random.Random(seed)
    base = [(s, i, True) for s in STORAGES for i in ("flat", "ivf")]
    base += [("f16", "flat", False), ("int8", "ivf", False), ("bit", "flat", False)]
    out = []
    for n, (storage, index, rescore) in enumerate(base):
        metric = METRICS[(n + rnd) % len(METRICS)]
        cfg = {"storage": storage, "index": index, "rescore": rescore, "metric": metric,
               "dims": rng.choice([5, 8, 12, 16]), "chunk": rng.choice([3, 7, 16, 1024]),
               "tenant": rng.choice(["integer", "text"]), "journal": rng.choice(["wal", "delete"])}
        cfg["name"] = "%s/%s%s/%s/d%d/c%d/%s" % (storage, index, "" if rescore else "/norescore", metric,
                                                cfg["dims"], cfg["chunk"], cfg["journal"])
        out.append(cfg)
    return out


def main():
    args = sys.argv[1:]
    n_ops = int(args[0]) if args else int(os.environ.get("DIFF_OPERATIONS", "300"))
    rounds = int(args[1]) if len(args) > 1 else int(os.environ.get("DIFF_ROUNDS", "1"))
    base_seed = int(os.environ.get("DIFF_SEED", "1"))
    only = os.environ.get("DIFF_ONLY", "")
    folder = tempfile.mkdtemp(prefix="embed-diff-")
    passed = failed = 0
    total_checks = 0
    known_seen, known_ok = {}, {}
    start = time.time()

    def verdict(ok, line):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(("ok " if ok else "FAIL ") + line, flush=True)

    try:
        for label, ok, detail in edge_cases(folder):
            key = known(label)
            if ok:
                if key:
                    known_ok[key] = known_ok.get(key, 0) + 1
                verdict(True, "edge case: " + label)
            elif key:
                known_seen[key] = known_seen.get(key, 0) + 1
                print("known " + "edge case: %s: %r" % (label, detail))
            else:
                verdict(False, "edge case: %s: %r" % (label, detail))
        for rnd in range(rounds):
            seed = base_seed + 1000 * rnd
            for n, cfg in enumerate(configurations(seed, rnd)):
                if only and only not in cfg["name"]:
                    continue
                t0 = time.time()
                run = Run(cfg, seed * 100 + n, n_ops, folder)
                run.run()
                checks = sum(run.checks.values())
                total_checks += checks
                detail = ", ".join("%s %d" % kv for kv in sorted(run.checks.items()))
                rec = (" recall of default searches %.3f" % (run.recall[0] / run.recall[1])
                       if run.recall[1] else "")
                ok = not run.fails
                ivf = ", %d over built IVF lists" % run.ivf_searches if run.ivf else ""
                verdict(ok, "%s seed %d: %d operations, %d rows at the end, %d checks (%s%s)%s, %.1fs"
                        % (cfg["name"], run.seed, run.op_no, run.rows_at_end, checks, detail, ivf, rec,
                           time.time() - t0))
                for kind, msgs in sorted(run.fails.items()):
                    print("    %s: %d failed" % (kind, len(msgs)))
                    for m in msgs[:3]:
                        print("      " + m[:1500])
                for key, c in run.known.items():
                    known_seen[key] = known_seen.get(key, 0) + c
                for key, c in run.known_passed.items():
                    known_ok[key] = known_ok.get(key, 0) + c
                os.unlink(run.path) if os.path.exists(run.path) else None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for key, what in KNOWN_BUGS.items():
        print("known bug [%s] (%s): %d checks failed, %d passed%s"
              % (key, what, known_seen.get(key, 0), known_ok.get(key, 0),
                 "" if known_seen.get(key) or not known_ok.get(key) else
                 " -- it passes now: remove it from KNOWN_BUGS"))
    print("%d checks in %.1fs" % (total_checks, time.time() - start))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
