/* The packed, cache-blocked SIMD GEMM (float32 and float64) that replaces the
 * reference ct_cpu_gemm for floating point when CT_REFERENCE_KERNELS is unset.
 *
 * C[b] = beta * C0[b] + alpha * A[b] @ B[b]: A is M x K, B is K x N, C and C0 are
 * M x N, strides in elements and arbitrary (transposed operands are handled while
 * packing, never copied whole). C0 == NULL means beta = 0 and nothing is read.
 * Each C element accumulates k in order (blocks of KC, FMA within a block), and
 * threads split M, N and batch, never K, so results do not depend on the thread
 * count. */
#ifndef CT_GEMM_FAST_H
#define CT_GEMM_FAST_H
#include "core/internal.h"

typedef struct {
  ct_dtype dtype; /* CT_FLOAT32 or CT_FLOAT64 */
  int64_t batch, M, N, K;
  const void *A, *B, *C0; /* element 0 of each operand */
  void *C;
  int64_t a_b, a_m, a_k;
  int64_t b_b, b_k, b_n;
  int64_t c0_b, c0_m, c0_n;
  int64_t c_b, c_m, c_n;
  double alpha, beta;
  /* optional: A already packed by ct_fast_gemm_pack_a (weights reused across calls, e.g. an eval
   * conv's). Used instead of A when it was packed for this dtype, batch (or batch 1 with a_b 0),
   * M and K with the micro-kernel active now; otherwise A is packed as usual. Same results. */
  const struct ct_gemm_apack *A_packed;
} ct_fgemm;

/* g's A (every batch; one when a_b is 0) packed into the micro-kernel's panels, for later calls
 * that set A_packed; NULL when out of memory (error set). Free with ct_fast_gemm_apack_free. */
struct ct_gemm_apack *ct_fast_gemm_pack_a(const ct_fgemm *g);
void ct_fast_gemm_apack_free(struct ct_gemm_apack *p);
/* Whether a call g would use p (packed for its dtype, batch, M, K and the active micro-kernel). */
bool ct_fast_gemm_apack_fits(const struct ct_gemm_apack *p, const ct_fgemm *g);
size_t ct_fast_gemm_apack_bytes(const struct ct_gemm_apack *p);

/* Whether the fast GEMM runs for this dtype now (fast kernels on, f32/f64). */
bool ct_fast_gemm_wants(ct_dtype dt);
/* Runs it; CT_OK or an out-of-memory error. */
ct_status ct_fast_gemm(const ct_fgemm *g);
/* How many tasks (rectangles of C over all batches) the fast GEMM splits g into for `threads`
 * threads (0 for an empty or unsupported g); for tests of the partitioning. */
int64_t ct_fast_gemm_plan(const ct_fgemm *g, int threads);
/* Shared B packing for one large product on several threads: 1 on, 0 off (the rectangle split,
 * each task packing its own panels), -1 back to the default (off; CT_GEMM_SHARED_B=1 turns it on).
 * Both give bit-identical results; for tests and A/B benchmarks. */
void ct_fast_gemm_set_shared_b(int on);
/* Which micro-kernel the fast GEMM uses now, e.g. "avx512 12x32". */
const char *ct_fast_gemm_kernel_name(ct_dtype dt);

/* Task t of a split of C into batch x tm x tn rectangles of rm x rn (the last ones clipped):
 * r = {batch, i0, i1, j0, j1}; false when the rectangle is empty (past M or N). One decoding
 * for the float32/float64 split (gemm_packed.c) and the bf16 kernel's (gemm_bf16.c). */
static inline bool ct_gemm_task_rect(const ct_fgemm *g, int64_t t, int64_t tm, int64_t tn, int64_t rm, int64_t rn,
                                     int64_t r[5]) {
  int64_t per = tm * tn, q = t % per, i0 = q / tn * rm, j0 = q % tn * rn;
  r[0] = t / per;
  r[1] = i0;
  r[2] = i0 + rm < g->M ? i0 + rm : g->M;
  r[3] = j0;
  r[4] = j0 + rn < g->N ? j0 + rn : g->N;
  return r[1] < r[2] && r[3] < r[4];
}

/* A 64-byte aligned scratch buffer from the GEMM's buffer cache (reused across calls, so
 * large workspaces are not page-faulted each time); NULL when out of memory. Give it back
 * with ct_fast_buf_put. */
void *ct_fast_buf_get(size_t bytes);
void ct_fast_buf_put(void *p);
/* Bytes the buffer cache holds now (idle buffers), and the most it keeps: a buffer given back
 * beyond that is freed (smaller cached ones go first). */
size_t ct_fast_buf_cached_bytes(void);
size_t ct_fast_buf_cache_limit(void);

#if defined(__x86_64__)
/* d[j ldd + i] = s[i ld + j] for an 8 x 8 float block, in registers (AVX2; the caller checks the CPU) */
void ct_tr8x8_f32(const float *s, int64_t ld, float *d, int64_t ldd);
#endif
#endif
