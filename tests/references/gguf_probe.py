"""make check-gguf's block-type probes: for each of ggml's block types this reader widens, a
gguf_wide.py probe file (random token table in the type, the layer's matrices all-zero blocks: the
output is the layer norms of the embedding rows, so what llama.cpp computes is its own
dequantization of the table, exact in float32) and, beside it, a reference JSON in the golden
references' form (case_ids, cases with text, input_ids, pooled_mean) holding OUR ids and vectors
on that same file (./embed.so, or EMBED_EXT). gguf_llama_check.mjs then has llama.cpp embed the
same ids from the same file: the two agree to float32 rounding only if both widen every block
alike.
Usage: gguf_probe.py OUT_DIR   (prints the files written, one per line)"""
import json
import os
import sqlite3
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_wide  # noqa: E402
from gguf_quant import BLOCK  # noqa: E402


def main(out):
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(os.path.abspath(os.environ.get("EMBED_EXT", "./embed.so")))
    for i, kind in enumerate(BLOCK):
        path = os.path.join(out, "wide-%s-probe.gguf" % kind)
        gguf_wide.write(path, kind, probe=True, seed=100 + i)
        name = "probe-" + kind
        con.execute("SELECT embed_load(?, ?)", (name, path)).fetchall()
        cases = {}
        for j, text in enumerate(gguf_wide.TEXTS):
            ids = json.loads(con.execute("SELECT embed_token_ids(?, ?)", (name, text)).fetchone()[0])
            blob = con.execute("SELECT embed(?, ?)", (name, text)).fetchone()[0]
            vec = list(struct.unpack("<%df" % (len(blob) // 4), blob))
            cases["c%d" % j] = {"kind": "single", "truncated": False, "text": text, "input_ids": ids,
                                "pooled_mean": vec}
        with open(path[:-5] + ".json", "w", encoding="utf-8") as f:
            json.dump({"case_ids": sorted(cases), "cases": cases}, f)
        print(path)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n")[-1])
    main(sys.argv[1])
