#!/usr/bin/python3
"""embed_hybrid benchmark (run by bench/hybrid.sh; Debian's /usr/bin/python3).

20,000 generated texts (BENCH_HYBRID_N) in an embed_index with a random-weight model of
all-MiniLM-L6-v2's size (made by build/bench/bench_index make-model) and in an FTS5 table;
queries of 3 to 6 words. For each query, in the same process and alternately:
  hybrid     SELECT ... FROM embed_hybrid('idx', 'fts', ?, 10)        (depth 100: the default)
  separate   the FTS5 query and the KNN query that embed_hybrid runs, as two statements:
             SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid LIMIT 100
             SELECT rowid, distance FROM idx WHERE idx MATCH ? AND k = 100   (the text embedded)
Medians of BENCH_QUERIES queries per round, BENCH_ROUNDS rounds (at least 2), the best round of
each reported, and the median over all queries of each query's ratio (its two timings moments
apart, which a shared machine's drifting load disturbs least): the target is that ratio <= 1.10.
Before timing, the fused answer is checked against the two lists fused here."""
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
EXT = os.path.join(ROOT, "embed.so" if BUILD == "build" else os.path.join(BUILD, "embed.so"))
HELPER = os.path.join(ROOT, BUILD, "bench", "bench_index")
N = int(os.environ.get("BENCH_HYBRID_N", 20000))
QUERIES = int(os.environ.get("BENCH_QUERIES", 30))
ROUNDS = max(2, int(os.environ.get("BENCH_ROUNDS", 3)))
DEPTH, K = 100, 10

sys.dont_write_bytecode = True  # no __pycache__ in bench/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_index import WORDS  # noqa: E402  (the index bench's vocabulary of notes)

HYBRID = "SELECT rowid, score FROM embed_hybrid('idx', 'fts', ?, %d)" % K
FTS = "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid LIMIT %d" % DEPTH
KNN = "SELECT rowid, distance FROM idx WHERE idx MATCH ? AND k = %d" % DEPTH


def load():
    return open("/proc/loadavg").read().split()[:3]


def words_query(q):
    return " OR ".join('"%s"' % w.replace('"', '""') for w in q.split())


def separate(con, q):
    text = con.execute(FTS, (words_query(q),)).fetchall()
    vec = con.execute(KNN, (q,)).fetchall()
    return vec, text


def fused(vec, text):
    score = {}
    for ranked in (vec, text):
        for rank, (rowid, _) in enumerate(ranked, 1):
            score[rowid] = score.get(rowid, 0.0) + 1.0 / (60 + rank)
    return sorted(score, key=lambda r: (-score[r], r))[:K]


def main():
    assert os.path.exists(EXT) and os.path.exists(HELPER), "build first: bench/hybrid.sh does"
    rng = random.Random(11)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 16))) + "." for _ in range(N)]
    queries = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6))) for _ in range(QUERIES)]
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "minilm-size")
        subprocess.run([HELPER, "make-model", model], cwd=ROOT, check=True, capture_output=True)
        con = sqlite3.connect(os.path.join(tmp, "hybrid.db"), isolation_level=None)
        con.enable_load_extension(True)
        con.load_extension(EXT)
        con.execute("SELECT embed_load('m', ?)", (model,))
        con.execute("CREATE VIRTUAL TABLE idx USING embed_index(model = 'm')")
        con.execute("CREATE VIRTUAL TABLE fts USING fts5(body)")
        con.execute("CREATE TEMP TABLE src(id INTEGER PRIMARY KEY, body TEXT)")
        con.executemany("INSERT INTO src(id, body) VALUES (?, ?)", enumerate(texts, 1))
        t = time.perf_counter()
        con.execute("INSERT INTO idx(rowid, text) SELECT id, body FROM src")
        con.execute("INSERT INTO fts(rowid, body) SELECT id, body FROM src")
        print("%d texts of 4-16 words, random-weight MiniLM-L6-sized model (384 dims, 6 layers): "
              "indexed in %.0f s; load average %s" % (N, time.perf_counter() - t, load()))

        for q in queries:  # warm up (the first search fills the index's copy), check the fusion
            vec, text = separate(con, q)
            got = [r for r, _ in con.execute(HYBRID, (q,))]
            assert got == fused(vec, text), "embed_hybrid and the two lists fused here disagree on %r" % q
        rounds, ratios = [], []
        for rnd in range(ROUNDS):
            th, ts, tf, tk = [], [], [], []
            for i, q in enumerate(queries):
                for first in ((0, 1) if (i + rnd) % 2 == 0 else (1, 0)):  # alternate which runs first
                    s = time.perf_counter()
                    if first == 0:
                        con.execute(HYBRID, (q,)).fetchall()
                        th.append(time.perf_counter() - s)
                    else:
                        con.execute(FTS, (words_query(q),)).fetchall()
                        m = time.perf_counter()
                        con.execute(KNN, (q,)).fetchall()
                        e = time.perf_counter()
                        ts.append(e - s)
                        tf.append(m - s)
                        tk.append(e - m)
                ratios.append(th[-1] / ts[-1])  # the same query, moments apart
            r = tuple(statistics.median(x) * 1e3 for x in (th, ts, tf, tk))
            rounds.append(r)
            print("round %d: hybrid %.3f ms, separate %.3f ms (FTS5 %.3f + KNN %.3f), ratio %.3f; "
                  "load average %s" % (rnd + 1, r[0], r[1], r[2], r[3], r[0] / r[1], load()))
        h = min(r[0] for r in rounds)
        s = min(r[1] for r in rounds)
        paired = statistics.median(ratios)
        print("best rounds: embed_hybrid %.3f ms per query, FTS5 + KNN separately %.3f ms: %.3fx; "
              "median of the %d per-query ratios: %.3fx (target <= 1.10: %s)"
              % (h, s, h / s, len(ratios), paired, "met" if paired <= 1.10 else "NOT met"))
        print("RESULT hybrid_ms %.4f" % h)
        print("RESULT hybrid_separate_ms %.4f" % s)
        con.close()


if __name__ == "__main__":
    main()
