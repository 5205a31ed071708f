/* CPU reference kernels of convolution: forward, input gradient (= transposed
 * convolution) and weight gradient, as direct loops over 1 to 3 spatial dims with
 * groups, stride, padding and dilation. Floating dtypes accumulate in double and round
 * once; integer dtypes accumulate in int64 (wrapping like C++).
 * Attributes and geometry: src/ops/conv_geom.h. float32/float64 run the fast path below
 * (im2col + packed GEMM, or Winograd F(2x2, 3x3) + GEMM); these loops stay as its reference
 * (conv_fast.h). */
#include "kernels_nn.h"
#include "conv_fast.h"
#include "gemm_fast.h"
#include "simd/simd.h"
#include "ops/conv_geom.h"

typedef struct {
  ct_conv_geom g;
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
  const ct_conv_geom *g = &cx->g;
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
  const ct_conv_geom *g = &cx->g;
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
  const ct_conv_geom *g = &cx->g;
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
  ct_conv_geom_make(&cx.g, c, c->in[0], c->in[1], c->out[0]);
  return conv_run(c, &cx, c->in[0], c->in[1], c->in[2], cx.g.N * cx.g.O,
                  cx.g.outsp * cx.g.ksp * (cx.g.C / cx.g.G), fwd_range);
}

/* in[0] gy, in[1] w, in[2] bias (optional, per output channel of this op) -> gx */
static ct_status ref_conv_bwd_input(const ct_call *c) {
  conv_ctx cx;
  memset(&cx, 0, sizeof cx);
  ct_conv_geom_make(&cx.g, c, c->out[0], c->in[1], c->in[0]);
  return conv_run(c, &cx, c->in[0], c->in[1], c->in[2], cx.g.N * cx.g.C,
                  cx.g.outsp * cx.g.ksp * (cx.g.O / cx.g.G), bwdi_range);
}

/* in[0] x, in[1] gy -> gw */
static ct_status ref_conv_bwd_weight(const ct_call *c) {
  conv_ctx cx;
  memset(&cx, 0, sizeof cx);
  ct_conv_geom_make(&cx.g, c, c->in[0], c->out[0], c->in[1]);
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
static ct_conv_path choose_path(const ct_conv_geom *g, ct_dtype dt, int op) {
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
static void plan_chunks(const ct_conv_geom *g, int64_t rows, int64_t *nb, int64_t *nr) {
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
  const ct_conv_geom *g;
  bool dbl;
  size_t es;
  char *x;             /* [N, C, in...]: read by im2col, accumulated into by col2im */
  char *col;           /* [C*ksp, ld] */
  int64_t n0, r0, r1;  /* chunk: first sample, output rows [r0, r1) */
  int64_t np, ld;      /* positions per sample in the chunk, nb * np */
  char *big, *small;   /* scatter/gather: [N, planes, sp] <-> [planes, ld] (whole samples) */
  int64_t planes, sp;
  const char *bias;    /* bias pass over [N, planes, sp] */
  int64_t rsplit;      /* im2col only: each (sample, channel) task split into rsplit pieces of rows (s10) */
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

/* Copies `rows` output rows of one kernel offset (stride 1 along W) from source rows src,
 * src + IW, ... into dst, dst + OW, ...: one copy when OW == IW (the rows are then contiguous on
 * both sides; the copy starts at the first row's lo and ends at the last row's hi, so it never
 * reads outside those rows), then zeros in [0, lo) and [hi, OW) of every row (padding, and the
 * neighbouring rows' elements the single copy brought in). Per row when OW != IW (rows == 1). */
#define DEFINE_RUN(T, SUF)                                                                        \
  static inline void im2col_run_##SUF(T *restrict dst, const T *restrict src, int64_t rows, int64_t OW, \
                                      int64_t off, int64_t lo, int64_t hi) {                      \
    if (hi <= lo) {                                                                               \
      memset(dst, 0, sizeof(T) * (size_t)(rows * OW));                                            \
      return;                                                                                     \
    }                                                                                             \
    memcpy(dst + lo, src + lo + off, sizeof(T) * (size_t)((rows - 1) * OW + hi - lo));            \
    for (int64_t r = 0; r < rows; r++) {                                                          \
      T *d = dst + r * OW;                                                                        \
      for (int64_t ow = 0; ow < lo; ow++) d[ow] = 0;                                              \
      for (int64_t ow = hi; ow < OW; ow++) d[ow] = 0;                                             \
    }                                                                                             \
  }
DEFINE_RUN(float, f32)
DEFINE_RUN(double, f64)

/* im2col (fill col from x) and col2im (add col into x) for one element type; tasks are
 * (sample, channel) planes, so col2im's tasks never write the same element. */
/* d[j] = s[2 j] for j in [lo, hi): one float32 row of a stride-2 im2col, 4 at a time on x86-64 (SSE
 * shufps of the even lanes of two 4-float loads; the scalar loop it replaces was ~25% of ResNet's
 * stride-2 3x3 forward at 16, 8 and 4 outputs a row). avail = floats readable from s (to the end of
 * x's plane): a vector reads s[2 j] .. s[2 j + 7]. A copy, so the same bits. */
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif
static inline void gather_s2_f32(float *restrict d, const float *restrict s, int64_t lo, int64_t hi, int64_t avail) {
  int64_t j = lo;
#if defined(__x86_64__)
  for (; j + 4 <= hi && 2 * j + 8 <= avail; j += 4)
    _mm_storeu_ps(d + j, _mm_shuffle_ps(_mm_loadu_ps(s + 2 * j), _mm_loadu_ps(s + 2 * j + 4), _MM_SHUFFLE(2, 0, 2, 0)));
#endif
  for (; j < hi; j++) d[j] = s[2 * j];
}
/* d[2 j] += s[j] for j in [lo, hi): col2im's row of a stride-2 conv, 4 at a time on x86-64 (the even lanes of
 * two 4-float windows of d get the sums, the odd lanes are written back unchanged; the same float adds as the
 * scalar loop, so the same bits; a (sample, channel) plane belongs to one task). avail = floats from d to the
 * end of x's plane: a vector touches d[2 j] .. d[2 j + 7]. */
static inline void scatter_add_s2_f32(float *d, const float *restrict s, int64_t lo, int64_t hi, int64_t avail) {
  int64_t j = lo;
#if defined(__x86_64__)
  for (; j + 4 <= hi && 2 * j + 8 <= avail; j += 4) {
    __m128 a = _mm_loadu_ps(d + 2 * j), b = _mm_loadu_ps(d + 2 * j + 4);
    __m128 ev = _mm_add_ps(_mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)), _mm_loadu_ps(s + j));
    __m128 od = _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    _mm_storeu_ps(d + 2 * j, _mm_unpacklo_ps(ev, od));
    _mm_storeu_ps(d + 2 * j + 4, _mm_unpackhi_ps(ev, od));
  }
#endif
  for (; j < hi; j++) d[2 * j] += s[j];
}

#define DEFINE_COLS(T, SUF)                                                                       \
  static void im2col_##SUF(const fx_ctx *q, int64_t begin, int64_t end) {                          \
    const ct_conv_geom *g = q->g;                                                                     \
    const int64_t OW = g->out[2], OH = g->out[1], IW = g->in[2], sw = g->s[2], sh = g->s[1];       \
    /* stride 1 along H and W and OW == IW: a block of valid rows is contiguous in x and in col */ \
    const bool run = sw == 1 && sh == 1 && OW == IW;                                               \
    /* 2-d planes with short rows: plain loops. The run/memcpy code below costs a few calls per     \
     * kernel offset and row, which at 4..16 outputs a row cost more than the copying (ResNet-18    \
     * CIFAR's 8x8 and 4x4 layers: 3-4 ms of im2col per 4x4 layer call at batch 16) */              \
    const bool small = OW <= 16 && g->k[0] == 1 && g->in[0] == 1 && g->out[0] == 1 && g->p[0] == 0; \
    /* tasks channel-major (samples of one channel adjacent): a thread's tasks then write (read, in   \
     * col2im) whole col rows in order, not one short run every ld elements (at 4x4 outputs a 64-byte \
     * run per 1 KiB row: the 4.7 MB col of a 512-channel layer at batch 16 took ~3.5 ms) */          \
    const int64_t nbs = q->np > 0 ? q->ld / q->np : 1;                                             \
    for (int64_t t = begin; t < end; t++) {                                                        \
      int64_t s = t % nbs, ch = t / nbs;                                                           \
      const T *xp = (const T *)q->x + ((q->n0 + s) * g->C + ch) * g->insp;                         \
      if (small) {                                                                                 \
        for (int64_t kh = 0; kh < g->k[1]; kh++)                                                   \
          for (int64_t kw = 0; kw < g->k[2]; kw++) {                                               \
            T *d = (T *)q->col + (ch * g->ksp + kh * g->k[2] + kw) * q->ld + s * q->np;            \
            int64_t off = kw * g->d[2] - g->p[2], lo, hi;                                          \
            ow_range(OW, IW, sw, off, &lo, &hi);                                                   \
            for (int64_t oh = q->r0; oh < q->r1; oh++, d += OW) {                                  \
              int64_t ih = oh * sh - g->p[1] + kh * g->d[1];                                       \
              if (ih < 0 || ih >= g->in[1]) {                                                      \
                for (int64_t ow = 0; ow < OW; ow++) d[ow] = 0;                                     \
                continue;                                                                          \
              }                                                                                    \
              const T *src = xp + ih * IW + off;                                                   \
              for (int64_t ow = 0; ow < lo; ow++) d[ow] = 0;                                       \
              if (sizeof(T) == sizeof(float) && sw == 2) /* vector gather, s9 */                    \
                gather_s2_f32((float *)d, (const float *)src, lo, hi, g->insp - (ih * IW + off));    \
              else                                                                                 \
                for (int64_t ow = lo; ow < hi; ow++) d[ow] = src[ow * sw];                         \
              for (int64_t ow = hi; ow < OW; ow++) d[ow] = 0;                                      \
            }                                                                                      \
          }                                                                                        \
        continue;                                                                                  \
      }                                                                                            \
      for (int64_t kd = 0; kd < g->k[0]; kd++)                                                     \
        for (int64_t kh = 0; kh < g->k[1]; kh++)                                                   \
          for (int64_t kw = 0; kw < g->k[2]; kw++) {                                               \
            int64_t kk = (kd * g->k[1] + kh) * g->k[2] + kw;                                       \
            T *dst = (T *)q->col + (ch * g->ksp + kk) * q->ld + s * q->np;                         \
            int64_t off = kw * g->d[2] - g->p[2], offh = kh * g->d[1] - g->p[1], lo, hi;           \
            ow_range(OW, IW, sw, off, &lo, &hi);                                                   \
            /* segments of rows with one od: valid rows [vl, vh) computed, not tested per row */   \
            for (int64_t r = q->r0; r < q->r1;) {                                                  \
              int64_t od = r / OH, oh0 = r % OH, n = OH - oh0 < q->r1 - r ? OH - oh0 : q->r1 - r;  \
              int64_t id = od * g->s[0] - g->p[0] + kd * g->d[0], vl = 0, vh = 0;                  \
              if (id >= 0 && id < g->in[0]) ow_range(oh0 + n, g->in[1], sh, offh, &vl, &vh);       \
              if (vl < oh0) vl = oh0;                                                              \
              if (vh < vl) vh = vl;                                                                \
              memset(dst, 0, sizeof(T) * (size_t)((vl - oh0) * OW));                               \
              T *d = dst + (vl - oh0) * OW;                                                        \
              const T *src = xp;                                                                   \
              if (vh > vl) src += (id * g->in[1] + vl * sh + offh) * IW;                           \
              if (vh > vl && run) im2col_run_##SUF(d, src, vh - vl, OW, off, lo, hi);              \
              else                                                                                 \
                for (int64_t oh = vl; oh < vh; oh++, d += OW, src += sh * IW) {                    \
                  if (sw == 1) im2col_run_##SUF(d, src, 1, OW, off, lo, hi);                       \
                  else {                                                                           \
                    for (int64_t ow = 0; ow < lo; ow++) d[ow] = 0;                                 \
                    for (int64_t ow = lo; ow < hi; ow++) d[ow] = src[ow * sw + off];               \
                    for (int64_t ow = hi; ow < OW; ow++) d[ow] = 0;                                \
                  }                                                                                \
                }                                                                                  \
              memset(dst + (vh - oh0) * OW, 0, sizeof(T) * (size_t)((oh0 + n - vh) * OW));         \
              dst += n * OW;                                                                       \
              r += n;                                                                              \
            }                                                                                      \
          }                                                                                        \
    }                                                                                              \
  }                                                                                                \
  static void col2im_##SUF(const fx_ctx *q, int64_t begin, int64_t end) {                          \
    const ct_conv_geom *g = q->g;                                                                     \
    const int64_t OW = g->out[2], sw = g->s[2], nbs = q->np > 0 ? q->ld / q->np : 1; /* as im2col */ \
    for (int64_t t = begin; t < end; t++) {                                                        \
      int64_t s = t % nbs, ch = t / nbs;                                                           \
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
              else if (sizeof(T) == sizeof(float) && sw == 2)                                      \
                scatter_add_s2_f32((float *)dst + off, (const float *)src, lo, hi,                 \
                                   g->insp - ((id * g->in[1] + ih) * g->in[2] + off));             \
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

/* The grain for n tasks of `work_per_task` each, raised so that the chunks come in a multiple of the thread count
 * when the grain (not the pool's 4 chunks a thread) sets their size: the pool makes chunks of max(ceil(n / 4t),
 * grain) tasks, so 256 planes at a grain of 42 (the 14x14 Winograd transforms at batch 1) were 7 chunks, 4:3 on 2
 * threads (s10). Every task here writes its own elements, so the chunking changes no bits. CT_CONV_EVEN_CHUNKS=0:
 * the grain alone. */
static int64_t plane_grain_n(int64_t n, int64_t work_per_task) {
  static int env = -1;
  bool even = ct_env_switch("CT_CONV_EVEN_CHUNKS", &env);
  int64_t grain = plane_grain(work_per_task), t = ct_get_num_threads();
  if (!even || t <= 1 || n <= grain) return grain;
  int64_t m = n / grain; /* whole chunks of the grain */
  if (m >= 4 * t) return grain;
  m = m / t * t;
  if (m < t) m = t;
  return (n + m - 1) / m;
}

/* im2col's tasks are (sample, channel) planes: at batch 1 a stem conv has only C = 3 of them (conv1 of
 * ResNet at 224: 3 tasks of ~80k elements on 2 threads ran 2:1). When a chunk has fewer than
 * RSPLIT_MIN_TASKS planes, each plane is also split into rsplit pieces of output rows (~RSPLIT_TASKS tasks
 * in all): piece p of plane b fills rows [r0 + R p / rsplit, r0 + R (p + 1) / rsplit) of the chunk's R rows,
 * through a copy of the context with r0/r1 narrowed and col advanced by the rows skipped (np and ld stay, so
 * both paths of DEFINE_COLS index as before). A copy, so the same bits at any split and thread count; the
 * split does not depend on the thread count. Not for col2im: its kernel offsets add into overlapping rows
 * of x. CT_CONV_IM2COL_RSPLIT=0 turns it off. */
#define RSPLIT_MIN_TASKS 8
#define RSPLIT_TASKS 16
static void im2col_split_range(void *vq, int64_t begin, int64_t end) {
  const fx_ctx *q = vq;
  const int64_t R = q->r1 - q->r0, k = q->rsplit, OW = q->g->out[2];
  for (int64_t t = begin; t < end; t++) {
    int64_t b = t / k, p = t % k;
    fx_ctx l = *q;
    l.r0 = q->r0 + R * p / k;
    l.r1 = q->r0 + R * (p + 1) / k;
    if (l.r1 <= l.r0) continue;
    l.col = q->col + (size_t)((l.r0 - q->r0) * OW) * q->es;
    im2col_range(&l, b, b + 1);
  }
}
static int64_t im2col_rsplit(const fx_ctx *q, int64_t planes) {
  static int env = -1;
  bool on = ct_env_switch("CT_CONV_IM2COL_RSPLIT", &env);
  int64_t R = q->r1 - q->r0;
  if (!on || planes <= 0 || planes >= RSPLIT_MIN_TASKS || R < 2) return 1;
  int64_t k = (RSPLIT_TASKS + planes - 1) / planes;
  return k < R ? k : R;
}
static void run_im2col(fx_ctx *q, int64_t nb) {
  int64_t planes = nb * q->g->C;
  q->rsplit = im2col_rsplit(q, planes);
  int64_t n = planes * q->rsplit;
  if (q->rsplit > 1) ct_parallel_for(n, plane_grain_n(n, q->g->ksp * q->np / q->rsplit), im2col_split_range, q);
  else ct_parallel_for(n, plane_grain_n(n, q->g->ksp * q->np), im2col_range, q);
}
static void run_col2im(fx_ctx *q, int64_t nb) {
  ct_parallel_for(nb * q->g->C, plane_grain_n(nb * q->g->C, q->g->ksp * q->np), col2im_range, q);
}
/* scatter (dir 0) or gather (dir 1) nb whole samples of `planes` planes between big and small */
static void run_move(fx_ctx *q, char *big, char *small, int64_t planes, int64_t nb, int dir) {
  q->big = big;
  q->small = small;
  q->planes = planes;
  q->sp = q->np;
  ct_parallel_for(nb * planes, plane_grain_n(nb * planes, q->sp), dir ? gather_range : scatter_range, q);
}
static void run_bias(fx_ctx *q, char *out, const char *bias, int64_t n, int64_t planes, int64_t sp) {
  if (!bias || n * planes * sp == 0) return;
  q->big = out;
  q->bias = bias;
  q->planes = planes;
  q->sp = sp;
  ct_parallel_for(n * planes, plane_grain_n(n * planes, sp), bias_range, q);
}

/* One GEMM call (batch over groups or samples); offsets in elements. apk: A prepacked (or NULL). */
static ct_fgemm gemm_desc(ct_dtype dt, int64_t batch, int64_t M, int64_t N, int64_t K, const void *A, int64_t a_b,
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
  return f;
}
static ct_status gemm_call_pk(const struct ct_gemm_apack *apk, ct_dtype dt, int64_t batch, int64_t M, int64_t N,
                              int64_t K, const void *A, int64_t a_b, int64_t a_m, int64_t a_k, const void *B, int64_t b_b,
                              int64_t b_k, int64_t b_n, void *C, int64_t c_b, int64_t c_m, bool accumulate) {
  ct_fgemm f = gemm_desc(dt, batch, M, N, K, A, a_b, a_m, a_k, B, b_b, b_k, b_n, C, c_b, c_m, accumulate);
  f.A_packed = apk;
  return ct_fast_gemm(&f);
}
static ct_status gemm_call(ct_dtype dt, int64_t batch, int64_t M, int64_t N, int64_t K, const void *A, int64_t a_b,
                           int64_t a_m, int64_t a_k, const void *B, int64_t b_b, int64_t b_k, int64_t b_n, void *C,
                           int64_t c_b, int64_t c_m, bool accumulate) {
  return gemm_call_pk(NULL, dt, batch, M, N, K, A, a_b, a_m, a_k, B, b_b, b_k, b_n, C, c_b, c_m, accumulate);
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

/* ---- eval weight cache ----
 * A Conv2d module in eval mode (src/nn/layers.c) lends its forward conv a cache slot
 * (ct_conv_wcache_use); the float32/float64 one-group forward then keeps its weight packed for the
 * GEMM (the A operand of the im2col and 1x1 paths: [O, C k] row-major, the same for both) and, for
 * Winograd, the transformed weight U packed for its 16 GEMMs, instead of packing (and transforming)
 * the weight on every call: ResNet-18 224 batch 1 spent ~14% of its forward CPU time packing weights.
 * An entry is reused only while the weight is the same: same storage (retained by the entry, so its
 * address cannot be reused), element pointer, dtype, shape and version counter, no in-place write
 * through a `.data` alias anywhere since (ct_alias_write_epoch), and never for a storage whose
 * address was handed out (raw_exposed: writes through it bump no counter); the same 64 sampled
 * elements are checked too, as a guard for writes the library itself might make without a bump. Results equal the uncached path's bit for bit
 * (the same packed panels). CT_CONV_WEIGHT_CACHE=0 or ct_conv_set_weight_cache(0) turns it off. */
struct ct_conv_wcache {
  ct_storage *st;
  const char *data;
  uint64_t version, epoch, sample;
  ct_dtype dt;
  int64_t O, C, k[3];
  struct ct_gemm_apack *pk[2]; /* [0] weight as the GEMM's A, [1] Winograd's U */
};
static _Thread_local ct_conv_wcache **wc_slot;
static int wc_mode = -1;
void ct_conv_set_weight_cache(int on) { wc_mode = on < 0 ? -1 : on ? 1 : 0; }
static bool wc_enabled(void) {
  static int env = -1;
  if (wc_mode >= 0) return wc_mode;
  return ct_env_switch("CT_CONV_WEIGHT_CACHE", &env);
}
ct_conv_wcache **ct_conv_wcache_use(ct_conv_wcache **slot) {
  ct_conv_wcache **prev = wc_slot;
  wc_slot = slot;
  return prev;
}
void ct_conv_wcache_free(ct_conv_wcache *c) {
  if (!c) return;
  ct_fast_gemm_apack_free(c->pk[0]);
  ct_fast_gemm_apack_free(c->pk[1]);
  if (c->st) ct_storage_release(c->st);
  free(c);
}
size_t ct_conv_wcache_bytes(const ct_conv_wcache *c) {
  return c ? ct_fast_gemm_apack_bytes(c->pk[0]) + ct_fast_gemm_apack_bytes(c->pk[1]) : 0;
}
/* FNV-1a over 64 elements spread over the weight's n elements (all of them when fewer) */
static uint64_t wc_sample(const char *p, int64_t n, size_t es) {
  uint64_t h = 1469598103934665603ull;
  int64_t cnt = n < 64 ? n : 64;
  for (int64_t i = 0; i < cnt; i++) {
    const unsigned char *e = (const unsigned char *)p + (size_t)(cnt == n ? i : i * (n - 1) / 63) * es;
    for (size_t b = 0; b < es; b++) h = (h ^ e[b]) * 1099511628211ull;
  }
  return h;
}
/* The cache entry of the weight wt (contiguous, dtype dt) of the forward conv g, from the slot
 * lent by the module (emptied and refilled when the weight changed); NULL: no cache for this call. */
static ct_conv_wcache *wc_get(const ct_tensor *wt, const ct_conv_geom *g, ct_dtype dt) {
  /* a weight whose address was handed out (ct_data_ptr, numpy, external memory) can change with no
   * counter moving: never cached (the 64-element sample below would miss a write to a few elements) */
  if (!wc_slot || !wc_enabled() || g->G != 1 || wt->dtype != dt || !ct_is_contiguous(wt) || !wt->storage->data ||
      wt->storage->raw_exposed)
    return NULL;
  ct_conv_wcache *c = *wc_slot;
  const char *data = ct_cpu_ptr(wt);
  uint64_t ver = *ct_vptr(wt), ep = __atomic_load_n(&ct_alias_write_epoch, __ATOMIC_RELAXED);
  int64_t n = g->O * g->C * g->ksp;
  uint64_t smp = wc_sample(data, n, ct_dtype_size(dt));
  if (c && c->st == wt->storage && c->data == data && c->version == ver && c->epoch == ep && c->sample == smp &&
      c->dt == dt && c->O == g->O && c->C == g->C && !memcmp(c->k, g->k, sizeof c->k))
    return c;
  ct_conv_wcache_free(c);
  *wc_slot = c = calloc(1, sizeof *c);
  if (!c) return NULL; /* uncached */
  c->st = wt->storage;
  ct_storage_retain(c->st);
  c->data = data, c->version = ver, c->epoch = ep, c->sample = smp, c->dt = dt, c->O = g->O, c->C = g->C;
  memcpy(c->k, g->k, sizeof c->k);
  return c;
}
/* The entry's packing of A for the GEMM f (built on first use); NULL: pack per call (out of memory,
 * or the packing no longer fits, e.g. another micro-kernel forced since). */
static const struct ct_gemm_apack *wc_pack(ct_conv_wcache *c, int i, const ct_fgemm *f) {
  if (!c) return NULL;
  if (c->pk[i] && !ct_fast_gemm_apack_fits(c->pk[i], f)) {
    ct_fast_gemm_apack_free(c->pk[i]);
    c->pk[i] = NULL;
  }
  if (!c->pk[i]) {
    c->pk[i] = ct_fast_gemm_pack_a(f);
    if (!c->pk[i]) ct_clear_error();
  }
  return c->pk[i];
}

/* ---- eval epilogue (conv_fast.h) ---- */
static _Thread_local ct_conv_epilogue *ep_slot;
void ct_conv_epilogue_use(ct_conv_epilogue *ep) { ep_slot = ep; }

/* ======================================================================================
 * Winograd F(2x2, 3x3) for float32 3x3 convolutions with stride 1, dilation 1 and one group
 * (every ResNet 3x3/1 layer, forward and, as the flipped-kernel forward conv, input gradient):
 * each 2x2 output tile is A^T [(G g G^T) . (B^T d B)] A of its 4x4 input tile d, so the GEMM
 * does 16 products per 4 outputs and input channel instead of 36, and the input is expanded
 * 4x (16 values per 2x2 tile) instead of 9x by im2col. Per chunk of samples:
 *   V[e, c, t]  = (B^T d B)[e] of tile t of channel c     (input transform, tasks (sample, c))
 *   M[e]        = U[e] [O, C] @ V[e] [C, T]               (one GEMM call, batch over the 16 e)
 *   y tile      = A^T M[., o, t] A                        (output transform, tasks (sample, o))
 * with U[e, o, c] = (G g G^T)[e] transformed once per call. The transforms add and subtract at
 * most 4 terms (and halve), so the error stays a small multiple of the GEMM's (the tests'
 * bound holds); chunks do not depend on the thread count, nor does the GEMM's order.
 * ====================================================================================== */
#define WINO_MIN_CH 16 /* below this many in/out channels im2col does better */
#ifndef WINO_WASM_MIN_TILES
#define WINO_WASM_MIN_TILES 128
#endif
/* V + M of one chunk (at least one sample): 1 MiB of float32, so that the GEMM reads V from L2
 * (8 MiB chunks measured ~40% slower on ResNet's 32x32 layer) */
#define WINO_MAX_ELEMS ((int64_t)1 << 18)
#define WINO_MIN_T 128 /* tiles per chunk at least (wino_scratch) */

/* g's shape is one Winograd F(2x2, 3x3) can run: float32, one group, 3x3, stride and dilation 1. */
static bool wino_shape_ok(const ct_conv_geom *g, ct_dtype dt) {
  if (dt != CT_FLOAT32 || g->G != 1 || g->C < WINO_MIN_CH || g->O < WINO_MIN_CH) return false;
  if (g->k[0] != 1 || g->in[0] != 1 || g->k[1] != 3 || g->k[2] != 3) return false; /* 2-d, 3x3 */
  for (int i = 1; i < 3; i++)
    if (g->s[i] != 1 || g->d[i] != 1 || g->p[i] > 2 || g->out[i] < 1) return false;
  return true;
}
/* g is a forward conv (x [N, C, in], w [O, C, 3, 3]) Winograd can run; padding any. */
static bool wino_eligible(const ct_conv_geom *g, ct_dtype dt) {
  if (!wino_shape_ok(g, dt)) return false;
  /* The weight transform writes 16 O C floats per call. With the transforms vectorised and the
   * planes' strides padded (wino_ld), Winograd measured faster than im2col from (C + O) / 2 tiles:
   * ResNet-18 CIFAR's 8x8 layers at batch 16 (256 tiles, C + O = 512) forward 9.7 -> 7.4 ms and
   * input gradient 10.5 -> 7.8 ms of CPU at 1 thread; its 4x4 layers (64 tiles, C + O = 1024)
   * were slower (10.9 -> 12.4 ms) and stay on im2col (bench/bench_conv_cifar.py). From (C + O) / 4
   * tiles (session 9, with chunks of >= WINO_MIN_T tiles, wino_scratch): the 4x4 512-channel layers
   * at batch 64 (256 tiles) and 224x224's 7x7 ones at batch 16 take Winograd; ResNet-18 CIFAR b64
   * step at 1 thread, CPU of all convs (fwd / input grad / weight grad) 418 / 417 / 475 ->
   * 388 / 402 / 435 ms and 429 / 432 / 499 -> 376 / 389 / 421 (bench/results/s9_step.md). */
  int64_t tiles = g->N * ((g->out[1] + 1) / 2) * ((g->out[2] + 1) / 2);
#if defined(__wasm_simd128__)
  /* WebAssembly: the GEMM (no FMA, 4-wide) costs more against the transforms than on x86, so
   * Winograd pays from fewer tiles (ResNet-18 batch 1's 28x28 .. 7x7 layers: 196 .. 16 tiles) */
  return tiles >= WINO_WASM_MIN_TILES;
#else
  return 4 * tiles >= g->C + g->O;
#endif
}

/* The forward and the weight gradient take Winograd from fewer tiles than the input gradient
 * (which adds a flip of the weights): from 64 tiles and (C + O) / 16. Measured (session 9, 1 thread,
 * CPU per call, conv2d then backward with only w requiring grad, interleaved A/B): ResNet-18 CIFAR's
 * 4x4 512-channel layer at batch 16 (64 tiles) forward 8.9-10.0 -> 8.0-10.1 ms, weight gradient
 * 9.9-11.0 -> 7.4-9.2 ms; the weight gradient alone on Winograd (forward on im2col) did not gain
 * (10.8-11.2 both), nor did the input gradient (11.3 -> 14.6-17.8 ms: the flip and the 16 MiB U);
 * the weight gradient at 16 tiles (4x4, batch 4) was slower, 3.6 -> 5.4 ms. */
static bool wino_fwd_wgrad_pays(const ct_conv_geom *g, ct_dtype dt) {
#if defined(__wasm_simd128__)
  (void)g, (void)dt;
  return false; /* not measured there: wino_eligible's rule alone */
#else
  int64_t tiles = g->N * ((g->out[1] + 1) / 2) * ((g->out[2] + 1) / 2);
  return wino_shape_ok(g, dt) && tiles >= 64 && 16 * tiles >= g->C + g->O;
#endif
}

typedef struct {
  const ct_conv_geom *g;
  const float *x, *w;
  float *y, *U, *V, *M;
  int64_t n0, T, TH, TW; /* chunk's first sample, tiles in the chunk, tiles per sample along H, W */
  int failed;            /* a task could not get its scratch */
  int64_t uld, vld, mld; /* distance between two of the 16 planes of U, V, M (wino_ld) */
  const ct_conv_epilogue *ep; /* forward: applied to each output row (or NULL) */
  bool wflip; /* w is the original conv's [C, O, 3, 3] weight: read flipped (bwd_input_flipped) */
} wino_ctx;

/* Plane stride for n floats per plane: n rounded up to 16 floats (64 B), plus 16 when that is a
 * multiple of 256 floats. The transforms read or write the 16 planes together; at a power-of-two
 * stride (O C = 16384 at 128 channels, C T = 8192 nb) the 16 streams map to one L1 set and miss on
 * every access (perf: wino_out_range / wino_in_range / wino_wt_range stalled on their loads). */
static int64_t wino_ld(int64_t n) {
  int64_t ld = (n + 15) / 16 * 16;
  return ld % 256 == 0 ? ld + 16 : ld;
}

/* Scratch of one transform task: 8 rows of PW = 2 TW + 2 floats, or NULL (q->failed set). */
static float *wino_rows(wino_ctx *q) {
  float *r = malloc(sizeof(float) * (size_t)(8 * (2 * q->TW + 2)));
  if (!r) __atomic_store_n(&q->failed, 1, __ATOMIC_RELAXED);
  return r;
}

/* 8 floats as one GCC/clang vector (any alignment): the transforms below run 8 tiles (or columns)
 * at a time, as AVX2 vectors in the AVX2 clone and as SSE/SIMD128 pairs in the portable one. The
 * same operations in the same order as the scalar tails, so results do not depend on the level. */
typedef float wino_v8 __attribute__((vector_size(32), aligned(4), may_alias));
#define V8LD(p) (*(const wino_v8 *)(const void *)(p))
#define V8ST(p, v) (*(wino_v8 *)(void *)(p) = (v))
#define V8EVEN(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#define V8ODD(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15)

/* U[., t] of one kernel k (t = o C + c): the weight transform G k G^T, scalar. */
static void wino_wt1(float *U, int64_t OC, int64_t t, const float k[9]) {
  float a[4][3];
  for (int j = 0; j < 3; j++) {
    a[0][j] = k[j];
    a[1][j] = 0.5f * (k[j] + k[3 + j] + k[6 + j]);
    a[2][j] = 0.5f * (k[j] - k[3 + j] + k[6 + j]);
    a[3][j] = k[6 + j];
  }
  for (int i = 0; i < 4; i++) {
    float *u = U + (int64_t)(i * 4) * OC + t;
    u[0] = a[i][0];
    u[OC] = 0.5f * (a[i][0] + a[i][1] + a[i][2]);
    u[2 * OC] = 0.5f * (a[i][0] - a[i][1] + a[i][2]);
    u[3 * OC] = a[i][2];
  }
}

/* U[., t .. t + 7] of 8 kernels, kt[j][l] = tap j of kernel l: wino_wt1's operations in its order as
 * 8-wide vectors (the same bits), one 8-float store per plane instead of 8 scattered ones. */
static void wino_wt8(float *U, int64_t OC, int64_t t, float kt[9][8]) {
  wino_v8 a[4][3];
  for (int j = 0; j < 3; j++) {
    wino_v8 k0 = V8LD(kt[j]), k1 = V8LD(kt[3 + j]), k2 = V8LD(kt[6 + j]);
    a[0][j] = k0;
    a[1][j] = 0.5f * (k0 + k1 + k2);
    a[2][j] = 0.5f * (k0 - k1 + k2);
    a[3][j] = k2;
  }
  for (int i = 0; i < 4; i++) {
    float *u = U + (int64_t)(i * 4) * OC + t;
    V8ST(u, a[i][0]);
    V8ST(u + OC, 0.5f * (a[i][0] + a[i][1] + a[i][2]));
    V8ST(u + 2 * OC, 0.5f * (a[i][0] - a[i][1] + a[i][2]));
    V8ST(u + 3 * OC, a[i][2]);
  }
}

/* tasks (o, c): U[e, o, c] = (G g G^T)[e], 8 tasks at a time (session 9: the scalar loop's scattered
 * stores to the 16 planes). */
static void wino_wt_range(void *vq, int64_t begin, int64_t end) {
  wino_ctx *q = vq;
  int64_t t = begin;
  for (; t + 8 <= end; t += 8) {
    float kt[9][8];
    for (int l = 0; l < 8; l++)
      for (int j = 0; j < 9; j++) kt[j][l] = q->w[(t + l) * 9 + j];
    wino_wt8(q->U, q->uld, t, kt);
  }
  for (; t < end; t++) wino_wt1(q->U, q->uld, t, q->w + t * 9);
}

/* q->wflip (bwd_input_flipped): w is the original conv's [C, O, 3, 3] weight (g->C = O, g->O = C here)
 * and U is built from its kernels turned 180 degrees with the channel axes swapped, in blocks of 8
 * output x 8 input channels of g: each block reads 8 runs of 8 adjacent kernels of w (reading one
 * kernel per task, at a stride of g->O kernels, missed L1 on every read: 18% of the CPU of ResNet-18
 * CIFAR's 4x4 512-channel forward + input gradient at batch 64 went to those reads). Tasks: blocks of
 * 8 output channels of g. */
static void wino_wtf_range(void *vq, int64_t begin, int64_t end) {
  wino_ctx *q = vq;
  const int64_t C = q->g->C, O = q->g->O;
  for (int64_t ob = begin; ob < end; ob++) {
    int64_t o0 = ob * 8, no = O - o0 < 8 ? O - o0 : 8;
    for (int64_t c0 = 0; c0 < C; c0 += 8) {
      int64_t nc = C - c0 < 8 ? C - c0 : 8;
      float kt[8][9][8]; /* [o - o0][tap][c - c0] */
      for (int64_t l = 0; l < nc; l++) {
        const float *src = q->w + ((c0 + l) * O + o0) * 9; /* no kernels of w, adjacent */
        for (int64_t oo = 0; oo < no; oo++)
          for (int j = 0; j < 9; j++) kt[oo][j][l] = src[oo * 9 + 8 - j];
      }
      for (int64_t oo = 0; oo < no; oo++) {
        int64_t t = (o0 + oo) * C + c0;
        if (nc == 8) {
          wino_wt8(q->U, q->uld, t, kt[oo]);
        } else {
          for (int64_t l = 0; l < nc; l++) {
            float k[9];
            for (int j = 0; j < 9; j++) k[j] = kt[oo][j][l];
            wino_wt1(q->U, q->uld, t + l, k);
          }
        }
      }
    }
  }
}

/* The eval epilogue (conv_fast.h) on one row: d[i] = relu?(((s[i] - m) * sc + b) + r[i]) (r NULL: no
 * add; d may be s), 8 at a time, the batch norm kernel's expression (kernels_bn.c), then the add's and
 * the relu's (x <= 0 ? 0 : x). Inlined into the AVX2 clones below as the batch norm's own clone is,
 * so a compiler that contracts a * b + c into an FMA there (clang) does it on both sides. */
typedef int32_t wino_i8 __attribute__((vector_size(32), aligned(4), may_alias));
static inline void ep_row(float *d, const float *s, int64_t n, float m, float sc, float b, const float *r, bool relu) {
  const wino_v8 vm = (wino_v8){0} + m, vs = (wino_v8){0} + sc, vb = (wino_v8){0} + b;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    wino_v8 v = (V8LD(s + i) - vm) * vs + vb;
    if (r) v = v + V8LD(r + i);
    if (relu) v = (wino_v8)((wino_i8)v & ~(wino_i8)(v <= (wino_v8){0}));
    V8ST(d + i, v);
  }
  for (; i < n; i++) {
    float v = (s[i] - m) * sc + b;
    if (r) v = v + r[i];
    d[i] = relu ? (v <= 0 ? 0.0f : v) : v;
  }
}
typedef struct {
  const ct_conv_epilogue *ep;
  float *y;
  int64_t O, sp;
} ep_ctx;
#define DEFINE_EP(SUF, ATTR)                                                                          \
  ATTR static void ep_##SUF(const ep_ctx *q, int64_t begin, int64_t end) {                           \
    for (int64_t t = begin; t < end; t++) {                                                           \
      int64_t o = t % q->O;                                                                           \
      ep_row(q->y + t * q->sp, q->y + t * q->sp, q->sp, q->ep->m[o], q->ep->sc[o], q->ep->b[o],       \
             q->ep->res ? q->ep->res + t * q->sp : NULL, q->ep->relu);                                \
    }                                                                                                 \
  }
DEFINE_EP(port, )
#if defined(__x86_64__)
DEFINE_EP(avx2, __attribute__((target("avx2,fma"))))
#endif
static void ep_range(void *vq, int64_t begin, int64_t end) {
#if defined(__x86_64__)
  if (ct_simd_active() >= CT_SIMD_AVX2) ep_avx2(vq, begin, end);
  else
#endif
    ep_port(vq, begin, end);
}

/* Input transform, tasks (sample s, channel c): V[., c, s * tiles + tile] = B^T d B of every tile.
 * Per row of tiles: the 4 input rows zero-padded into scratch (no bounds tests after), B^T down the
 * columns (rows d0 - d2, d1 + d2, d2 - d1, d1 - d3), then B along each tile's columns 2tw .. 2tw+3
 * (the same combinations), writing each of the 16 planes contiguously. Full vectors only where
 * all 8 tiles are this row's: the next tiles in V may be another task's.
 * Output transform, tasks (sample s, output channel o): y's 2x2 tiles = A^T M A, a row of tiles at
 * a time (A^T down the 16 planes: m0 + m1 + m2, m1 - m2 - m3; A along the row into two output rows
 * of scratch, then copied, clipped at the far edges). */
/* s11: the input transform's padded rows are built by inline copies (not 3 libc calls a row: for
 * ResNet's 32x32 .. 4x4 maps the rows are 4-32 floats, so memset/memmove call overhead made ~10% of the
 * CIFAR b16 step's CPU on Zen 5), and the 4-row window rolls by 2 rows per row of tiles (tile rows
 * overlap by 2 input rows: each row is copied once instead of twice). The same values, so the same
 * bits. CT_WINO_ROWS=0: the former copies. */
static int wino_rows_fast = -1;
static void wino_rows_init(void) { ct_env_switch("CT_WINO_ROWS", &wino_rows_fast); }
/* d[0, PW) = x row s[0, n) placed at column pw, zeros around it (pw + n <= PW) */
static inline void wino_pad_row(float *d, const float *s, int64_t pw, int64_t n, int64_t PW) {
  int64_t i = 0;
  for (; i < pw; i++) d[i] = 0.0f;
  float *dd = d + pw;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) V8ST(dd + j, V8LD(s + j));
  for (; j < n; j++) dd[j] = s[j];
  for (i = pw + n; i < PW; i++) d[i] = 0.0f;
}
static inline void wino_zero_row(float *d, int64_t PW) {
  int64_t i = 0;
  for (; i + 8 <= PW; i += 8) V8ST(d + i, (wino_v8){0});
  for (; i < PW; i++) d[i] = 0.0f;
}
#define DEFINE_WINO_XFORM(SUF, ATTR)                                                                     \
  ATTR static void wino_in_##SUF(wino_ctx *q, int64_t begin, int64_t end, float *b) {                    \
    const ct_conv_geom *g = q->g;                                                                        \
    const int64_t C = g->C, IH = g->in[1], IW = g->in[2], ph = g->p[1], pw = g->p[2];                    \
    const int64_t TW = q->TW, PW = 2 * TW + 2, tps = q->TH * TW, CT = q->vld;                            \
    const int64_t hi = pw + IW < PW ? pw + IW : PW; /* padded columns [pw, hi) hold x */                 \
    float *pr[4] = {b, b + PW, b + 2 * PW, b + 3 * PW}, *bt[4] = {b + 4 * PW, b + 5 * PW, b + 6 * PW, b + 7 * PW}; \
    const bool fast = wino_rows_fast > 0;                                                                \
    for (int64_t t = begin; t < end; t++) {                                                              \
      int64_t s = t / C, c = t % C;                                                                      \
      const float *xp = q->x + ((q->n0 + s) * C + c) * IH * IW;                                          \
      for (int64_t th = 0; th < q->TH; th++) {                                                           \
        int i0 = 0;                                                                                      \
        if (fast && th > 0) { /* rows 2, 3 of the last tile row are rows 0, 1 of this one */             \
          float *t0 = pr[0], *t1 = pr[1];                                                                \
          pr[0] = pr[2], pr[1] = pr[3], pr[2] = t0, pr[3] = t1, i0 = 2;                                  \
        }                                                                                                \
        for (int i = i0; i < 4; i++) {                                                                   \
          int64_t ih = 2 * th - ph + i;                                                                  \
          if (fast) {                                                                                    \
            if (ih < 0 || ih >= IH) wino_zero_row(pr[i], PW);                                            \
            else wino_pad_row(pr[i], xp + ih * IW, pw, hi - pw, PW);                                     \
            continue;                                                                                    \
          }                                                                                              \
          if (ih < 0 || ih >= IH) {                                                                      \
            memset(pr[i], 0, sizeof(float) * (size_t)PW);                                                \
            continue;                                                                                    \
          }                                                                                              \
          memset(pr[i], 0, sizeof(float) * (size_t)pw);                                                  \
          memcpy(pr[i] + pw, xp + ih * IW, sizeof(float) * (size_t)(hi - pw));                           \
          memset(pr[i] + hi, 0, sizeof(float) * (size_t)(PW - hi));                                      \
        }                                                                                                \
        int64_t col = 0;                                                                                 \
        for (; col + 8 <= PW; col += 8) {                                                                \
          wino_v8 d0 = V8LD(pr[0] + col), d1 = V8LD(pr[1] + col), d2 = V8LD(pr[2] + col), d3 = V8LD(pr[3] + col); \
          V8ST(bt[0] + col, d0 - d2);                                                                    \
          V8ST(bt[1] + col, d1 + d2);                                                                    \
          V8ST(bt[2] + col, d2 - d1);                                                                    \
          V8ST(bt[3] + col, d1 - d3);                                                                    \
        }                                                                                                \
        for (; col < PW; col++) {                                                                        \
          float d0 = pr[0][col], d1 = pr[1][col], d2 = pr[2][col], d3 = pr[3][col];                      \
          bt[0][col] = d0 - d2;                                                                          \
          bt[1][col] = d1 + d2;                                                                          \
          bt[2][col] = d2 - d1;                                                                          \
          bt[3][col] = d1 - d3;                                                                          \
        }                                                                                                \
        float *v = q->V + c * q->T + s * tps + th * TW;                                                  \
        for (int i = 0; i < 4; i++) {                                                                    \
          const float *u = bt[i];                                                                        \
          float *e0 = v + (int64_t)(i * 4) * CT, *e1 = e0 + CT, *e2 = e1 + CT, *e3 = e2 + CT;            \
          int64_t tw = 0;                                                                                \
          for (; tw + 8 <= TW; tw += 8) { /* reads u[2tw .. 2tw + 17] <= u[PW - 1] */                   \
            wino_v8 lo = V8LD(u + 2 * tw), hi8 = V8LD(u + 2 * tw + 8);                                   \
            wino_v8 lo2 = V8LD(u + 2 * tw + 2), hi2 = V8LD(u + 2 * tw + 10);                             \
            wino_v8 w0 = V8EVEN(lo, hi8), w1 = V8ODD(lo, hi8), w2 = V8EVEN(lo2, hi2), w3 = V8ODD(lo2, hi2); \
            V8ST(e0 + tw, w0 - w2);                                                                      \
            V8ST(e1 + tw, w1 + w2);                                                                      \
            V8ST(e2 + tw, w2 - w1);                                                                      \
            V8ST(e3 + tw, w1 - w3);                                                                      \
          }                                                                                              \
          for (; tw < TW; tw++) {                                                                        \
            const float *w = u + 2 * tw;                                                                 \
            e0[tw] = w[0] - w[2];                                                                        \
            e1[tw] = w[1] + w[2];                                                                        \
            e2[tw] = w[2] - w[1];                                                                        \
            e3[tw] = w[1] - w[3];                                                                        \
          }                                                                                              \
        }                                                                                                \
      }                                                                                                  \
    }                                                                                                    \
  }                                                                                                      \
  ATTR static void wino_out_##SUF(wino_ctx *q, int64_t begin, int64_t end, float *rows) {                \
    const ct_conv_geom *g = q->g;                                                                        \
    const int64_t O = g->O, OH = g->out[1], OW = g->out[2], TW = q->TW, tps = q->TH * TW, OT = q->mld;   \
    for (int64_t t = begin; t < end; t++) {                                                              \
      int64_t s = t / O, o = t % O;                                                                      \
      float *yp = q->y + ((q->n0 + s) * O + o) * OH * OW;                                                \
      for (int64_t th = 0; th < q->TH; th++) {                                                           \
        const float *m = q->M + o * q->T + s * tps + th * TW;                                            \
        float *y0 = rows, *y1 = rows + 2 * TW;                                                           \
        int64_t tw = 0;                                                                                  \
        for (; tw + 8 <= TW; tw += 8) {                                                                  \
          wino_v8 a0[4], a1[4];                                                                          \
          for (int k = 0; k < 4; k++) {                                                                  \
            wino_v8 m0 = V8LD(m + k * OT + tw), m1 = V8LD(m + (4 + k) * OT + tw);                        \
            wino_v8 m2 = V8LD(m + (8 + k) * OT + tw), m3 = V8LD(m + (12 + k) * OT + tw);                 \
            a0[k] = m0 + m1 + m2;                                                                        \
            a1[k] = m1 - m2 - m3;                                                                        \
          }                                                                                              \
          wino_v8 ev0 = a0[0] + a0[1] + a0[2], od0 = a0[1] - a0[2] - a0[3];                              \
          wino_v8 ev1 = a1[0] + a1[1] + a1[2], od1 = a1[1] - a1[2] - a1[3];                              \
          V8ST(y0 + 2 * tw, __builtin_shufflevector(ev0, od0, 0, 8, 1, 9, 2, 10, 3, 11));               \
          V8ST(y0 + 2 * tw + 8, __builtin_shufflevector(ev0, od0, 4, 12, 5, 13, 6, 14, 7, 15));         \
          V8ST(y1 + 2 * tw, __builtin_shufflevector(ev1, od1, 0, 8, 1, 9, 2, 10, 3, 11));               \
          V8ST(y1 + 2 * tw + 8, __builtin_shufflevector(ev1, od1, 4, 12, 5, 13, 6, 14, 7, 15));         \
        }                                                                                                \
        for (; tw < TW; tw++) {                                                                          \
          float a0[4], a1[4];                                                                            \
          for (int k = 0; k < 4; k++) {                                                                  \
            float m0 = m[k * OT + tw], m1 = m[(4 + k) * OT + tw], m2 = m[(8 + k) * OT + tw], m3 = m[(12 + k) * OT + tw]; \
            a0[k] = m0 + m1 + m2;                                                                        \
            a1[k] = m1 - m2 - m3;                                                                        \
          }                                                                                              \
          y0[2 * tw] = a0[0] + a0[1] + a0[2];                                                            \
          y0[2 * tw + 1] = a0[1] - a0[2] - a0[3];                                                        \
          y1[2 * tw] = a1[0] + a1[1] + a1[2];                                                            \
          y1[2 * tw + 1] = a1[1] - a1[2] - a1[3];                                                        \
        }                                                                                                \
        const ct_conv_epilogue *ep = q->ep;                                                              \
        if (ep) {                                                                                        \
          const float *r = ep->res ? ep->res + ((q->n0 + s) * O + o) * OH * OW + 2 * th * OW : NULL;     \
          ep_row(yp + 2 * th * OW, y0, OW, ep->m[o], ep->sc[o], ep->b[o], r, ep->relu);                  \
          if (2 * th + 1 < OH)                                                                           \
            ep_row(yp + (2 * th + 1) * OW, y1, OW, ep->m[o], ep->sc[o], ep->b[o], r ? r + OW : NULL, ep->relu); \
          continue;                                                                                      \
        }                                                                                                \
        if (wino_rows_fast > 0) { /* inline copies (CT_WINO_ROWS, as the input transform's rows) */      \
          wino_pad_row(yp + 2 * th * OW, y0, 0, OW, OW);                                                 \
          if (2 * th + 1 < OH) wino_pad_row(yp + (2 * th + 1) * OW, y1, 0, OW, OW);                      \
        } else {                                                                                         \
          memcpy(yp + 2 * th * OW, y0, sizeof(float) * (size_t)OW);                                      \
          if (2 * th + 1 < OH) memcpy(yp + (2 * th + 1) * OW, y1, sizeof(float) * (size_t)OW);           \
        }                                                                                                \
      }                                                                                                  \
    }                                                                                                    \
  }
DEFINE_WINO_XFORM(port, )
#if defined(__x86_64__)
DEFINE_WINO_XFORM(avx2, __attribute__((target("avx2,fma"))))
#endif

static void wino_in_range(void *vq, int64_t begin, int64_t end) {
  wino_ctx *q = vq;
  float *b = wino_rows(q);
  if (!b) return;
#if defined(__x86_64__)
  if (ct_simd_active() >= CT_SIMD_AVX2) wino_in_avx2(q, begin, end, b);
  else
#endif
    wino_in_port(q, begin, end, b);
  free(b);
}

static void wino_out_range(void *vq, int64_t begin, int64_t end) {
  wino_ctx *q = vq;
  float *rows = wino_rows(q); /* two output rows of 2 TW */
  if (!rows) return;
#if defined(__x86_64__)
  if (ct_simd_active() >= CT_SIMD_AVX2) wino_out_avx2(q, begin, end, rows);
  else
#endif
    wino_out_port(q, begin, end, rows);
  free(rows);
}

/* The forward convolution x [N, C, H, W] * w [O, C, 3, 3] -> y [N, O, OH, OW] (all contiguous
 * float32, wino_eligible). */
/* The samples per chunk (V and M of a chunk within max_elems floats, or the test's budget) and
 * q's scratch: U [16, O*C], V [16, C*nb*tiles], M [16, O*nb*tiles]; 0 when out of memory (q's
 * buffers are given back by the caller either way). */
static int64_t wino_scratch(wino_ctx *q, int64_t max_elems, bool no_u) {
  const ct_conv_geom *g = q->g;
  int64_t C = g->C, O = g->O, tps = q->TH * q->TW, per = 16 * (C + O) * tps;
  wino_rows_init();
  int64_t budget = conv_col_budget > 0 ? conv_col_budget : max_elems, nb = budget / per;
  /* at least WINO_MIN_T tiles per chunk (the GEMM's N): every chunk re-reads all of U, 16 O C
   * floats (16 MiB at 512 channels), against 2 x 16 O C T flops (session 9: ResNet-18 CIFAR's
   * 8x8 layers at b16 ran 2 samples = 32 tiles per chunk, its 4x4 ones at b64 4 = 16 tiles) */
  if (conv_col_budget == 0 && nb * tps < WINO_MIN_T) nb = (WINO_MIN_T + tps - 1) / tps;
  if (nb < 1) nb = 1;
  if (nb > g->N) nb = g->N;
  q->uld = wino_ld(O * C);
  q->U = no_u ? NULL : ws_get(16 * q->uld, sizeof(float)); /* no_u: U comes packed from the weight cache */
  q->V = q->U || no_u ? ws_get(16 * wino_ld(C * nb * tps), sizeof(float)) : NULL;
  q->M = q->V ? ws_get(16 * wino_ld(O * nb * tps), sizeof(float)) : NULL;
  return q->M ? nb : 0;
}

/* wflip: w is the weight [C, O, 3, 3] of the conv whose input gradient g is (bwd_input_flipped),
 * flipped inside the weight transform instead of in a pass of its own; wc must then be NULL. */
static ct_status wino_fwd(const ct_conv_geom *g, const float *x, const float *w, float *y, ct_conv_wcache *wc,
                          const ct_conv_epilogue *ep, bool wflip) {
  wino_ctx q = {g, x, w, y, NULL, NULL, NULL, 0, 0, (g->out[1] + 1) / 2, (g->out[2] + 1) / 2};
  q.ep = ep;
  q.wflip = wflip;
  if (wflip) wc = NULL;
  int64_t C = g->C, O = g->O, tps = q.TH * q.TW;
  /* U's GEMM operand (the N, B and C fields do not matter for the packing) */
  ct_fgemm fu = gemm_desc(CT_FLOAT32, 16, O, 1, C, NULL, wino_ld(O * C), C, 1, NULL, 0, 1, 1, NULL, 0, 1, false);
  bool cached = wc && wc->pk[1] && ct_fast_gemm_apack_fits(wc->pk[1], &fu);
  int64_t nb = wino_scratch(&q, WINO_MAX_ELEMS, cached);
  ct_status st = CT_OK;
  if (!nb) {
    st = ct_last_status();
    goto done;
  }
  if (!cached) {
    if (wflip)
      ct_parallel_for((O + 7) / 8, plane_grain_n((O + 7) / 8, 16 * 8 * C), wino_wtf_range, &q);
    else
      ct_parallel_for(O * C, plane_grain_n(O * C, 16), wino_wt_range, &q);
    if (wc) { /* pack the fresh U into the module's cache for the next calls */
      ct_fast_gemm_apack_free(wc->pk[1]);
      fu.A = q.U;
      wc->pk[1] = ct_fast_gemm_pack_a(&fu);
      if (!wc->pk[1]) ct_clear_error();
    }
  }
  const struct ct_gemm_apack *upk = wc ? wc->pk[1] : NULL;
  for (int64_t n0 = 0; n0 < g->N && !st; n0 += nb) {
    int64_t nbc = g->N - n0 < nb ? g->N - n0 : nb;
    q.n0 = n0, q.T = nbc * tps, q.vld = wino_ld(C * q.T), q.mld = wino_ld(O * q.T);
    ct_parallel_for(nbc * C, plane_grain_n(nbc * C, 16 * tps), wino_in_range, &q);
    if (q.failed) break; /* reported below */
    st = gemm_call_pk(upk, CT_FLOAT32, 16, O, q.T, C, q.U, q.uld, C, 1, q.V, q.vld, q.T, 1, q.M, q.mld, q.T, false);
    if (!st) ct_parallel_for(nbc * O, plane_grain_n(nbc * O, 16 * tps), wino_out_range, &q);
  }
  if (!st && q.failed) st = CT_ERR(CT_ERR_OOM, "CPU out of memory: Winograd transform scratch");
done:
  ct_fast_buf_put(q.U);
  ct_fast_buf_put(q.V);
  ct_fast_buf_put(q.M);
  return st;
}

/* ---- Winograd weight gradient (the same F(2x2, 3x3) of a forward conv g) ----
 * y = A^T [U . V] A per tile is linear in U = G w G^T, so per tile dL/dU = (A dY A^T) . V and
 * gw = G^T [sum over tiles (A dY A^T) . V] G. Per chunk of samples:
 *   V[e, c, t]   = (B^T d B)[e] of input tile t of channel c     (wino_in, as the forward)
 *   D[e, o, t]   = (A dY A^T)[e] of the 2x2 gy tile t, zero past the output's edge (tasks (sample, o))
 *   dU[e] (+)=   D[e] [O, T] @ V[e]^T [T, C]                      (one GEMM call, batch over the 16 e)
 * then gw[o, c] = G^T dU[., o, c] G (tasks (o, c)). 16 products per tile and (o, c) instead of 36. */
#define DEFINE_WINO_GYT(SUF, ATTR)                                                                       \
  ATTR static void wino_gyt_##SUF(wino_ctx *q, int64_t begin, int64_t end, float *rows) {                \
    const ct_conv_geom *g = q->g;                                                                        \
    const int64_t O = g->O, OH = g->out[1], OW = g->out[2], TW = q->TW, tps = q->TH * TW, OT = q->mld;   \
    const int64_t RW = 2 * TW + 16; /* a zero-padded gy row, room for the last vector's reads */         \
    float *r0 = rows, *r1 = rows + RW;                                                                   \
    for (int64_t t = begin; t < end; t++) {                                                              \
      int64_t s = t / O, o = t % O;                                                                      \
      const float *gp = q->x + ((q->n0 + s) * O + o) * OH * OW; /* q->x holds gy here */                 \
      for (int64_t th = 0; th < q->TH; th++) {                                                           \
        if (wino_rows_fast > 0) { /* inline copies (CT_WINO_ROWS) */                                     \
          wino_pad_row(r0, gp + 2 * th * OW, 0, OW, RW);                                                 \
          if (2 * th + 1 < OH) wino_pad_row(r1, gp + (2 * th + 1) * OW, 0, OW, RW);                      \
          else wino_zero_row(r1, RW);                                                                    \
        } else {                                                                                         \
        memcpy(r0, gp + 2 * th * OW, sizeof(float) * (size_t)OW);                                        \
        memset(r0 + OW, 0, sizeof(float) * (size_t)(RW - OW));                                           \
        if (2 * th + 1 < OH) {                                                                           \
          memcpy(r1, gp + (2 * th + 1) * OW, sizeof(float) * (size_t)OW);                                \
          memset(r1 + OW, 0, sizeof(float) * (size_t)(RW - OW));                                         \
        } else                                                                                           \
          memset(r1, 0, sizeof(float) * (size_t)RW);                                                     \
        }                                                                                                \
        float *d = q->M + o * q->T + s * tps + th * TW;                                                  \
        int64_t tw = 0;                                                                                  \
        for (; tw + 8 <= TW; tw += 8) {                                                                  \
          wino_v8 l0 = V8LD(r0 + 2 * tw), h0 = V8LD(r0 + 2 * tw + 8);                                    \
          wino_v8 l1 = V8LD(r1 + 2 * tw), h1 = V8LD(r1 + 2 * tw + 8);                                    \
          wino_v8 a = V8EVEN(l0, h0), b = V8ODD(l0, h0), c = V8EVEN(l1, h1), dd = V8ODD(l1, h1);         \
          wino_v8 ru[4] = {a, a + c, a - c, -c}, rv[4] = {b, b + dd, b - dd, -dd};                       \
          for (int k = 0; k < 4; k++) {                                                                  \
            V8ST(d + (4 * k) * OT + tw, ru[k]);                                                          \
            V8ST(d + (4 * k + 1) * OT + tw, ru[k] + rv[k]);                                              \
            V8ST(d + (4 * k + 2) * OT + tw, ru[k] - rv[k]);                                              \
            V8ST(d + (4 * k + 3) * OT + tw, -rv[k]);                                                     \
          }                                                                                              \
        }                                                                                                \
        for (; tw < TW; tw++) {                                                                          \
          float a = r0[2 * tw], b = r0[2 * tw + 1], c = r1[2 * tw], dd = r1[2 * tw + 1];                 \
          float ru[4] = {a, a + c, a - c, -c}, rv[4] = {b, b + dd, b - dd, -dd};                         \
          for (int k = 0; k < 4; k++) {                                                                  \
            d[(4 * k) * OT + tw] = ru[k];                                                                \
            d[(4 * k + 1) * OT + tw] = ru[k] + rv[k];                                                    \
            d[(4 * k + 2) * OT + tw] = ru[k] - rv[k];                                                    \
            d[(4 * k + 3) * OT + tw] = -rv[k];                                                           \
          }                                                                                              \
        }                                                                                                \
      }                                                                                                  \
    }                                                                                                    \
  }
DEFINE_WINO_GYT(port, )
#if defined(__x86_64__)
DEFINE_WINO_GYT(avx2, __attribute__((target("avx2,fma"))))
#endif
static void wino_gyt_range(void *vq, int64_t begin, int64_t end) {
  wino_ctx *q = vq;
  float *rows = malloc(sizeof(float) * (size_t)(2 * (2 * q->TW + 16)));
  if (!rows) {
    __atomic_store_n(&q->failed, 1, __ATOMIC_RELAXED);
    return;
  }
#if defined(__x86_64__)
  if (ct_simd_active() >= CT_SIMD_AVX2) wino_gyt_avx2(q, begin, end, rows);
  else
#endif
    wino_gyt_port(q, begin, end, rows);
  free(rows);
}
/* tasks (o, c): gw[o, c] = G^T dU[., o, c] G (q->U holds dU, q->y gw) */
static void wino_gw_range(void *vq, int64_t begin, int64_t end) {
  wino_ctx *q = vq;
  int64_t OC = q->uld;
  for (int64_t t = begin; t < end; t++) {
    float r[3][4]; /* G^T down the 4 rows of each column */
    for (int j = 0; j < 4; j++) {
      float u0 = q->U[j * OC + t], u1 = q->U[(4 + j) * OC + t], u2 = q->U[(8 + j) * OC + t],
            u3 = q->U[(12 + j) * OC + t];
      r[0][j] = u0 + 0.5f * (u1 + u2);
      r[1][j] = 0.5f * (u1 - u2);
      r[2][j] = 0.5f * (u1 + u2) + u3;
    }
    float *k = q->y + t * 9;
    for (int i = 0; i < 3; i++) {
      k[3 * i] = r[i][0] + 0.5f * (r[i][1] + r[i][2]);
      k[3 * i + 1] = 0.5f * (r[i][1] - r[i][2]);
      k[3 * i + 2] = 0.5f * (r[i][1] + r[i][2]) + r[i][3];
    }
  }
}
/* V + D of one weight-gradient chunk: up to 8 MiB of float32, so that the GEMM's K (tiles) is
 * long (ResNet-18 CIFAR b16: 1024 / 512 / 256 tiles at 32x32 / 16x16 / 8x8) and dU, which every
 * chunk accumulates into, is read and written few times */
#define WINO_WG_MAX_ELEMS ((int64_t)1 << 21)
/* gw [O, C, 3, 3] of the forward conv g (wino_eligible) from x [N, C, H, W] and gy [N, O, OH, OW]
 * (contiguous float32). */
static ct_status wino_wgrad(const ct_conv_geom *g, const float *x, const float *gy, float *gw) {
  wino_ctx q = {g, x, NULL, gw, NULL, NULL, NULL, 0, 0, (g->out[1] + 1) / 2, (g->out[2] + 1) / 2};
  int64_t C = g->C, O = g->O, tps = q.TH * q.TW, nb = wino_scratch(&q, WINO_WG_MAX_ELEMS, false);
  ct_status st = CT_OK;
  if (!nb) {
    st = ct_last_status();
    goto done;
  }
  wino_ctx qy = q; /* the gy transform reads gy through x */
  qy.x = gy;
  for (int64_t n0 = 0; n0 < g->N && !st; n0 += nb) {
    int64_t nbc = g->N - n0 < nb ? g->N - n0 : nb;
    q.n0 = n0, q.T = nbc * tps, q.vld = wino_ld(C * q.T), q.mld = wino_ld(O * q.T);
    qy.n0 = q.n0, qy.T = q.T, qy.vld = q.vld, qy.mld = q.mld;
    ct_parallel_for(nbc * C, plane_grain_n(nbc * C, 16 * tps), wino_in_range, &q);
    ct_parallel_for(nbc * O, plane_grain_n(nbc * O, 16 * tps), wino_gyt_range, &qy);
    if (q.failed || qy.failed) break; /* reported below */
    st = gemm_call(CT_FLOAT32, 16, O, C, q.T, q.M, q.mld, q.T, 1, q.V, q.vld, 1, q.T, q.U, q.uld, C, n0 > 0);
  }
  if (!st && (q.failed || qy.failed)) st = CT_ERR(CT_ERR_OOM, "CPU out of memory: Winograd transform scratch");
  if (!st) ct_parallel_for(O * C, plane_grain_n(O * C, 16), wino_gw_range, &q);
done:
  ct_fast_buf_put(q.U);
  ct_fast_buf_put(q.V);
  ct_fast_buf_put(q.M);
  return st;
}
#define DIRECT_Y_MIN_SP 64 /* output positions a sample at least (N of each batched GEMM) */
static bool direct_y_enabled(void) {
  static int env = -1;
  return ct_env_switch("CT_CONV_DIRECT_Y", &env);
}

/* The chunk loop of the three im2col paths on contiguous operands, chunked by plan_chunks
 * (g->C * g->ksp > 0). x is the forward conv's input (gx for OP_BWD_INPUT, which col2im adds
 * into: zeroed by the caller), y its output (gy for the gradients). Per chunk of nb samples x
 * output rows [r0, r1), with yc = the chunk's y / gy: in place (row stride outsp) for one sample,
 * else an [O, ld] scratch (gy gathered into it; y scattered from it):
 *   OP_FWD         im2col(x); yc = W @ col
 *   OP_BWD_INPUT   col = W^T @ yc; col2im into x
 *   OP_BWD_WEIGHT  im2col(x); gw (+)= yc @ col^T        (summed over chunks in order) */
static ct_status cols_loop(int op, const ct_conv_geom *g, ct_dtype dt, char *x, const char *w, char *y, char *gw,
                           ct_conv_wcache *wc) {
  size_t es = ct_dtype_size(dt);
  int64_t G = g->G, Og = g->O / G, rows = g->C / G * g->ksp, O = g->O;
  fx_ctx q = {g, dt == CT_FLOAT64, es};
  ct_status st = CT_OK;
  struct ct_gemm_apack *dpk = NULL; /* OP_FWD: the weights packed once (below) */
  int64_t nb, nr, OW = g->out[2], R = g->outsp / OW;
  plan_chunks(g, g->C * g->ksp, &nb, &nr);
  int64_t ldmax = nb > 1 ? nb * g->outsp : nr * OW;
  char *col = ws_get(g->C * g->ksp * ldmax, es), *tmp = nb > 1 ? ws_get(O * ldmax, es) : NULL;
  if (!col || (nb > 1 && !tmp)) {
    st = ct_last_status();
    goto done;
  }
  q.x = x;
  q.col = col;
  bool first = true;
  /* forward, merged samples: one GEMM batched over the chunk's samples writes y directly (no tmp + scatter
   * pass), with the weights packed once per call (session 10; CT_CONV_DIRECT_Y=0: off) */
  if (op == OP_FWD && !wc && G == 1 && nb > 1 && g->outsp >= DIRECT_Y_MIN_SP && direct_y_enabled()) {
    ct_fgemm f = gemm_desc(dt, 1, Og, g->outsp, rows, w, 0, rows, 1, col, 0, ldmax, 1, tmp, 0, ldmax, false);
    dpk = ct_fast_gemm_pack_a(&f);
    if (!dpk) ct_clear_error();
  }
  for (int64_t n0 = 0; n0 < g->N && !st; n0 += nb) {
    int64_t nbc = g->N - n0 < nb ? g->N - n0 : nb;
    for (int64_t r0 = 0; r0 < R && !st; r0 += nr, first = false) {
      q.n0 = n0, q.r0 = r0, q.r1 = r0 + nr < R ? r0 + nr : R;
      q.np = (q.r1 - r0) * OW, q.ld = nbc * q.np;
      char *yc = nbc == 1 ? EL(y, n0 * O * g->outsp + r0 * OW) : tmp;
      int64_t yc_b = nbc == 1 ? Og * g->outsp : Og * q.ld, yc_m = nbc == 1 ? g->outsp : q.ld;
      if (op != OP_FWD && nbc > 1) run_move(&q, y, tmp, O, nbc, 1);
      if (op != OP_BWD_INPUT) run_im2col(&q, nbc);
      if (op == OP_FWD && dpk && nbc > 1) { /* sample b's columns [b np, (b + 1) np) of col -> y[n0 + b] */
        ct_fgemm f = gemm_desc(dt, nbc, Og, q.np, rows, w, 0, rows, 1, col, q.np, q.ld, 1, EL(y, n0 * O * g->outsp),
                               O * g->outsp, g->outsp, false);
        f.A_packed = dpk;
        st = ct_fast_gemm(&f);
      } else if (op == OP_FWD) {
        ct_fgemm f = gemm_desc(dt, G, Og, q.ld, rows, w, Og * rows, rows, 1, col, rows * q.ld, q.ld, 1, yc, yc_b, yc_m, false);
        f.A_packed = wc_pack(wc, 0, &f); /* wc: one group */
        st = ct_fast_gemm(&f);
        if (!st && nbc > 1) run_move(&q, y, tmp, O, nbc, 0);
      } else if (op == OP_BWD_INPUT) {
        st = gemm_call(dt, G, rows, q.ld, Og, w, Og * rows, 1, rows, yc, yc_b, yc_m, 1, col, rows * q.ld, q.ld, false);
        if (!st) run_col2im(&q, nbc);
      } else
        st = gemm_call(dt, G, Og, rows, q.ld, yc, yc_b, yc_m, 1, col, rows * q.ld, 1, q.ld, gw, Og * rows, rows,
                       !first);
    }
  }
done:
  ct_fast_gemm_apack_free(dpk);
  ct_fast_buf_put(col);
  ct_fast_buf_put(tmp);
  return st;
}

/* The forward convolution by im2col + GEMM on contiguous x [N, C, in], w [O, C/G, k] into y [N, O, out]
 * (every element written); g->C * g->ksp > 0. */
static ct_status fwd_cols(const ct_conv_geom *g, ct_dtype dt, const char *x, const char *w, char *y, ct_conv_wcache *wc) {
  return cols_loop(OP_FWD, g, dt, (char *)x, w, y, NULL, wc);
}

/* The input gradient of a stride-1 convolution is the forward convolution of gy with the kernel
 * flipped in every spatial dim and its channel axes swapped (per group), low-side padding
 * d (k - 1) - p: run as such (im2col of gy + GEMM writing gx once) instead of GEMM + col2im, which
 * adds k^2 column rows into gx and needs gx zeroed first. Usable when that padding is >= 0. */
static bool flip_eligible(const ct_conv_geom *g) {
  for (int i = 0; i < 3; i++)
    if (g->s[i] != 1 || g->d[i] * (g->k[i] - 1) - g->p[i] < 0) return false;
  return true;
}

/* The geometry of that forward conv: gy [N, O, out] is its input, gx [N, C, in] its output. */
static void flip_geom(const ct_conv_geom *g, ct_conv_geom *f) {
  *f = *g;
  f->C = g->O, f->O = g->C;
  for (int i = 0; i < 3; i++) {
    f->in[i] = g->out[i], f->out[i] = g->in[i];
    f->p[i] = g->d[i] * (g->k[i] - 1) - g->p[i];
  }
  f->insp = g->outsp, f->outsp = g->insp;
}

typedef struct {
  const ct_conv_geom *g;
  const char *w;
  char *wf;
  size_t es;
} flip_ctx;

/* tasks c: wf[c, oo, ksp-1-kk] = w[grp*Og + oo, c % Cg, kk]. oo outside c: a task's channels of
 * one oo are adjacent in w (one run of reads) where c outside read ksp floats per row of w. */
static void flip_range(void *vq, int64_t begin, int64_t end) {
  flip_ctx *q = vq;
  const ct_conv_geom *g = q->g;
  int64_t Cg = g->C / g->G, Og = g->O / g->G, ksp = g->ksp;
  for (int64_t oo = 0; oo < Og; oo++)
    for (int64_t c = begin; c < end; c++) {
      int64_t grp = c / Cg, ci = c % Cg;
      const char *src = q->w + (size_t)(((grp * Og + oo) * Cg + ci) * ksp) * q->es;
      char *dst = q->wf + (size_t)((c * Og + oo) * ksp) * q->es;
      if (q->es == sizeof(double))
        for (int64_t kk = 0; kk < ksp; kk++) ((double *)dst)[ksp - 1 - kk] = ((const double *)src)[kk];
      else
        for (int64_t kk = 0; kk < ksp; kk++) ((float *)dst)[ksp - 1 - kk] = ((const float *)src)[kk];
    }
}

static ct_status bwd_input_flipped(const ct_conv_geom *g, ct_dtype dt, const char *gy, const char *w, char *gx,
                                   bool wino) {
  size_t es = ct_dtype_size(dt);
  ct_conv_geom f;
  flip_geom(g, &f);
  if (wino) /* one group, 3x3: the weight transform reads w flipped (no wf pass over the weights) */
    return wino_fwd(&f, (const float *)gy, (const float *)w, (float *)gx, NULL, NULL, true);
  char *wf = ws_get(g->C * (g->O / g->G) * g->ksp, es); /* [C, Og, k] */
  if (!wf) return ct_last_status();
  flip_ctx fq = {g, w, wf, es};
  ct_parallel_for(g->C, plane_grain_n(g->C, g->O / g->G * g->ksp), flip_range, &fq);
  ct_status st = fwd_cols(&f, dt, gy, wf, gx, NULL);
  ct_fast_buf_put(wf);
  return st;
}

/* With the eval weight cache the transformed weight U is not rebuilt per call, so Winograd pays
 * from fewer tiles than wino_eligible's rule: from (C + O) / 16 (CT_WINO_CACHED_DIV=d: (C + O) / d,
 * 0 off). ResNet-18 224 batch 1's 14x14 256-channel layers (49 tiles) measured 1.57 -> 0.98 ms CPU
 * per call at 1 thread (bench/profile_infer.c --layers 1); its 7x7 512-channel ones (16 tiles) did
 * not gain at (C + O) / 64 and stay on im2col. */
static bool wino_cached_pays(const ct_conv_geom *g) {
  static int64_t div = -1;
  if (div < 0) {
    const char *e = getenv("CT_WINO_CACHED_DIV");
    div = e ? atoll(e) : 16;
  }
  int64_t tiles = g->N * ((g->out[1] + 1) / 2) * ((g->out[2] + 1) / 2);
  return div > 0 && tiles * div >= g->C + g->O;
}

/* in[0] x, in[1] w, in[2] bias -> y */
static bool taps_eligible(const ct_conv_geom *g, ct_dtype dt);
/* CT_CONV_TAPS_FWD=0: the forward not by taps (the input gradient still; CT_CONV_TAPS=0 turns off both) */
static bool taps_fwd_enabled(void) {
  static int env = -1;
  return ct_env_switch("CT_CONV_TAPS_FWD", &env);
}
static ct_status taps_run(const ct_conv_geom *g, const float *in, const float *w, float *out, bool bwd);
static ct_status fast_fwd(const ct_call *c, const ct_conv_geom *g, ct_conv_path path) {
  ct_tensor *yt = c->out[0];
  ct_dtype dt = yt->dtype;
  size_t es = ct_dtype_size(dt);
  int64_t G = g->G, Cg = g->C / G, Og = g->O / G, rows = Cg * g->ksp, O = g->O;
  char *y = ct_cpu_ptr(yt);
  void *xo = NULL, *wo = NULL, *bo = NULL;
  const char *bias = c->in[2] ? operand(c->in[2], dt, &bo) : NULL;
  ct_conv_epilogue *ep = NULL; /* set below when the lent one is for this conv */
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
  ct_conv_wcache *wc = wo ? NULL : wc_get(c->in[1], g, dt); /* the module's eval cache, if lent */
  /* the lent eval epilogue, when it is for this conv (consumed here) */
  ep = ep_slot && dt == CT_FLOAT32 && !bias && ep_slot->O == O ? ep_slot : NULL;
  if (ep) ep_slot = NULL;
  if (!wc && (path == CT_CONV_PATH_IM2COL || (path == CT_CONV_PATH_WINOGRAD && !wino_eligible(g, dt))) &&
      taps_fwd_enabled() && taps_eligible(g, dt)) { /* not where Winograd's own rule holds: slower there (b64) */
    st = taps_run(g, (const float *)x, (const float *)w, (float *)y, false);
    goto done;
  }
  if (path == CT_CONV_PATH_WINOGRAD) {
    st = wino_fwd(g, (const float *)x, (const float *)w, (float *)y, wc, ep, false);
    if (!st && ep) ep->applied = true;
    goto done;
  }
  if (path == CT_CONV_PATH_GEMM_1X1) {
    for (int64_t grp = 0; grp < G && !st; grp++) {
      ct_fgemm f = gemm_desc(dt, g->N, Og, g->outsp, Cg, EL(w, grp * Og * Cg), 0, Cg, 1, EL(x, grp * Cg * g->insp),
                             g->C * g->insp, g->insp, 1, EL(y, grp * Og * g->outsp), O * g->outsp, g->outsp, false);
      f.A_packed = wc_pack(wc, 0, &f); /* wc: one group */
      st = ct_fast_gemm(&f);
    }
    goto done;
  }
  st = fwd_cols(g, dt, x, w, y, wc);
done:
  if (!st) run_bias(&q, y, bias, g->N, O, g->outsp);
  if (!st && ep && !ep->applied) { /* im2col / 1x1: one pass over y (L2-resident at batch 1) */
    ep_ctx eq = {ep, (float *)(void *)y, O, g->outsp};
    ct_parallel_for(g->N * O, plane_grain_n(g->N * O, g->outsp), ep_range, &eq);
    ep->applied = true;
  }
  free(xo);
  free(wo);
  free(bo);
  return st;
}

/* memset(p, 0, bytes) over the thread pool in 64 KiB pieces: a stride-2 layer's gx at batch 16 was
 * the largest serial part of the 2-thread training step */
typedef struct {
  char *p;
  size_t bytes;
} zero_ctx;
#define ZERO_PIECE ((size_t)64 << 10)
static void zero_range(void *vq, int64_t begin, int64_t end) {
  zero_ctx *q = vq;
  size_t a = (size_t)begin * ZERO_PIECE, b = (size_t)end * ZERO_PIECE;
  memset(q->p + a, 0, (b < q->bytes ? b : q->bytes) - a);
}
static void zero_par(char *p, size_t bytes) {
  zero_ctx q = {p, bytes};
  ct_parallel_for((int64_t)((bytes + ZERO_PIECE - 1) / ZERO_PIECE), 4, zero_range, &q);
}

/* ---- small maps by taps (session 10, engineer step10) ----
 * A 3x3 / stride 1 / pad 1 conv on a small map (H W <= TAPS_MAX_SP, ResNet-18 CIFAR's 4x4
 * 512-channel layer4) as nine GEMMs, one per kernel tap, each over only the output positions whose
 * input under that tap is inside the map: im2col's col has 9 H W rows of positions per channel, of
 * which (H + 2 (H - 1)) (W + 2 (W - 1)) / (9 H W) hold inputs (100 of 144 at 4x4): the rest are the
 * padding's zeros that the GEMM multiplies. Per tap t (offset dy, dx): B = x's valid rectangle
 * [Ci, nb ri rj] (gathered), T = A_t [Co, Ci] @ B, and T is written (the centre tap, which covers every
 * position, first) or added (the other 8, in tap order) into y. Every y element is the centre tap's
 * GEMM sum plus the other taps' sums in a fixed order: the same bits at any thread count, and a sum of
 * 9 Ci products in float32 like im2col's (the tests' (K + 2) u sum|terms| bound). The weights are first
 * rearranged tap-major, wt [9, O, C] (one pass, 8 channels a gather on AVX2). Used for the input gradient
 * where the flipped forward does not pay (fast_bwd_input: the weights outweigh gx), in place of GEMM +
 * col2im, and for the forward where Winograd's own rule does not hold (fast_fwd; not with the eval weight
 * cache). Chunks of samples depend on the shape only. CT_CONV_TAPS=0 turns both off, CT_CONV_TAPS_FWD=0
 * the forward only. Measured (session 10, Intel Xeon, 1 thread, CPU per call, 512 -> 512 channels 4x4,
 * batch 16): input gradient (GEMM + col2im) 8.9-9.3 -> 7.3-7.5 ms, forward (Winograd) 7.5 -> 7.0 ms; at
 * batch 64 the forward by taps was slower than Winograd (23.3 -> 25.6 ms), hence not there. */
#define TAPS_MAX_SP 16
#define TAPS_MAX_ELEMS ((int64_t)1 << 20) /* B + T of one chunk of samples (floats) */
static int64_t taps_calls;
int64_t ct_conv_taps_count(void) { return __atomic_load_n(&taps_calls, __ATOMIC_RELAXED); }

/* g (the original conv) is one whose input gradient the tap GEMMs can run */
static bool taps_eligible(const ct_conv_geom *g, ct_dtype dt) {
  static int env = -1;
  if (!ct_env_switch("CT_CONV_TAPS", &env) || dt != CT_FLOAT32 || g->G != 1 || g->C < WINO_MIN_CH || g->O < WINO_MIN_CH) return false;
  if (conv_forced >= 0 && conv_forced != CT_CONV_PATH_WINOGRAD) return false; /* im2col forced */
  if (g->k[0] != 1 || g->in[0] != 1 || g->k[1] != 3 || g->k[2] != 3) return false;
  for (int i = 1; i < 3; i++)
    if (g->s[i] != 1 || g->d[i] != 1 || g->p[i] != 1 || g->out[i] != g->in[i]) return false;
  return g->insp <= TAPS_MAX_SP && g->N > 0;
}

typedef struct {
  const float *x;  /* [nb, Ci, H, W] (the chunk's first sample) */
  float *y;        /* [nb, Co, H, W] */
  const float *w;  /* taps_wt: [O, C, 9] */
  float *wt;       /* taps_wt: [9, O, C] */
  float *B, *T;    /* [Ci, ld], [Co, ld] */
  int64_t H, W, Ci, Co, nb, ld;
  int64_t i0, ri, j0, rj, dy, dx; /* the tap's output rectangle and its offset into x */
  bool add;
} taps_ctx;

/* tasks o of w [O, C, 9]: wt[t, o, c] = w[o, c, t] (Ci = C, Co = O here); AVX2: 8 c at a time by
 * gathers of stride 9 (the scalar loop was ~14% of the 4x4 512-channel input gradient's CPU) */
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx2,fma"))) static int64_t taps_wt_avx2(const float *s, float *const d[9], int64_t C) {
  const __m256i idx = _mm256_setr_epi32(0, 9, 18, 27, 36, 45, 54, 63);
  int64_t c = 0;
  for (; c + 8 <= C; c += 8, s += 72)
    for (int t = 0; t < 9; t++) _mm256_storeu_ps(d[t] + c, _mm256_i32gather_ps(s + t, idx, 4));
  return c;
}
/* The same permutation without gathers: 8 channels' rows of taps 0-7 (8 unaligned loads, the rows
 * are 9 floats apart) transposed in registers, tap 8 from 8 scalars. On AMD Zen 5 the stride-9
 * gathers made the rearrangement 4.8% of the CIFAR b16 step's CPU (2.4M weights, ~2.8 ms a call);
 * there gathers issue one element at a time. Bit-identical (a copy). */
__attribute__((target("avx2,fma"))) static int64_t taps_wt_tr8(const float *s, float *const d[9], int64_t OC,
                                                               int64_t C) {
  int64_t c = 0;
  for (; c + 8 <= C; c += 8, s += 72) {
    ct_tr8x8_f32(s, 9, d[0] + c, OC); /* taps 0-7 of 8 channels; the tap rows d[t] are OC apart */
    _mm256_storeu_ps(d[8] + c, _mm256_setr_ps(s[8], s[17], s[26], s[35], s[44], s[53], s[62], s[71]));
  }
  return c;
}
#endif
/* 1: gathers (taps_wt_avx2), 2: in-register transpose (taps_wt_tr8), 0: scalar. Default per CPU:
 * the transpose on AMD (slow gathers), gathers elsewhere (measured on the Intel Xeon of session 10).
 * CT_CONV_TAPS_WT=gather|transpose|scalar; ct_conv_set_taps_wt(m) for the tests (-1: default). */
static int taps_wt_mode = -1;
void ct_conv_set_taps_wt(int mode) { taps_wt_mode = mode; }
static int taps_wt_pick(void) {
  if (taps_wt_mode >= 0) return taps_wt_mode;
  static int env = -1;
  if (env < 0) {
    const char *e = getenv("CT_CONV_TAPS_WT");
    if (e && !strcmp(e, "gather")) env = 1;
    else if (e && !strcmp(e, "transpose")) env = 2;
    else if (e && !strcmp(e, "scalar")) env = 0;
    else {
#if defined(__x86_64__)
      env = __builtin_cpu_is("amd") ? 2 : 1;
#else
      env = 0;
#endif
    }
  }
  return env;
}
static void taps_wt_range(void *vq, int64_t begin, int64_t end) {
  const taps_ctx *q = vq;
  int64_t C = q->Ci, OC = q->Co * C;
  for (int64_t o = begin; o < end; o++) {
    const float *s = q->w + o * C * 9;
    float *d[9];
    for (int t = 0; t < 9; t++) d[t] = q->wt + t * OC + o * C;
    int64_t c = 0;
#if defined(__x86_64__)
    if (ct_simd_active() >= CT_SIMD_AVX2) {
      int m = taps_wt_pick();
      c = m == 2 ? taps_wt_tr8(s, d, OC, C) : m == 1 ? taps_wt_avx2(s, d, C) : 0;
    }
#endif
    for (s += c * 9; c < C; c++, s += 9)
      for (int t = 0; t < 9; t++) d[t][c] = s[t];
  }
}
/* tasks c: B[c, n ri rj + a rj + b] = x[n, c, i0 + a + dy, j0 + b + dx] */
static void taps_gather_range(void *vq, int64_t begin, int64_t end) {
  const taps_ctx *q = vq;
  int64_t HW = q->H * q->W, np = q->ri * q->rj;
  for (int64_t c = begin; c < end; c++)
    for (int64_t n = 0; n < q->nb; n++) {
      const float *s = q->x + (n * q->Ci + c) * HW + (q->i0 + q->dy) * q->W + q->j0 + q->dx;
      float *d = q->B + c * q->ld + n * np;
      for (int64_t a = 0; a < q->ri; a++, s += q->W, d += q->rj)
        for (int64_t b = 0; b < q->rj; b++) d[b] = s[b];
    }
}
/* tasks o: y[n, o, i0 + a, j0 + b] (+)= T[o, n ri rj + a rj + b] */
static void taps_scatter_range(void *vq, int64_t begin, int64_t end) {
  const taps_ctx *q = vq;
  int64_t HW = q->H * q->W, np = q->ri * q->rj;
  for (int64_t o = begin; o < end; o++)
    for (int64_t n = 0; n < q->nb; n++) {
      float *d = q->y + (n * q->Co + o) * HW + q->i0 * q->W + q->j0;
      const float *s = q->T + o * q->ld + n * np;
      for (int64_t a = 0; a < q->ri; a++, s += q->rj, d += q->W) {
        if (q->add)
          for (int64_t b = 0; b < q->rj; b++) d[b] += s[b];
        else
          for (int64_t b = 0; b < q->rj; b++) d[b] = s[b];
      }
    }
}

/* bwd false: y [N, O, H, W] = conv g of x [N, C, H, W] by w [O, C, 3, 3] (pad 1), tap t's A_t [O, C] = wt[t].
 * bwd true: gx [N, C, H, W] (out) = the input gradient of conv g from gy [N, O, H, W] (in): the forward conv of
 * gy by the flipped kernel, whose tap t' is w's 8 - t', A_t' [C, O] = wt[8 - t']^T. Every out element written. */
static ct_status taps_run(const ct_conv_geom *g, const float *in, const float *w, float *out, bool bwd) {
  int64_t H = g->in[1], W = g->in[2], HW = H * W, C = g->C, O = g->O;
  int64_t Ci = bwd ? O : C, Co = bwd ? C : O;
  int64_t nb = (conv_col_budget > 0 ? conv_col_budget : TAPS_MAX_ELEMS) / (HW * (C + O)); /* budget: tests */
  if (nb < 1) nb = 1;
  if (nb > g->N) nb = g->N;
  taps_ctx q = {.w = w, .H = H, .W = W, .Ci = C, .Co = O};
  ct_status st = CT_OK;
  q.wt = ws_get(9 * O * C, sizeof(float));
  q.B = q.wt ? ws_get(Ci * nb * HW, sizeof(float)) : NULL;
  q.T = q.B ? ws_get(Co * nb * HW, sizeof(float)) : NULL;
  if (!q.T) {
    st = ct_last_status();
    goto done;
  }
  ct_parallel_for(O, plane_grain(9 * C), taps_wt_range, &q);
  __atomic_fetch_add(&taps_calls, 1, __ATOMIC_RELAXED);
  q.Ci = Ci, q.Co = Co;
  static const int order[9] = {4, 0, 1, 2, 3, 5, 6, 7, 8};
  for (int64_t n0 = 0; n0 < g->N && !st; n0 += nb) {
    q.nb = g->N - n0 < nb ? g->N - n0 : nb;
    q.x = in + n0 * Ci * HW, q.y = out + n0 * Co * HW;
    for (int k = 0; k < 9 && !st; k++) {
      int t = order[k]; /* out[i, j] += A_t in[i + dy, j + dx] */
      q.dy = t / 3 - 1, q.dx = t % 3 - 1;
      q.i0 = q.dy < 0 ? 1 : 0, q.ri = H - (q.dy != 0);
      q.j0 = q.dx < 0 ? 1 : 0, q.rj = W - (q.dx != 0);
      if (q.ri <= 0 || q.rj <= 0) continue; /* a 1-wide map: only the centre tap */
      q.ld = q.nb * q.ri * q.rj, q.add = k > 0;
      ct_parallel_for(Ci, plane_grain(q.nb * q.ri * q.rj), taps_gather_range, &q);
      /* bwd: A[c, o] = wf[t][c, o] = w[o, c, 8 - t] = wt[8 - t][o, c] */
      const float *A = bwd ? q.wt + (8 - t) * O * C : q.wt + t * O * C;
      st = gemm_call(CT_FLOAT32, 1, Co, q.ld, Ci, A, 0, bwd ? 1 : C, bwd ? C : 1, q.B, 0, q.ld, 1, q.T, 0, q.ld, false);
      if (!st) ct_parallel_for(Co, plane_grain(q.nb * q.ri * q.rj), taps_scatter_range, &q);
    }
  }
done:
  ct_fast_buf_put(q.wt);
  ct_fast_buf_put(q.B);
  ct_fast_buf_put(q.T);
  return st;
}

/* in[0] gy, in[1] w, in[2] bias (per channel of gx) -> gx */
static ct_status fast_bwd_input(const ct_call *c, const ct_conv_geom *g, ct_conv_path path) {
  ct_tensor *xt = c->out[0];
  ct_dtype dt = xt->dtype;
  size_t es = ct_dtype_size(dt);
  int64_t G = g->G, Cg = g->C / G, Og = g->O / G, rows = Cg * g->ksp, O = g->O;
  char *gx = ct_cpu_ptr(xt);
  void *yo = NULL, *wo = NULL, *bo = NULL;
  const char *bias = c->in[2] ? operand(c->in[2], dt, &bo) : NULL;
  ct_status st = CT_OK;
  fx_ctx q = {g, dt == CT_FLOAT64, es};
  if (c->in[2] && !bias) return ct_last_status();
  /* im2col + GEMM flips the weights first (a scattered pass over them): worth it where gx, which col2im
   * would zero and add into, is the bigger (not ResNet's 4x4 512-channel layers: 2.4M weights, 131K gx
   * at batch 16, where the flip alone took ~2.8 ms) */
  bool flip_pays = (Og * Cg * g->ksp) * G <= g->N * g->C * g->insp;
  bool flip = (path == CT_CONV_PATH_WINOGRAD || (path == CT_CONV_PATH_IM2COL && flip_eligible(g) && flip_pays)) &&
              rows > 0 && Og > 0 && g->outsp > 0;
  bool taps = path == CT_CONV_PATH_IM2COL && !flip && taps_eligible(g, dt); /* writes every gx element */
  if ((path != CT_CONV_PATH_GEMM_1X1 && !flip && !taps) || Og == 0) zero_par(gx, (size_t)ct_numel(xt) * es); /* col2im adds into it */
  if (rows == 0 || Og == 0 || g->outsp == 0) goto done;
  const char *gy = operand(c->in[0], dt, &yo), *w = gy ? operand(c->in[1], dt, &wo) : NULL;
  if (!w) {
    st = ct_last_status();
    goto done;
  }
  if (flip) {
    st = bwd_input_flipped(g, dt, gy, w, gx, path == CT_CONV_PATH_WINOGRAD);
    goto done;
  }
  if (taps) {
    st = taps_run(g, (const float *)gy, (const float *)w, (float *)gx, true);
    goto done;
  }
  if (path == CT_CONV_PATH_GEMM_1X1) {
    for (int64_t grp = 0; grp < G && !st; grp++)
      st = gemm_call(dt, g->N, Cg, g->insp, Og, EL(w, grp * Og * Cg), 0, 1, Cg, EL(gy, grp * Og * g->outsp),
                     O * g->outsp, g->outsp, 1, EL(gx, grp * Cg * g->insp), g->C * g->insp, g->insp, false);
    goto done;
  }
  st = cols_loop(OP_BWD_INPUT, g, dt, gx, w, (char *)gy, NULL, NULL);
done:
  if (!st) run_bias(&q, gx, bias, g->N, g->C, g->insp);
  free(yo);
  free(wo);
  free(bo);
  return st;
}

/* in[0] x, in[1] gy -> gw */
static ct_status fast_bwd_weight(const ct_call *c, const ct_conv_geom *g, ct_conv_path path) {
  ct_tensor *wt = c->out[0];
  ct_dtype dt = wt->dtype;
  size_t es = ct_dtype_size(dt);
  int64_t G = g->G, Cg = g->C / G, Og = g->O / G, O = g->O;
  char *gw = ct_cpu_ptr(wt);
  void *xo = NULL, *yo = NULL;
  ct_status st = CT_OK;
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
  if (path == CT_CONV_PATH_WINOGRAD) st = wino_wgrad(g, (const float *)x, (const float *)gy, (float *)gw);
  else st = cols_loop(OP_BWD_WEIGHT, g, dt, (char *)x, NULL, (char *)gy, gw, NULL);
done:
  free(xo);
  free(yo);
  return st;
}

/* choose_path's rule, then WINOGRAD in place of IM2COL for the forward, the input gradient and the
 * weight gradient of a float32 3x3 stride-1 conv with enough channels (wino_eligible; for the input
 * gradient, of the flipped-kernel forward conv it runs as), unless im2col is forced; a forward whose
 * module lent the eval weight cache also from fewer tiles (wino_cached_pays). */
static bool wino_auto_enabled(void) { /* CT_CONV_WINOGRAD=0: im2col (or taps) where Winograd is not forced (A/B) */
  static int env = -1;
  return ct_env_switch("CT_CONV_WINOGRAD", &env);
}
static ct_conv_path pick(const ct_conv_geom *g, ct_dtype dt, int op) {
  ct_conv_path p = choose_path(g, dt, op);
  if (p == CT_CONV_PATH_IM2COL && (conv_forced == CT_CONV_PATH_WINOGRAD || (conv_forced < 0 && wino_auto_enabled()))) {
    ct_conv_geom f;
    if ((op == OP_FWD || op == OP_BWD_WEIGHT) && wino_eligible(g, dt)) p = CT_CONV_PATH_WINOGRAD;
    else if ((op == OP_FWD || op == OP_BWD_WEIGHT) && wino_fwd_wgrad_pays(g, dt)) p = CT_CONV_PATH_WINOGRAD;
    else if (op == OP_FWD && wc_slot && wc_enabled() && wino_shape_ok(g, dt) && wino_cached_pays(g)) p = CT_CONV_PATH_WINOGRAD;
    else if (op == OP_BWD_INPUT && flip_eligible(g)) {
      flip_geom(g, &f);
      if (wino_eligible(&f, dt)) p = CT_CONV_PATH_WINOGRAD;
    }
  }
  __atomic_fetch_add(&conv_counts[p], 1, __ATOMIC_RELAXED);
  return p;
}

/* in[0] x, in[1] w, in[2] bias (optional) -> y */
ct_status ct_cpu_conv_fwd(const ct_call *c) {
  ct_conv_geom g;
  ct_conv_geom_make(&g, c, c->in[0], c->in[1], c->out[0]);
  ct_conv_path p = pick(&g, c->out[0]->dtype, OP_FWD);
  if (p == CT_CONV_PATH_REFERENCE) return ref_conv_fwd(c);
  return ct_numel(c->out[0]) == 0 ? CT_OK : fast_fwd(c, &g, p);
}

/* in[0] gy, in[1] w, in[2] bias (optional, per output channel of this op) -> gx */
ct_status ct_cpu_conv_bwd_input(const ct_call *c) {
  ct_conv_geom g;
  ct_conv_geom_make(&g, c, c->out[0], c->in[1], c->in[0]);
  ct_conv_path p = pick(&g, c->out[0]->dtype, OP_BWD_INPUT);
  if (p == CT_CONV_PATH_REFERENCE) return ref_conv_bwd_input(c);
  return ct_numel(c->out[0]) == 0 ? CT_OK : fast_bwd_input(c, &g, p);
}

/* in[0] x, in[1] gy -> gw */
ct_status ct_cpu_conv_bwd_weight(const ct_call *c) {
  ct_conv_geom g;
  ct_conv_geom_make(&g, c, c->in[0], c->out[0], c->in[1]);
  ct_conv_path p = pick(&g, c->out[0]->dtype, OP_BWD_WEIGHT);
  if (p == CT_CONV_PATH_REFERENCE) return ref_conv_bwd_weight(c);
  return ct_numel(c->out[0]) == 0 ? CT_OK : fast_bwd_weight(c, &g, p);
}
