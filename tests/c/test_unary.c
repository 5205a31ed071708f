/* Unary elementwise ops: values, dtypes, errors, edge points of the derivatives,
 * in-place/version behaviour, 0-dim, empty and non-contiguous inputs. */
#include "test.h"

static ct_tensor *vec(const double *v, int64_t n, ct_dtype dt) { return tt_from(v, 1, &n, dt); }

static double grad_at(ct_tensor *(*f)(const ct_tensor *), double x) {
  ct_tensor *t = vec(&x, 1, CT_FLOAT64);
  ct_requires_grad_(t, true);
  ct_tensor *y = f(t);
  ct_tensor *s = y ? ct_sum(y) : NULL;
  double g = NAN;
  if (s && ct_backward(s, NULL, false, false) == CT_OK && ct_grad(t)) g = tt_at(ct_grad(t), 0);
  ct_release(s);
  ct_release(y);
  ct_release(t);
  return g;
}

TEST(unary_values_basic) {
  double v[] = {-2.0, -0.5, 0.0, 0.5, 2.0};
  ct_tensor *x = vec(v, 5, CT_FLOAT32);
  ct_tensor *r = ct_abs(x);
  CHECK(r && tt_at(r, 0) == 2.0 && tt_at(r, 2) == 0.0);
  ct_tensor *s = ct_sign(x);
  CHECK(s && tt_at(s, 0) == -1 && tt_at(s, 2) == 0 && tt_at(s, 4) == 1);
  ct_tensor *sg = ct_sigmoid(x);
  CHECK_NEAR(tt_at(sg, 4), 1 / (1 + exp(-2.0)), 1e-6);
  ct_tensor *g = ct_gelu(x, "tanh");
  CHECK(g && fabs(tt_at(g, 3) - 0.3457140) < 1e-5);
  ct_tensor *e = ct_erfinv(x);
  CHECK(e && isnan(tt_at(e, 0)) && fabs(tt_at(e, 3) - 0.4769362762) < 1e-6);
  ct_tensor *d = ct_digamma(x);
  CHECK(d && isinf(tt_at(d, 2)) && tt_at(d, 2) < 0);
  ct_release(x);
}

TEST(unary_dtypes) {
  double v[] = {-3, 0, 5};
  ct_tensor *xi = vec(v, 3, CT_INT64);
  ct_tensor *e = ct_exp(xi);
  CHECK(e && ct_tensor_dtype(e) == CT_FLOAT32);
  ct_tensor *f = ct_floor(xi);
  CHECK(f && ct_tensor_dtype(f) == CT_INT64 && tt_at(f, 0) == -3);
  ct_tensor *a = ct_abs(xi);
  CHECK(a && ct_tensor_dtype(a) == CT_INT64 && tt_at(a, 0) == 3);
  ct_tensor *r = ct_relu(xi);
  CHECK(r && ct_tensor_dtype(r) == CT_INT64 && tt_at(r, 0) == 0 && tt_at(r, 2) == 5);
  ct_tensor *bn = ct_bitwise_not(xi);
  CHECK(bn && tt_at(bn, 0) == 2 && tt_at(bn, 1) == -1);
  ct_tensor *in = ct_isnan(xi);
  CHECK(in && ct_tensor_dtype(in) == CT_BOOL && tt_at(in, 0) == 0);
  double bv[] = {1, 0};
  ct_tensor *b = vec(bv, 2, CT_BOOL);
  ct_tensor *sq = ct_square(b);
  CHECK(sq && ct_tensor_dtype(sq) == CT_INT64);
  ct_tensor *sb = ct_sign(b);
  CHECK(sb && ct_tensor_dtype(sb) == CT_BOOL && tt_at(sb, 0) == 1);
  ct_tensor *nb = ct_bitwise_not(b);
  CHECK(nb && tt_at(nb, 0) == 0 && tt_at(nb, 1) == 1);
  ct_tensor *ln = ct_logical_not(xi);
  CHECK(ln && ct_tensor_dtype(ln) == CT_BOOL && tt_at(ln, 1) == 1 && tt_at(ln, 0) == 0);
  ct_scalar lo = ct_sf(0.5), hi = ct_si(2);
  ct_tensor *c = ct_clamp(xi, &lo, &hi);
  CHECK(c && ct_tensor_dtype(c) == CT_FLOAT32 && tt_at(c, 0) == 0.5 && tt_at(c, 2) == 2);
}

TEST(unary_errors) {
  double v[] = {1, 2};
  ct_tensor *h = vec(v, 2, CT_FLOAT16), *b = vec(v, 2, CT_BOOL), *f = vec(v, 2, CT_FLOAT32), *u = vec(v, 2, CT_UINT8);
  ct_tensor *i = vec(v, 2, CT_INT64);
  CHECK_ERR_PTR(ct_exp(h), "\"exp_vml_cpu\" not implemented for 'Half'");
  CHECK_ERR_PTR(ct_sinh(h), "\"sinh_cpu\" not implemented for 'Half'");
  CHECK_ERR_PTR(ct_abs(b), "\"abs_cpu\" not implemented for 'Bool'");
  CHECK_ERR_PTR(ct_neg(b), "Negation, the `-` operator, on a bool tensor is not supported.");
  CHECK_ERR_PTR(ct_relu(b), "Boolean inputs not supported for relu");
  CHECK_ERR_PTR(ct_relu6(b), "Bool inputs not supported for hardtanh");
  CHECK_ERR_PTR(ct_hardtanh(u, -1, 1), "cannot do hardtanh on an unsigned type with negative limits");
  CHECK_ERR_PTR(ct_bitwise_not(f), "\"bitwise_not_cpu\" not implemented for 'Float'");
  CHECK_ERR_PTR(ct_frac(i), "\"frac_cpu\" not implemented for 'Long'");
  CHECK_ERR_PTR(ct_gelu(i, NULL), "\"GeluKernelImpl\" not implemented for 'Long'");
  CHECK_ERR_PTR(ct_gelu(f, "erf"), "approximate argument must be either none or tanh.");
  CHECK_ERR_PTR(ct_round_decimals(i, 1), "\"round_cpu\" not implemented for 'Long'");
  CHECK_ERR_PTR(ct_polygamma(-1, f), "polygamma(n, x) does not support negative n.");
  CHECK_ERR_PTR(ct_celu(f, 0), "ZeroDivisionError");
  CHECK_ERR_PTR(ct_clamp(f, NULL, NULL), "At least one of 'min' or 'max' must not be None");
  CHECK_ERR_PTR(ct_mish(ct_to_dtype(f, CT_BFLOAT16)), "\"mish_cpu\" not implemented for 'BFloat16'");
  CHECK_ERR_PTR(ct_sin(NULL), "expected a tensor");
  CHECK_ERR(ct_exp_(i), "result type Float can't be cast to the desired output type Long");
  ct_scalar lo = ct_sf(0.5);
  CHECK_ERR(ct_clamp_(i, &lo, NULL), "result type Float can't be cast to the desired output type long int");
  CHECK_ERR(ct_sin_(NULL), "expected a tensor");
}

/* Derivatives at PyTorch's chosen points. */
static ct_tensor *hardtanh_default(const ct_tensor *x) { return ct_hardtanh(x, -1, 1); }
static ct_tensor *leaky(const ct_tensor *x) { return ct_leaky_relu(x, 0.01); }
static ct_tensor *clamp01(const ct_tensor *x) {
  ct_scalar lo = ct_si(0), hi = ct_si(1);
  return ct_clamp(x, &lo, &hi);
}
static ct_tensor *elu1(const ct_tensor *x) { return ct_elu(x, 1.0); }
TEST(unary_grad_edges) {
  CHECK(grad_at(ct_relu, 0.0) == 0.0);
  CHECK(grad_at(ct_abs, 0.0) == 0.0);
  CHECK(isinf(grad_at(ct_sqrt, 0.0)));
  CHECK(grad_at(ct_sign, 1.0) == 0.0);
  CHECK(grad_at(ct_frac, 2.5) == 1.0);
  CHECK(grad_at(ct_floor, 2.5) == 0.0);
  CHECK(grad_at(hardtanh_default, 1.0) == 0.0);
  CHECK(grad_at(hardtanh_default, 0.99) == 1.0);
  CHECK(grad_at(leaky, 0.0) == 0.01);
  CHECK(grad_at(clamp01, 0.0) == 1.0); /* the boundary belongs to the inside */
  CHECK(grad_at(clamp01, 1.0) == 1.0);
  CHECK(grad_at(clamp01, 1.5) == 0.0);
  CHECK(grad_at(ct_relu6, 6.0) == 0.0);
  CHECK(grad_at(elu1, 0.0) == 1.0);
  CHECK_NEAR(grad_at(ct_hardsigmoid, 0.0), 1.0 / 6, 1e-7);
  CHECK(grad_at(ct_hardsigmoid, 3.0) == 0.0);
  CHECK_NEAR(grad_at(ct_lgamma, 1.0), -0.5772156649015329, 1e-12);
  CHECK_NEAR(grad_at(ct_digamma, 1.0), 1.6449340668482264, 1e-9);
}

TEST(unary_double_backward) {
  double v[] = {0.3, -1.2, 2.0};
  ct_tensor *x = vec(v, 3, CT_FLOAT64);
  ct_requires_grad_(x, true);
  ct_tensor *y = ct_silu(x), *s = ct_sum(y);
  ct_tensor *g = NULL;
  CHECK_OK(ct_autograd_grad(1, &s, NULL, 1, &x, &g, false, true, false));
  ct_tensor *gs = g ? ct_sum(g) : NULL;
  ct_tensor *gg = NULL;
  if (gs) CHECK_OK(ct_autograd_grad(1, &gs, NULL, 1, &x, &gg, false, false, false));
  for (int i = 0; i < 3; i++) {
    double t = v[i], sg = 1 / (1 + exp(-t));
    CHECK_NEAR(tt_at(gg, i), sg * (1 - sg) * (2 + t * (1 - 2 * sg)), 1e-12);
  }
  /* a third derivative of gelu is refused clearly, not silently zero */
  ct_tensor *yg = ct_gelu(x, NULL), *s2 = ct_sum(yg), *g1 = NULL, *g2 = NULL, *g3 = NULL;
  CHECK_OK(ct_autograd_grad(1, &s2, NULL, 1, &x, &g1, false, true, false));
  ct_tensor *g1s = ct_sum(g1);
  CHECK_OK(ct_autograd_grad(1, &g1s, NULL, 1, &x, &g2, false, true, false));
  ct_tensor *g2s = ct_sum(g2);
  CHECK_ERR(ct_autograd_grad(1, &g2s, NULL, 1, &x, &g3, false, false, false), "not implemented");
  ct_release(g);
  ct_release(gg);
  ct_release(g1);
  ct_release(g2);
  ct_release(g3);
}

TEST(unary_inplace_version) {
  double v[] = {0.5, 1.5};
  ct_tensor *x = vec(v, 2, CT_FLOAT32);
  uint64_t v0 = ct_version(x);
  CHECK_OK(ct_sqrt_(x));
  CHECK(ct_version(x) == v0 + 1);
  CHECK_NEAR(tt_at(x, 1), sqrt(1.5), 1e-6);
  /* in place on a non-leaf records the op's history */
  ct_tensor *l = vec(v, 2, CT_FLOAT32);
  ct_requires_grad_(l, true);
  ct_tensor *c = ct_mul_scalar(l, ct_si(2));
  CHECK_OK(ct_tanh_(c));
  CHECK(ct_grad_fn_name(c) && !strcmp(ct_grad_fn_name(c), "TanhBackward0"));
  ct_tensor *s = ct_sum(c);
  CHECK_OK(ct_backward(s, NULL, false, false));
  CHECK_NEAR(tt_at(ct_grad(l), 0), 2 * (1 - tanh(1.0) * tanh(1.0)), 1e-6);
  /* modifying a saved output in place breaks its backward with PyTorch's message */
  ct_tensor *l2 = vec(v, 2, CT_FLOAT32);
  ct_requires_grad_(l2, true);
  ct_tensor *e = ct_exp(l2);
  CHECK_OK(ct_mul_scalar_(e, ct_si(2)));
  ct_tensor *s2 = ct_sum(e);
  CHECK_ERR(ct_backward(s2, NULL, false, false), "modified by an inplace operation");
  /* leaky_relu_ with a negative slope refuses its backward like PyTorch */
  ct_tensor *l3 = vec(v, 2, CT_FLOAT32);
  ct_requires_grad_(l3, true);
  ct_tensor *c3 = ct_mul_scalar(l3, ct_si(1));
  CHECK_OK(ct_leaky_relu_(c3, -0.5));
  ct_tensor *s3 = ct_sum(c3);
  CHECK_ERR(ct_backward(s3, NULL, false, false), "In-place leakyReLu backward calculation");
}

TEST(unary_shapes_layouts) {
  /* 0-dim */
  double z = 0.25;
  ct_tensor *x0 = tt_from(&z, 0, NULL, CT_FLOAT64);
  ct_tensor *r0 = ct_log1p(x0);
  CHECK(r0 && ct_ndim(r0) == 0);
  CHECK_NEAR(tt_at(r0, 0), log1p(0.25), 1e-15);
  /* empty */
  int64_t es[2] = {0, 3};
  ct_tensor *xe = ct_empty(2, es, ct_opts());
  ct_tensor *re = ct_gelu(xe, NULL);
  CHECK(re && ct_numel(re) == 0 && ct_shape(re)[1] == 3);
  /* non-contiguous */
  double v[6] = {1, 2, 3, 4, 5, 6};
  int64_t sh[2] = {2, 3};
  ct_tensor *m = tt_from(v, 2, sh, CT_FLOAT32);
  ct_tensor *mt = ct_t(m);
  ct_tensor *rt = ct_square(mt);
  CHECK(rt && ct_shape(rt)[0] == 3 && tt_at(rt, 1) == 16 && tt_at(rt, 2) == 4);
  CHECK_OK(ct_neg_(mt)); /* in place through a transposed view */
  CHECK(tt_at(m, 1) == -2);
  /* out= resizes an empty out tensor, refuses a mismatched one */
  ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts_dtype(CT_FLOAT64));
  CHECK_OK(ct_exp_out(o, m));
  CHECK(ct_numel(o) == 6 && ct_tensor_dtype(o) == CT_FLOAT64);
  ct_tensor *oi = ct_empty(1, (int64_t[]){0}, ct_opts_dtype(CT_INT64));
  CHECK_ERR(ct_exp_out(oi, m), "can't be cast to the desired output type Long");
}

TEST(unary_special_values) {
  double v[] = {NAN, INFINITY, -INFINITY, 1.0};
  ct_tensor *x = vec(v, 4, CT_FLOAT32);
  ct_tensor *n = ct_nan_to_num(x, NULL, NULL, NULL);
  CHECK(n && tt_at(n, 0) == 0 && tt_at(n, 1) == (double)3.4028234663852886e38 && tt_at(n, 3) == 1);
  double nv = 5, pv = 6, ngv = -7;
  ct_tensor *n2 = ct_nan_to_num(x, &nv, &pv, &ngv);
  CHECK(n2 && tt_at(n2, 0) == 5 && tt_at(n2, 1) == 6 && tt_at(n2, 2) == -7);
  ct_tensor *fi = ct_isfinite(x), *ii = ct_isinf(x);
  CHECK(tt_at(fi, 3) == 1 && tt_at(fi, 0) == 0 && tt_at(ii, 1) == 1 && tt_at(ii, 0) == 0);
  ct_tensor *r = ct_relu(x);
  CHECK(isnan(tt_at(r, 0)) && tt_at(r, 2) == 0);
  double rv[] = {0.5, 1.5, 2.5, -0.5};
  ct_tensor *rr = ct_round(vec(rv, 4, CT_FLOAT64));
  CHECK(tt_at(rr, 0) == 0 && tt_at(rr, 1) == 2 && tt_at(rr, 2) == 2 && tt_at(rr, 3) == 0);
  ct_tensor *rd = ct_round_decimals(vec(rv, 4, CT_FLOAT64), -1);
  CHECK(rd && tt_at(rd, 2) == 0);
  double iv[] = {-128, 127};
  ct_tensor *ab = ct_abs(vec(iv, 2, CT_INT8));
  CHECK(ab && tt_at(ab, 0) == -128); /* wraps like C++ */
}

TEST(unary_names) {
  double v[] = {0.5, 1.5};
  ct_tensor *x = vec(v, 2, CT_FLOAT32);
  ct_requires_grad_(x, true);
  ct_tensor *a = ct_relu6(x), *b = ct_celu(x, 1.0), *c = ct_square(x), *d = ct_round_decimals(x, 1), *e = ct_selu(x);
  ct_scalar lo = ct_si(0);
  ct_tensor *f = ct_clamp_min(x, lo), *g = ct_softsign(x), *f2 = ct_clamp(x, &lo, NULL);
  CHECK(!strcmp(ct_grad_fn_name(f2), "ClampBackward1"));
  CHECK(!strcmp(ct_grad_fn_name(a), "HardtanhBackward0"));
  CHECK(!strcmp(ct_grad_fn_name(b), "CeluBackward0"));
  CHECK(!strcmp(ct_grad_fn_name(c), "PowBackward0"));
  CHECK(!strcmp(ct_grad_fn_name(d), "RoundBackward1"));
  CHECK(!strcmp(ct_grad_fn_name(e), "EluBackward0"));
  CHECK(!strcmp(ct_grad_fn_name(f), "ClampMinBackward0"));
  CHECK(!strcmp(ct_grad_fn_name(g), "DivBackward0"));
  ct_tensor *n = ct_isnan(x);
  CHECK(n && !ct_requires_grad(n));
}

/* GELU's left tail: Phi(x) = erfc(-x/sqrt 2)/2 keeps its relative accuracy where 1 + erf(x/sqrt 2)
 * cancels (to 0 in double below x ~ -8.3, while bfloat16 and float64 hold values down to ~1e-38 and
 * ~1e-308). Reference: long double erfcl. float64: values rel 1e-12, gradients rel 1e-11 (the argument
 * x/sqrt 2 rounded to double is off by eps relative, which erfc's slope amplifies by 2 z^2: 900 at x = -30,
 * 2e-13); bfloat16 (computed in double, rounded once): within half an ulp, i.e. rel 2^-8. */
TEST(unary_gelu_left_tail) {
  double v[] = {-6.0, -7.8, -8.5, -9.0, -10.0, -12.0, -13.25, -20.0, -30.0};
  int64_t n = (int64_t)(sizeof v / sizeof v[0]);
  ct_tensor *x = vec(v, n, CT_FLOAT64);
  ct_requires_grad_(x, true);
  ct_tensor *y = ct_gelu(x, "none");
  ct_tensor *s = y ? ct_sum(y) : NULL;
  CHECK(s && ct_backward(s, NULL, false, false) == CT_OK && ct_grad(x));
  ct_tensor *xb = vec(v, n, CT_BFLOAT16);
  ct_tensor *yb = ct_gelu(xb, "none");
  CHECK(y && yb);
  for (int64_t i = 0; y && yb && ct_grad(x) && i < n; i++) {
    long double xl = v[i], phi = 0.5L * erfcl(-xl / sqrtl(2.0L)), pdf = expl(-0.5L * xl * xl) / sqrtl(2.0L * 3.14159265358979323846264338327950288L);
    double ref = (double)(xl * phi), gref = (double)(phi + xl * pdf);
    double got = tt_at(y, i), g = tt_at(ct_grad(x), i);
    CHECK(ref != 0 && fabs(got - ref) <= 1e-12 * fabs(ref));
    CHECK(gref != 0 && fabs(g - gref) <= 1e-11 * fabs(gref));
    double xbi = tt_at(xb, i), refb = (double)((long double)xbi * 0.5L * erfcl(-(long double)xbi / sqrtl(2.0L)));
    if (fabs(refb) > 1e-37) CHECK(fabs(tt_at(yb, i) - refb) <= 0x1p-8 * fabs(refb));
  }
  ct_release(s), ct_release(y), ct_release(yb), ct_release(xb), ct_release(x);
}
