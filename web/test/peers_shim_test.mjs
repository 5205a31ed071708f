#!/usr/bin/env node
// Checks the TF.js Conv2DBackpropFilter shim of the benchmark (web/pages/bench_peers.mjs) in Node:
// the weight gradient of conv2d on TF.js's wasm backend with the shim equals the one of TF.js's
// CPU backend (its own kernel), for valid and same padding. Needs make wasm-bench-deps.
// Ends with "N passed, M failed".
import path from 'path';
import { createRequire } from 'module';
import { fileURLToPath } from 'url';
import { shimConv2DBackpropFilter } from '../pages/bench_peers.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(root, 'build/wasm-bench/package.json'));
const tf = require('@tensorflow/tfjs');
require('@tensorflow/tfjs-backend-wasm');
let passed = 0, failed = 0;
const gradW = (x, w, pad) => tf.grad((ww) => tf.conv2d(x, ww, 1, pad).square().sum())(w);
const cases = [[[3, 12, 11, 2], [5, 5, 2, 4], 'valid'], [[2, 9, 10, 3], [3, 3, 3, 5], 'same'], [[4, 8, 8, 1], [5, 4, 1, 6], 'same']];
await tf.setBackend('cpu');
const ref = cases.map(([xs, ws, pad], i) => {
  const x = tf.randomNormal(xs, 0, 1, 'float32', 10 + i), w = tf.randomNormal(ws, 0, 1, 'float32', 20 + i);
  return { x: x.arraySync(), w: w.arraySync(), g: gradW(x, w, pad).dataSync() };
});
await tf.setBackend('wasm');
let threw = null;
try { gradW(tf.tensor(ref[0].x), tf.tensor(ref[0].w), 'valid'); } catch (e) { threw = e; }
console.log(`as shipped: ${threw ? 'throws: ' + String(threw.message).slice(0, 80) : 'no error'}`);
if (!shimConv2DBackpropFilter(tf)) { console.log('FAIL: the kernel was already registered'); failed++; }
cases.forEach(([xs, ws, pad], i) => {
  const g = gradW(tf.tensor(ref[i].x), tf.tensor(ref[i].w), pad).dataSync();
  let worst = 0, scale = 0;
  for (let j = 0; j < g.length; j++) { worst = Math.max(worst, Math.abs(g[j] - ref[i].g[j])); scale = Math.max(scale, Math.abs(ref[i].g[j])); }
  const ok = g.length === ref[i].g.length && worst <= 1e-4 * scale;
  console.log(`${ok ? 'ok' : 'FAIL'}: x ${xs} w ${ws} ${pad}: max |diff| ${worst.toExponential(2)} (scale ${scale.toFixed(1)})`);
  ok ? passed++ : failed++;
});
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
