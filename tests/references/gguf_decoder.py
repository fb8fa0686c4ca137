"""Decoder embedders as llama.cpp's converter writes them: Qwen3Model as arch "qwen3" (pooling
last), the bidirectional Gemma3TextModel as "gemma-embedding" (pooling mean); their {arch}.*
keys and tensor names (used by bench/peers/gguf_write.py for its random models too), and a Qwen3
folder's byte-level BPE tokenizer as tokenizer.ggml.* (model gpt2, pre qwen2, the tokens by id,
control types for the special added tokens, the merges, <|endoftext|> as eos appended as the
folder's template appends it).
EmbeddingGemma (write_gemma) as EmbeddingGemma's converter class writes it: Gemma's norm weights
plus one, the embedding rows cut to the vocabulary, rope.freq_base_swa, the file's sliding_window,
pooling from 1_Pooling, and with "dense" the sentence-transformers Dense layers as dense_2.weight /
dense_3.weight with {arch}.dense_2_feat_in/out, dense_3_feat_in/out (the converter's
--sentence-transformers-dense-modules; without it, as ggml-org's published files, none). Its
tokenizer as _set_vocab_sentencepiece writes a tokenizer.model: tokenizer.ggml.model "llama",
the pieces by id with scores (a SentencePiece BPE model scores piece i -i: its merge order) and
types (control, unknown, byte, normal), the special ids, add_bos / add_eos from the folder's
template, add_space_prefix false. One key the converter does not write: the folder's 3 layers
are not Gemma's period of 6 (llama.cpp's default), so attention.sliding_window_pattern says 3.
Plain Python.
Usage: gguf_decoder.py QWEN3_DIR|GEMMA3_DIR OUT.gguf f32|f16|q8_0 [dense]"""
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
        local = (cfg.get("rope_parameters") or {}).get("sliding_attention", {}).get("rope_theta")
        if local is not None:  # transformers 5's configs; llama.cpp's default is 1e4
            m.append(kv(arch + ".rope.freq_base_swa", F32, local))
        period = swa_period(cfg)
        if period != 6:
            m.append(kv(arch + ".attention.sliding_window_pattern", U32, period))
    return m


def swa_period(cfg):
    """Every period-th layer full, the others sliding (llama.cpp's set_swa_pattern)."""
    lt = cfg.get("layer_types")
    if not lt:
        return cfg.get("sliding_window_pattern", cfg.get("_sliding_window_pattern", 6))
    full = [i for i, t in enumerate(lt) if t == "full_attention"]
    p = full[0] + 1 if full else len(lt) + 1
    if any((t == "full_attention") != (i % p == p - 1) for i, t in enumerate(lt)):
        raise SystemExit("gguf_decoder.py: layer_types %s have no period" % lt)
    return p


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


def gemma_vocab(d):
    """What _set_vocab_sentencepiece writes for the folder's tokenizer (were it a tokenizer.model)."""
    tj, toks, added = hf_tokens(d)
    unk = tj["model"].get("unk_token")
    types, scores = [], []
    for i, t in enumerate(toks):
        if t == unk:
            types.append(2)
        elif i in added:
            types.append(3 if added[i].get("special") else 4)
        elif len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
            types.append(6)
        else:
            types.append(1)
        scores.append(-float(i) if types[-1] == 1 else 0.0)
    tmpl = tj["post_processor"]["single"]
    ids = {t: i for i, t in enumerate(toks)}
    out = [kv("tokenizer.ggml.model", STR, "llama"), kv("tokenizer.ggml.pre", STR, "default"),
           kv("tokenizer.ggml.tokens", ARR, (STR, toks)), kv("tokenizer.ggml.scores", ARR, (F32, scores)),
           kv("tokenizer.ggml.token_type", ARR, (I32, types))]
    cfg = json.load(open(os.path.join(d, "tokenizer_config.json")))
    for key, name in (("bos", "bos_token"), ("eos", "eos_token"), ("unknown", "unk_token"),
                      ("padding", "pad_token"), ("mask", "mask_token")):
        if cfg.get(name) in ids:
            out.append(kv("tokenizer.ggml.%s_token_id" % key, U32, ids[cfg[name]]))
    out += [kv("tokenizer.ggml.add_bos_token", BOOL, "SpecialToken" in tmpl[0]),
            kv("tokenizer.ggml.add_eos_token", BOOL, "SpecialToken" in tmpl[-1]),
            kv("tokenizer.ggml.add_space_prefix", BOOL, False)]
    return out


def write_gemma(src, dst, wtype, dense=False):
    cfg = json.load(open(os.path.join(src, "config.json")))
    if cfg.get("model_type") != "gemma3_text" or not cfg.get("use_bidirectional_attention"):
        raise SystemExit("gguf_decoder.py: %s is not a bidirectional Gemma3 folder" % src)
    if json.load(open(os.path.join(src, "1_Pooling", "config.json"))).get("pooling_mode", "mean") != "mean":
        raise SystemExit("gguf_decoder.py: %s does not pool by the mean" % src)
    kvs = metadata(cfg, "gemma-embedding", wtype)  # pooling_type mean
    vocab = gemma_vocab(src)
    tensors = []
    w = read_safetensors(os.path.join(src, "model.safetensors"))
    n_vocab = len(hf_tokens(src)[1])
    for hf in sorted(w):
        name = hf[6:] if hf.startswith("model.") else hf
        shape, vals = w[hf]
        if name.endswith("norm.weight"):  # Gemma3RMSNorm multiplies by 1 + w: the converter stores 1 + w
            vals = [x + 1.0 for x in vals]  # rounded to float32 when written, as torch's float32 sum
        if name == "embed_tokens.weight":
            shape, vals = [n_vocab, shape[1]], vals[:n_vocab * shape[1]]
        typ, blob = encode(shape, vals, wtype)
        tensors.append((gguf_name(name, True), shape, typ, blob))
    if dense:
        for module, part in (("2_Dense", "dense_2"), ("3_Dense", "dense_3")):
            shape, vals = read_safetensors(os.path.join(src, module, "model.safetensors"))["linear.weight"]
            kvs += [kv("gemma-embedding.%s_feat_in" % part, U32, shape[1]),
                    kv("gemma-embedding.%s_feat_out" % part, U32, shape[0])]
            typ, blob = encode(shape, vals, wtype)
            tensors.append((part + ".weight", shape, typ, blob))
    write_file(dst, kvs + vocab, tensors)


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5) or sys.argv[3] not in ("f32", "f16", "q8_0") or sys.argv[4:] not in ([], ["dense"]):
        sys.exit("usage: gguf_decoder.py QWEN3_DIR|GEMMA3_DIR OUT.gguf f32|f16|q8_0 [dense]")
    model_type = json.load(open(os.path.join(sys.argv[1], "config.json"))).get("model_type")
    if model_type == "gemma3_text":
        write_gemma(*sys.argv[1:4], dense=len(sys.argv) == 5)
    else:
        write_qwen3(*sys.argv[1:4])
