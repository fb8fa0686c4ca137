"""Writes a random-weight decoder folder of bench_decoder (Qwen3Model or Gemma3TextModel,
config.json and model.safetensors in float32) as a GGUF file for llama.cpp, with the tensor names,
shapes and metadata of llama.cpp's convert_hf_to_gguf.py (Qwen3Model -> arch "qwen3",
Gemma3TextModel with use_bidirectional_attention -> "gemma-embedding"):
  - 2-D weights in the type asked: F32, F16, BF16 or Q8_0 (blocks of 32: an f16 scale, 32 int8);
    norms stay F32, and Gemma's norm weights are written plus one, as the converter writes them
    (HF computes x * (1 + w), llama.cpp x * w);
  - {arch}.pooling_type: last (3) for Qwen3-Embedding, mean (1) for EmbeddingGemma;
  - a vocabulary of the model's size that llama.cpp loads (Qwen3: gpt2 / qwen2 with the 256
    byte symbols first; Gemma: SentencePiece with its four specials and 256 byte pieces), no
    BOS or EOS added: the benchmark passes token ids, never text.
Usage: gguf_write.py MODEL_DIR OUT.gguf f32|f16|bf16|q8_0
Needs numpy (Debian's python3-numpy)."""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "references"))
from gguf_layout import ALIGN, ARR, BOOL, F32, FILE_TYPE, I32, STR, U32, gguf_str, kv  # noqa: E402,F401
from gguf_layout import safetensors_index, write_file as write_layout  # noqa: E402
from gguf_decoder import gguf_name, metadata  # noqa: E402

GGML = {"f32": 0, "f16": 1, "q8_0": 8, "bf16": 30}


def read_safetensors(path):
    """name -> float32 array, a view of the file (bench_decoder writes F32 only)."""
    index, start = safetensors_index(path)
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=start)
    out = {}
    for name, dtype, shape, a, b in index:
        if dtype != "F32":
            raise SystemExit("gguf_write.py: tensor %s is %s" % (name, dtype))
        out[name] = data[a:b].view(np.float32).reshape(shape)
    return out


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


def vocab_qwen(n):
    toks = bytes_to_unicode() + ["tok%d" % i for i in range(256, n)]
    types = [1] * n
    eos = 151643 if n > 151643 else n - 1
    toks[eos], types[eos] = "<|endoftext|>", 3
    return [kv("tokenizer.ggml.model", STR, "gpt2"), kv("tokenizer.ggml.pre", STR, "qwen2"),
            kv("tokenizer.ggml.tokens", ARR, (STR, toks)), kv("tokenizer.ggml.token_type", ARR, (I32, types)),
            kv("tokenizer.ggml.merges", ARR, (STR, ["Ġ t"])),
            kv("tokenizer.ggml.eos_token_id", U32, eos), kv("tokenizer.ggml.padding_token_id", U32, eos),
            kv("tokenizer.ggml.bos_token_id", U32, eos),
            kv("tokenizer.ggml.add_bos_token", BOOL, False), kv("tokenizer.ggml.add_eos_token", BOOL, False)]


def vocab_gemma(n):
    toks = ["<pad>", "<eos>", "<bos>", "<unk>"] + ["<0x%02X>" % b for b in range(256)]
    toks += ["▁p%d" % i for i in range(len(toks), n)]
    types = [3, 3, 3, 2] + [6] * 256 + [1] * (n - 260)
    return [kv("tokenizer.ggml.model", STR, "llama"), kv("tokenizer.ggml.pre", STR, "default"),
            kv("tokenizer.ggml.tokens", ARR, (STR, toks)), kv("tokenizer.ggml.scores", ARR, (F32, [0.0] * n)),
            kv("tokenizer.ggml.token_type", ARR, (I32, types)),
            kv("tokenizer.ggml.bos_token_id", U32, 2), kv("tokenizer.ggml.eos_token_id", U32, 1),
            kv("tokenizer.ggml.unknown_token_id", U32, 3), kv("tokenizer.ggml.padding_token_id", U32, 0),
            kv("tokenizer.ggml.add_bos_token", BOOL, False), kv("tokenizer.ggml.add_eos_token", BOOL, False)]


def f32_to_bf16(a):
    u = a.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even


def q8_0(a):
    """Rows of blocks of 32: an f16 scale amax / 127 and the int8 codes round(x / scale)."""
    out = []
    for start in range(0, a.shape[0], 4096):
        blk = np.asarray(a[start:start + 4096], dtype=np.float32).reshape(-1, 32)
        d = np.abs(blk).max(axis=1) / 127.0
        inv = np.where(d > 0, 1.0 / np.where(d > 0, d, 1), 0)
        q = np.round(blk * inv[:, None]).astype(np.int8)
        rec = np.empty(blk.shape[0], dtype=[("d", "<f2"), ("q", "i1", 32)])
        rec["d"], rec["q"] = d.astype(np.float16), q
        out.append(rec.tobytes())
    return b"".join(out)


def encode(a, wtype):
    if a.ndim == 1 or wtype == "f32":
        return 0, np.ascontiguousarray(a, dtype=np.float32).tobytes()
    if wtype == "f16":
        return 1, np.asarray(a, dtype=np.float16).tobytes()
    if wtype == "bf16":
        return 30, f32_to_bf16(np.ascontiguousarray(a, dtype=np.float32)).tobytes()
    if a.shape[1] % 32:  # the converter keeps rows that are not whole blocks in F16
        return 1, np.asarray(a, dtype=np.float16).tobytes()
    return 8, q8_0(a)


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in GGML:
        sys.exit(__doc__.split("\n")[-2])
    src, dst, wtype = sys.argv[1:]
    cfg = json.load(open(src + "/config.json"))
    gemma = cfg["model_type"] == "gemma3_text"
    if gemma and not cfg.get("use_bidirectional_attention"):
        sys.exit("gguf_write.py: only the bidirectional Gemma3 (EmbeddingGemma) is written")
    arch = "gemma-embedding" if gemma else "qwen3"
    tensors = read_safetensors(src + "/model.safetensors")
    n_vocab = tensors["embed_tokens.weight"].shape[0]
    kvs = metadata(cfg, arch, wtype) + (vocab_gemma(n_vocab) if gemma else vocab_qwen(n_vocab))
    named = []
    for hf in sorted(tensors):
        a = tensors[hf]
        if gemma and hf.endswith("norm.weight"):
            a = a + np.float32(1)
        named.append((gguf_name(hf, gemma), a))
    write_file(dst, kvs, named, wtype)


# Tensors the converter always writes in F32 (llama.cpp adds them to float32 activations).
ALWAYS_F32 = ("position_embd.weight", "token_types.weight")


def write_file(dst, kvs, named, wtype):
    """The file: the pairs kvs, the tensors [(name, array as HF shapes it)] encoded in wtype."""
    tensors = []
    for name, a in named:
        typ, blob = encode(a, "f32" if name in ALWAYS_F32 else wtype)
        tensors.append((name, list(a.shape), typ, blob))
    write_layout(dst, kvs, tensors)


if __name__ == "__main__":
    main()
