/* Fused batch_norm kernels (CPU float32/float64), used by ct_batch_norm (src/ops/nn.c) in place
 * of the composed statistics + elementwise ops, which cost about ten passes over the activation
 * and as many temporaries per layer (the composed path stays the reference: other dtypes and
 * devices, CT_REFERENCE_KERNELS=1, and gradients taken with create_graph).
 *
 * Layout: x contiguous [N, C, S] (S = product of the spatial dims, 1 for [N, C]); weight, bias,
 * running stats contiguous [C]. One task per channel, so results do not depend on the thread
 * count. Per-channel sums accumulate in double (8 independent lanes, which the compiler
 * vectorises; no reassociation, so every ISA gives the same bits); elementwise math is in the
 * dtype, as PyTorch's kernels do.
 *   forward  (one read pass for the statistics, one read+write pass for y):
 *     training: mean and biased var from shifted sums (shift = the channel's first element,
 *     which keeps the one-pass variance free of cancellation for data whose mean is large
 *     against its spread); eval: running mean/var. y = (x - mean) * (rstd * w) + b.
 *   backward (one read pass for sum(g), sum(g (x - mean)); one read+write pass for dx):
 *     training: dx = rstd w (g - sum(g)/M - (x - mean) rstd^2 sum(g (x - mean))/M);
 *     eval: dx = g rstd w; dw = rstd sum(g (x - mean)); db = sum(g).
 * With a ReLU fused behind it (k3, ct_batch_norm_relu: ResNet's bn -> relu pairs) the forward writes
 * relu(y) (v <= 0 ? 0 : v, as the ReLU kernels) and the backward reads the saved relu output r
 * (in[5]) and uses g' = r <= 0 ? 0 : g (threshold_backward) wherever it read g: the same
 * operations in the same order as the two ops apart, one pass over the activation fewer each way
 * and no batch-norm output tensor.
 * With a residual added before that ReLU (k4, ct_batch_norm_add_relu: ResNet's block tails) the
 * forward writes relu(y + res) (y rounded to the dtype first, as the add reads it) from in[5]; the
 * backward writes g' = r <= 0 ? 0 : g into out[3] (the residual's gradient, as ReluBackward0 then
 * AddBackward0 hand it on) while it forms the sums, and its dx pass reads g' back. */
#if defined(__GNUC__) && !defined(__clang__)
/* vectorise the elementwise loops (GCC 12 -O2's very-cheap cost model leaves them scalar); the same bits: no
 * reassociation, no contraction into FMA */
#pragma GCC optimize("vect-cost-model=dynamic", "fp-contract=off")
#endif
#include "kernels_nn.h"
#include "simd/simd.h"
#include <math.h>
#include <string.h>

/* Per-plane sums: s1 += sum(x - shift), s2 += sum((x - shift)^2) (forward statistics);
 * or, with g, s1 += sum(g), s2 += sum(g (x - shift)) (backward). */
#define BN_SUMS(T, UT, SUF, ATTR)                                                                         \
  ATTR static void bn_stats_##SUF(const T *x, int64_t n, double shift, double *s1, double *s2) {      \
    double a[8] = {0}, b[8] = {0};                                                                    \
    int64_t i = 0;                                                                                    \
    for (; i + 8 <= n; i += 8)                                                                        \
      for (int j = 0; j < 8; j++) {                                                                   \
        double d = (double)x[i + j] - shift;                                                          \
        a[j] += d;                                                                                    \
        b[j] += d * d;                                                                                \
      }                                                                                               \
    for (; i < n; i++) {                                                                              \
      double d = (double)x[i] - shift;                                                                \
      a[0] += d;                                                                                      \
      b[0] += d * d;                                                                                  \
    }                                                                                                 \
    *s1 += ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));                         \
    *s2 += ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));                         \
  }                                                                                                   \
  ATTR static void bn_gsums_##SUF(const T *g, const T *x, int64_t n, double mean, double *s1, double *s2) { \
    double a[8] = {0}, b[8] = {0};                                                                    \
    int64_t i = 0;                                                                                    \
    for (; i + 8 <= n; i += 8)                                                                        \
      for (int j = 0; j < 8; j++) {                                                                   \
        double gv = (double)g[i + j];                                                                 \
        a[j] += gv;                                                                                   \
        b[j] += gv * ((double)x[i + j] - mean);                                                       \
      }                                                                                               \
    for (; i < n; i++) {                                                                              \
      double gv = (double)g[i];                                                                       \
      a[0] += gv;                                                                                     \
      b[0] += gv * ((double)x[i] - mean);                                                             \
    }                                                                                                 \
    *s1 += ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));                         \
    *s2 += ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));                         \
  }                                                                                                   \
  ATTR static void bn_apply_##SUF(T *restrict y, const T *restrict x, int64_t n, T m, T sc, T b) {     \
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) * sc + b;                                       \
  }                                                                                                   \
  ATTR static void bn_dx_##SUF(T *restrict dx, const T *restrict g, const T *restrict x, int64_t n, T m, \
                               T cg, T cx, T a) {                                                     \
    for (int64_t i = 0; i < n; i++) dx[i] = ((g[i] - cg) - (x[i] - m) * cx) * a;                      \
  }                                                                                                   \
  ATTR static void bn_scale_##SUF(T *restrict dx, const T *restrict g, int64_t n, T a) {              \
    for (int64_t i = 0; i < n; i++) dx[i] = g[i] * a;                                                 \
  }                                                                                                   \
  /* the ReLU-fused forms: r is the saved relu output, g' = r <= 0 ? 0 : g */                       \
  ATTR static void bn_apply_relu_##SUF(T *restrict y, const T *restrict x, int64_t n, T m, T sc, T b) { \
    for (int64_t i = 0; i < n; i++) {                                                                 \
      T v = (x[i] - m) * sc + b;                                                                      \
      y[i] = v <= 0 ? (T)0 : v;                                                                       \
    }                                                                                                 \
  }                                                                                                   \
  ATTR static void bn_gsums_relu_##SUF(const T *g, const T *r, const T *x, int64_t n, double mean, double *s1, \
                                       double *s2) {                                                  \
    double a[8] = {0}, b[8] = {0};                                                                    \
    int64_t i = 0;                                                                                    \
    for (; i + 8 <= n; i += 8)                                                                        \
      for (int j = 0; j < 8; j++) {                                                                   \
        /* the select as a bit mask: GCC leaves a select in a reduction scalar and branchy */       \
        T gi = g[i + j], gm;                                                                          \
        UT gb;                                                                                        \
        memcpy(&gb, &gi, sizeof gb);                                                                  \
        gb &= (UT)0 - (UT)!(r[i + j] <= 0);                                                           \
        memcpy(&gm, &gb, sizeof gb);                                                                  \
        double gv = (double)gm;                                                                       \
        a[j] += gv;                                                                                   \
        b[j] += gv * ((double)x[i + j] - mean);                                                       \
      }                                                                                               \
    for (; i < n; i++) {                                                                              \
      double gv = (double)(r[i] <= 0 ? (T)0 : g[i]);                                                  \
      a[0] += gv;                                                                                     \
      b[0] += gv * ((double)x[i] - mean);                                                             \
    }                                                                                                 \
    *s1 += ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));                         \
    *s2 += ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));                         \
  }                                                                                                   \
  ATTR static void bn_dx_relu_##SUF(T *restrict dx, const T *restrict g, const T *restrict r, const T *restrict x, \
                                    int64_t n, T m, T cg, T cx, T a) {                                \
    for (int64_t i = 0; i < n; i++) {                                                                 \
      T gi = g[i], ri = r[i];                                                                         \
      T gv = ri <= 0 ? (T)0 : gi;                                                                     \
      dx[i] = ((gv - cg) - (x[i] - m) * cx) * a;                                                      \
    }                                                                                                 \
  }                                                                                                   \
  ATTR static void bn_scale_relu_##SUF(T *restrict dx, const T *restrict g, const T *restrict r, int64_t n, T a) { \
    for (int64_t i = 0; i < n; i++) {                                                                 \
      T gi = g[i], ri = r[i];                                                                         \
      dx[i] = (ri <= 0 ? (T)0 : gi) * a;                                                              \
    }                                                                                                 \
  }                                                                                                   \
  /* the residual-add forms: y = relu(bn(x) + res); g' = r <= 0 ? 0 : g written to gp on the way */  \
  ATTR static void bn_apply_add_relu_##SUF(T *restrict y, const T *restrict x, const T *restrict res, int64_t n, T m, \
                                           T sc, T b) {                                               \
    for (int64_t i = 0; i < n; i++) {                                                                 \
      T v = (x[i] - m) * sc + b;                                                                      \
      v = v + res[i];                                                                                 \
      y[i] = v <= 0 ? (T)0 : v;                                                                       \
    }                                                                                                 \
  }                                                                                                   \
  /* g' = r <= 0 ? 0 : g into gp (a select by bit mask: vectorised) */                            \
  ATTR static void bn_mask_##SUF(T *restrict gp, const T *restrict g, const T *restrict r, int64_t n) { \
    for (int64_t i = 0; i < n; i++) {                                                                 \
      T gi = g[i], gm;                                                                                \
      UT gb;                                                                                          \
      memcpy(&gb, &gi, sizeof gb);                                                                    \
      gb &= (UT)0 - (UT)!(r[i] <= 0);                                                                 \
      memcpy(&gm, &gb, sizeof gb);                                                                    \
      gp[i] = gm;                                                                                     \
    }                                                                                                 \
  }                                                                                                   \
  /* g' into gp, then the plain sums over gp while it is in cache: the same values in the same order  \
   * as bn_gsums_relu's */                                                                            \
  ATTR static void bn_gsums_relu_w_##SUF(const T *restrict g, const T *restrict r, const T *restrict x, T *restrict gp, \
                                         int64_t n, double mean, double *s1, double *s2) {            \
    bn_mask_##SUF(gp, g, r, n);                                                                       \
    bn_gsums_##SUF(gp, x, n, mean, s1, s2);                                                           \
  }

/* A wider-vector copy for x86-64 CPUs with AVX2 (no FMA, so no contraction: the same bits as the
 * baseline build), chosen once at run time. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BN_HAVE_AVX2 1
BN_SUMS(float, uint32_t, f32_avx2, __attribute__((target("avx2"))))
BN_SUMS(double, uint64_t, f64_avx2, __attribute__((target("avx2"))))
#endif
BN_SUMS(float, uint32_t, f32, )
BN_SUMS(double, uint64_t, f64, )

typedef struct {
  bool dbl, training, avx2, relu; /* relu: a ReLU fused behind (forward), or r given (backward) */
  int64_t N, C, S;
  double eps;
  const char *x, *g, *w, *b, *rm, *rv; /* rm/rv: running stats (eval); in backward rm/rv = mean/rstd */
  const char *r;                       /* backward with relu: the saved relu output */
  const char *res;                     /* forward with k4: the residual added before the ReLU */
  char *gp;                            /* backward with k4: g' (masked gradient) written here */
  char *y, *mean, *rstd, *var;         /* backward: y = dx, mean = dw, rstd = db */
} bn_ctx;

#define ELT(T, p, i) (((const T *)(p))[i])

/* one channel's forward */
#define BN_FWD(T, SUF)                                                                                 \
  {                                                                                                    \
    const T *x = (const T *)q->x;                                                                      \
    double mean, var;                                                                                  \
    if (q->training) {                                                                                 \
      double shift = (double)x[c * S], s1 = 0, s2 = 0, M = (double)(q->N * S);                         \
      for (int64_t n = 0; n < q->N; n++) stats(x + (n * q->C + c) * S, S, shift, &s1, &s2);            \
      double d = s1 / M;                                                                               \
      mean = shift + d;                                                                                \
      var = s2 / M - d * d;                                                                            \
      if (var < 0) var = 0;                                                                            \
    } else {                                                                                           \
      mean = (double)ELT(T, q->rm, c);                                                                 \
      var = (double)ELT(T, q->rv, c);                                                                  \
    }                                                                                                  \
    double rstd = 1.0 / sqrt(var + q->eps);                                                            \
    T m = (T)mean, sc = (T)(rstd * (q->w ? (double)ELT(T, q->w, c) : 1.0)), bb = q->b ? ELT(T, q->b, c) : (T)0; \
    ((T *)q->mean)[c] = m;                                                                             \
    ((T *)q->rstd)[c] = (T)rstd;                                                                       \
    ((T *)q->var)[c] = (T)var;                                                                         \
    for (int64_t n = 0; n < q->N; n++) {                                                               \
      int64_t o = (n * q->C + c) * S;                                                                  \
      if (q->res) apply_add_relu((T *)q->y + o, x + o, (const T *)q->res + o, S, m, sc, bb);           \
      else if (q->relu) apply_relu((T *)q->y + o, x + o, S, m, sc, bb);                                \
      else apply((T *)q->y + o, x + o, S, m, sc, bb);                                                  \
    }                                                                                                  \
  }

static void bn_fwd_range(void *vq, int64_t begin, int64_t end) {
  const bn_ctx *q = vq;
  const int64_t S = q->S;
  for (int64_t c = begin; c < end; c++) {
    if (q->dbl) {
      void (*stats)(const double *, int64_t, double, double *, double *) = bn_stats_f64;
      void (*apply)(double *, const double *, int64_t, double, double, double) = bn_apply_f64;
      void (*apply_relu)(double *, const double *, int64_t, double, double, double) = bn_apply_relu_f64;
      void (*apply_add_relu)(double *, const double *, const double *, int64_t, double, double, double) =
          bn_apply_add_relu_f64;
#ifdef BN_HAVE_AVX2
      if (q->avx2) {
        stats = bn_stats_f64_avx2, apply = bn_apply_f64_avx2, apply_relu = bn_apply_relu_f64_avx2;
        apply_add_relu = bn_apply_add_relu_f64_avx2;
      }
#endif
      BN_FWD(double, f64)
    } else {
      void (*stats)(const float *, int64_t, double, double *, double *) = bn_stats_f32;
      void (*apply)(float *, const float *, int64_t, float, float, float) = bn_apply_f32;
      void (*apply_relu)(float *, const float *, int64_t, float, float, float) = bn_apply_relu_f32;
      void (*apply_add_relu)(float *, const float *, const float *, int64_t, float, float, float) =
          bn_apply_add_relu_f32;
#ifdef BN_HAVE_AVX2
      if (q->avx2) {
        stats = bn_stats_f32_avx2, apply = bn_apply_f32_avx2, apply_relu = bn_apply_relu_f32_avx2;
        apply_add_relu = bn_apply_add_relu_f32_avx2;
      }
#endif
      BN_FWD(float, f32)
    }
  }
}

/* one channel's backward: in rm = mean, rv = rstd; out y = dx?, mean = dw?, rstd = db? */
#define BN_BWD(T, SUF)                                                                                 \
  {                                                                                                    \
    const T *x = (const T *)q->x, *g = (const T *)q->g, *r = (const T *)q->r;                          \
    T m = ELT(T, q->rm, c), rs = ELT(T, q->rv, c);                                                     \
    double s1 = 0, s2 = 0, M = (double)(q->N * S), rstd = (double)rs;                                  \
    bool need_sums = q->mean || q->rstd || (q->y && q->training);                                      \
    for (int64_t n = 0; need_sums && n < q->N; n++) {                                                  \
      int64_t o = (n * q->C + c) * S;                                                                  \
      if (q->gp) gsums_relu_w(g + o, r + o, x + o, (T *)q->gp + o, S, (double)m, &s1, &s2);            \
      else if (r) gsums_relu(g + o, r + o, x + o, S, (double)m, &s1, &s2);                             \
      else gsums(g + o, x + o, S, (double)m, &s1, &s2);                                                \
    }                                                                                                  \
    if (q->gp) g = (const T *)q->gp, r = NULL; /* g' from here on: no mask left to apply */            \
    if (q->mean) ((T *)q->mean)[c] = (T)(s2 * rstd);                                                   \
    if (q->rstd) ((T *)q->rstd)[c] = (T)s1;                                                            \
    if (q->y) {                                                                                        \
      T a = (T)(rstd * (q->w ? (double)ELT(T, q->w, c) : 1.0));                                        \
      T cg = (T)(s1 / M), cx = (T)(rstd * rstd * s2 / M);                                              \
      for (int64_t n = 0; n < q->N; n++) {                                                             \
        int64_t o = (n * q->C + c) * S;                                                                \
        if (r && q->training) dx_relu((T *)q->y + o, g + o, r + o, x + o, S, m, cg, cx, a);            \
        else if (r) scale_relu((T *)q->y + o, g + o, r + o, S, a);                                     \
        else if (q->training) dx((T *)q->y + o, g + o, x + o, S, m, cg, cx, a);                        \
        else scale((T *)q->y + o, g + o, S, a);                                                        \
      }                                                                                                \
    }                                                                                                  \
  }

static void bn_bwd_range(void *vq, int64_t begin, int64_t end) {
  const bn_ctx *q = vq;
  const int64_t S = q->S;
  for (int64_t c = begin; c < end; c++) {
    if (q->dbl) {
      void (*gsums)(const double *, const double *, int64_t, double, double *, double *) = bn_gsums_f64;
      void (*dx)(double *, const double *, const double *, int64_t, double, double, double, double) = bn_dx_f64;
      void (*scale)(double *, const double *, int64_t, double) = bn_scale_f64;
      void (*gsums_relu)(const double *, const double *, const double *, int64_t, double, double *, double *) =
          bn_gsums_relu_f64;
      void (*dx_relu)(double *, const double *, const double *, const double *, int64_t, double, double, double,
                      double) = bn_dx_relu_f64;
      void (*scale_relu)(double *, const double *, const double *, int64_t, double) = bn_scale_relu_f64;
      void (*gsums_relu_w)(const double *, const double *, const double *, double *, int64_t, double, double *,
                           double *) = bn_gsums_relu_w_f64;
#ifdef BN_HAVE_AVX2
      if (q->avx2) {
        gsums = bn_gsums_f64_avx2, dx = bn_dx_f64_avx2, scale = bn_scale_f64_avx2;
        gsums_relu = bn_gsums_relu_f64_avx2, dx_relu = bn_dx_relu_f64_avx2, scale_relu = bn_scale_relu_f64_avx2;
        gsums_relu_w = bn_gsums_relu_w_f64_avx2;
      }
#endif
      BN_BWD(double, f64)
    } else {
      void (*gsums)(const float *, const float *, int64_t, double, double *, double *) = bn_gsums_f32;
      void (*dx)(float *, const float *, const float *, int64_t, float, float, float, float) = bn_dx_f32;
      void (*scale)(float *, const float *, int64_t, float) = bn_scale_f32;
      void (*gsums_relu)(const float *, const float *, const float *, int64_t, double, double *, double *) =
          bn_gsums_relu_f32;
      void (*dx_relu)(float *, const float *, const float *, const float *, int64_t, float, float, float, float) =
          bn_dx_relu_f32;
      void (*scale_relu)(float *, const float *, const float *, int64_t, float) = bn_scale_relu_f32;
      void (*gsums_relu_w)(const float *, const float *, const float *, float *, int64_t, double, double *, double *) =
          bn_gsums_relu_w_f32;
#ifdef BN_HAVE_AVX2
      if (q->avx2) {
        gsums = bn_gsums_f32_avx2, dx = bn_dx_f32_avx2, scale = bn_scale_f32_avx2;
        gsums_relu = bn_gsums_relu_f32_avx2, dx_relu = bn_dx_relu_f32_avx2, scale_relu = bn_scale_relu_f32_avx2;
        gsums_relu_w = bn_gsums_relu_w_f32_avx2;
      }
#endif
      BN_BWD(float, f32)
    }
  }
}

/* g' over the whole tensor (the backward with k4 where a plane is short: per-plane calls would cost more than the
 * pass they save), in chunks of whole vectors */
static void bn_mask_range(void *vq, int64_t begin, int64_t end) {
  const bn_ctx *q = vq;
  int64_t b = begin * 64, e = end * 64, n = q->N * q->C * q->S;
  if (e > n) e = n;
  size_t es = q->dbl ? 8 : 4;
  const char *g = q->g + b * es, *r = q->r + b * es;
  char *gp = q->gp + b * es;
  if (q->dbl) {
    void (*mask)(double *, const double *, const double *, int64_t) = bn_mask_f64;
#ifdef BN_HAVE_AVX2
    if (q->avx2) mask = bn_mask_f64_avx2;
#endif
    mask((double *)gp, (const double *)g, (const double *)r, e - b);
  } else {
    void (*mask)(float *, const float *, const float *, int64_t) = bn_mask_f32;
#ifdef BN_HAVE_AVX2
    if (q->avx2) mask = bn_mask_f32_avx2;
#endif
    mask((float *)gp, (const float *)g, (const float *)r, e - b);
  }
}

/* the fast kernels' level (CT_SIMD, ct_simd_force), so tests can run the portable loops too */
static bool bn_use_avx2(void) {
#ifdef BN_HAVE_AVX2
  return ct_simd_active() >= CT_SIMD_AVX2;
#else
  return false;
#endif
}

ct_status ct_bn_layout_check(const ct_call *c, const ct_tensor *x, int first_c, int last_c) {
  ct_dtype dt = x->dtype;
  if ((dt != CT_FLOAT32 && dt != CT_FLOAT64) || x->ndim < 2 || !ct_is_contiguous(x))
    return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: expected a contiguous float32/float64 input of 2 or more dims");
  for (int k = first_c; k <= last_c; k++) {
    const ct_tensor *t = c->in[k];
    if (t && (t->dtype != dt || !ct_is_contiguous(t) || ct_numel(t) != x->shape[1]))
      return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: expected contiguous per-channel tensors of the input's dtype");
  }
  return CT_OK;
}

static void bn_geom(bn_ctx *q, const ct_tensor *x) {
  q->dbl = x->dtype == CT_FLOAT64;
  q->N = x->shape[0];
  q->C = x->shape[1];
  q->S = q->N && q->C ? ct_numel(x) / (q->N * q->C) : 0;
  q->avx2 = bn_use_avx2();
}

static const char *opt_ptr(const ct_tensor *t) { return t ? ct_cpu_ptr(t) : NULL; }

/* a tensor like x (its dtype, contiguous, numel) for the residual / g' of k4 */
static bool bn_like_x(const ct_tensor *t, const ct_tensor *x) {
  return t && t->dtype == x->dtype && ct_is_contiguous(t) && ct_numel(t) == ct_numel(x);
}

/* in x, weight?, bias?, running_mean?, running_var? (eval), residual (k4) -> y, mean, rstd, var (each [C]);
 * k0 training, k3 relu, k4 residual added before the relu (needs k3), f0 eps */
ct_status ct_cpu_native_batch_norm(const ct_call *c) {
  const ct_tensor *x = c->in[0];
  CT_TRY(ct_bn_layout_check(c, x, 1, 4));
  bn_ctx q;
  memset(&q, 0, sizeof q);
  bn_geom(&q, x);
  q.training = c->a.k[0] != 0;
  q.relu = c->a.k[3] != 0;
  q.eps = c->a.f[0];
  if (!q.training && (!c->in[3] || !c->in[4]))
    return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: running_mean and running_var must be defined in evaluation mode");
  if (q.training && q.N * q.S == 0)
    return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: no values per channel");
  q.x = ct_cpu_ptr(x);
  q.w = opt_ptr(c->in[1]);
  q.b = opt_ptr(c->in[2]);
  q.rm = opt_ptr(c->in[3]);
  q.rv = opt_ptr(c->in[4]);
  if (c->a.k[4]) {
    if (!q.relu || c->n_in < 6 || !bn_like_x(c->in[5], x))
      return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: expected the residual contiguous like the input, with a ReLU");
    q.res = ct_cpu_ptr(c->in[5]);
  }
  q.y = ct_cpu_ptr(c->out[0]);
  q.mean = ct_cpu_ptr(c->out[1]);
  q.rstd = ct_cpu_ptr(c->out[2]);
  q.var = ct_cpu_ptr(c->out[3]);
  ct_parallel_for(q.C, 1 + 32768 / (q.N * q.S + 1), bn_fwd_range, &q);
  return CT_OK;
}

/* in g, x, weight?, mean, rstd, r? -> dx?, dweight?, dbias?, g'? (each output optional); k0 training; k3: a
 * ReLU was fused behind the forward, in[5] = its saved output r; k4: a residual was added before it, out[3] =
 * g' (required; the sums pass writes it, so one of dweight / dbias / training dx must be asked for) */
ct_status ct_cpu_native_batch_norm_backward(const ct_call *c) {
  const ct_tensor *x = c->in[1];
  CT_TRY(ct_bn_layout_check(c, x, 2, 4));
  if (!c->in[3] || !c->in[4] || !ct_is_contiguous(c->in[0]) || c->in[0]->dtype != x->dtype ||
      ct_numel(c->in[0]) != ct_numel(x))
    return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm_backward: expected a contiguous gradient and the saved statistics");
  bn_ctx q;
  memset(&q, 0, sizeof q);
  bn_geom(&q, x);
  q.training = c->a.k[0] != 0;
  if (c->a.k[3]) {
    const ct_tensor *r = c->n_in > 5 ? c->in[5] : NULL;
    if (!r || r->dtype != x->dtype || !ct_is_contiguous(r) || ct_numel(r) != ct_numel(x))
      return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm_backward: expected the fused ReLU's contiguous output");
    q.r = ct_cpu_ptr(r);
  }
  q.g = ct_cpu_ptr(c->in[0]);
  q.x = ct_cpu_ptr(x);
  q.w = opt_ptr(c->in[2]);
  q.rm = ct_cpu_ptr(c->in[3]);
  q.rv = ct_cpu_ptr(c->in[4]);
  q.y = c->out[0] ? ct_cpu_ptr(c->out[0]) : NULL;
  q.mean = c->out[1] ? ct_cpu_ptr(c->out[1]) : NULL;
  q.rstd = c->out[2] ? ct_cpu_ptr(c->out[2]) : NULL;
  if (c->a.k[4]) {
    if (!q.r || c->n_out < 4 || !bn_like_x(c->out[3], x) || !(q.mean || q.rstd || (q.y && q.training)))
      return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm_backward: expected g' contiguous like the input and a pass "
                                    "over the gradient (the residual's ReLU)");
    q.gp = ct_cpu_ptr(c->out[3]);
  }
  if (q.training && q.N * q.S == 0) return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm_backward: no values per channel");
  if (q.gp && q.S < 64) { /* short planes: g' in one flat pass first, then the plain backward reads it */
    int64_t n = q.N * q.C * q.S;
    ct_parallel_for((n + 63) / 64, 512, bn_mask_range, &q);
    q.g = q.gp;
    q.r = NULL;
    q.gp = NULL;
  }
  ct_parallel_for(q.C, 1 + 32768 / (q.N * q.S + 1), bn_bwd_range, &q);
  return CT_OK;
}
