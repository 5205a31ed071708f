/* Ternary elementwise ops: where, lerp, addcmul, addcdiv, clamp with tensor bounds.
 * Inputs broadcast together; *_ forms work in place on the first tensor; *_out forms
 * write into out (resized like PyTorch's out= when its shape differs). */
#ifndef CTORCH_TERNARY_H
#define CTORCH_TERNARY_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

/* cond ? a : b. cond is bool (uint8 accepted, as PyTorch still does); a and b promote
 * together, the condition takes no part in promotion. */
ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_where_scalar_a(const ct_tensor *cond, ct_scalar a, const ct_tensor *b);
ct_tensor *ct_where_scalar_b(const ct_tensor *cond, const ct_tensor *a, ct_scalar b);
ct_tensor *ct_where_scalars(const ct_tensor *cond, ct_scalar a, ct_scalar b);
ct_status ct_where_out(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);

/* start + weight * (end - start); start, end (and a tensor weight) must share a floating dtype */
ct_tensor *ct_lerp(const ct_tensor *start, const ct_tensor *end, ct_scalar weight);
ct_tensor *ct_lerp_tensor(const ct_tensor *start, const ct_tensor *end, const ct_tensor *weight);
ct_status ct_lerp_(ct_tensor *start, const ct_tensor *end, ct_scalar weight);
ct_status ct_lerp_tensor_(ct_tensor *start, const ct_tensor *end, const ct_tensor *weight);
ct_status ct_lerp_out(ct_tensor *out, const ct_tensor *start, const ct_tensor *end, ct_scalar weight);
ct_status ct_lerp_tensor_out(ct_tensor *out, const ct_tensor *start, const ct_tensor *end, const ct_tensor *weight);

/* self + value * t1 * t2 */
ct_tensor *ct_addcmul(const ct_tensor *self, const ct_tensor *t1, const ct_tensor *t2, ct_scalar value);
ct_status ct_addcmul_(ct_tensor *self, const ct_tensor *t1, const ct_tensor *t2, ct_scalar value);
ct_status ct_addcmul_out(ct_tensor *out, const ct_tensor *self, const ct_tensor *t1, const ct_tensor *t2, ct_scalar value);
/* self + value * t1 / t2 (t1 and t2 both integral: refused like PyTorch) */
ct_tensor *ct_addcdiv(const ct_tensor *self, const ct_tensor *t1, const ct_tensor *t2, ct_scalar value);
ct_status ct_addcdiv_(ct_tensor *self, const ct_tensor *t1, const ct_tensor *t2, ct_scalar value);
ct_status ct_addcdiv_out(ct_tensor *out, const ct_tensor *self, const ct_tensor *t1, const ct_tensor *t2, ct_scalar value);

/* clamp with tensor bounds; min or max may be NULL (not both). NaN in x or a bound gives NaN. */
ct_tensor *ct_clamp_tensor(const ct_tensor *x, const ct_tensor *min, const ct_tensor *max);
ct_status ct_clamp_tensor_(ct_tensor *x, const ct_tensor *min, const ct_tensor *max);
ct_status ct_clamp_tensor_out(ct_tensor *out, const ct_tensor *x, const ct_tensor *min, const ct_tensor *max);

#ifdef __cplusplus
}
#endif
#endif
