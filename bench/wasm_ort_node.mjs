#!/usr/bin/env node
// ctorch's wasm build against ONNX Runtime Web's wasm EP in one Node process, alternating runs
// (a quick A/B on a shared machine; the numbers of record come from the Chromium page,
// web/bench_peers_run.mjs). Needs `make wasm wasm-bench-deps`.
//   node bench/wasm_ort_node.mjs [--threads N] [--pairs N] [vit_tiny|resnet18 ...]
import path from 'path';
import { createRequire } from 'module';
import { fileURLToPath, pathToFileURL } from 'url';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const a = process.argv.slice(2);
const opt = (n, d) => { const i = a.indexOf(n); if (i < 0) return d; const v = a[i + 1]; a.splice(i, 2); return v; };
const threads = Number(opt('--threads', 1)), pairs = Number(opt('--pairs', 5));
const pkg = opt('--pkg', process.env.CTORCH_PKG || path.join(root, 'build/wasm/pkg'));
const benchDir = path.join(root, 'build/wasm-bench');
const require = createRequire(path.join(benchDir, 'package.json'));
const ort = require('onnxruntime-web');
ort.env.wasm.numThreads = threads;
ort.env.wasm.simd = true;
const { load } = await import(pathToFileURL(path.join(path.resolve(pkg), 'index.mjs')).href);
const torch = await load({ threads, log: false });
const { makeBench } = await import(pathToFileURL(path.join(root, 'web/pages/bench_models.mjs')).href);
const B = makeBench(torch);
const files = { vit_tiny: 'vit_tiny16.onnx', resnet18: 'resnet18.onnx' };
const med = (v) => { const s = [...v].sort((x, y) => x - y); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const now = () => performance.now();
console.log(`ctorch ${torch.info.build} (${torch.info.threads} threads) vs onnxruntime-web ${ort.env.versions?.web || ''} (${threads} threads), ${pairs} pairs, Node ${process.version}`);
for (const n of a.length ? a : ['vit_tiny', 'resnet18']) {
  const sess = await ort.InferenceSession.create(path.join(benchDir, 'models', files[n]), { executionProviders: ['wasm'] });
  const feed = { [sess.inputNames[0]]: new ort.Tensor('float32', new Float32Array(3 * 224 * 224).fill(0.5), [1, 3, 224, 224]) };
  const s = B.benches[n].setup();
  s.run(); await sess.run(feed); // warm-up
  const tc = [], to = [], r = [];
  for (let i = 0; i < pairs; i++) {
    let t0 = now(); s.run(); const x = now() - t0;
    t0 = now(); await sess.run(feed); const y = now() - t0;
    tc.push(x); to.push(y); r.push(y / x);
  }
  s.dispose(); await sess.release();
  console.log(`${n}: ctorch median ${med(tc).toFixed(1)} ms (min ${Math.min(...tc).toFixed(1)}), ORT median ${med(to).toFixed(1)} ms (min ${Math.min(...to).toFixed(1)}), ORT/ctorch median of pairs ${med(r).toFixed(2)}`);
}
process.exit(0);
