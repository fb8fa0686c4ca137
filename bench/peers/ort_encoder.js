// ONNX Runtime peer of bench_encoder: runs DIR/KEY/model.onnx (exported by torch_encoder.py from
// the same weights) with onnxruntime-node (CPU, float32, graph optimizations "all"), checks it
// against our outputs (check.txt / check.f32), and times the workloads of workloads.txt with the
// same rule as ours (the largest batch once, then the best of whole passes: at least 1 s and
// 2 passes, one pass when it takes over 2 s), intra-op threads 1 and 2, inter-op 1.
// Usage: node ort_encoder.js DIR KEY [--threads 1,2] [--results FILE] [--quick] [--workload KEY (that one alone)]
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '..', 'node_modules', 'onnxruntime-node'));

function readBatches(file) {
  const out = new Map();
  let key = null;
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const f = lines[i].trim().split(/\s+/);
    if (f[0] === 'workload') { key = f[1]; out.set(key, { tokens: +f[3], batches: [] }); }
    else if (f[0] === 'batch') {
      const B = +f[1], T = +f[2];
      const lens = lines[i + 1].trim().split(/\s+/).slice(1).map(Number);
      const ids = lines[i + 2].trim().split(/\s+/).slice(1).map(BigInt);
      const mask = new BigInt64Array(B * T);
      for (let b = 0; b < B; b++) for (let t = 0; t < lens[b]; t++) mask[b * T + t] = 1n;
      if (!out.has(key)) out.set(key, { tokens: 0, batches: [] });
      out.get(key).batches.push({ B, T, lens,
        feeds: { input_ids: new ort.Tensor('int64', BigInt64Array.from(ids), [B, T]),
                 attention_mask: new ort.Tensor('int64', mask, [B, T]) } });
      i += 2;
    }
  }
  return out;
}

async function check(session, dir, H) {
  const ref = new Float32Array(fs.readFileSync(path.join(dir, 'check.f32')).buffer.slice(0));
  let off = 0, worst = 0;
  for (const bt of readBatches(path.join(dir, 'check.txt')).get(null).batches) {
    const got = (await session.run(bt.feeds)).last_hidden_state.data;
    for (let b = 0; b < bt.B; b++)
      for (let i = 0; i < bt.lens[b] * H; i++) {
        const d = Math.abs(got[b * bt.T * H + i] - ref[off + b * bt.T * H + i]);
        if (!(d <= worst)) worst = d;
      }
    off += bt.B * bt.T * H;
  }
  return worst;
}

async function timeWorkload(session, batches, minTime) {
  await session.run(batches[batches.length - 1].feeds);
  let best = 1e30, reps = 0;
  const start = performance.now();
  for (;;) {
    const s = performance.now();
    for (const b of batches) await session.run(b.feeds);
    best = Math.min(best, (performance.now() - s) / 1e3);
    reps++;
    if (best > 2.0) break;
    if (reps >= 2 && (performance.now() - start) / 1e3 >= minTime) break;
  }
  return best;
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
  const dir = path.join(args[0], args[1]), key = args[1];
  const threads = opt('--threads', '1,2').split(',').map(Number), results = opt('--results', null);
  const quick = args.includes('--quick'), only = opt('--workload', null);
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const H = cfg.hidden_size || cfg.n_embd;
  const work = readBatches(path.join(dir, 'workloads.txt'));
  if (only !== null && !work.has(only)) { console.error(`ort_encoder: no workload ${only} in ${dir}/workloads.txt`); process.exit(1); }
  for (const th of threads) {
    const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
      executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: th, interOpNumThreads: 1,
      executionMode: 'sequential' });
    if (th === threads[0]) {
      const d = await check(session, dir, H);
      console.log(`check ${key}: ONNX Runtime ${ort.env.versions.common}: max |ours - ORT| over real tokens ${d.toPrecision(2)}`);
      if (!(d < 1e-3)) { console.error(`ort_encoder: ${key}: ONNX Runtime differs from our encoder by ${d}`); process.exit(1); }
    }
    for (const [wk, w] of work) {
      if (only !== null && wk !== only) continue;
      const t = await timeWorkload(session, w.batches, quick ? 0.3 : 1.0);
      const tps = w.tokens / t;
      console.log(`ort        ${key.padEnd(10)} threads ${th} ${wk.padEnd(10)} ${tps.toFixed(0).padStart(9)} tokens/s`);
      if (results) fs.appendFileSync(results, `ort ${key} ${th} ${wk} ${tps.toFixed(1)}\n`);
    }
    await session.release();
  }
}
main().catch((e) => { console.error('ort_encoder:', e.message || e); process.exit(1); });
