/* The WebGPU attention and the measured kernel variants (issue 9, items 4-5), in one run on
 * the adapter at hand:
 * (1) scaled_dot_product_attention forward + backward, causal, float32: the WGSL
 *     FlashAttention kernels (src/backend/webgpu/webgpu_attention.c) against the composed
 *     path on the same backend (Q K^T materialised, softmax, matmuls: what WebGPU ran
 *     before), interleaved repeats, medians; the outputs of the two compared first;
 * (2) the GEMM tiles: each candidate forced (CT_WEBGPU_GEMM) and the tuner's choice (from
 *     a fresh cache file: measured once, then reused), medians, so the choice can be seen
 *     to be the fastest candidate.
 * Times: host clock around the work and ct_webgpu_synchronize(), medians of repeats.
 * Build: cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -o BUILD/bench_webgpu_attn
 *          bench/bench_webgpu_attn.c BUILD/libctorch.a -lm -lpthread -ldl (+ cudart if built in)
 * Usage: bench_webgpu_attn [--small] [--reps N]
 *   default: the GPT step's attention (batch 8, 4 heads, context 256, head dim 64), mm 1024;
 *   --small: for SwiftShader (batch 1, 4 heads, context 128, head dim 64; mm 512). */
#include "ctorch.h"
#include "ctorch/webgpu.h"
#include "backend/cpu/kernels_attention.h"    /* ct_sdpa_fused_set_enabled */
#include "backend/webgpu/webgpu_attention.h"  /* ct_webgpu_sdpa_calls */
#include "backend/webgpu/webgpu_tune.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench_clock.h"

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmpd);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* forward + backward once; returns seconds, or -1 */
static double attn_once(ct_tensor *q, ct_tensor *k, ct_tensor *v, ct_tensor *w, bool fused) {
  ct_sdpa_fused_set_enabled(fused);
  ct_scope *sc = ct_scope_begin();
  ct_webgpu_synchronize();
  double t0 = now();
  ct_tensor *o = ct_scaled_dot_product_attention(q, k, v, NULL, 0, true, NULL, NULL);
  ct_status st = o ? ct_backward(ct_sum(ct_mul(o, w)), NULL, false, false) : CT_ERR(CT_ERR_RUNTIME, "sdpa failed");
  if (st == CT_OK) st = ct_webgpu_synchronize();
  double dt = now() - t0;
  ct_scope_end(sc);
  ct_set_grad(q, NULL), ct_set_grad(k, NULL), ct_set_grad(v, NULL);
  ct_sdpa_fused_set_enabled(true);
  if (st != CT_OK) {
    fprintf(stderr, "attention failed: %s\n", ct_last_error());
    return -1;
  }
  return dt;
}

static double mm_once(ct_tensor *a, ct_tensor *b) {
  ct_webgpu_synchronize();
  double t0 = now();
  ct_tensor *c = ct_matmul(a, b);
  ct_webgpu_synchronize();
  double dt = now() - t0;
  ct_release(c);
  return dt;
}

int main(int argc, char **argv) {
  bool small = false;
  int reps = 5;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--small")) small = true;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
  }
  if (reps < 1 || reps > 100) reps = 5;
  if (!ct_webgpu_is_available()) {
    printf("bench_webgpu_attn: no WebGPU: %s\n", ct_webgpu_unavailable_reason());
    return 0;
  }
  printf("bench_webgpu_attn: adapter %s\n", ct_webgpu_adapter_name());
  /* (1) attention */
  int64_t B = small ? 1 : 8, H = 4, T = small ? 128 : 256, E = 64;
  ct_generator *g = ct_generator_new(11);
  ct_options o = ct_opts_dtype(CT_FLOAT32);
  int64_t sh[4] = {B, H, T, E};
  ct_tensor *qc = ct_randn(4, sh, o, g), *kc = ct_randn(4, sh, o, g), *vc = ct_randn(4, sh, o, g);
  ct_tensor *wc = ct_randn(4, sh, o, g);
  ct_tensor *q = ct_to_device(qc, ct_webgpu()), *k = ct_to_device(kc, ct_webgpu()), *v = ct_to_device(vc, ct_webgpu());
  ct_tensor *w = ct_to_device(wc, ct_webgpu());
  ct_requires_grad_(q, true), ct_requires_grad_(k, true), ct_requires_grad_(v, true);
  /* the two paths agree */
  ct_sdpa_fused_set_enabled(false);
  ct_tensor *oc = ct_scaled_dot_product_attention(q, k, v, NULL, 0, true, NULL, NULL);
  ct_sdpa_fused_set_enabled(true);
  int64_t f0 = ct_webgpu_sdpa_calls(false);
  ct_tensor *of = ct_scaled_dot_product_attention(q, k, v, NULL, 0, true, NULL, NULL);
  bool used = ct_webgpu_sdpa_calls(false) == f0 + 1;
  ct_tensor *d = (oc && of) ? ct_amax(ct_abs(ct_sub(oc, of)), 0, NULL, false) : NULL;
  double dmax = NAN;
  if (d && ct_item_double(d, &dmax) != CT_OK) dmax = NAN;
  printf("attention B%lld H%lld T%lld E%lld causal: WGSL kernel %s; max |fused - composed| = %.3g\n", (long long)B,
         (long long)H, (long long)T, (long long)E, used ? "taken" : "NOT taken", dmax);
  double tf[100], tc[100];
  attn_once(q, k, v, w, true), attn_once(q, k, v, w, false); /* warm-up: compiles */
  for (int r = 0; r < reps; r++) { /* interleaved: load changes hit both alike */
    tf[r] = attn_once(q, k, v, w, true);
    tc[r] = attn_once(q, k, v, w, false);
  }
  double mf = median(tf, reps), mc = median(tc, reps);
  printf("attention fwd+bwd: WGSL flash %.2f ms, composed %.2f ms, ratio composed/flash %.2fx (medians of %d)\n",
         mf * 1e3, mc * 1e3, mc / mf, reps);
  /* (2) GEMM tiles */
  int64_t n = small ? 512 : 1024; /* at least the tuner's threshold (2^25 multiply-adds) */
  int64_t ms[2] = {n, n};
  ct_tensor *a = ct_to_device(ct_randn(2, ms, o, g), ct_webgpu()), *b = ct_to_device(ct_randn(2, ms, o, g), ct_webgpu());
  char path[256];
  snprintf(path, sizeof path, "/tmp/ct_bench_tune_%ld.txt", (long)getpid());
  remove(path);
  setenv("CT_WEBGPU_TUNE_FILE", path, 1);
  ct_webgpu_tune_forget();
  static const char *tiles[3] = {"8x8x8", "4x4x16", "8x4x8"};
  double tt[4][100];
  int64_t t0 = ct_webgpu_tune_timings();
  unsetenv("CT_WEBGPU_GEMM");
  mm_once(a, b); /* the tuner measures here, once */
  int64_t timed = ct_webgpu_tune_timings() - t0;
  for (int i = 0; i < 3; i++) setenv("CT_WEBGPU_GEMM", tiles[i], 1), mm_once(a, b); /* compile */
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < 4; i++) {
      if (i < 3) setenv("CT_WEBGPU_GEMM", tiles[i], 1);
      else unsetenv("CT_WEBGPU_GEMM");
      tt[i][r] = mm_once(a, b);
    }
  unsetenv("CT_WEBGPU_GEMM");
  double fl = 2.0 * (double)n * n * n;
  printf("matmul %lld^3 (the tuner timed %lld runs once, then none):", (long long)n, (long long)timed);
  for (int i = 0; i < 4; i++) {
    double m = median(tt[i], reps);
    printf(" %s %.3f ms (%.1f GFLOP/s)%s", i < 3 ? tiles[i] : "tuned", m * 1e3, fl / m * 1e-9, i < 3 ? "," : "\n");
  }
  remove(path);
  ct_webgpu_tune_forget();
  return 0;
}
