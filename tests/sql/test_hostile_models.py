"""Careless and hostile model files and definitions (issue 8): each reproducer first, then the
chosen behaviour. Folders are copies of the fixtures in a temporary directory, changed one way."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

from harness import test, connect, one, assert_error, define_lesson, FIXTURES, EXT

MODELS = os.path.join(FIXTURES, "models")
BERT = os.path.join(MODELS, "bert-tiny-uncased")
LFS_POINTER = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:4b1ab5bbd0e9ea9e2ab0c1a0d7bfc6b5a8e3a2b0b9e6f0c1d2e3f4a5b6c7d8e9\n"
               "size 4049552\n")

con = connect()
tmp = tempfile.mkdtemp(prefix="embed-hostile-")


def folder(name, src=BERT):
    d = os.path.join(tmp, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    return d


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def edit_json(path, change):
    with open(path) as f:
        doc = json.load(f)
    change(doc)
    with open(path, "w") as f:
        json.dump(doc, f)


def load_error(path, *fragments, name="hostile"):
    return assert_error(con, "SELECT embed_load(?, ?)", "embed_load", *fragments, args=(name, path))


def in_child(code, arg, timeout=60):
    """Runs code in a fresh Python (a hang or a crash must not take the suite with it), with the
    extension loaded as `con` and `arg` as json.loads(sys.argv[1]); returns its stdout."""
    prelude = ("import sqlite3, sys, os, json\n"
               "con = sqlite3.connect(':memory:', isolation_level=None)\n"
               "con.enable_load_extension(True)\n"
               "con.load_extension(%r)\n"
               "arg = json.loads(sys.argv[1])\n" % EXT)
    r = subprocess.run([sys.executable, "-c", prelude + code, json.dumps(arg)], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, "child failed (%d): %s %s" % (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    return r.stdout


# ---------------------------------------------------------------------------------------------- LFS

@test
def lfs_pointer_in_place_of_the_weights():
    d = folder("lfs_weights")
    write(os.path.join(d, "model.safetensors"), LFS_POINTER)
    msg = load_error(d, os.path.join(d, "model.safetensors") + ": this is a Git LFS pointer, not the weights; "
                     "run `git lfs pull` in the model folder")
    assert "exceeds" not in msg and "header length" not in msg, msg


@test
def lfs_pointer_in_place_of_the_json_files():
    for name in ("tokenizer.json", "config.json", "tokenizer_config.json"):
        d = folder("lfs_" + name)
        write(os.path.join(d, name), LFS_POINTER)
        load_error(d, os.path.join(d, name) + ": this is a Git LFS pointer", "git lfs pull")
    d = folder("lfs_vocab")
    os.remove(os.path.join(d, "tokenizer.json"))
    write(os.path.join(d, "vocab.txt"), LFS_POINTER)
    load_error(d, os.path.join(d, "vocab.txt") + ": this is a Git LFS pointer")


# ---------------------------------------------------------------------------------------------- FIFOs

@test
def fifo_in_place_of_a_file_is_an_error_not_a_hang():
    # The reproducer blocked embed_load forever: run it in a child with a timeout.
    cases = {}
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        d = folder("fifo_" + name)
        if name == "vocab.txt":
            os.remove(os.path.join(d, "tokenizer.json"))
        os.remove(os.path.join(d, name))
        os.mkfifo(os.path.join(d, name))
        cases[name] = d
    d = folder("fifo_modules", os.path.join(MODELS, "minilm-tiny-st"))
    os.remove(os.path.join(d, "modules.json"))
    os.mkfifo(os.path.join(d, "modules.json"))
    cases["modules.json"] = d
    got = json.loads(in_child("""
out = {}
for name, d in arg.items():
    try:
        con.execute('SELECT embed_load(?, ?)', ('f', d)).fetchall()
        out[name] = 'loaded'
    except sqlite3.Error as e:
        out[name] = str(e)
print(json.dumps(out))
""", cases))
    for name, d in cases.items():
        want = "embed_load: %s: not a regular file (a FIFO)" % os.path.join(d, name)
        assert got[name] == want, (name, got[name])


# ---------------------------------------------------------------------------------------------- ids

@test
def one_huge_vocabulary_id_fails_fast():
    # 2,000,000,000 in a 466 KB tokenizer.json cost 8.4 GB and 95 s before the error.
    d = folder("huge_id")
    path = os.path.join(d, "tokenizer.json")
    edit_json(path, lambda t: t["model"]["vocab"].update({"zzzhuge": 2000000000}))
    with open(path) as f:
        tok = json.load(f)
    entries = len(tok["model"]["vocab"]) + len(tok["added_tokens"])
    start = time.time()
    load_error(d, "tokenizer.json: model.vocab id 2000000000 of 'zzzhuge' is out of range 0 to %d" % (entries - 1),
               "(ids are bounded by the %d entries present)" % entries)
    assert time.time() - start < 5, time.time() - start


@test
def added_tokens_decoder_key_that_overflows_an_int():
    # "2147483647" overflowed a signed int, then every token became [UNK].
    d = folder("overflow_key")
    os.remove(os.path.join(d, "tokenizer.json"))
    edit_json(os.path.join(d, "tokenizer_config.json"),
              lambda c: c.setdefault("added_tokens_decoder", {}).update(
                  {"2147483647": {"content": "[HUGE]", "special": True}}))
    load_error(d, "tokenizer_config.json: added_tokens_decoder id '2147483647' is not a number from 0 to")
    # a key within the entries present still works, and ordinary words are not [UNK]
    edit_json(os.path.join(d, "tokenizer_config.json"), lambda c: c["added_tokens_decoder"].pop("2147483647"))
    one(con, "SELECT embed_load('overflow_ok', ?)", d)
    with open(os.path.join(d, "vocab.txt")) as f:
        line = {w: i for i, w in enumerate(f.read().split("\n"))}
    want = [line["[CLS]"], line["the"], line["bus"], line["[SEP]"]]
    assert json.loads(one(con, "SELECT embed_token_ids('overflow_ok', 'the bus')")) == want
    con.execute("SELECT embed_unload('overflow_ok')")


@test
def huge_json_numbers_are_errors_not_casts():
    cases = [("config.json", lambda c: c.update(hidden_size=1e300), "config.json: key 'hidden_size' = 1e+300 is out of range"),
             ("config.json", lambda c: c.update(num_hidden_layers=-1e19), "num_hidden_layers"),
             ("config.json", lambda c: c.update(vocab_size=2.5), "config.json: key 'vocab_size' is not an integer"),
             ("tokenizer.json", lambda t: t["model"]["vocab"].update({"[PAD]": 1e300}), "model.vocab id 1e+300 of '[PAD]'"),
             ("tokenizer.json", lambda t: t["post_processor"]["single"][0]["SpecialToken"].update(type_id=1e300),
              "post_processor type_id"),
             ("tokenizer.json", lambda t: t["post_processor"]["special_tokens"]["[CLS]"].update(ids=[-1e300]),
              "special_tokens '[CLS]'"),
             ("tokenizer.json", lambda t: t.update(padding={"pad_id": 1e300}), "padding pad_id")]
    for i, (name, change, fragment) in enumerate(cases):
        d = folder("number%d" % i)
        edit_json(os.path.join(d, name), change)
        load_error(d, fragment)


@test
def out_of_range_template_ids_fail_at_load():
    # A special token id outside the vocabulary loaded and failed only at embed().
    d = folder("template_id")
    edit_json(os.path.join(d, "tokenizer.json"),
              lambda t: t["post_processor"]["special_tokens"]["[CLS]"].update(ids=[999999]))
    load_error(d, "tokenizer.json: the post_processor's special token id 999999 is not in the vocabulary")
    d = folder("template_type")
    edit_json(os.path.join(d, "tokenizer.json"),
              lambda t: t["post_processor"]["single"][1]["Sequence"].update(type_id=2))
    load_error(d, "the post_processor gives type id 2 but the model has only 2 token types")


@test
def huge_sinusoidal_table_is_refused_before_it_is_built():
    # A DistilBERT config with sinusoidal positions and a huge max_position_embeddings built
    # a table of gigabytes before failing. Here the table is not stored, so it would be built.
    d = folder("huge_positions", os.path.join(MODELS, "distilbert-tiny-sinusoidal"))
    p = os.path.join(d, "model.safetensors")
    with open(p, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = f.read(n)
        renamed = header.replace(b'"embeddings.position_embeddings.weight"', b'"embeddings.position_embeddings.unused"')
        assert len(renamed) == len(header) and renamed != header
        f.seek(8)
        f.write(renamed)
    one(con, "SELECT embed_load('built_positions', ?)", d)  # 512 positions: built from the formula
    con.execute("SELECT embed_unload('built_positions')")
    edit_json(os.path.join(d, "config.json"), lambda c: c.update(max_position_embeddings=1 << 20))
    start = time.time()
    load_error(d, "config.json: max_position_embeddings 1048576 needs a 134217728-byte sinusoidal table, more than")
    assert time.time() - start < 5


# ---------------------------------------------------------------------------------------------- NUL

@test
def word_with_a_nul_is_an_error_not_an_over_read():
    define_lesson(con)
    # the reproducer: the prefix "bus" is a vocabulary word; the lookup read past the string
    assert_error(con, "SELECT embed_token_ids('lesson', 'bus' || char(0) || 'xxxx')", "embed_token_ids",
                 "word 1 contains a NUL character")
    assert_error(con, "SELECT embed('lesson', 'is bus' || char(0))", "embed", "word 2 contains a NUL character")
    # words that are prefixes or extensions of vocabulary words are still looked up exactly
    assert_error(con, "SELECT embed_token_ids('lesson', 'bu')", "'bu' is not in the vocabulary")
    assert_error(con, "SELECT embed_token_ids('lesson', 'buses')", "'buses' is not in the vocabulary")
    assert one(con, "SELECT embed_token_ids('lesson', 'early late bus')") == "[3,2,0]"


# ---------------------------------------------------------------------------------------------- define limits

def definition(vocab=1, dims=3, positions=None, **extra):
    d = {"vocab": ["w%d" % i for i in range(vocab)],
         "embeddings": [[0] * dims] + [[0]] * (vocab - 1),  # rows past the first: short on purpose
         "positions": positions if positions is not None else "sinusoidal"}
    d.update(extra)
    return json.dumps(d, separators=(",", ":"))


@test
def a_small_definition_cannot_build_a_huge_table():
    # 16 KB that asked for a 2 GiB sinusoidal table
    big = definition(dims=8192, max_positions=65536)
    assert len(big) < 16500
    start = time.time()
    assert_error(con, "SELECT embed_define('huge', ?)", "embed_define", "\"embeddings\"[0] has 8192 values (1 to 4096 allowed)",
                 args=(big,))
    assert_error(con, "SELECT embed_define('huge', ?)", "embed_define", "\"max_positions\" must be an integer from 1 to 8192",
                 args=(definition(dims=4, max_positions=65536),))
    assert_error(con, "SELECT embed_define('huge', ?)", "embed_define", "\"max_positions\" must be an integer from 1 to 8192",
                 args=(definition(dims=4, max_positions=1e300),))
    # within each limit, but (20000 + 512) x 4096 x 4 bytes is more than 256 MiB: refused before
    # the rows are read (they are short here, which would be the next error)
    assert_error(con, "SELECT embed_define('huge', ?)", "embed_define",
                 "the tables would take 336068608 bytes, more than the 268435456 allowed", args=(definition(20000, 4096),))
    assert_error(con, "SELECT embed_define('huge', ?)", "embed_define", "\"positions\" has 8193 rows, more than the 8192 allowed",
                 args=(definition(1, 1, [[0]] * 8193),))
    assert time.time() - start < 5
    assert one(con, "SELECT count(*) FROM embed_models WHERE name = 'huge'") == 0


@test
def definitions_at_the_limits_load():
    for dims, positions in ((4096, 16), (1, 8192)):
        con.execute("SELECT embed_unload('edge')")
        assert one(con, "SELECT embed_define('edge', ?)", definition(1, dims, max_positions=positions)) == "edge"
        assert one(con, "SELECT max_positions || ' ' || hidden_size FROM embed_models WHERE name = 'edge'") == \
            "%d %d" % (positions, dims)
        assert one(con, "SELECT position_encoding('edge', ?) = position_encoding(?, ?)", positions - 1, positions - 1,
                   dims) == 1
    con.execute("SELECT embed_unload('edge')")


# ---------------------------------------------------------------------------------------------- DIRECTONLY

@test
def a_database_cannot_change_the_registry_from_views_or_triggers():
    # The reproducer: a database's view unloaded the victim's model for the whole process.
    define_lesson(con)
    path = os.path.join(tmp, "hostile.db")
    evil = connect(path)
    evil.execute("CREATE VIEW unload_v AS SELECT embed_unload('lesson') AS r")
    evil.execute("CREATE VIEW define_v AS SELECT embed_define('taken', '{}') AS r")
    evil.execute("CREATE VIEW load_v AS SELECT embed_load('taken', '/tmp', '{}') AS r")
    evil.execute("CREATE TABLE t(x)")
    evil.execute("CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN SELECT embed_unload('lesson'); END")
    evil.close()
    victim = connect(path)
    for view, fn in (("unload_v", "embed_unload"), ("define_v", "embed_define"), ("load_v", "embed_load")):
        assert_error(victim, "SELECT * FROM %s" % view, "unsafe use of %s()" % fn)
    assert_error(victim, "INSERT INTO t VALUES (1)", "unsafe use of embed_unload()")
    assert one(con, "SELECT count(*) FROM embed_models WHERE name = 'lesson'") == 1
    # called directly, they work
    assert one(victim, "SELECT embed_unload('lesson')") == 1
    victim.close()


@test
def invalid_utf8_in_a_model_name_is_refused():
    assert_error(con, "SELECT embed_define(CAST(x'6c65ff' AS TEXT), ?)", "embed_define",
                 "the model name is not valid UTF-8 (byte 2)", args=(json.dumps(json.loads(definition())),))
    assert_error(con, "SELECT embed_load(CAST(x'c0af' AS TEXT), ?)", "embed_load", "not valid UTF-8 (byte 0)", args=(BERT,))
    assert one(con, "SELECT count(*) FROM embed_models WHERE name IN (CAST(x'6c65ff' AS TEXT), CAST(x'c0af' AS TEXT))") == 0


# ---------------------------------------------------------------------------------------------- mmap

def mapped_paths():
    with open("/proc/self/maps") as f:
        return {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}


@test
def load_options_are_checked():
    for opts, fragment in (("not json", "options must be a JSON object"), ("[1]", "options must be a JSON object"),
                           ('{"mmap": 1}', "option \"mmap\" must be true or false"),
                           ('{"mmap": false, "weight": "f32"}', "unknown option \"weight\" (known: mmap, weights, allow_missing_dense)"),
                           ('{"weights": "int4"}', "option \"weights\" must be \"f32\", \"int8\", \"bf16\" or \"q8_0\""),
                           ('{"weights": "BF16"}', "option \"weights\" must be \"f32\", \"int8\", \"bf16\" or \"q8_0\""),
                           ('{"weights": 8}', "option \"weights\" must be \"f32\", \"int8\", \"bf16\" or \"q8_0\""),
                           ('{"weights": null}', "option \"weights\" must be \"f32\", \"int8\", \"bf16\" or \"q8_0\"")):
        assert_error(con, "SELECT embed_load('opt', ?, ?)", "embed_load", fragment, args=(BERT, opts))
    assert_error(con, "SELECT embed_load('opt', ?, 7)", "embed_load", "options must be text", args=(BERT,))
    assert one(con, "SELECT embed_load('opt', ?, NULL)", BERT) == "opt"  # NULL: the defaults
    assert one(con, "SELECT embed_load('opt', ?, '{\"mmap\": true}')", BERT) == "opt"  # the same, again: harmless
    assert_error(con, "SELECT embed_load('opt', ?, '{\"mmap\": false}')", "embed_load",
                 "model 'opt' is already loaded from that folder with mmap true", args=(BERT,))
    con.execute("SELECT embed_unload('opt')")


@test
def private_weights_give_bit_identical_vectors():
    texts = ["The bus is late.", "I left my phone on the left side of the table.", "шагать"]
    for model in ("bert-tiny-uncased", "distilbert-tiny-uncased", "minilm-tiny-st", "bert-tiny-f16"):
        src = os.path.join(MODELS, model)
        one(con, "SELECT embed_load('mapped_' || ?, ?)", model, src)
        one(con, "SELECT embed_load('private_' || ?, ?, '{\"mmap\": false}')", model, src)
        for t in texts:
            a = one(con, "SELECT embed('mapped_' || ?, ?)", model, t)
            b = one(con, "SELECT embed('private_' || ?, ?)", model, t)
            assert a == b, (model, t)
            a = one(con, "SELECT group_concat(hex(contextual_embedding)) FROM embed_tokens('mapped_' || ?, ?)", model, t)
            b = one(con, "SELECT group_concat(hex(contextual_embedding)) FROM embed_tokens('private_' || ?, ?)", model, t)
            assert a == b, (model, t)
        fp = con.execute("SELECT fingerprint FROM embed_models WHERE name IN ('mapped_' || ?, 'private_' || ?)",
                         (model, model)).fetchall()
        assert fp[0] == fp[1], fp
        # F16 layers are converted, but an F16 token table is read in place, row by row
        mapped = con.execute("SELECT mapped FROM embed_models WHERE name = 'mapped_' || ?", (model,)).fetchone()[0]
        assert mapped == 1, (model, mapped)
        assert one(con, "SELECT mapped FROM embed_models WHERE name = 'private_' || ?", model) == 0
        con.execute("SELECT embed_unload('mapped_' || ?), embed_unload('private_' || ?)", (model, model))


@test
def private_weights_are_not_a_mapping_of_the_file():
    d = folder("maps")
    weights = os.path.join(d, "model.safetensors")
    assert weights not in mapped_paths()
    one(con, "SELECT embed_load('maps', ?)", d)
    assert weights in mapped_paths(), "mmap true: the weights are a mapping of the file"
    con.execute("SELECT embed_unload('maps')")
    assert weights not in mapped_paths(), "unloading unmaps the file"
    one(con, "SELECT embed_load('maps', ?, '{\"mmap\": false}')", d)
    assert weights not in mapped_paths(), "mmap false: the file is not mapped"
    con.execute("SELECT embed_unload('maps')")


@test
def private_weights_survive_the_file_being_truncated_or_overwritten():
    # With a mapping, cp over the weights truncates the file in place: SIGBUS. With mmap false the
    # model holds its own copy: truncating or overwriting the file changes nothing.
    out = in_child("""
d = arg
con.execute("SELECT embed_load('p', ?, '{\\"mmap\\": false}')", (d,))
before = [con.execute("SELECT embed('p', ?)", (t,)).fetchone()[0] for t in ("bus is late", "left side")]
w = os.path.join(d, "model.safetensors")
size = os.path.getsize(w)
with open(w, "r+b") as f:
    f.truncate(0)
after_truncate = [con.execute("SELECT embed('p', ?)", (t,)).fetchone()[0] for t in ("bus is late", "left side")]
with open(w, "wb") as f:
    f.write(os.urandom(size))
after_overwrite = [con.execute("SELECT embed('p', ?)", (t,)).fetchone()[0] for t in ("bus is late", "left side")]
print(before == after_truncate == after_overwrite, len(before[0]))
""", folder("truncate"))
    assert out.split() == ["True", "128"], out


@test
def cleanup():
    shutil.rmtree(tmp, ignore_errors=True)
