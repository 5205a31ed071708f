/* Binary elementwise ops: promotion, integer semantics, errors, special values,
 * gradients (first and second order), in-place and out= forms. */
#include "test.h"
#include <stdint.h>
#include <stdlib.h>

static ct_tensor *vec(ct_dtype dt, int n, const double *v) {
  int64_t s[1] = {n};
  return tt_from(v, 1, s, dt);
}
#define V(dt, ...) vec(dt, (int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)), (double[]){__VA_ARGS__})
static ct_tensor *i64vec(int n, const int64_t *v) {
  int64_t s[1] = {n};
  return ct_from_buffer(v, CT_INT64, 1, s, ct_opts_dtype(CT_INT64));
}
static int64_t i64at(const ct_tensor *t, int64_t i) {
  int64_t n = ct_numel(t);
  int64_t *b = malloc((size_t)(n ? n : 1) * 8);
  int64_t v = 0;
  if (b && ct_copy_to_buffer(t, b, CT_INT64, n) == CT_OK && i < n) v = b[i];
  free(b);
  return v;
}
/* Values of t equal the doubles given (NaN matches NaN). */
static int vals_are(const ct_tensor *t, int n, const double *v) {
  if (!t || ct_numel(t) != n) return 0;
  for (int i = 0; i < n; i++) {
    double x = tt_at(t, i);
    if (isnan(v[i]) ? !isnan(x) : x != v[i]) {
      fprintf(stderr, "    element %d: %.17g, expected %.17g\n", i, x, v[i]);
      return 0;
    }
  }
  return 1;
}
#define VALS(t, ...) vals_are((t), (int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)), (double[]){__VA_ARGS__})
static ct_tensor *leaf(ct_tensor *t) {
  ct_requires_grad_(t, true);
  return t;
}
/* d(sum(y * w))/dx for the listed inputs with create_graph. */
static ct_tensor *grad_of(ct_tensor *y, ct_tensor *x, bool create) {
  ct_tensor *gout = ct_ones_like(y, NULL), *g = NULL;
  if (ct_autograd_grad(1, &y, &gout, 1, &x, &g, true, create, false) != CT_OK) g = NULL;
  ct_release(gout);
  return g;
}

TEST(binary_promotion) {
  ct_tensor *i = V(CT_INT64, 1, 2, 3), *i8 = V(CT_INT8, 1, 2), *u8 = V(CT_UINT8, 200, 2);
  ct_tensor *r = ct_add_scalar(i, ct_sf(2.5));
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT32 && VALS(r, 3.5, 4.5, 5.5));
  ct_tensor *z64 = ct_scalar_tensor(ct_si(1000), ct_opts_dtype(CT_INT64));
  r = ct_add(i8, z64); /* 0-dim does not promote a dim tensor of the same category */
  CHECK(r && ct_tensor_dtype(r) == CT_INT8 && VALS(r, -23, -22));
  r = ct_add(u8, i8);
  CHECK(r && ct_tensor_dtype(r) == CT_INT16 && VALS(r, 201, 4));
  ct_tensor *bt = V(CT_BOOL, 1, 0, 1), *bf = V(CT_BOOL, 1, 0, 0);
  r = ct_add(bt, bf);
  CHECK(r && ct_tensor_dtype(r) == CT_BOOL && VALS(r, 1, 0, 1));
  r = ct_add(bt, bt); /* logical or, not 2 */
  CHECK(r && ct_tensor_dtype(r) == CT_BOOL && VALS(r, 1, 0, 1));
  r = ct_mul(bt, bf);
  CHECK(r && ct_tensor_dtype(r) == CT_BOOL && VALS(r, 1, 0, 0));
  ct_tensor *h = V(CT_FLOAT16, 1, 2), *zf = ct_scalar_tensor(ct_sf(1000.0), ct_opts_dtype(CT_FLOAT32));
  r = ct_add(h, zf);
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT16 && VALS(r, 1001, 1002));
  r = ct_lt_scalar(i, ct_sf(2.5));
  CHECK(r && ct_tensor_dtype(r) == CT_BOOL && VALS(r, 1, 1, 0));
  r = ct_eq_scalar(i, ct_sf(2.0));
  CHECK(r && VALS(r, 0, 1, 0));
  r = ct_div(i, V(CT_INT64, 2));
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT32 && VALS(r, 0.5, 1, 1.5));
  r = ct_atan2(i, V(CT_FLOAT64, 1));
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT64);
  r = ct_copysign_scalar(i, ct_si(-1));
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT32 && VALS(r, -1, -2, -3));
  r = ct_pow_scalar(bt, ct_si(2)); /* bool tensor ** int -> int64 */
  CHECK(r && ct_tensor_dtype(r) == CT_INT64 && VALS(r, 1, 0, 1));
  r = ct_bitwise_xor_scalar(bt, ct_si(1));
  CHECK(r && ct_tensor_dtype(r) == CT_INT64 && VALS(r, 0, 1, 0));
}

TEST(binary_int_exact_and_wrap) {
  int64_t big[2] = {(1LL << 53) + 1, INT64_MAX};
  ct_tensor *b = i64vec(2, big);
  ct_tensor *r = ct_add_scalar(b, ct_si(1));
  CHECK(r && i64at(r, 0) == (1LL << 53) + 2 && i64at(r, 1) == INT64_MIN);
  int64_t b2[2] = {1LL << 53, INT64_MAX};
  r = ct_eq(b, i64vec(2, b2));
  CHECK(r && VALS(r, 0, 1));
  r = ct_mul(b, b);
  CHECK(r && i64at(r, 1) == 1);
  r = ct_add_scalar(V(CT_INT8, 127, -128), ct_si(1));
  CHECK(r && VALS(r, -128, -127));
  r = ct_sub_alpha(V(CT_UINT8, 0), V(CT_UINT8, 1), ct_si(3));
  CHECK(r && VALS(r, 253));
  int64_t m[1] = {INT64_MIN};
  r = ct_floor_divide_scalar(i64vec(1, m), ct_si(-1)); /* wraps instead of trapping */
  CHECK(r && i64at(r, 0) == INT64_MIN);
  r = ct_remainder_scalar(i64vec(1, m), ct_si(-1));
  CHECK(r && i64at(r, 0) == 0);
  r = ct_fmod_scalar(i64vec(1, m), ct_si(-1));
  CHECK(r && i64at(r, 0) == 0);
  r = ct_div_mode(V(CT_INT8, -128), V(CT_INT8, -1), "trunc");
  CHECK(r && VALS(r, -128));
  int64_t p[1] = {3};
  r = ct_pow_scalar(i64vec(1, p), ct_si(40)); /* 3^40 wraps in int64 */
  CHECK(r && (uint64_t)i64at(r, 0) == (uint64_t)12157665459056928801ULL);
}

TEST(binary_division) {
  ct_tensor *a = V(CT_INT64, 7, -7, 7, -7, 0), *b = V(CT_INT64, 2, 2, -2, -2, 3);
  CHECK(VALS(ct_div_mode(a, b, "trunc"), 3, -3, -3, 3, 0));
  CHECK(VALS(ct_div_mode(a, b, "floor"), 3, -4, -4, 3, 0));
  CHECK(VALS(ct_floor_divide(a, b), 3, -4, -4, 3, 0));
  CHECK(VALS(ct_remainder(a, b), 1, 1, -1, -1, 0));
  CHECK(VALS(ct_fmod(a, b), 1, -1, 1, -1, 0));
  ct_tensor *z = V(CT_INT64, 0, 1, 1, 1, 1);
  CHECK_ERR_PTR(ct_div_mode(a, z, "floor"), "ZeroDivisionError");
  CHECK_ERR_PTR(ct_div_mode(a, z, "trunc"), "ZeroDivisionError");
  CHECK_ERR_PTR(ct_floor_divide(a, z), "ZeroDivisionError");
  CHECK_ERR_PTR(ct_remainder(a, z), "ZeroDivisionError");
  CHECK_ERR_PTR(ct_fmod_scalar(a, ct_si(0)), "ZeroDivisionError");
  CHECK(VALS(ct_div(a, z), INFINITY, -7, 7, -7, 0)); /* true division: 7/0 -> inf */
  ct_tensor *q = ct_div(V(CT_INT64, 7, -7, 0), V(CT_INT64, 0, 0, 0));
  CHECK(q && tt_at(q, 0) == INFINITY && tt_at(q, 1) == -INFINITY && isnan(tt_at(q, 2)));
  CHECK_ERR_PTR(ct_div_mode(a, b, "round"), "rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'");
  /* Python float floor division: 1 // 0.1 == 9.0, -0.5 // 2 == -1.0, 0.5 // -2 == -1.0, -0.0 kept */
  ct_tensor *x = V(CT_FLOAT64, 1, -0.5, 0.5, -0.0, 7, -7, 0), *y = V(CT_FLOAT64, 0.1, 2, -2, 3, 0, 0, 0);
  ct_tensor *f = ct_div_mode(x, y, "floor");
  CHECK(VALS(f, 9, -1, -1, -0.0, INFINITY, -INFINITY, NAN) && signbit(tt_at(f, 3)));
  CHECK(VALS(ct_floor_divide(ct_to_dtype(x, CT_FLOAT32), ct_to_dtype(y, CT_FLOAT32)), 9, -1, -1, 0, INFINITY,
             -INFINITY, NAN));
  ct_tensor *t = ct_div_mode(V(CT_FLOAT32, -0.5, 0.5), V(CT_FLOAT32, 2, -2), "trunc");
  CHECK(VALS(t, 0, 0) && signbit(tt_at(t, 0)));
  /* remainder takes the divisor's sign, fmod the dividend's */
  ct_tensor *fa = V(CT_FLOAT32, 5, -5, 5, -5, 5), *fb = V(CT_FLOAT32, 3, 3, -3, -3, INFINITY);
  CHECK(VALS(ct_remainder(fa, fb), 2, 1, -1, -2, 5));
  CHECK(VALS(ct_fmod(fa, fb), 2, -2, 2, -2, 5));
  CHECK(VALS(ct_remainder(V(CT_FLOAT32, -5), V(CT_FLOAT32, INFINITY)), INFINITY));
  CHECK(VALS(ct_remainder_scalar(V(CT_INT64, 1, 2), ct_sf(1.5)), 1, 0.5));
  CHECK(VALS(ct_remainder_scalar(V(CT_INT64, 5, -5), ct_si(-3)), -1, -2));
  /* bool inputs are refused like PyTorch's kernels */
  ct_tensor *bb = V(CT_BOOL, 1);
  CHECK_ERR_PTR(ct_remainder(bb, bb), "\"remainder_cpu\" not implemented for 'Bool'");
  CHECK_ERR_PTR(ct_fmod(bb, bb), "\"fmod_cpu\" not implemented for 'Bool'");
  CHECK_ERR_PTR(ct_floor_divide(bb, bb), "\"div_floor_cpu\" not implemented for 'Bool'");
  CHECK_ERR_PTR(ct_div_mode(bb, bb, "trunc"), "\"div_trunc_cpu\" not implemented for 'Bool'");
  CHECK(VALS(ct_div(bb, bb), 1));
}

TEST(binary_pow) {
  ct_tensor *i = V(CT_INT64, 5, -7, 0);
  CHECK_ERR_PTR(ct_pow_scalar(i, ct_si(-1)), "Integers to negative integer powers are not allowed.");
  CHECK_ERR_PTR(ct_pow_scalar(V(CT_UINT8, 1), ct_si(-2)), "Integers to negative integer powers are not allowed.");
  CHECK(VALS(ct_pow_scalar(i, ct_si(0)), 1, 1, 1));
  CHECK(VALS(ct_pow(V(CT_INT64, 0, 1, -1, -1, 2, 5), V(CT_INT64, -1, -3, -3, -2, -1, 0)), 0, 1, -1, 1, 0, 1));
  CHECK(VALS(ct_pow_scalar_tensor(ct_si(0), V(CT_INT64, 0, 1, 2)), 1, 0, 0));
  ct_tensor *r = ct_pow_scalar_tensor(ct_si(2), V(CT_INT64, -1, 1, 3));
  CHECK(r && ct_tensor_dtype(r) == CT_INT64 && VALS(r, 0, 2, 8));
  r = ct_pow_scalar_tensor(ct_sf(2.5), V(CT_INT64, 0, 2));
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT32 && VALS(r, 1, 6.25));
  r = ct_pow_scalar(i, ct_sf(0.5));
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT32 && isnan(tt_at(r, 1)) && tt_at(r, 2) == 0);
  CHECK(VALS(ct_pow(V(CT_FLOAT32, 0, 0, 2), V(CT_FLOAT32, 0, -1, 10)), 1, INFINITY, 1024));
  CHECK(VALS(ct_pow_scalar(V(CT_INT8, 5, -7), ct_si(3)), 125, -87)); /* wraps in int8 */
  CHECK_ERR_PTR(ct_pow(V(CT_BOOL, 1), V(CT_BOOL, 1)), "\"pow\" not implemented for 'Bool'");
  ct_tensor *w = V(CT_INT64, 1, 2);
  CHECK_ERR(ct_pow_scalar_(w, ct_sf(2.0)), "Found dtype Long but expected Float");
  CHECK_OK(ct_pow_scalar_(w, ct_si(2)));
  CHECK(VALS(w, 1, 4));
  CHECK_ERR(ct_pow_(w, V(CT_FLOAT32, 2)), "result type Float can't be cast to the desired output type Long");
}

TEST(binary_pow_grad_special) {
  /* d/dx x^y and d/dy x^y at x = 0 and y = 0, as PyTorch */
  ct_tensor *x = leaf(V(CT_FLOAT32, 0, 0, 2, -3, 0.5, 0)), *y = leaf(V(CT_FLOAT32, 0, -1, 0, 2, 1.5, 2));
  ct_tensor *p = ct_pow(x, y);
  ct_tensor *gx = grad_of(p, x, false), *gy = grad_of(p, y, false);
  CHECK(gx && VALS(gx, 0, -INFINITY, 0, -6, 1.5f * sqrtf(0.5f), 0));
  CHECK(gy && tt_at(gy, 0) == 0 && tt_at(gy, 1) == -INFINITY && fabs(tt_at(gy, 2) - log(2.0)) < 1e-6 &&
        isnan(tt_at(gy, 3)) && tt_at(gy, 5) == 0);
  ct_tensor *p0 = ct_pow_scalar(x, ct_si(0)), *g0 = grad_of(p0, x, false);
  CHECK(g0 && VALS(g0, 0, 0, 0, 0, 0, 0));
  ct_tensor *ps = ct_pow_scalar_tensor(ct_si(0), y), *gs = grad_of(ps, y, false);
  CHECK(gs && VALS(gs, 0, -INFINITY, 0, 0, 0, 0));
  CHECK(ct_grad_fn_name(ps) && !strcmp(ct_grad_fn_name(ps), "PowBackward2"));
  /* double backward of x^3: d2/dx2 = 6x */
  ct_tensor *z = leaf(V(CT_FLOAT64, 1.5, -2)), *c = ct_pow_scalar(z, ct_si(3));
  ct_tensor *g1 = grad_of(c, z, true), *g2 = g1 ? grad_of(g1, z, false) : NULL;
  CHECK(g2 && fabs(tt_at(g2, 0) - 9) < 1e-12 && fabs(tt_at(g2, 1) + 12) < 1e-12);
}

TEST(binary_shifts_bitwise) {
  ct_tensor *a = V(CT_INT64, 5, -3, 5, -3, 5), *s = V(CT_INT64, -1, 32, 64, 65, 70);
  ct_tensor *l = ct_bitwise_left_shift(a, s), *r = ct_bitwise_right_shift(a, s);
  CHECK(l && i64at(l, 0) == INT64_MIN && i64at(l, 1) == -12884901888LL && i64at(l, 2) == 5 && i64at(l, 3) == -6 &&
        i64at(l, 4) == 320);
  CHECK(VALS(r, 0, -1, 5, -2, 0));
  /* narrow types shift in 32-bit registers: the count wraps at 32 */
  ct_tensor *a8 = V(CT_INT8, 5, -3, 5, -3, 5), *s8 = V(CT_INT8, 7, 8, 33, 32, 70);
  CHECK(VALS(ct_bitwise_left_shift(a8, s8), -128, 0, 10, -3, 64));
  CHECK(VALS(ct_bitwise_right_shift(a8, s8), 0, -1, 2, -3, 0));
  CHECK(VALS(ct_bitwise_left_shift_scalar(V(CT_UINT8, 1, 2), ct_si(1)), 2, 4));
  ct_tensor *f = V(CT_FLOAT32, 1);
  CHECK_ERR_PTR(ct_bitwise_left_shift(f, f), "\"lshift_cpu\" not implemented for 'Float'");
  CHECK_ERR_PTR(ct_bitwise_right_shift(V(CT_BOOL, 1), V(CT_BOOL, 1)), "\"rshift_cpu\" not implemented for 'Bool'");
  CHECK_ERR_PTR(ct_bitwise_and_scalar(V(CT_INT64, 1), ct_sf(2.0)), "\"bitwise_and_cpu\" not implemented for 'Float'");
  ct_tensor *bt = V(CT_BOOL, 1, 0), *bu = V(CT_BOOL, 1, 1);
  ct_tensor *x = ct_bitwise_and(bt, bu);
  CHECK(x && ct_tensor_dtype(x) == CT_BOOL && VALS(x, 1, 0));
  CHECK(VALS(ct_bitwise_xor(bt, bu), 0, 1));
  CHECK(VALS(ct_bitwise_or(V(CT_UINT8, 1, 2), V(CT_INT8, 1)), 1, 3));
  CHECK(VALS(ct_bitwise_or_scalar(V(CT_UINT8, 1, 2), ct_si(1000)), 233, 234));
  CHECK_ERR(ct_bitwise_and_(bt, V(CT_INT64, 1, 3)), "result type Long can't be cast to the desired output type Bool");
}

TEST(binary_logical_compare) {
  ct_tensor *f = V(CT_FLOAT32, 1.5, 0, NAN), *i = V(CT_INT64, 0, 0, 1);
  ct_tensor *r = ct_logical_and(f, i);
  CHECK(r && ct_tensor_dtype(r) == CT_BOOL && VALS(r, 0, 0, 1));
  CHECK(VALS(ct_logical_or(f, i), 1, 0, 1));
  CHECK(VALS(ct_logical_xor(f, i), 1, 0, 0));
  ct_tensor *w = V(CT_INT64, 1, 2);
  CHECK_OK(ct_logical_and_(w, V(CT_FLOAT32, 1.5, 0)));
  CHECK(ct_tensor_dtype(w) == CT_INT64 && VALS(w, 1, 0));
  ct_tensor *a = V(CT_FLOAT32, 1, 2, NAN), *b = V(CT_FLOAT32, 2, 2, NAN);
  CHECK(VALS(ct_eq(a, b), 0, 1, 0));
  CHECK(VALS(ct_ne(a, b), 1, 0, 1));
  CHECK(VALS(ct_lt(a, b), 1, 0, 0));
  CHECK(VALS(ct_le(a, b), 1, 1, 0));
  CHECK(VALS(ct_gt(a, b), 0, 0, 0));
  CHECK(VALS(ct_ge(a, b), 0, 1, 0));
  ct_tensor *ii = V(CT_INT64, 1, 2);
  CHECK_OK(ct_lt_scalar_(ii, ct_sf(2.5)));
  CHECK(ct_tensor_dtype(ii) == CT_INT64 && VALS(ii, 1, 1));
  ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts_dtype(CT_FLOAT32));
  CHECK_OK(ct_gt_out(o, a, b));
  CHECK(ct_tensor_dtype(o) == CT_FLOAT32 && ct_numel(o) == 3 && VALS(o, 0, 0, 0));
  /* uint8 compares as unsigned after promotion with int8 (int16) */
  CHECK(VALS(ct_gt(V(CT_UINT8, 200), V(CT_INT8, -1)), 1));
}

TEST(binary_isclose_equal) {
  ct_tensor *x = V(CT_FLOAT32, 1, 2, NAN, INFINITY, INFINITY);
  ct_tensor *y = V(CT_FLOAT32, 1 + 1e-6, 2.1, NAN, INFINITY, -INFINITY);
  CHECK(VALS(ct_isclose(x, y, 1e-5, 1e-8, false), 1, 0, 0, 1, 0));
  CHECK(VALS(ct_isclose(x, y, 1e-5, 1e-8, true), 1, 0, 1, 1, 0));
  CHECK_ERR_PTR(ct_isclose(x, ct_to_dtype(y, CT_FLOAT64), 1e-5, 1e-8, false), "Float did not match Double");
  CHECK_ERR_PTR(ct_isclose(x, y, -1, 1e-8, false), "rtol must be greater than or equal to zero, but got -1");
  CHECK_ERR_PTR(ct_isclose(x, y, 1e-5, -1, false), "atol must be greater than or equal to zero, but got -1");
  CHECK(VALS(ct_isclose(V(CT_INT64, 5, -7, 0), V(CT_INT64, 6, -6, 2), 0, 1, false), 1, 1, 0));
  int64_t ia[2] = {(1LL << 53) + 1, 1LL << 62}, ib[2] = {1LL << 53, -(1LL << 62)};
  /* integers are compared in the default float dtype, without wrap-around */
  CHECK(VALS(ct_isclose(i64vec(2, ia), i64vec(2, ib), 0, 0.5, false), 1, 0));
  CHECK(VALS(ct_isclose(V(CT_INT8, 100), V(CT_INT8, -100), 0, 56.5, false), 0));
  CHECK(VALS(ct_isclose(V(CT_BOOL, 1, 0), V(CT_BOOL, 1, 1), 0, 1, false), 1, 1));
  CHECK(VALS(ct_isclose(V(CT_BOOL, 1, 0), V(CT_BOOL, 1, 1), 1e-5, 1e-8, false), 1, 0));
  bool ok = false;
  CHECK_OK(ct_allclose(V(CT_FLOAT32, 1, 2), V(CT_FLOAT32, 1, 2 + 1e-6), 1e-5, 1e-8, false, &ok));
  CHECK(ok);
  CHECK_OK(ct_allclose(V(CT_FLOAT32, 1, 2), V(CT_FLOAT32, 1, 2.1), 1e-5, 1e-8, false, &ok));
  CHECK(!ok);
  CHECK_ERR(ct_allclose(V(CT_FLOAT32, 1, 2, 3), V(CT_FLOAT32, 1, 2), 1e-5, 1e-8, false, &ok),
            "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0");
  CHECK_ERR(ct_allclose(V(CT_INT64, 1), V(CT_FLOAT32, 1), 1e-5, 1e-8, false, &ok), "Long did not match Float");
  CHECK_OK(ct_equal(V(CT_INT64, 1, 2), V(CT_FLOAT32, 1, 2), &ok));
  CHECK(ok);
  CHECK_OK(ct_equal(V(CT_FLOAT32, 1, NAN), V(CT_FLOAT32, 1, NAN), &ok));
  CHECK(!ok);
  CHECK_OK(ct_equal(V(CT_FLOAT32, 1), ct_scalar_tensor(ct_sf(1), ct_opts()), &ok));
  CHECK(!ok);
  int64_t s0[1] = {0}, s1[2] = {0, 3};
  CHECK_OK(ct_equal(ct_empty(1, s0, ct_opts()), ct_empty(2, s1, ct_opts()), &ok));
  CHECK(!ok);
  CHECK_OK(ct_equal(ct_empty(2, s1, ct_opts()), ct_empty(2, s1, ct_opts()), &ok));
  CHECK(ok);
  CHECK_ERR(ct_equal(NULL, x, &ok), "expected a tensor");
}

TEST(binary_minmax) {
  ct_tensor *a = V(CT_FLOAT32, NAN, 1, NAN, 2, 3), *b = V(CT_FLOAT32, 1, NAN, NAN, 2, -1);
  CHECK(VALS(ct_maximum(a, b), NAN, NAN, NAN, 2, 3));
  CHECK(VALS(ct_minimum(a, b), NAN, NAN, NAN, 2, -1));
  CHECK(VALS(ct_fmax(a, b), 1, 1, NAN, 2, 3));
  CHECK(VALS(ct_fmin(a, b), 1, 1, NAN, 2, -1));
  ct_tensor *r = ct_maximum(V(CT_INT64, 1, 2), ct_scalar_tensor(ct_sf(1.5), ct_opts()));
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT32 && VALS(r, 1.5, 2));
  r = ct_maximum(V(CT_BOOL, 1, 0), V(CT_BOOL, 0, 0));
  CHECK(r && ct_tensor_dtype(r) == CT_BOOL && VALS(r, 1, 0));
  /* gradients: ties split half-half, NaN gives both the full gradient */
  ct_tensor *x = leaf(V(CT_FLOAT32, 0, 0, 2, NAN, 1)), *y = leaf(V(CT_FLOAT32, 0, -1, 3, 1, NAN));
  ct_tensor *m = ct_maximum(x, y);
  CHECK(VALS(grad_of(m, x, false), 0.5, 1, 0, 1, 1));
  CHECK(VALS(grad_of(m, y, false), 0.5, 0, 1, 1, 1));
  ct_tensor *mn = ct_minimum(x, y);
  CHECK(VALS(grad_of(mn, x, false), 0.5, 0, 1, 1, 1));
  ct_tensor *fm = ct_fmax(x, y);
  CHECK(VALS(grad_of(fm, x, false), 1, 1, 0, 0, 1));
  CHECK(VALS(grad_of(fm, y, false), 0, 0, 1, 1, 0));
  ct_tensor *fn = ct_fmin(x, y);
  CHECK(VALS(grad_of(fn, x, false), 1, 0, 1, 0, 1));
  ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts());
  CHECK_OK(ct_minimum_out(o, V(CT_FLOAT32, 1, 5), V(CT_FLOAT32, 2, 3)));
  CHECK(VALS(o, 1, 3));
}

TEST(binary_float_special_ops) {
  ct_tensor *a = V(CT_FLOAT64, 3, -1, 0), *b = V(CT_FLOAT64, 4, 0, -2);
  CHECK(VALS(ct_hypot(a, b), 5, 1, 2));
  ct_tensor *t = ct_atan2(a, b);
  CHECK(t && fabs(tt_at(t, 0) - atan2(3, 4)) < 1e-15 && fabs(tt_at(t, 1) + M_PI / 2) < 1e-15);
  ct_tensor *l = ct_logaddexp(V(CT_FLOAT64, 1000, -INFINITY, INFINITY, 0), V(CT_FLOAT64, 1000, -INFINITY, INFINITY, 0));
  CHECK(l && fabs(tt_at(l, 0) - (1000 + log(2.0))) < 1e-12 && tt_at(l, 1) == -INFINITY && tt_at(l, 2) == INFINITY &&
        fabs(tt_at(l, 3) - log(2.0)) < 1e-15);
  ct_tensor *l2 = ct_logaddexp2(V(CT_FLOAT64, 3), V(CT_FLOAT64, 3));
  CHECK(l2 && fabs(tt_at(l2, 0) - 4) < 1e-15);
  CHECK(VALS(ct_copysign(V(CT_FLOAT32, 1, 2, -3), V(CT_FLOAT32, -0.0, 1, 1)), -1, 2, 3));
  ct_tensor *xl = ct_xlogy(V(CT_FLOAT32, 0, 0, 1, 2), V(CT_FLOAT32, NAN, 0, NAN, 1));
  CHECK(VALS(xl, NAN, 0, NAN, 0));
  ct_tensor *h = V(CT_FLOAT16, 1);
  CHECK_ERR_PTR(ct_hypot(h, h), "\"hypot_cpu\" not implemented for 'Half'");
  CHECK_ERR_PTR(ct_atan2(h, h), "\"atan2_cpu\" not implemented for 'Half'");
  CHECK_ERR_PTR(ct_logaddexp(V(CT_INT64, 1), V(CT_INT64, 1)), "\"logaddexp_cpu\" not implemented for 'Long'");
  CHECK_ERR_PTR(ct_logaddexp2(h, h), "\"logaddexp2_cpu\" not implemented for 'Half'");
  ct_tensor *bf = ct_hypot(V(CT_BFLOAT16, 1, 2), V(CT_BFLOAT16, 1));
  CHECK(bf && ct_tensor_dtype(bf) == CT_BFLOAT16);
}

TEST(binary_grads) {
  ct_tensor *a = leaf(V(CT_FLOAT64, 0.5, -1.5, 2)), *b = leaf(V(CT_FLOAT64, 1.5, 0.7, -3));
  /* atan2: da = b/(a^2+b^2), db = -a/(a^2+b^2) */
  ct_tensor *t = ct_atan2(a, b), *ga = grad_of(t, a, false), *gb = grad_of(t, b, false);
  for (int i = 0; i < 3; i++) {
    double x = tt_at(a, i), y = tt_at(b, i);
    CHECK_NEAR(tt_at(ga, i), y / (x * x + y * y), 1e-14);
    CHECK_NEAR(tt_at(gb, i), -x / (x * x + y * y), 1e-14);
  }
  t = ct_hypot(a, b);
  ga = grad_of(t, a, false);
  for (int i = 0; i < 3; i++) CHECK_NEAR(tt_at(ga, i), tt_at(a, i) / tt_at(t, i), 1e-14);
  t = ct_logaddexp(a, b);
  gb = grad_of(t, b, false);
  for (int i = 0; i < 3; i++) CHECK_NEAR(tt_at(gb, i), 1 / (1 + exp(tt_at(a, i) - tt_at(b, i))), 1e-14);
  t = ct_logaddexp2(a, b);
  ga = grad_of(t, a, false);
  for (int i = 0; i < 3; i++) CHECK_NEAR(tt_at(ga, i), 1 / (1 + pow(2, tt_at(b, i) - tt_at(a, i))), 1e-14);
  /* remainder/fmod: d/db = -floor(a/b) resp. -trunc(a/b) */
  t = ct_remainder(a, b);
  CHECK(VALS(grad_of(t, a, false), 1, 1, 1));
  CHECK(VALS(grad_of(t, b, false), -0.0, 3, 1));
  t = ct_fmod(a, b);
  CHECK(VALS(grad_of(t, b, false), -0.0, 2, -0.0));
  /* copysign: d/da = sign ratio (0 at a == 0), d/db = 0 */
  ct_tensor *c0 = leaf(V(CT_FLOAT32, 0, 2, -3)), *c1 = leaf(V(CT_FLOAT32, -1, -1, 2));
  t = ct_copysign(c0, c1);
  CHECK(VALS(grad_of(t, c0, false), 0, -1, -1));
  CHECK(VALS(grad_of(t, c1, false), 0, 0, 0));
  /* xlogy: d/da = log(b) unless a == 0 and b <= 0; d/db = a / b */
  ct_tensor *x0 = leaf(V(CT_FLOAT32, 0, 0, 2, 0)), *x1 = leaf(V(CT_FLOAT32, 0, -1, 0, 2));
  t = ct_xlogy(x0, x1);
  ct_tensor *gx = grad_of(t, x0, false);
  CHECK(gx && tt_at(gx, 0) == 0 && tt_at(gx, 1) == 0 && tt_at(gx, 2) == -INFINITY && fabs(tt_at(gx, 3) - log(2.0)) < 1e-6);
  ct_tensor *gy = grad_of(t, x1, false);
  CHECK(gy && isnan(tt_at(gy, 0)) && tt_at(gy, 2) == INFINITY);
  /* rounding division: zero gradients; floor_divide: no derivative */
  t = ct_div_mode(a, b, "floor");
  CHECK(VALS(grad_of(t, a, false), 0, 0, 0));
  t = ct_floor_divide(a, b);
  ct_tensor *g = ct_ones_like(t, NULL), *out = NULL;
  CHECK_ERR(ct_autograd_grad(1, &t, &g, 1, &a, &out, true, false, false), "derivative for aten::floor_divide is not implemented");
  /* rsub: b - alpha * a */
  t = ct_rsub_alpha(a, b, ct_si(2));
  CHECK(t && fabs(tt_at(t, 0) - 0.5) < 1e-15 && fabs(tt_at(t, 1) - 3.7) < 1e-15 && tt_at(t, 2) == -7);
  CHECK(VALS(grad_of(t, a, false), -2, -2, -2));
  CHECK(VALS(grad_of(t, b, false), 1, 1, 1));
  CHECK(ct_grad_fn_name(t) && !strcmp(ct_grad_fn_name(t), "RsubBackward0"));
}

TEST(binary_double_backward) {
  ct_tensor *a = leaf(V(CT_FLOAT64, 0.5, -1.5)), *b = leaf(V(CT_FLOAT64, 1.5, 0.75));
  /* div: d2/db2 (a/b) = 2a/b^3 */
  ct_tensor *d = ct_div(a, b), *g1 = grad_of(d, b, true), *g2 = grad_of(g1, b, false);
  for (int i = 0; i < 2; i++) CHECK_NEAR(tt_at(g2, i), 2 * tt_at(a, i) / pow(tt_at(b, i), 3), 1e-12);
  /* mul: d/da (d/db ab) = 1 */
  ct_tensor *m = ct_mul(a, b), *gm = grad_of(m, b, true), *gm2 = grad_of(gm, a, false);
  CHECK(VALS(gm2, 1, 1));
  /* pow tensor^tensor: d2/dy2 x^y = x^y log(x)^2 (x > 0) */
  ct_tensor *x = leaf(V(CT_FLOAT64, 0.5, 2)), *y = leaf(V(CT_FLOAT64, 1.5, -0.5));
  ct_tensor *p = ct_pow(x, y), *gp = grad_of(p, y, true), *gp2 = grad_of(gp, y, false);
  for (int i = 0; i < 2; i++) {
    double lx = log(tt_at(x, i));
    CHECK_NEAR(tt_at(gp2, i), pow(tt_at(x, i), tt_at(y, i)) * lx * lx, 1e-12);
  }
  /* maximum: the gradient is piecewise linear: second derivative 0 */
  ct_tensor *mx = ct_maximum(ct_mul(a, a), b), *gmx = grad_of(mx, a, true), *gmx2 = grad_of(gmx, a, false);
  CHECK(VALS(gmx2, 0, 2));
}

TEST(binary_errors_inplace) {
  ct_tensor *a = ct_ones(2, (int64_t[]){2, 3}, ct_opts()), *b = ct_ones(2, (int64_t[]){2, 4}, ct_opts());
  CHECK_ERR_PTR(ct_add(a, b), "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
  CHECK_ERR_PTR(ct_pow(a, b), "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
  ct_tensor *i = V(CT_INT64, 1, 2);
  CHECK_ERR(ct_add_scalar_(i, ct_sf(1.5)), "result type Float can't be cast to the desired output type Long");
  CHECK_ERR(ct_div_(i, V(CT_INT64, 2)), "result type Float can't be cast to the desired output type Long");
  CHECK_ERR(ct_atan2_(i, V(CT_FLOAT32, 2)), "result type Float can't be cast to the desired output type Long");
  CHECK_OK(ct_div_scalar_mode_(i, ct_si(2), "floor"));
  CHECK(VALS(i, 0, 1));
  ct_tensor *bt = V(CT_BOOL, 1);
  CHECK_ERR_PTR(ct_sub(bt, bt), "Subtraction, the `-` operator, with two bool tensors is not supported.");
  CHECK_ERR_PTR(ct_sub(V(CT_INT64, 1), bt), "Subtraction, the `-` operator, with a bool tensor is not supported.");
  CHECK_ERR_PTR(ct_rsub_scalar(bt, ct_si(1)), "with a bool tensor is not supported");
  CHECK_ERR_PTR(ct_add_alpha(V(CT_INT64, 1), V(CT_INT64, 1), ct_sf(2.5)),
                "For integral input tensors, argument alpha must not be a floating point number.");
  CHECK_ERR_PTR(ct_mul(NULL, bt), "expected a tensor");
  CHECK_ERR(ct_add_(a, ct_ones(3, (int64_t[]){2, 2, 3}, ct_opts())),
            "output with shape [2, 3] doesn't match the broadcast shape [2, 2, 3]");
  /* in place bumps the version counter and keeps the storage */
  ct_tensor *x = V(CT_FLOAT32, 1, 2);
  uint64_t v0 = ct_version(x);
  void *p0 = ct_data_ptr(x);
  CHECK_OK(ct_hypot_(x, V(CT_FLOAT32, 0)));
  CHECK(ct_version(x) > v0 && ct_data_ptr(x) == p0 && VALS(x, 1, 2));
  CHECK_OK(ct_remainder_scalar_(x, ct_si(2)));
  CHECK(VALS(x, 1, 0));
  /* in place on a leaf requiring grad is refused */
  ct_tensor *lf = leaf(V(CT_FLOAT32, 1));
  CHECK_ERR(ct_mul_scalar_(lf, ct_si(2)), "a leaf Variable that requires grad");
  /* out= with grad is refused */
  ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts());
  CHECK_ERR(ct_pow_out(o, lf, lf), "don't support automatic differentiation");
}

TEST(binary_layouts) {
  /* non-contiguous, broadcast both ways, zero-size, 0-dim */
  double v[6] = {1, 2, 3, 4, 5, 6};
  ct_tensor *m = tt_from(v, 2, (int64_t[]){2, 3}, CT_FLOAT32), *mt = ct_t(m); /* 3x2 view */
  ct_tensor *col = V(CT_FLOAT32, 10, 20, 30), *colv = ct_view(col, 2, (int64_t[]){3, 1});
  ct_tensor *r = ct_sub(mt, colv);
  CHECK(r && ct_shape(r)[0] == 3 && ct_shape(r)[1] == 2 && VALS(r, -9, -6, -18, -15, -27, -24));
  r = ct_maximum(V(CT_FLOAT32, 2, 5), mt);
  CHECK(r && VALS(r, 2, 5, 2, 5, 3, 6));
  ct_tensor *e = ct_empty(2, (int64_t[]){0, 3}, ct_opts());
  r = ct_pow(e, V(CT_FLOAT32, 1, 2, 3));
  CHECK(r && ct_ndim(r) == 2 && ct_shape(r)[0] == 0 && ct_numel(r) == 0);
  r = ct_eq(e, ct_scalar_tensor(ct_sf(1), ct_opts()));
  CHECK(r && ct_numel(r) == 0 && ct_tensor_dtype(r) == CT_BOOL);
  ct_tensor *z0 = ct_scalar_tensor(ct_si(3), ct_opts_dtype(CT_INT64)), *z1 = ct_scalar_tensor(ct_si(2), ct_opts_dtype(CT_INT64));
  r = ct_remainder(z0, z1);
  CHECK(r && ct_ndim(r) == 0 && tt_at(r, 0) == 1);
  r = ct_pow(z0, z1);
  CHECK(r && ct_ndim(r) == 0 && tt_at(r, 0) == 9);
  /* strided (every other element) */
  ct_tensor *big = V(CT_INT32, 1, 2, 3, 4, 5, 6), *sl = ct_slice(big, 0, 0, 6, 2);
  r = ct_bitwise_left_shift_scalar(sl, ct_si(2));
  CHECK(r && VALS(r, 4, 12, 20));
  /* gradients reduce over broadcast dims */
  ct_tensor *p = leaf(V(CT_FLOAT32, 2)), *q = leaf(tt_from(v, 2, (int64_t[]){2, 3}, CT_FLOAT32));
  ct_tensor *h = ct_atan2(p, q), *gp = grad_of(h, p, false);
  double s = 0;
  for (int i = 0; i < 6; i++) s += v[i] / (4 + v[i] * v[i]);
  CHECK(gp && ct_ndim(gp) == 1 && fabs(tt_at(gp, 0) - s) < 1e-6);
}
