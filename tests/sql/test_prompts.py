"""Prompts (config_sentence_transformers.json), as sentence-transformers applies them: embed() with a
prompt by name, a literal one, the folder's default; embed_index embedding its rows with the
document prompt and its queries with the query prompt (as encode_document / encode_query), in
plain, chunked and hybrid searches. The expected vectors are embed() of the prefixed text by the
same weights in a folder without prompts; distances are computed here from them."""
import json
import math
import os
import shutil
import tempfile

from harness import test, connect, one, floats, assert_close, assert_error, FIXTURES

MINILM = os.path.join(FIXTURES, "models", "minilm-tiny-st")
TMP = tempfile.mkdtemp(prefix="embed-prompts-")
PROMPTS = {"query": "query: ", "document": "passage: ", "other": "represent this: "}
con = connect()


def folder(name, prompts, default=None, include_prompt=True):
    d = os.path.join(TMP, name)
    shutil.copytree(MINILM, d)
    with open(os.path.join(d, "config_sentence_transformers.json"), "w") as f:
        json.dump({"prompts": prompts, "default_prompt_name": default, "similarity_fn_name": "cosine"}, f)
    with open(os.path.join(d, "1_Pooling", "config.json"), "w") as f:
        json.dump({"embedding_dimension": 48, "pooling_mode": "mean", "include_prompt": include_prompt}, f)
    return d


con.execute("SELECT embed_load('pr-plain', ?)", (MINILM,))
con.execute("SELECT embed_load('pr-p', ?)", (folder("p", PROMPTS),))
con.execute("SELECT embed_load('pr-pd', ?)", (folder("pd", PROMPTS, default="other"),))

TEXTS = ["The bus is late again.", "I left my phone on the left side of the table.",
         "Fruit flies like a banana.", "A quiet street at night", "Milk and bread from the shop"]


def plain(text):
    return floats(one(con, "SELECT embed('pr-plain', ?)", text))


def cos_distance(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return 1 - dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@test
def a_prompt_by_name_or_literal_is_put_before_the_text():
    for t in TEXTS:
        assert floats(one(con, "SELECT embed('pr-p', ?, '{\"prompt_name\": \"query\"}')", t)) == plain("query: " + t)
        assert floats(one(con, "SELECT embed('pr-p', ?, '{\"prompt\": \"zz \"}')", t)) == plain("zz " + t)
        # no default prompt: the text as given
        assert floats(one(con, "SELECT embed('pr-p', ?)", t)) == plain(t)


@test
def the_default_prompt_applies_unless_another_or_none_is_asked():
    for t in TEXTS:
        assert floats(one(con, "SELECT embed('pr-pd', ?)", t)) == plain("represent this: " + t)
        assert floats(one(con, "SELECT embed('pr-pd', ?, '{\"prompt\": \"\"}')", t)) == plain(t)
        assert floats(one(con, "SELECT embed('pr-pd', ?, '{\"prompt_name\": \"query\"}')", t)) == plain("query: " + t)


@test
def prompts_are_shown_and_bad_names_are_errors():
    shown = json.loads(one(con, "SELECT prompts FROM embed_models WHERE name = 'pr-p'"))
    assert shown == PROMPTS
    assert one(con, "SELECT prompts FROM embed_models WHERE name = 'pr-plain'") is None
    assert_error(con, "SELECT embed('pr-p', 'x', '{\"prompt_name\": \"nope\"}')", "embed:", "no prompt named",
                 "nope", "query")
    assert_error(con, "SELECT embed('pr-p', 'x', '{\"prompt_name\": \"query\", \"prompt\": \"a\"}')", "embed:",
                 "give one")
    assert_error(con, "SELECT embed('pr-p', 'x', '{\"prompt\": 3}')", "embed:", "\"prompt\" must be a string")
    d = folder("bad-default", PROMPTS, default="missing")
    assert_error(con, "SELECT embed_load('pr-bad', ?)", "config_sentence_transformers.json", "missing", args=(d,))


@test
def the_prompt_changes_the_fingerprint():
    fps = {r[0] for r in con.execute("SELECT fingerprint FROM embed_models WHERE name IN ('pr-plain', 'pr-p', 'pr-pd')")}
    assert len(fps) == 3


@test
def include_prompt_false_leaves_the_prompt_tokens_out_of_the_mean():
    con.execute("SELECT embed_load('pr-pi', ?)", (folder("pi", PROMPTS, include_prompt=False),))
    prompt = "query: "
    skip = one(con, "SELECT count(*) FROM embed_tokens('pr-plain', ?)", prompt) - 1  # as sentence-transformers
    for t in TEXTS:
        rows = [floats(r[0]) for r in con.execute(
            "SELECT contextual_embedding FROM embed_tokens('pr-plain', ?) ORDER BY position", (prompt + t,))]
        kept = rows[skip:]
        mean = [sum(col) / len(kept) for col in zip(*kept)]
        norm = math.sqrt(sum(x * x for x in mean))
        got = floats(one(con, "SELECT embed('pr-pi', ?, '{\"prompt_name\": \"query\"}')", t))
        assert_close(got, [x / norm for x in mean], 2e-6, t)


def make_index(name, options=""):
    con.execute("CREATE VIRTUAL TABLE %s USING embed_index(model = 'pr-p'%s)" % (name, options))
    for i, t in enumerate(TEXTS, 1):
        con.execute("INSERT INTO %s(rowid, text) VALUES (?, ?)" % name, (i, t))


def expected_hits(query, qprefix, dprefix):
    q = plain(qprefix + query)
    return sorted((cos_distance(q, plain(dprefix + t)), i) for i, t in enumerate(TEXTS, 1))


@test
def an_index_embeds_rows_as_documents_and_queries_as_queries():
    make_index("idx")
    for query in ("is the bus late?", "shopping"):
        got = con.execute("SELECT rowid, distance FROM idx WHERE idx MATCH ? AND k = 5", (query,)).fetchall()
        want = expected_hits(query, "query: ", "passage: ")
        assert [r for r, _ in got] == [i for _, i in want], (got, want)
        for (_, d), (w, _) in zip(got, want):
            assert abs(d - w) < 1e-5
    # the text is stored as given, without its prompt
    assert [r[0] for r in con.execute("SELECT text FROM idx ORDER BY rowid")] == TEXTS


@test
def an_index_can_name_other_prompts_or_none():
    make_index("idx2", ", query_prompt = 'none', document_prompt = 'other'")
    got = con.execute("SELECT rowid, distance FROM idx2 WHERE idx2 MATCH 'late bus' AND k = 5").fetchall()
    want = expected_hits("late bus", "", "represent this: ")
    assert [r for r, _ in got] == [i for _, i in want]
    for (_, d), (w, _) in zip(got, want):
        assert abs(d - w) < 1e-5
    assert_error(con, "CREATE VIRTUAL TABLE idx3 USING embed_index(model = 'pr-p', query_prompt = 'nope')",
                 "embed_index", "query_prompt", "nope", "not a prompt")
    assert_error(con, "CREATE VIRTUAL TABLE idx4 USING embed_index(dims = 4, document_prompt = 'query')",
                 "embed_index", "need a model")


@test
def hybrid_search_uses_the_query_prompt():
    make_index("hidx")
    con.execute("CREATE VIRTUAL TABLE hfts USING fts5(body)")
    for i, t in enumerate(TEXTS, 1):
        con.execute("INSERT INTO hfts(rowid, body) VALUES (?, ?)", (i, t))
    rows = con.execute("SELECT rowid, distance FROM embed_hybrid('hidx', 'hfts', 'late bus', 5)").fetchall()
    want = dict((i, d) for d, i in expected_hits("late bus", "query: ", "passage: "))
    assert rows
    for rowid, d in rows:
        if d is not None:
            assert abs(d - want[rowid]) < 1e-5, (rowid, d, want[rowid])


@test
def a_chunked_index_embeds_each_chunk_with_the_document_prompt():
    con.execute("CREATE VIRTUAL TABLE cidx USING embed_index(model = 'pr-p', chunk_tokens = 6, chunk_overlap = 1)")
    long_text = " ".join(TEXTS)
    con.execute("INSERT INTO cidx(rowid, text) VALUES (1, ?)", (long_text,))
    q = plain("query: where is my phone")
    chunks = con.execute("SELECT start, \"end\" FROM embed_chunks('pr-p', ?, '{\"max_tokens\": 6, \"overlap\": 1}')",
                         (long_text,)).fetchall()
    raw = long_text.encode()
    best = min(cos_distance(q, plain("passage: " + raw[s:e].decode())) for s, e in chunks)
    got = con.execute("SELECT distance FROM cidx WHERE cidx MATCH 'where is my phone' AND k = 1").fetchone()[0]
    assert abs(got - best) < 1e-5, (got, best)
