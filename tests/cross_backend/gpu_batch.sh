#!/bin/sh
# Everything the GPU machine has to run for the CUDA backend, in one call (the device
# lease is short): the CUDA C tests, the cross-backend parity mode and bench/bench_cuda.
#   tests/cross_backend/gpu_batch.sh BUILD [parity-filter]
# BUILD's test_ctorch, test_parity, bench_cuda and parity/fixtures.bin are made on the
# development machine and carried; where they do not start (another C library), they are
# rebuilt here with nvcc. Logs go to $OUT (or /tmp/gpu_batch); a summary is printed last.
set -u
B=${1:?usage: tests/cross_backend/gpu_batch.sh BUILD [parity-filter]}
FILTER=${2:-}
O=${OUT:-/tmp/gpu_batch}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader >"$O/gpu.txt" 2>&1
if ! "$B/test_ctorch" cuda_queries_without_device >/dev/null 2>&1; then
  echo "gpu_batch: the carried binaries do not start here: building with nvcc"
  J=$(nproc)
  make BUILD="$B" -j"$J" "$B/libctorch.a" "$B/test_ctorch" "$B/test_parity" >"$O/build.log" 2>&1 ||
    { tail -40 "$O/build.log"; exit 1; }
  cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -o "$B/bench_cuda" bench/bench_cuda.c "$B/libctorch.a" -lm -lpthread \
    -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lstdc++ >>"$O/build.log" 2>&1 || { tail -20 "$O/build.log"; exit 1; }
fi
t0=$(date +%s)
timeout 150 "$B/test_ctorch" cuda >"$O/test_cuda.log" 2>&1
echo "test_cuda exit $? ($(($(date +%s) - t0)) s)" >>"$O/summary.txt"
# the fast-path tests once more with the fast paths off: the reference kernels they fall
# back to must pass the same checks
CT_CUDA_FAST=0 timeout 60 "$B/test_ctorch" cuda_fast >"$O/test_cuda_ref.log" 2>&1
echo "test_cuda (CT_CUDA_FAST=0) cuda_fast exit $?" >>"$O/summary.txt"
t0=$(date +%s)
timeout 280 "$B/test_parity" -f "$B/parity/fixtures.bin" --device cuda ${FILTER:+"$FILTER"} >"$O/parity_cuda.log" 2>&1
echo "parity --device cuda exit $? ($(($(date +%s) - t0)) s)" >>"$O/summary.txt"
if [ -z "$FILTER" ] && [ -x "$B/bench_cuda" ]; then
  timeout 100 "$B/bench_cuda" >"$O/bench_cuda.log" 2>&1
  echo "bench_cuda exit $?" >>"$O/summary.txt"
fi
# train-cnn on both devices from the same seed (B/mnist: the IDX files, carried), when present
if [ -d "$B/mnist" ] && [ -x "$B/ctorch" ]; then
  for dv in cpu cuda; do
    t0=$(date +%s)
    timeout 150 "$B/ctorch" train-cnn --data "$B/mnist" --train-size 8000 --eval-size 2000 --epochs 2 --device $dv \
      --out "/tmp/train_cnn_$dv" --quiet >"$O/train_cnn_$dv.log" 2>&1
    echo "train-cnn --device $dv exit $? ($(($(date +%s) - t0)) s)" >>"$O/summary.txt"
  done
fi
# the summary: GPU, test counts, failures by op, the bench table
cat "$O/gpu.txt"
grep -E "FAIL|skipping|passed" "$O/test_cuda.log" | tail -25
grep -E "FAIL|passed" "$O/test_cuda_ref.log" | tail -5
grep "^FAIL" "$O/parity_cuda.log" | sed 's/.*op \(.*\)\]/\1/' | sort | uniq -c | sort -rn | head -20
grep -A2 "^FAIL" "$O/parity_cuda.log" | grep -v "^FAIL\|^--" | cut -c1-200 | sort | uniq -c | sort -rn | head -12
tail -4 "$O/parity_cuda.log" | cut -c1-1500
[ -f "$O/bench_cuda.log" ] && cat "$O/bench_cuda.log"
for dv in cpu cuda; do [ -f "$O/train_cnn_$dv.log" ] && { echo "== train-cnn --device $dv"; tail -4 "$O/train_cnn_$dv.log"; }; done
cat "$O/summary.txt"
