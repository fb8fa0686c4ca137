// The peer of bench/gguf_vocab_load.py: llama.cpp (node-llama-cpp, CPU) loads one
// vocabulary-only GGUF file; prints the seconds its loadModel took and the token count of
// "hello world". Usage: node bench/peers/llama_vocab_load.mjs FILE.gguf
import {createRequire} from "node:module";
import path from "node:path";

const require = createRequire(path.resolve("bench/package.json"));
const {getLlama, LlamaLogLevel} = await import(require.resolve("node-llama-cpp"));
const file = process.argv[2];
if (!file) {
    console.error("usage: node bench/peers/llama_vocab_load.mjs FILE.gguf");
    process.exit(2);
}
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const t0 = process.hrtime.bigint();
const model = await llama.loadModel({modelPath: file, vocabOnly: true});
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
console.log(seconds.toFixed(4), model.tokenize("hello world").length);
await model.dispose();
