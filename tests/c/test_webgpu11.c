/* WebGPU kernels of session 11 (issue 9: ResNet-18 inference and training step on the H200) against
 * the CPU and against session 10's kernels:
 * - the convolution's thread layout (each thread T adjacent rows and columns of its tile, its
 *   operands read from workgroup memory as one vecT, the rows of workgroup memory padded against
 *   bank conflicts, CT_WEBGPU_CONV_PAD=0 unpadded) and the operand loads' contiguous fast paths
 *   (weights' taps, gy's spatial dims, a 1x1 stride-1 unpadded x): every output's sum runs over k in
 *   the same order as CT_WEBGPU_CONV_V2=0's, so the same bits, checked at every tile size T = 1, 2, 4
 *   and on the generic paths (channels-last views, groups, dilation);
 * - CT_WEBGPU_CONV_NT=8 (8x8-thread workgroups): vs the CPU (its split of K differs, so does the
 *   order of the partials' sum);
 * - the graph profile (ct_webgpu_graph_profile, bench --profile) after which a replay still equals
 *   the eager result;
 * - the columns path (default since session 12; CT_WEBGPU_CONV_DGRAD_COL=0 off): a strided input gradient as a dense product into columns
 *   and a gather, vs the CPU and the implicit GEMM.
 * Skipped, with one printed line, where Dawn or a Vulkan adapter is missing. Tolerances vs the CPU
 * (float64, rounded once) as test_webgpu10.c: rel 1e-4 with abs 1e-4 (forward) / 1e-3 (gradients of
 * sum(y^2)). */
#include "webgpu_test.h"
#include "backend/webgpu/webgpu_backend.h"
#include "ctorch/webgpu.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

WEBGPU_TESTS("test_webgpu11", "WebGPU test(s)")
#define W11_TEST(name) WEBGPU_TEST(webgpu11, name)

WEBGPU_TEST_TENSORS(1111)

typedef struct {
  int64_t xs[4], ws[4], stride, pad, dil, groups;
  bool bias, cl; /* cl: x and w as channels-last views (permuted), the loads' generic paths */
  const char *name;
} conv_case;
/* y, dx, dw of sum(y^2) on the device (grad enabled), on the CPU (the gradients as NCHW) */
static void conv_run(const conv_case *k, ct_tensor *x, ct_tensor *w, ct_tensor *b, ct_tensor **out) {
  ct_tensor *lx, *lw;
  ct_tensor *gx = dev_view(x, k->cl, &lx), *gw = dev_view(w, k->cl, &lw), *gb = b ? W(b) : NULL;
  const int64_t st[2] = {k->stride, k->stride}, pd[2] = {k->pad, k->pad}, dl[2] = {k->dil, k->dil};
  ct_tensor *y = ct_conv2d(gx, gw, gb, st, pd, dl, k->groups);
  CHECK(y != NULL);
  if (!y) return;
  CHECK_OK(ct_backward(ct_sum(ct_mul(y, y)), NULL, false, false));
  ct_tensor *dx = ct_grad(lx), *dw = ct_grad(lw);
  if (k->cl) dx = ct_permute(dx, 4, to_nchw), dw = ct_permute(dw, 4, to_nchw);
  out[0] = cpu(y), out[1] = cpu(dx), out[2] = cpu(dw);
}

static const conv_case cases[] = {
    /* weights' taps and gy contiguous: the fast forward/input-gradient/weight-gradient loads; K = 576 splits */
    {{2, 64, 16, 16}, {64, 64, 3, 3}, 1, 1, 1, 1, false, false, "3x3 64->64 16x16 b2"},
    /* 1x1 stride 1 unpadded: x read by its linear position; a bias; M = 98 off the tiles */
    {{2, 96, 7, 7}, {48, 96, 1, 1}, 1, 0, 1, 1, true, false, "1x1 96->48 7x7 b2 + bias"},
    /* 1x1 stride 2: not the 1x1 fast path */
    {{1, 64, 9, 9}, {32, 64, 1, 1}, 2, 0, 1, 1, false, false, "1x1/2 64->32 9x9"},
    /* groups and dilation */
    {{1, 32, 11, 11}, {48, 16, 3, 3}, 1, 2, 2, 2, true, false, "3x3 dil 2 groups 2 32->48 11x11 + bias"},
    /* channels-last views of x and w: every load on the generic path */
    {{2, 40, 10, 10}, {24, 40, 3, 3}, 1, 1, 1, 1, false, true, "3x3 40->24 10x10 channels-last views"},
};

/* Each case with grad (forward, input and weight gradients) at T = default, 1, 2, 4: the session-11
 * layout vs CT_WEBGPU_CONV_V2=0 bit for bit, and vs the CPU in float64; then without grad (the
 * inference tiles) likewise; CT_WEBGPU_CONV_NT=8 vs the CPU. */
W11_TEST(conv_layout_v2) {
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const conv_case *k = &cases[ci];
    ct_scope *sc = ct_scope_begin();
    ct_tensor *x = rnd(4, k->xs), *w = ct_mul_scalar(rnd(4, k->ws), ct_sf(0.05));
    ct_tensor *b = k->bias ? rnd(1, (const int64_t[]){k->ws[0]}) : NULL;
    const int64_t st[2] = {k->stride, k->stride}, pd[2] = {k->pad, k->pad}, dl[2] = {k->dil, k->dil};
    ct_tensor *cx = leaf(f64(x)), *cw = leaf(f64(w));
    ct_tensor *cy = ct_conv2d(cx, cw, b ? f64(b) : NULL, st, pd, dl, k->groups);
    CHECK_OK(ct_backward(ct_sum(ct_mul(cy, cy)), NULL, false, false));
    ct_tensor *ref[3] = {f32(cy), f32(ct_grad(cx)), f32(ct_grad(cw))};
    static const char *const part[3] = {"forward", "input gradient", "weight gradient"};
    static const char *const ts[4] = {NULL, "1", "2", "4"};
    char what[200];
    for (int t = 0; t < 4; t++) {
      if (ts[t]) setenv("CT_WEBGPU_CONV_T", ts[t], 1);
      ct_tensor *v2[3] = {0}, *v1[3] = {0}, *np[3] = {0};
      conv_run(k, x, w, b, v2);
      setenv("CT_WEBGPU_CONV_V2", "0", 1);
      conv_run(k, x, w, b, v1);
      unsetenv("CT_WEBGPU_CONV_V2");
      if (t == 0) { /* the rows unpadded: the same layout otherwise */
        setenv("CT_WEBGPU_CONV_PAD", "0", 1);
        conv_run(k, x, w, b, np);
        unsetenv("CT_WEBGPU_CONV_PAD");
      }
      unsetenv("CT_WEBGPU_CONV_T");
      for (int i = 0; i < 3; i++)
        if (np[i] && v2[i]) {
          snprintf(what, sizeof what, "conv %s %s, padded rows vs CT_WEBGPU_CONV_PAD=0, bit for bit", k->name, part[i]);
          SAME(what, np[i], v2[i], 0, 0);
        }
      for (int i = 0; i < 3; i++) {
        if (!v2[i] || !v1[i]) continue;
        snprintf(what, sizeof what, "conv %s %s T=%s vs cpu float64", k->name, part[i], ts[t] ? ts[t] : "default");
        SAME(what, ref[i], v2[i], 1e-4, i ? 1e-3 : 1e-4);
        snprintf(what, sizeof what, "conv %s %s T=%s, layout v2 vs CT_WEBGPU_CONV_V2=0, bit for bit", k->name, part[i],
                 ts[t] ? ts[t] : "default");
        SAME(what, v1[i], v2[i], 0, 0);
      }
    }
    /* 8x8-thread workgroups: another split of K, so vs the CPU */
    setenv("CT_WEBGPU_CONV_NT", "8", 1);
    ct_tensor *n8[3] = {0};
    conv_run(k, x, w, b, n8);
    unsetenv("CT_WEBGPU_CONV_NT");
    for (int i = 0; i < 3; i++)
      if (n8[i]) {
        snprintf(what, sizeof what, "conv %s %s CT_WEBGPU_CONV_NT=8 vs cpu float64", k->name, part[i]);
        SAME(what, ref[i], n8[i], 1e-4, i ? 1e-3 : 1e-4);
      }
    /* without grad: the inference tiles (T = 2), v2 vs v1 and NT = 8 */
    bool prev = ct_set_grad_enabled(false);
    ct_tensor *gx = k->cl ? ct_permute(W(ct_contiguous(ct_permute(x, 4, to_nhwc))), 4, to_nchw) : W(x);
    ct_tensor *gw = k->cl ? ct_permute(W(ct_contiguous(ct_permute(w, 4, to_nhwc))), 4, to_nchw) : W(w);
    ct_tensor *gb = b ? W(b) : NULL;
    ct_tensor *y2 = cpu(ct_conv2d(gx, gw, gb, st, pd, dl, k->groups));
    setenv("CT_WEBGPU_CONV_V2", "0", 1);
    ct_tensor *y1 = cpu(ct_conv2d(gx, gw, gb, st, pd, dl, k->groups));
    unsetenv("CT_WEBGPU_CONV_V2");
    setenv("CT_WEBGPU_CONV_NT", "8", 1);
    ct_tensor *y8 = cpu(ct_conv2d(gx, gw, gb, st, pd, dl, k->groups));
    unsetenv("CT_WEBGPU_CONV_NT");
    snprintf(what, sizeof what, "conv %s no grad vs cpu float64", k->name);
    SAME(what, ref[0], y2, 1e-4, 1e-4);
    snprintf(what, sizeof what, "conv %s no grad, layout v2 vs CT_WEBGPU_CONV_V2=0, bit for bit", k->name);
    SAME(what, y1, y2, 0, 0);
    snprintf(what, sizeof what, "conv %s no grad, CT_WEBGPU_CONV_NT=8 vs cpu float64", k->name);
    SAME(what, ref[0], y8, 1e-4, 1e-4);
    ct_set_grad_enabled(prev);
    ct_scope_end(sc);
  }
}

/* The per-dispatch profile runs each captured dispatch alone on the graph's buffers: a 3-conv chain
 * profiled, then replayed into a zeroed output, equals the eager result bit for bit, and every
 * dispatch got a finite time. */
W11_TEST(graph_profile_then_replay) {
  ct_scope *sc = ct_scope_begin();
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *x = W(rnd(4, (const int64_t[]){1, 32, 12, 12}));
  ct_tensor *w1 = W(ct_mul_scalar(rnd(4, (const int64_t[]){64, 32, 3, 3}), ct_sf(0.05)));
  ct_tensor *w2 = W(ct_mul_scalar(rnd(4, (const int64_t[]){64, 64, 3, 3}), ct_sf(0.05)));
  const int64_t one[2] = {1, 1};
  ct_tensor *ye = cpu(ct_relu(ct_conv2d(ct_relu(ct_conv2d(x, w1, NULL, one, one, one, 1)), w2, NULL, one, one, one, 1)));
  CHECK_OK(ct_webgpu_synchronize());
  CHECK_OK(ct_webgpu_capture_begin());
  ct_tensor *yc = ct_relu(ct_conv2d(ct_relu(ct_conv2d(x, w1, NULL, one, one, one, 1)), w2, NULL, one, one, one, 1));
  ct_webgpu_graph *g = ct_webgpu_capture_end();
  CHECK(yc != NULL && g != NULL);
  if (yc && g) {
    int n = (int)ct_webgpu_graph_dispatches(g);
    CHECK(n >= 3);
    double *us = calloc((size_t)n, sizeof *us);
    CHECK_OK(ct_webgpu_graph_profile(g, 3, us));
    for (int i = 0; i < n; i++) CHECK(isfinite(us[i]));
    free(us);
    CHECK_OK(ct_copy_(yc, ct_zeros_like(yc, NULL)));
    CHECK_OK(ct_webgpu_graph_replay(g));
    SAME("conv-relu-conv-relu profiled, then replayed, vs eager, bit for bit", ye, cpu(yc), 0, 0);
  }
  if (g) ct_webgpu_graph_free(g);
  ct_set_grad_enabled(prev);
  ct_scope_end(sc);
}

/* The columns path (opt-in in session 11, the default since session 12; CT_WEBGPU_CONV_DGRAD_COL=0:
 * the implicit GEMM): a strided convolution's input gradient (conv_transpose2d's
 * op) as a dense 1x1 product into columns and a gather. Stride-2 3x3 (ResNet's downsampling
 * convolutions; K = 64 here), stride-2 1x1, a (1, 3)-strided dilated 1xk one with an odd width and a
 * batch of 2: vs the CPU in float64 and vs the implicit GEMM within float32 rounding, 2 dispatches
 * (the product, the gather); captured and replayed into a zeroed result, bit for bit. Not taken (the
 * implicit GEMM's bits and dispatches) at stride 1 or with groups. */
static ct_tensor *dgrad_of(const ct_tensor *gy, const ct_tensor *w, const int64_t *st, const int64_t *pd,
                           const int64_t *op, const int64_t *dl, int64_t groups, int64_t *dispatches) {
  ct_webgpu_counters a = ct_webgpu_get_counters();
  ct_tensor *gx = ct_conv_transpose2d(gy, w, NULL, st, pd, op, groups, dl);
  ct_webgpu_counters b = ct_webgpu_get_counters();
  if (dispatches) *dispatches = b.dispatches - a.dispatches;
  return gx;
}
W11_TEST(conv_dgrad_columns) {
  static const struct {
    int64_t xs[4], ws[4], st[2], pd[2], dl[2], groups;
    const char *name;
  } cs[] = {
      {{2, 64, 16, 16}, {64, 64, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, "3x3/2 64->64 16x16 b2"},
      {{1, 48, 9, 9}, {32, 48, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, "1x1/2 48->32 9x9"},
      {{2, 24, 1, 29}, {40, 24, 1, 3}, {1, 3}, {0, 2}, {1, 2}, 1, "1x3 stride (1, 3) dil 2 24->40 1x29 b2"},
      {{1, 32, 10, 10}, {32, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, "3x3/1 (not taken)"},
      {{1, 32, 10, 10}, {32, 16, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 2, "3x3/2 groups 2 (not taken)"},
  };
  bool prev = ct_set_grad_enabled(false);
  for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
    ct_scope *sc = ct_scope_begin();
    const int64_t *st = cs[ci].st, *pd = cs[ci].pd, *dl = cs[ci].dl;
    ct_tensor *x = rnd(4, cs[ci].xs), *w = ct_mul_scalar(rnd(4, cs[ci].ws), ct_sf(0.05));
    ct_tensor *y = ct_conv2d(x, w, NULL, st, pd, dl, cs[ci].groups);
    CHECK(y != NULL);
    if (!y) {
      ct_scope_end(sc);
      continue;
    }
    int64_t op[2]; /* the output padding that gives x's size back */
    for (int j = 0; j < 2; j++)
      op[j] = cs[ci].xs[2 + j] - ((y->shape[2 + j] - 1) * st[j] - 2 * pd[j] + dl[j] * (cs[ci].ws[2 + j] - 1) + 1);
    ct_tensor *gy = rnd(4, y->shape);
    ct_tensor *ref = f32(dgrad_of(f64(gy), f64(w), st, pd, op, dl, cs[ci].groups, NULL));
    ct_tensor *ggy = W(gy), *gw = W(w);
    int64_t d0 = 0, d1 = 0;
    setenv("CT_WEBGPU_CONV_DGRAD_COL", "0", 1); /* the implicit GEMM */
    ct_tensor *g0 = dgrad_of(ggy, gw, st, pd, op, dl, cs[ci].groups, &d0);
    unsetenv("CT_WEBGPU_CONV_DGRAD_COL"); /* the columns: the default since session 12 */
    ct_tensor *g1 = dgrad_of(ggy, gw, st, pd, op, dl, cs[ci].groups, &d1);
    CHECK(ref != NULL && g0 != NULL && g1 != NULL);
    bool taken = ci < 3;
    char what[160];
    if (ref && g0 && g1) {
      snprintf(what, sizeof what, "conv %s input gradient, columns (default) vs cpu float64", cs[ci].name);
      SAME(what, ref, cpu(g1), 1e-4, 1e-4);
      snprintf(what, sizeof what, "conv %s input gradient, columns vs implicit GEMM%s", cs[ci].name, taken ? "" : ", bit for bit");
      SAME(what, cpu(g0), cpu(g1), taken ? 1e-5 : 0, taken ? 1e-5 : 0);
      if (d1 != (taken ? 2 : d0)) printf("  %s: %lld dispatches (implicit GEMM %lld)\n", cs[ci].name, (long long)d1, (long long)d0);
      CHECK(d1 == (taken ? 2 : d0));
    }
    if (taken && g1) { /* captured: both dispatches replay into the zeroed result */
      CHECK_OK(ct_webgpu_synchronize());
      CHECK_OK(ct_webgpu_capture_begin());
      ct_tensor *gc = dgrad_of(ggy, gw, st, pd, op, dl, cs[ci].groups, NULL);
      ct_webgpu_graph *gr = ct_webgpu_capture_end();
      CHECK(gc != NULL && gr != NULL);
      if (gc && gr) {
        CHECK_OK(ct_copy_(gc, ct_zeros_like(gc, NULL)));
        CHECK_OK(ct_webgpu_graph_replay(gr));
        snprintf(what, sizeof what, "conv %s input gradient through columns, replay vs eager, bit for bit", cs[ci].name);
        SAME(what, cpu(g1), cpu(gc), 0, 0);
      }
      if (gr) ct_webgpu_graph_free(gr);
    }
    unsetenv("CT_WEBGPU_CONV_DGRAD_COL");
    ct_scope_end(sc);
  }
  ct_set_grad_enabled(prev);
}
