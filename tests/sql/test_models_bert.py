"""Hugging Face models through SQL, against the golden references (tests/fixtures/models/refs):
ids, every vector column of embed_tokens, every layer, pooled sentence vectors."""
import json
import os
import shutil
import subprocess
import tempfile

from harness import test, connect, one, floats, assert_close, assert_error, run_threads, FIXTURES, EXT

MODELS = ["bert-tiny-uncased", "bert-tiny-prefixed", "bert-tiny-f16", "distilbert-tiny-uncased",
          "distilbert-tiny-sinusoidal", "minilm-tiny-st"]
MODEL_DIR = os.path.join(FIXTURES, "models")
_refs = {}


def ref(model):
    if model not in _refs:
        with open(os.path.join(MODEL_DIR, "refs", model + ".json")) as f:
            _refs[model] = json.load(f)
    return _refs[model]


con = connect()
for _m in MODELS:
    con.execute("SELECT embed_load(?, ?)", (_m, os.path.join(MODEL_DIR, _m)))


def tol(model):
    return 1e-3 if "f16" in model else 1e-4


def sql_cases(model):
    """Cases whose truncation limit is the one the model applies in SQL."""
    limit = one(con, "SELECT max_tokens FROM embed_models WHERE name = ?", model)
    for cid in ref(model)["case_ids"]:
        case = ref(model)["cases"][cid]
        if case["max_length"] == limit or not case["truncated"]:
            yield cid, case


def make_parity_test(model):
    def parity():
        t = tol(model)
        worst = 0.0
        checked = 0
        for cid, case in sql_cases(model):
            args = (model, case["text"], case.get("text_pair"))
            ids = json.loads(one(con, "SELECT embed_token_ids(?, ?, ?)", *args))
            assert ids == case["input_ids"], (cid, ids, case["input_ids"])
            rows = con.execute(
                "SELECT position, token_id, token, type_id, start, \"end\", word, token_embedding,"
                " position_embedding, input_embedding, contextual_embedding"
                " FROM embed_tokens(?, ?, ?) ORDER BY position", args).fetchall()
            assert len(rows) == case["seq_len"], cid
            for i, r in enumerate(rows):
                assert r[1] == case["input_ids"][i] and r[2] == case["tokens"][i], (cid, i, r[:3])
                assert r[3] == case["token_type_ids"][i], (cid, i)
                special = case["special_tokens_mask"][i] == 1
                if special:
                    assert r[4] is None and r[5] is None and r[6] is None, (cid, i, r[4:7])
                else:
                    assert [r[4], r[5]] == case["offsets"][i], (cid, i, r[4:6], case["offsets"][i])
                    assert r[6] == case["word_ids"][i], (cid, i, r[6], case["word_ids"][i])
                worst = max(worst, assert_close(floats(r[7]), case["word_embeddings"][i], t, "%s token %d word emb" % (cid, i)))
                worst = max(worst, assert_close(floats(r[8]), case["position_embeddings"][i], t, "%s position emb" % cid))
                worst = max(worst, assert_close(floats(r[9]), case["embeddings_output"][i], t, "%s input emb" % cid))
                worst = max(worst, assert_close(floats(r[10]), case["last_hidden_state"][i], t, "%s contextual" % cid))
            checked += 1
        assert checked >= 20, checked
        print("  %s: %d cases, max abs error %.2e" % (model, checked, worst))
    parity.__name__ = "parity_" + model.replace("-", "_")
    return test(parity)


for _m in MODELS:
    make_parity_test(_m)


@test
def every_layer_through_contextual_embedding():
    for model in MODELS:
        for cid, case in list(sql_cases(model))[:6]:
            if "text_pair" in case:
                continue
            for layer, states in enumerate(case["layers"], start=1):
                for i in (0, len(states) // 2, len(states) - 1):
                    got = floats(one(con, "SELECT contextual_embedding(?, ?, ?, ?)", model, case["text"], i, layer))
                    assert_close(got, states[i], tol(model), "%s %s layer %d token %d" % (model, cid, layer, i))
            got = floats(one(con, "SELECT contextual_embedding(?, ?, 1, 0)", model, case["text"]))
            assert_close(got, case["embeddings_output"][1], tol(model), "layer 0")
            got = floats(one(con, "SELECT contextual_embedding(?, ?, 1)", model, case["text"]))
            assert_close(got, case["last_hidden_state"][1], tol(model), "default layer")


@test
def sentence_vectors_with_each_pooling():
    for model in MODELS:
        default_is_normalized = model == "minilm-tiny-st"
        for cid, case in sql_cases(model):
            if "text_pair" in case:
                continue
            text, t = case["text"], tol(model)
            default = floats(one(con, "SELECT embed(?, ?)", model, text))
            want = case["pooled_mean_normalized"] if default_is_normalized else case["pooled_mean"]
            assert_close(default, want, t, "%s %s embed()" % (model, cid))
            assert_close(floats(one(con, "SELECT embed(?, ?, '{\"pooling\": \"cls\", \"normalize\": false}')", model, text)),
                         case["pooled_cls"], t, "cls")
            assert_close(floats(one(con, "SELECT embed(?, ?, '{\"pooling\": \"mean\", \"normalize\": true}')", model, text)),
                         case["pooled_mean_normalized"], t, "mean normalized")
            assert_close(floats(one(con, "SELECT embed(?, ?, '{\"pooling\": \"mean\", \"normalize\": false}')", model, text)),
                         case["pooled_mean"], t, "mean")
            mx = [max(col) for col in zip(*case["last_hidden_state"])]
            assert_close(floats(one(con, "SELECT embed(?, ?, '{\"pooling\": \"max\", \"normalize\": false}')", model, text)),
                         mx, t, "max")


@test
def model_table_describes_each_model():
    rows = {r[0]: r[1:] for r in con.execute(
        "SELECT name, architecture, hidden_size, layers, heads, vocab_size, max_positions, max_tokens,"
        " position_kind, pooling, normalize, weight_type FROM embed_models")}
    for model in MODELS:
        r = ref(model)
        got = rows[model]
        assert got[0] == r["arch"] and got[1] == r["hidden_size"] and got[2] == r["num_layers"], got
        assert got[3] == r["num_heads"] and got[4] == r["vocab_size"] and got[5] == r["max_position_embeddings"], got
        st = r["sentence_transformers"]
        assert got[6] == (st["max_seq_length"] if st else 512), got
        assert got[7] == ("sinusoidal" if r.get("sinusoidal_pos_embds") else "learned"), got
        assert got[8] == "mean" and got[9] == (1 if st else 0), got
        assert got[10] == r["weights_dtype"], got


@test
def fingerprints_are_stable_and_content_based():
    fp = dict(con.execute("SELECT name, fingerprint FROM embed_models"))
    # same weights and tokenizer saved with a "bert." prefix: same model, same fingerprint
    assert fp["bert-tiny-uncased"] == fp["bert-tiny-prefixed"]
    assert len({fp[m] for m in MODELS}) == len(MODELS) - 1
    # another process computes the same value
    code = ("import sqlite3, sys; c = sqlite3.connect(':memory:'); c.enable_load_extension(True); "
            "c.load_extension(sys.argv[1]); c.execute('SELECT embed_load(?, ?)', ('m', sys.argv[2])); "
            "print(c.execute('SELECT fingerprint FROM embed_models').fetchone()[0])")
    out = subprocess.run(["/usr/bin/python3", "-c", code, EXT, os.path.join(MODEL_DIR, "minilm-tiny-st")],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == fp["minilm-tiny-st"], (out, fp["minilm-tiny-st"])


@test
def the_two_lefts():
    model = "bert-tiny-uncased"
    rows = con.execute("SELECT position, token_embedding, position_embedding, input_embedding, contextual_embedding"
                       " FROM embed_tokens(?, 'I left my phone on the left side of the table.') WHERE token = 'left'",
                       (model,)).fetchall()
    assert [r[0] for r in rows] == [2, 7]
    a, b = rows
    assert a[1] == b[1], "token embeddings of the two lefts must be equal (a table lookup)"
    assert a[2] != b[2] and a[3] != b[3] and a[4] != b[4]
    assert one(con, "SELECT embed_cosine(?, ?)", a[4], b[4]) < 0.999
    # the same for a word the vocabulary splits into pieces: each piece of the first
    # "шагать" equals the same piece of the second in the table, not in context
    pieces = con.execute("SELECT word, token, token_embedding, contextual_embedding FROM embed_tokens(?, 'шагать шагать')"
                         " WHERE word IS NOT NULL ORDER BY position", (model,)).fetchall()
    first = [p for p in pieces if p[0] == 0]
    second = [p for p in pieces if p[0] == 1]
    assert [p[1] for p in first] == [p[1] for p in second] == ["ш", "##а", "##г", "##а", "##т", "##ь"]
    for x, y in zip(first, second):
        assert x[2] == y[2] and x[3] != y[3]
    # word vectors from pieces: GROUP BY word with embed_mean
    words = con.execute("SELECT word, embed_mean(contextual_embedding) FROM embed_tokens(?, 'шагать шагать')"
                        " WHERE word IS NOT NULL GROUP BY word", (model,)).fetchall()
    assert len(words) == 2 and words[0][1] != words[1][1]


@test
def truncation_keeps_the_final_sep():
    model = "minilm-tiny-st"
    case = ref(model)["cases"]["long_text_st128"]
    ids = json.loads(one(con, "SELECT embed_token_ids(?, ?)", model, case["text"]))
    assert ids == case["input_ids"] and len(ids) == 128 and ids[-1] == 102


@test
def tokenizer_only_folder():
    path = os.path.join(FIXTURES, "tokenizers", "vocab", "bert-base-cased")
    assert one(con, "SELECT embed_load('cased-tok', ?)", path) == "cased-tok"
    assert one(con, "SELECT architecture FROM embed_models WHERE name = 'cased-tok'") == "tokenizer"
    assert one(con, "SELECT count(*) FROM embed_tokens('cased-tok', 'Hello World')") == 4
    assert con.execute("SELECT token, start, \"end\" FROM embed_tokens('cased-tok', 'Hello World') WHERE position = 1").fetchone() == ("Hello", 0, 5)
    assert_error(con, "SELECT token_embedding FROM embed_tokens('cased-tok', 'Hello')", "embed_tokens", "tokenizer only")
    assert_error(con, "SELECT embed('cased-tok', 'Hello')", "embed", "tokenizer only")
    assert_error(con, "SELECT contextual_embedding('cased-tok', 'Hello', 1)", "contextual_embedding", "tokenizer only")
    assert_error(con, "SELECT position_encoding('cased-tok', 1)", "position_encoding", "tokenizer only")
    con.execute("SELECT embed_unload('cased-tok')")


@test
def position_encoding_of_a_model():
    for model in ("bert-tiny-uncased", "distilbert-tiny-sinusoidal"):
        case = ref(model)["cases"]["left_phone"]
        for pos in (0, 5, 13):
            assert_close(floats(one(con, "SELECT position_encoding(?, ?)", model, pos)),
                         case["position_embeddings"][pos], 1e-7, "position %d" % pos)
    assert_error(con, "SELECT position_encoding('bert-tiny-uncased', 512)", "position_encoding", "pos")


@test
def batched_sentence_vectors_equal_single_ones():
    # A padded batch must not change any vector: compare with the golden batch too.
    batch = ref("minilm-tiny-st")["batches"]["batch4"]
    for text, want in zip(batch["texts"], batch["pooled_mean_normalized"]):
        assert_close(floats(one(con, "SELECT embed('minilm-tiny-st', ?)", text)), want, 1e-4, "batch text")


@test
def two_threads_with_their_own_connections_agree_with_one():
    texts = [c["text"] for c in ref("minilm-tiny-st")["cases"].values() if "text_pair" not in c][:12]
    single = [one(con, "SELECT embed('minilm-tiny-st', ?)", t) for t in texts]
    results = {}

    def worker(k):
        c = connect()
        for rep in range(5):
            for i, t in enumerate(texts):
                results[(k, rep, i)] = c.execute("SELECT embed('minilm-tiny-st', ?)", (t,)).fetchone()[0]
        c.close()

    run_threads(2, worker)
    for (k, rep, i), v in results.items():
        assert v == single[i], (k, rep, i)


@test
def load_errors_are_clear():
    src = os.path.join(MODEL_DIR, "bert-tiny-uncased")
    tmp = tempfile.mkdtemp(prefix="embed-test-")
    try:
        def variant(name, mutate):
            d = os.path.join(tmp, name)
            shutil.copytree(src, d)
            mutate(d)
            return d

        def rewrite_config(d, change):
            with open(os.path.join(d, "config.json")) as f:
                cfg = json.load(f)
            change(cfg)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f)

        def truncate(d):
            p = os.path.join(d, "model.safetensors")
            size = os.path.getsize(p)
            with open(p, "r+b") as f:
                f.truncate(size // 2)

        def corrupt_header(d):
            p = os.path.join(d, "model.safetensors")
            with open(p, "r+b") as f:
                f.seek(8)
                f.write(b"#garbage#")

        def huge_header(d):
            p = os.path.join(d, "model.safetensors")
            with open(p, "r+b") as f:
                f.write((10 ** 15).to_bytes(8, "little"))

        cases = [
            ("/nonexistent/model", ("embed_load", "/nonexistent/model: no such folder")),
            (variant("no_tokenizer", lambda d: [os.remove(os.path.join(d, f)) for f in ("tokenizer.json", "vocab.txt")]),
             ("embed_load", "neither tokenizer.json nor vocab.txt")),
            (variant("no_config", lambda d: os.remove(os.path.join(d, "config.json"))), ("embed_load", "config.json")),
            (variant("truncated", truncate), ("embed_load", "model.safetensors")),
            (variant("bad_header", corrupt_header), ("embed_load", "model.safetensors")),
            (variant("huge_header", huge_header), ("embed_load", "model.safetensors")),
            (variant("gpt2", lambda d: rewrite_config(d, lambda c: c.update(model_type="gpt2"))), ("embed_load", "gpt2")),
            (variant("no_hidden", lambda d: rewrite_config(d, lambda c: c.pop("hidden_size"))), ("embed_load", "hidden_size")),
            (variant("wrong_shape", lambda d: rewrite_config(d, lambda c: c.update(intermediate_size=65))), ("embed_load", "shape")),
            (variant("bad_json", lambda d: open(os.path.join(d, "config.json"), "w").write("{not json")), ("embed_load", "config.json")),
        ]
        for i, (path, fragments) in enumerate(cases):
            assert_error(con, "SELECT embed_load(?, ?)", *fragments, args=("broken%d" % i, path))
        assert one(con, "SELECT count(*) FROM embed_models WHERE name LIKE 'broken%'") == 0
        assert_error(con, "SELECT embed_load('bert-tiny-uncased', ?)", "already loaded", args=(cases[1][0],))
        # loading the same folder under the same name again is harmless
        assert one(con, "SELECT embed_load('bert-tiny-uncased', ?)", src) == "bert-tiny-uncased"
    finally:
        shutil.rmtree(tmp)


@test
def bad_text_inputs():
    m = "bert-tiny-uncased"
    assert_error(con, "SELECT embed(?, CAST(x'68656c6c6fff' AS TEXT))", "embed", "UTF-8", args=(m,))
    assert_error(con, "SELECT embed_token_ids(?, CAST(x'c0af' AS TEXT))", "embed_token_ids", "UTF-8", args=(m,))
    assert_error(con, "SELECT * FROM embed_tokens(?, 'ok', CAST(x'ff' AS TEXT))", "embed_tokens", "UTF-8", args=(m,))
    # a number is embedded as SQLite converts it to text, as embed_index takes it; a BLOB is refused
    assert one(con, "SELECT embed(?, 42) = embed(?, '42')", m, m) == 1
    assert_error(con, "SELECT embed(?, x'3432')", "embed", "not a blob", "CAST(x AS TEXT)", args=(m,))
    assert_error(con, "SELECT contextual_embedding(?, 'hello', 1, 3)", "contextual_embedding", "layer", args=(m,))
    assert_error(con, "SELECT contextual_embedding(?, 'hello', 5)", "contextual_embedding", "out of range", args=(m,))
    assert_error(con, "SELECT contextual_embedding(?, 'hello', -1)", "contextual_embedding", "index", args=(m,))
    # a huge input is truncated, not a crash
    big = "word " * 200000
    assert len(floats(one(con, "SELECT embed(?, ?)", m, big))) == 32
    assert one(con, "SELECT count(*) FROM embed_tokens(?, ?)", m, big) == 512
    # empty text: [CLS] [SEP]
    assert json.loads(one(con, "SELECT embed_token_ids(?, '')", m)) == [101, 102]


@test
def truncate_false_refuses_a_text_over_the_limit_with_its_count():
    m = "minilm-tiny-st"
    limit = one(con, "SELECT max_tokens FROM embed_models WHERE name = ?", m)
    assert limit == json.load(open(os.path.join(MODEL_DIR, m, "sentence_bert_config.json")))["max_seq_length"]
    # "word" is one WordPiece token; [CLS] and [SEP] are the other two
    assert one(con, "SELECT count(*) FROM embed_tokens(?, 'word') WHERE start IS NOT NULL", m) == 1
    fits, over = " ".join(["word"] * (limit - 2)), " ".join(["word"] * 600)
    opts = '{"truncate": false}'
    assert one(con, "SELECT embed(?, ?, ?) = embed(?, ?)", m, fits, opts, m, fits) == 1
    assert_error(con, "SELECT embed(?, ?, ?)", "embed: the text has %d tokens, more than model '%s' takes (%d) "
                 "and \"truncate\" is false: embed_chunks cuts it" % (limit + 1, m, limit),
                 args=(m, fits + " word", opts))
    assert_error(con, "SELECT embed(?, ?, ?)", "embed: the text has 602 tokens", args=(m, over, opts))
    # the default, and "truncate": true, embed the first tokens, as sentence-transformers does
    assert one(con, "SELECT embed(?, ?) = embed(?, ?, '{\"truncate\": true}')", m, over, m, over) == 1
    assert one(con, "SELECT embed(?, ?) = embed(?, ?)", m, over, m, " ".join(["word"] * 700)) == 1
    assert_error(con, "SELECT embed(?, 'a', '{\"truncate\": 0}')", "embed: option \"truncate\" must be true or false",
                 args=(m,))
