/* The fast GEMM's shared-B path (2+ threads on one product: B packed once, units claimed by the
 * threads; gemm_packed.c coop_gemm) against the rectangle split and 1 thread: bit-identical, since
 * each C element sums its k blocks in the same order with the same micro-kernel. Shapes cross the
 * NC (columns), KC (k) and MC (rows) blocks with tails; transposed / strided operands; addmm with
 * beta and alpha; every SIMD level the CPU has. */
#include "test.h"
#include "backend/cpu/gemm_fast.h"
#include "backend/cpu/simd/simd.h"

static uint64_t gs_state = 0x2545F4914F6CDD1Dull;

/* r x c, layout 0 row-major, 1 a transposed view, 2 every other column of a wider matrix */
static ct_tensor *gs_matrix(int64_t r, int64_t c, int layout, ct_dtype dt) {
  if (layout == 1) {
    int64_t s[2] = {c, r};
    ct_tensor *t = tt_rand(&gs_state, 2, s, dt, 1, 0, false), *v = ct_t(t);
    ct_release(t);
    return v;
  }
  if (layout == 2) {
    int64_t s[2] = {r, 2 * c};
    ct_tensor *t = tt_rand(&gs_state, 2, s, dt, 1, 0, false), *v = ct_slice(t, 1, 0, 2 * c, 2);
    ct_release(t);
    return v;
  }
  int64_t s[2] = {r, c};
  return tt_rand(&gs_state, 2, s, dt, 1, 0, false);
}

static ct_tensor *gs_run(ct_tensor *a, ct_tensor *b, ct_tensor *c0, int threads, int shared) {
  ct_set_num_threads(threads);
  ct_fast_gemm_set_shared_b(shared);
  ct_tensor *r = c0 ? ct_addmm(c0, a, b, ct_sf(0.75), ct_sf(-1.5)) : ct_matmul(a, b);
  ct_fast_gemm_set_shared_b(-1);
  return r;
}

TEST(gemm_shared_b_bit_identical) {
  /* M, N, K: over NC (2048 f32 / 1024 f64) with a tail, over KC (256) with a tail, many MC row
   * blocks, a few rows only (panel ranges split instead), a few columns only */
  static const int64_t shapes[][3] = {{250, 2100, 300}, {1000, 40, 513}, {5, 3000, 600}, {13, 1100, 260},
                                      {300, 300, 300},  {97, 129, 1000}};
  int was_threads = ct_get_num_threads();
  bool was_fast = ct_fast_enabled();
  ct_simd_isa was_lvl = ct_simd_active();
  ct_fast_set_enabled(true);
  int cases = 0;
  for (int lvl = CT_SIMD_PORTABLE; lvl <= (int)ct_simd_cpu_level(); lvl++) {
    ct_simd_force((ct_simd_isa)lvl);
    for (int dti = 0; dti < 2; dti++) {
      ct_dtype dt = dti ? CT_FLOAT64 : CT_FLOAT32;
      for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
        int form = (int)(si + (size_t)dti + (size_t)lvl) % 3; /* rotate layouts and addmm over the cases */
        ct_tensor *a = gs_matrix(M, K, form == 2 ? 1 : 0, dt), *b = gs_matrix(K, N, form, dt);
        int64_t cs[2] = {M, N};
        ct_tensor *c0 = form == 1 ? tt_rand(&gs_state, 2, cs, dt, 1, 0, false) : NULL;
        ct_tensor *r1 = gs_run(a, b, c0, 1, 0), *r2 = gs_run(a, b, c0, 2, 1), *r3 = gs_run(a, b, c0, 2, 0);
        CHECK(r1 && r2 && r3);
        if (r1 && r2 && r3) {
          CHECK(tt_allclose(r2, r1, 0, 0));
          CHECK(tt_allclose(r3, r1, 0, 0));
        }
        cases++;
        ct_release(r1);
        ct_release(r2);
        ct_release(r3);
        ct_release(c0);
        ct_release(a);
        ct_release(b);
      }
    }
  }
  ct_simd_force(was_lvl);
  ct_fast_set_enabled(was_fast);
  ct_set_num_threads(was_threads);
  CHECK(cases >= 12);
}

/* Many back-to-back shared products of one size (the threads race on the block counters and the
 * per-unit flags each time), on 2-4 threads: every result equals the 1-thread one bit for bit, also
 * against the reference kernels within float32 rounding. */
TEST(gemm_shared_b_repeated_and_vs_reference) {
  int was_threads = ct_get_num_threads();
  bool was_fast = ct_fast_enabled();
  int64_t sa[2] = {190, 700}, sb[2] = {700, 260};
  ct_tensor *a = tt_rand(&gs_state, 2, sa, CT_FLOAT32, 1, 0, false), *b = tt_rand(&gs_state, 2, sb, CT_FLOAT32, 1, 0, false);
  ct_fast_set_enabled(false);
  ct_tensor *ref = ct_matmul(a, b);
  ct_fast_set_enabled(true);
  ct_tensor *r1 = gs_run(a, b, NULL, 1, 0);
  CHECK(ref && r1);
  /* 700 products of 2^-24-rounded terms, summed in another order than the reference */
  if (ref && r1) CHECK(tt_allclose(r1, ref, 1e-5, 700 * 0x1p-24 * 3));
  int same = 0;
  for (int i = 0; i < 40 && r1; i++) { /* 2, 3 and 4 threads (more threads than cores: preempted claimers) */
    ct_tensor *r2 = gs_run(a, b, NULL, 2 + i % 3, 1);
    same += r2 && tt_allclose(r2, r1, 0, 0);
    ct_release(r2);
  }
  CHECK(same == 40);
  ct_release(ref);
  ct_release(r1);
  ct_release(a);
  ct_release(b);
  ct_fast_set_enabled(was_fast);
  ct_set_num_threads(was_threads);
}
