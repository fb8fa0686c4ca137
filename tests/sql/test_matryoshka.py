"""Matryoshka dimensions: embed(model, text, '{"dims": n}') and embed_truncate(v, n) against
Hugging Face's pooled vectors (tests/fixtures/models/refs), cut to n and renormalised in double
precision here."""
import json
import math
import os

from harness import test, connect, one, floats, assert_close, assert_error, FIXTURES

MODEL_DIR = os.path.join(FIXTURES, "models")
con = connect()
con.execute("SELECT embed_load('mat-st', ?)", (os.path.join(MODEL_DIR, "minilm-tiny-st"),))
con.execute("SELECT embed_load('mat-bert', ?)", (os.path.join(MODEL_DIR, "bert-tiny-uncased"),))
with open(os.path.join(MODEL_DIR, "refs", "minilm-tiny-st.json")) as f:
    REF = json.load(f)
CASES = [REF["cases"][c] for c in REF["case_ids"] if REF["cases"][c]["kind"] == "single"
         and not REF["cases"][c]["truncated"]][:6]


def cut(v, n, normalize):
    v = v[:n]
    if not normalize:
        return v
    norm = math.sqrt(sum(x * x for x in v))
    return [x / max(norm, 1e-12) for x in v]


@test
def dims_equal_hf_pooled_vector_cut_and_renormalised():
    assert CASES
    for case in CASES:
        for n in (1, 5, 16, 47, 48):
            got = floats(one(con, "SELECT embed('mat-st', ?, json_object('dims', ?))", case["text"], n))
            assert len(got) == n
            assert_close(got, cut(case["pooled_mean"], n, True), 1e-5, case["text"])
            assert abs(sum(x * x for x in got) - 1) < 1e-5


@test
def dims_without_normalisation_is_the_plain_cut():
    for case in CASES:
        got = floats(one(con, "SELECT embed('mat-st', ?, '{\"dims\": 8, \"normalize\": false}')", case["text"]))
        assert_close(got, cut(case["pooled_mean"], 8, False), 1e-5, case["text"])
        got = floats(one(con, "SELECT embed('mat-st', ?, '{\"dims\": 8, \"pooling\": \"cls\"}')", case["text"]))
        assert_close(got, cut(case["pooled_cls"], 8, True), 1e-5, case["text"])


@test
def dims_of_a_model_that_does_not_normalise():
    # bert-tiny-uncased has no sentence-transformers files: mean pooling, no normalisation
    with open(os.path.join(MODEL_DIR, "refs", "bert-tiny-uncased.json")) as f:
        ref = json.load(f)
    case = ref["cases"][ref["case_ids"][0]]
    got = floats(one(con, "SELECT embed('mat-bert', ?, '{\"dims\": 10}')", case["text"]))
    assert_close(got, cut(case["pooled_mean"], 10, False), 1e-5)


@test
def dims_in_a_batch_equal_one_at_a_time():
    con.execute("CREATE TEMP TABLE t(x)")
    con.executemany("INSERT INTO t VALUES (?)", [(c["text"],) for c in CASES])
    rows = con.execute("SELECT x, embed('mat-st', x, '{\"dims\": 12}') FROM t").fetchall()
    for text, v in rows:
        want = next(c for c in CASES if c["text"] == text)
        assert_close(floats(v), cut(want["pooled_mean"], 12, True), 1e-5)
    con.execute("DROP TABLE t")


@test
def embed_truncate_cuts_and_renormalises():
    v = [3.0, 4.0, 12.0, -1.5]
    blob = one(con, "SELECT embed_vector(?)", json.dumps(v))
    assert_close(floats(one(con, "SELECT embed_truncate(?, 2)", blob)), [0.6, 0.8], 1e-7)
    assert_close(floats(one(con, "SELECT embed_truncate(?, 3, 0)", blob)), [3.0, 4.0, 12.0], 0)
    assert_close(floats(one(con, "SELECT embed_truncate(?, 4)", blob)), cut(v, 4, True), 1e-7)
    # JSON input works as for every vector function; the result is a float32 BLOB
    assert one(con, "SELECT typeof(embed_truncate('[1, 2, 3]', 1))") == "blob"
    assert_close(floats(one(con, "SELECT embed_truncate('[0, 0, 5]', 2)")), [0.0, 0.0], 0)


@test
def embed_truncate_of_a_stored_vector_equals_embed_with_dims():
    for case in CASES:
        a = floats(one(con, "SELECT embed_truncate(embed('mat-st', ?), 7)", case["text"]))
        b = floats(one(con, "SELECT embed('mat-st', ?, '{\"dims\": 7}')", case["text"]))
        assert_close(a, b, 1e-6)


@test
def nulls_give_null():
    assert one(con, "SELECT embed_truncate(NULL, 2)") is None
    assert one(con, "SELECT embed_truncate('[1, 2]', NULL)") is None
    assert one(con, "SELECT embed('mat-st', NULL, '{\"dims\": 4}')") is None


@test
def bad_arguments_are_errors():
    assert_error(con, "SELECT embed_truncate('[1, 2]', 3)", "embed_truncate: cannot keep 3 dimensions of a vector of 2")
    assert_error(con, "SELECT embed_truncate('[1, 2]', 0)", "embed_truncate: the dimension count must be from 1")
    assert_error(con, "SELECT embed_truncate('[1, 2]', 'a')", "embed_truncate: the dimension count must be an integer")
    assert_error(con, "SELECT embed_truncate('[1, 2]', 1, 2)", "embed_truncate: normalize must be from 0 to 1")
    assert_error(con, "SELECT embed_truncate('x', 1)", "embed_truncate:")
    assert_error(con, "SELECT embed('mat-st', 'a', '{\"dims\": 49}')", "makes vectors of 48 dimensions")
    for bad in ('0', '-3', '2.5', '"8"', 'null', 'true'):
        assert_error(con, "SELECT embed('mat-st', 'a', '{\"dims\": %s}')" % bad,
                     'embed: option "dims" must be a whole number of dimensions from 1')
    assert_error(con, "SELECT embed('mat-st', 'a', '{\"dim\": 3}')", "known: pooling, normalize, dims")
