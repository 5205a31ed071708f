/* CPU reference kernels of convolution: forward, input gradient (= transposed
 * convolution) and weight gradient, as direct loops over 1 to 3 spatial dims with
 * groups, stride, padding and dilation. Floating dtypes accumulate in double and round
 * once; integer dtypes accumulate in int64 (wrapping like C++).
 * Attributes (set by src/ops/conv.c): k0 spatial dims, k1 groups, i[0..3) stride,
 * i[3..6) padding (low side), i[6..9) dilation. float32/float64 run the fast path below
 * (im2col + packed GEMM); these loops stay as its reference (conv_fast.h). */
#include "kernels_nn.h"
#include "conv_fast.h"
#include "gemm_fast.h"
#include "simd/simd.h"

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
static ct_status ref_conv_fwd(const ct_call *c) {
  conv_ctx cx;
  memset(&cx, 0, sizeof cx);
  geom_make(&cx.g, c, c->in[0], c->in[1], c->out[0]);
  return conv_run(c, &cx, c->in[0], c->in[1], c->in[2], cx.g.N * cx.g.O,
                  cx.g.outsp * cx.g.ksp * (cx.g.C / cx.g.G), fwd_range);
}

/* in[0] gy, in[1] w, in[2] bias (optional, per output channel of this op) -> gx */
static ct_status ref_conv_bwd_input(const ct_call *c) {
  conv_ctx cx;
  memset(&cx, 0, sizeof cx);
  geom_make(&cx.g, c, c->out[0], c->in[1], c->in[0]);
  return conv_run(c, &cx, c->in[0], c->in[1], c->in[2], cx.g.N * cx.g.C,
                  cx.g.outsp * cx.g.ksp * (cx.g.O / cx.g.G), bwdi_range);
}

/* in[0] x, in[1] gy -> gw */
static ct_status ref_conv_bwd_weight(const ct_call *c) {
  conv_ctx cx;
  memset(&cx, 0, sizeof cx);
  geom_make(&cx.g, c, c->in[0], c->out[0], c->in[1]);
  return conv_run(c, &cx, c->in[0], c->in[1], NULL, cx.g.O * (cx.g.C / cx.g.G), cx.g.N * cx.g.outsp * cx.g.ksp,
                  bwdw_range);
}

/* ======================================================================================
 * Fast path (float32, float64): im2col + the packed GEMM (gemm_fast.h).
 *
 * Per chunk of nb samples x a range of output rows (a row = one (od, oh) line of OW
 * outputs), the input is unfolded into col [C*ksp, ld]: row (channel, kernel offset),
 * column (sample, output position), ld = nb * positions. Then, for all groups at once
 * (the GEMM's batch dimension runs over groups):
 *   forward       y_g  [Og, ld]        = W_g [Og, Cg*ksp] @ col_g
 *   input grad    col_g                = W_g^T @ gy_g [Og, ld], then col2im adds col into gx
 *   weight grad   gw_g [Og, Cg*ksp]   += gy_g @ col_g^T            (summed over chunks)
 * With one sample per chunk the GEMM reads and writes y / gy in place (row stride outsp);
 * with several, y goes through an [O, ld] scratch (scattered afterwards) and gy is
 * gathered into one: merging samples keeps the GEMM's N large where the spatial size is
 * small (ResNet's 7x7 and 4x4 layers). The workspace is bounded (plan_chunks: at most
 * COL_MAX_ELEMS of col, or one output row of one sample) and comes from the GEMM's buffer
 * cache, so it is reused across calls instead of page-faulted each time.
 * Threads: im2col/col2im/scatter split over (sample, channel) planes; the GEMM splits its
 * own output (gemm_packed.c). Chunking does not depend on the thread count, so neither do
 * the results. Accumulation is in the dtype (float32 FMA, as PyTorch's kernels do), where
 * the reference accumulates in double.
 * ====================================================================================== */

static int conv_forced = -1;
static int64_t conv_col_budget = 0;
static int64_t conv_counts[CT_CONV_PATH_COUNT];

void ct_conv_force_path(int path) { conv_forced = path >= 0 && path < CT_CONV_PATH_COUNT ? path : -1; }
void ct_conv_set_col_budget(int64_t elems) { conv_col_budget = elems > 0 ? elems : 0; }
int64_t ct_conv_path_count(ct_conv_path p) {
  return p >= 0 && p < CT_CONV_PATH_COUNT ? __atomic_load_n(&conv_counts[p], __ATOMIC_RELAXED) : 0;
}

/* Chunk size, in GEMM columns (output positions of one or more samples): enough for the GEMM to run
 * at speed and to amortise packing the weights (MIN_COLS), and, for small kernels, as many as keep
 * the chunk's col in L2 (L2_COL_ELEMS), where im2col writes it and the GEMM's packing reads it back.
 * COL_MAX_ELEMS caps a chunk's col (at least one output row of one sample). */
#define MIN_COLS 512
#define L2_COL_ELEMS ((int64_t)1 << 18) /* 1 MiB of float32 */
#define COL_MAX_ELEMS ((int64_t)4 << 20)
#define WGRAD_1X1_MIN_SP 256 /* weight grad of a 1x1 conv: per-sample GEMMs from this size */

enum { OP_FWD, OP_BWD_INPUT, OP_BWD_WEIGHT };

/* The rule that picks a path. A fixed rule of the geometry today, kept in this one function
 * so that a later change can drive it by measured cost per shape (e.g. a table of timings
 * of each path keyed by the GEMM sizes M, N, K and the kernel size):
 *  - the reference loops when the fast kernels are off (CT_REFERENCE_KERNELS=1 or
 *    CT_CONV_REFERENCE=1), or for dtypes other than float32/float64;
 *  - GEMM_1X1 when every kernel dim is 1, the stride 1 and the padding 0 (dilation is then
 *    irrelevant): each sample's input already is the column matrix [C, H*W]. For the weight
 *    gradient only from WGRAD_1X1_MIN_SP positions: it then runs one GEMM per sample
 *    (K = positions), and below that merging samples through im2col's copy is faster;
 *  - IM2COL otherwise: any stride, padding, dilation and groups. Depthwise convolutions get
 *    M = Og = 1 there, which a direct kernel would do better (not written yet). Within IM2COL the
 *    input gradient of a stride-1 conv whose flipped padding d (k - 1) - p is >= 0 (every
 *    ResNet 3x3/1 layer) runs as the forward conv of gy with the flipped kernel (flip_eligible),
 *    the others as GEMM + col2im. */
static ct_conv_path choose_path(const conv_geom *g, ct_dtype dt, int op) {
  static int env_ref = -1;
  if (env_ref < 0) {
    const char *e = getenv("CT_CONV_REFERENCE");
    env_ref = e && *e && strcmp(e, "0") ? 1 : 0;
  }
  if (conv_forced == CT_CONV_PATH_REFERENCE || env_ref || !ct_fast_enabled() || (dt != CT_FLOAT32 && dt != CT_FLOAT64))
    return CT_CONV_PATH_REFERENCE;
  bool one = true;
  for (int i = 0; i < 3; i++) one = one && g->k[i] == 1 && g->s[i] == 1 && g->p[i] == 0;
  if (op == OP_BWD_WEIGHT && g->outsp < WGRAD_1X1_MIN_SP) one = false;
  if (conv_forced == CT_CONV_PATH_IM2COL) one = false;
  return one ? CT_CONV_PATH_GEMM_1X1 : CT_CONV_PATH_IM2COL;
}

/* samples per chunk (nb) and output rows per chunk (nr; fewer than all only when nb == 1), for a col
 * of `rows` rows. ct_conv_set_col_budget replaces the rule by a plain cap on col's elements. */
static void plan_chunks(const conv_geom *g, int64_t rows, int64_t *nb, int64_t *nr) {
  int64_t cols;
  if (conv_col_budget > 0) cols = conv_col_budget / rows;
  else {
    cols = L2_COL_ELEMS / rows > MIN_COLS ? L2_COL_ELEMS / rows : MIN_COLS;
    if (rows * cols > COL_MAX_ELEMS) cols = COL_MAX_ELEMS / rows;
  }
  if (cols < 1) cols = 1;
  int64_t OW = g->out[2], R = g->outsp / OW;
  if (g->outsp <= cols) {
    int64_t b = cols / g->outsp;
    *nb = b > g->N ? g->N : b;
    *nr = R;
  } else {
    int64_t r = cols / OW;
    *nb = 1;
    *nr = r < 1 ? 1 : r > R ? R : r;
  }
}

/* valid output columns [lo, hi) of one kernel column: 0 <= ow*s + off < IW */
static inline void ow_range(int64_t OW, int64_t IW, int64_t s, int64_t off, int64_t *lo, int64_t *hi) {
  int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t h = IW - off <= 0 ? 0 : (IW - off + s - 1) / s;
  if (h > OW) h = OW;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

typedef struct {
  const conv_geom *g;
  bool dbl;
  size_t es;
  char *x;             /* [N, C, in...]: read by im2col, accumulated into by col2im */
  char *col;           /* [C*ksp, ld] */
  int64_t n0, r0, r1;  /* chunk: first sample, output rows [r0, r1) */
  int64_t np, ld;      /* positions per sample in the chunk, nb * np */
  char *big, *small;   /* scatter/gather: [N, planes, sp] <-> [planes, ld] (whole samples) */
  int64_t planes, sp;
  const char *bias;    /* bias pass over [N, planes, sp] */
} fx_ctx;

/* d[i] += s[i], in blocks of 8 that the compiler turns into vector adds at -O2 */
#define DEFINE_ADD_ROW(T, SUF)                                                                    \
  static inline void add_row_##SUF(T *restrict d, const T *restrict s, int64_t n) {              \
    int64_t i = 0;                                                                                \
    for (; i + 8 <= n; i += 8)                                                                    \
      for (int j = 0; j < 8; j++) d[i + j] += s[i + j];                                           \
    for (; i < n; i++) d[i] += s[i];                                                              \
  }
DEFINE_ADD_ROW(float, f32)
DEFINE_ADD_ROW(double, f64)

/* im2col (fill col from x) and col2im (add col into x) for one element type; tasks are
 * (sample, channel) planes, so col2im's tasks never write the same element. */
#define DEFINE_COLS(T, SUF)                                                                       \
  static void im2col_##SUF(const fx_ctx *q, int64_t begin, int64_t end) {                          \
    const conv_geom *g = q->g;                                                                     \
    const int64_t OW = g->out[2], sw = g->s[2];                                                    \
    for (int64_t t = begin; t < end; t++) {                                                        \
      int64_t s = t / g->C, ch = t % g->C;                                                         \
      const T *xp = (const T *)q->x + ((q->n0 + s) * g->C + ch) * g->insp;                         \
      for (int64_t kd = 0; kd < g->k[0]; kd++)                                                     \
        for (int64_t kh = 0; kh < g->k[1]; kh++)                                                   \
          for (int64_t kw = 0; kw < g->k[2]; kw++) {                                               \
            int64_t kk = (kd * g->k[1] + kh) * g->k[2] + kw;                                       \
            T *dst = (T *)q->col + (ch * g->ksp + kk) * q->ld + s * q->np;                         \
            int64_t off = kw * g->d[2] - g->p[2], lo, hi;                                          \
            ow_range(OW, g->in[2], sw, off, &lo, &hi);                                             \
            for (int64_t r = q->r0; r < q->r1; r++, dst += OW) {                                   \
              int64_t od = r / g->out[1], oh = r % g->out[1];                                      \
              int64_t id = od * g->s[0] - g->p[0] + kd * g->d[0];                                  \
              int64_t ih = oh * g->s[1] - g->p[1] + kh * g->d[1];                                  \
              if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {                          \
                memset(dst, 0, sizeof(T) * (size_t)OW);                                            \
                continue;                                                                          \
              }                                                                                    \
              const T *src = xp + (id * g->in[1] + ih) * g->in[2];                                 \
              for (int64_t ow = 0; ow < lo; ow++) dst[ow] = 0;                                     \
              if (sw == 1) memcpy(dst + lo, src + lo + off, sizeof(T) * (size_t)(hi - lo));        \
              else                                                                                 \
                for (int64_t ow = lo; ow < hi; ow++) dst[ow] = src[ow * sw + off];                 \
              for (int64_t ow = hi; ow < OW; ow++) dst[ow] = 0;                                    \
            }                                                                                      \
          }                                                                                        \
    }                                                                                              \
  }                                                                                                \
  static void col2im_##SUF(const fx_ctx *q, int64_t begin, int64_t end) {                          \
    const conv_geom *g = q->g;                                                                     \
    const int64_t OW = g->out[2], sw = g->s[2];                                                    \
    for (int64_t t = begin; t < end; t++) {                                                        \
      int64_t s = t / g->C, ch = t % g->C;                                                         \
      T *xp = (T *)q->x + ((q->n0 + s) * g->C + ch) * g->insp;                                     \
      for (int64_t kd = 0; kd < g->k[0]; kd++)                                                     \
        for (int64_t kh = 0; kh < g->k[1]; kh++)                                                   \
          for (int64_t kw = 0; kw < g->k[2]; kw++) {                                               \
            int64_t kk = (kd * g->k[1] + kh) * g->k[2] + kw;                                       \
            const T *src = (const T *)q->col + (ch * g->ksp + kk) * q->ld + s * q->np;             \
            int64_t off = kw * g->d[2] - g->p[2], lo, hi;                                          \
            ow_range(OW, g->in[2], sw, off, &lo, &hi);                                             \
            for (int64_t r = q->r0; r < q->r1; r++, src += OW) {                                   \
              int64_t od = r / g->out[1], oh = r % g->out[1];                                      \
              int64_t id = od * g->s[0] - g->p[0] + kd * g->d[0];                                  \
              int64_t ih = oh * g->s[1] - g->p[1] + kh * g->d[1];                                  \
              if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) continue;                  \
              T *dst = xp + (id * g->in[1] + ih) * g->in[2];                                       \
              if (sw == 1) add_row_##SUF(dst + lo + off, src + lo, hi - lo);                       \
              else                                                                                 \
                for (int64_t ow = lo; ow < hi; ow++) dst[ow * sw + off] += src[ow];                \
            }                                                                                      \
          }                                                                                        \
    }                                                                                              \
  }
DEFINE_COLS(float, f32)
DEFINE_COLS(double, f64)

static void im2col_range(void *vq, int64_t begin, int64_t end) {
  fx_ctx *q = vq;
  if (q->dbl) im2col_f64(q, begin, end);
  else im2col_f32(q, begin, end);
}
static void col2im_range(void *vq, int64_t begin, int64_t end) {
  fx_ctx *q = vq;
  if (q->dbl) col2im_f64(q, begin, end);
  else col2im_f32(q, begin, end);
}

/* tasks (sample s, plane c): big[n0 + s, c, :] <-> small[c, s*sp ...] */
static void scatter_range(void *vq, int64_t begin, int64_t end) {
  fx_ctx *q = vq;
  for (int64_t t = begin; t < end; t++) {
    int64_t s = t / q->planes, c = t % q->planes;
    memcpy(q->big + (size_t)(((q->n0 + s) * q->planes + c) * q->sp) * q->es,
           q->small + (size_t)(c * q->ld + s * q->sp) * q->es, (size_t)q->sp * q->es);
  }
}
static void gather_range(void *vq, int64_t begin, int64_t end) {
  fx_ctx *q = vq;
  for (int64_t t = begin; t < end; t++) {
    int64_t s = t / q->planes, c = t % q->planes;
    memcpy(q->small + (size_t)(c * q->ld + s * q->sp) * q->es,
           q->big + (size_t)(((q->n0 + s) * q->planes + c) * q->sp) * q->es, (size_t)q->sp * q->es);
  }
}
/* tasks (sample n, plane c): big[n, c, :] += bias[c] */
static void bias_range(void *vq, int64_t begin, int64_t end) {
  fx_ctx *q = vq;
  for (int64_t t = begin; t < end; t++) {
    int64_t c = t % q->planes;
    if (q->dbl) {
      double *p = (double *)q->big + t * q->sp, b = ((const double *)q->bias)[c];
      for (int64_t i = 0; i < q->sp; i++) p[i] += b;
    } else {
      float *p = (float *)q->big + t * q->sp, b = ((const float *)q->bias)[c];
      for (int64_t i = 0; i < q->sp; i++) p[i] += b;
    }
  }
}

static int64_t plane_grain(int64_t work_per_task) { return 1 + 32768 / (work_per_task + 1); }

static void run_im2col(fx_ctx *q, int64_t nb) {
  ct_parallel_for(nb * q->g->C, plane_grain(q->g->ksp * q->np), im2col_range, q);
}
static void run_col2im(fx_ctx *q, int64_t nb) {
  ct_parallel_for(nb * q->g->C, plane_grain(q->g->ksp * q->np), col2im_range, q);
}
/* scatter (dir 0) or gather (dir 1) nb whole samples of `planes` planes between big and small */
static void run_move(fx_ctx *q, char *big, char *small, int64_t planes, int64_t nb, int dir) {
  q->big = big;
  q->small = small;
  q->planes = planes;
  q->sp = q->np;
  ct_parallel_for(nb * planes, plane_grain(q->sp), dir ? gather_range : scatter_range, q);
}
static void run_bias(fx_ctx *q, char *out, const char *bias, int64_t n, int64_t planes, int64_t sp) {
  if (!bias || n * planes * sp == 0) return;
  q->big = out;
  q->bias = bias;
  q->planes = planes;
  q->sp = sp;
  ct_parallel_for(n * planes, plane_grain(sp), bias_range, q);
}

/* One GEMM call (batch over groups or samples); offsets in elements. */
static ct_status gemm_call(ct_dtype dt, int64_t batch, int64_t M, int64_t N, int64_t K, const void *A, int64_t a_b,
                           int64_t a_m, int64_t a_k, const void *B, int64_t b_b, int64_t b_k, int64_t b_n, void *C,
                           int64_t c_b, int64_t c_m, bool accumulate) {
  ct_fgemm f;
  memset(&f, 0, sizeof f);
  f.dtype = dt;
  f.batch = batch, f.M = M, f.N = N, f.K = K;
  f.A = A, f.a_b = a_b, f.a_m = a_m, f.a_k = a_k;
  f.B = B, f.b_b = b_b, f.b_k = b_k, f.b_n = b_n;
  f.C = C, f.c_b = c_b, f.c_m = c_m, f.c_n = 1;
  f.alpha = 1.0;
  if (accumulate) f.C0 = C, f.c0_b = c_b, f.c0_m = c_m, f.c0_n = 1, f.beta = 1.0;
  return ct_fast_gemm(&f);
}

/* t's elements as a contiguous dt array: t's own memory when it already is one, else a copy
 * (*owned, freed by the caller). NULL with an error on failure. */
static const char *operand(const ct_tensor *t, ct_dtype dt, void **owned) {
  *owned = NULL;
  if (t->dtype == dt && ct_is_contiguous(t) && t->storage->data) return ct_cpu_ptr(t);
  int64_t n = ct_numel(t);
  size_t es = ct_dtype_size(dt);
  void *b = malloc((size_t)(n > 0 ? n : 1) * es);
  if (!b) {
    ct_set_error(CT_ERR_OOM, "CPU out of memory: tried to allocate %lld bytes", (long long)(n * (int64_t)es));
    return NULL;
  }
  if (n && ct_copy_to_buffer(t, b, dt, n) != CT_OK) {
    free(b);
    return NULL;
  }
  *owned = b;
  return b;
}

static void *ws_get(int64_t elems, size_t es) {
  void *p = ct_fast_buf_get((size_t)(elems > 0 ? elems : 1) * es);
  if (!p) ct_set_error(CT_ERR_OOM, "CPU out of memory: tried to allocate %lld bytes", (long long)(elems * (int64_t)es));
  return p;
}

#define EL(p, off) ((char *)(p) + (size_t)(off) * es) /* element offset into a byte pointer */

/* The forward convolution by im2col + GEMM on contiguous x [N, C, in], w [O, C/G, k] into y [N, O, out]
 * (every element written), chunked by plan_chunks; g->C * g->ksp > 0. */
static ct_status fwd_cols(const conv_geom *g, ct_dtype dt, const char *x, const char *w, char *y) {
  size_t es = ct_dtype_size(dt);
  int64_t G = g->G, Og = g->O / G, rows = g->C / G * g->ksp, O = g->O;
  fx_ctx q = {g, dt == CT_FLOAT64, es};
  ct_status st = CT_OK;
  int64_t nb, nr, OW = g->out[2], R = g->outsp / OW;
  plan_chunks(g, g->C * g->ksp, &nb, &nr);
  int64_t ldmax = nb > 1 ? nb * g->outsp : nr * OW;
  void *col = ws_get(g->C * g->ksp * ldmax, es), *tmp = nb > 1 ? ws_get(O * ldmax, es) : NULL;
  if (!col || (nb > 1 && !tmp)) {
    st = ct_last_status();
    goto done;
  }
  q.x = (char *)x;
  q.col = col;
  for (int64_t n0 = 0; n0 < g->N && !st; n0 += nb) {
    int64_t nbc = g->N - n0 < nb ? g->N - n0 : nb;
    for (int64_t r0 = 0; r0 < R && !st; r0 += nr) {
      q.n0 = n0, q.r0 = r0, q.r1 = r0 + nr < R ? r0 + nr : R;
      q.np = (q.r1 - r0) * OW, q.ld = nbc * q.np;
      run_im2col(&q, nbc);
      if (nbc == 1)
        st = gemm_call(dt, G, Og, q.ld, rows, w, Og * rows, rows, 1, col, rows * q.ld, q.ld, 1,
                       EL(y, n0 * O * g->outsp + r0 * OW), Og * g->outsp, g->outsp, false);
      else {
        st = gemm_call(dt, G, Og, q.ld, rows, w, Og * rows, rows, 1, col, rows * q.ld, q.ld, 1, tmp, Og * q.ld, q.ld,
                       false);
        if (!st) run_move(&q, y, tmp, O, nbc, 0);
      }
    }
  }
done:
  ct_fast_buf_put(col);
  ct_fast_buf_put(tmp);
  return st;
}

/* The input gradient of a stride-1 convolution is the forward convolution of gy with the kernel
 * flipped in every spatial dim and its channel axes swapped (per group), low-side padding
 * d (k - 1) - p: run as such (im2col of gy + GEMM writing gx once) instead of GEMM + col2im, which
 * adds k^2 column rows into gx and needs gx zeroed first. Usable when that padding is >= 0. */
static bool flip_eligible(const conv_geom *g) {
  for (int i = 0; i < 3; i++)
    if (g->s[i] != 1 || g->d[i] * (g->k[i] - 1) - g->p[i] < 0) return false;
  return true;
}

static ct_status bwd_input_flipped(const conv_geom *g, ct_dtype dt, const char *gy, const char *w, char *gx) {
  size_t es = ct_dtype_size(dt);
  int64_t G = g->G, Cg = g->C / G, Og = g->O / G, ksp = g->ksp;
  conv_geom f = *g;
  f.C = g->O, f.O = g->C;
  for (int i = 0; i < 3; i++) {
    f.in[i] = g->out[i], f.out[i] = g->in[i];
    f.p[i] = g->d[i] * (g->k[i] - 1) - g->p[i];
  }
  f.insp = g->outsp, f.outsp = g->insp;
  char *wf = ws_get(g->C * Og * ksp, es); /* [C, Og, k]: wf[c, oo, ksp-1-kk] = w[grp*Og + oo, c % Cg, kk] */
  if (!wf) return ct_last_status();
  for (int64_t c = 0; c < g->C; c++) {
    int64_t grp = c / Cg, ci = c % Cg;
    for (int64_t oo = 0; oo < Og; oo++) {
      const char *src = w + (size_t)(((grp * Og + oo) * Cg + ci) * ksp) * es;
      char *dst = wf + (size_t)((c * Og + oo) * ksp) * es;
      if (dt == CT_FLOAT64)
        for (int64_t kk = 0; kk < ksp; kk++) ((double *)dst)[ksp - 1 - kk] = ((const double *)src)[kk];
      else
        for (int64_t kk = 0; kk < ksp; kk++) ((float *)dst)[ksp - 1 - kk] = ((const float *)src)[kk];
    }
  }
  ct_status st = fwd_cols(&f, dt, gy, wf, gx);
  ct_fast_buf_put(wf);
  return st;
}

/* in[0] x, in[1] w, in[2] bias -> y */
static ct_status fast_fwd(const ct_call *c, const conv_geom *g, ct_conv_path path) {
  ct_tensor *yt = c->out[0];
  ct_dtype dt = yt->dtype;
  size_t es = ct_dtype_size(dt);
  int64_t G = g->G, Cg = g->C / G, Og = g->O / G, rows = Cg * g->ksp, O = g->O;
  char *y = ct_cpu_ptr(yt);
  void *xo = NULL, *wo = NULL, *bo = NULL;
  const char *bias = c->in[2] ? operand(c->in[2], dt, &bo) : NULL;
  ct_status st = CT_OK;
  fx_ctx q = {g, dt == CT_FLOAT64, es};
  if (c->in[2] && !bias) return ct_last_status();
  if (rows == 0) { /* no products: y = bias (or 0) */
    memset(y, 0, (size_t)ct_numel(yt) * es);
    goto done;
  }
  const char *x = operand(c->in[0], dt, &xo), *w = x ? operand(c->in[1], dt, &wo) : NULL;
  if (!w) {
    st = ct_last_status();
    goto done;
  }
  if (path == CT_CONV_PATH_GEMM_1X1) {
    for (int64_t grp = 0; grp < G && !st; grp++)
      st = gemm_call(dt, g->N, Og, g->outsp, Cg, EL(w, grp * Og * Cg), 0, Cg, 1, EL(x, grp * Cg * g->insp),
                     g->C * g->insp, g->insp, 1, EL(y, grp * Og * g->outsp), O * g->outsp, g->outsp, false);
    goto done;
  }
  st = fwd_cols(g, dt, x, w, y);
done:
  if (!st) run_bias(&q, y, bias, g->N, O, g->outsp);
  free(xo);
  free(wo);
  free(bo);
  return st;
}

/* in[0] gy, in[1] w, in[2] bias (per channel of gx) -> gx */
static ct_status fast_bwd_input(const ct_call *c, const conv_geom *g, ct_conv_path path) {
  ct_tensor *xt = c->out[0];
  ct_dtype dt = xt->dtype;
  size_t es = ct_dtype_size(dt);
  int64_t G = g->G, Cg = g->C / G, Og = g->O / G, rows = Cg * g->ksp, O = g->O;
  char *gx = ct_cpu_ptr(xt);
  void *yo = NULL, *wo = NULL, *bo = NULL, *col = NULL, *tmp = NULL;
  const char *bias = c->in[2] ? operand(c->in[2], dt, &bo) : NULL;
  ct_status st = CT_OK;
  fx_ctx q = {g, dt == CT_FLOAT64, es};
  if (c->in[2] && !bias) return ct_last_status();
  bool flip = path == CT_CONV_PATH_IM2COL && flip_eligible(g) && rows > 0 && Og > 0 && g->outsp > 0;
  if ((path != CT_CONV_PATH_GEMM_1X1 && !flip) || Og == 0) memset(gx, 0, (size_t)ct_numel(xt) * es); /* col2im adds into it */
  if (rows == 0 || Og == 0 || g->outsp == 0) goto done;
  const char *gy = operand(c->in[0], dt, &yo), *w = gy ? operand(c->in[1], dt, &wo) : NULL;
  if (!w) {
    st = ct_last_status();
    goto done;
  }
  if (flip) {
    st = bwd_input_flipped(g, dt, gy, w, gx);
    goto done;
  }
  if (path == CT_CONV_PATH_GEMM_1X1) {
    for (int64_t grp = 0; grp < G && !st; grp++)
      st = gemm_call(dt, g->N, Cg, g->insp, Og, EL(w, grp * Og * Cg), 0, 1, Cg, EL(gy, grp * Og * g->outsp),
                     O * g->outsp, g->outsp, 1, EL(gx, grp * Cg * g->insp), g->C * g->insp, g->insp, false);
    goto done;
  }
  int64_t nb, nr, OW = g->out[2], R = g->outsp / OW;
  plan_chunks(g, g->C * g->ksp, &nb, &nr);
  int64_t ldmax = nb > 1 ? nb * g->outsp : nr * OW;
  col = ws_get(g->C * g->ksp * ldmax, es);
  tmp = nb > 1 ? ws_get(O * ldmax, es) : NULL;
  if (!col || (nb > 1 && !tmp)) {
    st = ct_last_status();
    goto done;
  }
  q.x = gx;
  q.col = col;
  for (int64_t n0 = 0; n0 < g->N && !st; n0 += nb) {
    int64_t nbc = g->N - n0 < nb ? g->N - n0 : nb;
    for (int64_t r0 = 0; r0 < R && !st; r0 += nr) {
      q.n0 = n0, q.r0 = r0, q.r1 = r0 + nr < R ? r0 + nr : R;
      q.np = (q.r1 - r0) * OW, q.ld = nbc * q.np;
      if (nbc == 1)
        st = gemm_call(dt, G, rows, q.ld, Og, w, Og * rows, 1, rows, EL(gy, n0 * O * g->outsp + r0 * OW),
                       Og * g->outsp, g->outsp, 1, col, rows * q.ld, q.ld, false);
      else {
        run_move(&q, (char *)gy, tmp, O, nbc, 1);
        st = gemm_call(dt, G, rows, q.ld, Og, w, Og * rows, 1, rows, tmp, Og * q.ld, q.ld, 1, col, rows * q.ld, q.ld,
                       false);
      }
      if (!st) run_col2im(&q, nbc);
    }
  }
done:
  if (!st) run_bias(&q, gx, bias, g->N, g->C, g->insp);
  ct_fast_buf_put(col);
  ct_fast_buf_put(tmp);
  free(yo);
  free(wo);
  free(bo);
  return st;
}

/* in[0] x, in[1] gy -> gw */
static ct_status fast_bwd_weight(const ct_call *c, const conv_geom *g, ct_conv_path path) {
  ct_tensor *wt = c->out[0];
  ct_dtype dt = wt->dtype;
  size_t es = ct_dtype_size(dt);
  int64_t G = g->G, Cg = g->C / G, Og = g->O / G, rows = Cg * g->ksp, O = g->O;
  char *gw = ct_cpu_ptr(wt);
  void *xo = NULL, *yo = NULL, *col = NULL, *tmp = NULL;
  ct_status st = CT_OK;
  fx_ctx q = {g, dt == CT_FLOAT64, es};
  if (g->N == 0 || g->outsp == 0) { /* an empty sum */
    memset(gw, 0, (size_t)ct_numel(wt) * es);
    return CT_OK;
  }
  const char *x = operand(c->in[0], dt, &xo), *gy = x ? operand(c->in[1], dt, &yo) : NULL;
  if (!gy) {
    st = ct_last_status();
    goto done;
  }
  if (path == CT_CONV_PATH_GEMM_1X1) { /* gw_g += gy_n,g [Og, sp] @ x_n,g^T [sp, Cg] per sample */
    for (int64_t n = 0; n < g->N && !st; n++)
      st = gemm_call(dt, G, Og, Cg, g->outsp, EL(gy, n * O * g->outsp), Og * g->outsp, g->outsp, 1,
                     EL(x, n * g->C * g->insp), Cg * g->insp, 1, g->insp, gw, Og * Cg, Cg, n > 0);
    goto done;
  }
  int64_t nb, nr, OW = g->out[2], R = g->outsp / OW;
  plan_chunks(g, g->C * g->ksp, &nb, &nr);
  int64_t ldmax = nb > 1 ? nb * g->outsp : nr * OW;
  col = ws_get(g->C * g->ksp * ldmax, es);
  tmp = nb > 1 ? ws_get(O * ldmax, es) : NULL;
  if (!col || (nb > 1 && !tmp)) {
    st = ct_last_status();
    goto done;
  }
  q.x = (char *)x;
  q.col = col;
  bool first = true;
  for (int64_t n0 = 0; n0 < g->N && !st; n0 += nb) {
    int64_t nbc = g->N - n0 < nb ? g->N - n0 : nb;
    for (int64_t r0 = 0; r0 < R && !st; r0 += nr) {
      q.n0 = n0, q.r0 = r0, q.r1 = r0 + nr < R ? r0 + nr : R;
      q.np = (q.r1 - r0) * OW, q.ld = nbc * q.np;
      run_im2col(&q, nbc);
      if (nbc == 1)
        st = gemm_call(dt, G, Og, rows, q.ld, EL(gy, n0 * O * g->outsp + r0 * OW), Og * g->outsp, g->outsp, 1, col,
                       rows * q.ld, 1, q.ld, gw, Og * rows, rows, !first);
      else {
        run_move(&q, (char *)gy, tmp, O, nbc, 1);
        st = gemm_call(dt, G, Og, rows, q.ld, tmp, Og * q.ld, q.ld, 1, col, rows * q.ld, 1, q.ld, gw, Og * rows, rows,
                       !first);
      }
      first = false;
    }
  }
done:
  ct_fast_buf_put(col);
  ct_fast_buf_put(tmp);
  free(xo);
  free(yo);
  return st;
}

static ct_conv_path pick(const conv_geom *g, ct_dtype dt, int op) {
  ct_conv_path p = choose_path(g, dt, op);
  __atomic_fetch_add(&conv_counts[p], 1, __ATOMIC_RELAXED);
  return p;
}

/* in[0] x, in[1] w, in[2] bias (optional) -> y */
ct_status ct_cpu_conv_fwd(const ct_call *c) {
  conv_geom g;
  geom_make(&g, c, c->in[0], c->in[1], c->out[0]);
  ct_conv_path p = pick(&g, c->out[0]->dtype, OP_FWD);
  if (p == CT_CONV_PATH_REFERENCE) return ref_conv_fwd(c);
  return ct_numel(c->out[0]) == 0 ? CT_OK : fast_fwd(c, &g, p);
}

/* in[0] gy, in[1] w, in[2] bias (optional, per output channel of this op) -> gx */
ct_status ct_cpu_conv_bwd_input(const ct_call *c) {
  conv_geom g;
  geom_make(&g, c, c->out[0], c->in[1], c->in[0]);
  ct_conv_path p = pick(&g, c->out[0]->dtype, OP_BWD_INPUT);
  if (p == CT_CONV_PATH_REFERENCE) return ref_conv_bwd_input(c);
  return ct_numel(c->out[0]) == 0 ? CT_OK : fast_bwd_input(c, &g, p);
}

/* in[0] x, in[1] gy -> gw */
ct_status ct_cpu_conv_bwd_weight(const ct_call *c) {
  conv_geom g;
  geom_make(&g, c, c->in[0], c->out[0], c->in[1]);
  ct_conv_path p = pick(&g, c->out[0]->dtype, OP_BWD_WEIGHT);
  if (p == CT_CONV_PATH_REFERENCE) return ref_conv_bwd_weight(c);
  return ct_numel(c->out[0]) == 0 ? CT_OK : fast_bwd_weight(c, &g, p);
}
