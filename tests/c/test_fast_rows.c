/* The fast float32 max/min reductions (simd/fast_ew_impl.h: minmax, four chains that skip NaN plus
 * a NaN/inf detector that sends the row to the exact loop) against the reference kernels at every
 * SIMD level: one special value (NaN, +-inf, +-FLT_MAX where a pair sum overflows) at every kind of
 * position (first, inside the 4-vector body, in the re-read tail, last), lengths around the vector
 * and 4-vector sizes, the long-row block path (> 2^17 floats) and rows of a 2-d tensor. */
#include "test.h"
#include "backend/cpu/simd/simd.h"
#include <float.h>
#include <stdlib.h>

static uint64_t fr_state = 77;

/* r (fast) and ref must be the same values, NaN where ref is NaN */
static void fr_same(const char *what, ct_tensor *r, ct_tensor *ref) {
  CHECK(r != NULL && ref != NULL);
  if (!r || !ref) return;
  int64_t n = ct_numel(ref);
  CHECK(ct_numel(r) == n);
  for (int64_t i = 0; i < n && ct_numel(r) == n; i++) {
    double a = tt_at(r, i), b = tt_at(ref, i);
    if (!(isnan(b) ? isnan(a) : a == b))
      ct_test_fail(__FILE__, __LINE__, "%s [%s] at %lld: got %.9g, reference %.9g", what,
                   ct_simd_isa_name(ct_simd_active()), (long long)i, a, b);
  }
}

static ct_tensor *fr_op(int op, ct_tensor *x) {
  int64_t last = -1;
  switch (op) {
    case 0: return ct_max(x);
    case 1: return ct_min(x);
    case 2: return ct_amax(x, 1, &last, false);
    default: return ct_amin(x, 1, &last, false);
  }
}

static void fr_check(const char *what, const double *v, int nd, const int64_t *shape) {
  ct_tensor *x = tt_from(v, nd, shape, CT_FLOAT32);
  CHECK(x != NULL);
  if (!x) return;
  bool was_on = ct_fast_enabled();
  ct_simd_isa was = ct_simd_active();
  for (int op = 0; op < 4; op++) {
    ct_fast_set_enabled(false);
    ct_tensor *ref = fr_op(op, x);
    ct_fast_set_enabled(true);
    for (int l = 0; l <= (int)ct_simd_cpu_level(); l++) {
      ct_simd_force((ct_simd_isa)l);
      ct_tensor *r = fr_op(op, x);
      char w[160];
      snprintf(w, sizeof w, "%s op %d", what, op);
      fr_same(w, r, ref);
      ct_release(r);
    }
    ct_simd_force(was);
    ct_release(ref);
  }
  ct_fast_set_enabled(was_on);
  ct_release(x);
}

TEST(fast_minmax_specials_every_position) {
  static const int64_t lens[] = {1, 15, 16, 63, 64, 65, 100, 127, 128, 1000, 4099};
  static const double specials[] = {NAN, INFINITY, -INFINITY, FLT_MAX, -FLT_MAX};
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    int64_t n = lens[li];
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = (tt_uniform(&fr_state) - 0.5) * 100.0;
    char what[96];
    snprintf(what, sizeof what, "n=%lld plain", (long long)n);
    fr_check(what, v, 1, &n);
    int64_t pos[] = {0, n / 3, n / 2, n - 17, n - 2, n - 1};
    for (size_t si = 0; si < sizeof specials / sizeof specials[0]; si++)
      for (size_t pi = 0; pi < sizeof pos / sizeof pos[0]; pi++) {
        int64_t p = pos[pi];
        if (p < 0 || p >= n) continue;
        double keep = v[p];
        v[p] = specials[si];
        if (si >= 3 && n > 1) v[(p + 1) % n] = specials[si]; /* two of +-FLT_MAX: their sum overflows */
        snprintf(what, sizeof what, "n=%lld special %g at %lld", (long long)n, specials[si], (long long)p);
        fr_check(what, v, 1, &n);
        v[p] = keep;
        if (si >= 3 && n > 1) v[(p + 1) % n] = (tt_uniform(&fr_state) - 0.5) * 100.0;
      }
    free(v);
  }
  /* all -inf, all NaN, all equal */
  {
    int64_t n = 130;
    double v[130];
    for (int k = 0; k < 3; k++) {
      for (int64_t i = 0; i < n; i++) v[i] = k == 0 ? -INFINITY : k == 1 ? NAN : 2.5;
      fr_check(k == 0 ? "all -inf" : k == 1 ? "all nan" : "all equal", v, 1, &n);
    }
  }
  /* the long-row block path (one output, > 2 blocks of 2^16) and 2-d rows, one NaN row */
  {
    int64_t n = 300001, shape2[2] = {7, 5003};
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = (tt_uniform(&fr_state) - 0.5) * 1e4;
    fr_check("long row", v, 1, &n);
    v[200000] = INFINITY;
    fr_check("long row +inf", v, 1, &n);
    v[123456] = NAN;
    fr_check("long row nan", v, 1, &n);
    v[200000] = 1.0, v[123456] = 2.0;
    v[3 * 5003 + 77] = NAN;
    fr_check("rows, one nan", v, 2, shape2);
    free(v);
  }
}

/* softmax / log_softmax rows against a double reference, every level, through each row kernel:
 * rows of 1024 (whole vectors; with NT stores forced, the three-stage softmax_rows_nt), 1000 and
 * 20000 (softmax_row2: exponentials kept in a buffer / recomputed), 40000 (online max and sum).
 * softmax within 6 + |x - max| ulp: the exponential's ~1.5 ulp (AVX-512) and the sum's and the
 * division's roundings, plus float's rounding of x - max (exact only within a factor 2 of the max;
 * half an ulp of x - max in e^(x - max) is up to |x - max| ulps of it, as in PyTorch's float kernel);
 * log_softmax within 4e-7 max(1, |ref|) (log(sum) rounds once, x - max as above). */
TEST(fast_softmax_rows_accuracy) {
  static const int64_t lens[] = {1024, 1000, 20000, 40000};
  ct_simd_isa was = ct_simd_active();
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
    for (int nt = 0; nt < 2; nt++) {
      int64_t n = lens[li], shape[2] = {3, n}, total = 3 * n;
      if (nt && n != 1024) continue;
      double *v = malloc(sizeof(double) * (size_t)total), *ref = malloc(sizeof(double) * (size_t)total);
      double *dm = malloc(sizeof(double) * (size_t)total); /* x - max */
      float *out = malloc(sizeof(float) * (size_t)total);
      for (int64_t i = 0; i < total; i++) v[i] = (tt_uniform(&fr_state) - 0.5) * (i < n ? 4.0 : i < 2 * n ? 40.0 : 200.0);
      ct_tensor *x = tt_from(v, 2, shape, CT_FLOAT32);
      CHECK(x != NULL);
      for (int lg = 0; x && lg < 2; lg++) {
        for (int64_t r = 0; r < 3; r++) { /* the reference from the float inputs, in double */
          double mx = -INFINITY, s = 0;
          for (int64_t i = 0; i < n; i++) mx = fmax(mx, (double)(float)v[r * n + i]);
          for (int64_t i = 0; i < n; i++) s += exp((double)(float)v[r * n + i] - mx);
          for (int64_t i = 0; i < n; i++) {
            double d = (double)(float)v[r * n + i] - mx;
            ref[r * n + i] = lg ? d - log(s) : exp(d) / s;
            dm[r * n + i] = d;
          }
        }
        for (int l = 0; l <= (int)ct_simd_cpu_level(); l++) {
          ct_simd_force((ct_simd_isa)l);
          if (nt) ct_fast_set_nt_min_bytes(0);
          ct_tensor *y = lg ? ct_log_softmax(x, -1, -1) : ct_softmax(x, -1, -1);
          ct_fast_set_nt_min_bytes((int64_t)4 << 20);
          CHECK(y != NULL);
          if (!y) continue;
          CHECK_OK(ct_copy_to_buffer(y, out, CT_FLOAT32, total));
          ct_release(y);
          double worst = 0;
          int64_t wi = 0;
          for (int64_t i = 0; i < total; i++) {
            double e;
            if (lg) {
              e = fabs((double)out[i] - ref[i]) / (4e-7 * fmax(1.0, fabs(ref[i])));
            } else {
              int ex;
              frexp(ref[i], &ex);
              double ulp = fmax(ldexp(1.0, ex - 24), 0x1p-149);
              e = fabs((double)out[i] - ref[i]) / ulp / (6.0 + fabs(dm[i]));
            }
            if (!(e <= worst)) worst = e, wi = i;
          }
          if (getenv("CT_TEST_VERBOSE"))
            printf("  %s n=%lld nt=%d [%s]: %.2f of the bound at %lld\n", lg ? "log_softmax" : "softmax", (long long)n, nt,
                   ct_simd_isa_name((ct_simd_isa)l), worst, (long long)wi);
          if (!(worst <= 1))
            ct_test_fail(__FILE__, __LINE__, "%s n=%lld nt=%d [%s]: %.2f of the bound at %lld (got %.9g, want %.9g)",
                         lg ? "log_softmax" : "softmax", (long long)n, nt, ct_simd_isa_name((ct_simd_isa)l), worst,
                         (long long)wi, (double)out[wi], ref[wi]);
        }
        ct_simd_force(was);
      }
      ct_release(x);
      free(v), free(ref), free(out), free(dm);
    }
}

/* The softmax exponential itself (expsm; at AVX-512 a 32-entry table of 2^(j/32) and a degree-2
 * polynomial): rows whose max is 0, so x - max = x is exact and only the exponential, the sum and the
 * division round; x swept over [-104.5, 0] (every table entry, the subnormal results below -87.3,
 * the clamp at -104) with -inf entries. softmax within 3 + 0.06 |x| ulp (the exponential's 1.75 +
 * 0.05 |x|: ln2 as one float; the sum and the division ~1; 6 + 0.06 |x| for the online sum, whose
 * per-lane rescalings round a few times more), -inf -> exactly 0; every row kernel:
 * rows of 1024 with NT stores forced (softmax_rows_nt) and without (softmax_row2, kept exponentials),
 * 1000 (unaligned rows), 40000 (online max and sum). */
TEST(fast_softmax_exp_sweep) {
  static const int64_t lens[] = {1024, 1024, 1000, 40000};
  ct_simd_isa was = ct_simd_active();
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    int64_t n = lens[li], shape[2] = {2, n}, total = 2 * n;
    int nt = li == 0;
    double *v = malloc(sizeof(double) * (size_t)total), *ref = malloc(sizeof(double) * (size_t)total);
    float *out = malloc(sizeof(float) * (size_t)total);
    for (int64_t r = 0; r < 2; r++)
      for (int64_t i = 0; i < n; i++) /* row 1 shifted by a third of a table step */
        v[r * n + i] = i == 0 ? 0.0 : i % 97 == 3 ? -INFINITY : (double)(float)(-104.5 * (double)i / (double)n - (double)r * 0.0072);
    for (int64_t r = 0; r < 2; r++) {
      double s = 0;
      for (int64_t i = 0; i < n; i++) s += exp(v[r * n + i]);
      for (int64_t i = 0; i < n; i++) ref[r * n + i] = exp(v[r * n + i]) / s;
    }
    ct_tensor *x = tt_from(v, 2, shape, CT_FLOAT32);
    CHECK(x != NULL);
    for (int l = 0; x && l <= (int)ct_simd_cpu_level(); l++) {
      ct_simd_force((ct_simd_isa)l);
      if (nt) ct_fast_set_nt_min_bytes(0);
      ct_tensor *y = ct_softmax(x, -1, -1);
      ct_fast_set_nt_min_bytes((int64_t)4 << 20);
      CHECK(y != NULL);
      if (!y) continue;
      CHECK_OK(ct_copy_to_buffer(y, out, CT_FLOAT32, total));
      ct_release(y);
      double worst = 0;
      int64_t wi = 0;
      for (int64_t i = 0; i < total; i++) {
        double e;
        if (isinf(v[i])) {
          e = out[i] == 0.0f ? 0 : 1e9;
        } else {
          int ex;
          frexp(ref[i], &ex);
          double ulp = fmax(ldexp(1.0, ex - 24), 0x1p-149);
          e = fabs((double)out[i] - ref[i]) / ulp / ((n > 16384 ? 6.0 : 3.0) + 0.06 * fabs(v[i]));
        }
        if (!(e <= worst)) worst = e, wi = i;
      }
      if (getenv("CT_TEST_VERBOSE"))
        printf("  softmax exp sweep n=%lld nt=%d [%s]: %.2f of the bound at x=%.9g\n", (long long)n, nt,
               ct_simd_isa_name((ct_simd_isa)l), worst, v[wi]);
      if (!(worst <= 1))
        ct_test_fail(__FILE__, __LINE__, "softmax exp sweep n=%lld nt=%d [%s]: %.2f of the bound at x=%.9g (got %.9g, want %.9g)",
                     (long long)n, nt, ct_simd_isa_name((ct_simd_isa)l), worst, v[wi], (double)out[wi], ref[wi]);
    }
    ct_simd_force(was);
    ct_release(x);
    free(v), free(ref), free(out);
  }
}
