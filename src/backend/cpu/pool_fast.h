/* Fast float32 / float64 pooling kernels over contiguous [N, C, H, W] (kernels_pool.c).
 * They read and write the tensors' own storage in their dtype (no double buffers) and
 * split the N*C planes over the thread pool. Max pools compare in the dtype, which is
 * exact, so values and indices equal the reference's bit for bit (same scan order: ties keep
 * the first index, the first NaN wins). Average pools accumulate in the dtype, so they
 * differ from the reference (double, rounded once) by a few ulps of the window's |sum|.
 * Included only by kernels_pool.c; everything else (other dtypes, strided inputs,
 * CT_REFERENCE_KERNELS=1) takes the reference loops. Included twice: the max pools first,
 * the average pools (which reuse the reference's tap lists) with CT_POOL_FAST_AVG defined. */
#ifndef CT_POOL_FAST_H
#define CT_POOL_FAST_H
#include <stdint.h>
#include <string.h>

/* CT_POOL_REFERENCE=1 turns off only these kernels (to measure them against the reference
 * with every other fast kernel on); CT_REFERENCE_KERNELS=1 turns them off with the rest. */
static inline bool pf_enabled(void) {
  static int env = -1;
  int e = __atomic_load_n(&env, __ATOMIC_RELAXED);
  if (e < 0) {
    const char *v = getenv("CT_POOL_REFERENCE");
    e = v && v[0] && strcmp(v, "0") ? 0 : 1;
    __atomic_store_n(&env, e, __ATOMIC_RELAXED);
  }
  return e && ct_fast_enabled();
}

/* The separable 3x3 stride-2 float32 max pool below; CT_POOL_MAX3S2=0 or ct_pool_set_max3s2(0) turns it
 * off (A/B runs: the generic kernel then). */
static int pf_m3_mode = -1;
void ct_pool_set_max3s2(int on) { pf_m3_mode = on ? 1 : 0; }
static inline bool pf_m3_enabled(void) {
  int m = __atomic_load_n(&pf_m3_mode, __ATOMIC_RELAXED);
  if (m < 0) {
    const char *e = getenv("CT_POOL_MAX3S2");
    m = e && *e == '0' ? 0 : 1;
    __atomic_store_n(&pf_m3_mode, m, __ATOMIC_RELAXED);
  }
  return m;
}

/* Window [h0, h1) step dh of output oh (and the same for w), as the reference computes it. */
static inline void pf_window(bool adaptive, const int64_t *a, int dim, int64_t o, int64_t I, int64_t O, int64_t *lo,
                             int64_t *hi, int64_t *step) {
  if (adaptive) {
    *lo = o * I / O;
    *hi = ((o + 1) * I + O - 1) / O;
    *step = 1;
    return;
  }
  int64_t d = a[6 + dim], b = o * a[2 + dim] - a[4 + dim], e = b + (a[dim] - 1) * d + 1;
  if (e > I) e = I;
  if (b < 0) b += ((-b + d - 1) / d) * d; /* first in-range tap of the dilated window */
  *lo = b;
  *hi = e;
  *step = d;
}

/* float32 interior outputs [owa, owb) of one output row, 4 at a time with the compilers'
 * generic vector types (SSE2 on x86-64, SIMD128 under emscripten): each tap's inputs are first
 * gathered into a contiguous column (stride and dilation), then compared lane-wise with the
 * same take rule as the scalar scan. Indices ride along as int32 (the caller checks H*W fits). */
typedef float pf_f4 __attribute__((vector_size(16)));
typedef int32_t pf_i4 __attribute__((vector_size(16)));
#define PF_CHUNK 256
static bool pf_interior_float(const float *xp, float *yr, int64_t *ir, int64_t W, int64_t h0, int64_t h1, int64_t dh,
                              int64_t kw, int64_t dw, int64_t pw, int64_t sw, int64_t owa, int64_t owb, int64_t HW) {
  if (HW >= ((int64_t)1 << 31) || sw >= ((int64_t)1 << 28)) return false;
  float col[PF_CHUNK], bv[PF_CHUNK];
  int32_t bi[PF_CHUNK];
  const pf_i4 lane = (pf_i4){0, 1, 2, 3} * (int32_t)sw;
  for (int64_t c0 = owa; c0 < owb; c0 += PF_CHUNK) {
    int64_t n = owb - c0 < PF_CHUNK ? owb - c0 : PF_CHUNK;
    for (int64_t j = 0; j < n; j++) {
      bv[j] = -INFINITY;
      bi[j] = (int32_t)(h0 * W + (c0 + j) * sw - pw);
    }
    for (int64_t h = h0; h < h1; h += dh)
      for (int64_t t = 0; t < kw; t++) {
        int64_t off = h * W + t * dw - pw + c0 * sw; /* input index of lane j: off + j * sw */
        const float *xs = xp + off;
        for (int64_t j = 0; j < n; j++) col[j] = xs[j * sw];
        int64_t j = 0;
        for (; j + 4 <= n; j += 4) {
          pf_f4 v, b;
          pf_i4 bx;
          memcpy(&v, col + j, sizeof v);
          memcpy(&b, bv + j, sizeof b);
          memcpy(&bx, bi + j, sizeof bx);
          pf_i4 m = ~(v <= b) & (b == b);
          pf_i4 r = ((pf_i4)v & m) | ((pf_i4)b & ~m);
          pf_i4 ix = lane + (int32_t)(off + j * sw);
          bx = (ix & m) | (bx & ~m);
          memcpy(bv + j, &r, sizeof r);
          memcpy(bi + j, &bx, sizeof bx);
        }
        for (; j < n; j++) {
          float v = col[j], b = bv[j];
          if (!(v <= b) && b == b) {
            bv[j] = v;
            bi[j] = (int32_t)(off + j * sw);
          }
        }
      }
    for (int64_t j = 0; j < n; j++) {
      yr[c0 + j] = bv[j];
      ir[c0 + j] = bi[j];
    }
  }
  return true;
}
static bool pf_interior_double(const double *xp, double *yr, int64_t *ir, int64_t W, int64_t h0, int64_t h1,
                               int64_t dh, int64_t kw, int64_t dw, int64_t pw, int64_t sw, int64_t owa, int64_t owb,
                               int64_t HW) {
  return false; /* float64 keeps the scalar masked pass below */
}

/* One kernel body per dtype T. */
#define PF_MAXPOOL(NAME, T, U)                                                                          \
  static void NAME(const ct_call *c, bool adaptive, const T *x, T *y, int64_t *ix, int64_t H, int64_t W, \
                   int64_t OH, int64_t OW, const int64_t *wlo, const int64_t *whi, int64_t pl0, int64_t pl1) { \
    const int64_t *a = c->a.i;                                                                       \
    int64_t dw = adaptive ? 1 : a[7];                                                                \
    for (int64_t pl = pl0; pl < pl1; pl++) {                                                         \
      const T *xp = x + pl * H * W;                                                                  \
      T *yp = y + pl * OH * OW;                                                                      \
      int64_t *ip = ix + pl * OH * OW;                                                               \
      for (int64_t oh = 0; oh < OH; oh++) {                                                          \
        int64_t h0, h1, dh;                                                                          \
        pf_window(adaptive, a, 0, oh, H, OH, &h0, &h1, &dh);                                         \
        /* Outputs whose whole window lies inside the row [owa, owb) go tap by tap across ow:  \
         * the same scan order per output, but independent outputs side by side (no serial     \
         * dependency chain through one running max). */                                        \
        int64_t owa = OW, owb = OW;                                                                  \
        if (!adaptive) {                                                                             \
          int64_t sw = a[3], pw = a[5], kw = a[1];                                                   \
          owa = (pw + sw - 1) / sw;                                                                  \
          owb = W - 1 + pw - (kw - 1) * dw >= 0 ? (W - 1 + pw - (kw - 1) * dw) / sw + 1 : 0;         \
          if (owb > OW) owb = OW;                                                                    \
          if (owa > owb) owa = owb = OW;                                                             \
          if (owb > owa && !pf_interior_##T(xp, yp + oh * OW, ip + oh * OW, W, h0, h1, dh, kw, dw, pw, sw, \
                                            owa, owb, H * W)) {                                      \
            T *yr = yp + oh * OW;                                                                    \
            int64_t *ir = ip + oh * OW;                                                              \
            for (int64_t ow = owa; ow < owb; ow++) {                                                 \
              yr[ow] = (T)-INFINITY;                                                                 \
              ir[ow] = h0 * W + ow * sw - pw;                                                        \
            }                                                                                        \
            for (int64_t h = h0; h < h1; h += dh)                                                    \
              for (int64_t t = 0; t < kw; t++) {                                                     \
                int64_t off = h * W + t * dw - pw;                                                   \
                const T *xs = xp + off;                                                              \
                for (int64_t ow = owa; ow < owb; ow++) {                                             \
                  /* selects through masks: compilers turn ?: here into unpredictable branches */    \
                  T v = xs[ow * sw], bv = yr[ow];                                                    \
                  U m = (U)0 - (U)(!(v <= bv) & (bv == bv)), vb, bb;                                 \
                  memcpy(&vb, &v, sizeof vb);                                                        \
                  memcpy(&bb, &bv, sizeof bb);                                                       \
                  bb = (vb & m) | (bb & ~m);                                                         \
                  memcpy(&yr[ow], &bb, sizeof bb);                                                   \
                  uint64_t im = (uint64_t)0 - (uint64_t)(m & 1);                                     \
                  ir[ow] = (int64_t)(((uint64_t)(off + ow * sw) & im) | ((uint64_t)ir[ow] & ~im));   \
                }                                                                                    \
              }                                                                                      \
          }                                                                                          \
        }                                                                                            \
        for (int64_t ow = 0; ow < OW; ow++) {                                                        \
          if (ow == owa) ow = owb;                                                                   \
          if (ow >= OW) break;                                                                       \
          int64_t w0 = wlo[ow], w1 = whi[ow];                                                        \
          int64_t best = h0 * W + w0;                                                                \
          T bv = (T)-INFINITY;                                                                       \
          for (int64_t h = h0; h < h1; h += dh) {                                                    \
            const T *row = xp + h * W;                                                               \
            for (int64_t w = w0; w < w1; w += dw) {                                                  \
              /* take v if v > bv or v is NaN, unless a NaN was already taken (it ends the scan) */ \
              T v = row[w];                                                                          \
              int take = !(v <= bv) & (bv == bv);                                                    \
              bv = take ? v : bv;                                                                    \
              best = take ? h * W + w : best;                                                        \
            }                                                                                        \
          }                                                                                          \
          yp[oh * OW + ow] = bv;                                                                     \
          ip[oh * OW + ow] = best;                                                                   \
        }                                                                                            \
      }                                                                                              \
    }                                                                                                \
  }
PF_MAXPOOL(pf_max_f32, float, uint32_t)
PF_MAXPOOL(pf_max_f64, double, uint64_t)

typedef struct {
  const ct_call *c;
  bool adaptive, dbl;
  const void *x;
  void *y;
  int64_t *ix;
  int64_t H, W, OH, OW;
  int64_t *wlo, *whi;
} pf_max_ctx;

static void pf_max_range(void *v, int64_t b, int64_t e) {
  pf_max_ctx *m = v;
  if (m->dbl) pf_max_f64(m->c, m->adaptive, m->x, m->y, m->ix, m->H, m->W, m->OH, m->OW, m->wlo, m->whi, b, e);
  else pf_max_f32(m->c, m->adaptive, m->x, m->y, m->ix, m->H, m->W, m->OH, m->OW, m->wlo, m->whi, b, e);
}

/* float32 3x3 stride-2 max pool (dilation 1; ResNet's stem, 112x112 -> 56x56), separable: per plane
 * every input row's max over each window's 3 columns (value and flat index), then each output's max
 * over its rows' results. Exact and equal to the scan above: a row's result is its first maximum (or
 * first NaN), and combining rows in order with the same take rule (later row only if greater, or NaN
 * over a number) gives the window's first maximum / first NaN; an all -inf window keeps the index
 * of its first tap (the scan's initial index). 8 outputs at a time with the compilers' vector types
 * (AVX2 in the x86-64 clone); scalar at the left edge and the last < 8. Scratch: 2 H OW + W + 32 floats. */
/* scalar row maxima of outputs [a, b) of input row h (the edges, and what the vectors leave) */
static inline void pf_m3_row(const float *row, float *rv, int32_t *ri, int64_t h, int64_t W, int64_t pw,
                             const int32_t *wlo, int64_t a, int64_t b) {
  for (int64_t ow = a; ow < b; ow++) {
    int64_t w0 = 2 * ow - pw, w1 = w0 + 3;
    if (w0 < 0) w0 = 0;
    if (w1 > W) w1 = W;
    float bv = -INFINITY;
    int32_t bi = (int32_t)(h * W + wlo[ow]);
    for (int64_t w = w0; w < w1; w++) {
      float v = row[w];
      if (!(v <= bv) && bv == bv) bv = v, bi = (int32_t)(h * W + w);
    }
    rv[ow] = bv;
    ri[ow] = bi;
  }
}
typedef float pf_v8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef int32_t pf_i8 __attribute__((vector_size(32), aligned(4), may_alias));
#define PF_V8(p) (*(const pf_v8 *)(const void *)(p))
#define PF_I8(p) (*(const pf_i8 *)(const void *)(p))
#define DEFINE_PF_MAX3S2(SUF, ATTR)                                                                       \
  ATTR static void pf_max3s2_##SUF(const float *x, float *y, int64_t *ix, int64_t H, int64_t W, int64_t OH,   \
                                   int64_t OW, int64_t ph, int64_t pw, const int32_t *wlo, int64_t pl0,       \
                                   int64_t pl1, float *hv, int32_t *hi, float *pr) {                          \
    /* the vector loop reads columns 2 ow - pw .. 2 ow - pw + 17 of the row copied into pr, padded with   \
     * -inf past W (never taken: -inf <= anything but NaN, and nothing is taken over a NaN) */            \
    int64_t va = (pw + 1) / 2 < OW ? (pw + 1) / 2 : OW;                                                   \
    for (int64_t i = W; i < W + 32; i++) pr[i] = -INFINITY;                                               \
    for (int64_t pl = pl0; pl < pl1; pl++) {                                                              \
      const float *xp = x + pl * H * W;                                                                   \
      for (int64_t h = 0; h < H; h++) {                                                                   \
        const float *row = xp + h * W;                                                                    \
        float *rv = hv + h * OW;                                                                          \
        int32_t *ri = hi + h * OW;                                                                        \
        pf_m3_row(row, rv, ri, h, W, pw, wlo, 0, va);                                                     \
        memcpy(pr, row, sizeof(float) * (size_t)W);                                                       \
        int64_t ow = va;                                                                                  \
        for (; ow + 8 <= OW; ow += 8) {                                                                   \
          const float *b = pr + 2 * ow - pw;                                                              \
          pf_v8 lo = PF_V8(b), hi8 = PF_V8(b + 8), lo2 = PF_V8(b + 2), hi2 = PF_V8(b + 10);                \
          pf_v8 t0 = __builtin_shufflevector(lo, hi8, 0, 2, 4, 6, 8, 10, 12, 14);                         \
          pf_v8 t1 = __builtin_shufflevector(lo, hi8, 1, 3, 5, 7, 9, 11, 13, 15);                         \
          pf_v8 t2 = __builtin_shufflevector(lo2, hi2, 0, 2, 4, 6, 8, 10, 12, 14);                        \
          pf_i8 c0 = (int32_t)(h * W + 2 * ow - pw) + (pf_i8){0, 2, 4, 6, 8, 10, 12, 14};                 \
          pf_v8 bv = t0;                                                                                  \
          pf_i8 bi = c0; /* tap 0 against -inf: taken, or (-inf) the initial index, c0 too */             \
          pf_i8 m = ~(t1 <= bv) & (bv == bv);                                                             \
          bv = (pf_v8)(((pf_i8)t1 & m) | ((pf_i8)bv & ~m));                                               \
          bi = ((c0 + 1) & m) | (bi & ~m);                                                                \
          m = ~(t2 <= bv) & (bv == bv);                                                                   \
          bv = (pf_v8)(((pf_i8)t2 & m) | ((pf_i8)bv & ~m));                                               \
          bi = ((c0 + 2) & m) | (bi & ~m);                                                                \
          *(pf_v8 *)(void *)(rv + ow) = bv;                                                               \
          *(pf_i8 *)(void *)(ri + ow) = bi;                                                               \
        }                                                                                                 \
        pf_m3_row(row, rv, ri, h, W, pw, wlo, ow, OW);                                                    \
      }                                                                                                   \
      float *yp = y + pl * OH * OW;                                                                       \
      int64_t *ip = ix + pl * OH * OW;                                                                    \
      for (int64_t oh = 0; oh < OH; oh++) {                                                               \
        int64_t h0 = 2 * oh - ph, h1 = h0 + 3;                                                            \
        if (h0 < 0) h0 = 0;                                                                               \
        if (h1 > H) h1 = H;                                                                               \
        float *yr = yp + oh * OW;                                                                         \
        int64_t *ir = ip + oh * OW, ow = 0;                                                               \
        for (; ow + 8 <= OW; ow += 8) {                                                                   \
          pf_v8 bv = PF_V8(hv + h0 * OW + ow);                                                            \
          pf_i8 bi = PF_I8(hi + h0 * OW + ow); /* the first row's result: taken from -inf, or keeps    \
                                                  its initial index, which is the window's */          \
          for (int64_t h = h0 + 1; h < h1; h++) {                                                         \
            pf_v8 v = PF_V8(hv + h * OW + ow);                                                            \
            pf_i8 vi = PF_I8(hi + h * OW + ow);                                                           \
            pf_i8 m = ~(v <= bv) & (bv == bv);                                                            \
            bv = (pf_v8)(((pf_i8)v & m) | ((pf_i8)bv & ~m));                                              \
            bi = (vi & m) | (bi & ~m);                                                                    \
          }                                                                                               \
          *(pf_v8 *)(void *)(yr + ow) = bv;                                                               \
          for (int j = 0; j < 8; j++) ir[ow + j] = bi[j];                                                 \
        }                                                                                                 \
        for (; ow < OW; ow++) {                                                                           \
          float bv = hv[h0 * OW + ow];                                                                    \
          int32_t bi = hi[h0 * OW + ow];                                                                  \
          for (int64_t h = h0 + 1; h < h1; h++) {                                                         \
            float v = hv[h * OW + ow];                                                                    \
            if (!(v <= bv) && bv == bv) bv = v, bi = hi[h * OW + ow];                                     \
          }                                                                                               \
          yr[ow] = bv;                                                                                    \
          ir[ow] = bi;                                                                                    \
        }                                                                                                 \
      }                                                                                                   \
    }                                                                                                     \
  }
DEFINE_PF_MAX3S2(port, )
#if defined(__x86_64__)
DEFINE_PF_MAX3S2(avx2, __attribute__((target("avx2,fma"))))
#endif

typedef struct {
  const float *x;
  float *y;
  int64_t *ix;
  int64_t H, W, OH, OW, ph, pw;
  const int32_t *wlo;
  int failed;
} pf_m3_ctx;

static void pf_max3s2_range(void *v, int64_t b, int64_t e) {
  pf_m3_ctx *m = v;
  float *hv = malloc(sizeof(float) * (size_t)(2 * m->H * m->OW + m->W + 32));
  if (!hv) {
    __atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  int32_t *hi = (int32_t *)(void *)(hv + m->H * m->OW);
  float *pr = hv + 2 * m->H * m->OW; /* one padded input row */
#if defined(__x86_64__)
  if (ct_simd_active() >= CT_SIMD_AVX2)
    pf_max3s2_avx2(m->x, m->y, m->ix, m->H, m->W, m->OH, m->OW, m->ph, m->pw, m->wlo, b, e, hv, hi, pr);
  else
#endif
    pf_max3s2_port(m->x, m->y, m->ix, m->H, m->W, m->OH, m->OW, m->ph, m->pw, m->wlo, b, e, hv, hi, pr);
  free(hv);
}

static bool pf_dtype_ok(const ct_tensor *t, ct_dtype dt) {
  return t->dtype == dt && (dt == CT_FLOAT32 || dt == CT_FLOAT64) && t->storage->device.type == CT_DEVICE_CPU &&
         ct_is_contiguous(t);
}

/* Returns true when it ran (status in *st); false: the caller runs the reference. */
static bool pf_maxpool(const ct_call *c, bool adaptive, ct_status *st) {
  const ct_tensor *x = c->in[0];
  ct_tensor *y = c->out[0], *ix = c->out[1];
  if (!pf_enabled() || x->ndim != 4 || !pf_dtype_ok(x, x->dtype) || !pf_dtype_ok(y, x->dtype) ||
      ix->dtype != CT_INT64 || !ct_is_contiguous(ix))
    return false;
  pf_max_ctx m = {c, adaptive, x->dtype == CT_FLOAT64, ct_cpu_ptr(x), ct_cpu_ptr(y), (int64_t *)ct_cpu_ptr(ix),
                  x->shape[2], x->shape[3], y->shape[2], y->shape[3], NULL, NULL};
  m.wlo = nn_alloc(2 * m.OW, sizeof(int64_t));
  if (!m.wlo) {
    *st = ct_last_status();
    return true;
  }
  m.whi = m.wlo + m.OW;
  for (int64_t ow = 0; ow < m.OW; ow++) {
    int64_t step;
    pf_window(adaptive, c->a.i, 1, ow, m.W, m.OW, &m.wlo[ow], &m.whi[ow], &step);
  }
  const int64_t *a = c->a.i;
  if (!adaptive && !m.dbl && a[0] == 3 && a[1] == 3 && a[2] == 2 && a[3] == 2 && a[6] == 1 && a[7] == 1 &&
      a[4] <= 1 && a[5] <= 1 && m.H * m.W < ((int64_t)1 << 31) && pf_m3_enabled()) {
    /* the separable 3x3 stride-2 kernel (ceil_mode's extra window, if any, is clipped like the others) */
    int32_t *w32 = (int32_t *)(void *)m.whi; /* whi is not needed here: reuse it for int32 wlo */
    for (int64_t ow = 0; ow < m.OW; ow++) w32[ow] = (int32_t)m.wlo[ow];
    pf_m3_ctx q = {(const float *)(const void *)ct_cpu_ptr(x), (float *)(void *)ct_cpu_ptr(y), (int64_t *)ct_cpu_ptr(ix), m.H, m.W, m.OH, m.OW, a[4], a[5], w32, 0};
    ct_parallel_for(x->shape[0] * x->shape[1], 1 + 16384 / (m.H * m.OW + m.OH * m.OW + 1), pf_max3s2_range, &q);
    free(m.wlo);
    *st = q.failed ? CT_ERR(CT_ERR_OOM, "CPU out of memory: max_pool2d scratch") : CT_OK;
    return true;
  }
  ct_parallel_for(x->shape[0] * x->shape[1], 1 + 4096 / (m.OH * m.OW + 1), pf_max_range, &m);
  free(m.wlo);
  *st = CT_OK;
  return true;
}

/* Max pools' input gradient: per plane, zero then scatter-add g at the indices. An index out
 * of its plane makes the caller rerun the reference, which reports the first bad one. */
typedef struct {
  const void *g;
  const int64_t *ix;
  void *gx;
  int64_t isz, osz;
  bool dbl;
  int bad;
} pf_scat_ctx;

#define PF_SCATTER(NAME, T)                                                   \
  static void NAME(pf_scat_ctx *s, int64_t b, int64_t e) {                    \
    for (int64_t pl = b; pl < e; pl++) {                                      \
      T *o = (T *)s->gx + pl * s->isz;                                        \
      const T *g = (const T *)s->g + pl * s->osz;                             \
      const int64_t *ix = s->ix + pl * s->osz;                                \
      memset(o, 0, (size_t)s->isz * sizeof(T));                               \
      for (int64_t i = 0; i < s->osz; i++) {                                  \
        int64_t k = ix[i];                                                    \
        if (k < 0 || k >= s->isz) {                                           \
          __atomic_store_n(&s->bad, 1, __ATOMIC_RELAXED);                     \
          return;                                                             \
        }                                                                     \
        o[k] += g[i];                                                         \
      }                                                                       \
    }                                                                         \
  }
PF_SCATTER(pf_scat_f32, float)
PF_SCATTER(pf_scat_f64, double)

static void pf_scat_range(void *v, int64_t b, int64_t e) {
  pf_scat_ctx *s = v;
  if (s->dbl) pf_scat_f64(s, b, e);
  else pf_scat_f32(s, b, e);
}

static bool pf_max_scatter(const ct_call *c, ct_status *st) {
  ct_tensor *o = c->out[0];
  const ct_tensor *g = c->in[0], *ix = c->in[1];
  if (!pf_enabled() || o->ndim != 4 || !pf_dtype_ok(o, o->dtype) || !pf_dtype_ok(g, o->dtype) ||
      ix->dtype != CT_INT64 || !ct_is_contiguous(ix) || ix->storage->device.type != CT_DEVICE_CPU)
    return false;
  int64_t planes = o->shape[0] * o->shape[1], m = ct_numel(g);
  if (planes == 0 || ct_numel(o) == 0 || m % planes || ct_numel(ix) != m) return false;
  pf_scat_ctx s = {ct_cpu_ptr(g), (const int64_t *)ct_cpu_ptr(ix), ct_cpu_ptr(o), o->shape[2] * o->shape[3], m / planes,
                   o->dtype == CT_FLOAT64, 0};
  ct_parallel_for(planes, 1 + 4096 / (s.isz + s.osz + 1), pf_scat_range, &s);
  if (__atomic_load_n(&s.bad, __ATOMIC_RELAXED)) return false;
  *st = CT_OK;
  return true;
}

#endif /* CT_POOL_FAST_H */

/* Second inclusion (with CT_POOL_FAST_AVG defined, after kernels_pool.c's tap lists): */
#if defined(CT_POOL_FAST_AVG) && !defined(CT_POOL_FAST_AVG_DONE)
#define CT_POOL_FAST_AVG_DONE
/* avg_pool2d / adaptive_avg_pool2d forward and backward from the reference's tap lists
 * (contiguous index ranges of weight 1 for these two ops). Forward: each output sums its
 * window's rows in the dtype; backward: each output's g / divisor is added over its window. */
typedef struct {
  const taps *th, *tw;
  int64_t H, W, OH, OW;
  const void *src;
  void *dst;
  bool dbl, fwd;
} pf_avg_ctx;

#define PF_AVG(NAME, T)                                                                     \
  static void NAME(pf_avg_ctx *l, int64_t b, int64_t e) {                                   \
    const taps *th = l->th, *tw = l->tw;                                                    \
    for (int64_t pl = b; pl < e; pl++) {                                                    \
      if (l->fwd) {                                                                         \
        const T *x = (const T *)l->src + pl * l->H * l->W;                                  \
        T *y = (T *)l->dst + pl * l->OH * l->OW;                                            \
        for (int64_t oh = 0; oh < l->OH; oh++) {                                            \
          int64_t a0 = th->start[oh], a1 = th->start[oh + 1];                               \
          for (int64_t ow = 0; ow < l->OW; ow++) {                                          \
            int64_t b0 = tw->start[ow], b1 = tw->start[ow + 1];                             \
            T s = 0;                                                                        \
            if (b1 > b0) {                                                                  \
              int64_t w0 = tw->idx[b0], nw = b1 - b0;                                       \
              for (int64_t a = a0; a < a1; a++) {                                           \
                const T *row = x + th->idx[a] * l->W + w0;                                  \
                for (int64_t k = 0; k < nw; k++) s += row[k];                               \
              }                                                                             \
            }                                                                               \
            y[oh * l->OW + ow] = s / (T)(th->div[oh] * tw->div[ow]);                        \
          }                                                                                 \
        }                                                                                   \
      } else {                                                                              \
        T *gx = (T *)l->dst + pl * l->H * l->W;                                             \
        const T *g = (const T *)l->src + pl * l->OH * l->OW;                                \
        memset(gx, 0, (size_t)(l->H * l->W) * sizeof(T));                                   \
        for (int64_t oh = 0; oh < l->OH; oh++) {                                            \
          int64_t a0 = th->start[oh], a1 = th->start[oh + 1];                               \
          for (int64_t ow = 0; ow < l->OW; ow++) {                                          \
            int64_t b0 = tw->start[ow], b1 = tw->start[ow + 1];                             \
            if (b1 <= b0) continue;                                                         \
            T v = g[oh * l->OW + ow] / (T)(th->div[oh] * tw->div[ow]);                      \
            int64_t w0 = tw->idx[b0], nw = b1 - b0;                                         \
            for (int64_t a = a0; a < a1; a++) {                                             \
              T *row = gx + th->idx[a] * l->W + w0;                                         \
              for (int64_t k = 0; k < nw; k++) row[k] += v;                                 \
            }                                                                               \
          }                                                                                 \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
  }
PF_AVG(pf_avg_f32, float)
PF_AVG(pf_avg_f64, double)

static void pf_avg_range(void *v, int64_t b, int64_t e) {
  pf_avg_ctx *l = v;
  if (l->dbl) pf_avg_f64(l, b, e);
  else pf_avg_f32(l, b, e);
}

/* Whether the fast average path applies to this call (op and tensors). */
static bool pf_avg_ok(const ct_call *c, int fop) {
  const ct_tensor *in = c->in[0];
  const ct_tensor *o = c->out[0];
  return pf_enabled() && (fop == CT_OP_avg_pool2d || fop == CT_OP_adaptive_avg_pool2d) && in->ndim == 4 &&
         o->ndim == 4 && pf_dtype_ok(in, in->dtype) && pf_dtype_ok(o, in->dtype);
}
#endif
