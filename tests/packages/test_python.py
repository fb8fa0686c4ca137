"""The Python package (bindings/python) as a user gets it: installed offline into a fresh venv with
Debian's setuptools, loaded into sqlite3 and apsw connections (embed_version() equals VERSION and
__version__), the error that names the alternatives, the preload helper it points to, a wheel for
this platform, and the sqlite-embed command end to end: index (its progress output, resuming,
Ctrl-C), search (against SQLite's ORDER BY embed_distance over the source table) and models.
Usage: test_python.py EMBED_SO."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import zipfile

from check import test, run, main, version, ROOT, TINY

EXT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "embed.so"))
TMP = tempfile.mkdtemp(prefix="embed-python-")
VENV = os.path.join(TMP, "venv")
PY = os.path.join(VENV, "bin", "python")
CLI = os.path.join(VENV, "bin", "sqlite-embed")
ENV = dict(os.environ, SQLITE_EMBED_SO=EXT, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
MODEL = "minilm-tiny-st"


def py(code, env=None, ok=True):
    return run([PY, "-c", code], ok=ok, env=env or ENV, cwd=TMP)


def make_notes(path, n):
    """A table of n notes (the 6th body NULL: not indexed)."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
    con.executemany("INSERT INTO notes(id, body) VALUES (?, ?)",
                    [(i, None if i == 6 else "note %d: the %s is %s" % (i, ["bus", "train", "milk"][i % 3],
                                                                      ["late", "early", "gone"][i % 5 % 3]))
                     for i in range(1, n + 1)])
    con.commit()
    con.close()


def cli(*args, ok=True):
    return run([CLI] + list(args), ok=ok, env=ENV, cwd=TMP)


def plain_lines(stderr):
    """The plain counter's lines as (done, total), checked for form."""
    out = []
    for line in stderr.splitlines():
        m = re.fullmatch(r"indexed (\d+)/(\d+) rows \((\d+)%\)", line)
        assert m, "not a progress line: %r" % line
        out.append((int(m.group(1)), int(m.group(2))))
    return out


@test
def pip_installs_into_a_fresh_venv_offline():
    run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", VENV])
    run([os.path.join(VENV, "bin", "pip"), "install", "-q", "--no-build-isolation", "--no-index",
         os.path.join(ROOT, "bindings", "python")], env=ENV, cwd=TMP)
    assert os.path.exists(CLI), "no sqlite-embed command in the venv"


@test
def the_version_is_embed_version_and_the_version_file():
    out = py("import sqlite3, sqlite_embed\n"
             "con = sqlite3.connect(':memory:')\n"
             "sqlite_embed.load(con)\n"
             "print(sqlite_embed.__version__, con.execute('SELECT embed_version()').fetchone()[0])")
    assert out.stdout.split() == [version(), version()], out.stdout


@test
def the_bundled_library_is_the_one_built_and_lies_in_the_venv():
    out = py("import sqlite_embed; print(sqlite_embed.loadable_path()); print(sqlite_embed.preload_path())")
    so, preload = out.stdout.split()
    assert so.startswith(VENV) and preload.startswith(VENV), (so, preload)
    assert open(so, "rb").read() == open(EXT, "rb").read()
    assert os.path.isfile(preload)
    # sqlite3 connections get loading switched off again afterwards
    out = py("import sqlite3, sqlite_embed\ncon = sqlite3.connect(':memory:')\nsqlite_embed.load(con)\n"
             "try:\n    con.load_extension(sqlite_embed.loadable_path())\nexcept sqlite3.OperationalError as e:\n"
             "    print('refused:', e)")
    assert "refused: not authorized" in out.stdout, out.stdout


@test
def apsw_connections_load_it_too():
    out = py("import apsw, sqlite_embed\ncon = apsw.Connection(':memory:')\nsqlite_embed.load(con)\n"
             "print(list(con.cursor().execute(\"SELECT embed_json(embed_add('[1, 2]', '[3, 4]'))\"))[0][0])")
    assert out.stdout.strip() == "[4,6]", out.stdout


@test
def a_sqlite3_without_extension_loading_gets_the_alternatives_named():
    out = py("import sqlite3, sqlite_embed\n"
             "class NoLoading(sqlite3.Connection):\n    enable_load_extension = None  # as pyenv's builds\n"
             "try:\n    sqlite_embed.load(sqlite3.connect(':memory:', factory=NoLoading))\n"
             "except sqlite_embed.ExtensionLoadingUnavailable as e:\n    print(e)\n")
    msg = out.stdout
    for want in ("cannot load extensions", "/usr/bin/python3", "python3-apsw", "apsw.Connection",
                 "LD_PRELOAD=" + os.path.join(VENV, "lib")):
        assert want in msg, (want, msg)


@test
def the_preload_helper_it_names_registers_the_extension_without_loading():
    code = ("import sqlite3\nprint(sqlite3.connect(':memory:').execute('SELECT embed_version()').fetchone()[0])")
    preload = py("import sqlite_embed; print(sqlite_embed.preload_path())").stdout.strip()
    env = {k: v for k, v in ENV.items() if k not in ("EMBED_EXTENSION", "EMBED_MODELS")}
    out = py(code, env=dict(env, LD_PRELOAD=preload))
    assert out.stdout.strip() == version(), out.stdout


@test
def a_wheel_for_this_platform_holds_the_library_version_and_licences():
    dest = os.path.join(TMP, "wheels")
    run([os.path.join(VENV, "bin", "pip"), "wheel", "-q", "--no-build-isolation", "--no-index", "--no-deps",
         "-w", dest, os.path.join(ROOT, "bindings", "python")], env=ENV, cwd=TMP)
    (name,) = os.listdir(dest)
    assert re.fullmatch(r"sqlite_embed-%s-py3-none-linux_%s\.whl" % (re.escape(version()), os.uname().machine),
                        name), name
    files = set(zipfile.ZipFile(os.path.join(dest, name)).namelist())
    for f in ("embed.so", "embed_preload.so", "VERSION", "LICENSE", "LICENSE-MIT", "LICENSE-APACHE", "cli.py",
              "plot.py"):
        assert "sqlite_embed/" + f in files, (f, sorted(files))


@test
def the_command_has_help_and_a_version():
    out = cli("--help")
    for word in ("index", "search", "models", "plot", "examples:"):
        assert word in out.stdout, out.stdout
    assert "resum" in cli("index", "--help").stdout
    assert cli("--version").stdout.strip() == "sqlite-embed %s" % version()
    bad = cli("index", "x.db", "t", "c", "--model", "/nonexistent", ok=False)
    assert bad.returncode != 0 and "/nonexistent: no such model folder" in bad.stderr, bad.stderr


def indexed(db, index):
    con = sqlite3.connect(db)
    con.enable_load_extension(True)
    con.load_extension(EXT)
    rows = con.execute("SELECT rowid, text FROM %s ORDER BY rowid" % index).fetchall()
    con.close()
    return rows


def source(db):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT id, body FROM notes WHERE body IS NOT NULL ORDER BY id").fetchall()
    con.close()
    return rows


@test
def index_embeds_the_column_with_a_plain_counter_and_search_agrees_with_sqlite():
    db = os.path.join(TMP, "notes.db")
    make_notes(db, 300)
    out = cli("index", db, "notes", "body", "--model", TINY, "--batch", "50", "--progress", "plain")
    assert out.stdout.strip().startswith("indexed 299 rows into notes_idx (0 already there) in "), out.stdout
    lines = plain_lines(out.stderr)
    assert lines[0] == (50, 299) and lines[-1] == (299, 299), lines
    assert all(a[0] < b[0] for a, b in zip(lines, lines[1:])), lines
    assert indexed(db, "notes_idx") == source(db)
    # search against SQLite's own ORDER BY over the source table and embed()
    query = "is the bus late?"
    got = [line.split("\t") for line in cli("search", db, "notes_idx", query, "--model", TINY, "-k", "5")
           .stdout.splitlines()]
    con = sqlite3.connect(db)
    con.enable_load_extension(True)
    con.load_extension(EXT)
    con.execute("SELECT embed_load(?, ?)", (MODEL, TINY))
    want = con.execute("SELECT id, embed_distance(embed(?, body), embed(?, ?)) AS d, body FROM notes "
                       "WHERE body IS NOT NULL ORDER BY d, id LIMIT 5", (MODEL, MODEL, query)).fetchall()
    assert [int(r[0]) for r in got] == [w[0] for w in want], (got, want)
    assert all(abs(float(r[1]) - w[1]) < 1e-5 and r[2] == w[2] for r, w in zip(got, want)), (got, want)
    js = [json.loads(line) for line in cli("search", db, "notes_idx", query, "--model", TINY, "-k", "2",
                                           "--json").stdout.splitlines()]
    assert [j["rowid"] for j in js] == [w[0] for w in want[:2]], js
    con.close()


@test
def index_resumes_where_it_stopped():
    db = os.path.join(TMP, "notes.db")  # indexed by the test before
    con = sqlite3.connect(db)
    con.enable_load_extension(True)
    con.load_extension(EXT)
    con.execute("SELECT embed_load(?, ?)", (MODEL, TINY))
    con.execute("DELETE FROM notes_idx WHERE rowid > 200")
    con.commit()
    con.close()
    out = cli("index", db, "notes", "body", "--model", TINY, "--progress", "none")
    assert out.stdout.startswith("indexed 100 rows into notes_idx (199 already there)"), out.stdout
    assert out.stderr == "", out.stderr
    assert indexed(db, "notes_idx") == source(db)


@test
def index_shows_a_tqdm_bar_and_falls_back_to_the_counter_without_tqdm():
    db = os.path.join(TMP, "notes.db")
    out = cli("index", db, "notes", "body", "--model", TINY, "--index", "bar_idx", "--batch", "100",
              "--progress", "bar")
    assert re.search(r"indexing bar_idx: 100%.*299/299", out.stderr), out.stderr
    assert indexed(db, "bar_idx") == source(db)
    code = ("import sys\nsys.modules['tqdm'] = None  # as without python3-tqdm\n"
            "from sqlite_embed.cli import main\n"
            "sys.exit(main(['index', %r, 'notes', 'body', '--model', %r, '--index', 'auto_idx', '--batch', '299']))"
            % (db, TINY))
    out = py(code)
    assert plain_lines(out.stderr) == [(299, 299)], out.stderr


@test
def ctrl_c_stops_index_between_batches_and_a_second_run_finishes():
    db = os.path.join(TMP, "many.db")
    make_notes(db, 6000)
    # SIGINT as a terminal leaves it: a shell's background job (CI's, or `make test &`) ignores it, and
    # Python then installs no KeyboardInterrupt handler
    p = subprocess.Popen([CLI, "index", db, "notes", "body", "--model", TINY, "--batch", "10", "--progress", "plain"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=TMP,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = p.stderr.readline()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert first.startswith("indexed 10/5999 rows"), first
    assert p.returncode == 130, (p.returncode, err)
    m = re.search(r"interrupted after (\d+) rows \(committed\); run the same command to resume", err)
    assert m, err
    assert len(indexed(db, "notes_idx")) == int(m.group(1)) < 5999
    out = cli("index", db, "notes", "body", "--model", TINY, "--progress", "none")
    assert "(%s already there)" % m.group(1) in out.stdout, out.stdout
    assert indexed(db, "notes_idx") == source(db)


def schema(db):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT type, name, sql FROM sqlite_schema ORDER BY name").fetchall()
    con.close()
    return rows


def fails_leaving_no_trace(db, args, message):
    """The command fails with message on stderr, and the database file (or its absence) is as before."""
    before = schema(db) if os.path.exists(db) else None
    out = cli(*args, ok=False)
    assert out.returncode != 0 and message in out.stderr, (out.returncode, out.stderr)
    assert (schema(db) if os.path.exists(db) else None) == before, args


@test
def index_checks_its_arguments_before_it_writes():
    db = os.path.join(TMP, "checks.db")
    make_notes(db, 5)
    # a misspelled column would otherwise be read as the string 'bdy' and indexed five times
    fails_leaving_no_trace(db, ["index", db, "notes", "bdy", "--model", TINY],
                           "sqlite-embed: table notes has no column bdy (its columns: id, body)")
    fails_leaving_no_trace(db, ["index", db, "nots", "body", "--model", TINY],
                           "sqlite-embed: %s has no table nots" % db)
    missing = os.path.join(TMP, "mising.db")
    fails_leaving_no_trace(missing, ["index", missing, "notes", "body", "--model", TINY],
                           "sqlite-embed: %s: no such database file" % missing)
    fails_leaving_no_trace(missing, ["search", missing, "notes_idx", "bus", "--model", TINY],
                           "sqlite-embed: %s: no such database file" % missing)
    fails_leaving_no_trace(db, ["search", db, "notes_idx", "bus", "--model", TINY, "-k", "0"], "-k must be at least 1")
    # a column of another case is the same column, as SQLite reads it
    cli("index", db, "NOTES", "Body", "--model", TINY, "--progress", "none")
    assert indexed(db, "NOTES_idx") == source(db)


@test
def index_reads_blobs_as_utf8_and_numbers_as_sqlite_writes_them():
    db = os.path.join(TMP, "values.db")
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t(v)")
    con.executemany("INSERT INTO t(rowid, v) VALUES (?, ?)",
                    [(1, "text"), (2, "caf\u00e9 bytes".encode("utf-8")), (3, 1e20), (4, 7), (5, 0.1)])
    con.commit()
    want = con.execute("SELECT rowid, CAST(v AS TEXT) FROM t ORDER BY rowid").fetchall()
    con.close()
    cli("index", db, "t", "v", "--model", TINY, "--progress", "none")
    assert indexed(db, "t_idx") == want and want[1][1] == "caf\u00e9 bytes", (indexed(db, "t_idx"), want)
    # a BLOB that is not UTF-8 is refused by its rowid, before anything is written
    con = sqlite3.connect(db)
    con.execute("INSERT INTO t(rowid, v) VALUES (9, ?)", (b"ok \xff\xfe",))
    con.commit()
    con.close()
    fails_leaving_no_trace(db, ["index", db, "t", "v", "--model", TINY, "--index", "u_idx"],
                           "sqlite-embed: t.v of rowid 9 is a blob that is not UTF-8 text (byte 3)")


@test
def models_describes_folders_and_lists_a_databases_indexes():
    out = cli("models", TINY, "--db", os.path.join(TMP, "notes.db"))
    lines = out.stdout.splitlines()
    assert lines[:3] == ["auto_idx\tmodel %s" % MODEL, "bar_idx\tmodel %s" % MODEL, "notes_idx\tmodel %s" % MODEL], lines
    facts = dict(kv.split("=", 1) for kv in lines[3].split())
    cfg = json.load(open(os.path.join(TINY, "config.json")))
    assert facts["name"] == MODEL and facts["architecture"] == "bert", facts
    assert int(facts["hidden_size"]) == cfg["hidden_size"] and int(facts["layers"]) == cfg["num_hidden_layers"], facts


if __name__ == "__main__":
    rc = main()
    subprocess.run(["rm", "-rf", TMP])
    sys.exit(rc)
