/* Native ctorch on the same workloads as the wasm benchmark page (web/pages/bench_models.mjs),
 * for the wasm-vs-native ratios: MNIST CNN training step (batch 64, Adam) and the byte-level GPT
 * training step (4 layers, 128 wide, context 64, batch 12, AdamW).
 *   make wasm-native-bench   (builds it against build/wasm-native/libctorch.a and runs it) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "ctorch.h"
#include "ctorch/models.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
#define CHECK(x) do { if (!(x)) { fprintf(stderr, "failed: %s: %s\n", #x, ct_last_error()); exit(1); } } while (0)

static double median(double *t, int n) { qsort(t, (size_t)n, sizeof *t, cmp); return t[n / 2]; }

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 5;
  double t[64];
  if (iters > 64) iters = 64;
  printf("ctorch %s native (%s), %d threads\n", CT_VERSION, ct_simd_level(), ct_get_num_threads());

  /* MNIST CNN: conv5x5x32, relu, pool2, conv5x5x64, relu, pool2, flatten, dense128, relu, dense10 */
  ct_manual_seed(0);
  ct_conv_opts co = ct_conv_defaults();
  int64_t k2[2] = {2, 2};
  ct_module *mods[10] = {ct_conv2d_new(1, 32, 5, 5, &co), ct_relu_new(), ct_max_pool2d_new(k2, NULL, NULL, NULL, false),
                         ct_conv2d_new(32, 64, 5, 5, &co), ct_relu_new(), ct_max_pool2d_new(k2, NULL, NULL, NULL, false),
                         ct_flatten_new(1, -1), ct_linear_new(1024, 128, true), ct_relu_new(), ct_linear_new(128, 10, true)};
  ct_module *cnn = ct_sequential_new(10, mods);
  CHECK(cnn);
  ct_dict *pd = ct_dict_new();
  CHECK(ct_module_named_parameters(cnn, pd) == CT_OK);
  int64_t np = ct_dict_len(pd);
  ct_tensor *ps[64];
  for (int64_t i = 0; i < np; i++) ps[i] = ct_dict_tensor(pd, i);
  ct_optim *adam = ct_optim_adam(np, ps, 1e-3);
  CHECK(adam);
  int64_t xs[4] = {64, 1, 28, 28}, ys[1] = {64};
  ct_tensor *x = ct_randn(4, xs, ct_opts(), NULL), *y = ct_randint(0, 10, 1, ys, NULL, NULL);
  for (int i = -1; i < iters; i++) {
    double t0 = now_ms();
    ct_scope *s = ct_scope_begin();
    CHECK(ct_optim_zero_grad(adam, false) == CT_OK);
    ct_tensor *loss = ct_cross_entropy(ct_module_forward(cnn, x), y, NULL, CT_REDUCTION_MEAN, -100, 0.0);
    CHECK(loss);
    CHECK(ct_backward(loss, NULL, false, false) == CT_OK);
    CHECK(ct_optim_step(adam) == CT_OK);
    ct_scope_end(s);
    if (i >= 0) t[i] = now_ms() - t0;
  }
  printf("MNIST CNN training step, batch 64, Adam: median %.1f ms\n", median(t, iters));
  ct_optim_free(adam);
  ct_dict_free(pd);
  ct_module_free(cnn);
  ct_release(x);
  ct_release(y);

  /* byte-level GPT */
  ct_manual_seed(0);
  ct_gpt_config c = {256, 64, 128, 4, 4, 0.0, 1e-5};
  ct_gpt *g = ct_gpt_new(&c, NULL);
  CHECK(g);
  const ct_dict *gp = ct_gpt_parameters(g);
  np = ct_dict_len(gp);
  ct_tensor **gps = malloc(sizeof(ct_tensor *) * (size_t)np);
  for (int64_t i = 0; i < np; i++) gps[i] = ct_dict_tensor(gp, i);
  ct_optim *adamw = ct_optim_adamw(np, gps, 1e-3, 0.0);
  CHECK(adamw);
  int64_t is[2] = {12, 64};
  ct_tensor *ix = ct_randint(0, 256, 2, is, NULL, NULL), *iy = ct_randint(0, 256, 2, is, NULL, NULL);
  for (int i = -1; i < iters; i++) {
    double t0 = now_ms();
    ct_scope *s = ct_scope_begin();
    CHECK(ct_optim_zero_grad(adamw, false) == CT_OK);
    ct_tensor *loss = NULL;
    CHECK(ct_gpt_forward(g, ix, iy, true, NULL, NULL, &loss) == CT_OK);
    CHECK(ct_backward(loss, NULL, false, false) == CT_OK);
    CHECK(ct_optim_step(adamw) == CT_OK);
    ct_scope_end(s);
    if (i >= 0) t[i] = now_ms() - t0;
  }
  double m = median(t, iters);
  printf("byte-level GPT training step (4 layers, 128 wide, context 64, batch 12, AdamW): median %.1f ms, %.0f tokens/s\n", m,
         12 * 64 / (m / 1000));
  ct_optim_free(adamw);
  free(gps);
  ct_gpt_free(g);
  ct_release(ix);
  ct_release(iy);
  return 0;
}
