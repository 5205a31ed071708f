// Tests of the JavaScript API; shared by Node (run_api_tests.mjs) and Chromium (the page
// tests load web/test/api.html, which runs the same list in the browser).
// Expected numbers marked "PyTorch 1.13" were printed by /usr/bin/python3 with torch.
export const tests = [];
const test = (name, fn) => tests.push({ name, fn });

function assert(cond, msg) { if (!cond) throw new Error('assertion failed: ' + msg); }
function close(a, b, tol = 1e-6, msg = '') {
  a = Array.from(a, Number); b = Array.from(b, Number);
  assert(a.length === b.length, `${msg} length ${a.length} != ${b.length}`);
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= tol * Math.max(1, Math.abs(b[i])))) throw new Error(`${msg} element ${i}: ${a[i]} != ${b[i]}`);
  }
}
function throws(fn, name, substr) {
  try { fn(); } catch (e) {
    assert(e instanceof Error, 'not an Error: ' + e);
    if (name) assert(e.name === name, `error name ${e.name} != ${name} (${e.message})`);
    if (substr) assert(e.message.includes(substr), `message "${e.message}" lacks "${substr}"`);
    return e;
  }
  throw new Error('expected an exception' + (substr ? ` containing "${substr}"` : ''));
}
const eqArr = (a, b) => JSON.stringify(a) === JSON.stringify(b);

test('load: build info and version', (torch) => {
  assert(typeof torch.version == 'string' && torch.version.length > 0, 'version');
  assert(['pthreads', 'single-thread'].includes(torch.info.build), 'build ' + torch.info.build);
  assert(torch.info.simdLevel.includes('simd128'), 'simd level ' + torch.info.simdLevel);
});

test('tensor from typed arrays keeps dtype, shape and values', (torch) => torch.scope(() => {
  const cases = [[Float32Array, 'float32'], [Float64Array, 'float64'], [Int8Array, 'int8'], [Uint8Array, 'uint8'], [Int16Array, 'int16'], [Int32Array, 'int32']];
  for (const [C, dt] of cases) {
    const t = torch.tensor(new C([1, 2, 3, 4, 5, 6]), { shape: [2, 3] });
    assert(t.dtype === dt, `${dt}: got ${t.dtype}`);
    assert(eqArr(t.shape, [2, 3]), 'shape');
    const d = t.data();
    assert(d instanceof C, `${dt} data type ${d.constructor.name}`);
    close(d, [1, 2, 3, 4, 5, 6]);
  }
  const i64 = torch.tensor(new BigInt64Array([1n, -2n, 9007199254740993n]));
  assert(i64.dtype === 'int64', 'int64');
  assert(i64.data()[2] === 9007199254740993n, 'int64 exact');
  const h = torch.tensor(new Uint16Array([0x3c00, 0xc000]), { dtype: 'float16' });
  close(h.toFloat32Array(), [1, -2]);
  const bf = torch.tensor([1.5, -3], { dtype: 'bfloat16' });
  close(bf.toFloat32Array(), [1.5, -3]);
  const conv = torch.tensor(new Float32Array([1.7, -2.2]), { dtype: 'int32' });
  assert(conv.dtype === 'int32', 'converted dtype');
  close(conv.data(), [1, -2]);
}));

test('nested arrays infer PyTorch dtypes', (torch) => torch.scope(() => {
  assert(torch.tensor([[1, 2], [3, 4]]).dtype === 'int64', 'ints -> int64');
  assert(torch.tensor([1, 2.5]).dtype === 'float32', 'floats -> float32');
  assert(torch.tensor([true, false]).dtype === 'bool', 'bools -> bool');
  assert(torch.tensor(3.5).ndim === 0, '0-dim');
  assert(eqArr(torch.tensor([[1, 2, 3]]).tolist(), [[1, 2, 3]]), 'tolist');
  assert(torch.tensor(true).item() === true, 'bool item');
  throws(() => torch.tensor([[1, 2], [3]]), null, 'expected sequence of length 2');
}));

test('elementwise ops, broadcasting and promotion follow PyTorch', (torch) => torch.scope(() => {
  const a = torch.tensor([[1, 2, 3], [4, 5, 6]], { dtype: 'float32' });
  const b = torch.tensor([10, 20, 30], { dtype: 'float32' });
  close(a.add(b).data(), [11, 22, 33, 14, 25, 36]);
  close(torch.add(a, b, { alpha: 2 }).data(), [21, 42, 63, 24, 45, 66]);
  close(a.sub(1).mul(2).div(4).data(), [0, 0.5, 1, 1.5, 2, 2.5]);
  const i = torch.tensor([1, 2, 3]);
  assert(i.mul(2).dtype === 'int64', 'int * int scalar stays int64');
  assert(i.mul(2.5).dtype === 'float32', 'int * float scalar -> float32');
  assert(i.div(2).dtype === 'float32', 'true division -> float32');
  close(i.div(2, { roundingMode: 'floor' }).data(), [0, 1, 1]);
  assert(i.add(torch.tensor([1.5], { dtype: 'float64' })).dtype === 'float64', 'promotion to float64');
  close(torch.pow(2, i).data(), [2, 4, 8]);
  close(a.relu().neg().abs().data(), [1, 2, 3, 4, 5, 6]);
  close(a.gt(3).data(), [0, 0, 0, 1, 1, 1]);
  close(torch.where(a.gt(3), a, 0).data(), [0, 0, 0, 4, 5, 6]);
  close(a.clamp(2, 5).data(), [2, 2, 3, 4, 5, 5]);
  const x = torch.tensor([0.5, -1, 2]);
  close(x.exp().data(), [Math.exp(0.5), Math.exp(-1), Math.exp(2)], 1e-6);
  close(x.sigmoid().data(), [0.5, -1, 2].map((v) => 1 / (1 + Math.exp(-v))), 1e-6);
  const y = torch.tensor([1, 2, 3]);
  y.add_(1).mul_(3);
  close(y.data(), [6, 9, 12]);
}));

test('reductions, matmul, softmax, shapes and views', (torch) => torch.scope(() => {
  const a = torch.arange(6, { dtype: 'float32' }).reshape(2, 3);
  close(a.sum().data(), [15]);
  close(a.sum(1).data(), [3, 12]);
  assert(eqArr(a.sum(1, { keepdim: true }).shape, [2, 1]), 'keepdim');
  close(a.mean(0).data(), [1.5, 2.5, 3.5]);
  const [v, idx] = a.max(1);
  close(v.data(), [2, 5]); close(idx.data(), [2, 2]);
  assert(a.max(1).indices.dtype === 'int64', 'indices int64');
  close(a.argmax().data(), [5]);
  const m = a.matmul(a.T);
  close(m.data(), [5, 14, 14, 50]);
  const s = torch.softmax(torch.tensor([1, 2, 3], { dtype: 'float32' }), 0).data();
  const e = [1, 2, 3].map(Math.exp), z = e.reduce((p, q) => p + q);
  close(s, e.map((q) => q / z), 1e-6);
  const t = a.transpose(0, 1);
  assert(!t.isContiguous() && eqArr(t.shape, [3, 2]), 'transpose view');
  close(t.data(), [0, 3, 1, 4, 2, 5]);
  close(t.contiguous().view(-1).data(), [0, 3, 1, 4, 2, 5]);
  close(torch.cat([a, a], 0).sum().data(), [30]);
  close(torch.stack([a, a], 0).shape, [2, 2, 3]);
  const parts = a.split(1, 1);
  assert(parts.length === 3, 'split');
  close(a.unsqueeze(0).squeeze().shape, [2, 3]);
  close(a.flatten().data(), [0, 1, 2, 3, 4, 5]);
  close(a.index(1).data(), [3, 4, 5]);
  close(a.index(':', '1:').data(), [1, 2, 4, 5]);
  close(a.index(null, 0).shape, [1, 3]);
  close(a.index([1, 0]).data(), [3, 4, 5, 0, 1, 2]);
  const c = a.clone();
  c.set([0, 1], 100);
  close(c.data(), [0, 100, 2, 3, 4, 5]);
  c.set([1], torch.tensor([7, 8, 9], { dtype: 'float32' }));
  close(c.data(), [0, 100, 2, 7, 8, 9]);
  const [tv, ti] = torch.topk(torch.tensor([3, 1, 4, 1, 5], { dtype: 'float32' }), 2);
  close(tv.data(), [5, 4]); close(ti.data(), [4, 2]);
  close(torch.einsum('ij,kj->ik', a, a).data(), [5, 14, 14, 50]);
}));

test('autograd: backward, grad, retain, noGrad, double backward', (torch) => torch.scope(() => {
  const x = torch.tensor([1, 2, 3], { dtype: 'float32', requiresGrad: true });
  const y = x.mul(x).sum();
  assert(y.gradFn === 'SumBackward0', 'grad_fn ' + y.gradFn);
  y.backward();
  close(x.grad.data(), [2, 4, 6]);
  const z = torch.noGrad(() => x.mul(2));
  assert(!z.requiresGrad, 'noGrad');
  const w = torch.tensor([1.5], { requiresGrad: true });
  const f = w.pow(3);
  const [g] = torch.autograd.grad(f.sum(), [w], { createGraph: true });
  close(g.data(), [3 * 1.5 * 1.5], 1e-6);
  const [gg] = torch.autograd.grad(g.sum(), [w]);
  close(gg.data(), [6 * 1.5], 1e-6);
  x.grad = null;
  assert(x.grad === null, 'grad cleared');
  throws(() => torch.tensor([1, 2]).requiresGrad_(), 'RuntimeError', 'only Tensors of floating point');
}));

test('errors are JavaScript Errors with PyTorch messages', (torch) => torch.scope(() => {
  const e = throws(() => torch.randn([2, 3]).matmul(torch.randn([2, 3])), 'RuntimeError', 'mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)');
  assert(e instanceof torch.CtorchError, 'CtorchError');
  throws(() => torch.zeros([3]).index(5), 'IndexError', 'index 5 is out of bounds for dimension 0 with size 3');
  throws(() => torch.zeros([2, 2]).view(3), 'RuntimeError', "shape '[3]' is invalid for input of size 4");
  throws(() => torch.nn.functional.crossEntropy(torch.zeros([2, 3]), torch.zeros([2]), { reduction: 'avg' }), 'ValueError', 'avg is not a valid value for reduction');
  throws(() => torch.zeros([2], { dtype: 'complex64' }), 'TypeError', "unknown dtype 'complex64'");
  // the library still works after errors
  close(torch.ones([2]).sum().data(), [2]);
}));

test('scopes release everything not returned or kept; dispose is idempotent', (torch) => {
  const before = torch.memory().liveTensors;
  const kept = torch.scope(() => {
    const a = torch.randn([10, 10]);
    const b = a.matmul(a).relu();
    const inner = torch.scope(() => b.add(1).mul(2));
    torch.keep(torch.ones([3]));
    return { out: inner, list: [b.sum()] };
  });
  assert(torch.memory().liveTensors === before + 3, `live ${torch.memory().liveTensors} vs ${before}+3`);
  assert(!kept.out.isDisposed && !kept.list[0].isDisposed, 'returned tensors alive');
  torch.dispose(kept);
  assert(kept.out.isDisposed, 'disposed');
  kept.out.dispose();
  throws(() => kept.out.add(1), 'RuntimeError', 'disposed');
  // the kept ones(3) is still alive until disposed by the user; count it
  assert(torch.memory().liveTensors === before + 1, 'after dispose');
  // a throwing scope releases its tensors too
  throws(() => torch.scope(() => { torch.randn([4]); throw new Error('boom'); }), null, 'boom');
  assert(torch.memory().liveTensors === before + 1, 'after throwing scope');
});

test('manualSeed gives PyTorch numbers (randn, randint, Linear init)', (torch) => torch.scope(() => {
  torch.manualSeed(0);
  // PyTorch 1.13: torch.manual_seed(0); torch.randn(5)
  close(torch.randn([5]).data(), [1.5409960746765137, -0.293428897857666, -2.1787893772125244, 0.5684312582015991, -1.0845223665237427], 1e-7);
  torch.manualSeed(1);
  close(torch.randint(0, 10, [6]).data(), [5, 9, 4, 8, 3, 3]);
  torch.manualSeed(42);
  const lin = new torch.nn.Linear(3, 2);
  close(lin.weight.data(), [0.4414065182209015, 0.47920528054237366, -0.1352572739124298, 0.5303604602813721, -0.1264995038509369, 0.11650390923023224], 1e-7);
  close(lin.bias.data(), [-0.28108587861061096, 0.3390677869319916], 1e-7);
  torch.manualSeed(3);
  const conv = new torch.nn.Conv2d(1, 2, 3);
  close(conv.weight.data().slice(0, 6), [-0.33049100637435913, -0.2629537582397461, -0.14277169108390808, -0.31536346673965454, -0.01892375946044922, -0.2932558059692383], 1e-7);
  lin.dispose(); conv.dispose();
}));

test('Adam on a Linear layer matches PyTorch step for step', (torch) => torch.scope(() => {
  torch.manualSeed(0);
  const m = new torch.nn.Linear(4, 3);
  const opt = new torch.optim.Adam(m.parameters(), { lr: 0.01 });
  const x = torch.randn([8, 4]), y = torch.randint(0, 3, [8]);
  const losses = [];
  for (let i = 0; i < 5; i++) {
    torch.scope(() => {
      opt.zeroGrad();
      const loss = torch.nn.functional.crossEntropy(m.forward(x), y);
      loss.backward();
      opt.step();
      losses.push(loss.item());
    });
  }
  // PyTorch 1.13, same program
  close(losses, [0.966140866279602, 0.950532078742981, 0.9353883266448975, 0.9207124710083008, 0.9064986109733582], 1e-5);
  close(m.weight.data(), [0.04399307444691658, 0.2184065729379654, -0.36155933141708374, -0.31817397475242615, -0.24252305924892426, 0.09148804098367691,
    -0.05939541012048721, 0.4463938772678375, 0.005615761503577232, 0.1816488355398178, -0.10245615988969803, -0.1481880247592926], 1e-5);
  assert(Math.abs(opt.paramGroups[0].lr - 0.01) < 1e-12, 'lr');
  opt.paramGroups[0].lr = 0.5;
  assert(opt.lr === 0.5, 'lr set');
  opt.dispose(); m.dispose();
}));

test('a small CNN trains (conv2d, max_pool2d, cross_entropy, SGD): the loss falls', (torch) => torch.scope(() => {
  const { nn } = torch;
  torch.manualSeed(0);
  const model = new nn.Sequential(new nn.Conv2d(1, 4, 3, { padding: 1 }), new nn.ReLU(), new nn.MaxPool2d(2),
    new nn.Flatten(), new nn.Linear(4 * 4 * 4, 3));
  const opt = new torch.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
  const x = torch.randn([12, 1, 8, 8]), y = torch.randint(0, 3, [12]);
  let first = 0, last = 0;
  for (let i = 0; i < 30; i++) {
    const l = torch.scope(() => {
      opt.zeroGrad();
      const loss = nn.functional.crossEntropy(model.forward(x), y);
      loss.backward();
      opt.step();
      return loss.item();
    });
    if (i === 0) first = l;
    last = l;
  }
  assert(last < first * 0.5, `loss ${first} -> ${last}`);
  const names = model.namedParameters().map((e) => e[0]);
  assert(eqArr(names, ['0.weight', '0.bias', '4.weight', '4.bias']), 'names ' + names);
  assert(model.numParameters() === 4 * 9 + 4 + 64 * 3 + 3, 'numParameters');
  opt.dispose(); model.dispose();
}));

test('custom JS modules with Parameters, state_dict, safetensors round trip', (torch) => torch.scope(() => {
  const { nn } = torch;
  class Net extends nn.Module {
    constructor() {
      super();
      this.scale = nn.Parameter(torch.ones([3]));
      this.body = new nn.Linear(3, 3);
      this.head = new nn.Sequential(new nn.GELU(), new nn.Linear(3, 1));
    }
    forward(x) { return torch.scope(() => this.head.forward(this.body.forward(x.mul(this.scale)))); }
  }
  torch.manualSeed(5);
  const net = new Net();
  const sd = net.stateDict();
  assert(eqArr(Object.keys(sd), ['scale', 'body.weight', 'body.bias', 'head.1.weight', 'head.1.bias']), 'keys ' + Object.keys(sd));
  const bytes = torch.save(net, { format: 'pt' });
  assert(bytes instanceof Uint8Array && bytes.length > 8, 'bytes');
  const header = new TextDecoder().decode(bytes.slice(8, 8 + Number(new DataView(bytes.buffer).getBigUint64(0, true))));
  assert(header.startsWith('{"__metadata__":{"format":"pt"}'), 'header ' + header.slice(0, 60));
  const x = torch.randn([2, 3]);
  const y1 = net.forward(x).data();
  torch.manualSeed(6);
  const other = new Net();
  const loaded = torch.load(bytes);
  other.loadStateDict(loaded);
  close(other.forward(x).data(), y1, 0);
  const back = torch.safetensors.loadWithMetadata(bytes);
  assert(back.metadata.format === 'pt', 'metadata');
  const e = throws(() => other.loadStateDict({ scale: torch.ones([3]) }), 'RuntimeError', 'Missing key(s) in state_dict: "body.weight"');
  assert(e.message.startsWith('Error(s) in loading state_dict for Net'), e.message);
  throws(() => torch.load(new Uint8Array([1, 2, 3])), 'RuntimeError');
  net.dispose(); other.dispose();
}));

test('byte-level GPT: loss starts near ln(256) and falls', (torch) => torch.scope(() => {
  torch.manualSeed(0);
  const gpt = new torch.models.GPT({ vocabSize: 256, nPositions: 16, nEmbd: 32, nLayer: 2, nHead: 2 });
  const text = 'hello world, hello wasm. '.repeat(8);
  const bytes = new TextEncoder().encode(text);
  const opt = new torch.optim.AdamW(gpt.parameters(), { lr: 3e-3, weightDecay: 0 });
  let first = 0, last = 0;
  for (let i = 0; i < 25; i++) {
    last = torch.scope(() => {
      const B = 4, T = 16, xs = new BigInt64Array(B * T), ys = new BigInt64Array(B * T);
      for (let b = 0; b < B; b++) { const o = (i * 7 + b * 13) % (bytes.length - T - 1); for (let t = 0; t < T; t++) { xs[b * T + t] = BigInt(bytes[o + t]); ys[b * T + t] = BigInt(bytes[o + t + 1]); } }
      const { loss } = gpt.forward(torch.tensor(xs, { shape: [B, T] }), torch.tensor(ys, { shape: [B, T] }), { logits: false });
      opt.zeroGrad();
      loss.backward();
      opt.step();
      return loss.item();
    });
    if (i === 0) first = last;
  }
  assert(Math.abs(first - Math.log(256)) < 0.5, 'initial loss ' + first);
  assert(last < first - 1.5, `loss ${first} -> ${last}`);
  const cache = gpt.newCache(1, 16);
  const logits = cache.forward(torch.tensor([[104, 101]]), true);
  assert(eqArr(logits.shape, [1, 256]), 'cached logits shape ' + logits.shape);
  const { token, probs } = torch.models.GPT.pickToken(logits.data(), { temperature: 1, topK: 5 }, 0.5);
  assert(token >= 0 && token < 256 && Math.abs(probs.reduce((a, b) => a + b) - 1) < 1e-4, 'pick');
  cache.dispose(); opt.dispose(); gpt.dispose();
}));

test('snake_case aliases match the camelCase names', (torch) => {
  assert(torch.manual_seed === torch.manualSeed, 'manual_seed');
  assert(torch.nn.functional.cross_entropy === torch.nn.functional.crossEntropy, 'cross_entropy');
  assert(typeof torch.no_grad == 'function' && typeof torch.Tensor.prototype.requires_grad_ == 'function', 'no_grad / requires_grad_');
  assert(typeof torch.optim.SGD.prototype.zero_grad == 'function', 'zero_grad');
});

test('memory: over 4 GiB is a clear error, not a crash; training keeps memory flat', (torch) => {
  throws(() => torch.zeros([1 << 30, 8]), null, 'out of memory');
  throws(() => torch.empty([3, 1 << 30], { dtype: 'float32' }), null, 'out of memory');
  close(torch.scope(() => torch.ones([4]).sum().data()), [4]);
  torch.manualSeed(0);
  const m = new torch.nn.Linear(16, 4);
  const opt = new torch.optim.SGD(m.parameters(), { lr: 0.01 });
  const step = () => torch.scope(() => {
    opt.zeroGrad();
    const x = torch.randn([32, 16]);
    const loss = m.forward(x).pow(2).mean();
    loss.backward();
    opt.step();
  });
  for (let i = 0; i < 50; i++) step();
  const a = torch.memory();
  for (let i = 0; i < 1000; i++) step();
  const b = torch.memory();
  assert(b.liveTensors === a.liveTensors, `live tensors ${a.liveTensors} -> ${b.liveTensors}`);
  assert(b.allocatedBytes === a.allocatedBytes, `allocated ${a.allocatedBytes} -> ${b.allocatedBytes}`);
  assert(b.wasmBytes === a.wasmBytes, `wasm memory ${a.wasmBytes} -> ${b.wasmBytes}`);
  opt.dispose(); m.dispose();
});

// The SIMD128 GEMM (gemm_wasm.h: 4x8 tiles, k blocks of 256) on shapes with partial tiles, K past one
// k block, a transposed operand and a bias (addmm's C0): each element against a float64 sum, within
// float32's bound for a K-term dot product (an indexing or edge bug is off by O(1), not by rounding).
test('matmul / addmm / linear on GEMM tile edges and k blocks match a float64 reference', (torch) => torch.scope(() => {
  const { nn } = torch;
  for (const [M, N, K] of [[1, 1, 1], [3, 7, 5], [4, 8, 9], [5, 9, 300], [13, 17, 513], [8, 16, 257], [4, 24, 256]]) {
    const a = torch.randn([M, K]), b = torch.randn([K, N]), bias = torch.randn([N]);
    const A = a.data(), B = b.data(), Bi = bias.data();
    const outs = { matmul: a.matmul(b).data(), addmm: bias.addmm(a, b).data(), linear: nn.functional.linear(a, b.T.contiguous(), bias).data() };
    for (const [name, got] of Object.entries(outs)) {
      const withBias = name !== 'matmul';
      for (let i = 0; i < M; i++)
        for (let j = 0; j < N; j++) {
          let s = withBias ? Bi[j] : 0, mag = Math.abs(s);
          for (let k = 0; k < K; k++) { s += A[i * K + k] * B[k * N + j]; mag += Math.abs(A[i * K + k] * B[k * N + j]); }
          const err = Math.abs(got[i * N + j] - s), bound = (K + 2) * 6e-8 * mag + 1e-30;
          if (!(err <= bound)) throw new Error(`${name} ${M}x${N}x${K} [${i},${j}]: ${got[i * N + j]} vs ${s} (|err| ${err} > ${bound})`);
        }
    }
  }
}));

export async function runAll(torch, log = console.log) {
  let passed = 0, failed = 0;
  for (const t of tests) {
    const t0 = Date.now();
    try {
      await t.fn(torch);
      passed++;
      log(`ok   ${t.name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      log(`FAIL ${t.name}: ${e && e.stack ? e.stack : e}`);
    }
  }
  log(`${passed} passed, ${failed} failed`);
  return { passed, failed };
}
