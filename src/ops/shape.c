/* Shape ops: entry points and derivative formulas side by side. Splits are
 * views (narrow/select/slice); joins, flips, rolls, repeats and pads are copies
 * through the CPU "dim map" kernels (kernels_shape.c). */
#include "reduce_util.h"
#include <stdlib.h>

/* The list-output convention (see shape.h): returns 1 when the caller should stop with CT_OK (count only). */
static int list_room(int count, int *n_out, ct_tensor **out, int max_out, ct_status *st) {
  *st = CT_OK;
  if (!n_out) {
    *st = CT_ERR(CT_ERR_VALUE, "n_out is NULL");
    return 1;
  }
  *n_out = count;
  if (!out) return 1;
  if (max_out < count) {
    *st = CT_ERR(CT_ERR_VALUE, "%d results but room for %d (pass out = NULL to get the count)", count, max_out);
    return 1;
  }
  return 0;
}

/* Releases out[0..k) after a failure part way. */
static ct_status list_fail(ct_tensor **out, int k) {
  ct_status st = ct_last_status();
  for (int i = 0; i < k; i++) {
    ct_release(out[i]);
    out[i] = NULL;
  }
  return st == CT_OK ? CT_ERR(CT_ERR_RUNTIME, "shape op failed") : st;
}

static ct_status no_dims_error(int64_t dim) {
  return CT_ERR(CT_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions", (long long)dim);
}

/* Writes r into out (out= semantics shared with the other families). */
static ct_status write_out(ct_tensor *out, ct_tensor *r) {
  CT_TRY(ct_resize_out(out, r->ndim, r->shape));
  return ct_copy_(out, r);
}

/* ---- cat ---- */
static bool cat_skipped(const ct_tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

/* Inputs validated; dim wrapped; n may exceed the op's input slots (then joins in groups). */
static ct_tensor *cat_run(int n, const ct_tensor *const *ts, int dim, ct_dtype dt) {
  if (n > CT_MAX_OP_IN) {
    int ng = (n + CT_MAX_OP_IN - 1) / CT_MAX_OP_IN;
    ct_tensor **parts = ct_xcalloc((size_t)ng, sizeof *parts);
    if (!parts) return NULL;
    ct_tensor *r = NULL;
    int k = 0;
    for (; k < ng; k++) {
      int b = k * CT_MAX_OP_IN, m = n - b < CT_MAX_OP_IN ? n - b : CT_MAX_OP_IN;
      if (!(parts[k] = cat_run(m, ts + b, dim, dt))) break;
    }
    if (k == ng) r = cat_run(ng, (const ct_tensor *const *)parts, dim, dt);
    for (int i = 0; i < ng; i++) ct_release(parts[i]);
    free(parts);
    return r;
  }
  const ct_tensor *ref = NULL;
  int64_t total = 0;
  ct_attrs a = ct_attrs_zero();
  a.k[0] = dim;
  for (int i = 0; i < n; i++)
    if (!cat_skipped(ts[i])) { ref = ts[i]; break; }
  if (!ref) ref = ts[0];
  ct_tensor *in[CT_MAX_OP_IN] = {0};
  ct_tensor *r = NULL;
  int i = 0;
  for (; i < n; i++) {
    bool skip = cat_skipped(ts[i]); /* legacy: 1-D [0] inputs take no part (their gradient is zero) */
    a.i[i] = skip ? -1 : ts[i]->shape[dim];
    if (!skip && __builtin_add_overflow(total, ts[i]->shape[dim], &total)) {
      ct_set_error(CT_ERR_RUNTIME, "cat: result size overflows");
      break;
    }
    if (!(in[i] = ct_to_dtype(ts[i], dt))) break;
  }
  if (i == n) {
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, ref->shape, sizeof(int64_t) * (size_t)ref->ndim);
    shape[dim] = total;
    r = ct_dispatch_new(CT_OP_cat, n, in, ref->ndim, shape, dt, &a);
  }
  for (int j = 0; j < n; j++) ct_release(in[j]);
  return r;
}

/* Checks PyTorch 1.13's cat rules; sets *dim (wrapped) and *dt. */
static ct_status cat_check(int n, const ct_tensor *const *ts, int64_t *dim, ct_dtype *dt) {
  if (n <= 0 || !ts) return CT_ERR(CT_ERR_RUNTIME, "torch.cat(): expected a non-empty list of Tensors");
  for (int i = 0; i < n; i++) CT_TRY(ct_check_tensor(ts[i], "cat"));
  for (int i = 0; i < n; i++)
    if (ts[i]->ndim == 0)
      return CT_ERR(CT_ERR_RUNTIME, "zero-dimensional tensor (at position %d) cannot be concatenated", i);
  CT_TRY(ct_check_same_device("cat", n, ts));
  const ct_tensor *ref = NULL;
  for (int i = 0; i < n && !ref; i++)
    if (!cat_skipped(ts[i])) ref = ts[i];
  if (!ref) ref = ts[0];
  int64_t d = ct_wrap_dim(*dim, ref->ndim);
  if (d < 0) return ct_last_status();
  *dim = d;
  *dt = ts[0]->dtype;
  for (int i = 1; i < n; i++) *dt = ct_promote_types(*dt, ts[i]->dtype);
  for (int i = 0; i < n; i++) {
    const ct_tensor *t = ts[i];
    if (cat_skipped(t)) continue;
    if (t->ndim != ref->ndim)
      return CT_ERR(CT_ERR_RUNTIME, "Tensors must have same number of dimensions: got %d and %d", ref->ndim, t->ndim);
    for (int k = 0; k < t->ndim; k++)
      if (k != d && t->shape[k] != ref->shape[k])
        return CT_ERR(CT_ERR_RUNTIME, "Sizes of tensors must match except in dimension %lld. Expected size %lld but got "
                      "size %lld for tensor number %d in the list.", (long long)d, (long long)ref->shape[k],
                      (long long)t->shape[k], i);
  }
  return CT_OK;
}

ct_tensor *ct_cat(int n, const ct_tensor *const *ts, int64_t dim) {
  ct_dtype dt = CT_FLOAT32;
  if (cat_check(n, ts, &dim, &dt)) return NULL;
  return cat_run(n, ts, (int)dim, dt);
}

ct_status ct_cat_out(ct_tensor *out, int n, const ct_tensor *const *ts, int64_t dim) {
  CT_TRY(ct_check_tensor(out, "cat"));
  if (ct_grad_mode_recording()) {
    bool any = ct_tensor_requires_grad(out);
    for (int i = 0; i < n && ts; i++) any |= ts[i] && ct_tensor_requires_grad(ts[i]);
    if (any)
      return CT_ERR(CT_ERR_RUNTIME, "cat(): functions with out=... arguments don't support automatic differentiation, "
                    "but one of the arguments requires grad.");
  }
  ct_tensor *r = ct_cat(n, ts, dim);
  if (!r) return ct_last_status();
  ct_status st = ct_can_cast(r->dtype, out->dtype)
                     ? write_out(out, r)
                     : CT_ERR(CT_ERR_RUNTIME, "result type %s can't be cast to the desired output type %s",
                              ct_dtype_torch_name(r->dtype), ct_dtype_torch_name(out->dtype));
  ct_release(r);
  return st;
}

ct_status ct_bw_cat(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  int dim = (int)n->a.k[0];
  int64_t off = 0;
  for (int i = 0; i < n->n_in; i++) {
    int64_t sz = n->a.i[i];
    if (sz < 0) continue;
    if (ct_node_needs_grad(n, i) && !(gin[i] = ct_narrow(g[0], dim, off, sz))) return ct_last_status();
    off += sz;
  }
  return CT_OK;
}

/* ---- stack / hstack / vstack / dstack ---- */
ct_tensor *ct_stack(int n, const ct_tensor *const *ts, int64_t dim) {
  if (n <= 0 || !ts) {
    ct_set_error(CT_ERR_RUNTIME, "stack expects a non-empty TensorList");
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (ct_check_tensor(ts[i], "stack")) return NULL;
  for (int i = 1; i < n; i++) {
    bool same = ts[i]->ndim == ts[0]->ndim;
    for (int d = 0; same && d < ts[0]->ndim; d++) same = ts[i]->shape[d] == ts[0]->shape[d];
    if (!same) {
      char a[160], b[160];
      ct_set_error(CT_ERR_RUNTIME, "stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d",
                   CT_SHAPE_STR(ts[0], a), CT_SHAPE_STR(ts[i], b), i);
      return NULL;
    }
  }
  if (ts[0]->ndim >= CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "stack: result would have more than %d dims", CT_MAX_DIMS);
    return NULL;
  }
  int64_t d = ct_wrap_dim(dim, ts[0]->ndim + 1);
  if (d < 0) return NULL;
  ct_tensor **u = ct_xcalloc((size_t)n, sizeof *u);
  if (!u) return NULL;
  ct_tensor *r = NULL;
  int i = 0;
  for (; i < n; i++)
    if (!(u[i] = ct_unsqueeze(ts[i], d))) break;
  if (i == n) r = ct_cat(n, (const ct_tensor *const *)u, d);
  for (int j = 0; j < n; j++) ct_release(u[j]);
  free(u);
  if (r && r->grad_fn && n <= CT_MAX_OP_IN) r->grad_fn->name = "StackBackward0";
  return r;
}

/* atleast_{1,2,3}d then cat along dim (hstack's dim depends on the first input). */
static ct_tensor *stack_family(int n, const ct_tensor *const *ts, int atleast, int64_t dim, const char *name) {
  if (n <= 0 || !ts) {
    ct_set_error(CT_ERR_RUNTIME, "%s expects a non-empty TensorList", name);
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (ct_check_tensor(ts[i], name)) return NULL;
  ct_tensor **u = ct_xcalloc((size_t)n, sizeof *u);
  if (!u) return NULL;
  ct_tensor *r = NULL;
  int i = 0;
  for (; i < n; i++) {
    const ct_tensor *t = ts[i];
    int64_t s[3];
    int nd = t->ndim;
    if (nd >= atleast) {
      u[i] = ct_alias(t);
    } else {
      if (atleast == 1) s[0] = 1;
      else if (atleast == 2) { s[0] = 1; s[1] = nd == 1 ? t->shape[0] : 1; }
      else if (nd == 0) { s[0] = 1; s[1] = 1; s[2] = 1; }
      else if (nd == 1) { s[0] = 1; s[1] = t->shape[0]; s[2] = 1; }
      else { s[0] = t->shape[0]; s[1] = t->shape[1]; s[2] = 1; }
      u[i] = ct_reshape(t, atleast, s);
    }
    if (!u[i]) break;
  }
  if (i == n) {
    if (atleast == 1) dim = u[0]->ndim == 1 ? 0 : 1;
    r = ct_cat(n, (const ct_tensor *const *)u, dim);
  }
  for (int j = 0; j < n; j++) ct_release(u[j]);
  free(u);
  return r;
}
ct_tensor *ct_hstack(int n, const ct_tensor *const *ts) { return stack_family(n, ts, 1, 1, "hstack"); }
ct_tensor *ct_vstack(int n, const ct_tensor *const *ts) { return stack_family(n, ts, 2, 0, "vstack"); }
ct_tensor *ct_dstack(int n, const ct_tensor *const *ts) { return stack_family(n, ts, 3, 2, "dstack"); }

/* ---- split family (views) ---- */
/* Narrow pieces of the given sizes along dim into out. */
static ct_status split_pieces(const ct_tensor *t, int64_t dim, int count, const int64_t *sizes, ct_tensor **out,
                              const char *node) {
  int64_t off = 0;
  for (int k = 0; k < count; k++) {
    if (!(out[k] = ct_narrow(t, dim, off, sizes[k]))) return list_fail(out, k);
    if (out[k]->grad_fn) out[k]->grad_fn->name = node;
    ct_mark_multi_view(out[k], k);
    off += sizes[k];
  }
  return CT_OK;
}

ct_status ct_split(const ct_tensor *t, int64_t split_size, int64_t dim, int *n_out, ct_tensor **out, int max_out) {
  CT_TRY(ct_check_tensor(t, "split"));
  if (t->ndim == 0) return CT_ERR(CT_ERR_RUNTIME, "split expects at least a 1-dimensional tensor");
  int64_t d = ct_wrap_dim(dim, t->ndim);
  if (d < 0) return ct_last_status();
  if (split_size < 0)
    return CT_ERR(CT_ERR_RUNTIME, "split expects split_size be non-negative, but got split_size=%lld", (long long)split_size);
  int64_t size = t->shape[d];
  if (split_size == 0 && size != 0)
    return CT_ERR(CT_ERR_RUNTIME, "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                  (long long)size);
  int64_t count = split_size == 0 ? 1 : (size + split_size - 1) / split_size;
  if (count < 1) count = 1;
  if (count > INT32_MAX) return CT_ERR(CT_ERR_RUNTIME, "split: too many pieces");
  ct_status st;
  if (list_room((int)count, n_out, out, max_out, &st)) return st;
  int64_t *sizes = malloc(sizeof(int64_t) * (size_t)count);
  if (!sizes) return CT_ERR(CT_ERR_OOM, "out of memory");
  for (int64_t k = 0; k < count; k++) sizes[k] = size - k * split_size < split_size ? size - k * split_size : split_size;
  st = split_pieces(t, d, (int)count, sizes, out, "SplitBackward0");
  free(sizes);
  return st;
}

ct_status ct_split_sizes(const ct_tensor *t, int n_sizes, const int64_t *sizes, int64_t dim, int *n_out,
                         ct_tensor **out, int max_out) {
  CT_TRY(ct_check_tensor(t, "split_with_sizes"));
  if (t->ndim == 0) return CT_ERR(CT_ERR_RUNTIME, "split expects at least a 1-dimensional tensor");
  if (n_sizes < 0 || (n_sizes > 0 && !sizes)) return CT_ERR(CT_ERR_VALUE, "split_with_sizes: sizes is NULL");
  int64_t d = ct_wrap_dim(dim, t->ndim);
  if (d < 0) return ct_last_status();
  int64_t sum = 0;
  bool neg = false, ovf = false;
  for (int k = 0; k < n_sizes; k++) {
    neg |= sizes[k] < 0;
    ovf |= __builtin_add_overflow(sum, sizes[k], &sum);
  }
  char buf[512];
  if (neg)
    return CT_ERR(CT_ERR_RUNTIME, "split_with_sizes expects split_sizes have only non-negative entries, but got "
                  "split_sizes=%s", ct_shape_str(n_sizes, sizes, buf, sizeof buf));
  if (ovf || sum != t->shape[d])
    return CT_ERR(CT_ERR_RUNTIME, "split_with_sizes expects split_sizes to sum exactly to %lld (input tensor's size at "
                  "dimension %lld), but got split_sizes=%s", (long long)t->shape[d], (long long)d,
                  ct_shape_str(n_sizes, sizes, buf, sizeof buf));
  ct_status st;
  if (list_room(n_sizes, n_out, out, max_out, &st)) return st;
  return split_pieces(t, d, n_sizes, sizes, out, "SplitWithSizesBackward0");
}

ct_status ct_chunk(const ct_tensor *t, int64_t chunks, int64_t dim, int *n_out, ct_tensor **out, int max_out) {
  CT_TRY(ct_check_tensor(t, "chunk"));
  if (t->ndim == 0) return CT_ERR(CT_ERR_RUNTIME, "chunk expects at least a 1-dimensional tensor");
  if (chunks <= 0) return CT_ERR(CT_ERR_RUNTIME, "chunk expects `chunks` to be greater than 0, got: %lld", (long long)chunks);
  int64_t d = ct_wrap_dim(dim, t->ndim);
  if (d < 0) return ct_last_status();
  int64_t size = t->shape[d], split = (size + chunks - 1) / chunks;
  if (split == 0 && size == 0) { /* chunks empty pieces */
    if (chunks > INT32_MAX) return CT_ERR(CT_ERR_RUNTIME, "chunk: too many pieces");
    ct_status st;
    if (list_room((int)chunks, n_out, out, max_out, &st)) return st;
    int64_t *z = ct_xcalloc((size_t)chunks, sizeof *z);
    if (!z) return ct_last_status();
    st = split_pieces(t, d, (int)chunks, z, out, "SplitWithSizesBackward0");
    free(z);
    return st;
  }
  return ct_split(t, split, d, n_out, out, max_out);
}

static ct_status tensor_split_slices(const ct_tensor *t, int64_t d, int count, const int64_t *starts,
                                     const int64_t *ends, int *n_out, ct_tensor **out, int max_out) {
  ct_status st;
  if (list_room(count, n_out, out, max_out, &st)) return st;
  for (int k = 0; k < count; k++)
    if (!(out[k] = ct_slice(t, d, starts[k], ends[k], 1))) return list_fail(out, k);
  return CT_OK;
}

ct_status ct_tensor_split(const ct_tensor *t, int64_t sections, int64_t dim, int *n_out, ct_tensor **out,
                          int max_out) {
  CT_TRY(ct_check_tensor(t, "tensor_split"));
  if (t->ndim == 0)
    return CT_ERR(CT_ERR_RUNTIME, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  if (sections <= 0) return CT_ERR(CT_ERR_RUNTIME, "number of sections must be larger than 0, got %lld", (long long)sections);
  if (sections > INT32_MAX) return CT_ERR(CT_ERR_RUNTIME, "tensor_split: too many sections");
  int64_t d = ct_wrap_dim(dim, t->ndim);
  if (d < 0) return ct_last_status();
  int64_t size = t->shape[d], base = size / sections, extra = size % sections;
  int64_t *se = malloc(sizeof(int64_t) * 2 * (size_t)sections);
  if (!se) return CT_ERR(CT_ERR_OOM, "out of memory");
  int64_t start = 0;
  for (int64_t k = 0; k < sections; k++) {
    int64_t len = base + (k < extra ? 1 : 0);
    se[k] = start;
    se[sections + k] = start + len;
    start += len;
  }
  ct_status st = tensor_split_slices(t, d, (int)sections, se, se + sections, n_out, out, max_out);
  free(se);
  return st;
}

ct_status ct_tensor_split_indices(const ct_tensor *t, int n_idx, const int64_t *indices, int64_t dim, int *n_out,
                                  ct_tensor **out, int max_out) {
  CT_TRY(ct_check_tensor(t, "tensor_split"));
  if (t->ndim == 0)
    return CT_ERR(CT_ERR_RUNTIME, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  if (n_idx < 0 || (n_idx > 0 && !indices)) return CT_ERR(CT_ERR_VALUE, "tensor_split: indices is NULL");
  int64_t d = ct_wrap_dim(dim, t->ndim);
  if (d < 0) return ct_last_status();
  int count = n_idx + 1;
  int64_t *se = malloc(sizeof(int64_t) * 2 * (size_t)count);
  if (!se) return CT_ERR(CT_ERR_OOM, "out of memory");
  int64_t size = t->shape[d];
  for (int k = 0; k < count; k++) {
    se[k] = k == 0 ? 0 : indices[k - 1];
    se[count + k] = k == n_idx ? size : indices[k];
  }
  ct_status st = tensor_split_slices(t, d, count, se, se + count, n_out, out, max_out);
  free(se);
  return st;
}

ct_status ct_unbind(const ct_tensor *t, int64_t dim, int *n_out, ct_tensor **out, int max_out) {
  CT_TRY(ct_check_tensor(t, "unbind"));
  if (t->ndim == 0) return no_dims_error(dim);
  int64_t d = ct_wrap_dim(dim, t->ndim);
  if (d < 0) return ct_last_status();
  if (t->shape[d] > INT32_MAX) return CT_ERR(CT_ERR_RUNTIME, "unbind: too many pieces");
  int count = (int)t->shape[d];
  ct_status st;
  if (list_room(count, n_out, out, max_out, &st)) return st;
  for (int k = 0; k < count; k++) {
    if (!(out[k] = ct_select(t, d, k))) return list_fail(out, k);
    if (out[k]->grad_fn) out[k]->grad_fn->name = "UnbindBackward0";
    ct_mark_multi_view(out[k], k);
  }
  return CT_OK;
}

/* ---- dim maps: flip, roll, repeat, pads ---- */
static ct_tensor *dimmap(int op, const ct_tensor *t, int nd, const int64_t *shape, const ct_attrs *a) {
  ct_tensor *in[1] = {(ct_tensor *)t};
  return ct_dispatch_new(op, 1, in, nd, shape, t->dtype, a);
}

ct_tensor *ct_flip(const ct_tensor *t, int n, const int64_t *dims) {
  if (ct_check_tensor(t, "flip")) return NULL;
  if (n < 0 || (n > 0 && !dims)) { ct_set_error(CT_ERR_VALUE, "flip: dims is NULL"); return NULL; }
  ct_attrs a = ct_attrs_zero();
  uint32_t seen = 0;
  for (int k = 0; k < n; k++) {
    int64_t d = ct_wrap_dim(dims[k], t->ndim);
    if (d < 0) return NULL;
    if (seen & (1u << d)) {
      ct_set_error(CT_ERR_RUNTIME, "dim %lld appears multiple times in the list of dims", (long long)d);
      return NULL;
    }
    seen |= 1u << d;
    if (t->ndim) a.i[2 * d] = 1;
  }
  return dimmap(CT_OP_flip, t, t->ndim, t->shape, &a);
}

ct_status ct_bw_flip(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  gin[0] = dimmap(CT_OP_flip, g[0], g[0]->ndim, g[0]->shape, &n->a);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_roll(const ct_tensor *t, int ns, const int64_t *shifts, int nd, const int64_t *dims) {
  if (ct_check_tensor(t, "roll")) return NULL;
  if (ns < 0 || nd < 0 || (ns && !shifts) || (nd && !dims)) {
    ct_set_error(CT_ERR_VALUE, "roll: shifts/dims is NULL");
    return NULL;
  }
  if (ns == 0) { ct_set_error(CT_ERR_RUNTIME, "`shifts` required"); return NULL; }
  if (nd == 0) {
    if (ns != 1) {
      ct_set_error(CT_ERR_RUNTIME, "shifts and dimensions must align. shifts: %d, dims:%d", ns, nd);
      return NULL;
    }
    /* roll the flattened tensor, then view it back */
    int64_t flat = -1, zero = 0;
    ct_tensor *f = ct_reshape(t, 1, &flat);
    ct_tensor *r = f ? ct_roll(f, 1, shifts, 1, &zero) : NULL;
    ct_release(f);
    if (!r) return NULL;
    ct_tensor *v = ct_view(r, t->ndim, t->shape);
    ct_release(r);
    if (v && v->grad_fn) v->grad_fn->name = "RollBackward0"; /* one op in PyTorch */
    return v;
  }
  if (ns != nd) {
    ct_set_error(CT_ERR_RUNTIME, "shifts and dimensions must align. shifts: %d, dims:%d", ns, nd);
    return NULL;
  }
  if (t->ndim == 0) {
    no_dims_error(dims[0]);
    return NULL;
  }
  ct_attrs a = ct_attrs_zero();
  for (int k = 0; k < nd; k++) {
    int64_t d = ct_wrap_dim(dims[k], t->ndim);
    if (d < 0) return NULL;
    int64_t size = t->shape[d];
    if (size == 0) continue;
    int64_t s = (a.i[2 * d] + shifts[k] % size) % size; /* repeated dims add up */
    a.i[2 * d] = s < 0 ? s + size : s;
  }
  return dimmap(CT_OP_roll, t, t->ndim, t->shape, &a);
}

ct_status ct_bw_roll(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_attrs a = n->a;
  for (int d = 0; d < g[0]->ndim; d++) {
    int64_t size = g[0]->shape[d];
    if (size) a.i[2 * d] = (size - a.i[2 * d]) % size;
  }
  gin[0] = dimmap(CT_OP_roll, g[0], g[0]->ndim, g[0]->shape, &a);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_rot90(const ct_tensor *t, int64_t k, int nd, const int64_t *dims) {
  if (ct_check_tensor(t, "rot90")) return NULL;
  if (nd != 2 || !dims) {
    ct_set_error(CT_ERR_RUNTIME, "expected total rotation dims == 2, but got dims = %d", nd);
    return NULL;
  }
  int total = t->ndim;
  if (total < 2) {
    ct_set_error(CT_ERR_RUNTIME, "expected total dims >= 2, but got total dims = %d", total);
    return NULL;
  }
  if (dims[0] == dims[1] || llabs(dims[0] - dims[1]) == total) {
    ct_set_error(CT_ERR_RUNTIME, "expected rotation dims to be different, but got dim0 = %lld and dim1 = %lld",
                 (long long)dims[0], (long long)dims[1]);
    return NULL;
  }
  if (dims[0] < -total || dims[0] >= total) {
    ct_set_error(CT_ERR_RUNTIME, "Rotation dim0 out of range, dim0 = %lld", (long long)dims[0]);
    return NULL;
  }
  if (dims[1] < -total || dims[1] >= total) {
    ct_set_error(CT_ERR_RUNTIME, "Rotation dim1 out of range, dim1 = %lld", (long long)dims[1]);
    return NULL;
  }
  int64_t d0 = dims[0] < 0 ? dims[0] + total : dims[0], d1 = dims[1] < 0 ? dims[1] + total : dims[1];
  k = ((k % 4) + 4) % 4;
  ct_tensor *r;
  if (k == 0) r = ct_clone(t);
  else if (k == 2) r = ct_flip(t, 2, (const int64_t[]){d0, d1});
  else {
    ct_tensor *f = ct_flip(t, 1, k == 1 ? &d1 : &d0);
    r = f ? ct_transpose(f, d0, d1) : NULL;
    ct_release(f);
  }
  if (r && r->grad_fn) r->grad_fn->name = "Rot90Backward0"; /* one op with its own derivative in PyTorch */
  return r;
}

/* ---- repeat / tile ---- */
ct_tensor *ct_repeat(const ct_tensor *t, int n, const int64_t *reps) {
  if (ct_check_tensor(t, "repeat")) return NULL;
  if (n < 0 || (n > 0 && !reps)) { ct_set_error(CT_ERR_VALUE, "repeat: repeats is NULL"); return NULL; }
  if (n < t->ndim) {
    ct_set_error(CT_ERR_RUNTIME, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
    return NULL;
  }
  if (n > CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "repeat: at most %d dims are supported", CT_MAX_DIMS);
    return NULL;
  }
  int lead = n - t->ndim;
  int64_t xs[CT_MAX_DIMS], os[CT_MAX_DIMS];
  for (int d = 0; d < n; d++) {
    xs[d] = d < lead ? 1 : t->shape[d - lead];
    if (!ct_mul_ok(xs[d], reps[d], &os[d])) { ct_set_error(CT_ERR_RUNTIME, "repeat: size overflow"); return NULL; }
  }
  for (int d = 0; d < n; d++)
    if (os[d] < 0) {
      char b[160];
      ct_set_error(CT_ERR_RUNTIME, "Trying to create tensor with negative dimension %lld: %s", (long long)os[d],
                   ct_shape_str(n, os, b, sizeof b));
      return NULL;
    }
  if (ct_shape_numel(n, os) < 0) return NULL;
  ct_tensor *x = ct_reshape(t, n, xs);
  if (!x) return NULL;
  ct_tensor *r = dimmap(CT_OP_repeat, x, n, os, NULL);
  ct_release(x);
  return r;
}

/* Sum the repeated blocks: along each repeated dim, view [r*s] as [r, s] and sum r. */
ct_status ct_bw_repeat(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  const ct_meta *m = &n->in_meta[0];
  ct_tensor *cur = ct_retain(g[0]);
  for (int d = 0; d < m->ndim && cur; d++) {
    int64_t s = m->shape[d], o = cur->shape[d];
    if (o == s) continue;
    ct_tensor *nx;
    if (s == 1) {
      int64_t dd = d;
      nx = ct_sum_dims(cur, 1, &dd, true);
    } else if (o == 0 || s == 0) {
      int64_t zs[CT_MAX_DIMS];
      memcpy(zs, cur->shape, sizeof(int64_t) * (size_t)cur->ndim);
      zs[d] = s;
      nx = ct_zeros(cur->ndim, zs, ct_opts_dtype(cur->dtype));
    } else if (cur->ndim < CT_MAX_DIMS) {
      int64_t sh[CT_MAX_DIMS], dd = d;
      int k = 0;
      for (int e = 0; e < cur->ndim; e++) {
        if (e == d) { sh[k++] = o / s; sh[k++] = s; }
        else sh[k++] = cur->shape[e];
      }
      ct_tensor *v = ct_reshape(cur, k, sh);
      nx = v ? ct_sum_dims(v, 1, &dd, false) : NULL;
      ct_release(v);
    } else {
      /* no room for the extra dim: a scatter-add through the repeat map */
      ct_attrs a = ct_attrs_zero();
      a.k[0] = 2; /* MAP_REPEAT */
      int64_t zs[CT_MAX_DIMS];
      memcpy(zs, cur->shape, sizeof(int64_t) * (size_t)cur->ndim);
      zs[d] = s;
      nx = dimmap(CT_OP_pad_backward, cur, cur->ndim, zs, &a);
    }
    ct_release(cur);
    cur = nx;
  }
  if (!cur) return ct_last_status();
  gin[0] = cur;
  return CT_OK;
}

ct_tensor *ct_tile(const ct_tensor *t, int n, const int64_t *reps) {
  if (ct_check_tensor(t, "tile")) return NULL;
  if (n < 0 || (n > 0 && !reps)) { ct_set_error(CT_ERR_VALUE, "tile: reps is NULL"); return NULL; }
  if (n >= t->ndim) return ct_repeat(t, n, reps);
  int64_t r[CT_MAX_DIMS];
  int lead = t->ndim - n;
  for (int d = 0; d < t->ndim; d++) r[d] = d < lead ? 1 : reps[d - lead];
  return ct_repeat(t, t->ndim, r);
}

/* ---- repeat_interleave ---- */
ct_tensor *ct_repeat_interleave_tensor(const ct_tensor *t, const ct_tensor *repeats, int64_t dim) {
  if (ct_check_tensor(t, "repeat_interleave") || ct_check_tensor(repeats, "repeat_interleave")) return NULL;
  if (!ct_dtype_is_integral(repeats->dtype, false)) {
    ct_set_error(CT_ERR_RUNTIME, "\"repeat_interleave_cpu\" not implemented for '%s'", ct_dtype_torch_name(repeats->dtype));
    return NULL;
  }
  if (repeats->ndim > 1) {
    ct_set_error(CT_ERR_RUNTIME, "repeats must be 0-dim or 1-dim tensor");
    return NULL;
  }
  ct_tensor *x;
  int64_t d;
  if (dim == CT_NO_DIM) {
    int64_t flat = -1;
    x = ct_reshape(t, 1, &flat);
    d = 0;
  } else {
    /* PyTorch 1.13 reads input.size(dim), which refuses any dim of a 0-dim tensor */
    if (t->ndim == 0) {
      no_dims_error(dim);
      return NULL;
    }
    d = ct_wrap_dim(dim, t->ndim);
    if (d < 0) return NULL;
    x = ct_retain((ct_tensor *)t);
  }
  if (!x) return NULL;
  int64_t size = x->shape[d], nr = ct_numel(repeats);
  ct_tensor *r = NULL;
  int64_t *rv = NULL;
  if (nr != 1 && nr != size) {
    ct_set_error(CT_ERR_RUNTIME, "repeats must have the same size as input along dim");
    goto done;
  }
  rv = malloc(sizeof(int64_t) * (size_t)(size + 1));
  if (!rv) { ct_set_error(CT_ERR_OOM, "out of memory"); goto done; }
  if (nr == 1) {
    int64_t v;
    if (ct_item_int64(repeats, &v)) goto done;
    for (int64_t k = 0; k < size; k++) rv[k] = v;
    if (size == 0 && v < 0) { ct_set_error(CT_ERR_RUNTIME, "repeats can not be negative"); goto done; }
  } else if (ct_copy_to_buffer(repeats, rv, CT_INT64, nr)) {
    goto done;
  }
  int64_t total = 0;
  for (int64_t k = 0; k < size; k++) {
    if (rv[k] < 0) { ct_set_error(CT_ERR_RUNTIME, "repeats can not be negative"); goto done; }
    if (__builtin_add_overflow(total, rv[k], &total)) { ct_set_error(CT_ERR_RUNTIME, "repeat_interleave: size overflow"); goto done; }
  }
  {
    /* the repeats go where x is: the op's kernels take both inputs on one device */
    ct_options ro = ct_opts_dtype(CT_INT64);
    ro.device = x->storage->device;
    ct_tensor *rt = ct_from_buffer(rv, CT_INT64, 1, &size, ro);
    if (!rt) goto done;
    int64_t os[CT_MAX_DIMS];
    memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    os[d] = total;
    ct_attrs a = ct_attrs_zero();
    a.k[1] = d;
    ct_tensor *in[2] = {x, rt};
    r = ct_dispatch_new(CT_OP_repeat_interleave, 2, in, x->ndim, os, x->dtype, &a);
    if (r && r->grad_fn) r->grad_fn->name = "IndexSelectBackward0";
    ct_release(rt);
  }
done:
  free(rv);
  ct_release(x);
  return r;
}

ct_tensor *ct_repeat_interleave(const ct_tensor *t, int64_t repeats, int64_t dim) {
  if (ct_check_tensor(t, "repeat_interleave")) return NULL;
  if (repeats < 0) {
    ct_set_error(CT_ERR_RUNTIME, "repeats can not be negative");
    return NULL;
  }
  ct_tensor *r = ct_scalar_tensor(ct_si(repeats), ct_opts_dtype(CT_INT64));
  if (!r) return NULL;
  ct_tensor *o = ct_repeat_interleave_tensor(t, r, dim);
  ct_release(r);
  return o;
}

ct_tensor *ct_repeat_interleave_index(const ct_tensor *repeats) {
  if (ct_check_tensor(repeats, "repeat_interleave")) return NULL;
  if (repeats->ndim != 1) {
    ct_set_error(CT_ERR_RUNTIME, "repeat_interleave only accept 1D vector as repeat");
    return NULL;
  }
  if (!ct_dtype_is_integral(repeats->dtype, false)) {
    ct_set_error(CT_ERR_RUNTIME, "repeats has to be Long or Int tensor");
    return NULL;
  }
  ct_options o = ct_opts_dtype(repeats->dtype);
  ct_tensor *ar = ct_arange(ct_si(0), ct_si(repeats->shape[0]), ct_si(1), &o);
  ct_tensor *r = ar ? ct_repeat_interleave_tensor(ar, repeats, 0) : NULL;
  ct_release(ar);
  return r;
}

static ct_tensor *ri_backward(const ct_tensor *g, ct_tensor *rep, const ct_attrs *a, const ct_meta *m) {
  ct_tensor *in[2] = {(ct_tensor *)g, rep};
  return ct_dispatch_new(CT_OP_repeat_interleave_backward, 2, in, m->ndim, m->shape, g->dtype, a);
}

ct_status ct_bw_repeat_interleave(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *rep = ct_node_saved_in(n, 1);
  if (!rep) return ct_last_status();
  gin[0] = ri_backward(g[0], rep, &n->a, &n->in_meta[0]);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_status ct_bw_repeat_interleave_backward(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *rep = ct_node_saved_in(n, 1);
  if (!rep) return ct_last_status();
  ct_tensor *in[2] = {g[0], rep};
  gin[0] = ct_dispatch_new(CT_OP_repeat_interleave, 2, in, n->in_meta[0].ndim, n->in_meta[0].shape, g[0]->dtype, &n->a);
  return gin[0] ? CT_OK : ct_last_status();
}

/* ---- tril / triu ---- */
static ct_tensor *tri(int op, const ct_tensor *t, int64_t k) {
  const char *name = op == CT_OP_tril ? "tril" : "triu";
  if (ct_check_tensor(t, name)) return NULL;
  if (t->ndim < 2) {
    if (t->ndim == 0) no_dims_error(-2);
    else ct_wrap_dim(-2, t->ndim);
    return NULL;
  }
  ct_attrs a = ct_attrs_zero();
  a.k[0] = k;
  return dimmap(op, t, t->ndim, t->shape, &a);
}
ct_tensor *ct_tril(const ct_tensor *t, int64_t k) { return tri(CT_OP_tril, t, k); }
ct_tensor *ct_triu(const ct_tensor *t, int64_t k) { return tri(CT_OP_triu, t, k); }

static ct_status tri_(int op, ct_tensor *t, int64_t k) {
  CT_TRY(ct_check_tensor(t, op == CT_OP_tril ? "tril_" : "triu_"));
  CT_TRY(ct_check_inplace_overlap_ok(t)); /* PyTorch 1.13 writes through an expanded tensor */
  ct_tensor *r = tri(op, t, k);
  if (!r) return ct_last_status();
  if (ct_has_internal_overlap(t) && !(ct_grad_mode_recording() && ct_tensor_requires_grad(t))) {
    /* zero in place where the other triangle is, so a location is zeroed when any of its aliases is */
    ct_release(r);
    ct_options o = ct_opts_dtype(CT_BOOL);
    o.device = t->storage->device;
    ct_tensor *ones = ct_ones(t->ndim, t->shape, o);
    ct_tensor *m = ones ? tri(op == CT_OP_tril ? CT_OP_triu : CT_OP_tril, ones, op == CT_OP_tril ? k + 1 : k - 1) : NULL;
    ct_status st = m ? ct_fill_where_overlapping_(t, m, ct_si(0)) : ct_last_status();
    ct_release(m);
    ct_release(ones);
    return st;
  }
  ct_status st = ct_write_result_inplace(t, r);
  ct_release(r);
  return st;
}
ct_status ct_tril_(ct_tensor *t, int64_t k) { return tri_(CT_OP_tril, t, k); }
ct_status ct_triu_(ct_tensor *t, int64_t k) { return tri_(CT_OP_triu, t, k); }

ct_status ct_bw_tri(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  gin[0] = tri(n->op, g[0], n->a.k[0]);
  return gin[0] ? CT_OK : ct_last_status();
}

/* ---- pad ---- */
/* attrs for a pad: per-dim (left, right) with pad[] given last dim first. */
static ct_attrs pad_attrs(int nd, int npad, const int64_t *pad) {
  ct_attrs a = ct_attrs_zero();
  for (int k = 0; k < npad / 2; k++) {
    int d = nd - 1 - k;
    a.i[2 * d] = pad[2 * k];
    a.i[2 * d + 1] = pad[2 * k + 1];
  }
  return a;
}

static ct_tensor *constant_pad(const ct_tensor *t, const ct_attrs *a, ct_scalar value) {
  int64_t os[CT_MAX_DIMS];
  bool all_nonpos = true;
  for (int d = 0; d < t->ndim; d++) all_nonpos &= a->i[2 * d] <= 0 && a->i[2 * d + 1] <= 0;
  for (int d = 0; d < t->ndim; d++) {
    int64_t l = a->i[2 * d], r = a->i[2 * d + 1], s = t->shape[d];
    os[d] = s + l + r;
    if (all_nonpos) {
      /* PyTorch narrows: first by the left pad, then by the right */
      if (s + l < 0) {
        ct_set_error(CT_ERR_INDEX, "start out of range (expected to be in range of [%lld, %lld], but got %lld)",
                     (long long)-s, (long long)s, (long long)-l);
        return NULL;
      }
      if (os[d] < 0) {
        ct_set_error(CT_ERR_RUNTIME, "start (0) + length (%lld) exceeds dimension size (%lld).", (long long)os[d],
                     (long long)(s + l));
        return NULL;
      }
    } else if (os[d] <= 0 && (l != 0 || r != 0)) {
      ct_set_error(CT_ERR_RUNTIME, "The input size %lld, plus negative padding %lld and %lld resulted in a negative "
                   "output size, which is invalid. Check dimension %d of your input.", (long long)s, (long long)l,
                   (long long)r, d);
      return NULL;
    }
  }
  ct_attrs at = *a;
  at.s[0] = value;
  return dimmap(CT_OP_constant_pad_nd, t, t->ndim, os, &at);
}

ct_status ct_bw_constant_pad(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  /* padding by the negated amounts crops the padding off (and zero-fills what was cropped) */
  ct_attrs a = ct_attrs_zero();
  const ct_meta *m = &n->in_meta[0];
  for (int d = 0; d < m->ndim; d++) {
    a.i[2 * d] = -n->a.i[2 * d];
    a.i[2 * d + 1] = -n->a.i[2 * d + 1];
  }
  a.s[0] = ct_si(0);
  gin[0] = dimmap(CT_OP_constant_pad_nd, g[0], m->ndim, m->shape, &a);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_pad(const ct_tensor *t, int npad, const int64_t *pad, const char *mode, double value) {
  if (ct_check_tensor(t, "pad")) return NULL;
  if (npad < 0 || (npad > 0 && !pad)) { ct_set_error(CT_ERR_VALUE, "pad: pad is NULL"); return NULL; }
  if (npad % 2) { ct_set_error(CT_ERR_RUNTIME, "Padding length must be divisible by 2"); return NULL; }
  if (npad / 2 > t->ndim) { ct_set_error(CT_ERR_RUNTIME, "Padding length too large"); return NULL; }
  ct_attrs a = pad_attrs(t->ndim, npad, pad);
  if (!mode || !strcmp(mode, "constant")) {
    ct_scalar v = ct_dtype_is_floating(t->dtype) ? ct_sf(value) : ct_si((int64_t)value);
    if (t->dtype == CT_BOOL) v = ct_sb(value != 0);
    return constant_pad(t, &a, v);
  }
  int op, k = npad / 2;
  const char *node;
  if (!strcmp(mode, "reflect")) op = CT_OP_reflection_pad;
  else if (!strcmp(mode, "replicate")) op = CT_OP_replication_pad;
  else if (!strcmp(mode, "circular")) op = CT_OP_circular_pad;
  else {
    ct_set_error(CT_ERR_NOT_IMPLEMENTED, "Unrecognised padding mode %s", mode);
    return NULL;
  }
  if (value != 0) {
    ct_set_error(CT_ERR_RUNTIME, "Padding mode \"%s\" doesn't take in value argument", mode);
    return NULL;
  }
  if (op == CT_OP_circular_pad) {
    if (t->ndim < 2 || npad != 2 * (t->ndim - 2)) {
      ct_set_error(CT_ERR_RUNTIME, "Invalid padding size, expected %d but got %d", 2 * (t->ndim - 2), npad);
      return NULL;
    }
    for (int d = t->ndim - k; d < t->ndim; d++)
      if (a.i[2 * d] > t->shape[d] || a.i[2 * d + 1] > t->shape[d]) {
        ct_set_error(CT_ERR_RUNTIME, "Padding value causes wrapping around more than once.");
        return NULL;
      }
    node = "CopySlices"; /* PyTorch 1.13 pads circularly by in-place copies into slices */
  } else {
    if (k < 1 || k > 3 || (t->ndim != k + 1 && t->ndim != k + 2)) {
      ct_set_error(CT_ERR_NOT_IMPLEMENTED, "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
      return NULL;
    }
    if (!ct_dtype_is_floating(t->dtype)) {
      if (op == CT_OP_reflection_pad)
        ct_set_error(CT_ERR_RUNTIME, "\"reflection_pad%dd\" not implemented for '%s'", k, ct_dtype_torch_name(t->dtype));
      else
        ct_set_error(CT_ERR_RUNTIME, "\"replication_pad%dd_cpu\" not implemented for '%s'", k, ct_dtype_torch_name(t->dtype));
      return NULL;
    }
    static const char *names[2][3] = {{"ReflectionPad1DBackward0", "ReflectionPad2DBackward0", "ReflectionPad3DBackward0"},
                                      {"ReplicationPad1DBackward0", "ReplicationPad2DBackward0", "ReplicationPad3DBackward0"}};
    node = names[op == CT_OP_reflection_pad ? 0 : 1][k - 1];
    if (op == CT_OP_reflection_pad)
      for (int d = t->ndim - k; d < t->ndim; d++)
        if (a.i[2 * d] >= t->shape[d] || a.i[2 * d + 1] >= t->shape[d]) {
          char b[160];
          ct_set_error(CT_ERR_RUNTIME, "Argument #%d: Padding size should be less than the corresponding input dimension, "
                       "but got: padding (%lld, %lld) at dimension %d of input %s", 2 + 2 * k, (long long)a.i[2 * d],
                       (long long)a.i[2 * d + 1], d, CT_SHAPE_STR(t, b));
          return NULL;
        }
  }
  int64_t os[CT_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) {
    os[d] = t->shape[d] + a.i[2 * d] + a.i[2 * d + 1];
    if (os[d] < 0 || (os[d] == 0 && t->shape[d] != 0 && d >= t->ndim - k)) {
      char b[160];
      ct_set_error(CT_ERR_RUNTIME, "input tensor %s is too small for padding (%lld, %lld) at dimension %d: the output "
                   "would have size %lld", CT_SHAPE_STR(t, b), (long long)a.i[2 * d], (long long)a.i[2 * d + 1], d,
                   (long long)os[d]);
      return NULL;
    }
    if (os[d] > 0 && t->shape[d] == 0) {
      char b[160];
      ct_set_error(CT_ERR_RUNTIME, "cannot pad an empty dimension %d of input %s with mode '%s'", d, CT_SHAPE_STR(t, b), mode);
      return NULL;
    }
  }
  ct_tensor *r = dimmap(op, t, t->ndim, os, &a);
  if (r && r->grad_fn) r->grad_fn->name = node;
  return r;
}

static int pad_mode_of(int op) {
  return op == CT_OP_reflection_pad ? 4 : op == CT_OP_replication_pad ? 5 : 6;
}

ct_status ct_bw_pad_scatter(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_attrs a = n->a;
  a.k[0] = pad_mode_of(n->op);
  const ct_meta *m = &n->in_meta[0];
  gin[0] = dimmap(CT_OP_pad_backward, g[0], m->ndim, m->shape, &a);
  return gin[0] ? CT_OK : ct_last_status();
}

/* the backward of a scatter-add is the gather it undoes */
ct_status ct_bw_pad_backward(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  int op = n->a.k[0] == 4 ? CT_OP_reflection_pad : n->a.k[0] == 5 ? CT_OP_replication_pad
         : n->a.k[0] == 6 ? CT_OP_circular_pad : CT_OP_repeat;
  const ct_meta *m = &n->in_meta[0];
  gin[0] = dimmap(op, g[0], m->ndim, m->shape, &n->a);
  return gin[0] ? CT_OK : ct_last_status();
}

/* ---- meshgrid / broadcast_tensors (expanded views) ---- */
ct_status ct_meshgrid(int n, const ct_tensor *const *ts, const char *indexing, int *n_out, ct_tensor **out,
                      int max_out) {
  if (n <= 0 || !ts) return CT_ERR(CT_ERR_RUNTIME, "meshgrid expects a non-empty TensorList");
  for (int i = 0; i < n; i++) CT_TRY(ct_check_tensor(ts[i], "meshgrid"));
  if (!indexing) indexing = "ij";
  bool xy = !strcmp(indexing, "xy");
  if (!xy && strcmp(indexing, "ij"))
    return CT_ERR(CT_ERR_RUNTIME, "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: %s", indexing);
  for (int i = 0; i < n; i++)
    if (ts[i]->ndim > 1)
      return CT_ERR(CT_ERR_RUNTIME, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a %d-D tensor",
                    ts[i]->ndim);
  for (int i = 1; i < n; i++)
    if (ts[i]->dtype != ts[0]->dtype) return CT_ERR(CT_ERR_RUNTIME, "meshgrid expects all tensors to have the same dtype");
  if (n > CT_MAX_DIMS) return CT_ERR(CT_ERR_RUNTIME, "meshgrid: at most %d tensors", CT_MAX_DIMS);
  ct_status st;
  if (list_room(n, n_out, out, max_out, &st)) return st;
  /* 'xy' is 'ij' with the first two inputs swapped, and the first two outputs swapped back */
  int order[CT_MAX_DIMS];
  for (int i = 0; i < n; i++) order[i] = i;
  if (xy && n >= 2) { order[0] = 1; order[1] = 0; }
  int64_t shape[CT_MAX_DIMS];
  for (int i = 0; i < n; i++) shape[i] = ct_numel(ts[order[i]]);
  for (int i = 0; i < n; i++) {
    const ct_tensor *t = ts[order[i]];
    int64_t vs[CT_MAX_DIMS];
    for (int d = 0; d < n; d++) vs[d] = d == i ? -1 : 1;
    ct_tensor *v = ct_reshape(t, n, vs);
    ct_tensor *e = v ? ct_expand(v, n, shape) : NULL;
    ct_release(v);
    int slot = order[i];
    if (!e) {
      for (int j = 0; j < i; j++) { ct_release(out[order[j]]); out[order[j]] = NULL; }
      return ct_last_status();
    }
    out[slot] = e;
  }
  return CT_OK;
}

ct_status ct_broadcast_tensors(int n, const ct_tensor *const *ts, int *n_out, ct_tensor **out, int max_out) {
  if (n < 0 || (n > 0 && !ts)) return CT_ERR(CT_ERR_VALUE, "broadcast_tensors: tensors is NULL");
  for (int i = 0; i < n; i++) CT_TRY(ct_check_tensor(ts[i], "broadcast_tensors"));
  int nd = 0;
  int64_t shape[CT_MAX_DIMS];
  for (int i = 0; i < n; i++) CT_TRY(ct_broadcast_shapes(nd, shape, ts[i]->ndim, ts[i]->shape, &nd, shape));
  ct_status st;
  if (list_room(n, n_out, out, max_out, &st)) return st;
  for (int i = 0; i < n; i++)
    if (!(out[i] = ct_expand(ts[i], nd, shape))) return list_fail(out, i);
  return CT_OK;
}
