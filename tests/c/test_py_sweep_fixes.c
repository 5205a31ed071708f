/* C side of three differences the Python op sweep (tests/python/test_op_sweep.py) found against PyTorch 1.13:
 * a view made with grad mode off of a tensor requiring grad reports requires_grad (no grad_fn, no gradient);
 * add with an integer alpha on bool tensors; argmax/argmin check the dim and the empty case before the dtype. */
#include "test.h"

TEST(nograd_view_requires_grad_without_gradient) {
  int64_t n = 3;
  ct_tensor *a = ct_ones(1, &n, ct_opts());
  CHECK_OK(ct_requires_grad_(a, true));
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *v = ct_narrow(a, 0, 0, 2);
  ct_tensor *r = ct_mul_scalar(a, ct_sf(2)); /* not a view: does not require grad */
  ct_set_grad_enabled(prev);
  CHECK(v && r);
  CHECK(ct_requires_grad(v) && ct_is_leaf(v) && ct_grad_fn_name(v) == NULL);
  CHECK(!ct_requires_grad(r));
  ct_tensor *d = ct_detach(v);
  CHECK(d && !ct_requires_grad(d));
  /* used with grad mode on: the result records graph, but nothing reaches the view or its base */
  ct_tensor *y = ct_mul_scalar(v, ct_sf(3));
  ct_tensor *s = y ? ct_sum(y) : NULL;
  CHECK(s && ct_requires_grad(s) && ct_grad_fn_name(s) != NULL);
  if (s) CHECK_OK(ct_backward(s, NULL, false, false));
  CHECK(ct_grad(a) == NULL && ct_grad(v) == NULL);
  /* an in-place change with grad mode on is refused with PyTorch's message */
  CHECK_ERR(ct_add_scalar_(v, ct_si(1)), "A view was created in no_grad mode");
  ct_release(s);
  ct_release(y);
  ct_release(d);
  ct_release(r);
  ct_release(v);
  ct_release(a);
}

TEST(add_integer_alpha_on_bool) {
  bool av[2] = {true, false}, bv[2] = {false, true};
  int64_t n = 2;
  ct_tensor *a = ct_from_buffer(av, CT_BOOL, 1, &n, ct_opts_dtype(CT_BOOL));
  ct_tensor *b = ct_from_buffer(bv, CT_BOOL, 1, &n, ct_opts_dtype(CT_BOOL));
  ct_tensor *i = ct_from_buffer(bv, CT_BOOL, 1, &n, ct_opts_dtype(CT_INT64));
  CHECK(a && b && i);
  ct_tensor *r = ct_add_alpha(a, b, ct_si(2)); /* a or b, as PyTorch */
  CHECK(r != NULL);
  bool out[2] = {false, false};
  if (r) CHECK_OK(ct_copy_to_buffer(r, out, CT_BOOL, 2));
  CHECK(out[0] && out[1]);
  CHECK_ERR_PTR(ct_add_alpha(i, i, ct_sb(true)), "Boolean alpha only supported for Boolean results.");
  ct_release(r);
  ct_release(i);
  ct_release(b);
  ct_release(a);
}

TEST(argmax_checks_dim_before_dtype) {
  int64_t shp[2] = {3, 4}, shp0[2] = {0, 4}, d2 = 2, d1 = 1;
  ct_tensor *t = ct_zeros(2, shp, ct_opts_dtype(CT_BOOL));
  ct_tensor *e = ct_zeros(2, shp0, ct_opts_dtype(CT_BOOL));
  CHECK(t && e);
  ct_clear_error();
  CHECK(ct_argmax(t, &d2, false) == NULL && ct_last_status() == CT_ERR_INDEX);
  CHECK_ERR_PTR(ct_argmin(t, &d1, false), "\"argmin_cpu\" not implemented for 'Bool'");
  ct_tensor *r = ct_argmax(e, &d1, false); /* empty result: no kernel, no dtype refusal */
  CHECK(r && ct_numel(r) == 0);
  ct_release(r);
  ct_release(e);
  ct_release(t);
}
