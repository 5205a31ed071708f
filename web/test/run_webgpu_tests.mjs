// make test-webgpu-browser: the WebGPU backend's tests in headless Chromium (Debian's chromium
// through playwright-core, as the page tests). Run 1: --enable-unsafe-webgpu, so the page gets
// Chromium's SwiftShader adapter and every test of tests/c/test_webgpu.c and
// web/webgpu/wg_browser.c runs (each op on WebGPU against the CPU of the same wasm module, the
// MLP + AdamW steps with per-step losses within 1e-3 relative). Run 2: WebGPU left disabled: the
// page must say so, fall back to WebAssembly, and its tests pass on the CPU. Then the same two
// ways for the training page web/webgpu.html (50 steps on both devices, losses compared).
// Ends with "N passed, M failed" (the C tests of both runs plus the page checks).
//   node web/test/run_webgpu_tests.mjs [test-name-substring]
import path from 'path';
import { createRequire } from 'module';
import { fileURLToPath } from 'url';
import { startServer } from '../server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(root, 'build/wasm/tools/package.json'));
const { chromium } = require('playwright-core');
const filter = process.argv[2] || '';
const server = await startServer({ port: 0, pkg: path.join(root, 'build/wasm-webgpu'), quiet: true });
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
    await page.waitForFunction(() => window.__wg, null, { timeout: 170000 });
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

const t0 = Date.now();
for (const webgpu of [true, false]) {
  // one Chromium per mode: the tests page, then the training page
  const browser = await launch(webgpu);
  await run(browser, webgpu);
  if (!filter) await demo(browser, webgpu);
  await browser.close();
}
await server.close();
console.log(`(${((Date.now() - t0) / 1000).toFixed(0)} s)`);
if (skipped) console.log(`(${skipped} WebGPU tests skipped in the run with WebGPU disabled, as expected: no adapter)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
