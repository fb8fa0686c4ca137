"""MPNet through SQL (tests/fixtures/models3/mpnet-tiny-st, loaded as a plain transformers folder:
its config, weights and tokenizer; and as the sentence-transformers 6 folder it is),
against Hugging Face's references (refs/mpnet-tiny.json, schema golden-ref/3): ids, tokens,
offsets, the embedding output and every layer, mean-pooled normalised vectors against
sentence-transformers' (the long text cut at 384 ids), the relative-position bias and the
attention weights against a recomputation in double, int8 weights near float32."""
import atexit
import json
import math
import os
import shutil
import struct
import tempfile

from harness import test, connect, one, floats, assert_close, safetensors_header, FIXTURES

SRC = os.path.join(FIXTURES, "models3", "mpnet-tiny-st")
TOL = 1e-5
with open(os.path.join(FIXTURES, "models3", "refs", "mpnet-tiny.json")) as _f:
    REF = json.load(_f)
assert REF["schema"] == "golden-ref/3" and REF["arch"] == "mpnet"

_tmp = tempfile.mkdtemp(prefix="mpnet-")
atexit.register(shutil.rmtree, _tmp, True)
PLAIN = os.path.join(_tmp, "mpnet-plain")
os.mkdir(PLAIN)
for _name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
    os.symlink(os.path.join(SRC, _name), os.path.join(PLAIN, _name))

con = connect()
con.execute("SELECT embed_load('mpnet-ref', ?)", (PLAIN,))
con.execute("SELECT embed_load('mpnet-ref8', ?, '{\"weights\": \"int8\"}')", (PLAIN,))
con.execute("SELECT embed_load('mpnet-st6', ?)", (SRC,))
MEAN = '{"pooling": "mean", "normalize": true}'


def short_cases():
    return [(cid, c) for cid, c in REF["cases"].items() if c["kind"] != "long"]


def tensors():
    with open(os.path.join(SRC, "model.safetensors"), "rb") as f:
        data = f.read()
    header, start = safetensors_header(data)
    out = {}
    for name, t in header.items():
        if name != "__metadata__":
            a, b = t["data_offsets"]
            out[name] = (t["shape"], struct.unpack("<%df" % ((b - a) // 4), data[start + a:start + b]))
    return out


def bucket(rel):
    """transformers' MPNetEncoder.relative_position_bucket of rel = key - query, in double."""
    n = -rel
    ret = 16 if n < 0 else 0
    n = abs(n)
    if n < 8:
        return ret + n
    return ret + min(15, 8 + int(math.log(n / 8.0) / math.log(128 / 8.0) * 8))


@test
def ids_tokens_offsets_and_states():
    worst = 0.0
    for cid, case in short_cases():
        text = case["text"]
        assert json.loads(one(con, "SELECT embed_token_ids('mpnet-ref', ?)", text)) == case["input_ids"], cid
        rows = con.execute("SELECT position, token_id, token, start, \"end\", input_embedding, contextual_embedding"
                           " FROM embed_tokens('mpnet-ref', ?) ORDER BY position", (text,)).fetchall()
        assert len(rows) == len(case["input_ids"]), cid
        for i, r in enumerate(rows):
            what = "%s token %d" % (cid, i)
            assert (r[1], r[2]) == (case["input_ids"][i], case["tokens"][i]), (what, r[:3])
            # template specials have no span here; Hugging Face gives them (0, 0)
            assert [r[3], r[4]] == case["offsets"][i] or (r[3] is None and case["offsets"][i] == [0, 0]), what
            worst = max(worst, assert_close(floats(r[5]), case["hidden_states"][0][i], TOL, what + " input"))
            worst = max(worst, assert_close(floats(r[6]), case["last_hidden_state"][i], TOL, what + " contextual"))
    print("  mpnet: %d cases, max abs error %.2e" % (len(short_cases()), worst))


@test
def every_layer_through_contextual_embedding():
    for cid, case in short_cases():
        for layer, states in enumerate(case["hidden_states"]):
            for i in (0, len(states) - 1):
                got = floats(one(con, "SELECT contextual_embedding('mpnet-ref', ?, ?, ?)", case["text"], i, layer))
                assert_close(got, states[i], TOL, "%s layer %d token %d" % (cid, layer, i))


@test
def mean_normalized_vectors_equal_sentence_transformers():
    assert one(con, "SELECT max_tokens FROM embed_models WHERE name = 'mpnet-ref'") == 384
    for cid, case in REF["cases"].items():
        if not case["text"]:
            continue  # an empty text has no vector in SQL
        assert case["st_document_input"] == case["text"]  # no prompt
        got = floats(one(con, "SELECT embed('mpnet-ref', ?, ?)", case["text"], MEAN))
        assert_close(got, case["st_document"], TOL, cid)


@test
def the_bias_is_the_bucket_row_of_every_layer():
    table = tensors()["encoder.relative_attention_bias.weight"]
    assert table[0] == [32, 4]
    for i, j in ((0, 0), (0, 7), (7, 0), (3, 11), (11, 3), (0, 16), (40, 0), (0, 127), (300, 2), (0, 383)):
        want = [table[1][bucket(j - i) * 4 + h] for h in range(4)]
        for layer in ((), (1,), (2,)):
            got = floats(one(con, "SELECT embed_attention_bias('mpnet-ref', ?, ?%s)" % (", ?" * len(layer)), i, j, *layer))
            assert got == [struct.unpack("<f", struct.pack("<f", w))[0] for w in want], (i, j, layer, got, want)


@test
def attention_weights_equal_the_recomputation():
    t = tensors()
    case = REF["cases"]["left_phone"]
    X, n = case["hidden_states"][0], len(case["input_ids"])
    p = "encoder.layer.0.attention.attn."

    def proj(name):
        (o, k), w = t[p + name + ".weight"]
        b = t[p + name + ".bias"][1]
        return [[sum(x[c] * w[r * k + c] for c in range(k)) + b[r] for r in range(o)] for x in X]
    Q, K, bias = proj("q"), proj("k"), t["encoder.relative_attention_bias.weight"][1]
    got = {}
    for h, i, j, w in con.execute("SELECT head, query, key, weight FROM embed_attention('mpnet-ref', ?, 1)",
                                  (case["text"],)):
        got[(h, i, j)] = w
    worst = 0.0
    for h in range(4):
        for i in range(n):
            s = [sum(Q[i][h * 8 + d] * K[j][h * 8 + d] for d in range(8)) / math.sqrt(8) + bias[bucket(j - i) * 4 + h]
                 for j in range(n)]
            e = [math.exp(x - max(s)) for x in s]
            for j in range(n):
                worst = max(worst, abs(got[(h, i, j)] - e[j] / sum(e)))
    assert worst <= TOL, worst


@test
def int8_weights_stay_near_float32():
    assert one(con, "SELECT weights FROM embed_models WHERE name = 'mpnet-ref8'") == "int8"
    low = 1.0
    for cid, case in short_cases():
        if case["text"]:
            low = min(low, one(con, "SELECT 1 - embed_distance(embed('mpnet-ref8', ?, ?), ?, 'cosine')",
                               case["text"], MEAN, struct.pack("<32f", *case["st_document"])))
    assert low > 0.995, low


@test
def model_table_describes_it():
    got = con.execute("SELECT architecture, hidden_size, layers, heads, vocab_size, position_kind"
                      " FROM embed_models WHERE name = 'mpnet-ref'").fetchone()
    c = REF["config"]
    assert got == ("mpnet", c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["vocab_size"],
                   "learned"), got


@test
def the_sentence_transformers_6_folder_gives_its_vectors():
    # modules.json and 1_Pooling/config.json as sentence-transformers 6.0.1 wrote them: mean pooling,
    # Normalize, max_seq_length 384, empty query and document prompts
    assert one(con, "SELECT max_tokens FROM embed_models WHERE name = 'mpnet-st6'") == 384
    for cid, case in REF["cases"].items():
        for which in ("st_document", "st_query"):
            got = floats(one(con, "SELECT embed('mpnet-st6', ?)", case["text"]))
            assert_close(got, case[which], TOL, "%s %s" % (cid, which))
    b = REF["batches"]["batch4"]
    con.execute("CREATE VIRTUAL TABLE mp_idx USING embed_index(model = 'mpnet-st6')")
    for i, t in enumerate(b["texts"]):
        con.execute("INSERT INTO mp_idx(rowid, text) VALUES (?, ?)", (i, t))
    for i, t in enumerate(b["texts"]):
        stored = floats(one(con, "SELECT vector FROM mp_idx WHERE rowid = ?", i))
        assert_close(stored, b["st_query"][i], TOL, t)  # empty prompts: documents equal queries
