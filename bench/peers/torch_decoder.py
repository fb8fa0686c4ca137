"""PyTorch peers of bench_decoder: Qwen3Model and the bidirectional Gemma3TextModel (EmbeddingGemma)
written out in plain PyTorch from the same model.safetensors that bench_decoder --write put in a
folder (Debian's python3-torch has no transformers), checked against our pooled vectors
(check.txt / check.f32: Qwen3 the last token, Gemma the mean), then timed in float32 and with
dynamic int8 quantization (quantize_dynamic) on workloads.txt, with torch_encoder.py's timing rule.
It is also an independent float32 reading of the same weights: its distance to ours and to
llama.cpp's (bench/README.md) says whose rounding is whose.

Usage: python3 torch_decoder.py DIR KEY [--threads 1,2] [--results FILE] [--workload KEY] [--impl torch_fp32|torch_int8]
Debian's python3 with python3-torch."""
import argparse, json, os, sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_encoder import linear, load_safetensors, read_batches, rope_table, rotary, time_impls  # noqa: E402


class RMSNorm(nn.Module):
    """x / rms(x) * w, or * (1 + w) for Gemma, in float32 as transformers computes it."""

    def __init__(self, w, eps, offset):
        super().__init__()
        self.w = nn.Parameter(w + 1.0 if offset else w.clone(), requires_grad=False)
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


class Layer(nn.Module):
    def __init__(self, cfg, w, l, gemma):
        super().__init__()
        p, eps = f"layers.{l}.", cfg["rms_norm_eps"]
        g = lambda n: RMSNorm(w[p + n + ".weight"], eps, gemma)  # noqa: E731
        self.in_norm, self.q_norm, self.k_norm = g("input_layernorm"), g("self_attn.q_norm"), g("self_attn.k_norm")
        self.q, self.k, self.v, self.o = (linear(w[p + f"self_attn.{n}_proj.weight"]) for n in "qkvo")
        self.gate, self.up, self.down = (linear(w[p + f"mlp.{n}_proj.weight"]) for n in ("gate", "up", "down"))
        self.gemma = gemma
        if gemma:
            self.post_attn, self.pre_ff = g("post_attention_layernorm"), g("pre_feedforward_layernorm")
            self.post_ff = g("post_feedforward_layernorm")
        else:
            self.pre_ff = g("post_attention_layernorm")
        self.nh, self.kv, self.hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]

    def forward(self, x, cos, sin, bias, scale):
        B, T, _ = x.shape
        h = self.in_norm(x)
        q = rotary(self.q_norm(self.q(h).view(B, T, self.nh, self.hd)).transpose(1, 2), cos, sin)
        k = rotary(self.k_norm(self.k(h).view(B, T, self.kv, self.hd)).transpose(1, 2), cos, sin)
        v = self.v(h).view(B, T, self.kv, self.hd).transpose(1, 2)
        rep = self.nh // self.kv  # grouped-query attention: each key/value head serves rep query heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        a = torch.softmax(q @ k.transpose(-1, -2) * scale + bias, dim=-1) @ v
        a = self.o(a.transpose(1, 2).reshape(B, T, self.nh * self.hd))
        x = x + (self.post_attn(a) if self.gemma else a)
        h = self.pre_ff(x)
        act = F.gelu(self.gate(h), approximate="tanh") if self.gemma else F.silu(self.gate(h))
        f = self.down(act * self.up(h))
        return x + (self.post_ff(f) if self.gemma else f)


class Decoder(nn.Module):
    def __init__(self, cfg, w):
        super().__init__()
        self.gemma = cfg["model_type"] == "gemma3_text"
        self.emb = nn.Parameter(w["embed_tokens.weight"], requires_grad=False)
        self.layers = nn.ModuleList(Layer(cfg, w, l, self.gemma) for l in range(cfg["num_hidden_layers"]))
        self.norm = RMSNorm(w["norm.weight"], cfg["rms_norm_eps"], self.gemma)
        hd, n = cfg["head_dim"], 4096
        self.rope_global = rope_table(cfg.get("rope_theta", 1e6), hd, n)
        self.rope_local = rope_table(cfg.get("rope_local_base_freq", 1e4), hd, n) if self.gemma else self.rope_global
        self.local = [t == "sliding_attention" for t in cfg.get("layer_types", [])] or [False] * len(self.layers)
        self.window = cfg.get("sliding_window") or 0
        self.scale = (cfg["query_pre_attn_scalar"] if self.gemma else hd) ** -0.5
        self.embed_scale = torch.tensor(cfg["hidden_size"] ** 0.5) if self.gemma else None
        self.last_token = not self.gemma

    def masks(self, T, lens):
        i = torch.arange(T)
        keys = i[None, :] < lens[:, None]  # [B, T]: real keys
        if self.gemma:  # bidirectional; a sliding layer sees |i - j| < W // 2 + 1 (transformers 5.17)
            full = keys[:, None, None, :].expand(-1, 1, T, T)
            band = (i[:, None] - i[None, :]).abs() < self.window // 2 + 1
            local = full & band
        else:  # causal
            full = keys[:, None, None, :] & (i[None, :] <= i[:, None])[None, None]
            local = full
        neg = torch.finfo(torch.float32).min
        return [torch.zeros(m.shape).masked_fill(~m, neg) for m in (full, local)]

    def forward(self, ids, lens):
        B, T = ids.shape
        x = F.embedding(ids, self.emb)
        if self.gemma:
            x = x * self.embed_scale
        full, local = self.masks(T, lens)
        for layer, is_local in zip(self.layers, self.local):
            cos, sin = self.rope_local if is_local else self.rope_global
            x = layer(x, cos[:T], sin[:T], local if is_local else full, self.scale)
        x = self.norm(x)
        if self.last_token:
            return x[torch.arange(B), lens - 1]
        m = (torch.arange(T)[None, :] < lens[:, None]).float()[:, :, None]
        return (x * m).sum(1) / m.sum(1)


def check(model, d, label, key):
    """Max |diff| and the smallest cosine of this module's unit vectors against ours (check.f32)."""
    seqs = [[int(t) for t in line.split()[2:]] for line in open(f"{d}/check.txt").read().split("\n") if line]
    ours = np.fromfile(f"{d}/check.f32", dtype=np.float32).reshape(len(seqs), -1)
    worst, cos_min = 0.0, 2.0
    for s, ids in enumerate(seqs):
        with torch.inference_mode():
            got = model(torch.tensor([ids]), torch.tensor([len(ids)]))[0].double().numpy()
        a, b = got / np.linalg.norm(got), ours[s] / np.linalg.norm(ours[s])
        worst, cos_min = max(worst, float(np.abs(a - b).max())), min(cos_min, float(a @ b))
    print(f"check {key}: {label} vs ours (float32), unit vectors: max |diff| {worst:.2e}, smallest cosine {cos_min:.6f}",
          flush=True)
    return cos_min


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("key")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--results")
    ap.add_argument("--workload")
    ap.add_argument("--impl", choices=["torch_fp32", "torch_int8"])
    a = ap.parse_args()
    d = os.path.join(a.dir, a.key)
    torch.set_num_interop_threads(1)
    cfg = json.load(open(f"{d}/config.json"))
    model = Decoder(cfg, load_safetensors(f"{d}/model.safetensors")).eval()
    if check(model, d, "PyTorch fp32", a.key) < 0.999:
        sys.exit(f"torch_decoder: {a.key}: the PyTorch module is not our model")
    q8 = torch.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    check(q8, d, "PyTorch int8", a.key)
    work = read_batches(f"{d}/workloads.txt")
    if a.workload:
        work = {a.workload: work[a.workload]}
    prepared = {k: (tok, [(torch.from_numpy(ids), torch.from_numpy(lens)) for ids, lens in bs])
                for k, (tok, bs) in work.items()}
    time_impls({"torch_fp32": model, "torch_int8": q8}, prepared, a, 1.0)


if __name__ == "__main__":
    main()
