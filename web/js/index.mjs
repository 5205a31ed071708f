// ctorch for JavaScript: PyTorch's semantics (ctorch, C11) compiled to WebAssembly.
//
//   import { load } from 'ctorch';
//   const torch = await load();            // picks the pthreads build when it can (see load)
//   const y = torch.scope(() => torch.randn([2, 3]).relu().sum());
//
// The same file runs in Node 20 and in browsers. See index.d.ts for the API.
import { makeTorch } from './torch.mjs';

const isNode = typeof process == 'object' && typeof process.versions == 'object' && typeof process.versions.node == 'string';

let loading = null;

/**
 * Loads the WebAssembly module once and returns the API object.
 * options.threads: 'auto' (default: the core count, at most 8), a number, or 1 for the
 *   single-thread build. The pthreads build needs SharedArrayBuffer, i.e. a cross-origin
 *   isolated page (COOP/COEP headers) in browsers; otherwise the single-thread build loads.
 * options.log: false silences the console line saying which build was chosen.
 */
export function load(options = {}) {
  if (!loading) loading = doLoad(options);
  return loading;
}
export default load;

async function doLoad(options) {
  const want = options.threads ?? (isNode && process.env.CTORCH_WASM_THREADS ? Number(process.env.CTORCH_WASM_THREADS) : 'auto');
  let cores = 1;
  if (isNode) {
    const os = await import('os');
    cores = os.availableParallelism ? os.availableParallelism() : os.cpus().length;
  } else if (typeof navigator == 'object' && navigator.hardwareConcurrency) {
    cores = navigator.hardwareConcurrency;
  }
  const threads = want === 'auto' ? Math.max(1, Math.min(cores, 8)) : Math.max(1, Math.floor(Number(want)) || 1);
  const hasSAB = typeof SharedArrayBuffer == 'function';
  const isolated = isNode ? hasSAB : globalThis.crossOriginIsolated === true && hasSAB;
  const useMt = isolated && threads > 1;
  let why;
  if (useMt) why = isNode ? 'Node.js' : 'the page is cross-origin isolated';
  else if (!isolated) why = 'the page is not cross-origin isolated (no SharedArrayBuffer), so no threads';
  else why = 'one thread requested';
  const file = useMt ? 'ctorch-mt' : 'ctorch-st';
  const factory = (await import(new URL(`./${file}.mjs`, import.meta.url).href)).default;
  const mopts = { ctorchPoolSize: useMt ? threads - 1 : 0 };
  if (options.print) mopts.print = options.print;
  if (options.printErr) mopts.printErr = options.printErr;
  if (isNode) {
    // emscripten 3.1.6 would fetch() a file path under Node 20; hand it the bytes instead
    const fs = await import('fs');
    mopts.wasmBinary = fs.readFileSync(new URL(`./${file}.wasm`, import.meta.url));
  }
  const M = await factory(mopts);
  if (isNode && useMt && M.PThread) {
    // let the process exit while the pool's workers sleep
    for (const w of [...M.PThread.unusedWorkers, ...M.PThread.runningWorkers]) if (w && w.unref) w.unref();
  }
  M._ctw_set_num_threads(useMt ? threads : 1);
  const info = { build: useMt ? 'pthreads' : 'single-thread', threads: useMt ? threads : 1, simd: 'simd128', reason: why, isNode };
  const torch = makeTorch(M, info);
  if (options.log !== false) {
    console.log(`ctorch ${torch.version}: WebAssembly SIMD128, ${useMt ? `pthreads build, ${threads} threads` : 'single-thread build'} (${why})`);
  }
  return torch;
}
