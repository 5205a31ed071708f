#!/usr/bin/env node
// Serves the pages with /pkg/ pointing at the WebGPU browser build beside the CPU package
// (build/wasm-webgpu/pkg, made by `make wasm wasm-webgpu`): http://127.0.0.1:8081/web/webgpu.html
// (training on WebGPU or WebAssembly), /web/gpt.html?device=webgpu (the GPT page's WebGPU switch)
// and /web/test/webgpu.html (the backend's tests). Chromium needs --enable-unsafe-webgpu on Linux.
//   node web/webgpu/serve.mjs [--port 8081]
import path from 'path';
import { fileURLToPath } from 'url';
import { startServer } from '../server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const a = process.argv.slice(2), i = a.indexOf('--port');
await startServer({ port: i >= 0 ? Number(a[i + 1]) : 8081, pkg: path.join(root, 'build/wasm-webgpu/pkg') });
