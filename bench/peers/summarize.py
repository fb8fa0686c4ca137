"""Tables of bench/encoder_peers.sh from its results files (one per round, lines
"IMPL MODEL THREADS WORKLOAD TOKENS_PER_S", "load L1 L5 L15" at the start of the round and
"load_end L1 L5 L15" at its end, "peak CPU FMA VNNI" for each CPU at its start): our tokens/s
(float32 and int8 weights) and share of the same-run sgemm rate; ours / peer per workload and
thread count, as the mean of the rounds' ratios followed by each round's ratio; and issue 13's
targets, each ratio against its bound."""
import sys
from collections import defaultdict

WORK = ["1x16", "1x128", "32x128", "sentences"]
OURS = [("ours", "f32"), ("ours_int8", "int8"), ("ours_bf16", "bf16")]  # WEIGHTS=f32,int8,bf16 adds bf16
PEERS = [("ort", "ONNX Runtime fp32"), ("torch_fp32", "PyTorch fp32"), ("torch_int8", "PyTorch dynamic int8")]
# issue 13: (numerator, denominator, label, bound per workload (None: no target there))
TARGETS = [
    ("ours", "ort", "ours f32 / ONNX Runtime f32", {w: 1.2 for w in WORK}),
    ("ours_int8", "ours", "ours int8 / ours f32", {"1x16": 1.3, "32x128": 1.8}),
    ("ours_int8", "torch_int8", "ours int8 / PyTorch int8", {w: 2.0 for w in WORK}),
]


def read(paths):
    data = defaultdict(dict)  # (impl, model, threads, workload) -> {round: tokens/s}
    loads = defaultdict(dict)  # round -> {"load": ..., "load_end": ...}
    for r, path in enumerate(sorted(paths, key=lambda p: int(p.rsplit(".", 1)[1])), 1):
        for line in open(path):
            f = line.split()
            if f and f[0] in ("load", "load_end"):
                loads[r][f[0]] = " ".join(f[1:])
            elif len(f) == 4 and f[0] == "peak":  # peak CPU FMA_GFLOPS VNNI_GOPS
                loads[r].setdefault("peaks", []).append(f"CPU {f[1]} {f[2]} GFLOP/s FMA, {f[3]} GOPS VNNI")
            elif len(f) == 5:
                data[(f[0], f[1], int(f[2]), f[3])][r] = float(f[4])
    return data, loads


def main(paths):
    data, loads = read(paths)
    rounds = sorted(loads) or [1]
    print("load averages (1, 5, 15 min), 2 CPUs: " + "; ".join(
        f"round {r}: {loads[r].get('load', '?')} at the start, {loads[r].get('load_end', '?')} at the end" for r in rounds))
    for r in rounds:
        if loads[r].get("peaks"):
            print(f"one core's peaks at round {r}'s start (bench_peak): " + "; ".join(loads[r]["peaks"]))
    models = sorted({k[1] for k in data if k[0] in ("ours", "ours_int8", "ours_bf16")},
                    key=["minilm", "base", "nomic", "modernbert"].index)
    threads = sorted({k[2] for k in data})

    def each(num, den):
        return [num[r] / den[r] for r in rounds if r in num and r in den and den[r] > 0]

    def cell(num, den, fmt):
        e = each(num, den)
        if not e:
            return "-"
        return fmt(sum(e) / len(e)) + (" (" + ", ".join(fmt(x) for x in e) + ")" if len(e) > 1 else "")

    def mean_tps(impl, m, th, w):
        d = data.get((impl, m, th, w), {})
        t = [d[r] for r in rounds if r in d]
        return sum(t) / len(t) if t else None

    pct = lambda x: f"{100 * x:.0f} %"
    times = lambda x: f"{x:.2f}x"
    for m in models:
        print(f"\n## {m}: our tokens/s (mean of rounds) and share of the same-run sgemm rate (mean (each round))")
        print("| threads | weights | " + " | ".join(WORK) + " |\n|---|---|" + "---|" * len(WORK))
        for th in threads:
            for impl, wname in OURS:
                if not any(k[0] == impl and k[1] == m for k in data):
                    continue
                row = []
                for w in WORK:
                    tps = mean_tps(impl, m, th, w)
                    sg = data.get(("sgemm", m, th, w), {})
                    row.append(f"{tps:.0f} tok/s, {cell(data.get((impl, m, th, w), {}), sg, pct)}" if tps else "-")
                print(f"| {th} | {wname} | " + " | ".join(row) + " |")
        for impl, name in PEERS:
            if not any(k[0] == impl and k[1] == m for k in data):
                continue
            print(f"\n{m}: ours f32 / {name}, tokens/s ratio, mean (each round); peer tokens/s mean in brackets")
            print("| threads | " + " | ".join(WORK) + " |\n|---|" + "---|" * len(WORK))
            for th in threads:
                row = []
                for w in WORK:
                    pt = mean_tps(impl, m, th, w)
                    c = cell(data.get(("ours", m, th, w), {}), data.get((impl, m, th, w), {}), times)
                    row.append(c + (f" [{pt:.0f}]" if pt else ""))
                print(f"| {th} | " + " | ".join(row) + " |")
    print("\n## issue 13's targets: ratio of tokens/s, mean of the rounds (each round); "
          "'ok' / 'MISS' against the bound in brackets, '-' where a figure is missing")
    for m in models:
        print(f"\n{m}")
        print("| threads | ratio | " + " | ".join(WORK) + " |\n|---|---|" + "---|" * len(WORK))
        for th in threads:
            for num, den, label, bound in TARGETS:
                row = []
                for w in WORK:
                    e = each(data.get((num, m, th, w), {}), data.get((den, m, th, w), {}))
                    c = cell(data.get((num, m, th, w), {}), data.get((den, m, th, w), {}), times)
                    if e and w in bound:
                        c += f" {'ok' if sum(e) / len(e) >= bound[w] else 'MISS'} (>= {bound[w]})"
                    row.append(c)
                print(f"| {th} | {label} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
