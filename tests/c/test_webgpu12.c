/* WebGPU kernels of session 12 (issue 9: the ResNet-18 training step on the H200):
 * - multi-tensor SGD (ct_webgpu_sgd_group_fused): a group's parameters a few per dispatch, the
 *   same float32 operations per element as the per-parameter kernel (CT_WEBGPU_SGD_MT=0), so the
 *   same bits; checked for momentum with dampening, Nesterov, weight decay, maximize and no
 *   momentum, on sizes that straddle the 256-element workgroups, against the per-parameter path
 *   (parameters and momentum buffers bit for bit after every step) and against the CPU (rel 1e-5,
 *   abs 1e-6 after 5 steps); the dispatch count; captured and replayed with a changed learning rate.
 * Skipped, with one printed line, where Dawn or a Vulkan adapter is missing. */
#include "webgpu_test.h"
#include "backend/webgpu/webgpu_backend.h"
#include "ctorch/optim.h"
#include "ctorch/webgpu.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

WEBGPU_TESTS("test_webgpu12", "WebGPU test(s)")
#define W12_TEST(name) WEBGPU_TEST(webgpu12, name)

WEBGPU_TEST_TENSORS(1212)

#define NP 7
static const int64_t shp[NP][4] = {{3}, {300}, {17, 19}, {1000}, {257}, {64, 3, 3, 3}, {5}};
static const int nds[NP] = {1, 1, 2, 1, 1, 4, 1};

/* the data kernels per dispatch with momentum (mom) or without, as the backend picks them */
static int per_dispatch(bool mom, int kenv) {
  uint32_t lim = wg_max_storage_buffers();
  int cap = (int)(lim < WG_MAX_BINDINGS + 1 ? lim : WG_MAX_BINDINGS + 1) - 1, k = cap / (mom ? 3 : 2);
  if (k > 4) k = 4;
  if (kenv > 0 && kenv < k) k = kenv;
  return k;
}
static int64_t opt_step(ct_optim *o, bool per_param) {
  if (per_param) setenv("CT_WEBGPU_SGD_MT", "0", 1);
  int64_t d0 = ct_webgpu_get_counters().dispatches;
  CHECK_OK(ct_optim_step(o));
  int64_t d = ct_webgpu_get_counters().dispatches - d0;
  if (per_param) unsetenv("CT_WEBGPU_SGD_MT");
  return d;
}
static void set_grads(ct_tensor **p, ct_tensor **qm, ct_tensor **qp) {
  for (int k = 0; k < NP; k++) {
    ct_tensor *r = ct_mul_scalar(rnd(nds[k], shp[k]), ct_sf(0.5));
    CHECK_OK(ct_set_grad(p[k], r));
    CHECK_OK(ct_set_grad(qm[k], W(r)));
    CHECK_OK(ct_set_grad(qp[k], W(r)));
  }
}
static void make_params(ct_tensor **p, ct_tensor **qm, ct_tensor **qp) {
  for (int k = 0; k < NP; k++) {
    p[k] = ct_detach(rnd(nds[k], shp[k]));
    qm[k] = ct_detach(W(p[k]));
    qp[k] = ct_detach(W(p[k]));
    CHECK_OK(ct_requires_grad_(p[k], true));
    CHECK_OK(ct_requires_grad_(qm[k], true));
    CHECK_OK(ct_requires_grad_(qp[k], true));
  }
}
static void same_state(const char *when, ct_optim *om, ct_optim *op, ct_tensor **qm, ct_tensor **qp, bool mom) {
  char what[160];
  for (int k = 0; k < NP; k++) {
    snprintf(what, sizeof what, "%s: param %d, multi-tensor vs per-parameter, bit for bit", when, k);
    SAME(what, cpu(qp[k]), qm[k], 0, 0);
    if (!mom) continue;
    ct_tensor *bm = ct_optim_state(om, qm[k], "momentum_buffer"), *bp = ct_optim_state(op, qp[k], "momentum_buffer");
    CHECK(bm && bp);
    if (!bm || !bp) continue;
    snprintf(what, sizeof what, "%s: momentum buffer %d, multi-tensor vs per-parameter, bit for bit", when, k);
    SAME(what, cpu(bp), bm, 0, 0);
  }
}

/* ---- 5 steps of each variant on the CPU, multi-tensor and per parameter ---- */
W12_TEST(sgd_multi_tensor) {
  struct { double mom, damp, wd; bool nest, maxi; int kenv; } V[6] = {
      {0.9, 0, 0, false, false, 0}, {0.9, 0.3, 0.01, false, false, 0}, {0.8, 0, 0.05, true, false, 0},
      {0.5, 0, 0, false, true, 0},  {0, 0, 0.01, false, false, 0},     {0.9, 0, 0.02, true, false, 2}};
  for (int v = 0; v < 6; v++) {
    ct_scope *sc = ct_scope_begin();
    char kv[8];
    snprintf(kv, sizeof kv, "%d", V[v].kenv);
    if (V[v].kenv) setenv("CT_WEBGPU_SGD_MT_K", kv, 1);
    ct_tensor *p[NP], *qm[NP], *qp[NP];
    make_params(p, qm, qp);
    ct_optim_options o = ct_optim_defaults(CT_OPTIM_SGD);
    o.lr = 0.1, o.momentum = V[v].mom, o.dampening = V[v].damp, o.weight_decay = V[v].wd, o.nesterov = V[v].nest;
    o.maximize = V[v].maxi;
    ct_optim *oc = ct_optim_new(CT_OPTIM_SGD, NP, p, &o), *om = ct_optim_new(CT_OPTIM_SGD, NP, qm, &o),
             *op = ct_optim_new(CT_OPTIM_SGD, NP, qp, &o);
    CHECK(oc && om && op);
    bool mom = V[v].mom != 0;
    int kd = per_dispatch(mom, V[v].kenv), chunks = (NP + kd - 1) / kd;
    CHECK(kd >= 2);
    for (int s = 0; s < 5; s++) {
      set_grads(p, qm, qp);
      CHECK_OK(ct_optim_step(oc));
      int64_t dm = opt_step(om, false), dp = opt_step(op, true);
      char when[64];
      snprintf(when, sizeof when, "variant %d step %d", v, s);
      /* the first step with momentum makes the buffers per parameter (PyTorch's clone of d_p) */
      if (s > 0 || !mom) {
        CHECK(dm == chunks);
        CHECK(dp == NP);
        if (dm != chunks) printf("test_webgpu12: %s: %lld dispatches, expected %d\n", when, (long long)dm, chunks);
      }
      same_state(when, om, op, qm, qp, mom);
    }
    for (int k = 0; k < NP; k++) {
      SAME("params after 5 SGD steps, multi-tensor vs CPU", p[k], qm[k], 1e-5, 1e-6);
      if (mom) SAME("momentum buffer after 5 SGD steps, multi-tensor vs CPU", ct_optim_state(oc, p[k], "momentum_buffer"),
                    ct_optim_state(om, qm[k], "momentum_buffer"), 1e-5, 1e-6);
    }
    if (V[v].kenv) unsetenv("CT_WEBGPU_SGD_MT_K");
    ct_optim_free(oc), ct_optim_free(om), ct_optim_free(op);
    ct_scope_end(sc);
  }
}

/* ---- captured (after the first, buffer-making step) and replayed 3 times, the learning rate
 * changed before the last replay: equal to the per-parameter path's eager steps bit for bit ---- */
W12_TEST(sgd_multi_tensor_replay) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *p[NP], *qm[NP], *qp[NP];
  make_params(p, qm, qp);
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_SGD);
  o.lr = 0.05, o.momentum = 0.9, o.dampening = 0.1, o.weight_decay = 0.01, o.nesterov = false;
  ct_optim *oc = ct_optim_new(CT_OPTIM_SGD, NP, p, &o), *om = ct_optim_new(CT_OPTIM_SGD, NP, qm, &o),
           *op = ct_optim_new(CT_OPTIM_SGD, NP, qp, &o);
  CHECK(oc && om && op);
  set_grads(p, qm, qp);
  CHECK_OK(ct_optim_step(oc));
  opt_step(om, false), opt_step(op, true);
  set_grads(p, qm, qp);
  CHECK_OK(ct_optim_step(oc));
  CHECK_OK(ct_webgpu_capture_begin());
  CHECK_OK(ct_optim_step(om));
  ct_webgpu_graph *g = ct_webgpu_capture_end();
  CHECK(g != NULL);
  if (!g) {
    ct_scope_end(sc);
    return;
  }
  int kd = per_dispatch(true, 0);
  CHECK(ct_webgpu_graph_dispatches(g) == (NP + kd - 1) / kd);
  opt_step(op, true);
  same_state("captured step", om, op, qm, qp, true);
  for (int r = 0; r < 3; r++) {
    if (r == 2) {
      CHECK_OK(ct_optim_set_lr(om, 0, 0.2));
      CHECK_OK(ct_optim_set_lr(op, 0, 0.2));
      CHECK_OK(ct_optim_set_lr(oc, 0, 0.2));
    }
    CHECK_OK(ct_webgpu_graph_replay(g));
    opt_step(op, true);
    CHECK_OK(ct_optim_step(oc));
    char when[32];
    snprintf(when, sizeof when, "replay %d", r);
    same_state(when, om, op, qm, qp, true);
  }
  for (int k = 0; k < NP; k++) SAME("params after 2 steps and 3 replays vs CPU", p[k], qm[k], 1e-5, 1e-6);
  ct_webgpu_graph_free(g);
  ct_optim_free(oc), ct_optim_free(om), ct_optim_free(op);
  ct_scope_end(sc);
}

/* ---- BatchNorm2d training forwards: num_batches_tracked += 1 inside the running statistics'
 * dispatch (one dispatch less per forward than CT_WEBGPU_BN_FOLD=0), the count's carry into the
 * high word, the running statistics and outputs bit for bit as without the fold, vs the CPU
 * module (rel 1e-5); a captured forward's replays advance the count; momentum None (the count
 * read on the host) and eval keep the separate path ---- */
static int64_t bn_fwd(ct_module *bn, const ct_tensor *x, bool fold, ct_tensor **y) {
  if (!fold) setenv("CT_WEBGPU_BN_FOLD", "0", 1);
  int64_t d0 = ct_webgpu_get_counters().dispatches;
  *y = ct_module_forward(bn, x);
  CHECK(*y != NULL);
  int64_t d = ct_webgpu_get_counters().dispatches - d0;
  if (!fold) unsetenv("CT_WEBGPU_BN_FOLD");
  return d;
}
static double count_of(ct_module *bn) {
  double nb = -1;
  CHECK_OK(ct_item_double(ct_module_buffer(bn, "num_batches_tracked"), &nb));
  return nb;
}
W12_TEST(bn_count_fold) {
  ct_scope *sc = ct_scope_begin();
  ct_module *bc = ct_batch_norm2d_new(5, 1e-5, 0.1, true, true), *bf = ct_batch_norm2d_new(5, 1e-5, 0.1, true, true),
            *bs = ct_batch_norm2d_new(5, 1e-5, 0.1, true, true);
  CHECK(bc && bf && bs);
  CHECK_OK(ct_module_to_device(bf, ct_webgpu()));
  CHECK_OK(ct_module_to_device(bs, ct_webgpu()));
  int64_t sx[4] = {3, 5, 6, 7};
  for (int k = 0; k < 3; k++) {
    ct_tensor *x = rnd(4, sx), *gx = W(x), *yc = ct_module_forward(bc, x), *yf, *ys;
    int64_t df = bn_fwd(bf, gx, true, &yf), ds = bn_fwd(bs, gx, false, &ys);
    CHECK(df == ds - 1);
    if (df != ds - 1) printf("test_webgpu12: bn forward %d: %lld dispatches folded, %lld not\n", k, (long long)df, (long long)ds);
    SAME("bn training output, fold vs not, bit for bit", cpu(ys), yf, 0, 0);
    SAME("bn training output vs cpu", yc, yf, 1e-5, 1e-5);
    const char *nm[2] = {"running_mean", "running_var"};
    for (int j = 0; j < 2; j++) {
      SAME("running statistic, fold vs not, bit for bit", cpu(ct_module_buffer(bs, nm[j])), ct_module_buffer(bf, nm[j]), 0, 0);
      SAME("running statistic vs cpu", ct_module_buffer(bc, nm[j]), ct_module_buffer(bf, nm[j]), 1e-5, 1e-6);
    }
    CHECK(count_of(bf) == k + 1 && count_of(bs) == k + 1);
  }
  /* the carry: 2^32 - 1 + 1 */
  ct_tensor *nbt = ct_module_buffer(bf, "num_batches_tracked");
  double big = 4294967295.0;
  int64_t s0[1] = {1};
  ct_tensor *bt = ct_reshape(tt_from(&big, 1, s0, CT_INT64), 0, NULL);
  CHECK_OK(ct_copy_(nbt, W(bt)));
  ct_tensor *y;
  bn_fwd(bf, W(rnd(4, sx)), true, &y);
  CHECK(count_of(bf) == 4294967296.0);
  /* captured: each replay counts once more */
  CHECK_OK(ct_webgpu_synchronize());
  ct_tensor *gx = W(rnd(4, sx));
  CHECK_OK(ct_webgpu_capture_begin());
  y = ct_module_forward(bf, gx);
  ct_webgpu_graph *g = ct_webgpu_capture_end();
  CHECK(g && y);
  for (int r = 0; g && r < 2; r++) CHECK_OK(ct_webgpu_graph_replay(g));
  CHECK(count_of(bf) == 4294967299.0);
  if (g) ct_webgpu_graph_free(g);
  /* eval: no count, no update */
  ct_module_train(bf, false);
  bn_fwd(bf, gx, true, &y);
  CHECK(count_of(bf) == 4294967299.0);
  /* momentum None: the count read on the host before the forward, not deferred */
  ct_module *bn0 = ct_batch_norm2d_new(5, 1e-5, -1, true, true), *bc0 = ct_batch_norm2d_new(5, 1e-5, -1, true, true);
  CHECK(bn0 && bc0 && ct_module_to_device(bn0, ct_webgpu()) == CT_OK);
  for (int k = 0; bn0 && bc0 && k < 2; k++) {
    ct_tensor *x = rnd(4, sx), *yc = ct_module_forward(bc0, x);
    bn_fwd(bn0, W(x), true, &y);
    SAME("bn momentum None running_var vs cpu", ct_module_buffer(bc0, "running_var"), ct_module_buffer(bn0, "running_var"),
         1e-5, 1e-6);
    CHECK(yc != NULL);
    CHECK(count_of(bn0) == k + 1);
  }
  ct_module_free(bc), ct_module_free(bf), ct_module_free(bs), ct_module_free(bn0), ct_module_free(bc0);
  ct_scope_end(sc);
}
