/* The README's C example, kept honest: the same calls, checked. */
#include "test.h"

TEST(readme_example) {
  ct_scope *s = ct_scope_begin();
  ct_options o = ct_opts();
  o.requires_grad = true;
  int64_t shape[2] = {2, 3};
  ct_tensor *x = ct_ones(2, shape, o);
  ct_tensor *y = ct_sum(ct_mul(ct_exp(x), x));
  CHECK(y != NULL);
  CHECK_OK(ct_backward(y, NULL, false, false));
  double g = 0;
  CHECK_OK(ct_item_double(ct_select(ct_flatten(ct_grad(x), 0, -1), 0, 0), &g));
  CHECK_NEAR(g, 2 * exp(1.0), 1e-5);
  double v = 0;
  CHECK_OK(ct_item_double(y, &v));
  CHECK_NEAR(v, 6 * exp(1.0), 1e-4);
  CHECK_OK(ct_scope_end(s));
}

/* A hook that drops the last user reference to the tensor it is registered on must not crash backward. */
static ct_tensor *dropping_hook(ct_tensor *grad, void *user) {
  ct_tensor **slot = user;
  ct_release(*slot);
  *slot = NULL;
  return ct_mul_scalar(grad, ct_sf(2.0));
}

TEST(hook_releasing_its_tensor) {
  ct_options o = ct_opts();
  o.requires_grad = true;
  int64_t n = 3;
  ct_tensor *x = ct_ones(1, &n, o);
  ct_tensor *y = ct_exp(x);
  ct_tensor *yh = ct_retain(y);
  CHECK(ct_register_hook(yh, dropping_hook, &yh) >= 0);
  ct_release(y); /* only the reference the hook drops is left */
  ct_tensor *s = ct_sum(yh);
  CHECK_OK(ct_backward(s, NULL, false, false));
  CHECK(yh == NULL);
  CHECK_NEAR(tt_at(ct_grad(x), 0), 2 * exp(1.0), 1e-5);
  ct_release(s);
  ct_release(x);
}
