/* The fast float32 / float64 pooling kernels (src/backend/cpu/pool_fast.h) against the
 * reference loops they replace (ct_fast_set_enabled(false), i.e. CT_REFERENCE_KERNELS=1),
 * through the public ops and autograd: max_pool2d (values and indices bit-identical: NaN
 * wins and ends the scan, ties keep the first index, -inf windows), adaptive_max_pool2d,
 * avg_pool2d (count_include_pad, divisor_override, ceil_mode, padding) and
 * adaptive_avg_pool2d, forward and input gradient, contiguous and strided inputs (the
 * latter fall back to the reference), batch 1 and several.
 *
 * Tolerance of the average pools and of gradients that sum several terms: the reference
 * accumulates in double and rounds once, the fast path accumulates K terms in the dtype, so
 * an element may move by K * u * sum|terms| (u = 2^-24 / 2^-53); with sum|terms| <= K * m
 * (m the largest |input| of the window, over the smallest divisor 1) the bound used is
 * (K + 2)^2 * u * m. A wrong tap moves an element by about m / K, far above it. */
#include "test.h"
#include "backend/cpu/simd/simd.h"
#include <math.h>
#include <stdlib.h>

typedef enum { PF_MAX, PF_AVG, PF_AMAX, PF_AAVG } pf_kind;

typedef struct {
  const char *name;
  pf_kind kind;
  int64_t N, C, H, W;
  int64_t k[2], s[2], p[2], d[2];
  bool ceil, cip;
  int64_t div;       /* divisor_override */
  int64_t os[2];     /* adaptive output size */
  int layout;        /* 0 contiguous, 1 x is a transposed view of its last two dims */
  int values;        /* 0 random, 1 few levels (ties) with NaN and -inf sprinkled, 2 the same all negative */
} pt_case;

static uint64_t pt_state = 0x9E3779B97F4A7C15ull;
static double pt_u(void) {
  pt_state ^= pt_state >> 12;
  pt_state ^= pt_state << 25;
  pt_state ^= pt_state >> 27;
  return (double)((pt_state * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2 - 1;
}

static double *pt_take(const ct_tensor *t, ct_dtype dt, int64_t *n) {
  *n = t ? ct_numel(t) : -1;
  if (!t) return NULL;
  double *v = malloc((size_t)(*n ? *n : 1) * 8);
  if (v && *n && ct_copy_to_buffer(t, v, dt, *n) != CT_OK) {
    free(v);
    return NULL;
  }
  return v;
}

typedef struct {
  double *y, *gx;
  int64_t *ix;
  int64_t ny, ngx, nix;
} pt_res;

static pt_res pt_run(const pt_case *c, ct_dtype dt, const double *xv, const double *gyv, int64_t ngy) {
  pt_res r;
  memset(&r, 0, sizeof r);
  int64_t xs[4] = {c->N, c->C, c->layout == 1 ? c->W : c->H, c->layout == 1 ? c->H : c->W};
  ct_tensor *xb = tt_from(xv, 4, xs, dt);
  CHECK(xb != NULL);
  if (!xb) return r;
  ct_requires_grad_(xb, true);
  ct_tensor *xt = c->layout == 1 ? ct_transpose(xb, 2, 3) : NULL;
  const ct_tensor *x = xt ? xt : xb;
  ct_tensor *y = NULL, *ix = NULL;
  switch (c->kind) {
    case PF_MAX: y = ct_max_pool2d(x, c->k, c->s, c->p, c->d, c->ceil, &ix); break;
    case PF_AVG: y = ct_avg_pool2d(x, c->k, c->s, c->p, c->ceil, c->cip, c->div); break;
    case PF_AMAX: y = ct_adaptive_max_pool2d(x, c->os, &ix); break;
    case PF_AAVG: y = ct_adaptive_avg_pool2d(x, c->os); break;
  }
  CHECK(y != NULL);
  if (y) {
    r.y = pt_take(y, CT_FLOAT64, &r.ny);
    if (ix) r.ix = (int64_t *)pt_take(ix, CT_INT64, &r.nix);
    CHECK(ngy == r.ny);
    ct_tensor *gy = ngy == r.ny ? tt_from(gyv, ct_ndim(y), ct_shape(y), dt) : NULL;
    if (gy) {
      CHECK_OK(ct_backward(y, gy, false, false));
      r.gx = pt_take(ct_grad(xb), CT_FLOAT64, &r.ngx);
    }
    ct_release(gy);
  }
  ct_release(ix);
  ct_release(y);
  ct_release(xt);
  ct_release(xb);
  return r;
}

static void pt_free(pt_res *r) {
  free(r->y);
  free(r->gx);
  free(r->ix);
}

static bool pt_same_bits(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return a == b && signbit(a) == signbit(b);
}

static int64_t pt_outsz(const pt_case *c, int i) {
  if (c->kind == PF_AMAX || c->kind == PF_AAVG) return c->os[i];
  int64_t I = i ? c->W : c->H, d = c->kind == PF_MAX ? c->d[i] : 1;
  int64_t num = I + 2 * c->p[i] - d * (c->k[i] - 1) - 1 + (c->ceil ? c->s[i] - 1 : 0);
  int64_t o = num / c->s[i] + 1;
  if (c->ceil && (o - 1) * c->s[i] >= I + c->p[i]) o--;
  return o;
}

static void pt_check(const pt_case *c, ct_dtype dt) {
  int64_t nx = c->N * c->C * c->H * c->W;
  int64_t ngy = c->N * c->C * pt_outsz(c, 0) * pt_outsz(c, 1);
  double *xv = malloc((size_t)(nx ? nx : 1) * 8), *gyv = malloc((size_t)(ngy ? ngy : 1) * 8);
  double mx = 0, mg = 0;
  for (int64_t i = 0; i < nx; i++) {
    double v = pt_u();
    if (c->values >= 1) {
      double q = pt_u();
      v = round(v * 2) / 2; /* few levels: many ties */
      if (c->values == 2) v = -fabs(v) - 0.5; /* all negative: a window's max below 0 */
      if (q > 0.97) v = NAN;
      else if (q < -0.95) v = -INFINITY;
    }
    xv[i] = v;
    if (isfinite(v) && fabs(v) > mx) mx = fabs(v);
  }
  for (int64_t i = 0; i < ngy; i++) {
    gyv[i] = pt_u();
    if (fabs(gyv[i]) > mg) mg = fabs(gyv[i]);
  }
  ct_fast_set_enabled(false);
  pt_res ref = pt_run(c, dt, xv, gyv, ngy);
  ct_fast_set_enabled(true);
  pt_res f = pt_run(c, dt, xv, gyv, ngy);
  const char *dn = dt == CT_FLOAT64 ? "float64" : "float32";
  double u = dt == CT_FLOAT64 ? 0x1p-53 : 0x1p-24;
  double K = (double)(c->kind == PF_AAVG || c->kind == PF_AMAX ? (c->H / c->os[0] + 2) * (c->W / c->os[1] + 2)
                                                                : c->k[0] * c->k[1]);
  bool is_max = c->kind == PF_MAX || c->kind == PF_AMAX;
  CHECK(ref.y && f.y && ref.ny == f.ny && ref.ny == ngy);
  CHECK(ref.gx && f.gx && ref.ngx == f.ngx && ref.ngx == nx);
  if (ref.y && f.y && ref.ny == f.ny) {
    for (int64_t i = 0; i < f.ny; i++) {
      bool ok = is_max ? pt_same_bits(f.y[i], ref.y[i]) : fabs(f.y[i] - ref.y[i]) <= (K + 2) * (K + 2) * u * mx;
      if (!ok) {
        ct_test_fail(__FILE__, __LINE__, "%s %s: output[%lld] fast %.17g reference %.17g", c->name, dn, (long long)i,
                     f.y[i], ref.y[i]);
        break;
      }
    }
  }
  if (is_max) {
    CHECK(ref.ix && f.ix && ref.nix == f.nix);
    if (ref.ix && f.ix && ref.nix == f.nix)
      for (int64_t i = 0; i < f.nix; i++)
        if (f.ix[i] != ref.ix[i]) {
          ct_test_fail(__FILE__, __LINE__, "%s %s: index[%lld] fast %lld reference %lld", c->name, dn, (long long)i,
                       (long long)f.ix[i], (long long)ref.ix[i]);
          break;
        }
  }
  if (ref.gx && f.gx && ref.ngx == f.ngx) {
    for (int64_t i = 0; i < f.ngx; i++)
      if (!(fabs(f.gx[i] - ref.gx[i]) <= (K + 2) * (K + 2) * u * mg)) {
        ct_test_fail(__FILE__, __LINE__, "%s %s: input grad[%lld] fast %.17g reference %.17g", c->name, dn,
                     (long long)i, f.gx[i], ref.gx[i]);
        break;
      }
  }
  pt_free(&ref);
  pt_free(&f);
  free(xv);
  free(gyv);
}

static const pt_case pt_cases[] = {
    /* name, kind, N, C, H, W, k, s, p, d, ceil, cip, div, os, layout, values */
    {"resnet stem max 3x3 s2 p1", PF_MAX, 1, 5, 17, 16, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false, 0, {0, 0}, 0, 0},
    /* the separable 3x3 stride-2 float32 kernel: rows wide enough for its 8-wide vectors (W >= 17),
     * both paddings, ceil_mode's clipped last window, odd sizes, ties / NaN / -inf, ResNet's 112x112 */
    {"max 3x3 s2 p1 wide ties", PF_MAX, 2, 3, 23, 53, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false, 0, {0, 0}, 0, 1},
    {"max 3x3 s2 p0 ceil wide", PF_MAX, 1, 4, 20, 46, {3, 3}, {2, 2}, {0, 0}, {1, 1}, true, false, 0, {0, 0}, 0, 1},
    {"max 3x3 s2 p1 ceil odd", PF_MAX, 2, 2, 37, 41, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false, 0, {0, 0}, 0, 1},
    {"max 3x3 s2 p1 pad h only", PF_MAX, 1, 3, 19, 34, {3, 3}, {2, 2}, {1, 0}, {1, 1}, false, false, 0, {0, 0}, 0, 1},
    /* the last vector covers the clipped last window (OW - va a multiple of 8) */
    {"max 3x3 s2 p1 clipped vector", PF_MAX, 2, 3, 9, 65, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false, 0, {0, 0}, 0, 2},
    {"max 3x3 s2 p0 ceil clipped vector", PF_MAX, 2, 3, 8, 48, {3, 3}, {2, 2}, {0, 0}, {1, 1}, true, false, 0, {0, 0}, 0, 2},
    {"max 3x3 s2 p1 112", PF_MAX, 1, 3, 112, 112, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false, 0, {0, 0}, 0, 0},
    {"max ties nan -inf", PF_MAX, 2, 3, 11, 13, {3, 2}, {1, 2}, {1, 1}, {1, 1}, false, false, 0, {0, 0}, 0, 1},
    {"max ceil dilation", PF_MAX, 2, 2, 12, 9, {3, 2}, {2, 3}, {1, 0}, {2, 3}, true, false, 0, {0, 0}, 0, 1},
    {"max 2x2 s2 odd", PF_MAX, 3, 4, 7, 9, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true, false, 0, {0, 0}, 0, 0},
    {"max kernel 1", PF_MAX, 1, 2, 5, 6, {1, 1}, {1, 1}, {0, 0}, {1, 1}, false, false, 0, {0, 0}, 0, 1},
    {"max transposed input", PF_MAX, 2, 3, 9, 10, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false, 0, {0, 0}, 1, 1},
    {"adaptive max", PF_AMAX, 2, 3, 10, 7, {0, 0}, {0, 0}, {0, 0}, {0, 0}, false, false, 0, {3, 4}, 0, 1},
    {"avg 3x3 s2 p1 incl pad", PF_AVG, 2, 3, 11, 10, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true, 0, {0, 0}, 0, 0},
    {"avg excl pad ceil", PF_AVG, 2, 3, 10, 11, {3, 2}, {2, 2}, {1, 1}, {1, 1}, true, false, 0, {0, 0}, 0, 0},
    {"avg divisor override", PF_AVG, 1, 4, 9, 8, {2, 3}, {1, 2}, {1, 1}, {1, 1}, true, true, 5, {0, 0}, 0, 0},
    {"avg transposed input", PF_AVG, 2, 2, 8, 9, {2, 2}, {2, 2}, {0, 1}, {1, 1}, false, true, 0, {0, 0}, 1, 0},
    {"adaptive avg global", PF_AAVG, 2, 8, 7, 7, {0, 0}, {0, 0}, {0, 0}, {0, 0}, false, false, 0, {1, 1}, 0, 0},
    {"adaptive avg uneven", PF_AAVG, 2, 3, 10, 11, {0, 0}, {0, 0}, {0, 0}, {0, 0}, false, false, 0, {3, 4}, 0, 0},
    {"adaptive avg upsize", PF_AAVG, 1, 2, 3, 5, {0, 0}, {0, 0}, {0, 0}, {0, 0}, false, false, 0, {5, 7}, 1, 0},
};

TEST(pool_fast_vs_reference) {
  bool was = ct_fast_enabled();
  for (size_t i = 0; i < sizeof pt_cases / sizeof pt_cases[0]; i++) {
    pt_check(&pt_cases[i], CT_FLOAT32);
    pt_check(&pt_cases[i], CT_FLOAT64);
  }
  ct_fast_set_enabled(was);
}

/* The same pools on many planes (so the thread pool splits them) agree with the reference. */
TEST(pool_fast_many_planes) {
  bool was = ct_fast_enabled();
  pt_case big = {"max many planes", PF_MAX, 4, 64, 12, 12, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false, 0, {0, 0}, 0, 1};
  pt_check(&big, CT_FLOAT32);
  pt_case avg = {"adaptive avg many planes", PF_AAVG, 4, 64, 7, 7, {0, 0}, {0, 0}, {0, 0}, {0, 0}, false, false, 0, {1, 1}, 0, 0};
  pt_check(&avg, CT_FLOAT32);
  ct_fast_set_enabled(was);
}

/* With overlapping windows (stride 1) the fast scatter sums every contribution. */
TEST(pool_fast_overlap_grad) {
  int64_t sh[4] = {1, 1, 4, 4}, k[2] = {3, 3}, s[2] = {1, 1}, p[2] = {1, 1}, d[2] = {1, 1};
  double xv[16];
  for (int i = 0; i < 16; i++) xv[i] = i == 5 ? 10 : 0.01 * i; /* 5 wins every window that holds it */
  ct_tensor *x = tt_from(xv, 4, sh, CT_FLOAT32);
  ct_requires_grad_(x, true);
  ct_tensor *y = ct_max_pool2d(x, k, s, p, d, false, NULL);
  CHECK(y != NULL);
  if (y) {
    ct_tensor *l = ct_sum(y);
    CHECK_OK(ct_backward(l, NULL, false, false));
    double g[16];
    CHECK_OK(ct_copy_to_buffer(ct_grad(x), g, CT_FLOAT64, 16));
    /* element (1,1) is in the windows of outputs (0..2, 0..2): 9 of them */
    CHECK(g[5] == 9);
    ct_release(l);
  }
  ct_release(y);
  ct_release(x);
}
