"""The GGUF file layout, as llama.cpp's gguf-py writes it (version 3, little-endian, alignment
32): key-value pairs, tensor infos, the aligned data. Plain Python (no numpy), so that the SQL
tests can write GGUF files too; bench/peers/gguf_write.py encodes large tensors with numpy and
writes them through write_file."""
import json
import os
import struct

from gguf_quant import GGML, QUANTIZE, q8_0  # noqa: F401 (q8_0: the writers' name for it)

ALIGN = 32
U8, U32, I32, F32, BOOL, STR, ARR = 0, 4, 5, 6, 7, 8, 9
GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30
# general.file_type: llama.cpp's llama_ftype (a K type's _S: nearly every matrix in that type)
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9, "q4_k": 14, "q5_k": 16,
             "q6_k": 18, "bf16": 32}


def gguf_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv(key, typ, value):
    """One pair: a scalar (U32, I32, F32, BOOL), a string, or (ARR, (element type, items)); an
    array of U8 may be given as bytes."""
    out = gguf_str(key) + struct.pack("<I", typ)
    if typ == STR:
        return out + gguf_str(value)
    if typ == ARR:
        etyp, items = value
        out += struct.pack("<IQ", etyp, len(items))
        if etyp == STR:
            return out + b"".join(gguf_str(s) for s in items)
        return out + struct.pack("<%d%s" % (len(items), {U8: "B", I32: "i", F32: "f", U32: "I"}[etyp]), *items)
    return out + struct.pack({U32: "<I", I32: "<i", F32: "<f", BOOL: "<?"}[typ], value)


def write_file(dst, kvs, tensors):
    """tensors: [(name, shape as Hugging Face orders it, ggml type, bytes)], written in that order."""
    infos, offset = [], 0
    for name, shape, typ, blob in tensors:
        dims = list(reversed(shape))  # ggml's ne[0] is the row length
        infos.append(gguf_str(name) + struct.pack("<I", len(dims)) + struct.pack("<%dQ" % len(dims), *dims) +
                     struct.pack("<IQ", typ, offset))
        offset += len(blob) + (-len(blob)) % ALIGN
    with open(dst, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(kvs)))
        for k in kvs:
            f.write(k)
        for i in infos:
            f.write(i)
        f.write(b"\0" * ((-f.tell()) % ALIGN))
        for _, _, _, blob in tensors:
            f.write(blob)
            f.write(b"\0" * ((-len(blob)) % ALIGN))


def safetensors_index(path):
    """A safetensors file's tensors [(name, dtype, shape, begin, end)] and its data section's offset."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return [(k, t["dtype"], t["shape"], *t["data_offsets"]) for k, t in header.items() if k != "__metadata__"], 8 + n


def read_safetensors(path):
    """name -> (shape, float32 values as a tuple); F32, F16 and BF16 read."""
    index, start = safetensors_index(path)
    with open(path, "rb") as f:
        data = f.read()[start:]
    out = {}
    for name, dtype, shape, a, b in index:
        raw = data[a:b]
        if dtype == "F32":
            vals = struct.unpack("<%df" % (len(raw) // 4), raw)
        elif dtype == "F16":
            vals = struct.unpack("<%de" % (len(raw) // 2), raw)
        elif dtype == "BF16":
            vals = struct.unpack("<%df" % (len(raw) // 2), b"".join(b"\0\0" + raw[i:i + 2] for i in range(0, len(raw), 2)))
        else:
            raise SystemExit("gguf_layout: tensor %s is %s" % (name, dtype))
        out[name] = (shape, vals)
    return out


def read_folder(d):
    """A folder's weights: model.safetensors, or the shards that model.safetensors.index.json names."""
    one = os.path.join(d, "model.safetensors")
    if os.path.exists(one):
        return read_safetensors(one)
    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    out = {}
    for s in shards:
        out.update(read_safetensors(os.path.join(d, s)))
    return out


def encode(shape, values, wtype):
    """(ggml type, bytes) of a tensor: 1-D ones and F32 files in F32; F16; Q8_0, Q4_0, Q4_1, Q5_0
    or Q5_1 (gguf_quant.py's quantizers) where its rows are whole blocks of 32, else F16 (the
    converter's and llama-quantize's choice)."""
    if len(shape) == 1 or wtype == "f32":
        return GGML_F32, struct.pack("<%df" % len(values), *values)
    if wtype in QUANTIZE and shape[-1] % 32 == 0:
        return GGML[wtype], QUANTIZE[wtype](values)
    return GGML_F16, struct.pack("<%de" % len(values), *values)


def base_metadata(arch, name, wtype, cfg):
    """The keys every converted transformer has: general.*, then {arch}'s context length, width,
    layers, feed-forward width and heads from config.json."""
    return [kv("general.architecture", STR, arch), kv("general.name", STR, name),
            kv("general.file_type", U32, FILE_TYPE[wtype]), kv("general.alignment", U32, ALIGN),
            kv(arch + ".context_length", U32, cfg["max_position_embeddings"]),
            kv(arch + ".embedding_length", U32, cfg["hidden_size"]),
            kv(arch + ".block_count", U32, cfg["num_hidden_layers"]),
            kv(arch + ".feed_forward_length", U32, cfg["intermediate_size"]),
            kv(arch + ".attention.head_count", U32, cfg["num_attention_heads"])]


def hf_tokens(d):
    """A folder's tokenizer.json, its tokens by id (an added token's content where one has the id,
    "[PADi]" for a gap) and its added tokens by id."""
    with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    v = tj["model"]["vocab"]
    added = {a["id"]: a for a in tj.get("added_tokens", [])}
    by_id = {i: t for t, i in v.items()}
    n = max(max(v.values()), max(added, default=0)) + 1
    return tj, [added[i]["content"] if i in added else by_id.get(i, "[PAD%d]" % i) for i in range(n)], added
