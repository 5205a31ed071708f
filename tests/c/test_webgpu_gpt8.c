/* The WebGPU kernels of the byte-level GPT step (issue 9, session 8) against the CPU: the
 * fused cross-entropy forward/backward (checked and graph-safe unchecked forms), the
 * embedding backward with ids staged in workgroup memory, NaN/inf rows through the WGSL
 * FlashAttention forward and backward, and the subgroup / no-subgroup reductions.
 * Every test is skipped, with one printed line giving the count and the reason, where Dawn
 * or a Vulkan adapter is missing. Sizes stay small (SwiftShader emulates the GPU).
 * Tolerances: float32 on both sides, summed in another order (workgroup trees vs the CPU's
 * loops, the CPU's cross-entropy in float64): losses rel 1e-5, gradients rel 1e-5 with abs
 * 1e-7 (softmax - onehot of O(1/N) terms), embedding gradients rel 1e-5 abs 1e-6 (the same
 * position order on both sides; the CPU may vectorise the adds). */
#include "webgpu_test.h"
#include "backend/webgpu/webgpu_attention.h"
#include "backend/webgpu/webgpu_backend.h"
#include "ctorch/train.h"
#include "ctorch/webgpu.h"
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

WEBGPU_TESTS("test_webgpu_gpt8", "WebGPU GPT-kernel test(s)")
#define WE_TEST(name) WEBGPU_TEST(webgpu_gpt8, name)

static ct_generator *gen(void) {
  static ct_generator *g;
  if (!g) g = ct_generator_new(4242);
  return g;
}
static ct_tensor *rnd(int nd, const int64_t *shape) { return ct_randn(nd, shape, ct_opts_dtype(CT_FLOAT32), gen()); }
static ct_tensor *leaf(ct_tensor *t) {
  ct_tensor *d = ct_detach(t);
  CHECK_OK(ct_requires_grad_(d, true));
  return d;
}
static ct_tensor *i64(int64_t n, const int64_t *v) {
  return ct_from_buffer(v, CT_INT64, 1, &n, ct_opts_dtype(CT_INT64));
}

/* one cross-entropy case: loss and d loss / d logits (backward of loss * r for reduction none) */
static void ce_case(const char *what, int64_t N, int64_t C, const int64_t *tv, bool weighted, ct_reduction red,
                    int64_t ignore, double ls, bool unchecked) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *x = rnd(2, (const int64_t[]){N, C});
  ct_tensor *xc = leaf(x), *xg = leaf(W(x));
  ct_tensor *t = i64(N, tv), *tg = W(t);
  ct_tensor *w = weighted ? ct_rand(1, &C, ct_opts_dtype(CT_FLOAT32), gen()) : NULL, *wg = w ? W(w) : NULL;
  ct_tensor *lc, *lg;
  CHECK_OK(ct_webgpu_synchronize());
  ct_webgpu_counters c0 = ct_webgpu_get_counters();
  if (unchecked) {
    lc = ct_cross_entropy_unchecked(xc, t);
    lg = ct_cross_entropy_unchecked(xg, tg);
  } else {
    lc = ct_cross_entropy(xc, t, w, red, ignore, ls);
    lg = ct_cross_entropy(xg, tg, wg, red, ignore, ls);
  }
  ct_webgpu_counters c1 = ct_webgpu_get_counters();
  CHECK(lc && lg);
  if (!lc || !lg) {
    ct_scope_end(sc);
    return;
  }
  /* the fused kernels: the row pass and, for a reduction, the sum of the rows */
  CHECK(c1.dispatches - c0.dispatches <= 2);
  SAME(what, lc, lg, 1e-5, 1e-7);
  ct_tensor *r = red == CT_REDUCTION_NONE ? rnd(1, &N) : NULL;
  CHECK_OK(ct_backward(r ? ct_sum(ct_mul(lc, r)) : lc, NULL, false, false));
  ct_webgpu_counters c2 = ct_webgpu_get_counters();
  CHECK_OK(ct_backward(r ? ct_sum(ct_mul(lg, W(r))) : lg, NULL, false, false));
  ct_webgpu_counters c3 = ct_webgpu_get_counters();
  if (!r && c3.dispatches - c2.dispatches > 3) /* the pass, the seed's fill, the copy into .grad */
    ct_test_fail(__FILE__, __LINE__, "%s: %lld dispatches in the backward", what, (long long)(c3.dispatches - c2.dispatches));
  char w2[200];
  snprintf(w2, sizeof w2, "%s: grad", what);
  SAME(w2, ct_grad(xc), ct_grad(xg), 1e-5, 1e-7);
  ct_scope_end(sc);
}

WE_TEST(cross_entropy_fused) {
  int64_t N = 300, C = 259; /* more rows and columns than a workgroup: the strided loops */
  int64_t *tv = malloc(sizeof(int64_t) * (size_t)N);
  for (int64_t i = 0; i < N; i++) tv[i] = (i * 37 + 11) % C;
  ce_case("mean", N, C, tv, false, CT_REDUCTION_MEAN, -100, 0.0, false);
  tv[5] = -100, tv[77] = -100;
  ce_case("mean, ignore_index", N, C, tv, false, CT_REDUCTION_MEAN, -100, 0.0, false);
  ce_case("mean, weighted, ignore_index", N, C, tv, true, CT_REDUCTION_MEAN, -100, 0.0, false);
  tv[5] = 3, tv[77] = 3;
  ce_case("sum, ignore_index 3", N, C, tv, false, CT_REDUCTION_SUM, 3, 0.0, false);
  ce_case("none, weighted", N, C, tv, true, CT_REDUCTION_NONE, -100, 0.0, false);
  ce_case("mean, label smoothing 0.1", N, C, tv, false, CT_REDUCTION_MEAN, -100, 0.1, false);
  ce_case("one row", 1, 7, (const int64_t[]){6}, false, CT_REDUCTION_MEAN, -100, 0.0, false);
  ce_case("unchecked", N, C, tv, false, CT_REDUCTION_MEAN, -100, 0.0, true);
  /* unchecked: targets outside [0, C) are zero rows counted in the mean (the one-hot form) */
  tv[0] = C, tv[9] = -1, tv[10] = -100;
  ce_case("unchecked, targets out of range", N, C, tv, false, CT_REDUCTION_MEAN, -100, 0.0, true);
  /* the checked form still refuses them, on the host, with PyTorch's message */
  ct_scope *sc = ct_scope_begin();
  ct_tensor *x = W(rnd(2, (const int64_t[]){N, C})), *t = W(i64(N, tv));
  CHECK(ct_cross_entropy(x, t, NULL, CT_REDUCTION_MEAN, -100, 0.0) == NULL);
  CHECK(strstr(ct_last_error(), "Target 259 is out of bounds.") != NULL);
  ct_scope_end(sc);
  free(tv);
}

/* embedding backward: ids repeated across chunks of 256 positions, a padding row, the
 * gradient a non-contiguous view; D > 256 (two column blocks) */
WE_TEST(embedding_backward) {
  const int64_t V = 37, D = 300, B = 3, T = 211;
  for (int pad = 0; pad < 2; pad++) {
    ct_scope *sc = ct_scope_begin();
    ct_options oi = ct_opts_dtype(CT_INT64);
    ct_tensor *ix = ct_randint(0, V, 2, (const int64_t[]){B, T}, &oi, gen());
    ct_tensor *w = rnd(2, (const int64_t[]){V, D});
    ct_tensor *wc = leaf(w), *wg = leaf(W(w)), *ixg = W(ix);
    ct_tensor *yc = ct_embedding(ix, wc, pad ? &(int64_t){5} : NULL);
    ct_tensor *yg = ct_embedding(ixg, wg, pad ? &(int64_t){5} : NULL);
    SAME("embedding", yc, yg, 0, 0);
    ct_tensor *r = ct_transpose(rnd(3, (const int64_t[]){D, T, B}), 0, 2); /* [B, T, D], strided */
    CHECK_OK(ct_backward(ct_sum(ct_mul(yc, r)), NULL, false, false));
    CHECK_OK(ct_backward(ct_sum(ct_mul(yg, W(r))), NULL, false, false));
    SAME(pad ? "embedding backward, padding_idx 5" : "embedding backward", ct_grad(wc), ct_grad(wg), 1e-5, 1e-6);
    ct_scope_end(sc);
  }
}

/* NaN and inf through the WGSL attention, forward and backward, vs the CPU: a NaN in a
 * query row (that row's output; every key's and value's gradient), +inf and -inf in key
 * elements (scores of +inf: the rows NaN; -inf: the key dropped, and 0 * -inf in dq), a NaN
 * in a value row (one output column everywhere). Under a causal mask the cases put the
 * non-finite value where every row that the mask keeps can see it: a position a row cannot
 * see is skipped by the WGSL kernel (FlashAttention's semantics, no NaN), while the CPU's
 * composed product multiplies it by 0 (NaN) — the one documented difference; for the same
 * reason inf keys are compared without the mask (with it, some row always misses one). */
static void attn_nonfinite(int what, bool causal) {
  const int64_t B = 1, H = 2, L = 19, E = 32;
  ct_scope *sc = ct_scope_begin();
  ct_tensor *x[3];
  for (int i = 0; i < 3; i++) x[i] = rnd(4, (const int64_t[]){B, H, L, E});
  float *p;
  if (what == 0) { /* NaN in a query row of head 1: the last row under the causal mask (it sees every key) */
    p = ct_data_ptr(x[0]);
    p[(1 * L + (causal ? L - 1 : 4)) * E + 3] = NAN;
  } else if (what == 1) { /* +inf in key 6, -inf in key 2 (head 0); query parts positive */
    p = ct_data_ptr(x[1]);
    p[6 * E + 0] = INFINITY;
    p[2 * E + 1] = -INFINITY;
    float *q = ct_data_ptr(x[0]);
    for (int64_t i = 0; i < L; i++) q[i * E + 0] = fabsf(q[i * E + 0]) + 0.1f, q[i * E + 1] = fabsf(q[i * E + 1]) + 0.1f;
  } else if (what == 2) { /* -inf in key 0 (head 1): every row's score -inf there, dq gets 0 * -inf */
    p = ct_data_ptr(x[1]);
    p[(1 * L + 0) * E + 1] = -INFINITY;
    float *q = ct_data_ptr(x[0]);
    for (int64_t i = 0; i < L; i++) q[(1 * L + i) * E + 1] = fabsf(q[(1 * L + i) * E + 1]) + 0.1f;
  } else { /* NaN in a value row of head 0: row 0 under the causal mask (every row sees it) */
    p = ct_data_ptr(x[2]);
    p[(causal ? 0 : 9) * E + 7] = NAN;
  }
  ct_tensor *lc[3], *lg[3];
  for (int i = 0; i < 3; i++) lc[i] = leaf(x[i]), lg[i] = leaf(W(x[i]));
  int64_t f0 = ct_webgpu_sdpa_calls(false);
  ct_tensor *oc = ct_scaled_dot_product_attention(lc[0], lc[1], lc[2], NULL, 0, causal, NULL, NULL);
  ct_tensor *og = ct_scaled_dot_product_attention(lg[0], lg[1], lg[2], NULL, 0, causal, NULL, NULL);
  CHECK(ct_webgpu_sdpa_calls(false) == f0 + 1);
  char nm[160];
  const char *kind[4] = {"NaN query", "+-inf keys", "-inf key", "NaN value"};
  snprintf(nm, sizeof nm, "sdpa %s%s", kind[what], causal ? " causal" : "");
  SAME(nm, oc, og, 1e-5, 2e-6);
  /* NaN where expected, finite values elsewhere (not NaN everywhere) */
  int64_t n = ct_numel(oc), nn = 0;
  double *v = malloc(sizeof(double) * (size_t)n);
  CHECK_OK(ct_copy_to_buffer(og, v, CT_FLOAT64, n));
  for (int64_t i = 0; i < n; i++) nn += isnan(v[i]);
  if (!(what == 2 ? nn == 0 : nn > 0 && nn < n))
    ct_test_fail(__FILE__, __LINE__, "%s: %lld of %lld outputs NaN", nm, (long long)nn, (long long)n);
  free(v);
  ct_tensor *r = rnd(4, (const int64_t[]){B, H, L, E});
  CHECK_OK(ct_backward(ct_sum(ct_mul(oc, r)), NULL, false, false));
  CHECK_OK(ct_backward(ct_sum(ct_mul(og, W(r))), NULL, false, false));
  const char *g[3] = {"dq", "dk", "dv"};
  for (int i = 0; i < 3; i++) {
    char w2[200];
    snprintf(w2, sizeof w2, "%s %s", nm, g[i]);
    SAME(w2, ct_grad(lc[i]), ct_grad(lg[i]), 1e-4, 2e-5);
  }
  ct_scope_end(sc);
}
WE_TEST(attention_nan_inf) {
  for (int what = 0; what < 4; what++) {
    attn_nonfinite(what, false);
    if (what == 0 || what == 3) attn_nonfinite(what, true); /* an inf key under the mask: see above */
  }
}

/* layer_norm forward and backward (the row and column reductions) vs the CPU with the
 * subgroup reductions where the adapter offers subgroups (H200 32 lanes, SwiftShader 4), and
 * in a child process with CT_WEBGPU_SUBGROUPS=0 (the workgroup-tree fallback); rows longer
 * than a workgroup and shorter (the lanes past the row add zeros). */
static void ln_case(int64_t R, int64_t N) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *x = rnd(2, (const int64_t[]){R, N}), *w = rnd(1, &N), *b = rnd(1, &N);
  ct_tensor *l[6] = {leaf(x), leaf(w), leaf(b), leaf(W(x)), leaf(W(w)), leaf(W(b))};
  ct_tensor *yc = ct_layer_norm(l[0], 1, &N, l[1], l[2], 1e-5), *yg = ct_layer_norm(l[3], 1, &N, l[4], l[5], 1e-5);
  char nm[120];
  snprintf(nm, sizeof nm, "layer_norm [%lld, %lld] (subgroups %s)", (long long)R, (long long)N, wg_subgroups() ? "on" : "off");
  SAME(nm, yc, yg, 1e-5, 1e-6);
  ct_tensor *r = rnd(2, (const int64_t[]){R, N});
  CHECK_OK(ct_backward(ct_sum(ct_mul(yc, r)), NULL, false, false));
  CHECK_OK(ct_backward(ct_sum(ct_mul(yg, W(r))), NULL, false, false));
  const char *g[3] = {"dx", "dweight", "dbias"};
  for (int i = 0; i < 3; i++) {
    char w2[200];
    snprintf(w2, sizeof w2, "%s %s", nm, g[i]);
    SAME(w2, ct_grad(l[i]), ct_grad(l[3 + i]), 1e-4, 1e-5); /* column sums over R rows in another order */
  }
  ct_scope_end(sc);
}
TEST(webgpu_gpt8_subgroups_child) {
  const char *e = getenv("CT_WEBGPU_SUBGROUPS");
  if (!e || *e != '0' || !wgpu()) return; /* only in the child run below */
  CHECK(!wg_subgroups());
  ln_case(37, 300), ln_case(5, 20);
}
WE_TEST(layer_norm_subgroups) {
  int f = 0;
  uint32_t lo = 0, hi = 0;
  wg_subgroup_info(&f, &lo, &hi);
  printf("test_webgpu_gpt8: subgroups %s (adapter: feature %d, sizes %u..%u)\n", wg_subgroups() ? "used" : "not used", f,
         lo, hi);
  CHECK(wg_subgroups() == (f && lo >= 4 && hi <= 128 && !getenv("CT_WEBGPU_SUBGROUPS")));
  ln_case(37, 300), ln_case(5, 20);
  if (getenv("CT_WEBGPU_SUBGROUPS")) return;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = 0;
  char *argv[] = {exe, "webgpu_gpt8_subgroups_child", NULL};
  int ne = 0;
  while (environ[ne]) ne++;
  char **env = calloc((size_t)ne + 2, sizeof *env);
  if (!env) return;
  for (int i = 0; i < ne; i++) env[i] = environ[i];
  env[ne] = "CT_WEBGPU_SUBGROUPS=0";
  pid_t pid;
  int rc = posix_spawn(&pid, exe, NULL, NULL, argv, env);
  free(env);
  CHECK(rc == 0);
  int status = 0;
  if (rc == 0) waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* split-K products (few output tiles, K >= 1024: the GPT's weight gradients) vs the CPU:
 * plain, an operand transposed, addmm with alpha and beta; then with CT_WEBGPU_SPLITK=0 in
 * the same process (read per call) the one-pass kernel agrees too. K = 2048 float32 sums in
 * another order: rel 1e-4, abs 1e-4. */
static void splitk_case(const char *what, int64_t M, int64_t K, int64_t N, bool ta, bool addmm) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *a = ta ? ct_t(rnd(2, (const int64_t[]){K, M})) : rnd(2, (const int64_t[]){M, K});
  ct_tensor *b = rnd(2, (const int64_t[]){K, N}), *c0 = rnd(2, (const int64_t[]){M, N});
  ct_tensor *ga = ta ? ct_t(W(ct_t(a))) : W(a);
  ct_tensor *rc = addmm ? ct_addmm(c0, a, b, ct_sf(0.5), ct_sf(2.0)) : ct_mm(a, b);
  ct_tensor *g0 = W(c0), *gb = W(b);
  /* a first call may measure kernel variants (the tuner, on a GPU): the count is the second's */
  ct_release(addmm ? ct_addmm(g0, ga, gb, ct_sf(0.5), ct_sf(2.0)) : ct_mm(ga, gb));
  ct_webgpu_counters k0 = ct_webgpu_get_counters();
  ct_tensor *rg = addmm ? ct_addmm(g0, ga, gb, ct_sf(0.5), ct_sf(2.0)) : ct_mm(ga, gb);
  ct_webgpu_counters k1 = ct_webgpu_get_counters();
  SAME(what, rc, rg, 1e-4, 1e-4);
  const char *off = getenv("CT_WEBGPU_SPLITK");
  CHECK(k1.dispatches - k0.dispatches == (off ? 1 : 2)); /* the batched partials, then their sum */
  ct_scope_end(sc);
}
WE_TEST(gemm_split_k) {
  splitk_case("mm 48x2048x40 (split 16)", 48, 2048, 40, false, false);
  splitk_case("mm 256x2048x256, A transposed (the weight-gradient layout)", 256, 2048, 256, true, false);
  splitk_case("addmm 33x1536x70, beta 0.5, alpha 2", 33, 1536, 70, false, true);
  setenv("CT_WEBGPU_SPLITK", "0", 1);
  splitk_case("mm 48x2048x40 (one pass)", 48, 2048, 40, false, false);
  unsetenv("CT_WEBGPU_SPLITK");
}
