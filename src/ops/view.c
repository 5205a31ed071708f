/* View ops: new handles over the same storage. Each records a node whose
 * backward maps the gradient back to the input's geometry. */
#include "pointwise.h"

/* Attributes layout for view nodes: i[0..nd) shape, i[8..8+nd) strides, k[0] = nd,
 * k[1] = storage offset relative to the input's. */
static ct_tensor *make_view_rec(const ct_tensor *t, int op, int nd, const int64_t *shape, const int64_t *stride,
                                int64_t offset, const ct_attrs *a) {
  ct_tensor *v = ct_make_view(t, nd, shape, stride, offset);
  if (!v) return NULL;
  if (a) {
    ct_tensor *in = (ct_tensor *)t;
    const ct_op_info *info = ct_op_info_of(op);
    ct_clear_error();
    if (!ct_record_node(op, 1, &in, 1, &v, a, CT_SAVE_NONE, info->backward, NULL) && ct_last_status() != CT_OK) {
      ct_release(v);
      return NULL;
    }
  }
  return v;
}

static ct_attrs geom_attrs(int nd, const int64_t *shape, const int64_t *stride, int64_t rel_offset) {
  ct_attrs a;
  memset(&a, 0, sizeof a);
  for (int d = 0; d < nd; d++) {
    a.i[d] = shape[d];
    a.i[8 + d] = stride[d];
  }
  a.k[0] = nd;
  a.k[1] = rel_offset;
  return a;
}

/* A view of t with the given geometry whose backward views the gradient back to t's shape (view,
 * reshape, squeeze, unsqueeze, alias); its node takes the name PyTorch gives that op. */
static ct_tensor *shape_view(const ct_tensor *t, int nd, const int64_t *ns, const int64_t *st, const char *name) {
  ct_attrs a = geom_attrs(t->ndim, t->shape, t->stride, 0);
  ct_tensor *r = make_view_rec(t, CT_OP_view, nd, ns, st, t->offset, &a);
  if (r && r->grad_fn && name) r->grad_fn->name = name;
  return r;
}

/* ---- view / reshape ---- */
/* Infers one -1 and checks the element count. */
static ct_status infer_size(const ct_tensor *t, int nd, const int64_t *in, int64_t *out) {
  int64_t numel = ct_numel(t), prod = 1;
  int neg = -1;
  if (nd < 0 || nd > CT_MAX_DIMS) return CT_ERR(CT_ERR_RUNTIME, "shape has %d dims; at most %d are supported", nd, CT_MAX_DIMS);
  for (int d = 0; d < nd; d++) {
    if (in[d] == -1) {
      if (neg >= 0) return CT_ERR(CT_ERR_RUNTIME, "only one dimension can be inferred");
      neg = d;
    } else if (in[d] < 0) {
      return CT_ERR(CT_ERR_RUNTIME, "invalid shape dimension %lld", (long long)in[d]);
    } else if (!ct_mul_ok(prod, in[d], &prod)) {
      return CT_ERR(CT_ERR_RUNTIME, "shape is too large");
    }
    out[d] = in[d];
  }
  char buf[160];
  if (neg >= 0) {
    if (prod == 0 || numel % prod != 0) {
      if (prod == 0)
        return CT_ERR(CT_ERR_RUNTIME, "cannot reshape tensor of %lld elements into shape %s because the unspecified "
                      "dimension size -1 can be any value and is ambiguous", (long long)numel, ct_shape_str(nd, in, buf, sizeof buf));
      return CT_ERR(CT_ERR_RUNTIME, "shape '%s' is invalid for input of size %lld", ct_shape_str(nd, in, buf, sizeof buf),
                    (long long)numel);
    }
    out[neg] = numel / prod;
  } else if (prod != numel) {
    return CT_ERR(CT_ERR_RUNTIME, "shape '%s' is invalid for input of size %lld", ct_shape_str(nd, in, buf, sizeof buf),
                  (long long)numel);
  }
  return CT_OK;
}

/* PyTorch's computeStride: strides for viewing (shape, stride) as new_shape, or false. */
static bool compute_view_strides(int nd, const int64_t *shape, const int64_t *stride, int nn, const int64_t *nshape,
                                 int64_t *nstride) {
  int64_t numel = 1;
  for (int d = 0; d < nd; d++) numel *= shape[d];
  if (numel == 0) {
    return ct_contiguous_strides(nn, nshape, nstride);
  }
  if (nd == 0) { /* a scalar viewed as [1, 1, ...] */
    for (int d = 0; d < nn; d++) nstride[d] = 1;
    return true;
  }
  int view_d = nn - 1;
  int64_t chunk_base_stride = nd ? stride[nd - 1] : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int td = nd - 1; td >= 0; td--) {
    tensor_numel *= shape[td];
    if (td == 0 || (shape[td - 1] != 1 && stride[td - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || nshape[view_d] == 1)) {
        nstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= nshape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (td > 0) {
        chunk_base_stride = stride[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

static ct_tensor *view_impl(const ct_tensor *t, int nd, const int64_t *shape, bool allow_copy) {
  if (ct_check_tensor(t, "view")) return NULL;
  if (nd > 0 && !shape) {
    ct_set_error(CT_ERR_VALUE, "view: shape is NULL");
    return NULL;
  }
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  if (infer_size(t, nd, shape, ns)) return NULL;
  if (!compute_view_strides(t->ndim, t->shape, t->stride, nd, ns, st)) {
    if (!allow_copy) {
      ct_set_error(CT_ERR_RUNTIME, "view size is not compatible with input tensor's size and stride (at least one "
                                   "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
      return NULL;
    }
    ct_tensor *c = ct_clone(t);
    if (!c) return NULL;
    ct_tensor *r = view_impl(c, nd, ns, false);
    ct_release(c);
    if (r && r->grad_fn) r->grad_fn->name = "UnsafeViewBackward0";
    return r;
  }
  /* PyTorch 1.13's reshape of a viewable tensor is _reshape_alias */
  return shape_view(t, nd, ns, st, allow_copy ? "ReshapeAliasBackward0" : NULL);
}

ct_tensor *ct_view(const ct_tensor *t, int nd, const int64_t *shape) { return view_impl(t, nd, shape, false); }
ct_tensor *ct_reshape(const ct_tensor *t, int nd, const int64_t *shape) { return view_impl(t, nd, shape, true); }
ct_tensor *ct_view_as(const ct_tensor *t, const ct_tensor *o) {
  if (ct_check_tensor(o, "view_as")) return NULL;
  return ct_view(t, o->ndim, o->shape);
}
ct_tensor *ct_reshape_as(const ct_tensor *t, const ct_tensor *o) {
  if (ct_check_tensor(o, "reshape_as")) return NULL;
  return ct_reshape(t, o->ndim, o->shape);
}

ct_status ct_bw_view(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *c = ct_contiguous(g[0]);
  if (!c) return ct_last_status();
  gin[0] = ct_reshape(c, (int)n->a.k[0], n->a.i);
  ct_release(c);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_flatten(const ct_tensor *t, int64_t start, int64_t end) {
  if (ct_check_tensor(t, "flatten")) return NULL;
  if (t->ndim == 0) {
    int64_t one = 1;
    return ct_reshape(t, 1, &one);
  }
  start = ct_wrap_dim(start, t->ndim);
  if (start < 0) return NULL;
  end = ct_wrap_dim(end, t->ndim);
  if (end < 0) return NULL;
  if (start > end) {
    ct_set_error(CT_ERR_RUNTIME, "flatten() has invalid args: start_dim cannot come after end_dim");
    return NULL;
  }
  if (start == end) return ct_same(t); /* nothing to merge: PyTorch returns self */
  int64_t ns[CT_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < start; d++) ns[nd++] = t->shape[d];
  int64_t p = 1;
  for (int64_t d = start; d <= end; d++) p *= t->shape[d];
  ns[nd++] = p;
  for (int d = (int)end + 1; d < t->ndim; d++) ns[nd++] = t->shape[d];
  return ct_reshape(t, nd, ns);
}

/* An array argument of n > 0 entries must not be NULL. */
static bool null_array(const void *arr, int n, const char *fn, const char *what) {
  if (n > 0 && !arr) {
    ct_set_error(CT_ERR_VALUE, "%s: %s is NULL", fn, what);
    return true;
  }
  return false;
}

ct_tensor *ct_unflatten(const ct_tensor *t, int64_t dim, int nsizes, const int64_t *sizes) {
  if (ct_check_tensor(t, "unflatten") || null_array(sizes, nsizes, "unflatten", "sizes")) return NULL;
  dim = ct_wrap_dim(dim, t->ndim);
  if (dim < 0) return NULL;
  if (nsizes < 1 || t->ndim - 1 + nsizes > CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "unflatten: sizes must be non-empty and the result at most %d-D", CT_MAX_DIMS);
    return NULL;
  }
  int64_t ns[CT_MAX_DIMS], inferred[CT_MAX_DIMS];
  /* infer -1 within the unflattened dim */
  int64_t prod = 1;
  int neg = -1;
  for (int k = 0; k < nsizes; k++) {
    if (sizes[k] == -1) {
      if (neg >= 0) { ct_set_error(CT_ERR_RUNTIME, "only one dimension can be inferred"); return NULL; }
      neg = k;
    } else prod *= sizes[k];
    inferred[k] = sizes[k];
  }
  if (neg >= 0) inferred[neg] = prod ? t->shape[dim] / prod : 0;
  int64_t p2 = 1;
  for (int k = 0; k < nsizes; k++) p2 *= inferred[k];
  if (p2 != t->shape[dim]) {
    char b[160];
    ct_set_error(CT_ERR_RUNTIME, "unflatten: Provided sizes %s don't multiply up to the size of dim %lld (%lld) in the input tensor",
                 ct_shape_str(nsizes, sizes, b, sizeof b), (long long)dim, (long long)t->shape[dim]);
    return NULL;
  }
  int nd = 0;
  for (int d = 0; d < dim; d++) ns[nd++] = t->shape[d];
  for (int k = 0; k < nsizes; k++) ns[nd++] = inferred[k];
  for (int d = (int)dim + 1; d < t->ndim; d++) ns[nd++] = t->shape[d];
  return ct_view(t, nd, ns);
}

/* t without the dims whose bit is set in drop (each of size 1) */
static ct_tensor *squeeze_dims(const ct_tensor *t, uint32_t drop, const char *name) {
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < t->ndim; d++)
    if (!(drop >> d & 1u)) {
      ns[nd] = t->shape[d];
      st[nd++] = t->stride[d];
    }
  return shape_view(t, nd, ns, st, name);
}

ct_tensor *ct_squeeze(const ct_tensor *t) {
  if (ct_check_tensor(t, "squeeze")) return NULL;
  uint32_t drop = 0;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] == 1) drop |= 1u << d;
  return squeeze_dims(t, drop, "SqueezeBackward0");
}

ct_tensor *ct_squeeze_dim(const ct_tensor *t, int64_t dim) {
  if (ct_check_tensor(t, "squeeze")) return NULL;
  dim = ct_wrap_dim(dim, t->ndim);
  if (dim < 0) return NULL;
  /* a dim that is not of size 1 stays: still a view (an alias), with squeeze.dim's node */
  return squeeze_dims(t, t->ndim > 0 && t->shape[dim] == 1 ? 1u << dim : 0, "SqueezeBackward1");
}

ct_tensor *ct_unsqueeze(const ct_tensor *t, int64_t dim) {
  if (ct_check_tensor(t, "unsqueeze")) return NULL;
  if (t->ndim >= CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "unsqueeze: tensors have at most %d dims", CT_MAX_DIMS);
    return NULL;
  }
  dim = ct_wrap_dim(dim, t->ndim + 1);
  if (dim < 0) return NULL;
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d <= t->ndim; d++) {
    if (d == dim) {
      ns[nd] = 1;
      st[nd++] = d < t->ndim ? t->shape[d] * t->stride[d] : 1;
    }
    if (d < t->ndim) {
      ns[nd] = t->shape[d];
      st[nd++] = t->stride[d];
    }
  }
  return shape_view(t, nd, ns, st, "UnsqueezeBackward0");
}

/* ---- permute ---- */
ct_tensor *ct_permute(const ct_tensor *t, int nd, const int64_t *dims) {
  if (ct_check_tensor(t, "permute") || null_array(dims, nd, "permute", "dims")) return NULL;
  if (nd != t->ndim) {
    ct_set_error(CT_ERR_RUNTIME, "permute(sparse_coo): number of dimensions in the tensor input does not match the "
                                 "length of the desired ordering of dimensions i.e. input.dim() = %d is not equal to "
                                 "len(dims) = %d", t->ndim, nd);
    return NULL;
  }
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  bool seen[CT_MAX_DIMS] = {0};
  ct_attrs a;
  memset(&a, 0, sizeof a);
  for (int d = 0; d < nd; d++) {
    int64_t s = ct_wrap_dim(dims[d], nd);
    if (s < 0) return NULL;
    if (seen[s]) {
      ct_set_error(CT_ERR_RUNTIME, "permute(): duplicate dims are not allowed.");
      return NULL;
    }
    seen[s] = true;
    ns[d] = t->shape[s];
    st[d] = t->stride[s];
    a.i[s] = d; /* inverse permutation */
  }
  a.k[0] = nd;
  return make_view_rec(t, CT_OP_permute, nd, ns, st, t->offset, &a);
}

ct_status ct_bw_permute(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  gin[0] = ct_permute(g[0], (int)n->a.k[0], n->a.i);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_transpose(const ct_tensor *t, int64_t d0, int64_t d1) {
  if (ct_check_tensor(t, "transpose")) return NULL;
  int nd = t->ndim;
  d0 = ct_wrap_dim(d0, nd);
  if (d0 < 0) return NULL;
  d1 = ct_wrap_dim(d1, nd);
  if (d1 < 0) return NULL;
  int64_t p[CT_MAX_DIMS];
  for (int d = 0; d < nd; d++) p[d] = d;
  if (nd == 0) return ct_alias(t);
  p[d0] = d1;
  p[d1] = d0;
  ct_tensor *r = ct_permute(t, nd, p);
  if (r && r->grad_fn) r->grad_fn->name = "TransposeBackward0";
  return r;
}

ct_tensor *ct_t(const ct_tensor *t) {
  if (ct_check_tensor(t, "t")) return NULL;
  if (t->ndim > 2) {
    ct_set_error(CT_ERR_RUNTIME, "t() expects a tensor with <= 2 dimensions, but self is %dD", t->ndim);
    return NULL;
  }
  ct_tensor *r = t->ndim < 2 ? ct_alias(t) : ct_transpose(t, 0, 1);
  if (r && r->grad_fn) r->grad_fn->name = "TBackward0";
  return r;
}

ct_tensor *ct_mT(const ct_tensor *t) {
  if (ct_check_tensor(t, "mT")) return NULL;
  if (t->ndim < 2) {
    ct_set_error(CT_ERR_RUNTIME, "tensor.mT is only supported on matrices or batches of matrices. Got %d-D tensor.", t->ndim);
    return NULL;
  }
  return ct_transpose(t, -2, -1);
}

ct_tensor *ct_movedim(const ct_tensor *t, int n, const int64_t *src, const int64_t *dst) {
  if (ct_check_tensor(t, "movedim") || null_array(src, n, "movedim", "source") ||
      null_array(dst, n, "movedim", "destination"))
    return NULL;
  int nd = t->ndim;
  int64_t perm[CT_MAX_DIMS];
  bool used_src[CT_MAX_DIMS] = {0}, used_dst[CT_MAX_DIMS] = {0};
  for (int d = 0; d < nd; d++) perm[d] = -1;
  for (int k = 0; k < n; k++) {
    int64_t s = ct_wrap_dim(src[k], nd), d = ct_wrap_dim(dst[k], nd);
    if (s < 0 || d < 0) return NULL;
    if (used_src[s] || used_dst[d]) {
      ct_set_error(CT_ERR_RUNTIME, "movedim: repeated dim in `%s` (%lld)", used_src[s] ? "source" : "destination",
                   (long long)(used_src[s] ? src[k] : dst[k]));
      return NULL;
    }
    used_src[s] = used_dst[d] = true;
    perm[d] = s;
  }
  int64_t rest = 0;
  for (int d = 0; d < nd; d++) {
    if (perm[d] >= 0) continue;
    while (used_src[rest]) rest++;
    perm[d] = rest++;
  }
  return ct_permute(t, nd, perm);
}

/* ---- expand ---- */
ct_tensor *ct_expand(const ct_tensor *t, int nd, const int64_t *shape) {
  if (ct_check_tensor(t, "expand") || null_array(shape, nd, "expand", "size")) return NULL;
  char a1[160], a2[160];
  if (nd < t->ndim || nd > CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "expand(%s{%s}, size=%s): the number of sizes provided (%d) must be greater or equal to "
                 "the number of dimensions in the tensor (%d)", ct_dtype_legacy_name(t->dtype), CT_SHAPE_STR(t, a1),
                 ct_shape_str(nd, shape, a2, sizeof a2), nd, t->ndim);
    return NULL;
  }
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  bool same = nd == t->ndim;
  for (int d = nd - 1; d >= 0; d--) {
    int td = d - (nd - t->ndim);
    int64_t want = shape[d];
    if (td >= 0) {
      int64_t have = t->shape[td];
      if (want == -1) want = have;
      if (have == want) {
        ns[d] = have;
        st[d] = t->stride[td];
      } else if (have == 1) {
        ns[d] = want;
        st[d] = 0;
        same = false;
      } else {
        ct_set_error(CT_ERR_RUNTIME, "The expanded size of the tensor (%lld) must match the existing size (%lld) at "
                     "non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s", (long long)want, (long long)have,
                     d, ct_shape_str(nd, shape, a2, sizeof a2), CT_SHAPE_STR(t, a1));
        return NULL;
      }
    } else {
      if (want < 0) {
        ct_set_error(CT_ERR_RUNTIME, "The expanded size of the tensor (%lld) isn't allowed in a leading, non-existing "
                     "dimension %d", (long long)want, d);
        return NULL;
      }
      ns[d] = want;
      st[d] = 0;
    }
    if (ns[d] < 0) {
      ct_set_error(CT_ERR_RUNTIME, "Trying to create tensor with negative dimension %lld", (long long)ns[d]);
      return NULL;
    }
  }
  (void)same;
  ct_attrs a = geom_attrs(t->ndim, t->shape, t->stride, 0);
  return make_view_rec(t, CT_OP_expand, nd, ns, st, t->offset, &a);
}

ct_tensor *ct_expand_as(const ct_tensor *t, const ct_tensor *o) {
  if (ct_check_tensor(o, "expand_as")) return NULL;
  return ct_expand(t, o->ndim, o->shape);
}
ct_tensor *ct_broadcast_to(const ct_tensor *t, int nd, const int64_t *shape) { return ct_expand(t, nd, shape); }

ct_status ct_bw_expand(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  gin[0] = ct_grad_sum_to(g[0], &n->in_meta[0]);
  return gin[0] ? CT_OK : ct_last_status();
}

/* ---- as_strided family ---- */
/* Row-major strides of t's shape (the coordinates logical views record for backward). */
static void logical_strides(const ct_tensor *t, int64_t *cs) {
  int64_t acc = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    cs[d] = acc;
    acc *= t->shape[d] > 0 ? t->shape[d] : 1;
  }
}

static ct_status check_bounds(const ct_tensor *t, int nd, const int64_t *shape, const int64_t *stride, int64_t offset) {
  int64_t max_off = offset;
  for (int d = 0; d < nd; d++) {
    if (shape[d] < 0) return CT_ERR(CT_ERR_RUNTIME, "as_strided: Negative strides/sizes are not supported");
    if (stride[d] < 0) return CT_ERR(CT_ERR_RUNTIME, "as_strided: Negative strides are not supported at the moment, got strides: %lld", (long long)stride[d]);
    if (shape[d] == 0) return CT_OK;
    int64_t m;
    if (!ct_mul_ok(shape[d] - 1, stride[d], &m) || __builtin_add_overflow(max_off, m, &max_off))
      return CT_ERR(CT_ERR_RUNTIME, "as_strided: size/stride overflow");
  }
  int64_t cap = (int64_t)(t->storage->nbytes / ct_dtype_size(t->dtype));
  if (offset < 0 || max_off >= cap) {
    char a[160];
    return CT_ERR(CT_ERR_RUNTIME, "setStorage: sizes %s, strides ..., storage offset %lld, and itemsize %zu requiring a "
                  "storage size of %lld are out of bounds for storage of size %zu", ct_shape_str(nd, shape, a, sizeof a),
                  (long long)offset, ct_dtype_size(t->dtype), (long long)((max_off + 1) * (int64_t)ct_dtype_size(t->dtype)),
                  t->storage->nbytes);
  }
  return CT_OK;
}

/* A view given in storage coordinates. as_strided records the geometry relative to t's
 * storage (PyTorch's as_strided is defined on storage). The logical views (slice, select,
 * diagonal, unfold) pass lstride/loff: the same geometry computed on t's contiguous strides
 * (logical_strides) and offset 0, so their backward lands on t's elements even when t is
 * itself self-overlapping (an unfold of an unfold would otherwise sum aliased elements). */
static ct_tensor *strided_view_rec(const ct_tensor *t, int nd, const int64_t *shape, const int64_t *stride,
                                   int64_t offset, const int64_t *lstride, int64_t loff) {
  ct_attrs a = lstride ? geom_attrs(nd, shape, lstride, loff) : geom_attrs(nd, shape, stride, offset - t->offset);
  /* also record the input's geometry for the backward */
  a.ni = t->ndim;
  int64_t cs[CT_MAX_DIMS];
  if (lstride) logical_strides(t, cs);
  for (int d = 0; d < t->ndim; d++) {
    a.i[16 + d] = lstride ? cs[d] : t->stride[d];
  }
  return make_view_rec(t, CT_OP_as_strided, nd, shape, stride, offset, &a);
}

ct_tensor *ct_as_strided(const ct_tensor *t, int nd, const int64_t *shape, const int64_t *stride, int64_t offset) {
  if (ct_check_tensor(t, "as_strided")) return NULL;
  if (nd < 0 || nd > CT_MAX_DIMS || (nd && (!shape || !stride))) {
    ct_set_error(CT_ERR_RUNTIME, "as_strided: invalid sizes/strides");
    return NULL;
  }
  if (offset < 0) offset = t->offset;
  if (check_bounds(t, nd, shape, stride, offset)) return NULL;
  return strided_view_rec(t, nd, shape, stride, offset, NULL, 0);
}

ct_tensor *ct_same(const ct_tensor *t) {
  if (!ct_scope_active()) return ct_retain((ct_tensor *)t);
  if (!t->grad_fn && t->requires_grad) return ct_alias(t);
  ct_tensor *a = ct_tensor_over(t->storage, t->ndim, t->shape, t->stride, t->offset, t->dtype);
  if (!a) return NULL;
  if (t->base) a->base = ct_hold(t->base);
  ct_vcell_share(a, t);
  a->is_wrapped_number = t->is_wrapped_number;
  a->is_inference = t->is_inference;
  if (t->grad_fn) {
    a->grad_fn = t->grad_fn;
    ct_node_retain(a->grad_fn);
    a->output_nr = t->output_nr;
  }
  return a;
}

ct_tensor *ct_alias(const ct_tensor *t) {
  if (ct_check_tensor(t, "alias")) return NULL;
  return shape_view(t, t->ndim, t->shape, t->stride, "AliasBackward0");
}

ct_tensor *ct_narrow(const ct_tensor *t, int64_t dim, int64_t start, int64_t length) {
  if (ct_check_tensor(t, "narrow")) return NULL;
  if (t->ndim == 0) {
    ct_set_error(CT_ERR_RUNTIME, "narrow() cannot be applied to a 0-dim tensor.");
    return NULL;
  }
  dim = ct_wrap_dim(dim, t->ndim);
  if (dim < 0) return NULL;
  int64_t size = t->shape[dim];
  if (start < -size || start > size) {
    ct_set_error(CT_ERR_INDEX, "start out of range (expected to be in range of [%lld, %lld], but got %lld)",
                 (long long)-size, (long long)size, (long long)start);
    return NULL;
  }
  if (start < 0) start += size;
  if (length < 0 || start > size - length) {
    ct_set_error(CT_ERR_RUNTIME, "start (%lld) + length (%lld) exceeds dimension size (%lld).", (long long)start,
                 (long long)length, (long long)size);
    return NULL;
  }
  return ct_slice(t, dim, start, start + length, 1);
}

ct_tensor *ct_slice(const ct_tensor *t, int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (ct_check_tensor(t, "slice")) return NULL;
  if (t->ndim == 0) {
    ct_set_error(CT_ERR_INDEX, "slice() cannot be applied to a 0-dim tensor.");
    return NULL;
  }
  dim = ct_wrap_dim(dim, t->ndim);
  if (dim < 0) return NULL;
  if (step <= 0) {
    ct_set_error(CT_ERR_VALUE, step == 0 ? "slice step cannot be zero" : "step must be greater than zero");
    return NULL;
  }
  int64_t size = t->shape[dim];
  if (start < 0) start += size;
  if (end < 0) end += size;
  if (start < 0) start = 0;
  if (start > size) start = size;
  if (end < start) end = start;
  if (end > size) end = size;
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  memcpy(ns, t->shape, sizeof ns);
  memcpy(st, t->stride, sizeof st);
  ns[dim] = (end - start + step - 1) / step;
  st[dim] = t->stride[dim] * step;
  int64_t lst[CT_MAX_DIMS];
  logical_strides(t, lst);
  int64_t loff = start * lst[dim];
  lst[dim] *= step;
  ct_tensor *r = strided_view_rec(t, t->ndim, ns, st, t->offset + start * t->stride[dim], lst, loff);
  if (r && r->grad_fn) r->grad_fn->name = "SliceBackward0";
  return r;
}

ct_tensor *ct_select(const ct_tensor *t, int64_t dim, int64_t index) {
  if (ct_check_tensor(t, "select")) return NULL;
  if (t->ndim == 0) {
    ct_set_error(CT_ERR_INDEX, "select() cannot be applied to a 0-dim tensor.");
    return NULL;
  }
  dim = ct_wrap_dim(dim, t->ndim);
  if (dim < 0) return NULL;
  int64_t size = t->shape[dim];
  if (index < -size || index >= size) {
    char b[160];
    ct_set_error(CT_ERR_INDEX, "select(): index %lld out of range for tensor of size %s at dimension %lld",
                 (long long)index, CT_SHAPE_STR(t, b), (long long)dim);
    return NULL;
  }
  if (index < 0) index += size;
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS], cs[CT_MAX_DIMS], lst[CT_MAX_DIMS];
  logical_strides(t, cs);
  int nd = 0;
  for (int d = 0; d < t->ndim; d++)
    if (d != dim) {
      ns[nd] = t->shape[d];
      lst[nd] = cs[d];
      st[nd++] = t->stride[d];
    }
  ct_tensor *r = strided_view_rec(t, nd, ns, st, t->offset + index * t->stride[dim], lst, index * cs[dim]);
  if (r && r->grad_fn) r->grad_fn->name = "SelectBackward0";
  return r;
}

ct_tensor *ct_diagonal(const ct_tensor *t, int64_t offset, int64_t d1, int64_t d2) {
  if (ct_check_tensor(t, "diagonal")) return NULL;
  if (t->ndim < 2) {
    ct_set_error(CT_ERR_RUNTIME, "diagonal dimensions requested: %lld and %lld, but tensor has %d dims",
                 (long long)d1, (long long)d2, t->ndim);
    return NULL;
  }
  d1 = ct_wrap_dim(d1, t->ndim);
  if (d1 < 0) return NULL;
  d2 = ct_wrap_dim(d2, t->ndim);
  if (d2 < 0) return NULL;
  if (d1 == d2) {
    ct_set_error(CT_ERR_RUNTIME, "diagonal dimensions cannot be identical %lld, %lld", (long long)d1, (long long)d2);
    return NULL;
  }
  int64_t cs[CT_MAX_DIMS];
  logical_strides(t, cs);
  int64_t len, off = t->offset, loff = 0;
  if (offset >= 0) {
    len = t->shape[d2] - offset;
    if (len > t->shape[d1]) len = t->shape[d1];
    if (len > 0) off += offset * t->stride[d2], loff = offset * cs[d2];
  } else {
    len = t->shape[d1] + offset;
    if (len > t->shape[d2]) len = t->shape[d2];
    if (len > 0) off -= offset * t->stride[d1], loff = -offset * cs[d1];
  }
  if (len < 0) len = 0;
  if (len == 0) off = t->offset, loff = 0;
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS], lst[CT_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < t->ndim; d++)
    if (d != d1 && d != d2) {
      ns[nd] = t->shape[d];
      lst[nd] = cs[d];
      st[nd++] = t->stride[d];
    }
  ns[nd] = len;
  lst[nd] = cs[d1] + cs[d2];
  st[nd++] = t->stride[d1] + t->stride[d2];
  ct_tensor *r = strided_view_rec(t, nd, ns, st, off, lst, loff);
  if (r && r->grad_fn) r->grad_fn->name = "DiagonalBackward0";
  return r;
}

ct_tensor *ct_unfold(const ct_tensor *t, int64_t dim, int64_t size, int64_t step) {
  if (ct_check_tensor(t, "unfold")) return NULL;
  int64_t d = t->ndim == 0 ? 0 : ct_wrap_dim(dim, t->ndim);
  if (d < 0) return NULL;
  int64_t dsize = t->ndim ? t->shape[d] : 1, dstride = t->ndim ? t->stride[d] : 1;
  if (size > dsize) {
    ct_set_error(CT_ERR_RUNTIME, "maximum size for tensor at dimension %lld is %lld but size is %lld", (long long)d,
                 (long long)dsize, (long long)size);
    return NULL;
  }
  if (step <= 0) {
    ct_set_error(CT_ERR_RUNTIME, "step is %lld but must be > 0", (long long)step);
    return NULL;
  }
  if (size < 0) {
    ct_set_error(CT_ERR_RUNTIME, "size is %lld but must be >= 0", (long long)size);
    return NULL;
  }
  if (t->ndim >= CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "unfold: result would have more than %d dims", CT_MAX_DIMS);
    return NULL;
  }
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS], lst[CT_MAX_DIMS];
  int nd = t->ndim;
  memcpy(ns, t->shape, sizeof ns);
  memcpy(st, t->stride, sizeof st);
  logical_strides(t, lst);
  int64_t ldstride = t->ndim ? lst[d] : 1;
  if (t->ndim) {
    ns[d] = (dsize - size) / step + 1;
    st[d] = step * dstride;
    lst[d] = step * ldstride;
  }
  ns[nd] = size;
  lst[nd] = ldstride;
  st[nd++] = dstride;
  ct_tensor *r = strided_view_rec(t, nd, ns, st, t->offset, lst, 0);
  if (r && r->grad_fn) r->grad_fn->name = "UnfoldBackward0";
  return r;
}

/* buf[flat position of each window element] += g, as one scatter_add: device kernels run
 * the elements in parallel, so an in-place add through self-overlapping windows would
 * race where the CPU's serial loop accumulates. */
static ct_status scatter_windows(ct_tensor *buf, const ct_tensor *win, const ct_tensor *g) {
  ct_options lo = {CT_INT64, buf->storage->device, false};
  int64_t m1 = -1;
  ct_tensor *ar = ct_arange(ct_si(0), ct_si(buf->shape[0]), ct_si(1), &lo);
  ct_tensor *iw = ar ? ct_as_strided(ar, win->ndim, win->shape, win->stride, win->offset - buf->offset) : NULL;
  ct_tensor *ix = iw ? ct_reshape(iw, 1, &m1) : NULL, *gf = ix ? ct_reshape(g, 1, &m1) : NULL;
  ct_status st = gf ? ct_scatter_add_(buf, 0, ix, gf) : ct_last_status();
  ct_release(ar);
  ct_release(iw);
  ct_release(ix);
  ct_release(gf);
  return st;
}

/* Whether a strided geometry reaches each element at most once (dims by increasing stride, each
 * stride past the extent of the smaller ones): then writing through it cannot race. */
static bool windows_disjoint(int nd, const int64_t *shape, const int64_t *stride) {
  int order[CT_MAX_DIMS], k = 0;
  for (int d = 0; d < nd; d++) {
    if (shape[d] == 0) return true;
    if (shape[d] > 1) order[k++] = d;
  }
  for (int i = 1; i < k; i++) /* insertion sort by stride */
    for (int j = i; j > 0 && stride[order[j]] < stride[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  int64_t extent = 1;
  for (int i = 0; i < k; i++) {
    int64_t st = stride[order[i]];
    if (st < extent) return false;
    extent = st * (shape[order[i]] - 1) + extent;
  }
  return true;
}

/* Backward of a strided view: scatter-add the gradient into zeros shaped like the
 * input, through the same geometry (overlapping windows accumulate). */
ct_status ct_bw_as_strided(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  const ct_meta *m = &n->in_meta[0];
  int nd = (int)n->a.k[0];
  /* the input viewed as a flat buffer: its elements in storage order are reachable
   * from rel offsets only if it is laid out contiguously; use a contiguous zero
   * buffer of the input's storage span and map the input's own strides onto it */
  int64_t in_stride[CT_MAX_DIMS];
  for (int d = 0; d < m->ndim; d++) in_stride[d] = n->a.i[16 + d];
  int64_t span = 1; /* elements from the input's first element to its last, +1 */
  for (int d = 0; d < m->ndim; d++) {
    if (m->shape[d] == 0) { span = 0; break; }
    span += (m->shape[d] - 1) * in_stride[d];
  }
  int64_t out_span = n->a.k[1] + 1;
  for (int d = 0; d < nd; d++) {
    if (n->a.i[d] == 0) { out_span = 0; break; }
    out_span += (n->a.i[d] - 1) * n->a.i[8 + d];
  }
  int64_t buf_n = span > out_span ? span : out_span;
  if (buf_n < 1) buf_n = 1;
  ct_options o = {m->dtype, m->device, false};
  ct_tensor *buf = ct_zeros(1, &buf_n, o);
  if (!buf) return ct_last_status();
  ct_tensor *win = ct_as_strided(buf, nd, n->a.i, n->a.i + 8, n->a.k[1]);
  ct_status st = win ? CT_OK : ct_last_status();
  if (st == CT_OK && m->device.type == CT_DEVICE_CPU) st = ct_add_(win, g[0]); /* overlapping windows accumulate: see ct_add_ */
  else if (st == CT_OK && (m->device.type == CT_DEVICE_CUDA || m->device.type == CT_DEVICE_WEBGPU) &&
           windows_disjoint(nd, n->a.i, n->a.i + 8))
    st = ct_copy_(win, g[0]); /* GPUs: no element twice (narrow, slices), a plain strided copy, no index */
  else if (st == CT_OK) st = scatter_windows(buf, win, g[0]);
  ct_release(win);
  if (st == CT_OK) {
    gin[0] = ct_as_strided(buf, m->ndim, m->shape, in_stride, 0);
    if (!gin[0]) st = ct_last_status();
  }
  ct_release(buf);
  return st;
}

/* base_new = base with src written through the view geometry (attrs as in geom_attrs). */
ct_status ct_bw_as_strided_scatter(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  int nd = (int)n->a.k[0];
  ct_status st = CT_OK;
  ct_tensor *gc = ct_contiguous(g[0]);
  if (!gc) return ct_last_status();
  if (ct_node_needs_grad(n, 1)) {
    ct_tensor *v = ct_as_strided(gc, nd, n->a.i, n->a.i + 8, n->a.k[1]);
    gin[1] = v ? ct_clone(v) : NULL;
    ct_release(v);
    if (!gin[1]) st = ct_last_status();
  }
  if (st == CT_OK && ct_node_needs_grad(n, 0)) {
    ct_tensor *c = ct_clone(gc);
    ct_tensor *v = c ? ct_as_strided(c, nd, n->a.i, n->a.i + 8, n->a.k[1]) : NULL;
    bool prev = ct_set_grad_enabled(false);
    st = v ? ct_fill_nograd(v, ct_si(0)) : ct_last_status();
    ct_set_grad_enabled(prev);
    ct_release(v);
    gin[0] = c;
  }
  ct_release(gc);
  return st;
}
