#!/usr/bin/env node
// Baseline for bench/tokenizer.sh: Hugging Face tokenizers (npm binding of the Rust crate) on the
// corpora that bench_tokenizer wrote (OUTDIR/<corpus>.jsonl, one JSON string per line), one
// thread, encode() one document at a time and encodeBatch() in batches of 1000, special tokens
// added, no truncation (as bench_tokenizer does).
// usage: node bench/hf_tokenize.js [FIXTURES_DIR [OUTDIR]]
// Prints lines "RESULT hf-single|hf-batch <vocab> <corpus> <MB/s> <tokens/s>" (MB = 10^6 bytes).
process.env.RAYON_NUM_THREADS = '1';        // one thread, like ours (must precede the first use)
process.env.TOKENIZERS_PARALLELISM = 'false';
const fs = require('fs');
const path = require('path');
let Tokenizer;
try {
  ({ Tokenizer } = require(path.join(__dirname, 'node_modules', 'tokenizers')));
} catch (e) {
  console.error('npm package "tokenizers" is not installed (cd bench && npm install): ' + e.message);
  process.exit(2);
}
const fx = process.argv[2] || 'tests/fixtures';
const outdir = process.argv[3] || 'bench/out';
const vocabs = ['bert-base-uncased', 'bert-base-cased', 'bert-base-multilingual-cased', 'bert-base-chinese',
  'xlmr-style-ml8k', 'roberta-base', 'qwen-style', 'gemma-style'];
const vocabDir = (v) => (v.endsWith('-style') && !v.startsWith('xlmr') ? 'tokenizers3' // Qwen2, Gemma
  : v.startsWith('xlmr') || v.startsWith('roberta') ? 'tokenizers2' : 'tokenizers'); // Unigram, BPE
const corpora = ['english', 'mixed'];

function load(name) {
  const docs = fs.readFileSync(path.join(outdir, name + '.jsonl'), 'utf8').split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
  const bytes = docs.reduce((a, d) => a + Buffer.byteLength(d, 'utf8'), 0);
  return { docs, bytes };
}

(async () => {
  const data = {};
  for (const c of corpora) data[c] = load(c);
  console.log(`Hugging Face tokenizers ${require(path.join(__dirname, 'node_modules', 'tokenizers', 'package.json')).version} (npm), one thread`);
  console.log('vocabulary                     corpus   mode          MB/s     tokens/s');
  for (const v of vocabs) {
    const tok = Tokenizer.fromFile(path.join(fx, vocabDir(v), 'vocab', v, 'tokenizer.json'));
    for (const c of corpora) {
      const { docs, bytes } = data[c];
      await tok.encode('warm up');
      let t0 = process.hrtime.bigint();
      let ntok = 0;
      for (const d of docs) ntok += (await tok.encode(d)).getIds().length;
      let dt = Number(process.hrtime.bigint() - t0) / 1e9;
      report('hf-single', v, c, bytes / 1e6 / dt, ntok / dt);
      t0 = process.hrtime.bigint();
      ntok = 0;
      for (let i = 0; i < docs.length; i += 1000) {
        const encs = await tok.encodeBatch(docs.slice(i, i + 1000));
        for (const e of encs) ntok += e.getIds().length;
      }
      dt = Number(process.hrtime.bigint() - t0) / 1e9;
      report('hf-batch', v, c, bytes / 1e6 / dt, ntok / dt);
    }
  }
})();

function report(mode, v, c, mbs, tps) {
  console.log(`${v.padEnd(30)} ${c.padEnd(8)} ${mode.padEnd(10)} ${mbs.toFixed(2).padStart(8)} ${tps.toFixed(0).padStart(12)}`);
  console.log(`RESULT ${mode} ${v} ${c} ${mbs.toFixed(3)} ${tps.toFixed(0)}`);
}
