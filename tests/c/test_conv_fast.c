/* The fast CPU convolutions (im2col / 1x1 + packed GEMM, kernels_conv.c) against the
 * reference direct loops they replace, through the public ops and autograd: forward,
 * input gradient and weight gradient (and bias gradient) of conv1d / conv2d /
 * conv_transpose2d on odd sizes, stride, dilation, padding, groups (depthwise too), batch 1,
 * non-contiguous inputs and zero-size dims, in float32 and float64. Each case runs with the
 * automatic path choice, with im2col forced under a tiny workspace (chunks of output rows),
 * and with a workspace of two samples (merged samples plus a one-sample remainder).
 *
 * Tolerance: the reference accumulates in double and rounds once; the fast path accumulates
 * K products in the dtype, in some order. Any such order is within K*u*sum|terms| of the
 * exact sum (u = unit roundoff, 2^-24 for float32, 2^-53 for float64), and sum|terms| is
 * the same convolution run on |x|, |w|, |gy| (computed by the reference). So each element
 * must satisfy |fast - ref| <= (K + 2) * u * absref, with K an upper bound of the reduction
 * lengths of the case. A wrong index changes an element by a whole term, ~absref / K. */
#include "test.h"
#include "backend/cpu/conv_fast.h"
#include "backend/cpu/simd/simd.h"
#include <stdlib.h>

typedef struct {
  const char *name;
  int nd;        /* 1 or 2 spatial dims */
  bool tr;       /* conv_transpose2d (x [N, C, ...], w [C, O/G, k...]) */
  int64_t N, C, O, G;
  int64_t in[2], k[2], s[2], p[2], d[2], op[2];
  bool bias;
  ct_dtype dt;
  int layout; /* 0 contiguous; 1 x is a transposed view of its last two dims; 2 x is every other channel */
} cf_case;

static uint64_t cf_state = 0x2545F4914F6CDD1Dull;
static double cf_u(void) {
  cf_state ^= cf_state >> 12;
  cf_state ^= cf_state << 25;
  cf_state ^= cf_state >> 27;
  return (double)((cf_state * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2 - 1;
}

static int64_t cf_outsz(const cf_case *c, int i) {
  int64_t dk = c->d[i] * (c->k[i] - 1) + 1;
  if (c->tr) return (c->in[i] - 1) * c->s[i] - 2 * c->p[i] + dk + c->op[i];
  return (c->in[i] + 2 * c->p[i] - dk) / c->s[i] + 1;
}

typedef struct {
  double *v[4]; /* y, grad of x's base, grad of w, grad of bias */
  int64_t n[4];
} cf_res;

static void cf_free(cf_res *r) {
  for (int i = 0; i < 4; i++) free(r->v[i]);
}

static double *cf_take(const ct_tensor *t, int64_t *n) {
  *n = t ? ct_numel(t) : -1;
  if (!t) return NULL;
  double *v = malloc((size_t)(*n ? *n : 1) * sizeof *v);
  if (v && *n && ct_copy_to_buffer(t, v, CT_FLOAT64, *n) != CT_OK) {
    free(v);
    return NULL;
  }
  return v;
}

/* base shape of x (what gets the gradient) */
static int cf_xbase(const cf_case *c, int64_t *sh) {
  int nd = c->nd;
  sh[0] = c->N;
  sh[1] = c->layout == 2 ? 2 * c->C : c->C;
  for (int i = 0; i < nd; i++) sh[2 + i] = c->in[i];
  if (c->layout == 1) {
    sh[2] = c->in[1];
    sh[3] = c->in[0];
  }
  return nd + 2;
}
static int cf_wshape(const cf_case *c, int64_t *sh) {
  sh[0] = c->tr ? c->C : c->O;
  sh[1] = c->tr ? c->O / c->G : c->C / c->G;
  for (int i = 0; i < c->nd; i++) sh[2 + i] = c->k[i];
  return c->nd + 2;
}
static int cf_yshape(const cf_case *c, int64_t *sh) {
  sh[0] = c->N;
  sh[1] = c->O;
  for (int i = 0; i < c->nd; i++) sh[2 + i] = cf_outsz(c, i);
  return c->nd + 2;
}
static int64_t cf_numel(int nd, const int64_t *sh) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= sh[i];
  return n;
}

/* forward + backward once on the given values */
static cf_res cf_run(const cf_case *c, const double *xv, const double *wv, const double *bv, const double *gyv) {
  cf_res r;
  memset(&r, 0, sizeof r);
  int64_t xs[4], ws[4], ys[4];
  int xn = cf_xbase(c, xs), wn = cf_wshape(c, ws), yn = cf_yshape(c, ys);
  ct_tensor *xb = tt_from(xv, xn, xs, c->dt), *w = tt_from(wv, wn, ws, c->dt);
  ct_tensor *b = c->bias ? tt_from(bv, 1, &c->O, c->dt) : NULL, *gy = tt_from(gyv, yn, ys, c->dt);
  CHECK(xb && w && gy && (!c->bias || b));
  ct_requires_grad_(xb, true);
  ct_requires_grad_(w, true);
  if (b) ct_requires_grad_(b, true);
  ct_tensor *x = c->layout == 1 ? ct_transpose(xb, 2, 3) : c->layout == 2 ? ct_slice(xb, 1, 0, 2 * c->C, 2) : NULL;
  const ct_tensor *xin = x ? x : xb;
  ct_tensor *y;
  if (c->tr) y = ct_conv_transpose2d(xin, w, b, c->s, c->p, c->op, c->G, c->d);
  else if (c->nd == 2) y = ct_conv2d(xin, w, b, c->s, c->p, c->d, c->G);
  else y = ct_conv1d(xin, w, b, c->s[0], c->p[0], c->d[0], c->G);
  CHECK(y != NULL);
  if (y) {
    r.v[0] = cf_take(y, &r.n[0]);
    CHECK_OK(ct_backward(y, gy, false, false));
    r.v[1] = cf_take(ct_grad(xb), &r.n[1]);
    r.v[2] = cf_take(ct_grad(w), &r.n[2]);
    if (b) r.v[3] = cf_take(ct_grad(b), &r.n[3]);
  }
  ct_release(y);
  ct_release(x);
  ct_release(xb);
  ct_release(w);
  ct_release(b);
  ct_release(gy);
  return r;
}

static const char *cf_what[4] = {"output", "input grad", "weight grad", "bias grad"};

/* |fast - ref| <= (K + 2) u absref for every element of every result */
static void cf_compare(const cf_case *c, const char *mode, const cf_res *f, const cf_res *ref, const cf_res *abs,
                       double K) {
  double u = c->dt == CT_FLOAT64 ? 0x1p-53 : 0x1p-24;
  for (int i = 0; i < 4; i++) {
    if (i == 3 && !c->bias) continue;
    if (!f->v[i] || !ref->v[i] || !abs->v[i] || f->n[i] != ref->n[i]) {
      ct_test_fail(__FILE__, __LINE__, "%s (%s): %s missing or of another size (%lld vs %lld)", c->name, mode, cf_what[i],
                   (long long)f->n[i], (long long)ref->n[i]);
      continue;
    }
    for (int64_t j = 0; j < f->n[i]; j++) {
      double e = fabs(f->v[i][j] - ref->v[i][j]), tol = (K + 2) * u * abs->v[i][j];
      if (!(e <= tol)) {
        ct_test_fail(__FILE__, __LINE__, "%s (%s): %s element %lld: %.9g vs reference %.9g (tolerance %.3g)", c->name,
                     mode, cf_what[i], (long long)j, f->v[i][j], ref->v[i][j], tol);
        break;
      }
    }
  }
}

static void cf_check(const cf_case *c) {
  int64_t xs[4], ws[4], ys[4];
  int xn = cf_xbase(c, xs), wn = cf_wshape(c, ws), yn = cf_yshape(c, ys);
  int64_t nx = cf_numel(xn, xs), nw = cf_numel(wn, ws), ny = cf_numel(yn, ys);
  double *v[4], *a[4];
  int64_t cnt[4] = {nx, nw, c->O, ny};
  for (int i = 0; i < 4; i++) {
    v[i] = malloc((size_t)(cnt[i] ? cnt[i] : 1) * sizeof(double));
    a[i] = malloc((size_t)(cnt[i] ? cnt[i] : 1) * sizeof(double));
    for (int64_t j = 0; j < cnt[i]; j++) a[i][j] = fabs(v[i][j] = cf_u());
  }
  ct_conv_force_path(CT_CONV_PATH_REFERENCE);
  cf_res ref = cf_run(c, v[0], v[1], v[2], v[3]), abs = cf_run(c, a[0], a[1], a[2], a[3]);
  /* reduction lengths: forward C*ksp (+ bias), input grad O*ksp, weight grad N*positions */
  int64_t ksp = 1, insp = 1, outsp = 1;
  for (int i = 0; i < c->nd; i++) ksp *= c->k[i], insp *= c->in[i], outsp *= ys[2 + i];
  double K = (double)((c->C + c->O) * ksp + c->N * (insp > outsp ? insp : outsp));
  /* a workspace of two samples' columns (of the forward conv the kernels see) */
  int64_t two = 2 * (c->tr ? c->O : c->C) * ksp * (c->tr ? insp : outsp);
  static const struct {
    const char *name;
    int path;
    int64_t budget; /* -1: two samples */
  } modes[] = {{"auto", -1, 0},
               {"im2col, row chunks", CT_CONV_PATH_IM2COL, 1},
               {"im2col, 2-sample chunks", CT_CONV_PATH_IM2COL, -1},
               {"auto, 1-sample Winograd chunks", CT_CONV_PATH_WINOGRAD, 1}};
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    int64_t before = ct_conv_path_count(CT_CONV_PATH_IM2COL) + ct_conv_path_count(CT_CONV_PATH_GEMM_1X1) +
                     ct_conv_path_count(CT_CONV_PATH_WINOGRAD);
    int64_t wino_before = ct_conv_path_count(CT_CONV_PATH_WINOGRAD);
    ct_conv_force_path(modes[m].path);
    ct_conv_set_col_budget(modes[m].budget < 0 ? two : modes[m].budget);
    cf_res f = cf_run(c, v[0], v[1], v[2], v[3]);
    ct_conv_force_path(-1);
    ct_conv_set_col_budget(0);
    /* the fast kernels ran (forward, and input + weight gradients of the backward) */
    int64_t ran = ct_conv_path_count(CT_CONV_PATH_IM2COL) + ct_conv_path_count(CT_CONV_PATH_GEMM_1X1) +
                  ct_conv_path_count(CT_CONV_PATH_WINOGRAD) - before;
    if (ran < 3) ct_test_fail(__FILE__, __LINE__, "%s (%s): fast kernels ran %lld times, expected 3", c->name,
                              modes[m].name, (long long)ran);
    /* Winograd takes the forward, the input gradient and the weight gradient of float32 3x3 stride-1
     * convs with >= 16 channels on both sides, padding <= 2 (the input gradient's flipped padding
     * 2 - p >= 0) and at least (C + O) / 4 2x2 tiles of output (of gx for the input gradient; the
     * weight gradient goes with the forward), unless im2col is forced */
    int64_t wino = ct_conv_path_count(CT_CONV_PATH_WINOGRAD) - wino_before;
    bool w_any = !c->tr && c->dt == CT_FLOAT32 && c->nd == 2 && c->G == 1 && c->C >= 16 && c->O >= 16 &&
                 c->k[0] == 3 && c->k[1] == 3 && c->s[0] == 1 && c->s[1] == 1 && c->d[0] == 1 && c->d[1] == 1 &&
                 c->p[0] <= 2 && c->p[1] <= 2 && c->N > 0 && modes[m].path != CT_CONV_PATH_IM2COL;
    int64_t need = c->C + c->O, t_fwd = c->N * ((ys[2] + 1) / 2) * ((ys[3] + 1) / 2),
            t_bwd = c->N * ((c->in[0] + 1) / 2) * ((c->in[1] + 1) / 2);
    /* the forward and the weight gradient also from 64 tiles and (C + O) / 16 (wino_fwd_wgrad_pays) */
    bool fw = 4 * t_fwd >= need || (t_fwd >= 64 && 16 * t_fwd >= need);
    int want = w_any ? 2 * fw + (4 * t_bwd >= need) : 0;
    if (wino != want)
      ct_test_fail(__FILE__, __LINE__, "%s (%s): Winograd ran %lld times, expected %d", c->name, modes[m].name,
                   (long long)wino, want);
    cf_compare(c, modes[m].name, &f, &ref, &abs, K);
    cf_free(&f);
  }
  cf_free(&ref);
  cf_free(&abs);
  for (int i = 0; i < 4; i++) {
    free(v[i]);
    free(a[i]);
  }
}

#define F32 CT_FLOAT32
#define F64 CT_FLOAT64
/* name, nd, tr, N, C, O, G, in, k, s, p, d, outpad, bias, dtype, layout */
static const cf_case cf_cases[] = {
    {"basic 3x3 pad 1", 2, false, 2, 3, 4, 1, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0},
    {"stride 2 odd sizes", 2, false, 3, 5, 6, 1, {9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, false, F32, 0},
    /* stride 2 with 16 outputs a row: im2col's vector gather (4 at a time) up to the plane's last row */
    {"stride 2 rows of 16 (vector gather)", 2, false, 2, 3, 4, 1, {11, 32}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, true,
     F32, 0},
    {"stride 2 rows of 15 pad 0", 2, false, 2, 3, 4, 1, {9, 31}, {3, 3}, {2, 2}, {0, 0}, {1, 1}, {0, 0}, false, F32, 0},
    {"dilation (2,3)", 2, false, 2, 4, 5, 1, {10, 9}, {3, 2}, {1, 1}, {2, 1}, {2, 3}, {0, 0}, true, F32, 0},
    {"groups 2 stride (2,1)", 2, false, 2, 4, 6, 2, {8, 7}, {3, 3}, {2, 1}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0},
    {"depthwise", 2, false, 2, 6, 6, 6, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, F32, 0},
    {"depthwise x2 stride 2", 2, false, 3, 4, 8, 4, {8, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0},
    {"1x1", 2, false, 3, 8, 4, 1, {5, 7}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, true, F32, 0},
    {"1x1 groups", 2, false, 2, 6, 9, 3, {4, 5}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, false, F32, 0},
    {"1x1 large (per-sample weight grad)", 2, false, 2, 5, 7, 1, {17, 16}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0},
     true, F32, 0},
    {"1x1 stride 2 (downsample)", 2, false, 2, 6, 10, 1, {9, 8}, {1, 1}, {2, 2}, {0, 0}, {1, 1}, {0, 0}, false, F32,
     0},
    {"7x7 stride 2 pad 3 (stem)", 2, false, 2, 3, 8, 1, {23, 21}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, {0, 0}, false, F32,
     0},
    {"batch 1", 2, false, 1, 16, 16, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, F32, 0},
    {"batch 5 small spatial (merged samples)", 2, false, 5, 8, 12, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0},
     true, F32, 0},
    {"padding over kernel", 2, false, 2, 2, 3, 1, {5, 6}, {2, 2}, {1, 1}, {3, 2}, {1, 1}, {0, 0}, true, F32, 0},
    {"stride over kernel", 2, false, 2, 3, 2, 1, {11, 10}, {2, 2}, {3, 3}, {0, 1}, {1, 1}, {0, 0}, false, F32, 0},
    {"non-contiguous (transposed view)", 2, false, 2, 3, 4, 1, {6, 7}, {3, 2}, {1, 2}, {1, 0}, {1, 1}, {0, 0}, true,
     F32, 1},
    {"non-contiguous (channel slice)", 2, false, 3, 4, 5, 1, {6, 5}, {3, 3}, {2, 1}, {1, 1}, {1, 1}, {0, 0}, false,
     F32, 2},
    {"conv1d k4 s2 p2 d2", 1, false, 2, 3, 5, 1, {17}, {4}, {2}, {2}, {2}, {0}, true, F32, 0},
    {"conv1d groups", 1, false, 3, 6, 4, 2, {13}, {3}, {1}, {1}, {1}, {0}, false, F32, 0},
    {"conv1d depthwise non-contiguous", 1, false, 2, 3, 3, 3, {8}, {4}, {1}, {1}, {1}, {0}, false, F32, 2},
    {"conv_transpose2d stride 2", 2, true, 2, 3, 4, 1, {4, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 0}, true, F32, 0},
    {"conv_transpose2d groups dilation", 2, true, 1, 4, 6, 2, {5, 4}, {2, 3}, {1, 1}, {1, 0}, {2, 1}, {0, 0}, true,
     F32, 0},
    {"zero batch", 2, false, 0, 3, 4, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0},
    {"zero in-channels", 2, false, 2, 0, 4, 1, {5, 5}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, true, F32, 0},
    {"zero out-channels", 2, false, 2, 3, 0, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, F32, 0},
    /* ResNet-18's layer4 entry at 64x64 input: K above the GEMM's K block (256), N < NR */
    {"resnet layer4.0.conv1", 2, false, 2, 256, 512, 1, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, false, F32, 0},
    {"resnet layer4.0.downsample", 2, false, 2, 256, 512, 1, {4, 4}, {1, 1}, {2, 2}, {0, 0}, {1, 1}, {0, 0}, false,
     F32, 0},
    {"resnet stem 64x64", 2, false, 2, 3, 64, 1, {64, 64}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, {0, 0}, false, F32, 0},
    {"resnet layer1", 2, false, 2, 64, 64, 1, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, F32, 0},
    {"resnet layer3", 2, false, 2, 256, 256, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, F32, 0},
    {"resnet layer4", 2, false, 2, 512, 512, 1, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, F32, 0},
    /* Winograd F(2x2, 3x3): odd output sizes (clipped tiles), padding 0 and 2, tiles wholly in the
     * padding, C != O, non-contiguous input, batch 1 */
    {"winograd odd sizes pad 1", 2, false, 3, 16, 24, 1, {15, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true, F32,
     0},
    {"winograd pad 0", 2, false, 2, 20, 16, 1, {19, 18}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, false, F32, 0},
    {"winograd pad (2,1)", 2, false, 2, 16, 17, 1, {13, 14}, {3, 3}, {1, 1}, {2, 1}, {1, 1}, {0, 0}, true, F32, 0},
    {"winograd 1x1 input pad 2 (forward only)", 2, false, 20, 16, 16, 1, {1, 1}, {3, 3}, {1, 1}, {2, 2}, {1, 1},
     {0, 0}, false, F32, 0},
    {"winograd non-contiguous batch 1", 2, false, 1, 16, 16, 1, {18, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false,
     F32, 1},
    /* rows of 19 and 17 tiles: two 8-tile vector blocks of the transforms plus a scalar tail */
    {"winograd wide pad 1", 2, false, 2, 16, 16, 1, {6, 37}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0},
    {"winograd wide pad 0", 2, false, 2, 16, 24, 1, {10, 36}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, false, F32, 0},
    /* Winograd from (C + O) / 4 tiles: 40 tiles, C + O = 112 (im2col before session 9) */
    {"winograd 4x4 (C + O) / 4 tiles", 2, false, 10, 64, 48, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true,
     F32, 0},
    /* 64 tiles, C + O = 272: the forward and the weight gradient take Winograd, the input gradient im2col */
    {"winograd 64 tiles (C + O) / 16, input grad im2col", 2, false, 4, 160, 112, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1},
     {1, 1}, {0, 0}, false, F32, 0},
    /* chunks of >= 128 tiles (wino_scratch): 1 MiB of V + M holds 26 samples of 4 tiles here, the rule
     * makes it 32, so 40 samples run as 32 + a partial chunk of 8 */
    {"winograd 128-tile chunks, partial last", 2, false, 40, 80, 72, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1},
     {0, 0}, false, F32, 0},
    /* channels not multiples of 8: the weight transform's scalar tail (O C = 323) and the flipped
     * transform's partial 8 x 8 blocks (wino_wtf_range, 19 x 17) */
    {"winograd 17 -> 19 channels (partial weight blocks)", 2, false, 3, 17, 19, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1},
     {1, 1}, {0, 0}, false, F32, 0},
    /* stride 1: the input gradient runs as the flipped-kernel forward conv (padding d (k-1) - p) */
    {"stride 1 unpadded 3x3", 2, false, 2, 3, 5, 1, {7, 8}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, false, F32, 0},
    {"stride 1 dilation 2 pad (1,3) 3x2", 2, false, 2, 4, 3, 1, {9, 10}, {3, 2}, {1, 1}, {1, 3}, {2, 2}, {0, 0}, true,
     F32, 0},
    {"f64 3x3 stride 1 pad 1 groups 2", 2, false, 2, 4, 6, 2, {6, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true,
     F64, 0},
    {"f64 stride dilation groups", 2, false, 3, 4, 6, 2, {9, 8}, {3, 2}, {2, 1}, {1, 2}, {1, 2}, {0, 0}, true, F64, 0},
    {"f64 1x1", 2, false, 2, 5, 3, 1, {6, 6}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, true, F64, 0},
    {"f64 conv1d non-contiguous", 1, false, 2, 4, 6, 1, {15}, {5}, {3}, {2}, {1}, {0}, true, F64, 2},
    {"f64 conv_transpose2d", 2, true, 2, 3, 2, 1, {5, 5}, {3, 3}, {2, 1}, {0, 1}, {1, 1}, {1, 0}, false, F64, 0},
};

TEST(conv_fast_vs_reference) {
  for (size_t i = 0; i < sizeof cf_cases / sizeof cf_cases[0]; i++) cf_check(&cf_cases[i]);
}

/* The Winograd transforms have a portable and an AVX2 body (8 tiles a vector, scalar tails): the
 * Winograd cases against the reference at every SIMD level this CPU has. */
TEST(conv_fast_winograd_simd_levels) {
  ct_simd_isa was = ct_simd_active();
  int64_t before = ct_conv_path_count(CT_CONV_PATH_WINOGRAD), levels = 0;
  for (int lvl = CT_SIMD_PORTABLE; lvl <= (int)ct_simd_cpu_level(); lvl++, levels++) {
    ct_simd_force((ct_simd_isa)lvl);
    for (size_t i = 0; i < sizeof cf_cases / sizeof cf_cases[0]; i++)
      if (!strncmp(cf_cases[i].name, "winograd", 8)) cf_check(&cf_cases[i]);
  }
  ct_simd_force(was);
  /* 8 cases of fwd + both grads, 1 of fwd + weight grad */
  CHECK(ct_conv_path_count(CT_CONV_PATH_WINOGRAD) - before >= 26 * levels);
}

/* The chunking does not depend on the thread count, nor does the GEMM's order: 1 and 2
 * threads give identical bits. */
static void cf_thread_invariant(const cf_case c) {
  int64_t xs[4], ws[4], ys[4];
  int xn = cf_xbase(&c, xs), wn = cf_wshape(&c, ws), yn = cf_yshape(&c, ys);
  int64_t cnt[4] = {cf_numel(xn, xs), cf_numel(wn, ws), c.O, cf_numel(yn, ys)};
  double *v[4];
  for (int i = 0; i < 4; i++) {
    v[i] = malloc((size_t)cnt[i] * sizeof(double));
    for (int64_t j = 0; j < cnt[i]; j++) v[i][j] = cf_u();
  }
  int was = ct_get_num_threads();
  ct_set_num_threads(1);
  cf_res one = cf_run(&c, v[0], v[1], v[2], v[3]);
  ct_set_num_threads(2);
  cf_res two = cf_run(&c, v[0], v[1], v[2], v[3]);
  ct_set_num_threads(was);
  for (int i = 0; i < 4; i++) {
    CHECK(one.v[i] && two.v[i] && one.n[i] == two.n[i]);
    if (one.v[i] && two.v[i] && one.n[i] == two.n[i])
      CHECK(memcmp(one.v[i], two.v[i], (size_t)one.n[i] * sizeof(double)) == 0);
  }
  cf_free(&one);
  cf_free(&two);
  for (int i = 0; i < 4; i++) free(v[i]);
}
TEST(conv_fast_thread_invariant) {
  /* strided (col2im input gradient) and stride 1 (input gradient as the flipped-kernel forward) */
  cf_thread_invariant((cf_case){"threads", 2, false, 3, 8, 12, 1, {11, 10}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0});
  cf_thread_invariant((cf_case){"threads s1", 2, false, 3, 8, 12, 1, {11, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0});
  /* Winograd (forward, input and weight gradients, at each thread count) */
  int64_t wino = ct_conv_path_count(CT_CONV_PATH_WINOGRAD);
  cf_thread_invariant((cf_case){"threads winograd", 2, false, 3, 16, 24, 1, {11, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0});
  CHECK(ct_conv_path_count(CT_CONV_PATH_WINOGRAD) - wino == 6);
}

/* Chunks with fewer than 8 (sample, channel) planes split each plane's im2col into pieces of output rows
 * (s10, kernels_conv.c im2col_split_range): ResNet's stem at 224 and batch 1 (3 planes; the general path,
 * 112 outputs a row, chunks of 15 rows in the auto mode, all 112 in the 2-sample mode) and one-channel
 * convs through the short-row path (14 outputs a row) and the stride-1 run path (whole blocks of rows copied
 * at once): against the reference loops (forward, and the weight gradient, which also runs im2col), and 1 vs
 * 2 threads bit for bit. */
TEST(conv_fast_im2col_row_split) {
  static const cf_case cases[] = {
      {"resnet stem 224 batch 1", 2, false, 1, 3, 64, 1, {224, 224}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, {0, 0}, true, F32, 0},
      {"1 channel stride 2 short rows", 2, false, 1, 1, 8, 1, {28, 27}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0},
      {"1 channel 5x5 stride 1 (row runs)", 2, false, 2, 1, 5, 1, {40, 36}, {5, 5}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, true, F32, 0},
      {"f64 1 channel stride (1,2)", 2, false, 1, 1, 4, 1, {33, 41}, {3, 4}, {1, 2}, {1, 1}, {2, 1}, {0, 0}, true, F64, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cf_check(&cases[i]);
    cf_thread_invariant(cases[i]);
  }
}

/* The rule: 1x1/stride 1/unpadded takes the GEMM alone, others im2col, other dtypes the
 * reference loops. */
TEST(conv_fast_path_rule) {
  int64_t xs[4] = {2, 4, 6, 6}, ws1[4] = {3, 4, 1, 1}, ws3[4] = {3, 4, 3, 3}, one[2] = {1, 1}, zero[2] = {0, 0};
  int64_t two[2] = {2, 2};
  ct_tensor *x = ct_randn(4, xs, ct_opts(), NULL), *w1 = ct_randn(4, ws1, ct_opts(), NULL),
            *w3 = ct_randn(4, ws3, ct_opts(), NULL);
  ct_tensor *xi = ct_ones(4, xs, ct_opts_dtype(CT_INT64)), *wi = ct_ones(4, ws3, ct_opts_dtype(CT_INT64));
  CHECK(x && w1 && w3 && xi && wi);
  struct {
    const ct_tensor *x, *w;
    const int64_t *s;
    ct_conv_path want;
  } cases[] = {{x, w1, one, CT_CONV_PATH_GEMM_1X1}, {x, w1, two, CT_CONV_PATH_IM2COL},
               {x, w3, one, CT_CONV_PATH_IM2COL}, {xi, wi, one, CT_CONV_PATH_REFERENCE}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t before = ct_conv_path_count(cases[i].want);
    ct_tensor *y = ct_conv2d(cases[i].x, cases[i].w, NULL, cases[i].s, zero, one, 1);
    CHECK(y != NULL);
    CHECK(ct_conv_path_count(cases[i].want) == before + 1);
    /* the int64 result is exact: every output of all-ones 4x3x3 kernels over ones is 36 */
    if (y && i == 3) CHECK(tt_at(y, 0) == 36.0);
    ct_release(y);
  }
  ct_release(x);
  ct_release(w1);
  ct_release(w3);
  ct_release(xi);
  ct_release(wi);
}

/* 3x3 / stride 1 / pad 1 convs on small maps by tap GEMMs (s10, kernels_conv.c taps_run): the forward
 * (where Winograd's own rule does not hold) and the input gradient (where the flipped forward does not
 * pay), in the auto mode and the forced-Winograd mode with 1-sample chunks: square, non-square, 1-wide
 * and 2x2 maps, channel counts not multiples of 8 (the tap-major weight's AVX2 gathers and scalar tail),
 * against the reference loops, and 1 vs 2 threads bit for bit. */
TEST(conv_fast_taps) {
  static const cf_case cases[] = {
      {"taps 4x4 24 -> 40", 2, false, 3, 24, 40, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0},
      {"taps 3x5 33 -> 40", 2, false, 2, 33, 40, 1, {3, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, F32, 0},
      {"taps 4x1 16 -> 17", 2, false, 2, 16, 17, 1, {4, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, F32, 0},
      {"taps 2x2 batch 5 20 -> 16", 2, false, 5, 20, 16, 1, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true, F32, 1},
  };
  int64_t before = ct_conv_taps_count();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) cf_check(&cases[i]);
  /* forward + input gradient in the two modes that allow it, per case */
  CHECK(ct_conv_taps_count() - before == 4 * (int64_t)(sizeof cases / sizeof cases[0]));
  cf_thread_invariant(cases[0]); /* (cases with a bias: the helper compares all four results) */
  cf_thread_invariant(cases[3]);
}

/* The tap-major weight rearrangement of the tap GEMMs in each of its forms (scalar, stride-9 gathers,
 * in-register 8x8 transpose: the per-CPU default picks one), against the reference loops: channel
 * counts with and without a tail of fewer than 8, forward and input gradient (Ci and Co swap there),
 * and 1 vs 2 threads for the transpose. */
TEST(conv_fast_taps_weight_modes) {
  static const cf_case cases[] = {
      {"taps wt 4x4 21 -> 35", 2, false, 3, 21, 35, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0},
      {"taps wt 4x4 40 -> 24", 2, false, 2, 40, 24, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, F32, 0},
      {"taps wt 2x3 16 -> 33", 2, false, 4, 16, 33, 1, {2, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, true, F32, 0},
  };
  for (int mode = 0; mode <= 2; mode++) {
    ct_conv_set_taps_wt(mode);
    int64_t before = ct_conv_taps_count();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) cf_check(&cases[i]);
    CHECK(ct_conv_taps_count() - before == 4 * (int64_t)(sizeof cases / sizeof cases[0]));
  }
  ct_conv_set_taps_wt(2);
  cf_thread_invariant(cases[0]);
  ct_conv_set_taps_wt(-1);
}
