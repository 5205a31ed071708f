/* ctorch index ops: gather/scatter, index_*, masked_*, take/put, nonzero and
 * advanced indexing (Python's x[...] and x[...] = v). Index tensors are int64
 * unless a function says int32 is accepted too (as PyTorch does). Negative
 * indices wrap where PyTorch wraps them. In-place forms (trailing _) follow
 * PyTorch's autograd rules (a leaf requiring grad refuses them). */
#ifndef CTORCH_INDEX_H
#define CTORCH_INDEX_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ---- along one dim ------------------------------------------------------- */
/* torch.index_select: index is 1-D (or 0-dim), int64 or int32. */
ct_tensor *ct_index_select(const ct_tensor *self, int64_t dim, const ct_tensor *index);
/* torch.gather: index int64 with self's ndim; out has index's shape. */
ct_tensor *ct_gather(const ct_tensor *self, int64_t dim, const ct_tensor *index);
/* torch.scatter(self, dim, index, src): src has self's dtype. */
ct_tensor *ct_scatter(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src);
ct_status ct_scatter_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src);
/* torch.scatter(self, dim, index, value) with a scalar value. */
ct_tensor *ct_scatter_value(const ct_tensor *self, int64_t dim, const ct_tensor *index, ct_scalar value);
ct_status ct_scatter_value_(ct_tensor *self, int64_t dim, const ct_tensor *index, ct_scalar value);
/* torch.scatter_add. */
ct_tensor *ct_scatter_add(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src);
ct_status ct_scatter_add_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src);
/* torch.scatter_reduce: reduce is "sum", "prod", "mean", "amax" or "amin". */
ct_tensor *ct_scatter_reduce(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src,
                             const char *reduce, bool include_self);
ct_status ct_scatter_reduce_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src,
                             const char *reduce, bool include_self);
/* torch.index_add(self, dim, index, source, alpha=): index int64 or int32. */
ct_tensor *ct_index_add(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *source,
                        ct_scalar alpha);
ct_status ct_index_add_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *source, ct_scalar alpha);
/* torch.index_copy. */
ct_tensor *ct_index_copy(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *source);
ct_status ct_index_copy_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *source);
/* torch.index_fill with a scalar, or with a 0-dim tensor value (differentiable in value). */
ct_tensor *ct_index_fill(const ct_tensor *self, int64_t dim, const ct_tensor *index, ct_scalar value);
ct_status ct_index_fill_(ct_tensor *self, int64_t dim, const ct_tensor *index, ct_scalar value);
ct_tensor *ct_index_fill_tensor(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *value);
ct_status ct_index_fill_tensor_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *value);

/* ---- masks --------------------------------------------------------------- */
/* masked_fill: mask is bool (uint8 accepted with PyTorch's rules), broadcast to self. */
ct_tensor *ct_masked_fill(const ct_tensor *self, const ct_tensor *mask, ct_scalar value);
ct_status ct_masked_fill_(ct_tensor *self, const ct_tensor *mask, ct_scalar value);
/* value is a 0-dim tensor (differentiable in value). */
ct_tensor *ct_masked_fill_tensor(const ct_tensor *self, const ct_tensor *mask, const ct_tensor *value);
ct_status ct_masked_fill_tensor_(ct_tensor *self, const ct_tensor *mask, const ct_tensor *value);
/* masked_scatter: copies source's first elements into the positions where mask is true. */
ct_tensor *ct_masked_scatter(const ct_tensor *self, const ct_tensor *mask, const ct_tensor *source);
ct_status ct_masked_scatter_(ct_tensor *self, const ct_tensor *mask, const ct_tensor *source);
/* masked_select: 1-D result of self's elements where mask (broadcast together) is true. */
ct_tensor *ct_masked_select(const ct_tensor *self, const ct_tensor *mask);

/* ---- flat ---------------------------------------------------------------- */
/* torch.take: self as 1-D; out has index's shape. */
ct_tensor *ct_take(const ct_tensor *self, const ct_tensor *index);
/* Tensor.put / put_: writes source (same numel as index) at flat positions. */
ct_tensor *ct_put(const ct_tensor *self, const ct_tensor *index, const ct_tensor *source, bool accumulate);
ct_status ct_put_(ct_tensor *self, const ct_tensor *index, const ct_tensor *source, bool accumulate);
/* torch.take_along_dim(self, indices, dim); has_dim=false flattens both. */
ct_tensor *ct_take_along_dim(const ct_tensor *self, const ct_tensor *indices, bool has_dim, int64_t dim);
/* torch.nonzero: [n, ndim] int64. */
ct_tensor *ct_nonzero(const ct_tensor *self);
/* torch.nonzero(as_tuple=True): writes max(ndim,1) new 1-D int64 tensors into out
 * (which has room for CT_MAX_DIMS) and returns their count, -1 on error. */
int ct_nonzero_tuple(const ct_tensor *self, ct_tensor **out);

/* ---- aten::index / index_put (a list of optional index tensors) ---------- */
/* self[indices] with indices[k] NULL meaning ":" for dim k; bool/uint8 tensors are masks.
 * Index tensors are int64 (or bool/uint8 masks). */
ct_tensor *ct_index_tensors(const ct_tensor *self, int n, const ct_tensor *const *indices);
/* torch.index_put(self, indices, values, accumulate); values broadcast to the indexing result. */
ct_tensor *ct_index_put_tensors(const ct_tensor *self, int n, const ct_tensor *const *indices, const ct_tensor *values,
                                bool accumulate);
ct_status ct_index_put_tensors_(ct_tensor *self, int n, const ct_tensor *const *indices, const ct_tensor *values,
                                bool accumulate);

/* ---- Python-style indexing: x[items] ---------------------------------------- */
typedef enum {
  CT_IDX_INT = 0,   /* an integer: selects (removes the dim) */
  CT_IDX_SLICE,     /* start:stop:step with Python's None semantics */
  CT_IDX_NONE,      /* None: a new axis of size 1 */
  CT_IDX_ELLIPSIS,  /* ...: as many ":" as needed */
  CT_IDX_TENSOR,    /* an integer (int64) or boolean/uint8 tensor: advanced indexing */
  CT_IDX_BOOL       /* a Python bool: True adds an axis of 1, False an axis of 0 */
} ct_index_kind;

typedef struct {
  ct_index_kind kind;
  int64_t i;                      /* CT_IDX_INT: the integer; CT_IDX_BOOL: 0/1 */
  bool has_start, has_stop, has_step; /* CT_IDX_SLICE: false = None */
  int64_t start, stop, step;
  const ct_tensor *tensor;        /* CT_IDX_TENSOR (borrowed) */
} ct_index_item;

/* Item constructors. */
static inline ct_index_item ct_ii(int64_t i) {
  ct_index_item it = {CT_IDX_INT, i, false, false, false, 0, 0, 1, NULL};
  return it;
}
/* Full slice ":" ; set has_* fields to give bounds. */
static inline ct_index_item ct_is_all(void) {
  ct_index_item it = {CT_IDX_SLICE, 0, false, false, false, 0, 0, 1, NULL};
  return it;
}
static inline ct_index_item ct_is(bool has_start, int64_t start, bool has_stop, int64_t stop, bool has_step,
                                  int64_t step) {
  ct_index_item it = {CT_IDX_SLICE, 0, has_start, has_stop, has_step, start, stop, step, NULL};
  return it;
}
static inline ct_index_item ct_inone(void) {
  ct_index_item it = {CT_IDX_NONE, 0, false, false, false, 0, 0, 1, NULL};
  return it;
}
static inline ct_index_item ct_iellipsis(void) {
  ct_index_item it = {CT_IDX_ELLIPSIS, 0, false, false, false, 0, 0, 1, NULL};
  return it;
}
static inline ct_index_item ct_itensor(const ct_tensor *t) {
  ct_index_item it = {CT_IDX_TENSOR, 0, false, false, false, 0, 0, 1, t};
  return it;
}
static inline ct_index_item ct_ibool(bool b) {
  ct_index_item it = {CT_IDX_BOOL, b ? 1 : 0, false, false, false, 0, 0, 1, NULL};
  return it;
}

/* Tensor.__getitem__: a view when only ints/slices/None/Ellipsis are used, a copy otherwise. */
ct_tensor *ct_index(const ct_tensor *t, int n, const ct_index_item *items);
/* Tensor.__setitem__ with a tensor value (broadcast to the indexed shape, converted to t's
 * dtype); accumulate=true adds instead (index_put_(accumulate=True)). */
ct_status ct_index_put_(ct_tensor *t, int n, const ct_index_item *items, const ct_tensor *value, bool accumulate);
/* Tensor.__setitem__ with a Python number. */
ct_status ct_index_put_scalar_(ct_tensor *t, int n, const ct_index_item *items, ct_scalar value);

#ifdef __cplusplus
}
#endif
#endif
