"""The SQL surface changes only on purpose: every function, its argument counts and flags.

EXPECTED is pinned here on purpose, apart from the C table it checks (ext/ext_function_table.c):
a change to the table shows up as a difference. The table's signatures are read back through
SQL: each name's argument-count fallback (nArg -1) lists them, and they must name exactly the
argument counts registered."""
import re
import sqlite3

from harness import test, connect, EXT

DETERMINISTIC, DIRECTONLY, INNOCUOUS = 0x800, 0x80000, 0x200000

# (name, nargs) -> flags that must be set, and whether it is deterministic
EXPECTED = {
    ("contextual_embedding", 3): INNOCUOUS, ("contextual_embedding", 4): INNOCUOUS,
    ("embed", 2): INNOCUOUS, ("embed", 3): INNOCUOUS,
    ("embed_add", 2): DETERMINISTIC | INNOCUOUS, ("embed_cosine", 2): DETERMINISTIC | INNOCUOUS,
    ("embed_attention_bias", 3): INNOCUOUS, ("embed_attention_bias", 4): INNOCUOUS,
    ("embed_debug", 0): DIRECTONLY, ("embed_index_cache_bytes", 0): DIRECTONLY, ("embed_define", 2): DIRECTONLY,
    ("embed_dims", 1): DETERMINISTIC | INNOCUOUS, ("embed_distance", 2): DETERMINISTIC | INNOCUOUS,
    ("embed_distance", 3): DETERMINISTIC | INNOCUOUS, ("embed_dot", 2): DETERMINISTIC | INNOCUOUS,
    ("embed_json", 1): DETERMINISTIC | INNOCUOUS, ("embed_load", 2): DIRECTONLY, ("embed_load", 3): DIRECTONLY,
    ("embed_mean", 1): DETERMINISTIC | INNOCUOUS, ("embed_normalize", 1): DETERMINISTIC | INNOCUOUS,
    ("embed_rerank", 3): INNOCUOUS,
    ("embed_rerank", 4): INNOCUOUS,
    ("embed_rotate", 2): DETERMINISTIC | INNOCUOUS, ("embed_rotate", 3): DETERMINISTIC | INNOCUOUS,
    ("embed_scale", 2): DETERMINISTIC | INNOCUOUS, ("embed_sub", 2): DETERMINISTIC | INNOCUOUS,
    ("embed_sum", 1): DETERMINISTIC | INNOCUOUS, ("embed_truncate", 2): DETERMINISTIC | INNOCUOUS,
    ("embed_truncate", 3): DETERMINISTIC | INNOCUOUS, ("embed_token_ids", 2): INNOCUOUS,
    ("embed_token_ids", 3): INNOCUOUS, ("embed_unload", 1): DIRECTONLY,
    ("embed_vector", 1): DETERMINISTIC | INNOCUOUS, ("embed_version", 0): DETERMINISTIC | INNOCUOUS,
    ("position_encoding", 2): INNOCUOUS, ("position_encoding", 3): DETERMINISTIC | INNOCUOUS,
}
# Every name also has a fallback for other argument counts (nArg -1), with the flags that all
# its forms share: DIRECTONLY where any form is, DETERMINISTIC and INNOCUOUS where all are.
for _name in {n for n, _ in list(EXPECTED)}:
    _forms = [f for (n, _), f in EXPECTED.items() if n == _name]
    _all = DETERMINISTIC | INNOCUOUS
    for _f in _forms:
        _all &= _f
    EXPECTED[(_name, -1)] = _all | (DIRECTONLY if any(f & DIRECTONLY for f in _forms) else 0)
MODULES = {"embed_models", "embed_tokens", "embed_index", "embed_hybrid", "embed_attention", "embed_rerank_batch",
           "embed_chunks", "embed_index_status"}


@test
def registered_functions_and_flags():
    con = connect()
    rows = con.execute("SELECT name, narg, flags FROM pragma_function_list WHERE name LIKE 'embed%' "
                       "OR name IN ('position_encoding', 'contextual_embedding')").fetchall()
    got = {(n, a): f & (DETERMINISTIC | DIRECTONLY | INNOCUOUS) for n, a, f in rows}
    assert got == EXPECTED, "surface changed:\n extra %s\n missing %s\n differing %s" % (
        set(got) - set(EXPECTED), set(EXPECTED) - set(got),
        {k: (got[k], EXPECTED[k]) for k in got if k in EXPECTED and got[k] != EXPECTED[k]})


@test
def registered_modules():
    con = connect()
    got = {r[0] for r in con.execute("SELECT name FROM pragma_module_list WHERE name LIKE 'embed%'")}
    assert got == MODULES, got


@test
def no_name_collides_with_sqlite_vec():
    assert all(not n.startswith("vec_") for n, _ in EXPECTED)


@test
def file_reading_is_direct_only():
    con = connect()
    con.execute("CREATE VIEW v AS SELECT embed_load('x', '/tmp') AS r")
    try:
        con.execute("SELECT * FROM v").fetchall()
        raise AssertionError("embed_load ran inside a view")
    except Exception as e:
        assert "unsafe use of embed_load" in str(e), e


@test
def wrong_argument_counts_name_the_signatures():
    con = connect()
    # the example: SQLite alone said "wrong number of arguments to function embed_distance()"
    try:
        con.execute("SELECT embed_distance('[1]', '[2]', 'l2', 4)").fetchall()
        raise AssertionError("no error")
    except sqlite3.Error as e:
        assert str(e) == ("embed_distance: expects embed_distance(a, b) or embed_distance(a, b, metric); "
                          "got 4 arguments"), e
    names = sorted({n for n, a in EXPECTED if a >= 0})
    for name in names:
        counts = {a for n, a in EXPECTED if n == name and a >= 0}
        wrong = max(counts) + 1
        sql = "SELECT %s(%s)" % (name, ", ".join(["NULL"] * wrong))
        try:
            con.execute(sql).fetchall()
            raise AssertionError("no error from " + sql)
        except sqlite3.Error as e:
            msg = str(e)
        m = re.fullmatch(r"(\w+): expects (.*); got (\d+) arguments?", msg)
        assert m and m.group(1) == name and int(m.group(3)) == wrong, msg
        listed = set()
        for sig in m.group(2).split(" or "):
            s = re.fullmatch(re.escape(name) + r"\(([\w, ]*)\)", sig)
            assert s, "%r in %r" % (sig, msg)
            listed.add(len(s.group(1).split(", ")) if s.group(1) else 0)
        assert listed == counts, (name, listed, counts, msg)
    # an aggregate's fallback fails over no rows too
    for sql in ("SELECT embed_sum(NULL, NULL) FROM (SELECT 1 WHERE 0)", "SELECT embed_mean('[1]', 2)"):
        try:
            con.execute(sql).fetchall()
            raise AssertionError("no error from " + sql)
        except sqlite3.Error as e:
            assert re.match(r"embed_(sum|mean): expects embed_(sum|mean)\(v\); got ", str(e)), e


@test
def fallbacks_of_registry_changers_are_direct_only():
    con = connect()
    for sql in ("embed_unload('m', 1)", "embed_define('m')", "embed_load('m', '/tmp', '{}', 4)"):
        con.execute("CREATE VIEW v AS SELECT %s AS r" % sql)  # not TEMP: SQLite trusts its own temp schema
        try:
            con.execute("SELECT * FROM v").fetchall()
            raise AssertionError("ran inside a view: " + sql)
        except sqlite3.Error as e:
            assert "unsafe use of " + sql.split("(")[0] in str(e), e
        con.execute("DROP VIEW v")


@test
def a_failed_registration_names_the_function():
    """Loading again while a statement runs: SQLite refuses to replace a function then."""
    con = connect()
    try:
        con.execute("SELECT load_extension(?)", (EXT,)).fetchall()
        raise AssertionError("no error")
    except sqlite3.Error as e:
        assert ("sqlite-embed: cannot register embed_version: unable to delete/modify "
                "user-function due to active statements") in str(e), e
