/* Matrix-vector products for GPT decoding (a few rows of activations against a weight), used by
 * the cached forward in gpt.c instead of the packed GEMM: with M = 1 the GEMM packs the whole weight
 * into its panel layout for every token (reading it twice and writing it once: ~3x the memory
 * traffic of one read, and the decode step is bound by reading the weights). Here each weight
 * element is read once per call, whatever the number of rows (<= GPT_MV_MAX_ROWS).
 * Two layouts: W [K, N] (Conv1D's [in, out]: y = x W, "axpy" form, each column accumulates k in
 * increasing order, with fused multiply-adds where the CPU has them) and W [N, K] (the
 * tied classifier, y = x W^T: dot products of rows, 16 partial sums per row). Columns / rows of W
 * go over the thread pool in blocks; the result does not depend on the thread count. */
#include "models/gpt_internal.h"
#include "backend/cpu/simd/simd.h"
#include "core/internal.h"
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define NBLK 512 /* columns of W [K, N] per task: the rows' accumulators stay in L1 */
#define TBLK 256 /* rows of W [N, K] per task */

typedef struct {
  const float *x, *w, *b;
  float *y;
  int64_t rows, K, N;
  int isa;
} mv_ctx;

/* ---- portable C (also WebAssembly, which has no fused multiply-add: a libm fmaf there is a
 * software routine, so plain multiply-add) ----
 * W [K, N]: y[r, j0..j1) = sum_k x[r, k] W[k, j] (+ b[j]) */
static void axpy_block_c(const mv_ctx *c, int64_t j0, int64_t n) {
  float acc[GPT_MV_MAX_ROWS][NBLK];
  for (int64_t r = 0; r < c->rows; r++) memset(acc[r], 0, (size_t)n * sizeof(float));
  for (int64_t k = 0; k < c->K; k++) {
    const float *w = c->w + k * c->N + j0;
    for (int64_t r = 0; r < c->rows; r++) {
      float xv = c->x[r * c->K + k];
      for (int64_t j = 0; j < n; j++) acc[r][j] += xv * w[j];
    }
  }
  for (int64_t r = 0; r < c->rows; r++)
    for (int64_t j = 0; j < n; j++) c->y[r * c->N + j0 + j] = acc[r][j] + (c->b ? c->b[j0 + j] : 0.0f);
}

/* ---- W [N, K]: y[r, v] = sum_k x[r, k] W[v, k] ---- */
static void dot_block_c(const mv_ctx *c, int64_t v0, int64_t n) {
  for (int64_t v = v0; v < v0 + n; v++) {
    const float *w = c->w + v * c->K;
    for (int64_t r = 0; r < c->rows; r++) {
      const float *x = c->x + r * c->K;
      float s[16] = {0};
      int64_t k = 0;
      for (; k + 16 <= c->K; k += 16)
        for (int i = 0; i < 16; i++) s[i] += x[k + i] * w[k + i];
      for (int i = 0; k < c->K; k++, i++) s[i] += x[k] * w[k];
      float t = 0;
      for (int i = 0; i < 16; i++) t += s[i];
      c->y[r * c->N + v] = t + (c->b ? c->b[v] : 0.0f);
    }
  }
}

#if defined(__x86_64__)
#define TGT512 __attribute__((target("avx512f,avx2,fma")))
TGT512 static void axpy_block_512(const mv_ctx *c, int64_t j0, int64_t n) {
  float acc[GPT_MV_MAX_ROWS][NBLK] __attribute__((aligned(64)));
  int64_t nv = n / 16 * 16;
  __mmask16 tail = (__mmask16)((1u << (n - nv)) - 1);
  for (int64_t r = 0; r < c->rows; r++) memset(acc[r], 0, (size_t)n * sizeof(float));
  int64_t k = 0, N = c->N;
  for (; k + 4 <= c->K; k += 4) { /* four rows of W per pass over the accumulators (k stays in order) */
    const float *w = c->w + k * N + j0;
    for (int64_t r = 0; r < c->rows; r++) {
      const float *xr = c->x + r * c->K + k;
      __m512 x0 = _mm512_set1_ps(xr[0]), x1 = _mm512_set1_ps(xr[1]), x2 = _mm512_set1_ps(xr[2]),
             x3 = _mm512_set1_ps(xr[3]);
      float *a = acc[r];
      int64_t j = 0;
      for (; j < nv; j += 16) {
        __m512 s = _mm512_fmadd_ps(x0, _mm512_loadu_ps(w + j), _mm512_load_ps(a + j));
        s = _mm512_fmadd_ps(x1, _mm512_loadu_ps(w + N + j), s);
        s = _mm512_fmadd_ps(x2, _mm512_loadu_ps(w + 2 * N + j), s);
        _mm512_store_ps(a + j, _mm512_fmadd_ps(x3, _mm512_loadu_ps(w + 3 * N + j), s));
      }
      if (tail) {
        __m512 s = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(tail, w + j), _mm512_maskz_loadu_ps(tail, a + j));
        s = _mm512_fmadd_ps(x1, _mm512_maskz_loadu_ps(tail, w + N + j), s);
        s = _mm512_fmadd_ps(x2, _mm512_maskz_loadu_ps(tail, w + 2 * N + j), s);
        _mm512_mask_storeu_ps(a + j, tail, _mm512_fmadd_ps(x3, _mm512_maskz_loadu_ps(tail, w + 3 * N + j), s));
      }
    }
  }
  for (; k < c->K; k++) {
    const float *w = c->w + k * N + j0;
    for (int64_t r = 0; r < c->rows; r++) {
      __m512 xv = _mm512_set1_ps(c->x[r * c->K + k]);
      float *a = acc[r];
      int64_t j = 0;
      for (; j < nv; j += 16)
        _mm512_store_ps(a + j, _mm512_fmadd_ps(xv, _mm512_loadu_ps(w + j), _mm512_load_ps(a + j)));
      if (tail)
        _mm512_mask_storeu_ps(a + j, tail,
                              _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(tail, w + j), _mm512_maskz_loadu_ps(tail, a + j)));
    }
  }
  for (int64_t r = 0; r < c->rows; r++)
    for (int64_t j = 0; j < n; j++) c->y[r * c->N + j0 + j] = acc[r][j] + (c->b ? c->b[j0 + j] : 0.0f);
}

TGT512 static void dot_block_512(const mv_ctx *c, int64_t v0, int64_t n) {
  int64_t kv = c->K / 16 * 16;
  __mmask16 tail = (__mmask16)((1u << (c->K - kv)) - 1);
  for (int64_t v = v0; v < v0 + n; v++) {
    const float *w = c->w + v * c->K;
    for (int64_t r = 0; r < c->rows; r++) {
      const float *x = c->x + r * c->K;
      __m512 s = _mm512_setzero_ps();
      int64_t k = 0;
      for (; k < kv; k += 16) s = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), _mm512_loadu_ps(w + k), s);
      if (tail) s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x + k), _mm512_maskz_loadu_ps(tail, w + k), s);
      c->y[r * c->N + v] = _mm512_reduce_add_ps(s) + (c->b ? c->b[v] : 0.0f);
    }
  }
}

#define TGT256 __attribute__((target("avx2,fma")))
TGT256 static void axpy_block_256(const mv_ctx *c, int64_t j0, int64_t n) {
  float acc[GPT_MV_MAX_ROWS][NBLK] __attribute__((aligned(32)));
  int64_t nv = n / 8 * 8;
  for (int64_t r = 0; r < c->rows; r++) memset(acc[r], 0, (size_t)n * sizeof(float));
  for (int64_t k = 0; k < c->K; k++) {
    const float *w = c->w + k * c->N + j0;
    for (int64_t r = 0; r < c->rows; r++) {
      float xs = c->x[r * c->K + k];
      __m256 xv = _mm256_set1_ps(xs);
      float *a = acc[r];
      int64_t j = 0;
      for (; j < nv; j += 8) _mm256_store_ps(a + j, _mm256_fmadd_ps(xv, _mm256_loadu_ps(w + j), _mm256_load_ps(a + j)));
      for (; j < n; j++) a[j] = __builtin_fmaf(xs, w[j], a[j]);
    }
  }
  for (int64_t r = 0; r < c->rows; r++)
    for (int64_t j = 0; j < n; j++) c->y[r * c->N + j0 + j] = acc[r][j] + (c->b ? c->b[j0 + j] : 0.0f);
}

TGT256 static void dot_block_256(const mv_ctx *c, int64_t v0, int64_t n) {
  int64_t kv = c->K / 8 * 8;
  for (int64_t v = v0; v < v0 + n; v++) {
    const float *w = c->w + v * c->K;
    for (int64_t r = 0; r < c->rows; r++) {
      const float *x = c->x + r * c->K;
      __m256 s = _mm256_setzero_ps();
      int64_t k = 0;
      for (; k < kv; k += 8) s = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(w + k), s);
      float t[8];
      _mm256_storeu_ps(t, s);
      float tot = ((t[0] + t[4]) + (t[1] + t[5])) + ((t[2] + t[6]) + (t[3] + t[7]));
      for (; k < c->K; k++) tot = __builtin_fmaf(x[k], w[k], tot);
      c->y[r * c->N + v] = tot + (c->b ? c->b[v] : 0.0f);
    }
  }
}
#endif

static void axpy_range(void *vctx, int64_t t0, int64_t t1) {
  const mv_ctx *c = vctx;
  for (int64_t t = t0; t < t1; t++) {
    int64_t j0 = t * NBLK, n = c->N - j0 < NBLK ? c->N - j0 : NBLK;
#if defined(__x86_64__)
    if (c->isa == CT_SIMD_AVX512) {
      axpy_block_512(c, j0, n);
      continue;
    }
    if (c->isa == CT_SIMD_AVX2) {
      axpy_block_256(c, j0, n);
      continue;
    }
#endif
    axpy_block_c(c, j0, n);
  }
}

static void dot_range(void *vctx, int64_t t0, int64_t t1) {
  const mv_ctx *c = vctx;
  for (int64_t t = t0; t < t1; t++) {
    int64_t v0 = t * TBLK, n = c->N - v0 < TBLK ? c->N - v0 : TBLK;
#if defined(__x86_64__)
    if (c->isa == CT_SIMD_AVX512) {
      dot_block_512(c, v0, n);
      continue;
    }
    if (c->isa == CT_SIMD_AVX2) {
      dot_block_256(c, v0, n);
      continue;
    }
#endif
    dot_block_c(c, v0, n);
  }
}

void gpt_matvec_f32(const float *x, int64_t rows, int64_t K, const float *w, int64_t N, bool w_nk, const float *b,
                    float *y) {
  mv_ctx c = {x, w, b, y, rows, K, N, ct_fast_enabled() ? (int)ct_simd_active() : (int)CT_SIMD_PORTABLE};
  int64_t blk = w_nk ? TBLK : NBLK, tasks = (N + blk - 1) / blk;
  /* a task reads blk * K weights: below ~64K of them one thread is cheaper than waking the pool */
  int64_t grain = blk * K >= 65536 ? 1 : (65536 + blk * K - 1) / (blk * K);
  ct_parallel_for(tasks, grain, w_nk ? dot_range : axpy_range, &c);
}
