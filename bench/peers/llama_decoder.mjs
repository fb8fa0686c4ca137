// llama.cpp (node-llama-cpp, prebuilt CPU build) on the GGUF files that bench/peers/gguf_write.py
// writes from bench_decoder's models: first the check (each of check.txt's sequences embedded
// alone, its pooled vector against ours in check.f32, both normalised: max |diff| and cosine),
// then the workloads of workloads.txt timed as bench_decoder times its own (a warm-up, then the
// best pass of at least 1 s and 2 passes; one pass when it takes over 2 s). node-llama-cpp's
// embedding context holds one sequence, so a batch of 32 is 32 calls, each of its 128 tokens
// evaluated in one ubatch.
// Usage: node llama_decoder.mjs DIR KEY TYPE [--threads N] [--workload KEY] [--results FILE] [--check-only]
//   DIR/KEY/TYPE.gguf is the file (TYPE f32, f16, bf16 or q8_0); --results appends
//   "llama_TYPE KEY THREADS WORKLOAD TOKENS_PER_S".
import fs from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [dir, key, type, ...rest] = process.argv.slice(2);
if (!type) {
    console.error("usage: node llama_decoder.mjs DIR KEY TYPE [--threads N] [--workload KEY] [--results FILE] [--check-only]");
    process.exit(2);
}
const opt = {threads: 1, workload: null, results: null, checkOnly: false};
for (let i = 0; i < rest.length; i++) {
    if (rest[i] === "--threads") opt.threads = Number(rest[++i]);
    else if (rest[i] === "--workload") opt.workload = rest[++i];
    else if (rest[i] === "--results") opt.results = rest[++i];
    else if (rest[i] === "--check-only") opt.checkOnly = true;
    else { console.error("unknown option " + rest[i]); process.exit(2); }
}
const base = `${dir}/${key}`;

function readWorkloads() {
    const lines = fs.readFileSync(`${base}/workloads.txt`, "utf8").trim().split("\n");
    const out = [];
    let cur = null, B = 0, T = 0, lens = null;
    for (const line of lines) {
        const f = line.split(" ");
        if (f[0] === "workload") out.push(cur = {key: f[1], tokens: Number(f[3]), seqs: []});
        else if (f[0] === "batch") [B, T] = [Number(f[1]), Number(f[2])];
        else if (f[0] === "lens") lens = f.slice(1).map(Number);
        else if (f[0] === "ids") {
            const ids = f.slice(1).map(Number);
            for (let b = 0; b < B; b++) cur.seqs.push(ids.slice(b * T, b * T + lens[b]));
        }
    }
    return out;
}

function unit(v) {
    let n = 0;
    for (const x of v) n += x * x;
    n = Math.sqrt(n);
    return Array.from(v, (x) => x / n);
}

async function check(ctx) {
    const seqs = fs.readFileSync(`${base}/check.txt`, "utf8").trim().split("\n").map((l) => l.split(" ").slice(2).map(Number));
    const ours = new Float32Array(fs.readFileSync(`${base}/check.f32`).buffer.slice(0));
    const H = ours.length / seqs.length;
    let worst = 0, cosMin = 2;
    for (let s = 0; s < seqs.length; s++) {
        const theirs = unit((await ctx.getEmbeddingFor(seqs[s].slice())).vector);
        const mine = unit(ours.subarray(s * H, (s + 1) * H));
        if (theirs.length !== H) throw new Error(`llama.cpp gave ${theirs.length} values, ours ${H}`);
        let dot = 0;
        for (let i = 0; i < H; i++) {
            worst = Math.max(worst, Math.abs(theirs[i] - mine[i]));
            dot += theirs[i] * mine[i];
        }
        cosMin = Math.min(cosMin, dot);
    }
    console.log(`check ${key} ${type}: llama.cpp vs ours (float32), ${seqs.length} sequences of ${seqs.map((s) => s.length).join("/")} tokens, unit vectors: max |diff| ${worst.toExponential(2)}, smallest cosine ${cosMin.toFixed(6)}`);
    return {worst, cosMin};
}

async function pass(ctx, w) {
    const t0 = process.hrtime.bigint();
    for (const s of w.seqs) await ctx.getEmbeddingFor(s.slice());
    return Number(process.hrtime.bigint() - t0) / 1e9;
}

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
if (opt.checkOnly) console.log(`llama.cpp system info: ${llama.systemInfo}`);
// LLAMA_KV_F32=1: keys and values cached in float32 (llama.cpp caches F16 by default)
const kv = process.env.LLAMA_KV_F32 === "1" ? {defaultContextKvCacheKeyType: "F32", defaultContextKvCacheValueType: "F32"} : {};
const model = await llama.loadModel({modelPath: `${base}/${type}.gguf`, gpuLayers: 0, ...kv});
const ctx = await model.createEmbeddingContext({contextSize: 256, batchSize: 256, threads: opt.threads});
const {cosMin} = await check(ctx);
if (!(cosMin > 0.99)) {
    console.error(`llama.cpp's vectors are not ours (smallest cosine ${cosMin}): not timed`);
    process.exit(1);
}
if (!opt.checkOnly) {
    for (const w of readWorkloads()) {
        if (opt.workload && w.key !== opt.workload) continue;
        await ctx.getEmbeddingFor(w.seqs[w.seqs.length - 1].slice()); // warm-up
        let best = Infinity, reps = 0;
        const start = Date.now();
        do {
            best = Math.min(best, await pass(ctx, w));
            reps++;
        } while (best <= 2 && (reps < 2 || Date.now() - start < 1000));
        const tps = w.tokens / best;
        console.log(`llama.cpp ${type} ${key} ${opt.threads} thread(s) ${w.key}: ${tps.toFixed(0)} tokens/s`);
        if (opt.results) fs.appendFileSync(opt.results, `llama_${type} ${key} ${opt.threads} ${w.key} ${tps.toFixed(1)}\n`);
    }
}
await ctx.dispose();
await model.dispose();
