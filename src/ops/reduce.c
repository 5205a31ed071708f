/* Reductions and sort-like ops: entry points and derivative formulas side by side.
 * Multi-dim reductions run ct_cpu_reduce-style kernels over a bit mask of dims
 * (attrs k0 = mask, k1 = keepdim); ops along one dim (scans, sorts, selections)
 * take k2 = dim, k3 = a flag, k4 = k. Backward formulas call public ops plus a few
 * private ops of this family (reduce_scatter_grad / reduce_gather for the
 * value-selecting ops, reduce_tie_mask, prod_excl, cumprod_grad, reduce_div_nz),
 * each with its own derivative so double backward works. */
#include "reduce_util.h"
#include "autocast.h"
#include <math.h>
#include <stdio.h>

/* ---- dims machinery ------------------------------------------------------------------ */
ct_status ct_dims_to_mask(const ct_tensor *t, int n, const int64_t *dims, uint32_t *mask) {
  *mask = 0;
  if (n < 0 || n > CT_MAX_DIMS) return CT_ERR(CT_ERR_RUNTIME, "expected at most %d dims, got %d", CT_MAX_DIMS, n);
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

/* A reduced tensor (the result or gradient of a reduction) with its dims restored to
 * size 1 (keepdim form), without expanding. */
static ct_tensor *restore_dims(const ct_tensor *g, uint32_t mask, bool keepdim, int in_ndim) {
  return keepdim ? ct_retain((ct_tensor *)g) : ct_unsqueeze_mask(g, mask, in_ndim);
}

/* "\"prod_cpu\" not implemented for 'Half'": PyTorch 1.13's CPU kernels lack some dtypes. */
static bool refuse_dtype(const ct_tensor *t, const char *kernel, bool no_half, bool no_bf16, bool no_bool) {
  if ((no_half && t->dtype == CT_FLOAT16) || (no_bf16 && t->dtype == CT_BFLOAT16) || (no_bool && t->dtype == CT_BOOL)) {
    ct_set_error(CT_ERR_RUNTIME, "\"%s\" not implemented for '%s'", kernel, ct_dtype_torch_name(t->dtype));
    return true;
  }
  return false;
}

/* Runs a mask reduction of x into n_out new outputs of the reduced shape. */
static ct_status run_red(int op, const ct_tensor *x, uint32_t mask, bool keepdim, int n_out, const ct_dtype *odt,
                         const ct_attrs *extra, ct_tensor **outs) {
  int nd;
  int64_t shape[CT_MAX_DIMS];
  ct_reduced_shape(x, mask, keepdim, &nd, shape);
  ct_call c = ct_call_make(op);
  c.n_in = 1;
  c.n_out = n_out;
  c.in[0] = (ct_tensor *)x;
  if (extra) c.a = *extra;
  c.a.k[0] = mask;
  c.a.k[1] = keepdim;
  ct_status st = ct_dispatch_alloc(&c, nd, shape, odt);
  for (int j = 0; j < n_out; j++) outs[j] = c.out[j];
  return st;
}

/* One-output reduction over dims; casts the input to in_dt first (sum(dtype=) semantics). */
static ct_tensor *reduce1(int op, const ct_tensor *t, uint32_t mask, bool keepdim, ct_dtype in_dt, ct_dtype out_dt,
                          const ct_attrs *extra) {
  ct_tensor *x = ct_to_dtype(t, in_dt);
  if (!x) return NULL;
  ct_tensor *out = NULL;
  run_red(op, x, mask, keepdim, 1, &out_dt, extra, &out);
  ct_release(x);
  return out;
}

static uint32_t full_mask(const ct_tensor *t) { return t->ndim ? (1u << t->ndim) - 1 : 0; }

static int resolve_dtype(int dtype, ct_dtype dflt, ct_dtype *out) {
  if (dtype < 0) {
    *out = dflt;
    return 0;
  }
  if (!ct_dtype_valid(dtype)) {
    ct_set_error(CT_ERR_TYPE, "invalid dtype %d", dtype);
    return -1;
  }
  *out = (ct_dtype)dtype;
  return 0;
}

/* ---- sum / mean ---------------------------------------------------------------------- */
ct_tensor *ct_sum_dtype(const ct_tensor *t, int n, const int64_t *dims, bool keepdim, int dtype) {
  if (ct_check_tensor(t, "sum")) return NULL;
  ct_dtype dt;
  if (resolve_dtype(dtype, ct_dtype_is_integral(t->dtype, true) ? CT_INT64 : t->dtype, &dt)) return NULL;
  uint32_t mask;
  if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
  ct_tensor *r = reduce1(CT_OP_sum, t, mask, keepdim, dt, dt, NULL);
  if (n > 0 && dims) ct_name_node(r, "SumBackward1");
  return r;
}
ct_tensor *ct_sum_dims(const ct_tensor *t, int n, const int64_t *dims, bool keepdim) {
  return ct_sum_dtype(t, n, dims, keepdim, -1);
}
ct_tensor *ct_sum(const ct_tensor *t) { return ct_sum_dtype(t, 0, NULL, false, -1); }

ct_status ct_bw_sum(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  gin[0] = ct_expand_reduced_grad(g[0], (uint32_t)n->a.k[0], n->a.k[1] != 0, &n->in_meta[0]);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_mean_dtype(const ct_tensor *t, int n, const int64_t *dims, bool keepdim, int dtype) {
  if (ct_check_tensor(t, "mean")) return NULL;
  ct_dtype dt;
  if (resolve_dtype(dtype, t->dtype, &dt)) return NULL;
  if (!ct_dtype_is_floating(dt)) {
    if (dtype < 0)
      ct_set_error(CT_ERR_RUNTIME, "mean(): could not infer output dtype. Input dtype must be either a floating point "
                   "or complex dtype. Got: %s", ct_dtype_torch_name(t->dtype));
    else
      ct_set_error(CT_ERR_RUNTIME, "mean(): could not infer output dtype. Optional dtype must be either a floating "
                   "point or complex dtype. Got: %s", ct_dtype_torch_name(dt));
    return NULL;
  }
  uint32_t mask;
  if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
  int64_t count = 1;
  for (int d = 0; d < t->ndim; d++)
    if (mask & (1u << d)) count *= t->shape[d];
  ct_tensor *s = ct_sum_dtype(t, n, dims, keepdim, (int)dt);
  if (!s) return NULL;
  ct_tensor *r = ct_div_scalar(s, ct_sf((double)count));
  ct_release(s);
  ct_name_node(r, n > 0 && dims ? "MeanBackward1" : "MeanBackward0");
  return r;
}
ct_tensor *ct_mean_dims(const ct_tensor *t, int n, const int64_t *dims, bool keepdim) {
  return ct_mean_dtype(t, n, dims, keepdim, -1);
}
ct_tensor *ct_mean(const ct_tensor *t) { return ct_mean_dims(t, 0, NULL, false); }

ct_tensor *ct_sum_to_size(const ct_tensor *t, int ndim, const int64_t *shape) {
  if (ct_check_tensor(t, "sum_to_size")) return NULL;
  if (ndim < 0 || ndim > t->ndim || (ndim > 0 && !shape)) goto bad;
  int lead = t->ndim - ndim;
  int64_t dims[CT_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (d < lead) dims[nd++] = d;
    else if (shape[d - lead] == 1 && t->shape[d] != 1) dims[nd++] = d;
    else if (shape[d - lead] != t->shape[d]) goto bad;
  }
  if (nd == 0) return ct_same(t);
  {
    ct_tensor *s = ct_sum_dims(t, nd, dims, true);
    if (!s || lead == 0) return s; /* kept dims are the shape already: no view, as in PyTorch */
    ct_tensor *r = ct_view(s, ndim, shape);
    ct_release(s);
    return r;
  }
bad:;
  char a[160], b[160];
  ct_set_error(CT_ERR_RUNTIME, "size {%s} is not expandable to size {%s}.",
               shape ? ct_shape_str(ndim, shape, a, sizeof a) : "?", CT_SHAPE_STR(t, b));
  return NULL;
}

ct_tensor *ct_grad_sum_to(const ct_tensor *g, const ct_meta *m) {
  bool same = g->ndim == m->ndim;
  for (int d = 0; same && d < m->ndim; d++) same = g->shape[d] == m->shape[d];
  if (same) return ct_retain((ct_tensor *)g);
  return ct_sum_to_size(g, m->ndim, m->shape);
}

/* ---- private ops of the backward formulas ------------------------------------------------- */
/* Runs an op along dim d over the inputs into n_out new outputs of one shape. */
static ct_status run_dim(int op, int n_in, ct_tensor *const *in, int64_t d, int n_out, int nd, const int64_t *shape,
                         const ct_dtype *odt, const ct_attrs *extra, ct_tensor **outs) {
  ct_call c = ct_call_make(op);
  c.n_in = n_in;
  c.n_out = n_out;
  for (int i = 0; i < n_in; i++) c.in[i] = in[i];
  if (extra) c.a = *extra;
  c.a.k[2] = d;
  ct_status st = ct_dispatch_alloc(&c, nd, shape, odt);
  for (int j = 0; j < n_out; j++) outs[j] = c.out[j];
  return st;
}
static ct_tensor *dim1(int op, int n_in, ct_tensor *const *in, int64_t d, int nd, const int64_t *shape, ct_dtype odt,
                       const ct_attrs *extra) {
  ct_tensor *out = NULL;
  run_dim(op, n_in, in, d, 1, nd, shape, &odt, extra, &out);
  return out;
}

/* zeros of `shape` with g added at idx along dim d (g and idx have one shape, equal to `shape` but along d) */
static ct_tensor *scatter_grad(const ct_tensor *g, const ct_tensor *idx, int64_t d, int nd, const int64_t *shape) {
  ct_tensor *in[2] = {(ct_tensor *)g, (ct_tensor *)idx};
  return dim1(CT_OP_reduce_scatter_grad, 2, in, d, nd, shape, g->dtype, NULL);
}
static ct_tensor *gather_along(const ct_tensor *x, const ct_tensor *idx, int64_t d) {
  ct_tensor *in[2] = {(ct_tensor *)x, (ct_tensor *)idx};
  return dim1(CT_OP_reduce_gather, 2, in, d, idx->ndim, idx->shape, x->dtype, NULL);
}
ct_status ct_bw_reduce_scatter_grad(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_in(n, 1);
  if (!idx) return ct_last_status();
  gin[0] = gather_along(g[0], idx, n->a.k[2]);
  return gin[0] ? CT_OK : ct_last_status();
}
ct_status ct_bw_reduce_gather(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_in(n, 1);
  if (!idx) return ct_last_status();
  gin[0] = scatter_grad(g[0], idx, n->a.k[2], n->in_meta[0].ndim, n->in_meta[0].shape);
  return gin[0] ? CT_OK : ct_last_status();
}

/* 1 where x equals r (r broadcast to x's shape), in x's dtype; nan_mode: NaN matches NaN */
static ct_tensor *tie_mask(const ct_tensor *x, const ct_tensor *r, bool nan_mode) {
  ct_tensor *re = ct_expand(r, x->ndim, x->shape);
  if (!re) return NULL;
  ct_tensor *out = ct_tensor_new(x->ndim, x->shape, x->dtype, x->storage->device);
  if (out) {
    ct_call c = ct_call_make(CT_OP_reduce_tie_mask);
    c.n_in = 2;
    c.n_out = 1;
    c.in[0] = (ct_tensor *)x;
    c.in[1] = re;
    c.out[0] = out;
    c.a.k[3] = nan_mode;
    if (ct_dispatch(&c) != CT_OK) {
      ct_release(out);
      out = NULL;
    }
  }
  ct_release(re);
  return out;
}

/* a / b, 0 where b == 0 (PyTorch's masked_fill_(b == 0, 0) after a division); b broadcast to a */
static ct_tensor *div_nz(const ct_tensor *a, const ct_tensor *b) {
  ct_tensor *be = ct_expand(b, a->ndim, a->shape), *bc = be ? ct_to_dtype(be, a->dtype) : NULL;
  ct_release(be);
  if (!bc) return NULL;
  ct_tensor *out = ct_tensor_new(a->ndim, a->shape, a->dtype, a->storage->device);
  if (out) {
    ct_call c = ct_call_make(CT_OP_reduce_div_nz);
    c.n_in = 2;
    c.n_out = 1;
    c.in[0] = (ct_tensor *)a;
    c.in[1] = bc;
    c.out[0] = out;
    if (ct_dispatch(&c) != CT_OK) {
      ct_release(out);
      out = NULL;
    }
  }
  ct_release(bc);
  return out;
}
ct_status ct_bw_reduce_div_nz(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *b = ct_node_saved_in(n, 1);
  if (!b) return ct_last_status();
  if (ct_node_needs_grad(n, 0) && !(gin[0] = div_nz(g[0], b))) return ct_last_status();
  if (ct_node_needs_grad(n, 1)) { /* -g * (a/b) / b */
    ct_tensor *o = ct_node_saved_out(n, 0);
    if (!o) return ct_last_status();
    ct_tensor *t1 = ct_mul(g[0], o), *t2 = t1 ? div_nz(t1, b) : NULL;
    gin[1] = t2 ? ct_neg(t2) : NULL;
    ct_release(t1);
    ct_release(t2);
    if (!gin[1]) return ct_last_status();
  }
  return CT_OK;
}

/* sign(x)^s * |x|^e (s = signed), 0 where x == 0 if zero0: the pieces of the norm gradients.
 * d/dx = e * spow(x, e - 1, !signed): a family closed under differentiation. */
static ct_tensor *spow(const ct_tensor *x, double e, bool sgn, bool zero0) {
  ct_attrs a = ct_attrs_zero();
  a.f[0] = e;
  a.k[3] = sgn;
  a.k[4] = zero0;
  ct_tensor *out = ct_tensor_new(x->ndim, x->shape, x->dtype, x->storage->device);
  if (!out) return NULL;
  ct_call c = ct_call_make(CT_OP_reduce_spow);
  c.n_in = 1;
  c.n_out = 1;
  c.in[0] = (ct_tensor *)x;
  c.out[0] = out;
  c.a = a;
  if (ct_dispatch(&c) != CT_OK) {
    ct_release(out);
    return NULL;
  }
  return out;
}
ct_status ct_bw_reduce_spow(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0);
  if (!x) return ct_last_status();
  double e = n->a.f[0];
  if (e == 0) {
    gin[0] = ct_zeros_like(x, NULL);
    return gin[0] ? CT_OK : ct_last_status();
  }
  ct_tensor *d = spow(x, e - 1, !n->a.k[3], n->a.k[4] != 0), *d2 = d ? ct_mul_scalar(d, ct_sf(e)) : NULL;
  gin[0] = d2 ? ct_mul(g[0], d2) : NULL;
  ct_release(d);
  ct_release(d2);
  return gin[0] ? CT_OK : ct_last_status();
}

static int mask_dims(uint32_t mask, int ndim, int64_t *dims) {
  int n = 0;
  for (int d = 0; d < ndim; d++)
    if (mask & (1u << d)) dims[n++] = d;
  return n;
}
/* sum over the mask's dims, keepdim */
static ct_tensor *sum_mask_keep(const ct_tensor *t, uint32_t mask) {
  int64_t dims[CT_MAX_DIMS];
  int n = mask_dims(mask, t->ndim, dims);
  if (n == 0) return ct_retain((ct_tensor *)t);
  return ct_sum_dims(t, n, dims, true);
}

/* ---- prod ---------------------------------------------------------------------------------- */
ct_tensor *ct_prod_dtype(const ct_tensor *t, const int64_t *dim, bool keepdim, int dtype) {
  if (ct_check_tensor(t, "prod")) return NULL;
  ct_dtype dt;
  if (resolve_dtype(dtype, ct_dtype_is_integral(t->dtype, true) ? CT_INT64 : t->dtype, &dt)) return NULL;
  uint32_t mask = full_mask(t);
  if (dim) {
    int64_t d = ct_wrap_dim(*dim, t->ndim);
    if (d < 0) return NULL;
    mask = t->ndim ? 1u << d : 0;
  }
  if (dt == CT_FLOAT16 || dt == CT_BFLOAT16) {
    ct_set_error(CT_ERR_RUNTIME, "\"prod_cpu\" not implemented for '%s'", ct_dtype_torch_name(dt));
    return NULL;
  }
  ct_tensor *r = reduce1(CT_OP_prod, t, mask, dim ? keepdim : false, dt, dt, NULL);
  ct_name_node(r, dim ? "ProdBackward1" : "ProdBackward0");
  return r;
}
ct_tensor *ct_prod(const ct_tensor *t) { return ct_prod_dtype(t, NULL, false, -1); }
ct_tensor *ct_prod_dim(const ct_tensor *t, int64_t dim, bool keepdim) { return ct_prod_dtype(t, &dim, keepdim, -1); }

ct_status ct_bw_prod_excl(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0);
  if (!x) return ct_last_status();
  ct_tensor *in[2] = {x, g[0]};
  gin[0] = dim1(CT_OP_prod_excl_grad, 2, in, n->a.k[2], x->ndim, x->shape, x->dtype, NULL);
  return gin[0] ? CT_OK : ct_last_status();
}

/* product of the other elements along d (of x flattened when flat) */
static ct_tensor *prod_others(const ct_tensor *x, int64_t d, bool flat) {
  if (!flat) {
    ct_tensor *in[1] = {(ct_tensor *)x};
    return dim1(CT_OP_prod_excl, 1, in, d, x->ndim, x->shape, x->dtype, NULL);
  }
  int64_t m1 = -1;
  ct_tensor *f = ct_reshape(x, 1, &m1);
  if (!f) return NULL;
  ct_tensor *in[1] = {f};
  ct_tensor *p = dim1(CT_OP_prod_excl, 1, in, 0, 1, f->shape, x->dtype, NULL);
  ct_release(f);
  if (!p) return NULL;
  ct_tensor *r = ct_view(p, x->ndim, x->shape);
  ct_release(p);
  return r;
}

static int64_t count_zeros(const ct_tensor *x) {
  ct_tensor *nz = ct_count_nonzero(x, 0, NULL);
  if (!nz) return -1;
  int64_t v = 0;
  ct_status st = ct_item_int64(nz, &v);
  ct_release(nz);
  return st == CT_OK ? ct_numel(x) - v : -1;
}

ct_status ct_bw_prod(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *r = ct_node_saved_out(n, 0);
  if (!x || !r) return ct_last_status();
  uint32_t mask = (uint32_t)n->a.k[0];
  bool keep = n->a.k[1] != 0;
  if (x->ndim == 0) {
    gin[0] = ct_retain(g[0]);
    return CT_OK;
  }
  int64_t zeros = count_zeros(x);
  if (zeros < 0) return ct_last_status();
  ct_tensor *gk = restore_dims(g[0], mask, keep, x->ndim);
  if (!gk) return ct_last_status();
  if (zeros == 0) { /* grad * (result / input), as PyTorch */
    ct_tensor *rk = restore_dims(r, mask, keep, x->ndim), *q = rk ? ct_div(rk, x) : NULL;
    gin[0] = q ? ct_mul(gk, q) : NULL;
    ct_release(rk);
    ct_release(q);
  } else { /* exact with zeros: the product of the other elements */
    int nd = __builtin_popcount(mask);
    int64_t d = nd == 1 ? __builtin_ctz(mask) : 0;
    bool flat = nd != 1;
    ct_tensor *p = prod_others(x, d, flat);
    gin[0] = p ? ct_mul(gk, p) : NULL;
    ct_release(p);
  }
  ct_release(gk);
  return gin[0] ? CT_OK : ct_last_status();
}

/* ---- amax / amin / max / min ------------------------------------------------------------- */
static ct_status check_nonempty_dims(const ct_tensor *t, const char *who, int n, const int64_t *dims, bool as_given) {
  if (t->ndim == 0) return CT_OK;
  for (int k = 0; k < n; k++) {
    int64_t d = ct_wrap_dim(dims[k], t->ndim);
    if (d < 0) return ct_last_status();
    if (t->shape[d] == 0)
      return CT_ERR(CT_ERR_INDEX, "%s(): Expected reduction dim %lld to have non-zero size.", who,
                    (long long)(as_given ? dims[k] : d));
  }
  return CT_OK;
}

static ct_tensor *amax_impl(int op, const char *who, const ct_tensor *t, int n, const int64_t *dims, bool keepdim) {
  if (ct_check_tensor(t, who)) return NULL;
  uint32_t mask;
  if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
  if (ct_numel(t) == 0) {
    if (n == 0 || !dims) {
      ct_set_error(CT_ERR_RUNTIME, "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                   "reduction dim with the 'dim' argument.", who);
      return NULL;
    }
    if (check_nonempty_dims(t, who, n, dims, true)) return NULL;
  }
  return reduce1(op, t, mask, keepdim, t->dtype, t->dtype, NULL);
}
ct_tensor *ct_amax(const ct_tensor *t, int n, const int64_t *dims, bool keepdim) {
  return amax_impl(CT_OP_amax, "amax", t, n, dims, keepdim);
}
ct_tensor *ct_amin(const ct_tensor *t, int n, const int64_t *dims, bool keepdim) {
  return amax_impl(CT_OP_amin, "amin", t, n, dims, keepdim);
}

/* amax/amin: (grad / count of ties) * ties */
ct_status ct_bw_amax(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *r = ct_node_saved_out(n, 0);
  if (!x || !r) return ct_last_status();
  uint32_t mask = (uint32_t)n->a.k[0];
  bool keep = n->a.k[1] != 0;
  ct_tensor *rk = restore_dims(r, mask, keep, x->ndim), *gk = restore_dims(g[0], mask, keep, x->ndim);
  ct_tensor *m = rk ? tie_mask(x, rk, false) : NULL, *cnt = m ? sum_mask_keep(m, mask) : NULL;
  ct_tensor *q = (cnt && gk) ? ct_div(gk, cnt) : NULL;
  gin[0] = q ? ct_mul(q, m) : NULL;
  ct_release(rk);
  ct_release(gk);
  ct_release(m);
  ct_release(cnt);
  ct_release(q);
  return gin[0] ? CT_OK : ct_last_status();
}

/* max() / min() / median() / nanmedian() of all elements: the gradient is split evenly
 * among the elements equal to the result (the NaNs when the result is NaN) */
ct_status ct_bw_evenly(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *r = ct_node_saved_out(n, 0);
  if (!x || !r) return ct_last_status();
  ct_tensor *m = tie_mask(x, r, true), *cnt = m ? ct_sum(m) : NULL;
  ct_tensor *q = cnt ? ct_div(g[0], cnt) : NULL;
  gin[0] = q ? ct_mul(m, q) : NULL;
  ct_release(m);
  ct_release(cnt);
  ct_release(q);
  return gin[0] ? CT_OK : ct_last_status();
}

static ct_tensor *full_extreme(int op, const char *who, const char *grad_name, const ct_tensor *t) {
  if (ct_check_tensor(t, who)) return NULL;
  if (ct_numel(t) == 0) {
    ct_set_error(CT_ERR_RUNTIME, "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                 "reduction dim with the 'dim' argument.", who);
    return NULL;
  }
  ct_tensor *r = reduce1(op, t, full_mask(t), false, t->dtype, t->dtype, NULL);
  ct_name_node(r, grad_name);
  return r;
}
ct_tensor *ct_max(const ct_tensor *t) { return full_extreme(CT_OP_max, "max", "MaxBackward1", t); }
ct_tensor *ct_min(const ct_tensor *t) { return full_extreme(CT_OP_min, "min", "MinBackward1", t); }

/* values + indices along one dim (max, min): checks shared with kthvalue/median/mode */
static ct_status dim_reduce_check(const ct_tensor *t, const char *who, int64_t dim, int64_t *d, ct_tensor **v,
                                  ct_tensor **i) {
  CT_TRY(ct_check_tensor(t, who));
  if (!v || !i) return CT_ERR(CT_ERR_VALUE, "%s: output pointers must not be NULL", who);
  *v = *i = NULL;
  *d = ct_wrap_dim(dim, t->ndim);
  if (*d < 0) return ct_last_status();
  if (t->ndim > 0 && t->shape[*d] == 0)
    return CT_ERR(CT_ERR_INDEX, "%s(): Expected reduction dim %lld to have non-zero size.", who, (long long)*d);
  return CT_OK;
}

static ct_status max_dim_impl(int op, const char *who, const char *grad_name, const ct_tensor *t, int64_t dim,
                              bool keepdim, ct_tensor **values, ct_tensor **indices) {
  int64_t d;
  CT_TRY(dim_reduce_check(t, who, dim, &d, values, indices));
  ct_attrs a = ct_attrs_zero();
  a.k[2] = d;
  ct_dtype odt[2] = {t->dtype, CT_INT64};
  ct_tensor *outs[2];
  CT_TRY(run_red(op, t, t->ndim ? 1u << d : 0, keepdim, 2, odt, &a, outs));
  ct_name_node(outs[0], grad_name);
  *values = outs[0];
  *indices = outs[1];
  return CT_OK;
}
ct_status ct_max_dim(const ct_tensor *t, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices) {
  return max_dim_impl(CT_OP_max_dim, "max", "MaxBackward0", t, dim, keepdim, values, indices);
}
ct_status ct_min_dim(const ct_tensor *t, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices) {
  return max_dim_impl(CT_OP_min_dim, "min", "MinBackward0", t, dim, keepdim, values, indices);
}

/* value-selecting ops: the gradient goes to the selected indices (scatter-added, so repeated
 * indices as in cummax accumulate). k1 = keepdim for the ops that drop the dim. */
ct_status ct_bw_select_dim(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_out(n, 1);
  if (!idx) return ct_last_status();
  const ct_meta *m = &n->in_meta[0];
  int64_t d = n->a.k[2];
  bool drops = n->op == CT_OP_max_dim || n->op == CT_OP_min_dim || n->op == CT_OP_kthvalue ||
               n->op == CT_OP_median_dim || n->op == CT_OP_nanmedian_dim || n->op == CT_OP_mode;
  ct_tensor *gk, *ik;
  if (drops && !n->a.k[1] && m->ndim > 0) {
    gk = ct_unsqueeze(g[0], d);
    ik = ct_unsqueeze(idx, d);
  } else {
    gk = ct_retain(g[0]);
    ik = ct_retain(idx);
  }
  gin[0] = (gk && ik) ? scatter_grad(gk, ik, d, m->ndim, m->shape) : NULL;
  ct_release(gk);
  ct_release(ik);
  return gin[0] ? CT_OK : ct_last_status();
}
ct_status ct_bw_cumext(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return ct_bw_select_dim(n, g, gin); }

/* ---- argmax / argmin ------------------------------------------------------------------- */
static ct_tensor *arg_impl(int op, const char *who, const ct_tensor *t, const int64_t *dim, bool keepdim) {
  if (ct_check_tensor(t, who)) return NULL;
  char kn[32];
  snprintf(kn, sizeof kn, "%s_cpu", who);
  uint32_t mask = full_mask(t);
  if (dim) {
    int64_t d = ct_wrap_dim(*dim, t->ndim);
    if (d < 0) return NULL;
    if (t->ndim > 0 && t->shape[d] == 0) {
      ct_set_error(CT_ERR_INDEX, "%s(): Expected reduction dim %lld to have non-zero size.", who, (long long)d);
      return NULL;
    }
    mask = t->ndim ? 1u << d : 0;
  } else if (ct_numel(t) == 0) {
    ct_set_error(CT_ERR_INDEX, "%s(): Expected reduction dim to be specified for input.numel() == 0.", who);
    return NULL;
  }
  /* PyTorch checks the dim and the empty reduction before the dtype, and an empty result needs no kernel */
  if (ct_numel(t) != 0 && refuse_dtype(t, kn, false, false, true)) return NULL;
  return reduce1(op, t, mask, keepdim, t->dtype, CT_INT64, NULL);
}
ct_tensor *ct_argmax(const ct_tensor *t, const int64_t *dim, bool keepdim) {
  return arg_impl(CT_OP_argmax, "argmax", t, dim, keepdim);
}
ct_tensor *ct_argmin(const ct_tensor *t, const int64_t *dim, bool keepdim) {
  return arg_impl(CT_OP_argmin, "argmin", t, dim, keepdim);
}

/* ---- all / any / count_nonzero ---------------------------------------------------------------- */
static ct_tensor *allany(int op, const char *who, const ct_tensor *t, int n, const int64_t *dims, bool keepdim) {
  if (ct_check_tensor(t, who)) return NULL;
  uint32_t mask;
  if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
  ct_dtype odt = t->dtype == CT_UINT8 ? CT_UINT8 : CT_BOOL; /* PyTorch 1.13 keeps uint8 */
  return reduce1(op, t, mask, keepdim, t->dtype, odt, NULL);
}
ct_tensor *ct_all(const ct_tensor *t) { return allany(CT_OP_all, "all", t, 0, NULL, false); }
ct_tensor *ct_any(const ct_tensor *t) { return allany(CT_OP_any, "any", t, 0, NULL, false); }
ct_tensor *ct_all_dim(const ct_tensor *t, int64_t dim, bool keepdim) { return allany(CT_OP_all, "all", t, 1, &dim, keepdim); }
ct_tensor *ct_any_dim(const ct_tensor *t, int64_t dim, bool keepdim) { return allany(CT_OP_any, "any", t, 1, &dim, keepdim); }
ct_tensor *ct_all_dims(const ct_tensor *t, int n, const int64_t *dims, bool keepdim) {
  return allany(CT_OP_all, "all", t, n, dims, keepdim);
}
ct_tensor *ct_any_dims(const ct_tensor *t, int n, const int64_t *dims, bool keepdim) {
  return allany(CT_OP_any, "any", t, n, dims, keepdim);
}
ct_tensor *ct_count_nonzero(const ct_tensor *t, int n, const int64_t *dims) {
  if (ct_check_tensor(t, "count_nonzero")) return NULL;
  uint32_t mask;
  if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
  return reduce1(CT_OP_count_nonzero, t, mask, false, t->dtype, CT_INT64, NULL);
}

/* ---- var / std ----------------------------------------------------------------------------------- */
static ct_tensor *varstd(int op, const char *msg_who, const ct_tensor *t, int n, const int64_t *dims, double correction,
                         bool keepdim) {
  if (ct_check_tensor(t, msg_who)) return NULL;
  if (!ct_dtype_is_floating(t->dtype)) {
    ct_set_error(CT_ERR_RUNTIME, "%s only support floating point and complex dtypes", msg_who);
    return NULL;
  }
  uint32_t mask;
  if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
  ct_attrs a = ct_attrs_zero();
  a.f[0] = correction;
  return reduce1(op, t, mask, keepdim, t->dtype, t->dtype, &a);
}
ct_tensor *ct_var(const ct_tensor *t, int n, const int64_t *dims, double correction, bool keepdim) {
  return varstd(CT_OP_var, "std and var", t, n, dims, correction, keepdim);
}
ct_tensor *ct_std(const ct_tensor *t, int n, const int64_t *dims, double correction, bool keepdim) {
  return varstd(CT_OP_std, "std and var", t, n, dims, correction, keepdim);
}
ct_tensor *ct_var_unbiased(const ct_tensor *t, int n, const int64_t *dims, bool unbiased, bool keepdim) {
  return ct_var(t, n, dims, unbiased ? 1.0 : 0.0, keepdim);
}
ct_tensor *ct_std_unbiased(const ct_tensor *t, int n, const int64_t *dims, bool unbiased, bool keepdim) {
  return ct_std(t, n, dims, unbiased ? 1.0 : 0.0, keepdim);
}
static ct_status varstd_mean(int op, const char *who, const ct_tensor *t, int n, const int64_t *dims, double correction,
                             bool keepdim, ct_tensor **v, ct_tensor **mean) {
  CT_TRY(ct_check_tensor(t, who));
  if (!v || !mean) return CT_ERR(CT_ERR_VALUE, "%s: output pointers must not be NULL", who);
  *v = *mean = NULL;
  char msg[64];
  snprintf(msg, sizeof msg, "%s", who);
  if (!(*v = varstd(op, msg, t, n, dims, correction, keepdim))) return ct_last_status();
  if (!(*mean = ct_mean_dims(t, n, dims, keepdim))) {
    ct_release(*v);
    *v = NULL;
    return ct_last_status();
  }
  return CT_OK;
}
ct_status ct_var_mean(const ct_tensor *t, int n, const int64_t *dims, double correction, bool keepdim, ct_tensor **var,
                      ct_tensor **mean) {
  return varstd_mean(CT_OP_var, "var_mean", t, n, dims, correction, keepdim, var, mean);
}
ct_status ct_std_mean(const ct_tensor *t, int n, const int64_t *dims, double correction, bool keepdim, ct_tensor **std,
                      ct_tensor **mean) {
  return varstd_mean(CT_OP_std, "std_mean", t, n, dims, correction, keepdim, std, mean);
}

/* (2 / (N - correction)) * grad * (x - mean(x)), grad in keepdim form */
static ct_tensor *var_grad(const ct_tensor *gk, const ct_tensor *x, uint32_t mask, double correction) {
  int64_t dims[CT_MAX_DIMS], count = 1;
  int nd = mask_dims(mask, x->ndim, dims);
  for (int k = 0; k < nd; k++) count *= x->shape[dims[k]];
  double dof = (double)count - correction;
  if (x->ndim == 0 && dof == 0) /* PyTorch's 0-dim path gives grad * 2/0 = +-inf here, not NaN */
    return ct_mul_scalar(gk, ct_sf(2.0 / dof));
  ct_tensor *mu = nd ? ct_mean_dims(x, nd, dims, true) : ct_mean(x);
  ct_tensor *dev = mu ? ct_sub(x, mu) : NULL;
  ct_tensor *s = ct_mul_scalar(gk, ct_sf(2.0 / dof));
  ct_tensor *r = (dev && s) ? ct_mul(s, dev) : NULL;
  ct_release(mu);
  ct_release(dev);
  ct_release(s);
  return r;
}
ct_status ct_bw_var(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0);
  if (!x) return ct_last_status();
  uint32_t mask = (uint32_t)n->a.k[0];
  ct_tensor *gk = restore_dims(g[0], mask, n->a.k[1] != 0, x->ndim);
  gin[0] = gk ? var_grad(gk, x, mask, n->a.f[0]) : NULL;
  ct_release(gk);
  return gin[0] ? CT_OK : ct_last_status();
}
/* var_backward(grad / (2 * std), 0 where std == 0) */
ct_status ct_bw_std(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *r = ct_node_saved_out(n, 0);
  if (!x || !r) return ct_last_status();
  uint32_t mask = (uint32_t)n->a.k[0];
  ct_tensor *r2 = ct_mul_scalar(r, ct_si(2)), *h = r2 ? div_nz(g[0], r2) : NULL;
  ct_tensor *hk = h ? restore_dims(h, mask, n->a.k[1] != 0, x->ndim) : NULL;
  gin[0] = hk ? var_grad(hk, x, mask, n->a.f[0]) : NULL;
  ct_release(r2);
  ct_release(h);
  ct_release(hk);
  return gin[0] ? CT_OK : ct_last_status();
}

/* ---- norm ------------------------------------------------------------------------------------------ */
static ct_tensor *norm_run(const ct_tensor *t, double p, uint32_t mask, bool keepdim, ct_dtype dt, const char *name) {
  ct_attrs a = ct_attrs_zero();
  a.f[0] = p;
  ct_tensor *r = reduce1(CT_OP_norm, t, mask, keepdim, dt, dt, &a);
  ct_name_node(r, name);
  return r;
}
ct_tensor *ct_norm(const ct_tensor *t, double p, int n, const int64_t *dims, bool keepdim) {
  if (ct_check_tensor(t, "norm")) return NULL;
  if (!ct_dtype_is_floating(t->dtype)) {
    ct_set_error(CT_ERR_RUNTIME, "norm(): input dtype should be either floating point or complex. Got %s instead.",
                 ct_dtype_torch_name(t->dtype));
    return NULL;
  }
  uint32_t mask;
  if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
  return norm_run(t, p, mask, keepdim, t->dtype, "NormBackward1");
}
ct_tensor *ct_norm_str(const ct_tensor *t, const char *p, int n, const int64_t *dims, bool keepdim) {
  if (ct_check_tensor(t, "norm")) return NULL;
  if (!p) p = "fro";
  if (!strcmp(p, "fro")) {
    if (n > 2) {
      ct_set_error(CT_ERR_RUNTIME, "Expected at most 2 dimensions, but got %d dimensions instead.", n);
      return NULL;
    }
    if (n == 2 && dims) {
      int64_t a = ct_wrap_dim(dims[0], t->ndim), b = ct_wrap_dim(dims[1], t->ndim);
      if (a < 0 || b < 0) return NULL;
      if (a == b) {
        ct_set_error(CT_ERR_RUNTIME, "Expected dims to be different, got [%lld, %lld] instead", (long long)dims[0],
                     (long long)dims[1]);
        return NULL;
      }
    }
    return ct_norm(t, 2.0, n, dims, keepdim);
  }
  if (!strcmp(p, "nuc")) {
    ct_set_error(CT_ERR_NOT_IMPLEMENTED, "norm(p='nuc') needs a singular value decomposition; use the linalg family");
    return NULL;
  }
  ct_set_error(CT_ERR_RUNTIME, "only valid string values are 'fro' and 'nuc', found %s", p);
  return NULL;
}
ct_tensor *ct_vector_norm(const ct_tensor *t, double ord, int n, const int64_t *dims, bool keepdim, int dtype) {
  if (ct_check_tensor(t, "linalg.vector_norm")) return NULL;
  if (!ct_dtype_is_floating(t->dtype)) {
    ct_set_error(CT_ERR_RUNTIME, "linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s",
                 ct_dtype_torch_name(t->dtype));
    return NULL;
  }
  ct_dtype dt = t->dtype;
  if (dtype >= 0) {
    if (resolve_dtype(dtype, t->dtype, &dt)) return NULL;
    if (!ct_dtype_is_floating(dt)) {
      ct_set_error(CT_ERR_RUNTIME, "linalg.vector_norm: dtype should be floating point or complex, but got %s",
                   ct_dtype_torch_name(dt));
      return NULL;
    }
    if (ct_promote_types(t->dtype, dt) != dt) {
      ct_set_error(CT_ERR_RUNTIME, "linalg.vector_norm: the dtype of the input (%s) should be convertible without "
                   "narrowing to the specified dtype (%s)", ct_dtype_torch_name(t->dtype), ct_dtype_torch_name(dt));
      return NULL;
    }
  }
  uint32_t mask;
  if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
  if (isinf(ord) && ct_numel(t) == 0) {
    const char *w = ord > 0 ? "inf" : "-inf";
    if (n == 0 || !dims) {
      ct_set_error(CT_ERR_RUNTIME, "linalg.vector_norm cannot compute the %s norm on an empty tensor because the "
                   "operation does not have an identity", w);
      return NULL;
    }
    for (int k = 0; k < n; k++) {
      int64_t d = ct_wrap_dim(dims[k], t->ndim);
      if (t->ndim && t->shape[d] == 0) {
        ct_set_error(CT_ERR_RUNTIME, "linalg.vector_norm cannot compute the %s norm on the dimension %lld"
                     "because this dimension is empty and the operation does not have an identity", w, (long long)d);
        return NULL;
      }
    }
  }
  return norm_run(t, ord, mask, keepdim, dt, "LinalgVectorNormBackward0");
}

ct_status ct_bw_norm(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *r = ct_node_saved_out(n, 0);
  if (!x || !r) return ct_last_status();
  uint32_t mask = (uint32_t)n->a.k[0];
  bool keep = n->a.k[1] != 0;
  double p = n->a.f[0];
  if (p == 0) {
    gin[0] = ct_zeros_like(x, NULL);
    return gin[0] ? CT_OK : ct_last_status();
  }
  ct_tensor *gk = restore_dims(g[0], mask, keep, x->ndim), *rk = restore_dims(r, mask, keep, x->ndim);
  ct_tensor *res = NULL;
  if (!gk || !rk) goto done;
  if (p == 1) { /* sgn(x) * grad */
    ct_tensor *s = spow(x, 0, true, true);
    res = s ? ct_mul(s, gk) : NULL;
    ct_release(s);
  } else if (p == 2) { /* grad * (x / norm), 0 where norm == 0 */
    ct_tensor *q = div_nz(x, rk);
    res = q ? ct_mul(gk, q) : NULL;
    ct_release(q);
  } else if (isinf(p)) { /* sgn(x) * (grad / count) * (|x| == norm or NaN) */
    ct_tensor *ax = spow(x, 1, false, false), *m = ax ? tie_mask(ax, rk, true) : NULL;
    ct_tensor *cnt = m ? sum_mask_keep(m, mask) : NULL, *q = cnt ? ct_div(gk, cnt) : NULL;
    ct_tensor *qm = q ? ct_mul(q, m) : NULL, *s = qm ? spow(x, 0, true, true) : NULL;
    res = s ? ct_mul(s, qm) : NULL;
    ct_release(ax);
    ct_release(m);
    ct_release(cnt);
    ct_release(q);
    ct_release(qm);
    ct_release(s);
  } else if (p < 1) { /* sgn(x)|x|^(p-1) (0 at x == 0) * grad * norm^(1-p) */
    ct_tensor *ss = spow(x, p - 1, true, true), *np = spow(rk, 1 - p, false, false);
    ct_tensor *t1 = ss ? ct_mul(ss, gk) : NULL;
    res = (t1 && np) ? ct_mul(t1, np) : NULL;
    ct_release(ss);
    ct_release(np);
    ct_release(t1);
  } else { /* sgn(x)|x|^(p-1) * (grad / norm^(p-1), 0 where norm == 0) */
    ct_tensor *ss = spow(x, p - 1, true, false), *np = spow(rk, p - 1, false, false);
    ct_tensor *sv = np ? div_nz(gk, np) : NULL;
    res = (ss && sv) ? ct_mul(ss, sv) : NULL;
    ct_release(ss);
    ct_release(np);
    ct_release(sv);
  }
done:
  ct_release(gk);
  ct_release(rk);
  gin[0] = res;
  return res ? CT_OK : ct_last_status();
}

/* ---- logsumexp -------------------------------------------------------------------------------------- */
ct_tensor *ct_logsumexp(const ct_tensor *t, int n, const int64_t *dims, bool keepdim) {
  if (ct_check_tensor(t, "logsumexp")) return NULL;
  ct_tensor *up; /* bf16 autocast's float32 list (autocast.h) */
  if (ct_autocast_lse_direct(t, n, dims)) {
    /* contiguous bfloat16 CUDA rows reduced over the last dim: read as they are, float32 result
     * (the GPT loss's 50257-wide logits: no float32 copy; the backward writes a bfloat16 gradient) */
    uint32_t mask;
    if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
    return reduce1(CT_OP_logsumexp, t, mask, keepdim, t->dtype, CT_FLOAT32, NULL);
  }
  if (ct_autocast_upcast(t, &up)) {
    ct_tensor *r = up ? ct_logsumexp(up, n, dims, keepdim) : NULL;
    ct_release(up);
    return r;
  }
  if (refuse_dtype(t, "exp_vml_cpu", true, false, false)) return NULL;
  uint32_t mask;
  if (ct_dims_to_mask(t, n, dims, &mask)) return NULL;
  ct_dtype dt = ct_dtype_is_floating(t->dtype) ? t->dtype : ct_get_default_dtype();
  return reduce1(CT_OP_logsumexp, t, mask, keepdim, dt, dt, NULL);
}
/* CUDA, float32 (or bfloat16 with a float32 result: autocast's direct logsumexp), the last dim:
 * grad * exp(x - result) in one pass (cross_entropy_fused_backward with no targets, k_fast.cu)
 * instead of sub, exp and mul, three passes over the GPT loss's 50257-wide logits; the gradient has
 * x's dtype. NULL (error cleared) where it does not apply; with grad mode on the composed form
 * (double backward). */
static ct_tensor *lse_bw_cuda(const ct_tensor *x, const ct_tensor *g, const ct_tensor *r, uint32_t mask) {
  if (x->storage->device.type != CT_DEVICE_CUDA || ct_is_grad_enabled() || x->ndim < 1 ||
      (x->dtype != CT_FLOAT32 && x->dtype != CT_BFLOAT16) || mask != 1u << (x->ndim - 1) || g->dtype != CT_FLOAT32 ||
      r->dtype != CT_FLOAT32 || !ct_is_contiguous(x) || ct_numel(x) == 0)
    return NULL;
  ct_call c = ct_call_make(CT_OP_cross_entropy_fused_backward);
  c.n_in = 6;
  c.n_out = 1;
  c.in[0] = ct_contiguous(g);
  c.in[1] = (ct_tensor *)x;
  c.in[4] = c.in[0] ? ct_contiguous(r) : NULL;
  c.a.k[0] = CT_REDUCTION_NONE;
  c.a.k[2] = 1; /* no targets: logsumexp's backward */
  c.out[0] = c.in[4] ? ct_tensor_new(x->ndim, x->shape, x->dtype, x->storage->device) : NULL;
  ct_status st = c.out[0] ? ct_run_kernel(&c) : ct_last_status();
  ct_release(c.in[0]);
  ct_release(c.in[4]);
  if (st != CT_OK) {
    ct_release(c.out[0]);
    ct_clear_error();
    return NULL;
  }
  return c.out[0];
}

/* grad * exp(x - result) */
ct_status ct_bw_logsumexp(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *r = ct_node_saved_out(n, 0);
  if (!x || !r) return ct_last_status();
  uint32_t mask = (uint32_t)n->a.k[0];
  if ((gin[0] = lse_bw_cuda(x, g[0], r, mask))) return CT_OK;
  bool keep = n->a.k[1] != 0;
  ct_tensor *gk = restore_dims(g[0], mask, keep, x->ndim), *rk = restore_dims(r, mask, keep, x->ndim);
  ct_tensor *d = rk ? ct_sub(x, rk) : NULL, *e = d ? ct_exp(d) : NULL;
  gin[0] = (e && gk) ? ct_mul(gk, e) : NULL;
  ct_release(gk);
  ct_release(rk);
  ct_release(d);
  ct_release(e);
  return gin[0] ? CT_OK : ct_last_status();
}

/* ---- median / nanmedian of all elements ---------------------------------------------------------------- */
static ct_tensor *median_all(int op, const char *grad_name, const ct_tensor *t) {
  if (ct_check_tensor(t, "median")) return NULL;
  if (t->dtype == CT_BOOL && ct_numel(t) == 0) {
    /* PyTorch 1.13 returns NaN converted to the dtype for an empty input before choosing a kernel: true */
    ct_options o = ct_opts_dtype(CT_BOOL);
    o.device = t->storage->device;
    return ct_full(0, NULL, ct_sb(true), o);
  }
  if (refuse_dtype(t, "median_cpu", true, false, true)) return NULL;
  ct_tensor *r = reduce1(op, t, full_mask(t), false, t->dtype, t->dtype, NULL);
  ct_name_node(r, grad_name);
  return r;
}
ct_tensor *ct_median(const ct_tensor *t) { return median_all(CT_OP_median, "MedianBackward0", t); }
ct_tensor *ct_nanmedian(const ct_tensor *t) { return median_all(CT_OP_nanmedian, "NanmedianBackward0", t); }

/* ---- cumsum / cumprod ------------------------------------------------------------------------------ */
static ct_tensor *scan(int op, const ct_tensor *x, int64_t d, bool reverse) {
  ct_attrs a = ct_attrs_zero();
  a.k[3] = reverse;
  ct_tensor *in[1] = {(ct_tensor *)x};
  return dim1(op, 1, in, d, x->ndim, x->shape, x->dtype, &a);
}
static ct_tensor *cum_impl(int op, const char *kname, const ct_tensor *t, int64_t dim, int dtype) {
  if (ct_check_tensor(t, kname)) return NULL;
  ct_dtype dt;
  if (resolve_dtype(dtype, ct_dtype_is_integral(t->dtype, true) ? CT_INT64 : t->dtype, &dt)) return NULL;
  int64_t d = ct_wrap_dim(dim, t->ndim);
  if (d < 0) return NULL;
  if (dt == CT_FLOAT16) {
    ct_set_error(CT_ERR_RUNTIME, "\"%s\" not implemented for 'Half'", kname);
    return NULL;
  }
  ct_tensor *x = ct_to_dtype(t, dt);
  if (!x) return NULL;
  ct_tensor *r = scan(op, x, d, false);
  ct_release(x);
  return r;
}
ct_tensor *ct_cumsum(const ct_tensor *t, int64_t dim, int dtype) { return cum_impl(CT_OP_cumsum, "cumsum_out_cpu", t, dim, dtype); }
ct_tensor *ct_cumprod(const ct_tensor *t, int64_t dim, int dtype) {
  return cum_impl(CT_OP_cumprod, "cumprod_out_cpu", t, dim, dtype);
}
static ct_status cum_inplace(int op, const char *kname, ct_tensor *t, int64_t dim) {
  CT_TRY(ct_check_tensor(t, kname));
  CT_TRY(ct_check_inplace(t));
  ct_tensor *r = cum_impl(op, kname, t, dim, (int)t->dtype);
  if (!r) return ct_last_status();
  ct_status st = ct_write_result_inplace(t, r);
  ct_release(r);
  return st;
}
ct_status ct_cumsum_(ct_tensor *t, int64_t dim) { return cum_inplace(CT_OP_cumsum, "cumsum_out_cpu", t, dim); }
ct_status ct_cumprod_(ct_tensor *t, int64_t dim) { return cum_inplace(CT_OP_cumprod, "cumprod_out_cpu", t, dim); }

/* reversed cumsum of the gradient */
ct_status ct_bw_cumsum(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  gin[0] = scan(CT_OP_cumsum, g[0], n->a.k[2], !n->a.k[3]);
  return gin[0] ? CT_OK : ct_last_status();
}
ct_status ct_bw_cumprod(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *out = ct_node_saved_out(n, 0);
  if (!x || !out) return ct_last_status();
  int64_t d = n->a.k[2];
  if (ct_numel(x) <= 1 || x->ndim == 0 || x->shape[d] == 1) {
    gin[0] = ct_retain(g[0]);
    return CT_OK;
  }
  int64_t zeros = count_zeros(x);
  if (zeros < 0) return ct_last_status();
  if (zeros == 0) { /* reversed_cumsum(grad * output) / input, as PyTorch */
    ct_tensor *w = ct_mul(g[0], out), *s = w ? scan(CT_OP_cumsum, w, d, true) : NULL;
    gin[0] = s ? ct_div(s, x) : NULL;
    ct_release(w);
    ct_release(s);
  } else { /* exact with zeros */
    ct_tensor *in[2] = {x, g[0]};
    gin[0] = dim1(CT_OP_cumprod_grad, 2, in, d, x->ndim, x->shape, x->dtype, NULL);
  }
  return gin[0] ? CT_OK : ct_last_status();
}
/* cumprod_grad(x, g) is linear in g: its adjoint is cumprod_grad_t and back */
ct_status ct_bw_cumprod_grad(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (ct_node_needs_grad(n, 0))
    return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "double backward of cumprod through an input containing zeros is not "
                  "implemented in ctorch");
  ct_tensor *x = ct_node_saved_in(n, 0);
  if (!x) return ct_last_status();
  ct_tensor *in[2] = {x, g[0]};
  int op = n->op == CT_OP_cumprod_grad ? CT_OP_cumprod_grad_t : CT_OP_cumprod_grad;
  gin[1] = dim1(op, 2, in, n->a.k[2], x->ndim, x->shape, x->dtype, NULL);
  return gin[1] ? CT_OK : ct_last_status();
}

/* ---- cummax / cummin ---------------------------------------------------------------------------------- */
static ct_status cumext(int op, const char *kname, const ct_tensor *t, int64_t dim, ct_tensor **v, ct_tensor **i) {
  CT_TRY(ct_check_tensor(t, kname));
  if (!v || !i) return CT_ERR(CT_ERR_VALUE, "%s: output pointers must not be NULL", kname);
  *v = *i = NULL;
  int64_t d = ct_wrap_dim(dim, t->ndim);
  if (d < 0) return ct_last_status();
  if (refuse_dtype(t, kname, true, false, false)) return ct_last_status();
  ct_dtype odt[2] = {t->dtype, CT_INT64};
  ct_tensor *outs[2], *in[1] = {(ct_tensor *)t};
  CT_TRY(run_dim(op, 1, in, d, 2, t->ndim, t->shape, odt, NULL, outs));
  *v = outs[0];
  *i = outs[1];
  return CT_OK;
}
ct_status ct_cummax(const ct_tensor *t, int64_t dim, ct_tensor **values, ct_tensor **indices) {
  return cumext(CT_OP_cummax, "cummax_cpu", t, dim, values, indices);
}
ct_status ct_cummin(const ct_tensor *t, int64_t dim, ct_tensor **values, ct_tensor **indices) {
  return cumext(CT_OP_cummin, "cummin_cpu", t, dim, values, indices);
}

/* ---- sort / argsort / topk ------------------------------------------------------------------------------ */
ct_status ct_sort(const ct_tensor *t, int64_t dim, bool descending, bool stable, ct_tensor **values, ct_tensor **indices) {
  (void)stable; /* every sort here is stable (a valid order for stable=False too) */
  CT_TRY(ct_check_tensor(t, "sort"));
  if (!values || !indices) return CT_ERR(CT_ERR_VALUE, "sort: output pointers must not be NULL");
  *values = *indices = NULL;
  int64_t d = ct_wrap_dim(dim, t->ndim);
  if (d < 0) return ct_last_status();
  ct_attrs a = ct_attrs_zero();
  a.k[3] = descending;
  ct_dtype odt[2] = {t->dtype, CT_INT64};
  ct_tensor *outs[2], *in[1] = {(ct_tensor *)t};
  CT_TRY(run_dim(CT_OP_sort, 1, in, d, 2, t->ndim, t->shape, odt, &a, outs));
  *values = outs[0];
  *indices = outs[1];
  return CT_OK;
}
ct_tensor *ct_argsort(const ct_tensor *t, int64_t dim, bool descending, bool stable) {
  ct_tensor *v, *i;
  bool prev = ct_set_grad_enabled(false);
  ct_status st = ct_sort(t, dim, descending, stable, &v, &i);
  ct_set_grad_enabled(prev);
  if (st != CT_OK) return NULL;
  ct_release(v);
  return i;
}
ct_tensor *ct_msort(const ct_tensor *t) {
  ct_tensor *v, *i;
  if (ct_sort(t, 0, false, false, &v, &i) != CT_OK) return NULL;
  ct_release(i);
  if (v && v->grad_fn) v->grad_fn->name = "SortBackward0";
  return v;
}

/* topk / kthvalue of a 0-dim tensor: PyTorch 1.13 returns (a copy of) it and index 0 without a kernel, so
 * for every dtype, bool included */
static ct_status zero_dim_select(const ct_tensor *t, ct_tensor **values, ct_tensor **indices) {
  ct_options o = ct_opts_dtype(CT_INT64);
  o.device = t->storage->device;
  *values = ct_clone(t);
  *indices = *values ? ct_zeros(0, NULL, o) : NULL;
  if (!*indices) {
    ct_release(*values);
    *values = NULL;
    return ct_last_status();
  }
  return CT_OK;
}

ct_status ct_topk(const ct_tensor *t, int64_t k, int64_t dim, bool largest, bool sorted, ct_tensor **values,
                  ct_tensor **indices) {
  (void)sorted; /* results are always sorted, a valid order for sorted=False */
  CT_TRY(ct_check_tensor(t, "topk"));
  if (!values || !indices) return CT_ERR(CT_ERR_VALUE, "topk: output pointers must not be NULL");
  *values = *indices = NULL;
  int64_t d = ct_wrap_dim(dim, t->ndim);
  if (d < 0) return ct_last_status();
  int64_t size = t->ndim ? t->shape[d] : 1;
  if (k < 0 || k > size) return CT_ERR(CT_ERR_RUNTIME, "selected index k out of range");
  if (t->ndim == 0 && t->dtype == CT_BOOL && k == 1) return zero_dim_select(t, values, indices);
  if (refuse_dtype(t, "topk_cpu", true, false, true)) return ct_last_status();
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, t->shape, sizeof shape);
  if (t->ndim) shape[d] = k;
  ct_attrs a = ct_attrs_zero();
  a.k[3] = largest;
  a.k[4] = k;
  ct_dtype odt[2] = {t->dtype, CT_INT64};
  ct_tensor *outs[2], *in[1] = {(ct_tensor *)t};
  CT_TRY(run_dim(CT_OP_topk, 1, in, d, 2, t->ndim, shape, odt, &a, outs));
  *values = outs[0];
  *indices = outs[1];
  return CT_OK;
}

/* ---- kthvalue / median(dim) / nanmedian(dim) / mode: one value + index along dim ---- */
static ct_status select_dim(int op, const char *who, const char *kname, bool no_half, bool no_bool, const ct_tensor *t,
                            int64_t k, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices,
                            const char *grad_name) {
  int64_t d;
  CT_TRY(dim_reduce_check(t, who, dim, &d, values, indices));
  if (op == CT_OP_kthvalue) {
    int64_t size = t->ndim ? t->shape[d] : 1;
    if (k < 1 || k > size)
      return CT_ERR(CT_ERR_RUNTIME, "kthvalue(): selected number k out of range for dimension %lld", (long long)d);
    if (t->ndim == 0 && t->dtype == CT_BOOL) return zero_dim_select(t, values, indices);
  }
  if (kname && refuse_dtype(t, kname, no_half, false, no_bool)) return ct_last_status();
  int nd = 0;
  int64_t shape[CT_MAX_DIMS];
  for (int q = 0; q < t->ndim; q++) {
    if (q != d) shape[nd++] = t->shape[q];
    else if (keepdim) shape[nd++] = 1;
  }
  ct_attrs a = ct_attrs_zero();
  a.k[1] = keepdim;
  a.k[4] = k;
  ct_dtype odt[2] = {t->dtype, CT_INT64};
  ct_tensor *outs[2], *in[1] = {(ct_tensor *)t};
  CT_TRY(run_dim(op, 1, in, d, 2, nd, shape, odt, &a, outs));
  ct_name_node(outs[0], grad_name);
  *values = outs[0];
  *indices = outs[1];
  return CT_OK;
}
ct_status ct_kthvalue(const ct_tensor *t, int64_t k, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices) {
  return select_dim(CT_OP_kthvalue, "kthvalue", "kthvalue_cpu", true, true, t, k, dim, keepdim, values, indices, NULL);
}
ct_status ct_median_dim(const ct_tensor *t, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices) {
  return select_dim(CT_OP_median_dim, "median", "median_out", true, true, t, 0, dim, keepdim, values, indices,
                    "MedianBackward1");
}
ct_status ct_nanmedian_dim(const ct_tensor *t, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices) {
  return select_dim(CT_OP_nanmedian_dim, "median", "median_out", true, true, t, 0, dim, keepdim, values, indices,
                    "NanmedianBackward1");
}
ct_status ct_mode(const ct_tensor *t, int64_t dim, bool keepdim, ct_tensor **values, ct_tensor **indices) {
  return select_dim(CT_OP_mode, "mode", NULL, false, false, t, 0, dim, keepdim, values, indices, NULL);
}

/* ---- unique (flattened) ------------------------------------------------------------------------------------ */
ct_status ct_unique(const ct_tensor *t, bool sorted, bool return_inverse, bool return_counts, ct_tensor **out,
                    ct_tensor **inverse, ct_tensor **counts) {
  (void)sorted; /* always sorted (a valid order for sorted=False) */
  CT_TRY(ct_check_tensor(t, "unique"));
  if (!out) return CT_ERR(CT_ERR_VALUE, "unique: output pointer must not be NULL");
  if ((return_inverse && !inverse) || (return_counts && !counts))
    return CT_ERR(CT_ERR_VALUE, "unique: inverse/counts pointers must not be NULL when requested");
  *out = NULL;
  if (inverse) *inverse = NULL;
  if (counts) *counts = NULL;
  if (refuse_dtype(t, "unique", true, false, false)) return ct_last_status();
  ct_device dev = t->storage->device;
  ct_tensor *cnt = ct_tensor_new(0, NULL, CT_INT64, dev);
  if (!cnt) return ct_last_status();
  ct_call c = ct_call_make(CT_OP_unique_count);
  c.n_in = 1;
  c.n_out = 1;
  c.in[0] = (ct_tensor *)t;
  c.out[0] = cnt;
  int64_t u = 0;
  ct_status st = ct_dispatch(&c);
  if (st == CT_OK) st = ct_item_int64(cnt, &u);
  ct_release(cnt);
  CT_TRY(st);
  ct_tensor *v = ct_tensor_new(1, &u, t->dtype, dev), *inv = ct_tensor_new(t->ndim, t->shape, CT_INT64, dev);
  ct_tensor *cn = ct_tensor_new(1, &u, CT_INT64, dev);
  if (!v || !inv || !cn) goto fail;
  c = ct_call_make(CT_OP_unique);
  c.n_in = 1;
  c.n_out = 3;
  c.in[0] = (ct_tensor *)t;
  c.out[0] = v;
  c.out[1] = inv;
  c.out[2] = cn;
  if (ct_dispatch(&c) != CT_OK) goto fail;
  *out = v;
  if (return_inverse) *inverse = inv;
  else ct_release(inv);
  if (return_counts) *counts = cn;
  else ct_release(cn);
  return CT_OK;
fail:
  ct_release(v);
  ct_release(inv);
  ct_release(cn);
  return ct_last_status() != CT_OK ? ct_last_status() : CT_ERR_RUNTIME;
}
