#!/usr/bin/env node
// The pages' static server. It sends the cross-origin isolation headers (COOP/COEP), which
// give pages SharedArrayBuffer and so the pthreads build of ctorch.
//   node web/server.mjs [--port 8080] [--data DIR] [--no-isolation] [--host 127.0.0.1]
// Routes: /            -> /web/index.html
//         /web/...     -> the pages (web/)
//         /pkg/...     -> the built package (build/wasm/pkg: index.mjs, ctorch-*.mjs/.wasm)
//         /data/...    -> DIR, when given (e.g. ../shared/data/mnist for the tests)
//         /peers/...   -> build/wasm-bench (the benchmark's peers: npm packages, .onnx files)
import http from 'http';
import fs from 'fs';
import path from 'path';
import { fileURLToPath } from 'url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png', '.svg': 'image/svg+xml',
  '.txt': 'text/plain; charset=utf-8', '.gz': 'application/gzip', '.ts': 'text/plain', '.safetensors': 'application/octet-stream',
  '.onnx': 'application/octet-stream', '.bin': 'application/octet-stream',
};

export function startServer({ port = 8080, host = '127.0.0.1', data = null, isolate = true, pkg = path.join(ROOT, 'build/wasm/pkg'), quiet = false } = {}) {
  const mounts = [['/web/', path.join(ROOT, 'web')], ['/pkg/', pkg], ['/bench/', path.join(ROOT, 'bench')],
    ['/peers/', path.join(ROOT, 'build/wasm-bench')]];
  if (data) mounts.push(['/data/', path.resolve(data)]);
  const server = http.createServer((req, res) => {
    const headers = { 'Cache-Control': 'no-store', 'Cross-Origin-Resource-Policy': 'same-origin' };
    if (isolate) {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
    }
    let url;
    try { url = decodeURIComponent(new URL(req.url, 'http://x').pathname); } catch { res.writeHead(400, headers); res.end('bad request'); return; }
    if (url === '/favicon.ico') { res.writeHead(204, headers); res.end(); return; }
    if (url === '/' || url === '/index.html') { res.writeHead(302, { ...headers, Location: '/web/index.html' }); res.end(); return; }
    const m = mounts.find(([p]) => url.startsWith(p));
    if (!m || (req.method !== 'GET' && req.method !== 'HEAD')) { res.writeHead(404, headers); res.end('not found'); return; }
    const file = path.resolve(m[1], '.' + url.slice(m[0].length - 1));
    if (!file.startsWith(m[1] + path.sep) && file !== m[1]) { res.writeHead(403, headers); res.end('forbidden'); return; }
    fs.stat(file, (err, st) => {
      if (err || !st.isFile()) { res.writeHead(404, headers); res.end('not found'); return; }
      res.writeHead(200, { ...headers, 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream', 'Content-Length': st.size });
      if (req.method === 'HEAD') { res.end(); return; }
      fs.createReadStream(file).pipe(res);
    });
  });
  return new Promise((resolve) => server.listen(port, host, () => {
    const url = `http://${host}:${server.address().port}/`;
    if (!quiet) console.log(`ctorch pages on ${url} (cross-origin isolation ${isolate ? 'on' : 'off'}${data ? `, /data/ -> ${data}` : ''})`);
    resolve({ server, url, close: () => new Promise((r) => server.close(r)) });
  }));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const a = process.argv.slice(2);
  const opt = (n, d) => { const i = a.indexOf(n); return i >= 0 ? a[i + 1] : d; };
  startServer({ port: Number(opt('--port', 8080)), host: opt('--host', '127.0.0.1'), data: opt('--data', null), isolate: !a.includes('--no-isolation') });
}
