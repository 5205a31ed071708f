/* Packed, cache-blocked GEMM with register-blocked SIMD micro-kernels (see gemm_fast.h).
 *
 * Loop nest (BLIS order), per task = one rectangle of C in one batch:
 *   for jc (NC columns)  for pc (KC of K)  pack B[pc.., jc..] into NR-wide panels
 *     for ic (MC rows)   pack A[ic.., pc..] into MR-tall panels
 *       for jr (NR)  for ir (MR)  micro-kernel: MR x NR tile of C over kc
 * The B micro-panel (kc x NR) stays in L1 while A panels stream from L2.
 * Packing reads any strides (row-major, transposed or general), so transposed
 * operands cost nothing extra. Edge panels are zero-padded; the micro-kernel then
 * computes a whole tile into a scratch tile and only the valid part is written.
 * Threads: a single large product (batch 1) is walked block by block by all threads together,
 * B packed once into a shared buffer (coop_gemm); otherwise each task packs its own panels and C
 * is split into tm x tn rectangles per batch so that tasks ~ threads. */
#include "gemm_fast.h"
#include "simd/simd.h"
#include "gemm_bf16.h" /* bf16/f16 operands: widened to this kernel */
#if defined(__wasm_simd128__)
#include "gemm_wasm.h" /* the SIMD128 float32 micro-kernel (WebAssembly build) */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h> /* sysconf: cache sizes for the blocking */
#if defined(__x86_64__)
#include <immintrin.h>
#define CT_TGT_AVX2 __attribute__((target("avx2,fma")))
#define CT_TGT_AVX512 __attribute__((target("avx512f,avx2,fma")))
#endif

/* ---- packing-buffer cache: big buffers would be mmap'ed and page-faulted on each
 * call; keep a few per process (reachable from this table, so leak checkers are quiet).
 * The cache holds at most buf_cache_max() bytes in all: 32 MiB + 16 MiB per thread, enough
 * for every thread's GEMM panels (~2.3 MiB each) and convolution column buffer (<= 16 MiB
 * each) plus a flipped weight, while a burst of larger workspaces goes back to the system
 * instead of staying resident. ---- */
#define BUF_SLOTS 32
static size_t buf_cache_max(void) {
  int t = ct_get_num_threads();
  if (t < 1) t = 1;
  if (t > 64) t = 64;
  return ((size_t)32 << 20) + ((size_t)16 << 20) * (size_t)t;
}
static struct {
  pthread_mutex_t mu;
  void *p[BUF_SLOTS];
  size_t n[BUF_SLOTS];
  size_t total; /* sum of n[] over the occupied slots */
} bufs = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, 0};

static void *buf_get(size_t bytes) {
  pthread_mutex_lock(&bufs.mu);
  int best = -1;
  for (int i = 0; i < BUF_SLOTS; i++)
    if (bufs.p[i] && bufs.n[i] >= bytes && (best < 0 || bufs.n[i] < bufs.n[best])) best = i;
  if (best >= 0) {
    void *p = bufs.p[best];
    bufs.p[best] = NULL;
    bufs.total -= bufs.n[best];
    bufs.n[best] = 0;
    pthread_mutex_unlock(&bufs.mu);
    return p;
  }
  pthread_mutex_unlock(&bufs.mu);
  void *p = NULL;
  if (bytes > (SIZE_MAX >> 2) + 1) return NULL; /* 2^62 (2^30 on wasm32, where 1 << 62 overflows) */
  size_t sz = (bytes + 63) / 64 * 64 + 64;
  if (posix_memalign(&p, 64, sz) != 0) return NULL;
  ((size_t *)p)[0] = sz; /* remember the size in the first word */
  return (char *)p + 64;
}

static void buf_put(void *q) {
  if (!q) return;
  void *p = (char *)q - 64;
  size_t sz = ((size_t *)p)[0], un = sz - 64;
  void *evict[BUF_SLOTS];
  int ne = 0;
  size_t cap = buf_cache_max();
  pthread_mutex_lock(&bufs.mu);
  if (un <= cap) {
    /* make room: drop cached buffers smaller than this one, smallest first (a bigger buffer
     * serves more requests), until the free slot and the byte budget allow it */
    for (;;) {
      int fs = -1, small = -1;
      for (int i = 0; i < BUF_SLOTS; i++) {
        if (!bufs.p[i]) {
          if (fs < 0) fs = i;
        } else if (small < 0 || bufs.n[i] < bufs.n[small])
          small = i;
      }
      if (fs >= 0 && bufs.total + un <= cap) {
        bufs.p[fs] = q; /* the table holds user pointers (64 bytes past the allocation) */
        bufs.n[fs] = un;
        bufs.total += un;
        p = NULL;
        break;
      }
      if (small < 0 || bufs.n[small] >= un) break; /* only bigger ones cached: free this one */
      evict[ne++] = (char *)bufs.p[small] - 64;
      bufs.total -= bufs.n[small];
      bufs.p[small] = NULL;
      bufs.n[small] = 0;
    }
  }
  pthread_mutex_unlock(&bufs.mu);
  for (int i = 0; i < ne; i++) free(evict[i]);
  free(p);
}

size_t ct_fast_buf_cached_bytes(void) {
  pthread_mutex_lock(&bufs.mu);
  size_t t = bufs.total;
  pthread_mutex_unlock(&bufs.mu);
  return t;
}
size_t ct_fast_buf_cache_limit(void) { return buf_cache_max(); }

/* The same cache for other kernels' temporary workspaces (kernels_conv.c's im2col buffers). */
void *ct_fast_buf_get(size_t bytes) { return buf_get(bytes); }
void ct_fast_buf_put(void *p) { buf_put(p); }

/* ---- micro-kernels: c[MR x NR] (row stride ldc, unit column stride) = (acc ? c : 0) + a-panel * b-panel
 * a: kc groups of MR values; b: kc groups of NR values (both packed, 64-byte aligned). ---- */
typedef void (*ukr_f32)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc);
typedef void (*ukr_f64)(int64_t kc, const double *a, const double *b, double *c, int64_t ldc, int acc);

/* portable: the compiler vectorises the NR loop (SSE2 here, SIMD128 on wasm) */
#define P_MR 4
#define P_NR 16
static void ukr_f32_c(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc) {
  float t[P_MR][P_NR];
  for (int r = 0; r < P_MR; r++)
    for (int j = 0; j < P_NR; j++) t[r][j] = acc ? c[r * ldc + j] : 0.0f;
  for (int64_t k = 0; k < kc; k++, a += P_MR, b += P_NR)
    for (int r = 0; r < P_MR; r++)
      for (int j = 0; j < P_NR; j++) t[r][j] += a[r] * b[j];
  for (int r = 0; r < P_MR; r++)
    for (int j = 0; j < P_NR; j++) c[r * ldc + j] = t[r][j];
}
#define PD_NR 8
static void ukr_f64_c(int64_t kc, const double *a, const double *b, double *c, int64_t ldc, int acc) {
  double t[P_MR][PD_NR];
  for (int r = 0; r < P_MR; r++)
    for (int j = 0; j < PD_NR; j++) t[r][j] = acc ? c[r * ldc + j] : 0.0;
  for (int64_t k = 0; k < kc; k++, a += P_MR, b += PD_NR)
    for (int r = 0; r < P_MR; r++)
      for (int j = 0; j < PD_NR; j++) t[r][j] += a[r] * b[j];
  for (int r = 0; r < P_MR; r++)
    for (int j = 0; j < PD_NR; j++) c[r * ldc + j] = t[r][j];
}

#if defined(__x86_64__)
/* Each ROW(r) broadcasts a[r] and does one FMA per vector of the B row. The
 * accumulators are named variables so they live in registers. */

/* AVX-512 float32: 12 x 32 (24 zmm accumulators, 2 for B, 1 broadcast) */
#define Z_INIT(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps();
#define Z_ROW(r)                                     \
  t = _mm512_set1_ps(a[r]);                          \
  c##r##0 = _mm512_fmadd_ps(t, b0, c##r##0);         \
  c##r##1 = _mm512_fmadd_ps(t, b1, c##r##1);
#define Z_STORE(r)                                                                         \
  if (acc) {                                                                               \
    c##r##0 = _mm512_add_ps(c##r##0, _mm512_loadu_ps(c + r * ldc));                        \
    c##r##1 = _mm512_add_ps(c##r##1, _mm512_loadu_ps(c + r * ldc + 16));                   \
  }                                                                                        \
  _mm512_storeu_ps(c + r * ldc, c##r##0);                                                  \
  _mm512_storeu_ps(c + r * ldc + 16, c##r##1);
#define REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define REP6(X) X(0) X(1) X(2) X(3) X(4) X(5)

/* s10 (Intel Xeon, 2 MiB L2): the C tile (12 rows ldc apart, in memory or L3 on large products, one
 * 4 KiB page a row) was loaded cold at the end of each call (the k loop never touches it): 4096^3 ran at
 * ~140 GFLOP/s, 58% of the FMA peak. Its 24 lines are now prefetched ukr_pfc k steps before the end
 * (256 >= KC: at the start, which measured best; 64: +13%; <= 16: no gain) unless the tile is the
 * scratch tile: ~160 GFLOP/s (bench/results/s10_gemm.md). Prefetches only: same bits.
 * CT_GEMM_PFC=0: off; CT_GEMM_PFC=N: N k steps before the end. */
static int ukr_pfc = 256; /* k steps before the end at which C is prefetched; 0: off (set in params_for) */
#define Z_PFC(r)                                                                                           \
  _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);                                                  \
  _mm_prefetch((const char *)(c + r * ldc + 16), _MM_HINT_T0);
#define Z_KSTEP                                                                                            \
  {                                                                                                        \
    __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16), t;                                         \
    _mm_prefetch((const char *)(b + 32 * 8), _MM_HINT_T0);                                                 \
    REP12(Z_ROW)                                                                                           \
    a += 12;                                                                                               \
    b += 32;                                                                                               \
  }
CT_TGT_AVX512 static void ukr_f32_avx512(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc) {
  REP12(Z_INIT)
  int64_t k = 0, kp = ukr_pfc > 0 && kc > ukr_pfc ? kc - ukr_pfc : 0;
  for (; k < kp; k++) Z_KSTEP
  if (ukr_pfc > 0 && ldc != 32) { REP12(Z_PFC) } /* ldc 32: the scratch tile, already cached */
  for (; k < kc; k++) Z_KSTEP
  REP12(Z_STORE)
}
/* The same with A prefetched 16 k steps ahead, for an A packed once and kept (ct_fast_gemm_pack_a:
 * the eval conv weight cache), which streams from L3 or memory where a freshly packed panel sits
 * in L2: ResNet-18 224 b1's 7x7 512-channel convs 1.85 -> 1.69 ms at 1 thread. Same arithmetic. */
CT_TGT_AVX512 static void ukr_f32_avx512_pfa(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                             int acc) {
  REP12(Z_INIT)
  for (int64_t k = 0; k < kc; k++) {
    __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16), t;
    _mm_prefetch((const char *)(b + 32 * 8), _MM_HINT_T0);
    _mm_prefetch((const char *)(a + 12 * 16), _MM_HINT_T0);
    REP12(Z_ROW)
    a += 12;
    b += 32;
  }
  REP12(Z_STORE)
}

/* AVX-512 float64: 12 x 16 */
#define ZD_INIT(r) __m512d c##r##0 = _mm512_setzero_pd(), c##r##1 = _mm512_setzero_pd();
#define ZD_ROW(r)                                    \
  t = _mm512_set1_pd(a[r]);                          \
  c##r##0 = _mm512_fmadd_pd(t, b0, c##r##0);         \
  c##r##1 = _mm512_fmadd_pd(t, b1, c##r##1);
#define ZD_STORE(r)                                                                        \
  if (acc) {                                                                               \
    c##r##0 = _mm512_add_pd(c##r##0, _mm512_loadu_pd(c + r * ldc));                        \
    c##r##1 = _mm512_add_pd(c##r##1, _mm512_loadu_pd(c + r * ldc + 8));                    \
  }                                                                                        \
  _mm512_storeu_pd(c + r * ldc, c##r##0);                                                  \
  _mm512_storeu_pd(c + r * ldc + 8, c##r##1);

CT_TGT_AVX512 static void ukr_f64_avx512(int64_t kc, const double *a, const double *b, double *c, int64_t ldc,
                                         int acc) {
  REP12(ZD_INIT)
  for (int64_t k = 0; k < kc; k++) {
    __m512d b0 = _mm512_load_pd(b), b1 = _mm512_load_pd(b + 8), t;
    _mm_prefetch((const char *)(b + 16 * 8), _MM_HINT_T0);
    REP12(ZD_ROW)
    a += 12;
    b += 16;
  }
  REP12(ZD_STORE)
}

/* AVX2 float32: 6 x 16 (12 ymm accumulators) */
#define Y_INIT(r) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = _mm256_setzero_ps();
#define Y_ROW(r)                                     \
  t = _mm256_broadcast_ss(a + r);                    \
  c##r##0 = _mm256_fmadd_ps(t, b0, c##r##0);         \
  c##r##1 = _mm256_fmadd_ps(t, b1, c##r##1);
#define Y_STORE(r)                                                                         \
  if (acc) {                                                                               \
    c##r##0 = _mm256_add_ps(c##r##0, _mm256_loadu_ps(c + r * ldc));                        \
    c##r##1 = _mm256_add_ps(c##r##1, _mm256_loadu_ps(c + r * ldc + 8));                    \
  }                                                                                        \
  _mm256_storeu_ps(c + r * ldc, c##r##0);                                                  \
  _mm256_storeu_ps(c + r * ldc + 8, c##r##1);

CT_TGT_AVX2 static void ukr_f32_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc) {
  REP6(Y_INIT)
  for (int64_t k = 0; k < kc; k++) {
    __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), t;
    REP6(Y_ROW)
    a += 6;
    b += 16;
  }
  REP6(Y_STORE)
}

/* AVX2 float64: 6 x 8 */
#define YD_INIT(r) __m256d c##r##0 = _mm256_setzero_pd(), c##r##1 = _mm256_setzero_pd();
#define YD_ROW(r)                                    \
  t = _mm256_broadcast_sd(a + r);                    \
  c##r##0 = _mm256_fmadd_pd(t, b0, c##r##0);         \
  c##r##1 = _mm256_fmadd_pd(t, b1, c##r##1);
#define YD_STORE(r)                                                                        \
  if (acc) {                                                                               \
    c##r##0 = _mm256_add_pd(c##r##0, _mm256_loadu_pd(c + r * ldc));                        \
    c##r##1 = _mm256_add_pd(c##r##1, _mm256_loadu_pd(c + r * ldc + 4));                    \
  }                                                                                        \
  _mm256_storeu_pd(c + r * ldc, c##r##0);                                                  \
  _mm256_storeu_pd(c + r * ldc + 4, c##r##1);

CT_TGT_AVX2 static void ukr_f64_avx2(int64_t kc, const double *a, const double *b, double *c, int64_t ldc, int acc) {
  REP6(YD_INIT)
  for (int64_t k = 0; k < kc; k++) {
    __m256d b0 = _mm256_load_pd(b), b1 = _mm256_load_pd(b + 4), t;
    REP6(YD_ROW)
    a += 6;
    b += 8;
  }
  REP6(YD_STORE)
}
#endif

static int pack_inline_env = -1; /* CT_GEMM_PACK_INLINE (read in params_for; pack_rows_inline) */
/* ---- per-ISA parameters ---- */
typedef struct {
  int mr, nr;
  int64_t mc, kc, nc;
  void *ukr;
  const char *name;
  bool vec; /* AVX2 packing helpers usable */
} kparams;

static kparams params_for(ct_dtype dt) {
  ct_simd_isa isa = ct_simd_active();
  kparams p;
  if (dt == CT_FLOAT32) {
    p = (kparams){P_MR, P_NR, 128, 256, 2048, (void *)ukr_f32_c, "portable 4x16"};
#if defined(__wasm_simd128__)
    p = (kparams){CT_WASM_F32_MR, CT_WASM_F32_NR, 128, 256, 2048, (void *)ukr_f32_wasm, CT_WASM_F32_NAME};
#endif
#if defined(__x86_64__)
    if (isa == CT_SIMD_AVX512) p = (kparams){12, 32, 240, 256, 2048, (void *)ukr_f32_avx512, "avx512 12x32"};
    else if (isa == CT_SIMD_AVX2) p = (kparams){6, 16, 144, 256, 2048, (void *)ukr_f32_avx2, "avx2 6x16"};
#endif
  } else {
    p = (kparams){P_MR, PD_NR, 96, 256, 1024, (void *)ukr_f64_c, "portable 4x8"};
#if defined(__x86_64__)
    if (isa == CT_SIMD_AVX512) p = (kparams){12, 16, 120, 256, 1024, (void *)ukr_f64_avx512, "avx512 12x16"};
    else if (isa == CT_SIMD_AVX2) p = (kparams){6, 8, 96, 256, 1024, (void *)ukr_f64_avx2, "avx2 6x8"};
#endif
  }
  p.vec = isa >= CT_SIMD_AVX2;
#if defined(__x86_64__)
  /* s10: KC from the cache sizes. With >= 2 MiB of L2 and >= 48 KiB of L1d per core (Intel Xeon,
   * model 167 here), KC 384 for the AVX-512 float32 kernel: its B micro-panel (384 x 32 floats,
   * 48 KiB) streams through L1 as before, the A block (240 x 384, 360 KiB) still sits in L2, and
   * C is read and written K / KC times instead of K / 256 (4096^3 at 1 thread: 0.88-0.92x ->
   * 0.96-0.98x OpenBLAS, bench/results/s10_gemm.md). With 1 MiB of L2 (Zen 5, for which 256 was
   * tuned) or unknown sizes the blocking stays as it was. CT_GEMM_KC_AUTO=0: always 256. The k
   * blocking is the same for every thread count, so results stay independent of the threads. */
  if (p.ukr == (void *)ukr_f32_avx512) {
    static long l1 = -2, l2 = -2;
    if (l2 == -2) {
      const char *e = getenv("CT_GEMM_KC_AUTO");
      long a = -1, b = -1;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
      if (!(e && !strcmp(e, "0"))) a = sysconf(_SC_LEVEL1_DCACHE_SIZE), b = sysconf(_SC_LEVEL2_CACHE_SIZE);
#else
      (void)e;
#endif
      l1 = a, l2 = b;
    }
    if (l1 >= 48 * 1024 && l2 >= 2 * 1024 * 1024) p.kc = 384;
  }
#endif
#if defined(__wasm_simd128__)
  p.vec = true; /* the SIMD128 float32 transpose-packing of gemm_wasm.h */
#endif
#if defined(__x86_64__)
  static int pfc_env = -1; /* CT_GEMM_PFC=0: no C prefetch in the AVX-512 float32 micro-kernel; N: N k steps ahead */
  if (pfc_env < 0) {
    const char *e = getenv("CT_GEMM_PFC");
    pfc_env = e && *e ? atoi(e) : ukr_pfc;
    if (pfc_env < 0) pfc_env = 0;
    ukr_pfc = pfc_env;
  }
#endif
  ct_env_switch("CT_GEMM_PACK_INLINE", &pack_inline_env);
  static int64_t tune[3] = {-1, 0, 0}; /* CT_GEMM_BLOCKS=mc,kc,nc overrides the blocking (for tuning) */
  if (tune[0] < 0) {
    const char *e = getenv("CT_GEMM_BLOCKS");
    long long a = 0, b = 0, c = 0;
    if (e && sscanf(e, "%lld,%lld,%lld", &a, &b, &c) == 3 && a > 0 && b > 0 && c > 0) {
      tune[1] = b;
      tune[2] = c;
      tune[0] = a;
    } else tune[0] = 0;
  }
  if (tune[0] > 0) {
    p.mc = (tune[0] + p.mr - 1) / p.mr * p.mr;
    p.kc = tune[1];
    p.nc = (tune[2] + p.nr - 1) / p.nr * p.nr;
  }
  return p;
}

const char *ct_fast_gemm_kernel_name(ct_dtype dt) { return params_for(dt).name; }

bool ct_fast_gemm_wants(ct_dtype dt) {
  return ((dt == CT_FLOAT32 || dt == CT_FLOAT64) && ct_fast_enabled()) || ct_fast_gemm_lowp_wants(dt);
}

/* ---- the driver, written once per element type ---- */
typedef struct {
  const ct_fgemm *g;
  kparams p;
  int64_t tm, tn;         /* rectangles per batch along M and N */
  int64_t rm, rn;         /* rectangle size (multiples of MR / NR) */
  int failed;
} drv_ctx;

/* ---- packing ----
 * One routine packs both operands: n items (rows of A / columns of B) into panels of P
 * items, k-major: dst[panel][k][p] = src[(panel*P + p) * sp + k * sk], zero-padded.
 * sp == 1 is a copy per k; sk == 1 (items contiguous along k: row-major A, transposed B)
 * is a transpose, done in 8x8 (float) / 4x4 (double) register blocks where available. */
#if defined(__x86_64__)
CT_TGT_AVX2 void ct_tr8x8_f32(const float *s, int64_t ld, float *d, int64_t ldd) {
  __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ld), r2 = _mm256_loadu_ps(s + 2 * ld),
         r3 = _mm256_loadu_ps(s + 3 * ld), r4 = _mm256_loadu_ps(s + 4 * ld), r5 = _mm256_loadu_ps(s + 5 * ld),
         r6 = _mm256_loadu_ps(s + 6 * ld), r7 = _mm256_loadu_ps(s + 7 * ld);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
         t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
         u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
         u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
         u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(d + ldd, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(d + 2 * ldd, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(d + 3 * ldd, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(d + 4 * ldd, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(d + 5 * ldd, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(d + 6 * ldd, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(d + 7 * ldd, _mm256_permute2f128_ps(u3, u7, 0x31));
}
static inline void tr4x4_f32(const float *s, int64_t ld, float *d, int64_t ldd) {
  __m128 r0 = _mm_loadu_ps(s), r1 = _mm_loadu_ps(s + ld), r2 = _mm_loadu_ps(s + 2 * ld), r3 = _mm_loadu_ps(s + 3 * ld);
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_storeu_ps(d, r0);
  _mm_storeu_ps(d + ldd, r1);
  _mm_storeu_ps(d + 2 * ldd, r2);
  _mm_storeu_ps(d + 3 * ldd, r3);
}
CT_TGT_AVX2 static void tr4x4_f64(const double *s, int64_t ld, double *d, int64_t ldd) {
  __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ld), r2 = _mm256_loadu_pd(s + 2 * ld),
          r3 = _mm256_loadu_pd(s + 3 * ld);
  __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1), t2 = _mm256_unpacklo_pd(r2, r3),
          t3 = _mm256_unpackhi_pd(r2, r3);
  _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(d + ldd, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(d + 2 * ldd, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(d + 3 * ldd, _mm256_permute2f128_pd(t1, t3, 0x31));
}
/* a full panel of P items, contiguous along k (stride sp between items) */
CT_TGT_AVX2 static void tpanel_f32(float *dst, const float *src, int64_t sp, int64_t kc, int P) {
  int64_t k0 = 0;
  for (; k0 + 8 <= kc; k0 += 8) {
    int r = 0;
    for (; r + 8 <= P; r += 8) ct_tr8x8_f32(src + r * sp + k0, sp, dst + k0 * P + r, P);
    for (; r + 4 <= P; r += 4) {
      tr4x4_f32(src + r * sp + k0, sp, dst + k0 * P + r, P);
      tr4x4_f32(src + r * sp + k0 + 4, sp, dst + (k0 + 4) * P + r, P);
    }
    for (; r < P; r++)
      for (int64_t k = k0; k < k0 + 8; k++) dst[k * P + r] = src[r * sp + k];
  }
  for (int r = 0; r < P; r++)
    for (int64_t k = k0; k < kc; k++) dst[k * P + r] = src[r * sp + k];
}
CT_TGT_AVX2 static void tpanel_f64(double *dst, const double *src, int64_t sp, int64_t kc, int P) {
  int64_t k0 = 0;
  for (; k0 + 4 <= kc; k0 += 4) {
    int r = 0;
    for (; r + 4 <= P; r += 4) tr4x4_f64(src + r * sp + k0, sp, dst + k0 * P + r, P);
    for (; r < P; r++)
      for (int64_t k = k0; k < k0 + 4; k++) dst[k * P + r] = src[r * sp + k];
  }
  for (int r = 0; r < P; r++)
    for (int64_t k = k0; k < kc; k++) dst[k * P + r] = src[r * sp + k];
}
#define HAVE_TPANEL 1
#endif

/* ---- prepacked A (ct_fast_gemm_pack_a): per batch, per KC block pc (of kc_j columns), the
 * ceil(M / MR) panels of MR x kc_j that pack_ writes, so rows [ic, ic + mc) of block pc start at
 * pc * Mp + ic * kc_j (Mp = M rounded up to MR; ic a multiple of MR, as every rectangle's). ---- */
struct ct_gemm_apack {
  ct_dtype dtype;
  int64_t batch, M, K, mr, kc;
  size_t per_batch; /* elements */
  void *data;       /* 64-byte aligned */
};
/* the micro-kernel for a prepacked A (its prefetching twin where there is one) */
static void *ukr_for_packed_a(void *u) {
#if defined(__x86_64__)
  if (u == (void *)ukr_f32_avx512) return (void *)ukr_f32_avx512_pfa;
#endif
  return u;
}
static const void *apack_base(const ct_fgemm *g, const kparams *p, int64_t b) {
  const struct ct_gemm_apack *a = g->A_packed;
  if (!a || a->dtype != g->dtype || a->M != g->M || a->K != g->K || a->mr != p->mr || a->kc != p->kc) return NULL;
  if (a->batch == g->batch) return (const char *)a->data + (size_t)b * a->per_batch * ct_dtype_size(a->dtype);
  return a->batch == 1 && g->a_b == 0 ? a->data : NULL;
}

/* Edge tiles (fewer than MR rows or NR columns: ResNet's 7x7 layers have N = 49, one full panel and one of 17
 * columns, over 18 k blocks) go through a tile the micro-kernel fills, then into C. That write-back was one
 * scalar loop with per-element branches on alpha, the k block and C0: ~1.2 M elements and ~1.8 ms of the
 * ResNet-18 b1 forward at 1 thread (s10, perf). For unit columns and alpha 1 it is now plain row loops in
 * blocks of 8 that the compiler turns into vector ops at -O2, with the same per-element expression
 * (t + d, t + beta c0), so the same bits. CT_GEMM_EDGE_FAST=0: the scalar loop. */
static bool edge_fast_enabled(void) {
  static int env = -1;
  return ct_env_switch("CT_GEMM_EDGE_FAST", &env);
}
/* s11: a full 32-column panel of a row-major operand (B of the Winograd and im2col forward GEMMs) packed
 * by inline 256-bit copies, not one libc memcpy call of 128 bytes per k row: the calls were ~2.4% of the
 * CIFAR b16 step's CPU on Zen 5. The same values. CT_GEMM_PACK_INLINE=0: memcpy as before. */
static bool pack_rows_inline(void) { return __atomic_load_n(&pack_inline_env, __ATOMIC_RELAXED) > 0; }
#if defined(__x86_64__)
CT_TGT_AVX2 static void pack_rows32_f32(float *dst, const float *src, int64_t sk, int64_t kc) {
  for (int64_t k = 0; k < kc; k++, dst += 32, src += sk) {
    __m256 a = _mm256_loadu_ps(src), b = _mm256_loadu_ps(src + 8), c = _mm256_loadu_ps(src + 16),
           d = _mm256_loadu_ps(src + 24);
    _mm256_storeu_ps(dst, a);
    _mm256_storeu_ps(dst + 8, b);
    _mm256_storeu_ps(dst + 16, c);
    _mm256_storeu_ps(dst + 24, d);
  }
}
#define PROWS_f32 1
#define PROWS_CALL_f32(d, s, sk, kc) pack_rows32_f32(d, s, sk, kc)
#else
#define PROWS_f32 0
#define PROWS_CALL_f32(d, s, sk, kc) (void)0
#endif
#define PROWS_f64 0
#define PROWS_CALL_f64(d, s, sk, kc) (void)0
#define DEFINE_EDGE(T, SUF)                                                                                     \
  static inline void edge_add_##SUF(T *restrict d, const T *restrict t, int64_t n) { /* d = t + d */          \
    int64_t i = 0;                                                                                              \
    for (; i + 8 <= n; i += 8)                                                                                  \
      for (int j = 0; j < 8; j++) d[i + j] = t[i + j] + d[i + j];                                               \
    for (; i < n; i++) d[i] = t[i] + d[i];                                                                      \
  }                                                                                                             \
  /* d = t + beta c0 (c0n 1: a row of C0; 0: one value broadcast along the row) */                              \
  static inline void edge_axpy_##SUF(T *restrict d, const T *restrict t, const T *restrict c0, int64_t c0n,     \
                                     T beta, int64_t n) {                                                       \
    if (c0n == 0) {                                                                                             \
      const T v = beta * c0[0];                                                                                 \
      for (int64_t i = 0; i < n; i++) d[i] = t[i] + v;                                                          \
      return;                                                                                                   \
    }                                                                                                           \
    int64_t i = 0;                                                                                              \
    for (; i + 8 <= n; i += 8)                                                                                  \
      for (int j = 0; j < 8; j++) d[i + j] = t[i + j] + beta * c0[i + j];                                       \
    for (; i < n; i++) d[i] = t[i] + beta * c0[i];                                                              \
  }
DEFINE_EDGE(float, f32)
DEFINE_EDGE(double, f64)

#define DEFINE_DRIVER(T, SUF)                                                                                   \
  static void pack_##SUF(T *dst, const T *src0, int64_t sp, int64_t sk, int64_t n, int64_t kc, int P, bool vec) { \
    for (int64_t i = 0; i < n; i += P, dst += (int64_t)P * kc) {                                               \
      int64_t cnt = n - i < P ? n - i : P;                                                                      \
      const T *src = src0 + i * sp;                                                                             \
      if (sp == 1) {                                                                                            \
        if (PROWS_##SUF && vec && cnt == P && P == 32 && pack_rows_inline()) {                                  \
          PROWS_CALL_##SUF(dst, src, sk, kc);                                                                   \
          continue;                                                                                             \
        }                                                                                                       \
        for (int64_t k = 0; k < kc; k++) {                                                                      \
          memcpy(dst + k * P, src + k * sk, sizeof(T) * (size_t)cnt);                                           \
          for (int64_t r = cnt; r < P; r++) dst[k * P + r] = 0;                                                 \
        }                                                                                                       \
        continue;                                                                                               \
      }                                                                                                         \
      if (TPANEL_##SUF && vec && sk == 1 && cnt == P) {                                                        \
        TPANEL_CALL_##SUF(dst, src, sp, kc, P);                                                                 \
        continue;                                                                                               \
      }                                                                                                         \
      for (int64_t r = 0; r < cnt; r++) {                                                                       \
        const T *s = src + r * sp;                                                                              \
        T *d = dst + r;                                                                                         \
        if (sk == 1)                                                                                            \
          for (int64_t k = 0; k < kc; k++) d[k * P] = s[k];                                                     \
        else                                                                                                    \
          for (int64_t k = 0; k < kc; k++) d[k * P] = s[k * sk];                                                \
      }                                                                                                         \
      for (int64_t r = cnt; r < P; r++)                                                                         \
        for (int64_t k = 0; k < kc; k++) dst[k * P + r] = 0;                                                    \
    }                                                                                                           \
  }                                                                                                             \
  /* c[rows x cols] (row stride ldc, unit columns) = beta * c0 before the first k block, so the        \
   * micro-kernel then accumulates into C directly; beta == 1 on c0 == c (accumulate in place) is a    \
   * no-op. acc + beta c0 rounds the same as the write-back it replaces. */                             \
  static void prescale_##SUF(T *c, int64_t ldc, const T *c0, int64_t c0m, int64_t c0n, int64_t rows,      \
                             int64_t cols, T beta) {                                                    \
    if (c0 == c && c0m == ldc && c0n == 1 && beta == (T)1) return;                                      \
    for (int64_t r = 0; r < rows; r++) {                                                                \
      T *d = c + r * ldc;                                                                               \
      const T *s = c0 + r * c0m;                                                                        \
      if (c0n == 1)                                                                                     \
        for (int64_t j = 0; j < cols; j++) d[j] = beta * s[j];                                          \
      else if (c0n == 0) {                                                                              \
        T v = beta * s[0];                                                                              \
        for (int64_t j = 0; j < cols; j++) d[j] = v;                                                    \
      } else                                                                                            \
        for (int64_t j = 0; j < cols; j++) d[j] = beta * s[j * c0n];                                    \
    }                                                                                                   \
  }                                                                                                     \
  /* C rows [ic, ic + mc) x columns jc + [jr0, jr1) from packed A (mc x kc) and packed B (the block's                                    \
   * panels from column jc; jr0 a multiple of NR); first: the first k block (C = beta C0 + ..., else C += ...) */                        \
  static void block_##SUF(const ct_fgemm *g, const kparams *p, T *C, const T *C0, const T *ap, const T *bp,                              \
                          int64_t ic, int64_t mc, int64_t jc, int64_t jr0, int64_t jr1, int64_t kc, bool first) {                        \
    const int mr = p->mr, nr = p->nr;                                                                                                    \
    const T alpha = (T)g->alpha, beta = (T)g->beta;                                                                                      \
    T tile[16 * 32] __attribute__((aligned(64)));                                                                                        \
    void (*ukr)(int64_t, const T *, const T *, T *, int64_t, int) = (void (*)(int64_t, const T *, const T *, T *, int64_t, int))p->ukr;  \
    const bool direct = g->c_n == 1 && g->alpha == 1.0, edge_fast = edge_fast_enabled();                                                 \
    for (int64_t jr = jr0; jr < jr1; jr += nr) {                                                                                         \
      int64_t cols = jr1 - jr < nr ? jr1 - jr : nr;                                                                                      \
      const T *bpp = bp + jr * kc;                                                                                                       \
      for (int64_t ir = 0; ir < mc; ir += mr) {                                                                                          \
        int64_t rows = mc - ir < mr ? mc - ir : mr;                                                                                      \
        const T *app = ap + ir * kc;                                                                                                     \
        int64_t ci = ic + ir, cj = jc + jr;                                                                                              \
        if (direct && rows == mr && cols == nr) {                                                                                        \
          T *ct = C + ci * g->c_m + cj;                                                                                                  \
          if (first && C0)                                                                                                               \
            prescale_##SUF(ct, g->c_m, C0 + ci * g->c0_m + cj * g->c0_n, g->c0_m, g->c0_n, mr, nr, beta);                                \
          ukr(kc, app, bpp, ct, g->c_m, !first || C0);                                                                                   \
          continue;                                                                                                                      \
        }                                                                                                                                \
        ukr(kc, app, bpp, tile, nr, 0);                                                                                                  \
        if (edge_fast && g->c_n == 1 && alpha == (T)1 && (!first || !C0 || g->c0_n <= 1)) {                                              \
          for (int64_t r = 0; r < rows; r++) {                                                                                           \
            T *d = C + (ci + r) * g->c_m + cj;                                                                                           \
            const T *t = tile + r * nr;                                                                                                  \
            if (!first) edge_add_##SUF(d, t, cols);                                                                                      \
            else if (C0) edge_axpy_##SUF(d, t, C0 + (ci + r) * g->c0_m + cj * g->c0_n, g->c0_n, beta, cols);                            \
            else memcpy(d, t, sizeof(T) * (size_t)cols);                                                                                 \
          }                                                                                                                              \
          continue;                                                                                                                      \
        }                                                                                                                                \
        for (int64_t r = 0; r < rows; r++)                                                                                               \
          for (int64_t c = 0; c < cols; c++) {                                                                                           \
            T v = tile[r * nr + c];                                                                                                      \
            if (alpha != (T)1) v *= alpha;                                                                                               \
            T *dst = C + (ci + r) * g->c_m + (cj + c) * g->c_n;                                                                          \
            if (!first) v += *dst;                                                                                                       \
            else if (C0) v += beta * C0[(ci + r) * g->c0_m + (cj + c) * g->c0_n];                                                        \
            *dst = v;                                                                                                                    \
          }                                                                                                                              \
      }                                                                                                                                  \
    }                                                                                                                                    \
  }                                                                                                                                      \
  /* C rectangle [i0, i1) x [j0, j1) of batch b */                                                                                       \
  static int rect_##SUF(const ct_fgemm *g, const kparams *p, int64_t b, int64_t i0, int64_t i1, int64_t j0,                              \
                        int64_t j1) {                                                                                                    \
    const int mr = p->mr, nr = p->nr;                                                                                                    \
    const T *A = g->A ? (const T *)g->A + b * g->a_b : NULL, *B = (const T *)g->B + b * g->b_b; /* A: NULL when packed */            \
    const T *C0 = g->C0 ? (const T *)g->C0 + b * g->c0_b : NULL;                                                                         \
    T *C = (T *)g->C + b * g->c_b;                                                                                                       \
    const T beta = (T)g->beta;                                                                                                           \
    const int64_t K = g->K;                                                                                                              \
    if (K == 0) { /* no products: C = beta * C0 (or 0) */                                                                                \
      for (int64_t i = i0; i < i1; i++)                                                                                                  \
        for (int64_t j = j0; j < j1; j++)                                                                                                \
          C[i * g->c_m + j * g->c_n] = C0 ? beta * C0[i * g->c0_m + j * g->c0_n] : (T)0;                                                 \
      return 0;                                                                                                                          \
    }                                                                                                                                    \
    int64_t kcmax = K < p->kc ? K : p->kc;                                                                                               \
    int64_t mcmax = i1 - i0 < p->mc ? i1 - i0 : p->mc, ncmax = j1 - j0 < p->nc ? j1 - j0 : p->nc;                                        \
    mcmax = (mcmax + mr - 1) / mr * mr;                                                                                                  \
    ncmax = (ncmax + nr - 1) / nr * nr;                                                                                                  \
    const T *apk = (const T *)apack_base(g, p, b); /* prepacked A of this batch, or NULL */                                             \
    kparams pka = *p;                                                                                                                    \
    pka.ukr = ukr_for_packed_a(p->ukr);                                                                                                  \
    T *ap = buf_get(sizeof(T) * (size_t)(apk ? 1 : mcmax * kcmax));                                                                      \
    T *bp = buf_get(sizeof(T) * (size_t)(ncmax * kcmax));                                                                                \
    if (!ap || !bp) {                                                                                                                    \
      buf_put(ap);                                                                                                                       \
      buf_put(bp);                                                                                                                       \
      return 1;                                                                                                                          \
    }                                                                                                                                    \
    for (int64_t jc = j0; jc < j1; jc += p->nc) {                                                                                        \
      int64_t nc = j1 - jc < p->nc ? j1 - jc : p->nc;                                                                                    \
      for (int64_t pc = 0; pc < K; pc += p->kc) {                                                                                        \
        int64_t kc = K - pc < p->kc ? K - pc : p->kc;                                                                                    \
        pack_##SUF(bp, B + pc * g->b_k + jc * g->b_n, g->b_n, g->b_k, nc, kc, nr, p->vec);                                               \
        for (int64_t ic = i0; ic < i1; ic += p->mc) {                                                                                    \
          int64_t mc = i1 - ic < p->mc ? i1 - ic : p->mc;                                                                                \
          const T *apu = apk ? apk + pc * ((g->M + mr - 1) / mr * mr) + ic * kc : ap; /* ic: a multiple of MR */                        \
          if (!apk) pack_##SUF(ap, A + ic * g->a_m + pc * g->a_k, g->a_m, g->a_k, mc, kc, mr, p->vec);                                   \
          block_##SUF(g, apk ? &pka : p, C, C0, apu, bp, ic, mc, jc, 0, nc, kc, pc == 0);                                                \
        }                                                                                                                                \
      }                                                                                                                                  \
    }                                                                                                                                    \
    buf_put(ap);                                                                                                                         \
    buf_put(bp);                                                                                                                         \
    return 0;                                                                                                                            \
  }

#ifdef HAVE_TPANEL
#define TPANEL_f32 1
#define TPANEL_f64 1
#define TPANEL_CALL_f32(d, s, sp, kc, P) tpanel_f32(d, s, sp, kc, P)
#define TPANEL_CALL_f64(d, s, sp, kc, P) tpanel_f64(d, s, sp, kc, P)
#elif defined(__wasm_simd128__)
#define TPANEL_f32 1
#define TPANEL_f64 0
#define TPANEL_CALL_f32(d, s, sp, kc, P) ct_wasm_tpanel_f32(d, s, sp, kc, P)
#define TPANEL_CALL_f64(d, s, sp, kc, P) (void)0
#else
#define TPANEL_f32 0
#define TPANEL_f64 0
#define TPANEL_CALL_f32(d, s, sp, kc, P) (void)0
#define TPANEL_CALL_f64(d, s, sp, kc, P) (void)0
#endif
DEFINE_DRIVER(float, f32)
DEFINE_DRIVER(double, f64)

struct ct_gemm_apack *ct_fast_gemm_pack_a(const ct_fgemm *g) {
  if (!g || (g->dtype != CT_FLOAT32 && g->dtype != CT_FLOAT64) || g->batch <= 0 || g->M <= 0 || g->K <= 0) {
    ct_set_error(CT_ERR_VALUE, "gemm pack: unsupported operand");
    return NULL;
  }
  kparams p = params_for(g->dtype);
  int64_t nb = g->a_b == 0 ? 1 : g->batch, Mp = (g->M + p.mr - 1) / p.mr * p.mr;
  size_t es = ct_dtype_size(g->dtype);
  struct ct_gemm_apack *a = calloc(1, sizeof *a);
  int64_t per = 0, bytes = 0;
  if (!a || !ct_mul_ok(Mp, g->K, &per) || !ct_mul_ok(per, nb * (int64_t)es, &bytes) ||
      posix_memalign(&a->data, 64, (size_t)(per * nb) * es) != 0) {
    free(a);
    ct_set_error(CT_ERR_OOM, "CPU out of memory: packed GEMM operand");
    return NULL;
  }
  a->dtype = g->dtype, a->batch = nb, a->M = g->M, a->K = g->K, a->mr = p.mr, a->kc = p.kc;
  a->per_batch = (size_t)per;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t pc = 0; pc < g->K; pc += p.kc) {
      int64_t kc = g->K - pc < p.kc ? g->K - pc : p.kc;
      size_t off = (size_t)(b * per + pc * Mp);
      if (g->dtype == CT_FLOAT32)
        pack_f32((float *)a->data + off, (const float *)g->A + b * g->a_b + pc * g->a_k, g->a_m, g->a_k, g->M, kc,
                 (int)p.mr, p.vec);
      else
        pack_f64((double *)a->data + off, (const double *)g->A + b * g->a_b + pc * g->a_k, g->a_m, g->a_k, g->M, kc,
                 (int)p.mr, p.vec);
    }
  return a;
}
void ct_fast_gemm_apack_free(struct ct_gemm_apack *a) {
  if (!a) return;
  free(a->data);
  free(a);
}
bool ct_fast_gemm_apack_fits(const struct ct_gemm_apack *a, const ct_fgemm *g) {
  if (!a || !g || (g->dtype != CT_FLOAT32 && g->dtype != CT_FLOAT64)) return false;
  ct_fgemm h = *g;
  h.A_packed = a;
  kparams p = params_for(g->dtype);
  return apack_base(&h, &p, 0) != NULL;
}
size_t ct_fast_gemm_apack_bytes(const struct ct_gemm_apack *a) {
  return a ? a->per_batch * (size_t)a->batch * ct_dtype_size(a->dtype) : 0;
}

/* ---- 2+ threads on one large product: B packed once and shared ----
 * The rectangle split above packs B once per row of rectangles (and A once per column), so at 2
 * threads most of B is packed twice. Here the threads walk the (jc, pc) blocks in order together:
 * they pack one block of B into a shared buffer (disjoint groups of NR panels, claimed by an
 * atomic counter), then claim units (an MC row block x a range of the block's panels), each
 * packing its own A. Nothing waits for a thread that has not claimed work, so a worker that joins
 * late (or never) cannot stall the others: the waits are for claimed packing/units only, and
 * claimed work never waits on later blocks. Two B buffers let the next block be packed while the
 * last units of this one finish; a unit of block s (same jc, next pc) waits for the same unit of
 * block s - 1, which wrote the same C tiles. Every C element still sums its k blocks in order with
 * the same micro-kernel, so the result is bit-identical to the rectangle split and to 1 thread. */
typedef struct {
  const ct_fgemm *g;
  kparams p;
  int64_t S, nkb;       /* blocks (jc-major, pc-minor) and k blocks per jc */
  int64_t nbc, pan_per; /* B chunks per block, panels per chunk */
  int64_t nic, njr, U;  /* units per block: nic row blocks x njr panel ranges */
  int64_t mcu, wj;      /* rows per row block (multiple of MR), columns per panel range (multiple of NR) */
  void *bbuf[2];
  int64_t *pk, *pd, *ck, *cd; /* per block: B chunks claimed / packed, units claimed / done */
  unsigned char *udone;       /* per block and unit */
  int64_t cur;                /* highest block any thread has reached (all earlier ones fully claimed) */
  int failed;
} coop_ctx;

/* -1: CT_GEMM_SHARED_B=1 turns it on. Off by default: on the quiet 2-core Zen 5 VM the split
 * into per-thread rectangles was faster on every shape measured (sgemm 256-4096 at 2 threads:
 * 1.00-1.25x; ResNet-18 b16 step 0.86-0.93x the time; bench/RESULTS.md, session 6) */
static int coop_mode = -1;
void ct_fast_gemm_set_shared_b(int on) { coop_mode = on < 0 ? -1 : on ? 1 : 0; }
static bool coop_enabled(void) {
  static int env = -1;
  if (coop_mode >= 0) return coop_mode;
  if (env < 0) {
    const char *e = getenv("CT_GEMM_SHARED_B");
    env = e && *e == '1' ? 1 : 0;
  }
  return env;
}

/* spin on a claimed piece of work that another thread is finishing; yield on a busy machine */
static void wait_ge(int64_t *v, int64_t want) {
  for (int i = 0; __atomic_load_n(v, __ATOMIC_ACQUIRE) < want; i++) {
#if defined(__x86_64__)
    _mm_pause();
#endif
    if (i >= 256) sched_yield();
  }
}
static void wait_flag(unsigned char *f) {
  for (int i = 0; !__atomic_load_n(f, __ATOMIC_ACQUIRE); i++) {
#if defined(__x86_64__)
    _mm_pause();
#endif
    if (i >= 256) sched_yield();
  }
}

static void coop_run(void *vctx, int64_t begin, int64_t end) {
  (void)begin, (void)end; /* every call joins the shared walk; work is claimed, not assigned */
  coop_ctx *x = vctx;
  const ct_fgemm *g = x->g;
  const kparams *p = &x->p;
  const bool f32 = g->dtype == CT_FLOAT32;
  const size_t es = f32 ? 4 : 8;
  const int64_t K = g->K, nr = p->nr, mr = p->mr;
  void *ap = buf_get(es * (size_t)((x->mcu + mr - 1) / mr * mr * (K < p->kc ? K : p->kc)));
  if (!ap) { /* claim nothing: the other threads (or the caller's own call) do the work */
    __atomic_store_n(&x->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  int64_t a_s = -1, a_ic = -1; /* which A block ap holds */
  for (int64_t s = __atomic_load_n(&x->cur, __ATOMIC_ACQUIRE); s < x->S; s++) {
    int64_t c = __atomic_load_n(&x->cur, __ATOMIC_RELAXED);
    while (c < s && !__atomic_compare_exchange_n(&x->cur, &c, s, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    }
    int64_t jb = s / x->nkb, kb = s % x->nkb, jc = jb * p->nc, pc = kb * p->kc;
    int64_t nc = g->N - jc < p->nc ? g->N - jc : p->nc, kc = K - pc < p->kc ? K - pc : p->kc;
    int64_t panels = (nc + nr - 1) / nr;
    char *bp = x->bbuf[s & 1];
    if (__atomic_load_n(&x->pk[s], __ATOMIC_RELAXED) < x->nbc) {
      if (s >= 2) wait_ge(&x->cd[s - 2], x->U); /* the buffer's previous block is done */
      for (;;) {
        int64_t ch = __atomic_fetch_add(&x->pk[s], 1, __ATOMIC_ACQ_REL);
        if (ch >= x->nbc) break;
        int64_t p0 = ch * x->pan_per, p1 = p0 + x->pan_per < panels ? p0 + x->pan_per : panels;
        if (p0 < p1) {
          int64_t j0 = p0 * nr, w = (p1 * nr < nc ? p1 * nr : nc) - j0;
          if (f32)
            pack_f32((float *)bp + j0 * kc, (const float *)g->B + pc * g->b_k + (jc + j0) * g->b_n, g->b_n, g->b_k, w,
                     kc, (int)nr, p->vec);
          else
            pack_f64((double *)bp + j0 * kc, (const double *)g->B + pc * g->b_k + (jc + j0) * g->b_n, g->b_n, g->b_k,
                     w, kc, (int)nr, p->vec);
        }
        __atomic_fetch_add(&x->pd[s], 1, __ATOMIC_ACQ_REL);
      }
    }
    if (__atomic_load_n(&x->ck[s], __ATOMIC_RELAXED) >= x->U) continue;
    wait_ge(&x->pd[s], x->nbc);
    for (;;) {
      int64_t u = __atomic_fetch_add(&x->ck[s], 1, __ATOMIC_ACQ_REL);
      if (u >= x->U) break;
      int64_t ib = u / x->njr, jw = u % x->njr;
      int64_t ic = ib * x->mcu, mc = g->M - ic < x->mcu ? g->M - ic : x->mcu;
      int64_t jr0 = jw * x->wj, jr1 = jr0 + x->wj < nc ? jr0 + x->wj : nc;
      if (kb > 0) wait_flag(&x->udone[(s - 1) * x->U + u]); /* same C tiles, previous k block */
      if (jr0 < jr1 && mc > 0) {
        if (a_s != s || a_ic != ic) {
          if (f32)
            pack_f32(ap, (const float *)g->A + ic * g->a_m + pc * g->a_k, g->a_m, g->a_k, mc, kc, (int)mr, p->vec);
          else
            pack_f64(ap, (const double *)g->A + ic * g->a_m + pc * g->a_k, g->a_m, g->a_k, mc, kc, (int)mr, p->vec);
          a_s = s, a_ic = ic;
        }
        if (f32)
          block_f32(g, p, (float *)g->C, (const float *)g->C0, ap, (const float *)bp, ic, mc, jc, jr0, jr1, kc, kb == 0);
        else
          block_f64(g, p, (double *)g->C, (const double *)g->C0, ap, (const double *)bp, ic, mc, jc, jr0, jr1, kc,
                    kb == 0);
      }
      __atomic_store_n(&x->udone[s * x->U + u], 1, __ATOMIC_RELEASE);
      __atomic_fetch_add(&x->cd[s], 1, __ATOMIC_ACQ_REL);
    }
  }
  buf_put(ap);
}

/* Runs g (batch 1, K > 0) on nt threads with B shared; 1 = not taken (too few units, or out of
 * memory for the bookkeeping: the caller uses the rectangle split), 0 = done, -1 = out of memory. */
static int coop_gemm(const ct_fgemm *g, const kparams *p, int nt) {
  coop_ctx x;
  memset(&x, 0, sizeof x);
  x.g = g, x.p = *p;
  const int64_t nr = p->nr, mr = p->mr;
  int64_t nkb = (g->K + p->kc - 1) / p->kc, njb = (g->N + p->nc - 1) / p->nc;
  int64_t ncb = g->N < p->nc ? g->N : p->nc, panels = (ncb + nr - 1) / nr;
  /* units: MC row blocks; when there are few, also split the panels (ranges of >= 4 panels), for
   * ~4 units per thread, which the claiming balances on a busy machine */
  int64_t want = 4 * (int64_t)nt;
  x.mcu = p->mc;
  x.nic = (g->M + x.mcu - 1) / x.mcu;
  if (x.nic < want && g->M > mr) { /* smaller row blocks (down to 4 MR) before splitting panels */
    int64_t rows = (g->M + want - 1) / want;
    rows = (rows + mr - 1) / mr * mr;
    if (rows < 4 * mr) rows = 4 * mr;
    if (rows < x.mcu) x.mcu = rows;
    x.nic = (g->M + x.mcu - 1) / x.mcu;
  }
  x.njr = 1;
  if (x.nic < want) {
    x.njr = (want + x.nic - 1) / x.nic;
    if (x.njr > panels / 4) x.njr = panels / 4 > 1 ? panels / 4 : 1;
  }
  x.wj = (panels + x.njr - 1) / x.njr * nr;
  x.njr = (panels * nr + x.wj - 1) / x.wj;
  x.U = x.nic * x.njr;
  if (x.U < 2) return 1;
  x.S = njb * nkb, x.nkb = nkb;
  x.nbc = 2 * (int64_t)nt < panels ? 2 * (int64_t)nt : panels;
  x.pan_per = (panels + x.nbc - 1) / x.nbc;
  size_t es = g->dtype == CT_FLOAT32 ? 4 : 8;
  int64_t kcmax = g->K < p->kc ? g->K : p->kc;
  int64_t *cnt = calloc((size_t)(4 * x.S), sizeof(int64_t));
  x.udone = calloc((size_t)(x.S * x.U), 1);
  x.bbuf[0] = buf_get(es * (size_t)(panels * nr * kcmax));
  x.bbuf[1] = x.S > 1 ? buf_get(es * (size_t)(panels * nr * kcmax)) : NULL;
  int r = 0;
  if (!cnt || !x.udone || !x.bbuf[0] || (x.S > 1 && !x.bbuf[1])) r = 1;
  else {
    x.pk = cnt, x.pd = cnt + x.S, x.ck = cnt + 2 * x.S, x.cd = cnt + 3 * x.S;
    ct_parallel_for(nt, 1, coop_run, &x);
    /* every unit is done unless every thread failed to get its A buffer */
    if (__atomic_load_n(&x.cd[x.S - 1], __ATOMIC_ACQUIRE) < x.U) r = -1;
  }
  free(cnt);
  free(x.udone);
  buf_put(x.bbuf[0]);
  buf_put(x.bbuf[1]);
  return r;
}

static void task_range(void *vctx, int64_t begin, int64_t end) {
  drv_ctx *x = vctx;
  const ct_fgemm *g = x->g;
  for (int64_t t = begin; t < end; t++) {
    int64_t r[5];
    if (!ct_gemm_task_rect(g, t, x->tm, x->tn, x->rm, x->rn, r)) continue;
    int bad = g->dtype == CT_FLOAT32 ? rect_f32(g, &x->p, r[0], r[1], r[2], r[3], r[4])
                                     : rect_f64(g, &x->p, r[0], r[1], r[2], r[3], r[4]);
    if (bad) __atomic_store_n(&x->failed, 1, __ATOMIC_RELAXED);
  }
}

/* Enough work to split over threads: > 4 MFLOP, or (s10) >= 2^18 elements of B to pack (a skinny GEMM
 * such as a classifier's fc at batch 1, M 1, N 1000, K 512: 1 MFLOP, but streaming and packing its 2 MB
 * weight is the cost; one task ran it on one thread). The split of such a GEMM is along N (tm = 1 when M
 * fits one MR tile), K is never split, so the bits do not depend on the thread count.
 * CT_GEMM_BPACK_SPLIT=0: the flops rule alone. */
static bool bpack_split_enabled(void) {
  static int env = -1;
  return ct_env_switch("CT_GEMM_BPACK_SPLIT", &env);
}
static bool gemm_splits(const ct_fgemm *g, double flops) {
  return flops > 4e6 || (bpack_split_enabled() && (double)g->batch * (double)g->K * (double)g->N >= 262144.0);
}

/* Rectangles per batch (tm along M, tn along N) for nt threads: enough tasks for every thread,
 * each still >= ~1 MFLOP (or >= ~2^17 elements of B, see gemm_splits) and at least one MR x NR tile. */
static void plan_tasks(const ct_fgemm *g, const kparams *p, int nt, int64_t *tmo, int64_t *tno) {
  double flops = 2.0 * (double)g->batch * (double)g->M * (double)g->N * (double)(g->K + 1);
  int64_t want = 1;
  const bool split = nt > 1 && gemm_splits(g, flops);
  if (split) {
    want = nt;
    if (flops > 1e9) want = 2 * (int64_t)nt; /* some slack for load balance on a busy machine */
    want = (want + g->batch - 1) / g->batch;
    if (want < 1) want = 1;
  }
  int64_t mt = (g->M + p->mr - 1) / p->mr, ntl = (g->N + p->nr - 1) / p->nr; /* tiles along M, N */
  /* The split tm x tn with at least `want` tasks that packs the least: each rectangle packs its rows
   * of A and its columns of B, so a batch packs (tn M + tm N) K elements in all (the square-ish split
   * this replaced packed ResNet's 4x4 512-channel forward, M 512, N 256, K 4608, as 3 x 2: 17% more
   * than 2 x 2 or 4 x 1). A few tasks that are not a multiple of the threads leave threads idle in
   * the last round (3 equal tasks on 2 threads: 2 rounds for 1.5 of work, e.g. a bmm of batch 3, or
   * 3 x 1 rectangles of a skinny shape), so those counts are skipped. Ties: fewer tasks. */
  int64_t tm = 1, tn = 1;
  bool even = split;
  if (even) {
    double best = -1;
    int64_t lim = want + nt;
    for (int64_t a = 1; a <= mt && a <= lim; a++)
      for (int64_t b = 1; b <= ntl && b <= lim; b++) {
        int64_t tasks = g->batch * a * b;
        if (a * b < want && (a < mt || b < ntl)) continue; /* too few (unless nothing more to split) */
        if (even && tasks % nt != 0 && tasks < 4 * (int64_t)nt && (a < mt || b < ntl)) continue;
        double cost = (double)b * (double)g->M + (double)a * (double)g->N;
        if (best < 0 || cost < best || (cost == best && a * b < tm * tn)) best = cost, tm = a, tn = b;
        break; /* a larger b only packs more */
      }
  }
  *tmo = tm, *tno = tn;
}

int64_t ct_fast_gemm_plan(const ct_fgemm *g, int threads) {
  if (!g || g->batch <= 0 || g->M <= 0 || g->N <= 0 || (g->dtype != CT_FLOAT32 && g->dtype != CT_FLOAT64)) return 0;
  kparams p = params_for(g->dtype);
  int64_t tm, tn;
  plan_tasks(g, &p, threads < 1 ? 1 : threads, &tm, &tn);
  return g->batch * tm * tn;
}

ct_status ct_fast_gemm(const ct_fgemm *g) {
  if (g->dtype == CT_BFLOAT16 || g->dtype == CT_FLOAT16) return ct_fast_gemm_lowp(g); /* gemm_bf16.c */
  if (g->dtype != CT_FLOAT32 && g->dtype != CT_FLOAT64)
    return CT_ERR(CT_ERR_RUNTIME, "fast gemm: unsupported dtype %s", ct_dtype_name(g->dtype));
  if (g->batch <= 0 || g->M <= 0 || g->N <= 0) return CT_OK;
  drv_ctx x;
  memset(&x, 0, sizeof x);
  x.g = g;
  x.p = params_for(g->dtype);
  double flops = 2.0 * (double)g->batch * (double)g->M * (double)g->N * (double)(g->K + 1);
  int nt = ct_get_num_threads();
  if (nt > 1 && g->batch == 1 && g->K > 0 && flops >= 4e6 && !g->A_packed && coop_enabled()) {
    int r = coop_gemm(g, &x.p, nt);
    if (r < 0) return CT_ERR(CT_ERR_OOM, "gemm: out of memory for packing buffers");
    if (r == 0) return CT_OK;
  }
  int64_t mt = (g->M + x.p.mr - 1) / x.p.mr, ntl = (g->N + x.p.nr - 1) / x.p.nr; /* tiles along M, N */
  plan_tasks(g, &x.p, nt, &x.tm, &x.tn);
  x.rm = ((mt + x.tm - 1) / x.tm) * x.p.mr;
  x.rn = ((ntl + x.tn - 1) / x.tn) * x.p.nr;
  int64_t tasks = g->batch * x.tm * x.tn;
  int64_t grain = flops / (double)tasks < 2e5 ? (int64_t)(2e5 / (flops / (double)tasks + 1)) + 1 : 1;
  if (!gemm_splits(g, flops)) grain = tasks;
  else if (flops <= 4e6 && grain > (tasks + nt - 1) / nt) /* split for its B packing (gemm_splits): a chunk a thread */
    grain = (tasks + nt - 1) / nt;
  ct_parallel_for(tasks, grain, task_range, &x);
  if (x.failed) return CT_ERR(CT_ERR_OOM, "gemm: out of memory for packing buffers");
  return CT_OK;
}
