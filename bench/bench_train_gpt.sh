#!/usr/bin/env bash
# Wall-clock of the Tiny Shakespeare char-level recipe (issue 6): `ctorch train-gpt` against
# bench/train_gpt_ref.py (PyTorch, the same model, batches and evaluations), at each thread count,
# the two runs back to back in this one script so that both see the same machine state.
# Prints each run's wall / user / system seconds and the "tokens/s in training steps" of its
# `done:` line, and the ratios PyTorch / ctorch (> 1: ctorch faster). Both runs print the same
# `step N train loss X val loss Y` lines; the script checks that the final ones agree.
# usage: bench/bench_train_gpt.sh BUILD_DIR [STEPS (default 2000: the whole recipe)] [THREADS... (default 1 2)]
set -u
B=${1:-build}
STEPS=${2:-2000}
shift 2 2>/dev/null || shift $#
THREADS=("$@")
[ ${#THREADS[@]} -gt 0 ] || THREADS=(1 2)
DATA=${DATA:-../shared/data/tinyshakespeare.txt}
PY=${PY:-/usr/bin/python3}
R=(--data "$DATA" --tokenizer char --layers 4 --heads 4 --width 128 --context 64 --batch 12 --steps "$STEPS"
   --lr 1e-3 --dropout 0)
[ -f "$DATA" ] || { echo "bench_train_gpt: no $DATA (skipped)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "bench_train_gpt: $(date -u +%H:%M:%S) UTC, $STEPS steps, load: $(cut -d' ' -f1-3 /proc/loadavg)"
run() { # name threads cmd...
  local name=$1 t=$2
  shift 2
  /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$@" > "$tmp/out" 2>&1
  local rc=$?
  read -r wall user sys < "$tmp/time"
  local tps final
  tps=$(sed -n 's/.* \([0-9]*\) tokens\/s in training steps.*/\1/p' "$tmp/out")
  final=$(grep '^step ' "$tmp/out" | tail -1)
  printf "%-8s threads %s: wall %7.1f s  user %7.1f s  sys %5.1f s  %6s tokens/s in steps  [%s]%s\n" "$name" "$t" \
    "$wall" "$user" "$sys" "$tps" "$final" "$([ $rc = 0 ] || echo " exit $rc")"
  eval "${name}_wall=$wall ${name}_tps=${tps:-0}"
  eval "${name}_final=\"$final\""
}
for t in "${THREADS[@]}"; do
  run ctorch "$t" "$B/ctorch" train-gpt "${R[@]}" --threads "$t" --quiet --sample-tokens 0
  run pytorch "$t" "$PY" bench/train_gpt_ref.py "${R[@]}" --threads "$t"
  awk -v a="$pytorch_wall" -v b="$ctorch_wall" -v c="$pytorch_tps" -v d="$ctorch_tps" -v t="$t" \
    'BEGIN { printf "ratio PyTorch / ctorch at %s threads: wall %.2fx, training steps %.2fx\n", t, a / b, (c > 0 ? d / c : 0) }'
  [ "$ctorch_final" = "$pytorch_final" ] && echo "final evaluation identical: $ctorch_final" ||
    echo "final evaluations differ: ctorch [$ctorch_final] PyTorch [$pytorch_final]"
done
echo "bench_train_gpt: done $(date -u +%H:%M:%S) UTC, load: $(cut -d' ' -f1-3 /proc/loadavg)"
