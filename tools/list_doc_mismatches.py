#!/usr/bin/env python3
"""Lists every place where a page's snippets and their shown results disagree, page after page:
tests/sql/test_readme.py's checks, but reporting each mismatch (with the values returned) instead
of stopping at the first. For the day the shipped model changes and its numbers move.

Usage (from the repository root, after make): tools/list_doc_mismatches.py PAGE.md [PAGE.md ...]
   the extension is EMBED_EXT, or ./embed.so
"""
import os
import sqlite3
import subprocess
import sys

os.environ.setdefault("EMBED_EXT", os.path.abspath("embed.so"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "sql"))
import test_readme as T  # noqa: E402


def run_sql(con, where, text):
    """Runs a block's statements; returns the last cursor and its rows."""
    cur = rows = None
    for stmt, comment in T.statements(text):
        if stmt.startswith(".load "):
            con.load_extension(stmt.split(None, 1)[1])
            continue
        try:
            cur = con.execute(stmt)
            rows = cur.fetchall()
        except sqlite3.Error as e:
            print("%s: error %s in %s" % (where, e, " ".join(stmt.split())[:100]))
            cur = None
            continue
        want = T.expected_value(comment)
        ok, got = T.value_matches(rows, want[0]) if want is not None and rows else (True, None)
        if not ok:
            print("%s: the page says %r, the statement returns %r: %s"
                  % (where, want[0], got, " ".join(stmt.split())[:100]))
    return cur, rows


def run(path):
    """Every snippet of one page, in a fresh folder and connection, as test_readme runs them."""
    d, cwd = T.workdir(), os.getcwd()
    name = os.path.relpath(path, T.ROOT)
    os.chdir(d)
    try:
        con = sqlite3.connect(":memory:", isolation_level=None)
        con.enable_load_extension(True)
        all_blocks = T.blocks(path)
        for i, (lang, line, text) in enumerate(all_blocks):
            where = "%s:%d" % (name, line)
            if lang == "python":
                out = subprocess.run([sys.executable, "-c", text], cwd=d, capture_output=True, text=True, timeout=120)
                if out.returncode:
                    print("%s: the Python block fails: %s" % (where, out.stderr[-500:]))
            if lang != "sql":
                continue
            cur, rows = run_sql(con, where, text)
            nxt = all_blocks[i + 1] if i + 1 < len(all_blocks) else None
            if nxt and nxt[0] == "" and "\u2502" in nxt[2] and cur is not None:
                try:
                    T.check_output(rows, [c[0] for c in cur.description or []], nxt[2], where)
                except AssertionError as e:
                    print("%s\n   the rows returned: %r" % (e, rows))
        con.close()
    finally:
        os.chdir(cwd)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for page in sys.argv[1:]:
        run(os.path.abspath(page))
