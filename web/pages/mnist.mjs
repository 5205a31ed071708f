// MNIST in the tab: IDX data from URLs or picked files, a CNN trained with Adam, live loss and
// accuracy plots, and a drawing pad. State for tests: window.__mnist.
import { loadTorch, Plot, sleep, param, report } from './common.mjs';
import { addSwitch, CNNOnWebGPU } from '../webgpu/switch.mjs';

const $ = (id) => document.getElementById(id);
const state = { ready: false, training: false, step: 0, losses: [], accs: [], memory: [], done: false, images: null, labels: null, n: 0 };
window.__mnist = state;
const torch = await loadTorch();
const { nn, optim } = torch;
const F = nn.functional;
for (const k of ['model', 'batch', 'lr', 'steps']) if (param(k, null) != null) $(k).value = param(k);
const lossPlot = new Plot($('lossPlot'), { title: 'training loss (cross entropy)', series: [{ name: 'loss', color: '#dc2626' }] });
const device = addSwitch($('status')); // WebGPU or WebAssembly (web/webgpu/switch.mjs)
let wgModel = null; // the CNN on WebGPU while training there
// ?seed=N: the same batches on every run (the WebGPU-vs-WebAssembly test), else Math.random
let seed = Number(param('seed', 0)) >>> 0;
const rand = param('seed', null) == null ? Math.random : () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 4294967296);
const accPlot = new Plot($('accPlot'), { title: 'accuracy on held-out images', series: [{ name: 'accuracy', color: '#16a34a' }], yMin: 0, yMax: 1 });

async function gunzipIfNeeded(buf) {
  const u8 = new Uint8Array(buf);
  if (u8[0] !== 0x1f || u8[1] !== 0x8b) return u8;
  const ds = new Response(new Blob([u8]).stream().pipeThrough(new DecompressionStream('gzip')));
  return new Uint8Array(await ds.arrayBuffer());
}
function parseIdx(u8) {
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const magic = dv.getUint32(0);
  if ((magic >> 8) !== 0x08) throw new Error('not an IDX file of unsigned bytes (magic ' + magic.toString(16) + ')');
  const nd = magic & 0xff, dims = [];
  for (let i = 0; i < nd; i++) dims.push(dv.getUint32(4 + 4 * i));
  const data = u8.subarray(4 + 4 * nd);
  if (data.length !== dims.reduce((a, b) => a * b, 1)) throw new Error('IDX size mismatch');
  return { dims, data };
}
function setData(a, b) {
  let img = parseIdx(a), lbl = parseIdx(b);
  if (img.dims.length !== 3) [img, lbl] = [lbl, img];
  if (img.dims.length !== 3 || lbl.dims.length !== 1 || img.dims[0] !== lbl.dims[0]) throw new Error('expected an images file [N, 28, 28] and a labels file [N]');
  state.images = img.data; state.labels = lbl.data; state.n = img.dims[0];
  state.nTrain = Math.floor(state.n * 0.8);
  $('dataInfo').textContent = `${state.n} images: ${state.nTrain} for training, ${state.n - state.nTrain} held out`;
  state.ready = true;
  $('trainBtn').disabled = false;
}
$('fetchBtn').onclick = async () => {
  try {
    const [a, b] = await Promise.all([$('imgUrl').value, $('lblUrl').value].map(async (u) => {
      const r = await fetch(u);
      if (!r.ok) throw new Error(`${u}: HTTP ${r.status}`);
      return gunzipIfNeeded(await r.arrayBuffer());
    }));
    setData(a, b);
  } catch (e) { report(e); }
};
$('files').onchange = async (ev) => {
  try {
    const fs = [...ev.target.files];
    if (fs.length !== 2) throw new Error('pick both files (images and labels)');
    const [a, b] = await Promise.all(fs.map(async (f) => gunzipIfNeeded(await f.arrayBuffer())));
    setData(a, b);
  } catch (e) { report(e); }
};

let model = null, opt = null;
function makeModel(kind) {
  torch.manualSeed(0);
  if (kind === 'small') return new nn.Sequential(new nn.Conv2d(1, 8, 5), new nn.ReLU(), new nn.MaxPool2d(2), new nn.Conv2d(8, 16, 5), new nn.ReLU(), new nn.MaxPool2d(2), new nn.Flatten(), new nn.Linear(256, 10));
  return new nn.Sequential(new nn.Conv2d(1, 32, 5), new nn.ReLU(), new nn.MaxPool2d(2), new nn.Conv2d(32, 64, 5), new nn.ReLU(), new nn.MaxPool2d(2),
    new nn.Flatten(), new nn.Linear(1024, 128), new nn.ReLU(), new nn.Linear(128, 10));
}
// images [idx...] -> float32 [B, 1, 28, 28] normalised like torchvision's MNIST recipe
function rawBatchOf(idx) {
  const x = new Float32Array(idx.length * 784), y = new BigInt64Array(idx.length);
  idx.forEach((k, i) => {
    const off = k * 784;
    for (let p = 0; p < 784; p++) x[i * 784 + p] = (state.images[off + p] / 255 - 0.1307) / 0.3081;
    y[i] = BigInt(state.labels[k]);
  });
  return [x, y];
}
function batchOf(idx) {
  const [x, y] = rawBatchOf(idx);
  return [torch.tensor(x, { shape: [idx.length, 1, 28, 28] }), torch.tensor(y)];
}
function evaluate(count = 500) {
  return torch.noGrad(() => torch.scope(() => {
    model.eval();
    let correct = 0, total = 0;
    for (let s = state.nTrain; s < Math.min(state.n, state.nTrain + count); s += 250) {
      const idx = []; for (let k = s; k < Math.min(s + 250, state.n, state.nTrain + count); k++) idx.push(k);
      const [x, y] = batchOf(idx);
      correct += model.forward(x).argmax(1).eq(y).sum().item();
      total += idx.length;
    }
    model.train();
    return correct / total;
  }));
}
async function train() {
  if (state.training) return;
  state.training = true; state.done = false;
  const B = Number($('batch').value), steps = Number($('steps').value), lr = Number($('lr').value);
  if (!model) { model = makeModel($('model').value); opt = new optim.Adam(model.parameters(), { lr }); }
  const dev = state.device = await device.resolve();
  if (dev === 'webgpu' && !wgModel) wgModel = await CNNOnWebGPU.create(device.wg, torch, model, $('model').value, lr);
  const evalEvery = Number(param('evalEvery', 25));
  const t0 = performance.now();
  try {
    for (let i = 0; i < steps && state.training; i++) {
      const idx = Array.from({ length: B }, () => Math.floor(rand() * state.nTrain));
      const loss = wgModel ? await wgModel.step(...rawBatchOf(idx), B) : torch.scope(() => {
        const [x, y] = batchOf(idx);
        opt.zeroGrad();
        const l = F.crossEntropy(model.forward(x), y);
        l.backward();
        opt.step();
        return l.item();
      });
      state.step++; state.losses.push(loss);
      lossPlot.push(0, state.step, loss);
      if (wgModel && (state.step % evalEvery === 0 || i === steps - 1 || !state.training)) await wgModel.params(torch, model, 1); // weights back for evaluation and the pad
      if (state.step % evalEvery === 0 || i === steps - 1) { const acc = evaluate(Number(param('evalCount', 500))); state.accs.push([state.step, acc]); accPlot.push(0, state.step, acc); }
      if (state.step % 10 === 0) state.memory.push({ step: state.step, ...torch.memory() });
      const dt = (performance.now() - t0) / (i + 1);
      $('trainInfo').textContent = `step ${state.step} · loss ${loss.toFixed(4)} · ${dt.toFixed(0)} ms/step`;
      state.msPerStep = dt;
      await sleep(0); // let the page draw and take input
    }
  } catch (e) { report(e); }
  state.training = false; state.done = true;
}
$('trainBtn').onclick = () => train();
$('stopBtn').onclick = () => { state.training = false; };

// ---- drawing pad ----
const pad = $('pad'), pg = pad.getContext('2d');
pg.lineWidth = 20; pg.lineCap = 'round'; pg.strokeStyle = '#fff';
let drawing = false;
const pos = (e) => { const r = pad.getBoundingClientRect(); return [(e.clientX - r.left) * pad.width / r.width, (e.clientY - r.top) * pad.height / r.height]; };
pad.onpointerdown = (e) => { drawing = true; const [x, y] = pos(e); pg.beginPath(); pg.moveTo(x, y); };
pad.onpointermove = (e) => { if (!drawing) return; const [x, y] = pos(e); pg.lineTo(x, y); pg.stroke(); };
pad.onpointerup = pad.onpointerleave = () => { if (drawing) { drawing = false; classify(); } };
$('clearBtn').onclick = () => { pg.fillStyle = '#000'; pg.fillRect(0, 0, pad.width, pad.height); $('pred').textContent = '–'; $('probs').innerHTML = ''; };
$('classifyBtn').onclick = () => classify();
$('clearBtn').onclick();
// MNIST digits sit in a 20x20 box centred (by mass) in 28x28: do the same with the drawing
function padTo28() {
  const img = pg.getImageData(0, 0, pad.width, pad.height).data;
  let x0 = pad.width, y0 = pad.height, x1 = -1, y1 = -1;
  for (let y = 0; y < pad.height; y++) for (let x = 0; x < pad.width; x++) if (img[(y * pad.width + x) * 4] > 20) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
  if (x1 < 0) return null;
  const side = Math.max(x1 - x0, y1 - y0) + 1, s = document.getElementById('small'), sg = s.getContext('2d');
  sg.fillStyle = '#000'; sg.fillRect(0, 0, 28, 28);
  const w = ((x1 - x0 + 1) / side) * 20, h = ((y1 - y0 + 1) / side) * 20;
  sg.imageSmoothingQuality = 'high';
  sg.drawImage(pad, x0, y0, x1 - x0 + 1, y1 - y0 + 1, 4 + (20 - w) / 2, 4 + (20 - h) / 2, w, h);
  const d = sg.getImageData(0, 0, 28, 28).data, out = new Float32Array(784);
  let m = 0, cx = 0, cy = 0;
  for (let p = 0; p < 784; p++) { const v = d[p * 4] / 255; m += v; cx += v * (p % 28); cy += v * Math.floor(p / 28); }
  const dx = Math.round(13.5 - cx / m), dy = Math.round(13.5 - cy / m);
  for (let y = 0; y < 28; y++) for (let x = 0; x < 28; x++) {
    const sx = x - dx, sy = y - dy;
    const v = sx >= 0 && sx < 28 && sy >= 0 && sy < 28 ? d[(sy * 28 + sx) * 4] / 255 : 0;
    out[y * 28 + x] = (v - 0.1307) / 0.3081;
  }
  return out;
}
function classify() {
  if (!model) { $('pred').textContent = 'train first'; return; }
  const x = padTo28();
  if (!x) return;
  const probs = torch.noGrad(() => torch.scope(() => {
    model.eval();
    const p = torch.softmax(model.forward(torch.tensor(x, { shape: [1, 1, 28, 28] })), 1).data();
    model.train();
    return p;
  }));
  let best = 0; probs.forEach((p, i) => { if (p > probs[best]) best = i; });
  $('pred').textContent = String(best);
  $('probs').innerHTML = Array.from(probs, (p, i) => `<div class="bar">${i} <span class="b" style="width:${Math.round(p * 200)}px"></span> ${(p * 100).toFixed(1)}%</div>`).join('');
  state.prediction = { digit: best, probs: Array.from(probs) };
}
state.classify = classify;
state.train = train;
if (param('autoload', '0') === '1') $('fetchBtn').onclick();
