/* C side of three differences the Python op sweep (tests/python/test_op_sweep.py) found against PyTorch 1.13:
 * a view made with grad mode off of a tensor requiring grad reports requires_grad (no grad_fn, no gradient);
 * add with an integer alpha on bool tensors; argmax/argmin check the dim and the empty case before the dtype.
 * Session 7: writes through expanded tensors, empty/0-dim cases, exact var of equal values (below). */
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

/* ---- session 7: the rest of the sweep's known differences ---- */
/* fill_ / masked_fill_ through an expanded tensor are allowed (every shared location takes the value when any of
 * its aliases is selected); add_ / copy_ are refused; x.copy_(x) returns early. */
TEST(expanded_writes_as_pytorch) {
  float bv[4] = {1, 2, 3, 4};
  int64_t one[2] = {1, 4}, three[2] = {3, 4};
  ct_tensor *b = ct_from_buffer(bv, CT_FLOAT32, 2, one, ct_opts());
  ct_tensor *x = b ? ct_expand(b, 2, three) : NULL;
  CHECK(x != NULL);
  CHECK_ERR(ct_add_scalar_(x, ct_si(1)), "more than one element of the written-to tensor");
  CHECK_ERR(ct_copy_(x, b), "more than one element of the written-to tensor");
  CHECK_OK(ct_copy_(x, x));
  /* a mask selecting (0, 0) and (2, 2) only: both shared locations change */
  bool mv[12] = {true, false, false, false, false, false, false, false, false, false, true, false};
  ct_tensor *m = ct_from_buffer(mv, CT_BOOL, 2, three, ct_opts_dtype(CT_BOOL));
  CHECK(m != NULL);
  if (m) CHECK_OK(ct_masked_fill_(x, m, ct_sf(9)));
  float out[4] = {0};
  CHECK_OK(ct_copy_to_buffer(b, out, CT_FLOAT32, 4));
  CHECK(out[0] == 9 && out[1] == 2 && out[2] == 9 && out[3] == 4);
  CHECK_OK(ct_fill_(x, ct_sf(5)));
  CHECK_OK(ct_copy_to_buffer(b, out, CT_FLOAT32, 4));
  CHECK(out[0] == 5 && out[1] == 5 && out[2] == 5 && out[3] == 5);
  ct_release(m);
  ct_release(x);
  ct_release(b);
}

TEST(sweep_empty_and_zero_dim_cases) {
  int64_t shp0[2] = {0, 4}, n1 = 1;
  ct_tensor *ei = ct_zeros(2, shp0, ct_opts_dtype(CT_INT64));
  ct_tensor *eb = ct_zeros(2, shp0, ct_opts_dtype(CT_BOOL));
  ct_tensor *ef = ct_zeros(2, shp0, ct_opts());
  ct_tensor *zb = ct_ones(0, NULL, ct_opts_dtype(CT_BOOL));
  ct_tensor *zf = ct_ones(0, NULL, ct_opts());
  ct_tensor *idx = ct_zeros(1, &n1, ct_opts_dtype(CT_INT64));
  CHECK(ei && eb && ef && zb && zf && idx);
  /* softmax of an empty integer tensor: returned empty, its dtype kept; a non-empty one is refused */
  ct_tensor *s = ct_softmax(ei, 0, -1);
  CHECK(s && ct_tensor_dtype(s) == CT_INT64 && ct_numel(s) == 0);
  CHECK_ERR_PTR(ct_softmax(zb, 0, -1), "not implemented for 'Bool'");
  /* median of an empty bool tensor: NaN converted to bool (true) */
  ct_tensor *md = ct_median(eb);
  bool mb = false;
  CHECK(md != NULL);
  if (md) CHECK_OK(ct_copy_to_buffer(md, &mb, CT_BOOL, 1));
  CHECK(mb);
  /* kthvalue of a 0-dim bool tensor: itself and index 0 */
  ct_tensor *kv = NULL, *ki = NULL;
  CHECK_OK(ct_kthvalue(zb, 1, 0, false, &kv, &ki));
  CHECK(kv && ki && ct_tensor_dtype(kv) == CT_BOOL && ct_tensor_dtype(ki) == CT_INT64);
  /* index_select into an empty dim and repeat_interleave of a 0-dim tensor with a dim: PyTorch's errors */
  ct_clear_error();
  CHECK(ct_index_select(ef, 0, idx) == NULL && ct_last_status() == CT_ERR_RUNTIME);
  CHECK_ERR_PTR(ct_index_select(ef, 0, idx), "self indexing axis dim should be positive");
  ct_clear_error();
  CHECK(ct_repeat_interleave(zf, 2, 0) == NULL && ct_last_status() == CT_ERR_INDEX);
  CHECK_ERR_PTR(ct_repeat_interleave(zf, 2, -1), "Dimension specified as -1 but tensor has no dimensions");
  ct_release(kv);
  ct_release(ki);
  ct_release(md);
  ct_release(s);
  ct_release(idx);
  ct_release(zf);
  ct_release(zb);
  ct_release(ef);
  ct_release(eb);
  ct_release(ei);
}

/* var / std of equal values are exactly 0 and var_mean's mean exactly the value (PyTorch's Welford does not
 * round); the two-pass sum left a ~1e-17 residue for values whose triple sum rounds. */
TEST(var_of_equal_values_is_exact) {
  double v = 0.1 + 0.2; /* 3 * v rounds in double */
  double buf[3] = {v, v, v};
  int64_t n = 3, d0 = 0;
  ct_tensor *t = ct_from_buffer(buf, CT_FLOAT64, 1, &n, ct_opts_dtype(CT_FLOAT64));
  ct_tensor *var = NULL, *mean = NULL;
  CHECK(t != NULL);
  if (t) CHECK_OK(ct_var_mean(t, 1, &d0, 1.0, false, &var, &mean));
  double rv = -1, rm = 0;
  if (var) CHECK_OK(ct_copy_to_buffer(var, &rv, CT_FLOAT64, 1));
  if (mean) CHECK_OK(ct_copy_to_buffer(mean, &rm, CT_FLOAT64, 1));
  CHECK(rv == 0.0 && rm == v);
  ct_release(var);
  ct_release(mean);
  ct_release(t);
}

/* tril_ through an expanded (3, 4) view of a (1, 4) row: every column some row zeroes is zero (PyTorch 1.13) */
TEST(tril_inplace_through_expanded) {
  float bv[4] = {1, 2, 3, 4};
  int64_t one[2] = {1, 4}, three[2] = {3, 4};
  ct_tensor *b = ct_from_buffer(bv, CT_FLOAT32, 2, one, ct_opts());
  ct_tensor *x = b ? ct_expand(b, 2, three) : NULL;
  CHECK(x != NULL);
  if (x) CHECK_OK(ct_triu_(x, 1)); /* zeroes (i, j) with j < i + 1: columns 0, 1, 2 */
  float out[4] = {0};
  CHECK_OK(ct_copy_to_buffer(b, out, CT_FLOAT32, 4));
  CHECK(out[0] == 0 && out[1] == 0 && out[2] == 0 && out[3] == 4);
  ct_release(x);
  ct_release(b);
}
