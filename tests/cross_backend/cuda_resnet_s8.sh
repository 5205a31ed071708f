#!/usr/bin/env bash
# Issue 7, session 8 (ResNet-18 CIFAR b16 step toward >= 5x PyTorch eager): session 7's script (which it replaced) plus the
# channels-last step (model and input converted, `cl`), in one device call beside PyTorch.
#   tests/cross_backend/cuda_resnet_s8.sh BUILD [parts]
# parts (default "t nodes step torch"): t = the CUDA C tests (CT_TESTS: filters, default "cuda"),
# par = parity fixtures with --device cuda, nodes = the captured step's nodes by kernel name
# (CT_CUDA_GRAPH_NODES=1) for the default layout and channels-last, step = the step as a CUDA graph
# (tf32 default layout and channels-last, twice; fp32 both; BN+ReLU unfused A/B), torch = PyTorch eager /
# whole-step CUDA graph, default layout and channels-last. BUILD holds stripped test_ctorch,
# bench_cuda_gpt (and test_parity + fixtures.bin for par).
set -u
B=${1:?usage: tests/cross_backend/cuda_resnet_s8.sh BUILD [parts]}
shift
P=${*:-t nodes step torch}
O=${OUT:-/tmp/cuda_resnet_s8}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
has() { case " $P " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
if has t; then
  for f in ${CT_TESTS:-cuda}; do
    t0=$(date +%s)
    timeout 240 "$B/test_ctorch" "$f" >"$O/test_$f.log" 2>&1
    echo "test_ctorch $f exit $? ($(($(date +%s) - t0)) s): $(tail -1 "$O/test_$f.log")"
    grep -E "FAIL|fail|skipping" "$O/test_$f.log" | head -12
  done
fi
if has par; then
  t0=$(date +%s)
  timeout 280 "$B/test_parity" -f "$B/fixtures.bin" --device cuda >"$O/parity_cuda.log" 2>&1
  echo "parity --device cuda exit $? ($(($(date +%s) - t0)) s)"
  grep "^FAIL" "$O/parity_cuda.log" | head -10
  tail -2 "$O/parity_cuda.log" | cut -c1-400
fi
R="$B/bench_cuda_gpt resnet 16 50 graph"
if has nodes; then
  for v in "" cl; do
    CT_CUDA_GRAPH_NODES=1 timeout 100 $R tf32 $v >"$O/nodes$v.log" 2>&1
    echo "== nodes ${v:-default layout}: $(grep -c . "$O/nodes$v.log") lines"
    grep -v "^ctorch: " "$O/nodes$v.log" | head -45
  done
fi
if has step; then
  for r in 1 2; do
    for t in "tf32" "tf32 cl"; do timeout 100 $R $t 2>&1 | grep "train step" | sed "s/^/[$r] /"; done
  done
  for t in "" "cl"; do timeout 100 $R $t 2>&1 | grep "train step" | sed "s/^/[fp32] /"; done
  # A/B in the same call: batch norm and ReLU as two ops (before session 8's fusion)
  for t in "tf32" "tf32 cl"; do CT_CUDA_BN_RELU=0 timeout 100 $R $t 2>&1 | grep "train step" | sed "s/^/[bn+relu unfused] /"; done
fi
if has torch; then
  timeout 150 python3 bench/bench_resnet_cuda_torch.py 16 50 eager graph tf32 2>&1 | grep "train step"
  timeout 100 python3 bench/bench_resnet_cuda_torch.py 16 50 eager graph tf32 cl 2>&1 | grep "train step"
fi
