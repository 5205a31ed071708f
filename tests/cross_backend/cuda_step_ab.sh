#!/usr/bin/env bash
# Issue 7: the ResNet-18 CIFAR b16 CUDA-graph training step (channels-last, TF32, SGD momentum) on a GPU machine:
# tests first, then where the step's time goes, then A/B rows of switches in one process run each, beside
# PyTorch eager. One script for every session's A/B (sessions 11-13 each had their own copy of these loops).
#   tests/cross_backend/cuda_step_ab.sh BUILD [parts]
# parts (default "t prof step torch"):
#   t     = test_ctorch for each filter of $CT_TESTS (default "cuda memory_format"), failures listed;
#   prof  = the captured graph's nodes by kernel (CT_CUDA_GRAPH_NODES) and its timeline's critical path
#           (CT_CUDA_GRAPH_TIMELINE=21, src/backend/cuda/graph_diag.cu), for the default and each of $PROF_VARIANTS;
#   step  = bench_cuda_gpt resnet 16 50 graph tf32 cl reps=7 for "default" and each row of $VARIANTS, two rounds;
#   torch = bench/bench_cuda_gpt_torch.py resnet 16 20 tf32 reps=7 in two processes, then the default once more.
# $VARIANTS and $PROF_VARIANTS: rows separated by ';', each a list of VAR=value (env syntax).
# BUILD holds stripped test_ctorch and bench_cuda_gpt. Logs go to $OUT (default /tmp/cuda_step_ab).
set -u
B=${1:?usage: tests/cross_backend/cuda_step_ab.sh BUILD [parts]}
shift
P=${*:-t prof step torch}
O=${OUT:-/tmp/cuda_step_ab}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
has() { case " $P " in *" $1 "*) return 0 ;; esac; return 1; }
R="$B/bench_cuda_gpt resnet 16 50 graph tf32 cl"
rows() { # the default, then each ';'-separated row of $1
  echo "CT_NONE=1"
  local IFS=';'
  for v in $1; do [ -n "${v// /}" ] && echo "$v"; done
}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
date -u +"start %H:%M:%S UTC"
if has t; then
  for f in ${CT_TESTS:-cuda memory_format}; do
    t0=$(date +%s)
    timeout 300 "$B/test_ctorch" "$f" >"$O/test_$f.log" 2>&1
    echo "test_ctorch $f exit $? ($(($(date +%s) - t0)) s): $(tail -1 "$O/test_$f.log")"
    grep -E "FAIL|fail|skipping" "$O/test_$f.log" | head -16
  done
fi
if has prof; then
  k=0
  while read -r e; do
    k=$((k + 1))
    env $e CT_CUDA_GRAPH_NODES=1 CT_CUDA_GRAPH_TIMELINE=21 timeout 120 $R >"$O/prof_$k.log" 2>&1
    echo "== prof $k [$e]: $(grep -E "CUDA graph:|timeline" "$O/prof_$k.log" | tr '\n' ' ')"
    sed -n '/critical path by kernel/,/critical path in order/p' "$O/prof_$k.log" | head -24
  done < <(rows "${PROF_VARIANTS:-}")
fi
if has step; then
  for r in 1 2; do
    while read -r e; do
      env $e timeout 100 $R reps=7 2>&1 | grep -E "median|rror|nodes" | tr '\n' ' ' | sed "s/^/[$r $e] /"
      echo
    done < <(rows "${VARIANTS:-}")
  done
fi
if has torch; then
  for r in 1 2; do
    timeout 150 python3 bench/bench_cuda_gpt_torch.py resnet 16 20 tf32 reps=7 2>&1 | grep -E "median|train step" | sed "s/^/[torch $r] /"
  done
  timeout 100 $R reps=7 2>&1 | grep -E "median" | sed "s/^/[default, after torch] /"
fi
date -u +"end %H:%M:%S UTC"
