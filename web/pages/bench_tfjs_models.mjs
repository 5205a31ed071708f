// ResNet-18 and ViT-Tiny/16 inference (batch 1, 224x224) in TF.js, built from TF.js ops with the
// architecture of web/pages/bench_models.mjs (PyTorch's torchvision ResNet-18 and timm's
// ViT-Tiny/16), for the benchmark against TF.js's wasm backend (issue 8). The weights come from a
// ctorch model's state dict (PyTorch names and layouts), so the outputs of the two libraries can
// be compared before timing: the same numbers out proves the same architecture.
// Used by web/bench_peers.html and web/test/peers_tfjs_models_test.mjs.
//
// Layout: TF.js's convolutions are NHWC with HWIO filters; a PyTorch conv weight [O, I, kh, kw]
// is transposed to [kh, kw, I, O], a Linear weight [out, in] to [in, out]. Each layer is the op a
// TF.js user writes for it (tf.layers' conv2d/batchNormalization/dense run these same kernels):
// conv2d, batchNorm (inference), relu, maxPool, mean, fused matMul with bias; layer norm is
// composed (TF.js has no layer-norm op), GELU is the exact erf form as nn.GELU's default.

/** Plain copy of a ctorch module's state dict: name -> { shape, data: Float32Array }. */
export function exportState(module) {
  const out = {};
  for (const [name, t] of Object.entries(module.stateDict())) {
    if (t.dtype === 'float32') out[name] = { shape: [...t.shape], data: Float32Array.from(t.data()) };
    t.dispose();
  }
  return out;
}

function weights(tf, state) {
  const ts = [];
  const get = (name, perm = null) => {
    const s = state[name];
    if (!s) throw new Error(`TF.js model: no weight ${name} in the state dict`);
    let t = tf.tensor(s.data, s.shape, 'float32');
    if (perm) { const u = tf.transpose(t, perm); t.dispose(); t = u; }
    ts.push(t);
    return t;
  };
  return { get, all: ts };
}

// PyTorch's padding p on both sides, as TF.js's explicit padding (NHWC)
const pad2 = (p) => [[0, 0], [p, p], [p, p], [0, 0]];

/** ResNet-18 in eval mode. Returns { run(x) -> Float32Array [1000], numParams, dispose }. */
export function tfjsResnet18(tf, state) {
  const W = weights(tf, state);
  const conv = (name, stride, pad) => ({ w: W.get(name + '.weight', [2, 3, 1, 0]), stride, pad });
  const bn = (name) => ({ g: W.get(name + '.weight'), b: W.get(name + '.bias'), m: W.get(name + '.running_mean'), v: W.get(name + '.running_var') });
  const applyConv = (c, x) => tf.conv2d(x, c.w, c.stride, c.pad === 0 ? 'valid' : pad2(c.pad));
  const applyBn = (p, x) => tf.batchNorm(x, p.m, p.v, p.b, p.g, 1e-5);
  const block = (pre, inp, out, stride) => ({
    c1: conv(pre + '.conv1', stride, 1), b1: bn(pre + '.bn1'), c2: conv(pre + '.conv2', 1, 1), b2: bn(pre + '.bn2'),
    down: stride !== 1 || inp !== out ? { c: conv(pre + '.downsample.0', stride, 0), b: bn(pre + '.downsample.1') } : null,
  });
  const stem = { c: conv('conv1', 2, 3), b: bn('bn1') };
  const layers = [];
  [[64, 64, 1], [64, 128, 2], [128, 256, 2], [256, 512, 2]].forEach(([i, o, s], k) => {
    layers.push(block(`layer${k + 1}.0`, i, o, s), block(`layer${k + 1}.1`, o, o, 1));
  });
  const fcW = W.get('fc.weight', [1, 0]), fcB = W.get('fc.bias');
  const forward = (x) => tf.tidy(() => {
    let y = tf.relu(applyBn(stem.b, applyConv(stem.c, x)));
    y = tf.maxPool(tf.pad(y, pad2(1), -Infinity), 3, 2, 'valid');
    for (const l of layers) {
      const h = applyBn(l.b2, applyConv(l.c2, tf.relu(applyBn(l.b1, applyConv(l.c1, y)))));
      y = tf.relu(tf.add(h, l.down ? applyBn(l.down.b, applyConv(l.down.c, y)) : y));
    }
    return tf.fused.matMul({ a: tf.mean(y, [1, 2]), b: fcW, bias: fcB });
  });
  return model(tf, W, forward);
}

/** ViT-Tiny/16 (192 wide, 12 blocks, 3 heads, LayerNorm eps 1e-6). */
export function tfjsVitTiny(tf, state, { dim = 192, depth = 12, heads = 3 } = {}) {
  const W = weights(tf, state);
  const lin = (name) => ({ w: W.get(name + '.weight', [1, 0]), b: W.get(name + '.bias') });
  const ln = (name) => ({ g: W.get(name + '.weight'), b: W.get(name + '.bias') });
  const patchW = W.get('patch.weight', [2, 3, 1, 0]), patchB = W.get('patch.bias');
  const cls = W.get('cls'), pos = W.get('pos');
  const blocks = Array.from({ length: depth }, (_, i) => ({
    n1: ln(`blocks.${i}.norm1`), qkv: lin(`blocks.${i}.qkv`), proj: lin(`blocks.${i}.proj`),
    n2: ln(`blocks.${i}.norm2`), fc1: lin(`blocks.${i}.fc1`), fc2: lin(`blocks.${i}.fc2`),
  }));
  const norm = ln('norm'), head = lin('head');
  const D = dim / heads, scale = 1 / Math.sqrt(D);
  const layerNorm = (p, x) => {
    const mean = tf.mean(x, -1, true), d = tf.sub(x, mean);
    const v = tf.mean(tf.square(d), -1, true);
    return tf.add(tf.mul(tf.mul(d, tf.rsqrt(tf.add(v, 1e-6))), p.g), p.b);
  };
  const dense = (p, x) => tf.fused.matMul({ a: x, b: p.w, bias: p.b });
  const gelu = (x) => tf.mul(tf.mul(x, 0.5), tf.add(tf.erf(tf.mul(x, Math.SQRT1_2)), 1));
  const forward = (x) => tf.tidy(() => {
    const p = tf.add(tf.conv2d(x, patchW, 16, 'valid'), patchB); // [1, 14, 14, dim]
    const n = p.shape[1] * p.shape[2] + 1;
    let y = tf.add(tf.concat([tf.reshape(cls, [1, dim]), tf.reshape(p, [n - 1, dim])], 0), tf.reshape(pos, [n, dim])); // [197, dim]
    for (const b of blocks) {
      const qkv = tf.transpose(tf.reshape(dense(b.qkv, layerNorm(b.n1, y)), [n, 3, heads, D]), [1, 2, 0, 3]);
      const [q, k, v] = tf.unstack(qkv); // [heads, n, D] each
      const a = tf.matMul(tf.softmax(tf.mul(tf.matMul(q, k, false, true), scale)), v);
      y = tf.add(y, dense(b.proj, tf.reshape(tf.transpose(a, [1, 0, 2]), [n, dim])));
      y = tf.add(y, dense(b.fc2, gelu(dense(b.fc1, layerNorm(b.n2, y)))));
    }
    return dense(head, tf.slice(layerNorm(norm, y), [0, 0], [1, dim]));
  });
  return model(tf, W, forward);
}

function model(tf, W, forward) {
  let numParams = 0;
  for (const t of W.all) numParams += t.size;
  return {
    numParams, // running statistics included: compare with the ctorch state dict's float count
    forward,
    run: (x) => { const y = forward(x); const d = y.dataSync(); y.dispose(); return d; },
    dispose: () => W.all.forEach((t) => t.dispose()),
  };
}

/** ctorch's input [1, 3, 224, 224] (NCHW) as TF.js's NHWC tensor. */
export function nhwcInput(tf, data, shape) {
  return tf.tidy(() => tf.transpose(tf.tensor(data, shape, 'float32'), [0, 2, 3, 1]));
}

/** Largest |a - b| and largest |b|. */
export function maxDiff(a, b) {
  let worst = a.length === b.length ? 0 : Infinity, scale = 0;
  for (let i = 0; i < b.length; i++) { worst = Math.max(worst, Math.abs(a[i] - b[i])); scale = Math.max(scale, Math.abs(b[i])); }
  return { worst, scale };
}
