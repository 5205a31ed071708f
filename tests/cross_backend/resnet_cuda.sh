#!/usr/bin/env bash
# ResNet-18 on CUDA in one device call (issue 7): the CUDA C tests (cuDNN convolutions against
# the CPU, the ResNet step replayed as a CUDA graph against eager), the parity fixtures with
# --device cuda (filtered by $2, all when empty), then the ResNet-18 CIFAR training step of
# ctorch (eager and CUDA graph) and PyTorch eager in the same call, and a per-op profile.
#   tests/cross_backend/resnet_cuda.sh BUILD [parity-filter]
# BUILD's test_ctorch, test_parity, bench_cuda_gpt and parity/fixtures.bin are carried.
set -u
B=${1:?usage: tests/cross_backend/resnet_cuda.sh BUILD [parity-filter]}
F=${2:-}
O=${OUT:-/tmp/resnet_cuda}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib 2>/dev/null
t0=$(date +%s)
timeout 200 "$B/test_ctorch" cuda >"$O/test_cuda.log" 2>&1
echo "test_ctorch cuda exit $? ($(($(date +%s) - t0)) s)"
grep -E "FAIL|passed|skipping|conv_cudnn|cuDNN" "$O/test_cuda.log" | head -40
t0=$(date +%s)
timeout 280 "$B/test_parity" -f "$B/parity/fixtures.bin" --device cuda ${F:+"$F"} >"$O/parity_cuda.log" 2>&1
echo "parity --device cuda exit $? ($(($(date +%s) - t0)) s)"
grep "^FAIL" "$O/parity_cuda.log" | head -20
tail -3 "$O/parity_cuda.log" | cut -c1-600
for m in "" graph; do timeout 100 "$B/bench_cuda_gpt" resnet 16 30 $m 2>&1; done
timeout 100 python3 bench/bench_cuda_gpt_torch.py resnet 16 30 2>&1
for m in "" graph; do timeout 100 "$B/bench_cuda_gpt" resnet 16 30 $m 2>&1; done
CT_CUDA_OP_PROFILE=1 timeout 100 "$B/bench_cuda_gpt" resnet 16 3 >"$O/profile.log" 2>&1
head -40 "$O/profile.log"
# train-cnn --cuda-graph against eager on CUDA (BUILD/mnist: IDX files, carried): the graph is
# captured and the per-epoch losses agree within 1e-5 relative (the graph's loss is log_softmax +
# one-hot + sum + mean, eager's cross_entropy: the same value in another rounding order)
if [ -d "$B/mnist" ] && [ -x "$B/ctorch" ]; then
  A=(train-cnn --data "$B/mnist" --train-size 500 --eval-size 100 --batch 64 --epochs 2 --device cuda --quiet)
  timeout 100 "$B/ctorch" "${A[@]}" --out /tmp/cnn_eager >"$O/cnn_eager.log" 2>&1; echo "train-cnn cuda exit $?"
  timeout 100 "$B/ctorch" "${A[@]}" --cuda-graph --out /tmp/cnn_graph >"$O/cnn_graph.log" 2>&1; echo "train-cnn cuda --cuda-graph exit $?"
  grep -h "^epoch\|CUDA graph\|cannot" "$O/cnn_eager.log" "$O/cnn_graph.log"
  grep -q "nodes captured" "$O/cnn_graph.log" && echo "cnn graph: captured" || echo "FAIL: cnn graph not captured"
  paste <(grep '^epoch' "$O/cnn_eager.log") <(grep '^epoch' "$O/cnn_graph.log") | awk '
    { n++; a = $4; b = $(4 + 8); d = a - b; if (d < 0) d = -d; if (d > 1e-5 * a) { print "FAIL: " $0; bad++ } }
    END { if (n < 2) { print "FAIL: only " n " epochs"; bad++ } if (!bad) print "cnn graph: losses match eager (" n " epochs)" }'
fi
