/* CPU reference kernels of convolution: forward, input gradient (= transposed
 * convolution) and weight gradient, as direct loops over 1 to 3 spatial dims with
 * groups, stride, padding and dilation. Floating dtypes accumulate in double and round
 * once; integer dtypes accumulate in int64 (wrapping like C++).
 * Attributes (set by src/ops/conv.c): k0 spatial dims, k1 groups, i[0..3) stride,
 * i[3..6) padding (low side), i[6..9) dilation. The "CPU speed" issue replaces these
 * loops with im2col + GEMM and keeps them as the reference. */
#include "kernels_nn.h"

typedef struct {
  int64_t N, C, G;        /* batch, "input" channels (of the forward conv), groups */
  int64_t O;              /* "output" channels of the forward conv */
  int64_t in[3], out[3];  /* spatial sizes of the forward conv's input and output */
  int64_t k[3], s[3], p[3], d[3];
  int64_t insp, outsp, ksp; /* products */
} conv_geom;

/* x: forward input geometry [N, C, in...]; w: [O, C/G, k...]; y: [N, O, out...] */
static void geom_make(conv_geom *g, const ct_call *c, const ct_tensor *x, const ct_tensor *w, const ct_tensor *y) {
  int nd = (int)c->a.k[0];
  g->N = x->shape[0];
  g->C = x->shape[1];
  g->O = w->shape[0];
  g->G = c->a.k[1];
  g->insp = g->outsp = g->ksp = 1;
  for (int i = 0; i < 3; i++) {
    int j = i - (3 - nd); /* spatial dims are right-aligned into 3 */
    bool real = j >= 0;
    g->in[i] = real ? x->shape[2 + j] : 1;
    g->out[i] = real ? y->shape[2 + j] : 1;
    g->k[i] = real ? w->shape[2 + j] : 1;
    g->s[i] = real ? c->a.i[0 + j] : 1;
    g->p[i] = real ? c->a.i[3 + j] : 0;
    g->d[i] = real ? c->a.i[6 + j] : 1;
    g->insp *= g->in[i];
    g->outsp *= g->out[i];
    g->ksp *= g->k[i];
  }
}

typedef struct {
  conv_geom g;
  const void *a, *b, *bias; /* operands (double* or int64_t*) */
  void *out;
  bool integer;
} conv_ctx;

/* For one kernel offset (kd, kh, kw), visit every output position o whose input
 * position i = o*s - p + k*d is inside, calling BODY with oi (output linear index) and
 * ii (input linear index). */
#define CONV_VISIT(G, kd, kh, kw, BODY)                                              \
  for (int64_t od = 0; od < (G)->out[0]; od++) {                                     \
    int64_t id = od * (G)->s[0] - (G)->p[0] + (kd) * (G)->d[0];                      \
    if (id < 0 || id >= (G)->in[0]) continue;                                        \
    for (int64_t oh = 0; oh < (G)->out[1]; oh++) {                                   \
      int64_t ih = oh * (G)->s[1] - (G)->p[1] + (kh) * (G)->d[1];                    \
      if (ih < 0 || ih >= (G)->in[1]) continue;                                      \
      int64_t obase = (od * (G)->out[1] + oh) * (G)->out[2];                         \
      int64_t ibase = (id * (G)->in[1] + ih) * (G)->in[2];                           \
      for (int64_t ow = 0; ow < (G)->out[2]; ow++) {                                 \
        int64_t iw = ow * (G)->s[2] - (G)->p[2] + (kw) * (G)->d[2];                  \
        if (iw < 0 || iw >= (G)->in[2]) continue;                                    \
        int64_t oi = obase + ow, ii = ibase + iw;                                    \
        BODY;                                                                        \
      }                                                                              \
    }                                                                                \
  }

#define KLOOP(G, BODY)                                   \
  for (int64_t kd = 0; kd < (G)->k[0]; kd++)             \
    for (int64_t kh = 0; kh < (G)->k[1]; kh++)           \
      for (int64_t kw = 0; kw < (G)->k[2]; kw++) {       \
        int64_t kk = (kd * (G)->k[1] + kh) * (G)->k[2] + kw; \
        BODY;                                            \
      }

/* forward: one task per (n, o) output plane. a = x, b = w. */
#define FWD_BODY(T)                                                                           \
  {                                                                                           \
    const T *x = cx->a, *w = cx->b, *bias = cx->bias;                                         \
    T *y = cx->out;                                                                           \
    for (int64_t t = begin; t < end; t++) {                                                   \
      int64_t n = t / g->O, o = t % g->O, cg = g->C / g->G, og = g->O / g->G, grp = o / og;   \
      T *acc = y + t * g->outsp;                                                              \
      for (int64_t q = 0; q < g->outsp; q++) acc[q] = bias ? bias[o] : 0;                     \
      for (int64_t ic = 0; ic < cg; ic++) {                                                   \
        const T *xp = x + (n * g->C + grp * cg + ic) * g->insp;                               \
        const T *wp = w + (o * cg + ic) * g->ksp;                                             \
        KLOOP(g, { T wv = wp[kk]; CONV_VISIT(g, kd, kh, kw, acc[oi] += wv * xp[ii]); }) \
      }                                                                                       \
    }                                                                                         \
  }

static void fwd_range(void *vctx, int64_t begin, int64_t end) {
  conv_ctx *cx = vctx;
  const conv_geom *g = &cx->g;
  if (cx->integer) FWD_BODY(int64_t) else FWD_BODY(double)
}

/* input gradient: one task per (n, c) input plane. a = gy [N, O, out], b = w. */
#define BWDI_BODY(T)                                                                          \
  {                                                                                           \
    const T *gy = cx->a, *w = cx->b, *bias = cx->bias;                                        \
    T *gx = cx->out;                                                                          \
    for (int64_t t = begin; t < end; t++) {                                                   \
      int64_t n = t / g->C, c = t % g->C, cg = g->C / g->G, og = g->O / g->G, grp = c / cg;   \
      T *acc = gx + t * g->insp;                                                              \
      for (int64_t q = 0; q < g->insp; q++) acc[q] = bias ? bias[c] : 0;                      \
      for (int64_t oo = 0; oo < og; oo++) {                                                   \
        int64_t o = grp * og + oo;                                                            \
        const T *gp = gy + (n * g->O + o) * g->outsp;                                         \
        const T *wp = w + (o * cg + (c - grp * cg)) * g->ksp;                                 \
        KLOOP(g, { T wv = wp[kk]; CONV_VISIT(g, kd, kh, kw, acc[ii] += wv * gp[oi]); }) \
      }                                                                                       \
    }                                                                                         \
  }

static void bwdi_range(void *vctx, int64_t begin, int64_t end) {
  conv_ctx *cx = vctx;
  const conv_geom *g = &cx->g;
  if (cx->integer) BWDI_BODY(int64_t) else BWDI_BODY(double)
}

/* weight gradient: one task per (o, ic) kernel slice. a = x, b = gy. */
#define BWDW_BODY(T)                                                                          \
  {                                                                                           \
    const T *x = cx->a, *gy = cx->b;                                                          \
    T *gw = cx->out;                                                                          \
    int64_t cg = g->C / g->G, og = g->O / g->G;                                               \
    for (int64_t t = begin; t < end; t++) {                                                   \
      int64_t o = t / cg, ic = t % cg, grp = o / og;                                          \
      T *acc = gw + t * g->ksp;                                                               \
      KLOOP(g, {                                                                              \
        T s = 0;                                                                              \
        for (int64_t n = 0; n < g->N; n++) {                                                  \
          const T *xp = x + (n * g->C + grp * cg + ic) * g->insp;                             \
          const T *gp = gy + (n * g->O + o) * g->outsp;                                       \
          CONV_VISIT(g, kd, kh, kw, s += gp[oi] * xp[ii]);                                    \
        }                                                                                     \
        acc[kk] = s;                                                                          \
      })                                                                                      \
    }                                                                                         \
  }

static void bwdw_range(void *vctx, int64_t begin, int64_t end) {
  conv_ctx *cx = vctx;
  const conv_geom *g = &cx->g;
  if (cx->integer) BWDW_BODY(int64_t) else BWDW_BODY(double)
}

/* Loads the operands, runs fn over ntasks, stores the result. */
static ct_status conv_run(const ct_call *c, conv_ctx *cx, const ct_tensor *a, const ct_tensor *b,
                          const ct_tensor *bias, int64_t ntasks, int64_t per_task, ct_range_fn fn) {
  ct_tensor *o = c->out[0];
  int64_t n = ct_numel(o);
  if (n == 0) return CT_OK;
  cx->integer = !ct_dtype_is_floating(o->dtype);
  void *A = cx->integer ? (void *)nn_load_i64(a) : (void *)nn_load_f64(a);
  void *B = A ? (cx->integer ? (void *)nn_load_i64(b) : (void *)nn_load_f64(b)) : NULL;
  void *BI = NULL;
  if (B && bias) BI = cx->integer ? (void *)nn_load_i64(bias) : (void *)nn_load_f64(bias);
  void *out = (B && (!bias || BI)) ? nn_alloc(n, 8) : NULL;
  if (!out) {
    free(A);
    free(B);
    free(BI);
    return ct_last_status();
  }
  cx->a = A;
  cx->b = B;
  cx->bias = BI;
  cx->out = out;
  ct_parallel_for(ntasks, 1 + 65536 / (per_task + 1), fn, cx);
  if (cx->integer) nn_store_i64(o, out, n);
  else nn_store_f64(o, out, n);
  free(A);
  free(B);
  free(BI);
  free(out);
  return CT_OK;
}

/* in[0] x, in[1] w, in[2] bias (optional) -> y */
ct_status ct_cpu_conv_fwd(const ct_call *c) {
  conv_ctx cx;
  memset(&cx, 0, sizeof cx);
  geom_make(&cx.g, c, c->in[0], c->in[1], c->out[0]);
  return conv_run(c, &cx, c->in[0], c->in[1], c->in[2], cx.g.N * cx.g.O,
                  cx.g.outsp * cx.g.ksp * (cx.g.C / cx.g.G), fwd_range);
}

/* in[0] gy, in[1] w, in[2] bias (optional, per output channel of this op) -> gx */
ct_status ct_cpu_conv_bwd_input(const ct_call *c) {
  conv_ctx cx;
  memset(&cx, 0, sizeof cx);
  geom_make(&cx.g, c, c->out[0], c->in[1], c->in[0]);
  return conv_run(c, &cx, c->in[0], c->in[1], c->in[2], cx.g.N * cx.g.C,
                  cx.g.outsp * cx.g.ksp * (cx.g.O / cx.g.G), bwdi_range);
}

/* in[0] x, in[1] gy -> gw */
ct_status ct_cpu_conv_bwd_weight(const ct_call *c) {
  conv_ctx cx;
  memset(&cx, 0, sizeof cx);
  geom_make(&cx.g, c, c->in[0], c->out[0], c->in[1]);
  return conv_run(c, &cx, c->in[0], c->in[1], NULL, cx.g.O * (cx.g.C / cx.g.G), cx.g.N * cx.g.outsp * cx.g.ksp,
                  bwdw_range);
}
