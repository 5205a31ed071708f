/* CPU reference kernels of the index family. The entry points in src/ops/index.c
 * check every index against its bound before the kernel runs (with PyTorch's
 * messages), so kernels only wrap negative indices and never range-check.
 * Outputs are fresh contiguous tensors; writers first copy self into them.
 * Writes that may hit one element several times run serially, in index order. */
#include "cpu_iter.h"
#include <math.h>
#include <stdlib.h>

ct_status ct_cpu_copy(const ct_call *c);

static ct_status copy_into(ct_tensor *dst, ct_tensor *src) {
  ct_call c = ct_call_make(CT_OP_copy);
  c.n_in = 1;
  c.n_out = 1;
  c.in[0] = src;
  c.out[0] = dst;
  return ct_cpu_copy(&c);
}

/* A handle over t's storage with another geometry (never registered or released). */
static ct_tensor restride(const ct_tensor *t, int nd, const int64_t *shape, const int64_t *stride) {
  ct_tensor r = *t;
  r.ndim = nd;
  for (int d = 0; d < nd; d++) {
    r.shape[d] = shape[d];
    r.stride[d] = stride[d];
  }
  return r;
}

static inline int64_t wrap(int64_t v, int64_t size) { return v < 0 ? v + size : v; }

/* ---- gather-like reads: out[p] = src[p with dim -> idx[p]] -------------------- */
typedef struct {
  size_t isz;
  ct_dtype idt;
  int64_t dstride; /* bytes per step along the indexed dim of src */
  int64_t size;    /* size of that dim */
} read_ctx;

static void read_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  read_ctx *k = vctx;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = wrap(ct_load_i64(p[1] + i * s[1], k->idt), k->size);
    memcpy(p[0] + i * s[0], p[2] + i * s[2] + v * k->dstride, k->isz);
  }
}

/* gather: in (self, index), k0 = dim; out has index's shape. */
ct_status ct_cpu_gather(const ct_call *c) {
  ct_tensor *self = c->in[0], *idx = c->in[1], *out = c->out[0];
  if (ct_numel(out) == 0) return CT_OK;
  int dim = (int)c->a.k[0];
  int64_t st[CT_MAX_DIMS];
  for (int d = 0; d < self->ndim; d++) st[d] = self->stride[d];
  read_ctx k = {ct_dtype_size(self->dtype), idx->dtype, 0, 1};
  if (self->ndim > 0) {
    k.dstride = self->stride[dim] * (int64_t)k.isz;
    k.size = self->shape[dim];
    st[dim] = 0;
  }
  ct_tensor sr = restride(self, out->ndim, out->shape, st);
  ct_tensor *ts[3] = {out, idx, &sr};
  ct_cpu_foreach(3, ts, read_loop, &k, true);
  return CT_OK;
}

/* index_select: in (self, index 1-D or 0-dim), k0 = dim. */
ct_status ct_cpu_index_select(const ct_call *c) {
  ct_tensor *self = c->in[0], *idx = c->in[1], *out = c->out[0];
  if (ct_numel(out) == 0) return CT_OK;
  int dim = (int)c->a.k[0];
  int64_t st[CT_MAX_DIMS], ist[CT_MAX_DIMS];
  for (int d = 0; d < out->ndim; d++) {
    st[d] = self->ndim ? self->stride[d] : 0;
    ist[d] = 0;
  }
  read_ctx k = {ct_dtype_size(self->dtype), idx->dtype, 0, 1};
  if (self->ndim > 0) {
    k.dstride = self->stride[dim] * (int64_t)k.isz;
    k.size = self->shape[dim];
    st[dim] = 0;
    ist[dim] = idx->ndim ? idx->stride[0] : 0;
  }
  ct_tensor sr = restride(self, out->ndim, out->shape, st);
  ct_tensor ir = restride(idx, out->ndim, out->shape, ist);
  ct_tensor *ts[3] = {out, &ir, &sr};
  ct_cpu_foreach(3, ts, read_loop, &k, true);
  return CT_OK;
}

/* ---- scatter-like writes: dst[p with dim -> idx[p]] (op)= src[p] ------------ */
enum { W_COPY = 0, W_ADD, W_MUL, W_MEAN, W_MAX, W_MIN, W_FILL, W_INIT };

typedef struct {
  int mode;
  ct_dtype dt, sdt, idt;
  size_t isz;
  int64_t dstride, size;
  bool fp;
  double fv, alpha_f; /* fill value / alpha (floating) */
  int64_t iv, alpha_i;
  _Alignas(8) char fill_bytes[8];
  int64_t *count;  /* W_MEAN / W_INIT: per element of dst (contiguous) */
  char *dst_base;
  int reduce;      /* W_INIT: the reduction whose identity is written */
} write_ctx;

static double ident_f(int reduce) {
  switch (reduce) {
    case W_MUL: return 1.0;
    case W_MAX: return -INFINITY;
    case W_MIN: return INFINITY;
    default: return 0.0;
  }
}
static int64_t ident_i(int reduce, ct_dtype dt) {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  switch (dt) {
    case CT_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
    case CT_UINT8: lo = 0; hi = UINT8_MAX; break;
    case CT_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
    case CT_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
    case CT_BOOL: lo = 0; hi = 1; break;
    default: break;
  }
  switch (reduce) {
    case W_MUL: return 1;
    case W_MAX: return lo;
    case W_MIN: return hi;
    default: return 0;
  }
}

static inline void write_one(write_ctx *k, char *d, const char *s) {
  switch (k->mode) {
    case W_COPY:
      if (k->sdt == k->dt) memcpy(d, s, k->isz);
      else if (k->fp) ct_store_f64(d, k->dt, ct_load_f64(s, k->sdt));
      else ct_store_i64(d, k->dt, ct_load_i64(s, k->sdt));
      return;
    case W_FILL: memcpy(d, k->fill_bytes, k->isz); return;
    case W_INIT: {
      int64_t e = (d - k->dst_base) / (int64_t)k->isz;
      if (k->count[e] == 0) {
        if (k->fp) ct_store_f64(d, k->dt, ident_f(k->reduce));
        else ct_store_i64(d, k->dt, ident_i(k->reduce, k->dt));
      }
      k->count[e] = -1; /* touched; the accumulation pass counts from 0 */
      return;
    }
    default: break;
  }
  if (k->count) {
    int64_t e = (d - k->dst_base) / (int64_t)k->isz;
    k->count[e] = k->count[e] < 0 ? 1 : k->count[e] + 1;
  }
  if (k->fp) {
    double a = ct_load_f64(d, k->dt), b = ct_load_f64(s, k->sdt), r;
    switch (k->mode) {
      case W_ADD: case W_MEAN: r = a + k->alpha_f * b; break;
      case W_MUL: r = a * b; break;
      case W_MAX: r = (isnan(a) || a > b) ? a : b; if (isnan(b)) r = b; break;
      default: r = (isnan(a) || a < b) ? a : b; if (isnan(b)) r = b; break;
    }
    ct_store_f64(d, k->dt, r);
  } else {
    int64_t a = ct_load_i64(d, k->dt), b = ct_load_i64(s, k->sdt), r;
    switch (k->mode) {
      case W_ADD: case W_MEAN: r = (int64_t)((uint64_t)a + (uint64_t)k->alpha_i * (uint64_t)b); break;
      case W_MUL: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
      case W_MAX: r = a > b ? a : b; break;
      default: r = a < b ? a : b; break;
    }
    if (k->dt == CT_BOOL) r = r != 0;
    ct_store_i64(d, k->dt, r);
  }
}

/* tensors: [idx, dst_r, src_r?] */
static void write_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  write_ctx *k = vctx;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = wrap(ct_load_i64(p[0] + i * s[0], k->idt), k->size);
    write_one(k, p[1] + i * s[1] + v * k->dstride, k->mode == W_FILL || k->mode == W_INIT ? NULL : p[2] + i * s[2]);
  }
}

static void ctx_init(write_ctx *k, const ct_tensor *out, const ct_tensor *idx, const ct_tensor *src, int mode) {
  memset(k, 0, sizeof *k);
  k->mode = mode;
  k->dt = out->dtype;
  k->sdt = src ? src->dtype : out->dtype;
  k->idt = idx->dtype;
  k->isz = ct_dtype_size(out->dtype);
  k->fp = ct_dtype_is_floating(out->dtype);
  k->alpha_f = 1.0;
  k->alpha_i = 1;
  k->size = 1;
  k->dst_base = ct_cpu_ptr(out);
}

static void set_fill(write_ctx *k, ct_scalar v) {
  if (v.kind == CT_SCALAR_FLOAT) ct_store_f64(k->fill_bytes, k->dt, v.f);
  else ct_store_i64(k->fill_bytes, k->dt, v.i);
}

/* Scatter over index's shape: dst restrided to index's shape with stride[dim]=0. */
static void scatter_pass(write_ctx *k, ct_tensor *out, ct_tensor *idx, ct_tensor *src, int dim) {
  int64_t st[CT_MAX_DIMS];
  for (int d = 0; d < out->ndim; d++) st[d] = out->stride[d];
  if (out->ndim > 0) {
    k->dstride = out->stride[dim] * (int64_t)k->isz;
    k->size = out->shape[dim];
    st[dim] = 0;
  }
  ct_tensor dr = restride(out, idx->ndim, idx->shape, st);
  ct_tensor sr;
  ct_tensor *ts[3] = {idx, &dr, NULL};
  int nt = 2;
  if (src) {
    sr = restride(src, idx->ndim, idx->shape, src->stride);
    ts[2] = &sr;
    nt = 3;
  }
  ct_cpu_foreach(nt, ts, write_loop, k, false);
}

/* scatter: in (self, index, src), k0 = dim. scatter_value: in (self, index), s0 = value.
 * scatter_add: in (self, index, src). */
ct_status ct_cpu_scatter(const ct_call *c) {
  ct_tensor *out = c->out[0], *idx = c->in[1], *src = c->n_in > 2 ? c->in[2] : NULL;
  CT_TRY(copy_into(out, c->in[0]));
  if (ct_numel(idx) == 0) return CT_OK;
  int mode = c->op == CT_OP_scatter_add ? W_ADD : src ? W_COPY : W_FILL;
  write_ctx k;
  ctx_init(&k, out, idx, src, mode);
  if (mode == W_FILL) set_fill(&k, c->a.s[0]);
  scatter_pass(&k, out, idx, src, (int)c->a.k[0]);
  return CT_OK;
}

/* scatter_reduce: in (self, index, src), k0 = dim, k1 = reduce (0 sum, 1 prod, 2 mean,
 * 3 amax, 4 amin), k2 = include_self. */
ct_status ct_cpu_scatter_reduce(const ct_call *c) {
  ct_tensor *out = c->out[0], *idx = c->in[1], *src = c->in[2];
  CT_TRY(copy_into(out, c->in[0]));
  if (ct_numel(idx) == 0) return CT_OK;
  static const int modes[5] = {W_ADD, W_MUL, W_MEAN, W_MAX, W_MIN};
  int reduce = modes[c->a.k[1]];
  bool include_self = c->a.k[2] != 0;
  int dim = (int)c->a.k[0];
  int64_t n = ct_numel(out);
  int64_t *count = NULL;
  if (reduce == W_MEAN || !include_self) {
    count = ct_xcalloc((size_t)n, sizeof *count);
    if (!count) return ct_last_status();
  }
  write_ctx k;
  if (!include_self) {
    ctx_init(&k, out, idx, NULL, W_INIT);
    k.reduce = reduce;
    k.count = count;
    scatter_pass(&k, out, idx, NULL, dim);
  }
  ctx_init(&k, out, idx, src, reduce);
  if (reduce == W_MEAN) k.count = count;
  scatter_pass(&k, out, idx, src, dim);
  if (reduce == W_MEAN) {
    /* divide by the number of values (self included when include_self) */
    char *base = ct_cpu_ptr(out);
    size_t isz = ct_dtype_size(out->dtype);
    bool fp = ct_dtype_is_floating(out->dtype);
    for (int64_t e = 0; e < n; e++) {
      int64_t cnt = count[e] + (include_self ? 1 : 0);
      if (count[e] <= 0 || cnt <= 1) continue;
      char *d = base + e * (int64_t)isz;
      if (fp) ct_store_f64(d, out->dtype, ct_load_f64(d, out->dtype) / (double)cnt);
      else {
        int64_t v = ct_load_i64(d, out->dtype), q = v / cnt;
        if ((v % cnt != 0) && ((v < 0) != (cnt < 0))) q -= 1; /* floor division, as PyTorch */
        ct_store_i64(d, out->dtype, q);
      }
    }
  }
  free(count);
  return CT_OK;
}

/* index_add / index_copy / index_fill along dim: in (self, index, source?), k0 = dim;
 * index_add: f0/s0 alpha; index_fill: s0 value (index_fill_tensor: in[2] 0-dim value). */
ct_status ct_cpu_index_write(const ct_call *c) {
  ct_tensor *out = c->out[0], *idx = c->in[1];
  CT_TRY(copy_into(out, c->in[0]));
  if (ct_numel(idx) == 0) return CT_OK;
  int dim = (int)c->a.k[0];
  bool fill = c->op == CT_OP_index_fill || c->op == CT_OP_index_fill_tensor;
  ct_tensor *src = fill ? NULL : c->in[2];
  int mode = c->op == CT_OP_index_add ? W_ADD : fill ? W_FILL : W_COPY;
  write_ctx k;
  ctx_init(&k, out, idx, src, mode);
  if (c->op == CT_OP_index_fill) set_fill(&k, c->a.s[0]);
  if (c->op == CT_OP_index_fill_tensor) {
    ct_tensor *v = c->in[2];
    if (k.fp) ct_store_f64(k.fill_bytes, k.dt, ct_load_f64(ct_cpu_ptr(v), v->dtype));
    else ct_store_i64(k.fill_bytes, k.dt, ct_load_i64(ct_cpu_ptr(v), v->dtype));
  }
  if (mode == W_ADD) {
    k.alpha_f = c->a.f[0];
    k.alpha_i = c->a.s[0].i;
  }
  /* iterate over the shape of source (index_fill: self with dim -> len(index)) */
  int nd = out->ndim;
  int64_t shape[CT_MAX_DIMS] = {0}, dst[CT_MAX_DIMS] = {0}, ist[CT_MAX_DIMS] = {0};
  for (int d = 0; d < nd; d++) {
    shape[d] = out->shape[d];
    dst[d] = out->stride[d];
    ist[d] = 0;
  }
  if (nd > 0) {
    k.dstride = out->stride[dim] * (int64_t)k.isz;
    k.size = out->shape[dim];
    shape[dim] = ct_numel(idx);
    dst[dim] = 0;
    ist[dim] = idx->ndim ? idx->stride[0] : 0;
  }
  ct_tensor ir = restride(idx, nd, shape, ist);
  ct_tensor dr = restride(out, nd, shape, dst);
  ct_tensor sr;
  ct_tensor *ts[3] = {&ir, &dr, NULL};
  int nt = 2;
  if (src) {
    /* a 0-dim source with a 1-D... self: source holds one value per index */
    int64_t sst[CT_MAX_DIMS];
    for (int d = 0; d < nd; d++) sst[d] = src->ndim == nd ? src->stride[d] : 0;
    sr = restride(src, nd, shape, sst);
    ts[2] = &sr;
    nt = 3;
  }
  ct_cpu_foreach(nt, ts, write_loop, &k, false);
  return CT_OK;
}

/* ---- masks ------------------------------------------------------------------ */
typedef struct {
  size_t isz;
  ct_dtype mdt;
  _Alignas(8) char v[8];
  char *outp;      /* masked_select: next output slot; masked_scatter: next source element */
  int64_t ostride; /* bytes between output (or source) elements */
} mask_ctx;

static void mfill_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  mask_ctx *k = vctx;
  for (int64_t i = 0; i < n; i++) {
    if (ct_load_i64(p[2] + i * s[2], k->mdt)) memcpy(p[0] + i * s[0], k->v, k->isz);
    else memcpy(p[0] + i * s[0], p[1] + i * s[1], k->isz);
  }
}

/* masked_fill: in (self, mask) expanded to out's shape, s0 = value;
 * masked_fill_tensor: in[2] is the 0-dim value. */
ct_status ct_cpu_masked_fill(const ct_call *c) {
  ct_tensor *out = c->out[0];
  mask_ctx k = {ct_dtype_size(out->dtype), c->in[1]->dtype, {0}, NULL, 0};
  if (c->n_in > 2) {
    ct_tensor *v = c->in[2];
    if (ct_dtype_is_floating(out->dtype)) ct_store_f64(k.v, out->dtype, ct_load_f64(ct_cpu_ptr(v), v->dtype));
    else ct_store_i64(k.v, out->dtype, ct_load_i64(ct_cpu_ptr(v), v->dtype));
  } else if (c->a.s[0].kind == CT_SCALAR_FLOAT) ct_store_f64(k.v, out->dtype, c->a.s[0].f);
  else ct_store_i64(k.v, out->dtype, c->a.s[0].i);
  ct_tensor *ts[3] = {out, c->in[0], c->in[1]};
  ct_cpu_foreach(3, ts, mfill_loop, &k, true);
  return CT_OK;
}

static void msel_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  mask_ctx *k = vctx;
  for (int64_t i = 0; i < n; i++)
    if (ct_load_i64(p[1] + i * s[1], k->mdt)) {
      memcpy(k->outp, p[0] + i * s[0], k->isz);
      k->outp += k->ostride;
    }
}

/* masked_select: in (self, mask) of one shape; out 1-D with as many elements as mask has ones. */
ct_status ct_cpu_masked_select(const ct_call *c) {
  ct_tensor *out = c->out[0];
  if (ct_numel(out) == 0) return CT_OK;
  mask_ctx k = {ct_dtype_size(out->dtype), c->in[1]->dtype, {0}, ct_cpu_ptr(out), 0};
  k.ostride = out->stride[0] * (int64_t)k.isz;
  ct_tensor *ts[2] = {c->in[0], c->in[1]};
  ct_cpu_foreach(2, ts, msel_loop, &k, false);
  return CT_OK;
}

static void mscat_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  mask_ctx *k = vctx;
  for (int64_t i = 0; i < n; i++) {
    if (ct_load_i64(p[2] + i * s[2], k->mdt)) {
      memcpy(p[0] + i * s[0], k->outp, k->isz);
      k->outp += k->ostride;
    } else memcpy(p[0] + i * s[0], p[1] + i * s[1], k->isz);
  }
}

/* masked_scatter: in (self, mask, source contiguous), self and mask of out's shape. */
ct_status ct_cpu_masked_scatter(const ct_call *c) {
  ct_tensor *out = c->out[0];
  mask_ctx k = {ct_dtype_size(out->dtype), c->in[1]->dtype, {0}, ct_cpu_ptr(c->in[2]), 0};
  k.ostride = (int64_t)k.isz;
  ct_tensor *ts[3] = {out, c->in[0], c->in[1]};
  ct_cpu_foreach(3, ts, mscat_loop, &k, false);
  return CT_OK;
}

/* ---- flat: take / put ----------------------------------------------------------- */
/* take: in (self contiguous, index); out has index's shape. */
typedef struct {
  size_t isz;
  ct_dtype idt;
  int64_t n;
  char *base;
} flat_ctx;

static void take_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  flat_ctx *k = vctx;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = wrap(ct_load_i64(p[1] + i * s[1], k->idt), k->n);
    memcpy(p[0] + i * s[0], k->base + v * (int64_t)k->isz, k->isz);
  }
}

ct_status ct_cpu_take(const ct_call *c) {
  ct_tensor *out = c->out[0], *self = c->in[0];
  if (ct_numel(out) == 0) return CT_OK;
  flat_ctx k = {ct_dtype_size(self->dtype), c->in[1]->dtype, ct_numel(self), ct_cpu_ptr(self)};
  ct_tensor *ts[2] = {out, c->in[1]};
  ct_cpu_foreach(2, ts, take_loop, &k, true);
  return CT_OK;
}

/* put: in (self, index, source reshaped to index's shape), k0 = accumulate; out contiguous. */
ct_status ct_cpu_put(const ct_call *c) {
  ct_tensor *out = c->out[0], *idx = c->in[1], *src = c->in[2];
  CT_TRY(copy_into(out, c->in[0]));
  if (ct_numel(idx) == 0) return CT_OK;
  write_ctx k;
  ctx_init(&k, out, idx, src, c->a.k[0] ? W_ADD : W_COPY);
  k.dstride = (int64_t)k.isz;
  k.size = ct_numel(out);
  /* out is contiguous: view it as a stride-0 1-D walk over index's shape */
  int64_t st[CT_MAX_DIMS] = {0};
  ct_tensor dr = restride(out, idx->ndim, idx->shape, st);
  ct_tensor *ts[3] = {idx, &dr, src};
  ct_cpu_foreach(3, ts, write_loop, &k, false);
  return CT_OK;
}

/* ---- nonzero ------------------------------------------------------------------ */
/* out [n, ndim] int64 (n counted by the entry point). */
ct_status ct_cpu_nonzero(const ct_call *c) {
  ct_tensor *self = c->in[0], *out = c->out[0];
  int nd = self->ndim;
  int64_t total = ct_numel(self), isz = (int64_t)ct_dtype_size(self->dtype);
  if (total == 0 || ct_numel(out) == 0) return CT_OK;
  int64_t idx[CT_MAX_DIMS] = {0};
  int64_t *o = (int64_t *)ct_cpu_ptr(out);
  int64_t row = 0, nrows = out->shape[0];
  char *base = ct_cpu_ptr(self);
  bool fp = ct_dtype_is_floating(self->dtype);
  for (int64_t e = 0; e < total && row < nrows; e++) {
    int64_t off = 0;
    for (int d = 0; d < nd; d++) off += idx[d] * self->stride[d];
    const char *p = base + off * isz;
    bool nz = fp ? ct_load_f64(p, self->dtype) != 0 : ct_load_i64(p, self->dtype) != 0;
    if (nz) {
      for (int d = 0; d < nd; d++) o[row * out->stride[0] + d * out->stride[1]] = idx[d];
      row++;
    }
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < self->shape[d]) break;
      idx[d] = 0;
    }
  }
  return CT_OK;
}

/* ---- aten::index / index_put over leading dims -------------------------------------
 * in[0] is self with its k indexed dims first; in[1] holds logical linear indices into
 * those k dims (row-major, already wrapped and checked). k0 = k. */
typedef struct {
  int k;
  int64_t shape[CT_MAX_DIMS], bstride[CT_MAX_DIMS]; /* the k dims of self: sizes, byte strides */
  size_t isz;
  ct_dtype dt, sdt;
  bool accumulate, fp;
} lin_ctx;

static inline int64_t lin_offset(const lin_ctx *k, int64_t v) {
  int64_t off = 0;
  for (int d = k->k - 1; d >= 0; d--) {
    off += (v % k->shape[d]) * k->bstride[d];
    v /= k->shape[d];
  }
  return off;
}

static void index_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  lin_ctx *k = vctx;
  for (int64_t i = 0; i < n; i++)
    memcpy(p[0] + i * s[0], p[2] + i * s[2] + lin_offset(k, *(int64_t *)(p[1] + i * s[1])), k->isz);
}

static void lin_setup(lin_ctx *k, const ct_tensor *self, int nk, const ct_tensor *lin, const ct_tensor *res,
                      int64_t *self_st, int64_t *lin_st) {
  k->k = nk;
  k->isz = ct_dtype_size(self->dtype);
  for (int d = 0; d < nk; d++) {
    k->shape[d] = self->shape[d];
    k->bstride[d] = self->stride[d] * (int64_t)k->isz;
  }
  /* result dims: lin's dims, then self's dims after the k indexed ones */
  int nb = lin->ndim;
  for (int d = 0; d < res->ndim; d++) {
    if (d < nb) {
      self_st[d] = 0;
      lin_st[d] = lin->stride[d];
    } else {
      self_st[d] = self->stride[d - nb + nk];
      lin_st[d] = 0;
    }
  }
}

ct_status ct_cpu_index(const ct_call *c) {
  ct_tensor *self = c->in[0], *lin = c->in[1], *out = c->out[0];
  if (ct_numel(out) == 0) return CT_OK;
  lin_ctx k;
  memset(&k, 0, sizeof k);
  int64_t sst[CT_MAX_DIMS], lst[CT_MAX_DIMS];
  lin_setup(&k, self, (int)c->a.k[0], lin, out, sst, lst);
  ct_tensor sr = restride(self, out->ndim, out->shape, sst);
  ct_tensor lr = restride(lin, out->ndim, out->shape, lst);
  ct_tensor *ts[3] = {out, &lr, &sr};
  ct_cpu_foreach(3, ts, index_loop, &k, true);
  return CT_OK;
}

static void index_put_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  lin_ctx *k = vctx;
  for (int64_t i = 0; i < n; i++) {
    char *d = p[2] + i * s[2] + lin_offset(k, *(int64_t *)(p[1] + i * s[1]));
    const char *v = p[0] + i * s[0];
    if (!k->accumulate) memcpy(d, v, k->isz);
    else if (k->fp) ct_store_f64(d, k->dt, ct_load_f64(d, k->dt) + ct_load_f64(v, k->dt));
    else if (k->dt == CT_BOOL) *(uint8_t *)d = *(uint8_t *)d || *(const uint8_t *)v;
    else ct_store_i64(d, k->dt, (int64_t)((uint64_t)ct_load_i64(d, k->dt) + (uint64_t)ct_load_i64(v, k->dt)));
  }
}

/* index_put: in (self, lin, values of the indexing result's shape), k0 = k, k1 = accumulate. */
ct_status ct_cpu_index_put(const ct_call *c) {
  ct_tensor *out = c->out[0], *lin = c->in[1], *val = c->in[2];
  CT_TRY(copy_into(out, c->in[0]));
  if (ct_numel(val) == 0) return CT_OK;
  lin_ctx k;
  memset(&k, 0, sizeof k);
  k.accumulate = c->a.k[1] != 0;
  k.dt = out->dtype;
  k.fp = ct_dtype_is_floating(out->dtype);
  int64_t sst[CT_MAX_DIMS], lst[CT_MAX_DIMS];
  lin_setup(&k, out, (int)c->a.k[0], lin, val, sst, lst);
  ct_tensor dr = restride(out, val->ndim, val->shape, sst);
  ct_tensor lr = restride(lin, val->ndim, val->shape, lst);
  ct_tensor *ts[3] = {val, &lr, &dr};
  ct_cpu_foreach(3, ts, index_put_loop, &k, false);
  return CT_OK;
}
