"""PyTorch peers of bench_encoder: modules equivalent to our encoder (BERT, NomicBERT, ModernBERT),
built from the same model.safetensors that bench_encoder --write put in a folder, checked against
our outputs (check.txt / check.f32), exported to ONNX (model.onnx, for bench/peers/ort_encoder.js),
and timed in float32 and with dynamic int8 quantization (torch.quantization.quantize_dynamic) on
the same workloads (workloads.txt), threads and timing rule (the largest batch once, then the best
of whole passes: at least 1 s and 2 passes, one pass when it takes over 2 s).

Usage: python3 torch_encoder.py DIR KEY (the model folder DIR/KEY) [--export] [--bench] [--threads 1,2] [--results FILE]
       [--quick] [--workload KEY] [--impl torch_fp32|torch_int8]  (--workload, --impl: that one alone)
Debian's python3 with python3-torch (bench/encoder_peers.sh installs it)."""
import argparse, json, math, os, struct, sys, time, warnings
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "references"))
from gguf_layout import safetensors_index  # noqa: E402


def load_safetensors(path):
    index, start = safetensors_index(path)
    with open(path, "rb") as f:
        data = f.read()[start:]
    out = {}
    for name, dtype, shape, a, b in index:
        assert dtype == "F32", name
        out[name] = torch.from_numpy(np.frombuffer(data, dtype=np.float32, count=(b - a) // 4, offset=a).copy()).reshape(shape)
    return out


def linear(w, b=None):
    m = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
    m.weight.data.copy_(w)
    if b is not None:
        m.bias.data.copy_(b)
    return m


def layer_norm(g, b, eps):
    m = nn.LayerNorm(g.shape[0], eps=eps, elementwise_affine=True)
    m.weight.data.copy_(g)
    m.bias.data.copy_(b if b is not None else torch.zeros_like(g))
    return m


def rotary(x, cos, sin):
    """RoPE on the last dimension, pairs (i, i + d/2) (rotate_half, non-interleaved)."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def rope_table(base, dim, n):
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def attention(q, k, v, bias, nh):
    """q, k, v: [B, T, H]; bias: additive [B or 1, 1, T, T] or [B, 1, 1, T]."""
    B, T, H = q.shape
    dh = H // nh
    q, k, v = (x.view(B, T, nh, dh).transpose(1, 2) for x in (q, k, v))
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh) + bias
    return torch.matmul(torch.softmax(s, dim=-1), v).transpose(1, 2).reshape(B, T, H)


NEG = -1e9  # masked keys: exp underflows to exactly 0, as our encoder leaves them out


class Bert(nn.Module):
    """transformers' BertModel (absolute positions, post-norm, GELU), last_hidden_state."""

    def __init__(self, cfg, w):
        super().__init__()
        self.nh, eps = cfg["num_attention_heads"], cfg.get("layer_norm_eps", 1e-12)
        self.word = nn.Embedding.from_pretrained(w["embeddings.word_embeddings.weight"])
        self.register_buffer("pos", w["embeddings.position_embeddings.weight"])
        self.register_buffer("type0", w["embeddings.token_type_embeddings.weight"][0])
        self.ln = layer_norm(w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        self.layers = nn.ModuleList()
        for l in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{l}."
            g = lambda s: w[p + s]
            m = nn.Module()
            m.q, m.k, m.v = (linear(g(f"attention.self.{x}.weight"), g(f"attention.self.{x}.bias")) for x in ("query", "key", "value"))
            m.o = linear(g("attention.output.dense.weight"), g("attention.output.dense.bias"))
            m.ln1 = layer_norm(g("attention.output.LayerNorm.weight"), g("attention.output.LayerNorm.bias"), eps)
            m.fc1 = linear(g("intermediate.dense.weight"), g("intermediate.dense.bias"))
            m.fc2 = linear(g("output.dense.weight"), g("output.dense.bias"))
            m.ln2 = layer_norm(g("output.LayerNorm.weight"), g("output.LayerNorm.bias"), eps)
            self.layers.append(m)

    def forward(self, ids, mask):
        T = ids.shape[1]
        x = self.ln(self.word(ids) + self.pos[:T] + self.type0)
        bias = ((1.0 - mask.to(x.dtype)) * NEG)[:, None, None, :]
        for m in self.layers:
            x = m.ln1(x + m.o(attention(m.q(x), m.k(x), m.v(x), bias, self.nh)))
            x = m.ln2(x + m.fc2(F.gelu(m.fc1(x))))
        return x


class NomicBert(nn.Module):
    """nomic-ai's NomicBertModel as configured by nomic-embed-text-v1.5: fused Wqkv, rotary on
    q and k (fraction 1.0), post-norm, SwiGLU fc11 * silu(fc12), no linear biases."""

    def __init__(self, cfg, w):
        super().__init__()
        H, self.nh, eps = cfg["n_embd"], cfg["n_head"], cfg.get("layer_norm_epsilon", 1e-5)
        dh = H // self.nh
        self.word = nn.Embedding.from_pretrained(w["embeddings.word_embeddings.weight"])
        self.register_buffer("type0", w["embeddings.token_type_embeddings.weight"][0])
        self.ln = layer_norm(w["emb_ln.weight"], w["emb_ln.bias"], eps)
        cos, sin = rope_table(cfg["rotary_emb_base"], int(dh * cfg["rotary_emb_fraction"]), 2048)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
        self.layers = nn.ModuleList()
        for l in range(cfg["n_layer"]):
            g = lambda s: w[f"encoder.layers.{l}.{s}"]
            m = nn.Module()
            m.qkv, m.o = linear(g("attn.Wqkv.weight")), linear(g("attn.out_proj.weight"))
            m.ln1 = layer_norm(g("norm1.weight"), g("norm1.bias"), eps)
            m.fc11, m.fc12, m.fc2 = linear(g("mlp.fc11.weight")), linear(g("mlp.fc12.weight")), linear(g("mlp.fc2.weight"))
            m.ln2 = layer_norm(g("norm2.weight"), g("norm2.bias"), eps)
            self.layers.append(m)

    def forward(self, ids, mask):
        B, T = ids.shape
        x = self.ln(self.word(ids) + self.type0)
        bias = ((1.0 - mask.to(x.dtype)) * NEG)[:, None, None, :]
        cos, sin = self.cos[:T], self.sin[:T]
        H = x.shape[-1]
        dh = H // self.nh
        for m in self.layers:
            q, k, v = m.qkv(x).split(H, dim=-1)
            q = rotary(q.view(B, T, self.nh, dh), cos[:, None, :], sin[:, None, :]).reshape(B, T, H)
            k = rotary(k.view(B, T, self.nh, dh), cos[:, None, :], sin[:, None, :]).reshape(B, T, H)
            x = m.ln1(x + m.o(attention(q, k, v, bias, self.nh)))
            x = m.ln2(x + m.fc2(m.fc11(x) * F.silu(m.fc12(x))))
        return x


class ModernBert(nn.Module):
    """transformers' ModernBertModel (eager, padded): pre-norm without biases, no attn_norm in
    layer 0, rotary with the global theta in every 3rd layer and the local theta elsewhere, local
    layers see |i - j| <= window / 2, GeGLU act(first half of Wi) * second half, final_norm."""

    def __init__(self, cfg, w):
        super().__init__()
        H, self.nh, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg.get("norm_eps", 1e-5)
        dh = H // self.nh
        self.every, self.half_window = cfg["global_attn_every_n_layers"], cfg["local_attention"] // 2
        self.word = nn.Embedding.from_pretrained(w["embeddings.tok_embeddings.weight"])
        self.ln = layer_norm(w["embeddings.norm.weight"], None, eps)
        for name, base in (("g", cfg["global_rope_theta"]), ("l", cfg["local_rope_theta"])):
            cos, sin = rope_table(base, dh, 2048)
            self.register_buffer("cos_" + name, cos)
            self.register_buffer("sin_" + name, sin)
        self.layers = nn.ModuleList()
        for l in range(cfg["num_hidden_layers"]):
            g = lambda s: w[f"layers.{l}.{s}"]
            m = nn.Module()
            m.attn_norm = layer_norm(g("attn_norm.weight"), None, eps) if l > 0 else nn.Identity()
            m.qkv, m.o = linear(g("attn.Wqkv.weight")), linear(g("attn.Wo.weight"))
            m.mlp_norm = layer_norm(g("mlp_norm.weight"), None, eps)
            m.wi, m.wo = linear(g("mlp.Wi.weight")), linear(g("mlp.Wo.weight"))
            self.layers.append(m)
        self.final = layer_norm(w["final_norm.weight"], None, eps)

    def forward(self, ids, mask):
        B, T = ids.shape
        x = self.ln(self.word(ids))
        bias = ((1.0 - mask.to(x.dtype)) * NEG)[:, None, None, :]
        pos = torch.arange(T)
        outside = ((pos[:, None] - pos[None, :]).abs() > self.half_window).to(x.dtype)  # float32 for the export
        local_bias = bias + (outside * NEG)[None, None]
        H = x.shape[-1]
        dh = H // self.nh
        for l, m in enumerate(self.layers):
            glob = l % self.every == 0
            cos = (self.cos_g if glob else self.cos_l)[:T][:, None, :]
            sin = (self.sin_g if glob else self.sin_l)[:T][:, None, :]
            q, k, v = m.qkv(m.attn_norm(x)).split(H, dim=-1)
            q = rotary(q.view(B, T, self.nh, dh), cos, sin).reshape(B, T, H)
            k = rotary(k.view(B, T, self.nh, dh), cos, sin).reshape(B, T, H)
            x = x + m.o(attention(q, k, v, bias if glob else local_bias, self.nh))
            a, gate = m.wi(m.mlp_norm(x)).chunk(2, dim=-1)
            x = x + m.wo(F.gelu(a) * gate)
        return self.final(x)


def mpnet_bucket(rel, buckets=32, max_distance=128):
    """transformers' MPNetEncoder.relative_position_bucket of rel = key - query (its float32 log)."""
    n = -rel
    buckets //= 2
    ret = (n < 0).to(torch.long) * buckets
    n = torch.abs(n)
    exact = buckets // 2
    large = exact + (torch.log(n.float() / exact) / math.log(max_distance / exact) * (buckets - exact)).to(torch.long)
    return ret + torch.where(n < exact, n, torch.clamp(large, max=buckets - 1))


class MPNet(Bert):
    """transformers' MPNetModel: BERT's layers under other names, positions from padding_idx + 1,
    no token types, one relative-position bias (buckets of key - query) added in every layer."""

    RENAME = (("attention.attn.q.", "attention.self.query."), ("attention.attn.k.", "attention.self.key."),
              ("attention.attn.v.", "attention.self.value."), ("attention.attn.o.", "attention.output.dense."),
              ("attention.LayerNorm.", "attention.output.LayerNorm."))

    def __init__(self, cfg, w):
        w = dict(w)
        for k in [k for k in w if ".attention." in k]:
            new = k
            for a, b in self.RENAME:
                new = new.replace(a, b)
            w[new] = w.pop(k)
        w["embeddings.token_type_embeddings.weight"] = torch.zeros(1, cfg["hidden_size"])
        super().__init__(cfg, w)
        self.register_buffer("rel", w["encoder.relative_attention_bias.weight"])  # [buckets, heads]
        self.offset = cfg.get("pad_token_id", 1) + 1

    def forward(self, ids, mask):
        T = ids.shape[1]
        x = self.ln(self.word(ids) + self.pos[self.offset:self.offset + T])
        pos = torch.arange(T)
        rel = self.rel[mpnet_bucket(pos[None, :] - pos[:, None])].permute(2, 0, 1)[None]  # [1, heads, T, T]
        bias = ((1.0 - mask.to(x.dtype)) * NEG)[:, None, None, :] + rel
        for m in self.layers:
            x = m.ln1(x + m.o(attention(m.q(x), m.k(x), m.v(x), bias, self.nh)))
            x = m.ln2(x + m.fc2(F.gelu(m.fc1(x))))
        return x


def build(d):
    cfg = json.load(open(f"{d}/config.json"))
    w = load_safetensors(f"{d}/model.safetensors")
    kind = {"bert": Bert, "nomic_bert": NomicBert, "modernbert": ModernBert, "mpnet": MPNet}[cfg["model_type"]]
    return kind(cfg, w).eval(), cfg


def read_batches(path):
    """workloads.txt / check.txt: {key: (tokens, [(ids [B,T], lens [B])])}; check.txt under key None."""
    out, key = {}, None
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        f = lines[i].split()
        if not f:
            i += 1
            continue
        if f[0] == "workload":
            key = f[1]
            out[key] = (int(f[3]), [])
            i += 1
        elif f[0] == "batch":
            B, T = int(f[1]), int(f[2])
            lens = np.array(lines[i + 1].split()[1:], dtype=np.int64)
            ids = np.array(lines[i + 2].split()[1:], dtype=np.int64).reshape(B, T)
            out.setdefault(key, (0, []))[1].append((ids, lens))
            i += 3
        else:
            i += 1
    return out


def mask_of(ids, lens):
    return (np.arange(ids.shape[1])[None, :] < lens[:, None]).astype(np.int64)


def check(model, d, H, label, key):
    """Max |ours - this| over the real tokens of the check batches."""
    ref = np.fromfile(f"{d}/check.f32", dtype=np.float32)
    off, worst = 0, 0.0
    for ids, lens in read_batches(f"{d}/check.txt")[None][1]:
        B, T = ids.shape
        ours = ref[off:off + B * T * H].reshape(B, T, H)
        off += B * T * H
        with torch.inference_mode():
            got = model(torch.from_numpy(ids), torch.from_numpy(mask_of(ids, lens))).numpy()
        for b in range(B):
            worst = max(worst, float(np.abs(got[b, :lens[b]] - ours[b, :lens[b]]).max()))
    print(f"check {key}: max |ours - {label}| over real tokens {worst:.2g}", flush=True)
    return worst


def time_workload(fn, batches, min_time):
    fn(*batches[-1])
    best, start, reps = 1e30, time.perf_counter(), 0
    while True:
        s = time.perf_counter()
        for b in batches:
            fn(*b)
        best = min(best, time.perf_counter() - s)
        reps += 1
        if reps >= 1 and best > 2.0:
            break
        if reps >= 2 and time.perf_counter() - start >= min_time:
            break
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("key")
    ap.add_argument("--export", action="store_true")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--results")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workload")
    ap.add_argument("--impl", choices=["torch_fp32", "torch_int8"])
    a = ap.parse_args()
    a.dir = os.path.join(a.dir, a.key)
    torch.set_num_interop_threads(1)
    model, cfg = build(a.dir)
    H = cfg.get("hidden_size", cfg.get("n_embd"))
    diff = check(model, a.dir, H, "PyTorch fp32", a.key)
    if diff > 1e-3:
        sys.exit(f"torch_encoder: {a.key}: the PyTorch module differs from our encoder by {diff:.3g}")
    if a.export:
        ids = torch.from_numpy(np.full((2, 16), 1000, dtype=np.int64))
        t0 = time.perf_counter()
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)  # the head size is a constant
        with torch.inference_mode():
            torch.onnx.export(model, (ids, torch.ones_like(ids)), f"{a.dir}/model.onnx", opset_version=17,
                              input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                              dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                                            "last_hidden_state": {0: "batch", 1: "seq"}})
        print(f"exported {a.dir}/model.onnx in {time.perf_counter() - t0:.1f} s", flush=True)
    if not a.bench:
        return
    q8 = torch.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    check(q8, a.dir, H, "PyTorch int8", a.key)
    work = read_batches(f"{a.dir}/workloads.txt")
    if a.workload:
        if a.workload not in work:
            sys.exit(f"torch_encoder: no workload {a.workload} in {a.dir}/workloads.txt")
        work = {a.workload: work[a.workload]}
    prepared = {k: (tok, [(torch.from_numpy(ids), torch.from_numpy(mask_of(ids, lens))) for ids, lens in bs])
                for k, (tok, bs) in work.items()}
    time_impls({"torch_fp32": model, "torch_int8": q8}, prepared, a, 0.3 if a.quick else 1.0)


def time_impls(impls, prepared, a, min_time):
    """Each way (impls: name -> module) on each prepared workload (key -> (tokens, batches)), per
    thread count of a.threads (a.impl: that way alone); prints tokens/s and appends "IMPL KEY
    THREADS WORKLOAD TOKENS_PER_S" to a.results. Shared with torch_decoder.py."""
    for th in [int(t) for t in a.threads.split(",")]:
        torch.set_num_threads(th)
        for impl, m in impls.items():
            if a.impl and impl != a.impl:
                continue
            for key, (tokens, batches) in prepared.items():
                with torch.inference_mode():
                    t = time_workload(m, batches, min_time)
                tps = tokens / t
                print(f"{impl:11s} {a.key:10s} threads {th} {key:10s} {tps:9.0f} tokens/s", flush=True)
                if a.results:
                    with open(a.results, "a") as f:
                        f.write(f"{impl} {a.key} {th} {key} {tps:.1f}\n")


if __name__ == "__main__":
    main()
