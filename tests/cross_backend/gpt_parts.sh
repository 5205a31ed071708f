#!/usr/bin/env bash
# Issue 7, the GPT-2 124M bf16 step split into parts, ctorch beside PyTorch in one device call.
#   tests/cross_backend/gpt_parts.sh BUILD [parts]   parts: any of t parity curve spike parts prof attn torchprof step (default: all but spike)
# t: the C tests of this work (test_ctorch filters in CT_TESTS); parity: test_parity --device cuda on
# BUILD/fixtures.bin (PARITY_FILTER); curve: the first 10 steps' losses of ctorch and PyTorch from the same
# weights and batch, fp32 (relative difference gate 1e-3), bf16 and bf16o against PyTorch's bf16 (2e-2); parts: phases timed with the device
# synchronised between them (forward, backward, clipping, AdamW); prof: ctorch's per-op profile of the
# whole step and of the forward alone (CT_CUDA_OP_PROFILE=1; the backward's share is the difference);
# spike: the bf16o curve with logsumexp over a float32 copy of the logits (CT_AUTOCAST_LSE_DIRECT=0);
# attn: causal attention [16, 12, 1024, 64] alone on both; torchprof: torch.profiler's kernel table of
# PyTorch's autocast step and its synchronised phases; step: the bf16 and tf32 steps of both.
# BUILD holds the stripped bench_cuda_gpt (and test_ctorch for t), carried.
set -u
B=${1:?usage: tests/cross_backend/gpt_parts.sh BUILD [parts]}
shift
P=${*:-t parity curve parts prof attn torchprof step}
O=${OUT:-/tmp/gpt_parts}
mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 1
has() { case " $P " in *" $1 "*) return 0 ;; esac; return 1; }
G="12 12 768 1024 16 50257"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
if has t; then
  for f in ${CT_TESTS:-cuda_flash_attention cuda_fast_logsumexp cuda_autocast cuda_gpt_training_step cuda_fast_cast cuda_clip cuda_cross_entropy cuda_fast_fill}; do
    timeout 150 "$B/test_ctorch" "$f" >"$O/t_$f.log" 2>&1
    echo "test_ctorch $f: exit $?"; grep -E "FAIL|passed|fail" "$O/t_$f.log" | head -12
  done
fi
if has parity; then
  timeout 280 "$B/test_parity" -f "$B/fixtures.bin" --device cuda ${PARITY_FILTER:+"$PARITY_FILTER"} >"$O/parity_cuda.log" 2>&1
  echo "parity --device cuda: exit $?"; tail -3 "$O/parity_cuda.log" | cut -c1-600
  grep "^FAIL" "$O/parity_cuda.log" | head -20
fi
if has curve; then
  timeout 200 "$B/bench_cuda_gpt" curve /tmp/gpt_curve.safetensors 10 >"$O/curve.log" 2>&1
  timeout 200 python3 bench/bench_cuda_gpt_torch.py curve /tmp/gpt_curve.safetensors 10 >>"$O/curve.log" 2>&1
  # per step: |ctorch - torch| / torch for each precision; for bf16 also PyTorch's own bf16-vs-fp32 spread
  # (the bf16 noise yardstick: ctorch's bf16 loss should differ from PyTorch's by no more than that)
  grep "^curve" "$O/curve.log" | awk '
    { v[$2 " " $3 " " $5] = $7; if ($5 + 1 > n) n = $5 + 1 }
    function rel(a, b) { return (a > b ? a - b : b - a) / b }
    END {
      for (s = 0; s < n; s++) {
        f = rel(v["ctorch fp32 " s], v["torch fp32 " s]); b = rel(v["ctorch bf16 " s], v["torch bf16 " s]);
        y = rel(v["torch bf16 " s], v["torch fp32 " s]);
        printf "  step %d fp32 ctorch %.4f torch %.4f (%.1e) | bf16 ctorch %.4f torch %.4f (%.1e; torch bf16 vs fp32 %.1e)\n",
          s, v["ctorch fp32 " s], v["torch fp32 " s], f, v["ctorch bf16 " s], v["torch bf16 " s], b, y
        if (f > mf) mf = f; if (b > mb) mb = b; if (b > y && b > 1e-3) over++
        if (("ctorch bf16o " s) in v) {
          o = rel(v["ctorch bf16o " s], v["torch bf16 " s]); no++
          printf "  step %d bf16o ctorch %.4f torch bf16 %.4f (%.1e)\n", s, v["ctorch bf16o " s], v["torch bf16 " s], o
          if (o > mo) mo = o; if (o > y && o > 1e-3) overo++
        }
      }
      printf "curve fp32: %d steps, max relative difference %.2e (gate 1e-03) %s\n", n, mf, (n >= 10 && mf <= 1e-3) ? "PASS" : "FAIL"
      printf "curve bf16: %d steps, max relative difference %.2e (gate 2e-02) %s; steps beyond PyTorch'"'"'s own bf16-vs-fp32 spread: %d\n",
        n, mb, (n >= 10 && mb <= 2e-2) ? "PASS" : "FAIL", over
      if (no) printf "curve bf16o (PyTorch-style autocast) vs torch bf16: %d steps, max relative difference %.2e (gate 2e-02) %s; steps beyond PyTorch'"'"'s own bf16-vs-fp32 spread: %d\n",
        no, mo, (no >= 10 && mo <= 2e-2) ? "PASS" : "FAIL", overo
    }'
fi
if has spike; then
  # the bf16o loss spikes (steps 3 and 8) with logsumexp over a float32 copy of the logits instead of the
  # bfloat16 logits read directly: a precision fault in the direct path would move only its curve
  CT_AUTOCAST_LSE_DIRECT=0 CURVE_PRECS=bf16o timeout 60 "$B/bench_cuda_gpt" curve /tmp/gpt_curve2.safetensors 10 2>&1 |
    grep "^curve" | sed 's/^curve ctorch/curve lse-copy ctorch/' | tee "$O/spike.log"
fi
has parts && timeout 120 "$B/bench_cuda_gpt" $G 4 bf16+parts tf32+parts 2>&1 | tee "$O/parts_ctorch.log"
if has prof; then
  # PROF_PREC: the step's precision (bf16o: PyTorch-style autocast); PROF_MODE=2 adds the split by dtype
  CT_CUDA_OP_PROFILE=${PROF_MODE:-1} timeout 120 "$B/bench_cuda_gpt" $G 2 ${PROF_PREC:-bf16} >"$O/prof_step.log" 2>&1
  echo "== ctorch per-op, whole step (4 steps)"; grep -A76 CT_CUDA_OP_PROFILE "$O/prof_step.log"
  if [ "${PROF_FWD:-1}" != 0 ]; then
    CT_CUDA_OP_PROFILE=${PROF_MODE:-1} timeout 120 "$B/bench_cuda_gpt" $G 2 ${PROF_PREC:-bf16}+fwd >"$O/prof_fwd.log" 2>&1
    echo "== ctorch per-op, forward alone (4 forwards)"; grep -A76 CT_CUDA_OP_PROFILE "$O/prof_fwd.log"
  fi
fi
if has attn; then
  timeout 150 "$B/bench_cuda_gpt" attn 2>&1 | tee "$O/attn.log"
  CT_CUDA_FA_MMA=0 timeout 150 "$B/bench_cuda_gpt" attn 2>&1 | sed 's/^attn ctorch/attn wmma  /' | tee -a "$O/attn.log"
  timeout 100 python3 bench/bench_cuda_gpt_torch.py attn 2>&1 | tee -a "$O/attn.log"
fi
if has torchprof; then
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/bench_cuda_gpt_torch.py profile >"$O/prof_torch.log" 2>&1
  grep "parts" "$O/prof_torch.log"
fi
if has step; then
  # bf16o: PyTorch-style autocast (bfloat16 products' outputs, ct_cuda_set_autocast_bf16_outputs)
  timeout 120 "$B/bench_cuda_gpt" $G 10 ${STEP_PREC:-bf16 bf16o tf32} 2>&1 | tee "$O/step.log"
  timeout 120 python3 bench/bench_cuda_gpt_torch.py $G 10 bf16 tf32 2>&1 | tee -a "$O/step.log"
fi
