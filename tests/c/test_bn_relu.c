/* relu(batch_norm(x)) as one fused op (ct_batch_norm_relu, kernels_bn.c with k3; used by the ResNet
 * blocks through ct_module_forward_bn_relu) against the two ops apart: the same operations in the
 * same order, so the output, the running statistics and the gradients of x, weight and bias must be
 * the same bits, at every SIMD level the CPU has (portable and AVX2 loops), at 1 and 3 threads,
 * training and eval, float32 and float64, weight/bias present or not, inputs with many exact zeros
 * after the affine map (the mask's edge: relu'(0) = 0) and vector tails. Second-order gradients
 * (create_graph: the composed backward behind the fused node) agree with the two ops' to rounding.
 * The module form keeps the module state (running stats, num_batches_tracked) of module + relu. */
#include "test.h"
#include "backend/cpu/simd/simd.h"
#include <stdlib.h>

ct_tensor *ct_batch_norm_relu(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                              const ct_tensor *weight, const ct_tensor *bias, bool training, double momentum, double eps);
ct_tensor *ct_module_forward_bn_relu(ct_module *m, const ct_tensor *x);

static uint64_t br_state = 0x2545F4914F6CDD1Dull;

typedef struct {
  ct_tensor *y, *rm, *rv, *g[3], *h[3];
} br_out;

static void br_free(br_out *o) {
  ct_release(o->y);
  ct_release(o->rm);
  ct_release(o->rv);
  for (int i = 0; i < 3; i++) {
    ct_release(o->g[i]);
    ct_release(o->h[i]);
  }
  memset(o, 0, sizeof *o);
}

/* fused (or relu after batch_norm), then d sum(y gy) / d (x, w, b); with v also the second order
 * d sum(dx v) / d (x, w, b) */
static void br_run(bool fused, ct_tensor *const *in, const ct_tensor *rm0, const ct_tensor *rv0, bool training,
                   const ct_tensor *gy, const ct_tensor *v, br_out *o) {
  memset(o, 0, sizeof *o);
  o->rm = rm0 ? ct_clone(rm0) : NULL;
  o->rv = rv0 ? ct_clone(rv0) : NULL;
  if (fused) o->y = ct_batch_norm_relu(in[0], o->rm, o->rv, in[1], in[2], training, 0.1, 1e-5);
  else {
    ct_tensor *b = ct_batch_norm(in[0], o->rm, o->rv, in[1], in[2], training, 0.1, 1e-5);
    o->y = b ? ct_relu(b) : NULL;
    ct_release(b);
  }
  if (!o->y) {
    ct_test_fail(__FILE__, __LINE__, "batch_norm%s failed: %s", fused ? "_relu" : "", ct_last_error());
    return;
  }
  ct_tensor *req[3];
  int idx[3], k = 0;
  for (int i = 0; i < 3; i++)
    if (in[i] && ct_requires_grad(in[i])) idx[k] = i, req[k++] = in[i];
  ct_tensor *gs[3] = {0}, *gyc = (ct_tensor *)gy;
  if (ct_autograd_grad(1, &o->y, &gyc, k, req, gs, true, v != NULL, true) != CT_OK) {
    ct_test_fail(__FILE__, __LINE__, "grad failed: %s", ct_last_error());
    return;
  }
  if (v && gs[0]) {
    ct_tensor *p = ct_mul(gs[0], v), *s = p ? ct_sum(p) : NULL, *hs[3] = {0};
    if (!s || ct_autograd_grad(1, &s, NULL, k, req, hs, false, false, true) != CT_OK)
      ct_test_fail(__FILE__, __LINE__, "second-order grad failed: %s", ct_last_error());
    for (int j = 0; j < k; j++) o->h[idx[j]] = hs[j];
    ct_release(p);
    ct_release(s);
  }
  for (int j = 0; j < k; j++) {
    if (gs[j] && ct_requires_grad(gs[j])) {
      ct_tensor *d = ct_detach(gs[j]);
      ct_release(gs[j]);
      gs[j] = d;
    }
    o->g[idx[j]] = gs[j];
  }
}

static bool br_all_same(const br_out *a, const br_out *b) {
  bool same = tt_same_bits(a->y, b->y) && tt_same_bits(a->rm, b->rm) && tt_same_bits(a->rv, b->rv);
  for (int i = 0; i < 3; i++) same = same && tt_same_bits(a->g[i], b->g[i]);
  return same;
}

/* x with whole rows of equal values (their normalised value is exactly 0 where the mean equals
 * them; elsewhere about half the values end up below zero) */
static ct_tensor *br_input(int nd, const int64_t *shape, ct_dtype dt) {
  ct_tensor *x = tt_rand(&br_state, nd, shape, dt, 2.0, 0.25, false);
  int64_t n = ct_numel(x);
  double *buf = malloc((size_t)n * 8);
  ct_copy_to_buffer(x, buf, CT_FLOAT64, n);
  for (int64_t i = 0; i + 3 < n; i += 7) buf[i] = buf[i + 1] = buf[i + 2] = 0.0; /* repeated zeros */
  ct_tensor *r = ct_from_buffer(buf, CT_FLOAT64, nd, shape, ct_opts_dtype(dt));
  ct_release(x);
  free(buf);
  if (r) ct_requires_grad_(r, true);
  return r;
}

static void br_case(int nd, const int64_t *shape, bool training, int wb, ct_dtype dt, bool second) {
  int64_t C = shape[1];
  ct_tensor *x = br_input(nd, shape, dt);
  ct_tensor *w = (wb & 1) ? tt_rand(&br_state, 1, &C, dt, 1.0, 0.5, true) : NULL;
  ct_tensor *b = (wb & 2) ? tt_rand(&br_state, 1, &C, dt, 1.0, 0.0, true) : NULL;
  ct_tensor *rm = tt_rand(&br_state, 1, &C, dt, 0.5, 0.25, false);
  ct_tensor *rv = tt_rand(&br_state, 1, &C, dt, 0.4, 1.0, false);
  ct_tensor *gy = tt_rand(&br_state, nd, shape, dt, 1.0, 0.0, false);
  ct_tensor *v = second ? tt_rand(&br_state, nd, shape, dt, 1.0, 0.0, false) : NULL;
  ct_tensor *in[3] = {x, w, b};
  char what[160];
  snprintf(what, sizeof what, "bn_relu nd=%d C=%lld last=%lld %s wb=%d %s%s", nd, (long long)C,
           (long long)shape[nd - 1], training ? "train" : "eval", wb, ct_dtype_name(dt), second ? " second-order" : "");
  ct_simd_isa was = ct_simd_active();
  ct_simd_force(CT_SIMD_PORTABLE);
  br_out ref;
  br_run(false, in, rm, rv, training, gy, v, &ref);
  /* the mask must take part: some outputs are zero, some positive */
  double *yb = malloc((size_t)ct_numel(ref.y) * 8);
  ct_copy_to_buffer(ref.y, yb, CT_FLOAT64, ct_numel(ref.y));
  int64_t zeros = 0;
  for (int64_t i = 0; i < ct_numel(ref.y); i++) zeros += yb[i] == 0.0;
  free(yb);
  if (zeros == 0 || zeros == ct_numel(ref.y)) ct_test_fail(__FILE__, __LINE__, "%s: %lld zeros of %lld", what, (long long)zeros, (long long)ct_numel(ref.y));
  int prev = ct_get_num_threads();
  for (int lvl = CT_SIMD_PORTABLE; lvl <= (int)ct_simd_cpu_level(); lvl++) {
    ct_simd_force((ct_simd_isa)lvl);
    for (int th = 1; th <= 3; th += 2) {
      ct_set_num_threads(th);
      br_out sep, fus;
      br_run(false, in, rm, rv, training, gy, v, &sep);
      br_run(true, in, rm, rv, training, gy, v, &fus);
      if (!br_all_same(&fus, &ref) || !br_all_same(&sep, &ref))
        ct_test_fail(__FILE__, __LINE__, "%s: %s, %d threads: fused %s, separate %s the portable separate ops' bits",
                     what, ct_simd_isa_name((ct_simd_isa)lvl), th, br_all_same(&fus, &ref) ? "keeps" : "differs from",
                     br_all_same(&sep, &ref) ? "keeps" : "differs from");
      for (int i = 0; second && i < 3; i++) {
        double e = tt_excess(fus.h[i], sep.h[i], dt == CT_FLOAT64 ? 1e-10 : 1e-4, dt == CT_FLOAT64 ? 1e-12 : 1e-4);
        if (!(e <= 1)) ct_test_fail(__FILE__, __LINE__, "%s: second-order grad %d excess %g", what, i, e);
      }
      br_free(&sep);
      br_free(&fus);
    }
  }
  ct_set_num_threads(prev);
  ct_simd_force(was);
  br_free(&ref);
  ct_tensor *all[7] = {x, w, b, rm, rv, gy, v};
  for (int i = 0; i < 7; i++) ct_release(all[i]);
}

TEST(bn_relu_fused_same_bits) {
  static const struct {
    int nd;
    int64_t s[4];
  } shapes[] = {{4, {3, 4, 5, 6}}, {4, {4, 8, 4, 4}}, {4, {2, 3, 9, 11}}, {3, {4, 3, 21}}, {2, {16, 5}}};
  int64_t n0 = ct_live_tensors();
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int wb = 0; wb < 4; wb += 3) {
      br_case(shapes[si].nd, shapes[si].s, true, wb, CT_FLOAT32, false);
      br_case(shapes[si].nd, shapes[si].s, false, wb, CT_FLOAT32, false);
    }
  int64_t s4[4] = {2, 3, 5, 7};
  br_case(4, s4, true, 3, CT_FLOAT64, false);
  br_case(4, s4, false, 1, CT_FLOAT64, false);
  br_case(4, s4, true, 3, CT_FLOAT64, true);
  br_case(4, s4, true, 3, CT_FLOAT32, true);
  CHECK(ct_live_tensors() == n0);
}

/* The module form: output, running stats and num_batches_tracked of module -> relu; a non-batch-norm
 * module gets module -> relu; errors are the module's. */
TEST(bn_relu_module_form) {
  int64_t n0 = ct_live_tensors();
  ct_module *a = ct_batch_norm2d_new(4, 1e-5, 0.1, true, true), *b = ct_batch_norm2d_new(4, 1e-5, 0.1, true, true);
  CHECK(a && b);
  int64_t s[4] = {3, 4, 5, 5};
  for (int step = 0; step < 3; step++) {
    ct_tensor *x = tt_rand(&br_state, 4, s, CT_FLOAT32, 1.5, 0.3, false);
    ct_tensor *ya = ct_module_forward(a, x), *ra = ya ? ct_relu(ya) : NULL;
    ct_tensor *rb = ct_module_forward_bn_relu(b, x);
    CHECK(ra && rb && tt_same_bits(ra, rb));
    CHECK(tt_same_bits(ct_module_buffer(a, "running_mean"), ct_module_buffer(b, "running_mean")));
    CHECK(tt_same_bits(ct_module_buffer(a, "running_var"), ct_module_buffer(b, "running_var")));
    CHECK(tt_same_bits(ct_module_buffer(a, "num_batches_tracked"), ct_module_buffer(b, "num_batches_tracked")));
    ct_release(x);
    ct_release(ya);
    ct_release(ra);
    ct_release(rb);
  }
  ct_module_eval(a);
  ct_module_eval(b);
  ct_tensor *x = tt_rand(&br_state, 4, s, CT_FLOAT32, 1.5, 0.3, false);
  ct_tensor *ya = ct_module_forward(a, x), *ra = ya ? ct_relu(ya) : NULL, *rb = ct_module_forward_bn_relu(b, x);
  CHECK(ra && rb && tt_same_bits(ra, rb));
  ct_release(ya);
  ct_release(ra);
  ct_release(rb);
  int64_t s3[3] = {2, 4, 5};
  ct_tensor *z = ct_zeros(3, s3, ct_opts());
  CHECK_ERR_PTR(ct_module_forward_bn_relu(b, z), "expected 4D input (got 3D input)");
  ct_release(z);
  ct_module *id = ct_identity_new();
  ct_tensor *ri = ct_module_forward_bn_relu(id, x), *rr = ct_relu(x);
  CHECK(ri && rr && tt_same_bits(ri, rr));
  ct_release(ri);
  ct_release(rr);
  ct_release(x);
  ct_module_free(id);
  ct_module_free(a);
  ct_module_free(b);
  CHECK(ct_live_tensors() == n0);
}

/* ReLU's backward with an expanded gradient (a mean's backward: ResNet's last ReLU before the
 * average pool) takes the fast select after one copy: the same bits as the generic op
 * (ct_fast_set_enabled(false)), and x <= 0 -> 0 element for element. */
TEST(relu_backward_expanded_grad) {
  int64_t n0 = ct_live_tensors();
  int64_t s[4] = {4, 8, 3, 5}, s1[4] = {4, 8, 1, 1};
  ct_tensor *x = br_input(4, s, CT_FLOAT32), *g1 = tt_rand(&br_state, 4, s1, CT_FLOAT32, 1.0, 0.0, false);
  ct_tensor *g = g1 ? ct_expand(g1, 4, s) : NULL;
  CHECK(x && g);
  ct_tensor *gx[2] = {0};
  for (int fast = 0; fast < 2 && x && g; fast++) {
    ct_fast_set_enabled(fast);
    ct_tensor *y = ct_relu(x), *gg = g;
    CHECK_OK(ct_autograd_grad(1, &y, &gg, 1, &x, &gx[fast], false, false, false));
    ct_release(y);
  }
  ct_fast_set_enabled(true);
  CHECK(gx[0] && gx[1] && tt_same_bits(gx[0], gx[1]));
  double *xv = malloc(sizeof(double) * 600), *gv = malloc(sizeof(double) * 32), *ov = malloc(sizeof(double) * 600);
  ct_copy_to_buffer(x, xv, CT_FLOAT64, 480);
  ct_copy_to_buffer(g1, gv, CT_FLOAT64, 32);
  if (gx[1]) ct_copy_to_buffer(gx[1], ov, CT_FLOAT64, 480);
  int bad = 0, zeros = 0;
  for (int i = 0; gx[1] && i < 480; i++) {
    zeros += xv[i] <= 0;
    bad += ov[i] != (xv[i] <= 0 ? 0.0 : gv[i / 15]);
  }
  CHECK(bad == 0 && zeros > 0 && zeros < 480);
  free(xv);
  free(gv);
  free(ov);
  ct_release(gx[0]);
  ct_release(gx[1]);
  ct_release(g);
  ct_release(g1);
  ct_release(x);
  CHECK(ct_live_tensors() == n0);
}
