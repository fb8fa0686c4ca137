"""`make demo`'s model-explaining part (sql/demo.sql, run as the Makefile runs it, without the
package search of sql/demo_search.sql) prints what README.md's "The demo" shows, byte for byte;
and every sentence it prints agrees with its numbers, recomputed here from embed_tokens in double
precision with the standard library: for the shipped model, and for two fixture models (random
weights) whose numbers lead to the demo's other sentences, since the shipped model will change."""
import importlib.util
import json
import math
import os
import re
import subprocess
import tempfile

from harness import test, EXT, ROOT, connect, floats

_spec = importlib.util.spec_from_file_location("update_readme_demo",
                                               os.path.join(ROOT, "tools", "update_readme_demo.py"))
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)

DEMO = os.path.join(ROOT, "sql", "demo.sql")
SHIPPED = "models/sqlite-embed-mini"
FIXTURES = ["tests/fixtures/models/bert-tiny-uncased", "tests/fixtures/models/distilbert-tiny-sinusoidal"]
TOL = 0.0005 + 2e-5  # a number printed to 3 decimals against its double-precision recomputation
UPDATE = "/usr/bin/python3 tools/update_readme_demo.py"


def run_demo(model=SHIPPED):
    """The demo's output as the Makefile's command prints it; with another model folder, from a
    copy of sql/demo.sql that loads that folder instead."""
    if model == SHIPPED:
        return tool.demo_output(EXT)
    script = open(DEMO, encoding="utf-8").read()
    assert script.count("'%s'" % SHIPPED) == 1, "sql/demo.sql should load %s once" % SHIPPED
    with tempfile.NamedTemporaryFile("w", suffix=".sql", encoding="utf-8", delete=False) as f:
        f.write(script.replace("'%s'" % SHIPPED, "'%s'" % model))
    try:
        cmd = [".read " + f.name if a == ".read sql/demo.sql" else a for a in tool.demo_command(EXT)]
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        os.unlink(f.name)
    assert out.returncode == 0 and not out.stderr, (model, out.returncode, out.stderr)
    return out.stdout


def demo_sentences():
    """(kind, text) of the sentences sql/demo.sql embeds: kind is the word ('left', 'flies',
    'шагать') or the sense ('verb', 'direction')."""
    sql = open(DEMO, encoding="utf-8").read()
    values = sql[sql.index("INSERT INTO sentences"):]
    values = values[:values.index(";\n")]
    return [(k, t.replace("''", "'")) for k, t in re.findall(r"\('([^']+)', '((?:[^']|'')*)'\)", values)]


def parse(output):
    """The demo's output: each numbered section's text lines and the rows of its box."""
    sections, cur = {}, None
    for line in output.splitlines():
        m = re.match(r"(\d)\. ", line)
        if m:
            cur = sections.setdefault(int(m.group(1)), {"text": [], "rows": []})
        if line.startswith("│"):
            cur["rows"].append([c.strip() for c in line.strip("│").split("│")])
        elif not line[:1] in "┌├└":
            cur["text"].append(line.strip())
    return sections


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def words(con, model, text):
    """The sentence's words, in order, as (lowercased text, pieces): each piece is its token and
    its token, position, input and contextual rows (BLOBs)."""
    out = {}
    raw = text.encode("utf-8")
    for row in con.execute("SELECT word, start, \"end\", token, token_embedding, position_embedding, input_embedding,"
                           " contextual_embedding FROM embed_tokens(?, ?) WHERE word IS NOT NULL ORDER BY position",
                           (model, text)):
        w = out.setdefault(row[0], {"start": row[1], "end": row[2], "pieces": []})
        w["end"] = row[2]
        w["pieces"].append(row[3:])
    return [(raw[w["start"]:w["end"]].decode("utf-8").lower(), w["pieces"]) for _, w in sorted(out.items())]


def check_claims(output, model):
    """Every sentence of the output against the numbers, recomputed; returns the branches taken."""
    s = parse(output)
    assert sorted(s) == [1, 2, 3], "sections %s" % sorted(s)
    sentences = demo_sentences()
    con = connect()
    name = "demo_check"
    con.execute("SELECT embed_unload(?)", (name,))
    con.execute("SELECT embed_load(?, ?)", (name, os.path.join(ROOT, model)))
    try:
        # 1. the lesson model: "bus" has one token row, two position rows, inputs their sums
        header, table = s[1]["rows"][0], s[1]["rows"][1:]
        assert header == ["sentence", "position", "token_row", "position_row", "input"], header
        assert len(table) == 2 and table[0][2] == table[1][2] and table[0][3] != table[1][3], table
        for row in table:
            tok, pos, inp = (json.loads(c) for c in row[2:])
            assert [a + b for a, b in zip(tok, pos)] == inp and len(tok) == 3, row
        assert table[0][4] != table[1][4], table

        # 2. a word and its repeat, level by level
        config = json.load(open(os.path.join(ROOT, model, "config.json")))
        layers = config.get("num_hidden_layers", config.get("n_layers"))
        dims = config.get("hidden_size", config.get("dim"))
        text = " ".join(s[2]["text"])
        assert "(%s, %d layers, %d dimensions)" % (config["model_type"], layers, dims) in text, text
        cols = s[2]["rows"][0]
        assert cols[1:] == ["left", "flies", "шагать"], cols
        shown = {cols[j]: [float(r[j]) for r in s[2]["rows"][1:]] for j in range(1, 4)}
        equal = {}
        for word, sentence in [(k, t) for k, t in sentences if k in shown]:
            assert '"%s"' % sentence in text, "the demo names %r but embeds %r" % (text, sentence)
            occurrences = [p for w, p in words(con, name, sentence) if w == word]
            assert len(occurrences) == 2 and len(occurrences[0]) == len(occurrences[1]), (word, occurrences)
            pairs = list(zip(*occurrences))
            if word == "шагать":
                tokens = " ".join(p[0] for p in occurrences[0])
                assert ("%d pieces each, %s: its column is the mean over %d pairs" % (len(pairs), tokens, len(pairs))
                        if len(pairs) > 1 else "one piece each") in text, text
            for level in range(4):
                mean = sum(cosine(floats(a[level + 1]), floats(b[level + 1])) for a, b in pairs) / len(pairs)
                assert abs(shown[word][level] - mean) <= TOL, (model, word, level, shown[word][level], mean)
                equal.setdefault(level, []).append(all(a[level + 1] == b[level + 1] for a, b in pairs))
        assert "contextual (after %d layers)" % layers in [r[0] for r in s[2]["rows"]], s[2]["rows"]
        assert all(equal[0]), "equal pieces should have equal token rows (a lookup): %s" % equal

        def verdict(level):
            if all(equal[level]):
                return "are equal"
            return "differ" if max(v[level] for v in shown.values()) < 1 else "barely differ"
        first = "The token rows %s%s, the position rows %s, so the inputs %s." % (
            verdict(0), " (one row per word)" if verdict(0) == "are equal" else "", verdict(1), verdict(2))
        hows = {w: "less" if v[3] > v[2] else "more" if v[3] < v[2] else "as much as" for w, v in shown.items()}
        if verdict(3) == "are equal":
            second = "are equal."
        elif len(set(hows.values())) == 1:
            second = "%s, %s than the inputs do." % (verdict(3), hows["left"])
        else:
            order = []  # each way, in the order of the words, with its words
            for w in shown:
                order += [hows[w]] if hows[w] not in order else []
            groups = ["%s %s" % (", ".join(w for w in shown if hows[w] == h), h.replace("as much as", "equally"))
                      for h in order]
            second = "%s (%s than the inputs)." % (verdict(3), "; ".join(groups))
        assert first in s[2]["text"], (first, s[2]["text"])
        # the sentence may go on over two lines (a long list of words): compare the lines joined
        assert "Attention mixes in the neighbours: the contextual vectors " + second in " ".join(s[2]["text"]), \
            (second, s[2]["text"])

        # 3. the senses: mean cosines within each sense and across, then the verdict
        text = " ".join(s[3]["text"])
        senses = [(k, t) for k, t in sentences if k in ("verb", "direction")]
        for sense in ("verb", "direction"):
            these = [t for k, t in senses if k == sense]
            assert "each in %d sentences" % len(these) in text and '"%s"' % these[0] in text, (sense, text)
        vecs = [(k, floats([p for w, p in words(con, name, t) if w == "left"][0][0][4])) for k, t in senses]
        sums = {}
        for i, (ka, va) in enumerate(vecs):
            for kb, vb in vecs[i + 1:]:
                sums.setdefault(ka if ka == kb else "across", []).append(cosine(va, vb))
        mean = {k: sum(v) / len(v) for k, v in sums.items()}
        m = re.search(r"is (\S+) within the verb, (\S+) within the direction, (\S+) across the two senses\.", text)
        assert m, text
        printed = dict(zip(("verb", "direction", "across"), map(float, m.groups())))
        for k in printed:
            assert abs(printed[k] - mean[k]) <= TOL, (model, k, printed[k], mean[k])
        closer = {k: printed[k] > printed["across"] for k in ("verb", "direction")}
        for k in closer:  # the printed comparison is the unrounded one, unless they round alike
            if abs(mean[k] - mean["across"]) > 0.001:
                assert closer[k] == (mean[k] > mean["across"]), (model, k, mean)
        if all(closer.values()):
            margin = round(min(printed["verb"], printed["direction"]) - printed["across"], 3)
            want = ("Each sense's \"left\"s are closer to each other than to the other sense's: this model's "
                    "vectors separate the two senses here (by %s in mean cosine at least)." % margin)
        else:
            one = [k for k in closer if closer[k]]
            if one:
                other = "direction" if one[0] == "verb" else "verb"
                want = "The %s \"left\"s are closer to each other than across, the %s ones are not:" % (one[0], other)
            else:
                want = "Neither sense's \"left\"s are closer to each other than across:"
            want += " this model does not tell them apart (models trained to fill in a missing word learn to)."
        assert want in text, (model, want, text)
        return {("apart" if all(closer.values()) else "not apart"),
                ("mixed" if len(set(hows.values())) > 1 else "uniform")}
    finally:
        con.execute("SELECT embed_unload(?)", (name,))
        con.close()


@test
def the_readme_shows_what_make_demo_prints():
    out = run_demo()
    text = open(tool.README, encoding="utf-8").read()
    start, end = tool.block_span(text)
    shown = text[start:end]
    if out != shown:
        a, b = shown.splitlines(), out.splitlines()
        i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        raise AssertionError("README.md's demo block is not what `make demo` prints: run %s if the change is meant "
                             "(a new model, a new sql/demo.sql); line %d: README %r, demo %r"
                             % (UPDATE, i + 1, a[i] if i < len(a) else None, b[i] if i < len(b) else None))


@test
def the_demo_runs_its_model_part_then_the_search():
    cmd = tool.demo_command(EXT)
    assert cmd[1:] == ["-box", ":memory:", ".load %s" % EXT, ".read sql/demo.sql"], cmd
    assert os.path.isfile(os.path.join(ROOT, "sql", "demo_search.sql"))
    assert len(open(DEMO, encoding="utf-8").read().splitlines()) <= 600


@test
def every_sentence_of_the_demo_agrees_with_its_numbers():
    branches = check_claims(run_demo(), SHIPPED)
    for model in FIXTURES:
        branches |= check_claims(run_demo(model), model)
    # the fixtures' numbers take the other sentences, so that those are checked too
    assert branches == {"apart", "not apart", "mixed", "uniform"}, branches
