/* CPU reference kernels of pooling and interpolation over [N, C, H, W] (contiguous outputs).
 * Max pools return the argmax as an index into the input plane (h * W + w), as PyTorch.
 * avg_pool2d, adaptive_avg_pool2d and the nearest / bilinear upsamples are linear maps
 * that factor over H and W: each output row (column) reads a list of input rows
 * (columns) with weights, divided by a per-row (column) divisor. One forward kernel and
 * one adjoint (backward) kernel serve all four, from per-op tap lists.
 * Attributes (set by src/ops/pool.c): i[0..2) kernel, i[2..4) stride, i[4..6) padding,
 * i[6..8) dilation; k0 count_include_pad, k1 divisor_override (0: none), k2 align_corners;
 * f0, f1: scale factors of H and W (0: none).
 * float32 / float64 on contiguous tensors take the fast kernels of pool_fast.h first. */
#include "kernels_nn.h"
#include "simd/simd.h"
#include <math.h>
#include "pool_fast.h"

/* ---- max pools ---- */
typedef struct {
  const ct_call *c;
  const double *x;
  double *y;
  int64_t *ix;
  int64_t H, W, OH, OW;
  bool adaptive;
} mp_ctx;

static void maxpool_range(void *vctx, int64_t begin, int64_t end) {
  mp_ctx *m = vctx;
  const int64_t *a = m->c->a.i;
  for (int64_t pl = begin; pl < end; pl++) {
    const double *x = m->x + pl * m->H * m->W;
    for (int64_t oh = 0; oh < m->OH; oh++)
      for (int64_t ow = 0; ow < m->OW; ow++) {
        int64_t h0, h1, w0, w1, dh = 1, dw = 1;
        if (m->adaptive) {
          h0 = oh * m->H / m->OH;
          h1 = ((oh + 1) * m->H + m->OH - 1) / m->OH;
          w0 = ow * m->W / m->OW;
          w1 = ((ow + 1) * m->W + m->OW - 1) / m->OW;
        } else {
          dh = a[6];
          dw = a[7];
          h0 = oh * a[2] - a[4];
          w0 = ow * a[3] - a[5];
          h1 = h0 + (a[0] - 1) * dh + 1;
          w1 = w0 + (a[1] - 1) * dw + 1;
          if (h1 > m->H) h1 = m->H;
          if (w1 > m->W) w1 = m->W;
          while (h0 < 0) h0 += dh;
          while (w0 < 0) w0 += dw;
        }
        /* PyTorch starts from the window's first in-range position with -inf, and lets NaN win */
        int64_t best = h0 * m->W + w0;
        double bv = -INFINITY;
        for (int64_t h = h0; h < h1; h += dh)
          for (int64_t w = w0; w < w1; w += dw) {
            double v = x[h * m->W + w];
            if (v > bv || isnan(v)) {
              bv = v;
              best = h * m->W + w;
              if (isnan(v)) goto found;
            }
          }
      found:
        m->y[(pl * m->OH + oh) * m->OW + ow] = bv;
        m->ix[(pl * m->OH + oh) * m->OW + ow] = best;
      }
  }
}

static ct_status maxpool_run(const ct_call *c, bool adaptive) {
  const ct_tensor *x = c->in[0];
  ct_tensor *y = c->out[0], *ix = c->out[1];
  int64_t n = ct_numel(y);
  if (n == 0) return CT_OK;
  ct_status fst;
  if (pf_maxpool(c, adaptive, &fst)) return fst;
  mp_ctx m = {c, NULL, NULL, NULL, x->shape[2], x->shape[3], y->shape[2], y->shape[3], adaptive};
  double *xb = nn_load_f64(x);
  double *yb = xb ? nn_alloc(n, sizeof(double)) : NULL;
  int64_t *ib = yb ? nn_alloc(n, sizeof(int64_t)) : NULL;
  if (!ib) {
    free(xb);
    free(yb);
    return ct_last_status();
  }
  m.x = xb;
  m.y = yb;
  m.ix = ib;
  ct_parallel_for(x->shape[0] * x->shape[1], 1 + 4096 / (m.OH * m.OW + 1), maxpool_range, &m);
  nn_store_f64(y, yb, n);
  memcpy(ct_cpu_ptr(ix), ib, (size_t)n * sizeof(int64_t));
  free(xb);
  free(yb);
  free(ib);
  return CT_OK;
}

ct_status ct_cpu_max_pool2d(const ct_call *c) { return maxpool_run(c, false); }
ct_status ct_cpu_adaptive_max_pool2d(const ct_call *c) { return maxpool_run(c, true); }

/* gx[N, C, H, W] = 0; gx[plane][idx] += g (in[0] g, in[1] indices). */
ct_status ct_cpu_max_pool_scatter(const ct_call *c) {
  ct_status fst;
  if (pf_max_scatter(c, &fst)) return fst;
  ct_tensor *o = c->out[0];
  int64_t n = ct_numel(o), m = ct_numel(c->in[0]);
  int64_t planes = o->shape[0] * o->shape[1], isz = o->shape[2] * o->shape[3], osz = planes ? m / planes : 0;
  double *acc = nn_alloc(n, sizeof(double));
  if (!acc) return ct_last_status();
  double *g = m ? nn_load_f64(c->in[0]) : NULL;
  int64_t *ix = g ? nn_load_i64(c->in[1]) : NULL;
  if (m && !ix) {
    free(acc);
    free(g);
    return ct_last_status();
  }
  for (int64_t i = 0; i < m; i++) {
    int64_t pl = i / osz, k = ix[i];
    if (k < 0 || k >= isz) {
      free(acc);
      free(g);
      free(ix);
      return CT_ERR(CT_ERR_RUNTIME, "Found an invalid max index: %lld (output volumes are of size %lldx%lld",
                    (long long)k, (long long)o->shape[2], (long long)o->shape[3]);
    }
    acc[pl * isz + k] += g[i];
  }
  nn_store_f64(o, acc, n);
  free(acc);
  free(g);
  free(ix);
  return CT_OK;
}

/* out[N, C, OH, OW] = src[plane][idx] (in[0] src [N, C, H, W], in[1] indices). */
ct_status ct_cpu_max_pool_gather(const ct_call *c) {
  ct_tensor *o = c->out[0];
  const ct_tensor *s = c->in[0];
  int64_t n = ct_numel(o);
  if (n == 0) return CT_OK;
  int64_t isz = s->shape[2] * s->shape[3], osz = o->shape[2] * o->shape[3];
  double *src = nn_load_f64(s);
  int64_t *ix = src ? nn_load_i64(c->in[1]) : NULL;
  double *out = ix ? nn_alloc(n, sizeof(double)) : NULL;
  if (!out) {
    free(src);
    free(ix);
    return ct_last_status();
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t k = ix[i];
    out[i] = (k >= 0 && k < isz) ? src[(i / osz) * isz + k] : 0;
  }
  nn_store_f64(o, out, n);
  free(src);
  free(ix);
  free(out);
  return CT_OK;
}

/* ---- separable linear maps: avg_pool2d, adaptive_avg_pool2d, upsample nearest / bilinear ---- */
typedef struct {
  int64_t O;
  int64_t *start; /* O + 1 offsets into idx / w */
  int64_t *idx;
  double *w;
  double *div;    /* per output index */
} taps;

static void taps_free(taps *t) {
  free(t->start);
  free(t->idx);
  free(t->w);
  free(t->div);
}

/* PyTorch computes interpolation coordinates in float for float32 (and reduced) inputs, in double for float64. */
static double bilinear_src(int64_t o, int64_t I, int64_t O, bool align, double sf, bool dbl) {
  if (dbl) {
    double scale = align ? (O > 1 ? (double)(I - 1) / (double)(O - 1) : 0.0) : (sf > 0 ? 1.0 / sf : (double)I / (double)O);
    if (align) return scale * (double)o;
    double s = scale * ((double)o + 0.5) - 0.5;
    return s < 0 ? 0 : s;
  }
  float scale = align ? (O > 1 ? (float)(I - 1) / (float)(O - 1) : 0.0f) : (sf > 0 ? (float)(1.0 / sf) : (float)I / (float)O);
  if (align) return (double)(scale * (float)o);
  float s = (float)((double)scale * ((double)o + 0.5) - 0.5);
  return s < 0 ? 0 : (double)s;
}

/* Taps of one dim (dim 0 = H, 1 = W) for the op; I input size, O output size. */
static ct_status taps_make(taps *t, const ct_call *c, int fwd_op, int dim, int64_t I, int64_t O, bool dbl) {
  const ct_attrs *a = &c->a;
  memset(t, 0, sizeof *t);
  t->O = O;
  int64_t maxk;
  switch (fwd_op) {
    case CT_OP_avg_pool2d: maxk = a->i[dim]; break;
    case CT_OP_adaptive_avg_pool2d: maxk = O ? I / O + 2 : 1; break;
    case CT_OP_upsample_nearest2d: maxk = 1; break;
    default: maxk = 2; break;
  }
  t->start = nn_alloc(O + 1, sizeof(int64_t));
  t->idx = nn_alloc(O * maxk, sizeof(int64_t));
  t->w = nn_alloc(O * maxk, sizeof(double));
  t->div = nn_alloc(O, sizeof(double));
  if (!t->start || !t->idx || !t->w || !t->div) {
    taps_free(t);
    return ct_last_status();
  }
  int64_t m = 0;
  for (int64_t o = 0; o < O; o++) {
    t->start[o] = m;
    double div = 1;
    switch (fwd_op) {
      case CT_OP_avg_pool2d: {
        int64_t k = a->i[dim], s = a->i[2 + dim], p = a->i[4 + dim];
        int64_t h0 = o * s - p, h1 = h0 + k;
        if (h1 > I + p) h1 = I + p;
        int64_t pool = h1 - h0;
        if (h0 < 0) h0 = 0;
        if (h1 > I) h1 = I;
        for (int64_t h = h0; h < h1; h++) {
          t->idx[m] = h;
          t->w[m++] = 1;
        }
        div = a->k[0] ? (double)pool : (double)(h1 - h0);
        if (a->k[1]) div = dim == 0 ? (double)a->k[1] : 1.0;
        break;
      }
      case CT_OP_adaptive_avg_pool2d: {
        int64_t h0 = o * I / O, h1 = ((o + 1) * I + O - 1) / O;
        for (int64_t h = h0; h < h1; h++) {
          t->idx[m] = h;
          t->w[m++] = 1;
        }
        div = (double)(h1 - h0);
        break;
      }
      case CT_OP_upsample_nearest2d: {
        double sf = a->f[dim];
        float scale = sf > 0 ? (float)(1.0 / sf) : (float)I / (float)O;
        int64_t h = (int64_t)floorf((float)o * scale);
        if (h > I - 1) h = I - 1;
        t->idx[m] = h;
        t->w[m++] = 1;
        break;
      }
      default: { /* bilinear */
        double src = bilinear_src(o, I, O, a->k[2] != 0, a->f[dim], dbl);
        int64_t i0 = (int64_t)src;
        double l1 = dbl ? src - (double)i0 : (double)((float)src - (float)i0);
        double l0 = dbl ? 1.0 - l1 : (double)(1.0f - (float)l1);
        int64_t i1 = i0 + (i0 < I - 1 ? 1 : 0);
        t->idx[m] = i0;
        t->w[m++] = l0;
        t->idx[m] = i1;
        t->w[m++] = l1;
        break;
      }
    }
    t->div[o] = div;
  }
  t->start[O] = m;
  return CT_OK;
}

#define CT_POOL_FAST_AVG
#include "pool_fast.h"

static int fwd_op_of(int op) {
  switch (op) {
    case CT_OP_avg_pool2d_backward: return CT_OP_avg_pool2d;
    case CT_OP_adaptive_avg_pool2d_backward: return CT_OP_adaptive_avg_pool2d;
    case CT_OP_upsample_nearest2d_backward: return CT_OP_upsample_nearest2d;
    case CT_OP_upsample_bilinear2d_backward: return CT_OP_upsample_bilinear2d;
    default: return op;
  }
}

typedef struct {
  taps th, tw;
  int64_t H, W, OH, OW;
  const void *src;
  void *dst;
  bool integer;
} lin_ctx;

static void lin_fwd_range(void *vctx, int64_t begin, int64_t end) {
  lin_ctx *l = vctx;
  for (int64_t pl = begin; pl < end; pl++)
    for (int64_t oh = 0; oh < l->OH; oh++)
      for (int64_t ow = 0; ow < l->OW; ow++) {
        int64_t oi = (pl * l->OH + oh) * l->OW + ow;
        if (l->integer) {
          const int64_t *x = (const int64_t *)l->src + pl * l->H * l->W;
          int64_t s = 0;
          for (int64_t a = l->th.start[oh]; a < l->th.start[oh + 1]; a++)
            for (int64_t b = l->tw.start[ow]; b < l->tw.start[ow + 1]; b++) s += x[l->th.idx[a] * l->W + l->tw.idx[b]];
          int64_t dv = (int64_t)(l->th.div[oh] * l->tw.div[ow]);
          ((int64_t *)l->dst)[oi] = dv ? s / dv : 0;
        } else {
          const double *x = (const double *)l->src + pl * l->H * l->W;
          double s = 0;
          for (int64_t a = l->th.start[oh]; a < l->th.start[oh + 1]; a++) {
            double r = 0;
            for (int64_t b = l->tw.start[ow]; b < l->tw.start[ow + 1]; b++)
              r += l->tw.w[b] * x[l->th.idx[a] * l->W + l->tw.idx[b]];
            s += l->th.w[a] * r;
          }
          ((double *)l->dst)[oi] = s / (l->th.div[oh] * l->tw.div[ow]);
        }
      }
}

static void lin_bwd_range(void *vctx, int64_t begin, int64_t end) {
  lin_ctx *l = vctx;
  for (int64_t pl = begin; pl < end; pl++) {
    double *gx = (double *)l->dst + pl * l->H * l->W;
    const double *g = (const double *)l->src + pl * l->OH * l->OW;
    for (int64_t oh = 0; oh < l->OH; oh++)
      for (int64_t ow = 0; ow < l->OW; ow++) {
        double v = g[oh * l->OW + ow] / (l->th.div[oh] * l->tw.div[ow]);
        for (int64_t a = l->th.start[oh]; a < l->th.start[oh + 1]; a++)
          for (int64_t b = l->tw.start[ow]; b < l->tw.start[ow + 1]; b++)
            gx[l->th.idx[a] * l->W + l->tw.idx[b]] += v * l->th.w[a] * l->tw.w[b];
      }
  }
}

static ct_status lin_run(const ct_call *c, bool fwd) {
  const ct_tensor *in = c->in[0];
  ct_tensor *o = c->out[0];
  const ct_tensor *big = fwd ? in : o, *small = fwd ? o : in; /* input / output of the forward map */
  lin_ctx l;
  memset(&l, 0, sizeof l);
  l.H = big->shape[2];
  l.W = big->shape[3];
  l.OH = small->shape[2];
  l.OW = small->shape[3];
  int64_t n = ct_numel(o), planes = o->shape[0] * o->shape[1];
  if (n == 0) return CT_OK;
  bool dbl = in->dtype == CT_FLOAT64;
  int fop = fwd_op_of(c->op);
  CT_TRY(taps_make(&l.th, c, fop, 0, l.H, l.OH, dbl));
  ct_status st = taps_make(&l.tw, c, fop, 1, l.W, l.OW, dbl);
  if (st) {
    taps_free(&l.th);
    return st;
  }
  if (pf_avg_ok(c, fop)) {
    pf_avg_ctx f = {&l.th, &l.tw, l.H, l.W, l.OH, l.OW, ct_cpu_ptr(in), ct_cpu_ptr(o), dbl, fwd};
    ct_parallel_for(planes, 1 + 4096 / (l.H * l.W + l.OH * l.OW + 1), pf_avg_range, &f);
    taps_free(&l.th);
    taps_free(&l.tw);
    return CT_OK;
  }
  l.integer = !ct_dtype_is_floating(o->dtype);
  void *src = l.integer ? (void *)nn_load_i64(in) : (void *)nn_load_f64(in);
  void *dst = src ? nn_alloc(n, 8) : NULL;
  if (!dst) {
    free(src);
    taps_free(&l.th);
    taps_free(&l.tw);
    return ct_last_status();
  }
  l.src = src;
  l.dst = dst;
  ct_parallel_for(planes, 1 + 4096 / (n / (planes ? planes : 1) + 1), fwd ? lin_fwd_range : lin_bwd_range, &l);
  if (l.integer) nn_store_i64(o, dst, n);
  else nn_store_f64(o, dst, n);
  free(src);
  free(dst);
  taps_free(&l.th);
  taps_free(&l.tw);
  return CT_OK;
}

ct_status ct_cpu_lin2d_fwd(const ct_call *c) { return lin_run(c, true); }
ct_status ct_cpu_lin2d_bwd(const ct_call *c) { return lin_run(c, false); }
