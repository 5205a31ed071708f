// Node 20 has a global fetch, which emscripten 3.1.6 would use for a plain path: read the
// .wasm beside this script from disk instead.
if (!Module['wasmBinary']) {
  Module['wasmBinary'] = require('fs').readFileSync(require('path').join(__dirname, require('path').basename(__filename).replace(/\.js$/, '.wasm')));
}
