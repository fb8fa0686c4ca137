"""What embed_load says about a wrong folder argument (a file given for its folder, a missing
path, a folder of GGUF files), and the nearest loaded name an unknown model name suggests in every function
that takes a model (embed_index's CREATE and 'model' command too) (a typo: one edit for names of 4 bytes or fewer, two for longer ones); and
docs/models.md's column table of embed_models lists exactly the table's columns."""
import os
import shutil
import tempfile

from harness import test, connect, one, assert_error, FIXTURES

TINY = os.path.join(FIXTURES, "models", "minilm-tiny-st")


def load_error(con, path):
    return assert_error(con, "SELECT embed_load('names-m', ?)", "embed_load", args=(path,))


@test
def a_file_given_for_its_folder_is_named_as_a_file():
    con = connect()
    for f in ("model.safetensors", "config.json"):
        path = os.path.join(TINY, f)
        assert load_error(con, path) == ("embed_load: %s is a file, not a folder: give the folder that holds "
                                         "config.json and model.safetensors (or a .gguf file)" % path)


@test
def a_missing_folder_is_named_as_missing():
    con = connect()
    assert load_error(con, "/nonexistent/minilm") == "embed_load: /nonexistent/minilm: no such folder"


@test
def gguf_files_are_read_and_a_folder_of_them_points_at_the_file():
    con = connect()
    d = tempfile.mkdtemp()
    try:
        model = os.path.join(d, "all-MiniLM-L6-v2.Q8_0.gguf")
        open(model, "wb").write(b"GGUF\x03\x00\x00\x00")
        # a .gguf file is read (this one is cut short: the reader says so, naming it)
        msg = load_error(con, model)
        assert msg.startswith("embed_load: all-MiniLM-L6-v2.Q8_0.gguf: ") and "truncated header" in msg, msg
        missing = os.path.join(d, "missing.GGUF")
        assert load_error(con, missing) == "embed_load: %s: no such file" % missing
        assert load_error(con, d) == "embed_load: %s holds only .gguf files: give the .gguf file itself" % d
        # with Hugging Face files beside it, the folder is read as usual (here: no tokenizer)
        open(os.path.join(d, "config.json"), "w").write("{}")
        msg = load_error(con, d)
        assert "gguf" not in msg and "neither tokenizer.json nor vocab.txt" in msg, msg
    finally:
        shutil.rmtree(d)


@test
def a_fifo_in_the_folders_place_is_not_called_a_file():
    con = connect()
    d = tempfile.mkdtemp()
    try:
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        msg = load_error(con, fifo)
        assert "is a file" not in msg and "not a folder" in msg, msg
    finally:
        shutil.rmtree(d)


MODEL_CALLS = [
    "SELECT embed('%s', 'bus')",
    "SELECT embed_token_ids('%s', 'bus')",
    "SELECT contextual_embedding('%s', 'bus', 0)",
    "SELECT position_encoding('%s', 1)",
    "SELECT * FROM embed_tokens('%s', 'bus')",
    "SELECT * FROM embed_attention('%s', 'bus')",
]


@test
def an_unknown_model_name_suggests_the_nearest_loaded_one_everywhere():
    con = connect()
    con.execute("SELECT embed_load('minilm', ?)", (TINY,))
    con.execute("SELECT embed_load('tiny-bert', ?)", (os.path.join(FIXTURES, "models", "bert-tiny-uncased"),))
    try:
        for sql in MODEL_CALLS:
            fn = sql.split("(")[0].split()[-1]
            for typo, near in (("minlm", "minilm"), ("MiniLM", "minilm"), ("tiny_bert", "tiny-bert")):
                msg = assert_error(con, sql % typo)
                assert msg == "%s: no model named '%s'; did you mean '%s'?" % (fn, typo, near), msg
            msg = assert_error(con, sql % "gte-small")
            assert msg == "%s: no model named 'gte-small' (load one with embed_load or embed_define)" % fn, msg
    finally:
        con.execute("SELECT embed_unload('minilm')")
        con.execute("SELECT embed_unload('tiny-bert')")


@test
def embed_index_suggests_the_nearest_loaded_name_too():
    con = connect()
    con.execute("SELECT embed_load('minilm', ?)", (TINY,))
    try:
        for typo, near in (("minlm", "minilm"), ("MiniLM", "minilm")):
            msg = assert_error(con, "CREATE VIRTUAL TABLE t USING embed_index(model = '%s')" % typo)
            assert msg == "embed_index: no model named '%s'; did you mean '%s'?" % (typo, near), msg
        msg = assert_error(con, "CREATE VIRTUAL TABLE t USING embed_index(model = 'gte-small')")
        assert msg == "embed_index: no model named 'gte-small' (load one with embed_load or embed_define)", msg
        con.execute("CREATE VIRTUAL TABLE t USING embed_index(model = 'minilm')")
        msg = assert_error(con, "INSERT INTO t(t, text) VALUES ('model', 'minilm2')")
        assert msg == "embed_index: no model named 'minilm2'; did you mean 'minilm'?", msg
    finally:
        con.execute("SELECT embed_unload('minilm')")


@test
def only_a_near_name_is_suggested():
    con = connect()
    con.execute("SELECT embed_load('minilm', ?)", (TINY,))
    try:
        # two edits: suggested for a name of 5 bytes or more, not for one of 4
        assert "did you mean 'minilm'?" in assert_error(con, "SELECT embed('minilm-2', 'a')")
        assert "did you mean" not in assert_error(con, "SELECT embed('mini', 'a')")
        assert "did you mean" not in assert_error(con, "SELECT embed('mpnet', 'a')")
        assert "did you mean" not in assert_error(con, "SELECT embed(?, 'a')", args=("m" * 300,))
        assert one(con, "SELECT embed_dims(embed('minilm', 'a'))") > 0
    finally:
        con.execute("SELECT embed_unload('minilm')")


@test
def docs_models_lists_every_column_of_embed_models():
    import re
    text = open(os.path.join(os.path.dirname(FIXTURES), "..", "docs", "models.md"), encoding="utf-8").read()
    table = text[text.index("## `embed_models`"):]
    table = table[:table.index("```")]
    listed = [n for row in re.findall(r"^\| (`[^|]+`) \|", table, re.M) for n in re.findall(r"`(\w+)`", row)]
    con = connect()
    columns = [n for (n,) in con.execute("SELECT name FROM pragma_table_xinfo('embed_models') WHERE hidden = 0")]
    assert sorted(listed) == sorted(columns), (sorted(set(columns) - set(listed)), sorted(set(listed) - set(columns)))
    assert "weights" in listed
