// The peers of the benchmark (issue 8), run in the same page as ctorch: ONNX Runtime Web (wasm
// execution provider) on ResNet-18 / ViT-Tiny/16 exported from PyTorch 1.13
// (bench/wasm_export_onnx.py), and TF.js's wasm backend on the MNIST CNN training step (and on
// ResNet-18 / ViT-Tiny/16 through web/pages/bench_tfjs_models.mjs).
// The npm packages and .onnx files live under build/wasm-bench (make wasm-bench-deps), served
// by web/server.mjs at /peers/. Used by web/bench_peers.html.

const now = () => performance.now();

// ---- ONNX Runtime Web ----------------------------------------------------------------------
export async function ortSetup(base, name, { threads }) {
  const ort = await import(base + 'node_modules/onnxruntime-web/dist/ort.wasm.min.mjs');
  ort.env.wasm.numThreads = threads; // ORT Web needs it set explicitly to use threads
  ort.env.wasm.simd = true;
  ort.env.wasm.proxy = false;
  ort.env.wasm.wasmPaths = new URL(base + 'node_modules/onnxruntime-web/dist/', location.href).href;
  const model = new Uint8Array(await (await fetch(base + 'models/' + name + '.onnx')).arrayBuffer());
  const check = await (await fetch(base + 'models/' + name + '.check.json')).json();
  const sess = await ort.InferenceSession.create(model, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const x = new ort.Tensor('float32', Float32Array.from(check.x), [1, 3, 224, 224]);
  // The same model as PyTorch: compare the output with PyTorch's before timing.
  const out = (await sess.run({ x })).y.data;
  let worst = 0, scale = 0;
  for (let i = 0; i < out.length; i++) { worst = Math.max(worst, Math.abs(out[i] - check.y[i])); scale = Math.max(scale, Math.abs(check.y[i])); }
  if (!(worst <= 1e-3 * Math.max(1, scale))) throw new Error(`ONNX Runtime Web ${name}: output differs from PyTorch by ${worst}`);
  return {
    run: async () => { const o = await sess.run({ x }); o.y.data; },
    dispose: () => sess.release(),
    version: ort.env.versions ? ort.env.versions.web || ort.env.versions.common : '?', maxAbsDiffVsPyTorch: worst,
  };
}

// Times a and b alternately (a, b, a, b, ...) after warm-ups, so that the load of a shared machine
// falls on both alike; returns each one's times and the median of the per-pair ratios b/a.
// Warm-up: at least `warmup` pairs and at least `warmupMs` of them. One pair was not enough: V8
// compiles WebAssembly with its baseline compiler first and re-compiles hot functions with
// TurboFan on background threads, which on 2 cores take CPU from the timed threads; the first
// ViT-Tiny runs after the ResNet-18 section were 2.5-4x slower for ctorch AND for ORT Web (run
// order in results.json of 2026-11-30 19:28: ctorch 281 382 337 237 85 84 124 ms, ORT 203 236
// 168 77 63 89 68 ms), which the medians reported as "bimodal" ctorch times.
export async function paired(a, b, { warmup = 1, iters = 5, warmupMs = 0 } = {}) {
  const t0 = now();
  for (let i = 0; i < warmup || now() - t0 < warmupMs; i++) { await a(); await b(); if (i >= 50) break; }
  const ta = [], tb = [], ratio = [];
  for (let i = 0; i < iters; i++) {
    let t0 = now(); await a(); const x = now() - t0;
    t0 = now(); await b(); const y = now() - t0;
    ta.push(x); tb.push(y); ratio.push(y / x);
  }
  const med = (v) => { const w = [...v].sort((p, q) => p - q); return w[Math.floor(w.length / 2)]; };
  const st = (v) => ({ median: med(v), min: Math.min(...v), times: v });
  return { a: st(ta), b: st(tb), ratio: med(ratio) };
}

// ---- TF.js wasm backend ----------------------------------------------------------------------
// TF.js 4.22's wasm backend has no Conv2DBackpropFilter kernel, so conv weights cannot be trained
// as shipped. The shim computes dW with the backend's own Conv2D: for stride 1, dilation 1,
// dW[kh,kw,ci,co] = sum_{b,oh,ow} x[b,oh+kh-pt,ow+kw-pl,ci] dy[b,oh,ow,co], i.e. a convolution of
// x with channels and batch swapped (ci as batch, b as channels) by dy used as the filter
// ([oh,ow,b,co]).
export function shimConv2DBackpropFilter(tf) {
  if (tf.getKernel('Conv2DBackpropFilter', 'wasm')) return false;
  tf.registerKernel({
    kernelName: 'Conv2DBackpropFilter', backendName: 'wasm',
    kernelFunc: ({ inputs, attrs }) => {
      const { x, dy } = inputs;
      const { strides, pad, dataFormat, dilations, filterShape } = attrs;
      const s = typeof strides === 'number' ? [strides, strides] : strides;
      const d = dilations == null ? [1, 1] : typeof dilations === 'number' ? [dilations, dilations] : dilations;
      if (s[0] !== 1 || s[1] !== 1 || d[0] !== 1 || d[1] !== 1 || (dataFormat && dataFormat !== 'NHWC'))
        throw new Error('Conv2DBackpropFilter shim: only stride 1, dilation 1, NHWC');
      return tf.tidy(() => {
        const xt = tf.transpose(tf.engine().makeTensorFromTensorInfo(x), [3, 1, 2, 0]);
        const dyt = tf.transpose(tf.engine().makeTensorFromTensorInfo(dy), [1, 2, 0, 3]);
        let padArg = pad;
        if (pad === 'same') {
          const ph = filterShape[0] - 1, pw = filterShape[1] - 1;
          padArg = [[0, 0], [Math.floor(ph / 2), ph - Math.floor(ph / 2)], [Math.floor(pw / 2), pw - Math.floor(pw / 2)], [0, 0]];
        }
        return tf.transpose(tf.conv2d(xt, dyt, 1, padArg), [1, 2, 0, 3]);
      });
    },
  });
  return true;
}

export async function tfjsSetup(base, threads) {
  await import(base + 'node_modules/@tensorflow/tfjs/dist/tf.min.js');
  await import(base + 'node_modules/@tensorflow/tfjs-backend-wasm/dist/tf-backend-wasm.min.js');
  const tf = globalThis.tf;
  tf.wasm.setWasmPaths(new URL(base + 'node_modules/@tensorflow/tfjs-backend-wasm/dist/', location.href).href);
  tf.wasm.setThreadsCount(threads);
  // TF.js's wasm backend silently caps its thread pool at half the cores it reads from
  // navigator.hardwareConcurrency (1 thread on a 2-core machine, whatever setThreadsCount says).
  // For the same thread count as the other libraries, it reads 2×threads while it initialises.
  const cores = navigator.hardwareConcurrency;
  const spoof = threads * 2 > cores;
  if (spoof) Object.defineProperty(navigator, 'hardwareConcurrency', { value: threads * 2, configurable: true });
  try {
    await tf.setBackend('wasm');
    await tf.ready();
  } finally {
    if (spoof) delete navigator.hardwareConcurrency;
  }
  const shimmed = shimConv2DBackpropFilter(tf);
  return { tf, shimmed, threads: tf.wasm.getThreadsCount(), coresReported: spoof ? threads * 2 : cores, version: tf.version.tfjs };
}

// The MNIST CNN training step of the benchmark: conv 5x5x32, relu, pool 2, conv 5x5x64, relu,
// pool 2, dense 128 relu, dense 10; softmax cross-entropy; Adam 1e-3; batch 64.
export function tfjsMnistSetup(tf) {
  const model = tf.sequential({ layers: [
    tf.layers.conv2d({ inputShape: [28, 28, 1], filters: 32, kernelSize: 5, activation: 'relu' }),
    tf.layers.maxPooling2d({ poolSize: 2 }),
    tf.layers.conv2d({ filters: 64, kernelSize: 5, activation: 'relu' }),
    tf.layers.maxPooling2d({ poolSize: 2 }),
    tf.layers.flatten(),
    tf.layers.dense({ units: 128, activation: 'relu' }),
    tf.layers.dense({ units: 10 }),
  ] });
  const opt = tf.train.adam(1e-3);
  const x = tf.randomNormal([64, 28, 28, 1], 0, 1, 'float32', 1);
  const y = tf.oneHot(tf.randomUniform([64], 0, 10, 'int32', 2), 10);
  const losses = [];
  const run = () => { const l = opt.minimize(() => tf.losses.softmaxCrossEntropy(y, model.apply(x)), true); losses.push(l.dataSync()[0]); l.dispose(); };
  const dispose = () => {
    // The step really trains (the loss on a fixed batch falls): a wrong shim would not.
    const ok = losses.length > 1 && losses[losses.length - 1] < losses[0];
    x.dispose(); y.dispose(); opt.dispose(); model.dispose();
    if (!ok) throw new Error('TF.js MNIST step: the loss did not fall: ' + losses.join(', '));
  };
  return { run, dispose, losses };
}
