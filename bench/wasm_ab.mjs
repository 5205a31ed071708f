#!/usr/bin/env node
// Two builds of the wasm package side by side in one Node process (A/B of a kernel change on a
// shared, noisy machine): each benchmark of web/pages/bench_models.mjs runs alternately on A and B
// (after a warm-up of each), and the ratio reported is the median of the per-pair ratios A/B.
//   node bench/wasm_ab.mjs --a DIR_A --b DIR_B [--threads N] [--pairs N] [--cpu] [names...]
// --cpu times each run by the process's CPU time instead of wall time (fair only at 1 thread: it
// leaves out the time the process waits for a core on a loaded machine).
// (DIR: a build/wasm/pkg-like directory; copy the old one aside before rebuilding.)
import path from 'path';
import { fileURLToPath, pathToFileURL } from 'url';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const a = process.argv.slice(2);
const opt = (n, d) => { const i = a.indexOf(n); if (i < 0) return d; const v = a[i + 1]; a.splice(i, 2); return v; };
const dirA = opt('--a', null), dirB = opt('--b', path.join(root, 'build/wasm/pkg'));
const threads = Number(opt('--threads', 1)), pairs = Number(opt('--pairs', 5));
const cpuIdx = a.indexOf('--cpu'), useCpu = cpuIdx >= 0;
if (useCpu) a.splice(cpuIdx, 1);
if (!dirA) { console.error('usage: node bench/wasm_ab.mjs --a DIR_A [--b DIR_B] [--threads N] [--pairs N] [names...]'); process.exit(2); }
const { makeBench } = await import(pathToFileURL(path.join(root, 'web/pages/bench_models.mjs')).href);
async function open(dir) {
  const { load } = await import(pathToFileURL(path.join(path.resolve(dir), 'index.mjs')).href);
  const torch = await load({ threads, log: false });
  return makeBench(torch);
}
const A = await open(dirA), B = await open(dirB);
const names = a.length ? a : ['vit_tiny', 'resnet18'];
const med = (v) => { const s = [...v].sort((x, y) => x - y); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
console.log(`A = ${dirA}\nB = ${dirB}\n${threads} thread(s), ${pairs} pairs, ${useCpu ? 'process CPU time' : 'wall time'}, Node ${process.version}`);
const now = useCpu ? () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; } : () => performance.now();
for (const n of names) {
  const sa = A.benches[n].setup(), sb = B.benches[n].setup(); // models built once per side
  sa.run(); sb.run(); // warm-up
  const ta = [], tb = [], r = [];
  for (let i = 0; i < pairs; i++) {
    let t0 = now(); sa.run(); const x = now() - t0;
    t0 = now(); sb.run(); const y = now() - t0;
    ta.push(x); tb.push(y); r.push(x / y);
  }
  sa.dispose(); sb.dispose();
  console.log(`${n}: A median ${med(ta).toFixed(1)} ms (min ${Math.min(...ta).toFixed(1)}), B median ${med(tb).toFixed(1)} ms (min ${Math.min(...tb).toFixed(1)}), A/B median of pairs ${med(r).toFixed(2)} [${r.map((v) => v.toFixed(2)).join(' ')}]`);
}
