/* WebGPU kernels of session 9 (issue 9: ResNet-18 224 / ViT-Tiny b1 inference) against the CPU:
 * the GEMM's short-product tile (32x32 per workgroup of 64 threads where the 64x64 grid would
 * leave a large GPU mostly idle: ViT-Tiny's 197-token products).
 * Every test is skipped, with one printed line giving the count and the reason, where Dawn
 * or a Vulkan adapter is missing. Sizes are ViT-Tiny's own (SwiftShader runs them in seconds).
 * Tolerances: the GPU sums each output over k in order with float32 fma (whatever the tile),
 * the reference is the CPU in float64 rounded once, so the difference is the float32 sum's
 * rounding: about sqrt(K) * 2^-24 * |a||b|-sized terms for random data; rel 1e-4 with abs
 * 1e-5 * sqrt(K) * 4 (K <= 768: abs <= 1.1e-3, ~20x the typical error, far below the
 * worst-case bound K * 2^-24 * sum|a_k b_k| ~ 2e-2). The small and the 64x64 tile must agree
 * bit for bit (the same fma chain per output): checked with tolerance 0. */
#include "webgpu_test.h"
#include "backend/webgpu/webgpu_backend.h"
#include "ctorch/models.h"
#include "ctorch/webgpu.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

WEBGPU_TESTS("test_webgpu9", "WebGPU test(s)")
#define W9_TEST(name) WEBGPU_TEST(webgpu9, name)

static ct_generator *gen(void) {
  static ct_generator *g;
  if (!g) g = ct_generator_new(909);
  return g;
}
static ct_tensor *rnd(int nd, const int64_t *shape) { return ct_randn(nd, shape, ct_opts_dtype(CT_FLOAT32), gen()); }
static ct_tensor *f64(const ct_tensor *t) { return ct_to_dtype(t, CT_FLOAT64); }
static ct_tensor *cpu(const ct_tensor *t) { return ct_to_device(t, ct_cpu()); }

/* one product, on the CPU in float64 and on WebGPU under the three small-tile settings:
 * default, forced on (=1), off (=0, the 64x64 tile) */
typedef ct_tensor *(*prod_fn)(ct_tensor *const *in);
static void check_prod(const char *what, prod_fn f, int n, ct_tensor *const *in, int64_t K) {
  ct_tensor *c64[4], *g[4];
  for (int i = 0; i < n; i++) c64[i] = f64(in[i]), g[i] = W(in[i]);
  ct_tensor *r64 = f(c64), *ref = ct_to_dtype(r64, CT_FLOAT32); /* float64, rounded once */
  ct_release(r64);
  static const char *const modes[3] = {NULL, "1", "0"};
  ct_tensor *got[3];
  for (int m = 0; m < 3; m++) {
    if (modes[m]) setenv("CT_WEBGPU_GEMM_SMALL", modes[m], 1);
    else unsetenv("CT_WEBGPU_GEMM_SMALL");
    got[m] = cpu(f(g));
  }
  unsetenv("CT_WEBGPU_GEMM_SMALL");
  char w[128];
  snprintf(w, sizeof w, "%s (default tile) vs cpu float64", what);
  SAME(w, ref, got[0], 1e-4, 4e-5 * sqrt((double)K));
  snprintf(w, sizeof w, "%s: small tile vs 64x64, bit for bit", what);
  SAME(w, got[2], got[1], 0, 0);
  snprintf(w, sizeof w, "%s: default vs 64x64, bit for bit", what);
  SAME(w, got[2], got[0], 0, 0);
  for (int i = 0; i < n; i++) ct_release(c64[i]), ct_release(g[i]);
  for (int m = 0; m < 3; m++) ct_release(got[m]);
  ct_release(ref);
}
static ct_tensor *p_linear(ct_tensor *const *in) { return ct_linear(in[0], in[1], in[2]); }
static ct_tensor *p_mm(ct_tensor *const *in) { return ct_mm(in[0], in[1]); }
static ct_tensor *p_bmm_t(ct_tensor *const *in) { return ct_matmul(in[0], ct_transpose(in[1], -2, -1)); }
static ct_tensor *p_bmm(ct_tensor *const *in) { return ct_matmul(in[0], in[1]); }
static ct_tensor *p_addmm(ct_tensor *const *in) { return ct_addmm(in[2], in[0], in[1], ct_sf(0.75), ct_sf(-1.5)); }

/* ViT-Tiny/16's products at batch 1 (197 tokens, width 192, 3 heads of 64, MLP 768), and edges */
W9_TEST(gemm_short_tiles) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *x = rnd(2, (const int64_t[]){197, 192}), *h = rnd(2, (const int64_t[]){197, 768});
  ct_tensor *wqkv = rnd(2, (const int64_t[]){576, 192}), *bqkv = rnd(1, (const int64_t[]){576});
  ct_tensor *w2 = rnd(2, (const int64_t[]){192, 768}), *b2 = rnd(1, (const int64_t[]){192});
  check_prod("qkv linear 197x192 -> 576", p_linear, 3, (ct_tensor *[]){x, wqkv, bqkv}, 192);
  check_prod("fc2 linear 197x768 -> 192", p_linear, 3, (ct_tensor *[]){h, w2, b2}, 768);
  /* by default (CT_WEBGPU_SPLITK_SHORT unset) this K = 768 splits in 4 (partials summed in slice
   * order: another order than one chain, so vs the CPU only; the dispatch count says it split:
   * product + sum); CT_WEBGPU_SPLITK_SHORT=0 (session 8's rule) keeps it one product */
  for (int mode = 0; mode < 2; mode++) {
    if (mode) setenv("CT_WEBGPU_SPLITK_SHORT", "0", 1);
    ct_tensor *gh = W(h), *gw2 = W(w2), *gb2 = W(b2);
    ct_webgpu_counters a = ct_webgpu_get_counters();
    ct_tensor *y = ct_linear(gh, gw2, gb2), *yc = y ? cpu(y) : NULL;
    ct_webgpu_counters b = ct_webgpu_get_counters();
    ct_tensor *r64 = ct_linear(f64(h), f64(w2), f64(b2)), *r = ct_to_dtype(r64, CT_FLOAT32);
    SAME(mode ? "fc2 linear, CT_WEBGPU_SPLITK_SHORT=0 vs cpu float64" : "fc2 linear, split K vs cpu float64", r, yc, 1e-4,
         4e-5 * sqrt(768.0));
    CHECK(b.dispatches - a.dispatches == (mode ? 1 : 2));
    ct_release(gh), ct_release(gw2), ct_release(gb2), ct_release(y), ct_release(yc), ct_release(r64), ct_release(r);
  }
  unsetenv("CT_WEBGPU_SPLITK_SHORT");
  ct_tensor *q = rnd(3, (const int64_t[]){3, 197, 64}), *k = rnd(3, (const int64_t[]){3, 197, 64});
  ct_tensor *p = rnd(3, (const int64_t[]){3, 197, 197});
  check_prod("q k^T 3x197x64 . 64x197", p_bmm_t, 2, (ct_tensor *[]){q, k}, 64);
  check_prod("p v 3x197x197 . 197x64", p_bmm, 2, (ct_tensor *[]){p, k}, 197);
  /* edges of the 32x32 tile, N not a multiple of 4 (scalar loads), K shorter than a slice */
  ct_tensor *a = rnd(2, (const int64_t[]){33, 7}), *b = rnd(2, (const int64_t[]){7, 35});
  check_prod("mm 33x7 . 7x35", p_mm, 2, (ct_tensor *[]){a, b}, 7);
  ct_tensor *a2 = rnd(2, (const int64_t[]){70, 40}), *b3 = rnd(2, (const int64_t[]){40, 36});
  ct_tensor *c0 = rnd(2, (const int64_t[]){70, 36});
  check_prod("addmm 0.75 C0 - 1.5 * 70x40 . 40x36", p_addmm, 3, (ct_tensor *[]){a2, b3, c0}, 40);
  ct_scope_end(sc);
}

/* CT_WEBGPU_CONV_FWD_T (A/B switch for the H200): T forced for the forward convolution only; the
 * backward stays on its default tile. ResNet-224 layer shapes in small: a 3x3 stride-1 and a
 * strided 1x1 convolution with bias, forward and input/weight gradients vs the CPU (float64).
 * Tolerance rel 1e-4 (abs 1e-4 forward, 1e-3 for the gradients of sum(y^2), whose values reach
 * ~1e3): float32 sums of 144 (forward), 360 (input gradient) and 196 (weight gradient) terms in
 * slice order, ~sqrt(K) 2^-24 relative to the |terms| for random data. */
W9_TEST(conv_forward_tile_switch) {
  static const char *const modes[] = {"2", "1", "4"};
  for (int m = 0; m < 3; m++) {
    ct_scope *sc = ct_scope_begin();
    setenv("CT_WEBGPU_CONV_FWD_T", modes[m], 1);
    ct_tensor *x = rnd(4, (const int64_t[]){1, 16, 14, 14}), *w = rnd(4, (const int64_t[]){40, 16, 3, 3});
    ct_tensor *w1 = rnd(4, (const int64_t[]){24, 16, 1, 1}), *b = rnd(1, (const int64_t[]){24});
    ct_tensor *cx = ct_detach(f64(x)), *cw = ct_detach(f64(w)), *gx = ct_detach(W(x)), *gw = ct_detach(W(w));
    CHECK_OK(ct_requires_grad_(cx, true));
    CHECK_OK(ct_requires_grad_(cw, true));
    CHECK_OK(ct_requires_grad_(gx, true));
    CHECK_OK(ct_requires_grad_(gw, true));
    ct_tensor *cy = ct_conv2d(cx, cw, NULL, (const int64_t[]){1, 1}, (const int64_t[]){1, 1}, (const int64_t[]){1, 1}, 1);
    ct_tensor *gy = ct_conv2d(gx, gw, NULL, (const int64_t[]){1, 1}, (const int64_t[]){1, 1}, (const int64_t[]){1, 1}, 1);
    char what[96];
    snprintf(what, sizeof what, "conv 3x3 forward, FWD_T=%s", modes[m]);
    SAME(what, ct_to_dtype(cy, CT_FLOAT32), gy, 1e-4, 1e-4);
    CHECK_OK(ct_backward(ct_sum(ct_mul(cy, cy)), NULL, false, false));
    CHECK_OK(ct_backward(ct_sum(ct_mul(gy, gy)), NULL, false, false));
    snprintf(what, sizeof what, "conv 3x3 input gradient, FWD_T=%s", modes[m]);
    SAME(what, ct_to_dtype(ct_grad(cx), CT_FLOAT32), ct_grad(gx), 1e-4, 1e-3);
    snprintf(what, sizeof what, "conv 3x3 weight gradient, FWD_T=%s", modes[m]);
    SAME(what, ct_to_dtype(ct_grad(cw), CT_FLOAT32), ct_grad(gw), 1e-4, 1e-3);
    ct_tensor *c1 = ct_conv2d(f64(x), f64(w1), f64(b), (const int64_t[]){2, 2}, (const int64_t[]){0, 0}, (const int64_t[]){1, 1}, 1);
    ct_tensor *g1 = ct_conv2d(W(x), W(w1), W(b), (const int64_t[]){2, 2}, (const int64_t[]){0, 0}, (const int64_t[]){1, 1}, 1);
    snprintf(what, sizeof what, "conv 1x1 stride 2 + bias forward, FWD_T=%s", modes[m]);
    SAME(what, ct_to_dtype(c1, CT_FLOAT32), g1, 1e-4, 1e-4);
    ct_scope_end(sc);
  }
  unsetenv("CT_WEBGPU_CONV_FWD_T");
}

/* ResNet inference with the eval batch norm (+ residual, + ReLU) folded into the convolutions'
 * output pass (src/models/resnet.c's conv_bn -> ct_webgpu_conv_bn): the CIFAR ResNet-18 at batch 2
 * on 16x16 inputs (its layer3/4 convolutions split K, so the fold runs in the split-K sum pass
 * too; the stem's does not), with random running statistics and affine parameters (the defaults
 * would hide a wrong mean, weight or bias). Checks: logits vs the CPU in float64 (rel 1e-4 abs
 * 1e-4: 18 layers of float32 sums of up to 4608 terms, measured ~1e-6 relative); the fold off
 * (CT_WEBGPU_CONV_BN=0) gives the same bits (the same float32 operations in the same order) and
 * exactly 56 dispatches more: per convolution the BN's two (20 convolutions), per block the add
 * and the ReLU (8 blocks); with grad enabled nothing is folded. */
ct_tensor *ct_webgpu_conv_bn(ct_module *conv, ct_module *bn, double eps, const ct_tensor *x, const ct_tensor *res, bool relu,
                             bool *fused);
static void bn_randomize(ct_module *m) {
  ct_dict *d = ct_dict_new();
  CHECK_OK(ct_module_named_buffers(m, d));
  CHECK_OK(ct_module_named_parameters(m, d));
  int nbn = 0;
  bool prev = ct_set_grad_enabled(false);
  for (int64_t i = 0; i < ct_dict_len(d); i++) {
    const char *n = ct_dict_name(d, i);
    ct_tensor *t = ct_dict_tensor(d, i);
    bool bn = strstr(n, "bn") || strstr(n, "downsample.1.");
    if (!bn || ct_tensor_dtype(t) != CT_FLOAT32) continue;
    ct_tensor *r = rnd(1, ct_shape(t)), *v = NULL;
    if (strstr(n, "running_mean") || strstr(n, "bias")) v = ct_mul_scalar(r, ct_sf(0.3));
    else if (strstr(n, "running_var")) v = ct_add_scalar(ct_mul(r, r), ct_sf(0.2));
    else if (strstr(n, "weight")) v = ct_add_scalar(ct_mul_scalar(r, ct_sf(0.3)), ct_sf(1.0));
    if (v) {
      CHECK_OK(ct_copy_(t, v));
      nbn++;
    }
    ct_release(r), ct_release(v);
  }
  ct_set_grad_enabled(prev);
  CHECK(nbn == 20 * 4); /* 20 BatchNorm2d: mean, var, weight, bias */
  ct_dict_free(d);
}
static ct_tensor *fwd_count(ct_module *m, const ct_tensor *x, int64_t *dispatches) {
  ct_webgpu_counters a = ct_webgpu_get_counters();
  ct_tensor *y = ct_module_forward(m, x);
  CHECK(y != NULL);
  ct_tensor *c = y ? cpu(y) : NULL; /* waits for the work */
  ct_webgpu_counters b = ct_webgpu_get_counters();
  *dispatches = b.dispatches - a.dispatches;
  ct_release(y);
  return c;
}
W9_TEST(resnet_conv_bn_fold) {
  ct_scope *sc = ct_scope_begin();
  /* session 10's fused head and in-dispatch split-K sums (test_webgpu10.c) off: the counts below are
   * the BN fold's alone (the sums' fusion depends on the device's storage-buffer limit) */
  setenv("CT_WEBGPU_POOL_FC", "0", 1);
  setenv("CT_WEBGPU_CONV_FUSED_SUM", "0", 1);
  ct_module *m = ct_resnet18_cifar_new(10);
  CHECK(m != NULL);
  if (!m) return;
  bn_randomize(m);
  CHECK_OK(ct_module_eval(m));
  ct_tensor *x = rnd(4, (const int64_t[]){2, 3, 16, 16}), *x64 = f64(x);
  bool prev = ct_set_grad_enabled(false);
  CHECK_OK(ct_module_to_dtype(m, CT_FLOAT64));
  ct_tensor *r64 = ct_module_forward(m, x64), *ref = r64 ? ct_to_dtype(r64, CT_FLOAT32) : NULL;
  CHECK_OK(ct_module_to_dtype(m, CT_FLOAT32)); /* float32 -> float64 -> float32: the same values */
  CHECK_OK(ct_module_to_device(m, ct_webgpu()));
  ct_tensor *gx = W(x);
  int64_t d_fold = 0, d_plain = 0, d_grad = 0;
  ct_tensor *y_fold = fwd_count(m, gx, &d_fold);
  setenv("CT_WEBGPU_CONV_BN", "0", 1);
  ct_tensor *y_plain = fwd_count(m, gx, &d_plain);
  unsetenv("CT_WEBGPU_CONV_BN");
  SAME("resnet18-cifar eval, folded vs cpu float64", ref, y_fold, 1e-4, 1e-4);
  SAME("resnet18-cifar eval, folded vs CT_WEBGPU_CONV_BN=0", y_plain, y_fold, 0, 0);
  printf("test_webgpu9: resnet18-cifar b2 eval forward: %lld dispatches folded, %lld not\n", (long long)d_fold,
         (long long)d_plain);
  CHECK(d_plain - d_fold == 56);
  /* only a plain Conv2d takes the fold (a wrapper, e.g. LoRA's or this Sequential, runs more after
   * its convolution): ct_webgpu_conv_bn leaves it unfused */
  bool f = true;
  ct_tensor *xd = W(rnd(4, (const int64_t[]){2, 64, 8, 8}));
  ct_tensor *yd = ct_webgpu_conv_bn(ct_module_child(m, "layer2.0.downsample"), ct_module_child(m, "layer2.0.bn1"), 1e-5, xd,
                                    NULL, false, &f);
  CHECK(yd != NULL && !f);
  ct_release(xd), ct_release(yd);
  ct_set_grad_enabled(true);
  ct_tensor *y_grad = fwd_count(m, gx, &d_grad);
  SAME("resnet18-cifar eval with grad (not folded)", y_plain, y_grad, 0, 0);
  CHECK(d_grad == d_plain);
  ct_set_grad_enabled(prev);
  ct_release(y_fold), ct_release(y_plain), ct_release(y_grad), ct_release(r64), ct_release(ref), ct_release(x64);
  ct_release(x), ct_release(gx);
  ct_module_free(m);
  unsetenv("CT_WEBGPU_POOL_FC");
  unsetenv("CT_WEBGPU_CONV_FUSED_SUM");
  ct_scope_end(sc);
}

/* GELU folded into the addmm of a Linear with a bias (ViT's MLP fc1: src/models/vit.c ->
 * ct_webgpu_linear_gelu): values vs the CPU in float64 (rel 1e-4 abs 1e-5: a float32 sum of 192
 * terms, then the erf polynomial, ~1e-7 relative), the same bits as the two ops
 * (CT_WEBGPU_GEMM_GELU=0) and one dispatch where they take two; not folded with grad enabled,
 * for a Linear without a bias, or a non-contiguous 3-D input (those take ct_linear's other paths).
 * Then a 2-block ViT (32x32 images, patch 8, width 64): logits the same bits folded or not, with
 * one dispatch less per block, and vs the CPU (float64). */
ct_tensor *ct_webgpu_linear_gelu(ct_module *lin, const ct_tensor *x, bool *fused);
static ct_tensor *lin_gelu_count(ct_module *lin, const ct_tensor *x, bool *fused, int64_t *dispatches) {
  ct_webgpu_counters a = ct_webgpu_get_counters();
  ct_tensor *y = ct_webgpu_linear_gelu(lin, x, fused);
  if (y && !*fused) y = ct_gelu(y, "none"); /* kept by the caller's scope */
  CHECK(y != NULL);
  ct_tensor *c = y ? cpu(y) : NULL;
  ct_webgpu_counters b = ct_webgpu_get_counters();
  *dispatches = b.dispatches - a.dispatches;
  return c;
}
W9_TEST(linear_gelu_fold) {
  ct_scope *sc = ct_scope_begin();
  bool prev = ct_set_grad_enabled(false);
  ct_module *lin = ct_linear_new(192, 768, true), *nob = ct_linear_new(192, 768, false);
  CHECK(lin && nob);
  ct_tensor *w = ct_module_param(lin, "weight"), *b = ct_module_param(lin, "bias");
  CHECK_OK(ct_copy_(w, ct_mul_scalar(rnd(2, (const int64_t[]){768, 192}), ct_sf(0.1))));
  CHECK_OK(ct_copy_(b, rnd(1, (const int64_t[]){768})));
  ct_tensor *x3 = rnd(3, (const int64_t[]){1, 197, 192}), *x2 = rnd(2, (const int64_t[]){50, 192});
  /* the references from the CPU module in float64, before the move */
  CHECK_OK(ct_module_to_dtype(lin, CT_FLOAT64));
  ct_tensor *r3 = ct_to_dtype(ct_gelu(ct_module_forward(lin, f64(x3)), "none"), CT_FLOAT32);
  ct_tensor *r2 = ct_to_dtype(ct_gelu(ct_module_forward(lin, f64(x2)), "none"), CT_FLOAT32);
  CHECK_OK(ct_module_to_dtype(lin, CT_FLOAT32));
  CHECK_OK(ct_module_to_device(lin, ct_webgpu()));
  CHECK_OK(ct_module_to_device(nob, ct_webgpu()));
  ct_tensor *g3 = W(x3), *g2 = W(x2);
  bool f_on = false, f_off = true;
  int64_t d_on = 0, d_off = 0;
  ct_tensor *const xs[2] = {g3, g2}, *const refs[2] = {r3, r2};
  for (int i = 0; i < 2; i++) {
    ct_tensor *on = lin_gelu_count(lin, xs[i], &f_on, &d_on);
    setenv("CT_WEBGPU_GEMM_GELU", "0", 1);
    ct_tensor *off = lin_gelu_count(lin, xs[i], &f_off, &d_off);
    unsetenv("CT_WEBGPU_GEMM_GELU");
    CHECK(f_on && !f_off);
    CHECK(d_on == 1 && d_off == 2);
    SAME(i ? "gelu(linear) 50x192 -> 768 folded vs cpu float64" : "gelu(linear) 1x197x192 -> 768 folded vs cpu float64",
         refs[i], on, 1e-4, 1e-5);
    SAME("gelu(linear) folded vs CT_WEBGPU_GEMM_GELU=0", off, on, 0, 0);
  }
  bool f = true;
  int64_t d = 0;
  lin_gelu_count(nob, g2, &f, &d); /* no bias: matmul, then nothing to fold into */
  CHECK(!f);
  lin_gelu_count(lin, ct_transpose(ct_transpose(W(rnd(3, (const int64_t[]){5, 192, 3})), 1, 2), 0, 0), &f, &d);
  CHECK(!f); /* [5, 3, 192] non-contiguous: matmul + add */
  ct_set_grad_enabled(true);
  lin_gelu_count(lin, g2, &f, &d);
  CHECK(!f);
  ct_set_grad_enabled(false);
  /* the model */
  ct_vit_config c = ct_vit_config_tiny16(10);
  c.image_size = 32, c.patch_size = 8, c.embed_dim = 64, c.depth = 2, c.num_heads = 2;
  ct_module *vit = ct_vit_new(&c);
  CHECK(vit != NULL);
  if (vit) {
    CHECK_OK(ct_module_eval(vit));
    ct_tensor *x = rnd(4, (const int64_t[]){2, 3, 32, 32});
    CHECK_OK(ct_module_to_dtype(vit, CT_FLOAT64));
    ct_tensor *ref = ct_to_dtype(ct_module_forward(vit, f64(x)), CT_FLOAT32);
    CHECK_OK(ct_module_to_dtype(vit, CT_FLOAT32));
    CHECK_OK(ct_module_to_device(vit, ct_webgpu()));
    ct_tensor *gx = W(x);
    ct_webgpu_counters a = ct_webgpu_get_counters();
    ct_tensor *on = cpu(ct_module_forward(vit, gx));
    ct_webgpu_counters b = ct_webgpu_get_counters();
    setenv("CT_WEBGPU_GEMM_GELU", "0", 1);
    ct_tensor *off = cpu(ct_module_forward(vit, gx));
    unsetenv("CT_WEBGPU_GEMM_GELU");
    ct_webgpu_counters e = ct_webgpu_get_counters();
    SAME("vit 2 blocks eval, folded vs cpu float64", ref, on, 1e-4, 1e-5);
    SAME("vit 2 blocks eval, folded vs CT_WEBGPU_GEMM_GELU=0", off, on, 0, 0);
    CHECK((e.dispatches - b.dispatches) - (b.dispatches - a.dispatches) == 2);
    ct_module_free(vit);
  }
  ct_set_grad_enabled(prev);
  ct_module_free(lin), ct_module_free(nob);
  ct_scope_end(sc);
}
