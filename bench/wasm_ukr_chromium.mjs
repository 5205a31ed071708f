#!/usr/bin/env node
// bench/wasm_ukr.c in headless Chromium (the V8 of the benchmark of record), printing its table.
//   emcc -O3 -msimd128 -Isrc -sSINGLE_FILE=1 -sENVIRONMENT=web -o build/wasm-ukr-web.js bench/wasm_ukr.c
//   node bench/wasm_ukr_chromium.mjs [rounds] [repetitions per trial]
import path from 'path';
import { createRequire } from 'module';
import { fileURLToPath } from 'url';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(root, 'build/wasm/tools/package.json'));
const { chromium } = require('playwright-core');
const rounds = Number(process.argv[2] || 30), reps = Number(process.argv[3] || 40);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
try {
  const page = await browser.newPage();
  const lines = [];
  let done;
  const finished = new Promise((r) => { done = r; });
  page.on('console', (m) => { lines.push(m.text()); if (m.text().startsWith('checksum')) done(); });
  await page.setContent('<html><body></body></html>');
  await page.evaluate(([r, n]) => { window.Module = { arguments: [String(r), String(n)] }; }, [rounds, reps]);
  await page.addScriptTag({ path: path.join(root, 'build/wasm-ukr-web.js') });
  await Promise.race([finished, new Promise((r) => setTimeout(r, 600000))]);
  console.log(`Chromium ${browser.version()}`);
  console.log(lines.join('\n'));
} finally { await browser.close(); }
