"""The README and the reference pages in docs/ tell the truth: every ```sql and ```python snippet
runs as written, in the order of its page, in a folder laid out as the README assumes (./embed, ./vec0 (sqlite-vec),
./embed_preload.so, models/sqlite-embed-mini -- the model that comes with the repository -- and
the repository's tests/, sql/ and examples/); a value written after a statement as
`-- <JSON>` is the value it returns (its first row: the one value, or a JSON array of the row's
values); and a plain ``` block right after a ```sql block shows what its last statement returns
(numbers to the digits shown). The README's blocks run in one connection, in order; each page of
docs/ runs in a fresh connection and a fresh folder of its own, so that no page depends on
another. The README stays short (at most 400 lines), and no page cites issue numbers or commit
hashes."""
import glob
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

from harness import test, EXT, ROOT

README = os.path.join(ROOT, "README.md")
DOCS = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
MODEL_PATH = "models/sqlite-embed-mini"   # shipped in the repository: what a fresh clone has
HUB_PATH = "models/all-MiniLM-L6-v2"       # the README's hub model: named in text, never run
README_MAX_LINES = 400


def blocks(path):
    """(language, first line number, text) of every fenced block of a page, in order."""
    out, lang, start, lines = [], None, 0, []
    for no, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
        if line.startswith("```"):
            if lang is None:
                lang, start, lines = line[3:].strip(), no + 1, []
            else:
                out.append((lang, start, "\n".join(lines)))
                lang = None
        elif lang is not None:
            lines.append(line)
    assert lang is None, "%s: a ``` block is not closed" % os.path.relpath(path, ROOT)
    return out


def workdir():
    """A folder as the README's reader has it after cloning and `make`."""
    d = tempfile.mkdtemp(prefix="embed-readme-")
    os.symlink(EXT, os.path.join(d, "embed.so"))
    preload = os.path.join(os.path.dirname(EXT), "embed_preload.so")
    if os.path.exists(preload):  # make builds it beside embed.so
        os.symlink(preload, os.path.join(d, "embed_preload.so"))
    vec0 = os.path.join(ROOT, ".deps", "node_modules", "sqlite-vec-linux-x64", "vec0.so")
    if os.path.exists(vec0):  # sqlite-vec, which docs/coming-from.md loads as ./vec0 (scripts/deps.sh)
        os.symlink(vec0, os.path.join(d, "vec0.so"))
    os.makedirs(os.path.join(d, "models"))
    os.symlink(os.path.join(ROOT, MODEL_PATH), os.path.join(d, MODEL_PATH))
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
    if isinstance(want, (int, float)) and want == 0:
        return got == 0  # a zero on the page is a zero in the shell, not 1.11e-16
    if isinstance(want, float) or isinstance(got, float):
        return abs(float(got) - float(want)) <= 1e-6 * max(1.0, abs(float(want)))
    return got == want


def value_matches(rows, want):
    """(whether the first row is the value a `-- comment` states, the value compared)."""
    got = list(rows[0]) if len(rows[0]) > 1 else rows[0][0]  # a row, or its one value
    got = json.loads(got) if isinstance(got, str) and got[:1] == "[" else got
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(same(a, b) for a, b in zip(got, want)), got
    return same(got, want), got


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


def raise_failure(message):
    raise AssertionError(message)


def run_page(path, fail=raise_failure):
    """Runs every snippet of one page in a fresh folder and connection; returns (ran, checked).
    Each mismatch goes to fail(message): the tests stop at the first, tools/list_doc_mismatches.py
    prints them all and goes on."""
    name = os.path.relpath(path, ROOT)
    d = workdir()
    cwd = os.getcwd()
    os.chdir(d)
    try:
        # Models are the process's: while another suite's connections stay open, its models stay
        # loaded. The page starts without the names it loads or defines, and leaves none behind
        # (a connection of its own does that, so that the page's connection starts bare: a block
        # that uses the extension before the page's `.load ./embed` fails, as in the shell).
        text = open(path, encoding="utf-8").read()
        admin = sqlite3.connect(":memory:")
        admin.enable_load_extension(True)
        admin.load_extension("./embed")
        for model in set(re.findall(r"embed_(?:load|define)\('([^']*)'", text)):
            admin.execute("SELECT embed_unload(?)", (model,))
        before = {m for (m,) in admin.execute("SELECT name FROM embed_models")}
        con = sqlite3.connect(":memory:", isolation_level=None)
        con.enable_load_extension(True)
        all_blocks = blocks(path)
        ran = checked = 0
        for i, (lang, line, text) in enumerate(all_blocks):
            where = "%s:%d" % (name, line)
            if lang == "python":
                out = subprocess.run([sys.executable, "-c", text], cwd=d, capture_output=True, text=True,
                                     timeout=120)
                if out.returncode:
                    fail("%s: %s" % (where, out.stderr))
                ran += 1
                continue
            if lang != "sql":
                continue
            cur, rows = None, None
            for stmt, comment in statements(text):
                if stmt.startswith(".load "):
                    con.load_extension(stmt.split(None, 1)[1])
                    continue
                if stmt.startswith("."):
                    fail("%s: dot-command %r not supported here" % (where, stmt))
                    continue
                try:
                    cur = con.execute(stmt)
                    rows = cur.fetchall()
                except sqlite3.Error as e:
                    fail("%s: %s\n  in: %s" % (where, e, stmt))
                    cur = None
                    continue
                ran += 1
                want = expected_value(comment)
                if want is not None:
                    ok, got = value_matches(rows, want[0]) if rows else (False, "no row")
                    if not ok:
                        fail("%s: %s returned %r, the page says %r" % (where, stmt, got, want[0]))
                    checked += 1
            nxt = all_blocks[i + 1] if i + 1 < len(all_blocks) else None
            if nxt and nxt[0] == "" and "│" in nxt[2] and cur is not None:
                try:
                    check_output(rows, [c[0] for c in cur.description or []], nxt[2], where)
                except AssertionError as e:
                    fail("%s\n   the rows returned: %r" % (e, rows))
                checked += 1
        for (model,) in admin.execute("SELECT name FROM embed_models").fetchall():
            if model not in before:
                admin.execute("SELECT embed_unload(?)", (model,))
        admin.close()
        con.close()
        return ran, checked
    finally:
        os.chdir(cwd)


@test
def every_readme_snippet_runs_as_written():
    ran, checked = run_page(README)
    assert ran >= 20 and checked >= 4, (ran, checked)


@test
def every_docs_page_snippet_runs_as_written():
    expected = {"vectors", "models", "attention", "index", "hybrid", "cluster", "security"}
    pages = {os.path.splitext(os.path.basename(p))[0] for p in DOCS}
    assert expected <= pages, "docs/ lacks %s" % sorted(expected - pages)
    for path in DOCS:
        if os.environ.get("SANITIZE") == "1" and os.path.basename(path) == "cluster.md":
            continue  # its snippets start dqlite nodes, which do not run under the preloaded ASan runtime
        ran, _ = run_page(path)
        assert ran >= 1, "%s has no snippet that runs" % os.path.relpath(path, ROOT)


def model_paths(text):
    return set(re.findall(r"embed_load\('[^']*', '([^']*)'", text))


def run_text(path):
    """The text of a page's blocks that test_readme runs (```sql and ```python)."""
    return "\n".join(text for lang, _, text in blocks(path) if lang in ("sql", "python"))


@test
def the_readme_and_the_docs_use_one_model_path():
    text = open(README, encoding="utf-8").read()
    paths = model_paths(run_text(README))
    fixtures = {p for p in paths if p.startswith("tests/fixtures/")}
    assert paths - fixtures == {MODEL_PATH}, paths
    assert model_paths(text) - fixtures == {MODEL_PATH, HUB_PATH}, "the README shows how to load a hub model"
    assert "random weights" in text, "the README must say the fixture models have random weights"
    assert "for demos, tests and offline use" in text, "the README must say what the shipped model is for"
    assert os.path.isfile(os.path.join(ROOT, MODEL_PATH, "model.safetensors")), "the shipped model is missing"
    for path in DOCS:
        paths = model_paths(run_text(path))
        others = {p for p in paths if not p.startswith(("tests/fixtures/", "tests/references/"))}
        assert others <= {MODEL_PATH}, (os.path.relpath(path, ROOT), others)
        others = model_paths(open(path, encoding="utf-8").read()) - paths
        assert {p for p in others if not p.startswith("tests/")} <= {MODEL_PATH, HUB_PATH}, \
            (os.path.relpath(path, ROOT), others)


# "issue 13", "issues 12 and 13", "(#13)"; a commit hash in backticks or parentheses: 7 to 40 hex
# digits, lowercase as git prints them, with at least one letter and one digit (so that `1000000`
# and `000080FF`, the float32 bits of -inf, are not taken for one)
ISSUE = re.compile(r"\bissues? #?\d+|\(#\d+\)", re.IGNORECASE)
HASH = re.compile(r"[`(]([0-9a-f]{7,40})[`)]")


@test
def the_readme_is_short_and_cites_no_issues_or_commits():
    lines = open(README, encoding="utf-8").read().splitlines()
    assert len(lines) <= README_MAX_LINES, "README.md has %d lines (at most %d)" % (len(lines), README_MAX_LINES)
    for path in [README] + DOCS:
        for no, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
            where = "%s:%d" % (os.path.relpath(path, ROOT), no)
            assert not ISSUE.search(line), "%s names an issue: %s" % (where, line)
            for h in HASH.findall(line):
                assert not (re.search(r"[a-f]", h) and re.search(r"\d", h)), \
                    "%s names a commit (%s): %s" % (where, h, line)


@test
def the_pattern_checks_catch_what_they_are_for():
    assert ISSUE.search("the bounds of issue 13") and ISSUE.search("Issues 12") and ISSUE.search("(#7)")
    assert not ISSUE.search("the tissue 3") and not ISSUE.search("an issue with 2 tables")
    found = HASH.findall("at `de830ff` (631c6f5) but not `000080FF` or (1000000)")
    flagged = [h for h in found if re.search(r"[a-f]", h) and re.search(r"\d", h)]
    assert flagged == ["de830ff", "631c6f5"], found


def slug(heading):
    """GitHub's anchor of a heading: lowercase, punctuation but - and _ dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    out, seen, in_block = set(), {}, False
    for line in open(path, encoding="utf-8").read().splitlines():
        if line.startswith("```"):
            in_block = not in_block
        elif not in_block and line.startswith("#"):
            s = slug(line.lstrip("#"))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


@test
def every_relative_link_of_the_readme_and_the_docs_leads_somewhere():
    for path in [README] + DOCS:
        text = open(path, encoding="utf-8").read()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https: and the like
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            where = "%s: link %s" % (os.path.relpath(path, ROOT), target)
            assert os.path.exists(dest), "%s: no such file" % where
            if anchor and dest.endswith(".md"):
                assert anchor in anchors(dest), "%s: no such heading in %s" % (where, os.path.relpath(dest, ROOT))


@test
def the_readme_lists_every_sql_function_and_table():
    from harness import connect
    con = connect()
    names = {n for (n,) in con.execute("SELECT name FROM pragma_function_list UNION SELECT name FROM pragma_module_list")
             if n.startswith("embed") or n in ("position_encoding", "contextual_embedding")}
    assert {"embed", "embed_index", "embed_hybrid", "position_encoding"} <= names, names
    text = open(README, encoding="utf-8").read()
    table = text[text.index("## SQL reference"):text.index("## Search recipes")]
    missing = sorted(n for n in names if not re.search(r"`%s[(`]" % re.escape(n), table))
    assert not missing, "README's SQL reference lacks %s" % missing
    con.close()
