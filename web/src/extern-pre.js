// Emscripten 3.1.6 writes CommonJS names (require, __dirname) into its ES module output for
// Node; give them module-local values so the same file loads in Node 20 and in browsers.
const __ctNode = typeof process == 'object' && typeof process.versions == 'object' && typeof process.versions.node == 'string';
const require = __ctNode ? (await import('module')).createRequire(import.meta.url) : undefined;
const __filename = __ctNode ? require('url').fileURLToPath(import.meta.url) : undefined;
const __dirname = __ctNode ? require('path').dirname(__filename) : undefined;
