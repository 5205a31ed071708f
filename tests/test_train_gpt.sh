#!/usr/bin/env bash
# `ctorch train-gpt`: option errors, a tiny run's evaluation lines and outputs, and --resume: a
# run stopped at step 3 and resumed to step 6 ends in the same bytes (model, optimizer, RNG) and
# prints the same last evaluation as an uninterrupted 6-step run. Seconds, no data download.
# Usage: tests/test_train_gpt.sh BUILD_DIR   (from the repo root)
set -u
B=${1:-build}
C="$B/ctorch"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
# runs the command, expects exit status $1 and output containing $2
expect_run() {
  local want_rc=$1 want=$2
  shift 2
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want_rc" ]; then bad "$* exited $rc (wanted $want_rc): $out"; return; fi
  case "$out" in *"$want"*) ok ;; *) bad "$*: output lacks '$want': $out" ;; esac
}

# 0. the default thread count: the CPUs the process may run on (affinity mask, cgroup quota), OMP_NUM_THREADS
#    as PyTorch honours it, CT_NUM_THREADS over both
if command -v taskset >/dev/null; then
  expect_run 0 "threads: 1" env -u CT_NUM_THREADS -u OMP_NUM_THREADS taskset -c 0 "$C" info
fi
expect_run 0 "threads: 3" env -u CT_NUM_THREADS OMP_NUM_THREADS=3 "$C" info
expect_run 0 "threads: 2" env CT_NUM_THREADS=2 OMP_NUM_THREADS=3 "$C" info

# 1. help and option errors
expect_run 0 "--beta1 X, --beta2 X AdamW betas (default 0.85, 0.999)" "$C" train-gpt --help
case "$out" in *"--warmup N           linear warmup steps (default 100)"*) ok ;; *) bad "--help: warmup default: $out" ;; esac
case "$out" in *"the final one uses at least 200"*) ok ;; *) bad "--help: final evaluation: $out" ;; esac
expect_run 2 "--beta2 expects a number in [0, 0.999999], got '1.5'" "$C" train-gpt --beta2 1.5
expect_run 2 "unknown option '--bogus'" "$C" train-gpt --bogus 1
expect_run 2 "--bias must be yes or no, got 'maybe'" "$C" train-gpt --bias maybe
expect_run 2 "--gelu must be tanh or erf, got 'relu'" "$C" train-gpt --gelu relu
expect_run 2 "--decay-embeddings must be yes or no, got '1'" "$C" train-gpt --decay-embeddings 1
expect_run 1 "cannot resume from '$tmp/nowhere'" "$C" train-gpt --resume "$tmp/nowhere"
expect_run 2 "--batches must be random or epoch, got 'shuffle'" "$C" train-gpt --batches shuffle
expect_run 2 "--proj-init must be scaled or plain, got '0.02'" "$C" train-gpt --proj-init 0.02
# --device / --precision / --cuda-graph (issue 7): bad values, and CUDA where there is none (the GPU
# comparison itself is tests/cross_backend/gpt_cuda.sh, run on a GPU machine)
expect_run 1 "--device: invalid device string 'gpu'" "$C" train-gpt --device gpu
expect_run 2 "--precision must be fp32, tf32, bf16 or bf16-fp32act, got 'fp8'" "$C" train-gpt --precision fp8
expect_run 1 "--precision bf16 needs --device cuda" "$C" train-gpt --precision bf16
expect_run 1 "--cuda-graph needs --device cuda" "$C" train-gpt --cuda-graph
expect_run 1 "ctorch sample: --device: invalid device string 'cuda:x'" "$C" sample --model "$tmp" --device cuda:x
if ! command -v nvidia-smi >/dev/null 2>&1; then
  expect_run 1 "ctorch train-gpt: --device cuda: " "$C" train-gpt --device cuda
  expect_run 1 "ctorch sample: --device cuda:0: " "$C" sample --model "$tmp" --device cuda:0
fi

# 2. a tiny run: evaluation lines, the final one over 200 batches, outputs written
for i in $(seq 1 300); do echo "the quick brown fox number $i jumps over the lazy dog"; done > "$tmp/text.txt"
# warmup 100 > steps: the learning rate does not depend on --steps, so 3 + 3 steps equal 6
A=(--data "$tmp/text.txt" --tokenizer char --layers 1 --heads 2 --width 16 --context 16 --batch 4 --eval-every 3
   --eval-iters 2 --warmup 100 --lr 1e-2 --sample-tokens 0 --quiet --threads 1)
expect_run 0 "step 6 train loss" "$C" train-gpt "${A[@]}" --steps 6 --out "$tmp/straight"
straight=$out
for l in "step 0 train loss" "step 3 train loss" "done: 6 steps"; do
  case "$out" in *"$l"*) ok ;; *) bad "tiny run: no '$l' in: $out" ;; esac
done
for f in model.safetensors config.json checkpoint.safetensors log.json loss.svg; do
  [ -s "$tmp/straight/$f" ] && ok || bad "tiny run did not write $f"
done
grep -q '"beta2": 0.999,' "$tmp/straight/config.json" && ok || bad "config.json lacks beta2 0.999"
# by default no biases (nanoGPT's bias=False) and GPT-2's tanh GELU; erf and biases on request
grep -q '"bias": false' "$tmp/straight/config.json" && grep -q '"activation_function": "gelu_new"' "$tmp/straight/config.json" &&
  ok || bad "config.json lacks the default variant (bias false, gelu_new)"
case "$straight" in *"no biases, GELU tanh"*) ok ;; *) bad "default run does not say 'no biases, GELU tanh': $straight" ;; esac
expect_run 0 "no biases, GELU erf" "$C" train-gpt "${A[@]}" --steps 1 --gelu erf --out "$tmp/erf"
grep -q '"activation_function": "gelu"' "$tmp/erf/config.json" && ok || bad "--gelu erf run's config.json"
expect_run 0 "biases, GELU tanh" "$C" train-gpt "${A[@]}" --steps 1 --bias yes --gelu tanh --decay-embeddings no --out "$tmp/gpt2"
grep -q '"activation_function": "gelu_new"' "$tmp/gpt2/config.json" && ! grep -q '"bias": false' "$tmp/gpt2/config.json" &&
  grep -q '"decay_embeddings": false' "$tmp/gpt2/config.json" && ok || bad "--bias yes --gelu tanh run's config.json"

# 3. --resume: 3 steps, then 3 more from the checkpoint
expect_run 0 "step 3 train loss" "$C" train-gpt "${A[@]}" --steps 3 --out "$tmp/split"
expect_run 0 "resuming at step 3" "$C" train-gpt --resume "$tmp/split" --steps 6 --quiet --sample-tokens 0 --threads 1
want=$(echo "$straight" | grep '^step 6 ')
got=$(echo "$out" | grep '^step 6 ')
[ -n "$want" ] && [ "$want" = "$got" ] && ok || bad "resumed '$got' differs from uninterrupted '$want'"
for f in model.safetensors checkpoint.safetensors; do
  cmp -s "$tmp/straight/$f" "$tmp/split/$f" && ok || bad "resumed run's $f differs from the uninterrupted run's"
done

# --batches epoch: a short text (164 window starts) and 64 sequences a step cross two epoch boundaries
# in 6 steps; resumed at step 3 it must continue the same permutations (model and optimizer bytes equal)
head -c 200 "$tmp/text.txt" > "$tmp/short.txt"
E=(--data "$tmp/short.txt" --tokenizer char --layers 1 --heads 2 --width 16 --context 16 --batch 64 --eval-every 3
   --eval-iters 2 --warmup 100 --lr 1e-2 --sample-tokens 0 --quiet --threads 1 --batches epoch)
expect_run 0 "step 6 train loss" "$C" train-gpt "${E[@]}" --steps 6 --out "$tmp/ep_straight"
ep_straight=$(echo "$out" | grep '^step 6 ')
grep -q '"batches": "epoch"' "$tmp/ep_straight/config.json" && ok || bad "config.json lacks batches epoch"
expect_run 0 "step 3 train loss" "$C" train-gpt "${E[@]}" --steps 3 --out "$tmp/ep_split"
expect_run 0 "resuming at step 3" "$C" train-gpt --resume "$tmp/ep_split" --steps 6 --quiet --sample-tokens 0 --threads 1
[ -n "$ep_straight" ] && [ "$ep_straight" = "$(echo "$out" | grep '^step 6 ')" ] && ok ||
  bad "--batches epoch resumed '$(echo "$out" | grep '^step 6 ')' differs from uninterrupted '$ep_straight'"
for f in model.safetensors checkpoint.safetensors; do
  cmp -s "$tmp/ep_straight/$f" "$tmp/ep_split/$f" && ok || bad "--batches epoch: resumed $f differs"
done
expect_run 0 "step 6 train loss" "$C" train-gpt "${E[@]}" --steps 6 --batches random
[ "$(echo "$out" | grep '^step 6 ')" != "$ep_straight" ] && ok || bad "--batches epoch and random gave the same run"
# --proj-init plain: the same draws, the residual projections sqrt(2 layers) larger -> another loss at step 0
expect_run 0 "step 0 train loss" "$C" train-gpt "${E[@]}" --steps 0 --layers 2 --proj-init scaled
scaled0=$(echo "$out" | grep '^step 0 ')
expect_run 0 "step 0 train loss" "$C" train-gpt "${E[@]}" --steps 0 --layers 2 --proj-init plain
[ -n "$scaled0" ] && [ "$(echo "$out" | grep '^step 0 ')" != "$scaled0" ] && ok || bad "--proj-init plain: same step 0 as scaled"

# 4. `ctorch sample` on the tiny model: the same seed gives the same text, --explain prints one line per
# token with its probability, option errors, and Ctrl-C (SIGINT) stops a long generation with "[stopped]"
S=("$C" sample --model "$tmp/straight" --prompt "the " --max-tokens 12 --top-k 5 --top-p 0.9 --threads 1)
expect_run 0 "the " "${S[@]}" --seed 7
first=$out
expect_run 0 "the " "${S[@]}" --seed 7
[ "$out" = "$first" ] && [ ${#first} -gt 4 ] && ok || bad "sample: seed 7 twice gave '$first' and '$out'"
expect_run 0 "p=" "${S[@]}" --seed 7 --explain --explain-k 3 --max-tokens 4
[ "$(echo "$out" | grep -c ' p=[01]\.[0-9][0-9][0-9]  |')" = 4 ] && ok || bad "sample --explain: not 4 token lines: $out"
expect_run 2 "ctorch sample: --model DIR is required" "$C" sample --prompt x
expect_run 2 "ctorch sample: unknown option '--nope'" "$C" sample --model "$tmp/straight" --nope 1
expect_run 2 "--top-p" "$C" sample --model "$tmp/straight" --top-p 0
expect_run 2 "--max-tokens" "$C" sample --model "$tmp/straight" --max-tokens -1
expect_run 1 "ctorch sample: " "$C" sample --model "$tmp/no-such-dir"
timeout --preserve-status -s INT 3 "$C" sample --model "$tmp/straight" --max-tokens 1000000000 --threads 1 > /dev/null 2> "$tmp/int.err"
rc=$?
[ $rc = 130 ] && grep -q '^\[stopped\]' "$tmp/int.err" && ok || bad "sample after SIGINT: exit $rc, stderr '$(cat "$tmp/int.err")'"
echo "test_train_gpt: $pass passed, $fail failed"
[ $fail = 0 ]
