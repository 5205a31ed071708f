#!/usr/bin/env node
// Checks the benchmark's TF.js models (web/pages/bench_tfjs_models.mjs) in Node: ResNet-18 and
// ViT-Tiny/16 built from TF.js ops with a ctorch model's weights give ctorch's output (TF.js's
// wasm backend, batch 1, 224x224), so the TF.js timings are of the same architecture. The batch
// norms get random running statistics first (fresh ones are 0 and 1, which would hide a mix-up of
// mean/variance/weight/bias). Needs make wasm and make wasm-bench-deps. Ends with "N passed, M failed".
//   node web/test/peers_tfjs_models_test.mjs
import path from 'path';
import { createRequire } from 'module';
import { fileURLToPath, pathToFileURL } from 'url';
import { exportState, tfjsResnet18, tfjsVitTiny, nhwcInput, maxDiff } from '../pages/bench_tfjs_models.mjs';
import { makeBench } from '../pages/bench_models.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(root, 'build/wasm-bench/package.json'));
const tf = require('@tensorflow/tfjs');
require('@tensorflow/tfjs-backend-wasm');
await tf.setBackend('wasm');
await tf.ready();
const { load } = await import(pathToFileURL(path.join(root, 'build/wasm/pkg/index.mjs')).href);
const torch = await load({ threads: 1 });
const B = makeBench(torch);

let passed = 0, failed = 0;
const check = (ok, msg) => { console.log(`${ok ? 'ok' : 'FAIL'}: ${msg}`); ok ? passed++ : failed++; };

for (const [name, Ctor, build] of [['resnet18', B.models.ResNet18, tfjsResnet18], ['vit_tiny', B.models.ViTTiny, tfjsVitTiny]]) {
  torch.manualSeed(1);
  const m = new Ctor().eval();
  for (const [n, b] of m.namedBuffers()) {
    if (n.endsWith('running_mean')) b.uniform_(-0.5, 0.5);
    else if (n.endsWith('running_var')) b.uniform_(0.5, 2);
    b.dispose();
  }
  for (const [n, p] of m.namedParameters()) {
    // LayerNorm/BatchNorm weights and biases start at 1 and 0: perturb them too
    if (/(bn\d|downsample\.1|norm\d?)\.(weight|bias)$/.test(n)) torch.noGrad(() => p.uniform_(0.5, 1.5));
    p.dispose();
  }
  const x = torch.randn([1, 3, 224, 224]);
  const want = torch.noGrad(() => torch.scope(() => Float32Array.from(m.forward(x).data())));
  const state = exportState(m);
  const floats = Object.values(state).reduce((a, s) => a + s.data.length, 0);
  const tm = build(tf, state);
  const tx = nhwcInput(tf, x.data(), x.shape);
  const got = tm.run(tx);
  const { worst, scale } = maxDiff(got, want);
  check(got.length === 1000 && worst <= 1e-3 * Math.max(1, scale),
    `${name}: TF.js (wasm) vs ctorch output, max |diff| ${worst.toExponential(2)} (scale ${scale.toFixed(2)})`);
  check(tm.numParams === floats, `${name}: TF.js model holds the ${floats} floats of ctorch's state dict (${tm.numParams})`);
  tx.dispose(); tm.dispose(); x.dispose(); m.dispose();
}
check(tf.memory().numTensors === 0, `TF.js tensors left: ${tf.memory().numTensors}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
