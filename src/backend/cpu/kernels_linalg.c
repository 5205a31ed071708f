/* CPU reference kernels for the linalg family: one cache-blocked GEMM over
 * strided operands (ct_cpu_gemm) serves mm, bmm, mv, dot and their add* forms.
 *
 * ct_cpu_gemm is the reference kernel: the "CPU speed" work can put a packed
 * SIMD GEMM beside it with the same descriptor and test against it.
 * Accumulation: float32/float16/bfloat16 accumulate in float, float64 in
 * double, integers in int64 (wrapping, which equals wrapping at every step since
 * + and * commute with reduction mod 2^n). Each C element sums k = 0..K-1 in
 * order, whatever the blocking or the threads (threads split M, N and batch,
 * never K), so results are deterministic. */
#include "cpu_iter.h"
#include "gemm_fast.h"
#include <stdlib.h>

/* C[b] = beta * C0[b] + alpha * A[b] @ B[b] for each batch b. A is M x K, B is
 * K x N, C and C0 are M x N; strides are in elements and may be anything
 * (transposed or broadcast operands need no copy). C0 == NULL means beta = 0
 * and nothing is read (PyTorch ignores self when beta is 0, even NaNs). */
typedef struct {
  ct_dtype dtype; /* of A, B, C and C0 */
  int64_t batch, M, N, K;
  const char *A, *B, *C0;
  char *C;
  int64_t a_b, a_m, a_k;
  int64_t b_b, b_k, b_n;
  int64_t c0_b, c0_m, c0_n;
  int64_t c_b, c_m, c_n;
  double alpha, beta;      /* floating dtypes */
  int64_t alpha_i, beta_i; /* integer dtypes */
} ct_gemm_desc;
ct_status ct_cpu_gemm(const ct_gemm_desc *g);

/* Block sizes: a packed MC x KC panel of A and KC x NC panel of B stay in L2. */
#define MR 4
#define NR 8
#define MC 64
#define NC 256
#define KC 256

typedef struct {
  const ct_gemm_desc *g;
  int64_t mb, nb; /* blocks along M and N */
  bool oom;
} gemm_ctx;

/* ---- packing: strips of MR rows of A / NR columns of B, k-major, zero padded ---- */
#define DEFINE_PACK(SUFFIX, ACC, LOADEXPR)                                                              \
  static void pack_a_##SUFFIX(ACC *dst, const char *A, ct_dtype dt, int64_t isz, int64_t sm, int64_t sk,  \
                              int64_t mc, int64_t kc) {                                                 \
    for (int64_t s = 0; s < mc; s += MR) {                                                              \
      for (int64_t k = 0; k < kc; k++) {                                                                \
        for (int r = 0; r < MR; r++) {                                                                  \
          const char *p = A + ((s + r) * sm + k * sk) * isz;                                            \
          *dst++ = (s + r < mc) ? (LOADEXPR) : (ACC)0;                                                  \
        }                                                                                               \
      }                                                                                                 \
    }                                                                                                   \
  }                                                                                                     \
  static void pack_b_##SUFFIX(ACC *dst, const char *B, ct_dtype dt, int64_t isz, int64_t sk, int64_t sn,  \
                              int64_t kc, int64_t nc) {                                                 \
    for (int64_t s = 0; s < nc; s += NR) {                                                              \
      for (int64_t k = 0; k < kc; k++) {                                                                \
        for (int c = 0; c < NR; c++) {                                                                  \
          const char *p = B + (k * sk + (s + c) * sn) * isz;                                            \
          *dst++ = (s + c < nc) ? (LOADEXPR) : (ACC)0;                                                  \
        }                                                                                               \
      }                                                                                                 \
    }                                                                                                   \
  }

static inline float load_as_float(const char *p, ct_dtype dt) {
  switch (dt) {
    case CT_FLOAT32: return *(const float *)p;
    case CT_FLOAT16: return ct_half_to_float(*(const uint16_t *)p);
    case CT_BFLOAT16: return ct_bf16_to_float(*(const uint16_t *)p);
    default: return (float)ct_load_f64(p, dt);
  }
}
DEFINE_PACK(f32, float, load_as_float(p, dt))
DEFINE_PACK(f64, double, *(const double *)p)
DEFINE_PACK(i64, uint64_t, (uint64_t)ct_load_i64(p, dt))

/* ---- micro kernels: acc[MR x NR tile of an mc x nc row-major buffer] += Ap strip * Bp strip ---- */
#define DEFINE_MICRO(SUFFIX, ACC)                                                                       \
  static void micro_##SUFFIX(ACC *acc, int64_t ldacc, const ACC *ap, const ACC *bp, int64_t kc, int rows, \
                             int cols) {                                                                \
    ACC t[MR][NR];                                                                                      \
    for (int r = 0; r < MR; r++)                                                                        \
      for (int c = 0; c < NR; c++) t[r][c] = (r < rows && c < cols) ? acc[r * ldacc + c] : (ACC)0;      \
    for (int64_t k = 0; k < kc; k++) {                                                                  \
      const ACC *a = ap + k * MR, *b = bp + k * NR;                                                     \
      for (int r = 0; r < MR; r++) {                                                                    \
        ACC av = a[r];                                                                                  \
        for (int c = 0; c < NR; c++) t[r][c] += av * b[c];                                              \
      }                                                                                                 \
    }                                                                                                   \
    for (int r = 0; r < rows; r++)                                                                      \
      for (int c = 0; c < cols; c++) acc[r * ldacc + c] = t[r][c];                                      \
  }
DEFINE_MICRO(f32, float)
DEFINE_MICRO(f64, double)
DEFINE_MICRO(i64, uint64_t)

/* One output tile (batch b, rows i0.., cols j0..) over the whole K, then the store. */
#define DEFINE_TILE(SUFFIX, ACC)                                                                        \
  static void tile_##SUFFIX(const ct_gemm_desc *g, int64_t b, int64_t i0, int64_t mc, int64_t j0, int64_t nc, \
                            ACC *ap, ACC *bp, ACC *acc) {                                               \
    int64_t isz = (int64_t)ct_dtype_size(g->dtype);                                                     \
    memset(acc, 0, sizeof(ACC) * (size_t)(mc * nc));                                                    \
    const char *A = g->A + (b * g->a_b + i0 * g->a_m) * isz;                                            \
    const char *B = g->B + (b * g->b_b + j0 * g->b_n) * isz;                                            \
    for (int64_t k0 = 0; k0 < g->K; k0 += KC) {                                                         \
      int64_t kc = g->K - k0 < KC ? g->K - k0 : KC;                                                     \
      pack_a_##SUFFIX(ap, A + k0 * g->a_k * isz, g->dtype, isz, g->a_m, g->a_k, mc, kc);                \
      pack_b_##SUFFIX(bp, B + k0 * g->b_k * isz, g->dtype, isz, g->b_k, g->b_n, kc, nc);                \
      for (int64_t i = 0; i < mc; i += MR)                                                              \
        for (int64_t j = 0; j < nc; j += NR)                                                            \
          micro_##SUFFIX(acc + i * nc + j, nc, ap + i * kc, bp + j * kc, kc,                            \
                         (int)(mc - i < MR ? mc - i : MR), (int)(nc - j < NR ? nc - j : NR));           \
    }                                                                                                   \
    store_##SUFFIX(g, b, i0, mc, j0, nc, acc);                                                          \
  }

static void store_f32(const ct_gemm_desc *g, int64_t b, int64_t i0, int64_t mc, int64_t j0, int64_t nc,
                      const float *acc) {
  int64_t isz = (int64_t)ct_dtype_size(g->dtype);
  float alpha = (float)g->alpha, beta = (float)g->beta;
  for (int64_t i = 0; i < mc; i++)
    for (int64_t j = 0; j < nc; j++) {
      float v = acc[i * nc + j];
      if (alpha != 1.0f) v *= alpha;
      if (g->C0) v += beta * load_as_float(g->C0 + (b * g->c0_b + (i0 + i) * g->c0_m + (j0 + j) * g->c0_n) * isz, g->dtype);
      char *p = g->C + (b * g->c_b + (i0 + i) * g->c_m + (j0 + j) * g->c_n) * isz;
      switch (g->dtype) {
        case CT_FLOAT32: *(float *)p = v; break;
        case CT_FLOAT16: *(uint16_t *)p = ct_float_to_half(v); break;
        case CT_BFLOAT16: *(uint16_t *)p = ct_float_to_bf16(v); break;
        default: ct_store_f64(p, g->dtype, v); break;
      }
    }
}
static void store_f64(const ct_gemm_desc *g, int64_t b, int64_t i0, int64_t mc, int64_t j0, int64_t nc,
                      const double *acc) {
  for (int64_t i = 0; i < mc; i++)
    for (int64_t j = 0; j < nc; j++) {
      double v = acc[i * nc + j];
      if (g->alpha != 1.0) v *= g->alpha;
      if (g->C0) v += g->beta * *(const double *)(g->C0 + (b * g->c0_b + (i0 + i) * g->c0_m + (j0 + j) * g->c0_n) * 8);
      *(double *)(g->C + (b * g->c_b + (i0 + i) * g->c_m + (j0 + j) * g->c_n) * 8) = v;
    }
}
static void store_i64(const ct_gemm_desc *g, int64_t b, int64_t i0, int64_t mc, int64_t j0, int64_t nc,
                      const uint64_t *acc) {
  int64_t isz = (int64_t)ct_dtype_size(g->dtype);
  for (int64_t i = 0; i < mc; i++)
    for (int64_t j = 0; j < nc; j++) {
      uint64_t v = acc[i * nc + j] * (uint64_t)g->alpha_i;
      if (g->C0)
        v += (uint64_t)g->beta_i *
             (uint64_t)ct_load_i64(g->C0 + (b * g->c0_b + (i0 + i) * g->c0_m + (j0 + j) * g->c0_n) * isz, g->dtype);
      ct_store_i64(g->C + (b * g->c_b + (i0 + i) * g->c_m + (j0 + j) * g->c_n) * isz, g->dtype, (int64_t)v);
    }
}
DEFINE_TILE(f32, float)
DEFINE_TILE(f64, double)
DEFINE_TILE(i64, uint64_t)

static int acc_kind(ct_dtype dt) {
  if (dt == CT_FLOAT64) return 1;
  if (ct_dtype_is_floating(dt)) return 0;
  return 2;
}

static void gemm_range(void *vctx, int64_t begin, int64_t end) {
  gemm_ctx *x = vctx;
  const ct_gemm_desc *g = x->g;
  int kind = acc_kind(g->dtype);
  size_t esz = kind == 0 ? sizeof(float) : 8;
  int64_t kc = g->K < KC ? g->K : KC;
  if (kc < 1) kc = 1;
  int64_t mcap = ((g->M < MC ? g->M : MC) + MR - 1) / MR * MR, ncap = ((g->N < NC ? g->N : NC) + NR - 1) / NR * NR;
  void *ap = malloc(esz * (size_t)(mcap * kc)), *bp = malloc(esz * (size_t)(ncap * kc)),
       *acc = malloc(esz * (size_t)(mcap * ncap));
  if (!ap || !bp || !acc) {
    x->oom = true;
  } else {
    for (int64_t t = begin; t < end; t++) {
      int64_t nbi = t % x->nb, rest = t / x->nb, mbi = rest % x->mb, b = rest / x->mb;
      int64_t i0 = mbi * MC, j0 = nbi * NC;
      int64_t mc = g->M - i0 < MC ? g->M - i0 : MC, nc = g->N - j0 < NC ? g->N - j0 : NC;
      if (kind == 0) tile_f32(g, b, i0, mc, j0, nc, ap, bp, acc);
      else if (kind == 1) tile_f64(g, b, i0, mc, j0, nc, ap, bp, acc);
      else tile_i64(g, b, i0, mc, j0, nc, ap, bp, acc);
    }
  }
  free(ap);
  free(bp);
  free(acc);
}

ct_status ct_cpu_gemm(const ct_gemm_desc *g) {
  if (g->batch <= 0 || g->M <= 0 || g->N <= 0) return CT_OK;
  if (ct_fast_gemm_wants(g->dtype)) { /* packed SIMD GEMM (gemm_packed.c); this file stays the reference */
    ct_fgemm f = {g->dtype, g->batch, g->M, g->N, g->K, g->A, g->B, g->C0, g->C, g->a_b, g->a_m, g->a_k,
                  g->b_b, g->b_k, g->b_n, g->c0_b, g->c0_m, g->c0_n, g->c_b, g->c_m, g->c_n, g->alpha, g->beta};
    return ct_fast_gemm(&f);
  }
  gemm_ctx x = {g, (g->M + MC - 1) / MC, (g->N + NC - 1) / NC, false};
  int64_t tiles = g->batch * x.mb * x.nb;
  /* work per tile ~ MC*NC*K; below ~1M multiply-adds in all, stay on this thread */
  double work = (double)g->batch * (double)g->M * (double)g->N * (double)(g->K + 1);
  int64_t grain = work < 1e6 ? tiles : 1;
  ct_parallel_for(tiles, grain, gemm_range, &x);
  if (x.oom) return CT_ERR(CT_ERR_OOM, "gemm: out of memory for packing buffers");
  return CT_OK;
}

/* ---- the op kernel: builds a descriptor from the call ----
 * mm:      in0 [M,K], in1 [K,N]                 out [M,N]
 * bmm:     in0 [B,M,K], in1 [B,K,N]             out [B,M,N]
 * mv:      in0 [M,K], in1 [K]                   out [M]
 * dot:     in0 [K], in1 [K]                     out []
 * addmm / baddbmm / addmv: in0 = self already expanded to out's shape and cast,
 *          in1, in2 as above; f0 alpha, f1 beta (s0/s1 keep them for integer dtypes). */
ct_status ct_cpu_linalg(const ct_call *c) {
  ct_gemm_desc g;
  memset(&g, 0, sizeof g);
  const ct_tensor *o = c->out[0];
  int op = c->op;
  bool add = op == CT_OP_addmm || op == CT_OP_baddbmm || op == CT_OP_addmv;
  const ct_tensor *a = c->in[add ? 1 : 0], *b = c->in[add ? 2 : 1], *s = add ? c->in[0] : NULL;
  g.dtype = o->dtype;
  g.A = ct_cpu_ptr(a);
  g.B = ct_cpu_ptr(b);
  g.C = ct_cpu_ptr(o);
  g.batch = 1;
  g.alpha = 1;
  g.alpha_i = 1;
  if (add) {
    g.alpha = c->a.f[0];
    g.beta = c->a.f[1];
    g.alpha_i = c->a.s[0].kind == CT_SCALAR_FLOAT ? (int64_t)c->a.s[0].f : c->a.s[0].i;
    g.beta_i = c->a.s[1].kind == CT_SCALAR_FLOAT ? (int64_t)c->a.s[1].f : c->a.s[1].i;
    bool beta_zero = ct_dtype_is_floating(g.dtype) ? g.beta == 0 : g.beta_i == 0;
    if (!beta_zero) g.C0 = ct_cpu_ptr(s);
  }
  if (op == CT_OP_mm || op == CT_OP_addmm) {
    g.M = a->shape[0], g.K = a->shape[1], g.N = b->shape[1];
    g.a_m = a->stride[0], g.a_k = a->stride[1];
    g.b_k = b->stride[0], g.b_n = b->stride[1];
    g.c_m = o->stride[0], g.c_n = o->stride[1];
    if (s) g.c0_m = s->stride[0], g.c0_n = s->stride[1];
  } else if (op == CT_OP_bmm || op == CT_OP_baddbmm) {
    g.batch = a->shape[0], g.M = a->shape[1], g.K = a->shape[2], g.N = b->shape[2];
    g.a_b = a->stride[0], g.a_m = a->stride[1], g.a_k = a->stride[2];
    g.b_b = b->stride[0], g.b_k = b->stride[1], g.b_n = b->stride[2];
    g.c_b = o->stride[0], g.c_m = o->stride[1], g.c_n = o->stride[2];
    if (s) g.c0_b = s->stride[0], g.c0_m = s->stride[1], g.c0_n = s->stride[2];
  } else if (op == CT_OP_mv || op == CT_OP_addmv) {
    g.M = a->shape[0], g.K = a->shape[1], g.N = 1;
    g.a_m = a->stride[0], g.a_k = a->stride[1];
    g.b_k = b->stride[0];
    g.c_m = o->stride[0];
    if (s) g.c0_m = s->stride[0];
  } else if (op == CT_OP_dot) {
    g.M = 1, g.N = 1, g.K = a->shape[0];
    g.a_k = a->stride[0];
    g.b_k = b->stride[0];
  } else {
    return CT_ERR(CT_ERR_RUNTIME, "ct_cpu_linalg: unexpected op %d", op);
  }
  return ct_cpu_gemm(&g);
}
