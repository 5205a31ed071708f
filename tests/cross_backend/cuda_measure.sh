#!/usr/bin/env bash
# Issue 7's measurements in one device call, each beside PyTorch in the same call: GEMMs on
# GPT-2's shapes (ctorch's mm vs torch.mm = cuBLAS directly), ResNet-18 224 inference b1
# (eager and CUDA graph, fp32 and tf32), elementwise/reduction kernels vs the device copy
# (bench_cuda), per-op profiles of the ResNet CIFAR step and the GPT bf16 step, and the GPT-2
# 124M bf16 step (ctorch with and without padded GEMM operands, PyTorch autocast).
#   tests/cross_backend/cuda_measure.sh BUILD [parts]   parts: any of t mm r224 rstep ew prof gpt step (default: all)
# BUILD's test_ctorch, bench_cuda_gpt and bench_cuda are carried (stripped).
set -u
B=${1:?usage: tests/cross_backend/cuda_measure.sh BUILD [parts]}
shift
P=${*:-t mm r224 rstep ew prof gpt step}
O=${OUT:-/tmp/cuda_measure}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
has() { case " $P " in *" $1 "*) return 0 ;; esac; return 1; }
if has t; then # the new kernels' C tests (test_ctorch filter CT_TESTS, default: the autocast and inference ones)
  for f in ${CT_TESTS:-cuda_autocast cuda_gemm_padded cuda_resnet_infer}; do timeout 120 "$B/test_ctorch" "$f" 2>&1 | grep -E "FAIL|passed|fail" | head -12; done
fi
if has mm; then
  timeout 150 "$B/bench_cuda_gpt" mm >"$O/mm.log" 2>&1; echo "bench_cuda_gpt mm exit $?"
  # the same without the padded bfloat16 operands (k_linalg.cu bf16_operand)
  CT_CUDA_GEMM_PAD=0 timeout 150 "$B/bench_cuda_gpt" mm 2>&1 | grep bf16ac | sed 's/^mm ctorch/mm nopad /' >>"$O/mm.log"
  timeout 150 python3 bench/bench_cuda_gpt_torch.py mm >>"$O/mm.log" 2>&1; echo "torch mm exit $?"
  sort -k4,4 -k3,3 "$O/mm.log" | grep "^mm" | awk '{printf "%-6s %-7s %-11s %s %s\n", $2, $3, $4, $11, $13}'
fi
if has r224; then
  timeout 100 "$B/bench_cuda_gpt" resnet224 1 50 2>&1
  timeout 100 python3 bench/bench_cuda_gpt_torch.py resnet224 1 50 2>&1
fi
if has rstep; then # the ResNet-18 CIFAR b16 step: CUDA graph fp32 and tf32 (gradients zeroed in place, or set to
  # none), PyTorch eager fp32 and tf32
  for t in inplace "tf32 inplace" "" tf32; do timeout 100 "$B/bench_cuda_gpt" resnet 16 30 graph $t 2>&1 | grep -v "^ctorch: "; done
  for t in "" tf32; do timeout 100 python3 bench/bench_cuda_gpt_torch.py resnet 16 30 $t 2>&1; done
fi
if has ew; then
  timeout 150 "$B/bench_cuda" >"$O/ew.log" 2>&1; echo "bench_cuda exit $?"
  grep -A40 "copy ceiling" "$O/ew.log" | head -24
fi
if has prof; then
  CT_CUDA_OP_PROFILE=1 timeout 100 "$B/bench_cuda_gpt" resnet 16 3 >"$O/prof_resnet.log" 2>&1
  grep -v "^ctorch: " "$O/prof_resnet.log" | tail -28
fi
if has gpt; then
  CT_CUDA_OP_PROFILE=1 timeout 150 "$B/bench_cuda_gpt" 12 12 768 1024 16 50257 2 bf16 >"$O/prof_gpt.log" 2>&1
  tail -26 "$O/prof_gpt.log"
fi
if has step; then
  CT_CUDA_GEMM_PAD=0 timeout 100 "$B/bench_cuda_gpt" 12 12 768 1024 16 50257 5 bf16 2>&1 | sed 's/^ctorch /ctorch (no pad) /'
  timeout 100 "$B/bench_cuda_gpt" 12 12 768 1024 16 50257 5 bf16 tf32 2>&1
  timeout 150 python3 bench/bench_cuda_gpt_torch.py 12 12 768 1024 16 50257 5 bf16 tf32 2>&1
fi
