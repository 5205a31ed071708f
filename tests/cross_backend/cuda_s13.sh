#!/usr/bin/env bash
# Issue 7, session 13: the ResNet-18 CIFAR b16 graph step with the two-stream convolution backward
# (CT_CUDA_CONV_2STREAM) and the batch norm's programmatic dependent launches (CT_CUDA_BN_PDL), each A/B'd against
# its switch-off path in the same call, beside PyTorch eager (two processes, medians).
#   tests/cross_backend/cuda_s13.sh BUILD [parts]
# parts (default "t13 step torch t"); CT_CUDA_CONV_2STREAM: 0 one stream, 1 joined at once, 2 (default) joined where
# needed; CT_CUDA_BN_PDL 0/1/2 (1 was the default in session 13, 2 since 13b); CT_CUDA_STREAM_PRIO=1 (removed in
# session 13b: its rows now repeat the default) was the device's stream at the highest priority:
#   t13 = test_ctorch cuda13 (the new tests) first, so that a wrong path shows before any timing;
#   step = the graph's nodes once, then bench_cuda_gpt resnet 16 50 graph tf32 cl reps=7 over the variants, twice round;
#   torch = bench_cuda_gpt_torch.py resnet 16 20 tf32 reps=7 in two processes, then the default once more;
#   t = test_ctorch cuda + memory_format, and the tests that reach the new paths with each switch off.
# BUILD holds stripped test_ctorch and bench_cuda_gpt. Writes $OUT/s13_logs.tgz (the detailed logs).
# (Session 13's first call ran an earlier build, whose default was mode 1, with the step variants "CT_NONE=1
# CT_CUDA_CONV_2STREAM=0 CT_CUDA_BN_PDL=0 both-off CT_CUDA_BN_PDL=2"; this file is the second call's.)
set -u
B=${1:?usage: tests/cross_backend/cuda_s13.sh BUILD [parts]}
shift
P=${*:-t13 step torch t}
O=${OUT:-/tmp/cuda_s13}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
has() { case " $P " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
date -u +"start %H:%M:%S UTC"
if has t13; then
  t0=$(date +%s)
  timeout 120 "$B/test_ctorch" cuda13 >"$O/test_cuda13.log" 2>&1
  echo "test_ctorch cuda13 exit $? ($(($(date +%s) - t0)) s): $(tail -1 "$O/test_cuda13.log")"
  grep -E "FAIL|fail|skipping|no second" "$O/test_cuda13.log" | head -20
  CT_CUDA_STREAM_PRIO=1 timeout 120 "$B/test_ctorch" cuda13 >"$O/test_cuda13_prio.log" 2>&1
  echo "CT_CUDA_STREAM_PRIO=1 test_ctorch cuda13 exit $?: $(tail -1 "$O/test_cuda13_prio.log")"
  grep -E "FAIL|fail" "$O/test_cuda13_prio.log" | head -10
fi
R="$B/bench_cuda_gpt resnet 16 50 graph tf32 cl"
if has step; then
  CT_CUDA_GRAPH_NODES=1 timeout 100 $R >"$O/nodes.log" 2>&1
  echo "== nodes (default): $(grep "CUDA graph:" "$O/nodes.log")"
  grep -v "^ctorch" "$O/nodes.log" | head -8
  for r in 1 2; do
    for e in CT_NONE=1 CT_CUDA_CONV_2STREAM=1 "CT_CUDA_CONV_2STREAM=0 CT_CUDA_BN_PDL=0" CT_CUDA_BN_PDL=2 CT_CUDA_STREAM_PRIO=1 "CT_CUDA_STREAM_PRIO=1 CT_CUDA_BN_PDL=2"; do
      env $e timeout 100 $R reps=7 2>&1 | grep -E "median|train step|rror" | sed "s/^/[$r $e] /"
    done
  done
fi
if has torch; then
  for r in 1 2; do
    timeout 150 python3 bench/bench_cuda_gpt_torch.py resnet 16 20 tf32 reps=7 2>&1 | grep -E "rep|train step" | sed "s/^/[$r] /"
  done
  timeout 100 $R reps=7 2>&1 | grep -E "median" | sed "s/^/[3 default, after torch] /"
  CT_CUDA_CONV_2STREAM=0 CT_CUDA_BN_PDL=0 timeout 100 $R reps=7 2>&1 | grep -E "median" | sed "s/^/[3 both off, after torch] /"
fi
if has t; then
  for f in ${CT_TESTS:-cuda memory_format}; do
    t0=$(date +%s)
    timeout 240 "$B/test_ctorch" "$f" >"$O/test_$f.log" 2>&1
    echo "test_ctorch $f exit $? ($(($(date +%s) - t0)) s): $(tail -1 "$O/test_$f.log")"
    grep -E "FAIL|fail|skipping" "$O/test_$f.log" | head -16
  done
  for e in CT_CUDA_CONV_2STREAM=0 CT_CUDA_CONV_2STREAM=1 CT_CUDA_BN_PDL=0; do
    for f in memory_format cuda_graph cuda_bn conv; do
      env $e timeout 120 "$B/test_ctorch" $f >"$O/test_${e%%=*}${e##*=}_$f.log" 2>&1
      echo "$e test_ctorch $f exit $?: $(tail -1 "$O/test_${e%%=*}${e##*=}_$f.log")"
    done
  done
fi
date -u +"end %H:%M:%S UTC"
(cd "$O" && tar czf s13_logs.tgz ./*.log && rm -f ./*.log)
