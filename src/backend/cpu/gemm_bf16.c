/* bfloat16 / float16 GEMM with float32 accumulation (issue 3 item 2), for matmul/bmm/addmm
 * on tensors of those dtypes when the fast kernels are on.
 *
 * The operands are widened to float32 (exact: every bf16/f16 value is a float), multiplied
 * by the packed float32 GEMM (gemm_packed.c: same blocking, threads and k order), and the
 * result rounded once to the output dtype, so C = round(beta C0 + alpha sum_k a_ik b_kj)
 * with the sum in float32 like the reference kernel (kernels_linalg.c) and PyTorch's CPU
 * path. The widening is O(MK + KN) next to the O(MNK) product. bf16 -> f32 is a 16-bit
 * shift (vectorised by the compiler); f16 -> f32 uses F16C (vcvtph2ps) when the CPU has it,
 * detected at run time, else the portable conversion. Not done: a micro-kernel on
 * AVX-512 BF16's vdpbf16ps (pairs of bf16 products accumulated in f32 without widening);
 * ct_fast_gemm_lowp_isa reports what the CPU offers. */
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

const char *ct_fast_gemm_lowp_isa(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (cpu_avx512bf16()) return "avx512_bf16 present (widened to the f32 kernel)";
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
  float *d = malloc(sizeof(float) * (size_t)(nb * R * C > 0 ? nb * R * C : 1));
  if (!d) return NULL;
  lw_ctx w = {dt, src, sb, sr, sc, R, C, d, NULL};
  ct_parallel_for(nb * R, 1 + 32768 / (C + 1), lw_widen, &w);
  return d;
}

ct_status ct_fast_gemm_lowp(const ct_fgemm *g) {
  ct_dtype dt = g->dtype;
  if (dt != CT_BFLOAT16 && dt != CT_FLOAT16)
    return CT_ERR(CT_ERR_RUNTIME, "fast gemm: unsupported dtype %s", ct_dtype_name(dt));
  if (g->batch <= 0 || g->M <= 0 || g->N <= 0) return CT_OK;
  int64_t nb = g->batch, M = g->M, N = g->N, K = g->K;
  float *a = widen(dt, g->A, nb, g->a_b, g->a_m, g->a_k, M, K);
  float *b = widen(dt, g->B, nb, g->b_b, g->b_k, g->b_n, K, N);
  float *c0 = g->C0 ? widen(dt, g->C0, nb, g->c0_b, g->c0_m, g->c0_n, M, N) : NULL;
  float *c = malloc(sizeof(float) * (size_t)(nb * M * N));
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
  free(a);
  free(b);
  free(c0);
  free(c);
  return st;
}
