/* Shared context of the CPU elementwise kernels (unary, binary, ternary). */
#ifndef CT_KERNELS_POINTWISE_H
#define CT_KERNELS_POINTWISE_H
#include "cpu_iter.h"

typedef struct {
  const ct_call *c;
  ct_dtype in_dt, out_dt; /* compute dtype of the inputs, dtype of the output */
  bool float_domain;      /* compute in double (else int64) */
} pw_ctx;

#endif
