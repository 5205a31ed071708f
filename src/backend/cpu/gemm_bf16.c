/* bfloat16 / float16 GEMM with float32 accumulation (issue 3 item 2), for matmul/bmm/addmm
 * on tensors of those dtypes when the fast kernels are on.
 *
 * bf16 x bf16 on a CPU with AMX-BF16 (detected at run time, Linux; see "AMX" below): a packed
 * 32 x 32 micro-kernel on tdpbf16ps (2 x 2 float32 tiles), the same blocking, threading and
 * write-back as the vdpbf16ps kernel. tdpbf16ps, like vdpbf16ps, multiplies bf16 pairs exactly,
 * accumulates in float32 with round-to-nearest-even whatever MXCSR says, treats denormal inputs
 * as zero and flushes denormal results (Intel SDM: DAZ and FTZ implied), and sums in its own order
 * (per 16 x 16 tile, k-pair by k-pair); so its results differ from the vdpbf16ps and widening
 * paths within the same float32 summation bound, not bit for bit (they were bit-identical to
 * PyTorch 1.13's bf16 matmul, oneDNN on AMX, on the shapes measured on session 9's Xeon).
 * Else, bf16 x bf16 on a CPU with AVX512_BF16 (detected at run time): a packed micro-kernel on
 * vdpbf16ps (_mm512_dpbf16_ps), 12 x 32 register block. K is taken in pairs: A is packed as
 * (a[i][2p], a[i][2p+1]) 32-bit words that are broadcast, B with the k-pair of a column
 * adjacent, an odd K padded with a zero. Blocks: NC columns of B packed once per task, then
 * MC rows x KC pairs of A, the float32 sums kept in a per-task MC x NC workspace and written
 * once, as round(alpha acc + beta C0), to bf16. Threads split batch x M x N rectangles as the
 * float32 driver does (never K, so results do not depend on the thread count).
 * vdpbf16ps's arithmetic differs from sequential float32 FMAs: per pair it adds the odd
 * product, then the even one (each product of two bf16 is exact in float32), rounding to
 * nearest-even regardless of MXCSR, and by its definition treats denormal inputs and results as
 * zero: a denormal bf16 operand contributes 0 (the widening path keeps it; test_gemm_bf16.c checks
 * both on this CPU); flushed denormal partial sums are not tested.
 * All paths stay within one bf16 ulp + 2 K 2^-24 sum|a b| of the float32 product of the widened
 * inputs (tests/c/test_gemm_bf16.c, tests/python/test_bf16_gemm.py vs PyTorch 1.13, whose bf16 CPU
 * matmul, oneDNN on this Zen 5, gave bit-identical results on the shapes measured).
 *
 * CT_GEMM_BF16=amx|dp|widen (or ct_fast_gemm_lowp_force_path) picks a path for tests and A/B;
 * unset, the fastest the CPU has (amx, then dp, then widen). On the Intel Xeon of session 9 (AMX)
 * vdpbf16ps ran at ~110 GFLOP/s, below the widening path (~140), AMX at ~1000 (s9_amx.md).
 * Otherwise (float16, no AVX512_BF16, or CT_GEMM_BF16=widen / ct_fast_gemm_lowp_force_widen):
 * the operands are widened to float32 (exact), multiplied by the packed float32 GEMM
 * (gemm_packed.c) and the result rounded once, so C = round(beta C0 + alpha sum_k a_ik b_kj)
 * with the sum in float32 like the reference kernel (kernels_linalg.c). bf16 -> f32 is a
 * 16-bit shift; f16 -> f32 uses F16C (vcvtph2ps) when the CPU has it, else the portable
 * conversion. Not done: an AVX512_FP16 kernel (float16 stays widened; this CPU has no AMX-FP16). */
#include "gemm_bf16.h"
#include "simd/simd.h"
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

bool ct_fast_gemm_lowp_wants(ct_dtype dt) { return (dt == CT_BFLOAT16 || dt == CT_FLOAT16) && ct_fast_enabled(); }

/* CPUID bits (clang 14's __builtin_cpu_supports knows neither name): leaf 1 ECX bit 29 F16C,
 * leaf 7 subleaf 1 EAX bit 5 AVX512_BF16; AVX itself (OS-saved YMM state) via the builtin */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
static bool cpu_f16c(void) {
  unsigned a, b, c, d;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && ((c >> 29) & 1);
}
static bool cpu_avx512bf16(void) {
  unsigned a, b, c, d;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 5) & 1);
}
#endif

/* the bf16 path forced: -1 from CT_GEMM_BF16, else LP_AUTO / LP_WIDEN / LP_DP / LP_AMX */
enum { LP_AUTO = 0, LP_WIDEN = 1, LP_DP = 2, LP_AMX = 3 };
static int path_forced = -1;
void ct_fast_gemm_lowp_force_path(int path) {
  __atomic_store_n(&path_forced, path < 0 || path > LP_AMX ? -1 : path, __ATOMIC_RELAXED);
}
void ct_fast_gemm_lowp_force_widen(int on) { ct_fast_gemm_lowp_force_path(on < 0 ? -1 : on ? LP_WIDEN : LP_AUTO); }
/* the path asked for (before falling back for what the CPU lacks) */
static int lowp_requested(void) {
  int v = __atomic_load_n(&path_forced, __ATOMIC_RELAXED);
  if (v >= 0) return v;
  const char *e = getenv("CT_GEMM_BF16");
  if (!e) return LP_AUTO;
  return !strcmp(e, "widen") ? LP_WIDEN : !strcmp(e, "dp") ? LP_DP : !strcmp(e, "amx") ? LP_AMX : LP_AUTO;
}
static int lowp_path(ct_dtype dt);

const char *ct_fast_gemm_lowp_isa(void) {
  switch (lowp_path(CT_BFLOAT16)) {
  case LP_AMX: return "amx_bf16: bf16 tdpbf16ps 32x32 (2x2 tiles) kernel; f16 widened to the f32 kernel";
  case LP_DP:
    return lowp_requested() == LP_AMX ? "amx asked for but unavailable (CPU or OS): bf16 vdpbf16ps 12x32 kernel; f16 widened"
                                      : "avx512_bf16: bf16 vdpbf16ps 12x32 kernel; f16 widened (f16c) to the f32 kernel";
  default: break;
  }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (cpu_avx512bf16()) return "avx512_bf16 present, widening forced (f16 and bf16 widened to the f32 kernel)";
  if (cpu_f16c()) return "f16c (widened to the f32 kernel)";
#endif
  return "portable widening to the f32 kernel";
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
static bool have_f16c(void) {
  static int f = -1; /* detected once; racing threads store the same value */
  int v = __atomic_load_n(&f, __ATOMIC_RELAXED);
  if (v < 0) {
    v = cpu_f16c() ? 1 : 0;
    __atomic_store_n(&f, v, __ATOMIC_RELAXED);
  }
  return v == 1;
}
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx,f16c"))) static void f16_row_f16c(const uint16_t *s, float *d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
  for (; i < n; i++) d[i] = ct_half_to_float(s[i]);
}
#endif

/* one row of n elements (stride st, in elements) of a 16-bit dtype to contiguous floats */
static void widen_row(ct_dtype dt, const uint16_t *s, int64_t st, float *d, int64_t n) {
  if (dt == CT_BFLOAT16) {
    if (st == 1)
      for (int64_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)s[i] << 16;
        memcpy(d + i, &u, 4);
      }
    else
      for (int64_t i = 0; i < n; i++) d[i] = ct_bf16_to_float(s[i * st]);
    return;
  }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (st == 1 && have_f16c()) {
    f16_row_f16c(s, d, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++) d[i] = ct_half_to_float(s[i * st]);
}

/* [nb, R, C] of a strided 16-bit operand (batch stride sb, row sr, column sc) to floats */
typedef struct {
  ct_dtype dt;
  const uint16_t *src;
  int64_t sb, sr, sc, R, C;
  float *dst;
  uint16_t *out; /* narrowing: dst -> out with out strides (sb, sr, sc) */
} lw_ctx;
static void lw_widen(void *vctx, int64_t r0, int64_t r1) {
  lw_ctx *w = vctx;
  for (int64_t r = r0; r < r1; r++) {
    int64_t b = r / w->R, i = r % w->R;
    widen_row(w->dt, w->src + b * w->sb + i * w->sr, w->sc, w->dst + r * w->C, w->C);
  }
}
static void lw_narrow(void *vctx, int64_t r0, int64_t r1) {
  lw_ctx *w = vctx;
  for (int64_t r = r0; r < r1; r++) {
    int64_t b = r / w->R, i = r % w->R;
    uint16_t *o = w->out + b * w->sb + i * w->sr;
    const float *s = w->dst + r * w->C;
    if (w->dt == CT_BFLOAT16)
      for (int64_t j = 0; j < w->C; j++) o[j * w->sc] = ct_float_to_bf16(s[j]);
    else
      for (int64_t j = 0; j < w->C; j++) o[j * w->sc] = ct_float_to_half(s[j]);
  }
}
/* widens [nb, R, C]; a batch stride of 0 (broadcast operand) is widened once */
static float *widen(ct_dtype dt, const void *src, int64_t nb, int64_t sb, int64_t sr, int64_t sc, int64_t R, int64_t C) {
  if (sb == 0) nb = 1;
  /* from the GEMM's buffer cache: a fresh malloc of a large block page-faults on every call */
  float *d = ct_fast_buf_get(sizeof(float) * (size_t)(nb * R * C > 0 ? nb * R * C : 1));
  if (!d) return NULL;
  lw_ctx w = {dt, src, sb, sr, sc, R, C, d, NULL};
  ct_parallel_for(nb * R, 1 + 32768 / (C + 1), lw_widen, &w);
  return d;
}

/* ---- bf16 x bf16 on AVX512_BF16 (vdpbf16ps) ---- */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DP_KERNEL 1
#define DP_MR 12
#define DP_NR 32
#define DP_MC 240  /* rows of A per block (multiple of DP_MR): MC x KC pairs x 4 bytes in L2 */
#define DP_KCP 256 /* k pairs per block: a B sliver of 32 x 512 bf16 (32 KB) stays in L1 */
#define DP_NC 1024 /* columns of B packed per block (multiple of DP_NR) */

static bool have_avx512bf16(void) {
  static int f = -1; /* detected once; racing threads store the same value */
  int v = __atomic_load_n(&f, __ATOMIC_RELAXED);
  if (v < 0) {
    v = cpu_avx512bf16() ? 1 : 0;
    __atomic_store_n(&f, v, __ATOMIC_RELAXED);
  }
  return v == 1;
}

/* c[12 x 32] (row stride ldc) = / += sum over kp pairs: a holds 12 32-bit words per pair (row r's
 * two bf16 of the pair), b 64 bf16 per pair (column j's pair at 2j, 2j+1) */
#define DP_INIT(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps();
#define DP_ROW(r)                                                       \
  {                                                                     \
    __m512bh ar = (__m512bh)_mm512_set1_epi32((int)a[r]);               \
    c##r##0 = _mm512_dpbf16_ps(c##r##0, ar, b0);                        \
    c##r##1 = _mm512_dpbf16_ps(c##r##1, ar, b1);                        \
  }
#define DP_STORE(r)                                                                          \
  if (acc) {                                                                                 \
    _mm512_storeu_ps(c + r * ldc, _mm512_add_ps(_mm512_loadu_ps(c + r * ldc), c##r##0));     \
    _mm512_storeu_ps(c + r * ldc + 16, _mm512_add_ps(_mm512_loadu_ps(c + r * ldc + 16), c##r##1)); \
  } else {                                                                                   \
    _mm512_storeu_ps(c + r * ldc, c##r##0);                                                  \
    _mm512_storeu_ps(c + r * ldc + 16, c##r##1);                                             \
  }
#define DP_REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
__attribute__((target("avx512f,avx512bf16"))) static void ukr_dpbf16(int64_t kp, const uint32_t *a, const uint16_t *b,
                                                                      float *c, int64_t ldc, int acc) {
  DP_REP12(DP_INIT)
  for (int64_t p = 0; p < kp; p++) {
    __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)b), b1 = (__m512bh)_mm512_loadu_si512((const void *)(b + 32));
    DP_REP12(DP_ROW)
    a += DP_MR;
    b += 2 * DP_NR;
  }
  DP_REP12(DP_STORE)
}

/* d[2 j + h] = (h ? s1 : s0)[j] for 32 columns (AVX2 unpack; 128-bit lanes put back in order) */
__attribute__((target("avx2"))) static void dp_interleave32(const uint16_t *s0, const uint16_t *s1, uint16_t *d) {
  for (int h = 0; h < 2; h++) {
    __m256i x = _mm256_loadu_si256((const __m256i *)(s0 + 16 * h)), y = _mm256_loadu_si256((const __m256i *)(s1 + 16 * h));
    __m256i lo = _mm256_unpacklo_epi16(x, y), hi = _mm256_unpackhi_epi16(x, y); /* cols 0-3,8-11 / 4-7,12-15 */
    _mm256_storeu_si256((__m256i *)(d + 32 * h), _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256((__m256i *)(d + 32 * h + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
  }
}

/* elements from one packed B panel to the next: one pair row (128 bytes) more than the panel, so that the
 * panels written side by side (dp_pack_b's row-pair walk) do not all fall on the same L1 sets
 * (panel sizes of 2 Kp x 64 bytes are multiples of 4 KB for Kp a multiple of 32) */
static inline int64_t dp_pstride(int64_t Kp) { return 2 * DP_NR * (Kp + 1); }

/* B[k0.., j0..j0+nc) of batch b into panels of DP_NR columns over all Kp pairs:
 * dst[panel * dp_pstride(Kp) + p * 2 NR + 2 jj + h] = B[2p + h][j0 + panel*NR + jj], zero beyond K and N */
static void dp_pack_b(const ct_fgemm *g, const uint16_t *B, int64_t j0, int64_t nc, int64_t Kp, uint16_t *dst) {
  int64_t K = g->K, N = g->N, nfull = 0;
  if (g->b_n == 1) { /* rows contiguous: whole pairs of whole panels row pair by row pair (sequential reads) */
    nfull = (N - j0 < nc ? N - j0 : nc) / DP_NR;
    for (int64_t p = 0; p < Kp && 2 * p + 1 < K; p++) {
      const uint16_t *s0 = B + 2 * p * g->b_k + j0, *s1 = s0 + g->b_k;
      for (int64_t q = 0; q < nfull; q++) dp_interleave32(s0 + q * DP_NR, s1 + q * DP_NR, dst + q * dp_pstride(Kp) + p * 2 * DP_NR);
    }
  }
  for (int64_t jp = 0; jp < nc; jp += DP_NR) {
    uint16_t *d = dst + jp / DP_NR * dp_pstride(Kp);
    int64_t jn = N - (j0 + jp) < DP_NR ? N - (j0 + jp) : DP_NR;
    for (int64_t p = 0; p < Kp; p++, d += 2 * DP_NR) {
      const uint16_t *s0 = B + 2 * p * g->b_k + (j0 + jp) * g->b_n, *s1 = s0 + g->b_k;
      bool odd = 2 * p + 1 >= K;
      if (2 * p >= K) { /* padding pairs (the AMX path's K chunks of 16 pairs) */
        memset(d, 0, 2 * DP_NR * sizeof *d);
        continue;
      }
      if (!odd && jp / DP_NR < nfull) continue; /* packed above */
      for (int64_t jj = 0; jj < jn; jj++) {
        d[2 * jj] = s0[jj * g->b_n];
        d[2 * jj + 1] = odd ? 0 : s1[jj * g->b_n];
      }
      for (int64_t jj = jn; jj < DP_NR; jj++) d[2 * jj] = d[2 * jj + 1] = 0;
    }
  }
}

/* A[i0..i0+mc, pairs p0..p0+kp) into panels of DP_MR rows: dst[panel][p][r] = the pair as a word */
static void dp_pack_a(const ct_fgemm *g, const uint16_t *A, int64_t i0, int64_t mc, int64_t p0, int64_t kp, uint32_t *dst) {
  int64_t K = g->K, M = g->M;
  for (int64_t ip = 0; ip < mc; ip += DP_MR) {
    uint32_t *d = dst + ip * kp;
    int64_t in = M - (i0 + ip) < DP_MR ? M - (i0 + ip) : DP_MR;
    for (int64_t r = 0; r < in; r++) {
      const uint16_t *s = A + (i0 + ip + r) * g->a_m;
      if (g->a_k == 1) { /* a row's pairs are adjacent: one 32-bit load each, the odd tail padded */
        int64_t pf = 2 * (p0 + kp) <= K ? kp : kp - 1;
        for (int64_t p = 0; p < pf; p++) memcpy(&d[p * DP_MR + r], s + 2 * (p0 + p), 4);
        if (pf < kp) d[pf * DP_MR + r] = s[2 * (p0 + pf)];
        continue;
      }
      for (int64_t p = 0; p < kp; p++) {
        int64_t k = 2 * (p0 + p);
        uint32_t lo = s[k * g->a_k], hi = k + 1 < K ? s[(k + 1) * g->a_k] : 0;
        d[p * DP_MR + r] = lo | hi << 16;
      }
    }
    for (int64_t r = in; r < DP_MR; r++)
      for (int64_t p = 0; p < kp; p++) d[p * DP_MR + r] = 0;
  }
}

/* o[j] = bf16(w[j]), rounded to nearest-even as ct_float_to_bf16 (NaN kept quiet, denormals kept) */
__attribute__((target("avx512f"))) static void dp_round_row(const float *w, uint16_t *o, int64_t n) {
  int64_t j = 0;
  const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), q = _mm512_set1_epi32(0x40);
  for (; j + 16 <= n; j += 16) {
    __m512 v = _mm512_loadu_ps(w + j);
    __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(hi, one))), 16);
    r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_or_si512(hi, q));
    _mm256_storeu_si256((__m256i *)(o + j), _mm512_cvtepi32_epi16(r));
  }
  for (; j < n; j++) o[j] = ct_float_to_bf16(w[j]);
}

/* rows ic..ic+mc, columns jc..jc+nc of C from the float32 sums ws (row stride ncp): one rounding of
 * alpha acc + beta C0 to bf16 */
static void lp_write_back(const ct_fgemm *g, const float *ws, int64_t ncp, uint16_t *C, const uint16_t *C0, int64_t ic,
                          int64_t mc, int64_t jc, int64_t nc) {
  const float alpha = (float)g->alpha, beta = (float)g->beta;
  if (g->c_n == 1 && !C0 && alpha == 1.0f) {
    for (int64_t i = 0; i < mc; i++) dp_round_row(ws + i * ncp, C + (ic + i) * g->c_m + jc, nc);
    return;
  }
  for (int64_t i = 0; i < mc; i++) {
    const float *w = ws + i * ncp;
    uint16_t *o = C + (ic + i) * g->c_m + jc * g->c_n;
    const uint16_t *c0 = C0 ? C0 + (ic + i) * g->c0_m + jc * g->c0_n : NULL;
    for (int64_t j = 0; j < nc; j++) {
      float v = w[j];
      if (alpha != 1.0f) v *= alpha;
      if (c0) v += beta * ct_bf16_to_float(c0[j * g->c0_n]);
      o[j * g->c_n] = ct_float_to_bf16(v);
    }
  }
}

typedef struct {
  const ct_fgemm *g;
  int64_t tm, tn, rm, rn; /* rectangles per batch along M, N and their sizes */
  int failed;
  int (*rect)(const ct_fgemm *g, int64_t b, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
} dp_ctx;

/* one rectangle [i0, i1) x [j0, j1) of batch b */
static int dp_rect(const ct_fgemm *g, int64_t b, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  int64_t K = g->K, Kp = (K + 1) / 2;
  const uint16_t *A = (const uint16_t *)g->A + b * g->a_b, *B = (const uint16_t *)g->B + b * g->b_b;
  const uint16_t *C0 = g->C0 ? (const uint16_t *)g->C0 + b * g->c0_b : NULL;
  uint16_t *C = (uint16_t *)g->C + b * g->c_b;
  int64_t ncmax = j1 - j0 < DP_NC ? (j1 - j0 + DP_NR - 1) / DP_NR * DP_NR : DP_NC;
  int64_t mcmax = i1 - i0 < DP_MC ? (i1 - i0 + DP_MR - 1) / DP_MR * DP_MR : DP_MC;
  int64_t kcmax = Kp < DP_KCP ? Kp : DP_KCP;
  uint16_t *bp = ct_fast_buf_get((size_t)(ncmax / DP_NR * dp_pstride(Kp)) * 2);
  uint32_t *ap = ct_fast_buf_get((size_t)(mcmax * kcmax) * 4);
  float *ws = ct_fast_buf_get((size_t)(mcmax * ncmax) * 4);
  int bad = !bp || !ap || !ws;
  for (int64_t jc = j0; jc < j1 && !bad; jc += DP_NC) {
    int64_t nc = j1 - jc < DP_NC ? j1 - jc : DP_NC, ncp = (nc + DP_NR - 1) / DP_NR * DP_NR;
    dp_pack_b(g, B, jc, ncp, Kp, bp);
    for (int64_t ic = i0; ic < i1; ic += DP_MC) {
      int64_t mc = i1 - ic < DP_MC ? i1 - ic : DP_MC, mcp = (mc + DP_MR - 1) / DP_MR * DP_MR;
      for (int64_t pc = 0; pc < Kp; pc += DP_KCP) {
        int64_t kc = Kp - pc < DP_KCP ? Kp - pc : DP_KCP;
        dp_pack_a(g, A, ic, mcp, pc, kc, ap);
        for (int64_t jr = 0; jr < ncp; jr += DP_NR)
          for (int64_t ir = 0; ir < mcp; ir += DP_MR)
            ukr_dpbf16(kc, ap + ir * kc, bp + jr / DP_NR * dp_pstride(Kp) + pc * 2 * DP_NR, ws + ir * ncp + jr, ncp, pc > 0);
      }
      lp_write_back(g, ws, ncp, C, C0, ic, mc, jc, nc);
    }
  }
  ct_fast_buf_put(bp);
  ct_fast_buf_put(ap);
  ct_fast_buf_put(ws);
  return bad;
}

static void dp_tasks(void *vctx, int64_t begin, int64_t end) {
  dp_ctx *x = vctx;
  const ct_fgemm *g = x->g;
  for (int64_t t = begin; t < end; t++) {
    int64_t r[5];
    if (!ct_gemm_task_rect(g, t, x->tm, x->tn, x->rm, x->rn, r)) continue;
    if (x->rect(g, r[0], r[1], r[2], r[3], r[4])) __atomic_store_n(&x->failed, 1, __ATOMIC_RELAXED);
  }
}

/* batch x tm x tn rectangles: enough for every thread (twice that for large products, for load
 * balance on a busy machine), split along M first (each rectangle packs all of its B columns) */
static ct_status split_gemm(const ct_fgemm *g, int64_t MR, int64_t NR,
                            int (*rect)(const ct_fgemm *, int64_t, int64_t, int64_t, int64_t, int64_t)) {
  dp_ctx x = {g, 1, 1, 0, 0, 0, rect};
  double flops = 2.0 * (double)g->batch * (double)g->M * (double)g->N * (double)g->K;
  int nt = ct_get_num_threads();
  int64_t mt = (g->M + MR - 1) / MR, ntl = (g->N + NR - 1) / NR;
  if (nt > 1 && flops > 4e6) {
    int64_t want = flops > 1e9 ? 2 * (int64_t)nt : nt;
    want = (want + g->batch - 1) / g->batch;
    /* tm x tn >= want rectangles (as many as the tiles allow), packing the least: each rectangle packs its
     * columns of B (all K), and its rows of A per NC block, so about tm N + tn M elements per K */
    int64_t best_n = -1, best_cost = 0;
    for (int64_t tm = 1; tm <= want && tm <= mt; tm++) {
      int64_t tn = (want + tm - 1) / tm;
      tn = tn < ntl ? tn : ntl;
      int64_t n = tm * tn < want ? tm * tn : want, cost = tm * g->N + tn * g->M;
      if (n > best_n || (n == best_n && cost < best_cost)) best_n = n, best_cost = cost, x.tm = tm, x.tn = tn;
    }
  }
  x.rm = (mt + x.tm - 1) / x.tm * MR;
  x.rn = (ntl + x.tn - 1) / x.tn * NR;
  int64_t tasks = g->batch * x.tm * x.tn;
  ct_parallel_for(tasks, flops > 4e6 ? 1 : tasks, dp_tasks, &x);
  if (x.failed) return CT_ERR(CT_ERR_OOM, "gemm: out of memory for packing buffers");
  return CT_OK;
}
static ct_status dp_gemm(const ct_fgemm *g) { return split_gemm(g, DP_MR, DP_NR, dp_rect); }

/* ---- bf16 x bf16 on AMX (tdpbf16ps) ----
 * Available when CPUID.7.0:EDX has AMX-BF16 (bit 22) and AMX-TILE (bit 24), the OS enables the tile
 * state in XCR0 (bits 17, 18) and Linux grants this process XTILEDATA (arch_prctl
 * ARCH_REQ_XCOMP_PERM, asked once, process-wide; a refusal leaves the vdpbf16ps path).
 * Register block 32 x 32 of C = 2 x 2 float32 tiles of 16 x 16 (tmm0-3), from two A tiles of
 * 16 rows x 16 k-pairs (tmm4-5) and two B tiles of 16 k-pairs x 16 columns, each row a column's
 * pair adjacent (tmm6-7, VNNI layout: dp_pack_b's 32-column panels, loaded with a 128-byte stride).
 * A is packed per 32-row panel and chunk of 16 pairs as 32 rows x 64 bytes (one 2 KB block, both
 * A tiles loaded with a 64-byte stride). K is padded with zero pairs to a multiple of 32, M and N
 * to multiples of 32 (zeros in the packs; the padded sums are not written back). Every task
 * (rectangle) loads the tile configuration (ldtilecfg: per thread state) and releases the tile
 * state (tilerelease) when done. */
#if defined(__linux__)
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#define AMX_KERNEL 1
#define AMX_MR 32
#define AMX_NR 32 /* = DP_NR: the B packing is dp_pack_b's */
#define AMX_MC 128 /* rows of A per block (multiple of AMX_MR) */
#define AMX_KCP 256 /* K up to 2 x 256 in one block (no float32 reloads), */
#define AMX_KCB 128 /* longer K in blocks of 128 pairs: A and B panels 32 x 256 bf16, 16 KB each, both in L1 */
#define AMX_NC 1024 /* columns of B packed per block (multiple of AMX_NR) */

static int amx_ok; /* set once by amx_detect */
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static void amx_detect(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 22) & 1) || !((d >> 24) & 1)) return;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return; /* OSXSAVE: xgetbv allowed */
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (((lo >> 17) & 3) != 3) return; /* XTILECFG and XTILEDATA enabled by the OS */
  /* ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18): Linux 5.16+ */
  if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) return;
  amx_ok = 1;
}
static bool have_amx(void) {
  pthread_once(&amx_once, amx_detect);
  return amx_ok;
}

/* tile configuration (palette 1): tiles 0-7 all 16 rows x 64 bytes */
typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} amx_cfg;

/* c[32 x 32] (row stride ldc floats) = / += the sum over nch chunks of 16 k-pairs: a chunk of A is
 * 32 rows x 16 pair words (amx_pack_a), of B 16 pairs x 64 bf16 (a dp_pack_b panel of 32 columns) */
__attribute__((target("amx-tile,amx-bf16"))) static void ukr_amx(int64_t nch, const uint32_t *a, const uint16_t *b,
                                                                  float *c, int64_t ldc, int acc) {
  size_t ldb = (size_t)ldc * 4;
  if (acc) {
    _tile_loadd(0, c, ldb);
    _tile_loadd(1, c + 16, ldb);
    _tile_loadd(2, c + 16 * ldc, ldb);
    _tile_loadd(3, c + 16 * ldc + 16, ldb);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t ch = 0; ch < nch; ch++) {
    _tile_loadd(4, a, 64);
    _tile_loadd(6, b, 128);
    _tile_loadd(7, b + 32, 128);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, a + 16 * 16, 64);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
    a += 32 * 16;
    b += 16 * 2 * AMX_NR;
  }
  _tile_stored(0, c, ldb);
  _tile_stored(1, c + 16, ldb);
  _tile_stored(2, c + 16 * ldc, ldb);
  _tile_stored(3, c + 16 * ldc + 16, ldb);
}
__attribute__((target("amx-tile"))) static void amx_tiles_begin(void) {
  amx_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  /* ldtilecfg with the whole 64-byte block as the operand: GCC 12's _tile_loadconfig names only 8
   * bytes of it, and the stores that fill it were dropped as dead at -O2 */
  __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}
__attribute__((target("amx-tile"))) static void amx_tiles_end(void) { _tile_release(); }

/* A[i0..i0+mc (a multiple of 32), pairs p0..p0+kp (a multiple of 16)) into panels of 32 rows:
 * dst[panel][chunk][row][16 pair words], zero beyond M and K */
static void amx_pack_a(const ct_fgemm *g, const uint16_t *A, int64_t i0, int64_t mc, int64_t p0, int64_t kp, uint32_t *dst) {
  int64_t K = g->K, M = g->M, nch = kp / 16;
  for (int64_t ip = 0; ip < mc; ip += AMX_MR) {
    uint32_t *d = dst + ip * kp;
    int64_t in = M - (i0 + ip) < AMX_MR ? M - (i0 + ip) : AMX_MR;
    for (int64_t r = 0; r < AMX_MR; r++) {
      const uint16_t *s = r < in ? A + (i0 + ip + r) * g->a_m : NULL;
      for (int64_t ch = 0; ch < nch; ch++) {
        uint32_t *o = d + (ch * AMX_MR + r) * 16;
        int64_t k0 = 2 * (p0 + ch * 16); /* first k of the chunk */
        if (!s || k0 >= K) {
          memset(o, 0, 64);
          continue;
        }
        if (g->a_k == 1 && k0 + 32 <= K) { /* 16 whole pairs, adjacent */
          memcpy(o, s + k0, 64);
          continue;
        }
        for (int64_t q = 0; q < 16; q++) {
          int64_t k = k0 + 2 * q;
          uint32_t lo = k < K ? s[k * g->a_k] : 0, hi = k + 1 < K ? s[(k + 1) * g->a_k] : 0;
          o[q] = lo | hi << 16;
        }
      }
    }
  }
}

/* one rectangle [i0, i1) x [j0, j1) of batch b, as dp_rect with the AMX block */
static int amx_rect(const ct_fgemm *g, int64_t b, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  int64_t K = g->K, Kp = (K + 31) / 32 * 16; /* pairs, padded to whole chunks of 16 */
  const uint16_t *A = (const uint16_t *)g->A + b * g->a_b, *B = (const uint16_t *)g->B + b * g->b_b;
  const uint16_t *C0 = g->C0 ? (const uint16_t *)g->C0 + b * g->c0_b : NULL;
  uint16_t *C = (uint16_t *)g->C + b * g->c_b;
  int64_t ncmax = j1 - j0 < AMX_NC ? (j1 - j0 + AMX_NR - 1) / AMX_NR * AMX_NR : AMX_NC;
  int64_t mcmax = i1 - i0 < AMX_MC ? (i1 - i0 + AMX_MR - 1) / AMX_MR * AMX_MR : AMX_MC;
  int64_t kcmax = Kp <= AMX_KCP ? Kp : AMX_KCB; /* pairs per block, a multiple of 16 */
  uint16_t *bp = ct_fast_buf_get((size_t)(ncmax / DP_NR * dp_pstride(Kp)) * 2);
  uint32_t *ap = ct_fast_buf_get((size_t)(mcmax * kcmax) * 4);
  float *ws = ct_fast_buf_get((size_t)(mcmax * ncmax) * 4);
  int bad = !bp || !ap || !ws;
  if (!bad) amx_tiles_begin();
  for (int64_t jc = j0; jc < j1 && !bad; jc += AMX_NC) {
    int64_t nc = j1 - jc < AMX_NC ? j1 - jc : AMX_NC, ncp = (nc + AMX_NR - 1) / AMX_NR * AMX_NR;
    dp_pack_b(g, B, jc, ncp, Kp, bp);
    for (int64_t ic = i0; ic < i1; ic += AMX_MC) {
      int64_t mc = i1 - ic < AMX_MC ? i1 - ic : AMX_MC, mcp = (mc + AMX_MR - 1) / AMX_MR * AMX_MR;
      for (int64_t pc = 0; pc < Kp; pc += kcmax) {
        int64_t kc = Kp - pc < kcmax ? Kp - pc : kcmax;
        amx_pack_a(g, A, ic, mcp, pc, kc, ap);
        for (int64_t jr = 0; jr < ncp; jr += AMX_NR)
          for (int64_t ir = 0; ir < mcp; ir += AMX_MR)
            ukr_amx(kc / 16, ap + ir * kc, bp + jr / DP_NR * dp_pstride(Kp) + pc * 2 * AMX_NR, ws + ir * ncp + jr, ncp, pc > 0);
      }
      lp_write_back(g, ws, ncp, C, C0, ic, mc, jc, nc);
    }
  }
  if (!bad) amx_tiles_end();
  ct_fast_buf_put(bp);
  ct_fast_buf_put(ap);
  ct_fast_buf_put(ws);
  return bad;
}
static ct_status amx_gemm(const ct_fgemm *g) { return split_gemm(g, AMX_MR, AMX_NR, amx_rect); }
#else
static bool have_amx(void) { return false; }
static ct_status amx_gemm(const ct_fgemm *g) { return dp_gemm(g); }
#endif
#else
#define DP_KERNEL 0
#endif

/* Whether the vdpbf16ps kernel takes g now (for tests and reports). */
static int lowp_path(ct_dtype dt) {
  if (dt != CT_BFLOAT16) return LP_WIDEN;
  int req = lowp_requested();
  if (req == LP_WIDEN) return LP_WIDEN;
#if DP_KERNEL
  if (req != LP_DP && have_amx()) return LP_AMX;
  if (have_avx512bf16()) return LP_DP;
#endif
  return LP_WIDEN;
}
bool ct_fast_gemm_lowp_uses_dpbf16(ct_dtype dt) { return lowp_path(dt) == LP_DP; }
bool ct_fast_gemm_lowp_uses_amx(ct_dtype dt) { return lowp_path(dt) == LP_AMX; }

ct_status ct_fast_gemm_lowp(const ct_fgemm *g) {
  ct_dtype dt = g->dtype;
  if (dt != CT_BFLOAT16 && dt != CT_FLOAT16)
    return CT_ERR(CT_ERR_RUNTIME, "fast gemm: unsupported dtype %s", ct_dtype_name(dt));
  if (g->batch <= 0 || g->M <= 0 || g->N <= 0) return CT_OK;
  int64_t nb = g->batch, M = g->M, N = g->N, K = g->K;
#if DP_KERNEL
  if (K > 0) {
    int path = lowp_path(dt);
    if (path == LP_AMX) return amx_gemm(g);
    if (path == LP_DP) return dp_gemm(g);
  }
#endif
  float *a = widen(dt, g->A, nb, g->a_b, g->a_m, g->a_k, M, K);
  float *b = widen(dt, g->B, nb, g->b_b, g->b_k, g->b_n, K, N);
  float *c0 = g->C0 ? widen(dt, g->C0, nb, g->c0_b, g->c0_m, g->c0_n, M, N) : NULL;
  float *c = ct_fast_buf_get(sizeof(float) * (size_t)(nb * M * N));
  ct_status st = CT_OK;
  if (!a || !b || !c || (g->C0 && !c0)) {
    st = CT_ERR(CT_ERR_OOM, "gemm: out of memory widening %s operands", ct_dtype_name(dt));
  } else {
    ct_fgemm f = *g;
    f.dtype = CT_FLOAT32;
    f.A = a, f.a_b = g->a_b ? M * K : 0, f.a_m = K, f.a_k = 1;
    f.B = b, f.b_b = g->b_b ? K * N : 0, f.b_k = N, f.b_n = 1;
    f.C0 = c0, f.c0_b = g->c0_b ? M * N : 0, f.c0_m = N, f.c0_n = 1;
    f.C = c, f.c_b = M * N, f.c_m = N, f.c_n = 1;
    st = ct_fast_gemm(&f);
    if (st == CT_OK) {
      lw_ctx w = {dt, NULL, g->c_b, g->c_m, g->c_n, M, N, c, (uint16_t *)g->C};
      ct_parallel_for(nb * M, 1 + 32768 / (N + 1), lw_narrow, &w);
    }
  }
  ct_fast_buf_put(a);
  ct_fast_buf_put(b);
  ct_fast_buf_put(c0);
  ct_fast_buf_put(c);
  return st;
}
