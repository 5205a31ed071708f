/* ct_optim_backward_step (opt-in, CT_OPTIM_OVERLAP=1): backward then step, each large parameter's update started as soon as the backward has
 * made its final gradient (on CUDA on a second stream beside the rest of the backward). Its values must be those of
 * ct_backward then ct_optim_step, to the bit: on the CPU (where nothing starts early), on CUDA for a plain MLP, for
 * a parameter that a later node reads through a detached alias (left to the step), and for the ResNet-18 CIFAR step
 * eagerly and captured as a CUDA graph. The GPU tests are skipped without a CUDA device. */
#include "test.h"
#include "ctorch/cuda.h"
#include "resnet_step_fixture.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

CT_GPU_GROUP(overlap)
#define OVERLAP_TEST(name) CT_GPU_TEST(overlap, name)

#ifdef CT_HAVE_CUDA
int ct_cuda_side_pending(int dev);
int64_t ct_cuda_sgd_early_launches(void);
#define SIDE_PENDING() ((int64_t)ct_cuda_side_pending(0))
#define EARLY_LAUNCHES() ct_cuda_sgd_early_launches()
#else /* never reached: the GPU tests are skipped without CUDA */
#define SIDE_PENDING() ((int64_t)0)
#define EARLY_LAUNCHES() ((int64_t)0)
#endif

/* a 3-layer MLP's parameters on dev, from one seed: w1 [H, D], b1 [H], w2 [H, H], b2 [H], w3 [C, H] */
static void release_all(int n, ...) {
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) ct_release(va_arg(ap, ct_tensor *));
  va_end(ap);
}

enum { MLP_D = 64, MLP_H = 256, MLP_C = 10, MLP_B = 32, MLP_NP = 5 };
static void mlp_params(ct_device dev, ct_tensor **p) {
  int64_t shapes[MLP_NP][2] = {{MLP_H, MLP_D}, {MLP_H, 1}, {MLP_H, MLP_H}, {MLP_H, 1}, {MLP_C, MLP_H}};
  ct_generator *gen = ct_generator_new(7);
  for (int i = 0; i < MLP_NP; i++) {
    int nd = shapes[i][1] == 1 ? 1 : 2;
    ct_tensor *c = ct_randn(nd, shapes[i], ct_opts(), gen);
    ct_tensor *s = c ? ct_mul_scalar(c, ct_sf(0.1)) : NULL;
    p[i] = s ? ct_to_device(s, dev) : NULL;
    if (p[i]) ct_requires_grad_(p[i], true);
    ct_release(c);
    ct_release(s);
  }
  ct_generator_free(gen);
}
/* the loss of one batch: cross_entropy(w3 relu(w2 relu(w1 x + b1) + b2), y) */
static ct_tensor *mlp_loss(ct_tensor *const *p, const ct_tensor *x, const ct_tensor *y) {
  ct_scope *s = ct_scope_begin();
  ct_tensor *h1 = ct_relu(ct_linear(x, p[0], p[1]));
  ct_tensor *h2 = ct_relu(ct_linear(h1, p[2], p[3]));
  ct_tensor *l = ct_cross_entropy_unchecked(ct_linear(h2, p[4], NULL), y);
  if (l) ct_keep(l);
  ct_scope_end(s);
  return l;
}
/* 3 steps of SGD (momentum, weight decay) on dev, overlapped or as backward then step; the last loss in *loss */
static void mlp_run(ct_device dev, bool overlap, ct_tensor **p, double *loss) {
  mlp_params(dev, p);
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_SGD);
  o.lr = 0.05;
  o.momentum = 0.9;
  o.weight_decay = 1e-3;
  ct_optim *opt = ct_optim_new(CT_OPTIM_SGD, MLP_NP, p, &o);
  CHECK(opt != NULL);
  int64_t xs[2] = {MLP_B, MLP_D}, nb = MLP_B;
  ct_generator *gen = ct_generator_new(11);
  for (int k = 0; k < 3 && opt; k++) {
    ct_tensor *xc = ct_randn(2, xs, ct_opts(), gen), *yc = ct_randint(0, MLP_C, 1, &nb, NULL, gen);
    ct_tensor *x = ct_to_device(xc, dev), *y = ct_to_device(yc, dev);
    CHECK_OK(ct_optim_zero_grad(opt, true));
    ct_tensor *l = mlp_loss(p, x, y);
    CHECK(l != NULL);
    if (l) {
      if (overlap) CHECK_OK(ct_optim_backward_step(opt, l));
      else {
        CHECK_OK(ct_backward(l, NULL, false, false));
        CHECK_OK(ct_optim_step(opt));
      }
      CHECK_OK(ct_item_double(l, loss));
    }
    release_all(4, xc, yc, x, y);
    ct_release(l);
  }
  ct_generator_free(gen);
  ct_optim_free(opt);
}
static void mlp_compare(ct_device dev, int64_t *early) {
  ct_tensor *pa[MLP_NP], *pb[MLP_NP];
  double la = 0, lb = 1;
  mlp_run(dev, false, pa, &la);
  int64_t e0 = EARLY_LAUNCHES();
  setenv("CT_OPTIM_OVERLAP", "1", 1);
  mlp_run(dev, true, pb, &lb);
  unsetenv("CT_OPTIM_OVERLAP");
  *early = EARLY_LAUNCHES() - e0;
  CHECK(la == lb);
  for (int i = 0; i < MLP_NP; i++) {
    ct_tensor *a = ct_to_device(pa[i], ct_cpu()), *b = ct_to_device(pb[i], ct_cpu());
    CHECK(a && b && tt_allclose(b, a, 0, 0));
    release_all(4, a, b, pa[i], pb[i]);
  }
}

TEST(optim_backward_step_cpu) {
  int64_t early = 0;
  int64_t t0 = ct_optim_early_updates();
  mlp_compare(ct_cpu(), &early);
  CHECK(ct_optim_early_updates() == t0); /* nothing runs beside the backward on the CPU: the step does it all */
}

TEST(optim_backward_step_errors) {
  CHECK(ct_optim_backward_step(NULL, NULL) != CT_OK);
  int64_t s1 = 3;
  ct_tensor *w = ct_ones(1, &s1, ct_opts());
  ct_requires_grad_(w, true);
  ct_optim *opt = ct_optim_sgd(1, &w, 0.1, 0.0, 0.0);
  ct_tensor *nograd = ct_ones(1, &s1, ct_opts());
  /* a loss without a graph: backward's own error, and the parameter untouched */
  CHECK(ct_optim_backward_step(opt, nograd) != CT_OK);
  CHECK(strstr(ct_last_error(), "does not require grad") != NULL);
  ct_tensor *wc = ct_ones(1, &s1, ct_opts());
  CHECK(tt_allclose(w, wc, 0, 0));
  release_all(3, nograd, wc, w);
  ct_optim_free(opt);
}

OVERLAP_TEST(mlp) {
  int64_t early = 0;
  mlp_compare(ct_cuda(0), &early);
  /* w1 (16384 elements), w2 (65536): their updates start early, each step; the rest in the step */
  CHECK(early == 2 * 3);
  CHECK(SIDE_PENDING() >= 0);
  ct_cuda_synchronize(0);
  CHECK(SIDE_PENDING() == 0);
}

/* w read by a node that runs after w's AccumulateGrad, through a detached alias saved in the forward: its update
 * must wait for the step (else that node's version check would fail where backward() then step() works) */
OVERLAP_TEST(saved_alias) {
  int64_t s2[2] = {256, 256}, xs[2] = {8, 256};
  ct_tensor *res[2] = {NULL, NULL};
  double loss[2] = {0, 1};
  int64_t early = 0;
  for (int mode = 0; mode < 2; mode++) {
    ct_generator *gen = ct_generator_new(3);
    ct_tensor *wc = ct_randn(2, s2, ct_opts(), gen), *xc = ct_randn(2, xs, ct_opts(), gen);
    ct_generator_free(gen);
    ct_tensor *w = ct_to_device(wc, ct_cuda(0)), *x = ct_to_device(xc, ct_cuda(0));
    ct_requires_grad_(w, true);
    ct_requires_grad_(x, true);
    ct_optim *opt = ct_optim_sgd(1, &w, 0.1, 0.9, 0.0);
    ct_scope *sc = ct_scope_begin();
    ct_tensor *wd = ct_detach(w);
    ct_tensor *a = ct_mul(x, ct_narrow(wd, 0, 0, 8)); /* saves the alias of w; created before w's first use */
    ct_tensor *l = ct_sum(ct_matmul(a, w));
    int64_t e0 = EARLY_LAUNCHES();
    setenv("CT_OPTIM_OVERLAP", "1", 1);
    CHECK_OK(mode ? ct_optim_backward_step(opt, l) : (ct_backward(l, NULL, false, false) || ct_optim_step(opt)));
    unsetenv("CT_OPTIM_OVERLAP");
    early += EARLY_LAUNCHES() - e0;
    CHECK_OK(ct_item_double(l, &loss[mode]));
    ct_scope_end(sc);
    res[mode] = ct_to_device(w, ct_cpu());
    ct_optim_free(opt);
    release_all(4, wc, xc, w, x);
  }
  CHECK(early == 0);
  CHECK(loss[0] == loss[1]);
  CHECK(res[0] && res[1] && tt_allclose(res[1], res[0], 0, 0));
  release_all(2, res[0], res[1]);
}

/* ResNet-18 CIFAR (channels-last, TF32, SGD momentum): the overlapped step against backward then step, eagerly
 * and as a replayed CUDA graph, losses and every weight to the bit over 3 steps */
OVERLAP_TEST(resnet_step) {
  ct_cuda_set_allow_tf32(true);
  ct_tensor *bx[1], *by[1];
  rn_step_batches(5, 8, 1, bx, by);
  rn_step ref, eag, gra;
  setenv("CT_OPTIM_OVERLAP", "0", 1);
  bool ok = rn_step_init(&ref, 1, true, bx[0], by[0]);
  setenv("CT_OPTIM_OVERLAP", "1", 1);
  ok = ok && rn_step_init(&eag, 1, true, bx[0], by[0]) && rn_step_init(&gra, 1, true, bx[0], by[0]);
  if (ok) {
    /* two eager steps each (the momentum buffers are made), then the capture */
    for (int k = 0; k < 2; k++) {
      setenv("CT_OPTIM_OVERLAP", "0", 1);
      CHECK_OK(rn_step_run(&ref));
      setenv("CT_OPTIM_OVERLAP", "1", 1);
      int64_t e0 = EARLY_LAUNCHES();
      CHECK_OK(rn_step_run(&eag));
      int64_t per_step = EARLY_LAUNCHES() - e0;
      /* the 3x3 convolutions past the stem (16) and the downsample convolutions of 32768 elements and more (2),
       * less those whose backward runs inside a backward region (their update waits for the step) */
      CHECK(per_step >= 16 && per_step <= 18);
      CHECK_OK(rn_step_run(&gra));
    }
    ct_cuda_graph *g = ct_cuda_graph_capture(0, rn_step_run, &gra);
    CHECK(g != NULL);
    for (int k = 0; k < 3 && g; k++) {
      setenv("CT_OPTIM_OVERLAP", "0", 1);
      CHECK_OK(rn_step_run(&ref));
      setenv("CT_OPTIM_OVERLAP", "1", 1);
      CHECK_OK(rn_step_run(&eag));
      CHECK_OK(ct_cuda_graph_replay(g));
      double lr = 0, le = 1, lg = 2;
      CHECK_OK(ct_item_double(ref.loss, &lr));
      CHECK_OK(ct_item_double(eag.loss, &le));
      CHECK_OK(ct_item_double(gra.loss, &lg));
      CHECK(lr == le && lr == lg);
    }
    ct_cuda_synchronize(0);
    CHECK(SIDE_PENDING() == 0);
    CHECK(rn_step_weights_differ(&ref, &eag) == 0);
    CHECK(rn_step_weights_differ(&ref, &gra) == 0);
    ct_cuda_graph_free(g);
  }
  unsetenv("CT_OPTIM_OVERLAP");
  rn_step_free(&ref);
  rn_step_free(&eag);
  rn_step_free(&gra);
  release_all(2, bx[0], by[0]);
  ct_cuda_set_allow_tf32(false);
}
