// llama.cpp (node-llama-cpp, bench/node_modules) on GGUF files that gguf_bert.py wrote from golden
// folders: each single-text case of the folder's reference JSON embedded from the reference's
// input_ids, llama.cpp's pooled vector against Hugging Face's (both normalised: max |diff|), and
// llama.cpp's own tokenization of the text against Hugging Face's ids. This is what proves the
// writer (a file llama.cpp reads as Hugging Face computes), and the numbers the GGUF loader is
// held to. Prints one line per file and "N passed, N failed": a file passes when every case is
// within its type's bound, from the file name's last part: f32 5e-4 (llama.cpp's f16 GELU table
// and key/value cache keep it ~1.5e-4 from HF), f16 1e-3, q8_0 3e-2 (it quantizes activations:
// 4.5e-3 to 6.7e-3 on the BERTs, 1.1e-2 on Qwen3's tiny random model, 1.3e-2 on NomicBERT's and
// JinaBERT v2's, 2.2e-2 on Gemma3's, whose 32-wide rows are one block each), q5_0 / q5_1 1.5e-1 and
// q4_0 / q4_1 3e-1 (4 to 5 bits on a 32-wide model, and its activations quantized too), probe
// 1e-5: NAME-probe.gguf's reference is our own vectors on that file (gguf_probe.py), not Hugging
// Face's. Gemma3 (EmbeddingGemma) pools by the mean; a file named *-dense-* holds its
// sentence-transformers Dense layers, and is compared on the document-prompted ids with
// sentence-transformers' own vector.
// Usage: node gguf_llama_check.mjs REFS.json NAME-f32.gguf|NAME-f16.gguf|NAME-q8_0.gguf|NAME-q4_0.gguf|...|NAME-probe.gguf ...
import fs from "node:fs";
import {createRequire} from "node:module";
import path from "node:path";

const require = createRequire(path.resolve(process.env.LLAMA_NODE_PACKAGE || "bench/package.json"));
const {getLlama, LlamaLogLevel} = await import(require.resolve("node-llama-cpp"));
const [refsPath, ...files] = process.argv.slice(2);
const BOUND = {f32: 5e-4, f16: 1e-3, q8_0: 3e-2, q5_0: 1.5e-1, q5_1: 1.5e-1, q4_0: 3e-1, q4_1: 3e-1, probe: 1e-5};
const bound = (f) => BOUND[path.basename(f, ".gguf").split("-").pop()];
if (!files.length || files.some((f) => !bound(f))) {
    console.error("usage: node gguf_llama_check.mjs REFS.json NAME-f32.gguf|NAME-f16.gguf|NAME-q8_0.gguf ...");
    process.exit(2);
}
const refs = JSON.parse(fs.readFileSync(refsPath, "utf8"));
const unit = (v) => {
    const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    return v.map((x) => x / n);
};
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const gemma = refs.config?.model_type === "gemma3_text";
const mean = (rows) => rows[0].map((_, j) => rows.reduce((s, r) => s + r[j], 0) / rows.length);
let passed = 0, failed = 0;
for (const file of files) {
    const model = await llama.loadModel({modelPath: file, gpuLayers: 0});
    const ctx = await model.createEmbeddingContext({contextSize: 1024, batchSize: 1024, threads: 1});
    let worst = 0, n = 0;
    const idsDiffer = [];
    for (const id of refs.case_ids) {
        const c = refs.cases[id];
        if ((c.kind ?? "single") !== "single" || c.truncated || c.input_ids.length < 2) continue;
        /* BERT's references pool by the mean; a decoder's by the last token (Qwen3) or the mean (Gemma3) */
        const dense = path.basename(file).includes("-dense-");
        const hf = unit(dense ? c.st_document : c.pooled_mean ??
            (gemma ? mean(c.last_hidden_state) : c.last_hidden_state[c.last_hidden_state.length - 1]));
        const got = unit((await ctx.getEmbeddingFor((dense ? c.st_document_ids : c.input_ids).slice())).vector);
        for (let i = 0; i < hf.length; i++) worst = Math.max(worst, Math.abs(got[i] - hf[i]));
        const tok = model.tokenize(c.text);
        const want = c.pooled_mean || gemma ? c.input_ids.slice(1, -1) : c.input_ids.slice(0, -1); /* no specials */
        if (tok.length !== want.length || tok.some((t, i) => t !== want[i])) idsDiffer.push(id);
        n++;
    }
    const ok = worst <= bound(file);
    ok ? passed++ : failed++;
    console.log(`${ok ? "ok  " : "FAIL"} ${path.basename(file)}: ${n} cases, llama.cpp vs the reference (unit vectors) max |diff| ${worst.toExponential(2)}; llama.cpp's own tokenization differs from HF's on ${idsDiffer.length} (${idsDiffer.join(", ")})`);
    await ctx.dispose();
    await model.dispose();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
