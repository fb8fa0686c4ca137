"""sqlite-embed and sqlite-vec in one connection: the same bytes, the same distances."""
import os
import random

from harness import test, connect, one, blob, floats, f32, ROOT

VEC = os.path.join(ROOT, ".deps", "node_modules", "sqlite-vec-linux-x64", "vec0")


def both():
    assert os.path.exists(VEC + ".so"), "sqlite-vec not installed (scripts/deps.sh installs it from npm)"
    con = connect()
    con.load_extension(VEC)
    return con


@test
def both_extensions_load_and_agree_on_distances():
    con = both()
    assert one(con, "SELECT vec_version()").startswith("v")
    rng = random.Random(7)
    for n in (1, 3, 16, 384):
        a = [f32(rng.uniform(-1, 1)) for _ in range(n)]
        b = [f32(rng.uniform(-1, 1)) for _ in range(n)]
        ea, eb = one(con, "SELECT embed_vector(?)", str(a)), one(con, "SELECT embed_vector(?)", str(b))
        ours = one(con, "SELECT embed_distance(?, ?)", ea, eb)
        theirs = one(con, "SELECT vec_distance_cosine(?, ?)", ea, eb)
        assert abs(ours - theirs) < 1e-6, (n, ours, theirs)
        assert abs(one(con, "SELECT embed_distance(?, ?, 'l2')", ea, eb) - one(con, "SELECT vec_distance_l2(?, ?)", ea, eb)) < 1e-5
        assert abs(one(con, "SELECT embed_distance(?, ?, 'l1')", ea, eb) - one(con, "SELECT vec_distance_l1(?, ?)", ea, eb)) < 1e-4


@test
def vectors_are_byte_compatible():
    con = both()
    v = one(con, "SELECT embed_vector('[1.5, -2, 0.25]')")
    assert one(con, "SELECT vec_length(?)", v) == 3
    assert floats(one(con, "SELECT vec_f32(?)", v)) == [1.5, -2, 0.25]
    assert one(con, "SELECT vec_f32('[1.5, -2, 0.25]') = ?", v) == 1
    # each reads the other's output directly, subtype included
    assert one(con, "SELECT vec_length(embed_add('[1,2]', '[3,4]'))") == 2
    assert one(con, "SELECT embed_json(vec_f32('[1,2,3]'))") == "[1,2,3]"
    assert one(con, "SELECT vec_to_json(embed_vector('[1,2]'))") in ("[1.000000,2.000000]", "[1,2]")
