/* Shared helpers of the reduction ops. */
#ifndef CT_REDUCE_UTIL_H
#define CT_REDUCE_UTIL_H
#include "pointwise.h"

/* dims -> bit mask (all dims when n == 0); PyTorch's errors for repeats and range. */
ct_status ct_dims_to_mask(const ct_tensor *t, int n, const int64_t *dims, uint32_t *mask);
/* Output shape of a reduction. */
void ct_reduced_shape(const ct_tensor *t, uint32_t mask, bool keepdim, int *nd, int64_t *shape);
/* Reinsert reduced dims as size 1 (gradient of a keepdim=False reduction), a view. */
ct_tensor *ct_unsqueeze_mask(const ct_tensor *g, uint32_t mask, int in_ndim);
/* Expand a reduced gradient back to the input's meta. */
ct_tensor *ct_expand_reduced_grad(const ct_tensor *g, uint32_t mask, bool keepdim, const ct_meta *m);

#endif
