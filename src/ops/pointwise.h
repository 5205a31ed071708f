/* Shared machinery of the elementwise ops (unary, binary, ternary): type
 * promotion, broadcasting, in-place and out= forms. */
#ifndef CT_POINTWISE_H
#define CT_POINTWISE_H
#include "../autograd/autograd.h"

/* How the result dtype follows the promoted input dtype. */
typedef enum {
  CT_OUT_SAME = 0,   /* result = promoted dtype (add, mul, ...) */
  CT_OUT_BOOL,       /* comparisons and logical ops: computed in the promoted dtype, bool result */
  CT_OUT_FLOAT,      /* integer inputs promote to the default float (true division, exp, sin, ...) */
  CT_OUT_SAME_NOBOOL /* like SAME, but bool inputs are refused by the op itself */
} ct_out_kind;

/* Out-of-place elementwise op over n inputs (broadcast, promoted); attrs copied into the call. */
ct_tensor *ct_pointwise(int op, int n, const ct_tensor *const *in, const ct_attrs *a, ct_out_kind kind);
/* In place: self = op(self, others...), with PyTorch's casting and shape checks. */
ct_status ct_pointwise_(int op, int n, ct_tensor *const *in, const ct_attrs *a, ct_out_kind kind);
/* out= form: writes into out (resized by ct_resize_out when its shape differs). */
ct_status ct_pointwise_out(int op, ct_tensor *out, int n, const ct_tensor *const *in, const ct_attrs *a, ct_out_kind kind);
/* PyTorch's resize_output for out= tensors: a different shape resizes out in place (contiguous
 * strides from its storage offset; the storage grows if too small, shared with out's base and
 * other views), warning as PyTorch does when out had elements. */
ct_status ct_resize_out(ct_tensor *out, int ndim, const int64_t *shape);
/* The computation dtype and result dtype for inputs. */
ct_dtype ct_pointwise_compute_dtype(int n, const ct_tensor *const *in, ct_out_kind kind);

/* Writes result's values into self and gives self result's history (the
 * in-place half of every in-place op). */
ct_status ct_write_result_inplace(ct_tensor *self, ct_tensor *result);
ct_status ct_check_inplace(const ct_tensor *t);
ct_status ct_check_inplace_overlap_ok(const ct_tensor *t); /* the same without the overlap refusal */
ct_status ct_fill_from_tensor_(ct_tensor *dst, const ct_tensor *src); /* creation.c: fill_ with a 0-dim tensor */
ct_status ct_fill_where_overlapping_(ct_tensor *self, const ct_tensor *mask, ct_scalar value); /* index.c */
ct_status ct_check_view_rebase(const ct_tensor *t); /* creation.c: view made without grad / multi-output */
ct_status ct_fill_nograd(ct_tensor *t, ct_scalar v);
bool ct_has_internal_overlap(const ct_tensor *t);

/* Gives t's node the name PyTorch prints for the op that made t (composite ops rename their
 * last node); no-op without a node. Returns t. */
static inline ct_tensor *ct_name_node(ct_tensor *t, const char *name) {
  if (t && t->grad_fn) t->grad_fn->name = name;
  return t;
}

/* Convenience for attrs */
static inline ct_attrs ct_attrs_zero(void) {
  ct_attrs a;
  memset(&a, 0, sizeof a);
  return a;
}

#endif
