"""The README tells the truth: every ```sql and ```python snippet runs as written, in README
order, in a folder laid out as the README assumes (./embed, models/all-MiniLM-L6-v2 -- here
the random-weight MiniLM-shaped fixture -- and the repository's tests/ and sql/); a value
written after a statement as `-- <JSON>` is the value it returns (its first row: the one value,
or a JSON array of the row's values); and a plain ``` block right
after a ```sql block shows what its last statement returns (numbers to the digits shown)."""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

from harness import test, EXT, ROOT, FIXTURES

README = os.path.join(ROOT, "README.md")
MODEL_PATH = "models/all-MiniLM-L6-v2"


def blocks():
    """(language, first line number, text) of every fenced block, in order."""
    out, lang, start, lines = [], None, 0, []
    for no, line in enumerate(open(README, encoding="utf-8").read().splitlines(), 1):
        if line.startswith("```"):
            if lang is None:
                lang, start, lines = line[3:].strip(), no + 1, []
            else:
                out.append((lang, start, "\n".join(lines)))
                lang = None
        elif lang is not None:
            lines.append(line)
    assert lang is None, "README: a ``` block is not closed"
    return out


def workdir():
    """A folder as the README's reader has it after `make` and downloading a model."""
    d = tempfile.mkdtemp(prefix="embed-readme-")
    os.symlink(EXT, os.path.join(d, "embed.so"))
    os.makedirs(os.path.join(d, "models"))
    os.symlink(os.path.join(FIXTURES, "models", "minilm-tiny-st"), os.path.join(d, MODEL_PATH))
    for sub in ("tests", "sql", "examples"):
        os.symlink(os.path.join(ROOT, sub), os.path.join(d, sub))
    return d


def statements(text):
    """The block's statements, each with the `-- comment` on its last line (or None)."""
    out, buf = [], ""
    for line in text.splitlines():
        if not buf and line.startswith("."):
            out.append((line.strip(), None))
            continue
        buf += line + "\n"
        if sqlite3.complete_statement(buf):
            last = line.split("--", 1)
            out.append((buf.strip(), last[1].strip() if len(last) > 1 else None))
            buf = ""
    assert not buf.strip(), "an unfinished statement: %r" % buf
    return out


def expected_value(comment):
    """The value a `-- comment` states, when it is JSON (a number, array, ...); else None."""
    if comment is None:
        return None
    try:
        return (json.loads(comment),)
    except ValueError:
        return None


def same(got, want):
    if isinstance(want, float) or isinstance(got, float):
        return abs(float(got) - float(want)) <= 1e-6 * max(1.0, abs(float(want)))
    return got == want


def check_output(rows, names, shown, where):
    """rows and column names against a box the sqlite3 shell printed."""
    table = [[cell.strip() for cell in line.strip().strip("│").split("│")]
             for line in shown.splitlines() if line.strip().startswith("│")]
    if names and table and table[0] == list(names):
        table = table[1:]
    elif names and table and len(table) == len(rows) + 1:
        raise AssertionError("%s: the box's header %s is not the query's columns %s" % (where, table[0], names))
    assert len(table) == len(rows), "%s: %d rows shown, %d returned" % (where, len(table), len(rows))
    for shown_row, row in zip(table, rows):
        assert len(shown_row) == len(row), "%s: %s vs %s" % (where, shown_row, row)
        for cell, value in zip(shown_row, row):
            if isinstance(value, float):
                digits = len(cell.split(".")[1]) if "." in cell else 0
                ok = abs(round(value, digits) - float(cell)) <= 10 ** -digits / 2 + 1e-12
            else:
                ok = str(value) == cell
            assert ok, "%s: shown %r, returned %r" % (where, cell, value)


@test
def every_readme_snippet_runs_as_written():
    d = workdir()
    cwd = os.getcwd()
    os.chdir(d)
    try:
        con = sqlite3.connect(":memory:", isolation_level=None)
        con.enable_load_extension(True)
        con.load_extension("./embed")  # for blocks read before the one that loads it
        all_blocks = blocks()
        ran = checked = 0
        for i, (lang, line, text) in enumerate(all_blocks):
            where = "README.md:%d" % line
            if lang == "python":
                out = subprocess.run([sys.executable, "-c", text], cwd=d, capture_output=True, text=True,
                                     timeout=60)
                assert out.returncode == 0, "%s: %s" % (where, out.stderr)
                ran += 1
                continue
            if lang != "sql":
                continue
            cur, rows = None, None
            for stmt, comment in statements(text):
                if stmt.startswith(".load "):
                    con.load_extension(stmt.split(None, 1)[1])
                    continue
                assert not stmt.startswith("."), "%s: dot-command %r not supported here" % (where, stmt)
                try:
                    cur = con.execute(stmt)
                    rows = cur.fetchall()
                except sqlite3.Error as e:
                    raise AssertionError("%s: %s\n  in: %s" % (where, e, stmt))
                ran += 1
                want = expected_value(comment)
                if want is not None:
                    assert rows, "%s: %s returned no row, the README says %r" % (where, stmt, want[0])
                    got = list(rows[0]) if len(rows[0]) > 1 else rows[0][0]  # a row, or its one value
                    got = json.loads(got) if isinstance(got, str) and got[:1] == "[" else got
                    assert same(got, want[0]) if not isinstance(want[0], list) else \
                        len(got) == len(want[0]) and all(same(a, b) for a, b in zip(got, want[0])), \
                        "%s: %s returned %r, the README says %r" % (where, stmt, got, want[0])
                    checked += 1
            nxt = all_blocks[i + 1] if i + 1 < len(all_blocks) else None
            if nxt and nxt[0] == "" and "│" in nxt[2] and cur is not None:
                check_output(rows, [c[0] for c in cur.description or []], nxt[2], where)
                checked += 1
        assert ran >= 20 and checked >= 4, (ran, checked)
    finally:
        os.chdir(cwd)


@test
def the_readme_uses_one_model_path():
    text = open(README, encoding="utf-8").read()
    paths = set(re.findall(r"embed_load\('[^']*', '([^']*)'", text))
    fixtures = {p for p in paths if p.startswith("tests/fixtures/")}
    assert paths - fixtures == {MODEL_PATH}, paths
    assert "random weights" in text, "the README must say the bundled models have random weights"
