#!/usr/bin/env bash
# The GPT path on CUDA in one device call (issue 7): the C tests (GPT step CPU vs CUDA, bf16
# autocast), `ctorch train-gpt --device cuda` against --device cpu from the same seed (evaluation
# losses within 2e-4 relative: float32 in other summation orders over a few steps), `ctorch sample
# --device cuda` (greedy: the same text as the CPU), --precision tf32/bf16 runs, and the GPT-2 124M
# benchmark of ctorch and PyTorch in the same call.
#   tests/cross_backend/gpt_cuda.sh BUILD [bench-args]   (BUILD's ctorch, test_ctorch, bench_cuda_gpt carried)
set -u
B=${1:?usage: tests/cross_backend/gpt_cuda.sh BUILD}
shift
O=${OUT:-/tmp/gpt_cuda}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d)
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
timeout 240 "$B/test_ctorch" cuda >"$O/test_cuda.log" 2>&1
rc=$?
grep -E "FAIL|passed|skipping" "$O/test_cuda.log" | head -30
[ $rc = 0 ] && ok || bad "test_ctorch cuda exit $rc"

for i in $(seq 1 400); do echo "the quick brown fox number $i jumps over the lazy dog, said the cat."; done >"$tmp/text.txt"
A=(--data "$tmp/text.txt" --tokenizer char --layers 2 --heads 2 --width 64 --context 64 --batch 8 --steps 8
   --eval-every 4 --eval-iters 2 --warmup 2 --lr 1e-2 --sample-tokens 0 --quiet --threads 8)
for dv in cpu cuda; do
  timeout 120 "$B/ctorch" train-gpt "${A[@]}" --device $dv --out "$tmp/$dv" >"$O/train_$dv.log" 2>&1 || bad "train-gpt --device $dv exit $?"
done
# --cuda-graph against eager on CUDA with head size 64 (the flash-attention path: the composed
# attention of other head sizes uploads its causal mask inside the step, and the capture falls back)
G=("${A[@]}" --width 128 --heads 2)
timeout 120 "$B/ctorch" train-gpt "${G[@]}" --device cuda >"$O/train_cuda64.log" 2>&1 || bad "train-gpt (head size 64) exit $?"
timeout 120 "$B/ctorch" train-gpt "${G[@]}" --device cuda --cuda-graph --out "$tmp/graph" >"$O/train_graph.log" 2>&1 ||
  bad "train-gpt --cuda-graph exit $?"
grep -q "nodes captured" "$O/train_graph.log" && ok || bad "train-gpt --cuda-graph did not capture the step"
for p in tf32 bf16 bf16-fp32act; do
  timeout 120 "$B/ctorch" train-gpt "${A[@]}" --device cuda --precision $p >"$O/train_$p.log" 2>&1 || bad "train-gpt --precision $p exit $?"
done
# evaluation lines "step N train loss X val loss Y": CPU vs CUDA fp32 2e-4, tf32/bf16 3e-2 relative
cmp_losses() {
  local ref=$1 got=$2 tol=$3
  paste <(grep '^step ' "$ref") <(grep '^step ' "$got") | awk -v tol="$tol" '
    { n++; for (k = 5; k <= 8; k += 3) { a = $k; b = $(k + 8); d = a - b; if (d < 0) d = -d;
      if (d > tol * (a < 0 ? -a : a)) { print "  " $0; bad++ } } }
    END { if (n < 3) { print "  only " n " evaluation lines"; bad++ } exit bad > 0 }'
}
cmp_losses "$O/train_cpu.log" "$O/train_cuda.log" 2e-4 && ok || bad "train-gpt cpu vs cuda losses"
# the graph replays the eager step's kernels in the same order: the same losses
cmp_losses "$O/train_cuda64.log" "$O/train_graph.log" 1e-6 && ok || bad "train-gpt --cuda-graph vs eager losses"
tail -5 "$O/train_graph.log"
cmp_losses "$O/train_cpu.log" "$O/train_tf32.log" 3e-2 && ok || bad "train-gpt cpu vs cuda tf32 losses"
cmp_losses "$O/train_cpu.log" "$O/train_bf16.log" 3e-2 && ok || bad "train-gpt cpu vs cuda bf16 losses"
cmp_losses "$O/train_cpu.log" "$O/train_bf16-fp32act.log" 3e-2 && ok || bad "train-gpt cpu vs cuda bf16-fp32act losses"
grep -h '^step \|^device\|^done\|CUDA graph\|train-gpt:' "$O"/train_{cpu,cuda,graph,tf32,bf16,bf16-fp32act}.log
for dv in cpu cuda; do
  timeout 60 "$B/ctorch" sample --model "$tmp/cpu" --prompt "the quick" --temperature 0 --max-tokens 40 --device $dv \
    >"$O/sample_$dv.txt" 2>&1 || bad "sample --device $dv exit $?"
done
cmp -s "$O/sample_cpu.txt" "$O/sample_cuda.txt" && [ -s "$O/sample_cpu.txt" ] && ok || bad "sample cpu vs cuda differ"
head -c 300 "$O/sample_cuda.txt"; echo
echo "gpt_cuda checks: $pass passed, $fail failed"
if [ -x "$B/bench_cuda_gpt" ]; then
  timeout 150 "$B/bench_cuda_gpt" "$@" 2>&1 | tee "$O/bench_ctorch.log"
  timeout 150 python3 bench/bench_cuda_gpt_torch.py "$@" 2>&1 | tee "$O/bench_torch.log"
  timeout 100 "$B/bench_cuda_gpt" resnet 16 20 2>&1 | tee -a "$O/bench_ctorch.log"
  timeout 100 python3 bench/bench_cuda_gpt_torch.py resnet 16 20 2>&1 | tee -a "$O/bench_torch.log"
fi
rm -rf "$tmp"
[ $fail = 0 ]
