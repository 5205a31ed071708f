/* ct_data_alias (PyTorch's `.data`): same storage, its own version counter shared with its views and the
 * aliases made of it (detach, saved tensors), and no link back to the original's counter. */
#include "test.h"

TEST(data_alias_own_version_counter) {
  int64_t s[2] = {2, 3};
  ct_tensor *x = ct_ones(2, s, ct_opts());
  ct_tensor *d = ct_data_alias(x);
  CHECK(d && ct_shares_storage(d, x) && ct_data_ptr(d) == ct_data_ptr(x) && !ct_is_view(d));
  uint64_t vx = ct_version(x), vd = ct_version(d);
  CHECK_OK(ct_mul_scalar_(d, ct_si(2))); /* through the alias: x's counter stays */
  CHECK(ct_version(x) == vx && ct_version(d) == vd + 1);
  CHECK_OK(ct_add_scalar_(x, ct_si(1))); /* through x: the alias's counter stays */
  CHECK(ct_version(x) == vx + 1 && ct_version(d) == vd + 1);
  /* views of the alias and detached copies of it share the alias's counter */
  ct_tensor *row = ct_select(d, 0, 1);
  ct_tensor *dd = ct_detach(d);
  CHECK_OK(ct_fill_(row, ct_sf(5.0)));
  CHECK(ct_version(d) == vd + 2 && ct_version(row) == vd + 2 && ct_version(dd) == vd + 2 && ct_version(x) == vx + 1);
  float v[6];
  CHECK_OK(ct_copy_to_buffer(x, v, CT_FLOAT32, 6));
  CHECK(v[0] == 3.0f && v[3] == 5.0f); /* the writes all landed in the one storage */
  ct_release(dd);
  ct_release(row);
  ct_release(d);
  ct_release(x);
}

TEST(data_alias_saved_tensor_check) {
  /* d = x.data saved for backward: a write through x escapes the saved-tensor check (as PyTorch's .data
   * does); a write through a view of d bumps d's counter and is caught */
  int64_t n = 3;
  ct_tensor *x = ct_ones(1, &n, ct_opts());
  ct_tensor *d = ct_data_alias(x);
  ct_tensor *w = ct_ones(1, &n, ct_opts());
  CHECK_OK(ct_requires_grad_(w, true));
  ct_tensor *z = ct_mul(d, w); /* saves d for w's gradient */
  ct_tensor *zs = ct_sum(z);
  CHECK_OK(ct_add_scalar_(x, ct_si(1)));
  CHECK_OK(ct_backward(zs, NULL, true, false));
  ct_tensor *v = ct_slice(d, 0, 0, 2, 1);
  CHECK_OK(ct_add_scalar_(v, ct_si(1)));
  CHECK_ERR(ct_backward(zs, NULL, false, false), "is at version 1; expected version 0 instead.");
  ct_release(v);
  ct_release(zs);
  ct_release(z);
  ct_release(w);
  ct_release(d);
  ct_release(x);
}
