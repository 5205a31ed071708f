/* relu(batch_norm(x) + residual) as one op (ct_batch_norm_add_relu: native_batch_norm with k3 + k4; ResNet's
 * BasicBlock tails through ct_module_forward_bn_add_relu) against the three ops apart (ct_batch_norm, ct_add,
 * ct_relu): the same float operations in the same order, so the output, the running statistics and the gradients
 * of x, residual, weight and bias are the same bits. CPU: every SIMD level, 1 and 3 threads, NCHW and
 * channels-last, training and eval, with and without weight/bias, residuals that cancel the batch norm's output
 * exactly (relu's kink: relu'(0) = 0), gradients asked for any subset of the inputs (the paths where g' comes
 * from the sums pass and those where it does not), create_graph (the composed backward); errors and the fallbacks
 * (broadcast residual, another dtype: the three ops, as PyTorch's add promotes); the module form; the whole
 * ResNet-18 CIFAR forward + backward fused vs CT_BN_ADD_RELU=0. CUDA (skipped with a count without a GPU): the same
 * against CT_CUDA_BN_ADD_RELU=0 to the bit and against the CPU within 1e-5, channels-last and NCHW, every kernel
 * family (channels-last sums/finish/apply with PDL on and off, the NCHW fast kernel, the generic kernel in float32
 * and float64), counts that the fused kernels ran; the ResNet-18 CIFAR step eager and as a CUDA graph. */
#include "test.h"
#include "resnet_step_fixture.h"
#include "autograd/autograd.h"
#include "ops/op_table.h"
#include "backend/cpu/simd/simd.h"
#include "ctorch/cuda.h"
#include "ctorch/models.h"
#include "ctorch/train.h"
#include <stdlib.h>

ct_tensor *ct_module_forward_bn_add_relu(ct_module *m, const ct_tensor *x, const ct_tensor *residual);

static uint64_t ar_state = 0x9E3779B97F4A7C15ull;


typedef struct {
  ct_tensor *y, *rm, *rv, *g[4]; /* g: x, residual, weight, bias */
  bool fused_node;               /* y's grad_fn is native_batch_norm with the residual (k4) */
} ar_out;

static void ar_free(ar_out *o) {
  ct_release(o->y);
  ct_release(o->rm);
  ct_release(o->rv);
  for (int i = 0; i < 4; i++) ct_release(o->g[i]);
  memset(o, 0, sizeof *o);
}

/* in: x, residual, weight?, bias?; fused: ct_batch_norm_add_relu, else the three ops; then d sum(y gy) / d (the
 * inputs that require grad). create_graph: the gradients are taken with create_graph (detached copies kept). */
static void ar_run(bool fused, ct_tensor *const *in, const ct_tensor *rm0, const ct_tensor *rv0, bool training,
                   const ct_tensor *gy, bool create_graph, ar_out *o) {
  memset(o, 0, sizeof *o);
  o->rm = rm0 ? ct_clone(rm0) : NULL;
  o->rv = rv0 ? ct_clone(rv0) : NULL;
  if (fused) o->y = ct_batch_norm_add_relu(in[0], in[1], o->rm, o->rv, in[2], in[3], training, 0.1, 1e-5);
  else {
    ct_tensor *b = ct_batch_norm(in[0], o->rm, o->rv, in[2], in[3], training, 0.1, 1e-5);
    ct_tensor *a = b ? ct_add(b, in[1]) : NULL;
    o->y = a ? ct_relu(a) : NULL;
    ct_release(b);
    ct_release(a);
  }
  if (!o->y) {
    ct_test_fail(__FILE__, __LINE__, "batch_norm%s failed: %s", fused ? "_add_relu" : " + add + relu", ct_last_error());
    return;
  }
  ct_node *fn = o->y->grad_fn;
  o->fused_node = fn && fn->op == CT_OP_native_batch_norm && fn->a.k[4];
  ct_tensor *req[4];
  int idx[4], k = 0;
  for (int i = 0; i < 4; i++)
    if (in[i] && ct_requires_grad(in[i])) idx[k] = i, req[k++] = in[i];
  if (!k) return;
  ct_tensor *gs[4] = {0}, *gyc = (ct_tensor *)gy;
  if (ct_autograd_grad(1, &o->y, &gyc, k, req, gs, create_graph, create_graph, true) != CT_OK) {
    ct_test_fail(__FILE__, __LINE__, "grad failed: %s", ct_last_error());
    return;
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

static const char *const ar_names[7] = {"y", "running_mean", "running_var", "dx", "dresidual", "dweight", "dbias"};
static const ct_tensor *ar_part(const ar_out *o, int k) { return k == 0 ? o->y : k == 1 ? o->rm : k == 2 ? o->rv : o->g[k - 3]; }

/* the first part that differs, or -1 */
static int ar_diff(const ar_out *a, const ar_out *b) {
  for (int k = 0; k < 7; k++)
    if (!tt_same_bits(ar_part(a, k), ar_part(b, k))) return k;
  if (a->y && b->y && ct_is_channels_last(a->y) != ct_is_channels_last(b->y)) return 0;
  return -1;
}

/* x [shape] (some whole rows equal), and a residual of either sign. kink: every 5th element of the residual is minus
 * the batch norm's output there as the device computes it (x channels-last if cl), so y + res == 0 exactly (relu's
 * kink); otherwise (for comparisons across devices, whose batch norm outputs may differ in the last bit) every
 * y + res is kept at least 1e-3 away from 0. */
static void ar_inputs(int nd, const int64_t *shape, ct_dtype dt, bool training, const ct_tensor *w, const ct_tensor *b,
                      const ct_tensor *rm, const ct_tensor *rv, const ct_device *kink, bool cl, ct_tensor **px,
                      ct_tensor **pres) {
  ct_tensor *x = tt_rand(&ar_state, nd, shape, dt, 2.0, 0.25, false);
  int64_t n = ct_numel(x);
  double *buf = malloc((size_t)n * 8);
  ct_copy_to_buffer(x, buf, CT_FLOAT64, n);
  for (int64_t i = 0; i + 3 < n; i += 7) buf[i] = buf[i + 1] = buf[i + 2] = 0.0;
  ct_release(x);
  x = ct_from_buffer(buf, CT_FLOAT64, nd, shape, ct_opts_dtype(dt));
  ct_device dev = kink ? *kink : ct_cpu();
  ct_tensor *xd = tt_leaf(x, dev, cl, false), *wd = tt_leaf(w, dev, false, false), *bd = tt_leaf(b, dev, false, false);
  ct_tensor *rmc = tt_leaf(rm, dev, false, false), *rvc = tt_leaf(rv, dev, false, false);
  ct_tensor *yd = ct_batch_norm(xd, rmc, rvc, wd, bd, training, 0.1, 1e-5);
  ct_tensor *yb = yd ? ct_to_device(yd, ct_cpu()) : NULL;
  ct_tensor *r = tt_rand(&ar_state, nd, shape, dt, 1.5, 0.0, false);
  double *ybuf = malloc((size_t)n * 8);
  ct_copy_to_buffer(yb, ybuf, CT_FLOAT64, n);
  ct_copy_to_buffer(r, buf, CT_FLOAT64, n);
  for (int64_t i = 0; i < n; i++)
    if (kink && i % 5 == 0) buf[i] = -ybuf[i];
    else if (!kink && fabs(buf[i] + ybuf[i]) < 1e-3) buf[i] += buf[i] + ybuf[i] < 0 ? -2e-3 : 2e-3;
  ct_release(r);
  *pres = ct_from_buffer(buf, CT_FLOAT64, nd, shape, ct_opts_dtype(dt));
  *px = x;
  free(buf);
  free(ybuf);
  ct_tensor *rel[7] = {xd, wd, bd, rmc, rvc, yd, yb};
  for (int i = 0; i < 7; i++) ct_release(rel[i]);
}

typedef struct {
  int nd;
  int64_t s[4];
  bool training;
  int wb;      /* bit 0 weight, bit 1 bias */
  int rq;      /* requires grad: bit 0 x, 1 residual, 2 weight, 3 bias */
  int cl;      /* 0 NCHW, 1 x and residual channels-last, 2 x channels-last and the residual contiguous */
  ct_dtype dt;
} ar_case;

typedef struct {
  ct_tensor *x, *res, *w, *b, *rm, *rv, *gy;
} ar_data;

/* kink: the device whose batch norm output the residual cancels in places (NULL: none, kept away from 0) */
static void ar_data_make(const ar_case *k, const ct_device *kink, ar_data *d) {
  int64_t C = k->s[1];
  d->w = (k->wb & 1) ? tt_rand(&ar_state, 1, &C, k->dt, 1.0, 0.5, false) : NULL;
  d->b = (k->wb & 2) ? tt_rand(&ar_state, 1, &C, k->dt, 1.0, 0.0, false) : NULL;
  d->rm = tt_rand(&ar_state, 1, &C, k->dt, 0.5, 0.25, false);
  d->rv = tt_rand(&ar_state, 1, &C, k->dt, 0.4, 1.0, false);
  ar_inputs(k->nd, k->s, k->dt, k->training, d->w, d->b, d->rm, d->rv, kink, k->cl != 0, &d->x, &d->res);
  d->gy = tt_rand(&ar_state, k->nd, k->s, k->dt, 1.0, 0.0, false);
}
static void ar_data_free(ar_data *d) {
  ct_tensor *all[7] = {d->x, d->res, d->w, d->b, d->rm, d->rv, d->gy};
  for (int i = 0; i < 7; i++) ct_release(all[i]);
  memset(d, 0, sizeof *d);
}

static void ar_what(const ar_case *k, char *buf, size_t n) {
  snprintf(buf, n, "bn_add_relu [%lld,%lld,%lld,%lld] %s wb=%d rq=%d cl=%d %s", (long long)k->s[0], (long long)k->s[1],
           (long long)(k->nd > 2 ? k->s[2] : 1), (long long)(k->nd > 3 ? k->s[3] : 1), k->training ? "train" : "eval",
           k->wb, k->rq, k->cl, ct_dtype_name(k->dt));
}

/* inputs of a case on dev (in: x, residual, weight, bias), the running stats and gy there too */
static void ar_dev_inputs(const ar_case *k, const ar_data *d, ct_device dev, ct_tensor **in, ct_tensor **rm,
                          ct_tensor **rv, ct_tensor **gy) {
  in[0] = tt_leaf(d->x, dev, k->cl != 0, k->rq & 1);
  in[1] = tt_leaf(d->res, dev, k->cl == 1, k->rq & 2);
  in[2] = tt_leaf(d->w, dev, false, k->rq & 4);
  in[3] = tt_leaf(d->b, dev, false, k->rq & 8);
  *rm = tt_leaf(d->rm, dev, false, false);
  *rv = tt_leaf(d->rv, dev, false, false);
  *gy = tt_leaf(d->gy, dev, k->cl != 0, false);
}
static void ar_dev_free(ct_tensor **in, ct_tensor *rm, ct_tensor *rv, ct_tensor *gy) {
  for (int i = 0; i < 4; i++) ct_release(in[i]);
  ct_release(rm);
  ct_release(rv);
  ct_release(gy);
}

/* CPU: fused vs the three ops at every SIMD level and 1 / 3 threads, and every run equal to the portable
 * single-thread three ops; the fused node present (the mask takes part: some outputs zero, some positive) */
static void ar_cpu_case(const ar_case *k, bool all_levels) {
  ar_data d;
  ct_device cpu = ct_cpu();
  ar_data_make(k, &cpu, &d);
  char what[200];
  ar_what(k, what, sizeof what);
  ct_tensor *in[4], *rm, *rv, *gy;
  ar_dev_inputs(k, &d, ct_cpu(), in, &rm, &rv, &gy);
  ct_simd_isa was = ct_simd_active();
  int prev = ct_get_num_threads();
  ct_simd_force(CT_SIMD_PORTABLE);
  ct_set_num_threads(1);
  ar_out ref;
  ar_run(false, in, rm, rv, k->training, gy, false, &ref);
  if (ref.y) {
    double *yb = malloc((size_t)ct_numel(ref.y) * 8);
    ct_copy_to_buffer(ref.y, yb, CT_FLOAT64, ct_numel(ref.y));
    int64_t zeros = 0;
    for (int64_t i = 0; i < ct_numel(ref.y); i++) zeros += yb[i] == 0.0;
    free(yb);
    if (zeros == 0 || zeros == ct_numel(ref.y))
      ct_test_fail(__FILE__, __LINE__, "%s: %lld zeros of %lld", what, (long long)zeros, (long long)ct_numel(ref.y));
  }
  int top = all_levels ? (int)ct_simd_cpu_level() : CT_SIMD_PORTABLE;
  for (int lvl = CT_SIMD_PORTABLE; lvl <= top; lvl++) {
    ct_simd_force((ct_simd_isa)lvl);
    for (int th = 1; th <= (all_levels ? 3 : 1); th += 2) {
      ct_set_num_threads(th);
      ar_out sep, fus;
      ar_run(false, in, rm, rv, k->training, gy, false, &sep);
      ar_run(true, in, rm, rv, k->training, gy, false, &fus);
      int df = ar_diff(&fus, &ref), ds = ar_diff(&sep, &ref);
      if (df >= 0 || ds >= 0)
        ct_test_fail(__FILE__, __LINE__, "%s: %s, %d threads: fused %s%s, separate %s%s", what,
                     ct_simd_isa_name((ct_simd_isa)lvl), th, df >= 0 ? "differs in " : "ok", df >= 0 ? ar_names[df] : "",
                     ds >= 0 ? "differs in " : "ok", ds >= 0 ? ar_names[ds] : "");
      if (!fus.fused_node) ct_test_fail(__FILE__, __LINE__, "%s: the fused op did not run", what);
      if (sep.fused_node) ct_test_fail(__FILE__, __LINE__, "%s: the separate ops recorded the fused node", what);
      ar_free(&sep);
      ar_free(&fus);
    }
  }
  ct_set_num_threads(prev);
  ct_simd_force(was);
  ar_free(&ref);
  ar_dev_free(in, rm, rv, gy);
  ar_data_free(&d);
}

TEST(bn_add_relu_same_bits) {
  static const struct {
    int nd;
    int64_t s[4];
  } shapes[] = {{4, {16, 64, 8, 8}}, {4, {3, 5, 7, 11}}, {4, {2, 3, 9, 12}}, {3, {4, 3, 21}}, {2, {16, 5}}};
  int64_t n0 = ct_live_tensors();
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int cl = 0; cl < (shapes[si].nd == 4 ? 3 : 1); cl++)
      for (int tr = 1; tr >= 0; tr--)
        for (int wb = 0; wb < 4; wb += 3) {
          ar_case k = {shapes[si].nd, {0}, tr, wb, 1 | 2 | (wb ? 12 : 0), cl, CT_FLOAT32};
          memcpy(k.s, shapes[si].s, sizeof k.s);
          ar_cpu_case(&k, si < 2 && cl < 2);
        }
  /* float64; and gradients for subsets of the inputs: the residual alone and eval's dx alone take g' from the
   * ReLU's gradient op (no sums pass to write it), the rest from the kernels' sums pass */
  static const int rqs[] = {2, 1, 3, 4, 8, 12, 5, 10};
  for (int tr = 0; tr < 2; tr++)
    for (size_t i = 0; i < sizeof rqs / sizeof rqs[0]; i++)
      for (int cl = 0; cl < 2; cl++) {
        ar_case k = {4, {4, 6, 5, 4}, tr, 3, rqs[i], cl, CT_FLOAT32};
        ar_cpu_case(&k, false);
      }
  ar_case k64 = {4, {3, 5, 7, 11}, true, 3, 15, 0, CT_FLOAT64};
  ar_cpu_case(&k64, true);
  k64.training = false;
  k64.wb = 1;
  k64.rq = 7;
  ar_cpu_case(&k64, true);
  CHECK(ct_live_tensors() == n0);
}

/* create_graph: the first-order gradients are still the three ops' bits (both run the composed backward), the
 * second order d sum(dx v) / d(x, residual, weight, bias) agrees to rounding */
TEST(bn_add_relu_double_backward) {
  int64_t n0 = ct_live_tensors();
  for (int dti = 0; dti < 2; dti++) {
    ct_dtype dt = dti ? CT_FLOAT64 : CT_FLOAT32;
    ar_case k = {4, {3, 4, 5, 6}, true, 3, 15, 0, dt};
    ar_data d;
    ct_device cpu = ct_cpu();
    ar_data_make(&k, &cpu, &d);
    ct_tensor *in[4], *rm, *rv, *gy;
    ar_dev_inputs(&k, &d, ct_cpu(), in, &rm, &rv, &gy);
    ct_tensor *v = tt_rand(&ar_state, 4, k.s, dt, 1.0, 0.0, false);
    ct_tensor *h[2][4];
    memset(h, 0, sizeof h);
    for (int fused = 0; fused < 2; fused++) {
      ct_tensor *y = fused ? ct_batch_norm_add_relu(in[0], in[1], rm, rv, in[2], in[3], true, 0.1, 1e-5) : NULL;
      if (!fused) {
        ct_tensor *b = ct_batch_norm(in[0], rm, rv, in[2], in[3], true, 0.1, 1e-5), *a = b ? ct_add(b, in[1]) : NULL;
        y = a ? ct_relu(a) : NULL;
        ct_release(b);
        ct_release(a);
      }
      CHECK(y);
      if (!y) continue;
      ct_tensor *gs[4] = {0};
      CHECK_OK(ct_autograd_grad(1, &y, &gy, 4, in, gs, true, true, true));
      /* the residual's gradient (the first order) is differentiable too: sum(dx v) + sum(dres v) */
      ct_tensor *p = gs[0] ? ct_mul(gs[0], v) : NULL, *q = gs[1] ? ct_mul(gs[1], v) : NULL;
      ct_tensor *sp = p ? ct_sum(p) : NULL, *sq = q ? ct_sum(q) : NULL, *s = sp && sq ? ct_add(sp, sq) : NULL;
      CHECK(s && ct_autograd_grad(1, &s, NULL, 4, in, h[fused], false, false, true) == CT_OK);
      for (int i = 0; i < 4; i++) ct_release(gs[i]);
      ct_tensor *rel[6] = {p, q, sp, sq, s, y};
      for (int i = 0; i < 6; i++) ct_release(rel[i]);
    }
    for (int i = 0; i < 4; i++) {
      double e = tt_excess(h[1][i], h[0][i], dt == CT_FLOAT64 ? 1e-10 : 1e-4, dt == CT_FLOAT64 ? 1e-12 : 1e-4);
      if (!(e <= 1)) ct_test_fail(__FILE__, __LINE__, "%s: second-order grad %d excess %g", ct_dtype_name(dt), i, e);
      ct_release(h[0][i]);
      ct_release(h[1][i]);
    }
    ct_release(v);
    ar_dev_free(in, rm, rv, gy);
    ar_data_free(&d);
  }
  CHECK(ct_live_tensors() == n0);
}

/* errors: PyTorch's words (the add's broadcasting message, before any running statistic changes); a residual that
 * PyTorch's add would broadcast or promote runs the three ops (the same bits and dtype as them) */
TEST(bn_add_relu_errors_and_fallbacks) {
  int64_t n0 = ct_live_tensors();
  int64_t s[4] = {2, 3, 4, 7}, sbad[4] = {2, 3, 4, 6}, C = 3;
  ct_tensor *x = tt_rand(&ar_state, 4, s, CT_FLOAT32, 1.0, 0.1, true);
  ct_tensor *rbad = tt_rand(&ar_state, 4, sbad, CT_FLOAT32, 1.0, 0.0, false);
  ct_tensor *rm = tt_rand(&ar_state, 1, &C, CT_FLOAT32, 0.5, 0.0, false), *rv = tt_rand(&ar_state, 1, &C, CT_FLOAT32, 0.2, 1.0, false);
  ct_tensor *rm0 = ct_clone(rm), *rv0 = ct_clone(rv);
  CHECK_ERR_PTR(ct_batch_norm_add_relu(x, rbad, rm, rv, NULL, NULL, true, 0.1, 1e-5),
                "The size of tensor a (7) must match the size of tensor b (6) at non-singleton dimension 3");
  CHECK(tt_same_bits(rm, rm0) && tt_same_bits(rv, rv0)); /* refused before the statistics moved */
  CHECK_ERR_PTR(ct_batch_norm_add_relu(x, NULL, rm, rv, NULL, NULL, true, 0.1, 1e-5),
                "batch_norm_add_relu: expected a tensor, got NULL");
  CHECK_ERR_PTR(ct_batch_norm_add_relu(NULL, x, rm, rv, NULL, NULL, true, 0.1, 1e-5), "batch_norm: expected a tensor, got NULL");
  int64_t s1[1] = {3};
  ct_tensor *x1 = ct_zeros(1, s1, ct_opts());
  CHECK_ERR_PTR(ct_batch_norm_add_relu(x1, x1, rm, rv, NULL, NULL, true, 0.1, 1e-5), "Dimension out of range");
  int64_t s2[2] = {1, 3};
  ct_tensor *x2 = ct_zeros(2, s2, ct_opts());
  CHECK_ERR_PTR(ct_batch_norm_add_relu(x2, x2, rm, rv, NULL, NULL, true, 0.1, 1e-5), "Expected more than 1 value per channel when training");
  CHECK(tt_same_bits(rm, rm0) && tt_same_bits(rv, rv0));
  /* fallbacks: [1, C, 1, 1] broadcast, a float64 residual (float64 result), an int64 residual (float32 result) */
  int64_t sb[4] = {1, 3, 1, 1};
  ct_tensor *rs[3] = {tt_rand(&ar_state, 4, sb, CT_FLOAT32, 1.0, 0.0, true), tt_rand(&ar_state, 4, s, CT_FLOAT64, 1.0, 0.0, true), NULL};
  ct_tensor *ri = tt_rand(&ar_state, 4, s, CT_FLOAT32, 2.0, 0.0, false);
  rs[2] = ri ? ct_to_dtype(ri, CT_INT64) : NULL;
  ct_release(ri);
  ct_dtype want[3] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT32};
  for (int i = 0; i < 3; i++) {
    ct_tensor *in[4] = {x, rs[i], NULL, NULL};
    ct_tensor *gy = tt_rand(&ar_state, 4, s, want[i], 1.0, 0.0, false);
    ar_out a, b;
    ar_run(false, in, rm0, rv0, true, gy, false, &a);
    ar_run(true, in, rm0, rv0, true, gy, false, &b);
    int df = ar_diff(&a, &b);
    if (df >= 0) ct_test_fail(__FILE__, __LINE__, "fallback %d: %s differs from the three ops'", i, ar_names[df]);
    CHECK(b.y && ct_tensor_dtype(b.y) == want[i] && !b.fused_node);
    ar_free(&a);
    ar_free(&b);
    ct_release(gy);
  }
  for (int i = 0; i < 3; i++) ct_release(rs[i]);
  ct_tensor *rel[8] = {x, rbad, rm, rv, rm0, rv0, x1, x2};
  for (int i = 0; i < 8; i++) ct_release(rel[i]);
  CHECK(ct_live_tensors() == n0);
}

/* The module form: output, gradients, running stats and num_batches_tracked of module -> add -> relu, training
 * (three steps) and eval; a module that is not a batch norm gets the three ops; a NULL residual is refused. */
TEST(bn_add_relu_module_form) {
  int64_t n0 = ct_live_tensors();
  ct_module *a = ct_batch_norm2d_new(4, 1e-5, 0.1, true, true), *b = ct_batch_norm2d_new(4, 1e-5, 0.1, true, true);
  CHECK(a && b);
  int64_t s[4] = {3, 4, 5, 5};
  for (int step = 0; step < 4; step++) {
    if (step == 3) {
      ct_module_eval(a);
      ct_module_eval(b);
    }
    ct_tensor *x = tt_rand(&ar_state, 4, s, CT_FLOAT32, 1.5, 0.3, true), *r = tt_rand(&ar_state, 4, s, CT_FLOAT32, 1.0, 0.0, true);
    ct_tensor *ya = ct_module_forward(a, x), *sa = ya ? ct_add(ya, r) : NULL, *ra = sa ? ct_relu(sa) : NULL;
    ct_tensor *rb = ct_module_forward_bn_add_relu(b, x, r);
    CHECK(ra && rb && tt_same_bits(ra, rb));
    CHECK(rb && rb->grad_fn && rb->grad_fn->op == CT_OP_native_batch_norm && rb->grad_fn->a.k[4]);
    ct_tensor *ins[2] = {x, r}, *ga[2] = {0}, *gb[2] = {0}, *gy = tt_rand(&ar_state, 4, s, CT_FLOAT32, 1.0, 0.0, false);
    if (ra && rb) {
      CHECK_OK(ct_autograd_grad(1, &ra, &gy, 2, ins, ga, false, false, false));
      CHECK_OK(ct_autograd_grad(1, &rb, &gy, 2, ins, gb, false, false, false));
      CHECK(ga[0] && ga[1] && tt_same_bits(ga[0], gb[0]) && tt_same_bits(ga[1], gb[1]));
    }
    ct_release(gy);
    ct_release(ya);
    ct_release(sa);
    ct_release(ra);
    ct_release(rb);
    ct_release(x);
    ct_release(r);
    for (int i = 0; i < 2; i++) {
      ct_release(ga[i]);
      ct_release(gb[i]);
    }
    CHECK(tt_same_bits(ct_module_buffer(a, "running_mean"), ct_module_buffer(b, "running_mean")));
    CHECK(tt_same_bits(ct_module_buffer(a, "running_var"), ct_module_buffer(b, "running_var")));
    CHECK(tt_same_bits(ct_module_buffer(a, "num_batches_tracked"), ct_module_buffer(b, "num_batches_tracked")));
  }
  ct_tensor *x = tt_rand(&ar_state, 4, s, CT_FLOAT32, 1.5, 0.3, false);
  CHECK_ERR_PTR(ct_module_forward_bn_add_relu(b, x, NULL), "expected a tensor, got NULL");
  ct_module *id = ct_identity_new();
  ct_tensor *ri = ct_module_forward_bn_add_relu(id, x, x), *sum = ct_add(x, x), *rr = sum ? ct_relu(sum) : NULL;
  CHECK(ri && rr && tt_same_bits(ri, rr));
  ct_release(ri);
  ct_release(rr);
  ct_release(sum);
  ct_release(x);
  ct_module_free(id);
  ct_module_free(a);
  ct_module_free(b);
  CHECK(ct_live_tensors() == n0);
}

/* native_batch_norm nodes with the residual fused (k4) in the graph behind t */
static int ar_count_fused(const ct_tensor *t) {
  ct_node *stack[4096], *seen[4096];
  int ns = 0, nseen = 0, count = 0;
  if (t && t->grad_fn) stack[ns++] = t->grad_fn;
  while (ns) {
    ct_node *n = stack[--ns];
    bool dup = false;
    for (int i = 0; i < nseen && !dup; i++) dup = seen[i] == n;
    if (dup || nseen == 4096) continue;
    seen[nseen++] = n;
    count += n->op == CT_OP_native_batch_norm && n->a.k[4];
    for (int i = 0; i < n->n_in; i++)
      if (n->next[i].fn && ns < 4096) stack[ns++] = n->next[i].fn;
  }
  return count;
}

/* ResNet-18 CIFAR in training on the CPU, forward + backward, fused (8 block tails) vs CT_BN_ADD_RELU=0: the
 * output, the input's gradient, every parameter's gradient and every buffer the same bits */
TEST(bn_add_relu_resnet_cpu) {
  int64_t n0 = ct_live_tensors();
  char *saved = tt_env_save("CT_BN_ADD_RELU");
  int64_t xs[4] = {2, 3, 16, 16}, os[2] = {2, 10};
  uint64_t st = 1414;
  ct_tensor *x0 = tt_rand(&st, 4, xs, CT_FLOAT32, 1.0, 0.0, false), *w0 = tt_rand(&st, 2, os, CT_FLOAT32, 1.0, 0.0, false);
  ct_tensor *out[2] = {0}, *gx[2] = {0};
  ct_dict *pd[2] = {0}, *bd[2] = {0};
  ct_module *m[2] = {0};
  int fusedn[2] = {-1, -1};
  for (int run = 0; run < 2; run++) {
    tt_env_set("CT_BN_ADD_RELU", run ? "0" : NULL);
    ct_manual_seed(14);
    m[run] = ct_resnet18_cifar_new(10);
    CHECK(m[run]);
    if (!m[run]) break;
    ct_module_train(m[run], true);
    ct_tensor *x = tt_leaf(x0, ct_cpu(), false, true);
    out[run] = ct_module_forward(m[run], x);
    CHECK(out[run]);
    fusedn[run] = ar_count_fused(out[run]);
    ct_tensor *p = out[run] ? ct_mul(out[run], w0) : NULL, *l = p ? ct_sum(p) : NULL;
    CHECK(l && ct_backward(l, NULL, false, false) == CT_OK);
    gx[run] = ct_grad(x) ? ct_clone(ct_grad(x)) : NULL;
    pd[run] = ct_dict_new();
    bd[run] = ct_dict_new();
    ct_module_named_parameters(m[run], pd[run]);
    ct_module_named_buffers(m[run], bd[run]);
    ct_release(p);
    ct_release(l);
    ct_release(x);
  }
  tt_env_set("CT_BN_ADD_RELU", saved);
  free(saved);
  if (fusedn[0] != 8 || fusedn[1] != 0)
    ct_test_fail(__FILE__, __LINE__, "fused block tails in the graph: %d with the fused path (expected 8), %d without", fusedn[0], fusedn[1]);
  CHECK(tt_same_bits(out[0], out[1]));
  CHECK(gx[0] && tt_same_bits(gx[0], gx[1]));
  if (pd[0] && pd[1] && bd[0] && bd[1]) {
    CHECK(ct_dict_len(pd[0]) == ct_dict_len(pd[1]) && ct_dict_len(bd[0]) == ct_dict_len(bd[1]));
    int64_t badg = 0, badb = 0;
    for (int64_t i = 0; i < ct_dict_len(pd[0]) && i < ct_dict_len(pd[1]); i++) {
      const ct_tensor *g0 = ct_grad(ct_dict_tensor(pd[0], i)), *g1 = ct_grad(ct_dict_tensor(pd[1], i));
      badg += !(g0 && tt_same_bits(g0, g1));
    }
    for (int64_t i = 0; i < ct_dict_len(bd[0]) && i < ct_dict_len(bd[1]); i++)
      badb += !tt_same_bits(ct_dict_tensor(bd[0], i), ct_dict_tensor(bd[1], i));
    if (badg || badb) ct_test_fail(__FILE__, __LINE__, "%lld parameter gradients and %lld buffers differ", (long long)badg, (long long)badb);
  }
  for (int run = 0; run < 2; run++) {
    ct_release(out[run]);
    ct_release(gx[run]);
    ct_dict_free(pd[run]);
    ct_dict_free(bd[run]);
    ct_module_free(m[run]);
  }
  ct_release(x0);
  ct_release(w0);
  CHECK(ct_live_tensors() == n0);
}

/* ---- CUDA ---- */
CT_GPU_GROUP(cuda_bnar)
#define BNAR_TEST(name) CT_GPU_TEST(cuda_bnar, name)

#ifdef CT_HAVE_CUDA
void ct_cuda_bn_add_relu_counts(int64_t out[2]);
int64_t ct_cuda_bn_pdl_count(void);
#else /* never reached: the GPU tests are skipped without CUDA */
static void ct_cuda_bn_add_relu_counts(int64_t out[2]) { out[0] = out[1] = 0; }
static int64_t ct_cuda_bn_pdl_count(void) { return 0; }
#endif

/* One case on CUDA: the fused op (under the kernel-choosing switch sw=val) vs CT_CUDA_BN_ADD_RELU=0 to the bit, both
 * vs the CPU's three ops within 1e-5; the fused kernels ran (forward with the residual, backward writing g'
 * unless g' comes from the ReLU's gradient op) and the switched-off run launched none of them. */
static void ar_cuda_case1(const ar_case *k, const char *sw, const char *val, bool kink);
static void ar_cuda_case(const ar_case *k, const char *sw, const char *val) {
  ar_cuda_case1(k, sw, val, true);
  ar_cuda_case1(k, sw, val, false);
}
/* kink: residuals cancelling the CUDA batch norm's output exactly (bits vs the switch only); else the CPU too */
static void ar_cuda_case1(const ar_case *k, const char *sw, const char *val, bool kink) {
  ar_data d;
  ct_device cuda = ct_cuda(0);
  ar_data_make(k, kink ? &cuda : NULL, &d);
  char what[240];
  ar_what(k, what, sizeof what);
  if (sw) snprintf(what + strlen(what), sizeof what - strlen(what), " %s=%s", sw, val);
  snprintf(what + strlen(what), sizeof what - strlen(what), kink ? " (kinks)" : "");
  ct_tensor *in[4], *rm, *rv, *gy;
  ar_out cpu;
  memset(&cpu, 0, sizeof cpu);
  if (!kink) {
    ar_dev_inputs(k, &d, ct_cpu(), in, &rm, &rv, &gy);
    ar_run(false, in, rm, rv, k->training, gy, false, &cpu);
    ar_dev_free(in, rm, rv, gy);
  }
  char *old = sw ? tt_env_save(sw) : NULL;
  if (sw) tt_env_set(sw, val);
  ar_out gpu[2];
  int64_t cnt[3][2];
  ct_cuda_bn_add_relu_counts(cnt[0]);
  for (int off = 0; off < 2; off++) {
    ar_dev_inputs(k, &d, ct_cuda(0), in, &rm, &rv, &gy);
    tt_env_set("CT_CUDA_BN_ADD_RELU", off ? "0" : NULL);
    ar_run(true, in, rm, rv, k->training, gy, false, &gpu[off]);
    tt_env_set("CT_CUDA_BN_ADD_RELU", NULL);
    ct_cuda_synchronize(0);
    ct_cuda_bn_add_relu_counts(cnt[off + 1]);
    ar_dev_free(in, rm, rv, gy);
  }
  if (sw) tt_env_set(sw, old);
  free(old);
  int df = ar_diff(&gpu[0], &gpu[1]);
  if (df >= 0) ct_test_fail(__FILE__, __LINE__, "%s: fused %s differs from CT_CUDA_BN_ADD_RELU=0's", what, ar_names[df]);
  if (!gpu[0].fused_node || gpu[1].fused_node)
    ct_test_fail(__FILE__, __LINE__, "%s: fused node %d / %d (expected 1 / 0)", what, gpu[0].fused_node, gpu[1].fused_node);
  bool sums = ((k->rq & 4) && (k->wb & 1)) || ((k->rq & 8) && (k->wb & 2)) || ((k->rq & 1) && k->training);
  int64_t fw = cnt[1][0] - cnt[0][0], bw = cnt[1][1] - cnt[0][1];
  if (fw != 1 || bw != (sums ? 1 : 0) || cnt[2][0] != cnt[1][0] || cnt[2][1] != cnt[1][1])
    ct_test_fail(__FILE__, __LINE__, "%s: fused launches forward %lld backward %lld (expected 1 / %d), switched off %lld / %lld", what,
                 (long long)fw, (long long)bw, sums ? 1 : 0, (long long)(cnt[2][0] - cnt[1][0]), (long long)(cnt[2][1] - cnt[1][1]));
  for (int p = 0; p < 7 && !kink; p++) {
    const ct_tensor *c = ar_part(&cpu, p), *g = ar_part(&gpu[0], p);
    if (!c && !g) continue;
    if (!c || !g) {
      ct_test_fail(__FILE__, __LINE__, "%s: %s present on one device only", what, ar_names[p]);
      continue;
    }
    ct_tensor *gc = ct_to_device(g, ct_cpu());
    char nm[280];
    snprintf(nm, sizeof nm, "%s %s", what, ar_names[p]);
    tt_same_as_cpu(__FILE__, __LINE__, "cuda", nm, c, gc, 1e-5, 1e-5);
    ct_release(gc);
  }
  ar_free(&cpu);
  ar_free(&gpu[0]);
  ar_free(&gpu[1]);
  ar_data_free(&d);
}

BNAR_TEST(same_bits) {
  ct_scope *s = ct_scope_begin();
  int64_t pdl0 = ct_cuda_bn_pdl_count();
  static const int64_t shapes[3][4] = {{16, 64, 8, 8}, {3, 5, 7, 11}, {4, 32, 6, 6}};
  for (int si = 0; si < 3; si++)
    for (int cl = 0; cl < 3; cl++)
      for (int tr = 1; tr >= 0; tr--)
        for (int wb = 0; wb < 4; wb += 3) {
          ar_case k = {4, {0}, tr, wb, 1 | 2 | (wb ? 12 : 0), cl, CT_FLOAT32};
          memcpy(k.s, shapes[si], sizeof k.s);
          ar_cuda_case(&k, NULL, NULL);
        }
  if (ct_cuda_bn_pdl_count() == pdl0) ct_test_fail(__FILE__, __LINE__, "no programmatic launches in the channels-last runs");
  /* subsets of the gradients (g' from the sums pass, or from the ReLU's gradient op) */
  static const int rqs[] = {2, 1, 3, 4, 12};
  for (int tr = 0; tr < 2; tr++)
    for (int i = 0; i < 5; i++)
      for (int cl = 0; cl < 2; cl++) {
        ar_case k = {4, {4, 8, 5, 4}, tr, 3, rqs[i], cl, CT_FLOAT32};
        ar_cuda_case(&k, NULL, NULL);
      }
  /* every kernel family: the channels-last kernels with ordinary launches, the NCHW generic kernel (float32 with
   * the fast path off; float64), a 2-D and a 3-D input */
  ar_case kc = {4, {16, 64, 8, 8}, true, 3, 15, 1, CT_FLOAT32};
  ar_cuda_case(&kc, "CT_CUDA_BN_PDL", "0");
  ar_cuda_case(&kc, "CT_CUDA_BN_PDL", "1");
  kc.cl = 0;
  ar_cuda_case(&kc, "CT_CUDA_BN_FAST", "0");
  kc.dt = CT_FLOAT64;
  ar_cuda_case(&kc, NULL, NULL);
  kc.training = false;
  ar_cuda_case(&kc, NULL, NULL);
  ar_case k2 = {2, {64, 5}, true, 3, 15, 0, CT_FLOAT32}, k3 = {3, {4, 6, 33}, true, 1, 7, 0, CT_FLOAT32};
  ar_cuda_case(&k2, NULL, NULL);
  ar_cuda_case(&k3, NULL, NULL);
  ct_scope_end(s);
}

/* The ResNet-18 CIFAR step (channels-last, TF32 as the bench, SGD momentum) with the fused block tails vs
 * CT_CUDA_BN_ADD_RELU=0: eager losses and weights after each step the same bits; both captured as CUDA graphs, the
 * replays the eager bits too; the fused graph has at least 16 nodes fewer (the forward's 8 adds and 8 ReLUs; the
 * backward's ReLU gradients too), the count printed. */
typedef struct {
  rn_step s; /* tests/c/resnet_step_fixture.h */
  const char *sw;
} ar_step;
static ct_status ar_step_run(void *u) {
  ar_step *r = u;
  tt_env_set("CT_CUDA_BN_ADD_RELU", r->sw);
  ct_status st = rn_step_run(&r->s);
  tt_env_set("CT_CUDA_BN_ADD_RELU", NULL);
  return st;
}
BNAR_TEST(resnet_step_graph) {
  ct_scope *s = ct_scope_begin();
  bool tf32 = ct_cuda_allow_tf32();
  ct_cuda_set_allow_tf32(true);
  enum { STEPS = 3, R = 4 };
  int64_t B = 16, xs[4] = {B, 3, 32, 32};
  ct_tensor *bx[STEPS + 1], *by[STEPS + 1];
  ct_generator *gen = ct_generator_new(1414);
  for (int k = 0; k <= STEPS; k++) {
    bx[k] = ct_randn(4, xs, ct_opts(), gen);
    by[k] = ct_randint(0, 10, 1, &B, NULL, gen);
  }
  ct_generator_free(gen);
  /* 0: eager fused, 1: eager off, 2: graph fused, 3: graph off */
  ar_step r[R];
  memset(r, 0, sizeof r);
  int64_t c0[2], c1[2];
  ct_cuda_bn_add_relu_counts(c0);
  for (int d = 0; d < R; d++) {
    r[d].sw = d % 2 ? "0" : NULL;
    if (!rn_step_init(&r[d].s, 14, true, bx[0], by[0])) break;
    CHECK_OK(ar_step_run(&r[d]));
    ct_cuda_synchronize(0);
    if (d == 0) {
      ct_cuda_bn_add_relu_counts(c1);
      if (c1[0] - c0[0] != 8 || c1[1] - c0[1] != 8)
        ct_test_fail(__FILE__, __LINE__, "eager fused step: %lld forward / %lld backward fused launches, expected 8 / 8",
                     (long long)(c1[0] - c0[0]), (long long)(c1[1] - c0[1]));
    }
  }
  ct_cuda_graph *g[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    g[i] = r[2 + i].s.opt ? ct_cuda_graph_capture(0, ar_step_run, &r[2 + i]) : NULL;
    if (!g[i]) ct_test_fail(__FILE__, __LINE__, "capture %s failed: %s", i ? "off" : "fused", ct_last_error());
  }
  if (g[0] && g[1]) {
    int64_t n0 = ct_cuda_graph_num_nodes(g[0]), n1 = ct_cuda_graph_num_nodes(g[1]);
    printf("test_bn_add_relu: ResNet-18 CIFAR b16 step graph: %lld nodes fused, %lld with CT_CUDA_BN_ADD_RELU=0 (%lld fewer)\n",
           (long long)n0, (long long)n1, (long long)(n1 - n0));
    if (n1 - n0 < 16) ct_test_fail(__FILE__, __LINE__, "the fused graph has %lld nodes, the switched-off one %lld", (long long)n0, (long long)n1);
    for (int k = 1; k <= STEPS; k++) {
      for (int d = 0; d < R; d++) {
        CHECK_OK(ct_copy_(r[d].s.x, bx[k]));
        CHECK_OK(ct_copy_(r[d].s.y, by[k]));
      }
      CHECK_OK(ar_step_run(&r[0]));
      CHECK_OK(ar_step_run(&r[1]));
      CHECK_OK(ct_cuda_graph_replay(g[0]));
      CHECK_OK(ct_cuda_graph_replay(g[1]));
      ct_tensor *l[R];
      for (int d = 0; d < R; d++) l[d] = ct_to_device(r[d].s.loss, ct_cpu());
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", "eager loss fused vs off", l[1], l[0], 0, 0);
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", "graph loss fused vs eager", l[0], l[2], 0, 0);
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", "graph loss off vs eager", l[1], l[3], 0, 0);
      for (int d = 0; d < R; d++) ct_release(l[d]);
    }
    int64_t bad = 0;
    for (int64_t i = 0; i < ct_dict_len(r[0].s.pd); i++)
      for (int d = 1; d < R; d++) bad += !tt_same_bits(ct_dict_tensor(r[0].s.pd, i), ct_dict_tensor(r[d].s.pd, i));
    if (bad) ct_test_fail(__FILE__, __LINE__, "weights after %d steps: %lld (model, tensor) pairs differ from the eager fused model", STEPS, (long long)bad);
  }
  for (int i = 0; i < 2; i++) ct_cuda_graph_free(g[i]);
  for (int d = 0; d < R; d++) rn_step_free(&r[d].s);
  for (int k = 0; k <= STEPS; k++) {
    ct_release(bx[k]);
    ct_release(by[k]);
  }
  ct_cuda_set_allow_tf32(tf32);
  ct_scope_end(s);
}
