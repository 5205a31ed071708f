#!/usr/bin/env bash
# Issue 7, session 13b: the ResNet-18 CIFAR b16 graph step with the fused unchecked cross-entropy on CUDA
# (CT_CUDA_CE_FUSED), the elementwise kernels as programmatic dependents (CT_CUDA_EW_PDL) and the downsample
# branch's forward on the second stream (CT_CUDA_DS_FORK), each A/B'd against its switch-off path in the same call,
# beside PyTorch eager (two processes, medians).
#   tests/cross_backend/cuda_s13b.sh BUILD [parts]
# parts (default "t13b step torch t"):
#   t13b = test_ctorch cuda13b (the new tests) first, so that a wrong path shows before any timing;
#   step = the graph's nodes once, then bench_cuda_gpt resnet 16 50 graph tf32 cl reps=7 over the variants, twice round;
#   torch = bench_cuda_gpt_torch.py resnet 16 20 tf32 reps=7 in two processes, then the default and all-off once more;
#   t = test_ctorch cuda + memory_format + cuda13, and the tests that reach the new paths with each switch off.
# BUILD holds stripped test_ctorch and bench_cuda_gpt. Writes $OUT/s13b_logs.tgz (the detailed logs).
# (Session 13b's first call ran this with CT_CUDA_BN_PDL=2 as the A/B row, 1 being the default then; the default
# is 2 since, so the row is now the old default. "$OFF" with CT_CUDA_BN_PDL=1 is session 13's final path.)
set -u
B=${1:?usage: tests/cross_backend/cuda_s13b.sh BUILD [parts]}
shift
P=${*:-t13b step torch t}
O=${OUT:-/tmp/cuda_s13b}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
has() { case " $P " in *" $1 "*) return 0 ;; esac; return 1; }
OFF="CT_CUDA_DS_FORK=0 CT_CUDA_EW_PDL=0 CT_CUDA_CE_FUSED=0 CT_CUDA_BN_PDL=1"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
date -u +"start %H:%M:%S UTC"
if has t13b; then
  t0=$(date +%s)
  timeout 150 "$B/test_ctorch" cuda13b >"$O/test_cuda13b.log" 2>&1
  echo "test_ctorch cuda13b exit $? ($(($(date +%s) - t0)) s): $(tail -1 "$O/test_cuda13b.log")"
  grep -E "FAIL|fail|skipping|no region" "$O/test_cuda13b.log" | head -20
fi
R="$B/bench_cuda_gpt resnet 16 50 graph tf32 cl"
if has step; then
  CT_CUDA_GRAPH_NODES=1 timeout 100 $R >"$O/nodes.log" 2>&1
  echo "== nodes (default): $(grep "CUDA graph:" "$O/nodes.log")"
  grep -v "^ctorch" "$O/nodes.log" | head -14
  env $OFF CT_CUDA_GRAPH_NODES=1 timeout 100 $R >"$O/nodes_off.log" 2>&1
  echo "== nodes (13b off): $(grep "CUDA graph:" "$O/nodes_off.log")"
  for r in 1 2; do
    for e in CT_NONE=1 CT_CUDA_DS_FORK=0 CT_CUDA_EW_PDL=0 CT_CUDA_CE_FUSED=0 "$OFF" CT_CUDA_BN_PDL=1 ${STEP_EXTRA:-}; do
      env $e timeout 100 $R reps=7 2>&1 | grep -E "median|rror" | sed "s/^/[$r $e] /"
    done
  done
fi
if has torch; then
  for r in 1 2; do
    timeout 150 python3 bench/bench_cuda_gpt_torch.py resnet 16 20 tf32 reps=7 2>&1 | grep -E "rep|train step" | sed "s/^/[$r] /"
  done
  timeout 100 $R reps=7 2>&1 | grep -E "median" | sed "s/^/[3 default, after torch] /"
  env $OFF timeout 100 $R reps=7 2>&1 | grep -E "median" | sed "s/^/[3 13b off, after torch] /"
fi
if has t; then
  for f in ${CT_TESTS:-cuda memory_format cuda13}; do
    t0=$(date +%s)
    timeout 240 "$B/test_ctorch" "$f" >"$O/test_$f.log" 2>&1
    echo "test_ctorch $f exit $? ($(($(date +%s) - t0)) s): $(tail -1 "$O/test_$f.log")"
    grep -E "FAIL|fail|skipping" "$O/test_$f.log" | head -16
  done
  for e in CT_CUDA_DS_FORK=0 CT_CUDA_EW_PDL=0 CT_CUDA_CE_FUSED=0; do
    for f in ${CT_OFF_TESTS:-memory_format cuda_graph cuda13}; do
      env $e timeout 120 "$B/test_ctorch" $f >"$O/test_${e%%=*}${e##*=}_$f.log" 2>&1
      echo "$e test_ctorch $f exit $?: $(tail -1 "$O/test_${e%%=*}${e##*=}_$f.log")"
    done
  done
fi
date -u +"end %H:%M:%S UTC"
(cd "$O" && tar czf s13b_logs.tgz ./*.log && rm -f ./*.log)
