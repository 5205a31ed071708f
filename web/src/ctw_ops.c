/* JavaScript glue for the op families: elementwise, reductions, linalg, views, indexing,
 * shape, nn functional, losses. Conventions in ctw.h / ctw_core.c. Ops with several
 * results return a status and leave the results in ctw_P[0..]. */
#include "ctw.h"

#include <string.h>

/* ---- unary ---- */
#define U(name)                                                   \
  API ct_tensor *ctw_##name(ct_tensor *a) { return ct_##name(a); } \
  API int ctw_##name##_(ct_tensor *a) { return ct_##name##_(a); }
U(abs) U(neg) U(sign) U(exp) U(exp2) U(expm1) U(log) U(log2) U(log10) U(log1p) U(sqrt) U(rsqrt)
U(sin) U(cos) U(tan) U(asin) U(acos) U(atan) U(sinh) U(cosh) U(tanh) U(asinh) U(acosh) U(atanh)
U(sigmoid) U(erf) U(erfc) U(erfinv) U(lgamma) U(digamma) U(floor) U(ceil) U(round) U(trunc) U(frac)
U(reciprocal) U(square) U(relu) U(relu6) U(silu) U(mish) U(hardsigmoid) U(hardswish) U(selu)
U(logical_not) U(bitwise_not) U(softsign)
#undef U
API ct_tensor *ctw_isnan(ct_tensor *a) { return ct_isnan(a); }
API ct_tensor *ctw_isinf(ct_tensor *a) { return ct_isinf(a); }
API ct_tensor *ctw_isfinite(ct_tensor *a) { return ct_isfinite(a); }
API ct_tensor *ctw_gelu(ct_tensor *a, int tanh_approx) { return ct_gelu(a, tanh_approx ? "tanh" : "none"); }
API int ctw_gelu_(ct_tensor *a, int tanh_approx) { return ct_gelu_(a, tanh_approx ? "tanh" : "none"); }
API ct_tensor *ctw_softplus(ct_tensor *a, double beta, double thr) { return ct_softplus(a, beta, thr); }
API ct_tensor *ctw_hardtanh(ct_tensor *a, double lo, double hi) { return ct_hardtanh(a, lo, hi); }
API int ctw_hardtanh_(ct_tensor *a, double lo, double hi) { return ct_hardtanh_(a, lo, hi); }
API ct_tensor *ctw_leaky_relu(ct_tensor *a, double s) { return ct_leaky_relu(a, s); }
API int ctw_leaky_relu_(ct_tensor *a, double s) { return ct_leaky_relu_(a, s); }
API ct_tensor *ctw_elu(ct_tensor *a, double alpha) { return ct_elu(a, alpha); }
API ct_tensor *ctw_celu(ct_tensor *a, double alpha) { return ct_celu(a, alpha); }
API ct_tensor *ctw_logit(ct_tensor *a, double eps) { return ct_logit(a, eps); }
API ct_tensor *ctw_round_decimals(ct_tensor *a, double d) { return ct_round_decimals(a, (int64_t)d); }
API ct_tensor *ctw_polygamma(double n, ct_tensor *a) { return ct_polygamma((int64_t)n, a); }
/* clamp(min, max): has_* = 0 means None */
API ct_tensor *ctw_clamp(ct_tensor *a, int has_min, double mn, int kmn, int has_max, double mx, int kmx) {
  ct_scalar lo = ctw_scalar(mn, kmn), hi = ctw_scalar(mx, kmx);
  return ct_clamp(a, has_min ? &lo : NULL, has_max ? &hi : NULL);
}
API int ctw_clamp_(ct_tensor *a, int has_min, double mn, int kmn, int has_max, double mx, int kmx) {
  ct_scalar lo = ctw_scalar(mn, kmn), hi = ctw_scalar(mx, kmx);
  return ct_clamp_(a, has_min ? &lo : NULL, has_max ? &hi : NULL);
}
API ct_tensor *ctw_clamp_tensor(ct_tensor *x, ct_tensor *mn, ct_tensor *mx) { return ct_clamp_tensor(x, mn, mx); }
/* nan_to_num: values in ctw_A[0..3) with presence flags in ctw_A[3..6) */
API ct_tensor *ctw_nan_to_num(ct_tensor *a) {
  double v[3] = {ctw_A[0], ctw_A[1], ctw_A[2]};
  return ct_nan_to_num(a, ctw_A[3] != 0 ? &v[0] : NULL, ctw_A[4] != 0 ? &v[1] : NULL, ctw_A[5] != 0 ? &v[2] : NULL);
}

/* ---- binary ---- */
/* tensor (op) tensor, tensor (op) number, and the in-place forms */
#define BT(name) API ct_tensor *ctw_##name(ct_tensor *a, ct_tensor *b) { return ct_##name(a, b); }
#define BS(name) \
  API ct_tensor *ctw_##name##_s(ct_tensor *a, double v, int k) { return ct_##name##_scalar(a, ctw_scalar(v, k)); }
#define BTI(name) API int ctw_##name##_(ct_tensor *a, ct_tensor *b) { return ct_##name##_(a, b); }
#define BSI(name) \
  API int ctw_##name##_s_(ct_tensor *a, double v, int k) { return ct_##name##_scalar_(a, ctw_scalar(v, k)); }
#define BALL(name) BT(name) BS(name) BTI(name) BSI(name)
BALL(mul) BALL(remainder) BALL(fmod) BALL(floor_divide) BALL(pow)
BALL(bitwise_and) BALL(bitwise_or) BALL(bitwise_xor) BALL(bitwise_left_shift) BALL(bitwise_right_shift)
BALL(eq) BALL(ne) BALL(lt) BALL(le) BALL(gt) BALL(ge) BALL(copysign)
BT(atan2) BTI(atan2) BT(maximum) BT(minimum) BT(fmax) BT(fmin) BT(hypot) BT(logaddexp) BT(logaddexp2)
BT(xlogy) BS(xlogy) BT(logical_and) BT(logical_or) BT(logical_xor) BTI(logical_and) BTI(logical_or) BTI(logical_xor)
BS(rsub)
#undef BT
#undef BS
#undef BTI
#undef BSI
#undef BALL
/* add / sub with alpha */
API ct_tensor *ctw_add(ct_tensor *a, ct_tensor *b, double alpha, int k) { return ct_add_alpha(a, b, ctw_scalar(alpha, k)); }
API ct_tensor *ctw_add_s(ct_tensor *a, double v, int k) { return ct_add_scalar(a, ctw_scalar(v, k)); }
API int ctw_add_(ct_tensor *a, ct_tensor *b, double alpha, int k) { return ct_add_alpha_(a, b, ctw_scalar(alpha, k)); }
API int ctw_add_s_(ct_tensor *a, double v, int k) { return ct_add_scalar_(a, ctw_scalar(v, k)); }
API ct_tensor *ctw_sub(ct_tensor *a, ct_tensor *b, double alpha, int k) { return ct_sub_alpha(a, b, ctw_scalar(alpha, k)); }
API ct_tensor *ctw_sub_s(ct_tensor *a, double v, int k) { return ct_sub_scalar(a, ctw_scalar(v, k)); }
API int ctw_sub_(ct_tensor *a, ct_tensor *b, double alpha, int k) { return ct_sub_alpha_(a, b, ctw_scalar(alpha, k)); }
API int ctw_sub_s_(ct_tensor *a, double v, int k) { return ct_sub_scalar_(a, ctw_scalar(v, k)); }
/* div with rounding mode in ctw_S[0] ("" = true division) */
API ct_tensor *ctw_div(ct_tensor *a, ct_tensor *b) { return ct_div_mode(a, b, ctw_s(0)); }
API ct_tensor *ctw_div_s(ct_tensor *a, double v, int k) { return ct_div_scalar_mode(a, ctw_scalar(v, k), ctw_s(0)); }
API int ctw_div_(ct_tensor *a, ct_tensor *b) { return ct_div_mode_(a, b, ctw_s(0)); }
API int ctw_div_s_(ct_tensor *a, double v, int k) { return ct_div_scalar_mode_(a, ctw_scalar(v, k), ctw_s(0)); }
API ct_tensor *ctw_pow_scalar_tensor(double v, int k, ct_tensor *e) { return ct_pow_scalar_tensor(ctw_scalar(v, k), e); }
API ct_tensor *ctw_isclose(ct_tensor *a, ct_tensor *b, double rtol, double atol, int equal_nan) {
  return ct_isclose(a, b, rtol, atol, equal_nan != 0);
}
/* allclose / equal: the answer in ctw_A[0] */
API int ctw_allclose(ct_tensor *a, ct_tensor *b, double rtol, double atol, int equal_nan) {
  bool r = false;
  ct_status st = ct_allclose(a, b, rtol, atol, equal_nan != 0, &r);
  ctw_A[0] = r;
  return st;
}
API int ctw_equal(ct_tensor *a, ct_tensor *b) {
  bool r = false;
  ct_status st = ct_equal(a, b, &r);
  ctw_A[0] = r;
  return st;
}

/* ---- ternary ---- */
API ct_tensor *ctw_where(ct_tensor *c, ct_tensor *a, ct_tensor *b) { return ct_where(c, a, b); }
API ct_tensor *ctw_where_sa(ct_tensor *c, double a, int ka, ct_tensor *b) { return ct_where_scalar_a(c, ctw_scalar(a, ka), b); }
API ct_tensor *ctw_where_sb(ct_tensor *c, ct_tensor *a, double b, int kb) { return ct_where_scalar_b(c, a, ctw_scalar(b, kb)); }
API ct_tensor *ctw_where_ss(ct_tensor *c, double a, int ka, double b, int kb) {
  return ct_where_scalars(c, ctw_scalar(a, ka), ctw_scalar(b, kb));
}
API ct_tensor *ctw_lerp(ct_tensor *s, ct_tensor *e, double w, int k) { return ct_lerp(s, e, ctw_scalar(w, k)); }
API ct_tensor *ctw_lerp_tensor(ct_tensor *s, ct_tensor *e, ct_tensor *w) { return ct_lerp_tensor(s, e, w); }
API ct_tensor *ctw_addcmul(ct_tensor *s, ct_tensor *a, ct_tensor *b, double v, int k) { return ct_addcmul(s, a, b, ctw_scalar(v, k)); }
API ct_tensor *ctw_addcdiv(ct_tensor *s, ct_tensor *a, ct_tensor *b, double v, int k) { return ct_addcdiv(s, a, b, ctw_scalar(v, k)); }
API int ctw_addcmul_(ct_tensor *s, ct_tensor *a, ct_tensor *b, double v, int k) { return ct_addcmul_(s, a, b, ctw_scalar(v, k)); }
API int ctw_addcdiv_(ct_tensor *s, ct_tensor *a, ct_tensor *b, double v, int k) { return ct_addcdiv_(s, a, b, ctw_scalar(v, k)); }

/* ---- reductions: dims in ctw_A[0..n); n == 0 reduces everything ---- */
#define DIMS(n)                                                                          \
  int64_t dims[CT_MAX_DIMS];                                                             \
  if ((n) < 0 || (n) > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many dims"); \
  ctw_ints(0, (n), dims);
API ct_tensor *ctw_sum(ct_tensor *t, int n, int keepdim, int dtype) { DIMS(n) return ct_sum_dtype(t, n, dims, keepdim != 0, dtype); }
API ct_tensor *ctw_mean(ct_tensor *t, int n, int keepdim, int dtype) { DIMS(n) return ct_mean_dtype(t, n, dims, keepdim != 0, dtype); }
API ct_tensor *ctw_amax(ct_tensor *t, int n, int keepdim) { DIMS(n) return ct_amax(t, n, dims, keepdim != 0); }
API ct_tensor *ctw_amin(ct_tensor *t, int n, int keepdim) { DIMS(n) return ct_amin(t, n, dims, keepdim != 0); }
API ct_tensor *ctw_var(ct_tensor *t, int n, double corr, int keepdim) { DIMS(n) return ct_var(t, n, dims, corr, keepdim != 0); }
API ct_tensor *ctw_std(ct_tensor *t, int n, double corr, int keepdim) { DIMS(n) return ct_std(t, n, dims, corr, keepdim != 0); }
API ct_tensor *ctw_norm(ct_tensor *t, double p, int n, int keepdim) { DIMS(n) return ct_norm(t, p, n, dims, keepdim != 0); }
API ct_tensor *ctw_logsumexp(ct_tensor *t, int n, int keepdim) { DIMS(n) return ct_logsumexp(t, n, dims, keepdim != 0); }
API ct_tensor *ctw_all(ct_tensor *t, int n, int keepdim) { DIMS(n) return n ? ct_all_dims(t, n, dims, keepdim != 0) : ct_all(t); }
API ct_tensor *ctw_any(ct_tensor *t, int n, int keepdim) { DIMS(n) return n ? ct_any_dims(t, n, dims, keepdim != 0) : ct_any(t); }
API ct_tensor *ctw_count_nonzero(ct_tensor *t, int n) { DIMS(n) return ct_count_nonzero(t, n, dims); }
API int ctw_var_mean(ct_tensor *t, int n, double corr, int keepdim, int is_std) {
  int64_t dims[CT_MAX_DIMS];
  if (n < 0 || n > CT_MAX_DIMS) return ctw_fail(CT_ERR_VALUE, "too many dims");
  ctw_ints(0, n, dims);
  return is_std ? ct_std_mean(t, n, dims, corr, keepdim != 0, &ctw_P[0], &ctw_P[1])
                : ct_var_mean(t, n, dims, corr, keepdim != 0, &ctw_P[0], &ctw_P[1]);
}
#undef DIMS
API ct_tensor *ctw_prod(ct_tensor *t, int has_dim, double dim, int keepdim, int dtype) {
  int64_t d = (int64_t)dim;
  return ct_prod_dtype(t, has_dim ? &d : NULL, keepdim != 0, dtype);
}
API ct_tensor *ctw_max_all(ct_tensor *t) { return ct_max(t); }
API ct_tensor *ctw_min_all(ct_tensor *t) { return ct_min(t); }
API int ctw_max_dim(ct_tensor *t, double dim, int keepdim) { return ct_max_dim(t, (int64_t)dim, keepdim != 0, &ctw_P[0], &ctw_P[1]); }
API int ctw_min_dim(ct_tensor *t, double dim, int keepdim) { return ct_min_dim(t, (int64_t)dim, keepdim != 0, &ctw_P[0], &ctw_P[1]); }
API ct_tensor *ctw_argmax(ct_tensor *t, int has_dim, double dim, int keepdim) {
  int64_t d = (int64_t)dim;
  return ct_argmax(t, has_dim ? &d : NULL, keepdim != 0);
}
API ct_tensor *ctw_argmin(ct_tensor *t, int has_dim, double dim, int keepdim) {
  int64_t d = (int64_t)dim;
  return ct_argmin(t, has_dim ? &d : NULL, keepdim != 0);
}
API ct_tensor *ctw_cumsum(ct_tensor *t, double dim, int dtype) { return ct_cumsum(t, (int64_t)dim, dtype); }
API ct_tensor *ctw_cumprod(ct_tensor *t, double dim, int dtype) { return ct_cumprod(t, (int64_t)dim, dtype); }
API int ctw_cummax(ct_tensor *t, double dim) { return ct_cummax(t, (int64_t)dim, &ctw_P[0], &ctw_P[1]); }
API int ctw_cummin(ct_tensor *t, double dim) { return ct_cummin(t, (int64_t)dim, &ctw_P[0], &ctw_P[1]); }
API int ctw_sort(ct_tensor *t, double dim, int descending, int stable) {
  return ct_sort(t, (int64_t)dim, descending != 0, stable != 0, &ctw_P[0], &ctw_P[1]);
}
API ct_tensor *ctw_argsort(ct_tensor *t, double dim, int descending, int stable) {
  return ct_argsort(t, (int64_t)dim, descending != 0, stable != 0);
}
API int ctw_topk(ct_tensor *t, double k, double dim, int largest, int sorted) {
  return ct_topk(t, (int64_t)k, (int64_t)dim, largest != 0, sorted != 0, &ctw_P[0], &ctw_P[1]);
}
API int ctw_kthvalue(ct_tensor *t, double k, double dim, int keepdim) {
  return ct_kthvalue(t, (int64_t)k, (int64_t)dim, keepdim != 0, &ctw_P[0], &ctw_P[1]);
}
API ct_tensor *ctw_median_all(ct_tensor *t) { return ct_median(t); }
API int ctw_median_dim(ct_tensor *t, double dim, int keepdim) {
  return ct_median_dim(t, (int64_t)dim, keepdim != 0, &ctw_P[0], &ctw_P[1]);
}
API int ctw_mode(ct_tensor *t, double dim, int keepdim) { return ct_mode(t, (int64_t)dim, keepdim != 0, &ctw_P[0], &ctw_P[1]); }
API int ctw_unique(ct_tensor *t, int sorted, int inverse, int counts) {
  ctw_P[0] = ctw_P[1] = ctw_P[2] = NULL;
  return ct_unique(t, sorted != 0, inverse != 0, counts != 0, &ctw_P[0], inverse ? &ctw_P[1] : NULL,
                   counts ? &ctw_P[2] : NULL);
}

/* ---- linalg ---- */
API ct_tensor *ctw_matmul(ct_tensor *a, ct_tensor *b) { return ct_matmul(a, b); }
API ct_tensor *ctw_mm(ct_tensor *a, ct_tensor *b) { return ct_mm(a, b); }
API ct_tensor *ctw_bmm(ct_tensor *a, ct_tensor *b) { return ct_bmm(a, b); }
API ct_tensor *ctw_mv(ct_tensor *a, ct_tensor *b) { return ct_mv(a, b); }
API ct_tensor *ctw_dot(ct_tensor *a, ct_tensor *b) { return ct_dot(a, b); }
API ct_tensor *ctw_outer(ct_tensor *a, ct_tensor *b) { return ct_outer(a, b); }
API ct_tensor *ctw_addmm(ct_tensor *s, ct_tensor *a, ct_tensor *b, double beta, int kb, double alpha, int ka) {
  return ct_addmm(s, a, b, ctw_scalar(beta, kb), ctw_scalar(alpha, ka));
}
API ct_tensor *ctw_baddbmm(ct_tensor *s, ct_tensor *a, ct_tensor *b, double beta, int kb, double alpha, int ka) {
  return ct_baddbmm(s, a, b, ctw_scalar(beta, kb), ctw_scalar(alpha, ka));
}
API ct_tensor *ctw_linear(ct_tensor *x, ct_tensor *w, ct_tensor *b) { return ct_linear(x, w, b); }
/* einsum(equation in ctw_S[0], operands ctw_P[0..n)) */
API ct_tensor *ctw_einsum(int n) {
  if (n < 0 || n > CTW_NPTRS) return ctw_fail_null(CT_ERR_VALUE, "einsum: too many operands");
  return ct_einsum(ctw_S[0], n, (const ct_tensor *const *)ctw_P);
}

/* ---- views ---- */
#define SHAPE(n)                                                                            \
  int64_t shp[CT_MAX_DIMS];                                                                 \
  if ((n) < 0 || (n) > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many dimensions"); \
  ctw_ints(0, (n), shp);
API ct_tensor *ctw_view(ct_tensor *t, int n) { SHAPE(n) return ct_view(t, n, shp); }
API ct_tensor *ctw_reshape(ct_tensor *t, int n) { SHAPE(n) return ct_reshape(t, n, shp); }
API ct_tensor *ctw_permute(ct_tensor *t, int n) { SHAPE(n) return ct_permute(t, n, shp); }
API ct_tensor *ctw_expand(ct_tensor *t, int n) { SHAPE(n) return ct_expand(t, n, shp); }
API ct_tensor *ctw_broadcast_to(ct_tensor *t, int n) { SHAPE(n) return ct_broadcast_to(t, n, shp); }
API ct_tensor *ctw_unflatten(ct_tensor *t, double dim, int n) { SHAPE(n) return ct_unflatten(t, (int64_t)dim, n, shp); }
API ct_tensor *ctw_flip(ct_tensor *t, int n) { SHAPE(n) return ct_flip(t, n, shp); }
API ct_tensor *ctw_repeat(ct_tensor *t, int n) { SHAPE(n) return ct_repeat(t, n, shp); }
API ct_tensor *ctw_tile(ct_tensor *t, int n) { SHAPE(n) return ct_tile(t, n, shp); }
#undef SHAPE
API ct_tensor *ctw_view_as(ct_tensor *t, ct_tensor *o) { return ct_view_as(t, o); }
API ct_tensor *ctw_reshape_as(ct_tensor *t, ct_tensor *o) { return ct_reshape_as(t, o); }
API ct_tensor *ctw_expand_as(ct_tensor *t, ct_tensor *o) { return ct_expand_as(t, o); }
API ct_tensor *ctw_transpose(ct_tensor *t, double a, double b) { return ct_transpose(t, (int64_t)a, (int64_t)b); }
API ct_tensor *ctw_t(ct_tensor *t) { return ct_t(t); }
API ct_tensor *ctw_mT(ct_tensor *t) { return ct_mT(t); }
API ct_tensor *ctw_squeeze(ct_tensor *t) { return ct_squeeze(t); }
API ct_tensor *ctw_squeeze_dim(ct_tensor *t, double d) { return ct_squeeze_dim(t, (int64_t)d); }
API ct_tensor *ctw_unsqueeze(ct_tensor *t, double d) { return ct_unsqueeze(t, (int64_t)d); }
API ct_tensor *ctw_flatten(ct_tensor *t, double a, double b) { return ct_flatten(t, (int64_t)a, (int64_t)b); }
API ct_tensor *ctw_narrow(ct_tensor *t, double d, double s, double l) { return ct_narrow(t, (int64_t)d, (int64_t)s, (int64_t)l); }
API ct_tensor *ctw_select(ct_tensor *t, double d, double i) { return ct_select(t, (int64_t)d, (int64_t)i); }
API ct_tensor *ctw_slice(ct_tensor *t, double d, double s, double e, double st) {
  return ct_slice(t, (int64_t)d, (int64_t)s, (int64_t)e, (int64_t)st);
}
API ct_tensor *ctw_diagonal(ct_tensor *t, double off, double d1, double d2) {
  return ct_diagonal(t, (int64_t)off, (int64_t)d1, (int64_t)d2);
}
API ct_tensor *ctw_unfold(ct_tensor *t, double d, double size, double step) {
  return ct_unfold(t, (int64_t)d, (int64_t)size, (int64_t)step);
}
/* movedim: sources ctw_A[0..n), destinations ctw_A[n..2n) */
API ct_tensor *ctw_movedim(ct_tensor *t, int n) {
  int64_t s[CT_MAX_DIMS], d[CT_MAX_DIMS];
  if (n < 0 || n > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many dims");
  ctw_ints(0, n, s);
  ctw_ints(n, n, d);
  return ct_movedim(t, n, s, d);
}
API ct_tensor *ctw_alias(ct_tensor *t) { return ct_alias(t); }

/* ---- indexing ---- */
API ct_tensor *ctw_index_select(ct_tensor *t, double d, ct_tensor *i) { return ct_index_select(t, (int64_t)d, i); }
API ct_tensor *ctw_gather(ct_tensor *t, double d, ct_tensor *i) { return ct_gather(t, (int64_t)d, i); }
API ct_tensor *ctw_scatter(ct_tensor *t, double d, ct_tensor *i, ct_tensor *s) { return ct_scatter(t, (int64_t)d, i, s); }
API ct_tensor *ctw_scatter_value(ct_tensor *t, double d, ct_tensor *i, double v, int k) {
  return ct_scatter_value(t, (int64_t)d, i, ctw_scalar(v, k));
}
API ct_tensor *ctw_scatter_add(ct_tensor *t, double d, ct_tensor *i, ct_tensor *s) { return ct_scatter_add(t, (int64_t)d, i, s); }
API ct_tensor *ctw_scatter_reduce(ct_tensor *t, double d, ct_tensor *i, ct_tensor *s, int include_self) {
  return ct_scatter_reduce(t, (int64_t)d, i, s, ctw_S[0], include_self != 0);
}
API ct_tensor *ctw_index_add(ct_tensor *t, double d, ct_tensor *i, ct_tensor *s, double alpha, int k) {
  return ct_index_add(t, (int64_t)d, i, s, ctw_scalar(alpha, k));
}
API ct_tensor *ctw_index_copy(ct_tensor *t, double d, ct_tensor *i, ct_tensor *s) { return ct_index_copy(t, (int64_t)d, i, s); }
API ct_tensor *ctw_index_fill(ct_tensor *t, double d, ct_tensor *i, double v, int k) {
  return ct_index_fill(t, (int64_t)d, i, ctw_scalar(v, k));
}
API ct_tensor *ctw_masked_fill(ct_tensor *t, ct_tensor *m, double v, int k) { return ct_masked_fill(t, m, ctw_scalar(v, k)); }
API int ctw_masked_fill_(ct_tensor *t, ct_tensor *m, double v, int k) { return ct_masked_fill_(t, m, ctw_scalar(v, k)); }
API ct_tensor *ctw_masked_fill_tensor(ct_tensor *t, ct_tensor *m, ct_tensor *v) { return ct_masked_fill_tensor(t, m, v); }
API ct_tensor *ctw_masked_select(ct_tensor *t, ct_tensor *m) { return ct_masked_select(t, m); }
API ct_tensor *ctw_masked_scatter(ct_tensor *t, ct_tensor *m, ct_tensor *s) { return ct_masked_scatter(t, m, s); }
API ct_tensor *ctw_take(ct_tensor *t, ct_tensor *i) { return ct_take(t, i); }
API ct_tensor *ctw_take_along_dim(ct_tensor *t, ct_tensor *i, int has_dim, double d) {
  return ct_take_along_dim(t, i, has_dim != 0, (int64_t)d);
}
API ct_tensor *ctw_nonzero(ct_tensor *t) { return ct_nonzero(t); }
API ct_tensor *ctw_index_put(ct_tensor *t, int n, ct_tensor *v, int accumulate) {
  if (n < 0 || n > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many indices");
  return ct_index_put_tensors(t, n, (const ct_tensor *const *)ctw_P, v, accumulate != 0);
}
/* Python-style items: 8 numbers each in ctw_A (kind, i, has_start, start, has_stop, stop,
 * has_step, step), tensors of CT_IDX_TENSOR items in ctw_P[item] */
static int read_items(int n, ct_index_item *it) {
  if (n < 0 || n > 64) return ctw_fail(CT_ERR_INDEX, "too many indices for tensor");
  for (int k = 0; k < n; k++) {
    const double *a = ctw_A + 8 * k;
    ct_index_item x = {(ct_index_kind)(int)a[0], (int64_t)a[1], a[2] != 0, a[4] != 0, a[6] != 0,
                       (int64_t)a[3], (int64_t)a[5], (int64_t)a[7], ctw_P[k]};
    it[k] = x;
  }
  return CT_OK;
}
API ct_tensor *ctw_index(ct_tensor *t, int n) {
  ct_index_item it[64];
  if (read_items(n, it) != CT_OK) return NULL;
  return ct_index(t, n, it);
}
API int ctw_index_put_(ct_tensor *t, int n, ct_tensor *v, int accumulate) {
  ct_index_item it[64];
  if (read_items(n, it) != CT_OK) return ct_last_status();
  return ct_index_put_(t, n, it, v, accumulate != 0);
}
API int ctw_index_put_scalar_(ct_tensor *t, int n, double v, int k) {
  ct_index_item it[64];
  if (read_items(n, it) != CT_OK) return ct_last_status();
  return ct_index_put_scalar_(t, n, it, ctw_scalar(v, k));
}

/* ---- shape: tensor lists in ctw_P[0..n) ---- */
API ct_tensor *ctw_cat(int n, double dim) { return ct_cat(n, (const ct_tensor *const *)ctw_P, (int64_t)dim); }
API ct_tensor *ctw_stack(int n, double dim) { return ct_stack(n, (const ct_tensor *const *)ctw_P, (int64_t)dim); }
API ct_tensor *ctw_hstack(int n) { return ct_hstack(n, (const ct_tensor *const *)ctw_P); }
API ct_tensor *ctw_vstack(int n) { return ct_vstack(n, (const ct_tensor *const *)ctw_P); }
/* list results: their count (-1 on error), the tensors in ctw_P */
static int list_result(ct_status st, int n) { return st == CT_OK ? n : -1; }
API int ctw_split(ct_tensor *t, double size, double dim) {
  int n = 0;
  return list_result(ct_split(t, (int64_t)size, (int64_t)dim, &n, ctw_P, CTW_NPTRS), n);
}
API int ctw_split_sizes(ct_tensor *t, int ns, double dim) {
  int64_t sizes[CTW_NARGS];
  if (ns < 0 || ns > CTW_NARGS) return ctw_fail(CT_ERR_VALUE, "too many sizes"), -1;
  ctw_ints(0, ns, sizes);
  int n = 0;
  return list_result(ct_split_sizes(t, ns, sizes, (int64_t)dim, &n, ctw_P, CTW_NPTRS), n);
}
API int ctw_chunk(ct_tensor *t, double chunks, double dim) {
  int n = 0;
  return list_result(ct_chunk(t, (int64_t)chunks, (int64_t)dim, &n, ctw_P, CTW_NPTRS), n);
}
API int ctw_unbind(ct_tensor *t, double dim) {
  int n = 0;
  return list_result(ct_unbind(t, (int64_t)dim, &n, ctw_P, CTW_NPTRS), n);
}
API int ctw_broadcast_tensors(int k) {
  ct_tensor *in[CTW_NPTRS];
  if (k < 0 || k > CTW_NPTRS) return -1;
  memcpy(in, ctw_P, sizeof(ct_tensor *) * (size_t)k);
  int n = 0;
  return list_result(ct_broadcast_tensors(k, (const ct_tensor *const *)in, &n, ctw_P, CTW_NPTRS), n);
}
/* roll: shifts ctw_A[0..ns), dims ctw_A[ns..ns+nd) */
API ct_tensor *ctw_roll(ct_tensor *t, int ns, int nd) {
  int64_t s[CT_MAX_DIMS], d[CT_MAX_DIMS];
  if (ns < 0 || ns > CT_MAX_DIMS || nd < 0 || nd > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many dims");
  ctw_ints(0, ns, s);
  ctw_ints(ns, nd, d);
  return ct_roll(t, ns, s, nd, d);
}
API ct_tensor *ctw_repeat_interleave(ct_tensor *t, double repeats, int has_dim, double dim) {
  return ct_repeat_interleave(t, (int64_t)repeats, has_dim ? (int64_t)dim : CT_NO_DIM);
}
API ct_tensor *ctw_tril(ct_tensor *t, double d) { return ct_tril(t, (int64_t)d); }
API ct_tensor *ctw_triu(ct_tensor *t, double d) { return ct_triu(t, (int64_t)d); }
/* pad: (left, right) pairs from the last dim in ctw_A[0..n), mode in ctw_S[0] */
API ct_tensor *ctw_pad(ct_tensor *t, int n, double value) {
  int64_t p[2 * CT_MAX_DIMS];
  if (n < 0 || n > 2 * CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "Padding length too large");
  ctw_ints(0, n, p);
  return ct_pad(t, n, p, ctw_s(0), value);
}

/* ---- nn functional ---- */
API ct_tensor *ctw_softmax(ct_tensor *x, double dim, int dtype) { return ct_softmax(x, (int64_t)dim, dtype); }
API ct_tensor *ctw_log_softmax(ct_tensor *x, double dim, int dtype) { return ct_log_softmax(x, (int64_t)dim, dtype); }
API ct_tensor *ctw_conv1d(ct_tensor *x, ct_tensor *w, ct_tensor *b, double stride, double pad, double dil, double groups) {
  if (ctw_S[0][0]) return ct_conv1d_mode(x, w, b, (int64_t)stride, ctw_S[0], (int64_t)dil, (int64_t)groups);
  return ct_conv1d(x, w, b, (int64_t)stride, (int64_t)pad, (int64_t)dil, (int64_t)groups);
}
/* conv2d: stride ctw_A[0..2), padding [2..4), dilation [4..6); padding "same"/"valid" in ctw_S[0] */
API ct_tensor *ctw_conv2d(ct_tensor *x, ct_tensor *w, ct_tensor *b, double groups) {
  int64_t a[6];
  ctw_ints(0, 6, a);
  if (ctw_S[0][0]) return ct_conv2d_mode(x, w, b, a, ctw_S[0], a + 4, (int64_t)groups);
  return ct_conv2d(x, w, b, a, a + 2, a + 4, (int64_t)groups);
}
/* conv_transpose2d: stride [0..2), padding [2..4), output_padding [4..6), dilation [6..8) */
API ct_tensor *ctw_conv_transpose2d(ct_tensor *x, ct_tensor *w, ct_tensor *b, double groups) {
  int64_t a[8];
  ctw_ints(0, 8, a);
  return ct_conv_transpose2d(x, w, b, a, a + 2, a + 4, (int64_t)groups, a + 6);
}
/* pools: kernel [0..2), stride [2..4) (has_stride), padding [4..6), dilation [6..8);
 * with_indices puts the indices in ctw_P[1] */
API ct_tensor *ctw_max_pool2d(ct_tensor *x, int has_stride, int ceil_mode, int with_indices) {
  int64_t a[8];
  ctw_ints(0, 8, a);
  ctw_P[1] = NULL;
  return ct_max_pool2d(x, a, has_stride ? a + 2 : NULL, a + 4, a + 6, ceil_mode != 0, with_indices ? &ctw_P[1] : NULL);
}
API ct_tensor *ctw_avg_pool2d(ct_tensor *x, int has_stride, int ceil_mode, int count_include_pad, double divisor) {
  int64_t a[6];
  ctw_ints(0, 6, a);
  return ct_avg_pool2d(x, a, has_stride ? a + 2 : NULL, a + 4, ceil_mode != 0, count_include_pad != 0, (int64_t)divisor);
}
API ct_tensor *ctw_adaptive_avg_pool2d(ct_tensor *x, double h, double w) {
  int64_t s[2] = {(int64_t)h, (int64_t)w};
  return ct_adaptive_avg_pool2d(x, s);
}
API ct_tensor *ctw_adaptive_max_pool2d(ct_tensor *x, double h, double w) {
  int64_t s[2] = {(int64_t)h, (int64_t)w};
  return ct_adaptive_max_pool2d(x, s, NULL);
}
API ct_tensor *ctw_batch_norm(ct_tensor *x, ct_tensor *rm, ct_tensor *rv, ct_tensor *w, ct_tensor *b, int training,
                             double momentum, double eps) {
  return ct_batch_norm(x, rm, rv, w, b, training != 0, momentum, eps);
}
API ct_tensor *ctw_layer_norm(ct_tensor *x, int n, ct_tensor *w, ct_tensor *b, double eps) {
  int64_t s[CT_MAX_DIMS];
  if (n < 0 || n > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many dimensions");
  ctw_ints(0, n, s);
  return ct_layer_norm(x, n, s, w, b, eps);
}
API ct_tensor *ctw_group_norm(ct_tensor *x, double groups, ct_tensor *w, ct_tensor *b, double eps) {
  return ct_group_norm(x, (int64_t)groups, w, b, eps);
}
API ct_tensor *ctw_rms_norm(ct_tensor *x, int n, ct_tensor *w, double eps) {
  int64_t s[CT_MAX_DIMS];
  if (n < 0 || n > CT_MAX_DIMS) return ctw_fail_null(CT_ERR_VALUE, "too many dimensions");
  ctw_ints(0, n, s);
  return ct_rms_norm(x, n, s, w, eps);
}
API ct_tensor *ctw_dropout(ct_tensor *x, double p, int training, ct_generator *g) { return ct_dropout(x, p, training != 0, g); }
API ct_tensor *ctw_embedding(ct_tensor *i, ct_tensor *w, int has_pad, double pad) {
  int64_t p = (int64_t)pad;
  return ct_embedding(i, w, has_pad ? &p : NULL);
}
/* interpolate: size [0..2) or scale_factor [2..4), mode in ctw_S[0] */
API ct_tensor *ctw_interpolate(ct_tensor *x, int has_size, int align_corners) {
  int64_t s[2];
  ctw_ints(0, 2, s);
  double f[2] = {ctw_A[2], ctw_A[3]};
  return ct_interpolate(x, has_size ? s : NULL, has_size ? NULL : f, ctw_S[0], align_corners);
}
API ct_tensor *ctw_sdpa(ct_tensor *q, ct_tensor *k, ct_tensor *v, ct_tensor *mask, double dropout_p, int causal,
                       int has_scale, double scale, ct_generator *g) {
  return ct_scaled_dot_product_attention(q, k, v, mask, dropout_p, causal != 0, has_scale ? &scale : NULL, g);
}

/* ---- losses: reduction 0 none, 1 mean, 2 sum, 3 batchmean ---- */
API ct_tensor *ctw_mse_loss(ct_tensor *a, ct_tensor *b, int r) { return ct_mse_loss(a, b, (ct_reduction)r); }
API ct_tensor *ctw_l1_loss(ct_tensor *a, ct_tensor *b, int r) { return ct_l1_loss(a, b, (ct_reduction)r); }
API ct_tensor *ctw_smooth_l1_loss(ct_tensor *a, ct_tensor *b, int r, double beta) { return ct_smooth_l1_loss(a, b, (ct_reduction)r, beta); }
API ct_tensor *ctw_huber_loss(ct_tensor *a, ct_tensor *b, int r, double d) { return ct_huber_loss(a, b, (ct_reduction)r, d); }
API ct_tensor *ctw_binary_cross_entropy(ct_tensor *a, ct_tensor *b, ct_tensor *w, int r) {
  return ct_binary_cross_entropy(a, b, w, (ct_reduction)r);
}
API ct_tensor *ctw_binary_cross_entropy_with_logits(ct_tensor *a, ct_tensor *b, ct_tensor *w, ct_tensor *pw, int r) {
  return ct_binary_cross_entropy_with_logits(a, b, w, pw, (ct_reduction)r);
}
API ct_tensor *ctw_kl_div(ct_tensor *a, ct_tensor *b, int r, int log_target) { return ct_kl_div(a, b, (ct_reduction)r, log_target != 0); }
API ct_tensor *ctw_nll_loss(ct_tensor *a, ct_tensor *t, ct_tensor *w, int r, double ignore) {
  return ct_nll_loss(a, t, w, (ct_reduction)r, (int64_t)ignore);
}
API ct_tensor *ctw_cross_entropy(ct_tensor *a, ct_tensor *t, ct_tensor *w, int r, double ignore, double smoothing) {
  return ct_cross_entropy(a, t, w, (ct_reduction)r, (int64_t)ignore, smoothing);
}
API ct_tensor *ctw_cosine_similarity(ct_tensor *a, ct_tensor *b, double dim, double eps) {
  return ct_cosine_similarity(a, b, (int64_t)dim, eps);
}
API ct_tensor *ctw_pairwise_distance(ct_tensor *a, ct_tensor *b, double p, double eps, int keepdim) {
  return ct_pairwise_distance(a, b, p, eps, keepdim != 0);
}
API ct_tensor *ctw_one_hot(ct_tensor *t, double n) { return ct_one_hot(t, (int64_t)n); }
/* reduction name -> code (ValueError for unknown names) */
API int ctw_reduction(void) {
  ct_reduction r;
  if (ct_reduction_parse(ctw_S[1], &r) != CT_OK) return -1;
  return (int)r;
}
