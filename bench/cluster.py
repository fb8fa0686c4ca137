"""Cluster figures of issue 14: text inserts into an embed_index and KNN queries through a
three-node dqlite cluster (embed_preload.so in every dqlite-demo node) against the same work on
a local database file in this process, run alternately, twice, with the load average shown;
then the failover time (kill -9 of the leader -> next acknowledged write), three times.
Usage: bench/cluster.py BUILD_DIR MODEL_FOLDER [ROWS]   (bench/cluster.sh makes the model)"""
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cluster"))
from cluster import Cluster   # noqa: E402

build, model = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
rows = int(sys.argv[3]) if len(sys.argv) > 3 else 300
ext = os.path.join(build, "embed.so") if os.path.exists(os.path.join(build, "embed.so")) else os.path.abspath("embed.so")
preload = os.path.join(os.path.dirname(ext), "embed_preload.so")
rng = random.Random(14)
words = ("cat dog rain market bread storm train yarn bond egg mail west river light stone paper "
         "music garden window coffee letter engine forest").split()
texts = [" ".join(rng.choice(words) for _ in range(14)) for _ in range(rows)]
queries = [" ".join(rng.choice(words) for _ in range(6)) for _ in range(30)]


def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def run_local(tmp, wal=False):
    """A local database file: the default rollback journal (an fsync per commit), or WAL with
    synchronous = NORMAL (no fsync per commit, as dqlite's nodes, which keep pages in memory)."""
    path = os.path.join(tmp, "local%d.db" % time.monotonic_ns())
    con = sqlite3.connect(path, isolation_level=None)
    if wal:
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = NORMAL")
    con.enable_load_extension(True)
    con.load_extension(ext)
    if not con.execute("SELECT count(*) FROM embed_models WHERE name = 'm'").fetchone()[0]:
        con.execute("SELECT embed_load('m', ?)", (model,))
    con.execute("CREATE VIRTUAL TABLE docs USING embed_index(model = 'm')")
    t = time.perf_counter()
    for x in texts:
        con.execute("INSERT INTO docs(text) VALUES (?)", (x,))
    ins = rows / (time.perf_counter() - t)
    lat = []
    for q in queries:
        t = time.perf_counter()
        con.execute("SELECT rowid FROM docs WHERE docs MATCH ? AND k = 10", (q,)).fetchall()
        lat.append(time.perf_counter() - t)
    con.close()
    return ins, statistics.median(lat)


def run_cluster(cl):
    c = cl.connect()
    c.execute("DROP TABLE IF EXISTS docs")
    c.execute("CREATE VIRTUAL TABLE docs USING embed_index(model = 'm')")
    t = time.perf_counter()
    for x in texts:
        c.execute("INSERT INTO docs(text) VALUES (?)", x)
    ins = rows / (time.perf_counter() - t)
    lat = []
    for q in queries:
        t = time.perf_counter()
        c.query("SELECT rowid FROM docs WHERE docs MATCH ? AND k = 10", q)
        lat.append(time.perf_counter() - t)
    c.close()
    return ins, statistics.median(lat)


with tempfile.TemporaryDirectory() as tmp:
    with Cluster(tmp, preload, ext, "m=%s" % model) as cl:
        cl.start(60)
        results = {"local": [], "local-wal": [], "cluster": []}
        for rnd in range(2):
            order = ["local", "local-wal", "cluster"]
            for which in order if rnd == 0 else order[::-1]:
                print("round %d, %s: %s" % (rnd + 1, which, load()), flush=True)
                r = run_cluster(cl) if which == "cluster" else run_local(tmp, which == "local-wal")
                results[which].append(r)
                print("  %.1f texts/s inserted, KNN (text query, k = 10) median %.2f ms" % (r[0], r[1] * 1e3), flush=True)
        li = statistics.mean(r[0] for r in results["local"])
        ci = statistics.mean(r[0] for r in results["cluster"])
        ll = statistics.mean(r[1] for r in results["local"])
        cq = statistics.mean(r[1] for r in results["cluster"])
        wi = statistics.mean(r[0] for r in results["local-wal"])
        print("inserts: cluster %.1f texts/s, local %.1f texts/s: %.0f %% of local (target >= 80 %%)" % (ci, li, 100 * ci / li))
        print("inserts: local WAL + synchronous NORMAL %.1f texts/s: cluster at %.0f %% of it" % (wi, 100 * ci / wi))
        print("KNN: cluster %.2f ms, local %.2f ms: %.2fx" % (cq * 1e3, ll * 1e3, cq / ll))
        for k in range(3):
            old = cl.leader()
            t = time.monotonic()
            cl.kill(old)
            while True:
                try:
                    c = cl.connect()
                    c.execute("INSERT INTO docs(text) VALUES ('after failover')")
                    c.close()
                    break
                except Exception:
                    time.sleep(0.02)
            print("failover %d: %.2f s (leader killed -> next acknowledged write)" % (k + 1, time.monotonic() - t))
            cl.start_node(old)
            cl.wait_voters(60)
