/* Views carry how they were made (grad mode off, inference mode, one of several outputs): a change in
 * place that autograd would have to record is refused with PyTorch's message, before any value changes;
 * the same change with grad mode off, or with nothing requiring grad, goes through. */
#include "test.h"

static const char *NO_GRAD_MSG = "A view was created in no_grad mode and is being modified inplace with grad mode enabled.";

TEST(view_creation_no_grad_view_refused) {
  int64_t n = 3;
  ct_tensor *x = ct_ones(1, &n, ct_opts());
  CHECK_OK(ct_requires_grad_(x, true));
  ct_tensor *y = ct_mul_scalar(x, ct_si(2));
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *v = ct_narrow(y, 0, 0, 2);
  ct_set_grad_enabled(prev);
  CHECK_ERR(ct_mul_scalar_(v, ct_si(3)), NO_GRAD_MSG); /* the base requires grad */
  float buf[3];
  CHECK_OK(ct_copy_to_buffer(y, buf, CT_FLOAT32, 3));
  CHECK(buf[0] == 2.0f && buf[1] == 2.0f); /* refused before writing */
  /* a view of that view, made with grad mode on, inherits it */
  ct_tensor *vv = ct_narrow(v, 0, 0, 1);
  CHECK_ERR(ct_fill_(vv, ct_sf(0.0)), NO_GRAD_MSG);
  /* with grad mode off the change goes through */
  prev = ct_set_grad_enabled(false);
  CHECK_OK(ct_mul_scalar_(v, ct_si(3)));
  ct_set_grad_enabled(prev);
  CHECK_OK(ct_copy_to_buffer(y, buf, CT_FLOAT32, 3));
  CHECK(buf[0] == 6.0f && buf[1] == 6.0f && buf[2] == 2.0f);
  /* the leaf's own view: this message comes before "a view of a leaf Variable ..." */
  prev = ct_set_grad_enabled(false);
  ct_tensor *xl = ct_narrow(x, 0, 1, 2);
  ct_set_grad_enabled(prev);
  CHECK_ERR(ct_mul_scalar_(xl, ct_si(2)), NO_GRAD_MSG);
  ct_release(xl);
  ct_release(vv);
  ct_release(v);
  ct_release(y);
  ct_release(x);
}

TEST(view_creation_other_operand_requires_grad) {
  int64_t n = 3, m = 2;
  ct_tensor *x = ct_ones(1, &n, ct_opts()); /* nothing requires grad ... */
  ct_tensor *w = ct_ones(1, &m, ct_opts());
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *v = ct_narrow(x, 0, 0, 2);
  ct_set_grad_enabled(prev);
  CHECK_OK(ct_add_(v, w)); /* ... so the change is not recorded and is allowed */
  CHECK_OK(ct_requires_grad_(w, true)); /* ... until the other operand requires grad */
  CHECK_ERR(ct_add_(v, w), NO_GRAD_MSG);
  float buf[3];
  CHECK_OK(ct_copy_to_buffer(x, buf, CT_FLOAT32, 3));
  CHECK(buf[0] == 2.0f && buf[1] == 2.0f && buf[2] == 1.0f);
  ct_release(v);
  ct_release(w);
  ct_release(x);
}

TEST(view_creation_multi_output_views) {
  int64_t n = 4;
  ct_tensor *x = ct_ones(1, &n, ct_opts());
  CHECK_OK(ct_requires_grad_(x, true));
  ct_tensor *y = ct_mul_scalar(x, ct_si(2));
  ct_tensor *parts[2];
  int np = 0;
  CHECK_OK(ct_split(y, 2, 0, &np, parts, 2));
  CHECK(np == 2);
  CHECK_ERR(ct_add_scalar_(parts[1], ct_si(1)), "Output 1 of SplitBackward0 is a view and is being modified inplace.");
  int64_t s2[2] = {2, 2};
  ct_tensor *y2 = ct_view(y, 2, s2);
  ct_tensor *rows[2];
  CHECK_OK(ct_unbind(y2, 0, &np, rows, 2));
  CHECK(np == 2);
  if (np == 2) CHECK_ERR(ct_mul_scalar_(rows[1], ct_si(2)), "Output 1 of UnbindBackward0 is a view");
  for (int k = 0; k < np; k++) ct_release(rows[k]);
  ct_release(y2);
  ct_tensor *z = ct_ones(2, s2, ct_opts());
  /* pieces of a tensor nothing requires grad of change freely */
  ct_tensor *q[2];
  CHECK_OK(ct_split(z, 1, 0, &np, q, 2));
  CHECK_OK(ct_mul_scalar_(q[0], ct_si(5)));
  /* and with grad mode off */
  bool prev = ct_set_grad_enabled(false);
  CHECK_OK(ct_mul_scalar_(parts[0], ct_si(5)));
  ct_set_grad_enabled(prev);
  float buf[4];
  CHECK_OK(ct_copy_to_buffer(y, buf, CT_FLOAT32, 4));
  CHECK(buf[0] == 10.0f && buf[2] == 2.0f);
  for (int k = 0; k < 2; k++) {
    ct_release(q[k]);
    ct_release(parts[k]);
  }
  ct_release(z);
  ct_release(y);
  ct_release(x);
}

TEST(view_creation_inference_mode_view) {
  int64_t n = 3;
  ct_tensor *x = ct_ones(1, &n, ct_opts());
  CHECK_OK(ct_requires_grad_(x, true));
  ct_tensor *y = ct_mul_scalar(x, ct_si(2));
  bool prev = ct_set_inference_mode(true);
  ct_tensor *v = ct_narrow(y, 0, 0, 2);
  ct_set_inference_mode(prev);
  CHECK_ERR(ct_mul_scalar_(v, ct_si(2)), "A view was created in inference mode and is being modified inplace in normal mode.");
  ct_release(v);
  ct_release(y);
  ct_release(x);
}
