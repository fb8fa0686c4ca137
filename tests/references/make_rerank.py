"""Reference data for cross-encoder scores (tests/sql/test_rerank.py), made independently of the
extension's forward pass: tiny cross-encoder folders built from the golden tiny models of
tests/fixtures (whose encoders are Hugging Face's own checkpoints) plus seeded random
classification heads, and the logits of (query, text) pairs computed by PyTorch modules written
from transformers' modeling code (modeling_bert.py BertForSequenceClassification,
modeling_roberta.py RobertaForSequenceClassification / RobertaClassificationHead,
modeling_modernbert.py ModernBertForSequenceClassification / ModernBertPredictionHead).

Writes tests/references/rerank/<name>/ (config.json naming the ForSequenceClassification
architecture, a model.safetensors.index.json whose encoder shard is a relative symlink to the
fixture's model.safetensors and whose head shard is written here, the tokenizer files as
symlinks, a tokenizer_config.json with a small model_max_length so that pairs get truncated)
and tests/references/rerank/expected.json.

Token ids: neither transformers nor tokenizers is installed, so the single texts' ids come from
the extension's own tokenizer, which the golden suites (test_tokens_wordpiece,
test_tokens_unigram_bpe) prove equal to Hugging Face's on these very tokenizer.json files.
The pair is then assembled and truncated here, in Python, by Hugging Face tokenizers' rule
(TruncationStrategy::LongestFirst of tokenizers/src/utils/truncation.rs, the default of
truncation=True for a pair, on the counts of tokenizers 0.23's early exit: see capped()), and
the script checks that the extension's pair tokenization
(embed_token_ids(model, query, text)) gives the same ids: the references use the ids built
here.

Run: EMBED_EXT=build/embed.so /usr/bin/python3 tests/references/make_rerank.py
(Debian's python3 with python3-torch 1.13)."""
import json, os, sqlite3, struct, sys
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
from torch_encoder import NEG, Bert, ModernBert, load_safetensors  # noqa: E402 (independent PyTorch encoders)

OUT = os.path.join(ROOT, "tests", "references", "rerank")
FIX = os.path.join(ROOT, "tests", "fixtures")
EXT = os.path.abspath(os.environ.get("EMBED_EXT", os.path.join(ROOT, "build", "embed.so")))

# name: fixture folder, architecture, tokens a pair may have, head settings
MODELS = {
    "bert": dict(src="models/bert-tiny-prefixed", arch="BertForSequenceClassification", limit=48, seed=1),
    "bert-sigmoid": dict(src="models/bert-tiny-prefixed", arch="BertForSequenceClassification", limit=48, seed=1,
                         st={"sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Sigmoid",
                                                       "version": "4.0.1"}}),
    "bert-sigmoid-v3": dict(src="models/bert-tiny-prefixed", arch="BertForSequenceClassification", limit=48,
                            seed=1, st={"sbert_ce_default_activation_function": "torch.nn.modules.activation.Sigmoid"}),
    "bert-2labels": dict(src="models/bert-tiny-prefixed", arch="BertForSequenceClassification", limit=48, seed=2,
                         labels=2),
    "xlmr": dict(src="models2/xlmr-tiny", arch="XLMRobertaForSequenceClassification", limit=49, seed=3),
    "modernbert": dict(src="models2/modernbert-tiny", arch="ModernBertForSequenceClassification", limit=160, seed=4),
    "modernbert-cls": dict(src="models2/modernbert-tiny", arch="ModernBertForSequenceClassification", limit=40,
                           seed=5, cfg={"classifier_pooling": "cls", "classifier_bias": True}),
}

LONG_A = ("The giant panda is a bear species endemic to China. It is characterised by its bold black-and-white "
          "coat and rotund body. Its name is sometimes used for the unrelated red panda. Though it belongs to "
          "the order Carnivora, the giant panda is a folivore, with bamboo shoots and leaves making up more than "
          "99 percent of its diet. Giant pandas in the wild occasionally eat other grasses, wild tubers, or even "
          "meat in the form of birds, rodents, or carrion. In captivity, they may receive honey, eggs, fish, "
          "shrub leaves, oranges, or bananas along with specially prepared food.")
LONG_B = ("SQLite is a database engine written in the C programming language. It is not a standalone app; rather, "
          "it is a library that software developers embed in their apps. As such, it belongs to the family of "
          "embedded databases. It is the most widely deployed database engine, as it is used by several of the "
          "top web browsers, operating systems, mobile phones, and other embedded systems. Many programming "
          "languages have bindings to the SQLite library.")
PAIRS = [
    ("what do pandas eat?", "Giant pandas eat bamboo shoots and leaves."),
    ("what do pandas eat?", "SQLite is a database engine written in C."),
    ("what do pandas eat?", LONG_A),  # only the text is long
    (LONG_B, "Pandas eat bamboo."),  # only the query is long
    (LONG_B, LONG_A),  # both are truncated
    ("embedded database library", LONG_B + " " + LONG_A),
    ("¿Qué comen los pandas?", "大熊猫主要以竹子为食，生活在中国的山区。"),
    ("Где живут панды?", "Der Große Panda lebt in den Bergwäldern Zentralchinas."),
    ("panda", ""),
]


def safetensors_bytes(tensors):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = t.detach().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def strip(w, prefix):
    return {k[len(prefix):]: v for k, v in w.items() if k.startswith(prefix)}


def make_head(name, spec, H):
    """Seeded random head tensors, scaled so that the logits are of order 1."""
    g = torch.Generator().manual_seed(spec["seed"])
    L = spec.get("labels", 1)
    r = lambda *s: torch.randn(*s, generator=g) / (s[-1] ** 0.5)
    b = lambda n: torch.randn(n, generator=g) * 0.1
    if spec["arch"].startswith("Bert"):
        return {"classifier.weight": r(L, H), "classifier.bias": b(L)}
    if "Roberta" in spec["arch"]:
        return {"classifier.dense.weight": r(H, H), "classifier.dense.bias": b(H),
                "classifier.out_proj.weight": r(L, H), "classifier.out_proj.bias": b(L)}
    head = {"head.dense.weight": r(H, H), "head.norm.weight": 1.0 + b(H),
            "classifier.weight": r(L, H), "classifier.bias": b(L)}
    if spec.get("cfg", {}).get("classifier_bias"):
        head["head.dense.bias"] = b(H)
    return head


def link(dst, target):
    if os.path.lexists(dst):
        os.remove(dst)
    os.symlink(os.path.relpath(target, os.path.dirname(dst)), dst)


def write_folder(name, spec):
    src, d = os.path.join(FIX, spec["src"]), os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg["architectures"] = [spec["arch"]]
    L = spec.get("labels", 1)
    cfg["id2label"] = {str(i): "LABEL_%d" % i for i in range(L)}
    cfg["label2id"] = {"LABEL_%d" % i: i for i in range(L)}
    cfg.update(spec.get("cfg", {}))
    cfg.update(spec.get("st", {}))
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    enc = load_safetensors(os.path.join(src, "model.safetensors"))
    head = make_head(name, spec, cfg["hidden_size"])
    with open(os.path.join(d, "head.safetensors"), "wb") as f:
        f.write(safetensors_bytes(head))
    link(os.path.join(d, "encoder.safetensors"), os.path.join(src, "model.safetensors"))
    wm = {k: "encoder.safetensors" for k in enc}
    wm.update({k: "head.safetensors" for k in head})
    json.dump({"metadata": {}, "weight_map": dict(sorted(wm.items()))},
              open(os.path.join(d, "model.safetensors.index.json"), "w"), indent=1)
    for f in ("tokenizer.json", "vocab.txt", "special_tokens_map.json"):
        if os.path.exists(os.path.join(src, f)):
            link(os.path.join(d, f), os.path.join(src, f))
    tc = json.load(open(os.path.join(src, "tokenizer_config.json")))
    tc["model_max_length"] = spec["limit"]
    json.dump(tc, open(os.path.join(d, "tokenizer_config.json"), "w"), indent=2)
    return cfg, enc, head


def longest_first(n1, n2, room):
    """tokenizers' TruncationStrategy::LongestFirst for a pair of lengths n1, n2 (room: the
    limit less the pair's special tokens): the lengths each keeps."""
    if n1 + n2 <= room:
        return n1, n2
    swap = n1 > n2
    if swap:
        n1, n2 = n2, n1
    n2 = n1 if n1 > room else max(n1, room - n1)
    if n1 + n2 > room:
        n1 = room // 2
        n2 = n1 + room % 2
    return (n2, n1) if swap else (n1, n2)


def capped(words, cap):
    """The count tokenizers 0.23's early exit for truncation sees (tests/fixtures/GOLDEN_README.md,
    item 8): the tokens up to the end of the word (pre-token) that brings the count to cap."""
    n = 0
    for i, w in enumerate(words):
        n += 1
        if n >= cap and (i + 1 == len(words) or words[i + 1] != w):
            return n
    return n


def pair_ids(q, t, roberta, limit):
    """The pair as the post-processor builds it from the single texts' (ids, words): BERT's
    [CLS] A [SEP] B [SEP] (types 0, then 1 from B on), RoBERTa's <s> A </s></s> B </s> (types 0),
    A and B truncated longest first on the early-exit counts (as tokenizers 0.23 does); also
    whether the classic rule on the full lengths keeps other lengths."""
    (qi, qw, cls, sep), (ti, tw) = q, t[:2]
    if not ti:  # transformers' tokenizer(query, ""): an empty text_pair is no pair, the query alone
        n1 = min(capped(qw, limit), limit - 2)
        ids = [cls] + qi[:n1] + [sep]
        return ids, [0] * len(ids), False
    room = limit - (4 if roberta else 3)
    n1, n2 = longest_first(capped(qw, limit), capped(tw, limit), room)
    classic = longest_first(len(qi), len(ti), room)
    a, b = qi[:n1], ti[:n2]
    mid = [sep, sep] if roberta else [sep]
    ids = [cls] + a + mid + b + [sep]
    types = [0] * len(ids) if roberta else [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return ids, types, classic != (min(n1, len(qi)), min(n2, len(ti)))


def single(con, model, text):
    """A text's tokens without the special tokens (ids, pre-token word of each), and the
    special tokens around them (first, last)."""
    rows = con.execute("SELECT token_id, word FROM embed_tokens(?, ?) ORDER BY position", (model, text)).fetchall()
    body = [r for r in rows if r[1] is not None]
    return [r[0] for r in body], [r[1] for r in body], rows[0][0], rows[-1][0]


class PairBert(nn.Module):
    """BertModel / RobertaModel with token types and RoBERTa's position ids (padding_idx + 1 + i)."""

    def __init__(self, cfg, w, roberta):
        super().__init__()
        self.bert = Bert(cfg, w)
        self.register_buffer("types", w["embeddings.token_type_embeddings.weight"])
        self.offset = cfg["pad_token_id"] + 1 if roberta else 0

    def forward(self, ids, types, mask=None):
        """mask (optional, [B, T] of 0/1): padding, masked out of attention as HF masks it (a
        padded batch's real tokens are then the unpadded pass's; position ids as for no padding)."""
        b, T = self.bert, ids.shape[1]
        pos = torch.arange(T) + self.offset
        x = b.ln(b.word(ids) + b.pos[pos] + self.types[types])
        bias = torch.zeros(1, 1, 1, T) if mask is None else ((1.0 - mask.to(x.dtype)) * NEG)[:, None, None, :]
        for m in b.layers:  # the peer's layers, as its forward runs them
            x = m.ln1(x + m.o(attention_of(m, x, bias, b.nh)))
            x = m.ln2(x + m.fc2(F.gelu(m.fc1(x))))
        return x


def attention_of(m, x, bias, nh):
    from torch_encoder import attention
    return attention(m.q(x), m.k(x), m.v(x), bias, nh)


def logits_of(spec, cfg, enc, head, ids, types):
    H = cfg["hidden_size"]
    arch = spec["arch"]
    t_ids, t_types = torch.tensor([ids]), torch.tensor([types])
    if arch.startswith("Bert") or "Roberta" in arch:
        roberta = "Roberta" in arch
        prefix = "roberta." if roberta else "bert."
        w = strip(enc, prefix)
        h = PairBert(cfg, w, roberta).eval()(t_ids, t_types)[0]
        if not roberta:  # BertForSequenceClassification: classifier(pooler(h[0]))
            pooled = torch.tanh(w["pooler.dense.weight"] @ h[0] + w["pooler.dense.bias"])
            return head["classifier.weight"] @ pooled + head["classifier.bias"]
        x = torch.tanh(head["classifier.dense.weight"] @ h[0] + head["classifier.dense.bias"])
        return head["classifier.out_proj.weight"] @ x + head["classifier.out_proj.bias"]
    # ModernBertForSequenceClassification: final_norm output, pooled, head, classifier
    h = ModernBert(cfg, enc).eval()(t_ids, torch.ones_like(t_ids))[0]
    p = h.mean(dim=0) if cfg.get("classifier_pooling", "cls") == "mean" else h[0]
    d = head["head.dense.weight"] @ p + head.get("head.dense.bias", torch.zeros(H))
    x = F.layer_norm(F.gelu(d), (H,), head["head.norm.weight"], None, cfg.get("norm_eps", 1e-5))
    return head["classifier.weight"] @ x + head["classifier.bias"]


def main():
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(EXT)
    os.makedirs(OUT, exist_ok=True)
    out = {"models": {}, "cases": []}
    torch.set_grad_enabled(False)
    for name, spec in MODELS.items():
        cfg, enc, head = write_folder(name, spec)
        src = "src_" + name.replace("-", "_")
        con.execute("SELECT embed_load(?, ?)", (src, os.path.join(FIX, spec["src"])))
        con.execute("SELECT embed_load(?, ?)", (name, os.path.join(OUT, name)))
        roberta = "Bert" not in spec["arch"] or spec["arch"].startswith("ModernBert")
        act = (spec.get("st", {}).get("sentence_transformers", {}).get("activation_fn")
               or spec.get("st", {}).get("sbert_ce_default_activation_function"))
        out["models"][name] = {"folder": name, "architecture": spec["arch"], "labels": spec.get("labels", 1),
                               "max_tokens": spec["limit"], "activation": act}
        for q, t in PAIRS:
            sq, st = single(con, src, q), single(con, src, t)
            ids, types, early_exit_differs = pair_ids(sq, st, roberta, spec["limit"])
            pair = (name, q, t) if t else (name, q)
            ours = json.loads(con.execute("SELECT embed_token_ids(%s)" % ", ".join("?" * len(pair)),
                                          pair).fetchone()[0])
            assert ours == ids, (name, q[:20], t[:20], ours, ids)
            lg = logits_of(spec, cfg, enc, head, ids, types).tolist()
            # sentence-transformers' CrossEncoder: the folder's activation, else Sigmoid for one label
            sigmoid = act.endswith("Sigmoid") if act else spec.get("labels", 1) == 1
            score = 1.0 / (1.0 + np.exp(-lg[0])) if sigmoid else lg[0]
            out["cases"].append({"model": name, "query": q, "text": t, "tokens": len(ids),
                                 "truncated": len(sq[0]) + len(st[0]) + (4 if roberta else 3) > spec["limit"],
                                 "early_exit_differs": early_exit_differs,
                                 "logits": lg, "score": float(score)})
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
    print("wrote %d cases for %d models" % (len(out["cases"]), len(out["models"])))


if __name__ == "__main__":
    main()
