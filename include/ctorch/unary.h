/* Unary elementwise ops. Each op `x` has three forms:
 *   ct_tensor *ct_x(const ct_tensor *a, ...)          out of place (new tensor)
 *   ct_status  ct_x_(ct_tensor *a, ...)               in place (PyTorch's x_)
 *   ct_status  ct_x_out(ct_tensor *out, const ct_tensor *a, ...)   out= (resized like PyTorch's when its shape differs)
 * Dtypes follow PyTorch 1.13 on CPU: floating functions (exp, sin, sqrt, ...) promote
 * integer and bool inputs to the default dtype; abs/neg/sign/floor/ceil/round/trunc/
 * relu/clamp/square/nan_to_num keep integer dtypes; isnan/isinf/isfinite/logical_not
 * return bool. Unsupported dtypes fail with PyTorch's message
 * ("\"exp_vml_cpu\" not implemented for 'Half'"). */
#ifndef CTORCH_UNARY_H
#define CTORCH_UNARY_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

#define CT_UNARY_DECL(name)                     \
  ct_tensor *ct_##name(const ct_tensor *a);     \
  ct_status ct_##name##_(ct_tensor *a);         \
  ct_status ct_##name##_out(ct_tensor *out, const ct_tensor *a);

/* |x| */
CT_UNARY_DECL(abs)
/* -x (bool refused) */
CT_UNARY_DECL(neg)
/* -1, 0 or 1 (bool: identity) */
CT_UNARY_DECL(sign)
/* exponentials and logarithms */
CT_UNARY_DECL(exp)
CT_UNARY_DECL(exp2)
CT_UNARY_DECL(expm1)
CT_UNARY_DECL(log)
CT_UNARY_DECL(log2)
CT_UNARY_DECL(log10)
CT_UNARY_DECL(log1p)
/* sqrt(x), 1/sqrt(x) */
CT_UNARY_DECL(sqrt)
CT_UNARY_DECL(rsqrt)
/* trigonometric and hyperbolic functions and their inverses */
CT_UNARY_DECL(sin)
CT_UNARY_DECL(cos)
CT_UNARY_DECL(tan)
CT_UNARY_DECL(asin)
CT_UNARY_DECL(acos)
CT_UNARY_DECL(atan)
CT_UNARY_DECL(sinh)
CT_UNARY_DECL(cosh)
CT_UNARY_DECL(tanh)
CT_UNARY_DECL(asinh)
CT_UNARY_DECL(acosh)
CT_UNARY_DECL(atanh)
/* 1/(1+exp(-x)) */
CT_UNARY_DECL(sigmoid)
/* error function, its complement and inverse */
CT_UNARY_DECL(erf)
CT_UNARY_DECL(erfc)
CT_UNARY_DECL(erfinv)
/* log|Gamma(x)| and its derivative */
CT_UNARY_DECL(lgamma)
CT_UNARY_DECL(digamma)
/* rounding (integers: identity); round is half to even */
CT_UNARY_DECL(floor)
CT_UNARY_DECL(ceil)
CT_UNARY_DECL(round)
CT_UNARY_DECL(trunc)
/* x - trunc(x) (floating only) */
CT_UNARY_DECL(frac)
/* 1/x */
CT_UNARY_DECL(reciprocal)
/* x*x (bool -> int64 like pow(x, 2)) */
CT_UNARY_DECL(square)
/* activations with fixed parameters */
CT_UNARY_DECL(relu)
CT_UNARY_DECL(relu6)
CT_UNARY_DECL(silu)
CT_UNARY_DECL(mish)
CT_UNARY_DECL(hardsigmoid)
CT_UNARY_DECL(hardswish)
CT_UNARY_DECL(selu)
/* x / (1 + |x|), composed of abs, add and div like PyTorch */
ct_tensor *ct_softsign(const ct_tensor *a);
ct_status ct_softsign_(ct_tensor *a);
/* bool results (logical_not_ writes 0/1 in the tensor's own dtype) */
ct_tensor *ct_isnan(const ct_tensor *a);
ct_status ct_isnan_out(ct_tensor *out, const ct_tensor *a);
ct_tensor *ct_isinf(const ct_tensor *a);
ct_status ct_isinf_out(ct_tensor *out, const ct_tensor *a);
ct_tensor *ct_isfinite(const ct_tensor *a);
ct_status ct_isfinite_out(ct_tensor *out, const ct_tensor *a);
CT_UNARY_DECL(logical_not)
/* ~x for integers and bool; floating refused */
CT_UNARY_DECL(bitwise_not)

/* round(x, decimals) (floating only), computed like PyTorch (x*10^d rounded, then /10^d) */
ct_tensor *ct_round_decimals(const ct_tensor *a, int64_t decimals);
ct_status ct_round_decimals_(ct_tensor *a, int64_t decimals);
ct_status ct_round_decimals_out(ct_tensor *out, const ct_tensor *a, int64_t decimals);
/* logit(x, eps): eps < 0 means None (no clamping); else x is clamped to [eps, 1-eps] first */
ct_tensor *ct_logit(const ct_tensor *a, double eps);
ct_status ct_logit_(ct_tensor *a, double eps);
ct_status ct_logit_out(ct_tensor *out, const ct_tensor *a, double eps);
/* polygamma(n, x): n-th derivative of digamma (n >= 0) */
ct_tensor *ct_polygamma(int64_t n, const ct_tensor *a);
ct_status ct_polygamma_(ct_tensor *a, int64_t n);
ct_status ct_polygamma_out(ct_tensor *out, int64_t n, const ct_tensor *a);
/* gelu with approximate "none" (NULL means "none") or "tanh" */
ct_tensor *ct_gelu(const ct_tensor *a, const char *approximate);
ct_status ct_gelu_(ct_tensor *a, const char *approximate);
ct_status ct_gelu_out(ct_tensor *out, const ct_tensor *a, const char *approximate);
/* softplus(x) = log(1+exp(beta*x))/beta, linear where beta*x > threshold (PyTorch defaults 1, 20) */
ct_tensor *ct_softplus(const ct_tensor *a, double beta, double threshold);
ct_status ct_softplus_(ct_tensor *a, double beta, double threshold);
ct_status ct_softplus_out(ct_tensor *out, const ct_tensor *a, double beta, double threshold);
/* hardtanh: clamp to [min_val, max_val] (PyTorch defaults -1, 1) */
ct_tensor *ct_hardtanh(const ct_tensor *a, double min_val, double max_val);
ct_status ct_hardtanh_(ct_tensor *a, double min_val, double max_val);
ct_status ct_hardtanh_out(ct_tensor *out, const ct_tensor *a, double min_val, double max_val);
/* leaky_relu (PyTorch default negative_slope 0.01) */
ct_tensor *ct_leaky_relu(const ct_tensor *a, double negative_slope);
ct_status ct_leaky_relu_(ct_tensor *a, double negative_slope);
ct_status ct_leaky_relu_out(ct_tensor *out, const ct_tensor *a, double negative_slope);
/* elu: scale * (x > 0 ? x : alpha * (exp(x * input_scale) - 1)); ct_elu is F.elu(x, alpha) */
ct_tensor *ct_elu(const ct_tensor *a, double alpha);
ct_status ct_elu_(ct_tensor *a, double alpha);
ct_tensor *ct_elu_full(const ct_tensor *a, double alpha, double scale, double input_scale);
ct_status ct_elu_full_(ct_tensor *a, double alpha, double scale, double input_scale);
ct_status ct_elu_out(ct_tensor *out, const ct_tensor *a, double alpha, double scale, double input_scale);
/* celu(x, alpha) = elu(x, alpha, 1, 1/alpha); alpha 0 refused like PyTorch */
ct_tensor *ct_celu(const ct_tensor *a, double alpha);
ct_status ct_celu_(ct_tensor *a, double alpha);
ct_status ct_celu_out(ct_tensor *out, const ct_tensor *a, double alpha);
/* clamp with scalar bounds; NULL = absent (at least one must be given). Promotes like
 * PyTorch: clamp(int tensor, 0.5, 1) is float. */
ct_tensor *ct_clamp(const ct_tensor *a, const ct_scalar *min, const ct_scalar *max);
ct_status ct_clamp_(ct_tensor *a, const ct_scalar *min, const ct_scalar *max);
ct_status ct_clamp_out(ct_tensor *out, const ct_tensor *a, const ct_scalar *min, const ct_scalar *max);
ct_tensor *ct_clamp_min(const ct_tensor *a, ct_scalar min);
ct_tensor *ct_clamp_max(const ct_tensor *a, ct_scalar max);
/* nan_to_num: NULL uses PyTorch's defaults (0, the dtype's largest, the dtype's lowest) */
ct_tensor *ct_nan_to_num(const ct_tensor *a, const double *nan, const double *posinf, const double *neginf);
ct_status ct_nan_to_num_(ct_tensor *a, const double *nan, const double *posinf, const double *neginf);
ct_status ct_nan_to_num_out(ct_tensor *out, const ct_tensor *a, const double *nan, const double *posinf,
                            const double *neginf);

#ifdef __cplusplus
}
#endif
#endif
