/* Reductions. dims arrays may hold negative dims; n_dims == 0 with dims == NULL
 * reduces over every dim. */
#ifndef CTORCH_REDUCE_H
#define CTORCH_REDUCE_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

ct_tensor *ct_sum(const ct_tensor *t);
ct_tensor *ct_sum_dims(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim);
/* dtype: accumulate and return in this dtype (like sum(dtype=)); pass -1 for the default rule */
ct_tensor *ct_sum_dtype(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim, int dtype);
ct_tensor *ct_mean(const ct_tensor *t);
ct_tensor *ct_mean_dims(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim);
/* Sum a broadcast gradient back to shape (Tensor.sum_to_size). */
ct_tensor *ct_sum_to_size(const ct_tensor *t, int ndim, const int64_t *shape);

#ifdef __cplusplus
}
#endif
#endif
