"""Writes a golden BERT-family folder (BertModel: tests/fixtures/models/bert-tiny-uncased,
minilm-tiny-st, ...) as a GGUF file the way llama.cpp's convert_hf_to_gguf.py writes BertModel:
arch "bert"; its hyper-parameters under bert.*; bert.pooling_type from the sentence-transformers
Pooling config (mean or CLS; mean for a folder without one); the WordPiece vocabulary in
llama.cpp's "phantom space" spelling (a continuation loses its "##", every other token but the
control ones gains U+2581), token types (control for the tokenizer's special added tokens, normal
otherwise), the special ids; tensors renamed (token_embd, position_embd, token_types,
token_embd_norm, blk.N.attn_q|k|v|output, attn_output_norm, ffn_up, ffn_down, layer_output_norm),
the pooler dropped; 2-D weights in the type asked (F32, F16, or Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 where a
row is whole blocks of 32 and F16 otherwise, as the converter and llama-quantize do), norms, biases and the position and token-type tables
F32. Plain Python (tests/sql/test_gguf.py writes its files with it).

A cross-encoder folder (BertForSequenceClassification, and XLM-R's through gguf_xlmr.py) is
written as the converter writes one: no pooling_type key (the folder has no Pooling module;
llama.cpp is run with --reranking, rank pooling), {arch}.classifier.output_labels from id2label
(none for transformers' two placeholder labels LABEL_0 / LABEL_1, which this writer refuses: the
converter then names BERT's classifier "cls" at [2, H], a file llama.cpp does not load), the
head's output layer as cls.output (BERT's classifier, XLM-R's classifier.out_proj) and XLM-R's
classifier.dense as cls. BERT's pooler.dense, which the converter drops (its BertModel is written
for embeddings), is written here as cls / cls.bias: llama.cpp's rank pooling computes
cls.output(tanh(cls(h[0]))), which with the pooler as cls is BertForSequenceClassification's
classifier(pooler(h[0])) exactly; "no-pooler" writes the converter's file without it (llama.cpp
scores it as classifier(h[0])), "rank-key" writes bert.pooling_type 4 as well.
Usage: gguf_bert.py MODEL_DIR OUT.gguf f32|f16|q8_0|q4_0|q4_1|q5_0|q5_1 [no-pooler|rank-key]"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_layout import ARR, BOOL, F32, I32, STR, U32, base_metadata, encode, hf_tokens, kv, read_folder, write_file  # noqa: E402
from gguf_quant import f32_twin  # noqa: E402

CONTROL, NORMAL, UNUSED = 3, 1, 5
ALWAYS_F32 = ("position_embd.weight", "token_types.weight")  # llama.cpp adds them to float32 rows


def vocab(d, size=0):
    """size: config.json's vocab_size where the embedding has more rows than the tokenizer has
    tokens; the converter fills the gap with "[PADi]" tokens of type unused."""
    tj, tokens, added = hf_tokens(d)
    v = tj["model"]["vocab"]
    toks, types = [], []
    for i, t in enumerate(tokens):
        ctrl = i in added and added[i].get("special")
        types.append(CONTROL if ctrl else NORMAL)
        toks.append(t if ctrl else t[2:] if t.startswith("##") else "\u2581" + t)
    for i in range(len(toks), size):
        toks.append("[PAD%d]" % i)
        types.append(UNUSED)
    ids = {name: v[tok] for name, tok in (("unk", "[UNK]"), ("sep", "[SEP]"), ("pad", "[PAD]"), ("cls", "[CLS]"),
                                          ("mask", "[MASK]")) if tok in v}
    out = [kv("tokenizer.ggml.model", STR, "bert"), kv("tokenizer.ggml.pre", STR, "default"),
           kv("tokenizer.ggml.tokens", ARR, (STR, toks)), kv("tokenizer.ggml.token_type", ARR, (I32, types))]
    key = {"unk": "unknown", "sep": "seperator", "pad": "padding", "cls": "cls", "mask": "mask"}  # gguf-py's spellings
    for name, i in ids.items():
        out.append(kv("tokenizer.ggml.%s_token_id" % key[name], U32, i))
    if "cls" in ids:  # TemplateProcessing [CLS] $A [SEP]: the converter's bos / eos
        out += [kv("tokenizer.ggml.bos_token_id", U32, ids["cls"]), kv("tokenizer.ggml.add_bos_token", BOOL, True)]
    if "sep" in ids:
        out += [kv("tokenizer.ggml.eos_token_id", U32, ids["sep"]), kv("tokenizer.ggml.add_eos_token", BOOL, True)]
    return out, len(toks)


def pooling(d):
    """1 mean, 2 CLS (llama.cpp's LLAMA_POOLING_TYPE_*) from the sentence-transformers Pooling module."""
    try:
        mods = json.load(open(os.path.join(d, "modules.json")))
        path = next(m["path"] for m in mods if m["type"].endswith("Pooling"))
        cfg = json.load(open(os.path.join(d, path, "config.json")))
    except (OSError, StopIteration):
        return 1
    return 2 if cfg.get("pooling_mode_cls_token") else 1


NAMES = {"attention.self.query": "attn_q", "attention.self.key": "attn_k", "attention.self.value": "attn_v",
         "attention.output.dense": "attn_output", "attention.output.LayerNorm": "attn_output_norm",
         "intermediate.dense": "ffn_up", "output.dense": "ffn_down", "output.LayerNorm": "layer_output_norm"}
TOP = {"embeddings.word_embeddings": "token_embd", "embeddings.position_embeddings": "position_embd",
       "embeddings.token_type_embeddings": "token_types", "embeddings.LayerNorm": "token_embd_norm"}


def gguf_name(hf):
    if hf.startswith("bert."):
        hf = hf[5:]
    base, kind = hf.rsplit(".", 1)
    if base in TOP:
        return TOP[base] + "." + kind
    if base.startswith("encoder.layer."):
        _, _, n, rest = base.split(".", 3)
        if rest in NAMES:
            return "blk.%s.%s.%s" % (n, NAMES[rest], kind)
    return None  # the pooler, and anything else the converter drops


def is_reranker(cfg):
    return any(a.endswith("ForSequenceClassification") for a in cfg.get("architectures") or [])


def output_labels(cfg, labels=None):
    """The converter's {arch}.classifier.output_labels: id2label's names by id; labels overrides
    them (a test's named labels)."""
    if labels is None:
        id2label = cfg.get("id2label") or {}
        labels = [id2label[k] for k in sorted(id2label, key=int)]
        if len(labels) == 2 and labels[0] == "LABEL_0":
            raise SystemExit("gguf: id2label holds transformers' placeholder labels LABEL_0 / LABEL_1: the converter "
                             "writes no labels then, and llama.cpp cannot load the head")
    return [kv("bert.classifier.output_labels", ARR, (STR, labels))]


HEAD = {"classifier": "cls.output", "classifier.out_proj": "cls.output", "classifier.dense": "cls",
        "pooler.dense": "cls"}


def head_name(hf, pooler):
    """A cross-encoder's head tensor's GGUF name, else None."""
    for p in ("bert.", "roberta."):
        if hf.startswith(p):
            hf = hf[len(p):]
    base, kind = hf.rsplit(".", 1)
    if base == "pooler.dense" and not pooler:
        return None
    return HEAD[base] + "." + kind if base in HEAD else None


def write(src, dst, wtype, twin=None, mode="", labels=None):
    """src's folder as dst in wtype; twin (a path): the same file with its blocks dequantized into
    F32 by gguf_quant.py, the float32 weights a reader of dst should use. mode: "no-pooler" or
    "rank-key" for a cross-encoder (see above); labels: its output labels' names."""
    cfg = json.load(open(os.path.join(src, "config.json")))
    if cfg.get("model_type") != "bert":
        raise SystemExit("gguf_bert.py: %s is not a BERT folder" % src)
    rank = is_reranker(cfg)
    voc, n_vocab = vocab(src)
    if rank:
        voc = output_labels(cfg, labels) + voc
    kvs = metadata(src, cfg, wtype, voc, rank and (4 if mode == "rank-key" else None))
    named = {}
    for hf, (shape, vals) in read_folder(src).items():
        name = gguf_name(hf) or (rank and head_name(hf, mode != "no-pooler"))
        if name:
            named[name] = (shape, vals)
    if named["token_embd.weight"][0][0] != n_vocab:
        raise SystemExit("gguf_bert.py: %d tokens, %d embedding rows" % (n_vocab, named["token_embd.weight"][0][0]))
    tensors = []
    for name in sorted(named):
        shape, vals = named[name]
        typ, blob = encode(shape, vals, "f32" if name in ALWAYS_F32 else wtype)
        tensors.append((name, shape, typ, blob))
    write_file(dst, kvs, tensors)
    if twin:
        write_file(twin, metadata(src, cfg, "f32", voc, rank and (4 if mode == "rank-key" else None)),
                   f32_twin(tensors))


def metadata(src, cfg, wtype, voc, pool=False):
    """pool: the pooling_type to write; False: the folder's Pooling module's; None: none (a
    cross-encoder's, as the converter writes it)."""
    a = "bert"
    pool = pooling(src) if pool is False else pool
    return base_metadata(a, os.path.basename(src.rstrip("/")), wtype, cfg) + [
           kv(a + ".attention.layer_norm_epsilon", F32, cfg.get("layer_norm_eps", 1e-12)),
           kv(a + ".attention.causal", BOOL, False)] + (
           [] if pool is None else [kv(a + ".pooling_type", U32, pool)]) + [
           kv("tokenizer.ggml.token_type_count", U32, cfg.get("type_vocab_size", 2))] + voc


TYPES = ("f32", "f16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1")

if __name__ == "__main__":
    if len(sys.argv) not in (4, 5) or sys.argv[3] not in TYPES or sys.argv[4:] not in ([], ["no-pooler"], ["rank-key"]):
        sys.exit("usage: gguf_bert.py MODEL_DIR OUT.gguf " + "|".join(TYPES) + " [no-pooler|rank-key]")
    write(sys.argv[1], sys.argv[2], sys.argv[3], mode=(sys.argv[4:] or [""])[0])
