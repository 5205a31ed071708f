/* Index ops: entry points (argument checks with PyTorch 1.13's messages) and
 * derivative formulas side by side. Every index is range-checked here, on the
 * host, before a kernel runs; kernels only wrap negative indices. Out-of-place
 * ops write a fresh contiguous output; in-place forms compute that result and
 * hand it to ct_write_result_inplace, so autograd and version counters follow
 * PyTorch (x[...] = v without autograd writes straight into x). */
#include "pointwise.h"
#include <stdlib.h>

/* Index values as int64 on the host (numel >= 1 slots); NULL on error. */
static int64_t *read_i64(const ct_tensor *t, int64_t *n) {
  *n = ct_numel(t);
  int64_t *buf = ct_xmalloc((size_t)(*n ? *n : 1) * sizeof *buf);
  if (!buf) return NULL;
  if (*n && ct_copy_to_buffer(t, buf, CT_INT64, *n) != CT_OK) {
    free(buf);
    return NULL;
  }
  return buf;
}

typedef enum {
  RANGE_DIM,       /* "index 5 is out of bounds for dimension 0 with size 3" (no negatives) */
  RANGE_DIM_WRAP,  /* same message, negatives wrap */
  RANGE_SELF,      /* "index out of range in self" (no negatives) */
  RANGE_COPY,      /* "index_copy_(): index ... " */
  RANGE_FLAT       /* "out of range: tried to access index 5 on a tensor of 3 elements." (wraps) */
} range_kind;

static ct_status check_range(const ct_tensor *idx, int64_t size, range_kind k, ct_status st, int64_t dim) {
  if (ct_numel(idx) == 0) return CT_OK;
  int64_t n;
  int64_t *v = read_i64(idx, &n);
  if (!v) return ct_last_status();
  ct_status r = CT_OK;
  bool wrap = k == RANGE_DIM_WRAP || k == RANGE_FLAT;
  for (int64_t i = 0; i < n; i++) {
    int64_t x = v[i];
    if (x < size && (wrap ? x >= -size : x >= 0)) continue;
    switch (k) {
      case RANGE_DIM:
      case RANGE_DIM_WRAP:
        r = CT_ERR(st, "index %lld is out of bounds for dimension %lld with size %lld", (long long)x, (long long)dim,
                   (long long)size);
        break;
      case RANGE_SELF: r = CT_ERR(st, "index out of range in self"); break;
      case RANGE_COPY:
        r = CT_ERR(st, "index_copy_(): index %lld is out of bounds for dimension %lld with size %lld", (long long)x,
                   (long long)dim, (long long)size);
        break;
      case RANGE_FLAT:
        r = CT_ERR(st, "out of range: tried to access index %lld on a tensor of %lld elements.", (long long)x,
                   (long long)size);
        break;
    }
    break;
  }
  free(v);
  return r;
}

static int nonempty_dim(const ct_tensor *t) { return t->ndim ? t->ndim : 1; }
static int64_t nonempty_size(const ct_tensor *t, int d) { return t->ndim ? t->shape[d] : 1; }
static int64_t dim_size(const ct_tensor *t, int64_t dim) { return t->ndim ? t->shape[dim] : 1; }

/* Wrap dim for ops where a 0-dim tensor behaves as 1-D. */
static int64_t wrap_dim0(int64_t dim, const ct_tensor *t) { return ct_wrap_dim(dim, t->ndim ? t->ndim : 1); }

static ct_attrs dim_attrs(int64_t dim) {
  ct_attrs a = ct_attrs_zero();
  a.k[0] = dim;
  return a;
}

static ct_status overlap_fill(ct_tensor *self, const char *who, ct_tensor *r, const ct_tensor *mask,
                              ct_scalar value, const ct_tensor *vt);

/* in-place: compute the out-of-place result, then write it into self */
static ct_status finish_inplace(ct_tensor *self, ct_tensor *r) {
  if (!r) return ct_last_status();
  ct_status st = ct_write_result_inplace(self, r);
  ct_release(r);
  return st;
}

static ct_tensor *sum_all(ct_tensor *t) {
  if (!t) return NULL;
  ct_tensor *s = ct_sum(t);
  ct_release(t);
  return s;
}

/* ---- index_select ------------------------------------------------------------------ */
ct_tensor *ct_index_select(const ct_tensor *self, int64_t dim, const ct_tensor *index) {
  if (ct_check_tensor(self, "index_select") || ct_check_tensor(index, "index_select")) return NULL;
  dim = wrap_dim0(dim, self);
  if (dim < 0) return NULL;
  if (index->ndim > 1) {
    ct_set_error(CT_ERR_INDEX, "index_select(): Index is supposed to be a vector");
    return NULL;
  }
  if (index->dtype != CT_INT64 && index->dtype != CT_INT32) {
    ct_set_error(CT_ERR_RUNTIME, "index_select(): Expected dtype int32 or int64 for index");
    return NULL;
  }
  if (self->ndim && self->shape[dim] == 0 && ct_numel(index) > 0) { /* PyTorch 1.13's wording and type */
    ct_set_error(CT_ERR_RUNTIME, "index_select(): self indexing axis dim should be positive");
    return NULL;
  }
  if (check_range(index, dim_size(self, dim), RANGE_SELF, CT_ERR_INDEX, dim)) return NULL;
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, self->shape, sizeof shape);
  if (self->ndim) shape[dim] = ct_numel(index);
  ct_attrs a = dim_attrs(dim);
  ct_tensor *in[2] = {(ct_tensor *)self, (ct_tensor *)index};
  return ct_dispatch_new(CT_OP_index_select, 2, in, self->ndim, shape, self->dtype, &a);
}

ct_status ct_bw_index_select(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_in(n, 1);
  if (!idx) return ct_last_status();
  ct_tensor *z = ct_zeros_meta(&n->in_meta[0]);
  if (!z) return ct_last_status();
  gin[0] = ct_index_add(z, n->a.k[0], idx, g[0], ct_si(1));
  ct_release(z);
  return gin[0] ? CT_OK : ct_last_status();
}

/* ---- gather / scatter ---------------------------------------------------------------- */
static ct_status gather_shape_check(const ct_tensor *self, int64_t dim, const ct_tensor *index) {
  if (nonempty_dim(self) != nonempty_dim(index))
    return CT_ERR(CT_ERR_RUNTIME, "Index tensor must have the same number of dimensions as input tensor");
  for (int d = 0; d < nonempty_dim(self); d++) {
    if (d == dim) continue;
    if (nonempty_size(index, d) > nonempty_size(self, d)) {
      char a[160], b[160];
      return CT_ERR(CT_ERR_RUNTIME, "Size does not match at dimension %d expected index %s to be smaller than self %s "
                    "apart from dimension %lld", d, CT_SHAPE_STR(index, a), CT_SHAPE_STR(self, b), (long long)dim);
    }
  }
  return CT_OK;
}

ct_tensor *ct_gather(const ct_tensor *self, int64_t dim, const ct_tensor *index) {
  if (ct_check_tensor(self, "gather") || ct_check_tensor(index, "gather")) return NULL;
  dim = wrap_dim0(dim, self);
  if (dim < 0) return NULL;
  if (ct_numel(index) != 0) { /* PyTorch checks nothing more for an empty index */
    if (index->dtype != CT_INT64) {
      ct_set_error(CT_ERR_RUNTIME, "gather(): Expected dtype int64 for index");
      return NULL;
    }
    if (gather_shape_check(self, dim, index)) return NULL;
    if (check_range(index, dim_size(self, dim), RANGE_DIM, CT_ERR_RUNTIME, dim)) return NULL;
  }
  ct_attrs a = dim_attrs(dim);
  ct_tensor *in[2] = {(ct_tensor *)self, (ct_tensor *)index};
  return ct_dispatch_new(CT_OP_gather, 2, in, index->ndim, index->shape, self->dtype, &a);
}

ct_status ct_bw_gather(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_in(n, 1);
  if (!idx) return ct_last_status();
  ct_tensor *z = ct_zeros_meta(&n->in_meta[0]);
  if (!z) return ct_last_status();
  gin[0] = ct_scatter_add(z, n->a.k[0], idx, g[0]);
  ct_release(z);
  return gin[0] ? CT_OK : ct_last_status();
}

/* Checks shared by scatter, scatter_add, scatter_reduce (src may be NULL). */
static ct_status scatter_check(const char *name, const ct_tensor *self, int64_t *dim, const ct_tensor *index,
                               const ct_tensor *src) {
  CT_TRY(ct_check_tensor(self, name));
  CT_TRY(ct_check_tensor(index, name));
  if (src) CT_TRY(ct_check_tensor(src, name));
  int64_t d = wrap_dim0(*dim, self);
  if (d < 0) return ct_last_status();
  *dim = d;
  if (ct_numel(index) != 0 && index->dtype != CT_INT64)
    return CT_ERR(CT_ERR_RUNTIME, "%s(): Expected dtype int64 for index", name);
  if (src && src->dtype != self->dtype)
    return CT_ERR(CT_ERR_RUNTIME, "%s(): Expected self.dtype to be equal to src.dtype", name);
  if (ct_numel(index) == 0) return CT_OK;
  if (nonempty_dim(self) != nonempty_dim(index))
    return CT_ERR(CT_ERR_RUNTIME, "Index tensor must have the same number of dimensions as self tensor");
  bool wrong = false;
  for (int k = 0; k < nonempty_dim(self) && !wrong; k++)
    if (k != d && nonempty_size(index, k) > nonempty_size(self, k)) wrong = true;
  if (!wrong && src) {
    if (nonempty_dim(src) < nonempty_dim(index)) wrong = true;
    for (int k = 0; k < nonempty_dim(index) && !wrong; k++)
      if (nonempty_size(index, k) > nonempty_size(src, k)) wrong = true;
  }
  if (wrong) {
    char a[160], b[160], c[160];
    if (src)
      return CT_ERR(CT_ERR_RUNTIME, "Expected index %s to be smaller than self %s apart from dimension %lld and to be "
                    "smaller size than src %s", CT_SHAPE_STR(index, a), CT_SHAPE_STR(self, b), (long long)d,
                    CT_SHAPE_STR(src, c));
    return CT_ERR(CT_ERR_RUNTIME, "Expected index %s to be smaller than self %s apart from dimension %lld",
                  CT_SHAPE_STR(index, a), CT_SHAPE_STR(self, b), (long long)d);
  }
  return check_range(index, dim_size(self, d), RANGE_DIM, CT_ERR_RUNTIME, d);
}

ct_tensor *ct_scatter(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src) {
  if (scatter_check("scatter", self, &dim, index, src)) return NULL;
  ct_attrs a = dim_attrs(dim);
  ct_tensor *in[3] = {(ct_tensor *)self, (ct_tensor *)index, (ct_tensor *)src};
  return ct_dispatch_new(CT_OP_scatter, 3, in, self->ndim, self->shape, self->dtype, &a);
}
ct_status ct_scatter_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src) {
  CT_TRY(ct_check_tensor(self, "scatter_"));
  CT_TRY(ct_check_inplace(self));
  return finish_inplace(self, ct_scatter(self, dim, index, src));
}

ct_tensor *ct_scatter_value(const ct_tensor *self, int64_t dim, const ct_tensor *index, ct_scalar value) {
  if (scatter_check("scatter", self, &dim, index, NULL)) return NULL;
  ct_attrs a = dim_attrs(dim);
  a.s[0] = value;
  ct_tensor *in[2] = {(ct_tensor *)self, (ct_tensor *)index};
  return ct_dispatch_new(CT_OP_scatter_value, 2, in, self->ndim, self->shape, self->dtype, &a);
}
ct_status ct_scatter_value_(ct_tensor *self, int64_t dim, const ct_tensor *index, ct_scalar value) {
  CT_TRY(ct_check_tensor(self, "scatter_"));
  CT_TRY(ct_check_inplace(self));
  return finish_inplace(self, ct_scatter_value(self, dim, index, value));
}

ct_tensor *ct_scatter_add(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src) {
  if (scatter_check("scatter", self, &dim, index, src)) return NULL;
  ct_attrs a = dim_attrs(dim);
  ct_tensor *in[3] = {(ct_tensor *)self, (ct_tensor *)index, (ct_tensor *)src};
  return ct_dispatch_new(CT_OP_scatter_add, 3, in, self->ndim, self->shape, self->dtype, &a);
}
ct_status ct_scatter_add_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src) {
  CT_TRY(ct_check_tensor(self, "scatter_add_"));
  CT_TRY(ct_check_inplace(self));
  return finish_inplace(self, ct_scatter_add(self, dim, index, src));
}

/* grad_self = grad with the scattered positions zeroed; grad_src = grad.gather(dim, index) */
ct_status ct_bw_scatter(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_in(n, 1);
  if (!idx) return ct_last_status();
  int64_t dim = n->a.k[0];
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_scatter_value(g[0], dim, idx, ct_si(0)))) return ct_last_status();
  if (n->n_in > 2 && ct_node_needs_grad(n, 2) && !(gin[2] = ct_gather(g[0], dim, idx))) return ct_last_status();
  return CT_OK;
}
ct_status ct_bw_scatter_value(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return ct_bw_scatter(n, g, gin); }

ct_status ct_bw_scatter_add(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (ct_node_needs_grad(n, 0)) gin[0] = ct_retain(g[0]);
  if (ct_node_needs_grad(n, 2)) {
    ct_tensor *idx = ct_node_saved_in(n, 1);
    if (!idx || !(gin[2] = ct_gather(g[0], n->a.k[0], idx))) return ct_last_status();
  }
  return CT_OK;
}

/* ---- scatter_reduce ----------------------------------------------------------------- */
static const char *const reduce_names[5] = {"sum", "prod", "mean", "amax", "amin"};

ct_tensor *ct_scatter_reduce(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src,
                             const char *reduce, bool include_self) {
  int r = -1;
  for (int k = 0; reduce && k < 5; k++)
    if (!strcmp(reduce, reduce_names[k])) r = k;
  if (r < 0) {
    ct_set_error(CT_ERR_RUNTIME, "reduce argument must be either sum, prod, mean, amax or amin, got %s",
                 reduce ? reduce : "None");
    return NULL;
  }
  if (scatter_check("scatter_reduce", self, &dim, index, src)) return NULL;
  if (r == 2 && self->dtype == CT_BOOL) {
    ct_set_error(CT_ERR_RUNTIME, "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'");
    return NULL;
  }
  ct_attrs a = dim_attrs(dim);
  a.k[1] = r;
  a.k[2] = include_self;
  ct_tensor *in[3] = {(ct_tensor *)self, (ct_tensor *)index, (ct_tensor *)src};
  return ct_dispatch_new(CT_OP_scatter_reduce, 3, in, self->ndim, self->shape, self->dtype, &a);
}
ct_status ct_scatter_reduce_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *src,
                             const char *reduce, bool include_self) {
  CT_TRY(ct_check_tensor(self, "scatter_reduce_"));
  CT_TRY(ct_check_inplace(self));
  return finish_inplace(self, ct_scatter_reduce(self, dim, index, src, reduce, include_self));
}

/* PyTorch 1.13's scatter_reduce_backward, written with public ops. */
ct_status ct_bw_scatter_reduce(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *self = ct_node_saved_in(n, 0), *idx = ct_node_saved_in(n, 1), *src = ct_node_saved_in(n, 2);
  ct_tensor *result = ct_node_saved_out(n, 0);
  if (!self || !idx || !src || !result) return ct_last_status();
  int64_t dim = n->a.k[0];
  int r = (int)n->a.k[1];
  bool include_self = n->a.k[2] != 0;
  ct_tensor *grad = g[0], *gs = NULL, *gsrc = NULL;
  ct_status st = CT_OK;
  if (r == 0) { /* sum */
    gs = ct_retain(grad);
    gsrc = ct_gather(grad, dim, idx);
  } else if (r == 2) { /* mean: divide by the number of contributions */
    ct_tensor *N = include_self ? ct_ones_like(grad, NULL) : ct_zeros_like(grad, NULL);
    ct_tensor *ones = ct_ones_like(src, NULL);
    ct_tensor *N2 = N && ones ? ct_scatter_add(N, dim, idx, ones) : NULL;
    ct_tensor *Nf = NULL;
    if (N2 && !include_self) { /* positions never written (N == 0) divide by 1 */
      ct_tensor *o = ct_ones_like(grad, NULL);
      ct_tensor *un = o ? ct_scatter_value(o, dim, idx, ct_si(0)) : NULL;
      Nf = un ? ct_add(N2, un) : NULL;
      ct_release(o);
      ct_release(un);
    } else Nf = ct_retain(N2);
    gs = Nf ? ct_div(grad, Nf) : NULL;
    ct_tensor *Ns = Nf ? ct_gather(Nf, dim, idx) : NULL;
    ct_tensor *gg = Ns ? ct_gather(grad, dim, idx) : NULL;
    gsrc = gg ? ct_div(gg, Ns) : NULL;
    ct_release(N);
    ct_release(ones);
    ct_release(N2);
    ct_release(Nf);
    ct_release(Ns);
    ct_release(gg);
  } else if (r == 1) { /* prod: exclusive products, with zeros handled explicitly */
    ct_tensor *T_[24] = {0};
    int nt = 0;
#define K(e) (T_[nt++] = (e))
    ct_tensor *self0 = K(ct_eq_scalar(self, ct_si(0)));
    ct_tensor *mself = self0 ? K(ct_masked_fill(self, self0, ct_si(1))) : NULL;
    ct_tensor *msr = mself ? K(ct_scatter_reduce(mself, dim, idx, src, "prod", include_self)) : NULL;
    ct_tensor *t1 = msr ? K(ct_mul(grad, msr)) : NULL;
    gs = t1 ? ct_div(t1, mself) : NULL;
    ct_tensor *src0 = K(ct_eq_scalar(src, ct_si(0)));
    ct_tensor *src0f = src0 ? K(ct_to_dtype(src0, self->dtype)) : NULL;
    ct_tensor *z = K(ct_zeros_like(self, NULL));
    ct_tensor *nz1 = z && src0f ? K(ct_scatter_add(z, dim, idx, src0f)) : NULL;
    ct_tensor *nz = nz1 ? K(ct_gather(nz1, dim, idx)) : NULL;
    ct_tensor *one = nz ? K(ct_eq_scalar(nz, ct_si(1))) : NULL;
    ct_tensor *single = one ? K(ct_bitwise_and(src0, one)) : NULL;
    ct_tensor *msrc = single ? K(ct_masked_fill(src, single, ct_si(1))) : NULL;
    ct_tensor *msrcr = msrc ? K(ct_scatter_reduce(self, dim, idx, msrc, "prod", include_self)) : NULL;
    ct_tensor *a1 = msrcr ? K(ct_mul(grad, msrcr)) : NULL;
    ct_tensor *a2 = a1 ? K(ct_gather(a1, dim, idx)) : NULL;
    ct_tensor *b1 = a2 ? K(ct_mul(grad, result)) : NULL;
    ct_tensor *b2 = b1 ? K(ct_gather(b1, dim, idx)) : NULL;
    ct_tensor *b3 = b2 ? K(ct_masked_fill(src, src0, ct_si(1))) : NULL;
    ct_tensor *b4 = b3 ? K(ct_div(b2, b3)) : NULL;
    gsrc = b4 ? ct_where(single, a2, b4) : NULL;
    /* more than one zero scattered to one place: PyTorch refuses only the double backward */
#undef K
    for (int q = 0; q < nt; q++) ct_release(T_[q]);
  } else { /* amax / amin: the gradient is shared evenly between the tied extrema */
    ct_tensor *T_[16] = {0};
    int nt = 0;
#define K(e) (T_[nt++] = (e))
    ct_tensor *value = K(ct_gather(result, dim, idx));
    ct_tensor *sir = K(ct_eq(self, result));
    ct_tensor *srr = value ? K(ct_eq(src, value)) : NULL;
    ct_tensor *sirf = sir ? K(ct_to_dtype(sir, self->dtype)) : NULL;
    ct_tensor *srrf = srr ? K(ct_to_dtype(srr, self->dtype)) : NULL;
    ct_tensor *N = sirf && srrf ? K(ct_scatter_add(sirf, dim, idx, srrf)) : NULL;
    ct_tensor *gd = N ? K(ct_div(grad, N)) : NULL;
    gs = gd ? ct_mul(sirf, gd) : NULL;
    ct_tensor *gdg = gd ? K(ct_gather(gd, dim, idx)) : NULL;
    gsrc = gdg ? ct_mul(srrf, gdg) : NULL;
#undef K
    for (int q = 0; q < nt; q++) ct_release(T_[q]);
  }
  if (!gs || !gsrc) st = ct_last_status();
  if (st == CT_OK && !include_self) { /* self's scattered positions did not contribute */
    ct_tensor *m = ct_scatter_value(gs, dim, idx, ct_si(0));
    ct_release(gs);
    gs = m;
    if (!gs) st = ct_last_status();
  }
  if (st == CT_OK) {
    if (ct_node_needs_grad(n, 0)) gin[0] = ct_retain(gs);
    if (ct_node_needs_grad(n, 2)) gin[2] = ct_retain(gsrc);
  }
  ct_release(gs);
  ct_release(gsrc);
  return st;
}

/* ---- index_add / index_copy / index_fill --------------------------------------------- */
static ct_status index_func_check(const char *func, const ct_tensor *self, int64_t *dim, const ct_tensor *index,
                                  const ct_tensor *source) {
  CT_TRY(ct_check_tensor(self, func));
  CT_TRY(ct_check_tensor(index, func));
  CT_TRY(ct_check_tensor(source, func));
  int64_t d = wrap_dim0(*dim, self);
  if (d < 0) return ct_last_status();
  *dim = d;
  int64_t numel = ct_numel(index);
  if (index->ndim > 1) return CT_ERR(CT_ERR_INDEX, "%s_(): Index is supposed to be a vector", func);
  if (index->dtype != CT_INT64 && index->dtype != CT_INT32)
    return CT_ERR(CT_ERR_RUNTIME, "%s_(): Expected dtype int32/int64 for index but got: %s", func,
                  ct_dtype_torch_name(index->dtype));
  if (self->dtype != source->dtype)
    return CT_ERR(CT_ERR_RUNTIME, "%s_(): self (%s) and source (%s) must have the same scalar type", func,
                  ct_dtype_torch_name(self->dtype), ct_dtype_torch_name(source->dtype));
  if (!(d == 0 || d < source->ndim))
    return CT_ERR(CT_ERR_INDEX, "%s_(): Indexing dim %lld is out of bounds of the source tensor with dim %d", func,
                  (long long)d, source->ndim);
  int64_t ssz = source->ndim == 0 ? 1 : source->shape[d];
  if (numel != ssz)
    return CT_ERR(CT_ERR_RUNTIME, "%s_(): Number of indices (%lld) should be equal to source.size(dim): (%lld), for dim: "
                  "%lld", func, (long long)numel, (long long)ssz, (long long)d);
  if (source->ndim != 0 && self->ndim != 0) {
    bool same = source->ndim == self->ndim;
    for (int k = 0; same && k < self->ndim; k++) same = k == d || self->shape[k] == source->shape[k];
    if (!same) {
      char a[160], b[160];
      return CT_ERR(CT_ERR_RUNTIME, "source tensor shape must match self tensor shape, excluding the specified "
                    "dimension. Got self.shape = %s source.shape = %s", CT_SHAPE_STR(self, a), CT_SHAPE_STR(source, b));
    }
  } else if (source->ndim != self->ndim && ct_numel(source) != 1) {
    char a[160], b[160];
    return CT_ERR(CT_ERR_RUNTIME, "source tensor shape must match self tensor shape, excluding the specified dimension. "
                  "Got self.shape = %s source.shape = %s", CT_SHAPE_STR(self, a), CT_SHAPE_STR(source, b));
  }
  return CT_OK;
}

ct_tensor *ct_index_add(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *source,
                        ct_scalar alpha) {
  if (index_func_check("index_add", self, &dim, index, source)) return NULL;
  if (alpha.kind == CT_SCALAR_FLOAT && !ct_dtype_is_floating(self->dtype)) {
    /* PyTorch truncates a float alpha for integral self */
  }
  if (check_range(index, dim_size(self, dim), RANGE_SELF, CT_ERR_INDEX, dim)) return NULL;
  ct_attrs a = dim_attrs(dim);
  a.f[0] = alpha.kind == CT_SCALAR_FLOAT ? alpha.f : (double)alpha.i;
  a.s[0] = alpha.kind == CT_SCALAR_FLOAT ? ct_si((int64_t)alpha.f) : alpha;
  ct_tensor *in[3] = {(ct_tensor *)self, (ct_tensor *)index, (ct_tensor *)source};
  return ct_dispatch_new(CT_OP_index_add, 3, in, self->ndim, self->shape, self->dtype, &a);
}
ct_status ct_index_add_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *source,
                        ct_scalar alpha) {
  CT_TRY(ct_check_tensor(self, "index_add_"));
  CT_TRY(ct_check_inplace(self));
  return finish_inplace(self, ct_index_add(self, dim, index, source, alpha));
}

/* grad.index_select(dim, index) shaped like the source (a 0-dim source takes one value) */
static ct_tensor *select_like_source(const ct_tensor *g, int64_t dim, const ct_tensor *idx, const ct_meta *m) {
  ct_tensor *s = ct_index_select(g, dim, idx);
  if (!s) return NULL;
  bool same = s->ndim == m->ndim;
  for (int d = 0; same && d < m->ndim; d++) same = s->shape[d] == m->shape[d];
  if (same) return s;
  ct_tensor *r = ct_reshape(s, m->ndim, m->shape);
  ct_release(s);
  return r;
}

ct_status ct_bw_index_add(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (ct_node_needs_grad(n, 0)) gin[0] = ct_retain(g[0]);
  if (ct_node_needs_grad(n, 2)) {
    ct_tensor *idx = ct_node_saved_in(n, 1);
    if (!idx) return ct_last_status();
    ct_tensor *s = select_like_source(g[0], n->a.k[0], idx, &n->in_meta[2]);
    if (!s) return ct_last_status();
    if (n->a.f[0] != 1.0) {
      gin[2] = ct_mul_scalar(s, ct_sf(n->a.f[0]));
      ct_release(s);
      if (!gin[2]) return ct_last_status();
    } else gin[2] = s;
  }
  return CT_OK;
}

ct_tensor *ct_index_copy(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *source) {
  if (ct_check_tensor(self, "index_copy") || ct_check_tensor(index, "index_copy") ||
      ct_check_tensor(source, "index_copy"))
    return NULL;
  dim = wrap_dim0(dim, self);
  if (dim < 0) return NULL;
  if (index->ndim >= 2) {
    ct_set_error(CT_ERR_INDEX, "index_copy_(): Index should have dimension 1 or 0 (got %d)", index->ndim);
    return NULL;
  }
  int64_t ni = ct_numel(index);
  if (source->ndim == 0 && ni != 1) {
    ct_set_error(CT_ERR_INDEX, "index_copy_(): When source is scalar, index should have one element (got %lld)",
                 (long long)ni);
    return NULL;
  }
  if (source->ndim != self->ndim && source->ndim != 0 && self->ndim != 0) {
    ct_set_error(CT_ERR_INDEX, "index_copy_(): When source and destination are not scalars, their dimensionality must "
                 "match. Source dimensionality (%d), destination dimensionality (%d)", source->ndim, self->ndim);
    return NULL;
  }
  if (index->dtype != CT_INT64) {
    ct_set_error(CT_ERR_RUNTIME, "index_copy_(): Expected a long tensor for index, but got %s",
                 ct_dtype_torch_name(index->dtype));
    return NULL;
  }
  if (self->dtype != source->dtype) {
    ct_set_error(CT_ERR_RUNTIME, "index_copy_(): self and source expected to have the same dtype, but got (self) %s and "
                 "(source) %s", ct_dtype_torch_name(self->dtype), ct_dtype_torch_name(source->dtype));
    return NULL;
  }
  /* slice shapes: both shapes without dim */
  {
    int64_t a[CT_MAX_DIMS], b[CT_MAX_DIMS];
    int na = 0, nb = 0;
    for (int d = 0; d < self->ndim; d++)
      if (d != dim) a[na++] = self->shape[d];
    for (int d = 0; d < source->ndim; d++)
      if (d != dim) b[nb++] = source->shape[d];
    bool same = na == nb;
    for (int d = 0; same && d < na; d++) same = a[d] == b[d];
    if (!same) {
      char s1[160], s2[160];
      ct_set_error(CT_ERR_RUNTIME, "index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                   "slice shape: %s at dimension %lld and source slice shape: %s at dimension 0.",
                   ct_shape_str(na, a, s1, sizeof s1), (long long)dim, ct_shape_str(nb, b, s2, sizeof s2));
      return NULL;
    }
  }
  if (source->ndim != 0 && ni != source->shape[dim]) {
    ct_set_error(CT_ERR_INDEX, "index_copy_(): Number of indices (%lld) should be equal to source.size(dim) (%lld)",
                 (long long)ni, (long long)source->shape[dim]);
    return NULL;
  }
  if (check_range(index, dim_size(self, dim), RANGE_COPY, CT_ERR_INDEX, dim)) return NULL;
  ct_attrs a = dim_attrs(dim);
  ct_tensor *in[3] = {(ct_tensor *)self, (ct_tensor *)index, (ct_tensor *)source};
  return ct_dispatch_new(CT_OP_index_copy, 3, in, self->ndim, self->shape, self->dtype, &a);
}
ct_status ct_index_copy_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *source) {
  CT_TRY(ct_check_tensor(self, "index_copy_"));
  CT_TRY(ct_check_inplace(self));
  return finish_inplace(self, ct_index_copy(self, dim, index, source));
}

ct_status ct_bw_index_copy(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_in(n, 1);
  if (!idx) return ct_last_status();
  int64_t dim = n->a.k[0];
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_index_fill(g[0], dim, idx, ct_si(0)))) return ct_last_status();
  if (ct_node_needs_grad(n, 2) && !(gin[2] = select_like_source(g[0], dim, idx, &n->in_meta[2])))
    return ct_last_status();
  return CT_OK;
}

static ct_status index_fill_check(const ct_tensor *self, int64_t *dim, const ct_tensor *index) {
  CT_TRY(ct_check_tensor(self, "index_fill"));
  CT_TRY(ct_check_tensor(index, "index_fill"));
  int64_t d = wrap_dim0(*dim, self);
  if (d < 0) return ct_last_status();
  *dim = d;
  if (index->dtype != CT_INT64) return CT_ERR(CT_ERR_INDEX, "index_fill_(): Expected dtype int64 for index.");
  if (index->ndim > 1) return CT_ERR(CT_ERR_INDEX, "Index has to be a vector/scalar");
  return check_range(index, dim_size(self, d), RANGE_DIM_WRAP, CT_ERR_INDEX, d);
}

ct_tensor *ct_index_fill(const ct_tensor *self, int64_t dim, const ct_tensor *index, ct_scalar value) {
  if (index_fill_check(self, &dim, index)) return NULL;
  ct_attrs a = dim_attrs(dim);
  a.s[0] = value;
  ct_tensor *in[2] = {(ct_tensor *)self, (ct_tensor *)index};
  return ct_dispatch_new(CT_OP_index_fill, 2, in, self->ndim, self->shape, self->dtype, &a);
}
/* index_fill_ through an expanded self: the positions it selects, as a mask of self's shape */
static ct_tensor *index_fill_mask(const ct_tensor *self, int64_t dim, const ct_tensor *index) {
  ct_options o = ct_opts_dtype(CT_BOOL);
  o.device = self->storage->device;
  ct_tensor *z = ct_zeros(self->ndim, self->shape, o);
  ct_tensor *m = z ? ct_index_fill(z, dim, index, ct_sb(true)) : NULL;
  ct_release(z);
  return m;
}
ct_status ct_index_fill_(ct_tensor *self, int64_t dim, const ct_tensor *index, ct_scalar value) {
  CT_TRY(ct_check_tensor(self, "index_fill_"));
  CT_TRY(ct_check_inplace_overlap_ok(self));
  ct_tensor *r = ct_index_fill(self, dim, index, value);
  if (r && ct_has_internal_overlap(self)) {
    ct_tensor *m = index_fill_mask(self, dim, index);
    if (!m) {
      ct_release(r);
      return ct_last_status();
    }
    ct_status st = overlap_fill(self, "index_fill_", r, m, value, NULL); /* takes r */
    ct_release(m);
    return st;
  }
  return finish_inplace(self, r);
}
ct_tensor *ct_index_fill_tensor(const ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *value) {
  if (ct_check_tensor(value, "index_fill")) return NULL;
  if (value->ndim != 0) {
    ct_set_error(CT_ERR_RUNTIME, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with %d "
                 "dimension(s).", value->ndim);
    return NULL;
  }
  if (index_fill_check(self, &dim, index)) return NULL;
  ct_attrs a = dim_attrs(dim);
  ct_tensor *v = ct_to_device(value, self->storage->device);
  if (!v) return NULL;
  ct_tensor *in[3] = {(ct_tensor *)self, (ct_tensor *)index, v};
  ct_tensor *r = ct_dispatch_new(CT_OP_index_fill_tensor, 3, in, self->ndim, self->shape, self->dtype, &a);
  ct_release(v);
  return r;
}
ct_status ct_index_fill_tensor_(ct_tensor *self, int64_t dim, const ct_tensor *index, const ct_tensor *value) {
  CT_TRY(ct_check_tensor(self, "index_fill_"));
  CT_TRY(ct_check_inplace_overlap_ok(self));
  ct_tensor *r = ct_index_fill_tensor(self, dim, index, value);
  if (r && ct_has_internal_overlap(self)) {
    ct_tensor *m = index_fill_mask(self, dim, index);
    if (!m) {
      ct_release(r);
      return ct_last_status();
    }
    ct_status st = overlap_fill(self, "index_fill_", r, m, ct_si(0), value); /* takes r */
    ct_release(m);
    return st;
  }
  return finish_inplace(self, r);
}

ct_status ct_bw_index_fill(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_in(n, 1);
  if (!idx) return ct_last_status();
  int64_t dim = n->a.k[0];
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_index_fill(g[0], dim, idx, ct_si(0)))) return ct_last_status();
  if (n->n_in > 2 && ct_node_needs_grad(n, 2)) {
    /* the value was written once per (deduplicated) index: sum the gradient there */
    ct_tensor *z = ct_zeros_like(g[0], NULL);
    ct_tensor *m = z ? ct_index_fill(z, dim, idx, ct_si(1)) : NULL;
    ct_tensor *p = m ? ct_mul(g[0], m) : NULL;
    gin[2] = sum_all(p);
    ct_release(z);
    ct_release(m);
    if (!gin[2]) return ct_last_status();
  }
  return CT_OK;
}

/* ---- masks ---------------------------------------------------------------------------- */
/* self and mask broadcast together (expanded: the expand nodes reduce gradients back).
 * The shapes are broadcast as (b, a): PyTorch expands (mask, self), so its size error
 * names the mask "tensor a". */
static ct_status broadcast_pair(const ct_tensor *a, const ct_tensor *b, ct_tensor **ea, ct_tensor **eb) {
  int nd;
  int64_t shape[CT_MAX_DIMS];
  *ea = *eb = NULL;
  CT_TRY(ct_broadcast_shapes(b->ndim, b->shape, a->ndim, a->shape, &nd, shape));
  *ea = ct_expand(a, nd, shape);
  *eb = *ea ? ct_expand(b, nd, shape) : NULL;
  if (!*eb) {
    ct_release(*ea);
    *ea = NULL;
    return ct_last_status();
  }
  return CT_OK;
}

static ct_status mask_check(const char *name, const ct_tensor *mask) {
  if (mask->dtype != CT_BOOL && mask->dtype != CT_UINT8)
    return CT_ERR(CT_ERR_RUNTIME, "%s only supports boolean masks, but got mask with dtype %s", name,
                  ct_dtype_torch_name(mask->dtype));
  return CT_OK;
}

static ct_tensor *masked_fill_impl(const ct_tensor *self, const ct_tensor *mask, ct_scalar value,
                                   const ct_tensor *vt) {
  if (ct_check_tensor(self, "masked_fill") || ct_check_tensor(mask, "masked_fill")) return NULL;
  if (mask_check("masked_fill_", mask)) return NULL;
  if (vt) {
    if (ct_check_tensor(vt, "masked_fill")) return NULL;
    if (vt->ndim != 0) {
      ct_set_error(CT_ERR_RUNTIME, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with %d "
                   "dimension(s).", vt->ndim);
      return NULL;
    }
  }
  ct_tensor *es, *em;
  if (broadcast_pair(self, mask, &es, &em)) return NULL;
  ct_attrs a = ct_attrs_zero();
  a.s[0] = value;
  ct_tensor *r;
  if (vt) {
    ct_tensor *v = ct_to_device(vt, self->storage->device);
    ct_tensor *in[3] = {es, em, v};
    r = v ? ct_dispatch_new(CT_OP_masked_fill_tensor, 3, in, es->ndim, es->shape, self->dtype, &a) : NULL;
    ct_release(v);
  } else {
    ct_tensor *in[2] = {es, em};
    r = ct_dispatch_new(CT_OP_masked_fill, 2, in, es->ndim, es->shape, self->dtype, &a);
  }
  ct_release(es);
  ct_release(em);
  return r;
}

ct_tensor *ct_masked_fill(const ct_tensor *self, const ct_tensor *mask, ct_scalar value) {
  return masked_fill_impl(self, mask, value, NULL);
}
ct_tensor *ct_masked_fill_tensor(const ct_tensor *self, const ct_tensor *mask, const ct_tensor *value) {
  return masked_fill_impl(self, mask, ct_si(0), value);
}

/* in place: the mask broadcasts to self, never the other way */
static ct_status check_inplace_broadcast(const ct_tensor *self, const ct_tensor *other) {
  int nd;
  int64_t shape[CT_MAX_DIMS];
  CT_TRY(ct_broadcast_shapes(self->ndim, self->shape, other->ndim, other->shape, &nd, shape));
  bool same = nd == self->ndim;
  for (int d = 0; same && d < nd; d++) same = shape[d] == self->shape[d];
  if (!same) {
    char a[160], b[160];
    return CT_ERR(CT_ERR_RUNTIME, "output with shape %s doesn't match the broadcast shape %s", CT_SHAPE_STR(self, a),
                  ct_shape_str(nd, shape, b, sizeof b));
  }
  return CT_OK;
}

ct_status ct_masked_fill_(ct_tensor *self, const ct_tensor *mask, ct_scalar value) {
  CT_TRY(ct_check_tensor(self, "masked_fill_"));
  CT_TRY(ct_check_tensor(mask, "masked_fill_"));
  CT_TRY(ct_check_inplace_overlap_ok(self));
  CT_TRY(check_inplace_broadcast(self, mask));
  ct_tensor *r = ct_masked_fill(self, mask, value);
  if (r && ct_has_internal_overlap(self)) return overlap_fill(self, "masked_fill_", r, mask, value, NULL);
  return finish_inplace(self, r);
}
ct_status ct_masked_fill_tensor_(ct_tensor *self, const ct_tensor *mask, const ct_tensor *value) {
  CT_TRY(ct_check_tensor(self, "masked_fill_"));
  CT_TRY(ct_check_tensor(mask, "masked_fill_"));
  CT_TRY(ct_check_inplace_overlap_ok(self));
  CT_TRY(check_inplace_broadcast(self, mask));
  ct_tensor *r = ct_masked_fill_tensor(self, mask, value);
  if (r && ct_has_internal_overlap(self)) return overlap_fill(self, "masked_fill_", r, mask, ct_si(0), value);
  return finish_inplace(self, r);
}

ct_status ct_bw_masked_fill(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *mask = ct_node_saved_in(n, 1);
  if (!mask) return ct_last_status();
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_masked_fill(g[0], mask, ct_si(0)))) return ct_last_status();
  if (n->n_in > 2 && ct_node_needs_grad(n, 2)) {
    gin[2] = sum_all(ct_masked_select(g[0], mask));
    if (!gin[2]) return ct_last_status();
  }
  return CT_OK;
}

/* Number of true elements of a mask (host read). */
static int64_t count_true(const ct_tensor *mask) {
  int64_t n;
  int64_t *v = read_i64(mask, &n);
  if (!v) return -1;
  int64_t c = 0;
  for (int64_t i = 0; i < n; i++) c += v[i] != 0;
  free(v);
  return c;
}

ct_tensor *ct_masked_select(const ct_tensor *self, const ct_tensor *mask) {
  if (ct_check_tensor(self, "masked_select") || ct_check_tensor(mask, "masked_select")) return NULL;
  if (mask->dtype != CT_BOOL && mask->dtype != CT_UINT8) {
    ct_set_error(CT_ERR_RUNTIME, "masked_select: expected BoolTensor or ByteTensor for mask");
    return NULL;
  }
  ct_tensor *es, *em;
  if (broadcast_pair(self, mask, &es, &em)) return NULL;
  int64_t cnt = count_true(em);
  ct_tensor *r = NULL;
  if (cnt >= 0) {
    ct_tensor *in[2] = {es, em};
    r = ct_dispatch_new(CT_OP_masked_select, 2, in, 1, &cnt, self->dtype, NULL);
  }
  ct_release(es);
  ct_release(em);
  return r;
}

ct_status ct_bw_masked_select(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *mask = ct_node_saved_in(n, 1);
  if (!mask) return ct_last_status();
  ct_tensor *z = ct_zeros_meta(&n->in_meta[0]);
  if (!z) return ct_last_status();
  gin[0] = ct_masked_scatter(z, mask, g[0]);
  ct_release(z);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_masked_scatter(const ct_tensor *self, const ct_tensor *mask, const ct_tensor *source) {
  if (ct_check_tensor(self, "masked_scatter") || ct_check_tensor(mask, "masked_scatter") ||
      ct_check_tensor(source, "masked_scatter"))
    return NULL;
  if (mask->dtype != CT_BOOL && mask->dtype != CT_UINT8) {
    ct_set_error(CT_ERR_RUNTIME, "masked_scatter_ only supports boolean masks, but got mask with dtype %s",
                 ct_dtype_torch_name(mask->dtype));
    return NULL;
  }
  if (self->dtype != source->dtype) {
    ct_set_error(CT_ERR_RUNTIME, "masked_scatter: expected self and source to have same dtypes but got%s and %s",
                 ct_dtype_torch_name(self->dtype), ct_dtype_torch_name(source->dtype));
    return NULL;
  }
  ct_tensor *es, *em;
  if (broadcast_pair(self, mask, &es, &em)) return NULL;
  ct_tensor *r = NULL;
  int64_t cnt = count_true(em);
  if (cnt >= 0 && cnt > ct_numel(source))
    ct_set_error(CT_ERR_RUNTIME, "Number of elements of source < number of ones in mask");
  else if (cnt >= 0) {
    int64_t ns = ct_numel(source);
    ct_tensor *flat = ct_reshape(source, 1, &ns); /* contiguous, differentiable */
    ct_tensor *fc = flat ? ct_contiguous(flat) : NULL;
    ct_tensor *in[3] = {es, em, fc};
    if (fc) r = ct_dispatch_new(CT_OP_masked_scatter, 3, in, es->ndim, es->shape, self->dtype, NULL);
    ct_release(flat);
    ct_release(fc);
  }
  ct_release(es);
  ct_release(em);
  return r;
}
ct_status ct_masked_scatter_(ct_tensor *self, const ct_tensor *mask, const ct_tensor *source) {
  CT_TRY(ct_check_tensor(self, "masked_scatter_"));
  CT_TRY(ct_check_tensor(mask, "masked_scatter_"));
  CT_TRY(ct_check_inplace(self));
  { /* PyTorch expands the mask to self here (expand's wording), not a broadcast */
    ct_tensor *em = ct_expand(mask, self->ndim, self->shape);
    if (!em) return ct_last_status();
    ct_release(em);
  }
  return finish_inplace(self, ct_masked_scatter(self, mask, source));
}

ct_status ct_bw_masked_scatter(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *mask = ct_node_saved_in(n, 1);
  if (!mask) return ct_last_status();
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_masked_fill(g[0], mask, ct_si(0)))) return ct_last_status();
  if (ct_node_needs_grad(n, 2)) {
    /* the selected gradient, padded with zeros to the source's length */
    ct_tensor *sel = ct_masked_select(g[0], mask);
    if (!sel) return ct_last_status();
    int64_t ns = n->in_meta[2].shape[0], k = ct_numel(sel);
    if (k == ns) gin[2] = sel;
    else {
      ct_options o = {n->in_meta[2].dtype, n->in_meta[2].device, false};
      ct_tensor *z = ct_zeros(1, &ns, o);
      ct_options lo = {CT_INT64, n->in_meta[2].device, false};
      ct_tensor *ar = ct_arange(ct_si(0), ct_si(k), ct_si(1), &lo);
      gin[2] = z && ar ? ct_index_copy(z, 0, ar, sel) : NULL;
      ct_release(z);
      ct_release(ar);
      ct_release(sel);
      if (!gin[2]) return ct_last_status();
    }
  }
  return CT_OK;
}

/* ---- take / put / take_along_dim ----------------------------------------------------------- */
ct_tensor *ct_take(const ct_tensor *self, const ct_tensor *index) {
  if (ct_check_tensor(self, "take") || ct_check_tensor(index, "take")) return NULL;
  if (index->dtype != CT_INT64) {
    ct_set_error(CT_ERR_RUNTIME, "take(): Expected a long tensor for index, but got %s",
                 ct_dtype_torch_name(index->dtype));
    return NULL;
  }
  int64_t n = ct_numel(self);
  if (n == 0 && ct_numel(index) != 0) {
    ct_set_error(CT_ERR_INDEX, "take(): tried to take from an empty tensor");
    return NULL;
  }
  if (check_range(index, n, RANGE_FLAT, CT_ERR_INDEX, 0)) return NULL;
  ct_tensor *c = ct_contiguous(self);
  if (!c) return NULL;
  ct_tensor *in[2] = {c, (ct_tensor *)index};
  ct_tensor *r = ct_dispatch_new(CT_OP_take, 2, in, index->ndim, index->shape, self->dtype, NULL);
  ct_release(c);
  return r;
}

ct_status ct_bw_take(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_in(n, 1);
  if (!idx) return ct_last_status();
  ct_tensor *z = ct_zeros_meta(&n->in_meta[0]);
  if (!z) return ct_last_status();
  gin[0] = ct_put(z, idx, g[0], true);
  ct_release(z);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_put(const ct_tensor *self, const ct_tensor *index, const ct_tensor *source, bool accumulate) {
  if (ct_check_tensor(self, "put") || ct_check_tensor(index, "put") || ct_check_tensor(source, "put")) return NULL;
  if (index->dtype != CT_INT64) {
    ct_set_error(CT_ERR_RUNTIME, "put_(): Expected a long tensor for index, but got %s",
                 ct_dtype_torch_name(index->dtype));
    return NULL;
  }
  if (self->dtype != source->dtype) {
    ct_set_error(CT_ERR_RUNTIME, "put_(): self and source expected to have the same dtype, but got self.dtype = %s and "
                 "source.dtype = %s", ct_dtype_torch_name(self->dtype), ct_dtype_torch_name(source->dtype));
    return NULL;
  }
  if (ct_numel(source) != ct_numel(index)) {
    ct_set_error(CT_ERR_RUNTIME, "put_(): Expected source and index to have the same number of elements, but got "
                 "source.numel() = %lld, index.numel() = %lld", (long long)ct_numel(source), (long long)ct_numel(index));
    return NULL;
  }
  int64_t n = ct_numel(self);
  if (n == 0 && ct_numel(index) != 0) {
    ct_set_error(CT_ERR_INDEX, "put_(): Tried to put elements into an empty tensor");
    return NULL;
  }
  if (check_range(index, n, RANGE_FLAT, CT_ERR_INDEX, 0)) return NULL;
  ct_tensor *src = ct_reshape(source, index->ndim, index->shape);
  if (!src) return NULL;
  ct_attrs a = ct_attrs_zero();
  a.k[0] = accumulate;
  ct_tensor *in[3] = {(ct_tensor *)self, (ct_tensor *)index, src};
  ct_tensor *r = ct_dispatch_new(CT_OP_put, 3, in, self->ndim, self->shape, self->dtype, &a);
  ct_release(src);
  return r;
}
ct_status ct_put_(ct_tensor *self, const ct_tensor *index, const ct_tensor *source, bool accumulate) {
  CT_TRY(ct_check_tensor(self, "put_"));
  CT_TRY(ct_check_inplace(self));
  return finish_inplace(self, ct_put(self, index, source, accumulate));
}

ct_status ct_bw_put(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_in(n, 1);
  if (!idx) return ct_last_status();
  if (ct_node_needs_grad(n, 0)) {
    if (n->a.k[0]) gin[0] = ct_retain(g[0]);
    else {
      ct_tensor *z = ct_zeros_meta(&n->in_meta[2]);
      gin[0] = z ? ct_put(g[0], idx, z, false) : NULL;
      ct_release(z);
    }
    if (!gin[0]) return ct_last_status();
  }
  if (ct_node_needs_grad(n, 2) && !(gin[2] = ct_take(g[0], idx))) return ct_last_status();
  return CT_OK;
}

ct_tensor *ct_take_along_dim(const ct_tensor *self, const ct_tensor *indices, bool has_dim, int64_t dim) {
  if (ct_check_tensor(self, "take_along_dim") || ct_check_tensor(indices, "take_along_dim")) return NULL;
  if (indices->dtype != CT_INT64) {
    ct_set_error(CT_ERR_RUNTIME, "torch.take_along_dim(): dtype of indices should be Long but got %s",
                 ct_dtype_torch_name(indices->dtype));
    return NULL;
  }
  if (!has_dim) {
    int64_t m1 = -1;
    ct_tensor *fs = ct_reshape(self, 1, &m1), *fi = fs ? ct_reshape(indices, 1, &m1) : NULL;
    ct_tensor *r = fi ? ct_gather(fs, 0, fi) : NULL;
    ct_release(fs);
    ct_release(fi);
    return r;
  }
  int64_t d = wrap_dim0(dim, self);
  if (d < 0) return NULL;
  if (self->ndim != indices->ndim) {
    ct_set_error(CT_ERR_RUNTIME, "torch.take_along_dim(): input and indices should have the same number of dimensions, "
                 "but got %d dimensions for input, and %d dimensions for indices", self->ndim, indices->ndim);
    return NULL;
  }
  /* broadcast all dims but dim */
  int64_t ss[CT_MAX_DIMS], is[CT_MAX_DIMS];
  for (int k = 0; k < self->ndim; k++) {
    ss[k] = self->shape[k];
    is[k] = indices->shape[k];
  }
  if (self->ndim) {
    ss[d] = 1;
    is[d] = 1;
  }
  int nd;
  int64_t b[CT_MAX_DIMS];
  if (ct_broadcast_shapes(self->ndim, ss, indices->ndim, is, &nd, b)) return NULL;
  int64_t sb[CT_MAX_DIMS], ib[CT_MAX_DIMS];
  for (int k = 0; k < nd; k++) {
    sb[k] = b[k];
    ib[k] = b[k];
  }
  if (nd) {
    sb[d] = self->shape[d];
    ib[d] = indices->shape[d];
  }
  ct_tensor *es = ct_expand(self, nd, sb), *ei = es ? ct_expand(indices, nd, ib) : NULL;
  ct_tensor *r = ei ? ct_gather(es, d, ei) : NULL;
  ct_release(es);
  ct_release(ei);
  return r;
}

/* ---- nonzero ---------------------------------------------------------------------------------- */
ct_tensor *ct_nonzero(const ct_tensor *self) {
  if (ct_check_tensor(self, "nonzero")) return NULL;
  int64_t cnt;
  if (ct_dtype_is_floating(self->dtype)) {
    /* count in double: a float like 0.5 is non-zero */
    int64_t n = ct_numel(self);
    double *v = ct_xmalloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return NULL;
    if (n && ct_copy_to_buffer(self, v, CT_FLOAT64, n) != CT_OK) {
      free(v);
      return NULL;
    }
    cnt = 0;
    for (int64_t i = 0; i < n; i++) cnt += v[i] != 0;
    free(v);
  } else {
    cnt = count_true(self);
    if (cnt < 0) return NULL;
  }
  int64_t shape[2] = {cnt, self->ndim};
  ct_tensor *in[1] = {(ct_tensor *)self};
  return ct_dispatch_new(CT_OP_nonzero, 1, in, 2, shape, CT_INT64, NULL);
}

int ct_nonzero_tuple(const ct_tensor *self, ct_tensor **out) {
  if (!out) {
    ct_set_error(CT_ERR_VALUE, "nonzero: out is NULL");
    return -1;
  }
  ct_tensor *nz = ct_nonzero(self);
  if (!nz) return -1;
  int k = self->ndim ? self->ndim : 1;
  for (int d = 0; d < k; d++) {
    ct_tensor *col = self->ndim ? ct_select(nz, 1, d) : NULL;
    if (!self->ndim) { /* 0-dim: one index 0 per non-zero */
      ct_options o = {CT_INT64, self->storage->device, false};
      int64_t n = nz->shape[0];
      out[d] = ct_zeros(1, &n, o);
    } else {
      out[d] = col ? ct_contiguous(col) : NULL;
    }
    ct_release(col);
    if (!out[d]) {
      for (int e = 0; e < d; e++) {
        ct_release(out[e]);
        out[e] = NULL;
      }
      ct_release(nz);
      return -1;
    }
  }
  ct_release(nz);
  return k;
}

/* ---- aten::index / index_put ---------------------------------------------------------------------- */
/* internal ops over self with its k indexed dims first and row-major linear indices */
static ct_tensor *index_lin(const ct_tensor *self_p, const ct_tensor *lin, int k) {
  int64_t shape[CT_MAX_DIMS];
  int nd = 0;
  if (lin->ndim + self_p->ndim - k > CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "index: the result would have more than %d dims", CT_MAX_DIMS);
    return NULL;
  }
  for (int d = 0; d < lin->ndim; d++) shape[nd++] = lin->shape[d];
  for (int d = k; d < self_p->ndim; d++) shape[nd++] = self_p->shape[d];
  ct_attrs a = ct_attrs_zero();
  a.k[0] = k;
  ct_tensor *in[2] = {(ct_tensor *)self_p, (ct_tensor *)lin};
  return ct_dispatch_new(CT_OP_index, 2, in, nd, shape, self_p->dtype, &a);
}

static ct_tensor *index_put_lin(const ct_tensor *self_p, const ct_tensor *lin, const ct_tensor *values, int k,
                                bool accumulate) {
  ct_attrs a = ct_attrs_zero();
  a.k[0] = k;
  a.k[1] = accumulate;
  ct_tensor *in[3] = {(ct_tensor *)self_p, (ct_tensor *)lin, (ct_tensor *)values};
  return ct_dispatch_new(CT_OP_index_put, 3, in, self_p->ndim, self_p->shape, self_p->dtype, &a);
}

ct_status ct_bw_index(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *lin = ct_node_saved_in(n, 1);
  if (!lin) return ct_last_status();
  ct_tensor *z = ct_zeros_meta(&n->in_meta[0]);
  if (!z) return ct_last_status();
  gin[0] = index_put_lin(z, lin, g[0], (int)n->a.k[0], true);
  ct_release(z);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_status ct_bw_index_put(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *lin = ct_node_saved_in(n, 1);
  if (!lin) return ct_last_status();
  int k = (int)n->a.k[0];
  if (ct_node_needs_grad(n, 0)) {
    if (n->a.k[1]) gin[0] = ct_retain(g[0]);
    else {
      ct_tensor *z = ct_zeros_meta(&n->in_meta[2]);
      gin[0] = z ? index_put_lin(g[0], lin, z, k, false) : NULL;
      ct_release(z);
    }
    if (!gin[0]) return ct_last_status();
  }
  if (ct_node_needs_grad(n, 2) && !(gin[2] = index_lin(g[0], lin, k))) return ct_last_status();
  return CT_OK;
}

/* The prepared form of self[indices]: self permuted with the indexed dims first,
 * the row-major linear index over them, and where the broadcast dims go. */
typedef struct {
  ct_tensor *self_p; /* permuted view of self */
  ct_tensor *lin;    /* int64, broadcast shape of the index tensors */
  int k;             /* number of indexed dims */
  int pos;           /* where the broadcast dims go in the result (0 when moved to the front) */
  int perm[CT_MAX_DIMS];
  int nd;            /* self's ndim */
} adv_prep;

static void adv_free(adv_prep *p) {
  ct_release(p->self_p);
  ct_release(p->lin);
  p->self_p = p->lin = NULL;
}

static bool is_mask(const ct_tensor *t) { return t->dtype == CT_BOOL || t->dtype == CT_UINT8; }

static ct_status adv_prepare(const ct_tensor *self, int n, const ct_tensor *const *indices, adv_prep *p) {
  memset(p, 0, sizeof *p);
  if (n > self->ndim) return CT_ERR(CT_ERR_INDEX, "too many indices for tensor of dimension %d", self->ndim);
  /* expand masks into their nonzero columns; idx[d] is the tensor indexing dim d (or NULL) */
  const ct_tensor *idx[CT_MAX_DIMS] = {0};
  ct_tensor *owned[CT_MAX_DIMS] = {0};
  int n_owned = 0, d = 0;
  ct_status st = CT_OK;
  for (int i = 0; i < n && st == CT_OK; i++) {
    const ct_tensor *t = indices[i];
    if (!t) {
      d++;
      continue;
    }
    if ((st = ct_check_tensor(t, "index")) != CT_OK) break;
    if (is_mask(t)) {
      if (d + t->ndim > self->ndim) {
        st = CT_ERR(CT_ERR_INDEX, "too many indices for tensor of dimension %d", self->ndim);
        break;
      }
      for (int j = 0; j < t->ndim; j++)
        if (t->shape[j] != self->shape[d + j]) {
          char a[160], b[160];
          st = CT_ERR(CT_ERR_INDEX, "The shape of the mask %s at index %d does not match the shape of the indexed "
                      "tensor %s at index %d", CT_SHAPE_STR(t, a), j, CT_SHAPE_STR(self, b), d + j);
          break;
        }
      if (st != CT_OK) break;
      ct_tensor *cols[CT_MAX_DIMS];
      int nc = t->ndim ? ct_nonzero_tuple(t, cols) : 0;
      if (nc < 0) {
        st = ct_last_status();
        break;
      }
      for (int j = 0; j < nc; j++) {
        owned[n_owned++] = cols[j];
        idx[d + j] = cols[j];
      }
      d += t->ndim;
    } else if (t->dtype != CT_INT64) {
      st = CT_ERR(CT_ERR_INDEX, "tensors used as indices must be long, byte or bool tensors");
    } else {
      idx[d++] = t;
    }
  }
  if (st == CT_OK && d > self->ndim) st = CT_ERR(CT_ERR_INDEX, "too many indices for tensor of dimension %d", self->ndim);
  /* broadcast the index tensors */
  int bnd = 0, k = 0, first = -1, last = -1;
  int64_t bshape[CT_MAX_DIMS];
  for (int j = 0; st == CT_OK && j < self->ndim; j++) {
    if (!idx[j]) continue;
    if (first < 0) first = j;
    last = j;
    k++;
    int nd2;
    int64_t s2[CT_MAX_DIMS];
    if (ct_broadcast_shapes(bnd, bshape, idx[j]->ndim, idx[j]->shape, &nd2, s2) != CT_OK) {
      /* PyTorch lists every index shape */
      char msg[1024] = "shape mismatch: indexing tensors could not be broadcast together with shapes ";
      bool firsts = true;
      for (int q = 0; q < self->ndim; q++) {
        if (!idx[q]) continue;
        char b[160];
        strncat(msg, firsts ? "" : ", ", sizeof msg - strlen(msg) - 1);
        strncat(msg, CT_SHAPE_STR(idx[q], b), sizeof msg - strlen(msg) - 1);
        firsts = false;
      }
      st = CT_ERR(CT_ERR_INDEX, "%s", msg);
      break;
    }
    bnd = nd2;
    memcpy(bshape, s2, sizeof s2);
  }
  if (st == CT_OK && k == 0) st = CT_ERR(CT_ERR_INDEX, "index: no index tensors were given");
  /* range-check (negatives wrap) and build the linear index on the host */
  int64_t *lin = NULL, nb = 1;
  if (st == CT_OK) {
    nb = ct_shape_numel(bnd, bshape);
    if (nb < 0) st = ct_last_status();
  }
  if (st == CT_OK && !(lin = ct_xcalloc((size_t)(nb ? nb : 1), sizeof *lin))) st = ct_last_status();
  int ord = 0;
  for (int j = 0; st == CT_OK && j < self->ndim; j++) {
    if (!idx[j]) continue;
    ct_tensor *e = ct_expand(idx[j], bnd, bshape);
    int64_t cnt;
    int64_t *v = e ? read_i64(e, &cnt) : NULL;
    ct_release(e);
    if (!v) {
      st = ct_last_status();
      break;
    }
    int64_t size = self->shape[j];
    for (int64_t q = 0; q < nb; q++) {
      int64_t x = v[q];
      if (x < -size || x >= size) {
        st = CT_ERR(CT_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld", (long long)x, ord,
                    (long long)size);
        break;
      }
      lin[q] = lin[q] * size + (x < 0 ? x + size : x);
    }
    free(v);
    ord++;
  }
  if (st == CT_OK) {
    ct_options o = {CT_INT64, self->storage->device, false};
    p->lin = ct_from_buffer(lin, CT_INT64, bnd, bshape, o);
    if (!p->lin) st = ct_last_status();
  }
  free(lin);
  for (int j = 0; j < n_owned; j++) ct_release(owned[j]);
  if (st != CT_OK) {
    adv_free(p);
    return st;
  }
  /* adjacent indexed dims keep their place; separated ones go to the front */
  bool adjacent = last - first + 1 == k;
  p->k = k;
  p->pos = adjacent ? first : 0;
  p->nd = self->ndim;
  int64_t perm[CT_MAX_DIMS];
  int q = 0;
  for (int j = 0; j < self->ndim; j++)
    if (idx[j]) perm[q++] = j;
  for (int j = 0; j < self->ndim; j++)
    if (!idx[j]) perm[q++] = j;
  for (int j = 0; j < self->ndim; j++) p->perm[j] = (int)perm[j];
  p->self_p = ct_permute(self, self->ndim, perm);
  if (!p->self_p) {
    adv_free(p);
    return ct_last_status();
  }
  return CT_OK;
}

/* result in [B..., rest...] order -> move the B dims to p->pos */
static ct_tensor *adv_place(const adv_prep *p, ct_tensor *r, bool to_front) {
  if (!r) return NULL;
  int nb = p->lin->ndim, nd = r->ndim;
  if (p->pos == 0 || nb == 0) return r;
  int64_t perm[CT_MAX_DIMS];
  /* placed order: rest[:pos], B, rest[pos:]; in r: B then rest */
  int q = 0;
  for (int j = 0; j < p->pos; j++) perm[q++] = nb + j;
  for (int j = 0; j < nb; j++) perm[q++] = j;
  for (int j = nb + p->pos; j < nd; j++) perm[q++] = j;
  if (to_front) { /* the inverse permutation */
    int64_t inv[CT_MAX_DIMS];
    for (int j = 0; j < nd; j++) inv[perm[j]] = j;
    memcpy(perm, inv, sizeof perm);
  }
  ct_tensor *o = ct_permute(r, nd, perm);
  ct_release(r);
  return o;
}

ct_tensor *ct_index_tensors(const ct_tensor *self, int n, const ct_tensor *const *indices) {
  if (ct_check_tensor(self, "index")) return NULL;
  if (n < 0 || (n > 0 && !indices)) {
    ct_set_error(CT_ERR_VALUE, "index: invalid indices");
    return NULL;
  }
  adv_prep p;
  if (adv_prepare(self, n, indices, &p)) return NULL;
  ct_tensor *r = adv_place(&p, index_lin(p.self_p, p.lin, p.k), false);
  adv_free(&p);
  return r;
}

/* the permuted result of index_put as a tensor shaped like self */
static ct_tensor *adv_unpermute(const adv_prep *p, ct_tensor *r) {
  if (!r) return NULL;
  int64_t inv[CT_MAX_DIMS];
  for (int j = 0; j < p->nd; j++) inv[p->perm[j]] = j;
  ct_tensor *o = ct_permute(r, p->nd, inv);
  ct_release(r);
  return o;
}

/* values broadcast to the indexing result, in [B..., rest...] order */
static ct_tensor *adv_values(const adv_prep *p, const ct_tensor *self, const ct_tensor *values) {
  if (values->dtype != self->dtype) {
    ct_set_error(CT_ERR_RUNTIME, "Index put requires the source and destination dtypes match, got %s for the "
                 "destination and %s for the source.", ct_dtype_torch_name(self->dtype), ct_dtype_torch_name(values->dtype));
    return NULL;
  }
  /* the indexing result's shape */
  int64_t rs[CT_MAX_DIMS];
  int nb = p->lin->ndim, nr = nb + p->nd - p->k, q = 0;
  if (nr > CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "index_put: the indexing result would have more than %d dims", CT_MAX_DIMS);
    return NULL;
  }
  for (int j = 0; j < p->pos; j++) rs[q++] = p->self_p->shape[p->k + j];
  for (int j = 0; j < nb; j++) rs[q++] = p->lin->shape[j];
  for (int j = p->k + p->pos; j < p->nd; j++) rs[q++] = p->self_p->shape[j];
  int bnd;
  int64_t bs[CT_MAX_DIMS];
  bool ok = values->ndim <= nr && ct_broadcast_shapes(nr, rs, values->ndim, values->shape, &bnd, bs) == CT_OK && bnd == nr;
  for (int j = 0; ok && j < nr; j++) ok = bs[j] == rs[j];
  if (!ok) {
    char a[160], b[160];
    ct_set_error(CT_ERR_RUNTIME, "shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of "
                 "shape %s", CT_SHAPE_STR(values, a), ct_shape_str(nr, rs, b, sizeof b));
    return NULL;
  }
  ct_tensor *e = ct_expand(values, nr, rs);
  return adv_place(p, e, true);
}

static ct_tensor *index_put_prepared(const adv_prep *p, const ct_tensor *self, const ct_tensor *values,
                                     bool accumulate) {
  ct_tensor *v = adv_values(p, self, values);
  if (!v) return NULL;
  ct_tensor *r = adv_unpermute(p, index_put_lin(p->self_p, p->lin, v, p->k, accumulate));
  ct_release(v);
  return r;
}

ct_tensor *ct_index_put_tensors(const ct_tensor *self, int n, const ct_tensor *const *indices, const ct_tensor *values,
                                bool accumulate) {
  if (ct_check_tensor(self, "index_put") || ct_check_tensor(values, "index_put")) return NULL;
  if (n < 0 || (n > 0 && !indices)) {
    ct_set_error(CT_ERR_VALUE, "index_put: invalid indices");
    return NULL;
  }
  adv_prep p;
  if (adv_prepare(self, n, indices, &p)) return NULL;
  ct_tensor *r = index_put_prepared(&p, self, values, accumulate);
  adv_free(&p);
  return r;
}

/* In place. Without autograd the kernel writes straight into self. */
static ct_status index_put_inplace(ct_tensor *self, const adv_prep *p, const ct_tensor *values, bool accumulate) {
  bool graph = ct_grad_mode_recording() && (ct_tensor_requires_grad(self) || ct_tensor_requires_grad(values));
  if (graph || values->storage == self->storage)
    return finish_inplace(self, index_put_prepared(p, self, values, accumulate));
  ct_tensor *v = adv_values(p, self, values);
  if (!v) return ct_last_status();
  ct_call c = ct_call_make(CT_OP_index_put);
  c.n_in = 3;
  c.n_out = 1;
  c.in[0] = p->self_p;
  c.in[1] = p->lin;
  c.in[2] = v;
  c.out[0] = p->self_p;
  c.a.k[0] = p->k;
  c.a.k[1] = accumulate;
  ct_status st = ct_run_kernel(&c);
  if (st == CT_OK) ct_bump_version(self);
  ct_release(v);
  return st;
}

static void warn_expanded(const char *who, const char *example) {
  ct_warn("Use of %s on expanded tensors is deprecated. Please clone() the tensor before performing this operation. "
          "This also applies to advanced indexing e.g. %s", who, example);
}

/* masked_fill_ / index_fill_ through an expanded self (PyTorch 1.13 warns, then writes in place): r, the
 * out-of-place result, validated the call; the selected elements are written where they live, so a shared
 * location takes the value when any of its aliases is selected (copying r back would let the last alias win).
 * Takes r. */
static ct_status overlap_fill(ct_tensor *self, const char *who, ct_tensor *r, const ct_tensor *mask,
                              ct_scalar value, const ct_tensor *vt) {
  bool graph = ct_grad_mode_recording() && (ct_tensor_requires_grad(self) || (vt && ct_tensor_requires_grad(vt)));
  if (graph) return finish_inplace(self, r);
  ct_release(r);
  if (who) warn_expanded(who, "tensor[mask] = scalar");
  ct_options o = ct_opts_dtype(self->dtype);
  o.device = self->storage->device;
  ct_tensor *v = vt ? ct_to_dtype(vt, self->dtype) : ct_scalar_tensor(value, o);
  ct_tensor *mv = v && vt ? ct_to_device(v, self->storage->device) : (v ? ct_retain(v) : NULL);
  ct_tensor *m = mv ? ct_expand((ct_tensor *)mask, self->ndim, self->shape) : NULL;
  ct_tensor *mb = m ? ct_to_dtype(m, CT_BOOL) : NULL; /* uint8 masks select as bool */
  ct_status st = mb ? CT_OK : ct_last_status();
  if (st == CT_OK) {
    adv_prep p;
    const ct_tensor *idx[1] = {mb};
    st = adv_prepare(self, 1, idx, &p);
    if (st == CT_OK) {
      st = index_put_inplace(self, &p, mv, false);
      adv_free(&p);
    }
  }
  ct_release(v);
  ct_release(mv);
  ct_release(m);
  ct_release(mb);
  return st;
}

/* Writes value where mask (broadcast to self) is true, in place through an overlapping self, without a
 * warning (tril_/triu_ on an expanded tensor: PyTorch 1.13 zeroes every location one of its aliases selects). */
ct_status ct_fill_where_overlapping_(ct_tensor *self, const ct_tensor *mask, ct_scalar value) {
  CT_TRY(ct_check_tensor(self, "fill_"));
  CT_TRY(ct_check_tensor(mask, "fill_"));
  ct_tensor *r = ct_retain(self); /* overlap_fill takes a result it does not need here */
  return overlap_fill(self, NULL, r, mask, value, NULL);
}

ct_status ct_index_put_tensors_(ct_tensor *self, int n, const ct_tensor *const *indices, const ct_tensor *values,
                                bool accumulate) {
  CT_TRY(ct_check_tensor(self, "index_put_"));
  CT_TRY(ct_check_tensor(values, "index_put_"));
  CT_TRY(ct_check_inplace_overlap_ok(self));
  if (n < 0 || (n > 0 && !indices)) return CT_ERR(CT_ERR_VALUE, "index_put_: invalid indices");
  adv_prep p;
  CT_TRY(adv_prepare(self, n, indices, &p));
  if (ct_has_internal_overlap(self)) warn_expanded("index_put_", "tensor[indices] = tensor");
  ct_status st = index_put_inplace(self, &p, values, accumulate);
  adv_free(&p);
  return st;
}

/* ---- Python-style indexing ----------------------------------------------------------------------- */
/* Applies ints, slices, None, Ellipsis and Python bools as views (as PyTorch's
 * applySlicing does) and collects the tensor indices by the dim they index. */
typedef struct {
  ct_tensor *view;                   /* the sliced tensor */
  const ct_tensor *idx[CT_MAX_DIMS]; /* tensor index per dim of view (NULL = none) */
  ct_tensor *owned[CT_MAX_DIMS];     /* index tensors made here (Python bools) */
  int n_idx;                         /* entries used in idx */
  bool any;
} slicing;

static void slicing_free(slicing *s) {
  ct_release(s->view);
  for (int j = 0; j < CT_MAX_DIMS; j++) ct_release(s->owned[j]);
  memset(s, 0, sizeof *s);
}

static ct_status slicing_step(slicing *s, ct_tensor *next) {
  if (!next) return ct_last_status();
  ct_release(s->view);
  s->view = next;
  return CT_OK;
}

static ct_status record_index(slicing *s, int64_t *dim, const ct_tensor *t, ct_tensor *owned) {
  if (*dim >= CT_MAX_DIMS) {
    ct_release(owned);
    return CT_ERR(CT_ERR_INDEX, "too many indices: more than %d dims", CT_MAX_DIMS);
  }
  s->idx[*dim] = t;
  if (owned) {
    ct_release(s->owned[*dim]);
    s->owned[*dim] = owned;
  }
  if (*dim + 1 > s->n_idx) s->n_idx = (int)*dim + 1;
  s->any = true;
  (*dim)++;
  return CT_OK;
}

/* A Python bool (or 0-dim bool/uint8 tensor): a new axis indexed by [0] (True) or [] (False). */
static ct_status apply_bool(slicing *s, int64_t *dim, bool b) {
  CT_TRY(slicing_step(s, ct_unsqueeze(s->view, *dim)));
  int64_t len = b ? 1 : 0;
  ct_options o = {CT_INT64, s->view->storage->device, false};
  ct_tensor *t = ct_zeros(1, &len, o);
  if (!t) return ct_last_status();
  return record_index(s, dim, t, t);
}

static ct_status apply_slicing(const ct_tensor *t, int n, const ct_index_item *items, slicing *s) {
  memset(s, 0, sizeof *s);
  if (n < 0 || (n > 0 && !items)) return CT_ERR(CT_ERR_VALUE, "index: invalid items");
  int64_t specified = 0;
  for (int i = 0; i < n; i++) {
    switch (items[i].kind) {
      case CT_IDX_INT:
      case CT_IDX_SLICE: specified++; break;
      case CT_IDX_TENSOR:
        CT_TRY(ct_check_tensor(items[i].tensor, "index"));
        specified += is_mask(items[i].tensor) ? items[i].tensor->ndim : 1;
        break;
      case CT_IDX_ELLIPSIS: break; /* PyTorch accepts several; each skips the unspecified dims */
      case CT_IDX_NONE:
      case CT_IDX_BOOL: break;
      default: return CT_ERR(CT_ERR_VALUE, "index: unknown item kind %d", (int)items[i].kind);
    }
  }
  if (specified > t->ndim) return CT_ERR(CT_ERR_INDEX, "too many indices for tensor of dimension %d", t->ndim);
  s->view = ct_retain((ct_tensor *)t); /* views are made by the first item that needs one */
  int64_t dim = 0;
  for (int i = 0; i < n; i++) {
    const ct_index_item *it = &items[i];
    ct_status st = CT_OK;
    switch (it->kind) {
      case CT_IDX_INT: {
        if (s->view->ndim == 0) {
          st = CT_ERR(CT_ERR_INDEX, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                      "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
          break;
        }
        int64_t size = s->view->shape[dim];
        if (it->i < -size || it->i >= size) {
          st = CT_ERR(CT_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld", (long long)it->i, i,
                      (long long)size);
          break;
        }
        st = slicing_step(s, ct_select(s->view, dim, it->i));
        break;
      }
      case CT_IDX_SLICE: {
        int64_t step = it->has_step ? it->step : 1;
        if (step == 0) {
          st = CT_ERR(CT_ERR_VALUE, "slice step cannot be zero");
          break;
        }
        if (step < 0) {
          st = CT_ERR(CT_ERR_VALUE, "step must be greater than zero");
          break;
        }
        int64_t start = it->has_start ? it->start : 0, stop = it->has_stop ? it->stop : INT64_MAX;
        st = slicing_step(s, ct_slice(s->view, dim, start, stop, step));
        dim++;
        break;
      }
      case CT_IDX_NONE:
        st = slicing_step(s, ct_unsqueeze(s->view, dim));
        dim++;
        break;
      case CT_IDX_ELLIPSIS: dim += t->ndim - specified; break;
      case CT_IDX_BOOL: st = apply_bool(s, &dim, it->i != 0); break;
      case CT_IDX_TENSOR: {
        const ct_tensor *x = it->tensor;
        if (x->ndim == 0 && ct_dtype_is_integral(x->dtype, true)) {
          int64_t v;
          if ((st = ct_item_int64(x, &v)) != CT_OK) break;
          if (x->dtype == CT_BOOL || x->dtype == CT_UINT8) {
            st = apply_bool(s, &dim, v != 0);
            break;
          }
          ct_index_item sel = ct_ii(v);
          /* a 0-dim integer tensor selects like an int */
          if (s->view->ndim == 0) {
            st = CT_ERR(CT_ERR_INDEX, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                        "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
            break;
          }
          int64_t size = s->view->shape[dim];
          if (sel.i < -size || sel.i >= size) {
            st = CT_ERR(CT_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld", (long long)v, i,
                        (long long)size);
            break;
          }
          st = slicing_step(s, ct_select(s->view, dim, v));
          break;
        }
        st = record_index(s, &dim, x, NULL);
        break;
      }
    }
    if (st != CT_OK) {
      slicing_free(s);
      return st;
    }
  }
  return CT_OK;
}

ct_tensor *ct_index(const ct_tensor *t, int n, const ct_index_item *items) {
  if (ct_check_tensor(t, "index")) return NULL;
  slicing s;
  if (apply_slicing(t, n, items, &s)) return NULL;
  ct_tensor *r;
  if (!s.any) {
    r = s.view == t ? ct_alias(t) : ct_retain(s.view);
  } else {
    r = ct_index_tensors(s.view, s.n_idx, s.idx);
  }
  slicing_free(&s);
  return r;
}

/* Python's setitem strips a value's leading size-1 dims before broadcasting. */
static ct_tensor *strip_leading_ones(const ct_tensor *v) {
  int k = 0;
  while (k < v->ndim && v->shape[k] == 1) k++;
  if (k == 0) return ct_retain((ct_tensor *)v);
  return ct_view(v, v->ndim - k, v->shape + k);
}

ct_status ct_index_put_(ct_tensor *t, int n, const ct_index_item *items, const ct_tensor *value, bool accumulate) {
  CT_TRY(ct_check_tensor(t, "index_put_"));
  CT_TRY(ct_check_tensor(value, "index_put_"));
  CT_TRY(ct_check_inplace_overlap_ok(t)); /* the view written decides (PyTorch's copy_to) */
  slicing s;
  CT_TRY(apply_slicing(t, n, items, &s));
  ct_tensor *v = strip_leading_ones(value);
  ct_status st = v ? CT_OK : ct_last_status();
  if (st == CT_OK && !s.any && !accumulate && value->ndim == 0 && s.view->ndim > 0 &&
      value->storage->device.type == CT_DEVICE_CPU) {
    /* a 0-dim CPU value into a view of another shape is a fill (allowed through an expanded view) */
    st = ct_fill_from_tensor_(s.view, value);
  } else if (st == CT_OK && !s.any) {
    /* basic indexing: write through the view (copy_ converts the dtype) */
    ct_tensor *e = ct_expand(v, s.view->ndim, s.view->shape);
    if (!e) st = ct_last_status();
    else if (accumulate) {
      ct_tensor *c = ct_to_dtype(e, s.view->dtype);
      st = c ? ct_add_(s.view, c) : ct_last_status();
      ct_release(c);
    } else st = ct_copy_(s.view, e);
    ct_release(e);
  } else if (st == CT_OK) {
    adv_prep p;
    st = adv_prepare(s.view, s.n_idx, s.idx, &p);
    if (st == CT_OK) {
      if (ct_has_internal_overlap(s.view)) warn_expanded("index_put_", "tensor[indices] = tensor");
      st = index_put_inplace(s.view, &p, v, accumulate);
      adv_free(&p);
    }
  }
  ct_release(v);
  slicing_free(&s);
  return st;
}

ct_status ct_index_put_scalar_(ct_tensor *t, int n, const ct_index_item *items, ct_scalar value) {
  CT_TRY(ct_check_tensor(t, "index_put_"));
  ct_options o = {t->dtype, t->storage->device, false};
  ct_tensor *v = ct_scalar_tensor(value, o);
  if (!v) return ct_last_status();
  ct_status st = ct_index_put_(t, n, items, v, false);
  ct_release(v);
  return st;
}
