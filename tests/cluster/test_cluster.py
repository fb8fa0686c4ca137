"""sqlite-embed in processes that cannot call load_extension: embed_preload.so in the sqlite3
shell and Python, then a three-node dqlite cluster (Debian's dqlite-demo) on 127.0.0.1.

Usage: test_cluster.py BUILD_DIR EXTENSION [--long ROUNDS]
The short form (make test) takes seconds; --long (make cluster-test) inserts texts in bulk while
the leader is killed with SIGKILL at random moments and restarted, then checks every node.
The last line is "N passed, N failed"; the cluster tests are skipped, with the reason printed,
only where dqlite-demo is not installed."""
import json
import math
import os
import random
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import DEMO, Cluster               # noqa: E402
from dqlite_client import DqliteError           # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
EXT = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "embed.so")
PRELOAD = os.path.join(os.path.dirname(EXT), "embed_preload.so")
LONG = int(sys.argv[sys.argv.index("--long") + 1]) if "--long" in sys.argv else 0
MODEL = os.path.join(ROOT, "tests", "fixtures", "models", "minilm-tiny-st")
OTHER_MODEL = os.path.join(ROOT, "tests", "fixtures", "models", "bert-tiny-uncased")
SQLITE3 = "/usr/bin/sqlite3"
TESTS = []
SKIPPED = []


def test(fn):
    TESTS.append(fn)
    return fn


def preloaded(sql, models=None, extension=None, program=None):
    """Runs sql in the sqlite3 shell with the helper preloaded: (stdout, stderr)."""
    env = dict(os.environ, LD_PRELOAD=PRELOAD)
    env.pop("EMBED_MODELS", None)
    env.pop("EMBED_EXTENSION", None)
    if models is not None:
        env["EMBED_MODELS"] = models
    if extension is not None:
        env["EMBED_EXTENSION"] = extension
    out = subprocess.run(program or [SQLITE3, ":memory:", sql], env=env, capture_output=True, text=True,
                         timeout=60)
    return out.stdout, out.stderr


def local():
    """This process's own connection with the extension and the test model (no preload)."""
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(EXT)
    if not con.execute("SELECT count(*) FROM embed_models WHERE name = 'st'").fetchone()[0]:
        con.execute("SELECT embed_load('st', ?)", (MODEL,))
    return con


def vec(b):
    return struct.unpack("<%df" % (len(b) // 4), b)


def cosine_distance(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return 1.0 - dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


LOCAL_VECTORS = {}   # text -> embed('st', text) computed here, once per text


def local_vector(con, text):
    if text not in LOCAL_VECTORS:
        LOCAL_VECTORS[text] = vec(con.execute("SELECT embed('st', ?)", (text,)).fetchone()[0])
    return LOCAL_VECTORS[text]


def brute_force(con, rows, query, k):
    """The k nearest of rows [(rowid, text)] to query by cosine distance, computed here from
    embed('st', text) of this process's own copy of the model."""
    q = local_vector(con, query)
    scored = sorted((cosine_distance(q, local_vector(con, t)), r) for r, t in rows)
    return [(r, d) for d, r in scored[:k]]


def assert_knn(conn, lcon, query, k=5):
    rows = conn.query("SELECT rowid, text FROM docs")
    got = conn.query("SELECT rowid, distance FROM docs WHERE docs MATCH ? AND k = ?", query, k)
    want = brute_force(lcon, rows, query, k)
    assert [r for r, _ in got] == [r for r, _ in want], (query, got, want)
    assert all(abs(a - b) < 1e-5 for (_, a), (_, b) in zip(got, want)), (got, want)


# ---- the preload helper, without a cluster --------------------------------------------------

@test
def preload_registers_sqlite_embed_and_loads_the_models():
    out, err = preloaded("SELECT name, fingerprint FROM embed_models; SELECT embed_dims(embed('st', 'hi'));",
                         models="st=%s" % MODEL)
    assert not err, err
    lcon = local()
    fp = lcon.execute("SELECT fingerprint FROM embed_models WHERE name = 'st'").fetchone()[0]
    dims = lcon.execute("SELECT embed_dims(embed('st', 'hi'))").fetchone()[0]
    assert out.split() == ["st|%s" % fp, str(dims)], (out, fp, dims)


@test
def preload_takes_a_json_list_with_options_and_several_models():
    models = json.dumps({"st": {"folder": MODEL, "options": {"mmap": False}}, "other": OTHER_MODEL})
    out, err = preloaded("SELECT group_concat(name, ',') FROM (SELECT name FROM embed_models ORDER BY name);",
                         models=models)
    assert not err and out.strip() == "other,st", (out, err)
    out, err = preloaded("SELECT count(*) FROM embed_models;", models="st=%s,other=%s" % (MODEL, OTHER_MODEL))
    assert not err and out.strip() == "2", (out, err)


@test
def preload_without_models_registers_only_the_functions():
    out, err = preloaded("SELECT count(*) FROM embed_models; SELECT embed_json(embed_add('[1,2]', '[3,4]'));")
    assert not err and out.split() == ["0", "[4,6]"], (out, err)


@test
def preload_refuses_to_register_anything_after_an_error():
    cases = [
        ("st=%s,bad=/no/such/folder" % MODEL, None, "model 'bad' from '/no/such/folder': embed_load: /no/such/folder"),
        ("st", None, "EMBED_MODELS: 'st' is not name=folder"),
        ("{\"st\": 5}", None, "model 'st' must be a folder or"),
        ("{\"st\": ", None, "EMBED_MODELS: not a JSON object"),
        (json.dumps({"st": MODEL}) + " trailing", None, "EMBED_MODELS: not a JSON object"),
        ('{"st": "%s", "st": "%s"}' % (MODEL, OTHER_MODEL), None, "EMBED_MODELS: model 'st' is named twice"),
        ("st=%s,,st=%s" % (MODEL, OTHER_MODEL), None, "EMBED_MODELS: model 'st' is named twice"),
        (json.dumps({"st": {"folder": MODEL, "options": {"nope": 1}}}), None, "model 'st' from"),
        (None, "/no/such/embed.so", "cannot load the extension '/no/such/embed.so'"),
    ]
    for models, extension, message in cases:
        out, err = preloaded("SELECT count(*) FROM embed_models;", models=models, extension=extension)
        assert err.startswith("embed_preload: ") and message in err, (models, err)
        assert "(sqlite-embed not registered)" in err, err
        assert "no such table: embed_models" in err and not out, (models, out, err)


@test
def preload_works_in_python_sqlite3_too():
    prog = [sys.executable, "-c", "import sqlite3; c = sqlite3.connect(':memory:');"
            "print(c.execute(\"SELECT name FROM embed_models\").fetchall())"]
    out, err = preloaded(None, models="st=%s" % MODEL, program=prog)
    assert not err and out.strip() == "[('st',)]", (out, err)


# ---- a three-node dqlite cluster ------------------------------------------------------------

def cluster_test(fn):
    """A test that needs dqlite-demo; skipped, with the reason, where it is missing."""
    def run():
        if not DEMO:
            SKIPPED.append("%s: dqlite-demo is not installed (Debian package go-dqlite)" % fn.__name__)
            return
        with tempfile.TemporaryDirectory() as tmp:
            with Cluster(tmp, PRELOAD, EXT, "st=%s" % MODEL) as cl:
                try:
                    fn(cl)
                except Exception:
                    for i in range(cl.size):
                        print("---- node %d log (tail)\n%s" % (i, cl.log(i)[-1500:]))
                    raise
    run.__name__ = fn.__name__
    return test(run)


TEXTS = ["the cat sat on the mat", "a dog barked at the mailman", "stock markets fell sharply",
         "the recipe needs two eggs", "rain is expected tomorrow", "kittens chase a ball of yarn",
         "the train was late again", "bonds rallied after the report", "bake the bread for an hour",
         "a storm is coming from the west"]


@cluster_test
def cluster_embeds_on_the_leader_and_survives_its_loss(cl):
    cl.start()
    lcon = local()
    c = cl.connect()
    c.execute("CREATE VIRTUAL TABLE docs USING embed_index(model = 'st')")
    for t in TEXTS:
        c.execute("INSERT INTO docs(text) VALUES (?)", t)
    assert_knn(c, lcon, "a small cat playing")
    old = cl.addresses.index(c.address)
    c.close()

    t0 = time.monotonic()
    cl.kill(old)
    c = cl.connect()
    c.execute("INSERT INTO docs(text) VALUES (?)", "written after the failover")
    failover = time.monotonic() - t0
    assert c.address != cl.addresses[old]
    # the new leader has the model already (EMBED_MODELS): text queries work at once
    assert_knn(c, lcon, "money and markets")
    assert c.query("SELECT count(*) FROM docs") == [(len(TEXTS) + 1,)]
    c.close()

    cl.start_node(old)
    c = cl.make_leader(old)   # the restarted node catches up, then leads
    assert c.query("SELECT count(*) FROM docs") == [(len(TEXTS) + 1,)]
    assert_knn(c, lcon, "written after the failover")
    assert c.query("SELECT * FROM pragma_integrity_check") == [("ok",)]
    c.close()

    # a node that led, cached the index, and lost the lead without restarting: rows written
    # meanwhile by another leader reach it as replicated pages, and its cache must see them
    other = (old + 1) % cl.size
    c = cl.make_leader(other)
    c.execute("DELETE FROM docs WHERE rowid = 1")
    c.execute("INSERT INTO docs(text) VALUES ('a kitten naps in the sun')")
    c.close()
    c = cl.make_leader(old)
    assert c.query("SELECT count(*) FROM docs") == [(len(TEXTS) + 1,)]
    assert_knn(c, lcon, "a small cat playing")
    c.close()
    print("failover (leader killed -> next write acknowledged): %.2f s" % failover)


@cluster_test
def a_node_with_another_model_under_the_same_name_refuses_to_embed(cl):
    cl.start()
    c = cl.connect()
    c.execute("CREATE VIRTUAL TABLE docs USING embed_index(model = 'st')")
    c.execute("INSERT INTO docs(text) VALUES ('the cat sat on the mat')")
    vector = c.query("SELECT vector FROM docs")[0][0]
    odd = (cl.addresses.index(c.address) + 1) % cl.size
    c.close()
    cl.kill(odd)
    cl.start_node(odd, models="st=%s" % OTHER_MODEL)   # same name, other weights
    c = cl.make_leader(odd)
    try:
        c.execute("INSERT INTO docs(text) VALUES ('a dog barked')")
        raise AssertionError("the node with another model embedded into the index")
    except DqliteError as e:
        assert "is not the model" in e.message and "fingerprint" in e.message, e.message
    # what needs no model still works there: a search by vector, and the rows are intact
    assert c.query("SELECT rowid FROM docs WHERE docs MATCH ? AND k = 1", vector) == [(1,)]
    assert c.query("SELECT count(*) FROM docs") == [(1,)]
    c.close()


# ---- the long form: bulk inserts while the leader is killed --------------------------------

def long_form_kills_the_leader_during_bulk_inserts(cl):
    cl.start()
    rng = random.Random(20261201)
    lcon = local()
    c = cl.connect()
    c.execute("CREATE VIRTUAL TABLE docs USING embed_index(model = 'st')")
    words = "cat dog rain market bread storm train yarn bond egg mail west".split()
    acked, attempted, kills, failovers = set(), 0, 0, []
    for rnd in range(LONG):
        deadline = time.monotonic() + rng.uniform(0.3, 1.5)
        killed_at = None
        while True:
            if killed_at is None and time.monotonic() > deadline:
                leader = cl.addresses.index(c.address)
                cl.kill(leader)
                kills += 1
                killed_at = time.monotonic()
            key = "row-%06d" % attempted
            attempted += 1
            text = "%s %s" % (key, " ".join(rng.choice(words) for _ in range(6)))
            try:
                c.execute("INSERT INTO docs(text) VALUES (?)", text)
                acked.add(key)
                if killed_at is not None:
                    failovers.append(time.monotonic() - killed_at)
                    break
            except (DqliteError, ConnectionError, OSError):
                c.close()
                c = cl.connect()
        for i in range(cl.size):
            if not cl.running(i):
                cl.start_node(i)
    c.close()
    cl.wait_voters(60)
    rows_by_node = []
    for i in range(cl.size):
        c = cl.make_leader(i, 60)
        rows = c.query("SELECT rowid, text FROM docs")
        keys = [t.split()[0] for _, t in rows]
        assert len(keys) == len(set(keys)), "node %d: a row is present twice" % i
        missing = acked - set(keys)
        assert not missing, "node %d lost %d acknowledged rows: %s" % (i, len(missing), sorted(missing)[:5])
        assert c.query("SELECT * FROM pragma_integrity_check") == [("ok",)]
        for q in ("cat and dog", "market storm"):
            assert_knn(c, lcon, q, 10)
        rows_by_node.append(sorted(rows))
        c.close()
    assert rows_by_node[0] == rows_by_node[1] == rows_by_node[2], "the nodes hold different rows"
    print("long form: %d rounds, %d leader kills, %d inserts attempted, %d acknowledged, %d present,"
          " 0 acknowledged rows lost; failover median %.2f s, max %.2f s"
          % (LONG, kills, attempted, len(acked), len(rows_by_node[0]),
             sorted(failovers)[len(failovers) // 2], max(failovers)))


if LONG:
    cluster_test(long_form_kills_the_leader_during_bulk_inserts)


def main():
    passed = failed = 0
    for fn in TESTS:
        t0 = time.monotonic()
        try:
            fn()
            print("ok %s (%.1fs)" % (fn.__name__, time.monotonic() - t0))
            passed += 1
        except Exception:
            print("FAIL %s" % fn.__name__)
            traceback.print_exc(file=sys.stdout)
            failed += 1
    for s in SKIPPED:
        print("skipped %s" % s)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))   # so that the clusters' __exit__ runs
    main()
