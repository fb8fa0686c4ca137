"""The lesson's model defined in SQL: embed_define, embed_tokens, embed_models, embed_unload."""
import json

from harness import test, connect, one, floats, assert_close, assert_error, define_lesson, LESSON_MODEL

con = connect()


def inputs(text):
    return [floats(r[0]) for r in con.execute(
        "SELECT input_embedding FROM embed_tokens('lesson', ?) ORDER BY position", (text,))]


@test
def lesson_worked_example():
    assert define_lesson(con) == "lesson"
    assert inputs("bus is late") == [[2, 1, 2], [0, 2, 1], [3, 1, 2]]
    assert inputs("late is bus") == [[3, 2, 1], [0, 2, 1], [2, 0, 3]]


@test
def token_rows_and_offsets():
    define_lesson(con)
    rows = con.execute(
        "SELECT position, token_id, token, type_id, start, \"end\", word, token_embedding, position_embedding"
        " FROM embed_tokens('lesson', '  bus  is late ')").fetchall()
    assert [r[:7] for r in rows] == [(0, 0, "bus", 0, 2, 5, 0), (1, 1, "is", 0, 7, 9, 1), (2, 2, "late", 0, 10, 14, 2)]
    assert [floats(r[7]) for r in rows] == [[1, 0, 2], [0, 1, 0], [2, 1, 1]]
    assert [floats(r[8]) for r in rows] == [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    # hidden columns echo the arguments
    assert con.execute("SELECT model, text FROM embed_tokens('lesson', 'bus')").fetchone() == ("lesson", "bus")


@test
def same_word_differs_only_by_position():
    define_lesson(con)
    first = con.execute("SELECT token_embedding, position_embedding, input_embedding FROM embed_tokens('lesson', 'bus is bus') WHERE position = 0").fetchone()
    third = con.execute("SELECT token_embedding, position_embedding, input_embedding FROM embed_tokens('lesson', 'bus is bus') WHERE position = 2").fetchone()
    assert first[0] == third[0]
    assert first[1] != third[1]
    diff = floats(one(con, "SELECT embed_sub(?, ?)", first[2], third[2]))
    want = floats(one(con, "SELECT embed_sub(?, ?)", first[1], third[1]))
    assert diff == want


@test
def embed_models_lists_it_and_unload_removes_it():
    define_lesson(con)
    row = con.execute("SELECT name, path, architecture, hidden_size, layers, vocab_size, max_positions,"
                      " position_kind, weight_type, bytes, length(fingerprint) FROM embed_models WHERE name = 'lesson'").fetchone()
    assert row == ("lesson", None, "defined", 3, 0, 4, 3, "learned", "F32", (4 + 3) * 3 * 4, 16), row
    fp = one(con, "SELECT fingerprint FROM embed_models WHERE name = 'lesson'")
    # the fingerprint is a function of the content: the same definition gives the same one
    con.execute("SELECT embed_define('lesson2', ?)", (LESSON_MODEL,))
    assert one(con, "SELECT fingerprint FROM embed_models WHERE name = 'lesson2'") == fp
    other = json.loads(LESSON_MODEL)
    other["embeddings"][0][0] = 5
    con.execute("SELECT embed_define('lesson3', ?)", (json.dumps(other),))
    assert one(con, "SELECT fingerprint FROM embed_models WHERE name = 'lesson3'") != fp
    assert one(con, "SELECT embed_unload('lesson2')") == 1
    assert one(con, "SELECT embed_unload('lesson3')") == 1
    assert one(con, "SELECT embed_unload('lesson3')") == 0
    assert one(con, "SELECT count(*) FROM embed_models WHERE name LIKE 'lesson_'") == 0


@test
def models_are_shared_between_connections():
    define_lesson(con)
    other = connect()
    assert [floats(r[0]) for r in other.execute("SELECT input_embedding FROM embed_tokens('lesson', 'bus is late')")][0] == [2, 1, 2]
    other.close()


@test
def unload_while_a_statement_uses_the_model():
    define_lesson(con, "temp_model")
    cur = con.execute("SELECT input_embedding FROM embed_tokens('temp_model', 'bus is late')")
    first = cur.fetchone()
    assert one(connect(), "SELECT embed_unload('temp_model')") == 1
    rest = cur.fetchall()  # the cursor keeps its reference: no use after free
    assert floats(first[0]) == [2, 1, 2] and [floats(r[0]) for r in rest] == [[0, 2, 1], [3, 1, 2]]
    assert_error(con, "SELECT * FROM embed_tokens('temp_model', 'bus')", "no model named 'temp_model'")


@test
def sinusoidal_positions_match_position_encoding():
    con.execute("SELECT embed_unload('sin')")
    con.execute("SELECT embed_define('sin', ?)", (json.dumps(
        {"vocab": ["a", "b"], "embeddings": [[0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], "positions": "sinusoidal"}),))
    for pos in range(3):
        assert one(con, "SELECT position_encoding('sin', ?) = position_encoding(?, 5)", pos, pos) == 1
    rows = con.execute("SELECT position_embedding = position_encoding(position, 5) FROM embed_tokens('sin', 'a b a')").fetchall()
    assert rows == [(1,), (1,), (1,)]
    assert one(con, "SELECT position_kind FROM embed_models WHERE name = 'sin'") == "sinusoidal"


@test
def embed_and_contextual_on_a_defined_model():
    define_lesson(con)
    # mean of the input vectors [2,1,2], [0,2,1], [3,1,2]
    assert_close(floats(one(con, "SELECT embed('lesson', 'bus is late')")), [5 / 3, 4 / 3, 5 / 3], 1e-6, "embed")
    assert floats(one(con, "SELECT contextual_embedding('lesson', 'bus is late', 2)")) == [3, 1, 2]
    assert floats(one(con, "SELECT contextual_embedding('lesson', 'bus is late', 2, 0)")) == [3, 1, 2]
    assert_error(con, "SELECT contextual_embedding('lesson', 'bus is late', 2, 1)", "contextual_embedding", "layer")
    assert_error(con, "SELECT contextual_embedding('lesson', 'bus is late', 3)", "contextual_embedding", "out of range")
    assert one(con, "SELECT embed_token_ids('lesson', 'late is bus')") == "[2,1,0]"


@test
def bad_definitions_are_clear_errors():
    cases = [
        ("not json", "not valid JSON"),
        ("[1,2]", "JSON object"),
        ('{"embeddings": [[1]], "positions": [[1]]}', "vocab"),
        ('{"vocab": ["a"], "positions": [[1]]}', "embeddings"),
        ('{"vocab": ["a", "b"], "embeddings": [[1]], "positions": [[1]]}', "rows"),
        ('{"vocab": ["a", "a"], "embeddings": [[1], [2]], "positions": [[1]]}', "twice"),
        ('{"vocab": ["a"], "embeddings": [[1, 2]], "positions": [[1]]}', "values"),
        ('{"vocab": ["a"], "embeddings": [["x"]], "positions": [[1]]}', "finite number"),
        ('{"vocab": ["a"], "embeddings": [[1e99]], "positions": [[1]]}', "finite number"),
        ('{"vocab": ["a b"], "embeddings": [[1]], "positions": [[1]]}', "whitespace"),
        ('{"vocab": ["a"], "embeddings": [[1]]}', "positions"),
        ('{"vocab": ["a"], "embeddings": [[1]], "positions": "learned"}', "sinusoidal"),
        ('{"vocab": [1], "embeddings": [[1]], "positions": [[1]]}', "string"),
    ]
    for definition, fragment in cases:
        assert_error(con, "SELECT embed_define('bad', ?)", "embed_define", fragment, args=(definition,))
    assert one(con, "SELECT count(*) FROM embed_models WHERE name = 'bad'") == 0
    assert_error(con, "SELECT embed_define(NULL, '{}')", "embed_define", "name")
    assert_error(con, "SELECT embed_define('', '{}')", "embed_define", "name")
    assert_error(con, "SELECT embed_define('x', NULL)", "embed_define", "definition")
    define_lesson(con)
    assert_error(con, "SELECT embed_define('lesson', ?)", "already loaded", args=(LESSON_MODEL,))


@test
def bad_token_queries_are_clear_errors():
    define_lesson(con)
    assert_error(con, "SELECT * FROM embed_tokens('lesson', 'bus is very late')", "embed_tokens", "'very'", "vocabulary")
    assert_error(con, "SELECT * FROM embed_tokens('lesson', 'bus is late early')", "embed_tokens", "positions")
    assert_error(con, "SELECT * FROM embed_tokens('nope', 'bus')", "embed_tokens", "no model named 'nope'")
    assert_error(con, "SELECT * FROM embed_tokens('lesson')", "embed_tokens", "needs a model and a text")
    assert_error(con, "SELECT * FROM embed_tokens", "embed_tokens")
    assert_error(con, "SELECT * FROM embed_tokens(1, 'bus')", "embed_tokens", "model name must be text, not the integer 1")
    assert_error(con, "SELECT * FROM embed_tokens('lesson', 'bus', 'is')", "embed_tokens", "pair")
    assert con.execute("SELECT * FROM embed_tokens('lesson', NULL)").fetchall() == []
    assert con.execute("SELECT * FROM embed_tokens(NULL, 'bus')").fetchall() == []
    assert con.execute("SELECT * FROM embed_tokens('lesson', '')").fetchall() == []
    assert_error(con, "SELECT embed('nope', 'bus')", "embed", "no model named")
    assert one(con, "SELECT embed(NULL, 'bus')") is None
    assert one(con, "SELECT embed('lesson', NULL)") is None
    assert_error(con, "SELECT embed('lesson', 'bus', 'not json')", "embed", "options")
    assert_error(con, "SELECT embed('lesson', 'bus', '{\"pooling\": \"median\"}')", "embed", "pooling")


@test
def invalid_utf8_is_an_error():
    define_lesson(con)
    assert_error(con, "SELECT * FROM embed_tokens('lesson', CAST(x'627573ff' AS TEXT))", "embed_tokens", "UTF-8")


@test
def join_with_a_table_of_texts():
    define_lesson(con)
    con.execute("CREATE TEMP TABLE s(id INTEGER PRIMARY KEY, body TEXT)")
    con.executemany("INSERT INTO s(body) VALUES (?)", [("bus is late",), ("late is bus",), ("early bus",)])
    rows = con.execute("SELECT s.id, count(*) FROM s, embed_tokens('lesson', s.body) GROUP BY s.id").fetchall()
    assert rows == [(1, 3), (2, 3), (3, 2)]
    con.execute("DROP TABLE s")
