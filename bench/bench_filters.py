#!/usr/bin/python3
"""Filtered search benchmark (run by bench/filters.sh; Debian's /usr/bin/python3).

100,000 random 384-dimensional vectors (BENCH_N) with metadata year (uniform over 100 values),
author (1,000 values), and a partition key tenant (1,000 values), k = 10, l2. Each query kind
runs on embed_index and on sqlite-vec 0.1.9's vec0 with the same metadata and partition
columns, in the same process, alternately, twice (BENCH_ROUNDS), median of BENCH_QUERIES each:
  unfiltered, year < 50 (50 %), year = 7 (1 %), author = 'a7' AND year = 7 (0.01 %: ~10 rows),
  tenant = 7 (one tenant's partition).
Every filtered answer is checked against vec0's (same rowids) before it is timed."""
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
EXT = os.path.join(ROOT, "embed.so" if BUILD == "build" else os.path.join(BUILD, "embed.so"))
VEC = os.path.join(ROOT, ".deps", "node_modules", "sqlite-vec-linux-x64", "vec0")
N = int(os.environ.get("BENCH_N", 100000))
QUERIES = int(os.environ.get("BENCH_QUERIES", 30))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 2))
D = 384

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_index import random_vectors  # noqa: E402  (the same random vectors as the index bench)

KINDS = [("unfiltered", ""), ("50 % (year < 50)", "AND year < 50"), ("1 % (year = 7)", "AND year = 7"),
         ("0.01 % (author, year)", "AND author = 'a7' AND year = 7"), ("one tenant's partition", "AND tenant = 7")]


def main():
    rng = random.Random(3)
    path = os.path.join(tempfile.mkdtemp(), "filters.db")
    con = sqlite3.connect(path, isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(EXT)
    con.load_extension(VEC)
    con.execute("PRAGMA cache_size = -4000000")
    con.execute("CREATE VIRTUAL TABLE ei USING embed_index(dims = %d, metric = 'l2', year integer, author text, "
                "tenant integer partition key)" % D)
    con.execute("CREATE VIRTUAL TABLE v0 USING vec0(embedding float[%d] distance_metric=l2, year integer, "
                "author text, tenant integer partition key)" % D)
    t = time.time()
    vectors = random_vectors(rng, N)
    con.execute("BEGIN")
    for i in range(1, N + 1):
        meta = (rng.randrange(100), "a%d" % rng.randrange(1000), rng.randrange(1000))
        row = (i, vectors[i - 1]) + meta
        con.execute("INSERT INTO ei(rowid, vector, year, author, tenant) VALUES (?, ?, ?, ?, ?)", row)
        con.execute("INSERT INTO v0(rowid, embedding, year, author, tenant) VALUES (?, ?, ?, ?, ?)", row)
    con.execute("COMMIT")
    print("load average %s; %d rows inserted in %.0f s" % (open("/proc/loadavg").read().split()[:3], N, time.time() - t))
    queries = random_vectors(rng, QUERIES)

    def run(table, col, cond):
        sql = "SELECT rowid FROM %s WHERE %s MATCH ? AND k = 10 %s" % (table, col, cond)
        times, answers = [], []
        for q in queries:
            s = time.perf_counter()
            answers.append([r for r, in con.execute(sql, (q,))])
            times.append(time.perf_counter() - s)
        return statistics.median(times) * 1000, answers

    run("ei", "ei", "")  # fill the copy of the vectors
    run("v0", "embedding", "")
    results = {}
    for rnd in range(ROUNDS):
        for name, cond in KINDS:
            a, ra = run("ei", "ei", cond)
            b, rb = run("v0", "embedding", cond)
            assert ra == rb, "%s: embed_index and vec0 disagree" % name
            results.setdefault(name, []).append((a, b))
        print("round %d done, load average %s" % (rnd + 1, open("/proc/loadavg").read().split()[:3]))
    base = min(a for a, _ in results["unfiltered"])
    print("%-26s %12s %12s %10s %14s" % ("query (k = 10)", "embed_index", "vec0", "x vec0", "x unfiltered"))
    for name, _ in KINDS:
        a = min(x for x, _ in results[name])
        b = min(y for _, y in results[name])
        print("%-26s %9.3f ms %9.3f ms %9.1fx %13.1fx" % (name, a, b, b / a, base / a))
        print("RESULT filter_ms %s %.4f vec0 %.4f" % (name.split()[0], a, b))


if __name__ == "__main__":
    main()
