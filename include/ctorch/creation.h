/* Creating tensors: factories, copies, conversions. */
#ifndef CTORCH_CREATION_H
#define CTORCH_CREATION_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

/* Tensor options for factories: dtype, device, requires_grad. */
typedef struct {
  ct_dtype dtype;
  ct_device device;
  bool requires_grad;
} ct_options;
/* Default options: default dtype, cpu, no grad. */
ct_options ct_opts(void);
ct_options ct_opts_dtype(ct_dtype dt);

ct_tensor *ct_empty(int ndim, const int64_t *shape, ct_options o);
ct_tensor *ct_zeros(int ndim, const int64_t *shape, ct_options o);
ct_tensor *ct_ones(int ndim, const int64_t *shape, ct_options o);
ct_tensor *ct_full(int ndim, const int64_t *shape, ct_scalar value, ct_options o);
/* 0-dim tensor holding a scalar. */
ct_tensor *ct_scalar_tensor(ct_scalar value, ct_options o);
/* Copies n = prod(shape) elements of dtype `src_dtype` from buf, converting to o.dtype. */
ct_tensor *ct_from_buffer(const void *buf, ct_dtype src_dtype, int ndim, const int64_t *shape, ct_options o);
/* Shorthand: float32 1-D/N-D tensor from floats. */
ct_tensor *ct_from_floats(const float *buf, int ndim, const int64_t *shape);
/* arange(start, end, step): dtype from the scalars' kinds unless has_dtype. */
ct_tensor *ct_arange(ct_scalar start, ct_scalar end, ct_scalar step, const ct_options *o /* NULL: infer */);
ct_tensor *ct_linspace(double start, double end, int64_t steps, ct_options o);
ct_tensor *ct_logspace(double start, double end, int64_t steps, double base, ct_options o);
ct_tensor *ct_eye(int64_t n, int64_t m /* -1: n */, ct_options o);
/* *_like: dtype/device from t unless o is given. */
ct_tensor *ct_empty_like(const ct_tensor *t, const ct_options *o);
ct_tensor *ct_zeros_like(const ct_tensor *t, const ct_options *o);
ct_tensor *ct_ones_like(const ct_tensor *t, const ct_options *o);
ct_tensor *ct_full_like(const ct_tensor *t, ct_scalar value, const ct_options *o);

/* Differentiable copies and conversions. */
ct_tensor *ct_clone(const ct_tensor *t);
ct_tensor *ct_contiguous(const ct_tensor *t); /* returns t itself (new ref) if already contiguous */
ct_tensor *ct_to_dtype(const ct_tensor *t, ct_dtype dt); /* returns t (new ref) if same dtype */
ct_tensor *ct_to_device(const ct_tensor *t, ct_device dev);
/* dst.copy_(src): broadcasts src to dst, converts dtype. */
ct_status ct_copy_(ct_tensor *dst, const ct_tensor *src);
ct_status ct_fill_(ct_tensor *t, ct_scalar value);
ct_status ct_zero_(ct_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
