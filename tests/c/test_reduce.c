/* Reductions and sort-like ops: semantics, dtypes, errors, edge cases, gradients. */
#include "test.h"

static ct_tensor *F(const double *v, int nd, const int64_t *s) { return tt_from(v, nd, s, CT_FLOAT32); }
static int vals_eq(const ct_tensor *t, const double *v, int64_t n) {
  if (!t || ct_numel(t) != n) return 0;
  for (int64_t i = 0; i < n; i++) {
    double a = tt_at(t, i), b = v[i];
    if (isnan(b) ? !isnan(a) : fabs(a - b) > 1e-5 * (1 + fabs(b))) return 0;
  }
  return 1;
}
static ct_tensor *grad_of(ct_tensor *x, ct_tensor *y) {
  ct_tensor *s = ct_sum(y);
  ct_tensor *g = NULL;
  if (s && ct_autograd_grad(1, &s, NULL, 1, &x, &g, false, false, false) != CT_OK) g = NULL;
  ct_release(s);
  return g;
}

TEST(reduce_sum_dtypes_and_dims) {
  double v[6] = {1, 2, 3, 4, 5, 6};
  int64_t s[2] = {2, 3};
  ct_tensor *i8 = tt_from(v, 2, s, CT_INT8);
  ct_tensor *r = ct_sum(i8);
  CHECK(r && ct_tensor_dtype(r) == CT_INT64 && tt_at(r, 0) == 21);
  ct_release(r);
  int64_t dims[2] = {-1, 0};
  r = ct_sum_dims(i8, 2, dims, true);
  CHECK(r && ct_ndim(r) == 2 && ct_shape(r)[0] == 1 && ct_shape(r)[1] == 1 && tt_at(r, 0) == 21);
  ct_release(r);
  r = ct_sum_dtype(i8, 0, NULL, false, CT_FLOAT64);
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT64 && tt_at(r, 0) == 21);
  ct_release(r);
  int64_t bad[2] = {0, -2};
  CHECK_ERR_PTR(ct_sum_dims(i8, 2, bad, false), "dim 0 appears multiple times in the list of dims");
  int64_t oob = 2;
  CHECK_ERR_PTR(ct_sum_dims(i8, 1, &oob, false), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  CHECK(ct_last_status() == CT_ERR_INDEX);
  ct_release(i8);
}

TEST(reduce_sum_float32_accuracy) {
  /* 2^25 ones: naive float accumulation stalls at 2^24 */
  int64_t n = (int64_t)1 << 25;
  ct_tensor *o = ct_ones(1, &n, ct_opts_dtype(CT_FLOAT32));
  ct_tensor *s = ct_sum(o);
  CHECK(s && tt_at(s, 0) == (double)n);
  ct_release(s);
  ct_release(o);
}

TEST(reduce_empty_and_scalar) {
  int64_t s[2] = {0, 3};
  ct_tensor *e = ct_zeros(2, s, ct_opts());
  ct_tensor *r = ct_sum(e);
  CHECK(r && tt_at(r, 0) == 0);
  ct_release(r);
  r = ct_prod(e);
  CHECK(r && tt_at(r, 0) == 1);
  ct_release(r);
  r = ct_mean(e);
  CHECK(r && isnan(tt_at(r, 0)));
  ct_release(r);
  CHECK_ERR_PTR(ct_max(e), "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           "reduction dim with the 'dim' argument.");
  CHECK_ERR_PTR(ct_amax(e, 0, NULL, false), "amax(): Expected reduction dim to be specified");
  int64_t d0 = 0, d1 = -1;
  CHECK_ERR_PTR(ct_amax(e, 1, &d0, false), "amax(): Expected reduction dim 0 to have non-zero size.");
  r = ct_amax(e, 1, &d1, false);
  CHECK(r && ct_numel(r) == 0);
  ct_release(r);
  CHECK_ERR_PTR(ct_argmax(e, NULL, false), "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  CHECK(ct_last_status() == CT_ERR_INDEX);
  ct_tensor *v = NULL, *i = NULL;
  CHECK_ERR(ct_max_dim(e, 0, false, &v, &i), "max(): Expected reduction dim 0 to have non-zero size.");
  CHECK(!v && !i);
  CHECK_OK(ct_max_dim(e, 1, false, &v, &i));
  CHECK(v && ct_numel(v) == 0 && ct_tensor_dtype(i) == CT_INT64);
  ct_release(v);
  ct_release(i);
  r = ct_logsumexp(e, 1, &d0, false);
  CHECK(r && isinf(tt_at(r, 0)) && tt_at(r, 0) < 0);
  ct_release(r);
  r = ct_all(e);
  CHECK(r && ct_tensor_dtype(r) == CT_BOOL && tt_at(r, 0) == 1);
  ct_release(r);
  r = ct_any(e);
  CHECK(r && tt_at(r, 0) == 0);
  ct_release(r);
  r = ct_median(e);
  CHECK(r && isnan(tt_at(r, 0)));
  ct_release(r);
  ct_release(e);
  /* 0-dim */
  ct_tensor *z = ct_scalar_tensor(ct_sf(3.0), ct_opts());
  r = ct_sum_dims(z, 1, &d1, false);
  CHECK(r && ct_ndim(r) == 0 && tt_at(r, 0) == 3);
  ct_release(r);
  CHECK_OK(ct_max_dim(z, 0, true, &v, &i));
  CHECK(ct_ndim(v) == 0 && tt_at(v, 0) == 3 && tt_at(i, 0) == 0);
  ct_release(v);
  ct_release(i);
  CHECK_OK(ct_sort(z, -1, false, false, &v, &i));
  CHECK(ct_ndim(v) == 0 && tt_at(v, 0) == 3);
  ct_release(v);
  ct_release(i);
  int64_t one = 1;
  CHECK_ERR_PTR(ct_sum_dims(z, 1, &one, false), "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  r = ct_std(z, 0, NULL, 1, false);
  CHECK(r && isnan(tt_at(r, 0)));
  ct_release(r);
  ct_release(z);
}

TEST(reduce_max_min_nan_ties) {
  double n = NAN;
  double v[8] = {1, n, 3, n, 2, 2, 1, 1};
  int64_t s[2] = {2, 4};
  ct_tensor *x = F(v, 2, s), *mv, *mi;
  CHECK_OK(ct_max_dim(x, 1, false, &mv, &mi));
  double ev[2] = {n, 2}, ei[2] = {1, 0};
  CHECK(vals_eq(mv, ev, 2) && vals_eq(mi, ei, 2));
  ct_release(mv);
  ct_release(mi);
  CHECK_OK(ct_min_dim(x, 1, true, &mv, &mi));
  double ev2[2] = {n, 1}, ei2[2] = {1, 2};
  CHECK(ct_ndim(mv) == 2 && vals_eq(mv, ev2, 2) && vals_eq(mi, ei2, 2));
  ct_release(mv);
  ct_release(mi);
  int64_t d = 1;
  ct_tensor *am = ct_argmin(x, &d, false);
  CHECK(vals_eq(am, ei2, 2));
  ct_release(am);
  am = ct_max(x);
  CHECK(am && isnan(tt_at(am, 0)));
  ct_release(am);
  ct_release(x);
}

TEST(reduce_sort_nan_stable) {
  double n = NAN;
  double v[8] = {1, n, 3, n, 2, 2, 1, 1};
  int64_t s[2] = {2, 4};
  ct_tensor *x = F(v, 2, s), *sv, *si;
  CHECK_OK(ct_sort(x, 1, false, true, &sv, &si));
  double ev[8] = {1, 3, n, n, 1, 1, 2, 2}, ei[8] = {0, 2, 1, 3, 2, 3, 0, 1};
  CHECK(vals_eq(sv, ev, 8) && vals_eq(si, ei, 8));
  ct_release(sv);
  ct_release(si);
  CHECK_OK(ct_sort(x, -1, true, true, &sv, &si));
  double ev2[8] = {n, n, 3, 1, 2, 2, 1, 1}, ei2[8] = {1, 3, 2, 0, 0, 1, 2, 3};
  CHECK(vals_eq(sv, ev2, 8) && vals_eq(si, ei2, 8));
  ct_release(sv);
  ct_release(si);
  ct_tensor *v2, *i2;
  CHECK_ERR(ct_topk(x, 5, 1, true, true, &v2, &i2), "selected index k out of range");
  CHECK_ERR(ct_kthvalue(x, 0, 1, false, &v2, &i2), "kthvalue(): selected number k out of range for dimension 1");
  CHECK_ERR(ct_sort(x, 2, false, false, &v2, &i2), "Dimension out of range");
  ct_release(x);
}

TEST(reduce_median_mode_kth) {
  double v[6] = {3, 1, 2, 2, 3, 1};
  int64_t s = 6;
  ct_tensor *x = tt_from(v, 1, &s, CT_INT64), *mv, *mi;
  CHECK_OK(ct_mode(x, 0, false, &mv, &mi));
  CHECK(tt_at(mv, 0) == 1 && tt_at(mi, 0) == 5);
  ct_release(mv);
  ct_release(mi);
  ct_tensor *m = ct_median(x);
  CHECK(m && tt_at(m, 0) == 2 && ct_tensor_dtype(m) == CT_INT64);
  ct_release(m);
  CHECK_OK(ct_kthvalue(x, 6, 0, true, &mv, &mi));
  CHECK(tt_at(mv, 0) == 3 && ct_ndim(mv) == 1);
  ct_release(mv);
  ct_release(mi);
  ct_release(x);
  double w[4] = {1, NAN, 3, 4};
  int64_t s4 = 4;
  ct_tensor *y = F(w, 1, &s4);
  m = ct_median(y);
  CHECK(m && isnan(tt_at(m, 0)));
  ct_release(m);
  m = ct_nanmedian(y);
  CHECK(m && tt_at(m, 0) == 3);
  ct_release(m);
  CHECK_OK(ct_median_dim(y, 0, false, &mv, &mi));
  CHECK(isnan(tt_at(mv, 0)) && tt_at(mi, 0) == 1);
  ct_release(mv);
  ct_release(mi);
  ct_tensor *h = ct_to_dtype(y, CT_FLOAT16);
  CHECK_ERR_PTR(ct_median(h), "\"median_cpu\" not implemented for 'Half'");
  ct_release(h);
  ct_release(y);
}

TEST(reduce_cum_ops) {
  double v[5] = {1, 3, 3, 2, 0};
  int64_t s = 5;
  ct_tensor *x = tt_from(v, 1, &s, CT_INT32);
  ct_tensor *c = ct_cumsum(x, 0, -1);
  double e[5] = {1, 4, 7, 9, 9};
  CHECK(c && ct_tensor_dtype(c) == CT_INT64 && vals_eq(c, e, 5));
  ct_release(c);
  c = ct_cumprod(x, -1, CT_FLOAT64);
  double e2[5] = {1, 3, 9, 18, 0};
  CHECK(c && ct_tensor_dtype(c) == CT_FLOAT64 && vals_eq(c, e2, 5));
  ct_release(c);
  ct_tensor *mv, *mi;
  CHECK_OK(ct_cummax(x, 0, &mv, &mi));
  double e3[5] = {1, 3, 3, 3, 3}, e4[5] = {0, 1, 2, 2, 2};
  CHECK(vals_eq(mv, e3, 5) && vals_eq(mi, e4, 5) && ct_tensor_dtype(mv) == CT_INT32);
  ct_release(mv);
  ct_release(mi);
  CHECK_OK(ct_cumsum_(x, 0));
  CHECK(ct_tensor_dtype(x) == CT_INT32 && vals_eq(x, e, 5));
  ct_release(x);
}

TEST(reduce_unique) {
  double v[4] = {3, 1, 3, 2};
  int64_t s[2] = {2, 2};
  ct_tensor *x = tt_from(v, 2, s, CT_INT64), *u, *inv, *cnt;
  CHECK_OK(ct_unique(x, true, true, true, &u, &inv, &cnt));
  double eu[3] = {1, 2, 3}, ei[4] = {2, 0, 2, 1}, ec[3] = {1, 1, 2};
  CHECK(vals_eq(u, eu, 3) && vals_eq(inv, ei, 4) && vals_eq(cnt, ec, 3) && ct_ndim(inv) == 2);
  ct_release(u);
  ct_release(inv);
  ct_release(cnt);
  CHECK_OK(ct_unique(x, true, false, false, &u, NULL, NULL));
  CHECK(vals_eq(u, eu, 3));
  ct_release(u);
  ct_release(x);
}

TEST(reduce_grad_max_prod_norm) {
  double v[6] = {1, 5, 5, 2, 0, 3};
  int64_t s[2] = {2, 3};
  ct_tensor *x = F(v, 2, s);
  ct_requires_grad_(x, true);
  /* amax splits among ties; max(dim) goes to the first */
  int64_t d = 1;
  ct_tensor *a = ct_amax(x, 1, &d, false), *g = grad_of(x, a);
  double ea[6] = {0, .5, .5, 0, 0, 1};
  CHECK(vals_eq(g, ea, 6));
  ct_release(a);
  ct_release(g);
  ct_tensor *mv, *mi;
  CHECK_OK(ct_max_dim(x, 1, false, &mv, &mi));
  CHECK(!strcmp(ct_grad_fn_name(mv), "MaxBackward0"));
  g = grad_of(x, mv);
  double em[6] = {0, 1, 0, 0, 0, 1};
  CHECK(vals_eq(g, em, 6));
  ct_release(mv);
  ct_release(mi);
  ct_release(g);
  /* prod with a zero: d/dx_k = product of the others */
  a = ct_prod_dim(x, 1, false);
  g = grad_of(x, a);
  double ep[6] = {25, 5, 5, 0, 6, 0};
  CHECK(vals_eq(g, ep, 6));
  ct_release(a);
  ct_release(g);
  a = ct_prod(x);
  g = grad_of(x, a);
  double ep2[6] = {0, 0, 0, 0, 150, 0};
  CHECK(vals_eq(g, ep2, 6));
  ct_release(a);
  ct_release(g);
  /* norm at zero has zero gradient */
  ct_tensor *z = ct_zeros(2, s, ct_opts());
  ct_requires_grad_(z, true);
  a = ct_norm(z, 2, 0, NULL, false);
  g = grad_of(z, a);
  double ez[6] = {0};
  CHECK(vals_eq(g, ez, 6));
  ct_release(a);
  ct_release(g);
  ct_release(z);
  ct_release(x);
}

TEST(reduce_errors_dtypes) {
  double v[4] = {1, 2, 3, 4};
  int64_t s = 4;
  ct_tensor *i = tt_from(v, 1, &s, CT_INT64), *b = tt_from(v, 1, &s, CT_BOOL), *h = tt_from(v, 1, &s, CT_FLOAT16);
  CHECK_ERR_PTR(ct_mean(i), "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                            "complex dtype. Got: Long");
  CHECK_ERR_PTR(ct_var(i, 0, NULL, 1, false), "std and var only support floating point and complex dtypes");
  CHECK_ERR_PTR(ct_norm(i, 2, 0, NULL, false), "norm(): input dtype should be either floating point or complex. Got Long instead.");
  CHECK_ERR_PTR(ct_argmax(b, NULL, false), "\"argmax_cpu\" not implemented for 'Bool'");
  CHECK_ERR_PTR(ct_prod(h), "\"prod_cpu\" not implemented for 'Half'");
  CHECK_ERR_PTR(ct_cumsum(h, 0, -1), "\"cumsum_out_cpu\" not implemented for 'Half'");
  CHECK_ERR_PTR(ct_norm_str(h, "abc", 0, NULL, false), "only valid string values are 'fro' and 'nuc', found abc");
  ct_tensor *r = ct_all(tt_at(i, 0) ? i : i);
  CHECK(r && ct_tensor_dtype(r) == CT_BOOL && tt_at(r, 0) == 1);
  ct_release(r);
  ct_tensor *u8 = ct_to_dtype(i, CT_UINT8);
  r = ct_any(u8);
  CHECK(r && ct_tensor_dtype(r) == CT_UINT8 && tt_at(r, 0) == 1);
  ct_release(r);
  ct_release(u8);
  r = ct_logsumexp(i, 0, NULL, false);
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT32);
  ct_release(r);
  CHECK_ERR_PTR(ct_sum(NULL), "expected a tensor");
  ct_tensor *mv, *mi;
  CHECK_ERR(ct_max_dim(i, 0, false, NULL, &mi), "must not be NULL");
  (void)mv;
  ct_release(i);
  ct_release(b);
  ct_release(h);
}

TEST(reduce_noncontiguous) {
  double v[6] = {1, 2, 3, 4, 5, 6};
  int64_t s[2] = {2, 3};
  ct_tensor *x = F(v, 2, s), *t = ct_t(x);
  int64_t d = 1;
  ct_tensor *r = ct_sum_dims(t, 1, &d, false);
  double e[3] = {5, 7, 9};
  CHECK(vals_eq(r, e, 3));
  ct_release(r);
  ct_tensor *cs = ct_cumsum(t, 1, -1);
  double e2[6] = {1, 5, 2, 7, 3, 9};
  CHECK(vals_eq(cs, e2, 6));
  ct_release(cs);
  ct_tensor *sv, *si;
  CHECK_OK(ct_sort(t, 0, true, false, &sv, &si));
  double e3[6] = {3, 6, 2, 5, 1, 4};
  CHECK(vals_eq(sv, e3, 6));
  ct_release(sv);
  ct_release(si);
  ct_release(t);
  ct_release(x);
}

TEST(reduce_double_backward_and_inplace) {
  double v[6] = {1, -2, 3, 0.5, -1, 2};
  int64_t s[2] = {2, 3};
  ct_tensor *x = tt_from(v, 2, s, CT_FLOAT64);
  ct_requires_grad_(x, true);
  /* norm p=1: grad = sgn(x) * g, whose derivative in x is zero */
  int64_t d = 1;
  ct_tensor *y = ct_norm(x, 1, 1, &d, false), *sy = y ? ct_sum(y) : NULL, *g = NULL, *gg = NULL;
  CHECK_OK(ct_autograd_grad(1, &sy, NULL, 1, &x, &g, true, true, false));
  double eg[6] = {1, -1, 1, 1, -1, 1};
  CHECK(vals_eq(g, eg, 6));
  ct_tensor *sg = g ? ct_sum(g) : NULL;
  CHECK_OK(ct_autograd_grad(1, &sg, NULL, 1, &x, &gg, false, false, true));
  double ez[6] = {0};
  CHECK(!gg || vals_eq(gg, ez, 6));
  ct_release(y);
  ct_release(sy);
  ct_release(g);
  ct_release(sg);
  ct_release(gg);
  /* names */
  y = ct_sum_dims(x, 1, &d, false);
  CHECK(y && !strcmp(ct_grad_fn_name(y), "SumBackward1"));
  ct_release(y);
  y = ct_prod(x);
  CHECK(y && !strcmp(ct_grad_fn_name(y), "ProdBackward0"));
  ct_release(y);
  ct_tensor *va = NULL, *mu = NULL;
  CHECK_OK(ct_var_mean(x, 1, &d, 1, false, &va, &mu));
  /* row 0 = {1, -2, 3}: mean 2/3, squared deviations sum to 114/9, unbiased var 19/3 */
  CHECK(va && mu && fabs(tt_at(va, 0) - 19.0 / 3) < 1e-12 && fabs(tt_at(mu, 1) - 0.5) < 1e-12);
  ct_release(va);
  ct_release(mu);
  /* in place on a leaf that requires grad is refused; on a plain tensor it bumps the version */
  CHECK_ERR(ct_cumsum_(x, 0), "a leaf Variable that requires grad");
  ct_tensor *p = ct_clone(x);
  ct_tensor *pd = ct_detach(p);
  uint64_t ver = ct_version(pd);
  CHECK_OK(ct_cumprod_(pd, 1));
  CHECK(ct_version(pd) > ver && fabs(tt_at(pd, 2) + 6) < 1e-12);
  ct_release(pd);
  ct_release(p);
  ct_release(x);
}
