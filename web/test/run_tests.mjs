// make test-wasm: the JS API tests in Node (both builds), the npm package test (web/test/pkg_test.mjs;
// its TypeScript check is skipped, with a note, until make test-wasm-pkg installs TypeScript), then the
// core parity fixtures run by
// the wasm build (build/wasm/test_parity.js, emcc-compiled tests/parity/harness.c + run_*.c) with
// native tolerances. Prints each part's count and ends with the total "N passed, M failed".
import { spawnSync } from 'child_process';
import path from 'path';
import { fileURLToPath } from 'url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const t0 = Date.now();
const parts = [];
function run(name, cmd, args, re) {
  const s = Date.now();
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 28 });
  const out = r.stdout || '';
  process.stdout.write(out);
  const m = re.exec(out);
  const p = m ? { name, passed: Number(m[1]), failed: Number(m[2]) } : { name, passed: 0, failed: 1, note: `did not finish (status ${r.status})` };
  p.seconds = (Date.now() - s) / 1000;
  parts.push(p);
}
run('JS API (Node)', process.execPath, ['web/test/run_api_tests.mjs'], /(\d+) passed, (\d+) failed\s*$/);
run('npm package (pack, install, tsc)', process.execPath, ['web/test/pkg_test.mjs'], /(\d+) passed, (\d+) failed/);
run('core parity (wasm)', process.execPath, ['build/wasm/test_parity.js', '-f', 'build/wasm/parity/fixtures.bin'], /parity: (\d+) passed, (\d+) failed/);
console.log('\n== test-wasm summary');
for (const p of parts) console.log(`${p.name}: ${p.passed} passed, ${p.failed} failed (${p.seconds.toFixed(1)} s)${p.note ? ' ' + p.note : ''}`);
const passed = parts.reduce((a, p) => a + p.passed, 0), failed = parts.reduce((a, p) => a + p.failed, 0);
console.log(`test-wasm: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
