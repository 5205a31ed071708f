// make test-webgpu-browser: the WebGPU backend's tests in headless Chromium (Debian's chromium
// through playwright-core, as the page tests). Run 1: --enable-unsafe-webgpu, so the page gets
// Chromium's SwiftShader adapter and every test of tests/c/test_webgpu.c and
// web/webgpu/wg_browser.c runs (each op on WebGPU against the CPU of the same wasm module, the
// MLP + AdamW steps with per-step losses within 1e-3 relative). Run 2: WebGPU left disabled: the
// page must say so, fall back to WebAssembly, and its tests pass on the CPU. Then the same two
// ways for the training page web/webgpu.html (50 steps on both devices, losses compared).
// Then web/gpt.html's WebGPU switch (web/webgpu/switch.mjs): a small GPT trained a few steps
// on WebGPU and on WebAssembly with the same seed and batches (losses per step within 2e-3
// relative, the loss falls, sampling works on the copied weights); without WebGPU the switch
// shows the fallback message and trains on WebAssembly. The same for web/mnist.html's switch (a
// small CNN, 6 steps, within 1e-3). Screenshots in build/wasm-webgpu/screenshots.
// Ends with "N passed, M failed" (the C tests of both runs plus the page checks).
//   node web/test/run_webgpu_tests.mjs [test-name-substring | pages | mnist]
import path from 'path';
import { createRequire } from 'module';
import { fileURLToPath } from 'url';
import { startServer } from '../server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(root, 'build/wasm/tools/package.json'));
const { chromium } = require('playwright-core');
const filter = process.argv[2] || '';
// build/wasm-webgpu/pkg: this module beside the CPU package (links), for web/gpt.html
const server = await startServer({ port: 0, pkg: path.join(root, 'build/wasm-webgpu/pkg'), data: path.resolve(root, '../shared/data/mnist'), quiet: true });
const base = ['--headless=new', '--no-sandbox', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];
let passed = 0, failed = 0, skipped = 0;
const check = (ok, what) => { if (ok) passed++; else { failed++; console.log('FAIL ' + what); } };

const launch = (webgpu) => chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: webgpu ? [...base, '--enable-unsafe-webgpu'] : base });

async function run(browser, webgpu) {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('pageerror: ' + e.message));
  page.on('requestfailed', (r) => problems.push('request failed: ' + r.url()));
  await page.goto(server.url + 'web/test/webgpu.html' + (filter ? '?filter=' + encodeURIComponent(filter) : ''));
  let r;
  try {
    // SwiftShader in Chromium compiles each pipeline slowly (minutes in all on a loaded 2-core VM)
    await page.waitForFunction(() => window.__wg, null, { timeout: 400000 });
    r = await page.evaluate(() => window.__wg);
  } catch (e) {
    r = { passed: 0, failed: 1, lines: [String(e)], available: false };
    r.lines.push(...await page.evaluate(() => document.getElementById('log').textContent.split('\n')).catch(() => []));
  }
  const visible = await page.isVisible('#banner').catch(() => false);
  await page.close();
  console.log(`---- Chromium ${browser.version()}: web/test/webgpu.html, WebGPU ${webgpu ? 'enabled' : 'disabled'}: ${r.banner || ''}`);
  for (const l of r.lines) if (l) console.log('  ' + l);
  if (problems.length) console.log('  page problems: ' + problems.join(' | '));
  // a WebGPU test skipped for want of an adapter counts as passed in the C runner: not here
  const skip = r.lines.map((l) => /skipping (\d+) WebGPU test/.exec(l)).filter(Boolean).reduce((n, m) => n + Number(m[1]), 0);
  passed += r.passed - skip;
  failed += r.failed;
  skipped += skip;
  check(problems.length === 0, 'the page ran without errors');
  if (webgpu) {
    check(r.available, `an adapter in Chromium with --enable-unsafe-webgpu (reason: ${r.reason})`);
    check(!r.lines.some((l) => /skipping \d+ WebGPU test/.test(l)), 'no WebGPU test skipped');
  } else {
    check(!r.available && /no adapter/.test(r.reason || ''), `no adapter without the flag, with the reason (${r.reason})`);
    check(visible && /running on WebAssembly \(CPU\) instead/.test(r.banner || ''), 'a visible fallback message');
  }
  return r;
}

// The demo page (web/webgpu.html): 50 AdamW steps of an MLP on WebGPU and on WebAssembly with
// the same seed, losses per step within 1e-3 relative; without WebGPU, the visible fallback.
async function demo(browser, webgpu) {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('pageerror: ' + e.message));
  await page.goto(server.url + 'web/webgpu.html?autorun=compare&steps=50');
  let d = null;
  try {
    await page.waitForFunction(() => window.__demo && window.__demo.done, null, { timeout: 120000 });
    d = await page.evaluate(() => window.__demo);
  } catch (e) { problems.push(String(e)); }
  const errs = await page.evaluate(() => window.__errors || []).catch(() => []);
  const webgpuOption = await page.isDisabled('option[value=webgpu]').catch(() => null);
  const visible = await page.isVisible('#banner').catch(() => false);
  await page.close();
  const all = [...problems, ...errs];
  const runs = (d && d.runs) || {};
  const fmt = (k) => runs[k] ? `${names[k]} ${runs[k].losses[0].toFixed(5)} -> ${runs[k].losses.at(-1).toFixed(5)}, first step ${runs[k].msFirstStep.toFixed(0)} ms${k === 'webgpu' ? ' (compiles the kernels)' : ''}, then ${runs[k].msPerStep.toFixed(1)} ms/step` : '';
  console.log(`---- web/webgpu.html, WebGPU ${webgpu ? 'enabled' : 'disabled'}: ${d ? d.banner : ''}`);
  console.log('  ' + ['webgpu', 'wasm'].map(fmt).filter(Boolean).join('; ') + (d && d.maxRel !== undefined ? `; largest per-step relative difference ${d.maxRel.toExponential(2)}` : ''));
  if (all.length) console.log('  page problems: ' + all.join(' | '));
  check(all.length === 0, 'demo page: no errors');
  const trained = (k) => runs[k] && runs[k].losses.length === 50 && runs[k].losses.at(-1) < runs[k].losses[0];
  if (webgpu) {
    check(trained('webgpu') && trained('wasm'), 'demo page: 50 steps on WebGPU and on WebAssembly, the loss falls');
    check(d && d.maxRel <= 1e-3, `demo page: WebGPU and WebAssembly losses agree per step within 1e-3 (worst ${d && d.maxRel})`);
  } else {
    check(trained('wasm') && !runs.webgpu, 'demo page: trains on WebAssembly only');
    check(visible && webgpuOption === true && /training on WebAssembly \(CPU\) instead/.test(d ? d.banner : ''), 'demo page: a visible fallback message, the WebGPU choice disabled');
  }
}
const names = { webgpu: 'WebGPU', wasm: 'WebAssembly' };

// web/gpt.html with ?device=webgpu (the switch) and then on WebAssembly, same seed and batches.
const GPT_Q = 'nLayer=2&nEmbd=64&nHead=2&ctx=32&batch=4&steps=8&seed=5&lr=0.003';
const shots = path.join(root, 'build/wasm-webgpu/screenshots');
async function gptPage(browser, webgpu) {
  const problems = [];
  const one = async (q, shot) => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    page.on('pageerror', (e) => problems.push('pageerror: ' + e.message));
    await page.goto(server.url + 'web/gpt.html?' + q);
    let r = null;
    try {
      await page.waitForFunction(() => window.__gpt && window.__gpt.train, null, { timeout: 60000 });
      r = await page.evaluate(async () => {
        const t0 = performance.now();
        await window.__gpt.train();
        const ms = performance.now() - t0, sample = window.__gpt.sample();
        return { losses: window.__gpt.losses, device: window.__gpt.device, ms, sample,
          banner: document.getElementById('wgBanner').textContent, errors: window.__errors || [] };
      });
      r.bannerVisible = await page.isVisible('#wgBanner');
      await page.screenshot({ path: path.join(shots, shot) });
    } catch (e) { problems.push(String(e)); }
    await page.close();
    if (r && r.errors.length) problems.push(...r.errors);
    return r;
  };
  const fs = await import('fs');
  fs.mkdirSync(shots, { recursive: true });
  const g = await one(GPT_Q + '&device=webgpu', `gpt_${webgpu ? 'webgpu' : 'fallback'}.png`);
  const fmt = (r) => r ? `${r.device}: ${r.losses.map((l) => l.toFixed(4)).join(' ')} (${(r.ms / r.losses.length).toFixed(0)} ms/step)` : 'no result';
  console.log(`---- web/gpt.html, WebGPU ${webgpu ? 'enabled' : 'disabled'}, ?device=webgpu: ${g ? g.banner : ''}`);
  console.log('  ' + fmt(g));
  const falls = (r) => r && r.losses.length === 8 && r.losses.at(-1) < r.losses[0];
  if (webgpu) {
    const w = await one(GPT_Q, 'gpt_wasm.png');
    console.log('  ' + fmt(w));
    check(g && g.device === 'webgpu' && falls(g) && falls(w), 'gpt page: 8 steps on WebGPU and on WebAssembly, the loss falls');
    // float32 sums in another order (WGSL reductions, tiled GEMM) over 8 AdamW steps
    const rel = g && w ? Math.max(...g.losses.map((l, i) => Math.abs(l - w.losses[i]) / Math.abs(w.losses[i]))) : Infinity;
    console.log(`  largest per-step relative difference WebGPU vs WebAssembly ${rel.toExponential(2)}`);
    check(rel <= 2e-3, `gpt page: WebGPU and WebAssembly losses agree per step within 2e-3 (worst ${rel})`);
    check(g && typeof g.sample === 'string' && g.sample.length > 0, 'gpt page: sampling after WebGPU training (weights copied back)');
  } else {
    check(g && g.device === 'wasm' && falls(g), 'gpt page without WebGPU: trains on WebAssembly');
    check(g && g.bannerVisible && /WebGPU is not available here .*training on WebAssembly \(CPU\) instead/.test(g.banner),
      'gpt page without WebGPU: a visible fallback message');
  }
  if (problems.length) console.log('  page problems: ' + problems.join(' | '));
  check(problems.length === 0, 'gpt page: no errors');
}

// web/mnist.html's switch: the small CNN, the same seed, weights and batches (?seed), a few Adam
// steps on WebGPU (?device=webgpu) and on WebAssembly; the losses agree per step within 1e-3
// relative (float32 sums in another order: tiled implicit-GEMM convolutions, WGSL reductions),
// the loss falls, the weights come back for evaluation. Without WebGPU: the visible fallback.
const MNIST_Q = 'autoload=1&model=small&steps=6&batch=16&lr=0.003&evalEvery=1000&evalCount=100&seed=11';
async function mnistPage(browser, webgpu) {
  const problems = [];
  const one = async (q, shot) => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    page.on('pageerror', (e) => problems.push('pageerror: ' + e.message));
    let r = null;
    try {
      await page.goto(server.url + 'web/mnist.html?' + q);
      await page.waitForFunction(() => window.__mnist && window.__mnist.ready, null, { timeout: 60000 });
      await page.click('#trainBtn');
      await page.waitForFunction(() => window.__mnist.done, null, { timeout: 300000, polling: 500 });
      r = await page.evaluate(() => ({ losses: window.__mnist.losses, accs: window.__mnist.accs, device: window.__mnist.device,
        ms: window.__mnist.msPerStep, banner: document.getElementById('wgBanner').textContent,
        error: document.getElementById('error').hidden ? '' : document.getElementById('error').textContent }));
      r.bannerVisible = await page.isVisible('#wgBanner');
      await page.screenshot({ path: path.join(shots, shot), fullPage: true });
    } catch (e) { problems.push(String(e)); }
    await page.close();
    if (r && r.error) problems.push(r.error);
    return r;
  };
  const fs = await import('fs');
  fs.mkdirSync(shots, { recursive: true });
  const g = await one(MNIST_Q + '&device=webgpu', `mnist_${webgpu ? 'webgpu' : 'fallback'}.png`);
  const fmt = (r) => r ? `${r.device}: ${r.losses.map((l) => l.toFixed(4)).join(' ')} (${r.ms.toFixed(0)} ms/step), accuracy ${r.accs.length ? r.accs.at(-1)[1] : '-'}` : 'no result';
  console.log(`---- web/mnist.html, WebGPU ${webgpu ? 'enabled' : 'disabled'}, ?device=webgpu: ${g ? g.banner : ''}`);
  console.log('  ' + fmt(g));
  const falls = (r) => r && r.losses.length === 6 && r.losses.at(-1) < r.losses[0] && r.accs.length === 1;
  if (webgpu) {
    const w = await one(MNIST_Q, 'mnist_wasm.png');
    console.log('  ' + fmt(w));
    check(g && g.device === 'webgpu' && falls(g) && w && w.device === 'wasm' && falls(w), 'mnist page: 6 steps on WebGPU and on WebAssembly, the loss falls, evaluated');
    const rel = g && w ? Math.max(...g.losses.map((l, i) => Math.abs(l - w.losses[i]) / Math.abs(w.losses[i]))) : Infinity;
    console.log(`  largest per-step relative difference WebGPU vs WebAssembly ${rel.toExponential(2)}`);
    check(rel <= 1e-3, `mnist page: WebGPU and WebAssembly losses agree per step within 1e-3 (worst ${rel})`);
    // the weights came back: the same held-out accuracy within one image in 100
    check(g && w && Math.abs(g.accs.at(-1)[1] - w.accs.at(-1)[1]) <= 0.011, 'mnist page: evaluation after WebGPU training (weights copied back)');
  } else {
    check(g && g.device === 'wasm' && falls(g), 'mnist page without WebGPU: trains on WebAssembly');
    check(g && g.bannerVisible && /WebGPU is not available here .*training on WebAssembly \(CPU\) instead/.test(g.banner),
      'mnist page without WebGPU: a visible fallback message');
  }
  if (problems.length) console.log('  page problems: ' + problems.join(' | '));
  check(problems.length === 0, 'mnist page: no errors');
}

const t0 = Date.now();
for (const webgpu of [true, false]) {
  // one Chromium per mode: the tests page, then the training page
  const browser = await launch(webgpu);
  if (filter !== 'pages' && filter !== 'mnist') await run(browser, webgpu);
  if (!filter) await demo(browser, webgpu);
  if (!filter || filter === 'pages') await gptPage(browser, webgpu);
  if (!filter || filter === 'pages' || filter === 'mnist') await mnistPage(browser, webgpu);
  await browser.close();
}
await server.close();
console.log(`(${((Date.now() - t0) / 1000).toFixed(0)} s)`);
if (skipped) console.log(`(${skipped} WebGPU tests skipped in the run with WebGPU disabled, as expected: no adapter)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
