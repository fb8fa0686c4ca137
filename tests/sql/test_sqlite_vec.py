"""sqlite-embed and sqlite-vec in one connection: the same bytes, the same distances."""
import math
import os
import random

from harness import test, connect, one, blob, floats, f32, assert_error, ROOT

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


@test
def int8_vectors_are_converted_exactly():
    con = both()
    # the reproducer: the 4 bytes of an int8 vector were read as one float32, 1.5399896e-36
    assert one(con, "SELECT embed_json(vec_int8('[1,2,3,4]'))") == "[1,2,3,4]"
    every = list(range(-128, 128))
    assert floats(one(con, "SELECT embed_vector(vec_int8(?))", str(every))) == [float(x) for x in every]
    assert one(con, "SELECT embed_dims(vec_int8('[5, -7, 0]'))") == 3
    rng = random.Random(8)
    for n in (1, 3, 16, 100):
        a = [rng.randint(-128, 127) for _ in range(n)]
        b = [rng.randint(-128, 127) for _ in range(n)]
        ia, ib = "vec_int8('%s')" % a, "vec_int8('%s')" % b
        dot = sum(x * y for x, y in zip(a, b))
        assert one(con, "SELECT embed_dot(%s, %s)" % (ia, ib)) == dot
        assert one(con, "SELECT embed_distance(%s, %s, 'l1')" % (ia, ib)) == sum(abs(x - y) for x, y in zip(a, b))
        l2 = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
        assert abs(one(con, "SELECT embed_distance(%s, %s, 'l2')" % (ia, ib)) - l2) < 1e-9
        # sqlite-vec's own int8 distance agrees
        assert abs(one(con, "SELECT vec_distance_l2(%s, %s)" % (ia, ib)) - l2) < 1e-3
        # an int8 vector mixes with float32 ones and JSON
        assert floats(one(con, "SELECT embed_add(%s, ?)" % ia, blob([0.5] * n))) == [x + 0.5 for x in a]
    con.execute("CREATE TEMP TABLE q(v)")
    con.executemany("INSERT INTO q VALUES (?)", [(str([i, -i]),) for i in range(1, 4)])
    assert floats(one(con, "SELECT embed_sum(vec_int8(v)) FROM q")) == [6, -6]


@test
def bit_vectors_are_refused_where_a_float_vector_is_needed():
    con = both()
    calls = ["embed_vector(%s)", "embed_json(%s)", "embed_dims(%s)", "embed_add(%s, '[1,2,3,4,5,6,7,8]')",
             "embed_scale(%s, 2)", "embed_normalize(%s)", "embed_dot('[1,2,3,4,5,6,7,8]', %s)",
             "embed_cosine(%s, %s)", "embed_distance(%s, '[1,2,3,4,5,6,7,8]', 'l2')", "embed_sum(%s)"]
    for call in calls:
        sql = "SELECT " + call.replace("%s", "vec_bit(x'ff')")
        assert_error(con, sql, call.split("(")[0] + ": argument ",
                     "a sqlite-vec bit vector cannot be used where a float vector is needed")


@test
def stored_int8_vectors_lose_their_type_and_are_rewrapped():
    """A subtype lives only as long as the value is passed along: a table stores the bytes.
    What comes back is a plain BLOB, read as float32; vec_int8(v) gives it its type again."""
    con = both()
    con.execute("CREATE TEMP TABLE s(v)")
    con.execute("INSERT INTO s VALUES (vec_int8('[1,2,3,4]')), (vec_int8('[1,2,3]'))")
    assert [r[0] for r in con.execute("SELECT embed_json(vec_int8(v)) FROM s")] == ["[1,2,3,4]", "[1,2,3]"]
    assert one(con, "SELECT embed_dims(v) FROM s WHERE length(v) = 4") == 1  # 4 bytes: one float32
    assert_error(con, "SELECT embed_json(v) FROM s WHERE length(v) = 3", "embed_json", "multiple of 4",
                 "vec_int8(v)")


@test
def embed_index_takes_int8_and_refuses_bit_vectors():
    con = both()
    con.execute("CREATE VIRTUAL TABLE temp.ix USING embed_index(dims = 4, metric = 'l2')")
    con.execute("INSERT INTO ix(rowid, vector) VALUES (1, vec_int8('[1,2,3,4]'))")
    con.execute("INSERT INTO ix(rowid, vector) VALUES (2, '[0,0,0,1]')")
    assert floats(one(con, "SELECT vector FROM ix WHERE rowid = 1")) == [1, 2, 3, 4]
    assert_error(con, "INSERT INTO ix(rowid, vector) VALUES (3, vec_bit(x'ffffffff'))",
                 "a sqlite-vec bit vector cannot be used where a float vector is needed")
    assert_error(con, "INSERT INTO ix(rowid, vector) VALUES (3, '[]')", "a vector needs at least one dimension")
    rows = con.execute("SELECT rowid, distance FROM ix WHERE ix MATCH vec_int8('[1,2,3,5]') AND k = 2").fetchall()
    assert rows == [(1, 1.0), (2, math.sqrt(1 + 4 + 9 + 16))], rows
