/* bfloat16 / float16 matmul through the fast GEMM (src/backend/cpu/gemm_bf16.c) against the
 * float32 GEMM of the same (rounded) inputs: plain, transposed operands, batched with a
 * broadcast operand, addmm with beta/alpha. Tolerance per element: one unit in the last
 * place of the 16-bit result (the float32 sums of the two paths may round to neighbouring
 * 16-bit values) plus 2 K 2^-24 sum_k |a_ik b_kj| (float32 summation in another order). */
#include "test.h"
#include "backend/cpu/simd/simd.h"
#include <stdlib.h>

static uint64_t lp_state = 0x9E3779B97F4A7C15ull;

/* got (16-bit) vs want / bound (float32 results of the widened inputs) */
static void lp_check(const char *what, const ct_tensor *got, const ct_tensor *want, const ct_tensor *absprod,
                     int64_t K, ct_dtype dt) {
  int64_t n = ct_numel(want);
  CHECK(got && ct_numel(got) == n && ct_tensor_dtype(got) == dt);
  if (!got || ct_numel(got) != n) return;
  double *g = malloc(8 * (size_t)n), *w = malloc(8 * (size_t)n), *a = malloc(8 * (size_t)n);
  ct_copy_to_buffer(got, g, CT_FLOAT64, n);
  ct_copy_to_buffer(want, w, CT_FLOAT64, n);
  ct_copy_to_buffer(absprod, a, CT_FLOAT64, n);
  int bits = dt == CT_BFLOAT16 ? 8 : 11; /* significand bits */
  int bad = 0;
  for (int64_t i = 0; i < n && bad < 3; i++) {
    int e;
    frexp(fabs(w[i]) > 0 ? fabs(w[i]) : 1e-30, &e);
    double ulp = ldexp(1.0, e - bits), tol = ulp + 2.0 * (double)K * 0x1p-24 * a[i];
    if (!(fabs(g[i] - w[i]) <= tol)) {
      ct_test_fail(__FILE__, __LINE__, "%s [%s]: element %lld = %.8g, want %.8g (tol %.3g)", what, ct_dtype_name(dt),
                   (long long)i, g[i], w[i], tol);
      bad++;
    }
  }
  free(g);
  free(w);
  free(a);
}

/* out = op(a, b) in dt vs the same op in float32 of a, b widened, rounded to dt */
static void lp_case(const char *what, ct_tensor *a, ct_tensor *b, int64_t K, ct_dtype dt) {
  ct_tensor *got = ct_matmul(a, b);
  ct_tensor *af = ct_to_dtype(a, CT_FLOAT32), *bf = ct_to_dtype(b, CT_FLOAT32);
  ct_tensor *wf = ct_matmul(af, bf), *want = wf ? ct_to_dtype(wf, dt) : NULL;
  ct_tensor *aa = ct_abs(af), *ba = ct_abs(bf), *ap = aa && ba ? ct_matmul(aa, ba) : NULL;
  CHECK(want != NULL && ap != NULL);
  if (want && ap) lp_check(what, got, wf, ap, K, dt);
  ct_tensor *ts[] = {got, af, bf, wf, want, aa, ba, ap};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ct_release(ts[i]);
}

TEST(gemm_bf16_f16_vs_float32_of_rounded_inputs) {
  static const ct_dtype dts[] = {CT_BFLOAT16, CT_FLOAT16};
  static const int64_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 65, 17}, {64, 48, 300}, {130, 70, 129}};
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = dts[di];
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      int64_t M = shapes[si][0], K = shapes[si][1], N = shapes[si][2];
      int64_t sa[2] = {M, K}, sb[2] = {K, N}, sbt[2] = {N, K};
      ct_tensor *a = tt_rand(&lp_state, 2, sa, dt, 2, 0, false), *b = tt_rand(&lp_state, 2, sb, dt, 2, 0, false), *bt = tt_rand(&lp_state, 2, sbt, dt, 2, 0, false);
      lp_case("mm", a, b, K, dt);
      ct_tensor *btt = ct_t(bt); /* a transposed operand (strided, not copied) */
      lp_case("mm B^T", a, btt, K, dt);
      /* batched, B broadcast over the batch */
      int64_t s3[3] = {3, M, K};
      ct_tensor *a3 = tt_rand(&lp_state, 3, s3, dt, 2, 0, false);
      lp_case("bmm broadcast", a3, b, K, dt);
      ct_release(btt);
      ct_release(a3);
      ct_release(a);
      ct_release(b);
      ct_release(bt);
    }
    /* addmm: beta C0 + alpha A B */
    int64_t sa[2] = {9, 20}, sb[2] = {20, 11}, sc[2] = {9, 11};
    ct_tensor *a = tt_rand(&lp_state, 2, sa, dt, 2, 0, false), *b = tt_rand(&lp_state, 2, sb, dt, 2, 0, false), *c0 = tt_rand(&lp_state, 2, sc, dt, 2, 0, false);
    ct_tensor *got = ct_addmm(c0, a, b, ct_sf(0.5), ct_sf(2.0));
    ct_tensor *af = ct_to_dtype(a, CT_FLOAT32), *bf = ct_to_dtype(b, CT_FLOAT32), *cf = ct_to_dtype(c0, CT_FLOAT32);
    ct_tensor *wf = ct_addmm(cf, af, bf, ct_sf(0.5), ct_sf(2.0));
    ct_tensor *aa = ct_abs(af), *ba = ct_abs(bf), *ca = ct_abs(cf);
    ct_tensor *ap0 = ct_addmm(ca, aa, ba, ct_sf(0.5), ct_sf(2.0)); /* |beta C0| + |alpha| sum |a b| */
    CHECK(got && wf && ap0);
    if (got && wf && ap0) lp_check("addmm", got, wf, ap0, 20, dt);
    ct_tensor *ts[] = {a, b, c0, got, af, bf, cf, wf, aa, ba, ca, ap0};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ct_release(ts[i]);
  }
}

/* the fast path is the one that ran: with the fast kernels off the reference kernel gives
 * the same values within the same bound */
TEST(gemm_bf16_fast_vs_reference_kernel) {
  int64_t sa[2] = {40, 70}, sb[2] = {70, 30};
  ct_tensor *a = tt_rand(&lp_state, 2, sa, CT_BFLOAT16, 2, 0, false), *b = tt_rand(&lp_state, 2, sb, CT_BFLOAT16, 2, 0, false);
  ct_tensor *fast = ct_matmul(a, b);
  ct_fast_set_enabled(false);
  ct_tensor *ref = ct_matmul(a, b);
  ct_fast_set_enabled(true);
  ct_tensor *af = ct_to_dtype(a, CT_FLOAT32), *bf = ct_to_dtype(b, CT_FLOAT32);
  ct_tensor *rf = ref ? ct_to_dtype(ref, CT_FLOAT32) : NULL;
  ct_tensor *aa = ct_abs(af), *ba = ct_abs(bf), *ap = ct_matmul(aa, ba);
  CHECK(fast && rf && ap);
  if (fast && rf && ap) lp_check("fast vs reference", fast, rf, ap, 70, CT_BFLOAT16);
  ct_tensor *ts[] = {a, b, fast, ref, af, bf, rf, aa, ba, ap};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ct_release(ts[i]);
}
