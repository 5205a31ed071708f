// A byte-level GPT (ctorch's models.h GPT) trained on pasted text; sampling with a KV cache;
// clicking a token shows the distribution it was drawn from and the attention of every head at
// that position (recomputed in JS from the model's weights). State for tests: window.__gpt.
import { loadTorch, Plot, sleep, param, report } from './common.mjs';
import { addSwitch, GPTOnWebGPU } from '../webgpu/switch.mjs';

const $ = (id) => document.getElementById(id);
const state = { training: false, done: false, step: 0, losses: [], sampled: [], memory: [] };
window.__gpt = state;
const torch = await loadTorch();
const device = addSwitch($('status')); // WebGPU or WebAssembly (web/webgpu/switch.mjs)
for (const k of ['nLayer', 'nEmbd', 'nHead', 'ctx', 'batch', 'lr', 'steps']) if (param(k, null) != null) $(k).value = param(k);
$('text').value = DEFAULT_TEXT();
const plot = new Plot($('lossPlot'), { title: 'training loss (nats per byte)', series: [{ name: 'loss', color: '#dc2626' }] });
let model = null, opt = null, cfg = null, wgModel = null;
// ?seed=N: batches from a seeded generator (the same batches on both devices), else Math.random
const seeded = (s) => () => { s = (s + 0x6d2b79f5) | 0; let t = Math.imul(s ^ (s >>> 15), 1 | s); t ^= t + Math.imul(t ^ (t >>> 7), 61 | t); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
const enc = new TextEncoder(), dec = new TextDecoder();

function build() {
  cfg = { vocabSize: 256, nPositions: Number($('ctx').value), nEmbd: Number($('nEmbd').value), nLayer: Number($('nLayer').value), nHead: Number($('nHead').value), dropout: 0 };
  torch.manualSeed(1337);
  model = new torch.models.GPT(cfg);
  const params = model.parameters();
  opt = new torch.optim.AdamW(params, { lr: Number($('lr').value), weightDecay: 0 });
  torch.dispose(params);
  if (wgModel) wgModel.dispose();
  wgModel = null;
}
async function train() {
  if (state.training) return;
  const data = enc.encode($('text').value);
  const T = Number($('ctx').value), B = Number($('batch').value), steps = Number($('steps').value);
  if (data.length < T + 2) { report(new Error(`the text needs at least ${T + 2} bytes`)); return; }
  state.training = true; state.done = false;
  const dev = state.device = await device.resolve();
  if (!model || cfg.nPositions !== T || (dev === 'webgpu') !== !!wgModel) build();
  const rand = param('seed', null) != null ? seeded(Number(param('seed'))) : Math.random;
  const t0 = performance.now();
  try {
    // on WebGPU the model of wg_pages.c trains in the WebGPU module; each step is awaited
    if (dev === 'webgpu' && !wgModel) wgModel = await GPTOnWebGPU.create(device.wg, cfg, 1337, Number($('lr').value));
    for (let i = 0; i < steps && state.training; i++) {
      const xs = new BigInt64Array(B * T), ys = new BigInt64Array(B * T);
      for (let b = 0; b < B; b++) {
        const o = Math.floor(rand() * (data.length - T - 1));
        for (let t = 0; t < T; t++) { xs[b * T + t] = BigInt(data[o + t]); ys[b * T + t] = BigInt(data[o + t + 1]); }
      }
      const loss = wgModel ? await wgModel.step(xs, ys, B, T) : torch.scope(() => {
        const { loss } = model.forward(torch.tensor(xs, { shape: [B, T] }), torch.tensor(ys, { shape: [B, T] }), { logits: false, training: true });
        opt.zeroGrad();
        loss.backward();
        opt.step();
        return loss.item();
      });
      state.step++; state.losses.push(loss); plot.push(0, state.step, loss);
      if (state.step % 10 === 0) state.memory.push({ step: state.step, ...torch.memory() });
      const ms = (performance.now() - t0) / (i + 1);
      state.tokensPerSecond = (B * T) / (ms / 1000);
      $('trainInfo').textContent = `${dev === 'webgpu' ? 'WebGPU · ' : ''}step ${state.step} · loss ${loss.toFixed(3)} · ${ms.toFixed(0)} ms/step · ${state.tokensPerSecond.toFixed(0)} tokens/s`;
      await sleep(0);
    }
    if (wgModel) await wgModel.copyInto(torch, model); // sampling below runs on the page's model
  } catch (e) { report(e); }
  state.training = false; state.done = true;
}

// ---- sampling with the KV cache; each token keeps the distribution it was drawn from ----
function sample() {
  if (!model) { report(new Error('train the model first')); return; }
  const prompt = Array.from(enc.encode($('prompt').value || '\n'));
  const n = Number($('nTokens').value), temperature = Number($('temp').value), topK = Number($('topk').value);
  const T = cfg.nPositions;
  const ids = prompt.slice(-T);
  const out = [];
  torch.noGrad(() => {
    let cache = model.newCache(1, T);
    try {
      let logits = torch.scope(() => cache.forward(torch.tensor([ids.map(BigInt)], { dtype: 'int64' }), true).data());
      for (let i = 0; i < n; i++) {
        const { token, probs } = torch.models.GPT.pickToken(logits, { temperature, topK }, Math.random());
        out.push({ token, probs, context: ids.slice(-T) });
        ids.push(token);
        if (cache.length >= T) { // the window is full: restart it from the last T/2 tokens
          cache.reset();
          const keep = ids.slice(-Math.floor(T / 2));
          logits = torch.scope(() => cache.forward(torch.tensor([keep.map(BigInt)], { dtype: 'int64' }), true).data());
        } else logits = torch.scope(() => cache.forward(torch.tensor([[BigInt(token)]]), true).data());
      }
    } finally { cache.dispose(); }
  });
  state.sampled = out;
  const el = $('sample');
  el.innerHTML = '';
  const pre = document.createElement('span'); pre.textContent = dec.decode(new Uint8Array(prompt)); pre.style.color = '#666'; el.appendChild(pre);
  out.forEach((o, i) => {
    const s = document.createElement('span');
    s.className = 'tok'; s.dataset.i = i;
    s.textContent = showByte(o.token);
    s.onclick = () => select(i);
    el.appendChild(s);
  });
  return dec.decode(new Uint8Array(out.map((o) => o.token)));
}
const showByte = (b) => (b === 10 ? '⏎\n' : b === 32 ? ' ' : b < 32 || b > 126 ? `\\x${b.toString(16).padStart(2, '0')}` : String.fromCharCode(b));

function select(i) {
  const o = state.sampled[i];
  document.querySelectorAll('.tok.sel').forEach((e) => e.classList.remove('sel'));
  document.querySelector(`.tok[data-i="${i}"]`).classList.add('sel');
  const order = Array.from(o.probs.keys()).sort((a, b) => o.probs[b] - o.probs[a]).slice(0, 10);
  $('tokInfo').textContent = `(step ${i}: drew ${JSON.stringify(showByte(o.token))})`;
  $('topkList').innerHTML = order.map((t) => `<div class="bar"><span style="width:3em">${escapeHtml(JSON.stringify(showByte(t)))}</span><span class="b" style="width:${Math.round(o.probs[t] * 300)}px"></span> ${(o.probs[t] * 100).toFixed(1)}%</div>`).join('');
  const att = attention(o.context);
  state.selected = { index: i, top: order.map((t) => [t, o.probs[t]]), attentionShape: [att.length, att[0].length, att[0][0].length] };
  drawAttention(att, o.context);
}
const escapeHtml = (s) => s.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' }[c]));

// Each head's attention weights of the last position over the context: the GPT-2 forward of
// models.h redone in JS ops from the state_dict up to the softmax of every block.
function attention(context) {
  return torch.noGrad(() => torch.scope(() => {
    const sd = model.stateDict();
    const C = cfg.nEmbd, H = cfg.nHead, D = C / H, T = context.length;
    const idx = torch.tensor(context.map(BigInt), { dtype: 'int64' });
    let x = torch.nn.functional.embedding(idx, sd['transformer.wte.weight']).add(sd['transformer.wpe.weight'].narrow(0, 0, T));
    const mask = torch.ones([T, T], { dtype: 'bool' }).tril();
    const ln = (v, p) => torch.nn.functional.layerNorm(v, [C], { weight: sd[p + '.weight'], bias: sd[p + '.bias'] });
    const conv1d = (v, p) => v.matmul(sd[p + '.weight']).add(sd[p + '.bias']); // HF Conv1D: x @ W + b
    const perLayer = [];
    for (let l = 0; l < cfg.nLayer; l++) {
      const h = `transformer.h.${l}`;
      const qkv = conv1d(ln(x, h + '.ln_1'), h + '.attn.c_attn');
      const [q, k, v] = qkv.split(C, 1).map((t) => t.view(T, H, D).transpose(0, 1));
      const w = q.matmul(k.transpose(1, 2)).div(Math.sqrt(D)).maskedFill(mask.logicalNot(), -Infinity).softmax(-1);
      perLayer.push(w.select(1, T - 1).tolist()); // [H, T]: the last position's weights
      const y = w.matmul(v).transpose(0, 1).contiguous().view(T, C);
      x = x.add(conv1d(y, h + '.attn.c_proj'));
      const m = conv1d(torch.gelu(conv1d(ln(x, h + '.ln_2'), h + '.mlp.c_fc'), { approximate: 'tanh' }), h + '.mlp.c_proj');
      x = x.add(m);
    }
    return perLayer;
  }));
}
function drawAttention(att, context) {
  const el = $('attn'); el.innerHTML = '';
  const T = context.length, cell = Math.max(4, Math.min(10, Math.floor(600 / T)));
  att.forEach((heads, l) => heads.forEach((w, h) => {
    const row = document.createElement('div');
    row.innerHTML = `<span style="font-family:monospace">L${l} H${h} </span>`;
    const c = document.createElement('canvas'); c.width = T * cell; c.height = cell + 2;
    const g = c.getContext('2d'); const mx = Math.max(...w);
    w.forEach((v, t) => { const a = v / (mx || 1); g.fillStyle = `rgba(37,99,235,${a})`; g.fillRect(t * cell, 1, cell - 1, cell); });
    c.title = dec.decode(new Uint8Array(context));
    row.appendChild(c); el.appendChild(row);
  }));
}

$('trainBtn').onclick = () => train();
$('stopBtn').onclick = () => { state.training = false; };
$('sampleBtn').onclick = () => { try { sample(); } catch (e) { report(e); } };
Object.assign(state, { train, sample, select });

function DEFAULT_TEXT() {
  return `First Citizen:
Before we proceed any further, hear me speak.

All:
Speak, speak.

First Citizen:
You are all resolved rather to die than to famish?

All:
Resolved. resolved.

First Citizen:
First, you know Caius Marcius is chief enemy to the people.

All:
We know't, we know't.

First Citizen:
Let us kill him, and we'll have corn at our own price.
Is't a verdict?

All:
No more talking on't; let it be done: away, away!
`;
}
