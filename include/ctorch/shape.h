/* ctorch shape ops: joining, splitting, flipping, rolling, repeating, padding.
 *
 * Lists of tensors in: (int n, const ct_tensor *const *ts).
 *
 * Lists of tensors out (split, chunk, tensor_split, unbind, meshgrid,
 * broadcast_tensors) share one convention:
 *   ct_status ct_op(..., int *n_out, ct_tensor **out, int max_out)
 * - On success *n_out is the number of results and out[0 .. *n_out) hold new
 *   references (release each).
 * - out == NULL only counts: *n_out is set, nothing is created, CT_OK.
 * - If max_out is smaller than the count, nothing is created, *n_out holds the
 *   count and the call fails with CT_ERR_VALUE.
 * - On any failure nothing is created and out[] is left untouched.
 * Results that PyTorch returns as views (split, chunk, tensor_split, unbind,
 * meshgrid, broadcast_tensors) are views here too: they share storage with the
 * input and each carries its own backward. */
#ifndef CTORCH_SHAPE_H
#define CTORCH_SHAPE_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

/* "No dim given" for ops whose dim is optional (repeat_interleave flattens). */
#define CT_NO_DIM INT64_MIN

/* torch.cat: PyTorch 1.13 rules (1-D empty [0] inputs are skipped), dtypes promote. */
ct_tensor *ct_cat(int n, const ct_tensor *const *ts, int64_t dim);
/* cat into an existing tensor (resized like PyTorch's out= when its shape differs; no autograd). */
ct_status ct_cat_out(ct_tensor *out, int n, const ct_tensor *const *ts, int64_t dim);
/* torch.stack: equal shapes joined along a new dim. */
ct_tensor *ct_stack(int n, const ct_tensor *const *ts, int64_t dim);
ct_tensor *ct_hstack(int n, const ct_tensor *const *ts); /* cat along dim 1 (dim 0 for 1-D) */
ct_tensor *ct_vstack(int n, const ct_tensor *const *ts); /* atleast_2d, cat along dim 0 */
ct_tensor *ct_dstack(int n, const ct_tensor *const *ts); /* atleast_3d, cat along dim 2 */

/* split into pieces of split_size (the last may be smaller); views. */
ct_status ct_split(const ct_tensor *t, int64_t split_size, int64_t dim, int *n_out, ct_tensor **out, int max_out);
/* split_with_sizes: sizes must sum to the dim's size. */
ct_status ct_split_sizes(const ct_tensor *t, int n_sizes, const int64_t *sizes, int64_t dim, int *n_out,
                         ct_tensor **out, int max_out);
/* chunk into at most `chunks` pieces of ceil(size/chunks). */
ct_status ct_chunk(const ct_tensor *t, int64_t chunks, int64_t dim, int *n_out, ct_tensor **out, int max_out);
/* tensor_split into `sections` nearly equal pieces (the first size % sections are one longer). */
ct_status ct_tensor_split(const ct_tensor *t, int64_t sections, int64_t dim, int *n_out, ct_tensor **out,
                          int max_out);
/* tensor_split at indices (Python slicing between consecutive indices). */
ct_status ct_tensor_split_indices(const ct_tensor *t, int n_idx, const int64_t *indices, int64_t dim, int *n_out,
                                  ct_tensor **out, int max_out);
/* unbind: the slices t.select(dim, i). */
ct_status ct_unbind(const ct_tensor *t, int64_t dim, int *n_out, ct_tensor **out, int max_out);

/* Reverse the order along dims (a copy). */
ct_tensor *ct_flip(const ct_tensor *t, int n_dims, const int64_t *dims);
/* Roll by shifts along dims; n_dims == 0 rolls the flattened tensor (one shift). */
ct_tensor *ct_roll(const ct_tensor *t, int n_shifts, const int64_t *shifts, int n_dims, const int64_t *dims);
/* Rotate by 90 degrees k times in the plane of dims[0], dims[1] (n_dims must be 2). */
ct_tensor *ct_rot90(const ct_tensor *t, int64_t k, int n_dims, const int64_t *dims);
/* Tensor.repeat: tile the tensor repeats[d] times along each dim (n >= ndim). */
ct_tensor *ct_repeat(const ct_tensor *t, int n, const int64_t *repeats);
/* torch.tile: like repeat, reps padded with leading 1s when shorter than ndim. */
ct_tensor *ct_tile(const ct_tensor *t, int n, const int64_t *reps);
/* repeat_interleave with one repeat count; dim CT_NO_DIM flattens first. */
ct_tensor *ct_repeat_interleave(const ct_tensor *t, int64_t repeats, int64_t dim);
/* repeat_interleave with per-element counts (integer 0-D/1-D tensor); dim CT_NO_DIM flattens. */
ct_tensor *ct_repeat_interleave_tensor(const ct_tensor *t, const ct_tensor *repeats, int64_t dim);
/* torch.repeat_interleave(repeats): indices 0..n-1 repeated (int64). */
ct_tensor *ct_repeat_interleave_index(const ct_tensor *repeats);

/* Lower / upper triangle of the last two dims (elements above/below `diagonal` zeroed). */
ct_tensor *ct_tril(const ct_tensor *t, int64_t diagonal);
ct_tensor *ct_triu(const ct_tensor *t, int64_t diagonal);
ct_status ct_tril_(ct_tensor *t, int64_t diagonal);
ct_status ct_triu_(ct_tensor *t, int64_t diagonal);

/* F.pad: pad holds (left, right) pairs starting from the LAST dim. mode: NULL or
 * "constant" (value fills; negative pads crop), "reflect", "replicate", "circular".
 * value must be 0 for the non-constant modes. */
ct_tensor *ct_pad(const ct_tensor *t, int n_pad, const int64_t *pad, const char *mode, double value);

/* torch.meshgrid(*ts, indexing): 0-D/1-D inputs of one dtype; indexing "ij" or "xy". Views. */
ct_status ct_meshgrid(int n, const ct_tensor *const *ts, const char *indexing, int *n_out, ct_tensor **out,
                      int max_out);
/* torch.broadcast_tensors: every input expanded to the common shape (views). */
ct_status ct_broadcast_tensors(int n, const ct_tensor *const *ts, int *n_out, ct_tensor **out, int max_out);

#ifdef __cplusplus
}
#endif
#endif
