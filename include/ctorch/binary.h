/* Binary elementwise ops. They broadcast and promote like PyTorch; *_scalar forms take a Python-like number; *_ forms work in place;
 * *_out forms write into an existing tensor. */
#ifndef CTORCH_BINARY_H
#define CTORCH_BINARY_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

/* a + alpha * b */
ct_tensor *ct_add(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_add_alpha(const ct_tensor *a, const ct_tensor *b, ct_scalar alpha);
ct_tensor *ct_add_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_add_(ct_tensor *a, const ct_tensor *b);
ct_status ct_add_alpha_(ct_tensor *a, const ct_tensor *b, ct_scalar alpha);
ct_status ct_add_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_add_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_sub(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_sub_alpha(const ct_tensor *a, const ct_tensor *b, ct_scalar alpha);
ct_tensor *ct_sub_scalar(const ct_tensor *a, ct_scalar b);
ct_tensor *ct_rsub_scalar(const ct_tensor *a, ct_scalar b); /* b - a */
ct_status ct_sub_(ct_tensor *a, const ct_tensor *b);
ct_status ct_sub_scalar_(ct_tensor *a, ct_scalar b);
ct_tensor *ct_mul(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_mul_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_mul_(ct_tensor *a, const ct_tensor *b);
ct_status ct_mul_scalar_(ct_tensor *a, ct_scalar b);
ct_status ct_mul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
/* true division; rounding_mode: NULL, "trunc" or "floor" */
ct_tensor *ct_div(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_div_mode(const ct_tensor *a, const ct_tensor *b, const char *rounding_mode);
ct_tensor *ct_div_scalar(const ct_tensor *a, ct_scalar b);
ct_status ct_div_(ct_tensor *a, const ct_tensor *b);
ct_status ct_div_scalar_(ct_tensor *a, ct_scalar b);

#ifdef __cplusplus
}
#endif
#endif
