"""Writes a golden XLM-R folder (tests/fixtures/models2/xlmr-tiny, xlmr-tiny-st) as a GGUF file
the way llama.cpp's convert_hf_to_gguf.py writes XLMRobertaModel: arch "bert" (its BertModel
rules: keys, tensor names, the pooler dropped), the position table without its first
pad_token_id + 1 rows (XLM-R counts positions from there; the converter cuts them, so position i
of the file is Hugging Face's pad + 1 + i) and context_length cut as much; the Unigram tokenizer
as tokenizer.ggml.model "t5": the pieces by id, their scores, their types (unknown, control for
the special added tokens, user-defined for other added tokens, normal), add_space_prefix,
remove_extra_whitespaces (as the sentencepiece.bpe.model that XLM-R folders ship says, and
tokenizer.json's Strip and " {2,}" Replace steps say the same; the converter falls back on
tokenizer_config.json's clean_up_tokenization_spaces only for a folder without that file), the
precompiled charsmap, and the special ids (bos / cls <s>, eos / sep </s>, unk, pad, mask) with add_bos and
add_eos. Plain Python. An XLMRobertaForSequenceClassification folder is written as a reranker,
as the converter writes one (gguf_bert.py says how): no pooling_type key, the output labels,
classifier.dense as cls and classifier.out_proj as cls.output ("rank-key": pooling_type 4 too).
Usage: gguf_xlmr.py MODEL_DIR OUT.gguf f32|f16|q8_0 [rank-key]"""
import base64
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_bert import ALWAYS_F32, gguf_name, head_name, is_reranker, output_labels, pooling  # noqa: E402
from gguf_layout import (ARR, BOOL, F32, I32, STR, U8, U32, base_metadata, encode, kv,  # noqa: E402
                         read_folder, write_file)

UNKNOWN, CONTROL, USER_DEFINED, NORMAL = 2, 3, 4, 1


def t5_vocab(d):
    with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    model = tj["model"]
    if model["type"] != "Unigram":
        raise SystemExit("gguf_xlmr.py: %s's tokenizer is not Unigram" % d)
    added = {a["id"]: a for a in tj.get("added_tokens", [])}
    n = max(len(model["vocab"]), max(added, default=-1) + 1)
    tokens = [added[i]["content"] if i in added else model["vocab"][i][0] if i < len(model["vocab"]) else
              "[PAD%d]" % i for i in range(n)]
    unk = model.get("unk_id")
    scores = [model["vocab"][i][1] if i < len(model["vocab"]) else 0.0 for i in range(len(tokens))]
    types = [UNKNOWN if i == unk else CONTROL if i in added and added[i].get("special") else
             USER_DEFINED if i in added else NORMAL for i in range(len(tokens))]
    norm = tj.get("normalizer") or {}
    parts = norm.get("normalizers", [norm])
    charsmap = next((base64.b64decode(p["precompiled_charsmap"]) for p in parts
                     if p.get("type") == "Precompiled" and p.get("precompiled_charsmap")), b"")
    pre = tj.get("pre_tokenizer") or {}
    add_prefix = pre.get("prepend_scheme", "always") != "never" and pre.get("add_prefix_space", True)
    # the SentencePiece model's remove_extra_whitespaces, which Hugging Face writes as these steps
    cleanup = any(p.get("type") == "Replace" and p.get("pattern", {}).get("Regex") == " {2,}" for p in parts)
    ids = {t: i for i, t in enumerate(tokens)}
    out = [kv("tokenizer.ggml.model", STR, "t5"), kv("tokenizer.ggml.pre", STR, "default"),
           kv("tokenizer.ggml.tokens", ARR, (STR, tokens)), kv("tokenizer.ggml.scores", ARR, (F32, scores)),
           kv("tokenizer.ggml.token_type", ARR, (I32, types)),
           kv("tokenizer.ggml.add_space_prefix", BOOL, bool(add_prefix)),
           kv("tokenizer.ggml.remove_extra_whitespaces", BOOL, bool(cleanup))]
    if charsmap:
        out.append(kv("tokenizer.ggml.precompiled_charsmap", ARR, (U8, charsmap)))
    for key, tok in (("bos", "<s>"), ("eos", "</s>"), ("unknown", "<unk>"), ("seperator", "</s>"),
                     ("padding", "<pad>"), ("cls", "<s>"), ("mask", "<mask>")):
        if tok in ids:
            out.append(kv("tokenizer.ggml.%s_token_id" % key, U32, ids[tok]))
    out += [kv("tokenizer.ggml.add_bos_token", BOOL, True), kv("tokenizer.ggml.add_eos_token", BOOL, True)]
    return out, len(tokens)


def write(src, dst, wtype, mode="", labels=None):
    cfg = dict(json.load(open(os.path.join(src, "config.json"))))
    if cfg.get("model_type") != "xlm-roberta":
        raise SystemExit("gguf_xlmr.py: %s is not an XLM-R folder" % src)
    offset = cfg["pad_token_id"] + 1
    cfg["max_position_embeddings"] -= offset
    voc, n_vocab = t5_vocab(src)
    rank = is_reranker(cfg)
    a = "bert"
    pool = ([kv(a + ".pooling_type", U32, 4)] if mode == "rank-key" else []) if rank else \
        [kv(a + ".pooling_type", U32, pooling(src))]
    kvs = base_metadata(a, os.path.basename(src.rstrip("/")), wtype, cfg) + [
           kv(a + ".attention.layer_norm_epsilon", F32, cfg.get("layer_norm_eps", 1e-5)),
           kv(a + ".attention.causal", BOOL, False)] + pool + [
           kv("tokenizer.ggml.token_type_count", U32, cfg.get("type_vocab_size", 1))] + (
           output_labels(cfg, labels) if rank else []) + voc
    named = {}
    for hf, (shape, vals) in read_folder(src).items():
        name = gguf_name(hf[len("roberta."):] if hf.startswith("roberta.") else hf) or (
            rank and head_name(hf, False))  # the converter drops the pooler: RoBERTa's head does not use it
        if name == "position_embd.weight":
            shape, vals = [shape[0] - offset, shape[1]], vals[offset * shape[1]:]
        if name:
            named[name] = (shape, vals)
    if named["token_embd.weight"][0][0] != n_vocab:
        raise SystemExit("gguf_xlmr.py: %d tokens, %d embedding rows" % (n_vocab, named["token_embd.weight"][0][0]))
    tensors = []
    for name in sorted(named):
        shape, vals = named[name]
        typ, blob = encode(shape, vals, "f32" if name in ALWAYS_F32 else wtype)
        tensors.append((name, shape, typ, blob))
    write_file(dst, kvs, tensors)


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5) or sys.argv[3] not in ("f32", "f16", "q8_0") or sys.argv[4:] not in ([], ["rank-key"]):
        sys.exit("usage: gguf_xlmr.py MODEL_DIR OUT.gguf f32|f16|q8_0 [rank-key]")
    write(sys.argv[1], sys.argv[2], sys.argv[3], (sys.argv[4:] or [""])[0])
