/* Ternary elementwise ops: where, lerp, addcmul, addcdiv, clamp with tensor bounds. */
#include "test.h"

static ct_tensor *vec(const double *v, int64_t n, ct_dtype dt) { return tt_from(v, 1, &n, dt); }

TEST(ternary_where) {
  double cv[] = {1, 0, 1}, av[] = {1, 2, 3}, bv[] = {-1, -2, -3};
  ct_tensor *c = vec(cv, 3, CT_BOOL), *a = vec(av, 3, CT_INT8), *b = vec(bv, 3, CT_FLOAT64);
  ct_tensor *r = ct_where(c, a, b);
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT64 && tt_at(r, 0) == 1 && tt_at(r, 1) == -2);
  /* the condition takes no part in promotion: int8 values stay int8 */
  ct_tensor *r8 = ct_where(c, a, a);
  CHECK(r8 && ct_tensor_dtype(r8) == CT_INT8);
  ct_tensor *rs = ct_where_scalars(c, ct_si(3), ct_si(-4));
  CHECK(rs && ct_tensor_dtype(rs) == CT_INT64 && tt_at(rs, 1) == -4);
  ct_tensor *rf = ct_where_scalar_b(c, a, ct_sf(0.5));
  CHECK(rf && ct_tensor_dtype(rf) == CT_FLOAT32 && tt_at(rf, 1) == 0.5);
  /* broadcast and gradient reduction */
  int64_t s31[2] = {3, 1};
  ct_tensor *c2 = tt_from(cv, 2, s31, CT_BOOL);
  ct_tensor *x = vec(av, 3, CT_FLOAT32);
  ct_requires_grad_(x, true);
  ct_tensor *w = ct_where_scalar_b(c2, x, ct_si(0));
  CHECK(w && ct_ndim(w) == 2 && ct_shape(w)[0] == 3 && ct_shape(w)[1] == 3);
  CHECK(!strcmp(ct_grad_fn_name(w), "WhereBackward0"));
  ct_tensor *s = ct_sum(w);
  CHECK_OK(ct_backward(s, NULL, false, false));
  CHECK(tt_at(ct_grad(x), 0) == 2 && tt_at(ct_grad(x), 2) == 2);
  /* errors */
  CHECK_ERR_PTR(ct_where(b, a, a), "where expected condition to be a boolean tensor, but got a tensor with dtype Double");
  double c2v[] = {1, 0};
  CHECK_ERR_PTR(ct_where(vec(c2v, 2, CT_BOOL), a, b), "must match the size of tensor");
  CHECK_ERR_PTR(ct_where(NULL, a, b), "expected a tensor");
}

TEST(ternary_lerp) {
  double sv[] = {1, 2}, ev[] = {3, -1}, wv[] = {0.3, 0.7};
  ct_tensor *s = vec(sv, 2, CT_FLOAT32), *e = vec(ev, 2, CT_FLOAT32), *w = vec(wv, 2, CT_FLOAT32);
  ct_requires_grad_(s, true);
  ct_requires_grad_(e, true);
  ct_requires_grad_(w, true);
  ct_tensor *y = ct_lerp_tensor(s, e, w);
  CHECK_NEAR(tt_at(y, 0), 1.6, 1e-6);
  CHECK_NEAR(tt_at(y, 1), -0.1, 1e-6);
  CHECK(!strcmp(ct_grad_fn_name(y), "LerpBackward1"));
  CHECK_OK(ct_backward(ct_sum(y), NULL, false, false));
  CHECK_NEAR(tt_at(ct_grad(s), 0), 0.7, 1e-6);
  CHECK_NEAR(tt_at(ct_grad(e), 1), 0.7, 1e-6);
  CHECK_NEAR(tt_at(ct_grad(w), 1), -3, 1e-6);
  ct_tensor *y0 = ct_lerp(s, e, ct_sf(0.5));
  CHECK(y0 && !strcmp(ct_grad_fn_name(y0), "LerpBackward0"));
  CHECK_ERR_PTR(ct_lerp(s, vec(ev, 2, CT_FLOAT64), ct_sf(0.5)), "expected dtype float for `end` but got dtype double");
  CHECK_ERR_PTR(ct_lerp(vec(sv, 2, CT_INT64), vec(ev, 2, CT_INT64), ct_sf(0.5)),
                "\"lerp_kernel_scalar\" not implemented for 'Long'");
  ct_tensor *t = vec(sv, 2, CT_FLOAT64);
  uint64_t v0 = ct_version(t);
  CHECK_OK(ct_lerp_(t, vec(ev, 2, CT_FLOAT64), ct_sf(0.25)));
  CHECK(ct_version(t) == v0 + 1 && tt_at(t, 0) == 1.5);
}

TEST(ternary_addc) {
  double a[] = {1, 2, 3}, b[] = {2, 4, 8};
  ct_tensor *s = vec(a, 3, CT_INT64), *t = vec(b, 3, CT_INT64);
  ct_tensor *r = ct_addcmul(s, t, t, ct_sf(2.5)); /* integer results truncate the value like PyTorch */
  CHECK(r && ct_tensor_dtype(r) == CT_INT64 && tt_at(r, 0) == 9);
  CHECK_ERR_PTR(ct_addcdiv(s, t, t, ct_si(1)), "Integer division with addcdiv is no longer supported");
  CHECK_ERR_PTR(ct_addcmul(vec(a, 3, CT_BOOL), vec(a, 3, CT_BOOL), vec(a, 3, CT_BOOL), ct_si(1)),
                "\"addcmul_cpu_out\" not implemented for 'Bool'");
  ct_tensor *f = vec(a, 3, CT_FLOAT64), *g = vec(b, 3, CT_FLOAT64);
  ct_requires_grad_(g, true);
  ct_tensor *d = ct_addcdiv(f, f, g, ct_sf(-2));
  CHECK_NEAR(tt_at(d, 1), 2 - 2 * 2.0 / 4, 1e-15);
  CHECK_OK(ct_backward(ct_sum(d), NULL, false, false));
  CHECK_NEAR(tt_at(ct_grad(g), 1), 2 * 2.0 / 16, 1e-15);
  /* in place with a broadcast operand; shape of self is kept */
  ct_tensor *x = vec(a, 3, CT_FLOAT32);
  double one = 1;
  CHECK_OK(ct_addcmul_(x, tt_from(&one, 0, NULL, CT_FLOAT32), vec(b, 3, CT_FLOAT32), ct_si(1)));
  CHECK(tt_at(x, 2) == 11);
  int64_t s2[2] = {2, 3};
  CHECK_ERR(ct_addcmul_(x, ct_ones(2, s2, ct_opts()), x, ct_si(1)), "doesn't match the broadcast shape");
}

TEST(ternary_clamp_tensor) {
  double xv[] = {0, 1, 2, 3, NAN}, lv[] = {1, 1, 1, 1, 1}, hv[] = {2, 2, 2, 2, 2};
  ct_tensor *x = vec(xv, 5, CT_FLOAT64), *lo = vec(lv, 5, CT_FLOAT64), *hi = vec(hv, 5, CT_FLOAT64);
  ct_requires_grad_(x, true);
  ct_requires_grad_(lo, true);
  ct_requires_grad_(hi, true);
  ct_tensor *y = ct_clamp_tensor(x, lo, hi);
  CHECK(tt_at(y, 0) == 1 && tt_at(y, 3) == 2 && isnan(tt_at(y, 4)));
  CHECK(!strcmp(ct_grad_fn_name(y), "ClampBackward0"));
  CHECK_OK(ct_backward(ct_sum(y), NULL, false, false));
  CHECK(tt_at(ct_grad(x), 0) == 0 && tt_at(ct_grad(x), 1) == 1 && tt_at(ct_grad(x), 4) == 0);
  CHECK(tt_at(ct_grad(lo), 0) == 1 && tt_at(ct_grad(lo), 1) == 0);
  CHECK(tt_at(ct_grad(hi), 3) == 1 && tt_at(ct_grad(hi), 2) == 0);
  CHECK_ERR_PTR(ct_clamp_tensor(x, NULL, NULL), "At least one of 'min' or 'max' must not be None");
  CHECK_ERR_PTR(ct_clamp_tensor(vec(xv, 2, CT_BOOL), vec(xv, 2, CT_BOOL), NULL), "\"clamp_cpu\" not implemented for 'Bool'");
  double iv[] = {-5, 0, 5};
  ct_tensor *xi = vec(iv, 3, CT_INT32);
  CHECK_ERR(ct_clamp_tensor_(xi, vec(lv, 3, CT_FLOAT32), NULL), "result type Float can't be cast to the desired output type Int");
  CHECK_OK(ct_clamp_tensor_(xi, vec(lv, 3, CT_INT64), vec(hv, 3, CT_INT64)));
  CHECK(tt_at(xi, 0) == 1 && tt_at(xi, 2) == 2);
  /* empty and 0-dim */
  int64_t es[2] = {0, 5};
  ct_tensor *e = ct_clamp_tensor(ct_empty(2, es, ct_opts_dtype(CT_FLOAT64)), lo, NULL);
  CHECK(e && ct_numel(e) == 0);
  double z = 7;
  ct_tensor *z0 = ct_clamp_tensor(tt_from(&z, 0, NULL, CT_FLOAT32), NULL, tt_from(&z, 0, NULL, CT_INT64));
  CHECK(z0 && ct_ndim(z0) == 0 && tt_at(z0, 0) == 7);
}
