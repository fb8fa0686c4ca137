"""Masked-language pretraining of sqlite-embed's own model, resumable in steps.

The model learns to predict a hidden word from its neighbours (BERT's recipe: 15 % of the tokens
chosen, 80 % of those replaced by [MASK], 10 % by a random token, 10 % left; the prediction head
a dense layer, GELU, LayerNorm, then the word embedding table transposed). That is what lets a
contextual vector tell "left" the verb from "left" the direction; in-batch negatives alone do not.

Everything that decides a step is a function of the seed and the step number: the paragraph
order of each pass (shuffled with the pass's seed, packed into sequences of at most 128 tokens
joined by [SEP]) and the masks (a generator seeded with the step). So a run stopped after any
checkpoint and resumed gives the same model as one that never stopped. The learning rate warms up
over 100 steps and then stays, so a run can also be taken past its --steps later. A checkpoint (model,
optimiser, step) is written every --every steps and at --minutes; the saved folder beside it
is a BertModel that sqlite-embed loads.

Usage: /usr/bin/python3 mlm.py --corpus CORPUS.txt --ext embed.so --vocab DIR --work DIR
       [--steps 20000] [--batch 64] [--threads 2] [--minutes M] [--device auto|cpu|cuda]
       [--precision auto|fp32|bf16] [--carry WEIGHTS.safetensors]"""
import argparse
import hashlib
import os
import random
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model as net  # noqa: E402  (the encoder, the tokenizer call and the folder writer)

SEED = 20261206
SEQ = 128
WARMUP = 100
CLS, SEP, MASK, FIRST_WORD = 101, 102, 103, 999  # bert-base-uncased ids; below 999: specials, unused


class MlmHead(nn.Module):
    def __init__(self, word):
        super().__init__()
        H = word.weight.shape[1]
        self.dense, self.ln = net.Linear(H, H), nn.LayerNorm(H, eps=1e-12)
        self.word = word  # tied, as BERT's decoder
        self.bias = nn.Parameter(torch.zeros(word.weight.shape[0]))
        nn.init.normal_(self.dense.weight, std=0.02)
        nn.init.zeros_(self.dense.bias)

    def forward(self, h):
        return net.matmul(self.ln(F.gelu(self.dense(h))), self.word.weight.T) + self.bias


def tokenized(ext, vocab, corpus, work):
    """The corpus's paragraphs as token ids without [CLS]/[SEP], cached by the corpus's sha256."""
    digest = hashlib.sha256(open(corpus, "rb").read()).hexdigest()
    cache = os.path.join(work, "corpus-%s.pt" % digest[:16])
    if os.path.exists(cache):
        return torch.load(cache, weights_only=False)  # our own files; PyTorch 2.6 changed the default
    t0 = time.time()
    paras = [line.rstrip("\n") for line in open(corpus, encoding="utf-8")]
    ids = [s[1:-1] for s in net.tokenize(ext, vocab, paras, SEQ)]
    flat = torch.tensor([t for s in ids for t in s], dtype=torch.int32)
    offsets = torch.tensor([0] + [len(s) for s in ids], dtype=torch.int64).cumsum(0)
    data = {"sha256": digest, "ids": flat, "offsets": offsets}
    torch.save(data, cache + ".tmp")
    os.replace(cache + ".tmp", cache)
    print("tokenized %d paragraphs, %d tokens, in %.0f s" % (len(ids), len(flat), time.time() - t0),
          file=sys.stderr)
    return data


def pack(data, epoch):
    """The pass's sequences as lists of paragraphs: the pass's seeded order, at most SEQ tokens."""
    off = data["offsets"].tolist()
    order = list(range(len(off) - 1))
    random.Random(SEED * 1000 + epoch).shuffle(order)
    seqs, cur, used = [], [], 0
    for i in order:
        n = min(off[i + 1] - off[i], SEQ - 2)
        if cur and used + 1 + n > SEQ - 2:
            seqs.append(cur)
            cur, used = [], 0
        cur.append(i)
        used += n + (1 if used else 0)
    if cur:
        seqs.append(cur)
    return seqs


def sequence(data, paras):
    """[CLS] paragraph [SEP] paragraph ... [SEP], each paragraph cut to fit."""
    off, ids, out = data["offsets"], data["ids"], [CLS]
    for i in paras:
        out += ids[off[i]:off[i + 1]].tolist()[:SEQ - 2] + [SEP]
    return out


def mask_batch(ids, attn, step):
    """BERT's masking, from a generator seeded with the step (so a resumed run masks alike)."""
    g = torch.Generator().manual_seed(SEED + step)
    maskable = attn.bool() & (ids != CLS) & (ids != SEP)
    chosen = (torch.rand(ids.shape, generator=g) < 0.15) & maskable
    r = torch.rand(ids.shape, generator=g)
    inputs = ids.clone()
    inputs[chosen & (r < 0.8)] = MASK
    rand_ids = torch.randint(FIRST_WORD, 30522, ids.shape, generator=g)
    swap = chosen & (r >= 0.8) & (r < 0.9)
    inputs[swap] = rand_ids[swap]
    return inputs, chosen


class Batches:
    """The sequences of passes first_pass, first_pass + 1, ..., each cut into whole batches."""

    def __init__(self, data, batch, first_pass=0):
        self.data, self.batch, self.first = data, batch, first_pass
        self.pass_no, self.seqs, self.per_pass = None, [], {}

    def load(self, p):
        if self.pass_no != p:
            self.seqs, self.pass_no = pack(self.data, p), p
            self.per_pass[p] = len(self.seqs) // self.batch

    def at(self, step):
        p = self.first
        while True:
            if p not in self.per_pass:
                self.load(p)
            if step < self.per_pass[p]:
                break
            step -= self.per_pass[p]
            p += 1
        self.load(p)
        return net.pad([sequence(self.data, q) for q in self.seqs[step * self.batch:(step + 1) * self.batch]])


def save(state, path):
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


def save_carry(path, model, head, step, a, corpus):
    """The weights alone, in float16 (22 MB instead of the checkpoint's 130): small enough to commit,
    so that a machine whose build/ does not outlive a session can take the stage further."""
    t = {"model." + k: v.cpu() for k, v in model.state_dict().items()}
    t.update({"head." + k: v.cpu() for k, v in head.state_dict().items() if not k.startswith("word.")})
    net.save_safetensors(path, t, torch.float16, {"step": str(step), "batch": str(a.batch),
                                                  "lr": str(a.lr), "corpus": corpus})


def load_carried_weights(path, model, head):
    """Puts a carried file's weights into model and head (its tied word rows are the model's); returns
    its metadata."""
    t, meta = net.load_safetensors(path)
    model.load_state_dict({k[6:]: v for k, v in t.items() if k.startswith("model.")})
    head.load_state_dict({k[5:]: v for k, v in t.items() if k.startswith("head.")}, strict=False)
    return meta


def load_carry(path, model, head, a, corpus, log):
    """Starts from a carried file: its weights and step; AdamW's moments start again (warm-up)."""
    meta = load_carried_weights(path, model, head)
    if int(meta["batch"]) != a.batch:  # the step's batches would not be the ones it counts
        sys.exit("mlm: %s was trained with batch %s, not %d" % (path, meta["batch"], a.batch))
    if meta["corpus"] != corpus:  # the archive's descriptions moved on: the steps read the new text
        print("carried from corpus %s, now %s" % (meta["corpus"][:16], corpus[:16]), file=log, flush=True)
    return int(meta["step"])


def main():
    ap = argparse.ArgumentParser()
    for name in ("--corpus", "--ext", "--vocab", "--work"):
        ap.add_argument(name, required=True)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--every", type=int, default=200)
    ap.add_argument("--minutes", type=float, default=0)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--precision", default="auto", choices=("auto", "fp32", "bf16"))
    ap.add_argument("--carry", help="weights file to start from when WORK has no checkpoint, "
                    "and to write at every checkpoint (see save_carry)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dev = torch.device("cuda" if a.device == "auto" and torch.cuda.is_available() else
                       ("cpu" if a.device == "auto" else a.device))
    precision = net.Precision.choose(a.precision, dev)
    torch.manual_seed(SEED)
    data = tokenized(a.ext, a.vocab, a.corpus, a.work)
    model = net.Encoder(net.CFG).to(dev)
    head = MlmHead(model.word).to(dev)
    params = list(model.parameters()) + [p for n, p in head.named_parameters() if not n.startswith("word.")]
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.01)
    # warm-up, then a constant rate: a run can be taken further later without changing its past
    # steps (the sentence stage that follows has its own warm-up and decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / WARMUP))
    ckpt, step = os.path.join(a.work, "mlm.ckpt"), 0
    if os.path.exists(ckpt):
        st = torch.load(ckpt, map_location=dev, weights_only=False)
        if st["corpus"] != data["sha256"] or st["batch"] != a.batch:
            sys.exit("mlm: %s is for another corpus or batch size; remove it to start again" % ckpt)
        model.load_state_dict(st["model"])
        head.load_state_dict(st["head"])
        opt.load_state_dict(st["opt"])
        sched.load_state_dict(st["sched"])
        step = st["step"]
        print("mlm: resumed at step %d of %d" % (step, a.steps), file=sys.stderr)
    log = open(os.path.join(a.work, "mlm.log"), "a")
    if step == 0 and a.carry and os.path.exists(a.carry):
        step = load_carry(a.carry, model, head, a, data["sha256"], log)
        print("mlm: carried from %s at step %d" % (a.carry, step), file=sys.stderr)
    batches, t0 = Batches(data, a.batch), time.time()
    print("from step %d on %s, %s products, %d threads" % (step, dev, precision, a.threads), file=log, flush=True)
    loss_sum = acc_sum = n_sum = steps_sum = 0.0
    while step < a.steps:
        ids, attn = batches.at(step)
        inputs, chosen = mask_batch(ids, attn, step)
        h = model(inputs.to(dev), attn.to(dev))
        chosen = chosen.to(dev)
        logits = head(h[chosen])
        target = ids.to(dev)[chosen]
        loss = F.cross_entropy(logits, target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        loss_sum, steps_sum = loss_sum + loss.item(), steps_sum + 1
        acc_sum += (logits.argmax(-1) == target).float().sum().item()
        n_sum += len(target)
        out_of_time = a.minutes and time.time() - t0 > a.minutes * 60
        if step % 50 == 0 or step == a.steps or out_of_time:
            print("step %d/%d loss %.4f masked accuracy %.4f lr %.2e %.0f s" % (
                step, a.steps, loss_sum / steps_sum, acc_sum / max(1, n_sum), sched.get_last_lr()[0], time.time() - t0),
                file=log, flush=True)
            loss_sum = acc_sum = n_sum = steps_sum = 0.0
        if step % a.every == 0 or step == a.steps or out_of_time:
            save({"model": model.state_dict(), "head": head.state_dict(), "opt": opt.state_dict(),
                  "sched": sched.state_dict(), "step": step, "batch": a.batch,
                  "corpus": data["sha256"]}, ckpt)
            net.save_folder(model.cpu(), os.path.join(a.work, "mlm-model"), a.vocab)
            if a.carry:
                save_carry(a.carry, model, head, step, a, data["sha256"])
            model.to(dev)
        if out_of_time:
            print("mlm: stopped at step %d of %d after %.0f minutes; run again to go on" % (
                step, a.steps, a.minutes), file=sys.stderr)
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
