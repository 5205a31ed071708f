/* ctorch demo: fits y = 3x - 2 + noise with gradient descent through autograd,
 * printing the loss falling. (The GPT issue replaces this as `make run`.) */
#include "ctorch.h"
#include "cli.h"
#include <stdio.h>

int ct_cmd_demo(int argc, char **argv) {
  (void)argc;
  (void)argv;
  int64_t n = 256;
  ct_scope *outer = ct_scope_begin();
  ct_tensor *x = ct_linspace(-1, 1, n, ct_opts());
  ct_tensor *y0 = ct_add_scalar(ct_mul_scalar(x, ct_sf(3.0)), ct_sf(-2.0));
  ct_options og = ct_opts();
  og.requires_grad = true;
  ct_tensor *w = ct_zeros(0, NULL, og), *b = ct_zeros(0, NULL, og);
  double lr = 0.5, loss_v = 0;
  for (int step = 0; step <= 100; step++) {
    ct_scope *s = ct_scope_begin();
    ct_tensor *pred = ct_add(ct_mul(x, w), b);
    ct_tensor *d = ct_sub(pred, y0);
    ct_tensor *loss = ct_mean(ct_mul(d, d));
    if (!loss || ct_backward(loss, NULL, false, false) != CT_OK) {
      fprintf(stderr, "demo: %s\n", ct_last_error());
      return 1;
    }
    ct_item_double(loss, &loss_v);
    if (step % 10 == 0) printf("step %3d  loss %.6f\n", step, loss_v);
    bool prev = ct_set_grad_enabled(false);
    ct_add_alpha_(w, ct_grad(w), ct_sf(-lr));
    ct_add_alpha_(b, ct_grad(b), ct_sf(-lr));
    ct_set_grad_enabled(prev);
    ct_set_grad(w, NULL);
    ct_set_grad(b, NULL);
    ct_scope_end(s);
  }
  double wv, bv;
  ct_item_double(w, &wv);
  ct_item_double(b, &bv);
  printf("fitted w = %.4f (true 3), b = %.4f (true -2)\n", wv, bv);
  ct_scope_end(outer);
  return loss_v < 1e-3 ? 0 : 1;
}
