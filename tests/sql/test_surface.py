"""The SQL surface changes only on purpose: every function, its argument counts and flags."""
from harness import test, connect

DETERMINISTIC, DIRECTONLY, INNOCUOUS = 0x800, 0x80000, 0x200000

# (name, nargs) -> flags that must be set, and whether it is deterministic
EXPECTED = {
    ("contextual_embedding", 3): INNOCUOUS, ("contextual_embedding", 4): INNOCUOUS,
    ("embed", 2): INNOCUOUS, ("embed", 3): INNOCUOUS,
    ("embed_add", 2): DETERMINISTIC | INNOCUOUS, ("embed_cosine", 2): DETERMINISTIC | INNOCUOUS,
    ("embed_debug", 0): INNOCUOUS, ("embed_define", 2): DIRECTONLY,
    ("embed_dims", 1): DETERMINISTIC | INNOCUOUS, ("embed_distance", 2): DETERMINISTIC | INNOCUOUS,
    ("embed_distance", 3): DETERMINISTIC | INNOCUOUS, ("embed_dot", 2): DETERMINISTIC | INNOCUOUS,
    ("embed_json", 1): DETERMINISTIC | INNOCUOUS, ("embed_load", 2): DIRECTONLY, ("embed_load", 3): DIRECTONLY,
    ("embed_mean", 1): DETERMINISTIC | INNOCUOUS, ("embed_normalize", 1): DETERMINISTIC | INNOCUOUS,
    ("embed_scale", 2): DETERMINISTIC | INNOCUOUS, ("embed_sub", 2): DETERMINISTIC | INNOCUOUS,
    ("embed_sum", 1): DETERMINISTIC | INNOCUOUS, ("embed_token_ids", 2): INNOCUOUS,
    ("embed_token_ids", 3): INNOCUOUS, ("embed_unload", 1): DIRECTONLY,
    ("embed_vector", 1): DETERMINISTIC | INNOCUOUS, ("embed_version", 0): DETERMINISTIC | INNOCUOUS,
    ("position_encoding", 2): INNOCUOUS, ("position_encoding", 3): DETERMINISTIC | INNOCUOUS,
}
MODULES = {"embed_models", "embed_tokens", "embed_index"}


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
