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

/* ---- the AVX512_BF16 vdpbf16ps kernel (gemm_bf16.c) vs the widening path, forced with
 * ct_fast_gemm_lowp_force_widen. Both sum float32 products of the same (exact) bf16 inputs in a
 * different order (vdpbf16ps adds a k-pair's odd product, then the even one) and round once to
 * bf16, so each is within one bf16 ulp + 2 K 2^-24 sum|a b| of the float32 matmul of the widened
 * inputs (lp_check's bound), and they agree bit for bit on most elements. ---- */
#include "backend/cpu/gemm_bf16.h"

/* The same tests run on the vdpbf16ps kernel (path 2, "dpbf16" tests) and on the AMX tdpbf16ps kernel
 * (path 3, "amx" tests: tdpbf16ps also treats denormal inputs as zero, rounds to nearest-even, and
 * sums in its own order), each forced with ct_fast_gemm_lowp_force_path; fp_cur is the path under
 * test, the widening path (1) the comparison. */
static int fp_cur = 2;
static int dp_skip_reported, amx_skip_reported;
static bool fp_begin(int path) {
  fp_cur = path;
  ct_fast_gemm_lowp_force_path(path);
  bool on = path == 3 ? ct_fast_gemm_lowp_uses_amx(CT_BFLOAT16) : ct_fast_gemm_lowp_uses_dpbf16(CT_BFLOAT16);
  if (!on) {
    ct_fast_gemm_lowp_force_path(-1);
    if (path == 3 && !amx_skip_reported++) printf("  [skip 1: gemm_bf16 amx tests: CPU or OS lacks AMX-BF16/AMX-TILE]\n");
    if (path != 3 && !dp_skip_reported++) printf("  [skip 1: gemm_bf16 dpbf16 tests: CPU lacks AVX512_BF16]\n");
  }
  return on;
}
static void fp_end(void) { ct_fast_gemm_lowp_force_path(-1); }
/* the widening path for one product, then back to the path under test */
static void fp_widen(int on) { ct_fast_gemm_lowp_force_path(on ? 1 : fp_cur); }

/* op(a, b) via the dp kernel and via widening, each vs float32 of the widened inputs, and vs each other */
typedef ct_tensor *(*dp_op)(ct_tensor *a, ct_tensor *b, ct_tensor *c);
static ct_tensor *dp_mm(ct_tensor *a, ct_tensor *b, ct_tensor *c) { return ct_matmul(a, b); }
static ct_tensor *dp_addmm(ct_tensor *a, ct_tensor *b, ct_tensor *c) { return ct_addmm(c, a, b, ct_sf(-0.75), ct_sf(1.5)); }
static void dp_case(const char *what, dp_op op, ct_tensor *a, ct_tensor *b, ct_tensor *c, int64_t K) {
  ct_tensor *dp = op(a, b, c);
  fp_widen(1);
  ct_tensor *wd = op(a, b, c);
  fp_widen(0);
  ct_tensor *af = ct_to_dtype(a, CT_FLOAT32), *bf = ct_to_dtype(b, CT_FLOAT32), *cf = c ? ct_to_dtype(c, CT_FLOAT32) : NULL;
  ct_tensor *wf = op(af, bf, cf);
  ct_tensor *aa = ct_abs(af), *ba = ct_abs(bf), *ca = cf ? ct_abs(cf) : NULL;
  ct_tensor *ap = c ? ct_addmm(ca, aa, ba, ct_sf(0.75), ct_sf(1.5)) : ct_matmul(aa, ba);
  ct_tensor *wdf = wd ? ct_to_dtype(wd, CT_FLOAT32) : NULL;
  CHECK(dp && wd && wf && ap && wdf);
  if (dp && wd && wf && ap && wdf) {
    char w[128];
    const char *kn = fp_cur == 3 ? "amx" : "dpbf16";
    snprintf(w, sizeof w, "%s %s vs f32", what, kn);
    lp_check(w, dp, wf, ap, K, CT_BFLOAT16);
    snprintf(w, sizeof w, "%s widen vs f32", what);
    lp_check(w, wd, wf, ap, K, CT_BFLOAT16);
    snprintf(w, sizeof w, "%s %s vs widen", what, kn);
    lp_check(w, dp, wdf, ap, 2 * K, CT_BFLOAT16);
  }
  ct_tensor *ts[] = {dp, wd, af, bf, cf, wf, aa, ba, ca, ap, wdf};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ct_release(ts[i]);
}

static void fp_vs_widening_shapes(int path) {
  if (!fp_begin(path)) return;
  /* odd M/N/K, K = 1 and 2, K past one KC block (512), N past one NC block (1024), M past MC (240) */
  static const int64_t shapes[][3] = {{1, 1, 1},     {5, 1, 7},     {3, 2, 33},    {13, 7, 31},   {37, 129, 65}, {250, 33, 70},
                                      {20, 1100, 40}, {17, 45, 1050}, {40, 64, 48}, {33, 513, 31}, {64, 32, 64}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    int64_t M = shapes[si][0], K = shapes[si][1], N = shapes[si][2];
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sat[2] = {K, M}, sbt[2] = {N, K}, sc[2] = {M, N};
    ct_tensor *a = tt_rand(&lp_state, 2, sa, CT_BFLOAT16, 2, 0, false), *b = tt_rand(&lp_state, 2, sb, CT_BFLOAT16, 2, 0, false);
    ct_tensor *at = tt_rand(&lp_state, 2, sat, CT_BFLOAT16, 2, 0, false), *bt = tt_rand(&lp_state, 2, sbt, CT_BFLOAT16, 2, 0, false);
    ct_tensor *c = tt_rand(&lp_state, 2, sc, CT_BFLOAT16, 2, 0, false);
    ct_tensor *att = ct_t(at), *btt = ct_t(bt); /* transposed operands, strided views */
    dp_case("mm", dp_mm, a, b, NULL, K);
    dp_case("mm A^T B^T", dp_mm, att, btt, NULL, K);
    dp_case("addmm", dp_addmm, a, btt, c, K);
    ct_tensor *ts[] = {a, b, at, bt, c, att, btt};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ct_release(ts[i]);
  }
  /* strided (every other column of a wider tensor) and batched: bmm with both operands batched, and
   * matmul broadcasting B over a batch */
  int64_t sw[2] = {19, 46}, sb3[3] = {4, 23, 27}, sa3[3] = {4, 19, 23}, sb2[2] = {23, 27};
  ct_tensor *wide = tt_rand(&lp_state, 2, sw, CT_BFLOAT16, 2, 0, false), *as = ct_slice(wide, 1, 0, 46, 2);
  ct_tensor *a3 = tt_rand(&lp_state, 3, sa3, CT_BFLOAT16, 2, 0, false), *b3 = tt_rand(&lp_state, 3, sb3, CT_BFLOAT16, 2, 0, false);
  ct_tensor *b2 = tt_rand(&lp_state, 2, sb2, CT_BFLOAT16, 2, 0, false);
  CHECK(as && a3 && b3 && b2);
  if (as && a3 && b3 && b2) {
    dp_case("mm strided A", dp_mm, as, b2, NULL, 23);
    dp_case("bmm", dp_mm, a3, b3, NULL, 23);
    dp_case("matmul broadcast B", dp_mm, a3, b2, NULL, 23);
  }
  ct_tensor *ts[] = {wide, as, a3, b3, b2};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ct_release(ts[i]);
  fp_end();
}

/* results do not depend on the thread count (threads split M and N, never K) */
static void fp_threads_bitwise(int path) {
  if (!fp_begin(path)) return;
  int64_t sa[2] = {200, 300}, sb[2] = {300, 150};
  ct_tensor *a = tt_rand(&lp_state, 2, sa, CT_BFLOAT16, 2, 0, false), *b = tt_rand(&lp_state, 2, sb, CT_BFLOAT16, 2, 0, false);
  int nt = ct_get_num_threads();
  ct_set_num_threads(1);
  ct_tensor *r1 = ct_matmul(a, b);
  ct_set_num_threads(4);
  ct_tensor *r4 = ct_matmul(a, b);
  ct_set_num_threads(nt);
  CHECK(r1 && r4);
  if (r1 && r4) {
    uint16_t *x = malloc(2 * 200 * 150), *y = malloc(2 * 200 * 150);
    ct_copy_to_buffer(r1, x, CT_BFLOAT16, 200 * 150);
    ct_copy_to_buffer(r4, y, CT_BFLOAT16, 200 * 150);
    CHECK(memcmp(x, y, 2 * 200 * 150) == 0);
    free(x);
    free(y);
  }
  ct_tensor *ts[] = {a, b, r1, r4};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ct_release(ts[i]);
  fp_end();
}

/* NaN and inf propagate as in the widening path (same NaN / inf / sign pattern); denormal bf16
 * inputs: vdpbf16ps treats them as zero (DAZ), so a product of a denormal with 2^100 is 0 here
 * where the widening path gives 2^-30; empty shapes and K = 0 (C = beta C0). */
static void fp_special_values(int path) {
  if (!fp_begin(path)) return;
  float av[4 * 3] = {1, 2, 3, /**/ NAN, 1, 1, /**/ INFINITY, 1, 1, /**/ 1, -1, 0.5f};
  float bv[3 * 5] = {1, 2, 3, 4, 5, /**/ 1, 1, INFINITY, 1, 1, /**/ 2, 2, 2, 2, -INFINITY};
  int64_t sa[2] = {4, 3}, sb[2] = {3, 5};
  ct_options o = ct_opts_dtype(CT_BFLOAT16);
  ct_tensor *a = ct_from_buffer(av, CT_FLOAT32, 2, sa, o), *b = ct_from_buffer(bv, CT_FLOAT32, 2, sb, o);
  ct_tensor *dp = ct_matmul(a, b);
  fp_widen(1);
  ct_tensor *wd = ct_matmul(a, b);
  fp_widen(0);
  CHECK(dp && wd);
  if (dp && wd) {
    float x[20], y[20];
    ct_copy_to_buffer(dp, x, CT_FLOAT32, 20);
    ct_copy_to_buffer(wd, y, CT_FLOAT32, 20);
    int bad = 0, nans = 0;
    for (int i = 0; i < 20; i++) {
      nans += isnan(y[i]);
      if (isnan(x[i]) != isnan(y[i]) || (!isnan(y[i]) && x[i] != y[i])) bad++;
    }
    CHECK(bad == 0);
    CHECK(nans >= 5); /* row 1 (NaN) at least */
  }
  /* denormals: a = 2^-130 (bf16 denormal), b = 2^100 */
  float dv = ldexpf(1.0f, -130), bigv = ldexpf(1.0f, 100);
  int64_t s11[2] = {1, 1};
  ct_tensor *da = ct_from_buffer(&dv, CT_FLOAT32, 2, s11, o), *db = ct_from_buffer(&bigv, CT_FLOAT32, 2, s11, o);
  ct_tensor *ddp = ct_matmul(da, db);
  fp_widen(1);
  ct_tensor *dwd = ct_matmul(da, db);
  fp_widen(0);
  CHECK(ddp && dwd);
  if (ddp && dwd) {
    float x, y;
    ct_copy_to_buffer(ddp, &x, CT_FLOAT32, 1);
    ct_copy_to_buffer(dwd, &y, CT_FLOAT32, 1);
    CHECK(y == ldexpf(1.0f, -30)); /* widening keeps the denormal */
    CHECK(x == 0.0f);              /* vdpbf16ps flushes it (DAZ) */
  }
  /* empty: M = 0, N = 0, and K = 0 (addmm: beta C0) */
  int64_t s0k[2] = {0, 5}, sk5[2] = {5, 3}, sm0[2] = {4, 0}, s0n[2] = {0, 3}, sc[2] = {4, 3};
  ct_tensor *e1 = ct_zeros(2, s0k, o), *e2 = ct_ones(2, sk5, o), *e3 = ct_zeros(2, sm0, o), *e4 = ct_zeros(2, s0n, o);
  ct_tensor *c = ct_full(2, sc, ct_sf(3.0), o);
  ct_tensor *r1 = ct_matmul(e1, e2), *r2 = ct_addmm(c, e3, e4, ct_sf(0.5), ct_sf(2.0));
  CHECK(r1 && ct_numel(r1) == 0 && r2 && ct_numel(r2) == 12);
  if (r2) {
    float x[12];
    ct_copy_to_buffer(r2, x, CT_FLOAT32, 12);
    int bad = 0;
    for (int i = 0; i < 12; i++) bad += x[i] != 1.5f;
    CHECK(bad == 0);
  }
  ct_tensor *ts[] = {a, b, dp, wd, da, db, ddp, dwd, e1, e2, e3, e4, c, r1, r2};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ct_release(ts[i]);
  fp_end();
}

/* the vectorised bf16 rounding of the write-back (16 columns at a time): NaN rows, inf columns and
 * finite values as the widening path gives them */
static void fp_nan_inf_wide_rows(int path) {
  if (!fp_begin(path)) return;
  int64_t sa[2] = {5, 6}, sb[2] = {6, 40};
  ct_tensor *a = tt_rand(&lp_state, 2, sa, CT_BFLOAT16, 2, 0, false), *b = tt_rand(&lp_state, 2, sb, CT_BFLOAT16, 2, 0, false);
  ct_tensor *ar = ct_select(a, 0, 1), *b2 = ct_select(b, 0, 2), *b3 = ct_select(b, 0, 3);
  ct_tensor *bc = b2 ? ct_narrow(b2, 0, 20, 1) : NULL, *bc2 = b3 ? ct_narrow(b3, 0, 33, 1) : NULL;
  CHECK(ar && bc && bc2);
  if (ar && bc && bc2) {
    CHECK_OK(ct_fill_(ar, ct_sf(NAN)));  /* row 1 of the result: all NaN */
    CHECK_OK(ct_fill_(bc, ct_sf(INFINITY))); /* b[2][20], b[3][33]: +-inf in those columns (a is nonzero) */
    CHECK_OK(ct_fill_(bc2, ct_sf(-INFINITY)));
  }
  ct_tensor *dp = ct_matmul(a, b);
  fp_widen(1);
  ct_tensor *wd = ct_matmul(a, b);
  fp_widen(0);
  CHECK(dp && wd);
  if (dp && wd) {
    float x[200], y[200];
    ct_copy_to_buffer(dp, x, CT_FLOAT32, 200);
    ct_copy_to_buffer(wd, y, CT_FLOAT32, 200);
    int nans = 0, infs = 0, bad = 0;
    for (int i = 0; i < 200; i++) {
      nans += isnan(x[i]) != 0;
      infs += isinf(x[i]) != 0; /* glibc's isinf gives -1 for -inf */
      if (isnan(x[i]) != isnan(y[i]) || (!isnan(y[i]) && isinf(y[i]) && x[i] != y[i])) bad++;
    }
    CHECK(bad == 0);
    CHECK(nans == 40 && infs == 8);
  }
  ct_tensor *ts[] = {a, b, ar, b2, b3, bc, bc2, dp, wd};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ct_release(ts[i]);
  fp_end();
}

TEST(gemm_bf16_dpbf16_vs_widening_shapes) { fp_vs_widening_shapes(2); }
TEST(gemm_bf16_dpbf16_threads_bitwise) { fp_threads_bitwise(2); }
TEST(gemm_bf16_dpbf16_special_values) { fp_special_values(2); }
TEST(gemm_bf16_dpbf16_nan_inf_wide_rows) { fp_nan_inf_wide_rows(2); }
TEST(gemm_bf16_amx_vs_widening_shapes) { fp_vs_widening_shapes(3); }
TEST(gemm_bf16_amx_threads_bitwise) { fp_threads_bitwise(3); }
TEST(gemm_bf16_amx_special_values) { fp_special_values(3); }
TEST(gemm_bf16_amx_nan_inf_wide_rows) { fp_nan_inf_wide_rows(3); }

/* the switch: CT_GEMM_BF16=widen|dp|amx picks the path (read at each product); unset: AMX where the CPU
 * has it, else vdpbf16ps; float16 always widens; amx asked for on a CPU without it falls back to dp */
TEST(gemm_bf16_path_switch) {
  ct_fast_gemm_lowp_force_path(-1);
  const char *prev = getenv("CT_GEMM_BF16");
  char *saved = prev ? strdup(prev) : NULL;
  unsetenv("CT_GEMM_BF16");
  bool amx = ct_fast_gemm_lowp_uses_amx(CT_BFLOAT16), dp = ct_fast_gemm_lowp_uses_dpbf16(CT_BFLOAT16);
  CHECK(!(amx && dp));
  CHECK(!ct_fast_gemm_lowp_uses_amx(CT_FLOAT16) && !ct_fast_gemm_lowp_uses_dpbf16(CT_FLOAT16));
  setenv("CT_GEMM_BF16", "widen", 1);
  CHECK(!ct_fast_gemm_lowp_uses_amx(CT_BFLOAT16) && !ct_fast_gemm_lowp_uses_dpbf16(CT_BFLOAT16));
  setenv("CT_GEMM_BF16", "dp", 1);
  CHECK(!ct_fast_gemm_lowp_uses_amx(CT_BFLOAT16));
  bool has_dp = ct_fast_gemm_lowp_uses_dpbf16(CT_BFLOAT16);
  setenv("CT_GEMM_BF16", "amx", 1);
  CHECK(ct_fast_gemm_lowp_uses_amx(CT_BFLOAT16) == amx);
  if (!amx) CHECK(ct_fast_gemm_lowp_uses_dpbf16(CT_BFLOAT16) == has_dp);
  if (amx) CHECK(has_dp); /* every CPU with AMX-BF16 so far has AVX512_BF16 */
  ct_fast_gemm_lowp_force_path(1); /* the forced path wins over the environment */
  CHECK(!ct_fast_gemm_lowp_uses_amx(CT_BFLOAT16) && !ct_fast_gemm_lowp_uses_dpbf16(CT_BFLOAT16));
  ct_fast_gemm_lowp_force_path(-1);
  if (saved) setenv("CT_GEMM_BF16", saved, 1);
  else unsetenv("CT_GEMM_BF16");
  free(saved);
  printf("  [gemm_bf16 path here: %s]\n", ct_fast_gemm_lowp_isa());
}
