/* The WebGPU backend's FlashAttention (src/backend/webgpu/webgpu_attention.c) against the
 * CPU, values and gradients, and the kernel variants chosen by measurement with their cache
 * (src/backend/webgpu/webgpu_tune.c); subgroup detection is reported.
 * Every test is skipped, with one printed line giving the count and the reason, where Dawn
 * or a Vulkan adapter is missing. Sizes stay small (SwiftShader emulates the GPU on the CPU).
 * Tolerances: float32 on both sides, but the GPU sums its dot products and the online
 * softmax in another order (tiles of keys, rescaling) than the CPU: values rel 1e-5 with
 * abs 2e-6, gradients (sums of L or S products of such terms) rel 1e-4 with abs 2e-5. */
#include "webgpu_test.h"
#include "backend/webgpu/webgpu_attention.h"
#include "backend/webgpu/webgpu_backend.h"
#include "backend/webgpu/webgpu_tune.h"
#include "backend/cpu/kernels_attention.h"
#include "ops/op_table.h"
#include "ctorch/webgpu.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

WEBGPU_TESTS("test_webgpu_attn", "WebGPU attention/tuning test(s)")
#define WA_TEST(name) WEBGPU_TEST(webgpu_attn, name)

static ct_generator *gen(void) {
  static ct_generator *g;
  if (!g) g = ct_generator_new(977);
  return g;
}
static ct_tensor *rnd(int nd, const int64_t *shape) { return ct_randn(nd, shape, ct_opts_dtype(CT_FLOAT32), gen()); }

/* One case: q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev] built from [B, L, H, E] tensors
 * transposed (the models' layout: last dim contiguous, the others strided) when `tr`, or
 * from a [.., E, L] tensor transposed (last dim strided: the entry point copies it). */
static void attn_case(int64_t B, int64_t H, int64_t L, int64_t S, int64_t E, int64_t Ev, bool causal, int layout) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *x[3];
  int64_t rows[3] = {L, S, S}, cols[3] = {E, E, Ev};
  for (int i = 0; i < 3; i++) {
    if (layout == 0) x[i] = rnd(4, (const int64_t[]){B, H, rows[i], cols[i]});
    else if (layout == 1) x[i] = ct_transpose(rnd(4, (const int64_t[]){B, rows[i], H, cols[i]}), 1, 2);
    else x[i] = ct_transpose(rnd(4, (const int64_t[]){B, H, cols[i], rows[i]}), 2, 3);
  }
  ct_tensor *cq = ct_detach(x[0]), *ck = ct_detach(x[1]), *cv = ct_detach(x[2]);
  ct_tensor *gq = W(x[0]), *gk = W(x[1]), *gv = W(x[2]);
  ct_tensor *leaf[6] = {cq, ck, cv, gq, gk, gv};
  for (int i = 0; i < 6; i++) CHECK_OK(ct_requires_grad_(leaf[i], true));
  int64_t f0 = ct_webgpu_sdpa_calls(false), b0 = ct_webgpu_sdpa_calls(true);
  ct_tensor *ro = ct_scaled_dot_product_attention(cq, ck, cv, NULL, 0, causal, NULL, NULL);
  ct_tensor *go = ct_scaled_dot_product_attention(gq, gk, gv, NULL, 0, causal, NULL, NULL);
  char what[160];
  snprintf(what, sizeof what, "sdpa B%lld H%lld L%lld S%lld E%lld Ev%lld causal %d layout %d", (long long)B,
           (long long)H, (long long)L, (long long)S, (long long)E, (long long)Ev, causal, layout);
  SAME(what, ro, go, 1e-5, 2e-6);
  CHECK(ct_webgpu_sdpa_calls(false) == f0 + 1); /* the WGSL kernel ran, not the composed path */
  ct_tensor *w = rnd(4, (const int64_t[]){B, H, L, Ev});
  CHECK_OK(ct_backward(ct_sum(ct_mul(ro, w)), NULL, false, false));
  CHECK_OK(ct_backward(ct_sum(ct_mul(go, W(w))), NULL, false, false));
  CHECK(ct_webgpu_sdpa_calls(true) == b0 + 1);
  const char *nm[3] = {"dq", "dk", "dv"};
  for (int i = 0; i < 3; i++) {
    char w2[200];
    snprintf(w2, sizeof w2, "%s %s", what, nm[i]);
    SAME(w2, ct_grad(leaf[i]), ct_grad(leaf[3 + i]), 1e-4, 2e-5);
  }
  ct_scope_end(sc);
}

WA_TEST(values_and_grads) {
  /* three head-dim/causal combinations (each compiles 4 pipelines, slow on SwiftShader) */
  attn_case(2, 2, 37, 37, 32, 32, true, 1);  /* GPT-like: causal, heads strided, T not a tile multiple */
  attn_case(1, 2, 70, 70, 64, 64, false, 0); /* head dim 64, two query tiles */
  attn_case(1, 3, 9, 23, 32, 16, true, 2);   /* causal with L < S (top-left: query i sees keys <= i),
                                                Ev != E, the last dim strided (copied by the entry point) */
  attn_case(1, 1, 1, 1, 32, 32, true, 1);    /* a single element */
}

/* Broadcast batch dims (k, v shared by every head: stride 0) and the composed fallbacks. */
WA_TEST(broadcast_and_fallbacks) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *q = rnd(4, (const int64_t[]){2, 3, 17, 32}), *k = rnd(4, (const int64_t[]){2, 1, 19, 32});
  ct_tensor *v = rnd(4, (const int64_t[]){2, 1, 19, 32});
  int64_t f0 = ct_webgpu_sdpa_calls(false);
  ct_tensor *r = ct_scaled_dot_product_attention(q, k, v, NULL, 0, true, NULL, NULL);
  ct_tensor *g = ct_scaled_dot_product_attention(W(q), W(k), W(v), NULL, 0, true, NULL, NULL);
  SAME("sdpa broadcast k/v", r, g, 1e-5, 2e-6);
  CHECK(ct_webgpu_sdpa_calls(false) == f0 + 1);
  /* q, k, v views of one buffer at different offsets (a fused qkv projection): one binding */
  ct_tensor *qkv = rnd(4, (const int64_t[]){3, 2, 37, 32}), *gqkv = W(qkv);
  r = ct_scaled_dot_product_attention(ct_select(qkv, 0, 0), ct_select(qkv, 0, 1), ct_select(qkv, 0, 2), NULL, 0, true,
                                      NULL, NULL);
  g = ct_scaled_dot_product_attention(ct_select(gqkv, 0, 0), ct_select(gqkv, 0, 1), ct_select(gqkv, 0, 2), NULL, 0,
                                      true, NULL, NULL);
  SAME("sdpa q/k/v sharing a buffer", r, g, 1e-5, 2e-6);
  CHECK(ct_webgpu_sdpa_calls(false) == f0 + 2);
  f0 += 1;
  /* a mask: the composed path (the WGSL kernels take none), same values */
  ct_tensor *m = ct_gt_scalar(rnd(2, (const int64_t[]){17, 19}), ct_sf(-0.5));
  r = ct_scaled_dot_product_attention(q, k, v, m, 0, false, NULL, NULL);
  g = ct_scaled_dot_product_attention(W(q), W(k), W(v), W(m), 0, false, NULL, NULL);
  SAME("sdpa bool mask (composed)", r, g, 1e-5, 2e-6);
  CHECK(ct_webgpu_sdpa_calls(false) == f0 + 1);
  /* dropout: composed (its mask comes from the generator); p = 1 drops everything */
  g = ct_scaled_dot_product_attention(W(q), W(k), W(v), NULL, 1.0, false, NULL, gen());
  CHECK(g != NULL);
  CHECK(ct_webgpu_sdpa_calls(false) == f0 + 1);
  /* head dim past the kernels' 128: composed */
  ct_tensor *q2 = rnd(3, (const int64_t[]){1, 4, 130}), *k2 = rnd(3, (const int64_t[]){1, 5, 130});
  r = ct_scaled_dot_product_attention(q2, k2, k2, NULL, 0, true, NULL, NULL);
  g = ct_scaled_dot_product_attention(W(q2), W(k2), W(k2), NULL, 0, true, NULL, NULL);
  SAME("sdpa E=130 (composed)", r, g, 1e-5, 2e-6);
  CHECK(ct_webgpu_sdpa_calls(false) == f0 + 1);
  /* the op called directly with what it cannot take: a clear error, no crash */
  ct_call c = ct_call_make(CT_OP_sdpa_flash);
  ct_tensor *wq = W(q2);
  c.in[0] = c.in[1] = c.in[2] = wq;
  c.n_in = 3;
  c.out[0] = W(q2), c.out[1] = W(q2);
  c.n_out = 2;
  CHECK_ERR(ct_webgpu_sdpa_flash(&c), "Head dims must be 1..128");
  ct_clear_error();
  ct_scope_end(sc);
}

/* ---- kernel variants chosen by measurement ---- */
static char tune_file[256];
static void tune_setup(void) {
  snprintf(tune_file, sizeof tune_file, "/tmp/ct_wattn_tune_%ld.txt", (long)getpid());
  remove(tune_file);
  setenv("CT_WEBGPU_TUNE_FILE", tune_file, 1);
  /* the product below (K = 512, 16 output tiles) would be split-K since session 9, which tunes
   * the split's batched class instead; this test is about the cache, so one unsplit product */
  setenv("CT_WEBGPU_SPLITK", "0", 1);
  ct_webgpu_tune_forget();
}
static void tune_teardown(void) {
  remove(tune_file);
  unsetenv("CT_WEBGPU_TUNE_FILE");
  unsetenv("CT_WEBGPU_SPLITK");
  ct_webgpu_tune_forget();
}

/* One big-enough product and one attention: the first "run" measures and writes the file;
 * a second (decisions forgotten, read back from the file as a new process would) times
 * nothing and picks the same variants; a corrupt file is ignored (a warning) and rewritten. */
WA_TEST(tuning_cache) {
  ct_scope *sc = ct_scope_begin();
  tune_setup();
  const char *gemm_cls = "B0.M8.N8.K9.a1.b1", *attn_cls = "E64.Ev64.c0.L7.S7.BH2";
  ct_tensor *a = W(rnd(2, (const int64_t[]){256, 512})), *b = W(rnd(2, (const int64_t[]){512, 256}));
  ct_tensor *q = W(rnd(4, (const int64_t[]){1, 4, 128, 64})), *k = W(rnd(4, (const int64_t[]){1, 4, 128, 64}));
  ct_tensor *v = W(rnd(4, (const int64_t[]){1, 4, 128, 64}));
  ct_tensor *ref = ct_matmul(ct_to_device(a, ct_cpu()), ct_to_device(b, ct_cpu()));
  /* first run: both kinds measured (2 timed runs per candidate: 3 GEMM tiles, 2 attention tiles) */
  int64_t t0 = ct_webgpu_tune_timings();
  ct_tensor *p1 = ct_matmul(a, b);
  ct_tensor *o1 = ct_scaled_dot_product_attention(q, k, v, NULL, 0, false, NULL, NULL);
  CHECK_OK(ct_webgpu_synchronize());
  int64_t t1 = ct_webgpu_tune_timings();
  CHECK(t1 - t0 == 3 * 2 + 2 * 2);
  SAME("tuned matmul", ref, p1, 1e-5, 1e-4);
  int vg = ct_webgpu_tune_lookup("gemm", gemm_cls), va = ct_webgpu_tune_lookup("attn", attn_cls);
  printf("test_webgpu_attn: %s: gemm variant %d, attention variant %d, %lld timed runs, cache %s\n",
         ct_webgpu_adapter_name(), vg, va, (long long)(t1 - t0), ct_webgpu_tune_path());
  CHECK(vg >= 0 && vg < 3);
  CHECK(va >= 0 && va < 2);
  FILE *f = fopen(tune_file, "r");
  CHECK(f != NULL);
  if (f) fclose(f);
  /* second run: from the file, nothing timed, the same choices, the same results */
  ct_webgpu_tune_forget();
  ct_tensor *p2 = ct_matmul(a, b);
  ct_tensor *o2 = ct_scaled_dot_product_attention(q, k, v, NULL, 0, false, NULL, NULL);
  CHECK_OK(ct_webgpu_synchronize());
  CHECK(ct_webgpu_tune_timings() == t1);
  CHECK(ct_webgpu_tune_lookup("gemm", gemm_cls) == vg);
  CHECK(ct_webgpu_tune_lookup("attn", attn_cls) == va);
  SAME("matmul from the cache", p1, p2, 0, 0);
  SAME("attention from the cache", o1, o2, 0, 0);
  /* a corrupt file: ignored with a warning, measured again, rewritten; never a crash */
  f = fopen(tune_file, "w");
  CHECK(f != NULL);
  if (f) {
    fputs("ctorch-webgpu-tune 1\nnot\ta decision\n\x01\x02garbage", f);
    fclose(f);
  }
  ct_webgpu_tune_forget();
  ct_tensor *p3 = ct_matmul(a, b);
  CHECK_OK(ct_webgpu_synchronize());
  CHECK(ct_webgpu_tune_timings() == t1 + 3 * 2);
  SAME("matmul after a corrupt cache", ref, p3, 1e-5, 1e-4);
  ct_webgpu_tune_forget();
  CHECK(ct_webgpu_tune_lookup("gemm", gemm_cls) >= 0); /* the rewritten file parses */
  /* a file of another format (header): ignored too */
  f = fopen(tune_file, "w");
  if (f) {
    fputs("{\"json\": true}\n", f);
    fclose(f);
  }
  ct_webgpu_tune_forget();
  CHECK(ct_webgpu_tune_lookup("gemm", gemm_cls) == -1);
  tune_teardown();
  ct_scope_end(sc);
}

/* Subgroups: what the adapter offers (reported; the kernels keep their workgroup-memory path). */
WA_TEST(subgroups_reported) {
  int feat;
  uint32_t lo, hi;
  wg_subgroup_info(&feat, &lo, &hi);
  printf("test_webgpu_attn: %s: subgroups feature %s, subgroup sizes %u..%u\n", ct_webgpu_adapter_name(),
         feat ? "offered" : "not offered", lo, hi);
  CHECK(feat == 0 || feat == 1);
  CHECK(lo <= hi);
}
