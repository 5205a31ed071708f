// make test-wasm-pkg: the npm package as a user gets it. `npm pack` of build/wasm/pkg, installed
// from the tarball into a fresh project (no network: the package has no dependencies), imported
// by its name through package.json "exports" in Node, and type-checked with TypeScript (tsc
// --strict, from build/wasm/tools) against the declarations that "types" points to.
// Ends with "N passed, M failed".
import { spawnSync } from 'child_process';
import fs from 'fs';
import os from 'os';
import path from 'path';
import { fileURLToPath } from 'url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pkgDir = process.env.CTORCH_PKG || path.join(root, 'build/wasm/pkg');
const tsc = path.join(root, 'build/wasm/tools/node_modules/typescript/bin/tsc');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ctorch-pkg-'));
let passed = 0, failed = 0, skipped = 0;
function sh(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}
function test(name, fn) {
  try {
    const note = fn();
    passed++;
    console.log(`ok   ${name}${note ? ': ' + note : ''}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.message ? e.message : e}`);
  }
}

let tgz = null;
test('npm pack makes a tarball with every file package.json lists', () => {
  const out = sh('npm', ['pack', '--pack-destination', work, pkgDir], work).trim().split('\n').pop();
  tgz = path.join(work, out);
  if (!fs.existsSync(tgz)) throw new Error('no tarball ' + tgz);
  const listed = sh('tar', ['tzf', tgz], work).split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
  const meta = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  const missing = meta.files.filter((f) => !listed.includes(f));
  if (missing.length) throw new Error('missing from the tarball: ' + missing.join(', '));
  if (!meta.exports['.'].types || !meta.exports['.'].import) throw new Error('exports lacks types/import');
  return `${path.basename(tgz)}, ${listed.length} files, ${(fs.statSync(tgz).size / 1e6).toFixed(2)} MB`;
});

const proj = path.join(work, 'app');
test('the tarball installs into a fresh project and runs by its name in Node', () => {
  if (!tgz) throw new Error('no tarball');
  fs.mkdirSync(proj);
  fs.writeFileSync(path.join(proj, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  sh('npm', ['install', '--offline', '--no-audit', '--no-fund', tgz], proj);
  // a few steps of least squares with Adam inside scopes; an error must be an Error object
  fs.writeFileSync(path.join(proj, 'use.mjs'), `
import { load } from 'ctorch';
const torch = await load({ threads: 1, log: false });
torch.manualSeed(0);
const x = torch.randn([64, 3]).keep(), w = torch.tensor([[1.5], [-2], [0.5]]);
const y = x.matmul(w).keep();
const lin = new torch.nn.Linear(3, 1);
const opt = new torch.optim.Adam(lin.parameters(), { lr: 0.1 });
const losses = [];
for (let i = 0; i < 60; i++) losses.push(torch.scope(() => {
  opt.zeroGrad();
  const loss = torch.nn.functional.mseLoss(lin.forward(x), y);
  loss.backward(); opt.step();
  return loss.item();
}));
let err = null;
try { torch.zeros([2, 3]).matmul(torch.zeros([4, 5])); } catch (e) { err = e; }
const live = torch.memory().liveTensors;
console.log(JSON.stringify({ first: losses[0], last: losses.at(-1), isError: err instanceof Error, name: err && err.name, msg: err && err.message, live }));
`);
  const r = JSON.parse(sh(process.execPath, ['use.mjs'], proj).trim().split('\n').pop());
  if (!(r.last < 0.1 * r.first)) throw new Error(`loss did not fall: ${r.first} -> ${r.last}`);
  if (!r.isError || !/cannot be multiplied/.test(r.msg)) throw new Error('error was not an Error with the message: ' + JSON.stringify(r));
  return `loss ${r.first.toFixed(3)} -> ${r.last.toFixed(5)}; ${r.name}: ${r.msg}`;
});

test('TypeScript (tsc --strict) accepts typed use of the declarations and rejects a wrong one', () => {
  if (!fs.existsSync(tsc)) {
    skipped++;
    passed--; // counted as a skip, not a pass
    return `SKIPPED (1): no TypeScript at ${path.relative(root, tsc)} (make test-wasm-pkg installs it)`;
  }
  if (!fs.existsSync(path.join(proj, 'node_modules/ctorch/index.d.ts'))) throw new Error('package not installed');
  fs.writeFileSync(path.join(proj, 'use.ts'), `
import load, { Tensor, DType, Torch } from 'ctorch';
async function main(): Promise<number> {
  const torch: Torch = await load({ threads: 1 });
  const t: Tensor = torch.randn([2, 3], { dtype: 'float64' });
  const d: DType = t.dtype;
  const s: number[] = t.shape;
  const loss = torch.scope(() => t.mul(2).sum().item());
  const g = torch.noGrad(() => t.relu());
  // @ts-expect-error: a shape is a number or number[], not a string
  torch.zeros('3');
  // @ts-expect-error: not a dtype
  torch.ones([2], { dtype: 'float33' });
  g.dispose();
  return Number(loss) + s.length + d.length;
}
main();
`);
  fs.writeFileSync(path.join(proj, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', skipLibCheck: false },
    files: ['use.ts'],
  }));
  sh(process.execPath, [tsc, '-p', 'tsconfig.json'], proj);
  return 'no type errors; both @ts-expect-error lines were errors';
});

fs.rmSync(work, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed ? 1 : 0);
