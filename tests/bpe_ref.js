// Reference for tests/c/test_bpe.c: encodes and decodes texts with the npm package gpt-3-encoder
// (GPT-2's vocabulary and OpenAI's encoder.py ported to JavaScript).
// usage: node tests/bpe_ref.js <dir holding node_modules/gpt-3-encoder> <texts.json> > out.json
// texts.json is a JSON array of strings; out.json is [{"ids": [...], "decoded": "..."}, ...].
const path = require('path');
const fs = require('fs');
const enc = require(path.resolve(process.argv[2], 'node_modules', 'gpt-3-encoder'));
const texts = JSON.parse(fs.readFileSync(process.argv[3], 'utf-8'));
const out = texts.map(t => {
  const ids = enc.encode(t);
  return { ids: ids, decoded: enc.decode(ids) };
});
process.stdout.write(JSON.stringify(out));
