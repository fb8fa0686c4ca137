"""Tokens per second of a GGUF Q8_0 file on its three int8 / float32 paths, in one process: the
file's blocks as they are (the default, weights q8_0), the same file widened to float32 (weights
f32), and widened then requantized per channel (weights int8); rounds alternate the three, the
median of each is printed with the model's bytes (embed_models.bytes).
Usage: bench/gguf_q8_0.py MODEL_DIR [ROUNDS]  (a BERT-family folder; written as Q8_0 by
tests/references/gguf_bert.py into a temporary file). Run from the repository root after make."""
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "sql"))
sys.path.insert(0, os.path.join(ROOT, "tests", "references"))
from harness import connect, one  # noqa: E402
import gguf_bert  # noqa: E402

WORDS = ("the quick brown fox jumps over a lazy dog while the bus is late again and people wait in the "
         "rain for news of the city council meeting about roads schools and water").split()
TEXTS = [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(20 + i % 40)) for i in range(64)]
KINDS = (("q8_0", "{}"), ("f32", '{"weights": "f32"}'), ("int8", '{"weights": "int8"}'))


def main():
    src, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    path = os.path.join(tempfile.mkdtemp(prefix="embed-q8-bench-"), "model-q8_0.gguf")
    gguf_bert.write(src, path, "q8_0")
    con = connect()
    for kind, opts in KINDS:
        one(con, "SELECT embed_load(?, ?, ?)", kind, path, opts)
        assert one(con, "SELECT weights FROM embed_models WHERE name = ?", kind) == kind
    tokens = sum(one(con, "SELECT json_array_length(embed_token_ids('f32', ?))", t) for t in TEXTS)
    con.execute("CREATE TEMP TABLE texts(t TEXT)")
    con.executemany("INSERT INTO texts VALUES (?)", [(t,) for t in TEXTS])
    rates = {k: [] for k, _ in KINDS}
    for _ in range(rounds):
        for kind, _ in KINDS:
            t0 = time.perf_counter()
            con.execute("SELECT count(embed(?, t)) FROM texts", (kind,)).fetchone()
            rates[kind].append(tokens / (time.perf_counter() - t0))
    print("%d texts, %d tokens, %d rounds" % (len(TEXTS), tokens, rounds))
    for kind, _ in KINDS:
        print("%-5s %8.0f tokens/s  %6.1f MB" % (kind, statistics.median(rates[kind]),
                                                 one(con, "SELECT bytes FROM embed_models WHERE name = ?", kind) / 1e6))
    os.remove(path)


if __name__ == "__main__":
    main()
