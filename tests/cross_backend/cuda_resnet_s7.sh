#!/usr/bin/env bash
# Issue 7, session 7 (ResNet-18 CIFAR b16 step toward <= 2 ms): in one device call, what the
# captured step is made of and what it costs, beside PyTorch in the same call.
#   tests/cross_backend/cuda_resnet_s7.sh BUILD [parts]
# parts (default "t nodes step torch"): t = the CUDA C tests (CT_TESTS: filters, default all "cuda"),
# par = parity fixtures with --device cuda, nodes = the graph's nodes by kernel name
# (CT_CUDA_GRAPH_NODES=1), step = the step as a CUDA graph tf32 and fp32, torch = PyTorch eager /
# CUDA graph (tf32, fp32), compile = torch.compile, ncu = per-kernel device time of the replays
# (Nsight Compute, CSV in $OUT/ncu.csv). BUILD holds stripped test_ctorch, bench_cuda_gpt (and
# test_parity + parity/fixtures.bin for par).
set -u
B=${1:?usage: tests/cross_backend/cuda_resnet_s7.sh BUILD [parts]}
shift
P=${*:-t nodes step torch}
O=${OUT:-/tmp/cuda_resnet_s7}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
has() { case " $P " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
if has t; then
  for f in ${CT_TESTS:-cuda}; do
    t0=$(date +%s)
    timeout 200 "$B/test_ctorch" "$f" >"$O/test_$f.log" 2>&1
    echo "test_ctorch $f exit $? ($(($(date +%s) - t0)) s): $(tail -1 "$O/test_$f.log")"
    grep -E "FAIL|fail" "$O/test_$f.log" | head -10
  done
fi
if has par; then
  t0=$(date +%s)
  timeout 280 "$B/test_parity" -f "$B/parity/fixtures.bin" --device cuda >"$O/parity_cuda.log" 2>&1
  echo "parity --device cuda exit $? ($(($(date +%s) - t0)) s)"
  grep "^FAIL" "$O/parity_cuda.log" | head -10
  tail -2 "$O/parity_cuda.log" | cut -c1-400
fi
R="$B/bench_cuda_gpt resnet 16 50 graph"
if has nodes; then
  CT_CUDA_GRAPH_NODES=1 timeout 100 $R tf32 >"$O/nodes.log" 2>&1
  grep -v "^ctorch: " "$O/nodes.log" | head -70
fi
if has step; then
  for r in 1 2; do for t in tf32 ""; do timeout 100 $R $t 2>&1 | grep "train step" | sed "s/^/[$r] /"; done; done
  # A/B in the same call: batch norm's per-channel kernels (before session 7's fast path)
  CT_CUDA_BN_FAST=0 timeout 100 $R tf32 2>&1 | grep "train step" | sed "s/^/[bn fast off] /"
fi
if has torch; then
  timeout 150 python3 bench/bench_resnet_cuda_torch.py 16 50 eager graph kernels tf32 2>&1
  timeout 100 python3 bench/bench_resnet_cuda_torch.py 16 50 eager fp32 2>&1 | grep "train step"
  timeout 100 python3 bench/bench_resnet_cuda_torch.py 16 50 eager graph tf32 cl 2>&1 | grep "train step"
fi
if has compile; then
  timeout 150 python3 bench/bench_resnet_cuda_torch.py 16 50 compile tf32 2>&1 | tail -3
fi
if has ncu; then
  # one eager warm-up pair, the capture, then 3 replays: the replays are the last 3 x (kernel nodes)
  # rows of the CSV
  timeout 150 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    "$B/bench_cuda_gpt" resnet 16 1 graph tf32 >"$O/ncu.csv" 2>"$O/ncu.err"
  echo "ncu exit $?: $(grep -c '"gpu__time_duration.sum"' "$O/ncu.csv") kernel rows"
  tail -3 "$O/ncu.err"
fi
