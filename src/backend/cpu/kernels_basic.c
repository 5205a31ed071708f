/* CPU kernels for fill, copy (with dtype conversion) and the range factories. */
#include "cpu_iter.h"
#include <math.h>

static bool int_domain(ct_dtype a, ct_dtype b) { return !ct_dtype_is_floating(a) && !ct_dtype_is_floating(b); }

typedef struct {
  ct_dtype dst, src;
} copy_ctx;

static void copy_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  copy_ctx *c = vctx;
  char *d = p[0], *x = p[1];
  size_t isz = ct_dtype_size(c->dst);
  if (c->dst == c->src) {
    if (s[0] == (int64_t)isz && s[1] == (int64_t)isz) {
      memcpy(d, x, (size_t)n * isz);
      return;
    }
    for (int64_t i = 0; i < n; i++) memcpy(d + i * s[0], x + i * s[1], isz);
    return;
  }
  if (c->dst == CT_FLOAT32 && c->src == CT_FLOAT64) {
    for (int64_t i = 0; i < n; i++) *(float *)(d + i * s[0]) = (float)*(double *)(x + i * s[1]);
    return;
  }
  if (c->dst == CT_FLOAT64 && c->src == CT_FLOAT32) {
    for (int64_t i = 0; i < n; i++) *(double *)(d + i * s[0]) = *(float *)(x + i * s[1]);
    return;
  }
  if (int_domain(c->dst, c->src)) {
    for (int64_t i = 0; i < n; i++) ct_store_i64(d + i * s[0], c->dst, ct_load_i64(x + i * s[1], c->src));
  } else if (c->src == CT_INT64 && ct_dtype_is_floating(c->dst)) {
    /* int64 -> float32 must round once, not via double */
    for (int64_t i = 0; i < n; i++) {
      int64_t v = *(int64_t *)(x + i * s[1]);
      if (c->dst == CT_FLOAT32) *(float *)(d + i * s[0]) = (float)v;
      else ct_store_f64(d + i * s[0], c->dst, (double)v);
    }
  } else {
    for (int64_t i = 0; i < n; i++) ct_store_f64(d + i * s[0], c->dst, ct_load_f64(x + i * s[1], c->src));
  }
}

/* out = in, converting dtype; in is already broadcast to out's shape. */
ct_status ct_cpu_copy(const ct_call *c) {
  copy_ctx ctx = {c->out[0]->dtype, c->in[0]->dtype};
  ct_tensor *ts[2] = {c->out[0], c->in[0]};
  /* overlapping source and destination (x.copy_(x.flip(0))): go through a temporary */
  if (c->out[0]->storage == c->in[0]->storage && c->out[0] != c->in[0]) {
    ct_tensor *tmp = ct_tensor_new(c->in[0]->ndim, c->in[0]->shape, c->in[0]->dtype, ct_cpu());
    if (!tmp) return ct_last_status();
    ct_tensor *t2[2] = {tmp, c->in[0]};
    copy_ctx same = {tmp->dtype, tmp->dtype};
    ct_cpu_foreach(2, t2, copy_loop, &same, true);
    ts[1] = tmp;
    ct_cpu_foreach(2, ts, copy_loop, &ctx, true);
    ct_release(tmp);
    return CT_OK;
  }
  ct_cpu_foreach(2, ts, copy_loop, &ctx, true);
  return CT_OK;
}

typedef struct {
  ct_dtype dt;
  _Alignas(8) char bytes[8]; /* ct_store_* write through typed pointers */
} fill_ctx;

static void fill_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  fill_ctx *c = vctx;
  size_t isz = ct_dtype_size(c->dt);
  if (isz == 4 && s[0] == 4) {
    uint32_t v;
    memcpy(&v, c->bytes, 4);
    uint32_t *d = (uint32_t *)p[0];
    for (int64_t i = 0; i < n; i++) d[i] = v;
    return;
  }
  for (int64_t i = 0; i < n; i++) memcpy(p[0] + i * s[0], c->bytes, isz);
}

/* out[:] = a.s[0] */
ct_status ct_cpu_fill(const ct_call *c) {
  fill_ctx ctx;
  ctx.dt = c->out[0]->dtype;
  ct_scalar v = c->a.s[0];
  if (v.kind == CT_SCALAR_FLOAT) ct_store_f64(ctx.bytes, ctx.dt, v.f);
  else ct_store_i64(ctx.bytes, ctx.dt, v.i);
  ct_tensor *ts[1] = {c->out[0]};
  ct_cpu_foreach(1, ts, fill_loop, &ctx, true);
  return CT_OK;
}

/* out[i] = start + i*step (k[0]=0), linspace (k[0]=1: f0 start, f1 end, i0 steps),
 * logspace (k[0]=2, f2 base); integer outputs use a.s[0] (start) and a.s[1] (step) exactly. */
ct_status ct_cpu_arange(const ct_call *c) {
  ct_tensor *o = c->out[0];
  int64_t n = ct_numel(o);
  char *d = ct_cpu_ptr(o);
  size_t isz = ct_dtype_size(o->dtype);
  int64_t st = o->ndim ? o->stride[0] : 1;
  for (int64_t i = 0; i < n; i++) {
    char *p = d + i * st * (int64_t)isz;
    if (c->a.k[0] == 0) {
      if (!ct_dtype_is_floating(o->dtype)) ct_store_i64(p, o->dtype, c->a.s[0].i + i * c->a.s[1].i);
      else ct_store_f64(p, o->dtype, c->a.f[0] + (double)i * c->a.f[1]);
    } else {
      /* PyTorch's linspace fills the first half from start and the second from end */
      double start = c->a.f[0], end = c->a.f[1];
      double step = n > 1 ? (end - start) / (double)(n - 1) : 0;
      int64_t half = n / 2;
      double v = n == 1 ? start : i < half ? start + step * (double)i : end - step * (double)(n - 1 - i);
      if (c->a.k[0] == 2) v = pow(c->a.f[2], v);
      if (!ct_dtype_is_floating(o->dtype)) ct_store_i64(p, o->dtype, (int64_t)v);
      else ct_store_f64(p, o->dtype, v);
    }
  }
  return CT_OK;
}

ct_status ct_cpu_eye(const ct_call *c) {
  ct_tensor *o = c->out[0];
  size_t isz = ct_dtype_size(o->dtype);
  char *d = ct_cpu_ptr(o);
  memset(d, 0, (size_t)ct_numel(o) * isz);
  int64_t n = o->shape[0], m = o->shape[1];
  for (int64_t i = 0; i < n && i < m; i++) ct_store_i64(d + (i * o->stride[0] + i * o->stride[1]) * (int64_t)isz, o->dtype, 1);
  return CT_OK;
}
