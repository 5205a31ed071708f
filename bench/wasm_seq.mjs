#!/usr/bin/env node
// Per-iteration times, in run order, of one benchmark of the benchmark page in Node (for spotting
// bimodal times: node bench/wasm_seq.mjs --threads 2 --iters 20 vit_tiny).
import path from 'path';
import { fileURLToPath, pathToFileURL } from 'url';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const a = process.argv.slice(2);
const opt = (n, d) => { const i = a.indexOf(n); if (i < 0) return d; const v = a[i + 1]; a.splice(i, 2); return v; };
const threads = Number(opt('--threads', 2)), iters = Number(opt('--iters', 20));
const { load } = await import(pathToFileURL(path.join(process.env.CTORCH_PKG || path.join(root, 'build/wasm/pkg'), 'index.mjs')).href);
const torch = await load({ threads, log: false });
const { makeBench } = await import(pathToFileURL(path.join(root, 'web/pages/bench_models.mjs')).href);
const B = makeBench(torch);
for (const n of a.length ? a : ['vit_tiny']) {
  const s = B.benches[n].setup();
  s.run();
  const ts = [], cs = [], cpu0 = process.cpuUsage();
  for (let i = 0; i < iters; i++) {
    const c0 = process.cpuUsage(), t0 = performance.now();
    s.run();
    ts.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cs.push((c.user + c.system) / 1000);
  }
  const cpu = process.cpuUsage(cpu0);
  s.dispose();
  const sorted = [...ts].sort((x, y) => x - y);
  console.log(`${n} ${torch.info.build} ${torch.info.threads}t: median ${sorted[iters >> 1].toFixed(1)} min ${sorted[0].toFixed(1)} ms, process CPU/wall ${((cpu.user + cpu.system) / 1000 / ts.reduce((x, y) => x + y, 0)).toFixed(2)}; in order (wall/CPU ms): ${ts.map((t, i) => t.toFixed(0) + '/' + cs[i].toFixed(0)).join(' ')}`);
}
