"""The kernel switch, EMBED_SIMD: each process reports the set it runs in embed_debug() (capped by
the CPU; a value that names no set is shown, never silently taken), and every set's float32
sentence vectors agree with the others' to float rounding (the parity suites then check each set
against the references)."""
import os
import subprocess
import sys

from harness import EXT, FIXTURES, connect, floats, one, test

SETS = ["generic", "avx2", "avx512"]
MODEL = os.path.join(FIXTURES, "models", "minilm-tiny-st")
TEXTS = ["I left my phone on the left side of the table.", "short", "x " * 60]


def in_process(simd, code, *args):
    env = dict(os.environ, EMBED_SIMD=simd)
    prog = ("import sqlite3, sys\n"
            "con = sqlite3.connect(':memory:'); con.enable_load_extension(True); con.load_extension(sys.argv[1])\n"
            + code)
    return subprocess.run([sys.executable, "-c", prog, EXT] + list(args), env=env, check=True, capture_output=True,
                          text=True).stdout


def debug(simd):
    out = in_process(simd, "print(con.execute('SELECT embed_debug()').fetchone()[0])")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


@test
def embed_debug_names_the_set_each_process_runs():
    cpu = debug("")["simd_cpu"]
    assert cpu in SETS, cpu
    for s in SETS:
        got = debug(s)
        want = s if SETS.index(s) <= SETS.index(cpu) else cpu  # never above what the CPU runs
        assert got["simd"] == want and got["simd_cpu"] == cpu, (s, got)
        if want == "generic":
            assert got["int8"] == "scalar", got
    got = debug("avx9000")
    assert got["simd"] == cpu + " (EMBED_SIMD='avx9000' names no set: avx512, avx2 or generic)", got


@test
def every_set_gives_the_same_vectors_to_float_rounding():
    code = ("con.execute(\"SELECT embed_load('m', ?)\", (sys.argv[2],))\n"
            "for t in sys.argv[3:]:\n"
            "    print(con.execute(\"SELECT hex(embed('m', ?))\", (t,)).fetchone()[0])\n")
    got = {s: [floats(bytes.fromhex(h)) for h in in_process(s, code, MODEL, *TEXTS).split()] for s in SETS}
    con = connect()
    one(con, "SELECT embed_load('m', ?)", MODEL)
    here = [floats(one(con, "SELECT embed('m', ?)", t)) for t in TEXTS]
    for s, vectors in got.items():
        assert len(vectors) == len(TEXTS), s
        for v, w in zip(vectors, here):
            assert max(abs(a - b) for a, b in zip(v, w)) <= 1e-5, s
