"""The architectures beyond BERT (tests/fixtures/models2: XLM-R, XLM-R in sentence-transformers layout,
BERT with a Unigram tokenizer, NomicBERT, JinaBERT v2, ModernBERT) through SQL, against the golden
references (schema bert-golden-ref/2): ids, tokens, offsets, every vector column of embed_tokens,
every layer given, pooled sentence vectors and the padded batch, within 1e-5."""
import atexit
import json
import os
import shutil
import tempfile

from harness import test, connect, one, floats, assert_close, FIXTURES
from harness import limited_copy as harness_limited_copy

MODELS = ["xlmr-tiny", "xlmr-tiny-st", "bert-unigram-tiny", "nomic-bert-tiny", "jina-bert-v2-tiny",
          "modernbert-tiny"]
MODEL_DIR = os.path.join(FIXTURES, "models2")
TOL = 1e-5
UNK = {m: 3 for m in MODELS[:3]}
UNK.update({"nomic-bert-tiny": 100, "jina-bert-v2-tiny": 100, "modernbert-tiny": 3})
UNK_TEXT = {m: "[UNK]" if UNK[m] == 100 else "<unk>" for m in MODELS}
_refs = {}


def ref(model):
    if model not in _refs:
        with open(os.path.join(MODEL_DIR, "refs", model + ".json")) as f:
            _refs[model] = json.load(f)
        assert _refs[model]["schema"] == "bert-golden-ref/2"
    return _refs[model]


con = connect()
_tmp = tempfile.mkdtemp(prefix="models2-")
atexit.register(shutil.rmtree, _tmp, True)


def limited_copy(model, limit):
    return harness_limited_copy(os.path.join(MODEL_DIR, model), _tmp, limit)


# name in SQL for (model, token limit): the fixture itself at its own limit, a limited copy otherwise
LOADED = {}
for _m in MODELS:
    con.execute("SELECT embed_load(?, ?)", (_m, os.path.join(MODEL_DIR, _m)))
    LOADED[(_m, one(con, "SELECT max_tokens FROM embed_models WHERE name = ?", _m))] = _m
    for _limit in sorted({c["max_length"] for c in ref(_m)["cases"].values()}):
        if (_m, _limit) not in LOADED:
            name = "%s@%d" % (_m, _limit)
            con.execute("SELECT embed_load(?, ?)", (name, limited_copy(_m, _limit)))
            assert one(con, "SELECT max_tokens FROM embed_models WHERE name = ?", name) == _limit, name
            LOADED[(_m, _limit)] = name


def cases(model):
    """(name in SQL, case id, case) for every golden case, under the limit it was made with."""
    for cid in ref(model)["case_ids"]:
        case = ref(model)["cases"][cid]
        yield LOADED[(model, case["max_length"])], cid, case


def make_parity_test(model):
    def parity():
        worst, checked = 0.0, 0
        for name, cid, case in cases(model):
            args = (name, case["text"], case.get("text_pair"))
            ids = json.loads(one(con, "SELECT embed_token_ids(?, ?, ?)", *args))
            assert ids == case["input_ids"], (cid, ids, case["input_ids"])
            rows = con.execute(
                "SELECT position, token_id, token, type_id, start, \"end\", word, token_embedding,"
                " position_embedding, input_embedding, contextual_embedding"
                " FROM embed_tokens(?, ?, ?) ORDER BY position", args).fetchall()
            assert len(rows) == case["seq_len"], (cid, len(rows))
            positions = case.get("position_embeddings")
            for i, r in enumerate(rows):
                what = "%s %s token %d" % (model, cid, i)
                assert r[0] == i and r[1] == case["input_ids"][i], (what, r[:3])
                # an unknown piece: Hugging Face's Unigram names it by its text, the token column
                # by the vocabulary's entry for the id (as test_tokens_unigram_bpe accepts)
                assert r[2] == case["tokens"][i] or (r[1] == UNK[model] and r[2] == UNK_TEXT[model]), (what, r[:3])
                assert r[3] == case["token_type_ids"][i], what
                if case["special_tokens_mask"][i] == 1:
                    assert r[4] is None and r[5] is None and r[6] is None, (what, r[4:7])
                else:
                    assert [r[4], r[5]] == case["offsets"][i], (what, r[4:6], case["offsets"][i])
                    assert r[6] == case["word_ids"][i], (what, r[6], case["word_ids"][i])
                worst = max(worst, assert_close(floats(r[7]), case["word_embeddings"][i], TOL, what + " token_embedding"))
                if positions is None:  # rotary and ALiBi models add no position vector
                    assert r[8] is None, (what, "position_embedding should be NULL")
                else:
                    worst = max(worst, assert_close(floats(r[8]), positions[i], TOL, what + " position_embedding"))
                worst = max(worst, assert_close(floats(r[9]), case["embeddings_output"][i], TOL, what + " input_embedding"))
                worst = max(worst, assert_close(floats(r[10]), case["last_hidden_state"][i], TOL, what + " contextual"))
            checked += 1
        assert checked == len(ref(model)["case_ids"]) >= 24, checked
        print("  %s: %d cases, max abs error %.2e" % (model, checked, worst))
    parity.__name__ = "parity_" + model.replace("-", "_")
    return test(parity)


for _m in MODELS:
    make_parity_test(_m)


@test
def every_layer_through_contextual_embedding():
    # layers[i] is the output of layer i + 1; the references hold all but the last one, which is
    # last_hidden_state (after ModernBERT's final norm)
    for model in MODELS:
        n_layers = ref(model)["num_layers"]
        for name, cid, case in cases(model):
            if "text_pair" in case:
                continue
            assert 1 <= len(case["layers"]) < n_layers, (model, cid)
            for layer, states in enumerate(case["layers"], start=1):
                for i in (0, len(states) // 2, len(states) - 1):
                    got = floats(one(con, "SELECT contextual_embedding(?, ?, ?, ?)", name, case["text"], i, layer))
                    assert_close(got, states[i], TOL, "%s %s layer %d token %d" % (model, cid, layer, i))
            last = len(case["last_hidden_state"]) - 1
            got = floats(one(con, "SELECT contextual_embedding(?, ?, ?, 0)", name, case["text"], last))
            assert_close(got, case["embeddings_output"][last], TOL, "%s %s layer 0" % (model, cid))
            got = floats(one(con, "SELECT contextual_embedding(?, ?, ?, ?)", name, case["text"], last, n_layers))
            assert_close(got, case["last_hidden_state"][last], TOL, "%s %s layer %d" % (model, cid, n_layers))
            got = floats(one(con, "SELECT contextual_embedding(?, ?, ?)", name, case["text"], last))
            assert_close(got, case["last_hidden_state"][last], TOL, "%s %s default layer" % (model, cid))


@test
def sentence_vectors_with_each_pooling():
    for model in MODELS:
        # only xlmr-tiny-st's fixture holds sentence-transformers files (mean pooling + Normalize)
        default_is_normalized = model == "xlmr-tiny-st"
        for name, cid, case in cases(model):
            if "text_pair" in case:
                continue
            text, what = case["text"], "%s %s" % (model, cid)
            want = case["pooled_mean_normalized"] if default_is_normalized else case["pooled_mean"]
            assert_close(floats(one(con, "SELECT embed(?, ?)", name, text)), want, TOL, what + " embed()")
            for pooling, normalize, key in (("cls", "false", "pooled_cls"), ("mean", "true", "pooled_mean_normalized"),
                                            ("mean", "false", "pooled_mean")):
                opts = '{"pooling": "%s", "normalize": %s}' % (pooling, normalize)
                assert_close(floats(one(con, "SELECT embed(?, ?, ?)", name, text, opts)), case[key], TOL,
                             "%s %s" % (what, key))


@test
def padded_batch_rows_equal_the_references():
    # The references' batch is padded to its longest text; every real row must be unchanged by
    # the padding, so embedding the texts one per row in one statement gives the batch's values.
    for model in MODELS:
        batch = ref(model)["batches"]["batch4"]
        name = LOADED[(model, ref(model)["cases"][batch["case_ids"][0]]["max_length"])]
        con.execute("CREATE TEMP TABLE IF NOT EXISTS batch_texts(k INTEGER PRIMARY KEY, t TEXT)")
        con.execute("DELETE FROM batch_texts")
        con.executemany("INSERT INTO batch_texts(k, t) VALUES (?, ?)", enumerate(batch["texts"]))
        got = con.execute("SELECT embed(?, t, '{\"pooling\": \"mean\", \"normalize\": false}'),"
                          " embed(?, t, '{\"pooling\": \"cls\", \"normalize\": false}') FROM batch_texts ORDER BY k",
                          (name, name)).fetchall()
        assert len(got) == len(batch["texts"]) == 4
        for k, (mean, cls) in enumerate(got):
            n = batch["seq_lens"][k]
            assert sum(batch["attention_mask"][k]) == n < batch["padded_len"] or n == batch["padded_len"]
            assert_close(floats(mean), batch["pooled_mean"][k], TOL, "%s batch row %d mean" % (model, k))
            assert_close(floats(cls), batch["pooled_cls"][k], TOL, "%s batch row %d cls" % (model, k))
            ids = json.loads(one(con, "SELECT embed_token_ids(?, ?)", name, batch["texts"][k]))
            assert ids == batch["input_ids"][k][:n], (model, k)
            for i in (0, n - 1):
                assert_close(floats(one(con, "SELECT contextual_embedding(?, ?, ?)", name, batch["texts"][k], i)),
                             batch["last_hidden_state"][k][i], TOL, "%s batch row %d token %d" % (model, k, i))


@test
def model_table_describes_each_model():
    kinds = {"xlmr-tiny": "learned", "xlmr-tiny-st": "learned", "bert-unigram-tiny": "learned",
             "nomic-bert-tiny": "rotary", "jina-bert-v2-tiny": "alibi", "modernbert-tiny": "rotary"}
    for model in MODELS:
        r = ref(model)
        got = con.execute("SELECT architecture, hidden_size, layers, heads, vocab_size, position_kind, weight_type"
                          " FROM embed_models WHERE name = ?", (model,)).fetchone()
        assert got == (r["arch"], r["hidden_size"], r["num_layers"], r["num_heads"], r["vocab_size"], kinds[model],
                       r["weights_dtype"]), (model, got)
