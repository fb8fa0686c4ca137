"""The sentence stage of sqlite-embed-mini: in-batch negatives on Debian's (summary, description)
pairs, keeping the masked-language stage's knowledge of words in context.

The loss is sentence-transformers' MultipleNegativesRankingLoss (cosine similarities times 20,
cross-entropy both ways; mean pooling, normalised). With --init the encoder starts from mlm.py's
checkpoint and each step also pays the masked-language loss on a batch of the corpus (weight
--mlm-weight), so the sentence objective does not wash out what a word's neighbours say. With
--short-weight W each step also pays W times the loss of two or three words of each summary
finding its description (one direction), for queries as short as people type.

Every step is a function of the seed and the step number (each pass's order is shuffled with the
pass's seed, the corpus batches and masks come from mlm.py's step-seeded functions), so a run
stopped after a checkpoint and resumed gives the same model.

Usage: /usr/bin/python3 train.py --pairs PAIRS.jsonl --ext embed.so --vocab DIR --out DIR --work DIR
       [--init mlm.ckpt|mlm.safetensors --corpus CORPUS.txt] [--short-weight 0] [--epochs 1]
       [--batch 128] [--threads 2] [--minutes M] [--device auto|cpu|cuda] [--precision auto|fp32|bf16]"""
import argparse
import json
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlm  # noqa: E402
import model as net  # noqa: E402

SEED = 20261203
MAX_SUMMARY, MAX_DESC = 32, 128
MLM_PASSES = 1000  # this stage reads the corpus in passes seeded from here, masks seeded from MLM_SEEDS
MLM_SEEDS = 1 << 20


def encode_all(model, seqs, dev, batch=256):
    model.eval()
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    vecs = [None] * len(seqs)
    with torch.no_grad():
        for a in range(0, len(order), batch):
            idx = order[a:a + batch]
            ids, mask = net.pad([seqs[i] for i in idx])
            e = model.embed(ids.to(dev), mask.to(dev)).cpu()
            for j, i in enumerate(idx):
                vecs[i] = e[j]
    model.train()
    return torch.stack(vecs)


def evaluate(model, queries, docs, dev):
    """recall@10 and MRR@10 of each query's own document among all documents."""
    q, d = encode_all(model, queries, dev), encode_all(model, docs, dev)
    top = (q @ d.T).topk(10, dim=1).indices
    hits = top == torch.arange(len(queries))[:, None]
    found = hits.any(1)
    rank = hits.float().argmax(1)
    mrr = torch.where(found, 1.0 / (rank.float() + 1), torch.zeros(len(queries))).mean().item()
    return found.float().mean().item(), mrr


STOP = set("a an and as at by for from in into of on or the to with".split())


def short_query(summary, rng):
    """Two or three words of a summary that neither start nor end on a little word ("compression
    utility", "compress files"): something like what people type into a search box."""
    w = [t.strip("()[],;:") for t in summary.split()]
    w = [t for t in w if any(c.isalnum() for c in t)]
    spans = [w[i:i + n] for n in (2, 3) for i in range(len(w) - n + 1)
             if w[i].lower() not in STOP and w[i + n - 1].lower() not in STOP]
    return " ".join(rng.choice(spans)) if spans else summary


def short_queries(ext, vocab, train, passes):
    """Each pass's short query of each pair, drawn in pair order from a generator seeded with the pass."""
    out = []
    for p in range(passes):
        rng = random.Random(SEED * 7 + p)
        out.append(net.tokenize(ext, vocab, [short_query(r["summary"], rng) for r in train], MAX_SUMMARY))
    return out


def batch_of(n, batch, step):
    """The pair indices of a step: pass p's order is a shuffle seeded with p."""
    per = n // batch
    order = list(range(n))
    random.Random(SEED * 1000 + step // per).shuffle(order)
    s = step % per
    return order[s * batch:(s + 1) * batch]


def arguments():
    ap = argparse.ArgumentParser()
    for name in ("--pairs", "--ext", "--vocab", "--out", "--work"):
        ap.add_argument(name, required=True)
    ap.add_argument("--init", default=None)
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--mlm-weight", type=float, default=0.5)
    ap.add_argument("--mlm-batch", type=int, default=32)
    ap.add_argument("--short-weight", type=float, default=0.0)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--minutes", type=float, default=0)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--precision", default="auto", choices=("auto", "fp32", "bf16"))
    a = ap.parse_args()
    if a.init and not a.corpus:
        ap.error("--init needs --corpus (the masked-language batches that keep the first stage)")
    return a


def load_init(path, model, head, dev):
    """The first stage's weights, from its checkpoint or from its carried file (mlm.save_carry)."""
    if path.endswith(".safetensors"):
        meta = mlm.load_carried_weights(path, model, head)
        model.to(dev)
        head.to(dev)
        return int(meta["step"])
    st = torch.load(path, map_location=dev, weights_only=False)
    model.load_state_dict(st["model"])
    head.load_state_dict(st["head"])
    return st["step"]


def main():
    a = arguments()
    torch.set_num_threads(a.threads)
    dev = torch.device("cuda" if a.device == "auto" and torch.cuda.is_available() else
                       ("cpu" if a.device == "auto" else a.device))
    precision = net.Precision.choose(a.precision, dev)
    torch.manual_seed(SEED)
    rows = [json.loads(line) for line in open(a.pairs)]
    train = [r for r in rows if r["split"] == "train"]
    test = [r for r in rows if r["split"] == "test"]
    tq = net.tokenize(a.ext, a.vocab, [r["summary"] for r in train], MAX_SUMMARY)
    td = net.tokenize(a.ext, a.vocab, [r["description"] for r in train], MAX_DESC)
    eq = net.tokenize(a.ext, a.vocab, [r["summary"] for r in test], MAX_SUMMARY)
    ed = net.tokenize(a.ext, a.vocab, [r["description"] for r in test], MAX_DESC)
    per = len(train) // a.batch  # steps in a pass, as batch_of counts them
    total = int(per * a.epochs)
    ts = short_queries(a.ext, a.vocab, train, -(-total // per)) if a.short_weight else None
    log = open(os.path.join(a.work, "train.log"), "a")
    model = net.Encoder(net.CFG).to(dev)
    head = mlm.MlmHead(model.word).to(dev)
    corpus = None
    if a.init:
        init_step = load_init(a.init, model, head, dev)
        if a.mlm_weight > 0:  # --mlm-weight 0: the sentence loss alone, from the first stage's weights
            corpus = mlm.Batches(mlm.tokenized(a.ext, a.vocab, a.corpus, a.work), a.mlm_batch, MLM_PASSES)
        print("from %s (masked-language step %d)" % (a.init, init_step), file=log, flush=True)
    params = list(model.parameters()) + ([p for n, p in head.named_parameters() if not n.startswith("word.")]
                                         if corpus else [])
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.01)
    warm = max(1, total // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm)))
    ckpt, step = os.path.join(a.work, "sentences.ckpt"), 0
    if os.path.exists(ckpt):
        st = torch.load(ckpt, map_location=dev, weights_only=False)
        model.load_state_dict(st["model"])
        head.load_state_dict(st["head"])
        opt.load_state_dict(st["opt"])
        sched.load_state_dict(st["sched"])
        step = st["step"]
        print("resumed at step %d of %d" % (step, total), file=log, flush=True)
    print("from step %d on %s, %s products, %d threads" % (step, dev, precision, a.threads), file=log, flush=True)
    t0 = time.time()
    while step < total:
        idx = batch_of(len(train), a.batch, step)
        q = model.embed(*(t.to(dev) for t in net.pad([tq[i] for i in idx])))
        d = model.embed(*(t.to(dev) for t in net.pad([td[i] for i in idx])))
        sims = 20.0 * q @ d.T
        labels = torch.arange(len(idx), device=dev)
        loss = (F.cross_entropy(sims, labels) + F.cross_entropy(sims.T, labels)) / 2
        if ts:
            qs = model.embed(*(t.to(dev) for t in net.pad([ts[step // per][i] for i in idx])))
            loss = loss + a.short_weight * F.cross_entropy(20.0 * qs @ d.T, labels)
        mlm_loss = torch.zeros(())
        if corpus:
            ids, attn = corpus.at(step)
            inputs, chosen = mlm.mask_batch(ids, attn, MLM_SEEDS + step)
            h = model(inputs.to(dev), attn.to(dev))
            chosen = chosen.to(dev)
            mlm_loss = F.cross_entropy(head(h[chosen]), ids.to(dev)[chosen])
        opt.zero_grad(set_to_none=True)
        (loss + a.mlm_weight * mlm_loss).backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        out_of_time = a.minutes and time.time() - t0 > a.minutes * 60
        if step % 25 == 0 or step == total or out_of_time:
            print("step %d/%d loss %.4f masked-language loss %.4f lr %.2e %.0f s" % (
                step, total, loss.item(), mlm_loss.item(), sched.get_last_lr()[0], time.time() - t0),
                file=log, flush=True)
        if step % 50 == 0 or step == total or out_of_time:
            mlm.save({"model": model.state_dict(), "head": head.state_dict(), "opt": opt.state_dict(),
                      "sched": sched.state_dict(), "step": step}, ckpt)
        if step % 150 == 0 or step == total:
            r, m = evaluate(model, eq, ed, dev)
            print("held out: recall@10 %.4f MRR@10 %.4f" % (r, m), file=log, flush=True)
        if out_of_time:
            print("train: stopped at step %d of %d; run again to go on" % (step, total), file=sys.stderr)
            return 3
    net.save_folder(model.cpu(), a.out, a.vocab)
    return 0


if __name__ == "__main__":
    sys.exit(main())
