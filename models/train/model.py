"""sqlite-embed-mini's network and files, shared by its two training stages (mlm.py, train.py).

A BERT (4 layers, hidden 256, 4 heads, feed-forward 1024, 128 positions) with the
bert-base-uncased WordPiece vocabulary. The forward pass is written here as transformers'
BertModel computes it (post-norm layers, exact GELU), so the saved tensors mean the same to any
BERT implementation. Tokens come from sqlite-embed itself (embed_token_ids), whose WordPiece is
checked equal to Hugging Face's by the test suite; Debian's python3 loads it."""
import json
import math
import os
import shutil
import sqlite3
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = dict(vocab_size=30522, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
           intermediate_size=1024, max_position_embeddings=128, type_vocab_size=2,
           layer_norm_eps=1e-12)


class Precision:
    """The type the linear layers multiply in: float32, or bfloat16 (products summed in float32,
    weights, biases and everything else kept in float32) where the hardware multiplies it natively
    (AVX-512 BF16 or AMX on x86, CUDA): a training step about twice as fast (bench/README.md)."""
    matmul = torch.float32

    @staticmethod
    def choose(setting, device):
        native = device.type == "cuda" or any(f in open("/proc/cpuinfo").read().split()
                                              for f in ("avx512_bf16", "amx_bf16"))
        use = native if setting == "auto" else setting == "bf16"
        Precision.matmul = torch.bfloat16 if use else torch.float32
        return "bf16" if use else "fp32"


def matmul(a, b):
    if Precision.matmul == torch.float32:
        return a @ b
    return (a.to(Precision.matmul) @ b.to(Precision.matmul)).float()


class Linear(nn.Linear):
    def forward(self, x):
        if Precision.matmul == torch.float32:
            return super().forward(x)
        return F.linear(x.to(Precision.matmul), self.weight.to(Precision.matmul)).float() + self.bias


class Layer(nn.Module):
    def __init__(self, H, NH, I, eps):
        super().__init__()
        self.nh = NH
        self.q, self.k, self.v, self.o = (Linear(H, H) for _ in range(4))
        self.ln1 = nn.LayerNorm(H, eps=eps)
        self.fc1, self.fc2 = Linear(H, I), Linear(I, H)
        self.ln2 = nn.LayerNorm(H, eps=eps)

    def forward(self, x, bias):
        B, T, H = x.shape
        dh = H // self.nh
        q, k, v = (f(x).view(B, T, self.nh, dh).transpose(1, 2) for f in (self.q, self.k, self.v))
        s = matmul(q, k.transpose(-1, -2)) / math.sqrt(dh) + bias
        a = matmul(torch.softmax(s, dim=-1), v).transpose(1, 2).reshape(B, T, H)
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


def save_safetensors(path, tensors, dtype, metadata=None):
    header, blobs, off = ({"__metadata__": metadata} if metadata else {}), [], 0
    for name, t in tensors.items():
        b = t.detach().to(dtype).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F16" if dtype == torch.float16 else "F32", "shape": list(t.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    os.replace(path + ".tmp", path)


def load_safetensors(path):
    """The F16 / F32 tensors of a file save_safetensors wrote (as float32) and its metadata."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta, out = header.pop("__metadata__", {}), {}
    for name, h in header.items():
        dtype = {"F16": torch.float16, "F32": torch.float32}[h["dtype"]]
        a, b = h["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=dtype).reshape(h["shape"]).float()
    return out, meta


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


