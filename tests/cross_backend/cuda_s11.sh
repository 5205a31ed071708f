#!/usr/bin/env bash
# Issue 7, session 11: the bfloat16 GELU against the copy bandwidth, and the ResNet-18 CIFAR b16 step against
# PyTorch eager measured several times in one call (medians), each new default A/B'd in the same call.
#   tests/cross_backend/cuda_s11.sh BUILD [parts]
# parts (default "t bench step torch"; prof on request):
#   t = test_ctorch cuda + memory_format (CT_TESTS), and the tests that reach each new default with its switch off;
#   bench = bench_cuda (PyTorch peer in the same run), then bench_cuda --no-torch with CT_CUDA_GELU_POLY=0;
#   step = bench_cuda_gpt resnet 16 50 graph tf32 cl reps=7, twice round: the defaults and the running statistics'
#     fold off (CT_CUDA_BN_RUNNING_FOLD=0: session 10's path); the graph's nodes by kernel name once (session 11's
#     second call also ran three variants removed afterwards for showing no gain: bench/results/s11_cuda.md);
#   torch = bench_cuda_gpt_torch.py resnet 16 20 tf32 reps=7, twice (two processes);
#   prof = CT_CUDA_OP_PROFILE=1 eager steps, and ncu per-kernel durations of the replays (CSV in $OUT/ncu.csv).
# BUILD holds stripped test_ctorch, bench_cuda, bench_cuda_gpt. Writes $OUT/s11_logs.tgz (the detailed logs).
set -u
B=${1:?usage: tests/cross_backend/cuda_s11.sh BUILD [parts]}
shift
P=${*:-t bench step torch}
O=${OUT:-/tmp/cuda_s11}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
has() { case " $P " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
date -u +"start %H:%M:%S UTC"
if has t; then
  for f in ${CT_TESTS:-cuda memory_format}; do
    t0=$(date +%s)
    timeout 240 "$B/test_ctorch" "$f" >"$O/test_$f.log" 2>&1
    echo "test_ctorch $f exit $? ($(($(date +%s) - t0)) s): $(tail -1 "$O/test_$f.log")"
    grep -E "FAIL|fail|skipping|gelu .* over all" "$O/test_$f.log" | head -16
  done
  # the new default switched off: the tests that reach it
  for e in CT_CUDA_BN_RUNNING_FOLD=0; do
    for f in cuda_bn memory_format cuda_graph; do
      env $e timeout 120 "$B/test_ctorch" $f >"$O/test_${e%%=*}_$f.log" 2>&1
      echo "$e test_ctorch $f exit $?: $(tail -1 "$O/test_${e%%=*}_$f.log")"
    done
  done
  CT_CUDA_GELU_POLY=0 timeout 60 "$B/test_ctorch" cuda_gelu_half >"$O/test_nopoly.log" 2>&1
  echo "CT_CUDA_GELU_POLY=0 test_ctorch cuda_gelu_half exit $?: $(grep -E "skipped" "$O/test_nopoly.log") $(tail -1 "$O/test_nopoly.log")"
fi
if has bench; then
  timeout 120 "$B/bench_cuda" >"$O/bench_cuda.log" 2>&1
  echo "== bench_cuda (exit $?)"
  grep -E "ceiling|op |copy_|gelu|add_64M|sum_|softmax|layer_norm" "$O/bench_cuda.log"
  CT_CUDA_GELU_POLY=0 timeout 60 "$B/bench_cuda" --no-torch >"$O/bench_cuda_nopoly.log" 2>&1
  echo "== bench_cuda --no-torch, CT_CUDA_GELU_POLY=0 (exit $?)"
  grep -E "ceiling|copy_64M|gelu" "$O/bench_cuda_nopoly.log"
fi
R="$B/bench_cuda_gpt resnet 16 50 graph tf32 cl"
if has step; then
  CT_CUDA_GRAPH_NODES=1 timeout 100 $R >"$O/nodes.log" 2>&1
  echo "== nodes (channels-last, tf32): $(grep "CUDA graph:" "$O/nodes.log")"
  grep -v "^ctorch" "$O/nodes.log" | head -12
  # A/B in this call: the defaults, the new default off (session 10's code path)
  for r in 1 2; do
    for e in CT_NONE=1 CT_CUDA_BN_RUNNING_FOLD=0; do
      env $e timeout 100 $R reps=7 2>&1 | grep -E "median" | sed "s/^/[$r $e] /"
    done
  done
fi
if has torch; then
  for r in 1 2; do
    timeout 150 python3 bench/bench_cuda_gpt_torch.py resnet 16 20 tf32 reps=7 2>&1 | grep -E "rep|train step" | sed "s/^/[$r] /"
  done
fi
if has step; then
  timeout 100 $R reps=7 2>&1 | grep -E "median" | sed "s/^/[3 default, after torch] /"
fi
if has prof; then
  CT_CUDA_OP_PROFILE=1 timeout 60 "$B/bench_cuda_gpt" resnet 16 3 tf32 cl >"$O/opprof.log" 2>&1
  echo "== eager per-op profile (CT_CUDA_OP_PROFILE=1, 5 eager steps, channels-last tf32): top rows"
  grep -v "^ctorch" "$O/opprof.log" | head -30
  timeout 150 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    "$B/bench_cuda_gpt" resnet 16 1 graph tf32 cl >"$O/ncu.csv" 2>"$O/ncu.err"
  echo "ncu exit $?: $(grep -c '"gpu__time_duration.sum"' "$O/ncu.csv") kernel rows"
  tail -3 "$O/ncu.err"
fi
date -u +"end %H:%M:%S UTC"
# the detailed logs as one file (a device call brings back at most 8 files)
(cd "$O" && tar czf s11_logs.tgz ./*.log && rm -f ./*.log)
