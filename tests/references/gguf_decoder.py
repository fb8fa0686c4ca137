"""Decoder embedders as llama.cpp's converter writes them: Qwen3Model as arch "qwen3" (pooling
last), the bidirectional Gemma3TextModel as "gemma-embedding" (pooling mean); their {arch}.*
keys and tensor names (used by bench/peers/gguf_write.py for its random models too), and a Qwen3
folder's byte-level BPE tokenizer as tokenizer.ggml.* (model gpt2, pre qwen2, the tokens by id,
control types for the special added tokens, the merges, <|endoftext|> as eos appended as the
folder's template appends it). Plain Python.
Usage: gguf_decoder.py QWEN3_DIR OUT.gguf f32|f16|q8_0"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_layout import ARR, BOOL, F32, I32, STR, U32, base_metadata, encode, hf_tokens, kv, read_safetensors, write_file  # noqa: E402


def rope_theta(cfg):
    """rope_theta (transformers 4) or rope_parameters' (5)."""
    rp = cfg.get("rope_parameters") or {}
    return cfg.get("rope_theta", rp.get("full_attention", rp).get("rope_theta", 1e6))


def metadata(cfg, arch, wtype):
    gemma = arch == "gemma-embedding"
    hd = cfg["head_dim"]
    m = base_metadata(arch, cfg["model_type"], wtype, cfg) + [
         kv(arch + ".attention.head_count_kv", U32, cfg["num_key_value_heads"]),
         kv(arch + ".attention.key_length", U32, hd), kv(arch + ".attention.value_length", U32, hd),
         kv(arch + ".attention.layer_norm_rms_epsilon", F32, cfg["rms_norm_eps"]),
         kv(arch + ".rope.freq_base", F32, rope_theta(cfg)),
         kv(arch + ".pooling_type", U32, 1 if gemma else 3)]
    if gemma:
        m.append(kv(arch + ".attention.sliding_window", U32, cfg["sliding_window"]))
    return m


def gguf_name(hf, gemma):
    if hf == "embed_tokens.weight":
        return "token_embd.weight"
    if hf == "norm.weight":
        return "output_norm.weight"
    _, n, *rest = hf.split(".")
    part = ".".join(rest[:-1])
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
             "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "pre_feedforward_layernorm": "ffn_norm",
             "post_feedforward_layernorm": "post_ffw_norm",
             "post_attention_layernorm": "post_attention_norm" if gemma else "ffn_norm"}
    return "blk.%s.%s.weight" % (n, names[part])



def qwen_vocab(d):
    tj, toks, added = hf_tokens(d)
    types = [3 if i in added and added[i].get("special") else 4 if i in added else 1  # control, user-defined, normal
             for i in range(len(toks))]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    single = tj["post_processor"]["single"] if tj.get("post_processor", {}).get("type") == "TemplateProcessing" else []
    eos_tok = single[-1]["SpecialToken"]["id"] if single and "SpecialToken" in single[-1] else None
    eos = toks.index(eos_tok) if eos_tok else None
    out = [kv("tokenizer.ggml.model", STR, "gpt2"), kv("tokenizer.ggml.pre", STR, "qwen2"),
           kv("tokenizer.ggml.tokens", ARR, (STR, toks)), kv("tokenizer.ggml.token_type", ARR, (I32, types)),
           kv("tokenizer.ggml.merges", ARR, (STR, merges)), kv("tokenizer.ggml.add_bos_token", BOOL, False)]
    if eos is not None:
        out += [kv("tokenizer.ggml.eos_token_id", U32, eos), kv("tokenizer.ggml.padding_token_id", U32, eos),
                kv("tokenizer.ggml.add_eos_token", BOOL, True)]
    return out


def write_qwen3(src, dst, wtype):
    cfg = json.load(open(os.path.join(src, "config.json")))
    if cfg.get("model_type") != "qwen3":
        raise SystemExit("gguf_decoder.py: %s is not a Qwen3 folder" % src)
    kvs = metadata(cfg, "qwen3", wtype) + qwen_vocab(src)
    tensors = []
    w = read_safetensors(os.path.join(src, "model.safetensors"))
    for hf in sorted(w):
        name = hf[6:] if hf.startswith("model.") else hf
        if name == "lm_head.weight":
            continue
        shape, vals = w[hf]
        typ, blob = encode(shape, vals, wtype)
        tensors.append((gguf_name(name, False), shape, typ, blob))
    write_file(dst, kvs, tensors)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in ("f32", "f16", "q8_0"):
        sys.exit("usage: gguf_decoder.py QWEN3_DIR OUT.gguf f32|f16|q8_0")
    write_qwen3(*sys.argv[1:])
