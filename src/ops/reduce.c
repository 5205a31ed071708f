/* Reductions: sum and mean, the dims machinery, and sum_to_size. */
#include "reduce_util.h"

ct_status ct_dims_to_mask(const ct_tensor *t, int n, const int64_t *dims, uint32_t *mask) {
  *mask = 0;
  if (n == 0 || !dims) {
    *mask = t->ndim ? (1u << t->ndim) - 1 : 0;
    return CT_OK;
  }
  for (int k = 0; k < n; k++) {
    int64_t d = ct_wrap_dim(dims[k], t->ndim);
    if (d < 0) return ct_last_status();
    if (t->ndim == 0) continue;
    if (*mask & (1u << d))
      return CT_ERR(CT_ERR_RUNTIME, "dim %lld appears multiple times in the list of dims", (long long)d);
    *mask |= 1u << d;
  }
  return CT_OK;
}

void ct_reduced_shape(const ct_tensor *t, uint32_t mask, bool keepdim, int *nd, int64_t *shape) {
  *nd = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (mask & (1u << d)) {
      if (keepdim) shape[(*nd)++] = 1;
    } else shape[(*nd)++] = t->shape[d];
  }
}

ct_tensor *ct_unsqueeze_mask(const ct_tensor *g, uint32_t mask, int in_ndim) {
  int64_t shape[CT_MAX_DIMS];
  int k = 0;
  for (int d = 0; d < in_ndim; d++) shape[d] = (mask & (1u << d)) ? 1 : g->shape[k++];
  ct_tensor *c = ct_contiguous(g);
  if (!c) return NULL;
  ct_tensor *r = ct_view(c, in_ndim, shape);
  ct_release(c);
  return r;
}

ct_tensor *ct_expand_reduced_grad(const ct_tensor *g, uint32_t mask, bool keepdim, const ct_meta *m) {
  ct_tensor *u = keepdim ? ct_retain((ct_tensor *)g) : ct_unsqueeze_mask(g, mask, m->ndim);
  if (!u) return NULL;
  ct_tensor *e = ct_expand(u, m->ndim, m->shape);
  ct_release(u);
  return e;
}

static ct_tensor *reduce_op(int op, const ct_tensor *t, int n, const int64_t *dims, bool keepdim, ct_dtype out_dt,
                            const ct_attrs *extra) {
  uint32_t mask;
  if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
  int nd;
  int64_t shape[CT_MAX_DIMS];
  ct_reduced_shape(t, mask, keepdim, &nd, shape);
  ct_tensor *x = ct_to_dtype(t, out_dt);
  if (!x) return NULL;
  ct_tensor *out = ct_tensor_new(nd, shape, out_dt, t->storage->device);
  if (out) {
    ct_call c = ct_call_make(op);
    c.n_in = 1;
    c.n_out = 1;
    c.in[0] = x;
    c.out[0] = out;
    if (extra) c.a = *extra;
    c.a.k[0] = mask;
    c.a.k[1] = keepdim;
    if (ct_dispatch(&c) != CT_OK) {
      ct_release(out);
      out = NULL;
    }
  }
  ct_release(x);
  return out;
}

ct_tensor *ct_sum_dtype(const ct_tensor *t, int n, const int64_t *dims, bool keepdim, int dtype) {
  if (ct_check_tensor(t, "sum")) return NULL;
  ct_dtype dt = (ct_dtype)dtype;
  if (dtype < 0) dt = ct_dtype_is_integral(t->dtype, true) ? CT_INT64 : t->dtype;
  else if (!ct_dtype_valid(dtype)) {
    ct_set_error(CT_ERR_TYPE, "invalid dtype %d", dtype);
    return NULL;
  }
  return reduce_op(CT_OP_sum, t, n, dims, keepdim, dt, NULL);
}
ct_tensor *ct_sum_dims(const ct_tensor *t, int n, const int64_t *dims, bool keepdim) {
  return ct_sum_dtype(t, n, dims, keepdim, -1);
}
ct_tensor *ct_sum(const ct_tensor *t) { return ct_sum_dtype(t, 0, NULL, false, -1); }

ct_status ct_bw_sum(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  gin[0] = ct_expand_reduced_grad(g[0], (uint32_t)n->a.k[0], n->a.k[1] != 0, &n->in_meta[0]);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_mean_dims(const ct_tensor *t, int n, const int64_t *dims, bool keepdim) {
  if (ct_check_tensor(t, "mean")) return NULL;
  if (!ct_dtype_is_floating(t->dtype)) {
    ct_set_error(CT_ERR_RUNTIME, "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                 "complex dtype. Got: %s", ct_dtype_torch_name(t->dtype));
    return NULL;
  }
  uint32_t mask;
  if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
  int64_t count = 1;
  for (int d = 0; d < t->ndim; d++)
    if (mask & (1u << d)) count *= t->shape[d];
  ct_tensor *s = ct_sum_dims(t, n, dims, keepdim);
  if (!s) return NULL;
  ct_tensor *r = ct_div_scalar(s, ct_sf((double)count));
  ct_release(s);
  if (r && r->grad_fn) r->grad_fn->name = "MeanBackward1";
  return r;
}
ct_tensor *ct_mean(const ct_tensor *t) { return ct_mean_dims(t, 0, NULL, false); }

ct_tensor *ct_sum_to_size(const ct_tensor *t, int ndim, const int64_t *shape) {
  if (ct_check_tensor(t, "sum_to_size")) return NULL;
  if (ndim > t->ndim) goto bad;
  int lead = t->ndim - ndim;
  int64_t dims[CT_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (d < lead) dims[nd++] = d;
    else if (shape[d - lead] == 1 && t->shape[d] != 1) dims[nd++] = d;
    else if (shape[d - lead] != t->shape[d]) goto bad;
  }
  if (nd == 0) return ct_retain((ct_tensor *)t);
  {
    ct_tensor *s = ct_sum_dims(t, nd, dims, true);
    if (!s) return NULL;
    ct_tensor *r = ct_view(s, ndim, shape);
    ct_release(s);
    return r;
  }
bad:;
  char a[160], b[160];
  ct_set_error(CT_ERR_RUNTIME, "size {%s} is not expandable to size {%s}.", ct_shape_str(ndim, shape, a, sizeof a),
               CT_SHAPE_STR(t, b));
  return NULL;
}

ct_tensor *ct_grad_sum_to(const ct_tensor *g, const ct_meta *m) {
  bool same = g->ndim == m->ndim;
  for (int d = 0; same && d < m->ndim; d++) same = g->shape[d] == m->shape[d];
  if (same) return ct_retain((ct_tensor *)g);
  return ct_sum_to_size(g, m->ndim, m->shape);
}
