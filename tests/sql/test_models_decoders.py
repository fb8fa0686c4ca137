"""The decoder embedders through SQL (tests/fixtures/models3/qwen3-tiny-st, qwen3-tiny-causallm,
gemma3-tiny-st): their weights and config.json load and describe themselves in embed_models, and bad
settings are refused with the key named. Their own tokenizers (Qwen's BPE with an NFC normalizer,
Gemma's BPE without a pre-tokenizer) are not read yet, so each folder is copied here with another
fixture's tokenizer.json in place of its own; the hidden states themselves are checked against the references
from their input_ids by the C suite test_decoders."""
import atexit
import json
import os
import shutil
import tempfile

from harness import test, connect, one, assert_error, FIXTURES

M3 = os.path.join(FIXTURES, "models3")
# a tokenizer whose ids the model's table holds: MPNet's (30,527 pieces) for Qwen3's 50,262 rows, a
# 1,002-piece Unigram one for Gemma3's 4,000
BORROWED = {"qwen3": os.path.join(M3, "mpnet-tiny-st", "tokenizer.json"),
            "gemma3": os.path.join(FIXTURES, "tokenizers2", "vocab", "xlmr-style-spmtest", "tokenizer.json")}
_tmp = tempfile.mkdtemp(prefix="decoders-")
atexit.register(shutil.rmtree, _tmp, True)
con = connect()


def folder(model, name, edit=None, weights=None):
    """A copy of model's config (edited by edit) and weights (or the file weights) with MPNet's
    tokenizer; its path."""
    dst = os.path.join(_tmp, name)
    os.mkdir(dst)
    with open(os.path.join(M3, model, "config.json")) as f:
        cfg = json.load(f)
    if edit:
        edit(cfg)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f)
    os.symlink(weights or os.path.join(M3, model, "model.safetensors"), os.path.join(dst, "model.safetensors"))
    os.symlink(BORROWED[model.split("-")[0]], os.path.join(dst, "tokenizer.json"))
    return dst


@test
def each_folder_describes_its_architecture():
    want = {"qwen3-tiny-st": ("qwen3", 32, 2, 4, "rotary"), "qwen3-tiny-causallm": ("qwen3", 32, 2, 4, "rotary"),
            "gemma3-tiny-st": ("gemma3_text", 32, 3, 4, "rotary")}
    for model, row in want.items():
        name = "dec-" + model
        one(con, "SELECT embed_load(?, ?)", name, folder(model, name))
        got = con.execute("SELECT architecture, hidden_size, layers, heads, position_kind FROM embed_models"
                          " WHERE name = ?", (name,)).fetchone()
        assert got == row, (model, got)
        vec = one(con, "SELECT embed(?, 'hello world')", name)
        assert isinstance(vec, bytes) and len(vec) == 4 * 32, (model, vec)
        con.execute("SELECT embed_unload(?)", (name,))


@test
def int8_weights_load_and_embed():
    for model in ("qwen3-tiny-st", "gemma3-tiny-st"):
        path = folder(model, "dec-packed-" + model)
        one(con, "SELECT embed_load('dec-int8', ?, '{\"weights\": \"int8\"}')", path)
        vec = one(con, "SELECT embed('dec-int8', 'hello world')")
        assert isinstance(vec, bytes) and len(vec) == 4 * 32, (model, vec)
        con.execute("SELECT embed_unload('dec-int8')")


def set_key(key, value):
    def edit(cfg):
        cfg[key] = value
    return edit


@test
def bad_settings_are_refused_by_key():
    cases = [
        ("qwen3-tiny-st", set_key("num_key_value_heads", 3), "config.json: key 'num_key_value_heads'"),
        ("qwen3-tiny-st", set_key("head_dim", 15), "config.json: key 'head_dim'"),
        ("qwen3-tiny-st", set_key("rope_parameters", {"rope_type": "yarn", "rope_theta": 1e6, "factor": 4}),
         "rope_type 'yarn' is not supported"),
        ("qwen3-tiny-st", set_key("use_sliding_window", True), "config.json: key 'use_sliding_window'"),
        ("gemma3-tiny-st", set_key("sliding_window", 0), "config.json: key 'sliding_window'"),
        ("gemma3-tiny-st", set_key("hidden_activation", "relu"), "config.json: key 'hidden_activation'"),
    ]
    for i, (model, edit, fragment) in enumerate(cases):
        path = folder(model, "dec-bad-%d" % i, edit)
        assert_error(con, "SELECT embed_load('dec-bad', ?)", fragment, args=(path,))


@test
def a_missing_q_norm_is_named():
    with open(os.path.join(M3, "qwen3-tiny-st", "model.safetensors"), "rb") as f:
        data = bytearray(f.read())
    old = b'"layers.0.self_attn.q_norm.weight"'
    at = data.find(old)
    assert at > 0
    data[at:at + len(old)] = b'"layers.0.self_attn.q_nrm_.weight"'  # the same length: offsets stay right
    weights = os.path.join(_tmp, "no-q-norm.safetensors")
    with open(weights, "wb") as f:
        f.write(data)
    path = folder("qwen3-tiny-st", "dec-no-q-norm", weights=weights)
    assert_error(con, "SELECT embed_load('dec-bad', ?)", "missing tensor 'layers.0.self_attn.q_norm.weight'",
                 args=(path,))
