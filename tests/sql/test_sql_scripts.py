"""The SQL walkthroughs in sql/ run in the sqlite3 shell without an error, and what
sql/positions.sql prints agrees with the rotary formula computed here in double precision."""
import glob
import json
import math
import os
import shutil
import subprocess

from harness import test, EXT, ROOT, FIXTURES, rope_angles, rope_rotate as rotate


def run_script(name, mode="-list"):
    script = open(os.path.join(ROOT, "sql", name)).read()
    sqlite3 = shutil.which("sqlite3")
    assert sqlite3, "the sqlite3 shell is not installed (scripts/deps.sh installs it)"
    # demo.sql indexes the machine's package list: here only the installed packages, for speed
    env = dict(os.environ, EMBED_DEMO_PACKAGES="installed")
    out = subprocess.run([sqlite3, mode, "-noheader", "-cmd", ".load '%s'" % EXT, ":memory:"],
                         input=script, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0 and not out.stderr, (name, out.returncode, out.stderr[:2000])
    return out.stdout.splitlines()


def section(lines, number):
    """The output lines of section '== N.' up to the next section."""
    start = next(i for i, l in enumerate(lines) if l.startswith("== %d." % number))
    rest = lines[start + 1:]
    end = next((i for i, l in enumerate(rest) if l.startswith("== ")), len(rest))
    return [l for l in rest[:end] if l and not l.startswith("   ")]


@test
def every_sql_walkthrough_runs_without_an_error():
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "sql", "*.sql")))
    assert "demo.sql" in names and "positions.sql" in names, names
    for name in names:
        assert len(run_script(name)) > 10, name


@test
def positions_walkthrough_prints_the_rotary_formula():
    lines = run_script("positions.sql")

    rows = [l.split("|") for l in section(lines, 1) if "|" in l]
    hidden = json.load(open(os.path.join(ROOT, "models", "sqlite-embed-mini", "config.json")))["hidden_size"]
    assert [(r[0], r[3]) for r in rows] == [("mini", str(hidden)), ("mini", str(hidden)),
                                           ("nomic-tiny", ""), ("nomic-tiny", "")], rows

    rotated, cos3, sin3 = section(lines, 2)[0].split("|")
    assert all(abs(a - b) < 1e-6 for a, b in zip(json.loads(rotated), rotate([1, 0, 0, 0], 3))), rotated
    assert abs(float(cos3) - math.cos(3)) < 1e-6 and abs(float(sin3) - math.sin(3)) < 1e-6

    scores = [l.split("|") for l in section(lines, 3)]
    assert len(scores) == 6, scores
    for m, n, dist, score in scores:
        m, n = int(m), int(n)
        assert int(dist) == m - n
        expect = sum(a * b for a, b in zip(rotate([1, 2, 3, 4], m), rotate([4, 3, 2, 1], n)))
        assert abs(float(score) - expect) < 1e-3, (m, n, score, expect)
    assert len({s[3] for s in scores if s[2] == "2"}) == 1, scores

    config = json.load(open(os.path.join(FIXTURES, "models2", "nomic-bert-tiny", "config.json")))
    d_head = config["n_embd"] // config["n_head"]
    base = config["rotary_emb_base"]
    for line in section(lines, 4):
        if "[" not in line:
            continue
        pos, values = line.split("|")
        pos, values = int(pos), json.loads(values)
        angles = rope_angles(pos, d_head, base)
        expect = [math.cos(a) for a in angles] + [math.sin(a) for a in angles]
        assert len(values) == d_head and all(abs(a - b) < 1e-6 for a, b in zip(values, expect)), (pos, values)
