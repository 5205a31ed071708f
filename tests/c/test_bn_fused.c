/* The fused batch_norm kernels (kernels_bn.c) against the composed path they replace
 * (ct_fast_set_enabled(false) runs it): training and eval, weight/bias present or None, with and
 * without running statistics, float32/float64, [N, C] to [N, C, H, W] inputs with vector tails
 * and a non-contiguous one, data whose mean is large against its spread (the one-pass shifted
 * variance), values, running statistics after the call, first gradients (x, weight, bias) and
 * second-order gradients (create_graph), and results independent of the thread count. */
#include "test.h"
#include "backend/cpu/simd/simd.h"
#include <stdlib.h>

static uint64_t bn_state = 0x9E3779B97F4A7C15ull;

static bool bn_same_bits(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return a == b;
  if (ct_numel(a) != ct_numel(b)) return false;
  int64_t n = ct_numel(a);
  double *x = malloc((size_t)(n ? n : 1) * 8), *y = malloc((size_t)(n ? n : 1) * 8);
  ct_copy_to_buffer(a, x, CT_FLOAT64, n);
  ct_copy_to_buffer(b, y, CT_FLOAT64, n);
  bool same = memcmp(x, y, (size_t)n * 8) == 0;
  free(x);
  free(y);
  return same;
}

typedef struct {
  ct_tensor *y, *rm, *rv, *g1[3], *g2[3];
  const char *name;
} bn_out;
static void bn_out_free(bn_out *o) {
  ct_release(o->y);
  ct_release(o->rm);
  ct_release(o->rv);
  for (int i = 0; i < 3; i++) {
    ct_release(o->g1[i]);
    ct_release(o->g2[i]);
  }
  memset(o, 0, sizeof *o);
}

/* batch_norm on fresh copies of the running stats, then gradients of sum(y * gy) w.r.t. the inputs
 * that require grad, and (v != NULL) of sum(dx * v) (second order). */
static void bn_run(ct_tensor *const *in, const ct_tensor *rm0, const ct_tensor *rv0, bool training,
                   const ct_tensor *gy, const ct_tensor *v, bn_out *o) {
  memset(o, 0, sizeof *o);
  o->rm = rm0 ? ct_clone(rm0) : NULL;
  o->rv = rv0 ? ct_clone(rv0) : NULL;
  o->y = ct_batch_norm(in[0], o->rm, o->rv, in[1], in[2], training, 0.1, 1e-5);
  if (!o->y) {
    ct_test_fail(__FILE__, __LINE__, "batch_norm failed: %s", ct_last_error());
    return;
  }
  o->name = ct_grad_fn_name(o->y);
  ct_tensor *req[3];
  int idx[3], k = 0;
  for (int i = 0; i < 3; i++)
    if (in[i] && ct_requires_grad(in[i])) idx[k] = i, req[k++] = in[i];
  ct_tensor *gs[3] = {0}, *gyc = (ct_tensor *)gy;
  if (!k) return;
  if (ct_autograd_grad(1, &o->y, &gyc, k, req, gs, true, v != NULL, true) != CT_OK) {
    ct_test_fail(__FILE__, __LINE__, "grad failed: %s", ct_last_error());
    return;
  }
  if (v && gs[0] && ct_requires_grad(gs[0])) {
    ct_tensor *p = ct_mul(gs[0], v), *s = p ? ct_sum(p) : NULL, *hs[3] = {0};
    if (!s || ct_autograd_grad(1, &s, NULL, k, req, hs, false, false, true) != CT_OK)
      ct_test_fail(__FILE__, __LINE__, "second-order grad failed: %s", ct_last_error());
    for (int j = 0; j < k; j++) o->g2[idx[j]] = hs[j];
    ct_release(p);
    ct_release(s);
  }
  for (int j = 0; j < k; j++) {
    if (gs[j] && ct_requires_grad(gs[j])) {
      ct_tensor *d = ct_detach(gs[j]);
      ct_release(gs[j]);
      gs[j] = d;
    }
    o->g1[idx[j]] = gs[j];
  }
}

static void bn_case(int nd, const int64_t *shape, bool training, int wb, bool running, ct_dtype dt, double shift,
                    bool transposed, bool second) {
  int64_t C = shape[1];
  ct_tensor *x = tt_rand(&bn_state, nd, shape, dt, 2.0, shift, true);
  if (transposed) { /* the same values in a transposed layout */
    x = tt_transposed_leaf(x);
  }
  ct_tensor *w = (wb & 1) ? tt_rand(&bn_state, 1, &C, dt, 1.0, 1.0, true) : NULL;
  ct_tensor *b = (wb & 2) ? tt_rand(&bn_state, 1, &C, dt, 1.0, 0.0, true) : NULL;
  ct_tensor *rm = running ? tt_rand(&bn_state, 1, &C, dt, 0.5, shift, false) : NULL;
  ct_tensor *rv = running ? tt_rand(&bn_state, 1, &C, dt, 0.4, 1.0, false) : NULL;
  ct_tensor *gy = tt_rand(&bn_state, nd, shape, dt, 1.0, 0.0, false), *v = second ? tt_rand(&bn_state, nd, shape, dt, 1.0, 0.0, false) : NULL;
  ct_tensor *in[3] = {x, w, b};
  char what[200];
  snprintf(what, sizeof what, "batch_norm nd=%d C=%lld last=%lld %s wb=%d running=%d %s shift=%g%s%s", nd, (long long)C,
           (long long)shape[nd - 1], training ? "train" : "eval", wb, running, ct_dtype_name(dt), shift,
           transposed ? " transposed" : "", second ? " second-order" : "");
  bool f64 = dt == CT_FLOAT64;
  /* float32: the fused kernel rounds (x - mean) * (rstd * w) + b in float and sums in double; the
   * composed path rounds after each of four ops: a few ulps apart, more where y is near 0 (atol) */
  double rtol = f64 ? 1e-10 : 2e-5, atol = f64 ? 1e-12 : 2e-5;
  bn_out ref, got, got1, got3;
  ct_fast_set_enabled(false);
  bn_run(in, rm, rv, training, gy, v, &ref);
  ct_fast_set_enabled(true);
  int prev = ct_get_num_threads();
  ct_set_num_threads(1);
  bn_run(in, rm, rv, training, gy, v, &got1);
  ct_set_num_threads(3);
  bn_run(in, rm, rv, training, gy, v, &got3);
  ct_set_num_threads(prev);
  bn_run(in, rm, rv, training, gy, v, &got);
  double e;
  if (!((e = tt_excess(got.y, ref.y, rtol, atol)) <= 1)) ct_test_fail(__FILE__, __LINE__, "%s: y excess %g", what, e);
  if (!((e = tt_excess(got.rm, ref.rm, rtol, atol)) <= 1)) ct_test_fail(__FILE__, __LINE__, "%s: running_mean excess %g", what, e);
  if (!((e = tt_excess(got.rv, ref.rv, rtol, atol)) <= 1)) ct_test_fail(__FILE__, __LINE__, "%s: running_var excess %g", what, e);
  for (int i = 0; i < 3; i++) {
    /* float32 gradients: sums of N*S products, rounded differently (double vs float partials) */
    if (!((e = tt_excess(got.g1[i], ref.g1[i], rtol * 5, atol * 5)) <= 1))
      ct_test_fail(__FILE__, __LINE__, "%s: grad %d excess %g", what, i, e);
    if (!((e = tt_excess(got.g2[i], ref.g2[i], rtol * 50, atol * 50)) <= 1))
      ct_test_fail(__FILE__, __LINE__, "%s: second-order grad %d excess %g", what, i, e);
  }
  /* one task per channel: the same bits at any thread count */
  bool same = bn_same_bits(got1.y, got3.y) && bn_same_bits(got1.rm, got3.rm) && bn_same_bits(got1.rv, got3.rv);
  for (int i = 0; i < 3; i++) same = same && bn_same_bits(got1.g1[i], got3.g1[i]);
  if (!same) ct_test_fail(__FILE__, __LINE__, "%s: results differ between 1 and 3 threads", what);
  if (!got.name || strcmp(got.name, "NativeBatchNormBackward0"))
    ct_test_fail(__FILE__, __LINE__, "%s: grad_fn %s", what, got.name ? got.name : "(none)");
  bn_out_free(&ref);
  bn_out_free(&got);
  bn_out_free(&got1);
  bn_out_free(&got3);
  ct_tensor *all[7] = {x, w, b, rm, rv, gy, v};
  for (int i = 0; i < 7; i++) ct_release(all[i]);
}

TEST(fused_batch_norm_vs_composed) {
  static const struct {
    int nd;
    int64_t s[4];
  } shapes[] = {{2, {8, 5}}, {3, {4, 3, 5}}, {4, {3, 4, 5, 6}}, {4, {16, 8, 4, 4}}, {4, {2, 3, 9, 11}}, {4, {1, 2, 3, 1}}};
  int64_t n0 = ct_live_tensors();
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int wb = 0; wb < 4; wb++) {
      bn_case(shapes[si].nd, shapes[si].s, true, wb, true, CT_FLOAT32, 0.5, false, false);
      bn_case(shapes[si].nd, shapes[si].s, true, wb, wb & 1, CT_FLOAT64, 0.5, false, false);
      bn_case(shapes[si].nd, shapes[si].s, false, wb, true, CT_FLOAT32, 0.5, false, false);
      bn_case(shapes[si].nd, shapes[si].s, false, wb, true, CT_FLOAT64, 0.5, false, false);
    }
  /* a mean 50x the spread (one-pass shifted variance), a transposed input, second order */
  int64_t s4[4] = {4, 3, 6, 7};
  bn_case(4, s4, true, 3, true, CT_FLOAT32, 100.0, false, false);
  bn_case(4, s4, true, 3, true, CT_FLOAT64, 100.0, false, false);
  bn_case(4, s4, true, 3, true, CT_FLOAT32, 0.5, true, false);
  bn_case(4, s4, true, 3, true, CT_FLOAT64, 0.0, false, true);
  bn_case(4, s4, false, 1, true, CT_FLOAT64, 0.0, false, true);
  CHECK(ct_live_tensors() == n0);
}

/* Running stats that require grad (eval) and float16 keep the composed path; an [N, C] input with
 * one value per channel in training is refused with PyTorch's message by either path. */
TEST(fused_batch_norm_edges) {
  int64_t n0 = ct_live_tensors();
  int64_t s[4] = {1, 3, 1, 1}, C = 3;
  ct_tensor *x = tt_rand(&bn_state, 4, s, CT_FLOAT32, 1.0, 0.0, false);
  CHECK_ERR_PTR(ct_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5),
                "Expected more than 1 value per channel when training");
  ct_tensor *rm = tt_rand(&bn_state, 1, &C, CT_FLOAT32, 0.1, 0.0, true), *rv = tt_rand(&bn_state, 1, &C, CT_FLOAT32, 0.1, 1.0, false);
  ct_tensor *y = ct_batch_norm(x, rm, rv, NULL, NULL, false, 0.1, 1e-5);
  CHECK(y != NULL);
  ct_release(y);
  ct_release(x);
  ct_release(rm);
  ct_release(rv);
  CHECK(ct_live_tensors() == n0);
}
