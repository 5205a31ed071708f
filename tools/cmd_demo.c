/* ctorch demo (`make run`): fits a small MLP (2 -> 32 -> 1, tanh) to
 * y = sin(3 x0) * x1 + noise with linear layers, autograd and plain gradient
 * descent with momentum, printing the loss falling. Inputs, noise and initial
 * weights come from deterministic formulas (linspace/arange/sin), so every run
 * prints the same numbers. Returns non-zero if the loss did not fall. */
#include "ctorch.h"
#include "cli.h"
#include <stdio.h>
#include <time.h>

#define DEMO_CHECK(x)                                  \
  do {                                                 \
    if (!(x)) {                                        \
      fprintf(stderr, "demo: %s\n", ct_last_error()); \
      ct_scope_end(outer);                             \
      return 1;                                        \
    }                                                  \
  } while (0)

/* scale * sin(freq * arange(n) + phase), reshaped to shape: deterministic "random" values. */
static ct_tensor *wave(int nd, const int64_t *shape, double freq, double phase, double scale) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  ct_tensor *i = ct_arange(ct_si(0), ct_si(n), ct_si(1), NULL);
  ct_tensor *f = ct_to_dtype(i, CT_FLOAT32);
  ct_tensor *a = ct_add_scalar(ct_mul_scalar(f, ct_sf(freq)), ct_sf(phase));
  ct_tensor *s = ct_mul_scalar(ct_sin(a), ct_sf(scale));
  ct_tensor *r = ct_reshape(s, nd, shape);
  return r;
}

static ct_tensor *param(ct_tensor *t) {
  if (t) ct_requires_grad_(t, true);
  return t;
}

int ct_cmd_demo(int argc, char **argv) {
  (void)argc;
  (void)argv;
  clock_t t0 = clock();
  const int64_t n = 256, hidden = 32;
  ct_scope *outer = ct_scope_begin();
  /* data: x0 on a grid, x1 a deterministic wiggle, y = sin(3 x0) * x1 + small noise */
  ct_tensor *x0 = ct_linspace(-1, 1, n, ct_opts());
  ct_tensor *x1 = wave(1, &n, 0.7, 0.1, 1.0);
  DEMO_CHECK(x0 && x1);
  const ct_tensor *cols[2] = {x0, x1};
  ct_tensor *X = ct_stack(2, cols, 1); /* [n, 2] */
  ct_tensor *noise = wave(1, &n, 12.9898, 0.0, 0.02);
  ct_tensor *y = ct_add(ct_mul(ct_sin(ct_mul_scalar(x0, ct_sf(3))), x1), noise);
  int64_t col[2] = {n, 1};
  ct_tensor *Y = ct_reshape(y, 2, col);
  DEMO_CHECK(X && Y);
  /* parameters (nn.Linear layout: weight [out, in]) */
  int64_t s1[2] = {hidden, 2}, s2[2] = {1, hidden}, sb1[1] = {hidden}, sb2[1] = {1};
  ct_tensor *W1 = param(wave(2, s1, 1.7, 0.3, 1.2)), *b1 = param(wave(1, sb1, 2.9, 0.5, 0.5));
  ct_tensor *W2 = param(wave(2, s2, 2.3, 0.7, 0.3)), *b2 = param(ct_zeros(1, sb2, ct_opts()));
  DEMO_CHECK(W1 && b1 && W2 && b2);
  ct_tensor *params[4] = {W1, b1, W2, b2}, *vel[4];
  for (int i = 0; i < 4; i++) DEMO_CHECK(vel[i] = ct_zeros_like(params[i], NULL));
  const double lr = 0.1, momentum = 0.9;
  const int steps = 400;
  double first = 0, loss_v = 0;
  printf("fitting y = sin(3 x0) * x1 with an MLP 2 -> %lld -> 1 (tanh), %lld points\n", (long long)hidden,
         (long long)n);
  for (int step = 0; step <= steps; step++) {
    ct_scope *s = ct_scope_begin();
    ct_tensor *h = ct_tanh(ct_linear(X, W1, b1)); /* [n, 32] */
    ct_tensor *pred = ct_linear(h, W2, b2);       /* [n, 1] */
    ct_tensor *d = ct_sub(pred, Y);
    ct_tensor *loss = ct_mean(ct_mul(d, d));
    DEMO_CHECK(loss && ct_backward(loss, NULL, false, false) == CT_OK);
    ct_item_double(loss, &loss_v);
    if (step == 0) first = loss_v;
    if (step % 40 == 0) printf("step %4d  loss %.6f\n", step, loss_v);
    bool prev = ct_set_grad_enabled(false);
    for (int i = 0; i < 4; i++) { /* v = momentum * v + g; p -= lr * v */
      DEMO_CHECK(ct_mul_scalar_(vel[i], ct_sf(momentum)) == CT_OK && ct_add_(vel[i], ct_grad(params[i])) == CT_OK);
      DEMO_CHECK(ct_add_alpha_(params[i], vel[i], ct_sf(-lr)) == CT_OK);
      ct_set_grad(params[i], NULL);
    }
    ct_set_grad_enabled(prev);
    ct_scope_end(s);
  }
  double ms = 1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC;
  bool ok = loss_v < 0.1 * first;
  printf("loss %.6f -> %.6f (%s) in %.0f ms of CPU time\n", first, loss_v, ok ? "fell" : "did NOT fall enough", ms);
  ct_scope_end(outer);
  return ok ? 0 : 1;
}
