// llama.cpp (node-llama-cpp, bench/node_modules) on the reranker GGUF files that gguf_bert.py and
// gguf_xlmr.py wrote from the cross-encoder folders of tests/references/rerank: each pair of
// REFS.json (gguf_rank_refs.py: the pairs of expected.json that Hugging Face did not truncate),
// scored by llama.cpp's rank pooling (createRankingContext) on Hugging Face's pair layout (BERT
// [CLS] q [SEP] d [SEP], XLM-R <s> q </s></s> d </s>, the query alone for an empty text;
// llama.cpp's own tokens of each text, their count checked against Hugging Face's), against the
// reference logit: Hugging Face's for XLM-R; for BERT, whose text llama.cpp gives token type 0
// where Hugging Face gives 1, the same model's logit with type ids 0 (gguf_rank_refs.py says
// how), and the distance to Hugging Face's own logit is shown beside it.
// node-llama-cpp's score is the sigmoid of llama.cpp's raw logit (llama_get_embeddings_seq holds
// the logit; node-llama-cpp applies the sigmoid for every architecture but Qwen3's), so the logit
// is taken back from it. Prints one line per file and "N passed, N failed".
// Usage: node gguf_llama_rank.mjs REFS.json NAME-f32.gguf|NAME-f16.gguf|NAME-q8_0.gguf ...
import fs from "node:fs";
import {createRequire} from "node:module";
import path from "node:path";

const require = createRequire(path.resolve(process.env.LLAMA_NODE_PACKAGE || "bench/package.json"));
const {getLlama, LlamaLogLevel} = await import(require.resolve("node-llama-cpp"));
const [refsPath, ...files] = process.argv.slice(2);
// bounds on the logit: llama.cpp's f16 GELU table and f16 key / value cache (measured: f32 7.2e-4 XLM-R,
// 8.6e-4 BERT; f16 5.8e-4, 1.2e-3), q8_0's activations quantized too (9.0e-3, 3.7e-2)
const BOUND = {f32: 2e-3, f16: 3e-3, q8_0: 5e-2};
const bound = (f) => BOUND[path.basename(f, ".gguf").split("-").pop()];
if (!files.length || files.some((f) => !bound(f))) {
    console.error("usage: node gguf_llama_rank.mjs REFS.json NAME-f32.gguf|NAME-f16.gguf|NAME-q8_0.gguf ...");
    process.exit(2);
}
const refs = JSON.parse(fs.readFileSync(refsPath, "utf8"));
const cases = refs.cases;
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
let passed = 0, failed = 0;
for (const file of files) {
    const model = await llama.loadModel({modelPath: file, gpuLayers: 0});
    const ctx = await model.createRankingContext({contextSize: 512, batchSize: 512, threads: 1});
    const t = model.tokens, xlmr = model.fileInfo.metadata?.tokenizer?.ggml?.model === "t5";
    let worst = 0, worstHf = 0, lengths = 0;
    for (const c of cases) {
        const q = model.tokenize(c.query), d = model.tokenize(c.text);
        const end = xlmr ? t.eos : t.sep;
        const ids = !d.length ? [t.bos, ...q, end] : xlmr ? [t.bos, ...q, end, end, ...d, end] : [t.bos, ...q, end, ...d, end];
        if (ids.length !== c.tokens) lengths++;
        const p = await ctx._evaluateRankingForInput(ids);
        const logit = Math.log(p / (1 - p));
        worst = Math.max(worst, Math.abs(logit - c.logit));
        worstHf = Math.max(worstHf, Math.abs(logit - c.hf_logit));
    }
    const ok = worst <= bound(file) && lengths === 0;
    ok ? passed++ : failed++;
    const against = refs.type_ids_zero ? "the model's with type ids 0" : "Hugging Face's";
    console.log(`${ok ? "ok  " : "FAIL"} ${path.basename(file)}: ${cases.length} pairs, llama.cpp's logit vs ${against} max |diff| ${worst.toExponential(2)} (vs Hugging Face's ${worstHf.toExponential(2)}); pair lengths differ on ${lengths}`);
    await ctx.dispose();
    await model.dispose();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
