/* A training run of 1,000 small steps keeps its memory flat (issue 5): forward, loss, backward,
 * gradient clipping, optimizer and scheduler steps of a small CNN (AdamW) and an MLP with dropout
 * (SGD with Nesterov momentum). Between step 100 and step 1000 the live tensor count and the CPU
 * allocator's bytes in use must not change, and the resident set size (/proc/self/statm) must
 * not grow by more than a small bound (malloc's own bookkeeping may move a little). */
#include "test.h"
#include <stdlib.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define CT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CT_ASAN 1
#endif
#endif

enum { STEPS = 1000, WARM = 100 };
/* what a steady loop may still add to RSS: a few pages of malloc arena movement; a leak of even
 * one small tensor (or graph node) per step would exceed it: 900 steps x >= 1 KiB. */
static const long RSS_SLACK = 512 * 1024;

/* Resident bytes from /proc/self/statm, or -1 where there is none. */
static long rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long size, res;
  int n = fscanf(f, "%ld %ld", &size, &res);
  fclose(f);
  return n == 2 ? res * sysconf(_SC_PAGESIZE) : -1;
}

typedef struct {
  int64_t live, bytes;
  long rss;
} mem_mark;

static mem_mark mark(void) {
  mem_mark m = {ct_live_tensors(), ct_memory_get_stats(ct_cpu()).allocated_bytes, rss_bytes()};
  return m;
}

static void check_flat(const char *what, mem_mark a, mem_mark b) {
  if (a.live != b.live)
    ct_test_fail(__FILE__, __LINE__, "%s: %lld live tensors at step %d, %lld at step %d", what, (long long)a.live, WARM,
                 (long long)b.live, STEPS);
  if (a.bytes != b.bytes)
    ct_test_fail(__FILE__, __LINE__, "%s: %lld allocated bytes at step %d, %lld at step %d", what, (long long)a.bytes,
                 WARM, (long long)b.bytes, STEPS);
#ifdef CT_ASAN
  static bool said;
  if (!said) printf("test_train_memory: RSS checks skipped (1 reason: AddressSanitizer keeps freed memory in quarantine)\n");
  said = true;
#else
  if (a.rss < 0 || b.rss < 0) {
    printf("test_train_memory: %s: RSS check skipped (no /proc/self/statm)\n", what);
    return;
  }
  if (b.rss - a.rss > RSS_SLACK)
    ct_test_fail(__FILE__, __LINE__, "%s: resident memory grew by %ld KiB between step %d and step %d", what,
                 (b.rss - a.rss) / 1024, WARM, STEPS);
#endif
}

/* deterministic inputs and labels for a batch */
static void make_batch(ct_generator *g, int ndim, const int64_t *xshape, int64_t classes, ct_tensor **x, ct_tensor **y) {
  *x = ct_randn(ndim, xshape, ct_opts_dtype(CT_FLOAT32), g);
  *y = ct_randint(0, classes, 1, xshape, NULL, g);
}

/* One training step inside a scope: everything the step makes is released at its end. */
static bool train_step(ct_module *m, ct_optim *opt, ct_sched *sched, int64_t np, ct_tensor **params, const ct_tensor *x,
                       const ct_tensor *y) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *out = ct_module_forward(m, x);
  ct_tensor *loss = out ? ct_cross_entropy(out, y, NULL, CT_REDUCTION_MEAN, -100, 0.0) : NULL;
  bool ok = loss && ct_optim_zero_grad(opt, true) == CT_OK && ct_backward(loss, NULL, false, false) == CT_OK &&
            ct_clip_grad_norm_(np, params, 1.0, 2.0, false) != NULL && ct_optim_step(opt) == CT_OK &&
            (!sched || ct_sched_step(sched) == CT_OK);
  ct_scope_end(sc);
  return ok;
}

static void run(const char *what, ct_module *m, ct_optim *opt, ct_sched *sched, int ndim, const int64_t *xshape,
                int64_t classes) {
  ct_dict *pd = ct_dict_new();
  CHECK_OK(ct_module_named_parameters(m, pd));
  int64_t np = ct_dict_len(pd);
  ct_tensor **params = malloc(sizeof *params * (size_t)(np ? np : 1));
  for (int64_t i = 0; i < np; i++) params[i] = ct_dict_tensor(pd, i);
  ct_generator *g = ct_generator_new(7);
  /* a few fixed batches, cycled (new data each step would only measure the data's allocations) */
  enum { NB = 4 };
  ct_tensor *xs[NB], *ys[NB];
  for (int b = 0; b < NB; b++) make_batch(g, ndim, xshape, classes, &xs[b], &ys[b]);
  mem_mark at_warm = {0, 0, 0};
  bool ok = true;
  for (int s = 0; s < STEPS && ok; s++) {
    ok = train_step(m, opt, sched, np, params, xs[s % NB], ys[s % NB]);
    if (s + 1 == WARM) at_warm = mark();
  }
  if (!ok) ct_test_fail(__FILE__, __LINE__, "%s: a training step failed: %s", what, ct_last_error());
  else check_flat(what, at_warm, mark());
  for (int b = 0; b < NB; b++) ct_release(xs[b]), ct_release(ys[b]);
  ct_generator_free(g);
  free(params);
  ct_dict_free(pd);
}

TEST(train_memory_flat_cnn_adamw_1000_steps) {
  ct_cnn_config c = ct_cnn_config_mnist();
  c.image_size = 12; /* 3x3 kernels: 12 -> 10 -> 5 -> 3 -> 1 */
  c.conv1_channels = 4;
  c.conv2_channels = 6;
  c.hidden = 16;
  c.kernel_size = 3;
  ct_manual_seed(1);
  ct_module *m = ct_cnn_new(&c);
  CHECK(m != NULL);
  if (!m) return;
  ct_dict *pd = ct_dict_new();
  CHECK_OK(ct_module_named_parameters(m, pd));
  int64_t np = ct_dict_len(pd);
  ct_tensor **ps = malloc(sizeof *ps * (size_t)np);
  for (int64_t i = 0; i < np; i++) ps[i] = ct_dict_tensor(pd, i);
  ct_optim *opt = ct_optim_adamw(np, ps, 1e-3, 0.01);
  ct_sched *sched = opt ? ct_sched_cosine_annealing_lr(opt, STEPS, 0.0) : NULL;
  CHECK(sched != NULL);
  int64_t xs[4] = {8, 1, 12, 12};
  if (sched) run("CNN + AdamW + cosine", m, opt, sched, 4, xs, 10);
  ct_sched_free(sched);
  ct_optim_free(opt);
  free(ps);
  ct_dict_free(pd);
  ct_module_free(m);
}

TEST(train_memory_flat_mlp_sgd_momentum_1000_steps) {
  int64_t widths[2] = {32, 10};
  ct_manual_seed(2);
  ct_module *m = ct_mlp_new(20, 2, widths, 0.1); /* dropout: a mask (and generator draws) each step */
  CHECK(m != NULL);
  if (!m) return;
  ct_module_train(m, true);
  ct_dict *pd = ct_dict_new();
  CHECK_OK(ct_module_named_parameters(m, pd));
  int64_t np = ct_dict_len(pd);
  ct_tensor **ps = malloc(sizeof *ps * (size_t)np);
  for (int64_t i = 0; i < np; i++) ps[i] = ct_dict_tensor(pd, i);
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_SGD);
  o.lr = 0.05;
  o.momentum = 0.9;
  o.nesterov = true;
  o.weight_decay = 1e-4;
  ct_optim *opt = ct_optim_new(CT_OPTIM_SGD, np, ps, &o);
  CHECK(opt != NULL);
  int64_t xs[2] = {16, 20};
  if (opt) run("MLP + dropout + SGD momentum", m, opt, NULL, 2, xs, 10);
  ct_optim_free(opt);
  free(ps);
  ct_dict_free(pd);
  ct_module_free(m);
}
