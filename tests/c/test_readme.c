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
