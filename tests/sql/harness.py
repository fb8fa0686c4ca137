"""A small harness for the SQL tests: each @test function is one check; a failed
assertion or an unexpected exception fails it. Run by tests/sql/run.py."""
import json
import math
import os
import sqlite3
import struct
import threading

EXT = os.path.abspath(os.environ.get("EMBED_EXT", "./embed.so"))
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def connect(path=":memory:"):
    con = sqlite3.connect(path, isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(EXT)
    return con


def one(con, sql, *args):
    return con.execute(sql, args).fetchone()[0]


def blob(values):
    return struct.pack("<%df" % len(values), *values)


def floats(b):
    assert isinstance(b, bytes), "expected a BLOB, got %r" % (b,)
    assert len(b) % 4 == 0
    return list(struct.unpack("<%df" % (len(b) // 4), b))


def rope_angles(pos, d, base=10000.0):
    """The rotary angles of dimensions (i, i + d/2): pos * base^(-2i/d)."""
    return [pos * base ** (-2.0 * i / d) for i in range(d // 2)]


def rope_rotate(v, pos, base=10000.0):
    """RoPE as NomicBERT and ModernBERT apply it to a query or key (rotate-half), in double."""
    h = len(v) // 2
    a = rope_angles(pos, len(v), base)
    return ([v[i] * math.cos(a[i]) - v[i + h] * math.sin(a[i]) for i in range(h)] +
            [v[i + h] * math.cos(a[i]) + v[i] * math.sin(a[i]) for i in range(h)])


def f32(x):
    """x rounded to float32, as the extension stores it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def assert_close(got, want, tol, what=""):
    assert len(got) == len(want), "%s: length %d != %d" % (what, len(got), len(want))
    worst = max((abs(g - w) for g, w in zip(got, want)), default=0.0)
    assert worst <= tol, "%s: max abs diff %g > %g\n got %s\nwant %s" % (what, worst, tol, got[:8], want[:8])
    return worst


def run_threads(n, fn):
    """Runs fn(k) for k in 0..n-1 on n threads at once; raises if any of them raised."""
    errors = []

    def guarded(k):
        try:
            fn(k)
        except Exception as e:  # noqa: BLE001 - raised below, on the caller's thread
            errors.append(repr(e))
    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def safetensors_header(data):
    """The header of a model.safetensors' bytes, and where its tensor data starts."""
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), 8 + n


def limited_copy(src, tmp, limit):
    """Model folder src with its token limit set to `limit` (the golden references were made at
    several limits; SQL applies one limit per loaded model), made under tmp: links to every file
    but the two that set the limit, which are rewritten."""
    dst = os.path.join(tmp, "%s-%d" % (os.path.basename(src), limit))
    os.mkdir(dst)
    for name in os.listdir(src):
        if name not in ("tokenizer_config.json", "sentence_bert_config.json"):
            os.symlink(os.path.join(src, name), os.path.join(dst, name))
    for name, key in (("tokenizer_config.json", "model_max_length"), ("sentence_bert_config.json", "max_seq_length")):
        if os.path.exists(os.path.join(src, name)):
            with open(os.path.join(src, name)) as f:
                cfg = json.load(f)
            cfg[key] = limit
            with open(os.path.join(dst, name), "w") as f:
                json.dump(cfg, f)
    return dst


def assert_error(con, sql, *fragments, args=()):
    """The statement fails with an SQL error whose message contains every fragment."""
    try:
        con.execute(sql, args).fetchall()
    except sqlite3.Error as e:
        msg = str(e)
        for f in fragments:
            assert f in msg, "error %r lacks %r (sql: %s)" % (msg, f, sql)
        return msg
    raise AssertionError("no error from: %s" % sql)


LESSON_MODEL = ('{"vocab": ["bus", "is", "late", "early"],'
                ' "embeddings": [[1,0,2],[0,1,0],[2,1,1],[2,1,-1]],'
                ' "positions": [[1,1,0],[0,1,1],[1,0,1]]}')


def define_lesson(con, name="lesson"):
    con.execute("SELECT embed_unload(?)", (name,))
    return one(con, "SELECT embed_define(?, ?)", name, LESSON_MODEL)
