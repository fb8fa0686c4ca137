"""position_encoding against an independent computation with SQLite's own sin/cos/pow."""
from harness import test, connect, one, floats, assert_error

con = connect()


@test
def sinusoidal_equals_sql_math():
    for dim in (1, 2, 3, 64, 384, 768):
        for pos in (0, 1, 7, 511, 100000):
            got = floats(one(con, "SELECT position_encoding(?, ?)", pos, dim))
            # PE(pos, 2i) = sin(pos / 10000^(2i/dim)), PE(pos, 2i+1) = cos(same)
            want = [r[0] for r in con.execute(
                "WITH RECURSIVE j(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM j WHERE j + 1 < ?2) "
                "SELECT CASE WHEN j % 2 = 0 THEN sin(?1 / pow(10000.0, (j - j % 2) * 1.0 / ?2)) "
                "ELSE cos(?1 / pow(10000.0, (j - j % 2) * 1.0 / ?2)) END FROM j ORDER BY j",
                (pos, dim))]
            assert len(got) == dim
            worst = max(abs(g - w) for g, w in zip(got, want))
            assert worst <= 1e-6, (dim, pos, worst)


@test
def odd_dim_ends_with_a_sine_and_base_is_used():
    v = floats(one(con, "SELECT position_encoding(3, 5)"))
    import math
    assert abs(v[4] - math.sin(3 / 10000 ** (4 / 5))) < 1e-7
    v = floats(one(con, "SELECT position_encoding(2, 4, 100)"))
    want = [math.sin(2), math.cos(2), math.sin(2 / 100 ** 0.5), math.cos(2 / 100 ** 0.5)]
    assert max(abs(a - b) for a, b in zip(v, want)) < 1e-7
    assert floats(one(con, "SELECT position_encoding(0, 4)")) == [0, 1, 0, 1]


@test
def bad_arguments():
    assert one(con, "SELECT position_encoding(NULL, 4)") is None
    assert one(con, "SELECT position_encoding(1, NULL)") is None
    assert_error(con, "SELECT position_encoding(-1, 4)", "position_encoding", "pos")
    assert_error(con, "SELECT position_encoding(1, 0)", "position_encoding", "dim")
    assert_error(con, "SELECT position_encoding(1, 1000000)", "position_encoding", "dim")
    assert_error(con, "SELECT position_encoding(1.5, 4)", "position_encoding", "integer")
    assert_error(con, "SELECT position_encoding(1, 'x', 3)", "position_encoding", "dim")
    assert_error(con, "SELECT position_encoding(1, 4, 0)", "position_encoding", "base")
    assert_error(con, "SELECT position_encoding(1, 4, 'ten')", "position_encoding", "base")
    assert_error(con, "SELECT position_encoding('nosuchmodel', 1)", "position_encoding", "no model named")
