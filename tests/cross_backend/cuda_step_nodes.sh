#!/usr/bin/env bash
# Issue 7, "fewer graph nodes" (session 6): in one device call, the CUDA C tests, the parity
# fixtures with --device cuda for the convolution / batch-norm / optimizer filters, and the
# ResNet-18 CIFAR b16 training step as a CUDA graph (fp32 and tf32; gradients set to none like
# PyTorch's default zero_grad, and zeroed in place; the new single-kernel running statistics and
# multi-tensor SGD on, and both off for an A/B in the same run) beside PyTorch eager fp32/tf32.
#   tests/cross_backend/cuda_step_nodes.sh BUILD     (BUILD: test_ctorch, test_parity,
#   bench_cuda_gpt, parity/fixtures.bin, carried)
set -u
B=${1:?usage: tests/cross_backend/cuda_step_nodes.sh BUILD}
O=${OUT:-/tmp/cuda_step_nodes}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
t0=$(date +%s)
timeout 200 "$B/test_ctorch" cuda >"$O/test_cuda.log" 2>&1
echo "test_ctorch cuda exit $? ($(($(date +%s) - t0)) s)"
grep -E "FAIL|passed|skipping" "$O/test_cuda.log" | tail -20
for f in conv bn norm sgd optim; do
  echo "parity --device cuda '$f': $(timeout 100 "$B/test_parity" -f "$B/parity/fixtures.bin" --device cuda "$f" 2>&1 | tee "$O/parity_$f.log" | tail -1)"
  grep "^FAIL" "$O/parity_$f.log" | head -5
done
R="$B/bench_cuda_gpt resnet 16 30 graph"
for t in "" tf32 inplace "tf32 inplace"; do timeout 100 $R $t 2>&1 | grep -v "^ctorch: " | sed "s/^/[1] /"; done
CT_CUDA_SGD_MT=0 CT_CUDA_BN_RUNNING=0 timeout 100 $R tf32 2>&1 | grep -v "^ctorch: " | sed "s/^/[1, both off] /"
for t in "" tf32; do timeout 100 python3 bench/bench_cuda_gpt_torch.py resnet 16 30 $t 2>&1 | sed "s/^/[1] /"; done
# the headline pair once more (run-to-run noise)
timeout 100 $R tf32 2>&1 | grep -v "^ctorch: " | sed "s/^/[2] /"
timeout 100 python3 bench/bench_cuda_gpt_torch.py resnet 16 30 tf32 2>&1 | sed "s/^/[2] /"
CT_CUDA_OP_PROFILE=1 timeout 100 "$B/bench_cuda_gpt" resnet 16 3 >"$O/prof_resnet.log" 2>&1
grep -v "^ctorch: " "$O/prof_resnet.log" | tail -30
