/* Binary elementwise ops. They broadcast and promote like PyTorch (0-dim tensors and
 * Python numbers take part by category only); *_scalar forms take a Python-like number
 * as the second operand; *_ forms work in place on the first operand (the result
 * dtype must be castable to it); *_out forms write into an existing tensor (resized
 * like PyTorch's out= when its shape differs, warning if it had elements). Integer
 * arithmetic wraps like C++. */
#ifndef CTORCH_BINARY_H
#define CTORCH_BINARY_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

/* a + alpha * b (bool + bool is logical or) */
ct_tensor *ct_add(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_add_alpha(const ct_tensor *a, const ct_tensor *b, ct_scalar alpha);
ct_tensor *ct_add_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_add_(ct_tensor *a, const ct_tensor *b);
ct_status ct_add_alpha_(ct_tensor *a, const ct_tensor *b, ct_scalar alpha);
ct_status ct_add_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_add_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_status ct_add_alpha_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, ct_scalar alpha);
/* a - alpha * b (bool operands are refused, as PyTorch) */
ct_tensor *ct_sub(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_sub_alpha(const ct_tensor *a, const ct_tensor *b, ct_scalar alpha);
ct_tensor *ct_sub_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_sub_(ct_tensor *a, const ct_tensor *b);
ct_status ct_sub_alpha_(ct_tensor *a, const ct_tensor *b, ct_scalar alpha);
ct_status ct_sub_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_sub_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_status ct_sub_alpha_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, ct_scalar alpha);
/* torch.rsub: b - alpha * a */
ct_tensor *ct_rsub(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_rsub_alpha(const ct_tensor *a, const ct_tensor *b, ct_scalar alpha);
ct_tensor *ct_rsub_scalar(const ct_tensor *a, ct_scalar b); /* b - a */
ct_tensor *ct_mul(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_mul_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_mul_(ct_tensor *a, const ct_tensor *b);
ct_status ct_mul_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_mul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
/* true division (integers promote to the default float); rounding_mode: NULL, "trunc" or "floor"
 * (integer division by zero with a rounding mode fails with "ZeroDivisionError") */
ct_tensor *ct_div(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_div_mode(const ct_tensor *a, const ct_tensor *b, const char *rounding_mode);
ct_tensor *ct_div_scalar(const ct_tensor *a, ct_scalar b);
ct_tensor *ct_div_scalar_mode(const ct_tensor *a, ct_scalar b, const char *rounding_mode);
ct_status ct_div_(ct_tensor *a, const ct_tensor *b);
ct_status ct_div_mode_(ct_tensor *a, const ct_tensor *b, const char *rounding_mode);
ct_status ct_div_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_div_scalar_mode_(ct_tensor *a, ct_scalar b, const char *rounding_mode);
ct_status ct_div_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_status ct_div_mode_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, const char *rounding_mode);
/* floor(a / b) as Python's //; not differentiable (PyTorch raises in backward) */
ct_tensor *ct_floor_divide(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_floor_divide_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_floor_divide_(ct_tensor *a, const ct_tensor *b);
ct_status ct_floor_divide_scalar_(ct_tensor *a, ct_scalar b);
/* remainder with the divisor's sign (Python's %) */
ct_tensor *ct_remainder(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_remainder_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_remainder_(ct_tensor *a, const ct_tensor *b);
ct_status ct_remainder_scalar_(ct_tensor *a, ct_scalar b);
/* remainder with the dividend's sign (C's fmod) */
ct_tensor *ct_fmod(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_fmod_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_fmod_(ct_tensor *a, const ct_tensor *b);
ct_status ct_fmod_scalar_(ct_tensor *a, ct_scalar b);
/* a ** b; integer tensors refuse negative integer Python-number exponents; 0^0 = 1 */
ct_tensor *ct_pow(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_pow_scalar(const ct_tensor *a, ct_scalar exponent);
ct_tensor *ct_pow_scalar_tensor(ct_scalar base, const ct_tensor *exponent); /* torch.pow(number, tensor) */
ct_status ct_pow_(ct_tensor *a, const ct_tensor *b);
ct_status ct_pow_scalar_(ct_tensor *a, ct_scalar exponent);
ct_status ct_pow_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
/* atan2(a, b): angle of (b, a); integers promote to the default float */
ct_tensor *ct_atan2(const ct_tensor *a, const ct_tensor *b);
ct_status ct_atan2_(ct_tensor *a, const ct_tensor *b);
/* elementwise max/min propagating NaN; the gradient splits half-half on ties */
ct_tensor *ct_maximum(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_minimum(const ct_tensor *a, const ct_tensor *b);
ct_status ct_maximum_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_status ct_minimum_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
/* elementwise max/min ignoring NaN (NaN only when both are NaN) */
ct_tensor *ct_fmax(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_fmin(const ct_tensor *a, const ct_tensor *b);
/* sqrt(a^2 + b^2) without overflow; float32/float64/bfloat16 only, as PyTorch's CPU */
ct_tensor *ct_hypot(const ct_tensor *a, const ct_tensor *b);
ct_status ct_hypot_(ct_tensor *a, const ct_tensor *b);
/* log(exp(a) + exp(b)) and log2(2^a + 2^b); float32/float64/bfloat16 only */
ct_tensor *ct_logaddexp(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_logaddexp2(const ct_tensor *a, const ct_tensor *b);
/* |a| with the sign of b; integers promote to the default float */
ct_tensor *ct_copysign(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_copysign_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_copysign_(ct_tensor *a, const ct_tensor *b);
ct_status ct_copysign_scalar_(ct_tensor *a, ct_scalar b);
/* a * log(b), 0 where a == 0 (unless b is NaN); integers promote to the default float */
ct_tensor *ct_xlogy(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_xlogy_scalar(const ct_tensor *a, ct_scalar b);
ct_tensor *ct_xlogy_scalar_self(ct_scalar a, const ct_tensor *b);
ct_status ct_xlogy_(ct_tensor *a, const ct_tensor *b);
/* bitwise ops on integer and bool tensors */
ct_tensor *ct_bitwise_and(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_bitwise_and_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_bitwise_and_(ct_tensor *a, const ct_tensor *b);
ct_status ct_bitwise_and_scalar_(ct_tensor *a, ct_scalar b);
ct_tensor *ct_bitwise_or(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_bitwise_or_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_bitwise_or_(ct_tensor *a, const ct_tensor *b);
ct_status ct_bitwise_or_scalar_(ct_tensor *a, ct_scalar b);
ct_tensor *ct_bitwise_xor(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_bitwise_xor_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_bitwise_xor_(ct_tensor *a, const ct_tensor *b);
ct_status ct_bitwise_xor_scalar_(ct_tensor *a, ct_scalar b);
/* shifts on integer tensors (out-of-range counts behave as PyTorch 1.13 on x86) */
ct_tensor *ct_bitwise_left_shift(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_bitwise_left_shift_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_bitwise_left_shift_(ct_tensor *a, const ct_tensor *b);
ct_status ct_bitwise_left_shift_scalar_(ct_tensor *a, ct_scalar b);
ct_tensor *ct_bitwise_right_shift(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_bitwise_right_shift_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_bitwise_right_shift_(ct_tensor *a, const ct_tensor *b);
ct_status ct_bitwise_right_shift_scalar_(ct_tensor *a, ct_scalar b);
/* logical ops: any dtypes, bool result (in place: 0/1 in a's dtype) */
ct_tensor *ct_logical_and(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_logical_or(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_logical_xor(const ct_tensor *a, const ct_tensor *b);
ct_status ct_logical_and_(ct_tensor *a, const ct_tensor *b);
ct_status ct_logical_or_(ct_tensor *a, const ct_tensor *b);
ct_status ct_logical_xor_(ct_tensor *a, const ct_tensor *b);
/* comparisons: computed in the promoted dtype, bool result (in place: 0/1 in a's dtype) */
ct_tensor *ct_eq(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_ne(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_lt(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_le(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_gt(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_ge(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_eq_scalar(const ct_tensor *a, ct_scalar b);
ct_tensor *ct_ne_scalar(const ct_tensor *a, ct_scalar b);
ct_tensor *ct_lt_scalar(const ct_tensor *a, ct_scalar b);
ct_tensor *ct_le_scalar(const ct_tensor *a, ct_scalar b);
ct_tensor *ct_gt_scalar(const ct_tensor *a, ct_scalar b);
ct_tensor *ct_ge_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_eq_(ct_tensor *a, const ct_tensor *b);
ct_status ct_ne_(ct_tensor *a, const ct_tensor *b);
ct_status ct_lt_(ct_tensor *a, const ct_tensor *b);
ct_status ct_le_(ct_tensor *a, const ct_tensor *b);
ct_status ct_gt_(ct_tensor *a, const ct_tensor *b);
ct_status ct_ge_(ct_tensor *a, const ct_tensor *b);
ct_status ct_eq_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_ne_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_lt_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_le_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_gt_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_ge_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_eq_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_status ct_ne_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_status ct_lt_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_status ct_le_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_status ct_gt_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_status ct_ge_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
/* |a - b| <= atol + rtol * |b| (or equal; NaNs equal when equal_nan); a and b must share a dtype */
ct_tensor *ct_isclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol, bool equal_nan);
/* torch.allclose: every element isclose; the answer in *out */
ct_status ct_allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol, bool equal_nan, bool *out);
/* torch.equal: same shape and equal values (compared in the promoted dtype) */
ct_status ct_equal(const ct_tensor *a, const ct_tensor *b, bool *out);

#ifdef __cplusplus
}
#endif
#endif
