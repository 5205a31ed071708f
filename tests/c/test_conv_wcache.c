/* The eval weight cache of Conv2d modules (kernels_conv.c, conv_fast.h): in eval mode the CPU
 * forward keeps the weight packed for the GEMM (1x1 and im2col paths) or Winograd's transformed
 * weight packed, across calls. Checked: a cached call equals the uncached one bit for bit when
 * both take the same path (the same packed panels), and the reference loops within the bound of
 * test_conv_fast.c (|fast - ref| <= (K + 2) u sum|terms|, K the reduction length, sum|terms| the
 * same conv on |x|, |w| by the reference) when the cache moves a layer to Winograd; every way of
 * changing the weight is seen (in-place op, write through a `.data` alias, raw write through the
 * data pointer, a new parameter), and train mode does not cache. */
#include "test.h"
#include "backend/cpu/conv_fast.h"
#include "backend/cpu/simd/simd.h"
#include "ctorch/vision.h"
#include <math.h>
#include <stdlib.h>

typedef struct {
  const char *name;
  int64_t N, C, O, H, k, s, p;
  ct_conv_path uncached, cached; /* the path without / with the cache */
} wc_case;

static const wc_case wc_cases[] = {
    {"1x1", 2, 24, 20, 7, 1, 1, 0, CT_CONV_PATH_GEMM_1X1, CT_CONV_PATH_GEMM_1X1},
    {"3x3 s2 im2col", 1, 16, 28, 13, 3, 2, 1, CT_CONV_PATH_IM2COL, CT_CONV_PATH_IM2COL},
    {"3x3 winograd", 2, 16, 20, 12, 3, 1, 1, CT_CONV_PATH_WINOGRAD, CT_CONV_PATH_WINOGRAD},
    /* 9 tiles: 2 * 9 < 32 + 40 (im2col) but 16 * 9 >= 72 with the cache (Winograd) */
    {"3x3 winograd once cached", 1, 32, 40, 6, 3, 1, 1, CT_CONV_PATH_IM2COL, CT_CONV_PATH_WINOGRAD},
    {"7x7 s2 im2col", 1, 3, 16, 21, 7, 2, 3, CT_CONV_PATH_IM2COL, CT_CONV_PATH_IM2COL},
    /* K = 576 and 300 over several KC blocks, M = 256 and 250 over several MC blocks of packed A */
    {"3x3 s2 im2col big", 1, 64, 256, 9, 3, 2, 1, CT_CONV_PATH_IM2COL, CT_CONV_PATH_IM2COL},
    {"1x1 big", 2, 300, 250, 4, 1, 1, 0, CT_CONV_PATH_GEMM_1X1, CT_CONV_PATH_GEMM_1X1},
};

static float *wc_vals(const ct_tensor *t, int64_t *n) {
  *n = t ? ct_numel(t) : 0;
  float *v = t ? malloc(sizeof(float) * (size_t)(*n ? *n : 1)) : NULL;
  if (v && ct_copy_to_buffer(t, v, CT_FLOAT32, *n) != CT_OK) {
    free(v);
    v = NULL;
  }
  return v;
}

/* m's forward of x with the path counted; returns the output's values */
static float *wc_fwd(ct_module *m, const ct_tensor *x, ct_conv_path want, int64_t *n) {
  int64_t before = ct_conv_path_count(want);
  ct_tensor *y = ct_module_forward(m, x);
  CHECK(y != NULL);
  CHECK(ct_conv_path_count(want) == before + 1);
  float *v = wc_vals(y, n);
  ct_release(y);
  return v;
}

static bool wc_same(const float *a, const float *b, int64_t n) { return a && b && !memcmp(a, b, sizeof(float) * (size_t)n); }

/* |a - ref| <= (K + 2) u absref elementwise (ref, absref by the reference loops) */
static void wc_vs_ref(const wc_case *c, const float *a, const ct_tensor *x, const ct_tensor *w, int64_t n) {
  int64_t st[2] = {c->s, c->s}, pd[2] = {c->p, c->p};
  ct_fast_set_enabled(false);
  ct_tensor *ax = ct_abs(x), *aw = ct_abs(w);
  ct_tensor *r = ct_conv2d(x, w, NULL, st, pd, NULL, 1), *ra = ct_conv2d(ax, aw, NULL, st, pd, NULL, 1);
  ct_fast_set_enabled(true);
  int64_t nr = 0, na = 0;
  float *rv = wc_vals(r, &nr), *av = wc_vals(ra, &na);
  CHECK(rv && av && nr == n && na == n);
  double K = (double)(c->C * c->k * c->k);
  for (int64_t i = 0; rv && av && nr == n && na == n && i < n; i++)
    if (!(fabs((double)a[i] - rv[i]) <= (K + 2) * 0x1p-24 * av[i] + 1e-30)) {
      ct_test_fail(__FILE__, __LINE__, "%s: y[%lld] %.9g reference %.9g", c->name, (long long)i, a[i], rv[i]);
      break;
    }
  free(rv);
  free(av);
  ct_release(r);
  ct_release(ra);
  ct_release(ax);
  ct_release(aw);
}

static void wc_check(const wc_case *c) {
  ct_conv_opts o = ct_conv_defaults();
  o.stride[0] = o.stride[1] = c->s;
  o.padding[0] = o.padding[1] = c->p;
  o.bias = false;
  ct_module *m = ct_conv2d_new(c->C, c->O, c->k, c->k, &o);
  int64_t xs[4] = {c->N, c->C, c->H, c->H};
  ct_tensor *x = ct_randn(4, xs, ct_opts(), NULL);
  CHECK(m && x);
  if (!m || !x) {
    ct_module_free(m);
    ct_release(x);
    return;
  }
  ct_tensor *w = ct_module_param(m, "weight");
  bool grad = ct_set_grad_enabled(false);
  int64_t n = 0;
  /* train mode: no cache, the uncached path */
  ct_module_train(m, true);
  float *t0 = wc_fwd(m, x, c->uncached, &n);
  ct_module_eval(m);
  float *e1 = wc_fwd(m, x, c->cached, &n), *e2 = wc_fwd(m, x, c->cached, &n); /* fills, then uses the cache */
  CHECK(wc_same(e1, e2, n));
  if (c->cached == c->uncached) CHECK(wc_same(t0, e1, n));
  if (e2) wc_vs_ref(c, e2, x, w, n);
  ct_conv_set_weight_cache(0); /* off: the uncached path in eval too */
  float *off = wc_fwd(m, x, c->uncached, &n);
  ct_conv_set_weight_cache(-1);
  CHECK(wc_same(t0, off, n));

  /* every change of the weight is seen: the next eval forward equals a train-mode (uncached) one,
   * or (another path) the reference */
  for (int how = 0; how < 4; how++) {
    ct_tensor *alias = NULL, *neww = NULL;
    if (how == 0) CHECK_OK(ct_mul_scalar_(w, ct_sf(-0.5))); /* in place: bumps the version */
    if (how == 1) {                                     /* through `.data`: its own counter */
      alias = ct_data_alias(w);
      CHECK(alias && ct_add_scalar_(alias, ct_sf(0.25)) == CT_OK);
    }
    if (how == 2) { /* raw writes through the data pointer: no counter at all */
      float *p = ct_data_ptr(w);
      for (int64_t i = 0; i < ct_numel(w); i++) p[i] = p[i] * 1.5f - 0.125f;
    }
    if (how == 3) { /* a new parameter tensor */
      int64_t ws[4] = {c->O, c->C, c->k, c->k};
      neww = ct_randn(4, ws, ct_opts(), NULL);
      CHECK(neww && ct_module_set_tensor(m, "weight", neww) == CT_OK);
      w = ct_module_param(m, "weight");
    }
    float *e = wc_fwd(m, x, c->cached, &n);
    ct_module_train(m, true);
    float *t = wc_fwd(m, x, c->uncached, &n);
    ct_module_eval(m);
    if (c->cached == c->uncached) {
      if (!wc_same(e, t, n)) ct_test_fail(__FILE__, __LINE__, "%s: change %d not seen by the cache", c->name, how);
    } else if (e)
      wc_vs_ref(c, e, x, w, n);
    free(e);
    free(t);
    ct_release(alias);
    ct_release(neww);
  }
  ct_set_grad_enabled(grad);
  free(t0);
  free(e1);
  free(e2);
  free(off);
  ct_release(x);
  ct_module_free(m);
}

TEST(conv_eval_weight_cache) {
  for (size_t i = 0; i < sizeof wc_cases / sizeof wc_cases[0]; i++) wc_check(&wc_cases[i]);
}

/* A write through the data pointer to one element the cache's 64-element sample does not read
 * (n = 20 * 24 elements, samples at i (n - 1) / 63, so element 1 is never one) is seen: a storage
 * whose address was handed out is never cached, whether the pointer was taken before or after the
 * cache filled. */
TEST(conv_eval_weight_cache_raw_pointer_write) {
  const wc_case *c = &wc_cases[0]; /* 1x1: cached and uncached take the same path */
  for (int before = 0; before < 2; before++) {
    ct_conv_opts o = ct_conv_defaults();
    o.bias = false;
    ct_module *m = ct_conv2d_new(c->C, c->O, 1, 1, &o);
    int64_t xs[4] = {c->N, c->C, c->H, c->H};
    ct_tensor *x = ct_randn(4, xs, ct_opts(), NULL);
    CHECK(m && x);
    if (!m || !x) {
      ct_module_free(m);
      ct_release(x);
      return;
    }
    ct_tensor *w = ct_module_param(m, "weight");
    bool grad = ct_set_grad_enabled(false);
    int64_t n = 0;
    float *p = before ? ct_data_ptr(w) : NULL;
    ct_module_eval(m);
    free(wc_fwd(m, x, c->cached, &n)); /* would fill the cache */
    if (!p) p = ct_data_ptr(w);
    p[1] += 1.0f;
    float *e = wc_fwd(m, x, c->cached, &n);
    ct_module_train(m, true);
    float *t = wc_fwd(m, x, c->uncached, &n);
    if (!wc_same(e, t, n)) ct_test_fail(__FILE__, __LINE__, "raw write to one element not seen (pointer %s)", before ? "before" : "after");
    free(e);
    free(t);
    ct_set_grad_enabled(grad);
    ct_release(x);
    ct_module_free(m);
  }
}

/* 1 and 2 threads give the same bits with the cache too */
TEST(conv_eval_weight_cache_threads) {
  ct_conv_opts o = ct_conv_defaults();
  o.padding[0] = o.padding[1] = 1;
  ct_module *m = ct_conv2d_new(32, 40, 3, 3, &o);
  int64_t xs[4] = {1, 32, 6, 6};
  ct_tensor *x = ct_randn(4, xs, ct_opts(), NULL);
  CHECK(m && x);
  ct_module_eval(m);
  int was = ct_get_num_threads();
  int64_t n = 0;
  ct_set_num_threads(1);
  float *a = wc_fwd(m, x, CT_CONV_PATH_WINOGRAD, &n);
  ct_set_num_threads(2);
  float *b = wc_fwd(m, x, CT_CONV_PATH_WINOGRAD, &n);
  ct_set_num_threads(was);
  CHECK(wc_same(a, b, n));
  free(a);
  free(b);
  ct_release(x);
  ct_module_free(m);
}

/* ---- the eval conv -> bn (-> + residual) (-> relu) epilogue (ct_module_forward_conv_bn) ----
 * It runs the batch norm's, the add's and the relu's float operations in their order inside the
 * conv's output pass, so its result must equal the modules and ops run one after the other (grad
 * on: no fusion) bit for bit, on every path (Winograd's output transform, the im2col and 1x1 passes)
 * and when the kernel cannot take it (reference loops: the ops run after it). */
ct_tensor *ct_module_forward_conv_bn(ct_module *conv, ct_module *bn, const ct_tensor *x, const ct_tensor *residual,
                                     bool relu);

static void ep_check(const wc_case *c, bool res, bool relu, bool fast) {
  ct_conv_opts o = ct_conv_defaults();
  o.stride[0] = o.stride[1] = c->s;
  o.padding[0] = o.padding[1] = c->p;
  o.bias = false;
  ct_module *conv = ct_conv2d_new(c->C, c->O, c->k, c->k, &o);
  ct_module *bn = ct_batch_norm2d_new(c->O, 1e-5, 0.1, true, true);
  int64_t xs[4] = {c->N, c->C, c->H, c->H}, os = (c->H + 2 * c->p - c->k) / c->s + 1;
  int64_t rs[4] = {c->N, c->O, os, os};
  ct_tensor *x = ct_randn(4, xs, ct_opts(), NULL), *r = res ? ct_randn(4, rs, ct_opts(), NULL) : NULL;
  CHECK(conv && bn && x && (!res || r));
  /* batch norm state away from the identity: mean, var, weight, bias random (var > 0) */
  bool g = ct_set_grad_enabled(false);
  const char *names[4] = {"running_mean", "running_var", "weight", "bias"};
  for (int i = 0; i < 4; i++) {
    ct_tensor *t = i < 2 ? ct_module_buffer(bn, names[i]) : ct_module_param(bn, names[i]);
    ct_tensor *v = ct_rand(1, &c->O, ct_opts(), NULL);
    CHECK(t && v && ct_copy_(t, v) == CT_OK && ct_mul_scalar_(t, ct_sf(i == 1 ? 2.0 : 1.5)) == CT_OK);
    if (i != 1) CHECK(ct_add_scalar_(t, ct_sf(-0.6)) == CT_OK);
    ct_release(v);
  }
  ct_module_eval(conv);
  ct_module_eval(bn);
  ct_fast_set_enabled(fast);
  ct_tensor *f = ct_module_forward_conv_bn(conv, bn, x, r, relu); /* grad off: fused */
  ct_set_grad_enabled(true);
  ct_tensor *u = ct_module_forward_conv_bn(conv, bn, x, r, relu); /* grad on: the ops */
  ct_set_grad_enabled(g);
  ct_fast_set_enabled(true);
  int64_t nf = 0, nu = 0;
  float *fv = wc_vals(f, &nf), *uv = wc_vals(u, &nu);
  if (!(fv && uv && nf == nu && wc_same(fv, uv, nf)))
    ct_test_fail(__FILE__, __LINE__, "%s res %d relu %d fast %d: fused differs from the ops", c->name, res, relu, fast);
  free(fv);
  free(uv);
  ct_release(f);
  ct_release(u);
  ct_release(x);
  ct_release(r);
  ct_module_free(conv);
  ct_module_free(bn);
}

TEST(conv_eval_bn_epilogue) {
  for (size_t i = 0; i < sizeof wc_cases / sizeof wc_cases[0]; i++)
    for (int v = 0; v < 4; v++) ep_check(&wc_cases[i], v & 1, v & 2, true);
  ep_check(&wc_cases[2], true, true, false); /* reference loops: the kernel leaves it to the ops */
}

/* ResNet-18 eval without grad (every conv fused, the weight cache) equals its forward with grad on
 * (modules and ops) bit for bit */
TEST(conv_eval_resnet18_fused_same) {
  ct_manual_seed(3);
  ct_module *m = ct_resnet18_new(10);
  int64_t xs[4] = {2, 3, 64, 64};
  ct_tensor *x = ct_randn(4, xs, ct_opts(), NULL);
  CHECK(m && x);
  ct_module_eval(m);
  bool g = ct_set_grad_enabled(false);
  ct_tensor *a = ct_module_forward(m, x), *a2 = ct_module_forward(m, x); /* fills, then uses the caches */
  ct_set_grad_enabled(true);
  ct_tensor *b = ct_module_forward(m, x);
  ct_set_grad_enabled(g);
  int64_t na = 0, na2 = 0, nb = 0;
  float *av = wc_vals(a, &na), *av2 = wc_vals(a2, &na2), *bv = wc_vals(b, &nb);
  CHECK(av && bv && na == nb && na == 20 && wc_same(av, bv, na));
  CHECK(av2 && na2 == na && wc_same(av, av2, na));
  free(av);
  free(av2);
  free(bv);
  ct_release(a);
  ct_release(a2);
  ct_release(b);
  ct_release(x);
  ct_module_free(m);
}
