"""`sqlite-embed plot` as a user gets it (the package installed offline into a fresh venv): the
sinusoidal position table, the learned tables of the shipped model and of a fixture model, and
attention heads, each SVG parsed with xml.etree and checked against an independent count of its
cells (positions x dims from config.json; heads x tokens² with the tokens from embed_token_ids)
and against independent values (the sinusoidal formula in Python's math; the extension's SQL on
a connection of the test's own); bad input gives exit status 2 and a message, no traceback; the
pictures of docs/pictures.md are the ones its commands make. Usage: test_plot.py EMBED_SO."""
import json
import math
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from check import test, run, main, ROOT, FIXTURES

EXT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "embed.so"))
TMP = tempfile.mkdtemp(prefix="embed-plot-")
VENV = os.path.join(TMP, "venv")
CLI = os.path.join(VENV, "bin", "sqlite-embed")
ENV = dict(os.environ, SQLITE_EMBED_SO=EXT, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
MINI = os.path.join(ROOT, "models", "sqlite-embed-mini")       # the shipped model: learned positions
TINY = os.path.join(FIXTURES, "models", "bert-tiny-uncased")     # a golden fixture: learned positions
SVG = "{http://www.w3.org/2000/svg}"
PAGE = os.path.join(ROOT, "docs", "pictures.md")


def cli(*args, ok=True, cwd=TMP):
    return run([CLI] + list(args), ok=ok, env=ENV, cwd=cwd)


def config(folder):
    with open(os.path.join(folder, "config.json")) as f:
        return json.load(f)


def sql(query, *args, models=()):
    """The first row of query, on a connection of the test's own."""
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(EXT)
    for name, folder in models:
        con.execute("SELECT embed_load(?, ?)", (name, folder))
    rows = con.execute(query, args).fetchall()
    con.close()
    return rows


def floats(blob):
    import struct
    return struct.unpack("<%df" % (len(blob) // 4), blob)


def picture(path):
    """(root, maps): the parsed SVG and its heat maps, each {label: [[(value, fill), ...], ...]}
    in row and column order."""
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg", root.tag
    maps = {}
    for g in root.iter(SVG + "g"):
        if g.get("class") != "heatmap":
            continue
        rows = [[(float(r.get("data-v")), r.get("fill")) for r in row.findall(SVG + "rect")]
                for row in g.findall(SVG + "g")]
        assert [int(row.get("data-row")) for row in g.findall(SVG + "g")] == list(range(len(rows)))
        assert int(g.get("data-rows")) == len(rows)
        maps[g.get("data-label")] = rows
    return root, maps


def size(root):
    """The width and height attributes, whole pixels."""
    w, h = root.get("width"), root.get("height")
    assert re.fullmatch(r"\d+", w) and re.fullmatch(r"\d+", h), (w, h)
    assert root.get("viewBox") == "0 0 %s %s" % (w, h)
    return int(w), int(h)


def cells(maps):
    return sum(len(row) for rows in maps.values() for row in rows)


def rgb(fill):
    assert re.fullmatch(r"#[0-9a-f]{6}", fill), fill
    return tuple(int(fill[i:i + 2], 16) for i in (1, 3, 5))


def sinusoid(pos, j, d):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(the same)."""
    angle = pos / 10000 ** ((j - j % 2) / d)
    return math.sin(angle) if j % 2 == 0 else math.cos(angle)


@test
def pip_installs_into_a_fresh_venv_offline():
    run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", VENV])
    run([os.path.join(VENV, "bin", "pip"), "install", "-q", "--no-build-isolation", "--no-index",
         os.path.join(ROOT, "bindings", "python")], env=ENV, cwd=TMP)
    assert os.path.exists(CLI), "no sqlite-embed command in the venv"


@test
def plot_is_listed_in_the_help():
    assert "plot" in cli("--help").stdout
    out = cli("plot", "--help").stdout
    assert "positions" in out and "attention" in out, out
    assert "--layer" in cli("plot", "attention", "--help").stdout


@test
def the_sinusoidal_table_is_the_formula():
    path = os.path.join(TMP, "sines.svg")
    out = cli("plot", "positions", path, "--positions", "50", "--dims", "20")
    assert out.stdout.strip() == "wrote %s: 50 positions x 20 dimensions" % path, out.stdout
    root, maps = picture(path)
    w, h = size(root)
    (rows,) = maps.values()
    assert len(rows) == 50 and all(len(r) == 20 for r in rows) and cells(maps) == 50 * 20
    assert w >= 20 and h >= 50
    for pos in range(50):
        for j in range(20):
            v, fill = rows[pos][j]
            want = sinusoid(pos, j, 20)
            assert abs(v - want) < 6e-4, (pos, j, v, want)
            r, g, b = rgb(fill)
            # the diverging scale: red for +1, blue for -1, white for 0
            if want > 0.5:
                assert r > b, (pos, j, want, fill)
            elif want < -0.5:
                assert b > r, (pos, j, want, fill)
            elif abs(want) < 0.01:
                assert min(r, g, b) >= 250, (pos, j, want, fill)
    # warmer as the value grows
    flat = sorted((v, rgb(f)) for row in rows for v, f in row)
    redness = [c[0] - c[2] for _, c in flat]
    assert all(a <= b + 1 for a, b in zip(redness, redness[1:])), "the colours are not in value order"
    # the defaults: 64 positions x 64 dimensions; the cell of (63, 63) is cos(63 / 10000^(62/64))
    cli("plot", "positions", path)
    _, maps = picture(path)
    (rows,) = maps.values()
    assert cells(maps) == 64 * 64
    assert abs(rows[63][63][0] - sinusoid(63, 63, 64)) < 6e-4


def learned(folder, name, args, positions, dims):
    path = os.path.join(TMP, name + ".svg")
    cli("plot", "positions", path, "--model", folder, *args)
    root, maps = picture(path)
    size(root)
    (rows,) = maps.values()
    assert len(rows) == positions and cells(maps) == positions * dims, (len(rows), cells(maps))
    for pos in (0, 1, positions // 2, positions - 1):
        (blob,) = sql("SELECT position_encoding(?, ?)", name, pos, models=[(name, folder)])[0]
        want = floats(blob)[:dims]
        got = [v for v, _ in rows[pos]]
        assert all(abs(a - b) <= 6e-4 * max(1.0, abs(b)) for a, b in zip(got, want)), (pos, got[:4], want[:4])
    # the model's table is not the sinusoidal one
    assert any(abs(rows[5][j][0] - sinusoid(5, j, config(folder)["hidden_size"])) > 0.05 for j in range(dims))
    return root


@test
def the_fixture_models_learned_table_is_its_position_rows():
    cfg = config(TINY)
    root = learned(TINY, "bert-tiny-uncased", ["--positions", "40"], 40, cfg["hidden_size"])
    assert "learned position table of bert-tiny-uncased" in root.find(SVG + "title").text
    learned(TINY, "bert-tiny-uncased", ["--positions", str(cfg["max_position_embeddings"]), "--dims", "3"],
            cfg["max_position_embeddings"], 3)


@test
def the_shipped_models_learned_table_is_its_position_rows():
    cfg = config(MINI)
    learned(MINI, "sqlite-embed-mini", [], min(64, cfg["max_position_embeddings"]), cfg["hidden_size"])
    learned(MINI, "sqlite-embed-mini", ["--positions", "128", "--dims", "16"], 128, 16)


def token_count(name, folder, text):
    return len(json.loads(sql("SELECT embed_token_ids(?, ?)", name, text, models=[(name, folder)])[0][0]))


def attention(folder, name, text, args, layers, heads):
    path = os.path.join(TMP, "attention-%s.svg" % name)
    cli("plot", "attention", path, "--model", folder, "--text", text, *args)
    root, maps = picture(path)
    size(root)
    n = token_count(name, folder, text)
    assert len(maps) == len(layers) * len(heads), sorted(maps)
    assert cells(maps) == len(layers) * len(heads) * n * n, (cells(maps), n)
    assert sorted(maps) == sorted("layer %d head %d" % (l, h) for l in layers for h in heads)
    for rows in maps.values():
        assert len(rows) == n
        for row in rows:  # a query's weights over the keys sum to 1
            assert abs(sum(v for v, _ in row) - 1) < 2e-3, row
    layer, head = layers[-1], heads[-1]
    want = sql("SELECT query, key, weight FROM embed_attention(?, ?, ?, ?)", name, text, layer, head,
               models=[(name, folder)])
    rows = maps["layer %d head %d" % (layer, head)]
    for q, k, w in want:
        assert abs(rows[q][k][0] - w) < 6e-4, (q, k, rows[q][k], w)
    # the darker the cell, the larger its weight (white for 0)
    top = max(((v, f) for row in rows for v, f in row))
    low = min(((v, f) for row in rows for v, f in row))
    assert sum(rgb(top[1])) < sum(rgb(low[1])), (top, low)
    tokens = [t for (t,) in sql("SELECT token FROM embed_tokens(?, ?) ORDER BY position", name, text,
                                models=[(name, folder)])]
    labels = [t.text for t in root.iter(SVG + "text") if t.get("class") == "query"]
    assert labels == tokens * len(maps), (labels[:n], tokens)
    assert [t.text for t in root.iter(SVG + "text") if t.get("class") == "key"] == tokens * len(maps)
    return tokens


@test
def the_fixture_models_attention_heads_every_layer():
    cfg = config(TINY)
    tokens = attention(TINY, "bert-tiny-uncased", 'a < b & "c"', [], list(range(1, cfg["num_hidden_layers"] + 1)),
                       list(range(cfg["num_attention_heads"])))
    assert "<" in tokens and "&" in tokens and '"' in tokens, tokens  # escaped in the file, read back as written
    # a control character, which XML cannot hold even escaped, in the text (and so in the title)
    attention(TINY, "bert-tiny-uncased", "late\x01 <bus>", ["--layer", "1", "--head", "0"], [1], [0])


@test
def the_shipped_models_attention_one_layer_and_one_head():
    cfg = config(MINI)
    text = "I left my phone on the left side of the table."
    attention(MINI, "sqlite-embed-mini", text, ["--layer", "2"], [2], list(range(cfg["num_attention_heads"])))
    attention(MINI, "sqlite-embed-mini", text, ["--layer", str(cfg["num_hidden_layers"]), "--head", "1"],
              [cfg["num_hidden_layers"]], [1])
    attention(MINI, "sqlite-embed-mini", text, ["--head", "3"], list(range(1, cfg["num_hidden_layers"] + 1)), [3])


def refused(args, message):
    path = os.path.join(TMP, "refused.svg")
    if os.path.exists(path):
        os.remove(path)
    out = cli("plot", *[path if a == "OUT" else a for a in args], ok=False)
    assert out.returncode == 2, (args, out.returncode, out.stderr)
    assert message in out.stderr, (args, message, out.stderr)
    assert "Traceback" not in out.stderr and out.stdout == "", (args, out.stderr)
    assert not os.path.exists(path), args


@test
def bad_input_is_a_usage_error_naming_the_problem():
    refused(["positions", "OUT", "--model", "/nonexistent"], "/nonexistent: no such model folder")
    refused(["attention", "OUT", "--model", "/nonexistent", "--text", "hi"], "/nonexistent: no such model folder")
    refused(["positions", "OUT", "--model", FIXTURES], "not a model folder the extension can load")
    jina = os.path.join(ROOT, "tests", "fixtures", "models2", "jina-bert-v2-tiny")  # ALiBi: no position rows
    refused(["positions", "OUT", "--model", jina], "jina-bert-v2-tiny has no position vectors: ALiBi")
    refused(["positions", "OUT", "--positions", "0"], "--positions must be from 1 to 4096, not 0")
    refused(["positions", "OUT", "--positions", "-3"], "--positions must be from 1 to 4096, not -3")
    refused(["positions", "OUT", "--positions", "5000"], "--positions must be from 1 to 4096, not 5000")
    refused(["positions", "OUT", "--positions", "4096", "--dims", "4096"], "more than 262144: ask for fewer")
    refused(["positions", "OUT", "--dims", "0"], "--dims must be from 1 to 4096, not 0")
    refused(["positions", "OUT", "--positions", "ten"], "invalid int value: 'ten'")
    refused(["positions", "OUT", "--model", TINY, "--positions", "513"],
            "--positions 513: %s has 512 positions" % TINY)
    refused(["positions", "OUT", "--model", MINI, "--dims", "257"], "position vectors have 256 values")
    refused(["positions", os.path.join(TMP, "no", "such", "x.svg")], "no such folder to write the picture into")
    for text in ("", "   ", "\u200b"):
        refused(["attention", "OUT", "--model", TINY, "--text", text], "has no tokens")
    refused(["attention", "OUT", "--model", TINY], "the following arguments are required: --text")
    for layer in ("0", "3"):
        refused(["attention", "OUT", "--model", TINY, "--text", "hi", "--layer", layer],
                "--layer %s: %s has layers 1 to 2" % (layer, TINY))
    for head in ("4", "-1"):
        refused(["attention", "OUT", "--model", MINI, "--text", "hi", "--head", head],
                "--head %s: %s has heads 0 to 3" % (head, MINI))
    refused(["attention", "OUT", "--model", TINY, "--text", " ".join(["word"] * 200)], "more than 128")
    refused([], "the following arguments are required")


def page_commands():
    """The sqlite-embed plot lines of docs/pictures.md's ```sh blocks."""
    text = open(PAGE, encoding="utf-8").read()
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        out += [shlex.split(line, comments=True) for line in block.splitlines() if " plot " in line]
    return out


@test
def the_pages_pictures_are_the_ones_its_commands_make():
    commands = page_commands()
    assert len(commands) >= 4, commands
    images = set(re.findall(r"\]\((img/[^)]+\.svg)\)", open(PAGE, encoding="utf-8").read()))
    made = set()
    for cmd in commands:
        assert cmd[0] == ".venv/bin/sqlite-embed" and cmd[1] == "plot", cmd
        committed = os.path.join(ROOT, cmd[3])
        assert os.path.getsize(committed) < 300 * 1024, (cmd[3], os.path.getsize(committed))
        made.add(os.path.relpath(cmd[3], "docs"))
        fresh = os.path.join(TMP, "page.svg")
        cli(*cmd[1:3], fresh, *cmd[4:], cwd=ROOT)
        root_a, maps_a = picture(committed)
        root_b, maps_b = picture(fresh)
        assert size(root_a) == size(root_b) and sorted(maps_a) == sorted(maps_b), cmd
        for label in maps_a:  # the same values: the arithmetic may differ in the last bits on another CPU
            a = [v for row in maps_a[label] for v, _ in row]
            b = [v for row in maps_b[label] for v, _ in row]
            assert len(a) == len(b) and all(abs(x - y) <= 2e-3 * max(1.0, abs(y)) for x, y in zip(a, b)), \
                (cmd, label)
    assert images == made, (images, made)


if __name__ == "__main__":
    rc = main()
    subprocess.run(["rm", "-rf", TMP])
    sys.exit(rc)
