// ONNX Runtime peer of bench_rerank: runs DIR/model.onnx (bench/peers/rerank_onnx.py, the same
// weights) with onnxruntime-node (CPU, float32, graph optimizations "all", inter-op 1) on the
// batches of DIR/pairs.txt (the 50 pairs' token ids and types, length-sorted, padded per batch of
// 32), checks its logits against ours (the scores line), and times whole passes with
// bench_rerank's rule (best of at least 6 passes and 2 s) on each intra-op thread count.
// Usage: node ort_rerank.js DIR [--threads 1,2] [--rounds N]
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '..', 'node_modules', 'onnxruntime-node'));

function readPairs(file) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const tokens = +lines[0].split(/\s+/)[3], batches = [];
  for (let i = 1; i < lines.length; i++) {
    const f = lines[i].trim().split(/\s+/);
    if (f[0] !== 'batch') continue;
    const B = +f[1], T = +f[2];
    const lens = lines[i + 1].trim().split(/\s+/).slice(1).map(Number);
    const ids = BigInt64Array.from(lines[i + 2].trim().split(/\s+/).slice(1).map(BigInt));
    const types = BigInt64Array.from(lines[i + 3].trim().split(/\s+/).slice(1).map(BigInt));
    const scores = lines[i + 4].trim().split(/\s+/).slice(1).map(Number);
    const mask = new BigInt64Array(B * T);
    for (let b = 0; b < B; b++) for (let t = 0; t < lens[b]; t++) mask[b * T + t] = 1n;
    batches.push({ B, scores, feeds: { input_ids: new ort.Tensor('int64', ids, [B, T]),
      attention_mask: new ort.Tensor('int64', mask, [B, T]), token_type_ids: new ort.Tensor('int64', types, [B, T]) } });
    i += 4;
  }
  return { tokens, batches };
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
  const dir = args[0], threads = opt('--threads', '1,2').split(',').map(Number), rounds = +opt('--rounds', '1');
  const { tokens, batches } = readPairs(path.join(dir, 'pairs.txt'));
  for (const th of threads) {
    const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
      executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: th, interOpNumThreads: 1,
      executionMode: 'sequential' });
    let worst = 0;
    for (const b of batches) {
      const got = (await session.run(b.feeds)).logits.data;
      for (let k = 0; k < b.B; k++) worst = Math.max(worst, Math.abs(got[k] - b.scores[k]));
    }
    for (let r = 1; r <= rounds; r++) {
      let best = 1e30;
      const start = performance.now();
      for (let rep = 0; rep < 6 || (performance.now() - start) / 1e3 < 2.0; rep++) {
        const s = performance.now();
        for (const b of batches) await session.run(b.feeds);
        best = Math.min(best, (performance.now() - s) / 1e3);
      }
      console.log(`ort threads ${th} round ${r}: ${(50 / best).toFixed(1)} pairs/s ${(tokens / best).toFixed(0)} tokens/s` +
                  ` (max |logit - ours| ${worst.toExponential(2)})`);
    }
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
