"""Crafted-database fuzzer for embed_index: builds a small index of every kind (flat, ivf, int8,
bit, chunked, metadata columns, and a hybrid one beside an FTS5 table), then changes one to three
of its shadow-table values (integer extremes, negatives, huge counts, wrong types, short and long
BLOBs, NULL, offsets inside a UTF-8 character, text that is not UTF-8, rows removed) and runs
embed_index_status, searches (with rerank where a cross-encoder is loaded), an insert, a delete,
'build' and embed_hybrid on the result. Each case runs in a child process.

A case passes when the child ends normally (no signal, no sanitizer report) and every SQL error
names the index ("docs_ix", so its shadow tables too) or the function ("embed_index",
"embed_index_status", "embed_hybrid"), is not "out of memory" nor SQLite's bare "SQL logic
error", says which shadow table is damaged when it complains of UTF-8 (the fuzzer's own
SQL is UTF-8, so such text comes from the database), is at most 400 characters and holds only printable UTF-8 (crafted bytes are not copied
into messages).

Usage: index_db.py [--seed N] [--seconds S | --iterations N] [--ext PATH]
Deterministic by seed: iteration i of seed s is the same case on every run. Prints
"N passed, N failed"; each failure with its seed, iteration and the SQL that reproduces it."""
import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "tests", "fixtures", "models", "minilm-tiny-st")
CE = os.path.join(ROOT, "tests", "references", "rerank", "bert")
NAME = "docs_ix"
WORDS = ("the a bus train late early again station river city office café été naïve straße 東京 "
         "мост printer coffee broken fixed rain snow bridge").split()
KINDS = {
    "flat": "",
    "ivf": ", index = 'ivf'",
    "int8": ", storage = 'int8'",
    "bit": ", storage = 'bit'",
    "chunked": ", chunk_tokens = 6",
    "chunked_ivf": ", chunk_tokens = 6, index = 'ivf', storage = 'int8'",
    "metadata": ", lang text partition key, year integer",
    "hybrid": "",
}
ACCEPT = (NAME, "embed_index", "embed_hybrid")
REJECT = ("out of memory", "SQL logic error", "not an error", "unknown error")
INTS = [0, 1, -1, 2, 7, 255, 256, 65535, 65536, 2**31 - 1, 2**31, -2**31, 2**32, 2**32 + 1, 2**53, 2**61,
        2**62, 2**63 - 1, -2**63, -2**62]


def texts(rng, n):
    out = []
    for _ in range(n):
        out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 14))) + ".")
    return out


def build_base(ext, kind, path):
    """The index of this kind in a database file at path (built once per run)."""
    con = sqlite3.connect(path, isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(ext)
    con.execute("SELECT embed_load('m', ?)", (MODEL,))
    con.execute("CREATE VIRTUAL TABLE %s USING embed_index(model = 'm'%s)" % (NAME, KINDS[kind]))
    rng = random.Random(kind)
    rows = texts(rng, 30)
    con.execute("BEGIN")
    for i, t in enumerate(rows, 1):
        if kind == "metadata":
            con.execute("INSERT INTO %s(rowid, text, lang, year) VALUES (?, ?, ?, ?)" % NAME,
                        (i, t, rng.choice(["en", "fr"]), rng.randint(1990, 2020)))
        else:
            con.execute("INSERT INTO %s(rowid, text) VALUES (?, ?)" % NAME, (i, t))
    con.execute("COMMIT")
    if "ivf" in kind:
        con.execute("INSERT INTO %s(%s, text) VALUES ('build', '{\"lists\": 3}')" % (NAME, NAME))
    if kind == "hybrid":
        con.execute("CREATE VIRTUAL TABLE docs_fts USING fts5(body)")
        con.executemany("INSERT INTO docs_fts(rowid, body) VALUES (?, ?)", enumerate(rows, 1))
    # a few rows left pending (written after the last build or chunk fill)
    con.execute("INSERT INTO %s(rowid, text) VALUES (100, 'late bus café')" % NAME)
    con.close()


def sql_value(v):
    """A Python description of a value -> SQL literal."""
    kind, x = v
    if kind == "int":
        return str(x)
    if kind == "real":
        return repr(x)
    if kind == "null":
        return "NULL"
    if kind == "text":
        return "'" + x.replace("'", "''") + "'"
    if kind == "blob":
        return "x'" + x + "'"
    if kind == "rawtext":  # bytes that are not UTF-8, stored as TEXT
        return "CAST(x'" + x + "' AS TEXT)"
    return x  # an SQL expression over the old value ("old")


def pick_value(rng, old):
    r = rng.random()
    if isinstance(old, int) and r < 0.35:
        return ("expr", rng.choice(["%d + 1", "%d - 1", "%d + 2", "%d - 2", "%d * 2", "-%d", "%d + 1000",
                                    "%d + 4"]).replace("%d", "(%d)" % old))
    if isinstance(old, bytes) and r < 0.35:
        n = len(old)
        choice = rng.randrange(6)
        if choice == 0:
            return ("expr", "substr(old, 1, %d)" % rng.randint(0, max(0, n - 1)))
        if choice == 1:
            return ("expr", "old || zeroblob(%d)" % rng.choice([1, 2, 3, 4, 8, 1000]))
        if choice == 2:
            return ("expr", "substr(old, 2)")
        if choice == 3:  # one byte flipped
            i = rng.randrange(max(1, n))
            return ("expr", "substr(old, 1, %d) || x'%02x' || substr(old, %d)" % (i, rng.randrange(256), i + 2))
        if choice == 4:  # a run of 0xff (counts, ids and lists at their largest)
            i = rng.randrange(max(1, n))
            return ("expr", "substr(old, 1, %d) || x'ffffffffffffffff' || substr(old, %d)" % (i, i + 9))
        i = 4 * rng.randrange(max(1, n // 4))  # one float or int32 set to -0.0 / INT32_MIN
        return ("expr", "substr(old, 1, %d) || x'00000080' || substr(old, %d)" % (i, i + 5))
    if isinstance(old, str) and r < 0.35:
        return ("expr", rng.choice(["substr(old, 2)", "old || 'x'", "upper(old)", "''", "old || old",
                                    "CAST(CAST(old AS BLOB) || x'ff' AS TEXT)",
                                    "CAST(x'c3' || CAST(old AS BLOB) AS TEXT)"]))
    r = rng.random()
    if r < 0.4:
        return ("int", rng.choice(INTS))
    if r < 0.5:
        return ("real", rng.choice([0.5, -1.5, 1e300, -0.0, 3.0]))
    if r < 0.6:
        return ("null", None)
    if r < 0.7:
        return ("text", rng.choice(["", "abc", "12", "-3", "1e9", "ivf", "flat", "bit", "int8", "cosine",
                                    "9223372036854775808", "é"]))
    if r < 0.8:
        return ("rawtext", rng.choice(["ff", "c3", "e282", "41c328", "f0908d", "80", "edbfbf"]))
    return ("blob", "".join("%02x" % rng.randrange(256) for _ in range(rng.choice([0, 1, 3, 4, 5, 8, 16, 64]))))


def mutations(rng, con):
    """One to three statements that damage the shadow tables of the base database `con`."""
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
              if r[0].startswith(NAME + "_")]
    tables = [t for t in tables if con.execute('SELECT count(*) FROM "%s"' % t).fetchone()[0] > 0]
    out = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        t = rng.choice(tables)
        cols = [r[1] for r in con.execute('PRAGMA table_info("%s")' % t)]
        if t.endswith("_config"):
            keys = [r[0] for r in con.execute('SELECT key FROM "%s" ORDER BY key' % t)]
            key = rng.choice(keys)
            if rng.random() < 0.08:
                out.append("DELETE FROM \"%s\" WHERE key = '%s'" % (t, key))
                continue
            old = con.execute('SELECT value FROM "%s" WHERE key = ?' % t, (key,)).fetchone()[0]
            v = pick_value(rng, old)
            expr = sql_value(v).replace("old", "value")
            out.append("UPDATE \"%s\" SET value = %s WHERE key = '%s'" % (t, expr, key))
            continue
        ids = [r[0] for r in con.execute('SELECT rowid FROM "%s" ORDER BY rowid' % t)]
        rid = rng.choice(ids)
        if rng.random() < 0.06:
            out.append('DELETE FROM "%s" WHERE rowid = %d' % (t, rid))
            continue
        col = rng.choice(cols)
        old = con.execute('SELECT "%s" FROM "%s" WHERE rowid = ?' % (col, t), (rid,)).fetchone()[0]
        v = pick_value(rng, old)
        expr = sql_value(v).replace("old", '"%s"' % col)
        out.append('UPDATE OR REPLACE "%s" SET "%s" = %s WHERE rowid = %d' % (t, col, expr, rid))
    return out


def operations(kind, rng):
    q = rng.choice(["late bus", "café", "broken printer", "мост", "the"])
    ops = ["SELECT name, value FROM embed_index_status('%s')" % NAME]
    cols = "rowid, distance" + (", chunk, chunk_start, chunk_end" if "chunked" in kind else "")
    where = " AND lang = 'fr'" if kind == "metadata" and rng.random() < 0.5 else ""
    ops.append("SELECT %s FROM %s WHERE %s MATCH '%s' AND k = %d%s" % (cols, NAME, NAME, q, rng.choice([1, 5, 40]), where))
    ops.append("SELECT %s, rerank_score FROM %s WHERE %s MATCH '%s' AND k = 5 AND rerank = 'ce'" % (cols, NAME, NAME, q))
    if kind == "hybrid":
        ops.append("SELECT rowid, score FROM embed_hybrid('%s', 'docs_fts', '%s', 5)" % (NAME, q))
        ops.append("SELECT rowid, score, rerank_score FROM embed_hybrid('%s', 'docs_fts', '%s', 5, "
                   "'{\"rerank\": \"ce\", \"rerank_depth\": 8}')" % (NAME, q))
    ops.append("INSERT INTO %s(rowid, text) VALUES (%d, 'a new café text about the late bus')"
               % (NAME, rng.choice([1, 5, 200, 100])))
    ops.append("DELETE FROM %s WHERE rowid = %d" % (NAME, rng.choice([1, 2, 17, 30, 100])))
    ops.append("UPDATE %s SET text = 'river bridge été' WHERE rowid = %d" % (NAME, rng.choice([3, 100])))
    ops.append("INSERT INTO %s(%s, text) VALUES ('build', '{\"lists\": 2}')" % (NAME, NAME))
    ops.append(ops[1])
    ops.append(ops[0])
    return ops


def judge(msg):
    """None when the error message is acceptable, else why not."""
    if not any(a in msg for a in ACCEPT):
        return "names neither the index nor the function"
    for r in REJECT:
        if r in msg:
            return "says %r" % r
    if "UTF-8" in msg and "is damaged" not in msg:  # the fuzzer's own SQL is UTF-8: this is a damaged row
        return "blames the UTF-8 of stored text without saying which shadow table is damaged"
    if len(msg) > 400:
        return "is %d characters long" % len(msg)
    if "\ufffd" in msg or any(ord(ch) < 32 for ch in msg):
        return "holds bytes that are not printable UTF-8"
    return None


def child(case):
    """Runs one case (JSON on stdin); prints one JSON line per operation. Exit status 3: a bad message."""
    con = sqlite3.connect(case["db"], isolation_level=None)
    con.text_factory = bytes
    for m in case["mutations"]:
        try:
            con.execute(m)
        except sqlite3.Error:
            pass  # a change SQLite itself refuses (a constraint): the case runs without it
    con.enable_load_extension(True)
    con.load_extension(case["ext"])
    con.execute("SELECT embed_load('m', ?)", (MODEL,))
    if os.path.isdir(CE):
        con.execute("SELECT embed_load('ce', ?)", (CE,))
    bad = 0
    for op in case["ops"]:
        try:
            con.execute(op).fetchall()
            print(json.dumps({"op": op, "ok": True}), flush=True)
        except UnicodeDecodeError as e:  # Python could not read the message: raw bytes copied into it
            print(json.dumps({"op": op, "error": repr(e.object), "bad": "is not UTF-8"}), flush=True)
            bad += 1
        except sqlite3.Error as e:
            raw = e.args[0] if e.args else ""
            msg = raw if isinstance(raw, str) else repr(raw)
            why = judge(msg)
            print(json.dumps({"op": op, "error": msg, "bad": why}), flush=True)
            if why:
                bad += 1
    return 3 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--iterations", type=int, default=0)
    ap.add_argument("--ext", default=os.environ.get("EMBED_EXT", "./embed.so"))
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--kind", choices=sorted(KINDS), help="only this kind")
    ap.add_argument("--verbose", action="store_true", help="print every case's changes and results")
    ap.add_argument("--stop-after", type=int, default=20, help="stop after this many failures")
    a = ap.parse_args()
    if a.child:
        sys.exit(child(json.load(sys.stdin)))
    ext = os.path.abspath(a.ext)
    if not a.seconds and not a.iterations:
        a.iterations = 50
    work = tempfile.mkdtemp(prefix="index_db.")
    try:
        bases = {}
        for kind in ([a.kind] if a.kind else KINDS):
            bases[kind] = os.path.join(work, kind + ".db")
            build_base(ext, kind, bases[kind])
        kinds = sorted(bases)
        start = time.time()
        passed = failed = i = 0
        while True:
            if a.iterations and i >= a.iterations:
                break
            if a.seconds and time.time() - start >= a.seconds:
                break
            rng = random.Random("%d/%d" % (a.seed, i))
            kind = kinds[i % len(kinds)] if len(kinds) > 1 and rng.random() < 0.5 else rng.choice(kinds)
            db = os.path.join(work, "case.db")
            shutil.copyfile(bases[kind], db)
            base = sqlite3.connect(bases[kind])
            muts = mutations(rng, base)
            base.close()
            ops = operations(kind, rng)
            case = {"db": db, "ext": ext, "mutations": muts, "ops": ops}
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"], input=json.dumps(case),
                               capture_output=True, text=True, errors="replace", timeout=300)
            problems = []
            if a.verbose:
                print("== %d %s\n  %s\n%s" % (i, kind, "\n  ".join(muts), p.stdout))
            if p.returncode not in (0, 3):
                problems.append("exit status %d" % p.returncode)
            if "Sanitizer" in p.stderr or "runtime error" in p.stderr:
                problems.append("sanitizer report")
            for line in p.stdout.splitlines():
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("bad"):
                    problems.append("error of %r %s: %r" % (r["op"], r["bad"], r["error"]))
            if problems:
                failed += 1
                print("FAIL seed %d iteration %d (%s):" % (a.seed, i, kind))
                for pr in problems:
                    print("  " + pr)
                print("  reproduce: index_db.py --seed %d --iterations %d (the last case), or on the %s base:"
                      % (a.seed, i + 1, kind))
                for m in muts:
                    print("    %s;" % m)
                for op in ops:
                    print("    %s;" % op)
                if p.stderr.strip():
                    print("  stderr (last lines):\n    " + "\n    ".join(p.stderr.strip().splitlines()[-25:]))
                if failed >= a.stop_after:
                    i += 1
                    break
            else:
                passed += 1
            i += 1
        print("seed %d: %d iterations in %.0f s" % (a.seed, i, time.time() - start))
        print("%d passed, %d failed" % (passed, failed))
        return 1 if failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
