#!/usr/bin/env bash
# GPT-2 124M shape, ctorch vs PyTorch (bench/bench_gpt124m.c + bench/bench_gpt124m_torch.py): training
# tokens/s and peak memory, KV-cache generation tokens/s, each side in its own process, one after
# the other in one run. Builds BUILD/bench_gpt124m against BUILD/libctorch.a first.
# usage: bench/bench_gpt124m.sh BUILD_DIR [THREADS (default 1)] [extra bench_gpt124m options...]
set -eu
B=${1:-build}
T=${2:-1}
shift 2 2>/dev/null || shift $#
[ -f "$B/libctorch.a" ] || { echo "bench_gpt124m: build $B first (make BUILD=$B lib)"; exit 1; }
# the library's link line (the CUDA build adds its runtime) from the Makefile itself
LIBS=$(printf 'print-libs:\n\t@echo $(LDLIBS)\n' | make --no-print-directory -s -f Makefile -f - print-libs BUILD="$B")
cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -o "$B/bench_gpt124m" bench/bench_gpt124m.c "$B/libctorch.a" $LIBS
echo "bench_gpt124m: $(date -u +%H:%M:%S) UTC, load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$B/bench_gpt124m" --threads "$T" "$@"
echo "bench_gpt124m: done $(date -u +%H:%M:%S) UTC, load: $(cut -d' ' -f1-3 /proc/loadavg)"
