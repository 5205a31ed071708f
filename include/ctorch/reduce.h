/* Reductions and sort-like ops. dims arrays may hold negative dims; n_dims == 0
 * (or dims == NULL) reduces over every dim. dtype arguments take a ct_dtype or -1
 * for PyTorch's default rule. Ops returning values + indices write two new
 * references (indices are int64) and return CT_OK, or an error with both NULL. */
#ifndef CTORCH_REDUCE_H
#define CTORCH_REDUCE_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

/* sum: integer and bool inputs sum to int64 unless dtype is given (the input is cast first) */
ct_tensor *ct_sum(const ct_tensor *t);
ct_tensor *ct_sum_dims(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim);
ct_tensor *ct_sum_dtype(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim, int dtype);
/* mean: floating inputs (or a floating dtype) only */
ct_tensor *ct_mean(const ct_tensor *t);
ct_tensor *ct_mean_dims(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim);
ct_tensor *ct_mean_dtype(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim, int dtype);
/* Sum a broadcast gradient back to shape (Tensor.sum_to_size). */
ct_tensor *ct_sum_to_size(const ct_tensor *t, int ndim, const int64_t *shape);

/* prod of all elements, or along one dim (dim == NULL: all); ints -> int64 */
ct_tensor *ct_prod(const ct_tensor *t);
ct_tensor *ct_prod_dim(const ct_tensor *t, int64_t dim, bool keepdim);
ct_tensor *ct_prod_dtype(const ct_tensor *t, const int64_t *dim, bool keepdim, int dtype);

/* max()/min() of all elements as a 0-dim tensor (NaN propagates) */
ct_tensor *ct_max(const ct_tensor *t);
ct_tensor *ct_min(const ct_tensor *t);
/* max/min along dim: values and the index of the first maximum (first NaN) */
ct_status ct_max_dim(const ct_tensor *t, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices);
ct_status ct_min_dim(const ct_tensor *t, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices);
/* amax/amin over dims (gradient split evenly among ties) */
ct_tensor *ct_amax(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim);
ct_tensor *ct_amin(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim);
/* argmax/argmin along *dim, or of the flattened tensor when dim == NULL; int64 */
ct_tensor *ct_argmax(const ct_tensor *t, const int64_t *dim, bool keepdim);
ct_tensor *ct_argmin(const ct_tensor *t, const int64_t *dim, bool keepdim);

/* var/std with a correction (1 = unbiased, 0 = population); floating only */
ct_tensor *ct_var(const ct_tensor *t, int n_dims, const int64_t *dims, double correction, bool keepdim);
ct_tensor *ct_std(const ct_tensor *t, int n_dims, const int64_t *dims, double correction, bool keepdim);
ct_tensor *ct_var_unbiased(const ct_tensor *t, int n_dims, const int64_t *dims, bool unbiased, bool keepdim);
ct_tensor *ct_std_unbiased(const ct_tensor *t, int n_dims, const int64_t *dims, bool unbiased, bool keepdim);
/* torch.var_mean / torch.std_mean: two new references */
ct_status ct_var_mean(const ct_tensor *t, int n_dims, const int64_t *dims, double correction, bool keepdim,
                      ct_tensor **var, ct_tensor **mean);
ct_status ct_std_mean(const ct_tensor *t, int n_dims, const int64_t *dims, double correction, bool keepdim,
                      ct_tensor **std, ct_tensor **mean);

/* torch.norm with a number p (2, 1, INFINITY, -INFINITY, 0, any p) over dims */
ct_tensor *ct_norm(const ct_tensor *t, double p, int n_dims, const int64_t *dims, bool keepdim);
/* torch.norm with p = "fro" (NULL means "fro"); "nuc" is not implemented here */
ct_tensor *ct_norm_str(const ct_tensor *t, const char *p, int n_dims, const int64_t *dims, bool keepdim);
/* torch.linalg.vector_norm(t, ord, dims, keepdim, dtype) */
ct_tensor *ct_vector_norm(const ct_tensor *t, double ord, int n_dims, const int64_t *dims, bool keepdim, int dtype);

/* logsumexp over dims (max-shifted); integer inputs give the default float dtype */
ct_tensor *ct_logsumexp(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim);

/* all/any: bool results (uint8 inputs give uint8, as PyTorch 1.13) */
ct_tensor *ct_all(const ct_tensor *t);
ct_tensor *ct_any(const ct_tensor *t);
ct_tensor *ct_all_dim(const ct_tensor *t, int64_t dim, bool keepdim);
ct_tensor *ct_any_dim(const ct_tensor *t, int64_t dim, bool keepdim);
ct_tensor *ct_all_dims(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim);
ct_tensor *ct_any_dims(const ct_tensor *t, int n_dims, const int64_t *dims, bool keepdim);
/* count_nonzero over dims -> int64 */
ct_tensor *ct_count_nonzero(const ct_tensor *t, int n_dims, const int64_t *dims);

/* cumsum/cumprod along dim (ints -> int64 unless dtype); *_ forms in place */
ct_tensor *ct_cumsum(const ct_tensor *t, int64_t dim, int dtype);
ct_tensor *ct_cumprod(const ct_tensor *t, int64_t dim, int dtype);
ct_status ct_cumsum_(ct_tensor *t, int64_t dim);
ct_status ct_cumprod_(ct_tensor *t, int64_t dim);
/* cummax/cummin along dim: running values and the index where each was taken */
ct_status ct_cummax(const ct_tensor *t, int64_t dim, ct_tensor **values, ct_tensor **indices);
ct_status ct_cummin(const ct_tensor *t, int64_t dim, ct_tensor **values, ct_tensor **indices);

/* sort along dim; NaN sorts as the largest value. Always stable (so stable=false gives
 * one of the orders PyTorch may give). */
ct_status ct_sort(const ct_tensor *t, int64_t dim, bool descending, bool stable, ct_tensor **values, ct_tensor **indices);
ct_tensor *ct_argsort(const ct_tensor *t, int64_t dim, bool descending, bool stable);
ct_tensor *ct_msort(const ct_tensor *t); /* sort along dim 0, values only */
/* topk along dim (largest or smallest k); results are always sorted */
ct_status ct_topk(const ct_tensor *t, int64_t k, int64_t dim, bool largest, bool sorted, ct_tensor **values,
                  ct_tensor **indices);
/* k-th smallest (1-based) along dim */
ct_status ct_kthvalue(const ct_tensor *t, int64_t k, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices);
/* lower median of all elements (NaN if any NaN / ignoring NaN) */
ct_tensor *ct_median(const ct_tensor *t);
ct_tensor *ct_nanmedian(const ct_tensor *t);
ct_status ct_median_dim(const ct_tensor *t, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices);
ct_status ct_nanmedian_dim(const ct_tensor *t, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices);
/* most frequent value along dim (the smallest among equally frequent) and its last index */
ct_status ct_mode(const ct_tensor *t, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices);
/* torch.unique(t) over the flattened tensor (dim=None): sorted values; inverse (t's shape)
 * and counts when asked (pass NULL pointers for the ones not asked) */
ct_status ct_unique(const ct_tensor *t, bool sorted, bool return_inverse, bool return_counts, ct_tensor **out,
                    ct_tensor **inverse, ct_tensor **counts);

#ifdef __cplusplus
}
#endif
#endif
