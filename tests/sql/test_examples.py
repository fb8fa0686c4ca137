"""The example application (examples/notes.sql in the sqlite3 shell, examples/notes.py in
Python) runs with the shipped model (models/sqlite-embed-mini), indexes its 300 notes, finds for
each question a note about what it asks, and both give the same answers."""
import os
import shutil
import subprocess
import sys

from harness import test, EXT, ROOT


def run_shell():
    script = open(os.path.join(ROOT, "examples", "notes.sql")).read()
    script = script.replace(".load ./embed", ".load '%s'" % EXT)
    sqlite3 = shutil.which("sqlite3")
    assert sqlite3, "the sqlite3 shell is not installed (scripts/deps.sh installs it)"
    out = subprocess.run([sqlite3, ":memory:"], input=script, cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and not out.stderr, out.stderr
    return out.stdout.splitlines()


def run_python(*extra):
    ext = EXT[:-3] if EXT.endswith(".so") else EXT
    out = subprocess.run([sys.executable, os.path.join("examples", "notes.py"), "--extension", ext, *extra],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@test
def example_application_answers_questions():
    shell = run_shell()
    assert shell[:2] == ["model: mini", "indexed: 300"], shell[:2]
    answers = [line.split("|") for line in shell[2:]]
    assert len(answers) == 5 * 3, answers
    exact = [a for a in answers if a[0] == a[2]]   # a question that is one of the notes finds it first
    assert exact and exact[0][3] == "0.0000", answers
    # The shipped model is trained: each question's nearest note is about what it asks.
    firsts = {a[0]: a[2] for a in reversed(answers)}
    for question, word in [("Was the train late?", "train"), ("Is the printer broken?", "printer"),
                           ("When is the meeting?", "meeting"), ("Did anything happen by the river?", "river")]:
        assert word in firsts[question], (question, firsts[question])
    assert shell == run_python(), "the Python example answers differently from the shell example"


@test
def example_application_with_a_database_file():
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "notes.db")
        first = run_python("--db", db)
        assert run_python("--db", db) == first   # rebuilt from scratch in the same file
        import sqlite3
        con = sqlite3.connect(db)
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        assert {"notes", "notes_idx", "notes_idx_config", "notes_idx_chunks", "notes_idx_rows",
                "notes_idx_pending"} <= names, names
