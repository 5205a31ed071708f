/* The ResNet-18 CIFAR training step on CUDA shared by test_memory_format.c, test_cuda13.c, test_cuda13b.c and
 * test_cuda14.c: the model from ct_manual_seed(seed) on cuda:0 in training mode (model and input channels-last
 * where asked), SGD (lr 0.05, momentum 0.9, no weight decay) over its named parameters, and
 * ct_classifier_train_step (zero_grad to None, the step) as the function a CUDA graph captures. */
#ifndef CT_TEST_RESNET_STEP_FIXTURE_H
#define CT_TEST_RESNET_STEP_FIXTURE_H
#include "test.h"
#include "ctorch/cuda.h"
#include "ctorch/models.h"
#include "ctorch/train.h"
#include <stdlib.h>

typedef struct {
  ct_module *m;
  ct_optim *opt;
  ct_tensor *x, *y, *loss;
  ct_dict *pd; /* the named parameters */
} rn_step;

/* one training step (the CUDA graph capture's function) */
static inline ct_status rn_step_run(void *u) {
  rn_step *r = u;
  return ct_classifier_train_step(r->m, r->opt, r->x, r->y, true, true, &r->loss);
}

/* n batches on the CPU from one generator: bx[k] [B, 3, 32, 32] normal, by[k] [B] classes in [0, 10) */
static inline void rn_step_batches(uint64_t seed, int64_t B, int n, ct_tensor **bx, ct_tensor **by) {
  int64_t xs[4] = {B, 3, 32, 32};
  ct_generator *gen = ct_generator_new(seed);
  for (int k = 0; k < n; k++) {
    bx[k] = ct_randn(4, xs, ct_opts(), gen);
    by[k] = ct_randint(0, 10, 1, &B, NULL, gen);
  }
  ct_generator_free(gen);
}

/* The model, the optimizer and the step's device tensors (copies of x and y) in *r (zeroed first); false, with
 * the failure recorded, where the model could not be made or moved (the caller stops making models then). */
static inline bool rn_step_init(rn_step *r, uint64_t seed, bool channels_last, const ct_tensor *x, const ct_tensor *y) {
  memset(r, 0, sizeof *r);
  ct_manual_seed(seed);
  r->m = ct_resnet18_cifar_new(10);
  CHECK(r->m && ct_module_to_device(r->m, ct_cuda(0)) == CT_OK);
  if (!r->m) return false;
  if (channels_last) CHECK_OK(ct_module_to_channels_last(r->m));
  ct_module_train(r->m, true);
  r->pd = ct_dict_new();
  ct_module_named_parameters(r->m, r->pd);
  int64_t np = ct_dict_len(r->pd);
  ct_tensor **ps = malloc(sizeof *ps * (size_t)(np > 0 ? np : 1));
  for (int64_t i = 0; i < np; i++) ps[i] = ct_dict_tensor(r->pd, i);
  r->opt = ct_optim_sgd(np, ps, 0.05, 0.9, 0.0);
  free(ps);
  ct_tensor *xg = ct_to_device(x, ct_cuda(0));
  r->x = channels_last ? ct_to_channels_last(xg) : ct_retain(xg);
  ct_release(xg);
  r->y = ct_to_device(y, ct_cuda(0));
  return true;
}

/* the number of parameters of b that differ from a's in any bit (or could not be read) */
static inline int64_t rn_step_weights_differ(const rn_step *a, const rn_step *b) {
  int64_t bad = 0;
  for (int64_t i = 0; i < ct_dict_len(a->pd); i++) {
    ct_tensor *wa = ct_to_device(ct_dict_tensor(a->pd, i), ct_cpu()), *wb = ct_to_device(ct_dict_tensor(b->pd, i), ct_cpu());
    bad += !(wa && wb && tt_allclose(wb, wa, 0, 0));
  }
  return bad;
}

static inline void rn_step_free(rn_step *r) {
  ct_optim_free(r->opt);
  ct_release(r->loss);
  ct_release(r->x);
  ct_release(r->y);
  ct_module_free(r->m);
  ct_dict_free(r->pd);
  memset(r, 0, sizeof *r);
}

#endif
