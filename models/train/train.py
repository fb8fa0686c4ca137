"""Trains sqlite-embed's own small sentence encoder on Debian's package descriptions and saves it
as a Hugging Face / sentence-transformers folder.

The model is a BERT (4 layers, hidden 256, 4 heads, feed-forward 1024, 128 positions) with the
bert-base-uncased WordPiece vocabulary, trained from scratch with in-batch negatives
(sentence-transformers' MultipleNegativesRankingLoss: cosine similarities times 20, cross-entropy
both ways) on (summary, description) pairs, mean pooling, normalised. The forward pass is written
here as transformers' BertModel computes it (post-norm layers, exact GELU), so the saved tensors
mean the same to any BERT implementation.

Tokens come from sqlite-embed itself (embed_token_ids over the bert-base-uncased tokenizer folder),
whose WordPiece is checked equal to Hugging Face's by the test suite; Debian's python3 loads it.

Usage: /usr/bin/python3 train.py --pairs PAIRS.jsonl --ext build/embed.so --vocab DIR --out DIR
       [--epochs 1] [--batch 128] [--threads 2] [--max-steps N]"""
import argparse
import json
import math
import os
import random
import shutil
import sqlite3
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = dict(vocab_size=30522, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
           intermediate_size=1024, max_position_embeddings=128, type_vocab_size=2,
           layer_norm_eps=1e-12)
SEED = 20261203
MAX_SUMMARY, MAX_DESC = 32, 128


class Layer(nn.Module):
    def __init__(self, H, NH, I, eps):
        super().__init__()
        self.nh = NH
        self.q, self.k, self.v, self.o = (nn.Linear(H, H) for _ in range(4))
        self.ln1 = nn.LayerNorm(H, eps=eps)
        self.fc1, self.fc2 = nn.Linear(H, I), nn.Linear(I, H)
        self.ln2 = nn.LayerNorm(H, eps=eps)

    def forward(self, x, bias):
        B, T, H = x.shape
        dh = H // self.nh
        q, k, v = (f(x).view(B, T, self.nh, dh).transpose(1, 2) for f in (self.q, self.k, self.v))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh) + bias
        a = torch.matmul(torch.softmax(s, dim=-1), v).transpose(1, 2).reshape(B, T, H)
        x = self.ln1(x + self.o(a))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.word = nn.Embedding(c["vocab_size"], H)
        self.pos = nn.Embedding(c["max_position_embeddings"], H)
        self.tok_type = nn.Embedding(c["type_vocab_size"], H)
        self.ln = nn.LayerNorm(H, eps=c["layer_norm_eps"])
        self.layers = nn.ModuleList(Layer(H, c["num_attention_heads"], c["intermediate_size"], c["layer_norm_eps"])
                                    for _ in range(c["num_hidden_layers"]))
        for m in self.modules():  # BERT's initialisation
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, ids, mask):
        T = ids.shape[1]
        x = self.ln(self.word(ids) + self.pos.weight[:T] + self.tok_type.weight[0])
        bias = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, bias)
        return x

    def embed(self, ids, mask):
        h = self.forward(ids, mask)
        m = mask.unsqueeze(-1).float()
        return F.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)


def tokenize(ext, vocab, texts, limit):
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(ext)
    con.execute("SELECT embed_load('tok', ?)", (vocab,))
    out = []
    for t in texts:
        ids = json.loads(con.execute("SELECT embed_token_ids('tok', ?)", (t,)).fetchone()[0])
        if len(ids) > limit:
            ids = ids[:limit - 1] + ids[-1:]  # keep [SEP] last, as truncation does
        out.append(ids)
    return out


def pad(seqs):
    T = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), T, dtype=torch.long)
    mask = torch.zeros(len(seqs), T, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
        mask[i, :len(s)] = 1
    return ids, mask


def encode_all(model, seqs, batch=256):
    model.eval()
    out = []
    with torch.no_grad():
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        vecs = [None] * len(seqs)
        for a in range(0, len(order), batch):
            idx = order[a:a + batch]
            e = model.embed(*pad([seqs[i] for i in idx]))
            for j, i in enumerate(idx):
                vecs[i] = e[j]
    model.train()
    return torch.stack(vecs)


def evaluate(model, queries, docs):
    """recall@10 and MRR@10 of each query's own document among all documents."""
    q, d = encode_all(model, queries), encode_all(model, docs)
    sims = q @ d.T
    top = sims.topk(10, dim=1).indices
    hits = top == torch.arange(len(queries))[:, None]
    found = hits.any(1)
    rank = hits.float().argmax(1)
    mrr = torch.where(found, 1.0 / (rank.float() + 1), torch.zeros(len(queries))).mean().item()
    return found.float().mean().item(), mrr


def save_safetensors(path, tensors, dtype):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = t.detach().to(dtype).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F16" if dtype == torch.float16 else "F32", "shape": list(t.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def hf_tensors(model):
    t = {"embeddings.word_embeddings.weight": model.word.weight,
         "embeddings.position_embeddings.weight": model.pos.weight,
         "embeddings.token_type_embeddings.weight": model.tok_type.weight,
         "embeddings.LayerNorm.weight": model.ln.weight, "embeddings.LayerNorm.bias": model.ln.bias}
    for i, L in enumerate(model.layers):
        p = "encoder.layer.%d." % i
        for name, m in (("attention.self.query", L.q), ("attention.self.key", L.k), ("attention.self.value", L.v),
                        ("attention.output.dense", L.o), ("intermediate.dense", L.fc1), ("output.dense", L.fc2),
                        ("attention.output.LayerNorm", L.ln1), ("output.LayerNorm", L.ln2)):
            t[p + name + ".weight"] = m.weight
            t[p + name + ".bias"] = m.bias
    return t


def save_folder(model, out, vocab):
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    cfg = dict(CFG, architectures=["BertModel"], model_type="bert", hidden_act="gelu",
               position_embedding_type="absolute", pad_token_id=0, torch_dtype="float16",
               attention_probs_dropout_prob=0.1, hidden_dropout_prob=0.1, initializer_range=0.02)
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
    save_safetensors(os.path.join(out, "model.safetensors"), hf_tensors(model), torch.float16)
    for f in ("tokenizer.json", "vocab.txt"):
        shutil.copy(os.path.join(vocab, f), os.path.join(out, f))
    json.dump({"do_lower_case": True, "model_max_length": 128, "tokenizer_class": "BertTokenizer"},
              open(os.path.join(out, "tokenizer_config.json"), "w"), indent=2)
    json.dump({"max_seq_length": 128, "do_lower_case": False},
              open(os.path.join(out, "sentence_bert_config.json"), "w"), indent=2)
    json.dump({"word_embedding_dimension": CFG["hidden_size"], "pooling_mode_cls_token": False,
               "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False},
              open(os.path.join(out, "1_Pooling", "config.json"), "w"), indent=2)
    json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
              open(os.path.join(out, "modules.json"), "w"), indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--ext", required=True)
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--log", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    rows = [json.loads(line) for line in open(a.pairs)]
    train = [r for r in rows if r["split"] == "train"]
    test = [r for r in rows if r["split"] == "test"]
    t0 = time.time()
    tq = tokenize(a.ext, a.vocab, [r["summary"] for r in train], MAX_SUMMARY)
    td = tokenize(a.ext, a.vocab, [r["description"] for r in train], MAX_DESC)
    eq = tokenize(a.ext, a.vocab, [r["summary"] for r in test], MAX_SUMMARY)
    ed = tokenize(a.ext, a.vocab, [r["description"] for r in test], MAX_DESC)
    log = open(a.log, "a") if a.log else sys.stderr
    print("tokenized %d + %d pairs in %.0f s" % (len(train), len(test), time.time() - t0), file=log, flush=True)
    model = Encoder(CFG)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    steps_per_epoch = len(train) // a.batch
    total = int(steps_per_epoch * a.epochs) if not a.max_steps else a.max_steps
    warm = max(1, total // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm)))
    step, t0 = 0, time.time()
    while step < total:
        order = list(range(len(train)))
        rng.shuffle(order)
        for b in range(0, len(order) - a.batch + 1, a.batch):
            if step >= total:
                break
            idx = order[b:b + a.batch]
            q = model.embed(*pad([tq[i] for i in idx]))
            d = model.embed(*pad([td[i] for i in idx]))
            sims = 20.0 * q @ d.T
            labels = torch.arange(len(idx))
            loss = (F.cross_entropy(sims, labels) + F.cross_entropy(sims.T, labels)) / 2
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % 50 == 0 or step == total:
                print("step %d/%d loss %.4f lr %.2e %.1f s" % (step, total, loss.item(), sched.get_last_lr()[0],
                                                                time.time() - t0), file=log, flush=True)
            if step % 150 == 0 or step == total:
                r, m = evaluate(model, eq, ed)
                print("held out: recall@10 %.4f MRR@10 %.4f" % (r, m), file=log, flush=True)
                save_folder(model, a.out, a.vocab)
    save_folder(model, a.out, a.vocab)


if __name__ == "__main__":
    main()
