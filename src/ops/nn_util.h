/* Helpers shared by the nn family's entry points (nn.c, conv.c, pool.c). */
#ifndef CT_NN_UTIL_H
#define CT_NN_UTIL_H
#include "pointwise.h"
#include <stdio.h>
#include <stdlib.h>

/* A new contiguous output on like's device. */
ct_tensor *nn_new_out(const ct_tensor *like, int nd, const int64_t *shape, ct_dtype dt);
/* ct_dispatch; on failure releases the call's outputs and sets them to NULL. */
ct_status nn_dispatch(ct_call *c);
bool nn_is_reduced_float(ct_dtype dt);
/* PyTorch's dispatch error: "\"kernel\" not implemented for 'Long'". */
ct_status nn_not_implemented(const char *kernel, ct_dtype dt);
void nn_release_n(int n, ...);
/* mean and biased variance over the dims of mask (keepdim), differentiable. */
ct_status nn_moments(const ct_tensor *x, uint32_t mask, ct_tensor **mean, ct_tensor **var);
/* 1/sqrt(v + eps), differentiable. */
ct_tensor *nn_rsqrt_eps(const ct_tensor *v, double eps);

#endif
