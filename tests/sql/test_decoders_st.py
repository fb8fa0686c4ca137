"""Qwen3-Embedding's and EmbeddingGemma's layouts end to end through SQL, each folder as it is
(tests/fixtures/models3: qwen3-tiny-st, qwen3-tiny-causallm, gemma3-tiny-st; their own tokenizers,
sentence-transformers 6 modules, prompts) against Hugging Face's references (refs/*.json, README3):
token ids, every hidden state through contextual_embedding, the query and document embeddings as
sentence-transformers' encode_query / encode_document make them (prompt, last-token or mean
pooling, Dense layers, Normalize), the padded batch's queries, and an embed_index that searches with
the query prompt and stores documents with the document prompt."""
import json
import math
import os

from harness import test, connect, one, floats, assert_close, FIXTURES

M3 = os.path.join(FIXTURES, "models3")
TOL = 1e-5
con = connect()
REFS = {}
for folder, ref in (("qwen3-tiny-st", "qwen3-tiny"), ("qwen3-tiny-causallm", "qwen3-tiny"),
                    ("gemma3-tiny-st", "gemma3-tiny")):
    con.execute("SELECT embed_load(?, ?)", ("dst-" + folder, os.path.join(M3, folder)))
    with open(os.path.join(M3, "refs", ref + ".json")) as f:
        REFS[folder] = json.load(f)
ST = ("qwen3-tiny-st", "gemma3-tiny-st")


def cases(folder):
    return list(REFS[folder]["cases"].items())


@test
def token_ids_equal_hugging_face():
    for folder in REFS:
        for cid, c in cases(folder):
            ids = json.loads(one(con, "SELECT embed_token_ids(?, ?)", "dst-" + folder, c["text"]))
            if c["kind"] == "long":  # cut at the folder's max_seq_length, its last id the appended special
                assert c["input_ids"][:len(ids) - 1] == ids[:-1], (folder, cid)
                continue
            assert ids == c["input_ids"], (folder, cid, ids[:8], c["input_ids"][:8])


@test
def every_hidden_state_equals_transformers():
    for folder in REFS:
        for cid, c in cases(folder):
            if not c.get("hidden_states"):
                continue
            for layer, want in enumerate(c["hidden_states"]):
                for i in (0, len(want) // 2, len(want) - 1):
                    got = floats(one(con, "SELECT contextual_embedding(?, ?, ?, ?)", "dst-" + folder, c["text"], i,
                                     layer))
                    assert_close(got, want[i], TOL, "%s %s layer %d token %d" % (folder, cid, layer, i))


@test
def queries_and_documents_equal_sentence_transformers():
    for folder in ST:
        name = "dst-" + folder
        for cid, c in cases(folder):
            # the strings sentence-transformers encodes are the prompt and the text
            q = json.loads(one(con, "SELECT embed_token_ids(?, ?)", name, c["st_query_input"]))
            d = json.loads(one(con, "SELECT embed_token_ids(?, ?)", name, c["st_document_input"]))
            assert q[:len(c["st_query_ids"])] == c["st_query_ids"] and d[:len(c["st_document_ids"])] == \
                c["st_document_ids"], (folder, cid)
            got_q = floats(one(con, "SELECT embed(?, ?, '{\"prompt_name\": \"query\"}')", name, c["text"]))
            got_d = floats(one(con, "SELECT embed(?, ?, '{\"prompt_name\": \"document\"}')", name, c["text"]))
            assert_close(got_q, c["st_query"], TOL, "%s %s query" % (folder, cid))
            assert_close(got_d, c["st_document"], TOL, "%s %s document" % (folder, cid))


@test
def the_padded_batch_equals_one_at_a_time():
    for folder in ST:
        b = REFS[folder]["batches"]["batch4"]
        name = "dst-" + folder
        for i, t in enumerate(b["texts"]):
            got = floats(one(con, "SELECT embed(?, ?, '{\"prompt_name\": \"query\"}')", name, t))
            assert_close(got, b["st_query_float32"][i], TOL, "%s batch4 %d" % (folder, i))


@test
def an_index_searches_with_the_query_prompt_and_stores_documents_with_the_document_prompt():
    for folder in ST:
        name = "dst-" + folder
        table = "dst_idx_" + folder.split("-")[0]
        con.execute("CREATE VIRTUAL TABLE %s USING embed_index(model = '%s')" % (table, name))
        docs = [c for _, c in cases(folder) if c["kind"] == "single"][:8]
        for i, c in enumerate(docs):
            con.execute("INSERT INTO %s(rowid, text) VALUES (?, ?)" % table, (i, c["text"]))
        q = docs[0]
        got = con.execute("SELECT rowid, distance FROM %s WHERE %s MATCH ? AND k = 8" % (table, table),
                          (q["text"],)).fetchall()
        want = sorted((1 - sum(a * b for a, b in zip(q["st_query"], c["st_document"])), i)
                      for i, c in enumerate(docs))
        assert [r for r, _ in got] == [i for _, i in want], (folder, got, want)
        for (_, dist), (w, _) in zip(got, want):
            assert abs(dist - w) < 1e-5
        stored = floats(one(con, "SELECT vector FROM %s WHERE rowid = 1" % table))
        assert_close(stored, docs[1]["st_document"], TOL, folder)
        assert math.isclose(sum(x * x for x in stored), 1.0, abs_tol=1e-5)
