// make test-wasm-pages: every page end to end in headless Chromium (Debian's chromium driven by
// playwright-core). Each test loads its page from web/server.mjs (COOP/COEP on, /data/ pointing
// at ../shared/data/mnist), works it, checks that nothing threw, and saves a screenshot under
// build/wasm/screenshots/. Ends with "N passed, M failed".
//   node web/test/run_page_tests.mjs [name-substring]
import path from 'path';
import fs from 'fs';
import { createRequire } from 'module';
import { fileURLToPath } from 'url';
import { startServer } from '../server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const shots = path.join(root, 'build/wasm/screenshots');
fs.mkdirSync(shots, { recursive: true });
const require = createRequire(path.join(root, 'build/wasm/tools/package.json'));
const { chromium } = require('playwright-core');
const filter = process.argv[2] || '';
const DATA = path.resolve(root, '../shared/data/mnist');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
const isolated = await startServer({ port: 0, data: DATA, quiet: true });
const plain = await startServer({ port: 0, data: DATA, isolate: false, quiet: true });
console.log(`Chromium ${browser.version()}; pages from ${isolated.url} (isolated) and ${plain.url} (not isolated)`);

const tests = [];
const test = (name, fn) => tests.push({ name, fn });
function assert(c, m) { if (!c) throw new Error('assertion failed: ' + m); }
const mean = (a) => a.reduce((p, q) => p + q, 0) / a.length;

async function open(url, { width = 1200, height = 900 } = {}) {
  const page = await browser.newPage({ viewport: { width, height } });
  const problems = [], consoleLines = [];
  page.on('pageerror', (e) => problems.push('pageerror: ' + e.message));
  page.on('console', (m) => { consoleLines.push(m.text()); if (m.type() === 'error') problems.push('console.error: ' + m.text()); });
  page.on('requestfailed', (r) => problems.push('request failed: ' + r.url()));
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`); });
  await page.goto(url);
  await page.waitForFunction(() => window.torch !== undefined || (window.__errors && window.__errors.length), null, { timeout: 120000 });
  const check = async () => {
    const errs = await page.evaluate(() => window.__errors || []);
    const all = [...problems, ...errs];
    assert(all.length === 0, 'errors on the page: ' + all.join(' | '));
  };
  return { page, problems, consoleLines, check };
}

test('api: the JS API tests pass in Chromium (pthreads build, cross-origin isolated)', async () => {
  const { page, consoleLines, check } = await open(isolated.url + 'web/test/api.html');
  await page.waitForFunction(() => window.__api, null, { timeout: 300000 });
  const r = await page.evaluate(() => window.__api);
  const log = await page.textContent('#log');
  await page.screenshot({ path: path.join(shots, 'api.png'), fullPage: true });
  await check();
  assert(consoleLines.some((l) => /pthreads build, \d+ threads \(the page is cross-origin isolated\)/.test(l)), 'console line about the pthreads build: ' + consoleLines.join(' | '));
  assert(r.failed === 0 && r.passed > 0, `${r.passed} passed, ${r.failed} failed:\n${log}`);
  await page.close();
  return `${r.passed} API tests passed in the browser`;
});

test('api: a page without cross-origin isolation gets the single-thread build', async () => {
  const { page, consoleLines, check } = await open(plain.url + 'web/test/api.html');
  await page.waitForFunction(() => window.__api, null, { timeout: 300000 });
  const r = await page.evaluate(() => window.__api);
  await check();
  assert(consoleLines.some((l) => /single-thread build \(the page is not cross-origin isolated/.test(l)), 'console line about the single-thread build: ' + consoleLines.join(' | '));
  assert(r.failed === 0, `${r.failed} API tests failed`);
  await page.close();
  return `${r.passed} API tests passed, single-thread build`;
});

test('mnist: loads the test set by URL, trains the CNN, loss falls, accuracy rises, the pad classifies', async () => {
  const steps = Number(process.env.MNIST_STEPS || 60);
  const { page, check } = await open(isolated.url + `web/mnist.html?autoload=1&steps=${steps}&batch=64&evalEvery=20&evalCount=500`);
  await page.waitForFunction(() => window.__mnist.ready, null, { timeout: 60000 });
  const info = await page.textContent('#dataInfo');
  assert(info.startsWith('10000 images'), info);
  await page.click('#trainBtn');
  await page.waitForFunction(() => window.__mnist.done, null, { timeout: 590000, polling: 500 });
  const s = await page.evaluate(() => ({ losses: window.__mnist.losses, accs: window.__mnist.accs, ms: window.__mnist.msPerStep }));
  const first = mean(s.losses.slice(0, 5)), last = mean(s.losses.slice(-5));
  assert(s.losses.length === steps, 'steps ' + s.losses.length);
  assert(last < first * 0.6, `loss ${first.toFixed(3)} -> ${last.toFixed(3)}`);
  const acc = s.accs[s.accs.length - 1][1];
  assert(acc > 0.6, 'held-out accuracy ' + acc);
  // draw a "1" on the pad with the mouse
  const box = await page.locator('#pad').boundingBox();
  await page.mouse.move(box.x + 140, box.y + 50); await page.mouse.down();
  for (let y = 50; y <= 230; y += 10) await page.mouse.move(box.x + 140 + (y - 50) / 30, box.y + y);
  await page.mouse.up();
  await page.waitForFunction(() => window.__mnist.prediction, null, { timeout: 20000 });
  const pred = await page.evaluate(() => window.__mnist.prediction);
  assert(Math.abs(pred.probs.reduce((a, b) => a + b) - 1) < 1e-3, 'probabilities');
  await page.screenshot({ path: path.join(shots, 'mnist.png'), fullPage: true });
  await check();
  await page.close();
  return `${steps} steps at ${s.ms.toFixed(0)} ms/step, loss ${first.toFixed(3)} -> ${last.toFixed(3)}, held-out accuracy ${(acc * 100).toFixed(1)}%, pad drew a 1, predicted ${pred.digit}`;
});

test('mnist: data from picked files; 1,000 training steps keep memory flat', async () => {
  const { page, check } = await open(isolated.url + 'web/mnist.html?model=small&steps=1000&batch=16&evalEvery=250&evalCount=250');
  await page.setInputFiles('#files', [path.join(DATA, 't10k-labels-idx1-ubyte.gz'), path.join(DATA, 't10k-images-idx3-ubyte.gz')]);
  await page.waitForFunction(() => window.__mnist.ready, null, { timeout: 60000 });
  await page.click('#trainBtn');
  await page.waitForFunction(() => window.__mnist.done, null, { timeout: 590000, polling: 1000 });
  const mem = await page.evaluate(() => window.__mnist.memory);
  const jsHeap = await page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : 0));
  await page.screenshot({ path: path.join(shots, 'mnist_1000_steps.png'), fullPage: true });
  await check();
  assert(mem.length === 100 && mem[mem.length - 1].step === 1000, 'samples ' + mem.length);
  const at = (k) => mem[k];
  const a = at(9), b = at(99); // step 100 and step 1000
  assert(a.liveTensors === b.liveTensors, `live tensors ${a.liveTensors} -> ${b.liveTensors}`);
  assert(a.jsTensors === b.jsTensors, `JS tensor handles ${a.jsTensors} -> ${b.jsTensors}`);
  assert(a.allocatedBytes === b.allocatedBytes, `allocated ${a.allocatedBytes} -> ${b.allocatedBytes}`);
  assert(a.wasmBytes === b.wasmBytes, `wasm memory ${a.wasmBytes} -> ${b.wasmBytes}`);
  await page.close();
  return `steps 100 -> 1000: ${b.liveTensors} live tensors, ${(b.allocatedBytes / 1e6).toFixed(2)} MB allocated, wasm memory ${(b.wasmBytes / 1048576).toFixed(0)} MiB (unchanged); JS heap ${(jsHeap / 1e6).toFixed(1)} MB`;
});

test('gpt: trains on pasted text, loss falls, samples, a clicked token shows top-k and attention', async () => {
  const steps = Number(process.env.GPT_STEPS || 60);
  const { page, check } = await open(isolated.url + `web/gpt.html?steps=${steps}&nLayer=2&nEmbd=64&nHead=4&ctx=32&batch=8&lr=0.003`);
  const text = fs.readFileSync(path.resolve(root, '../shared/data/tinyshakespeare.txt'), 'utf8').slice(0, 20000);
  await page.fill('#text', text);
  await page.click('#trainBtn');
  await page.waitForFunction(() => window.__gpt.done, null, { timeout: 590000, polling: 500 });
  const s = await page.evaluate(() => ({ losses: window.__gpt.losses, tps: window.__gpt.tokensPerSecond }));
  const first = mean(s.losses.slice(0, 5)), last = mean(s.losses.slice(-5));
  assert(Math.abs(s.losses[0] - Math.log(256)) < 0.6, 'initial loss ' + s.losses[0]);
  assert(last < first - 1.0, `loss ${first.toFixed(3)} -> ${last.toFixed(3)}`);
  await page.fill('#nTokens', '80');
  await page.click('#sampleBtn');
  await page.waitForSelector('.tok[data-i="79"]');
  await page.click('.tok[data-i="40"]');
  const sel = await page.evaluate(() => window.__gpt.selected);
  assert(sel && sel.index === 40 && sel.top.length === 10, 'selection');
  assert(sel.top[0][1] >= sel.top[1][1], 'top-k sorted');
  assert(sel.attentionShape[0] === 2 && sel.attentionShape[1] === 4, 'attention layers x heads ' + sel.attentionShape);
  await page.screenshot({ path: path.join(shots, 'gpt.png'), fullPage: true });
  await check();
  await page.close();
  return `${steps} steps, loss ${first.toFixed(3)} -> ${last.toFixed(3)}, ${s.tps.toFixed(0)} tokens/s; sampled 80 tokens; token 40: top-10 and ${sel.attentionShape[0]}x${sel.attentionShape[1]} attention maps`;
});

test('bench: the benchmark page runs the training benchmarks', async () => {
  const { page, check } = await open(isolated.url + 'web/bench.html?quick=1&iters=3&autorun=1');
  await page.waitForFunction(() => window.__bench.done, null, { timeout: 590000, polling: 1000 });
  const r = await page.evaluate(() => window.__bench.results);
  await page.screenshot({ path: path.join(shots, 'bench.png'), fullPage: true });
  await check();
  assert(r.length === 2 && r.every((x) => x.ms > 0), 'results');
  await page.close();
  return r.map((x) => `${x.name} ${x.ms.toFixed(0)} ms${x.tokensPerSecond ? ` (${x.tokensPerSecond.toFixed(0)} tokens/s)` : ''}`).join(', ');
});

test('bench-peers: ctorch, ONNX Runtime Web and TF.js (shimmed; ResNet-18 from TF.js ops) run in one page, the peers check out', async () => {
  const peers = path.join(root, 'build/wasm-bench');
  const need = ['node_modules/onnxruntime-web/package.json', 'node_modules/@tensorflow/tfjs-backend-wasm/package.json', 'models/resnet18.onnx'];
  const missing = need.filter((f) => !fs.existsSync(path.join(peers, f)));
  if (missing.length) return { skip: `build/wasm-bench lacks ${missing.join(', ')} (make wasm-bench-deps)` };
  const { page, check } = await open(isolated.url + 'web/bench_peers.html?threads=2&iters=2&warmupMs=0&only=resnet18,mnist_cnn_step');
  await page.waitForFunction(() => window.__peers && window.__peers.done, null, { timeout: 590000, polling: 1000 });
  const s = await page.evaluate(() => window.__peers);
  await page.screenshot({ path: path.join(shots, 'bench_peers.png'), fullPage: true });
  await check();
  assert(!s.error, s.error);
  // resnet18: ctorch vs ORT, ctorch vs TF.js (the same model from TF.js ops); mnist: ctorch vs TF.js
  assert(s.results.length === 6 && s.results.every((r) => r.ms > 0), 'six timings: ' + s.results.length);
  assert(s.tfjs && s.tfjs.threads === 2 && s.tfjs.shimmed, 'TF.js on 2 threads with the shim: ' + JSON.stringify(s.tfjs));
  const ort = s.results.find((r) => r.lib.startsWith('ONNX'));
  assert(ort.maxAbsDiffVsPyTorch < 1e-3, 'ORT output vs PyTorch ' + ort.maxAbsDiffVsPyTorch);
  const tfr = s.results.find((r) => r.bench === 'resnet18' && r.lib.startsWith('TF.js'));
  assert(tfr && tfr.maxAbsDiffVsCtorch < 1e-3, 'TF.js ResNet-18 output vs ctorch ' + (tfr && tfr.maxAbsDiffVsCtorch));
  await page.close();
  return s.results.map((r) => `${r.bench} ${r.lib.split(' (')[0]} ${r.ms.toFixed(0)} ms`).join(', ');
});

let passed = 0, failed = 0, skipped = 0;
const t0 = Date.now();
for (const t of tests) {
  if (filter && !t.name.includes(filter)) continue;
  const s = Date.now();
  try {
    const note = await t.fn();
    if (note && note.skip) {
      skipped++;
      console.log(`skip ${t.name}: ${note.skip}`);
      continue;
    }
    passed++;
    console.log(`ok   ${t.name} (${((Date.now() - s) / 1000).toFixed(1)} s)${note ? '\n     ' + note : ''}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${t.name} (${((Date.now() - s) / 1000).toFixed(1)} s): ${e && e.stack ? e.stack : e}`);
  }
}
await browser.close();
await isolated.close(); await plain.close();
console.log(`page tests: ${((Date.now() - t0) / 1000).toFixed(0)} s, screenshots in ${path.relative(root, shots)}/`);
if (skipped) console.log(`${skipped} skipped (see the skip lines for why)`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed ? 1 : 0);
