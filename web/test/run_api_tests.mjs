// make test-wasm-api: the JS API tests in Node 20, against build/wasm/pkg (the pthreads build
// by default; CTORCH_WASM_THREADS=1 selects the single-thread build). Ends with "N passed, M failed".
import { fileURLToPath, pathToFileURL } from 'url';
import path from 'path';
import { spawnSync } from 'child_process';
import { runAll } from './api_tests.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pkg = process.env.CTORCH_PKG || path.join(root, 'build/wasm/pkg');
const { load } = await import(pathToFileURL(path.join(pkg, 'index.mjs')).href);

if (process.argv.includes('--child')) {
  const torch = await load();
  const r = await runAll(torch);
  process.exit(r.failed ? 1 : 0);
}

const t0 = Date.now();
let passed = 0, failed = 0;
// both builds: the pthreads build (what Node and isolated pages get) and the single-thread one
for (const threads of ['auto', '1']) {
  console.log(`== ${threads === '1' ? 'single-thread build' : 'pthreads build'}`);
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child'], {
    env: { ...process.env, CTORCH_WASM_THREADS: threads === '1' ? '1' : '' }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'],
  });
  process.stdout.write(r.stdout);
  const m = /(\d+) passed, (\d+) failed\s*$/.exec(r.stdout || '');
  if (m) { passed += Number(m[1]); failed += Number(m[2]); } else { failed++; console.log(`FAIL the ${threads} run did not finish (status ${r.status}, signal ${r.signal})`); }
}
console.log(`JS API tests (Node ${process.version}, ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
