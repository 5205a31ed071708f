#!/usr/bin/env node
// The benchmarks of the benchmark page, in Node 20 (same models and timing loop:
// web/pages/bench_models.mjs). node web/bench_node.mjs [--threads N] [--iters N] [names...]
import path from 'path';
import { fileURLToPath, pathToFileURL } from 'url';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const a = process.argv.slice(2);
const opt = (n, d) => { const i = a.indexOf(n); if (i < 0) return d; const v = a[i + 1]; a.splice(i, 2); return v; };
const threads = opt('--threads', 'auto'), iters = Number(opt('--iters', 5));
const { load } = await import(pathToFileURL(path.join(process.env.CTORCH_PKG || path.join(root, 'build/wasm/pkg'), 'index.mjs')).href);
const torch = await load({ threads: threads === 'auto' ? 'auto' : Number(threads) });
const { makeBench } = await import('./pages/bench_models.mjs');
const B = makeBench(torch);
const names = a.length ? a : Object.keys(B.benches);
console.log(`ctorch ${torch.version} wasm (${torch.info.build}, ${torch.info.threads} threads), Node ${process.version}`);
for (const n of names) {
  const r = await B.run(n, { iters, warmup: 1 });
  console.log(`${r.title}: median ${r.ms.toFixed(1)} ms, min ${r.minMs.toFixed(1)} ms${r.tokensPerSecond ? `, ${r.tokensPerSecond.toFixed(0)} tokens/s` : ''}`);
}
