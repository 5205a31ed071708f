#!/bin/sh
# The cross-backend suite: every op with a CUDA kernel on CPU and CUDA, compared.
#   tests/cross_backend/run.sh BUILD [case-name-substring]
# 1. BUILD/test_ctorch "cuda": tests/c/test_cuda.c runs ops on both devices and compares
#    values and gradients (non-contiguous, empty, NaN/inf, > 2^31 elements, MLP steps).
# 2. BUILD/test_parity --device cuda: every parity fixture case (tests/parity/cases_*.py,
#    PyTorch 1.13 values that the CPU matches) with its inputs built on the GPU and its
#    outputs and gradients read back. A case that reaches an op without a CUDA kernel is
#    listed under "no cuda kernel", apart from the failures.
# Fixtures: BUILD/parity/fixtures.bin (tests/parity/run.sh BUILD writes them where
# PyTorch 1.13 is installed; a GPU machine without it can use a copy).
# Without a CUDA device both steps print why and succeed (CI has no GPU).
# On the lent GPU machine, tests/cross_backend/gpu_batch.sh runs both plus bench/bench_cuda in one call.
set -u
BUILD=${1:?usage: tests/cross_backend/run.sh BUILD [case-name-substring]}
FILTER=${2:-}
cd "$(dirname "$0")/../.." || exit 1
rc=0
"$BUILD/test_ctorch" cuda || rc=1
if [ -f "$BUILD/parity/fixtures.bin" ]; then
  "$BUILD/test_parity" -f "$BUILD/parity/fixtures.bin" --device cuda ${FILTER:+"$FILTER"} || rc=1
else
  echo "cross_backend: no $BUILD/parity/fixtures.bin (run tests/parity/run.sh $BUILD first)"
  rc=1
fi
exit $rc
