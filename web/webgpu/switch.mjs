// The pages' WebGPU switch (issue 9): a "device" choice on web/gpt.html. The pages' JS API
// (web/js, the CPU WebAssembly build) is synchronous; WebGPU reads back asynchronously, so WebGPU
// training runs in a second module, the WebGPU browser build (make wasm-webgpu:
// /pkg/ctorch-webgpu-test.mjs, ASYNCIFY), whose steps the page awaits one by one
// (web/webgpu/wg_pages.c). Without that module or without an adapter the switch says why,
// visibly, and the page trains on WebAssembly. ?device=webgpu selects WebGPU when the page loads.
const WG_MODULE = '/pkg/ctorch-webgpu-test.mjs';
let opened = null;

/** The WebGPU module and its adapter, opened once: { M, available, reason, adapter }. */
export function openWebGPU() {
  if (!opened) opened = (async () => {
    if (!('gpu' in navigator)) return { M: null, available: false, reason: 'navigator.gpu is missing: this browser has no WebGPU, no adapter' };
    let M;
    try { M = await (await import(WG_MODULE)).default({ print: console.log, printErr: console.log }); } catch (e) {
      return { M: null, available: false, reason: `the WebGPU build ${WG_MODULE} is not served here (make wasm-webgpu; node web/webgpu/serve.mjs)` };
    }
    const available = await M.ccall('ctwg_available', 'number', [], [], { async: true });
    return { M, available: !!available, reason: M.UTF8ToString(M._ctwg_reason()), adapter: M.UTF8ToString(M._ctwg_adapter()) };
  })();
  return opened;
}

/** Adds the switch after `anchor`: a device select and a banner. ctl.resolve() gives the device
 * to train on ('webgpu' or 'wasm'), falling back (with the message) when WebGPU is unusable. */
export function addSwitch(anchor, what = 'training') {
  const box = document.createElement('div');
  box.className = 'panel';
  box.innerHTML = '<label>device <select id="device"><option value="wasm">WebAssembly (CPU)</option>' +
    '<option value="webgpu">WebGPU</option></select></label> <span id="wgBanner"></span>';
  anchor.after(box);
  const sel = box.querySelector('#device'), banner = box.querySelector('#wgBanner');
  const ctl = { sel, banner, wg: null };
  ctl.resolve = async () => {
    if (sel.value !== 'webgpu') return 'wasm';
    banner.textContent = 'looking for a WebGPU adapter…';
    const wg = ctl.wg = await openWebGPU();
    if (wg.available) {
      banner.textContent = `WebGPU adapter: ${wg.adapter}`;
      return 'webgpu';
    }
    banner.className = 'fallback';
    banner.style.cssText = 'display:inline-block;padding:.3em .6em;background:#fff3cd;border:1px solid #e0b000;border-radius:4px';
    banner.textContent = `WebGPU is not available here (${wg.reason}): ${what} on WebAssembly (CPU) instead.`;
    sel.querySelector('option[value=webgpu]').disabled = true;
    sel.value = 'wasm';
    return 'wasm';
  };
  if (new URLSearchParams(location.search).get('device') === 'webgpu') sel.value = 'webgpu';
  return ctl;
}

const call = (M, name, ret, types, args) => M.ccall(name, ret, types, args, { async: true }); // may yield (read-backs)

/** The byte-level GPT of models.h trained on WebGPU; made like the page's torch.models.GPT
 * (torch.manualSeed(seed), then the model), so both start from the same weights. */
export class GPTOnWebGPU {
  static async create(wg, cfg, seed, lr) {
    const g = new GPTOnWebGPU();
    g.M = wg.M;
    const rc = await call(g.M, 'ctwg_gpt_begin', 'number', ['number', 'number', 'number', 'number', 'number', 'number', 'number'],
      [1, cfg.nLayer, cfg.nEmbd, cfg.nHead, cfg.nPositions, seed, lr]);
    if (rc !== 0) throw new Error('WebGPU: ' + g.M.UTF8ToString(g.M._ctwg_last_error()));
    return g;
  }
  /** One AdamW step on int64 batches xs, ys [B, T]; resolves to the loss (its only read-back). */
  async step(xs, ys, B, T) {
    const M = this.M, n = B * T, p = M._malloc(16 * n);
    try {
      new BigInt64Array(M.HEAPU8.buffer, p, n).set(xs);
      new BigInt64Array(M.HEAPU8.buffer, p + 8 * n, n).set(ys);
      const l = await call(M, 'ctwg_gpt_step', 'number', ['number', 'number', 'number', 'number'], [p, p + 8 * n, B, T]);
      if (!Number.isFinite(l)) throw new Error('WebGPU step: ' + M.UTF8ToString(M._ctwg_last_error()));
      return l;
    } finally { M._free(p); }
  }
  /** Copies the trained weights into the page's model (same names), e.g. to sample from it. */
  async copyInto(torch, model) {
    const M = this.M, named = Object.fromEntries(model.namedParameters());
    try {
      for (let i = 0, n = M._ctwg_gpt_num_params(); i < n; i++) {
        const name = M.UTF8ToString(M._ctwg_gpt_param_name(i)), numel = M._ctwg_gpt_param_numel(i), dst = named[name];
        if (!dst) throw new Error(`WebGPU: the page's model has no parameter ${name}`);
        const p = M._malloc(4 * numel);
        try {
          if (await call(M, 'ctwg_gpt_param_copy', 'number', ['number', 'number'], [i, p]) !== 0) throw new Error('WebGPU: ' + M.UTF8ToString(M._ctwg_last_error()));
          const host = new Float32Array(M.HEAPU8.buffer, p, numel).slice();
          torch.noGrad(() => torch.scope(() => { dst.copy_(torch.tensor(host, { shape: dst.shape })); }));
        } finally { M._free(p); }
      }
    } finally { torch.dispose(Object.values(named)); }
  }
  dispose() { if (this.M) this.M._ctwg_gpt_end(); this.M = null; }
}

/** web/mnist.html's CNNs trained on WebGPU (web/webgpu/wg_pages.c): the page's model (kind
 * 'small' or 'cnn', made by the page) gives its initial weights, in parameter order; steps are
 * Adam on float32 [B, 1, 28, 28] images and int64 labels. */
export class CNNOnWebGPU {
  static async create(wg, torch, model, kind, lr) {
    const c = new CNNOnWebGPU(), M = c.M = wg.M;
    if (await call(M, 'ctwg_cnn_begin', 'number', ['number', 'number'], [kind === 'cnn' ? 1 : 0, lr]) !== 0) throw new Error('WebGPU: ' + M.UTF8ToString(M._ctwg_last_error()));
    await c.params(torch, model, 0);
    return c;
  }
  /** dir 0: the page's weights into the WebGPU model; 1: back into the page's model */
  async params(torch, model, dir) {
    const M = this.M, ps = model.parameters();
    try {
      if (ps.length !== M._ctwg_cnn_num_params()) throw new Error(`WebGPU: the page's model has ${ps.length} parameters, the WebGPU CNN ${M._ctwg_cnn_num_params()}`);
      for (let i = 0; i < ps.length; i++) {
        const numel = M._ctwg_cnn_param_numel(i), p = M._malloc(4 * numel);
        try {
          if (dir === 0) new Float32Array(M.HEAPU8.buffer, p, numel).set(torch.noGrad(() => ps[i].data()));
          if (await call(M, 'ctwg_cnn_param_io', 'number', ['number', 'number', 'number'], [i, p, dir]) !== 0) throw new Error('WebGPU: ' + M.UTF8ToString(M._ctwg_last_error()));
          if (dir === 1) {
            const host = new Float32Array(M.HEAPU8.buffer, p, numel).slice();
            torch.noGrad(() => torch.scope(() => { ps[i].copy_(torch.tensor(host, { shape: ps[i].shape })); }));
          }
        } finally { M._free(p); }
      }
    } finally { torch.dispose(ps); }
  }
  /** One Adam step on x (Float32Array, B*784) and y (BigInt64Array, B); resolves to the loss. */
  async step(x, y, B) {
    const M = this.M, p = M._malloc(4 * x.length + 8 * B);
    try {
      new Float32Array(M.HEAPU8.buffer, p, x.length).set(x);
      new BigInt64Array(M.HEAPU8.buffer, p + 4 * x.length, B).set(y);
      const l = await call(M, 'ctwg_cnn_step', 'number', ['number', 'number', 'number'], [p, p + 4 * x.length, B]);
      if (!Number.isFinite(l)) throw new Error('WebGPU step: ' + M.UTF8ToString(M._ctwg_last_error()));
      return l;
    } finally { M._free(p); }
  }
  dispose() { if (this.M) this.M._ctwg_cnn_end(); this.M = null; }
}
