"""Search quality of a model over Debian's package descriptions (models/train/debian_pairs.py makes
the pairs; the held-out 5 % were never trained on).

Task 1, "summary -> description": each held-out package's summary is the query, its description the
one relevant document, among (a) the held-out descriptions alone and (b) every description.
Task 2, "natural queries" (bench/quality_queries.json, judged by hand): a query's relevant
documents are the descriptions of the packages listed for it, among every description.
Each is measured for FTS5's bm25 alone (the query's words joined by OR, as embed_hybrid's keyword
side makes them), the model alone (embed_index, exact), and embed_hybrid (both, fused by
reciprocal rank): recall@10 (the share of queries with a relevant document in the first 10) and
MRR@10 (the mean of 1 / rank of the first relevant one, 0 past 10). With --int8 the same again
with the model's int8 weights.

Usage: /usr/bin/python3 bench/quality.py EXT MODEL_DIR PAIRS.jsonl [--int8] [--limit N] [--json OUT]"""
import argparse
import json
import os
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def connect(ext):
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(ext)
    return con


def build(con, model, weights, docs):
    """docs: [(rowid, text)] into an exact embed_index and an FTS5 table."""
    opts = json.dumps({"weights": weights})
    name = "q_" + weights  # loaded models outlive the connection: one name per weight type
    con.execute("SELECT embed_load(?, ?, ?)", (name, model, opts))
    con.execute("CREATE VIRTUAL TABLE ix USING embed_index(model = '%s')" % name)
    con.execute("CREATE VIRTUAL TABLE ft USING fts5(body)")
    t0 = time.time()
    with con:
        con.executemany("INSERT INTO ix(rowid, text) VALUES (?, ?)", docs)
        con.executemany("INSERT INTO ft(rowid, body) VALUES (?, ?)", docs)
    return time.time() - t0


SEARCH = {
    "bm25": "SELECT rowid FROM embed_hybrid('ix', 'ft', ?, 10, '{\"weights\": [0, 1]}')",
    "model": "SELECT rowid FROM ix WHERE ix MATCH ? AND k = 10",
    "hybrid": "SELECT rowid FROM embed_hybrid('ix', 'ft', ?, 10)",
}


def measure(con, queries):
    """queries: [(text, set of relevant rowids)] -> {method: (recall@10, MRR@10)}."""
    out = {}
    for name, sql in SEARCH.items():
        hit = rr = 0.0
        for q, relevant in queries:
            ranked = [r[0] for r in con.execute(sql, (q,))]
            first = next((i for i, r in enumerate(ranked) if r in relevant), None)
            if first is not None:
                hit += 1
                rr += 1.0 / (first + 1)
        out[name] = (hit / len(queries), rr / len(queries))
    return out


def run(ext, model, weights, rows, natural):
    results = {}
    test = [r for r in rows if r["split"] == "test"]
    con = connect(ext)
    secs = build(con, model, weights, [(i, r["description"]) for i, r in enumerate(test, 1)])
    results["held-out descriptions (%d)" % len(test)] = measure(
        con, [(r["summary"], {i}) for i, r in enumerate(test, 1)])
    con.close()
    con = connect(ext)
    rowid = {r["package"]: i for i, r in enumerate(rows, 1)}
    secs += build(con, model, weights, [(i, r["description"]) for i, r in enumerate(rows, 1)])
    ids = {r["package"]: i for i, r in enumerate(rows, 1) if r["split"] == "test"}
    results["every description (%d), held-out summaries" % len(rows)] = measure(
        con, [(r["summary"], {ids[r["package"]]}) for r in test])
    nat = [(q["query"], {rowid[p] for p in q["relevant"] if p in rowid}) for q in natural]
    results["every description, %d natural queries" % len(nat)] = measure(con, [n for n in nat if n[1]])
    con.close()
    return results, secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ext")
    ap.add_argument("model")
    ap.add_argument("pairs")
    ap.add_argument("--int8", action="store_true")
    ap.add_argument("--limit", type=int, default=0, help="only the first N pairs (a quick look)")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = [json.loads(line) for line in open(a.pairs)]
    if a.limit:
        rows = rows[:a.limit]
    natural = json.load(open(os.path.join(HERE, "quality_queries.json")))["queries"]
    report = {}
    for weights in (["f32", "int8"] if a.int8 else ["f32"]):
        results, secs = run(a.ext, a.model, weights, rows, natural)
        report[weights] = results
        print("## weights %s (indexing %.0f s)" % (weights, secs))
        print("| task | bm25 R@10 | bm25 MRR | model R@10 | model MRR | hybrid R@10 | hybrid MRR |")
        print("|---|---|---|---|---|---|---|")
        for task, res in results.items():
            print("| %s | %s |" % (task, " | ".join("%.3f | %.3f" % res[m] for m in ("bm25", "model", "hybrid"))))
        sys.stdout.flush()
    if a.json:
        json.dump(report, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
