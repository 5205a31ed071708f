/* The fast (SIMD) kernels against the reference kernels they replace: every case runs
 * once with CT_REFERENCE_KERNELS semantics (ct_fast_set_enabled(false)) and once per
 * SIMD level the CPU has (portable C, AVX2+FMA, AVX-512), on random shapes with odd
 * sizes, tails, transposed and strided operands. */
#include "test.h"
#include "backend/cpu/gemm_fast.h"
#include "backend/cpu/simd/simd.h"
#include <stdlib.h>

static uint64_t fk_state = 0x9E3779B97F4A7C15ull;
static double fk_uniform(void) { /* xorshift64*: in [-1, 1) */
  fk_state ^= fk_state >> 12;
  fk_state ^= fk_state << 25;
  fk_state ^= fk_state >> 27;
  return (double)((fk_state * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2 - 1;
}
static ct_tensor *fk_rand(int nd, const int64_t *shape, ct_dtype dt, double scale) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = fk_uniform() * scale;
  ct_tensor *t = tt_from(v, nd, shape, dt);
  free(v);
  return t;
}

static char fk_worst[128];
/* max |a - b| / (atol + rtol |b|) over elements (<= 1 means close) */
static double fk_excess(const ct_tensor *a, const ct_tensor *b, double rtol, double atol) {
  if (!a || !b || ct_numel(a) != ct_numel(b)) return INFINITY;
  int64_t n = ct_numel(a);
  double *x = malloc((size_t)(n ? n : 1) * 8), *y = malloc((size_t)(n ? n : 1) * 8), worst = 0;
  ct_copy_to_buffer(a, x, CT_FLOAT64, n);
  ct_copy_to_buffer(b, y, CT_FLOAT64, n);
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i]) && isnan(y[i])) continue;
    if (x[i] == y[i]) continue;
    double e = fabs(x[i] - y[i]) / (atol + rtol * fabs(y[i]));
    if (!(e <= worst)) {
      worst = isnan(e) ? INFINITY : e;
      if (worst > 1) snprintf(fk_worst, sizeof fk_worst, "element %lld: %.9g vs reference %.9g", (long long)i, x[i], y[i]);
    }
  }
  free(x);
  free(y);
  return worst;
}

typedef ct_tensor *(*fk_fn)(void *ctx);

/* Reference result vs the fast path at every level this CPU has. */
static void fk_compare(const char *what, fk_fn fn, void *ctx, double rtol, double atol) {
  bool was_on = ct_fast_enabled();
  ct_simd_isa was_lvl = ct_simd_active();
  ct_fast_set_enabled(false);
  ct_tensor *ref = fn(ctx);
  CHECK(ref != NULL);
  ct_fast_set_enabled(true);
  for (int lvl = CT_SIMD_PORTABLE; ref && lvl <= (int)ct_simd_cpu_level(); lvl++) {
    ct_simd_force((ct_simd_isa)lvl);
    ct_tensor *r = fn(ctx);
    double e = fk_excess(r, ref, rtol, atol);
    if (!(e <= 1.0))
      ct_test_fail(__FILE__, __LINE__, "%s at %s: off by %.3g x tolerance, %s (last error: %s)", what,
                   ct_simd_isa_name((ct_simd_isa)lvl), e, fk_worst, r ? "" : ct_last_error());
    ct_release(r);
  }
  ct_simd_force(was_lvl);
  ct_fast_set_enabled(was_on);
  ct_release(ref);
}

/* ---- GEMM ---- */
/* layout: 0 contiguous, 1 transposed (a view of the transpose), 2 strided (every other column) */
static ct_tensor *fk_matrix(int64_t r, int64_t c, int layout, ct_dtype dt) {
  if (layout == 1) {
    int64_t s[2] = {c, r};
    ct_tensor *t = fk_rand(2, s, dt, 1), *v = ct_t(t);
    ct_release(t);
    return v;
  }
  if (layout == 2) {
    int64_t s[2] = {r, 2 * c + 1};
    ct_tensor *t = fk_rand(2, s, dt, 1), *v = ct_slice(t, 1, 1, 2 * c + 1, 2);
    ct_release(t);
    return v;
  }
  int64_t s[2] = {r, c};
  return fk_rand(2, s, dt, 1);
}

typedef struct {
  ct_tensor *a, *b, *c0;
  double alpha, beta;
  int kind; /* 0 matmul, 1 addmm, 2 baddbmm */
} mm_ctx;
static ct_tensor *fk_mm(void *p) {
  mm_ctx *m = p;
  if (m->kind == 1) return ct_addmm(m->c0, m->a, m->b, ct_sf(m->beta), ct_sf(m->alpha));
  if (m->kind == 2) return ct_baddbmm(m->c0, m->a, m->b, ct_sf(m->beta), ct_sf(m->alpha));
  return ct_matmul(m->a, m->b);
}

TEST(fast_gemm_vs_reference_shapes_layouts) {
  /* odd sizes, exact multiples of the tiles, K over one KC block, M over MC, N over NC */
  static const int64_t shapes[][3] = {{1, 1, 1},   {3, 5, 7},     {13, 33, 17}, {12, 32, 256}, {25, 65, 257},
                                      {250, 70, 300}, {7, 2100, 9}, {64, 48, 1},  {1, 40, 600}, {97, 1, 33}};
  for (int dti = 0; dti < 2; dti++) {
    ct_dtype dt = dti ? CT_FLOAT64 : CT_FLOAT32;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
      for (int la = 0; la < 3; la++)
        for (int lb = 0; lb < 3; lb++) {
          if (M * N * K > 100000 && (la + lb) % 2) continue; /* keep the big shapes quick */
          mm_ctx m = {fk_matrix(M, K, la, dt), fk_matrix(K, N, lb, dt), NULL, 1, 0, 0};
          char what[128];
          snprintf(what, sizeof what, "%s mm %lldx%lldx%lld layouts %d,%d", ct_dtype_name(dt), (long long)M,
                   (long long)N, (long long)K, la, lb);
          double eps = dti ? 1e-15 : 2e-7;
          fk_compare(what, fk_mm, &m, 16 * eps, 4 * eps * (double)K + 1e-30);
          ct_release(m.a);
          ct_release(m.b);
        }
    }
  }
}

TEST(fast_gemm_vs_reference_add_forms_and_batches) {
  for (int dti = 0; dti < 2; dti++) {
    ct_dtype dt = dti ? CT_FLOAT64 : CT_FLOAT32;
    double eps = dti ? 1e-15 : 2e-7;
    /* addmm with alpha/beta, C0 broadcast from a row (stride 0) and K spanning two blocks */
    int64_t bias_n = 37;
    ct_tensor *bias = fk_rand(1, &bias_n, dt, 1);
    mm_ctx m = {fk_matrix(29, 300, 1, dt), fk_matrix(300, 37, 0, dt), bias, 1.5, 0.25, 1};
    fk_compare("addmm alpha beta", fk_mm, &m, 16 * eps, 4 * eps * 300 * 2);
    m.beta = 0; /* beta 0: self is ignored */
    fk_compare("addmm beta 0", fk_mm, &m, 16 * eps, 4 * eps * 300 * 2);
    ct_release(m.a);
    ct_release(m.b);
    ct_release(bias);
    /* bmm / baddbmm with a transposed batch operand, and matmul broadcasting a matrix over a batch */
    int64_t sa[3] = {5, 19, 23}, sb[3] = {5, 31, 23}, sc[3] = {5, 19, 31};
    ct_tensor *a = fk_rand(3, sa, dt, 1), *bt = fk_rand(3, sb, dt, 1), *b = ct_mT(bt), *c0 = fk_rand(3, sc, dt, 1);
    mm_ctx bm = {a, b, c0, 0.5, 2.0, 2};
    fk_compare("baddbmm", fk_mm, &bm, 16 * eps, 4 * eps * 23 * 3);
    bm.kind = 0;
    fk_compare("bmm via matmul", fk_mm, &bm, 16 * eps, 4 * eps * 23);
    int64_t sw[2] = {23, 40};
    ct_tensor *w = fk_rand(2, sw, dt, 1);
    mm_ctx bc = {a, w, NULL, 1, 0, 0};
    fk_compare("matmul batch x matrix", fk_mm, &bc, 16 * eps, 4 * eps * 23);
    ct_release(w);
    ct_release(a);
    ct_release(bt);
    ct_release(b);
    ct_release(c0);
  }
}

TEST(fast_gemm_empty_k_and_dispatch_info) {
  int64_t sa[2] = {4, 0}, sb[2] = {0, 6};
  ct_tensor *a = ct_zeros(2, sa, ct_opts()), *b = ct_zeros(2, sb, ct_opts());
  ct_tensor *c = ct_matmul(a, b);
  CHECK(c && ct_numel(c) == 24);
  bool zeros = true;
  for (int i = 0; c && i < 24; i++) zeros = zeros && tt_at(c, i) == 0.0;
  CHECK(zeros);
  ct_release(a);
  ct_release(b);
  ct_release(c);
  CHECK(strlen(ct_fast_gemm_kernel_name(CT_FLOAT32)) > 0);
  CHECK(strstr(ct_simd_level(), "kernels") != NULL);
}

/* ---- elementwise, reductions, rows ---- */
/* random values with specials (nan, +-inf, +-0, huge, tiny) sprinkled in */
static ct_tensor *fk_values(int nd, const int64_t *shape, double scale, bool specials) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  static const double sp[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 100.0, -100.0, 1e-30, -1e-30, 88.5, -87.5, 9.5,
                              -9.5, 30, -30, 1e-3, -1e-3};
  for (int64_t i = 0; i < n; i++) {
    v[i] = fk_uniform() * scale;
    if (specials && i % 7 == 3) v[i] = sp[(i / 7) % (int64_t)(sizeof sp / sizeof sp[0])];
  }
  ct_tensor *t = tt_from(v, nd, shape, CT_FLOAT32);
  free(v);
  return t;
}

typedef struct {
  ct_tensor *a, *b;
  int which;
  int64_t dim;
} ew_ctx;
static ct_tensor *fk_unary(void *p) {
  ew_ctx *e = p;
  switch (e->which) {
    case 0: return ct_neg(e->a);
    case 1: return ct_exp(e->a);
    case 2: return ct_relu(e->a);
    case 3: return ct_sigmoid(e->a);
    case 4: return ct_silu(e->a);
    case 5: return ct_tanh(e->a);
    case 6: return ct_gelu(e->a, "none");
    default: return ct_gelu(e->a, "tanh");
  }
}
static ct_tensor *fk_binary(void *p) {
  ew_ctx *e = p;
  switch (e->which) {
    case 0: return ct_add(e->a, e->b);
    case 1: return ct_sub(e->a, e->b);
    case 2: return ct_mul(e->a, e->b);
    default: return ct_div(e->a, e->b);
  }
}

TEST(fast_unary_vs_reference) {
  static const char *names[] = {"neg", "exp", "relu", "sigmoid", "silu", "tanh", "gelu", "gelu_tanh"};
  static const int64_t sizes[] = {1, 7, 16, 17, 33, 1000, 70001};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (int sc = 0; sc < 2; sc++) {
      int64_t n = sizes[si];
      ew_ctx e = {fk_values(1, &n, sc ? 30.0 : 3.0, true), NULL, 0, 0};
      for (int w = 0; w < 8; w++) {
        e.which = w;
        char what[96];
        snprintf(what, sizeof what, "%s n=%lld scale %d", names[w], (long long)n, sc);
        /* a few ulp against the double-rounded reference; gelu's far negative tail is
         * ~1e-20 here where the reference's 1 + erf(x) in double cancels to 0 */
        /* gelu_tanh: float rounding of u = k (x + c x^3) is amplified by e^(2u) in the far tail
         * (|2u| ~ 20 gives ~2e-6 relative; PyTorch's float kernel has the same) */
        fk_compare(what, fk_unary, &e, w == 7 ? 5e-6 : 1e-6, w >= 6 ? 1e-15 : 1e-37);
      }
      ct_release(e.a);
    }
  /* non-contiguous input (falls back to the reference loop) and a strided output tail */
  int64_t s2[2] = {37, 29};
  ct_tensor *base = fk_values(2, s2, 5.0, false);
  ew_ctx e = {ct_t(base), NULL, 0, 0};
  for (int w = 0; w < 8; w++) {
    e.which = w;
    fk_compare(names[w], fk_unary, &e, 1e-6, w >= 6 ? 1e-15 : 1e-37);
  }
  ct_release(e.a);
  ct_release(base);
}

TEST(fast_binary_vs_reference_broadcasts) {
  static const int64_t sizes[] = {1, 5, 16, 31, 4099};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int64_t n = sizes[si], sh[2] = {3, n}, one = 1;
    ct_tensor *a = fk_values(2, sh, 4.0, true), *b = fk_values(2, sh, 4.0, true);
    ct_tensor *row = fk_values(1, &n, 4.0, false), *sc = fk_values(1, &one, 4.0, false);
    ct_tensor *pairs[4][2] = {{a, b}, {a, row}, {sc, a}, {a, sc}};
    for (int pi = 0; pi < 4; pi++)
      for (int w = 0; w < 4; w++) {
        ew_ctx e = {pairs[pi][0], pairs[pi][1], w, 0};
        char what[96];
        snprintf(what, sizeof what, "binary %d pair %d n=%lld", w, pi, (long long)n);
        fk_compare(what, fk_binary, &e, 0, 0); /* correctly rounded both ways: exact */
      }
    ct_release(a);
    ct_release(b);
    ct_release(row);
    ct_release(sc);
  }
}

static ct_tensor *fk_reduce(void *p) {
  ew_ctx *e = p;
  int64_t d = e->dim;
  switch (e->which) {
    case 0: return d < 0 ? ct_sum(e->a) : ct_sum_dims(e->a, 1, &d, false);
    case 1: return d < 0 ? ct_max(e->a) : ct_amax(e->a, 1, &d, true);
    case 2: return d < 0 ? ct_min(e->a) : ct_amin(e->a, 1, &d, false);
    case 3: return d < 0 ? ct_mean(e->a) : ct_mean_dims(e->a, 1, &d, false);
    case 4: return ct_softmax(e->a, d < 0 ? -1 : d, -1);
    case 5: return ct_log_softmax(e->a, d < 0 ? -1 : d, -1);
    default: {
      int64_t last = ct_shape(e->a)[ct_ndim(e->a) - 1];
      return ct_layer_norm(e->a, 1, &last, NULL, NULL, 1e-5);
    }
  }
}

TEST(fast_reductions_and_rows_vs_reference) {
  static const int64_t shapes[][2] = {{1, 1}, {3, 7}, {5, 16}, {4, 33}, {2, 1000}, {1, 300001}, {9, 40000}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int sp = 0; sp < 2; sp++) {
      ct_tensor *a = fk_values(2, shapes[si], 3.0, sp == 1);
      for (int w = 0; w < 7; w++)
        for (int64_t d = -1; d <= 1; d++) {
          if (w == 6 && sp) continue; /* layer_norm of inf/nan rows: nan either way, not informative */
          ew_ctx e = {a, NULL, w, d};
          char what[96];
          snprintf(what, sizeof what, "reduce/row op %d dim %lld shape %lldx%lld specials %d", w, (long long)d,
                   (long long)shapes[si][0], (long long)shapes[si][1], sp);
          double atol = w == 0 || w == 3 ? 1e-9 : w == 5 || w == 6 ? 2e-6 : 1e-37;
          fk_compare(what, fk_reduce, &e, w >= 4 ? 2e-6 : 2e-7, atol);
        }
      ct_release(a);
    }
}

TEST(fast_sum_of_ones_is_exact) {
  int64_t n = (int64_t)1 << 25;
  ct_tensor *ones = ct_ones(1, &n, ct_opts());
  ct_tensor *s = ct_sum(ones), *m = ct_mean(ones);
  CHECK(s && tt_at(s, 0) == 33554432.0);
  CHECK(m && tt_at(m, 0) == 1.0);
  ct_release(s);
  ct_release(m);
  ct_release(ones);
}
