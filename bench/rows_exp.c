/* Experiment harness (issue 3, session 8; not part of any build): stand-alone AVX-512 copies of the
 * 16M-float softmax row pipeline of fast_ew_impl.h (softmax_rows_nt) in variants, against memcpy, an
 * NT-store copy and a streamed e^x, all interleaved in one process with the order rotating every
 * round; median and minimum process CPU time per variant, ratio = memcpy median / variant median.
 * Variants: prefetch distance (rows) and hint, none; regular instead of NT stores; the second scratch
 * row offset off the 4 KiB alias of the first (pipe_off*); no exponential at all (pipe_nocomp: the cost
 * of the memory pattern alone); one row at a time (max pass, exp pass, store pass: row_*).
 * Results: bench/results/s8_rows.md. HUGE=1 madvises every buffer MADV_HUGEPAGE.
 * Build: cc -O3 -march=native -Ibench bench/rows_exp.c -lm -o /tmp/rows_exp
 * Run:   /tmp/rows_exp [rounds] [name-prefix,name-prefix,...] */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "bench_clock.h"

static const float exp2_t32[32] __attribute__((aligned(64))) = {
    1, 1.0218972, 1.04427373, 1.06714046, 1.09050775, 1.1143868, 1.13878858, 1.1637249,
    1.18920708, 1.21524739, 1.24185777, 1.26905096, 1.29683959, 1.32523668, 1.35425556, 1.38390994,
    1.41421354, 1.44518077, 1.47682619, 1.50916445, 1.54221082, 1.5759809, 1.61049032, 1.64575553,
    1.68179286, 1.71861935, 1.75625217, 1.79470909, 1.8340081, 1.87416768, 1.91520655, 1.95714414};

static inline __m512 expsm(__m512 x) {
  __m512 xc = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  const float magic = 393216.0f;
  __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(magic));
  __m512 kq = _mm512_sub_ps(t, _mm512_set1_ps(magic));
  __m512 r = _mm512_fmadd_ps(kq, _mm512_set1_ps(-0.693147182f), xc);
  __m512 tj = _mm512_permutex2var_ps(_mm512_load_ps(exp2_t32), _mm512_castps_si512(t), _mm512_load_ps(exp2_t32 + 16));
  __m512 p = _mm512_fmadd_ps(r, _mm512_set1_ps(0.50000113f), _mm512_set1_ps(1.0000147f));
  return _mm512_scalef_ps(_mm512_fmadd_ps(_mm512_mul_ps(tj, r), p, tj), kq);
}

static int G_ahead = 1, G_hint = 3, G_nt = 1, G_nocomp = 0, G_pfall = 0;
#define VLOCALS const int V_ahead = G_ahead, V_hint = G_hint, V_nt = G_nt, V_nocomp = G_nocomp, V_pfall = G_pfall; \
  (void)V_ahead, (void)V_hint, (void)V_nt, (void)V_nocomp, (void)V_pfall
#define PF(p)                                                          \
  do {                                                                 \
    if (V_hint == 3) _mm_prefetch((const char *)(p), _MM_HINT_T0);     \
    else if (V_hint == 2) _mm_prefetch((const char *)(p), _MM_HINT_T1); \
    else if (V_hint == 1) _mm_prefetch((const char *)(p), _MM_HINT_T2); \
    else if (V_hint == 0) _mm_prefetch((const char *)(p), _MM_HINT_NTA); \
  } while (0)
#define ST(p, v)                     \
  do {                               \
    if (V_nt) _mm512_stream_ps(p, v); \
    else _mm512_store_ps(p, v);      \
  } while (0)

/* the library's three-stage pipeline: max of row r, exp+sum of r-1 (L1), output of r-2 */
static void sm_pipe(const float *x, float *y, int64_t rows, int64_t n) {
  VLOCALS;
  static float scr_[2 * 2048 + 256] __attribute__((aligned(64)));
  float *scr[2] = {scr_, scr_ + 2048 + V_pfall}; /* V_pfall: the second half's offset, floats */
  __m512 pa = _mm512_setzero_ps();
  float m_e = 0;
  for (int64_t r = 0; r < rows + 2; r++) {
    const float *xm = r < rows ? x + r * n : NULL;
    const float *xe = r >= 1 && r <= rows ? x + (r - 1) * n : NULL;
    float *yo = r >= 2 ? y + (r - 2) * n : NULL, *se = scr[(r + 1) & 1];
    const float *so = scr[r & 1];
    const float *pf = V_hint >= 0 && r + V_ahead < rows ? x + (r + V_ahead) * n : NULL;
    __m512 q0 = _mm512_set1_ps(-INFINITY), q1 = q0, q2 = q0, q3 = q0;
    __m512 vm = _mm512_set1_ps(m_e), a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n; i += 64) {
      if (pf) {
        { PF(pf + i); PF(pf + i + 16); PF(pf + i + 32); PF(pf + i + 48); }
      }
      if (xm) {
        q0 = _mm512_max_ps(_mm512_load_ps(xm + i), q0), q1 = _mm512_max_ps(_mm512_load_ps(xm + i + 16), q1);
        q2 = _mm512_max_ps(_mm512_load_ps(xm + i + 32), q2), q3 = _mm512_max_ps(_mm512_load_ps(xm + i + 48), q3);
      }
      if (xe) {
        __m512 e[4];
        for (int k = 0; k < 4; k++) {
          __m512 v = _mm512_sub_ps(_mm512_load_ps(xe + i + 16 * k), vm);
          e[k] = V_nocomp ? v : expsm(v);
          _mm512_store_ps(se + i + 16 * k, e[k]);
        }
        a0 = _mm512_add_ps(a0, e[0]), a1 = _mm512_add_ps(a1, e[1]), a2 = _mm512_add_ps(a2, e[2]), a3 = _mm512_add_ps(a3, e[3]);
      }
      if (yo)
        for (int k = 0; k < 4; k++) ST(yo + i + 16 * k, _mm512_mul_ps(_mm512_load_ps(so + i + 16 * k), pa));
    }
    if (xe) pa = _mm512_set1_ps((float)(1.0 / _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)))));
    if (xm) m_e = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(q0, q1), _mm512_max_ps(q2, q3)));
  }
  _mm_sfence();
}

/* the pipeline without the scratch rows: stage C reads x of row r - 2 from L1 and writes
 * (x - m) - lse (log_softmax's structure, V_pfall = 1) or e^(x - m) / sum recomputed (V_pfall = 2) */
static void sm_pipe2(const float *x, float *y, int64_t rows, int64_t n) {
  VLOCALS;
  __m512 pa = _mm512_setzero_ps(), pb = pa, pm = pa;
  float m_e = 0;
  for (int64_t r = 0; r < rows + 2; r++) {
    const float *xm = r < rows ? x + r * n : NULL;
    const float *xe = r >= 1 && r <= rows ? x + (r - 1) * n : NULL;
    const float *xo = r >= 2 ? x + (r - 2) * n : NULL;
    float *yo = r >= 2 ? y + (r - 2) * n : NULL;
    const float *pf = r + V_ahead < rows ? x + (r + V_ahead) * n : NULL;
    __m512 q0 = _mm512_set1_ps(-INFINITY), q1 = q0, q2 = q0, q3 = q0;
    __m512 vm = _mm512_set1_ps(m_e), a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n; i += 64) {
      if (pf) { PF(pf + i); PF(pf + i + 16); PF(pf + i + 32); PF(pf + i + 48); }
      if (xm) {
        q0 = _mm512_max_ps(_mm512_load_ps(xm + i), q0), q1 = _mm512_max_ps(_mm512_load_ps(xm + i + 16), q1);
        q2 = _mm512_max_ps(_mm512_load_ps(xm + i + 32), q2), q3 = _mm512_max_ps(_mm512_load_ps(xm + i + 48), q3);
      }
      if (xe) {
        __m512 e[4];
        for (int k = 0; k < 4; k++) {
          __m512 v = _mm512_sub_ps(_mm512_load_ps(xe + i + 16 * k), vm);
          e[k] = V_nocomp ? v : expsm(v);
        }
        a0 = _mm512_add_ps(a0, e[0]), a1 = _mm512_add_ps(a1, e[1]), a2 = _mm512_add_ps(a2, e[2]), a3 = _mm512_add_ps(a3, e[3]);
      }
      if (yo)
        for (int k = 0; k < 4; k++) {
          __m512 v = _mm512_load_ps(xo + i + 16 * k);
          __m512 o = V_pfall == 1 ? _mm512_sub_ps(_mm512_sub_ps(v, pm), pb) : _mm512_mul_ps(expsm(_mm512_sub_ps(v, pm)), pa);
          ST(yo + i + 16 * k, o);
        }
    }
    if (xe) {
      float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
      pa = _mm512_set1_ps(1.0f / sum), pb = _mm512_set1_ps(logf(sum)), pm = vm;
    }
    if (xm) m_e = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(q0, q1), _mm512_max_ps(q2, q3)));
  }
  _mm_sfence();
}

/* one row at a time: max pass (memory), exp+sum pass into scratch (L1), scale+store pass */
static void sm_rowwise(const float *x, float *y, int64_t rows, int64_t n) {
  VLOCALS;
  static float scr[2048] __attribute__((aligned(64)));
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    const float *pf = r + V_ahead < rows ? x + (r + V_ahead) * n : NULL;
    __m512 q0 = _mm512_set1_ps(-INFINITY), q1 = q0, q2 = q0, q3 = q0;
    for (int64_t i = 0; i < n; i += 64) {
      q0 = _mm512_max_ps(_mm512_load_ps(xr + i), q0), q1 = _mm512_max_ps(_mm512_load_ps(xr + i + 16), q1);
      q2 = _mm512_max_ps(_mm512_load_ps(xr + i + 32), q2), q3 = _mm512_max_ps(_mm512_load_ps(xr + i + 48), q3);
    }
    __m512 vm = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(q0, q1), _mm512_max_ps(q2, q3))));
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n; i += 64) {
      if (pf && V_pfall == 0) { PF(pf + i); PF(pf + i + 16); PF(pf + i + 32); PF(pf + i + 48); }
      __m512 e[4];
      for (int k = 0; k < 4; k++) {
        __m512 v = _mm512_sub_ps(_mm512_load_ps(xr + i + 16 * k), vm);
        e[k] = V_nocomp ? v : expsm(v);
        _mm512_store_ps(scr + i + 16 * k, e[k]);
      }
      a0 = _mm512_add_ps(a0, e[0]), a1 = _mm512_add_ps(a1, e[1]), a2 = _mm512_add_ps(a2, e[2]), a3 = _mm512_add_ps(a3, e[3]);
    }
    __m512 pa = _mm512_set1_ps((float)(1.0 / _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)))));
    for (int64_t i = 0; i < n; i += 64)
      for (int k = 0; k < 4; k++) ST(yr + i + 16 * k, _mm512_mul_ps(_mm512_load_ps(scr + i + 16 * k), pa));
  }
  _mm_sfence();
}

/* elementwise e^x streamed (what ct_exp's 16M ratio measures), nta prefetch 1024 floats ahead */
static void ew_exp(const float *x, float *y, int64_t rows, int64_t n) {
  VLOCALS;
  int64_t N = rows * n;
  for (int64_t i = 0; i < N; i += 32) {
    _mm_prefetch((const char *)(x + i + 1024), _MM_HINT_NTA);
    _mm_prefetch((const char *)(x + i + 1040), _MM_HINT_NTA);
    __m512 a = expsm(_mm512_sub_ps(_mm512_load_ps(x + i), _mm512_set1_ps(4.0f)));
    __m512 b = expsm(_mm512_sub_ps(_mm512_load_ps(x + i + 16), _mm512_set1_ps(4.0f)));
    ST(y + i, a);
    ST(y + i + 16, b);
  }
  _mm_sfence();
}

/* whether one of the comma-separated items of sel starts name */
static int wanted(const char *sel, const char *name) {
  for (const char *p = sel; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    size_t l = strchr(p, ',') ? (size_t)(strchr(p, ',') - p) : strlen(p);
    if (l && !strncmp(p, name, l)) return 1;
  }
  return 0;
}
typedef struct {
  const char *name;
  int kind, ahead, hint, nt, nocomp, pfall;
} variant;

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 15;
  const char *sel = argc > 2 ? argv[2] : NULL;
  int64_t rows = 16384, n = 1024, N = rows * n;
  float *x = aligned_alloc(64, N * 4), *y = aligned_alloc(64, N * 4), *d = aligned_alloc(64, N * 4);
  if (getenv("HUGE")) madvise(x, N * 4, MADV_HUGEPAGE);
  uint32_t s = 1;
  for (int64_t i = 0; i < N; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 6.0f;
  }
  if (getenv("HUGE")) { /* before the first touch */
    madvise(x, N * 4, MADV_HUGEPAGE), madvise(y, N * 4, MADV_HUGEPAGE), madvise(d, N * 4, MADV_HUGEPAGE);
  }
  memset(y, 0, N * 4), memset(d, 0, N * 4);
  variant vs[] = {
      {"memcpy", 0},
      {"pipe_a1_t0", 1, 1, 3, 1, 0, 0},
      {"pipe_a2_t0", 1, 2, 3, 1, 0, 0},
      {"pipe_a4_t1", 1, 4, 2, 1, 0, 0},
      {"pipe_nopf", 1, 1, -1, 1, 0, 0},
      {"pipe_a1_nta", 1, 1, 0, 1, 0, 0},
      {"pipe_a2_nta", 1, 2, 0, 1, 0, 0},
      {"pipe_a4_nta", 1, 4, 0, 1, 0, 0},
      {"p2_log", 6, 1, 3, 1, 0, 1},
      {"p2_log_nocomp", 6, 1, 3, 1, 1, 1},
      {"p2_recomp", 6, 1, 3, 1, 0, 2},
      {"pipe_store", 1, 1, 3, 0, 0, 0},
      {"pipe_nocomp", 1, 1, 3, 1, 1, 0},
      {"pipe_off64", 1, 1, 3, 1, 0, 64},
      {"pipe_off16", 1, 1, 3, 1, 0, 16},
      {"pipe_off64_nc", 1, 1, 3, 1, 1, 64},
      {"ntcopy", 4, 0, 0, 1, 0, 0},
      {"ew_exp_st", 3, 0, 0, 0, 0, 0},
      {"row_a1_t0", 2, 1, 3, 1, 0, 0},
      {"row_a2_t0", 2, 2, 3, 1, 0, 0},
      {"row_nocomp", 2, 1, 3, 1, 1, 0},
      {"ew_exp", 3, 0, 0, 1, 0, 0},
  };
  int nv = sizeof vs / sizeof vs[0];
  int use[64], nu = 0;
  for (int k = 0; k < nv; k++)
    if (k == 0 || !sel || wanted(sel, vs[k].name)) use[nu++] = k;
  double *tc = calloc((size_t)nu * rounds, sizeof(double)), *tw = calloc((size_t)nu * rounds, sizeof(double));
  for (int r = -1; r < rounds; r++)
    for (int j = 0; j < nu; j++) {
      int u = (j + (r < 0 ? 0 : r)) % nu; /* rotate the order */
      variant *v = &vs[use[u]];
      G_ahead = v->ahead, G_hint = v->hint, G_nt = v->nt, G_nocomp = v->nocomp, G_pfall = v->pfall;
      double t0 = now(), c0 = cpu_now();
      if (v->kind == 0) memcpy(d, x, N * 4);
      else if (v->kind == 1) sm_pipe(x, y, rows, n);
      else if (v->kind == 2) sm_rowwise(x, y, rows, n);
      else if (v->kind == 3) ew_exp(x, y, rows, n);
      else if (v->kind == 6) sm_pipe2(x, y, rows, n);
      else {
        for (int64_t i = 0; i < N; i += 32) _mm512_stream_ps(y + i, _mm512_load_ps(x + i)), _mm512_stream_ps(y + i + 16, _mm512_load_ps(x + i + 16));
        _mm_sfence();
      }
      double w = now() - t0, c = cpu_now() - c0;
      if (r >= 0) tc[u * rounds + r] = c, tw[u * rounds + r] = w;
    }
  double memc = 0;
  for (int u = 0; u < nu; u++) {
    qsort(tc + u * rounds, rounds, sizeof(double), cmp);
    qsort(tw + u * rounds, rounds, sizeof(double), cmp);
    double med = tc[u * rounds + rounds / 2];
    if (u == 0) memc = med;
    printf("%-14s cpu med %.4f min %.4f ns/float  ratio(med) %.3f   wall med %.4f min %.4f\n", vs[use[u]].name, med / N * 1e9,
           tc[u * rounds] / N * 1e9, memc / med, tw[u * rounds + rounds / 2] / N * 1e9, tw[u * rounds] / N * 1e9);
  }
  return 0;
}
