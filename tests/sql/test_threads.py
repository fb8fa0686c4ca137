"""Short texts on several threads: a batch of at most 32 tokens multiplies on emb_sgemm_rows, its
products split over the helper threads by whole 4-column tiles above a million multiply-adds, so
every vector must be the same bit for bit with 1 and with 2 OpenBLAS threads. The model is a
random BERT wide enough for the split (hidden 256, intermediate 1024: 16 x 256 x 256 products),
written here, with bert-tiny's tokenizer."""
import atexit
import json
import os
import random
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile

from harness import test, FIXTURES, EXT

H, L, HEADS, I, P = 256, 2, 4, 1024, 64
_tmp = tempfile.mkdtemp(prefix="threads-")
atexit.register(shutil.rmtree, _tmp, True)


def write_model(dst):
    src = os.path.join(FIXTURES, "models", "bert-tiny-uncased")
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), dst)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    cfg.update(hidden_size=H, num_hidden_layers=L, num_attention_heads=HEADS, intermediate_size=I,
               max_position_embeddings=P)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f)
    rng = random.Random(7)
    block = struct.pack("<4099f", *(rng.gauss(0, 0.05) for _ in range(4099)))  # tiled: cheap to write

    def values(n):
        reps = -(-n * 4 // len(block))
        return (block * reps)[:n * 4]
    tensors = [("embeddings.word_embeddings.weight", [cfg["vocab_size"], H]),
               ("embeddings.position_embeddings.weight", [P, H]), ("embeddings.token_type_embeddings.weight", [2, H]),
               ("embeddings.LayerNorm.weight", [H]), ("embeddings.LayerNorm.bias", [H])]
    for layer in range(L):
        p = "encoder.layer.%d." % layer
        for n in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            tensors += [(p + n + ".weight", [H, H]), (p + n + ".bias", [H])]
        tensors += [(p + "intermediate.dense.weight", [I, H]), (p + "intermediate.dense.bias", [I]),
                    (p + "output.dense.weight", [H, I]), (p + "output.dense.bias", [H])]
        for n in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors += [(p + n + ".weight", [H]), (p + n + ".bias", [H])]
    header, blobs, at = {}, [], 0
    for name, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        data = struct.pack("<%df" % n, *([1.0] * n)) if name.endswith("LayerNorm.weight") else values(n)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        for b in blobs:
            f.write(b)


MODEL = os.path.join(_tmp, "wide")
os.mkdir(MODEL)
write_model(MODEL)
TEXTS = ["I left my phone on the left side of the table.", "short", "the bus is late again today, as usual",
         " ".join(["word"] * 28)]


def vectors(threads):
    """hex of embed() and of every contextual vector of TEXTS, from a process with that many
    OpenBLAS threads."""
    code = (
        "import sqlite3, sys\n"
        "con = sqlite3.connect(':memory:'); con.enable_load_extension(True); con.load_extension(sys.argv[1])\n"
        "con.execute('SELECT embed_load(?, ?)', ('w', sys.argv[2]))\n"
        "for t in sys.argv[3:]:\n"
        "    print(con.execute('SELECT hex(embed(?, ?))', ('w', t)).fetchone()[0])\n"
        "    n = con.execute('SELECT count(*) FROM embed_tokens(?, ?)', ('w', t)).fetchone()[0]\n"
        "    assert 8 <= n <= 32 or t == 'short', n\n"
        "    for (v,) in con.execute('SELECT hex(contextual_embedding) FROM embed_tokens(?, ?)', ('w', t)):\n"
        "        print(v)\n")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    # under an emulator (qemu-x86_64 -cpu Haswell), EMBED_TEST_RUNNER runs the children in it too
    runner = shlex.split(os.environ.get("EMBED_TEST_RUNNER", ""))
    out = subprocess.run(runner + [sys.executable, "-c", code, EXT, MODEL] + TEXTS, env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return out


@test
def short_texts_give_the_same_bits_on_one_and_two_threads():
    one, two = vectors(1), vectors(2)
    assert len(one) > 40 and len(set(one)) > 40, len(one)  # real, distinct vectors
    assert one == two, [i for i, (a, b) in enumerate(zip(one, two)) if a != b][:5]
