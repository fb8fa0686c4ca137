"""Vector functions: hand-checked cases, random vectors against double precision,
and every kind of bad input."""
import json
import math
import random
import struct

from harness import test, connect, one, blob, floats, f32, assert_close, assert_error

con = connect()
rng = random.Random(20261130)


def rand_vec(n):
    return [f32(rng.uniform(-3, 3)) for _ in range(n)]


@test
def hand_checked_cases():
    assert one(con, "SELECT embed_json(embed_vector('[1, 0, 2]'))") == "[1,0,2]"
    assert floats(one(con, "SELECT embed_vector('[1, 0, 2]')")) == [1.0, 0.0, 2.0]
    assert one(con, "SELECT embed_dims('[1, 0, 2]')") == 3
    assert one(con, "SELECT embed_dims(?)", blob([1, 2, 3, 4])) == 4
    assert floats(one(con, "SELECT embed_add('[1,2,3]', '[10,20,30]')")) == [11, 22, 33]
    assert floats(one(con, "SELECT embed_sub('[1,2,3]', '[10,20,30]')")) == [-9, -18, -27]
    assert floats(one(con, "SELECT embed_scale('[1,-2,3]', 2)")) == [2, -4, 6]
    assert floats(one(con, "SELECT embed_scale('[1,-2,3]', 0.5)")) == [0.5, -1, 1.5]
    assert floats(one(con, "SELECT embed_normalize('[3, 4]')")) == [f32(0.6), f32(0.8)]
    assert floats(one(con, "SELECT embed_normalize('[0, 0]')")) == [0, 0]
    assert one(con, "SELECT embed_dot('[1,2,3]', '[4,5,6]')") == 32
    assert one(con, "SELECT embed_cosine('[1,0]', '[0,1]')") == 0
    assert abs(one(con, "SELECT embed_cosine('[1,1]', '[2,2]')") - 1) < 1e-12
    assert one(con, "SELECT embed_distance('[1,0]', '[0,1]')") == 1
    assert one(con, "SELECT embed_distance('[1,0]', '[-1,0]', 'cosine')") == 2
    assert one(con, "SELECT embed_distance('[0,0]', '[3,4]', 'l2')") == 5
    assert one(con, "SELECT embed_distance('[1,-1]', '[3,4]', 'l1')") == 7
    assert one(con, "SELECT embed_distance('[1,2]', '[3,4]', 'dot')") == -11


VECTOR_CALLS = ["embed_vector(%s)", "embed_json(%s)", "embed_dims(%s)", "embed_add(%s, '[1]')",
                "embed_sub('[1]', %s)", "embed_scale(%s, 2)", "embed_normalize(%s)", "embed_dot(%s, '[1]')",
                "embed_cosine('[1]', %s)", "embed_distance(%s, '[1]')", "embed_distance('[1]', %s, 'l2')",
                "embed_sum(%s)", "embed_mean(%s)"]


@test
def zero_dimensions_are_an_error():
    # the reproducer: embed_normalize(x'') passed NULL to memmove (UBSan)
    assert_error(con, "SELECT embed_normalize(x'')", "embed_normalize: argument 1 is an empty blob: "
                 "a vector needs at least one dimension")
    for call in VECTOR_CALLS:
        fn = call.split("(")[0]
        for empty, kind in (("'[]'", "empty JSON array"), ("x''", "empty blob"), ("' [ ] '", "empty JSON array")):
            sql = "SELECT " + call % empty
            assert_error(con, sql, fn + ": argument ", kind, "a vector needs at least one dimension")


@test
def odd_sizes():
    for n in (1, 3, 5, 7, 15, 17, 31, 33, 63, 65, 129):
        a, b = rand_vec(n), rand_vec(n)
        want = sum(x * y for x, y in zip(a, b))
        assert abs(one(con, "SELECT embed_dot(?, ?)", blob(a), blob(b)) - want) < 1e-9, n


@test
def random_vectors_against_double_precision():
    for n in (1, 2, 3, 8, 16, 100, 384, 768, 1001):
        a, b = rand_vec(n), rand_vec(n)
        dot = sum(x * y for x, y in zip(a, b))
        na = math.sqrt(sum(x * x for x in a))
        nb = math.sqrt(sum(x * x for x in b))
        cos = dot / (na * nb)
        l2 = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
        l1 = sum(abs(x - y) for x, y in zip(a, b))
        A, B = blob(a), blob(b)
        tol = 1e-9 * max(1.0, n)
        assert abs(one(con, "SELECT embed_dot(?, ?)", A, B) - dot) < tol
        assert abs(one(con, "SELECT embed_cosine(?, ?)", A, B) - cos) < 1e-12
        assert abs(one(con, "SELECT embed_distance(?, ?)", A, B) - (1 - cos)) < 1e-12
        assert abs(one(con, "SELECT embed_distance(?, ?, 'l2')", A, B) - l2) < tol
        assert abs(one(con, "SELECT embed_distance(?, ?, 'l1')", A, B) - l1) < tol
        assert abs(one(con, "SELECT embed_distance(?, ?, 'dot')", A, B) + dot) < tol
        assert floats(one(con, "SELECT embed_add(?, ?)", A, B)) == [f32(x + y) for x, y in zip(a, b)]
        assert floats(one(con, "SELECT embed_sub(?, ?)", A, B)) == [f32(x - y) for x, y in zip(a, b)]
        assert floats(one(con, "SELECT embed_scale(?, 0.25)", A)) == [f32(x * 0.25) for x in a]
        assert_close(floats(one(con, "SELECT embed_normalize(?)", A)), [x / na for x in a], 1e-7, "normalize")
        # JSON input gives the same vector as the BLOB
        assert one(con, "SELECT embed_vector(?) = ?", json.dumps(a), A) == 1


@test
def json_output_round_trips_exactly():
    values = rand_vec(500) + [f32(1e-30), f32(3.4e38), f32(-1.17549435e-38), 0.0, -0.0, 1.0, f32(0.1)]
    text = one(con, "SELECT embed_json(?)", blob(values))
    parsed = json.loads(text)
    assert [f32(x) for x in parsed] == values
    assert one(con, "SELECT embed_vector(embed_json(?)) = ?", blob(values), blob(values)) == 1
    assert one(con, "SELECT json_array_length(embed_json(?))", blob(values)) == len(values)
    assert one(con, "SELECT embed_json('[0.1]')") == "[0.1]"


@test
def aggregates_sum_and_mean():
    con.execute("CREATE TEMP TABLE vs(v)")
    rows = [rand_vec(5) for _ in range(10)]
    con.executemany("INSERT INTO vs VALUES (?)", [(blob(r),) for r in rows])
    con.execute("INSERT INTO vs VALUES (NULL)")
    s = [sum(r[i] for r in rows) for i in range(5)]
    assert_close(floats(one(con, "SELECT embed_sum(v) FROM vs")), s, 1e-5, "sum")
    assert_close(floats(one(con, "SELECT embed_mean(v) FROM vs")), [x / 10 for x in s], 1e-6, "mean")
    assert one(con, "SELECT embed_sum(v) FROM vs WHERE 0") is None
    assert one(con, "SELECT embed_mean(v) FROM vs WHERE v IS NULL") is None
    con.execute("INSERT INTO vs VALUES ('[1,2]')")
    assert_error(con, "SELECT embed_sum(v) FROM vs", "embed_sum", "different dimensions")
    con.execute("DROP TABLE vs")


@test
def null_in_null_out():
    for sql in ("embed_vector(NULL)", "embed_json(NULL)", "embed_dims(NULL)", "embed_add(NULL, '[1]')",
                "embed_add('[1]', NULL)", "embed_sub(NULL, NULL)", "embed_scale(NULL, 2)",
                "embed_scale('[1]', NULL)", "embed_scale(NULL, 'x')", "embed_normalize(NULL)",
                "embed_dot(NULL, '[1]')", "embed_cosine('[1]', NULL)", "embed_distance(NULL, '[1]')",
                "embed_distance('[1]', '[1]', NULL)", "embed_distance(NULL, NULL, 'l2')",
                "embed_sum(NULL)", "embed_mean(NULL)"):
        assert one(con, "SELECT " + sql) is None, sql


@test
def wrong_types_are_errors_naming_the_function():
    for fn, sql in (("embed_vector", "embed_vector(1)"), ("embed_dims", "embed_dims(2.5)"),
                    ("embed_add", "embed_add('[1]', 3)"), ("embed_dot", "embed_dot(1, '[1]')"),
                    ("embed_json", "embed_json(42)"), ("embed_sum", "embed_sum(7)")):
        assert_error(con, "SELECT " + sql, fn, "must be a vector")
    assert_error(con, "SELECT embed_scale('[1]', 'x')", "embed_scale", "finite number")
    assert_error(con, "SELECT embed_scale('[1]', x'00')", "embed_scale", "finite number", "not a blob")
    assert_error(con, "SELECT embed_distance('[1]', '[1]', 'manhattan')", "embed_distance", "unknown metric")
    assert_error(con, "SELECT embed_distance('[1]', '[1]', 3)", "embed_distance",
                 "the metric must be text, not the integer 3")
    assert_error(con, "SELECT embed_distance('[1]', '[1]', x'6c32')", "embed_distance",
                 "the metric must be text, not a blob of 2 bytes")
    # a NUL must not cut the metric short ('l2' followed by anything is not 'l2')
    assert_error(con, "SELECT embed_distance('[1]', '[1]', 'l2' || char(0) || 'x')", "embed_distance",
                 "the metric contains a NUL character")


@test
def malformed_json_is_an_error():
    for bad in ("[1,", "{\"a\": 1}", "[1, \"x\"]", "[[1]]", "[1e999]", "NaN", "[NaN]", "", "hello", "[true]", "[null]"):
        assert_error(con, "SELECT embed_vector(?)", "embed_vector", args=(bad,))
    assert_error(con, "SELECT embed_vector('[1e39]')", "not a finite float32")


@test
def bad_blobs_are_errors():
    assert_error(con, "SELECT embed_vector(x'010203')", "embed_vector", "multiple of 4", "vec_int8(v)")
    assert_error(con, "SELECT embed_dot(x'0000803f', x'0000803f00')", "embed_dot", "multiple of 4")
    nan = struct.pack("<f", float("nan"))
    inf = struct.pack("<f", float("inf"))
    assert_error(con, "SELECT embed_dims(?)", "embed_dims", "non-finite", args=(nan,))
    assert_error(con, "SELECT embed_add(?, ?)", "embed_add", "non-finite", args=(blob([1]), inf))


@test
def mismatched_dimensions_are_errors():
    for fn in ("embed_add", "embed_sub", "embed_dot", "embed_cosine", "embed_distance"):
        msg = assert_error(con, "SELECT %s('[1,2,3]', '[1,2]')" % fn, fn, "different dimensions")
        assert "3" in msg and "2" in msg


@test
def overflow_and_zero_vectors():
    assert_error(con, "SELECT embed_add('[3e38]', '[3e38]')", "embed_add", "overflows")
    assert_error(con, "SELECT embed_scale('[3e38]', 10)", "embed_scale", "overflows")
    assert_error(con, "SELECT embed_cosine('[0,0]', '[1,0]')", "embed_cosine", "zero vector")
    assert_error(con, "SELECT embed_distance('[0,0]', '[1,0]')", "embed_distance", "zero vector")
    assert one(con, "SELECT embed_distance('[0,0]', '[1,0]', 'l2')") == 1


@test
def unaligned_blob_input_is_read_correctly():
    # substr() of a BLOB can start at any byte; the values must still be read exactly.
    vals = rand_vec(9)
    raw = b"x" + blob(vals)
    assert floats(one(con, "SELECT embed_vector(substr(?, 2))", raw)) == vals
