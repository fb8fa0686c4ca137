"""The cost of reading a real-size GGUF vocabulary: embed_load of a vocabulary-only file of the
sizes today's models carry (Gemma's 262,144 SentencePiece pieces, XLM-R's 250,002 Unigram
pieces, Qwen's 151,646 byte-level BPE tokens and 151,387 merges, BERT's 30,522 WordPiece
tokens). The pieces are synthetic (random letters; the BPE merges build each token from two
earlier ones, so every merge is valid), the sizes and the keys are the real ones. The peer is
llama.cpp loading the same file (node-llama-cpp, vocabOnly, bench/peers/llama_vocab_load.mjs),
run after ours in odd rounds and before in even ones; load times are measured inside each
process. Prints the medians and their ratio.
Usage: /usr/bin/python3 bench/gguf_vocab_load.py [EXTENSION] [ROUNDS]   (from the repository root)"""
import os
import random
import subprocess
import sqlite3
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "references"))
from gguf_layout import ALIGN, ARR, BOOL, F32, I32, STR, U32, kv, write_file  # noqa: E402

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def pieces(rng, n, prefix):
    seen, out = set(), []
    while len(out) < n:
        p = prefix + "".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 9)))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def head(arch):
    return [kv("general.architecture", STR, arch), kv("general.name", STR, "vocab-bench"),
            kv("general.alignment", U32, ALIGN)]


def spm(rng, n):  # Gemma: llama model, scores, byte pieces
    toks = ["<pad>", "<eos>", "<bos>", "<unk>"] + ["<0x%02X>" % b for b in range(256)]
    toks += pieces(rng, n - len(toks), "\u2581")
    types = [3, 3, 3, 2] + [6] * 256 + [1] * (n - 260)
    scores = [0.0] * 260 + [-float(i) for i in range(n - 260)]
    return head("gemma-embedding") + [
        kv("tokenizer.ggml.model", STR, "llama"), kv("tokenizer.ggml.pre", STR, "default"),
        kv("tokenizer.ggml.tokens", ARR, (STR, toks)), kv("tokenizer.ggml.scores", ARR, (F32, scores)),
        kv("tokenizer.ggml.token_type", ARR, (I32, types)), kv("tokenizer.ggml.bos_token_id", U32, 2),
        kv("tokenizer.ggml.eos_token_id", U32, 1), kv("tokenizer.ggml.unknown_token_id", U32, 3),
        kv("tokenizer.ggml.padding_token_id", U32, 0), kv("tokenizer.ggml.add_bos_token", BOOL, True),
        kv("tokenizer.ggml.add_eos_token", BOOL, True), kv("tokenizer.ggml.add_space_prefix", BOOL, False)]


def unigram(rng, n):  # XLM-R: t5 model, scores
    toks = ["<s>", "<pad>", "</s>", "<unk>"] + pieces(rng, n - 5, "\u2581") + ["<mask>"]
    types = [3, 3, 3, 2] + [1] * (n - 5) + [3]
    scores = [0.0] * 4 + [-1.0 - i / n for i in range(n - 5)] + [0.0]
    return head("bert") + [
        kv("tokenizer.ggml.model", STR, "t5"), kv("tokenizer.ggml.pre", STR, "default"),
        kv("tokenizer.ggml.tokens", ARR, (STR, toks)), kv("tokenizer.ggml.scores", ARR, (F32, scores)),
        kv("tokenizer.ggml.token_type", ARR, (I32, types)), kv("tokenizer.ggml.add_space_prefix", BOOL, True),
        kv("tokenizer.ggml.remove_extra_whitespaces", BOOL, True), kv("tokenizer.ggml.bos_token_id", U32, 0),
        kv("tokenizer.ggml.eos_token_id", U32, 2), kv("tokenizer.ggml.unknown_token_id", U32, 3),
        kv("tokenizer.ggml.seperator_token_id", U32, 2), kv("tokenizer.ggml.padding_token_id", U32, 1),
        kv("tokenizer.ggml.cls_token_id", U32, 0), kv("tokenizer.ggml.mask_token_id", U32, n - 1),
        kv("tokenizer.ggml.add_bos_token", BOOL, True), kv("tokenizer.ggml.add_eos_token", BOOL, True)]


def bpe(rng, n, n_special):  # Qwen: gpt2 model, pre qwen2, merges
    # GPT-2's byte-to-unicode alphabet: printable bytes as themselves, the rest from U+0100
    alphabet = [chr(b) for b in range(33, 127)] + [chr(b) for b in range(161, 173)] + [chr(b) for b in range(174, 256)]
    alphabet += [chr(256 + i) for i in range(256 - len(alphabet))]
    toks, merges, seen = list(alphabet), [], set(alphabet)
    while len(toks) < n - n_special:
        a, b = rng.choice(toks), rng.choice(toks)
        if len(a) + len(b) <= 12 and a + b not in seen:
            seen.add(a + b)
            toks.append(a + b)
            merges.append(a + " " + b)
    specials = ["<|endoftext|>"] + ["<|extra_%d|>" % i for i in range(n_special - 1)]
    types = [1] * len(toks) + [3] * n_special
    return head("qwen3") + [
        kv("tokenizer.ggml.model", STR, "gpt2"), kv("tokenizer.ggml.pre", STR, "qwen2"),
        kv("tokenizer.ggml.tokens", ARR, (STR, toks + specials)), kv("tokenizer.ggml.token_type", ARR, (I32, types)),
        kv("tokenizer.ggml.merges", ARR, (STR, merges)), kv("tokenizer.ggml.eos_token_id", U32, len(toks)),
        kv("tokenizer.ggml.padding_token_id", U32, len(toks)), kv("tokenizer.ggml.add_bos_token", BOOL, False),
        kv("tokenizer.ggml.add_eos_token", BOOL, True)]


def wordpiece(rng, n):  # BERT: bert model; llama.cpp writes "##x" as "x" and words with a leading U+2581
    toks = ["[PAD]"] + ["[unused%d]" % i for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    toks += pieces(rng, n - len(toks), "\u2581")
    types = [3] * 100 + [2, 3, 3, 3] + [1] * (n - 104)
    return head("bert") + [
        kv("tokenizer.ggml.model", STR, "bert"), kv("tokenizer.ggml.pre", STR, "default"),
        kv("tokenizer.ggml.tokens", ARR, (STR, toks)), kv("tokenizer.ggml.token_type", ARR, (I32, types)),
        kv("tokenizer.ggml.unknown_token_id", U32, 100), kv("tokenizer.ggml.cls_token_id", U32, 101),
        kv("tokenizer.ggml.seperator_token_id", U32, 102), kv("tokenizer.ggml.padding_token_id", U32, 0),
        kv("tokenizer.ggml.mask_token_id", U32, 103)]


def ours(db, name, path):
    t0 = time.perf_counter()
    db.execute("SELECT embed_load(?, ?)", (name, path))
    seconds = time.perf_counter() - t0
    db.execute("SELECT embed_unload(?)", (name,))
    return seconds


def theirs(path):
    out = subprocess.run(["node", os.path.join(HERE, "peers", "llama_vocab_load.mjs"), path], check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0])


def main():
    ext = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "embed")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    rng = random.Random(20261205)
    cases = [("gemma llama SPM", lambda: spm(rng, 262144)), ("xlm-r t5 Unigram", lambda: unigram(rng, 250002)),
             ("qwen gpt2 BPE", lambda: bpe(rng, 151646, 259)), ("bert WordPiece", lambda: wordpiece(rng, 30522))]
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(ext)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, make) in enumerate(cases):
            path = os.path.join(tmp, "v%d.gguf" % i)
            write_file(path, make(), [])
            ts, tl = [], []
            for r in range(runs):
                if r % 2 == 0:
                    ts.append(ours(db, "v%d_%d" % (i, r), path))
                    tl.append(theirs(path))
                else:
                    tl.append(theirs(path))
                    ts.append(ours(db, "v%d_%d" % (i, r), path))
            ts.sort()
            tl.sort()
            a, b = ts[len(ts) // 2], tl[len(tl) // 2]
            print("%-17s %6d KiB  ours %.3f s  llama.cpp %.3f s  ours/llama.cpp %.2f (medians of %d)" %
                  (label, os.path.getsize(path) // 1024, a, b, a / b, runs))


if __name__ == "__main__":
    main()
