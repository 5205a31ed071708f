/* WebGPU kernels of session 10 (issue 9: ResNet-18 224 b1 inference in fewer dispatches) against
 * the CPU:
 * - split-K convolutions summed in the same dispatch (the last-arriving workgroup of each output
 *   tile adds the slices' partials in slice order; CT_WEBGPU_CONV_FUSED_SUM=0: the separate pass);
 * - ResNet's head (global average pool -> flatten -> Linear) as one kernel (CT_WEBGPU_POOL_FC=0 off);
 * - CT_WEBGPU_CONV_SLICE (the split's minimum slice) and CT_WEBGPU_CONV_BK=32 (32-deep slices per
 *   step instead of 16), A/B switches.
 * Every test is skipped, with one printed line giving the count and the reason, where Dawn or a
 * Vulkan adapter is missing. Tolerances vs the CPU (float64, rounded once): the GPU's float32 sums
 * of K terms, ~sqrt(K) 2^-24 relative to the terms' size for random data: rel 1e-4 with abs 1e-4
 * (forward) / 1e-3 (gradients of sum(y^2), values ~1e3), 20-100x the typical error. The fused sum
 * adds the same partials in the same order as the separate pass: checked bit for bit. */
#include "webgpu_test.h"
#include "backend/webgpu/webgpu_backend.h"
#include "ctorch/models.h"
#include "ctorch/webgpu.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

WEBGPU_TESTS("test_webgpu10", "WebGPU test(s)")
#define W10_TEST(name) WEBGPU_TEST(webgpu10, name)

WEBGPU_TEST_TENSORS(1010)

/* One convolution (grad enabled) forward and backward of sum(y^2): y, dx, dw on the CPU; the
 * forward's dispatch count. */
typedef struct {
  int64_t xs[4], ws[4], stride, pad;
  bool bias;
  const char *name;
} conv_case;
static void conv_run(const conv_case *k, ct_tensor *x, ct_tensor *w, ct_tensor *b, ct_tensor **out, int64_t *fwd_dispatches) {
  ct_tensor *gx = leaf(W(x)), *gw = leaf(W(w)), *gb = b ? W(b) : NULL;
  const int64_t st[2] = {k->stride, k->stride}, pd[2] = {k->pad, k->pad}, dl[2] = {1, 1};
  ct_webgpu_counters a = ct_webgpu_get_counters();
  ct_tensor *y = ct_conv2d(gx, gw, gb, st, pd, dl, 1);
  ct_webgpu_counters c = ct_webgpu_get_counters();
  *fwd_dispatches = c.dispatches - a.dispatches;
  CHECK(y != NULL);
  CHECK_OK(ct_backward(ct_sum(ct_mul(y, y)), NULL, false, false));
  out[0] = cpu(y), out[1] = cpu(ct_grad(gx)), out[2] = cpu(ct_grad(gw));
}

/* Convolutions whose K splits (forward, input and weight gradients), the separate sum pass vs
 * the sum in the same dispatch: the same bits, one dispatch instead of two, and vs the CPU. Then
 * the fused forward again (its tiles' counters must be back at 0: else no workgroup would be the
 * last and y would keep stale values), without grad (T = 2: other tiles and splits), and captured
 * and replayed twice into a zeroed output. */
W10_TEST(conv_fused_sum) {
  static const conv_case cases[] = {
      /* K = 576 forward / input gradient (3 slices at T = 4), 512 weight gradient (2 slices) */
      {{2, 64, 16, 16}, {64, 64, 3, 3}, 1, 1, false, "3x3 64->64 16x16 b2"},
      /* K = 600: slices of 208 (the last shorter), Nc = 40 and M = 49 off the 32-wide tiles, a bias */
      {{1, 600, 7, 7}, {40, 600, 1, 1}, 1, 0, true, "1x1 600->40 7x7 + bias"},
      /* stride 2 with padding: K = 9 * 72 = 648 */
      {{1, 72, 13, 13}, {48, 72, 3, 3}, 2, 1, true, "3x3/2 72->48 13x13 + bias"},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const conv_case *k = &cases[ci];
    ct_scope *sc = ct_scope_begin();
    ct_tensor *x = rnd(4, k->xs), *w = ct_mul_scalar(rnd(4, k->ws), ct_sf(0.05));
    ct_tensor *b = k->bias ? rnd(1, (const int64_t[]){k->ws[0]}) : NULL;
    /* the CPU in float64 */
    const int64_t st[2] = {k->stride, k->stride}, pd[2] = {k->pad, k->pad}, dl[2] = {1, 1};
    ct_tensor *cx = leaf(f64(x)), *cw = leaf(f64(w));
    ct_tensor *cy = ct_conv2d(cx, cw, b ? f64(b) : NULL, st, pd, dl, 1);
    CHECK_OK(ct_backward(ct_sum(ct_mul(cy, cy)), NULL, false, false));
    ct_tensor *ref[3] = {f32(cy), f32(ct_grad(cx)), f32(ct_grad(cw))};
    ct_tensor *on[3], *off[3], *bk[3];
    int64_t d_on = 0, d_off = 0, d_bk = 0;
    conv_run(k, x, w, b, on, &d_on);
    setenv("CT_WEBGPU_CONV_FUSED_SUM", "0", 1);
    conv_run(k, x, w, b, off, &d_off);
    unsetenv("CT_WEBGPU_CONV_FUSED_SUM");
    setenv("CT_WEBGPU_CONV_BK", "32", 1); /* 32-deep slices: the same k order per output, the same bits */
    conv_run(k, x, w, b, bk, &d_bk);
    unsetenv("CT_WEBGPU_CONV_BK");
    static const char *const part[3] = {"forward", "input gradient", "weight gradient"};
    char what[160];
    for (int i = 0; i < 3; i++) {
      snprintf(what, sizeof what, "conv %s %s, fused sum vs cpu float64", k->name, part[i]);
      SAME(what, ref[i], on[i], 1e-4, i ? 1e-3 : 1e-4);
      snprintf(what, sizeof what, "conv %s %s, fused sum vs CT_WEBGPU_CONV_FUSED_SUM=0, bit for bit", k->name, part[i]);
      SAME(what, off[i], on[i], 0, 0);
      snprintf(what, sizeof what, "conv %s %s, CT_WEBGPU_CONV_BK=32 vs 16, bit for bit", k->name, part[i]);
      SAME(what, off[i], bk[i], 0, 0);
    }
    CHECK(d_on == 1 && d_off == 2 && d_bk == 1); /* it split, and the sum came with the product */
    /* without grad: T = 2 tiles; three calls in a row, the same bits each time */
    bool prev = ct_set_grad_enabled(false);
    ct_tensor *gx = W(x), *gw = W(w), *gb = b ? W(b) : NULL;
    ct_tensor *y1 = cpu(ct_conv2d(gx, gw, gb, st, pd, dl, 1));
    snprintf(what, sizeof what, "conv %s no grad (T = 2), fused sum vs cpu float64", k->name);
    SAME(what, ref[0], y1, 1e-4, 1e-4);
    for (int r = 0; r < 3; r++) {
      if (r == 2) setenv("CT_WEBGPU_CONV_BK", "32", 1), setenv("CT_WEBGPU_CONV_PREFETCH", "0", 1);
      ct_webgpu_counters a = ct_webgpu_get_counters();
      ct_tensor *yr = ct_conv2d(gx, gw, gb, st, pd, dl, 1);
      unsetenv("CT_WEBGPU_CONV_BK"), unsetenv("CT_WEBGPU_CONV_PREFETCH");
      ct_webgpu_counters c = ct_webgpu_get_counters();
      CHECK(c.dispatches - a.dispatches == 1);
      snprintf(what, sizeof what, r == 2 ? "conv %s no grad, BK = 32 without prefetch (call %d) vs call 1, bit for bit"
                                         : "conv %s no grad, call %d vs call 1, bit for bit", k->name, r + 2);
      SAME(what, y1, cpu(yr), 0, 0);
    }
    /* captured: the replays write the output that was zeroed */
    CHECK_OK(ct_webgpu_synchronize());
    CHECK_OK(ct_webgpu_capture_begin());
    ct_tensor *yc = ct_conv2d(gx, gw, gb, st, pd, dl, 1);
    ct_webgpu_graph *g = ct_webgpu_capture_end();
    CHECK(yc != NULL && g != NULL);
    if (yc && g) {
      CHECK(ct_webgpu_graph_dispatches(g) == 1);
      for (int r = 0; r < 2; r++) {
        CHECK_OK(ct_copy_(yc, ct_zeros_like(yc, NULL)));
        CHECK_OK(ct_webgpu_graph_replay(g));
        snprintf(what, sizeof what, "conv %s captured, replay %d vs eager, bit for bit", k->name, r + 1);
        SAME(what, y1, cpu(yc), 0, 0);
      }
    }
    if (g) ct_webgpu_graph_free(g);
    ct_set_grad_enabled(prev);
    ct_scope_end(sc);
  }
}

/* CT_WEBGPU_CONV_SLICE (A/B: the split's minimum slice): 64 makes 64x64 3x3's K = 576 nine slices
 * of 64 instead of three of 192: vs the CPU, and the same values as the default within float32
 * rounding (another order of the partial sums) */
W10_TEST(conv_slice_switch) {
  ct_scope *sc = ct_scope_begin();
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *x = rnd(4, (const int64_t[]){1, 64, 14, 14}), *w = ct_mul_scalar(rnd(4, (const int64_t[]){64, 64, 3, 3}), ct_sf(0.05));
  const int64_t one[2] = {1, 1};
  ct_tensor *ref = f32(ct_conv2d(f64(x), f64(w), NULL, one, one, one, 1));
  static const char *const sl[] = {"64", "128", "16", "4096"};
  for (int i = 0; i < 4; i++) {
    setenv("CT_WEBGPU_CONV_SLICE", sl[i], 1);
    for (int fs = 0; fs < 2; fs++) {
      if (fs) setenv("CT_WEBGPU_CONV_FUSED_SUM", "0", 1);
      ct_tensor *y = cpu(ct_conv2d(W(x), W(w), NULL, one, one, one, 1));
      unsetenv("CT_WEBGPU_CONV_FUSED_SUM");
      char what[96];
      snprintf(what, sizeof what, "conv 3x3 64->64 14x14, CT_WEBGPU_CONV_SLICE=%s%s vs cpu", sl[i], fs ? ", sum pass" : "");
      SAME(what, ref, y, 1e-4, 1e-4);
    }
  }
  unsetenv("CT_WEBGPU_CONV_SLICE");
  ct_set_grad_enabled(prev);
  ct_scope_end(sc);
}

/* ResNet's head: mean over H x W, then a Linear, one dispatch (ct_webgpu_avgpool_linear): ResNet-18
 * 224's own (512 channels of 7x7, 1000 classes), a CIFAR one (2x2 maps, 10 classes) and one
 * without bias with C not a multiple of 8 and 2 samples; vs the CPU's adaptive_avg_pool2d ->
 * flatten -> linear in float64 (rel 1e-4 abs 1e-5: a float32 sum of 49 terms, then of 512
 * products). Not applied (no error, the caller runs the modules) with grad enabled, on the CPU, or
 * with CT_WEBGPU_POOL_FC=0. */
ct_tensor *ct_webgpu_avgpool_linear(ct_module *fc, const ct_tensor *x, bool *applied);
W10_TEST(avgpool_linear) {
  static const struct {
    int64_t N, C, H, O;
    bool bias;
  } cs[] = {{1, 512, 7, 1000, true}, {2, 512, 2, 10, true}, {2, 75, 3, 33, false}};
  bool prev = ct_set_grad_enabled(false);
  for (int i = 0; i < 3; i++) {
    ct_scope *sc = ct_scope_begin();
    ct_module *fc = ct_linear_new(cs[i].C, cs[i].O, cs[i].bias);
    CHECK(fc != NULL);
    if (!fc) break;
    CHECK_OK(ct_copy_(ct_module_param(fc, "weight"), rnd(2, (const int64_t[]){cs[i].O, cs[i].C})));
    if (cs[i].bias) CHECK_OK(ct_copy_(ct_module_param(fc, "bias"), rnd(1, (const int64_t[]){cs[i].O})));
    ct_tensor *x = ct_relu(rnd(4, (const int64_t[]){cs[i].N, cs[i].C, cs[i].H, cs[i].H}));
    CHECK_OK(ct_module_to_dtype(fc, CT_FLOAT64));
    ct_tensor *pooled = ct_adaptive_avg_pool2d(f64(x), (const int64_t[]){1, 1});
    ct_tensor *ref = f32(ct_module_forward(fc, ct_flatten(pooled, 1, -1)));
    CHECK_OK(ct_module_to_dtype(fc, CT_FLOAT32));
    bool applied = true;
    CHECK(ct_webgpu_avgpool_linear(fc, x, &applied) == NULL && !applied); /* a CPU tensor */
    CHECK_OK(ct_module_to_device(fc, ct_webgpu()));
    ct_tensor *gx = W(x);
    ct_webgpu_counters a = ct_webgpu_get_counters();
    ct_tensor *y = ct_webgpu_avgpool_linear(fc, gx, &applied);
    ct_webgpu_counters b = ct_webgpu_get_counters();
    CHECK(y != NULL && applied);
    CHECK(b.dispatches - a.dispatches == 1);
    char what[120];
    snprintf(what, sizeof what, "avgpool %lldx%lld + linear %lld -> %lld (N = %lld) vs cpu float64", (long long)cs[i].H,
             (long long)cs[i].H, (long long)cs[i].C, (long long)cs[i].O, (long long)cs[i].N);
    if (y) SAME(what, ref, cpu(y), 1e-4, 1e-5);
    setenv("CT_WEBGPU_POOL_FC", "0", 1);
    CHECK(ct_webgpu_avgpool_linear(fc, gx, &applied) == NULL && !applied);
    unsetenv("CT_WEBGPU_POOL_FC");
    ct_set_grad_enabled(true);
    CHECK(ct_webgpu_avgpool_linear(fc, gx, &applied) == NULL && !applied);
    ct_set_grad_enabled(false);
    ct_module_free(fc);
    ct_scope_end(sc);
  }
  ct_set_grad_enabled(prev);
}

/* The whole eval forward of a CIFAR ResNet-18 (b2, 16x16: its layer1-4 3x3 convolutions split K)
 * with both changes: logits vs the CPU in float64; CT_WEBGPU_CONV_FUSED_SUM=0 gives the same bits
 * and one dispatch more per split convolution (16: every 3x3 of layer1-4, K >= 576; not the stem or
 * the 1x1 downsamples); CT_WEBGPU_POOL_FC=0 the same values within float32 rounding and 3 dispatches
 * more (the pool, its flatten copy, the addmm and its split-K sum: 4 for 1). */
static ct_tensor *fwd_count(ct_module *m, const ct_tensor *x, int64_t *dispatches) {
  ct_webgpu_counters a = ct_webgpu_get_counters();
  ct_tensor *y = ct_module_forward(m, x);
  CHECK(y != NULL);
  ct_tensor *c = y ? cpu(y) : NULL;
  ct_webgpu_counters b = ct_webgpu_get_counters();
  *dispatches = b.dispatches - a.dispatches;
  ct_release(y);
  return c;
}
W10_TEST(resnet_eval_dispatches) {
  ct_scope *sc = ct_scope_begin();
  ct_manual_seed(10);
  ct_module *m = ct_resnet18_cifar_new(10);
  CHECK(m != NULL);
  if (!m) return;
  CHECK_OK(ct_module_eval(m));
  ct_tensor *x = rnd(4, (const int64_t[]){2, 3, 16, 16});
  bool prev = ct_set_grad_enabled(false);
  CHECK_OK(ct_module_to_dtype(m, CT_FLOAT64));
  ct_tensor *ref = f32(ct_module_forward(m, f64(x)));
  CHECK_OK(ct_module_to_dtype(m, CT_FLOAT32));
  CHECK_OK(ct_module_to_device(m, ct_webgpu()));
  ct_tensor *gx = W(x);
  int64_t d = 0, d_sum = 0, d_head = 0;
  ct_tensor *y = fwd_count(m, gx, &d);
  setenv("CT_WEBGPU_CONV_FUSED_SUM", "0", 1);
  ct_tensor *y_sum = fwd_count(m, gx, &d_sum);
  unsetenv("CT_WEBGPU_CONV_FUSED_SUM");
  setenv("CT_WEBGPU_POOL_FC", "0", 1);
  ct_tensor *y_head = fwd_count(m, gx, &d_head);
  unsetenv("CT_WEBGPU_POOL_FC");
  printf("test_webgpu10: resnet18-cifar b2 eval: %lld dispatches, %lld with the sum passes, %lld with the unfused head\n",
         (long long)d, (long long)d_sum, (long long)d_head);
  SAME("resnet18-cifar eval (fused sums, fused head) vs cpu float64", ref, y, 1e-4, 1e-4);
  SAME("resnet18-cifar eval vs CT_WEBGPU_CONV_FUSED_SUM=0, bit for bit", y_sum, y, 0, 0);
  SAME("resnet18-cifar eval vs CT_WEBGPU_POOL_FC=0", y_head, y, 1e-5, 1e-6);
  /* the fused sum needs 9 bindings for a folded conv1 (x, w, partials, counters, y, BN's 4) and 10
   * for a conv2 with its residual: with fewer storage buffers per stage those keep the sum pass */
  wg_lock();
  uint32_t lim = wg_ready() == CT_OK ? wg_max_storage_buffers() : 0;
  wg_unlock();
  int64_t expect = lim >= 10 ? 16 : lim == 9 ? 8 : 0;
  printf("test_webgpu10: %u storage buffers per stage: %lld split convolutions sum in their own dispatch\n", lim,
         (long long)expect);
  CHECK(d_sum - d == expect);
  CHECK(d_head - d == 3);
  ct_set_grad_enabled(prev);
  ct_module_free(m);
  ct_scope_end(sc);
}
