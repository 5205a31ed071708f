/* Tests of the nn family: softmax, convolutions, pools, norms, dropout, embedding,
 * interpolation, attention. Gradients are checked against central differences in float64. */
#include "test.h"
#include <stdlib.h>

/* deterministic pseudo-random values in [-1, 1) */
static double nn_rand(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / (double)(1ULL << 52) - 1.0;
}

static ct_tensor *randn_t(int nd, const int64_t *shape, ct_dtype dt, uint64_t seed) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  uint64_t s = seed;
  for (int64_t i = 0; i < n; i++) v[i] = nn_rand(&s) * 2;
  ct_tensor *t = tt_from(v, nd, shape, dt);
  free(v);
  return t;
}

typedef ct_tensor *(*nn_fn)(ct_tensor *const *in, void *ctx);

/* sum(f(in) * R) for fixed R; checks d/d in[k] for every k with requires_grad against central
 * differences (float64 inputs). Returns the max abs error seen. */
static double gradcheck(nn_fn f, void *ctx, int n, ct_tensor *const *in) {
  ct_tensor *y = f(in, ctx);
  if (!y) return INFINITY;
  ct_tensor *r = randn_t(ct_ndim(y), ct_shape(y), CT_FLOAT64, 99);
  ct_tensor *yr = ct_mul(y, r);
  ct_tensor *s = ct_sum(yr);
  ct_tensor *grads[8] = {0};
  int idx[8], m = 0;
  ct_tensor *req[8];
  for (int k = 0; k < n; k++)
    if (in[k] && ct_requires_grad(in[k])) {
      idx[m] = k;
      req[m++] = in[k];
    }
  double worst = 0;
  if (ct_autograd_grad(1, &s, NULL, m, req, grads, false, false, true) != CT_OK) worst = INFINITY;
  for (int j = 0; j < m && worst < INFINITY; j++) {
    ct_tensor *x = in[idx[j]];
    int64_t ne = ct_numel(x);
    double *g = malloc((size_t)(ne ? ne : 1) * 8);
    if (grads[j]) ct_copy_to_buffer(grads[j], g, CT_FLOAT64, ne);
    else
      for (int64_t i = 0; i < ne; i++) g[i] = 0;
    double *data = ct_data_ptr(x); /* contiguous float64 leaves in these tests */
    for (int64_t i = 0; i < ne; i++) {
      double old = data[i], h = 1e-6, fp, fm;
      data[i] = old + h;
      ct_tensor *a = f(in, ctx), *b = ct_mul(a, r), *c = ct_sum(b);
      ct_item_double(c, &fp);
      ct_release(a), ct_release(b), ct_release(c);
      data[i] = old - h;
      a = f(in, ctx), b = ct_mul(a, r), c = ct_sum(b);
      ct_item_double(c, &fm);
      ct_release(a), ct_release(b), ct_release(c);
      data[i] = old;
      double num = (fp - fm) / (2 * h), e = fabs(num - g[i]) / (1 + fabs(num));
      if (e > worst) worst = e;
    }
    free(g);
  }
  for (int j = 0; j < m; j++) ct_release(grads[j]);
  ct_release(y), ct_release(r), ct_release(yr), ct_release(s);
  return worst;
}

static ct_tensor *leaf(int nd, const int64_t *shape, uint64_t seed) {
  ct_tensor *t = randn_t(nd, shape, CT_FLOAT64, seed);
  ct_requires_grad_(t, true);
  return t;
}

/* ---- softmax ---- */
TEST(nn_softmax_values) {
  double v[6] = {1, 2, 3, 1, 1, 1};
  int64_t sh[2] = {2, 3};
  ct_tensor *x = tt_from(v, 2, sh, CT_FLOAT32);
  ct_tensor *y = ct_softmax(x, 1, -1), *l = ct_log_softmax(x, -1, -1);
  double e = exp(1) + exp(2) + exp(3);
  CHECK_NEAR(tt_at(y, 0), exp(1) / e, 1e-6);
  CHECK_NEAR(tt_at(y, 4), 1.0 / 3, 1e-6);
  CHECK_NEAR(tt_at(l, 2), 3 - log(e), 1e-6);
  ct_tensor *y0 = ct_softmax(x, 0, CT_FLOAT64);
  CHECK(ct_tensor_dtype(y0) == CT_FLOAT64);
  CHECK_NEAR(tt_at(y0, 0), 0.5, 1e-12);
  /* large values stay finite (stable) */
  double big[2] = {1000, 1001};
  int64_t s1 = 2;
  ct_tensor *b = tt_from(big, 1, &s1, CT_FLOAT32), *bl = ct_log_softmax(b, 0, -1);
  CHECK(isfinite(tt_at(bl, 0)));
  CHECK_NEAR(tt_at(bl, 1), -log1p(exp(-1)), 1e-5);
  ct_release(x), ct_release(y), ct_release(l), ct_release(y0), ct_release(b), ct_release(bl);
}

TEST(nn_softmax_errors_edge) {
  int64_t sh[2] = {2, 3};
  ct_tensor *x = ct_zeros(2, sh, ct_opts_dtype(CT_INT64));
  CHECK_ERR_PTR(ct_softmax(x, 1, -1), "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'");
  CHECK_ERR_PTR(ct_log_softmax(x, 0, -1), "\"softmax_kernel_impl\" not implemented for 'Long'");
  CHECK_ERR_PTR(ct_softmax(x, 2, -1), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  ct_tensor *s = ct_softmax(x, 1, CT_FLOAT32); /* dtype= casts first */
  CHECK(s && tt_at(s, 0) > 0.333 && tt_at(s, 0) < 0.334);
  ct_tensor *z = ct_scalar_tensor(ct_sf(3), ct_opts()), *zs = ct_softmax(z, 0, -1);
  CHECK(zs && ct_ndim(zs) == 0 && tt_at(zs, 0) == 1.0);
  CHECK_ERR_PTR(ct_softmax(z, 1, -1), "expected to be in range of [-1, 0], but got 1");
  int64_t e[2] = {0, 3};
  ct_tensor *em = ct_zeros(2, e, ct_opts()), *es = ct_softmax(em, 1, -1);
  CHECK(es && ct_numel(es) == 0);
  CHECK_ERR_PTR(ct_softmax(NULL, 0, -1), "");
  ct_release(x), ct_release(s), ct_release(z), ct_release(zs), ct_release(em), ct_release(es);
}

static ct_tensor *f_softmax(ct_tensor *const *in, void *ctx) { return ct_softmax(in[0], *(int64_t *)ctx, -1); }
static ct_tensor *f_log_softmax(ct_tensor *const *in, void *ctx) { return ct_log_softmax(in[0], *(int64_t *)ctx, -1); }

TEST(nn_softmax_grad) {
  int64_t sh[3] = {2, 3, 4};
  ct_tensor *x = leaf(3, sh, 1);
  int64_t d = 1;
  CHECK(gradcheck(f_softmax, &d, 1, &x) < 1e-7);
  CHECK(gradcheck(f_log_softmax, &d, 1, &x) < 1e-7);
  d = -1;
  CHECK(gradcheck(f_log_softmax, &d, 1, &x) < 1e-7);
  ct_release(x);
}

/* double backward: grad of (d/dx sum(softmax(x) * r)) . v w.r.t. x, checked numerically */
typedef struct {
  nn_fn f;
  void *ctx;
} gg_ctx;
static ct_tensor *f_first_grad(ct_tensor *const *in, void *vctx) {
  gg_ctx *g = vctx;
  ct_tensor *y = g->f(in, g->ctx);
  int64_t n = ct_numel(y);
  ct_tensor *r = randn_t(ct_ndim(y), ct_shape(y), CT_FLOAT64, 7);
  ct_tensor *yr = ct_mul(y, r), *s = ct_sum(yr), *gx = NULL;
  (void)n;
  ct_autograd_grad(1, &s, NULL, 1, in, &gx, true, true, false);
  ct_release(y), ct_release(r), ct_release(yr), ct_release(s);
  return gx;
}

/* vector-Jacobian product d f / d in[0] with grad_output in[nx] (a leaf): its derivative in
 * the grad_output checks the backward op's own backward (linear ops' double backward) */
typedef struct {
  nn_fn f;
  void *ctx;
  int nx;
} vjp_ctx;
static ct_tensor *f_vjp(ct_tensor *const *in, void *vctx) {
  vjp_ctx *v = vctx;
  ct_tensor *y = v->f(in, v->ctx), *gx = NULL;
  if (!y) return NULL;
  ct_autograd_grad(1, &y, &in[v->nx], 1, in, &gx, true, true, false);
  ct_release(y);
  return gx;
}
static ct_tensor *out_leaf(nn_fn f, void *ctx, ct_tensor *const *in, uint64_t seed) {
  ct_tensor *y = f(in, ctx);
  ct_tensor *u = y ? leaf(ct_ndim(y), ct_shape(y), seed) : NULL;
  ct_release(y);
  return u;
}

TEST(nn_softmax_double_backward) {
  int64_t sh[2] = {3, 4};
  ct_tensor *x = leaf(2, sh, 3);
  int64_t d = 1;
  gg_ctx g = {f_softmax, &d};
  CHECK(gradcheck(f_first_grad, &g, 1, &x) < 1e-6);
  g.f = f_log_softmax;
  CHECK(gradcheck(f_first_grad, &g, 1, &x) < 1e-6);
  ct_release(x);
}

/* ---- convolution ---- */
TEST(nn_conv2d_values) {
  /* 1x1x3x3 input, 1x1x2x2 ones kernel: sums of 2x2 windows */
  double v[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  int64_t xs[4] = {1, 1, 3, 3}, ws[4] = {1, 1, 2, 2};
  ct_tensor *x = tt_from(v, 4, xs, CT_FLOAT32), *w = ct_ones(4, ws, ct_opts());
  ct_tensor *y = ct_conv2d(x, w, NULL, NULL, NULL, NULL, 1);
  CHECK(y && ct_shape(y)[2] == 2 && ct_shape(y)[3] == 2);
  CHECK_NEAR(tt_at(y, 0), 12, 1e-6);
  CHECK_NEAR(tt_at(y, 3), 28, 1e-6);
  int64_t pad[2] = {1, 1}, st[2] = {2, 2};
  ct_tensor *y2 = ct_conv2d(x, w, NULL, st, pad, NULL, 1);
  CHECK(y2 && ct_shape(y2)[2] == 2);
  CHECK_NEAR(tt_at(y2, 0), 1, 1e-6);
  CHECK_NEAR(tt_at(y2, 3), 5 + 6 + 8 + 9, 1e-6);
  ct_tensor *ys = ct_conv2d_mode(x, w, NULL, NULL, "same", NULL, 1); /* pad (0, 1): extra on the right */
  CHECK(ys && ct_shape(ys)[2] == 3);
  CHECK_NEAR(tt_at(ys, 0), 12, 1e-6);
  CHECK_NEAR(tt_at(ys, 8), 9, 1e-6);
  /* integer conv */
  ct_tensor *xi = ct_to_dtype(x, CT_INT64), *wi = ct_to_dtype(w, CT_INT64), *yi = ct_conv2d(xi, wi, NULL, NULL, NULL, NULL, 1);
  CHECK(yi && ct_tensor_dtype(yi) == CT_INT64 && tt_at(yi, 3) == 28);
  ct_release(x), ct_release(w), ct_release(y), ct_release(y2), ct_release(ys), ct_release(xi), ct_release(wi), ct_release(yi);
}

TEST(nn_conv_errors) {
  int64_t xs[4] = {2, 4, 8, 8}, ws[4] = {8, 3, 3, 3};
  ct_tensor *x = ct_zeros(4, xs, ct_opts()), *w = ct_zeros(4, ws, ct_opts());
  CHECK_ERR_PTR(ct_conv2d(x, w, NULL, NULL, NULL, NULL, 1),
                "Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 4, 8, 8] to have 3 channels, but got 4 channels instead");
  CHECK_ERR_PTR(ct_conv2d(x, w, NULL, NULL, NULL, NULL, 3),
                "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size [[8, 3, 3, 3]] instead");
  int64_t s0[2] = {0, 1}, pn[2] = {-1, 0};
  CHECK_ERR_PTR(ct_conv2d(x, w, NULL, s0, NULL, NULL, 1), "non-positive stride is not supported");
  CHECK_ERR_PTR(ct_conv2d(x, w, NULL, NULL, pn, NULL, 1), "negative padding is not supported");
  CHECK_ERR_PTR(ct_conv2d(x, w, NULL, NULL, NULL, NULL, 0), "non-positive groups is not supported");
  CHECK_ERR_PTR(ct_conv2d_mode(x, w, NULL, NULL, "foo", NULL, 1), "Invalid padding string: 'foo'");
  int64_t st2[2] = {2, 2};
  CHECK_ERR_PTR(ct_conv2d_mode(x, w, NULL, st2, "same", NULL, 1), "padding='same' is not supported for strided convolutions");
  int64_t w2s[4] = {8, 4, 9, 9};
  ct_tensor *w2 = ct_zeros(4, w2s, ct_opts());
  CHECK_ERR_PTR(ct_conv2d(x, w2, NULL, NULL, NULL, NULL, 1),
                "Calculated padded input size per channel: (8 x 8). Kernel size: (9 x 9). Kernel size can't be greater than actual input size");
  int64_t bs = 7;
  ct_tensor *b = ct_zeros(1, &bs, ct_opts()), *w3 = ct_zeros(4, (int64_t[]){8, 4, 3, 3}, ct_opts());
  CHECK_ERR_PTR(ct_conv2d(x, w3, b, NULL, NULL, NULL, 1),
                "Given weight of size [8, 4, 3, 3], expected bias to be 1-dimensional with 8 elements, but got bias of size [7] instead");
  ct_tensor *x2 = ct_zeros(2, (int64_t[]){8, 8}, ct_opts());
  CHECK_ERR_PTR(ct_conv2d(x2, w3, NULL, NULL, NULL, NULL, 1),
                "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [8, 8]");
  ct_tensor *wd = ct_zeros(4, (int64_t[]){8, 4, 3, 3}, ct_opts_dtype(CT_FLOAT64));
  CHECK_ERR_PTR(ct_conv2d(x, wd, NULL, NULL, NULL, NULL, 1),
                "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same");
  ct_tensor *xh = ct_zeros(4, xs, ct_opts_dtype(CT_FLOAT16)), *wh = ct_zeros(4, (int64_t[]){8, 4, 3, 3}, ct_opts_dtype(CT_FLOAT16));
  CHECK_ERR_PTR(ct_conv2d(xh, wh, NULL, NULL, NULL, NULL, 1), "\"slow_conv2d_cpu\" not implemented for 'Half'");
  ct_tensor *wt = ct_zeros(4, (int64_t[]){3, 4, 3, 3}, ct_opts());
  CHECK_ERR_PTR(ct_conv_transpose2d(x, wt, NULL, NULL, NULL, NULL, 1, NULL),
                "Given transposed=1, weight of size [3, 4, 3, 3], expected input[2, 4, 8, 8] to have 3 channels, but got 4 channels instead");
  int64_t op1[2] = {1, 1};
  ct_tensor *wt2 = ct_zeros(4, (int64_t[]){4, 4, 3, 3}, ct_opts());
  CHECK_ERR_PTR(ct_conv_transpose2d(x, wt2, NULL, NULL, NULL, op1, 1, NULL),
                "output padding must be smaller than either stride or dilation, but got output_padding_height: 1");
  /* zero batch */
  ct_tensor *x0 = ct_zeros(4, (int64_t[]){0, 4, 8, 8}, ct_opts()), *y0 = ct_conv2d(x0, w3, NULL, NULL, NULL, NULL, 1);
  CHECK(y0 && ct_shape(y0)[0] == 0 && ct_shape(y0)[1] == 8 && ct_shape(y0)[2] == 6);
  ct_release(x), ct_release(w), ct_release(w2), ct_release(b), ct_release(w3), ct_release(x2), ct_release(wd);
  ct_release(xh), ct_release(wh), ct_release(wt), ct_release(wt2), ct_release(x0), ct_release(y0);
}

typedef struct {
  int64_t stride[2], pad[2], dil[2], outpad[2], groups;
  int kind; /* 0 conv2d, 1 conv_transpose2d, 2 conv1d */
} conv_ctx;
static ct_tensor *f_conv(ct_tensor *const *in, void *vctx) {
  conv_ctx *c = vctx;
  if (c->kind == 1) return ct_conv_transpose2d(in[0], in[1], in[2], c->stride, c->pad, c->outpad, c->groups, c->dil);
  if (c->kind == 2) return ct_conv1d(in[0], in[1], in[2], c->stride[0], c->pad[0], c->dil[0], c->groups);
  return ct_conv2d(in[0], in[1], in[2], c->stride, c->pad, c->dil, c->groups);
}

TEST(nn_conv_grad) {
  ct_tensor *in[3];
  conv_ctx c = {{2, 1}, {1, 0}, {1, 2}, {0, 0}, 2, 0};
  in[0] = leaf(4, (int64_t[]){2, 4, 5, 6}, 1);
  in[1] = leaf(4, (int64_t[]){6, 2, 3, 2}, 2);
  in[2] = leaf(1, (int64_t[]){6}, 3);
  CHECK(gradcheck(f_conv, &c, 3, in) < 1e-6);
  ct_release(in[0]), ct_release(in[1]), ct_release(in[2]);
  /* transposed, groups and output_padding */
  conv_ctx t = {{2, 3}, {1, 0}, {1, 1}, {1, 2}, 2, 1};
  in[0] = leaf(4, (int64_t[]){2, 4, 3, 3}, 4);
  in[1] = leaf(4, (int64_t[]){4, 3, 3, 2}, 5);
  in[2] = leaf(1, (int64_t[]){6}, 6);
  CHECK(gradcheck(f_conv, &t, 3, in) < 1e-6);
  /* double backward through the transposed conv */
  gg_ctx g = {f_conv, &t};
  CHECK(gradcheck(f_first_grad, &g, 3, in) < 1e-6);
  ct_release(in[0]), ct_release(in[1]), ct_release(in[2]);
  /* conv1d, unbatched */
  conv_ctx d = {{1, 1}, {2, 0}, {2, 1}, {0, 0}, 1, 2};
  in[0] = leaf(2, (int64_t[]){3, 7}, 7);
  in[1] = leaf(3, (int64_t[]){2, 3, 3}, 8);
  in[2] = NULL;
  CHECK(gradcheck(f_conv, &d, 3, in) < 1e-6);
  ct_release(in[0]), ct_release(in[1]);
}

TEST(nn_conv_double_backward) {
  conv_ctx c = {{1, 2}, {1, 1}, {1, 1}, {0, 0}, 1, 0};
  ct_tensor *in[3] = {leaf(4, (int64_t[]){1, 2, 4, 5}, 11), leaf(4, (int64_t[]){3, 2, 2, 3}, 12), NULL};
  gg_ctx g = {f_conv, &c};
  CHECK(gradcheck(f_first_grad, &g, 3, in) < 1e-6);
  ct_release(in[0]), ct_release(in[1]);
}

/* ---- pooling ---- */
TEST(nn_max_pool2d) {
  double v[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  ct_tensor *x = tt_from(v, 4, (int64_t[]){1, 1, 4, 4}, CT_FLOAT32), *ix = NULL;
  int64_t k[2] = {2, 2};
  ct_tensor *y = ct_max_pool2d(x, k, NULL, NULL, NULL, false, &ix);
  CHECK(y && ct_numel(y) == 4 && tt_at(y, 0) == 6 && tt_at(y, 3) == 16);
  CHECK(ix && ct_tensor_dtype(ix) == CT_INT64 && tt_at(ix, 0) == 5 && tt_at(ix, 3) == 15);
  int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[2] = {1, 1};
  ct_tensor *yc = ct_max_pool2d(x, k3, s2, p1, NULL, true, NULL);
  CHECK(yc && ct_shape(yc)[2] == 3); /* ceil_mode */
  CHECK_ERR_PTR(ct_max_pool2d(x, k3, NULL, (int64_t[]){2, 2}, NULL, false, NULL),
                "pad should be at most half of kernel size, but got pad=2 and kernel_size=3");
  ct_tensor *xl = ct_to_dtype(x, CT_INT64);
  CHECK_ERR_PTR(ct_max_pool2d(xl, k, NULL, NULL, NULL, false, NULL), "\"max_pool2d\" not implemented for 'Long'");
  CHECK_ERR_PTR(ct_max_pool2d(x, (int64_t[]){5, 5}, NULL, NULL, NULL, false, NULL),
                "Given input size: (1x4x4). Calculated output size: (1x0x0). Output size is too small");
  ct_release(x), ct_release(ix), ct_release(y), ct_release(yc), ct_release(xl);
}

typedef struct {
  int kind;
  int64_t k[2], s[2], p[2], d[2];
  bool ceil, cip;
  int64_t div;
  int64_t os[2];
  const char *mode;
  int align;
  double sf[2];
} pool_ctx;
static ct_tensor *f_pool(ct_tensor *const *in, void *vctx) {
  pool_ctx *c = vctx;
  switch (c->kind) {
    case 0: return ct_max_pool2d(in[0], c->k, c->s, c->p, c->d, c->ceil, NULL);
    case 1: return ct_avg_pool2d(in[0], c->k, c->s, c->p, c->ceil, c->cip, c->div);
    case 2: return ct_adaptive_avg_pool2d(in[0], c->os);
    case 3: return ct_adaptive_max_pool2d(in[0], c->os, NULL);
    default: return ct_interpolate(in[0], c->sf[0] > 0 ? NULL : c->os, c->sf[0] > 0 ? c->sf : NULL, c->mode, c->align);
  }
}

TEST(nn_pool_grads) {
  ct_tensor *x = leaf(4, (int64_t[]){2, 2, 7, 6}, 21);
  pool_ctx c;
  memset(&c, 0, sizeof c);
  c.kind = 0;
  c.k[0] = 3, c.k[1] = 2, c.s[0] = 2, c.s[1] = 1, c.p[0] = 1, c.p[1] = 1, c.d[0] = 1, c.d[1] = 2, c.ceil = true;
  CHECK(gradcheck(f_pool, &c, 1, &x) < 1e-6);
  vjp_ctx g = {f_pool, &c, 1};
  ct_tensor *xu[2] = {x, out_leaf(f_pool, &c, &x, 22)};
  CHECK(gradcheck(f_vjp, &g, 2, xu) < 1e-6);
  ct_release(xu[1]);
  c.kind = 1, c.d[1] = 1, c.cip = false;
  CHECK(gradcheck(f_pool, &c, 1, &x) < 1e-6);
  c.div = 5;
  CHECK(gradcheck(f_pool, &c, 1, &x) < 1e-6);
  xu[1] = out_leaf(f_pool, &c, &x, 23);
  CHECK(gradcheck(f_vjp, &g, 2, xu) < 1e-6);
  ct_release(xu[1]);
  c.kind = 2, c.os[0] = 4, c.os[1] = 4;
  CHECK(gradcheck(f_pool, &c, 1, &x) < 1e-6);
  c.kind = 3, c.os[0] = 3, c.os[1] = 5;
  CHECK(gradcheck(f_pool, &c, 1, &x) < 1e-6);
  c.kind = 4, c.mode = "bilinear", c.align = 1, c.os[0] = 9, c.os[1] = 4;
  CHECK(gradcheck(f_pool, &c, 1, &x) < 1e-6);
  c.align = 0, c.sf[0] = 1.5, c.sf[1] = 0.7;
  CHECK(gradcheck(f_pool, &c, 1, &x) < 1e-6);
  xu[1] = out_leaf(f_pool, &c, &x, 24);
  CHECK(gradcheck(f_vjp, &g, 2, xu) < 1e-6);
  ct_release(xu[1]);
  c.kind = 2, c.sf[0] = 0, c.os[0] = 3, c.os[1] = 4;
  xu[1] = out_leaf(f_pool, &c, &x, 25);
  CHECK(gradcheck(f_vjp, &g, 2, xu) < 1e-6);
  ct_release(xu[1]);
  c.kind = 4, c.sf[0] = 1.5;
  c.mode = "nearest", c.align = -1;
  CHECK(gradcheck(f_pool, &c, 1, &x) < 1e-6);
  ct_release(x);
}

TEST(nn_avg_pool_values) {
  double v[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  ct_tensor *x = tt_from(v, 3, (int64_t[]){1, 4, 4}, CT_FLOAT32);
  int64_t k[2] = {2, 2}, p[2] = {1, 1};
  ct_tensor *a = ct_avg_pool2d(x, k, NULL, p, false, true, 0), *b = ct_avg_pool2d(x, k, NULL, p, false, false, 0);
  CHECK(a && ct_ndim(a) == 3 && ct_shape(a)[1] == 3);
  CHECK_NEAR(tt_at(a, 0), 0.25, 1e-6); /* corner: 1 / 4 with padding counted */
  CHECK_NEAR(tt_at(b, 0), 1, 1e-6);
  ct_tensor *xi = ct_to_dtype(x, CT_INT64), *ai = ct_avg_pool2d(xi, (int64_t[]){3, 3}, NULL, NULL, false, true, 0);
  CHECK(ai && tt_at(ai, 0) == 6); /* (1+2+3+5+6+7+9+10+11)/9 = 6 */
  ct_tensor *ad = ct_adaptive_avg_pool2d(x, (int64_t[]){1, -1});
  CHECK(ad && ct_shape(ad)[1] == 1 && ct_shape(ad)[2] == 4);
  CHECK_NEAR(tt_at(ad, 0), 7, 1e-6);
  ct_release(x), ct_release(a), ct_release(b), ct_release(xi), ct_release(ai), ct_release(ad);
}

TEST(nn_interpolate) {
  double v[4] = {1, 2, 3, 4};
  ct_tensor *x = tt_from(v, 4, (int64_t[]){1, 1, 2, 2}, CT_FLOAT32);
  double sf[2] = {2, 2};
  ct_tensor *n = ct_interpolate(x, NULL, sf, "nearest", -1);
  CHECK(n && ct_shape(n)[2] == 4 && tt_at(n, 0) == 1 && tt_at(n, 1) == 1 && tt_at(n, 2) == 2 && tt_at(n, 15) == 4);
  ct_tensor *b = ct_interpolate(x, (int64_t[]){3, 3}, NULL, "bilinear", 1);
  CHECK(b && tt_at(b, 4) == 2.5 && tt_at(b, 8) == 4);
  CHECK_ERR_PTR(ct_interpolate(x, (int64_t[]){3, 3}, sf, "nearest", -1), "only one of size or scale_factor should be defined");
  CHECK_ERR_PTR(ct_interpolate(x, (int64_t[]){3, 3}, NULL, "nearest", 1), "align_corners option can only be set");
  CHECK_ERR_PTR(ct_interpolate(x, (int64_t[]){0, 3}, NULL, "nearest", -1), "Input and output sizes should be greater than 0");
  ct_release(x), ct_release(n), ct_release(b);
}

/* ---- norms ---- */
typedef struct {
  int kind;
  int64_t ns[2];
  int n;
  double eps;
  int64_t groups;
} norm_ctx;
static ct_tensor *f_norm(ct_tensor *const *in, void *vctx) {
  norm_ctx *c = vctx;
  switch (c->kind) {
    case 0: return ct_layer_norm(in[0], c->n, c->ns, in[1], in[2], c->eps);
    case 1: return ct_group_norm(in[0], c->groups, in[1], in[2], c->eps);
    case 2: return ct_batch_norm(in[0], NULL, NULL, in[1], in[2], true, 0.1, c->eps);
    default: return ct_rms_norm(in[0], c->n, c->ns, in[1], c->eps);
  }
}

TEST(nn_norm_grads) {
  ct_tensor *in[3] = {leaf(3, (int64_t[]){3, 4, 5}, 31), leaf(2, (int64_t[]){4, 5}, 32), leaf(2, (int64_t[]){4, 5}, 33)};
  norm_ctx c = {0, {4, 5}, 2, 1e-5, 0};
  CHECK(gradcheck(f_norm, &c, 3, in) < 1e-6);
  gg_ctx g = {f_norm, &c};
  CHECK(gradcheck(f_first_grad, &g, 1, in) < 1e-5);
  c.kind = 3;
  CHECK(gradcheck(f_norm, &c, 2, in) < 1e-6);
  ct_release(in[1]), ct_release(in[2]);
  in[1] = leaf(1, (int64_t[]){4}, 34);
  in[2] = leaf(1, (int64_t[]){4}, 35);
  c.kind = 1, c.groups = 2;
  CHECK(gradcheck(f_norm, &c, 3, in) < 1e-6);
  c.kind = 2;
  CHECK(gradcheck(f_norm, &c, 3, in) < 1e-6);
  CHECK(gradcheck(f_first_grad, &g, 1, in) < 1e-5);
  ct_release(in[0]), ct_release(in[1]), ct_release(in[2]);
}

TEST(nn_batch_norm_running) {
  double v[8] = {1, 2, 3, 4, 5, 6, 7, 8}; /* [N=2, C=2, 2]: channel 0 = {1,2,5,6}, channel 1 = {3,4,7,8} */
  ct_tensor *x = tt_from(v, 3, (int64_t[]){2, 2, 2}, CT_FLOAT64);
  ct_tensor *rm = ct_zeros(1, (int64_t[]){2}, ct_opts_dtype(CT_FLOAT64)), *rv = ct_ones(1, (int64_t[]){2}, ct_opts_dtype(CT_FLOAT64));
  uint64_t v0 = ct_version(rm);
  ct_tensor *y = ct_batch_norm(x, rm, rv, NULL, NULL, true, 0.1, 1e-5);
  CHECK(y && ct_version(rm) > v0);
  CHECK_NEAR(tt_at(rm, 0), 0.1 * 3.5, 1e-12);
  CHECK_NEAR(tt_at(rm, 1), 0.1 * 5.5, 1e-12);
  /* unbiased var of {1,2,5,6} = 17/3 */
  CHECK_NEAR(tt_at(rv, 0), 0.9 + 0.1 * 17.0 / 3.0, 1e-12);
  CHECK_NEAR(tt_at(y, 0), (1 - 3.5) / sqrt(4.25 + 1e-5), 1e-9);
  ct_tensor *ye = ct_batch_norm(x, rm, rv, NULL, NULL, false, 0.1, 1e-5);
  CHECK_NEAR(tt_at(ye, 0), (1 - 0.35) / sqrt(0.9 + 0.1 * 17.0 / 3.0 + 1e-5), 1e-9);
  CHECK_ERR_PTR(ct_batch_norm(x, NULL, NULL, NULL, NULL, false, 0.1, 1e-5), "running_mean must be defined in evaluation mode");
  ct_tensor *x1 = ct_zeros(2, (int64_t[]){1, 3}, ct_opts());
  CHECK_ERR_PTR(ct_batch_norm(x1, NULL, NULL, NULL, NULL, true, 0.1, 1e-5),
                "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])");
  ct_tensor *r3 = ct_zeros(1, (int64_t[]){3}, ct_opts_dtype(CT_FLOAT64));
  CHECK_ERR_PTR(ct_batch_norm(x, r3, rv, NULL, NULL, true, 0.1, 1e-5), "running_mean should contain 2 elements not 3");
  ct_release(x), ct_release(rm), ct_release(rv), ct_release(y), ct_release(ye), ct_release(x1), ct_release(r3);
}

TEST(nn_norm_errors) {
  ct_tensor *x = ct_zeros(3, (int64_t[]){2, 3, 4}, ct_opts());
  CHECK_ERR_PTR(ct_layer_norm(x, 1, (int64_t[]){5}, NULL, NULL, 1e-5),
                "Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[2, 3, 4]");
  ct_tensor *w5 = ct_ones(1, (int64_t[]){5}, ct_opts());
  CHECK_ERR_PTR(ct_layer_norm(x, 1, (int64_t[]){4}, w5, NULL, 1e-5),
                "Expected weight to be of same shape as normalized_shape, but got weight of shape [5] and normalized_shape = [4]");
  CHECK_ERR_PTR(ct_group_norm(x, 2, NULL, NULL, 1e-5),
                "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 3, 4] and num_groups=2");
  ct_tensor *xl = ct_zeros(3, (int64_t[]){2, 3, 4}, ct_opts_dtype(CT_INT64));
  CHECK_ERR_PTR(ct_layer_norm(xl, 1, (int64_t[]){4}, NULL, NULL, 1e-5), "\"LayerNormKernelImpl\" not implemented for 'Long'");
  /* layer_norm on values: mean 0, var 1 */
  double v[4] = {1, 2, 3, 4};
  ct_tensor *a = tt_from(v, 1, (int64_t[]){4}, CT_FLOAT32), *y = ct_layer_norm(a, 1, (int64_t[]){4}, NULL, NULL, 0);
  CHECK_NEAR(tt_at(y, 0), -1.5 / sqrt(1.25), 1e-6);
  ct_release(x), ct_release(w5), ct_release(xl), ct_release(a), ct_release(y);
}

/* ---- dropout ---- */
TEST(nn_dropout) {
  ct_tensor *x = ct_ones(1, (int64_t[]){1000}, ct_opts());
  ct_generator_manual_seed(ct_default_generator(), 5);
  ct_tensor *y = ct_dropout(x, 0.3, true, NULL);
  int64_t zeros = 0;
  for (int i = 0; i < 1000; i++) {
    double v = tt_at(y, i);
    if (v == 0) zeros++;
    else CHECK_NEAR(v, 1 / 0.7, 1e-6);
  }
  CHECK(zeros > 240 && zeros < 360);
  ct_generator_manual_seed(ct_default_generator(), 5);
  ct_tensor *y2 = ct_dropout(x, 0.3, true, NULL);
  CHECK(tt_allclose(y, y2, 0, 0));
  ct_tensor *e = ct_dropout(x, 0.3, false, NULL);
  CHECK(e && ct_data_ptr(e) == ct_data_ptr(x)); /* x itself (inside a scope a handle of its own: ct_same) */
  ct_tensor *z = ct_dropout(x, 1.0, true, NULL);
  CHECK(z && tt_at(z, 7) == 0);
  CHECK_ERR_PTR(ct_dropout(x, 1.5, true, NULL), "dropout probability has to be between 0 and 1, but got 1.5");
  ct_tensor *xi = ct_ones(1, (int64_t[]){3}, ct_opts_dtype(CT_INT64));
  CHECK_ERR_PTR(ct_dropout(xi, 0.5, true, NULL), "result type Float can't be cast to the desired output type Long");
  ct_release(x), ct_release(y), ct_release(y2), ct_release(e), ct_release(z), ct_release(xi);
}

/* ---- embedding ---- */
static ct_tensor *f_emb(ct_tensor *const *in, void *ctx) { return ct_embedding(in[1], in[0], ctx); }

TEST(nn_embedding) {
  double wv[6] = {1, 2, 3, 4, 5, 6};
  int64_t iv[3] = {2, 0, 2};
  ct_tensor *w = tt_from(wv, 2, (int64_t[]){3, 2}, CT_FLOAT32);
  ct_tensor *ix = ct_from_buffer(iv, CT_INT64, 1, (int64_t[]){3}, ct_opts_dtype(CT_INT64));
  ct_tensor *y = ct_embedding(ix, w, NULL);
  CHECK(y && ct_shape(y)[0] == 3 && ct_shape(y)[1] == 2 && tt_at(y, 0) == 5 && tt_at(y, 3) == 2);
  int64_t bad[1] = {3};
  ct_tensor *ib = ct_from_buffer(bad, CT_INT64, 1, (int64_t[]){1}, ct_opts_dtype(CT_INT64));
  CHECK_ERR_PTR(ct_embedding(ib, w, NULL), "index out of range in self");
  CHECK(ct_last_status() == CT_ERR_INDEX);
  CHECK_ERR_PTR(ct_embedding(w, w, NULL), "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.FloatTensor instead");
  int64_t p4 = 4;
  CHECK_ERR_PTR(ct_embedding(ix, w, &p4), "Padding_idx must be within num_embeddings");
  /* padding_idx gets no gradient */
  ct_tensor *in[2] = {leaf(2, (int64_t[]){3, 2}, 41), ix};
  int64_t pad = -1; /* = 2 */
  ct_tensor *e = ct_embedding(ix, in[0], &pad), *s = ct_sum(e);
  CHECK_OK(ct_backward(s, NULL, false, false));
  ct_tensor *g = ct_grad(in[0]);
  CHECK(g && tt_at(g, 0) == 1 && tt_at(g, 4) == 0 && tt_at(g, 2) == 0);
  CHECK(gradcheck(f_emb, NULL, 2, in) < 1e-7);
  vjp_ctx gg = {f_emb, &pad, 2};
  ct_tensor *in3[3] = {in[0], ix, out_leaf(f_emb, &pad, in, 42)};
  CHECK(gradcheck(f_vjp, &gg, 3, in3) < 1e-7);
  ct_release(in3[2]);
  ct_release(w), ct_release(ix), ct_release(y), ct_release(ib), ct_release(in[0]), ct_release(e), ct_release(s);
}

/* ---- attention ---- */
TEST(nn_sdpa) {
  ct_tensor *q = leaf(3, (int64_t[]){2, 3, 4}, 51), *k = leaf(3, (int64_t[]){2, 5, 4}, 52), *v = leaf(3, (int64_t[]){2, 5, 2}, 53);
  ct_tensor *o = ct_scaled_dot_product_attention(q, k, v, NULL, 0, false, NULL, NULL);
  CHECK(o && ct_shape(o)[1] == 3 && ct_shape(o)[2] == 2);
  /* causal with L = S: the first query sees only the first key */
  ct_tensor *k3 = leaf(3, (int64_t[]){2, 3, 4}, 54), *v3 = leaf(3, (int64_t[]){2, 3, 2}, 55);
  ct_tensor *c = ct_scaled_dot_product_attention(q, k3, v3, NULL, 0, true, NULL, NULL);
  CHECK(c && fabs(tt_at(c, 0) - tt_at(v3, 0)) < 1e-12 && fabs(tt_at(c, 1) - tt_at(v3, 1)) < 1e-12);
  /* boolean mask that keeps only key 0 */
  bool mv[5] = {true, false, false, false, false};
  ct_tensor *m = ct_from_buffer(mv, CT_BOOL, 1, (int64_t[]){5}, ct_opts_dtype(CT_BOOL));
  ct_tensor *om = ct_scaled_dot_product_attention(q, k, v, m, 0, false, NULL, NULL);
  CHECK(om && fabs(tt_at(om, 0) - tt_at(v, 0)) < 1e-12);
  CHECK_ERR_PTR(ct_scaled_dot_product_attention(q, k, v, m, 0, true, NULL, NULL), "Explicit attn_mask should not be set when is_causal=True");
  ct_release(q), ct_release(k), ct_release(v), ct_release(o), ct_release(k3), ct_release(v3), ct_release(c);
  ct_release(m), ct_release(om);
}

TEST(nn_node_names_noncontig) {
  ct_tensor *x = leaf(4, (int64_t[]){1, 2, 6, 6}, 61);
  int64_t k[2] = {2, 2};
  ct_tensor *m = ct_max_pool2d(x, k, NULL, NULL, NULL, false, NULL), *a = ct_avg_pool2d(x, k, NULL, NULL, false, true, 0);
  ct_tensor *s = ct_softmax(x, 1, -1), *w = leaf(4, (int64_t[]){3, 2, 3, 3}, 62), *c = ct_conv2d(x, w, NULL, NULL, NULL, NULL, 1);
  CHECK(m && !strcmp(ct_grad_fn_name(m), "MaxPool2DWithIndicesBackward0"));
  CHECK(a && !strcmp(ct_grad_fn_name(a), "AvgPool2DBackward0"));
  CHECK(s && !strcmp(ct_grad_fn_name(s), "SoftmaxBackward0"));
  CHECK(c && !strcmp(ct_grad_fn_name(c), "ConvolutionBackward0"));
  /* a channels-last view gives the same values as its contiguous copy */
  ct_tensor *xt = ct_permute(x, 4, (int64_t[]){0, 2, 3, 1}), *xc = ct_contiguous(xt), *xb = ct_permute(xc, 4, (int64_t[]){0, 3, 1, 2});
  ct_tensor *c2 = ct_conv2d(xb, w, NULL, NULL, NULL, NULL, 1), *s2 = ct_softmax(xb, 1, -1);
  CHECK(!ct_is_contiguous(xb) && tt_allclose(c2, c, 0, 0) && tt_allclose(s2, s, 0, 0));
  ct_release(x), ct_release(m), ct_release(a), ct_release(s), ct_release(w), ct_release(c);
  ct_release(xt), ct_release(xc), ct_release(xb), ct_release(c2), ct_release(s2);
}
