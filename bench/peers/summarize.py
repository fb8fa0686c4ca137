"""Tables of bench/encoder_peers.sh from its results files (one per round, lines
"IMPL MODEL THREADS WORKLOAD TOKENS_PER_S" and "load L1 L5 L15"): our tokens/s and share of the
same-run sgemm rate, and ours / peer per workload and thread count, as the mean of the rounds'
ratios followed by each round's ratio."""
import sys
from collections import defaultdict

WORK = ["1x16", "1x128", "32x128", "sentences"]
PEERS = [("ort", "ONNX Runtime fp32"), ("torch_fp32", "PyTorch fp32"), ("torch_int8", "PyTorch dynamic int8")]


def main(paths):
    data = defaultdict(dict)  # (impl, model, threads, workload) -> {round: tokens/s}
    loads = {}
    for r, path in enumerate(sorted(paths, key=lambda p: int(p.rsplit(".", 1)[1])), 1):
        for line in open(path):
            f = line.split()
            if f and f[0] == "load":
                loads[r] = " ".join(f[1:])
            elif len(f) == 5:
                data[(f[0], f[1], int(f[2]), f[3])][r] = float(f[4])
    rounds = sorted(loads) or [1]
    print("load averages (1, 5, 15 min) at the start of each round: " +
          "; ".join(f"round {r}: {loads[r]}" for r in rounds) + " (2 CPUs)")
    models = sorted({k[1] for k in data if k[0] == "ours"}, key=["minilm", "base", "nomic", "modernbert"].index)
    threads = sorted({k[2] for k in data})

    def cell(num, den, fmt):
        rs = [r for r in rounds if r in num and r in den and den[r] > 0]
        if not rs:
            return "-"
        each = [num[r] / den[r] for r in rs]
        mean = sum(each) / len(each)
        return fmt(mean) + (" (" + ", ".join(fmt(x) for x in each) + ")" if len(each) > 1 else "")

    pct = lambda x: f"{100 * x:.0f} %"
    times = lambda x: f"{x:.2f}x"
    for m in models:
        print(f"\n## {m}: our tokens/s (mean of rounds) and share of the same-run sgemm rate (mean (each round))")
        print("| threads | " + " | ".join(WORK) + " |\n|---|" + "---|" * len(WORK))
        for th in threads:
            row = []
            for w in WORK:
                ours, sg = data.get(("ours", m, th, w), {}), data.get(("sgemm", m, th, w), {})
                tps = [ours[r] for r in rounds if r in ours]
                row.append(f"{sum(tps) / len(tps):.0f} tok/s, {cell(ours, sg, pct)}" if tps else "-")
            print(f"| {th} | " + " | ".join(row) + " |")
        for impl, name in PEERS:
            if not any(k[0] == impl and k[1] == m for k in data):
                continue
            print(f"\n{m}: ours / {name}, tokens/s ratio, mean (each round); peer tokens/s mean in brackets")
            print("| threads | " + " | ".join(WORK) + " |\n|---|" + "---|" * len(WORK))
            for th in threads:
                row = []
                for w in WORK:
                    peer = data.get((impl, m, th, w), {})
                    pt = [peer[r] for r in rounds if r in peer]
                    c = cell(data.get(("ours", m, th, w), {}), peer, times)
                    row.append(c + (f" [{sum(pt) / len(pt):.0f}]" if pt else ""))
                print(f"| {th} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
