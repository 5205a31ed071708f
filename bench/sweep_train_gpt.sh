#!/usr/bin/env bash
# Hyper-parameter sweep of the Tiny Shakespeare char-level recipe (issue 6's val-loss target).
# Each line of the job file is "NAME SEED [extra train-gpt options...]"; the recipe's fixed options
# (layers/heads/width/context/batch/steps/lr/dropout) are added here, every run at 1 thread with the
# program's own final evaluation (200 val batches of 12 x 64 = 153,600 tokens, unchanged).
# Runs JOBS (default 2) at once; logs go to OUTDIR/NAME_sSEED.log; a finished log is not re-run.
# usage: bench/sweep_train_gpt.sh BUILD_DIR JOBFILE OUTDIR [JOBS]
#        bench/sweep_train_gpt.sh --table OUTDIR   (config, seeds, val losses, mean +- sd)
set -u
if [ "${1:-}" = "--table" ]; then
  for f in "$2"/*.log; do
    n=$(basename "$f" .log)
    v=$(sed -n 's/.*val loss \([0-9.]*\)$/\1/p' "$f" | tail -1)
    [ -n "$v" ] && echo "${n%_s*} ${n##*_s} $v"
  done | sort -k1,1 -k2,2n | awk '
    { k = $1; if (!(k in cnt)) order[++no] = k; cnt[k]++; s[k] += $3; ss[k] += $3 * $3; l[k] = l[k] " s" $2 "=" $3 }
    END { printf "| config | n | val losses | mean | sd |\n|---|---:|---|---:|---:|\n";
          for (i = 1; i <= no; i++) { k = order[i]; m = s[k] / cnt[k]; v = cnt[k] > 1 ? (ss[k] - cnt[k] * m * m) / (cnt[k] - 1) : 0;
            printf "| %s | %d |%s | %.4f | %.4f |\n", k, cnt[k], l[k], m, (v > 0 ? sqrt(v) : 0) } }'
  exit 0
fi
B=$1 JOBFILE=$2 OUT=$3 JOBS=${4:-2}
DATA=${DATA:-../shared/data/tinyshakespeare.txt}
mkdir -p "$OUT"
export B OUT DATA
grep -v '^\s*\(#\|$\)' "$JOBFILE" | xargs -P "$JOBS" -L 1 bash -c '
  name=$0 seed=$1; shift 1
  log="$OUT/${name}_s${seed}.log"
  grep -q "^done:" "$log" 2>/dev/null && exit 0
  "$B/ctorch" train-gpt --data "$DATA" --tokenizer char --layers 4 --heads 4 --width 128 --context 64 \
    --batch 12 --steps 2000 --lr 1e-3 --dropout 0 --threads 1 --quiet --sample-tokens 0 --eval-every 2000 \
    --seed "$seed" "$@" > "$log.tmp" 2>&1 && mv "$log.tmp" "$log"
  echo "$(date -u +%H:%M:%S) $name s$seed: $(grep "^step " "$log" 2>/dev/null | tail -1)"'
