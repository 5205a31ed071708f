#!/usr/bin/env node
// The benchmark of issue 8 in headless Chromium: opens web/bench_peers.html (ctorch, ONNX Runtime
// Web and TF.js in one page, cross-origin isolated, the same thread count for all), prints the
// table with the browser's version, writes build/wasm-bench/results.json and a screenshot.
//   node web/bench_peers_run.mjs [--threads 2] [--iters 5] [--only resnet18,vit_tiny,...] [--warmup-ms 3000]
// Needs make wasm and make wasm-bench-deps (npm packages and .onnx files under build/wasm-bench).
import path from 'path';
import fs from 'fs';
import os from 'os';
import { createRequire } from 'module';
import { fileURLToPath } from 'url';
import { startServer } from './server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const a = process.argv.slice(2);
const opt = (n, d) => { const i = a.indexOf(n); return i >= 0 ? a[i + 1] : d; };
const threads = Number(opt('--threads', 2)), iters = Number(opt('--iters', 5)), only = opt('--only', null), warmupMs = opt('--warmup-ms', null);
const require = createRequire(path.join(root, 'build/wasm/tools/package.json'));
const { chromium } = require('playwright-core');
const outDir = path.join(root, 'build/wasm-bench');
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
const srv = await startServer({ port: 0, quiet: true });
let code = 0;
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
  const problems = [];
  page.on('pageerror', (e) => problems.push('pageerror: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console.error: ' + m.text()); });
  const url = `${srv.url}web/bench_peers.html?threads=${threads}&iters=${iters}${only ? '&only=' + only : ''}${warmupMs ? '&warmupMs=' + warmupMs : ''}`;
  const t0 = Date.now();
  await page.goto(url);
  await page.waitForFunction(() => window.__peers && window.__peers.done, null, { timeout: 1800000, polling: 1000 });
  const s = await page.evaluate(() => window.__peers);
  s.chromium = browser.version(); s.loadavg = os.loadavg(); s.cpus = os.cpus().length; s.date = new Date().toISOString(); s.url = url;
  s.seconds = (Date.now() - t0) / 1000;
  await page.screenshot({ path: path.join(outDir, 'bench_peers.png'), fullPage: true });
  fs.writeFileSync(path.join(outDir, 'results.json'), JSON.stringify(s, null, 1));
  console.log(`Chromium ${s.chromium}, cross-origin isolated: ${s.isolated}, ${threads} threads, ${iters} timed runs each (median), load average before/after: ${s.loadavg.map((x) => x.toFixed(1)).join(' ')}`);
  for (const r of s.results)
    console.log(`${r.bench.padEnd(15)} ${r.lib.padEnd(70)} median ${r.ms.toFixed(1).padStart(7)} ms  min ${r.minMs.toFixed(1).padStart(7)} ms${r.tokensPerSecond ? `  ${r.tokensPerSecond.toFixed(0)} tokens/s` : ''}${r.speedup ? `  peer/ctorch ${r.speedup.toFixed(2)} (median of paired ratios)` : ''}\n${''.padEnd(16)}in run order: ${r.times.map((t) => t.toFixed(0)).join(' ')}`);
  if (s.error || problems.length) { console.log('errors: ' + [s.error, ...problems].filter(Boolean).join(' | ')); code = 1; }
} finally {
  await browser.close();
  await srv.close();
}
process.exit(code);
