#!/usr/bin/env bash
# Issue 7: where does bf16o's extra gradient error come from (session 9's probe: 6.5x PyTorch autocast's
# at the same weights, every parameter group alike)? One device call, two views:
#  1. the op census: test_ctorch's cuda_autocast_bf16_op_error_census (each GPT op under the mode against
#     float64 on the same bf16 inputs, beside one rounding) and PyTorch's numbers for the same ops
#     (tests/cross_backend/bf16_op_error_torch.py), printed together;
#  2. the probe with switches (CENSUS_SWITCHES / BF16O_SWITCHES: one process per VAR=VALUE): bench_cuda_gpt curve (4 steps, probe before step 3) once per switch that
#     changes a kernel bf16o runs (each its own process: the switches are read once), err per run.
#   tests/cross_backend/bf16o_locate.sh BUILD    (BUILD holds stripped test_ctorch and bench_cuda_gpt)
set -u
B=${1:?usage: tests/cross_backend/bf16o_locate.sh BUILD}
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || { echo "bf16o_locate.sh: no NVIDIA GPU" >&2; exit 3; }
t0=$SECONDS
for v in "" ${CENSUS_SWITCHES-CT_CUDA_GEMM_C16=1}; do
  env $v timeout 200 "$B/test_ctorch" autocast_bf16_op_error_census 2>&1 | grep -E "census|FAIL|passed" | sed "s/^/[${v:-default}] /"
done
echo "census ctorch: $((SECONDS - t0)) s"
t0=$SECONDS
PYTHONUNBUFFERED=1 timeout 120 ${PY:-python3} tests/cross_backend/bf16_op_error_torch.py 2>&1 | tail -16
echo "census torch: $((SECONDS - t0)) s"
# session 10's first call ran CT_CUDA_FA_PIPE=0 CT_CUDA_FA_MMA=0 CT_CUDA_FA_TC=0 CT_CUDA_FAST=0
# CT_AUTOCAST_LSE_DIRECT=0 CT_CUDA_GEMM_PAD=0 CT_BF16O_LOSS=ce: none moved the error (2.22e-2 at step 3)
for v in "" ${BF16O_SWITCHES-CT_CUDA_GEMM_C16=1}; do
  t0=$SECONDS
  rm -f /tmp/bl.st /tmp/bl.st.p*
  env $v CURVE_PRECS="${BF16O_PRECS-bf16 bf16o}" CURVE_PROBE=3 timeout 120 "$B/bench_cuda_gpt" curve /tmp/bl.st 4 2>&1 |
    grep -E "^probe ctorch .* loss|FAIL|rror" | sed "s/^/[${v:-default}] /"
  echo "[${v:-default}] $((SECONDS - t0)) s"
done
