#!/usr/bin/env node
// Summarises a V8 .cpuprofile (node --cpu-prof) by self time per function: where the wasm build
// spends its time. The wasm functions have names when the module was linked with
// --profiling-funcs (make wasm-profile does that).
//   node bench/wasm_profile_top.mjs FILE.cpuprofile [N]
import fs from 'fs';
const [file, nArg] = process.argv.slice(2);
const p = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = p.timeDeltas;
for (let i = 0; i < p.samples.length; i++) {
  const n = byId.get(p.samples[i]);
  const name = n.callFrame.functionName || `(${n.callFrame.url.split('/').pop() || 'anonymous'})`;
  self.set(name, (self.get(name) || 0) + (dt[i] || 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(nArg || 25));
console.log(`total ${(total / 1000).toFixed(0)} ms sampled`);
for (const [name, us] of rows) console.log(`${(100 * us / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`);
