"""Positions that act inside attention, in SQL: embed_rotate (RoPE on a vector) and
position_encoding(model, pos) for rotary and ALiBi models. Expected values are computed here in
double precision from the formulas (rotate-half pairs (i, i + d/2), angles pos * base^(-2i/d)),
never read back from the extension."""
import atexit
import json
import math
import os
import random
import shutil
import tempfile

from harness import test, connect, one, floats, blob, assert_close, assert_error, FIXTURES
from harness import rope_angles as angles, rope_rotate as rotate

MODELS2 = os.path.join(FIXTURES, "models2")
con = connect()
for _m in ("nomic-bert-tiny", "jina-bert-v2-tiny", "modernbert-tiny", "xlmr-tiny"):
    con.execute("SELECT embed_load(?, ?)", ("relpos-" + _m, os.path.join(MODELS2, _m)))
_tmp = tempfile.mkdtemp(prefix="relpos-")
atexit.register(shutil.rmtree, _tmp, True)


def rotated(v, pos, *base):
    return floats(one(con, "SELECT embed_rotate(?, ?%s)" % (", ?" * len(base)), blob(v), pos, *base))


@test
def embed_rotate_equals_the_formula():
    rng = random.Random(12)
    for d in (2, 4, 8, 64, 384):
        v = [rng.uniform(-1, 1) for _ in range(d)]
        for pos in (0, 1, 7, 100, 4095):
            assert_close(rotated(v, pos), rotate(v, pos), 2e-5, "d %d pos %d" % (d, pos))
            assert_close(rotated(v, pos, 160000), rotate(v, pos, 160000.0), 2e-5, "base 160000")
            assert_close(rotated(v, pos, 1000.5), rotate(v, pos, 1000.5), 2e-5, "base 1000.5")
    # position 0 is the identity; a rotation keeps the length
    assert floats(one(con, "SELECT embed_rotate('[1, 2, 3, 4]', 0)")) == [1, 2, 3, 4]
    assert abs(one(con, "SELECT embed_dot(embed_rotate('[1, 2, 3, 4]', 37), embed_rotate('[1, 2, 3, 4]', 37))") - 30) < 1e-4
    # the pairs are (i, i + d/2): at pos 1 with d = 2 the angle is 1 radian
    assert_close(floats(one(con, "SELECT embed_rotate('[1, 0]', 1)")), [math.cos(1), math.sin(1)], 1e-7, "d 2")


@test
def the_dot_product_depends_only_on_the_distance():
    rng = random.Random(5)
    q = [rng.uniform(-1, 1) for _ in range(64)]
    k = [rng.uniform(-1, 1) for _ in range(64)]
    sql = "SELECT embed_dot(embed_rotate(?, ?), embed_rotate(?, ?))"
    for delta in (0, 1, 3, 10, 50):
        values = [one(con, sql, blob(q), m, blob(k), m - delta) for m in (delta, delta + 1, delta + 17, delta + 400, delta + 2000)]
        # and it is the double-precision value of q . R(m - n) k, computed from q and k alone
        want = sum(a * b for a, b in zip(rotate(q, delta), k))
        for got in values:
            assert abs(got - want) < 1e-4, (delta, values, want)
    # different distances give different scores (the test above could not pass with no rotation)
    assert abs(one(con, sql, blob(q), 5, blob(k), 5) - one(con, sql, blob(q), 5, blob(k), 2)) > 1e-3


@test
def the_angles_are_those_of_the_sinusoidal_encoding():
    # PE(pos, 2i) = sin(pos w_i), PE(pos, 2i+1) = cos(pos w_i): rotating the unit vector e_i moves
    # it to cos(pos w_i) e_i + sin(pos w_i) e_(i + d/2)
    d = 16
    for pos in (0, 3, 250):
        pe = floats(one(con, "SELECT position_encoding(?, ?)", pos, d))
        for i in range(d // 2):
            e = [0.0] * d
            e[i] = 1.0
            r = rotated(e, pos)
            assert abs(r[i] - pe[2 * i + 1]) < 1e-6 and abs(r[i + d // 2] - pe[2 * i]) < 1e-6, (pos, i, r, pe)
    # the same, in one query, as the README shows it
    assert one(con, "SELECT round(embed_dot(embed_rotate('[1,0,0,0]', 3), '[1,0,0,0]'), 4) = "
                    "round(json_extract(embed_json(position_encoding(3, 4)), '$[1]'), 4)") == 1


@test
def embed_rotate_nulls_and_errors():
    assert one(con, "SELECT embed_rotate(NULL, 1)") is None
    assert one(con, "SELECT embed_rotate('[1, 2]', NULL)") is None
    assert one(con, "SELECT embed_rotate('[1, 2]', 1, NULL)") is None
    assert_error(con, "SELECT embed_rotate('[1, 2, 3]', 1)", "embed_rotate: the vector has 3 dimensions",
                 "d must be even")
    assert_error(con, "SELECT embed_rotate('[1, 2]', -1)", "embed_rotate: pos must be from 0")
    assert_error(con, "SELECT embed_rotate('[1, 2]', 1.5)", "embed_rotate: pos must be an integer")
    assert_error(con, "SELECT embed_rotate('[1, 2]', 'x')", "embed_rotate:", "pos")
    assert_error(con, "SELECT embed_rotate('[1, 2]', 1, 0)", "embed_rotate: base must be a positive number")
    assert_error(con, "SELECT embed_rotate('[1, 2]', 1, 'big')", "embed_rotate: base must be a positive number")
    assert_error(con, "SELECT embed_rotate('not json', 1)", "embed_rotate:")
    assert_error(con, "SELECT embed_rotate('[1, 2]')", "embed_rotate: expects embed_rotate(v, pos) or "
                 "embed_rotate(v, pos, base)")
    # the result is a vector: the vector functions read it
    assert one(con, "SELECT embed_dims(embed_rotate('[1, 2, 3, 4]', 2))") == 4


def cos_sin(pos, d, base):
    a = angles(pos, d, base)
    return [math.cos(x) for x in a] + [math.sin(x) for x in a]


def config(model):
    with open(os.path.join(MODELS2, model, "config.json")) as f:
        return json.load(f)


@test
def position_encoding_of_a_rotary_model_is_its_cos_and_sin():
    nomic = config("nomic-bert-tiny")
    d_head = nomic["n_embd"] // nomic["n_head"]
    for pos in (0, 1, 9, 733, 8191):
        got = floats(one(con, "SELECT position_encoding('relpos-nomic-bert-tiny', ?)", pos))
        assert_close(got, cos_sin(pos, d_head, nomic["rotary_emb_base"]), 1e-6, "nomic pos %d" % pos)
    modern = config("modernbert-tiny")
    d_head = modern["hidden_size"] // modern["num_attention_heads"]
    for pos in (0, 2, 700):
        got = floats(one(con, "SELECT position_encoding('relpos-modernbert-tiny', ?)", pos))
        assert_close(got, cos_sin(pos, d_head, modern["global_rope_theta"]), 1e-6, "modernbert pos %d" % pos)
    # a rotary fraction below 1 rotates fewer dimensions: the vector is that long
    half = os.path.join(_tmp, "nomic-half")
    os.mkdir(half)
    for name in os.listdir(os.path.join(MODELS2, "nomic-bert-tiny")):
        if name != "config.json":
            os.symlink(os.path.join(MODELS2, "nomic-bert-tiny", name), os.path.join(half, name))
    with open(os.path.join(half, "config.json"), "w") as f:
        json.dump(dict(nomic, rotary_emb_fraction=0.5, rotary_emb_base=500), f)
    con.execute("SELECT embed_load('relpos-nomic-half', ?)", (half,))
    got = floats(one(con, "SELECT position_encoding('relpos-nomic-half', 5)"))
    assert_close(got, cos_sin(5, 4, 500.0), 1e-6, "fraction 0.5")
    # cos and sin are those that embed_rotate uses with the model's base
    one_hot = "[1,0,0,0,0,0,0,0]"
    r = floats(one(con, "SELECT embed_rotate(?, 9, 1000)", one_hot))
    pe = floats(one(con, "SELECT position_encoding('relpos-nomic-bert-tiny', 9)"))
    assert abs(r[0] - pe[0]) < 1e-7 and abs(r[4] - pe[4]) < 1e-7, (r, pe)
    assert_error(con, "SELECT position_encoding('relpos-nomic-bert-tiny', 8192)", "position_encoding: pos must be from 0 to 8191")


@test
def position_encoding_of_an_alibi_model_explains_there_is_none():
    assert_error(con, "SELECT position_encoding('relpos-jina-bert-v2-tiny', 3)",
                 "position_encoding: model 'relpos-jina-bert-v2-tiny' has no position vector: ALiBi adds a "
                 "per-head bias -slope·|i−j| to attention scores instead; see embed_attention_bias")
    # a model with a table still returns its row (XLM-R: row padding_idx + 1 + pos)
    assert one(con, "SELECT embed_dims(position_encoding('relpos-xlmr-tiny', 0))") == 32
