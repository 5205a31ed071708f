/* Accuracy of the fast float32 transcendental kernels (simd/fast_ew_impl.h: exp, sigmoid,
 * silu, tanh, gelu erf and tanh forms, softmax rows) in ulps of the correctly rounded result,
 * against libm in double, at every SIMD level the CPU has (AVX-512, AVX2+FMA, portable C /
 * the SIMD128 source). The bounds asserted here are the ones stated in fast_ew_impl.h. */
#include "test.h"
#include "backend/cpu/simd/simd.h"
#include <float.h>
#include <stdint.h>
#include <stdlib.h>

/* error of got vs the double reference in ulps of float at ref (subnormal results: ulps of
 * the smallest subnormal, so results that flush or round near 0 count honestly) */
static double ulp_err(float got, double ref) {
  if (isnan(ref)) return isnan(got) ? 0 : INFINITY;
  if (isinf(ref)) return got == (float)ref ? 0 : INFINITY;
  if (isnan(got)) return INFINITY;
  double a = fabs(ref);
  int e;
  frexp(a, &e); /* a in [2^(e-1), 2^e) */
  double ulp = ldexp(1.0, e - 24);
  if (ulp < 0x1p-149) ulp = 0x1p-149;
  /* a reference above FLT_MAX that the kernel returns as inf is not an error in float */
  if (isinf(got) && a > FLT_MAX && (got > 0) == (ref > 0)) return 0;
  return fabs((double)got - ref) / ulp;
}

static double gelu_erf_ref(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
/* 0.5 x (1 + tanh u) = x / (1 + e^(-2u)): 1 + tanh(u) would cancel in double for u < -18 */
static double gelu_tanh_ref(double x) { return x / (1.0 + exp(-2.0 * sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
static double sigmoid_ref(double x) { return 1.0 / (1.0 + exp(-x)); }

typedef struct {
  const char *name;
  double (*ref)(double);
  double lo, hi; /* the swept range */
  double bound;  /* max ulps allowed (fast_ew_impl.h) */
  double amp;    /* plus amp * |2u| ulps (gelu tanh form, see below) */
} ulp_case;

/* n values over [lo, hi]: evenly spaced bit patterns of each sign (dense in ulps near 0 and
 * over every binade) plus the ends */
static float *ulp_inputs(double lo, double hi, int64_t n) {
  float *v = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    double t = (double)i / (double)(n - 1); /* 0..1 */
    double side = t < 0.5 ? lo : hi;
    double u = t < 0.5 ? 1 - 2 * t : 2 * t - 1; /* 1..0..1 */
    if (side == 0) {
      v[i] = 0;
      continue;
    }
    float s = (float)fabs(side);
    uint32_t top;
    memcpy(&top, &s, 4);
    uint32_t bits = (uint32_t)((double)top * u);
    float f;
    memcpy(&f, &bits, 4);
    v[i] = side < 0 ? -f : f;
  }
  return v;
}

static ct_tensor *ulp_apply(int which, ct_tensor *x) {
  switch (which) {
    case 0: return ct_exp(x);
    case 1: return ct_sigmoid(x);
    case 2: return ct_silu(x);
    case 3: return ct_tanh(x);
    case 4: return ct_gelu(x, "none");
    default: return ct_gelu(x, "tanh");
  }
}
static double silu_ref(double x) { return x / (1.0 + exp(-x)); }
static double exp_ref(double x) { return exp(x); }

TEST(fast_transcendentals_ulp_bounds) {
  /* bounds: see fast_ew_impl.h (expf, sigmoidf, tanhf, gelu_erf_vec, gelu_tanh_vec). gelu's tanh
   * form computes u = sqrt(2/pi) (x + 0.044715 x^3) in float (as PyTorch's float kernel does):
   * its rounding (up to three roundings without an FMA, ~2.5 ulp of u) becomes ~2.5 |2u| ulps of
   * e^(2u) in the far negative tail, so that bound grows with |2u|; the kernel's own error is
   * the constant part. gelu_erf is swept down to -13, where x Phi(x) is still a normal float
   * (further down the result is subnormal and Phi's own subnormal rounding, times |x|, gives
   * up to ~|x| units of 2^-149). The AVX-512 gelu forms differ from the others (table + degree-5
   * exponential for erf, measured max ~3.5-4.1 ulp; scalef form for tanh, same error as the
   * sigmoid form) and are held to the same bounds: 6 ulp is ~0.04 of the rel 1e-5 parity
   * tolerance (~170 ulp) */
  static const ulp_case cases[] = {
      {"exp", exp_ref, -104, 88.7, 1.5, 0},       {"sigmoid", sigmoid_ref, -104, 104, 3.5, 0},
      {"silu", silu_ref, -88, 104, 3.5, 0},       {"tanh", tanh, -12, 12, 3, 0},
      {"gelu_erf", gelu_erf_ref, -13, 20, 6, 0},   {"gelu_tanh", gelu_tanh_ref, -10, 10, 4, 2.5},
  };
  const int64_t n = 1 << 18;
  int levels = (int)ct_simd_cpu_level();
  ct_simd_isa was = ct_simd_active();
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const ulp_case *c = &cases[ci];
    float *in = ulp_inputs(c->lo, c->hi, n);
    double *ref = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) ref[i] = c->ref((double)in[i]);
    ct_tensor *x = ct_from_buffer(in, CT_FLOAT32, 1, &n, ct_opts());
    CHECK(x != NULL);
    float *out = malloc(sizeof(float) * (size_t)n);
    for (int l = 0; x && l <= levels; l++) {
      ct_simd_force((ct_simd_isa)l);
      ct_tensor *y = ulp_apply((int)ci, x);
      CHECK(y != NULL);
      if (!y) continue;
      CHECK_OK(ct_copy_to_buffer(y, out, CT_FLOAT32, n));
      double worst = 0; /* worst error / its bound */
      int64_t wi = 0;
      for (int64_t i = 0; i < n; i++) {
        double x = in[i], u2 = 2 * sqrt(2.0 / M_PI) * fabs(x + 0.044715 * x * x * x);
        double e = ulp_err(out[i], ref[i]) / (c->bound + c->amp * u2);
        if (!(e <= worst)) worst = e, wi = i;
      }
      if (getenv("CT_TEST_VERBOSE"))
        printf("  %-9s [%s] max %.2f ulp at x=%.9g (%.2f of the bound)\n", c->name, ct_simd_isa_name((ct_simd_isa)l),
               ulp_err(out[wi], ref[wi]), (double)in[wi], worst);
      if (!(worst <= 1))
        ct_test_fail(__FILE__, __LINE__, "%s [%s]: %.2f ulp at x=%.9g (got %.9g, want %.9g), %.2f of the bound", c->name,
                     ct_simd_isa_name((ct_simd_isa)l), ulp_err(out[wi], ref[wi]), (double)in[wi], (double)out[wi],
                     ref[wi], worst);
      ct_release(y);
    }
    ct_simd_force(was);
    ct_release(x);
    free(in);
    free(ref);
    free(out);
  }
}

/* Non-temporal output paths (simd/fast_ew.c: outputs >= 4 MiB) against the cached-store paths:
 * forced on every output, on row lengths whose rows start unaligned (vector head + tail), the
 * values must be the same bits (the same arithmetic, only the store differs); gradients of
 * layer_norm (dx streamed) too. */
static ct_tensor *nt_op(int which, ct_tensor *x, ct_tensor *x2, ct_tensor *w, ct_tensor *b, int64_t n) {
  switch (which) {
    case 0: return ct_softmax(x, -1, -1);
    case 1: return ct_log_softmax(x, -1, -1);
    case 2: return ct_layer_norm(x, 1, &n, w, b, 1e-5);
    case 3: return ct_gelu(x, "none");
    case 4: return ct_gelu(x, "tanh");
    case 5: return ct_sigmoid(x);
    case 6: return ct_exp(x);
    case 7: return ct_add(x, x2);
    default: return ct_mul(x, x2);
  }
}

TEST(fast_nontemporal_stores_same_values) {
  /* 40, 48, 1024, 2048: whole vectors per row, which softmax streams through its interleaved
   * kernel (softmax_rows_nt, also with a NaN row, an all -inf row and a row holding +inf) */
  static const int64_t lens[] = {1, 13, 33, 1001, 20000, 40, 48, 1024, 2048};
  ct_simd_isa was = ct_simd_active();
  int levels = (int)ct_simd_cpu_level();
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    int64_t n = lens[li], rows = n > 5000 ? 2 : 7, shape[2] = {rows, n}, tot = rows * n;
    double *v = malloc(sizeof(double) * (size_t)tot);
    for (int64_t i = 0; i < tot; i++) v[i] = sin((double)i * 0.37) * 4 + (i % 5 == 0 ? 1.5 : 0);
    if (n % 4 == 0 && n <= 2048) {
      v[2 * n + 5] = NAN;
      for (int64_t i = 0; i < n; i++) v[3 * n + i] = -INFINITY;
      v[4 * n] = INFINITY;
    }
    ct_tensor *x = tt_from(v, 2, shape, CT_FLOAT32), *x2 = tt_from(v, 2, shape, CT_FLOAT32);
    for (int64_t i = 0; i < n; i++) v[i] = 1 + 0.01 * (double)(i % 7);
    ct_tensor *w = tt_from(v, 1, &n, CT_FLOAT32);
    for (int64_t i = 0; i < n; i++) v[i] = 0.1 * (double)(i % 3);
    ct_tensor *b = tt_from(v, 1, &n, CT_FLOAT32);
    ct_requires_grad_(x, true);
    ct_requires_grad_(w, true);
    for (int l = 0; l <= levels; l++) {
      ct_simd_force((ct_simd_isa)l);
      for (int which = 0; which < 9; which++) {
        ct_tensor *y[2] = {0}, *gx[2] = {0};
        for (int pass = 0; pass < 2; pass++) {
          ct_fast_set_nt_min_bytes(pass ? 0 : INT64_MAX);
          y[pass] = nt_op(which, x, x2, w, b, n);
          CHECK(y[pass] != NULL);
          if (which == 2 && y[pass]) { /* layer_norm backward: dx streamed */
            ct_tensor *ins[1] = {x}, *g[1] = {0};
            CHECK_OK(ct_autograd_grad(1, &y[pass], &x2, 1, ins, g, false, false, true));
            gx[pass] = g[0];
          }
        }
        ct_fast_set_nt_min_bytes((int64_t)4 << 20);
        double e = y[0] && y[1] && tt_allclose(y[1], y[0], 0, 0) ? 0 : 1;
        if (e != 0) ct_test_fail(__FILE__, __LINE__, "op %d n=%lld [%s]: NT output differs", which, (long long)n,
                                 ct_simd_isa_name((ct_simd_isa)l));
        if (which == 2 && !(gx[0] && gx[1] && tt_allclose(gx[1], gx[0], 0, 0)))
          ct_test_fail(__FILE__, __LINE__, "layer_norm dx n=%lld [%s]: NT differs", (long long)n,
                       ct_simd_isa_name((ct_simd_isa)l));
        for (int k = 0; k < 2; k++) {
          ct_release(y[k]);
          ct_release(gx[k]);
        }
      }
    }
    ct_simd_force(was);
    ct_release(x);
    ct_release(x2);
    ct_release(w);
    ct_release(b);
    free(v);
  }
}

/* layer_norm's one-read statistics (shifted sum and sum of squares in double, fast_ew_impl.h
 * norm_fwd_row) against the two-pass double reference on rows built to break a naive
 * one-pass variance: a large common offset, a first element (the shift) far from the mean,
 * constant rows and long rows. The reference uses the float-rounded mean like the kernel (and
 * PyTorch), so the comparison isolates rstd: y within 4 ulp-ish (rel 5e-7 + abs 1e-6). */
TEST(fast_layer_norm_one_read_statistics) {
  static const int64_t lens[] = {5, 64, 1000, 70000};
  ct_simd_isa was = ct_simd_active();
  int levels = (int)ct_simd_cpu_level();
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
    for (int kind = 0; kind < 4; kind++) {
      int64_t n = lens[li], rows = 3, shape[2] = {rows, n}, tot = rows * n;
      double *v = malloc(sizeof(double) * (size_t)tot), *ref = malloc(sizeof(double) * (size_t)tot);
      for (int64_t i = 0; i < tot; i++) {
        double z = sin((double)i * 1.7) + 0.5 * cos((double)i * 0.13);
        v[i] = kind == 0 ? 1e4 + z : kind == 1 ? z : kind == 2 ? 3.25 : -2e3 + 1e-2 * z;
        if (kind == 1 && i % n == 0) v[i] = 300; /* the shift c = x[0], ~400 std from the mean */
        v[i] = (double)(float)v[i];
      }
      for (int64_t r = 0; r < rows; r++) {
        const double *x = v + r * n;
        double m = 0, q = 0;
        for (int64_t j = 0; j < n; j++) m += x[j];
        m /= (double)n;
        for (int64_t j = 0; j < n; j++) q += (x[j] - m) * (x[j] - m);
        double rs = 1 / sqrt(q / (double)n + 1e-5), mf = (double)(float)m;
        for (int64_t j = 0; j < n; j++) ref[r * n + j] = ((double)(float)(x[j] - mf)) * rs;
      }
      ct_tensor *x = tt_from(v, 2, shape, CT_FLOAT32), *want = tt_from(ref, 2, shape, CT_FLOAT64);
      for (int l = 0; l <= levels; l++) {
        ct_simd_force((ct_simd_isa)l);
        ct_tensor *y = ct_layer_norm(x, 1, &n, NULL, NULL, 1e-5);
        CHECK(y != NULL);
        ct_tensor *yd = y ? ct_to_dtype(y, CT_FLOAT64) : NULL;
        if (yd && !tt_allclose(yd, want, 5e-7, 1e-6))
          ct_test_fail(__FILE__, __LINE__, "layer_norm n=%lld kind %d [%s] differs from the two-pass reference",
                       (long long)n, kind, ct_simd_isa_name((ct_simd_isa)l));
        ct_release(yd);
        ct_release(y);
      }
      ct_simd_force(was);
      ct_release(x);
      ct_release(want);
      free(v);
      free(ref);
    }
}

/* gelu's special and far inputs, both forms, at every SIMD level against the reference kernels,
 * the same sign and NaN-ness, values within 1e-4 (the far tanh tail's error grows with |u|, see
 * above; the ulp bounds are checked there): the AVX-512 forms (table erf, scalef
 * tanh) clamp their arguments, so +-inf, huge |x| (x^2 = inf in float), -0 and NaN must come out
 * as the reference's (PyTorch's) x Phi(x): +inf, NaN for -inf, -0 for -0 and very negative x. */
TEST(fast_gelu_special_values) {
  static const float xs[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1e30f, -1e30f, 3e19f, -3e19f, 1e-30f,
                             -1e-30f, -20.0f, -14.4f, -14.6f, 14.6f, 6.0f, -6.0f, 0.25f, -0.25f, 0.5f,
                             -0.75f, 14.25f, -13.0f, -10.5f, -9.5f, 30.0f, 1e-45f, -1e-45f, FLT_MAX, -FLT_MAX};
  const int64_t n = (int64_t)(sizeof xs / sizeof xs[0]);
  ct_tensor *x = ct_from_buffer(xs, CT_FLOAT32, 1, &n, ct_opts());
  CHECK(x != NULL);
  bool was_on = ct_fast_enabled();
  ct_simd_isa was = ct_simd_active();
  for (int form = 0; x && form < 2; form++) {
    const char *approx = form ? "tanh" : "none";
    float ref[64], got[64];
    ct_fast_set_enabled(false);
    ct_tensor *r = ct_gelu(x, approx);
    ct_fast_set_enabled(true);
    CHECK(r != NULL);
    if (!r) continue;
    CHECK_OK(ct_copy_to_buffer(r, ref, CT_FLOAT32, n));
    ct_release(r);
    for (int l = 0; l <= (int)ct_simd_cpu_level(); l++) {
      ct_simd_force((ct_simd_isa)l);
      ct_tensor *y = ct_gelu(x, approx);
      CHECK(y != NULL);
      if (!y) continue;
      CHECK_OK(ct_copy_to_buffer(y, got, CT_FLOAT32, n));
      ct_release(y);
      for (int64_t i = 0; i < n; i++) {
        bool same = isnan(ref[i]) ? isnan(got[i])
                                  : !isnan(got[i]) && signbit(got[i]) == signbit(ref[i]) &&
                                        (got[i] == ref[i] || fabs((double)got[i] - ref[i]) <= 1e-4 * fabs((double)ref[i]) ||
                                         /* the far negative tail: the reference cancels to -0, the
                                          * fast forms keep x Phi(x) (< 1e-20 here) */
                                         (fabs((double)ref[i]) < 1e-20 && fabs((double)got[i]) < 1e-20));
        if (!same)
          ct_test_fail(__FILE__, __LINE__, "gelu(%s) [%s] at x=%.9g: got %.9g, reference %.9g", approx,
                       ct_simd_isa_name((ct_simd_isa)l), (double)xs[i], (double)got[i], (double)ref[i]);
      }
    }
    ct_simd_force(was);
  }
  ct_fast_set_enabled(was_on);
  ct_release(x);
}

/* The AVX-512 gelu table path (gelu_tab_vec: vectors whose lanes all have |x| < 31.5/8) against the
 * double reference, densely over that range, both forms, at every level (the other levels have no
 * table and keep the general bounds): the table forms are held to 4 ulp with no |2u| term (they approximate the exact tail, not the float formula); then the same
 * values with one far lane (+-5 ... +-30, +-inf, NaN) in every vector at a varying lane, so those
 * vectors take the full forms: still within the general bounds, NaN and inf as the reference. */
TEST(fast_gelu_table_range_ulp) {
  const int64_t n = 1 << 17;
  float *in = malloc(sizeof(float) * (size_t)n), *out = malloc(sizeof(float) * (size_t)n);
  CHECK(in && out);
  if (!in || !out) {
    free(in);
    free(out);
    return;
  }
  ct_simd_isa was = ct_simd_active();
  for (int mixed = 0; mixed < 2; mixed++) {
    for (int64_t i = 0; i < n; i++) in[i] = (float)(-3.9374 + 7.8748 * (double)i / (double)(n - 1));
    if (mixed) {
      static const float far[] = {5.0f, -5.0f, 7.5f, -9.25f, 30.0f, -30.0f, INFINITY, -INFINITY, NAN, 3.9375f, -3.9375f};
      for (int64_t v = 0; v * 16 < n; v++) in[v * 16 + (v * 7) % 16] = far[v % (int64_t)(sizeof far / sizeof far[0])];
    }
    ct_tensor *x = ct_from_buffer(in, CT_FLOAT32, 1, &n, ct_opts());
    CHECK(x != NULL);
    for (int form = 0; x && form < 2; form++) {
      for (int l = 0; l <= (int)ct_simd_cpu_level(); l++) {
        ct_simd_force((ct_simd_isa)l);
        ct_tensor *y = ct_gelu(x, form ? "tanh" : "none");
        CHECK(y != NULL);
        if (!y) continue;
        CHECK_OK(ct_copy_to_buffer(y, out, CT_FLOAT32, n));
        ct_release(y);
        double worst = 0, wu = 0;
        int64_t wi = 0;
        for (int64_t i = 0; i < n; i++) {
          double xi = in[i], ref = form ? gelu_tanh_ref(xi) : gelu_erf_ref(xi);
          if (isnan(ref) || isinf(ref)) { /* NaN, +inf, and -inf (0 * -inf: NaN) */
            bool ok = isnan(ref) ? isnan(out[i]) : out[i] == (float)ref;
            if (!ok)
              ct_test_fail(__FILE__, __LINE__, "gelu(%s) [%s] at x=%g: got %g, want %g", form ? "tanh" : "none",
                           ct_simd_isa_name((ct_simd_isa)l), xi, (double)out[i], ref);
            continue;
          }
          double u2 = 2 * sqrt(2.0 / M_PI) * fabs(xi + 0.044715 * xi * xi * xi);
          /* the general bounds (test above) off the table path; the table only at AVX-512 */
          bool far = fabs(xi) >= 3.9375 || mixed || l != (int)CT_SIMD_AVX512;
          double bound = far ? (form ? 4 + 2.5 * u2 : 6) : 4;
          double u = ulp_err(out[i], ref), e = u / bound;
          if (!(e <= worst)) worst = e, wi = i, wu = u;
        }
        if (getenv("CT_TEST_VERBOSE"))
          printf("  gelu_%s %s [%s] max %.2f ulp at x=%.9g (%.2f of the bound)\n", form ? "tanh" : "erf",
                 mixed ? "mixed" : "table", ct_simd_isa_name((ct_simd_isa)l), wu, (double)in[wi], worst);
        if (!(worst <= 1))
          ct_test_fail(__FILE__, __LINE__, "gelu(%s) %s [%s]: %.2f ulp at x=%.9g, %.2f of the bound",
                       form ? "tanh" : "none", mixed ? "mixed" : "table", ct_simd_isa_name((ct_simd_isa)l), wu,
                       (double)in[wi], worst);
      }
      ct_simd_force(was);
    }
    ct_release(x);
  }
  free(in);
  free(out);
}
