/* Views: share storage with their input exactly as PyTorch's do. */
#ifndef CTORCH_VIEW_H
#define CTORCH_VIEW_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

/* view/reshape accept one -1 entry. reshape copies only where view is impossible. */
ct_tensor *ct_view(const ct_tensor *t, int ndim, const int64_t *shape);
ct_tensor *ct_reshape(const ct_tensor *t, int ndim, const int64_t *shape);
ct_tensor *ct_view_as(const ct_tensor *t, const ct_tensor *other);
ct_tensor *ct_reshape_as(const ct_tensor *t, const ct_tensor *other);
ct_tensor *ct_permute(const ct_tensor *t, int ndim, const int64_t *dims);
ct_tensor *ct_transpose(const ct_tensor *t, int64_t dim0, int64_t dim1);
ct_tensor *ct_t(const ct_tensor *t);        /* <= 2-D only */
ct_tensor *ct_mT(const ct_tensor *t);       /* swap last two dims */
ct_tensor *ct_expand(const ct_tensor *t, int ndim, const int64_t *shape); /* -1 keeps a size */
ct_tensor *ct_expand_as(const ct_tensor *t, const ct_tensor *other);
ct_tensor *ct_broadcast_to(const ct_tensor *t, int ndim, const int64_t *shape);
ct_tensor *ct_squeeze(const ct_tensor *t);                 /* all size-1 dims */
ct_tensor *ct_squeeze_dim(const ct_tensor *t, int64_t dim);
ct_tensor *ct_unsqueeze(const ct_tensor *t, int64_t dim);
ct_tensor *ct_flatten(const ct_tensor *t, int64_t start_dim, int64_t end_dim);
ct_tensor *ct_unflatten(const ct_tensor *t, int64_t dim, int nsizes, const int64_t *sizes);
ct_tensor *ct_narrow(const ct_tensor *t, int64_t dim, int64_t start, int64_t length);
ct_tensor *ct_select(const ct_tensor *t, int64_t dim, int64_t index);
/* t[start:end:step] along dim; start/end clamp like Python; step > 0. */
ct_tensor *ct_slice(const ct_tensor *t, int64_t dim, int64_t start, int64_t end, int64_t step);
ct_tensor *ct_diagonal(const ct_tensor *t, int64_t offset, int64_t dim1, int64_t dim2);
ct_tensor *ct_as_strided(const ct_tensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                         int64_t storage_offset /* -1: keep t's */);
ct_tensor *ct_unfold(const ct_tensor *t, int64_t dim, int64_t size, int64_t step);
ct_tensor *ct_movedim(const ct_tensor *t, int n, const int64_t *src, const int64_t *dst);
/* An alias: same storage and geometry, its own handle (Tensor.view_as(self)). */
ct_tensor *ct_alias(const ct_tensor *t);
/* Tensor.view(dtype): the same bytes read as dt (no autograd, like PyTorch's). With a different
 * element size the last dim (stride 1) scales by the size ratio; PyTorch 1.13's checks and messages. */
ct_tensor *ct_view_dtype(const ct_tensor *t, ct_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
