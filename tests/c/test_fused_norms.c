/* The fused CPU kernels (kernels_norm.c, simd/fast_norm.h) against the composed paths they
 * replace (ct_fast_set_enabled(false) runs those): layer_norm, rms_norm and cross_entropy
 * with class indices — values, first gradients (input, weight, bias) and second-order
 * gradients (create_graph) — plus softmax/log_softmax rows, at every SIMD level the CPU has,
 * on shapes with vector tails, non-contiguous inputs, empty tensors and weight/bias None. */
#include "test.h"
#include "backend/cpu/simd/simd.h"
#include <stdlib.h>

static uint64_t fn_state = 0x2545F4914F6CDD1Dull;


#define MAXG 4
typedef struct {
  ct_tensor *y;
  ct_tensor *g1[MAXG]; /* first gradients w.r.t. the inputs */
  ct_tensor *g2[MAXG]; /* gradients of sum(g1[0] * v) (second order), when asked */
  const char *name;
} fn_result;
static void fn_result_free(fn_result *r) {
  ct_release(r->y);
  for (int i = 0; i < MAXG; i++) {
    ct_release(r->g1[i]);
    ct_release(r->g2[i]);
  }
  memset(r, 0, sizeof *r);
}

typedef ct_tensor *(*fn_op)(void *ctx, ct_tensor *const *in);

/* Runs op on the inputs, backward with gy, optionally a second backward through the first
 * gradient of input 0 (dotted with v). ins[i] may be NULL (weight/bias None). */
static void fn_run(fn_op op, void *ctx, int nin, ct_tensor *const *ins, const ct_tensor *gy, const ct_tensor *v,
                   fn_result *r) {
  memset(r, 0, sizeof *r);
  r->y = op(ctx, ins);
  if (!r->y) return;
  r->name = ct_grad_fn_name(r->y);
  ct_tensor *req[MAXG];
  int idx[MAXG], k = 0;
  for (int i = 0; i < nin; i++)
    if (ins[i] && ct_requires_grad(ins[i])) {
      idx[k] = i;
      req[k++] = ins[i];
    }
  if (!k || !gy) return;
  ct_tensor *gs[MAXG] = {0};
  ct_tensor *gyc = (ct_tensor *)gy;
  if (ct_autograd_grad(1, &r->y, &gyc, k, req, gs, true, v != NULL, true) != CT_OK) {
    ct_test_fail(__FILE__, __LINE__, "grad failed: %s", ct_last_error());
    return;
  }
  if (v && gs[0] && ct_requires_grad(gs[0])) {
    ct_tensor *p = ct_mul(gs[0], v), *s = p ? ct_sum(p) : NULL;
    ct_tensor *hs[MAXG] = {0};
    if (!s || ct_autograd_grad(1, &s, NULL, k, req, hs, false, false, true) != CT_OK)
      ct_test_fail(__FILE__, __LINE__, "second-order grad failed: %s", ct_last_error());
    for (int j = 0; j < k; j++) r->g2[idx[j]] = hs[j];
    ct_release(p);
    ct_release(s);
  }
  for (int j = 0; j < k; j++) {
    if (gs[j] && ct_requires_grad(gs[j])) { /* keep only the values */
      ct_tensor *d = ct_detach(gs[j]);
      ct_release(gs[j]);
      gs[j] = d;
    }
    r->g1[idx[j]] = gs[j];
  }
}

/* fused (fast kernels on, at SIMD level lvl) vs composed (fast kernels off) */
static void fn_compare(const char *what, fn_op op, void *ctx, int nin, ct_tensor *const *ins, const ct_tensor *gy,
                       const ct_tensor *v, double rtol, double atol, const char *want_name) {
  int levels = (int)ct_simd_cpu_level();
  fn_result ref;
  ct_fast_set_enabled(false);
  fn_run(op, ctx, nin, ins, gy, v, &ref);
  ct_fast_set_enabled(true);
  for (int l = 0; l <= levels; l++) {
    ct_simd_force((ct_simd_isa)l);
    fn_result got;
    fn_run(op, ctx, nin, ins, gy, v, &got);
    double e = tt_excess(got.y, ref.y, rtol, atol);
    if (!(e <= 1)) ct_test_fail(__FILE__, __LINE__, "%s [%s]: value excess %g", what, ct_simd_isa_name(l), e);
    for (int i = 0; i < nin; i++) {
      e = tt_excess(got.g1[i], ref.g1[i], rtol, atol);
      if (!(e <= 1)) ct_test_fail(__FILE__, __LINE__, "%s [%s]: grad %d excess %g", what, ct_simd_isa_name(l), i, e);
      e = tt_excess(got.g2[i], ref.g2[i], rtol * 10, atol * 10);
      if (!(e <= 1))
        ct_test_fail(__FILE__, __LINE__, "%s [%s]: second-order grad %d excess %g", what, ct_simd_isa_name(l), i, e);
    }
    if (want_name && (!got.name || strcmp(got.name, want_name)))
      ct_test_fail(__FILE__, __LINE__, "%s: grad_fn %s, expected %s", what, got.name ? got.name : "(none)", want_name);
    fn_result_free(&got);
  }
  ct_simd_force(CT_SIMD_AVX512);
  fn_result_free(&ref);
}

/* ---- layer_norm / rms_norm ---- */
typedef struct {
  int n;
  int64_t ns[4];
  double eps;
  bool rms;
} norm_ctx;
static ct_tensor *fn_norm(void *p, ct_tensor *const *in) {
  norm_ctx *c = p;
  return c->rms ? ct_rms_norm(in[0], c->n, c->ns, in[1], c->eps) : ct_layer_norm(in[0], c->n, c->ns, in[1], in[2], c->eps);
}

static void norm_case(bool rms, int nd, const int64_t *shape, int n, bool transposed, int wb, ct_dtype dt, bool second) {
  norm_ctx c = {n, {0}, rms ? 1e-6 : 1e-5, rms};
  for (int i = 0; i < n; i++) c.ns[i] = shape[nd - n + i];
  ct_tensor *x = tt_rand(&fn_state, nd, shape, dt, 2.0, 0.5, true);
  if (transposed && nd >= 2) { /* same values, a transposed layout: x^T^T made from a transposed copy */
    x = tt_transposed_leaf(x);
    CHECK(x && (!ct_is_contiguous(x) || shape[0] == 1 || shape[nd - 1] == 1));
  }
  ct_tensor *w = (wb & 1) ? tt_rand(&fn_state, n, c.ns, dt, 1.0, 1.0, true) : NULL;
  ct_tensor *b = (wb & 2) && !rms ? tt_rand(&fn_state, n, c.ns, dt, 1.0, 0.0, true) : NULL;
  ct_tensor *gy = tt_rand(&fn_state, nd, shape, dt, 1.0, 0.0, false), *v = second ? tt_rand(&fn_state, nd, shape, dt, 1.0, 0.0, false) : NULL;
  ct_tensor *ins[3] = {x, w, b};
  char what[160];
  snprintf(what, sizeof what, "%s nd=%d last=%lld n=%d %s wb=%d %s", rms ? "rms_norm" : "layer_norm", nd,
           (long long)shape[nd - 1], n, transposed ? "transposed" : "contiguous", wb, ct_dtype_name(dt));
  bool f64 = dt == CT_FLOAT64;
  /* float32: statistics in float lanes (fused) vs double (composed): ~1e-6 relative */
  fn_compare(what, fn_norm, &c, 3, ins, gy, v, f64 ? 1e-10 : 2e-5, f64 ? 1e-12 : 2e-5,
             ct_numel(x) && !rms ? "NativeLayerNormBackward0" : NULL);
  ct_release(x);
  ct_release(w);
  ct_release(b);
  ct_release(gy);
  ct_release(v);
}

TEST(fused_layer_norm_vs_composed) {
  static const int64_t shapes[][3] = {{3, 1, 1}, {2, 3, 7}, {4, 2, 16}, {1, 5, 33}, {2, 2, 64}, {3, 1, 100}, {2, 8, 1024},
                                      {1, 2, 3000}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int wb = 0; wb < 4; wb++)
      for (int tr = 0; tr < 2; tr++) {
        norm_case(false, 3, shapes[si], 1, tr, wb, CT_FLOAT32, false);
        norm_case(false, 3, shapes[si], 1, tr, wb, CT_FLOAT64, false);
      }
  /* two normalized dims, 2-D and 1-D inputs */
  int64_t s3[3] = {3, 4, 5}, s2[2] = {6, 9}, s1[1] = {17};
  norm_case(false, 3, s3, 2, false, 3, CT_FLOAT32, false);
  norm_case(false, 3, s3, 2, true, 1, CT_FLOAT64, false);
  norm_case(false, 2, s2, 1, true, 3, CT_FLOAT32, false);
  norm_case(false, 1, s1, 1, false, 3, CT_FLOAT32, false);
  norm_case(false, 1, s1, 1, false, 0, CT_FLOAT64, false);
}

TEST(fused_rms_norm_vs_composed) {
  static const int64_t shapes[][3] = {{3, 1, 1}, {2, 3, 7}, {4, 2, 16}, {1, 5, 33}, {3, 1, 100}, {2, 8, 1024}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int wb = 0; wb < 2; wb++)
      for (int tr = 0; tr < 2; tr++) {
        norm_case(true, 3, shapes[si], 1, tr, wb, CT_FLOAT32, false);
        norm_case(true, 3, shapes[si], 1, tr, wb, CT_FLOAT64, false);
      }
  int64_t s3[3] = {3, 4, 5};
  norm_case(true, 3, s3, 2, true, 1, CT_FLOAT32, false);
}

TEST(fused_norms_double_backward) {
  /* create_graph: the fused backward builds the gradient from public ops, so second-order
   * gradients (w.r.t. x, weight, bias) match the composed path's */
  int64_t s[3] = {2, 3, 7}, t[2] = {4, 16};
  for (int wb = 0; wb < 4; wb++) {
    norm_case(false, 3, s, 1, false, wb, CT_FLOAT64, true);
    norm_case(false, 2, t, 1, true, wb, CT_FLOAT32, true);
    norm_case(true, 3, s, 2, false, wb & 1, CT_FLOAT64, true);
  }
}

TEST(fused_norms_empty_and_errors) {
  /* empty batch / empty normalized dims go the composed way: same (empty) results */
  int64_t e0[2] = {0, 5}, e1[2] = {3, 0};
  norm_case(false, 2, e0, 1, false, 3, CT_FLOAT32, false);
  norm_case(false, 2, e1, 1, false, 3, CT_FLOAT32, false);
  norm_case(true, 2, e0, 1, false, 1, CT_FLOAT64, false);
  /* argument checks come before the fused path */
  int64_t sh[2] = {2, 4}, bad = 5, four = 4;
  ct_tensor *x = tt_rand(&fn_state, 2, sh, CT_FLOAT32, 1, 0, false), *w5 = tt_rand(&fn_state, 1, &bad, CT_FLOAT32, 1, 0, false);
  ct_tensor *w64 = tt_rand(&fn_state, 1, &four, CT_FLOAT64, 1, 0, false);
  CHECK_ERR_PTR(ct_layer_norm(x, 1, &bad, NULL, NULL, 1e-5), "Given normalized_shape=[5]");
  CHECK_ERR_PTR(ct_layer_norm(x, 1, &four, w5, NULL, 1e-5), "Expected weight to be of same shape");
  CHECK_ERR_PTR(ct_rms_norm(x, 1, &four, w5, 1e-5), "Expected weight to be of same shape");
  /* a weight of another dtype is not fused (composed path: computes in x's dtype) */
  ct_tensor *y = ct_layer_norm(x, 1, &four, w64, NULL, 1e-5);
  CHECK(y != NULL);
  ct_release(y);
  ct_release(x);
  ct_release(w5);
  ct_release(w64);
}

/* ---- cross_entropy ---- */
typedef struct {
  ct_tensor *t;
  ct_reduction r;
  int64_t ignore;
  double ls;
} ce_ctx;
static ct_tensor *fn_ce(void *p, ct_tensor *const *in) {
  ce_ctx *c = p;
  return ct_cross_entropy(in[0], c->t, in[1], c->r, c->ignore, c->ls);
}

static void ce_case(int64_t N, int64_t C, bool one_d, bool transposed, bool weight, int ignore_mode, double ls,
                    ct_reduction r, ct_dtype dt, bool second) {
  int64_t xs[2] = {N, C};
  ct_tensor *x;
  if (transposed) {
    int64_t ts[2] = {C, N};
    ct_tensor *xt = tt_rand(&fn_state, 2, ts, dt, 3.0, 0.0, false), *tv = xt ? ct_transpose(xt, 0, 1) : NULL;
    x = tv ? ct_detach(tv) : NULL;
    ct_release(xt);
    ct_release(tv);
    if (x) ct_requires_grad_(x, true);
  } else {
    x = tt_rand(&fn_state, one_d ? 1 : 2, one_d ? &C : xs, dt, 3.0, 0.0, true);
  }
  int64_t *tv = malloc(sizeof(int64_t) * (size_t)(N ? N : 1));
  int64_t ignore = ignore_mode ? 1 % C : -100;
  for (int64_t i = 0; i < N; i++) {
    tv[i] = (int64_t)((tt_uniform(&fn_state) + 1) * 0.5 * (double)C) % C;
    if (ignore_mode == 2) tv[i] = ignore; /* every row ignored */
  }
  ct_options lo = ct_opts_dtype(CT_INT64);
  ct_tensor *t = ct_from_buffer(tv, CT_INT64, one_d ? 0 : 1, &N, lo);
  free(tv);
  ct_tensor *w = weight ? tt_rand(&fn_state, 1, &C, dt, 0.5, 1.0, false) : NULL;
  ce_ctx c = {t, r, ignore, ls};
  int64_t gs = N;
  ct_tensor *gy = r == CT_REDUCTION_NONE ? tt_rand(&fn_state, one_d ? 0 : 1, &gs, dt, 1.0, 0.0, false) : tt_rand(&fn_state, 0, NULL, dt, 1.0, 1.5, false);
  ct_tensor *v = second ? tt_rand(&fn_state, one_d ? 1 : 2, one_d ? &C : xs, dt, 1.0, 0.0, false) : NULL;
  ct_tensor *ins[2] = {x, w};
  char what[160];
  snprintf(what, sizeof what, "cross_entropy N=%lld C=%lld%s%s w=%d ignore=%d ls=%g red=%d %s", (long long)N,
           (long long)C, one_d ? " 1-D" : "", transposed ? " transposed" : "", weight, ignore_mode, ls, (int)r,
           ct_dtype_name(dt));
  bool f64 = dt == CT_FLOAT64;
  const char *name = ct_numel(x) ? (ls > 0 ? "AddBackward0" : "NllLossBackward0") : NULL;
  fn_compare(what, fn_ce, &c, 2, ins, gy, v, f64 ? 1e-10 : 1e-5, f64 ? 1e-12 : 1e-6, name);
  ct_release(x);
  ct_release(t);
  ct_release(w);
  ct_release(gy);
  ct_release(v);
}

TEST(fused_cross_entropy_vs_composed) {
  static const int64_t sizes[][2] = {{1, 1}, {5, 4}, {3, 17}, {7, 64}, {4, 1000}, {2, 5000}};
  ct_reduction reds[3] = {CT_REDUCTION_NONE, CT_REDUCTION_SUM, CT_REDUCTION_MEAN};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (int ri = 0; ri < 3; ri++)
      for (int w = 0; w < 2; w++)
        for (int ig = 0; ig < 2; ig++)
          for (int li = 0; li < 2; li++) {
            ct_dtype dt = (si + ri + w) % 2 ? CT_FLOAT64 : CT_FLOAT32;
            ce_case(sizes[si][0], sizes[si][1], false, (si + ig) % 3 == 0, w, ig, li ? 0.1 : 0.0, reds[ri], dt, false);
          }
  for (int ri = 0; ri < 3; ri++) {
    ce_case(1, 6, true, false, true, 0, 0.2, reds[ri], CT_FLOAT32, false);
    ce_case(1, 6, true, false, false, 0, 0.0, reds[ri], CT_FLOAT64, false);
    ce_case(4, 5, false, false, true, 2, 0.1, reds[ri], CT_FLOAT32, false); /* all ignored: nan mean, zero grads */
    ce_case(0, 5, false, false, true, 0, 0.0, reds[ri], CT_FLOAT32, false);  /* empty batch: composed */
  }
}

TEST(fused_cross_entropy_double_backward) {
  ct_reduction reds[3] = {CT_REDUCTION_NONE, CT_REDUCTION_SUM, CT_REDUCTION_MEAN};
  for (int ri = 0; ri < 3; ri++) {
    ce_case(5, 4, false, false, false, 0, 0.0, reds[ri], CT_FLOAT64, true);
    ce_case(5, 7, false, true, true, 1, 0.15, reds[ri], CT_FLOAT64, true);
    ce_case(1, 6, true, false, true, 0, 0.1, reds[ri], CT_FLOAT32, true);
  }
}

TEST(fused_cross_entropy_errors) {
  int64_t xs[2] = {3, 4}, n = 3;
  ct_tensor *x = tt_rand(&fn_state, 2, xs, CT_FLOAT32, 1, 0, false);
  int64_t bad[3] = {0, 5, 1}, ok[3] = {0, 1, 2};
  ct_tensor *tb = ct_from_buffer(bad, CT_INT64, 1, &n, ct_opts_dtype(CT_INT64));
  ct_tensor *tk = ct_from_buffer(ok, CT_INT64, 1, &n, ct_opts_dtype(CT_INT64));
  CHECK_ERR_PTR(ct_cross_entropy(x, tb, NULL, CT_REDUCTION_MEAN, -100, 0.0), "Target 5 is out of bounds.");
  CHECK_ERR_PTR(ct_cross_entropy(x, tk, NULL, CT_REDUCTION_MEAN, -100, 1.5), "label_smoothing must be between 0.0 and 1.0");
  int64_t c5 = 5;
  ct_tensor *w5 = tt_rand(&fn_state, 1, &c5, CT_FLOAT32, 1, 1, false);
  CHECK_ERR_PTR(ct_cross_entropy(x, tk, w5, CT_REDUCTION_MEAN, -100, 0.0), "weight tensor should be defined");
  ct_release(x);
  ct_release(tb);
  ct_release(tk);
  ct_release(w5);
}

/* ---- softmax rows: specials (-inf, all -inf, NaN, large) and tails ---- */
typedef struct {
  int64_t dim;
  bool log;
} sm_ctx;
static ct_tensor *fn_sm(void *p, ct_tensor *const *in) {
  sm_ctx *c = p;
  return c->log ? ct_log_softmax(in[0], c->dim, -1) : ct_softmax(in[0], c->dim, -1);
}
TEST(fused_softmax_rows_vs_reference) {
  static const int64_t cols[] = {1, 3, 16, 17, 64, 100, 1024, 4099};
  for (size_t ci = 0; ci < sizeof cols / sizeof cols[0]; ci++)
    for (int lg = 0; lg < 2; lg++) {
      int64_t sh[2] = {6, cols[ci]};
      ct_tensor *x = tt_rand(&fn_state, 2, sh, CT_FLOAT32, 30.0, 0.0, false);
      /* row 1: some -inf; row 2: all -inf; row 3: a NaN; row 4: huge values */
      float *p = ct_data_ptr(x);
      int64_t C = cols[ci];
      p[1 * C] = -INFINITY;
      for (int64_t j = 0; j < C; j++) p[2 * C + j] = -INFINITY;
      p[3 * C + C / 2] = NAN;
      for (int64_t j = 0; j < C; j++) p[4 * C + j] *= 1e6f;
      ct_requires_grad_(x, true);
      ct_tensor *gy = tt_rand(&fn_state, 2, sh, CT_FLOAT32, 1.0, 0.0, false);
      sm_ctx c = {-1, lg};
      char what[96];
      snprintf(what, sizeof what, "%s cols=%lld", lg ? "log_softmax" : "softmax", (long long)C);
      /* x - max rounds in float (as PyTorch's float kernel does): with |x| up to ~60 that is
       * up to ulp(60)/2 / 1 = 1.9e-6 relative in e^(x - max), plus ~2e-7 from exp and the
       * float block sums; the reference computes in double */
      fn_compare(what, fn_sm, &c, 1, &x, NULL, NULL, 4e-6, lg ? 4e-6 : 1e-37, NULL);
      ct_release(x);
      ct_release(gy);
    }
}

/* ---- classifier + cross-entropy without the logits (chunked, checkpointed) ---- */
TEST(linear_cross_entropy_vs_composed) {
  int64_t N = 7, D = 5, V = 11, xs[2] = {N, D}, ws[2] = {V, D};
  ct_reduction reds[3] = {CT_REDUCTION_NONE, CT_REDUCTION_SUM, CT_REDUCTION_MEAN};
  int64_t tv[7] = {3, 0, 10, 4, 4, 7, 1};
  for (int ig = 0; ig < 3; ig++)
    for (int ri = 0; ri < 3; ri++)
      for (int64_t chunk = 0; chunk <= 8; chunk += (chunk < 3 ? 1 : 5)) {
        int64_t t2[7];
        for (int i = 0; i < 7; i++) t2[i] = ig == 2 ? 4 : tv[i];
        ct_tensor *t = ct_from_buffer(t2, CT_INT64, 1, &N, ct_opts_dtype(CT_INT64));
        int64_t ignore = ig ? 4 : -100;
        ct_tensor *x1 = tt_rand(&fn_state, 2, xs, CT_FLOAT32, 1.0, 0.0, true), *w1 = tt_rand(&fn_state, 2, ws, CT_FLOAT32, 1.0, 0.0, true);
        ct_tensor *x2 = ct_detach(x1), *w2 = ct_detach(w1);
        ct_requires_grad_(x2, true);
        ct_requires_grad_(w2, true);
        ct_tensor *a = ct_linear_cross_entropy(x1, w1, t, reds[ri], ignore, chunk);
        ct_tensor *wt = ct_transpose(w2, 0, 1), *lg = wt ? ct_matmul(x2, wt) : NULL;
        ct_tensor *b = lg ? ct_cross_entropy(lg, t, NULL, reds[ri], ignore, 0.0) : NULL;
        CHECK(a && b);
        if (a && b) {
          CHECK(tt_excess(a, b, 1e-5, 1e-6) <= 1);
          ct_tensor *g = ri == 0 ? tt_rand(&fn_state, 1, &N, CT_FLOAT32, 1.0, 0.0, false) : NULL;
          CHECK_OK(ct_backward(a, g, false, false));
          CHECK_OK(ct_backward(b, g, false, false));
          CHECK(tt_excess(ct_grad(x1), ct_grad(x2), 1e-5, 1e-6) <= 1);
          CHECK(tt_excess(ct_grad(w1), ct_grad(w2), 1e-5, 1e-6) <= 1);
          ct_release(g);
        }
        ct_release(a);
        ct_release(b);
        ct_release(wt);
        ct_release(lg);
        ct_release(t);
        ct_release(x1);
        ct_release(w1);
        ct_release(x2);
        ct_release(w2);
      }
  int64_t bad = 4;
  ct_tensor *x = tt_rand(&fn_state, 2, xs, CT_FLOAT32, 1, 0, false), *w = tt_rand(&fn_state, 2, ws, CT_FLOAT32, 1, 0, false);
  ct_tensor *t = ct_zeros(1, &bad, ct_opts_dtype(CT_INT64));
  CHECK_ERR_PTR(ct_linear_cross_entropy(x, w, t, CT_REDUCTION_MEAN, -100, 0), "to match target batch_size");
  CHECK_ERR_PTR(ct_linear_cross_entropy(x, x, t, CT_REDUCTION_MEAN, -100, 0), "");
  ct_release(x);
  ct_release(w);
  ct_release(t);
}
