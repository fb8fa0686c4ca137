#!/usr/bin/python3
"""embed_index benchmark (run by bench/index.sh; needs Debian's /usr/bin/python3, whose sqlite3
module can load extensions).

Search: 100,000 random 384-dimensional vectors, k = 10, cosine, median of 50 queries, all in
one database file and one process:
  embed_index   SELECT rowid, distance FROM ei WHERE ei MATCH ? AND k = 10
  vec0          sqlite-vec's vec0 table, same data, warm page cache (PRAGMA cache_size 4 GB)
  ORDER BY      SELECT id FROM plain ORDER BY embed_distance(v, ?) LIMIT 10 over a BLOB column
  bound         reading the 154 MB once (build/bench/bench_index membw, same machine, same size,
                1 and 2 threads, before and after the queries: the fastest)
Bulk text inserts: INSERT INTO idx(rowid, text) SELECT ... in one statement, against the
encoder's own throughput in length-sorted batches of 32 on the same texts (bench_index encode),
with the tiny test model and with a random-weight model of all-MiniLM-L6-v2's size.

Chunked inserts: BENCH_DOCS long documents (default 40, 20-60 sentences each) into an
embed_index(chunk_tokens = 128, chunk_overlap = 16) in one statement, in tokens/s, against the
encoder given the same chunk texts (embed_chunks') in one emb_model_embed call (bench_index
encode-one-call), two rounds in alternating order, on the MiniLM-sized model.

Environment: BENCH_N (vectors, default 100000), BENCH_QUERIES (default 50), BENCH_TEXTS
(texts for the tiny model, default 20000; a fiftieth of that for the MiniLM-sized model),
BENCH_DOCS, BENCH_ONLY=chunks (the chunked inserts alone).
"""
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
VEC = os.path.join(ROOT, ".deps", "node_modules", "sqlite-vec-linux-x64", "vec0")
N = int(os.environ.get("BENCH_N", 100000))
D = 384
QUERIES = int(os.environ.get("BENCH_QUERIES", 50))
TEXTS = int(os.environ.get("BENCH_TEXTS", 20000))

# random float32 vectors with every component in +-[1, 2), made from random bytes at C speed:
# the exponent byte fixes the range, the low bit of a random byte the sign
MANTISSA_HIGH = bytes(0x80 | (b & 0x7F) for b in range(256))
SIGN_EXPONENT = bytes(0x3F if b & 1 else 0xBF for b in range(256))


def random_vectors(rng, n):
    raw = bytearray(rng.randbytes(n * D * 4))
    raw[2::4] = raw[2::4].translate(MANTISSA_HIGH)
    raw[3::4] = raw[3::4].translate(SIGN_EXPONENT)
    return [bytes(raw[i * D * 4:(i + 1) * D * 4]) for i in range(n)]


def connect(path):
    con = sqlite3.connect(path, isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(EXT)
    if os.path.exists(VEC + ".so"):
        con.load_extension(VEC)
    return con


def timed(con, sql, args):
    t0 = time.perf_counter()
    rows = con.execute(sql, args).fetchall()
    return time.perf_counter() - t0, rows


def helper(*args):
    out = subprocess.run([HELPER, *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    results = {}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            _, key, value = line.split()
            results[key] = float(value)
        else:
            print("  " + line)
    return results


def search(tmp):
    rng = random.Random(2024)
    print("search: %d vectors of %d dimensions, k = 10, cosine, median of %d queries" % (N, D, QUERIES))
    vectors = random_vectors(rng, N)
    queries = random_vectors(rng, QUERIES)
    # the bound is measured before and after the queries (the machine may be shared): the faster
    bw_before = helper("membw", str(N), str(D), "20")
    con = connect(os.path.join(tmp, "search.db"))
    con.execute("PRAGMA cache_size = -4000000")
    con.execute("CREATE VIRTUAL TABLE ei USING embed_index(dims = %d, metric = 'cosine')" % D)
    con.execute("CREATE TABLE plain(id INTEGER PRIMARY KEY, v BLOB)")
    have_vec = os.path.exists(VEC + ".so")
    if have_vec:
        con.execute("CREATE VIRTUAL TABLE v0 USING vec0(embedding float[%d] distance_metric=cosine)" % D)
    inserts = {}
    for name, sql in (("embed_index", "INSERT INTO ei(rowid, vector) VALUES (?, ?)"),
                      ("vec0", "INSERT INTO v0(rowid, embedding) VALUES (?, ?)"),
                      ("plain table", "INSERT INTO plain(id, v) VALUES (?, ?)")):
        if name == "vec0" and not have_vec:
            continue
        t0 = time.perf_counter()
        con.execute("BEGIN")
        con.executemany(sql, ((i + 1, v) for i, v in enumerate(vectors)))
        con.execute("COMMIT")
        inserts[name] = time.perf_counter() - t0
        print("  insert %-12s %6.2f s  (%.0f rows/s)" % (name, inserts[name], N / inserts[name]))

    knn = "SELECT rowid, distance FROM ei WHERE ei MATCH ? AND k = 10"
    first, _ = timed(con, knn, (queries[0],))
    print("  embed_index first query (fills the connection's cache): %.1f ms" % (first * 1e3))
    times, ours = [], []
    for q in queries:
        t, rows = timed(con, knn, (q,))
        times.append(t)
        ours.append([r for r, _ in rows])
    result = {"embed_index": statistics.median(times)}
    if have_vec:
        vsql = "SELECT rowid, distance FROM v0 WHERE embedding MATCH ? AND k = 10"
        for q in queries[:3]:
            timed(con, vsql, (q,))   # warm the page cache
        times, same = [], 0
        for i, q in enumerate(queries):
            t, rows = timed(con, vsql, (q,))
            times.append(t)
            same += [r for r, _ in rows] == ours[i]
        result["vec0 (warm cache)"] = statistics.median(times)
        print("  vec0 and embed_index agree on %d of %d top-10 lists" % (same, len(queries)))
    psql = "SELECT id FROM plain ORDER BY embed_distance(v, ?) LIMIT 10"
    timed(con, psql, (queries[0],))
    times, same = [], 0
    n_plain = min(10, len(queries))
    for i, q in enumerate(queries[:n_plain]):
        t, rows = timed(con, psql, (q,))
        times.append(t)
        same += [r for r, in rows] == ours[i]
    result["ORDER BY embed_distance"] = statistics.median(times)
    print("  ORDER BY embed_distance and embed_index agree on %d of %d top-10 lists (median of %d)"
          % (same, n_plain, n_plain))
    con.close()

    bw_after = helper("membw", str(N), str(D), "20")
    bw = min(bw_before, bw_after, key=lambda r: r["membw_ms"])
    bound = bw["membw_ms"] / 1e3
    ours_t = result["embed_index"]
    print()
    print("  %-26s %9s %12s" % ("", "median ms", "embed_index x"))
    for name, t in result.items():
        print("  %-26s %9.2f %12.1f" % (name, t * 1e3, t / ours_t))
    print("  %-26s %9.2f %12.2f" % ("read %.0f MB once (bound)" % (N * D * 4 / 1e6), bound * 1e3, bound / ours_t))
    print("  %-26s %9.2f %12.2f" % ("cblas_sgemv alone", bw["sgemv_ms"], bw["sgemv_ms"] / 1e3 / ours_t))
    if "vec0 (warm cache)" in result:
        r = result["vec0 (warm cache)"] / ours_t
        print("  embed_index is %.1fx faster than vec0 (target >= 3x): %s" % (r, "met" if r >= 3 else "NOT met"))
    r = ours_t / bound
    print("  embed_index takes %.2fx the bandwidth bound (target <= 2x): %s" % (r, "met" if r <= 2 else "NOT met"))
    print("RESULT index_ms %.3f" % (ours_t * 1e3))


WORDS = ("the a bus train meeting report printer garden coffee river station city office late early "
         "again today tomorrow broken fixed moved cancelled quickly slowly because although our their "
         "new old weekly morning night team school trip dentist bicycle machine floor home centre "
         "update plan budget review window door kitchen window road bridge market music").split()


def make_texts(rng, n):
    out = []
    for i in range(n):
        words = rng.randint(4, 40)   # a spread of lengths, as real notes have
        out.append(" ".join(rng.choice(WORDS) for _ in range(words)) + " (%d)." % i)
    return out


def bulk_insert(tmp, label, model_dir, n):
    rng = random.Random(7)
    texts = make_texts(rng, n)
    path = os.path.join(tmp, "texts_%d.txt" % n)
    with open(path, "w") as f:
        f.write("\n".join(texts) + "\n")
    print("bulk text insert, %s: %d texts of 4-40 words" % (label, n))
    enc = helper("encode", model_dir, path)
    con = connect(":memory:")
    con.execute("SELECT embed_load('m', ?)", (model_dir,))
    con.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT)")
    con.executemany("INSERT INTO docs(body) VALUES (?)", ((t,) for t in texts))
    best = 1e30
    for rep in range(3):   # best of 3, as the encoder's figures
        con.execute("DROP TABLE IF EXISTS ti")
        con.execute("CREATE VIRTUAL TABLE ti USING embed_index(model = 'm')")
        t0 = time.perf_counter()
        con.execute("INSERT INTO ti(rowid, text) SELECT id, body FROM docs")
        best = min(best, time.perf_counter() - t0)
        assert con.execute("SELECT count(*) FROM ti").fetchone()[0] == n
    con.close()
    rate = n / best
    base = enc["encode_sorted_per_s"]
    frac = rate / base
    print("  INSERT INTO idx(rowid, text) SELECT ... (one statement): %.0f texts/s (best of 3)" % rate)
    print("  = %.0f%% of the encoder's length-sorted batch-32 throughput (target >= 80%%: %s);"
          % (100 * frac, "met" if frac >= 0.8 else "NOT met"))
    print("    %.0f%% of batches of 32 in file order, %.0f%% of the encoder given all texts in one call"
          % (100 * rate / enc["encode_unsorted_per_s"], 100 * rate / enc["encode_one_call_per_s"]))
    print("RESULT bulk_fraction_%s %.3f" % (label.split()[0], frac))


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def chunked_insert(tmp, label, model_dir, n, tokens=128, overlap=16):
    """N long documents into embed_index(chunk_tokens, chunk_overlap) in one statement, against the
    encoder given the same chunk texts (embed_chunks') in one emb_model_embed call; alternated."""
    rng = random.Random(11)
    docs = [" ".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20))).capitalize() + "."
                     for _ in range(rng.randint(20, 60))) for _ in range(n)]
    con = connect(":memory:")
    con.execute("SELECT embed_load('m', ?)", (model_dir,))
    con.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT)")
    con.executemany("INSERT INTO docs(body) VALUES (?)", ((d,) for d in docs))
    opts = '{"max_tokens": %d, "overlap": %d}' % (tokens, overlap)
    chunks = con.execute("SELECT c.text, c.tokens FROM docs, embed_chunks('m', docs.body, ?) AS c", (opts,)).fetchall()
    path = os.path.join(tmp, "chunks.txt")
    with open(path, "w") as f:
        f.write("\n".join(t for t, _ in chunks) + "\n")
    total = sum(t for _, t in chunks) + 2 * len(chunks)  # with [CLS] and [SEP], as the encoder runs them
    con.execute("SELECT embed('m', ?)", (chunks[0][0],))  # warm-up, as the helper's first batch
    print("chunked insert, %s: %d documents, %d chunks of <= %d tokens (overlap %d), %d tokens; %s"
          % (label, n, len(chunks), tokens, overlap, total, cpu_name()))
    ratios = []
    for rnd in range(int(os.environ.get("BENCH_ROUNDS", 2))):
        rates = {}
        for peer in (("encoder", "index") if rnd % 2 == 0 else ("index", "encoder")):
            if peer == "encoder":
                rates[peer] = helper("encode-one-call", model_dir, path)["encode_one_call_per_s"] * total / len(chunks)
                continue
            con.execute("DROP TABLE IF EXISTS ci")
            con.execute("CREATE VIRTUAL TABLE ci USING embed_index(model = 'm', chunk_tokens = %d, chunk_overlap = %d)"
                        % (tokens, overlap))
            t0 = time.perf_counter()
            con.execute("INSERT INTO ci(rowid, text) SELECT id, body FROM docs")
            rates[peer] = total / (time.perf_counter() - t0)
            assert con.execute("SELECT count(*) FROM ci_parts").fetchone()[0] == len(chunks)
        ratios.append(rates["index"] / rates["encoder"])
        print("  round %d: encoder one call %.0f tokens/s, INSERT ... SELECT into the chunked index %.0f tokens/s"
              " = %.1f%%; load average %s" % (rnd + 1, rates["encoder"], rates["index"], 100 * ratios[-1],
                                             " ".join(open("/proc/loadavg").read().split()[:3])))
    con.close()
    print("  target >= 90%%: %s" % ("met" if min(ratios) >= 0.9 else "NOT met"))
    print("RESULT chunked_fraction %.3f" % min(ratios))


def main():
    assert os.path.exists(EXT), "build embed.so first (make)"
    assert os.path.exists(HELPER), "build %s first (make %s)" % (HELPER, os.path.relpath(HELPER, ROOT))
    if os.environ.get("BENCH_ONLY") == "chunks":  # the chunked inserts alone
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "minilm-size")
            helper("make-model", model)
            chunked_insert(tmp, "MiniLM-L6-sized random weights", model, int(os.environ.get("BENCH_DOCS", 40)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        search(tmp)
        print()
        bulk_insert(tmp, "minilm-tiny-st (48 dims, 3 layers)",
                    os.path.join(ROOT, "tests", "fixtures", "models", "minilm-tiny-st"), TEXTS)
        print()
        model = os.path.join(tmp, "minilm-size")
        helper("make-model", model)
        bulk_insert(tmp, "MiniLM-L6-sized random weights (384 dims, 6 layers)", model, max(100, TEXTS // 50))
        print()
        chunked_insert(tmp, "MiniLM-L6-sized random weights", model, int(os.environ.get("BENCH_DOCS", 40)))


if __name__ == "__main__":
    main()
