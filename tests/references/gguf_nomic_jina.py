"""Writes the golden NomicBERT and JinaBERT v2 folders (tests/fixtures/models2/nomic-bert-tiny,
jina-bert-v2-tiny) as GGUF files the way llama.cpp's convert_hf_to_gguf.py writes NomicBertModel
(arch "nomic-bert") and JinaBertModel (arch "jina-bert-v2"); the WordPiece vocabulary, pooling
and weight types as gguf_bert.py writes BertModel's (the vocabulary filled to config.json's
vocab_size with "[PADi]" tokens, as the converter does).
nomic-bert: context_length 2048 (the converter's for n_positions 8192 / max_trained_positions
2048), embedding_length n_embd, feed_forward_length n_inner, head_count n_head,
layer_norm_epsilon, rope.freq_base rotary_emb_base, causal false; tensors token_embd,
token_types, token_embd_norm (emb_ln), blk.N.attn_qkv (Wqkv, fused), attn_output (out_proj),
attn_output_norm (norm1), ffn_up (fc11), ffn_gate (fc12), ffn_down (fc2), layer_output_norm
(norm2). The converter's asserts hold: swiglu, no biases, post-norm, full non-interleaved rotary.
jina-bert-v2: BERT's keys and attention names, no position table; mlp.gated_layers whole as
ffn_up (GEGLU, [2I, H]), mlp.wo as ffn_down, mlp.layernorm as layer_output_norm; the pooler
dropped. "split" writes it as the converters of 2024 did (the files on the Hub from then):
gated_layers' first I rows as ffn_gate (their gated_layers_w), the rest as ffn_up (gated_layers_v).
Plain Python. Usage: gguf_nomic_jina.py MODEL_DIR OUT.gguf f32|f16|q8_0 [split]"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_bert import ALWAYS_F32, pooling, vocab  # noqa: E402
from gguf_layout import BOOL, F32, U32, base_metadata, encode, kv, read_safetensors, write_file  # noqa: E402

NOMIC = ("encoder.layers.", {"embeddings.word_embeddings": "token_embd",
                             "embeddings.token_type_embeddings": "token_types", "emb_ln": "token_embd_norm"},
         {"attn.Wqkv": "attn_qkv", "attn.out_proj": "attn_output", "norm1": "attn_output_norm",
          "mlp.fc11": "ffn_up", "mlp.fc12": "ffn_gate", "mlp.fc2": "ffn_down", "norm2": "layer_output_norm"})
JINA = ("encoder.layer.", {"embeddings.word_embeddings": "token_embd",
                           "embeddings.token_type_embeddings": "token_types",
                           "embeddings.LayerNorm": "token_embd_norm"},
        {"attention.self.query": "attn_q", "attention.self.key": "attn_k", "attention.self.value": "attn_v",
         "attention.output.dense": "attn_output", "attention.output.LayerNorm": "attn_output_norm",
         "mlp.gated_layers": "ffn_up", "mlp.wo": "ffn_down", "mlp.layernorm": "layer_output_norm"})


def gguf_name(hf, names):
    prefix, top, layer = names
    if hf.startswith("bert."):
        hf = hf[5:]
    base, kind = hf.rsplit(".", 1)
    if base in top:
        return top[base] + "." + kind
    if base.startswith(prefix):
        n, rest = base[len(prefix):].split(".", 1)
        if rest in layer:
            return "blk.%s.%s.%s" % (n, layer[rest], kind)
    return None  # the pooler, and anything else the converter drops


def nomic_metadata(cfg):
    npos, mtp = cfg["n_positions"], cfg.get("max_trained_positions", 2048)
    if (npos, mtp) != (8192, 2048) or cfg["activation_function"] != "swiglu" or cfg["causal"] or cfg["prenorm"] \
            or cfg["qkv_proj_bias"] or cfg["mlp_fc1_bias"] or cfg["mlp_fc2_bias"] \
            or cfg["rotary_emb_fraction"] != 1.0 or cfg["rotary_emb_interleaved"] or cfg["rotary_emb_scale_base"]:
        raise SystemExit("gguf_nomic_jina.py: the converter refuses this NomicBERT config")
    dims = {"max_position_embeddings": 2048, "hidden_size": cfg["n_embd"], "num_hidden_layers": cfg["n_layer"],
            "intermediate_size": cfg["n_inner"], "num_attention_heads": cfg["n_head"]}
    return "nomic-bert", NOMIC, dims, cfg["layer_norm_epsilon"], [
        kv("nomic-bert.rope.freq_base", F32, cfg["rotary_emb_base"])]


def jina_metadata(cfg):
    if cfg.get("position_embedding_type") != "alibi" or cfg.get("feed_forward_type") != "geglu":
        raise SystemExit("gguf_nomic_jina.py: not a GEGLU JinaBERT v2 config")
    return "jina-bert-v2", JINA, cfg, cfg.get("layer_norm_eps", 1e-12), []


def split_gated(named):
    """Each blk.N.ffn_up [2I, H] as the older converter's two halves."""
    for name in [n for n in named if n.endswith(".ffn_up.weight")]:
        (rows, cols), vals = named[name]
        half = rows // 2 * cols
        named[name.replace("ffn_up", "ffn_gate")] = ([rows // 2, cols], vals[:half])
        named[name] = ([rows // 2, cols], vals[half:])


def write(src, dst, wtype, edit=None, split=False):
    """edit(kvs, tensors): a test's change to the metadata pairs (encoded, see gguf_layout.kv) and
    tensors [(name, shape, type, bytes)] before they are written. split: jina-bert-v2's gated
    layers as two tensors (the older converter's layout)."""
    cfg = json.load(open(os.path.join(src, "config.json")))
    arch, names, dims, eps, extra = (nomic_metadata if cfg.get("model_type") == "nomic_bert" else jina_metadata)(cfg)
    voc, n_vocab = vocab(src, cfg["vocab_size"])
    kvs = base_metadata(arch, os.path.basename(src.rstrip("/")), wtype, dims) + [
        kv(arch + ".attention.layer_norm_epsilon", F32, eps), kv(arch + ".attention.causal", BOOL, False),
        kv(arch + ".pooling_type", U32, pooling(src)),
        kv("tokenizer.ggml.token_type_count", U32, cfg.get("type_vocab_size", 2))] + extra + voc
    named = {}
    for hf, (shape, vals) in read_safetensors(os.path.join(src, "model.safetensors")).items():
        name = gguf_name(hf, names)
        if name:
            named[name] = (shape, vals)
    if split:
        if arch != "jina-bert-v2":
            raise SystemExit("gguf_nomic_jina.py: split is jina-bert-v2's older layout")
        split_gated(named)
    rows = named["token_embd.weight"][0][0]
    if rows != n_vocab:
        raise SystemExit("gguf_nomic_jina.py: %d tokens, %d embedding rows" % (n_vocab, rows))
    tensors = []
    for name in sorted(named):
        shape, vals = named[name]
        typ, blob = encode(shape, vals, "f32" if name in ALWAYS_F32 else wtype)
        tensors.append((name, shape, typ, blob))
    if edit:
        edit(kvs, tensors)
    write_file(dst, kvs, tensors)


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5) or sys.argv[3] not in ("f32", "f16", "q8_0") or sys.argv[4:] not in ([], ["split"]):
        sys.exit("usage: gguf_nomic_jina.py MODEL_DIR OUT.gguf f32|f16|q8_0 [split]")
    write(*sys.argv[1:4], split=len(sys.argv) == 5)
