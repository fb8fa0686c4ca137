"""Writes a random-weight BERT GGUF file whose rows are 256 wide, so that every block type (the K
types' blocks are 256 values) can be its matrices' type: hidden 256, 4 heads, feed-forward 512,
one layer, 64 positions, a small WordPiece vocabulary of lowercase words (llama.cpp's spelling:
U+2581 before a word, a continuation without its "##"), mean pooling. The token embeddings and
the layer's matrices are random blocks of the type (gguf_quant.random_blocks), norms one, biases,
position and token-type tables small F32 values.
  - twin: the same file with its blocks dequantized into F32 (gguf_quant.f32_twin);
  - probe: the layer's matrices all-zero blocks, so the output is the layer norms of the
    embedding rows: what llama.cpp computes from it is its own dequantization of the token table
    (get_rows), exact in float32, with nothing it quantizes on the way (make check-gguf).
Usage: gguf_wide.py OUT.gguf q4_0|q4_1|q5_0|q5_1|q8_0|q4_k|q5_k|q6_k [probe]"""
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_layout import ARR, BOOL, F32, I32, STR, U32, base_metadata, kv, write_file  # noqa: E402
from gguf_quant import BLOCK, GGML, f32_twin, random_blocks  # noqa: E402

H, FF, POS = 256, 512, 64
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ("the a an of to in on at by for with from and or but not is are was were be been this that these "
         "those it its we you they he she i my our your their cat dog bird fish tree house car road city sea "
         "sky sun moon star rain snow wind fire water stone paper book word text model vector query search "
         "index table row column number small large quick slow red blue green black white old new good bad "
         "first last day night time year world people work play run walk read write find keep make take "
         "give see say know think come go").split()
PIECES = ["s", "ing", "ed", "er", "ly"]
TEXTS = ["the cat sat on the mat", "a quick red fox runs", "search the index for a vector",
         "old books and new paper", "we walked to the city by the sea", "rain and snow in the night",
         "the model writes text", "people read their books", "stars in the sky", "dogs and cats"]


def vocab():
    toks = SPECIAL + ["\u2581" + w for w in WORDS] + PIECES
    types = [3] * len(SPECIAL) + [1] * (len(toks) - len(SPECIAL))
    return [kv("tokenizer.ggml.model", STR, "bert"), kv("tokenizer.ggml.pre", STR, "default"),
            kv("tokenizer.ggml.tokens", ARR, (STR, toks)), kv("tokenizer.ggml.token_type", ARR, (I32, types)),
            kv("tokenizer.ggml.unknown_token_id", U32, 1), kv("tokenizer.ggml.seperator_token_id", U32, 3),
            kv("tokenizer.ggml.padding_token_id", U32, 0), kv("tokenizer.ggml.cls_token_id", U32, 2),
            kv("tokenizer.ggml.mask_token_id", U32, 4), kv("tokenizer.ggml.bos_token_id", U32, 2),
            kv("tokenizer.ggml.add_bos_token", BOOL, True), kv("tokenizer.ggml.eos_token_id", U32, 3),
            kv("tokenizer.ggml.add_eos_token", BOOL, True)], len(toks)


def metadata(wtype, voc):
    cfg = {"max_position_embeddings": POS, "hidden_size": H, "num_hidden_layers": 1, "intermediate_size": FF,
           "num_attention_heads": 4}
    return base_metadata("bert", "wide-" + wtype, wtype, cfg) + [
        kv("bert.attention.layer_norm_epsilon", F32, 1e-12), kv("bert.attention.causal", BOOL, False),
        kv("bert.pooling_type", U32, 1), kv("tokenizer.ggml.token_type_count", U32, 2)] + voc


def f32(name, shape, vals):
    return (name, shape, 0, struct.pack("<%df" % len(vals), *vals))


def tensors(kind, n_vocab, probe, rng):
    small = lambda n: [rng.uniform(-0.05, 0.05) for _ in range(n)]  # noqa: E731
    out = [("token_embd.weight", [n_vocab, H], GGML[kind], random_blocks(kind, n_vocab * H, rng)),
           f32("position_embd.weight", [POS, H], small(POS * H)), f32("token_types.weight", [2, H], small(2 * H)),
           f32("token_embd_norm.weight", [H], [1.0] * H), f32("token_embd_norm.bias", [H], [0.0] * H)]
    for name, rows, cols in (("attn_q", H, H), ("attn_k", H, H), ("attn_v", H, H), ("attn_output", H, H),
                             ("ffn_up", FF, H), ("ffn_down", H, FF)):
        out.append(("blk.0.%s.weight" % name, [rows, cols], GGML[kind], random_blocks(kind, rows * cols, rng, probe)))
        out.append(f32("blk.0.%s.bias" % name, [rows], [0.0] * rows if probe else small(rows)))
    for norm in ("attn_output_norm", "layer_output_norm"):
        out += [f32("blk.0.%s.weight" % norm, [H], [1.0] * H), f32("blk.0.%s.bias" % norm, [H], [0.0] * H)]
    return sorted(out)


def write(dst, kind, twin=None, probe=False, seed=1):
    """dst in kind (one of gguf_quant.BLOCK); twin: its F32 twin's path."""
    voc, n_vocab = vocab()
    ts = tensors(kind, n_vocab, probe, random.Random(seed))
    write_file(dst, metadata(kind, voc), ts)
    if twin:
        write_file(twin, metadata("f32", voc), f32_twin(ts))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[2] not in BLOCK or sys.argv[3:] not in ([], ["probe"]):
        sys.exit(__doc__.split("\n")[-1])
    write(sys.argv[1], sys.argv[2], probe=len(sys.argv) == 4)
