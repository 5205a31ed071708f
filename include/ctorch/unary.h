/* Unary elementwise ops; *_ forms work in place. Integer inputs of
 * floating functions (exp, sin, ...) promote to the default dtype. */
#ifndef CTORCH_UNARY_H
#define CTORCH_UNARY_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

ct_tensor *ct_neg(const ct_tensor *a);
ct_status ct_neg_(ct_tensor *a);
ct_tensor *ct_exp(const ct_tensor *a);
ct_status ct_exp_(ct_tensor *a);
ct_tensor *ct_log(const ct_tensor *a);
ct_status ct_log_(ct_tensor *a);


#ifdef __cplusplus
}
#endif
#endif
