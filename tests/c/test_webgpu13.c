/* WebGPU kernels of session 13 (issue 9: the ResNet-18 CIFAR training step on the H200) against the
 * CPU and against the loads they replace:
 * - the weight gradient's operand loads with their index math hoisted out of the walk over K
 *   (CT_WEBGPU_WGRAD_HOIST=0: off), the forward's and the implicit input gradient's A loads likewise
 *   (CT_WEBGPU_CONV_HOIST=0), B's loads walking j across threads where the weights' j is contiguous
 *   (the column path's transposed weights, 1x1 input gradients; CT_WEBGPU_CONV_BJ=0): the same
 *   elements into the same places, so the same bits as with all three off, checked at T = 1, 2, 4
 *   (the default where the sides allow it),
 *   32-deep steps, strides, dilation, groups, padding, channels-last views, 1-D and the strided
 *   implicit input gradient (CT_WEBGPU_CONV_DGRAD_COL=0);
 * - the weight gradient's split sums in the separate pass (the default now; CT_WEBGPU_WGRAD_SUM_PASS=0:
 *   in the dispatch) bit for bit against the in-dispatch sum, the forward's and input gradient's
 *   splits through the pass (CT_WEBGPU_CONV_PASS_S=2, CT_WEBGPU_CONV_PASS_MIN=1) likewise, and the
 *   weight gradient's split and
 *   tile switches (CT_WEBGPU_WGRAD_S, _T): vs the CPU (another order of the float32 sums).
 * Skipped, with one printed line, where Dawn or a Vulkan adapter is missing. Tolerances vs the CPU
 * (float64, rounded once) as test_webgpu11.c: rel 1e-4 with abs 1e-4 (forward) / 1e-3 (gradients of
 * sum(y^2)). */
#include "webgpu_test.h"
#include "backend/webgpu/webgpu_backend.h"
#include "ctorch/webgpu.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

WEBGPU_TESTS("test_webgpu13", "WebGPU test(s)")
#define W13_TEST(name) WEBGPU_TEST(webgpu13, name)

WEBGPU_TEST_TENSORS(1313)

typedef struct {
  int64_t xs[4], ws[4], st[2], pd[2], dl[2], groups;
  bool bias, cl; /* cl: x and w as channels-last views (permuted): x's loads through its strides */
  const char *name;
} conv_case;
/* y, dx, dw of sum(y^2) on the device (grad enabled), as CPU tensors (the gradients as NCHW) */
static void conv_run(const conv_case *k, ct_tensor *x, ct_tensor *w, ct_tensor *b, ct_tensor **out) {
  ct_tensor *lx, *lw;
  ct_tensor *gx = dev_view(x, k->cl, &lx), *gw = dev_view(w, k->cl, &lw), *gb = b ? W(b) : NULL;
  ct_tensor *y = ct_conv2d(gx, gw, gb, k->st, k->pd, k->dl, k->groups);
  CHECK(y != NULL);
  if (!y) return;
  CHECK_OK(ct_backward(ct_sum(ct_mul(y, y)), NULL, false, false));
  ct_tensor *dx = ct_grad(lx), *dw = ct_grad(lw);
  if (k->cl) dx = ct_permute(dx, 4, to_nchw), dw = ct_permute(dw, 4, to_nchw);
  out[0] = cpu(y), out[1] = cpu(dx), out[2] = cpu(dw);
}
static const char *const off_env[3] = {"CT_WEBGPU_WGRAD_HOIST", "CT_WEBGPU_CONV_HOIST", "CT_WEBGPU_CONV_BJ"};
static void all_off(bool off) {
  for (int i = 0; i < 3; i++)
    if (off) setenv(off_env[i], "0", 1);
    else unsetenv(off_env[i]);
}

static const conv_case cases[] = {
    /* the step's 3x3 stride 1 (weight gradient K = 512 split; gy's spatial dims contiguous) */
    {{2, 64, 16, 16}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false, false, "3x3 64->64 16x16 b2"},
    /* stride 2, odd size: the hoisted forward with stride, the input gradient through columns (B j-walking) */
    {{2, 32, 13, 13}, {48, 32, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, false, false, "3x3/2 32->48 13x13 b2"},
    /* 1x1 stride 2 (the downsample): forward not the 1x1 fast path */
    {{1, 64, 9, 9}, {32, 64, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, false, false, "1x1/2 64->32 9x9"},
    /* 1x1 stride 1 + bias: the forward's x11 fast path (not hoisted), the input gradient's B j-walking */
    {{2, 40, 7, 7}, {24, 40, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, false, "1x1 40->24 7x7 b2 + bias"},
    /* groups, dilation, padding 2, bias */
    {{1, 32, 11, 11}, {48, 16, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 2, true, false, "3x3 dil 2 groups 2 32->48 11x11 + bias"},
    /* channels-last views: x's and w's generic strides in the hoisted loads */
    {{2, 40, 10, 10}, {24, 40, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false, true, "3x3 40->24 10x10 channels-last"},
    /* a 1-wide kernel with (1, 3) stride and (0, 2) padding on a 1-row input: inactive dims */
    {{2, 24, 1, 29}, {40, 24, 1, 3}, {1, 3}, {0, 2}, {1, 2}, 1, false, false, "1x3 stride (1, 3) dil 2 1x29 b2"},
};

/* Each case with grad at T = default, 1, 2, 4 and with 32-deep steps: the session-13 loads vs all
 * three switched off, bit for bit, and vs the CPU; the strided input gradient through the implicit
 * GEMM (hoisted) likewise; without grad (the inference tiles) the forward likewise. */
W13_TEST(conv_hoisted_loads) {
  static const char *const part[3] = {"forward", "input gradient", "weight gradient"};
  static const struct { const char *var, *val, *name; } V[] = {
      {NULL, NULL, "default"}, {"CT_WEBGPU_CONV_T", "1", "T=1"}, {"CT_WEBGPU_CONV_T", "2", "T=2"},
      {"CT_WEBGPU_CONV_BK", "32", "BK=32"}, {"CT_WEBGPU_CONV_DGRAD_COL", "0", "implicit strided input gradient"}};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const conv_case *k = &cases[ci];
    ct_scope *sc = ct_scope_begin();
    ct_tensor *x = rnd(4, k->xs), *w = ct_mul_scalar(rnd(4, k->ws), ct_sf(0.05));
    ct_tensor *b = k->bias ? rnd(1, (const int64_t[]){k->ws[0]}) : NULL;
    ct_tensor *cx = leaf(f64(x)), *cw = leaf(f64(w));
    ct_tensor *cy = ct_conv2d(cx, cw, b ? f64(b) : NULL, k->st, k->pd, k->dl, k->groups);
    CHECK_OK(ct_backward(ct_sum(ct_mul(cy, cy)), NULL, false, false));
    ct_tensor *ref[3] = {f32(cy), f32(ct_grad(cx)), f32(ct_grad(cw))};
    char what[240];
    for (size_t v = 0; v < sizeof V / sizeof V[0]; v++) {
      /* (SwiftShader is slow to compile: 32-deep steps, which take the la/lb loads, on the first
       * case only, the implicit strided input gradient on the strided cases only) */
      if ((v == 3 && ci != 0) || (v == 4 && k->st[0] == 1 && k->st[1] == 1)) continue;
      if (V[v].var) setenv(V[v].var, V[v].val, 1);
      ct_tensor *nw[3] = {0}, *old[3] = {0};
      conv_run(k, x, w, b, nw);
      all_off(true);
      conv_run(k, x, w, b, old);
      all_off(false);
      if (V[v].var) unsetenv(V[v].var);
      for (int i = 0; i < 3; i++) {
        if (!nw[i] || !old[i]) continue;
        snprintf(what, sizeof what, "conv %s %s %s vs cpu float64", k->name, part[i], V[v].name);
        SAME(what, ref[i], nw[i], 1e-4, i ? 1e-3 : 1e-4);
        snprintf(what, sizeof what, "conv %s %s %s, session-13 loads vs switched off, bit for bit", k->name, part[i], V[v].name);
        SAME(what, old[i], nw[i], 0, 0);
      }
    }
    bool prev = ct_set_grad_enabled(false); /* the inference tiles (T = 2) */
    ct_tensor *gx = k->cl ? ct_permute(W(ct_contiguous(ct_permute(x, 4, to_nhwc))), 4, to_nchw) : W(x);
    ct_tensor *gw = k->cl ? ct_permute(W(ct_contiguous(ct_permute(w, 4, to_nhwc))), 4, to_nchw) : W(w);
    ct_tensor *gb = b ? W(b) : NULL;
    ct_tensor *y2 = cpu(ct_conv2d(gx, gw, gb, k->st, k->pd, k->dl, k->groups));
    all_off(true);
    ct_tensor *y1 = cpu(ct_conv2d(gx, gw, gb, k->st, k->pd, k->dl, k->groups));
    all_off(false);
    snprintf(what, sizeof what, "conv %s no grad vs cpu float64", k->name);
    SAME(what, ref[0], y2, 1e-4, 1e-4);
    snprintf(what, sizeof what, "conv %s no grad, hoisted vs switched off, bit for bit", k->name);
    SAME(what, y1, y2, 0, 0);
    ct_set_grad_enabled(prev);
    ct_scope_end(sc);
  }
}

/* conv1d: nd = 1 (the geometry's two inactive dims), stride 2 and padding, through the hoisted loads */
W13_TEST(conv1d_hoisted_loads) {
  ct_scope *sc = ct_scope_begin();
  const int64_t xs[3] = {3, 20, 37}, ws[3] = {36, 20, 5};
  ct_tensor *x = rnd(3, xs), *w = ct_mul_scalar(rnd(3, ws), ct_sf(0.1));
  ct_tensor *cx = leaf(f64(x)), *cw = leaf(f64(w));
  ct_tensor *cy = ct_conv1d(cx, cw, NULL, 2, 2, 1, 1);
  CHECK_OK(ct_backward(ct_sum(ct_mul(cy, cy)), NULL, false, false));
  ct_tensor *ref[3] = {f32(cy), f32(ct_grad(cx)), f32(ct_grad(cw))};
  ct_tensor *got[2][3] = {{0}};
  for (int off = 0; off < 2; off++) {
    all_off(off == 1);
    ct_tensor *lx = leaf(W(x)), *lw = leaf(W(w));
    ct_tensor *y = ct_conv1d(lx, lw, NULL, 2, 2, 1, 1);
    CHECK(y != NULL);
    if (y) {
      CHECK_OK(ct_backward(ct_sum(ct_mul(y, y)), NULL, false, false));
      got[off][0] = cpu(y), got[off][1] = cpu(ct_grad(lx)), got[off][2] = cpu(ct_grad(lw));
    }
    all_off(false);
  }
  static const char *const part[3] = {"forward", "input gradient", "weight gradient"};
  char what[160];
  for (int i = 0; i < 3; i++) {
    if (!got[0][i] || !got[1][i]) continue;
    snprintf(what, sizeof what, "conv1d k5/2 %s vs cpu float64", part[i]);
    SAME(what, ref[i], got[0][i], 1e-4, i ? 1e-3 : 1e-4);
    snprintf(what, sizeof what, "conv1d k5/2 %s, session-13 loads vs switched off, bit for bit", part[i]);
    SAME(what, got[1][i], got[0][i], 0, 0);
  }
  ct_scope_end(sc);
}

/* The weight gradient's split into S slices (CT_WEBGPU_WGRAD_S = 1, 3, 7, 64) and its tile (WGRAD_T = 1,
 * 2): vs the CPU (the slices change the float32 sums' order); at each, the separate sum pass (default)
 * vs the sum in the dispatch (WGRAD_SUM_PASS=0) bit for bit; the forward and the input gradient
 * untouched by these switches (bit for bit vs the default). Then the forward's and input gradient's
 * splits through the pass (CONV_PASS_S=2; CONV_PASS_MIN=1, the default rule's threshold at one
 * partial) vs in the dispatch (these sizes' partials are below the default 2^20), bit for bit, one
 * dispatch more each. */
W13_TEST(wgrad_split_switches) {
  static const conv_case wc[] = {
      {{2, 64, 16, 16}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false, false, "3x3 64->64 16x16 b2 (K 512)"},
      {{4, 16, 32, 32}, {32, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false, false, "3x3 16->32 32x32 b4 (K 4096)"},
      {{2, 24, 15, 15}, {40, 24, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, false, false, "3x3/2 24->40 15x15 b2 (K 128)"},
  };
  static const struct { const char *v1, *x1, *v2, *x2, *name; } V[] = {
      {"CT_WEBGPU_WGRAD_S", "1", NULL, NULL, "S=1"},
      {"CT_WEBGPU_WGRAD_S", "3", NULL, NULL, "S=3"},
      {"CT_WEBGPU_WGRAD_S", "7", NULL, NULL, "S=7"},
      {"CT_WEBGPU_WGRAD_S", "64", NULL, NULL, "S=64"},
      {"CT_WEBGPU_WGRAD_T", "2", NULL, NULL, "T=2"},
      {"CT_WEBGPU_WGRAD_T", "1", "CT_WEBGPU_WGRAD_S", "5", "T=1 S=5"},
  };
  static const char *const part[3] = {"forward", "input gradient", "weight gradient"};
  for (size_t ci = 0; ci < sizeof wc / sizeof wc[0]; ci++) {
    const conv_case *k = &wc[ci];
    ct_scope *sc = ct_scope_begin();
    ct_tensor *x = rnd(4, k->xs), *w = ct_mul_scalar(rnd(4, k->ws), ct_sf(0.05));
    ct_tensor *cx = leaf(f64(x)), *cw = leaf(f64(w));
    ct_tensor *cy = ct_conv2d(cx, cw, NULL, k->st, k->pd, k->dl, k->groups);
    CHECK_OK(ct_backward(ct_sum(ct_mul(cy, cy)), NULL, false, false));
    ct_tensor *rw = f32(ct_grad(cw));
    ct_tensor *def[3] = {0};
    conv_run(k, x, w, NULL, def);
    char what[200];
    for (size_t v = 0; v < sizeof V / sizeof V[0]; v++) {
      setenv(V[v].v1, V[v].x1, 1);
      if (V[v].v2) setenv(V[v].v2, V[v].x2, 1);
      ct_tensor *f[3] = {0}, *p[3] = {0};
      conv_run(k, x, w, NULL, p);
      setenv("CT_WEBGPU_WGRAD_SUM_PASS", "0", 1);
      conv_run(k, x, w, NULL, f);
      unsetenv("CT_WEBGPU_WGRAD_SUM_PASS");
      unsetenv(V[v].v1);
      if (V[v].v2) unsetenv(V[v].v2);
      if (!f[2] || !p[2] || !def[0]) continue;
      snprintf(what, sizeof what, "conv %s weight gradient %s vs cpu float64", k->name, V[v].name);
      SAME(what, rw, f[2], 1e-4, 1e-3);
      snprintf(what, sizeof what, "conv %s weight gradient %s, separate sum pass vs in the dispatch, bit for bit", k->name, V[v].name);
      SAME(what, f[2], p[2], 0, 0);
      for (int i = 0; i < 2; i++) {
        snprintf(what, sizeof what, "conv %s %s under %s, unchanged, bit for bit", k->name, part[i], V[v].name);
        SAME(what, def[i], f[i], 0, 0);
      }
    }
    /* the forward's and input gradient's splits through the pass: the same bits, one dispatch more each */
    ct_tensor *ps[3] = {0};
    setenv("CT_WEBGPU_CONV_PASS_S", "2", 1);
    conv_run(k, x, w, NULL, ps);
    unsetenv("CT_WEBGPU_CONV_PASS_S");
    for (int i = 0; i < 3; i++)
      if (ps[i] && def[i]) {
        snprintf(what, sizeof what, "conv %s %s, CT_WEBGPU_CONV_PASS_S=2 vs default, bit for bit", k->name, part[i]);
        SAME(what, def[i], ps[i], 0, 0);
      }
    bool prev = ct_set_grad_enabled(false);
    ct_tensor *gx = W(x), *gw = W(w);
    int64_t d0 = ct_webgpu_get_counters().dispatches;
    ct_tensor *y0 = ct_conv2d(gx, gw, NULL, k->st, k->pd, k->dl, k->groups);
    int64_t d1 = ct_webgpu_get_counters().dispatches;
    setenv("CT_WEBGPU_CONV_PASS_S", "2", 1);
    ct_tensor *y1 = ct_conv2d(gx, gw, NULL, k->st, k->pd, k->dl, k->groups);
    unsetenv("CT_WEBGPU_CONV_PASS_S");
    int64_t d2 = ct_webgpu_get_counters().dispatches;
    setenv("CT_WEBGPU_CONV_PASS_MIN", "1", 1); /* the default rule's threshold at one partial: every split */
    ct_tensor *y2 = ct_conv2d(gx, gw, NULL, k->st, k->pd, k->dl, k->groups);
    unsetenv("CT_WEBGPU_CONV_PASS_MIN");
    int64_t d3 = ct_webgpu_get_counters().dispatches;
    CHECK(y0 && y1 && y2);
    if (y0 && y1 && y2) {
      snprintf(what, sizeof what, "conv %s no grad, CT_WEBGPU_CONV_PASS_S=2 vs default, bit for bit", k->name);
      SAME(what, cpu(y0), cpu(y1), 0, 0);
      snprintf(what, sizeof what, "conv %s no grad, CT_WEBGPU_CONV_PASS_MIN=1 vs default, bit for bit", k->name);
      SAME(what, cpu(y0), cpu(y2), 0, 0);
      CHECK(d2 - d1 >= d1 - d0 && d2 - d1 <= d1 - d0 + 1);
      CHECK(d3 - d2 == d2 - d1);
    }
    ct_set_grad_enabled(prev);
    ct_scope_end(sc);
  }
}
