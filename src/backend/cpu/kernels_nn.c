/* CPU reference kernels of the nn family: softmax, normalisation statistics, embedding,
 * dropout's mask, attention masks. Floating math in double, rounded once. */
#include "kernels_nn.h"
#include "core/generator.h"
#include "simd/fast_ew.h"
#include <math.h>

/* ---- softmax / log_softmax over dim k0 ---- */
typedef struct {
  const double *x;
  double *y;
  int64_t len, inner;
  bool log;
} sm_ctx;

static void softmax_rows(void *vctx, int64_t begin, int64_t end) {
  sm_ctx *c = vctx;
  for (int64_t r = begin; r < end; r++) {
    int64_t o = r / c->inner, i = r % c->inner;
    const double *x = c->x + o * c->len * c->inner + i;
    double *y = c->y + o * c->len * c->inner + i;
    int64_t st = c->inner;
    double mx = -INFINITY;
    for (int64_t j = 0; j < c->len; j++)
      if (x[j * st] > mx || isnan(x[j * st])) mx = x[j * st];
    if (isinf(mx) && mx < 0) mx = 0; /* a row of -inf: exp(-inf - 0) = 0, giving nan like PyTorch */
    double s = 0;
    for (int64_t j = 0; j < c->len; j++) s += exp(x[j * st] - mx);
    if (c->log) {
      double ls = log(s);
      for (int64_t j = 0; j < c->len; j++) y[j * st] = x[j * st] - mx - ls;
    } else {
      for (int64_t j = 0; j < c->len; j++) y[j * st] = exp(x[j * st] - mx) / s;
    }
  }
}

ct_status ct_cpu_softmax(const ct_call *c) {
  ct_status fast_st;
  if (ct_fast_softmax(c, &fast_st)) return fast_st; /* SIMD path (simd/fast_ew.c) */
  const ct_tensor *x = c->in[0];
  int d = (int)c->a.k[0];
  int64_t n = ct_numel(x);
  if (n == 0) return CT_OK;
  sm_ctx s = {0};
  s.len = x->ndim ? x->shape[d] : 1;
  s.inner = 1;
  for (int k = d + 1; k < x->ndim; k++) s.inner *= x->shape[k];
  s.log = c->op == CT_OP_log_softmax;
  double *xb = nn_load_f64(x);
  double *yb = xb ? nn_alloc(n, sizeof(double)) : NULL;
  if (!yb) {
    free(xb);
    return ct_last_status();
  }
  s.x = xb;
  s.y = yb;
  int64_t rows = n / s.len;
  ct_parallel_for(rows, 1 + 16384 / (s.len + 1), softmax_rows, &s);
  nn_store_f64(c->out[0], yb, n);
  free(xb);
  free(yb);
  return CT_OK;
}

/* ---- normalisation statistics: mean and biased variance over the dims of mask k0 ---- */
typedef struct {
  const double *x;
  double *mean, *var;
  int64_t inner;
} mom_ctx;

static void moments_rows(void *vctx, int64_t begin, int64_t end) {
  mom_ctx *c = vctx;
  for (int64_t r = begin; r < end; r++) {
    const double *x = c->x + r * c->inner;
    double s = 0;
    for (int64_t j = 0; j < c->inner; j++) s += x[j];
    double m = s / (double)c->inner, q = 0;
    for (int64_t j = 0; j < c->inner; j++) q += (x[j] - m) * (x[j] - m);
    c->mean[r] = m;
    c->var[r] = q / (double)c->inner;
  }
}

ct_status ct_cpu_norm_moments(const ct_call *c) {
  ct_status fast_st;
  if (ct_fast_norm_moments(c, &fast_st)) return fast_st; /* SIMD path (simd/fast_ew.c) */
  const ct_tensor *x = c->in[0];
  uint32_t mask = (uint32_t)c->a.k[0];
  /* a permuted view with the kept dims first, so each row of the buffer is one reduction */
  int64_t shape[CT_MAX_DIMS], stride[CT_MAX_DIMS], outer = 1, inner = 1;
  int k = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int d = 0; d < x->ndim; d++) {
      bool red = (mask >> d) & 1;
      if (red != (pass == 1)) continue;
      shape[k] = x->shape[d];
      stride[k++] = x->stride[d];
      if (red) inner *= x->shape[d];
      else outer *= x->shape[d];
    }
  if (outer == 0) return CT_OK;
  ct_tensor *v = ct_make_view(x, x->ndim, shape, stride, x->offset);
  if (!v) return ct_last_status();
  double *xb = nn_load_f64(v);
  ct_release(v);
  double *mb = xb ? nn_alloc(2 * outer, sizeof(double)) : NULL;
  if (!mb) {
    free(xb);
    return ct_last_status();
  }
  mom_ctx m = {xb, mb, mb + outer, inner};
  ct_parallel_for(outer, 1 + 16384 / (inner + 1), moments_rows, &m);
  nn_store_f64(c->out[0], m.mean, outer);
  nn_store_f64(c->out[1], m.var, outer);
  free(xb);
  free(mb);
  return CT_OK;
}

/* ---- 1/sqrt(x + eps) ---- */
static void rsqrt_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  const ct_call *c = vctx;
  ct_dtype od = c->out[0]->dtype, id = c->in[0]->dtype;
  double eps = c->a.f[0];
  for (int64_t i = 0; i < n; i++) ct_store_f64(p[0] + i * s[0], od, 1.0 / sqrt(ct_load_f64(p[1] + i * s[1], id) + eps));
}
ct_status ct_cpu_rsqrt_eps(const ct_call *c) {
  ct_tensor *ts[2] = {c->out[0], c->in[0]};
  ct_cpu_foreach(2, ts, rsqrt_loop, (void *)c, true);
  return CT_OK;
}

/* ---- embedding: out[..., :] = weight[idx[...], :]; in[0] weight, in[1] indices ---- */
ct_status ct_cpu_embedding(const ct_call *c) {
  const ct_tensor *w = c->in[0], *ix = c->in[1];
  ct_tensor *o = c->out[0];
  int64_t n = ct_numel(ix), V = w->shape[0], D = w->shape[1];
  if (n == 0) return CT_OK;
  int64_t *idx = nn_load_i64(ix);
  if (!idx) return ct_last_status();
  for (int64_t i = 0; i < n; i++)
    if (idx[i] < 0 || idx[i] >= V) {
      free(idx);
      return CT_ERR(CT_ERR_INDEX, "index out of range in self");
    }
  size_t isz = ct_dtype_size(w->dtype);
  const char *wb = ct_cpu_ptr(w);
  char *ob = ct_cpu_ptr(o);
  for (int64_t i = 0; i < n; i++) {
    const char *row = wb + (size_t)(idx[i] * w->stride[0]) * isz;
    char *dst = ob + (size_t)(i * D) * isz;
    if (w->stride[1] == 1) memcpy(dst, row, (size_t)D * isz);
    else
      for (int64_t j = 0; j < D; j++) memcpy(dst + (size_t)j * isz, row + (size_t)(j * w->stride[1]) * isz, isz);
  }
  free(idx);
  return CT_OK;
}

/* gw[V, D] = sum over positions of g rows into their index's row, skipping padding_idx.
 * in[0] g [..., D], in[1] indices; i0 padding_idx, k0 has padding_idx. */
ct_status ct_cpu_embedding_backward(const ct_call *c) {
  const ct_tensor *g = c->in[0], *ix = c->in[1];
  ct_tensor *o = c->out[0];
  int64_t V = o->shape[0], D = o->shape[1], n = ct_numel(ix);
  double *acc = nn_alloc(V * D, sizeof(double));
  if (!acc) return ct_last_status();
  double *gb = n ? nn_load_f64(g) : NULL;
  int64_t *idx = n ? nn_load_i64(ix) : NULL;
  if (n && (!gb || !idx)) {
    free(acc);
    free(gb);
    free(idx);
    return ct_last_status();
  }
  for (int64_t i = 0; i < n; i++) {
    if (idx[i] < 0 || idx[i] >= V) {
      free(acc);
      free(gb);
      free(idx);
      return CT_ERR(CT_ERR_INDEX, "index out of range in self");
    }
    if (c->a.k[0] && idx[i] == c->a.i[0]) continue;
    for (int64_t j = 0; j < D; j++) acc[idx[i] * D + j] += gb[i * D + j];
  }
  nn_store_f64(o, acc, V * D);
  free(acc);
  free(gb);
  free(idx);
  return CT_OK;
}

/* ---- dropout's noise: bernoulli_(1 - p) on a tensor of x's dtype, then / (1 - p) ----
 * PyTorch draws one double uniform per element for a scalar p whatever the dtype, so one
 * stream serves every floating dtype; the division rounds in the output dtype as div_ does. */
ct_status ct_cpu_dropout_noise(const ct_call *c) {
  ct_tensor *o = c->out[0];
  int64_t n = ct_numel(o);
  double q = 1.0 - c->a.f[0];
  ct_generator *gen = c->a.ptr ? (ct_generator *)c->a.ptr : ct_default_generator();
  if (!gen) return CT_ERR(CT_ERR_OOM, "out of memory creating the default generator");
  double *b = nn_alloc(n, sizeof(double));
  if (!b) return ct_last_status();
  ct_gen_bernoulli_f64(gen, b, n, NULL, q);
  char *d = ct_cpu_ptr(o);
  size_t isz = ct_dtype_size(o->dtype);
  if (o->dtype == CT_FLOAT32) {
    float inv = 1.0f / (float)q;
    for (int64_t i = 0; i < n; i++) ((float *)d)[i] = b[i] != 0 ? inv : 0.0f;
  } else {
    /* f64 divides in double; half types compute 1/q in float and round once */
    double inv = o->dtype == CT_FLOAT64 ? 1.0 / q : (double)(1.0f / (float)q);
    for (int64_t i = 0; i < n; i++) ct_store_f64(d + (size_t)i * isz, o->dtype, b[i] != 0 ? inv : 0.0);
  }
  free(b);
  return CT_OK;
}

/* ---- boolean attention mask (True = take part) -> additive 0 / -inf in the output's dtype ---- */
static void mask_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  const ct_call *c = vctx;
  ct_dtype od = c->out[0]->dtype;
  for (int64_t i = 0; i < n; i++) ct_store_f64(p[0] + i * s[0], od, *(bool *)(p[1] + i * s[1]) ? 0.0 : -INFINITY);
}
ct_status ct_cpu_attn_bool_mask(const ct_call *c) {
  ct_tensor *ts[2] = {c->out[0], c->in[0]};
  ct_cpu_foreach(2, ts, mask_loop, (void *)c, true);
  return CT_OK;
}
