"""ggml's block types in plain Python (no numpy), for the GGUF test files: quantizers of float
values for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (as ggml-quants.c's quantize_row_*_ref choose scales and
codes), random blocks for every type including the K types (any block is a valid value: codes and
packed scales drawn at random under an f16 scale chosen so the values stay near +-0.05), and a
dequantizer for every type written from ggml-common.h's layouts: separate code from the C reader's
(core/nn/gguf_quant.c), so that a file written with it and its dequantized float32 twin check that
reader. Values are Python floats (doubles): a twin's weights are within a float32 rounding of the
C reader's."""
import math
import struct

GGML = {"q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "q4_k": 12, "q5_k": 13, "q6_k": 14}
BLOCK = {"q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24), "q8_0": (32, 34),
         "q4_k": (256, 144), "q5_k": (256, 176), "q6_k": (256, 210)}


def _h(x):
    return struct.pack("<e", x)


def _unh(b, at):
    return struct.unpack_from("<e", b, at)[0]


def _nibbles(codes):
    """16 bytes: byte j holds code j (low nibble) and code j + 16 (high)."""
    return bytes((codes[j] & 15) | (codes[j + 16] & 15) << 4 for j in range(16))


def _fifth_bits(codes):
    return struct.pack("<I", sum(((c >> 4) & 1) << j for j, c in enumerate(codes)))


def _absmax_signed(blk):
    m = 0.0
    for x in blk:
        if abs(x) > abs(m):
            m = x
    return m


def q8_0(values):
    """Blocks of 32: an f16 scale (the block's largest magnitude / 127) and the codes round(x / scale),
    halves away from zero as C's roundf (Python's round() takes them to even)."""
    out = []
    for i in range(0, len(values), 32):
        blk = values[i:i + 32]
        d = max(abs(x) for x in blk) / 127.0
        inv = 1.0 / d if d else 0.0
        codes = (int(math.copysign(math.floor(abs(x * inv) + 0.5), x)) for x in blk)
        out.append(_h(d) + struct.pack("<32b", *codes))
    return b"".join(out)


def _q_sym(values, nmax):
    """Q4_0 (nmax 8) / Q5_0 (16): d = the signed value of largest magnitude / -nmax; code =
    x / d + nmax rounded, at most 2 nmax - 1."""
    out = []
    for i in range(0, len(values), 32):
        blk = values[i:i + 32]
        d = _absmax_signed(blk) / -nmax
        inv = 1.0 / d if d else 0.0
        codes = [min(2 * nmax - 1, int(x * inv + nmax + 0.5)) for x in blk]
        out.append(_h(d) + (_fifth_bits(codes) if nmax == 16 else b"") + _nibbles(codes))
    return b"".join(out)


def _q_min(values, top):
    """Q4_1 (top 15) / Q5_1 (31): d = (max - min) / top, m = min; code = (x - min) / d rounded."""
    out = []
    for i in range(0, len(values), 32):
        blk = values[i:i + 32]
        lo, hi = min(blk), max(blk)
        d = (hi - lo) / top
        inv = 1.0 / d if d else 0.0
        codes = [min(top, int((x - lo) * inv + 0.5)) for x in blk]
        out.append(_h(d) + _h(lo) + (_fifth_bits(codes) if top == 31 else b"") + _nibbles(codes))
    return b"".join(out)


QUANTIZE = {"q8_0": q8_0, "q4_0": lambda v: _q_sym(v, 8), "q5_0": lambda v: _q_sym(v, 16),
            "q4_1": lambda v: _q_min(v, 15), "q5_1": lambda v: _q_min(v, 31)}

# f16 scales of random blocks: the values they give stay within about +-0.05
RANDOM_SCALE = {"q4_0": 0.006, "q5_0": 0.003, "q8_0": 0.0004, "q4_1": 0.006, "q5_1": 0.003,
                "q4_k": 0.0001, "q5_k": 0.00005, "q6_k": 0.000012}


def random_blocks(kind, n_values, rng, zero=False):
    """n_values (whole blocks) of kind drawn from rng (random.Random); zero: every scale 0."""
    per, _ = BLOCK[kind]
    s = 0.0 if zero else RANDOM_SCALE[kind]
    out = []
    for _ in range(n_values // per):
        d = s * rng.uniform(0.5, 1.5) * rng.choice((-1, 1))
        if kind in ("q4_0", "q5_0", "q8_0"):
            out.append(_h(d) + rng.randbytes({"q4_0": 16, "q5_0": 20, "q8_0": 32}[kind]))
        elif kind in ("q4_1", "q5_1"):
            top = 15 if kind == "q4_1" else 31
            out.append(_h(abs(d)) + _h(-abs(d) * top / 2) + rng.randbytes(16 if kind == "q4_1" else 20))
        elif kind in ("q4_k", "q5_k"):
            tail = 140 if kind == "q4_k" else 172  # 12 bytes of scales and mins, [qh,] qs
            out.append(_h(abs(d)) + _h(abs(d) * (8 if kind == "q4_k" else 16)) + rng.randbytes(tail))
        else:
            out.append(rng.randbytes(208) + _h(d))
    return b"".join(out)


def _dq_small(kind, b, at):
    """One block of 32: Q4_0 d (q - 8), Q5_0 d (q - 16), Q4_1 / Q5_1 d q + m, Q8_0 d q."""
    d = _unh(b, at)
    if kind == "q8_0":
        return [d * q for q in struct.unpack_from("<32b", b, at + 2)]
    has_m = kind in ("q4_1", "q5_1")
    m = _unh(b, at + 2) if has_m else 0.0
    p = at + (4 if has_m else 2)
    qh = 0
    if kind in ("q5_0", "q5_1"):
        qh = struct.unpack_from("<I", b, p)[0]
        p += 4
    codes = [b[p + j] & 15 for j in range(16)] + [b[p + j] >> 4 for j in range(16)]
    codes = [c | ((qh >> j) & 1) << 4 for j, c in enumerate(codes)]
    if has_m:
        return [d * c + m for c in codes]
    off = 16 if kind == "q5_0" else 8
    return [d * (c - off) for c in codes]


def _k_scales(s):
    """Q4_K / Q5_K: the eight 6-bit (scale, min) pairs of the 12 bytes s."""
    out = []
    for j in range(8):
        if j < 4:
            out.append((s[j] & 63, s[j + 4] & 63))
        else:
            out.append(((s[j + 4] & 15) | (s[j - 4] >> 6) << 4, (s[j + 4] >> 4) | (s[j] >> 6) << 4))
    return out


def _dq_k45(kind, b, at):
    d, dmin = _unh(b, at), _unh(b, at + 2)
    sm = _k_scales(b[at + 4:at + 16])
    five = kind == "q5_k"
    qh, qs = at + 16, at + (48 if five else 16)
    out = []
    for i in range(256):
        sub, g, l = i // 32, i // 64, i % 32
        byte = b[qs + 32 * g + l]
        q = byte >> 4 if sub % 2 else byte & 15
        if five:
            q |= ((b[qh + l] >> sub) & 1) << 4
        sc, m = sm[sub]
        out.append(d * sc * q - dmin * m)
    return out


def _dq_q6k(b, at):
    d = _unh(b, at + 208)
    sc = struct.unpack_from("<16b", b, at + 192)
    out = []
    for i in range(256):
        h, r = divmod(i, 128)
        k, l = divmod(r, 32)
        low = b[at + 64 * h + l + 32 * (k & 1)]
        low = low >> 4 if k >= 2 else low & 15
        high = (b[at + 128 + 32 * h + l] >> (2 * k)) & 3
        out.append(d * sc[i // 16] * ((low | high << 4) - 32))
    return out


def dequantize(kind, blob):
    """Every value of blob (whole blocks of kind) as Python floats."""
    per, size = BLOCK[kind]
    out = []
    for at in range(0, len(blob), size):
        if kind == "q6_k":
            out += _dq_q6k(blob, at)
        elif kind in ("q4_k", "q5_k"):
            out += _dq_k45(kind, blob, at)
        else:
            out += _dq_small(kind, blob, at)
    return out


def f32_twin(tensors):
    """The tensors [(name, shape, ggml type, bytes)] with every block type dequantized into F32."""
    kind_of = {v: k for k, v in GGML.items()}
    out = []
    for name, shape, typ, blob in tensors:
        if typ in kind_of:
            vals = dequantize(kind_of[typ], blob)
            typ, blob = 0, struct.pack("<%df" % len(vals), *vals)
        out.append((name, shape, typ, blob))
    return out
