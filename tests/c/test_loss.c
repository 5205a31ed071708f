/* Loss functions and distance ops: semantics, errors, edge cases. Values against
 * PyTorch are in tests/parity/cases_loss.py; these check what parity cannot. */
#include "test.h"

static ct_tensor *vec(const double *v, int64_t n, ct_dtype dt, bool rg) {
  ct_tensor *t = tt_from(v, 1, &n, dt);
  if (t && rg) ct_requires_grad_(t, true);
  return t;
}

TEST(loss_bce_backward_no_leak) {
  double xv[3] = {0.2, 0.5, 0.9}, tv[3] = {0.0, 1.0, 0.3};
  ct_tensor *x = vec(xv, 3, CT_FLOAT32, true), *t = vec(tv, 3, CT_FLOAT32, true);
  int64_t live = ct_live_tensors();
  ct_tensor *l = ct_binary_cross_entropy(x, t, NULL, CT_REDUCTION_MEAN);
  CHECK(l != NULL);
  CHECK_OK(ct_backward(l, NULL, false, false));
  ct_release(l);
  CHECK(ct_live_tensors() - live == 2); /* the two .grad tensors */
  /* d/dx = (x - t) / (x (1 - x)) / 3 */
  CHECK_NEAR(tt_at(ct_grad(x), 0), (0.2 - 0.0) / (0.2 * 0.8) / 3, 1e-6);
  ct_release(x);
  ct_release(t);
}



TEST(loss_errors_and_edges) {
  double xv[4] = {0.1, 0.2, 0.3, 0.4};
  int64_t s22[2] = {2, 2}, s3 = 3, s2 = 2;
  ct_tensor *x = tt_from(xv, 2, s22, CT_FLOAT32);
  int64_t tv[2] = {0, 5};
  ct_tensor *t = ct_from_buffer(tv, CT_INT64, 1, &s2, ct_opts_dtype(CT_INT64));
  CHECK_ERR_PTR(ct_nll_loss(x, t, NULL, CT_REDUCTION_MEAN, -100), "Target 5 is out of bounds.");
  CHECK(ct_last_status() == CT_ERR_INDEX);
  CHECK_ERR_PTR(ct_cross_entropy(x, t, NULL, CT_REDUCTION_MEAN, -100, 0.0), "Target 5 is out of bounds.");
  /* an ignored target may be out of range */
  ct_tensor *l = ct_nll_loss(x, t, NULL, CT_REDUCTION_SUM, 5);
  CHECK(l && fabs(tt_at(l, 0) + 0.1) < 1e-6);
  ct_reduction r;
  CHECK_ERR(ct_reduction_parse("avg", &r), "avg is not a valid value for reduction");
  CHECK(ct_last_status() == CT_ERR_VALUE);
  CHECK_ERR_PTR(ct_mse_loss(x, NULL, CT_REDUCTION_MEAN), "expected a tensor");
  int64_t ov[3] = {0, 2, 1};
  ct_tensor *o = ct_from_buffer(ov, CT_INT64, 1, &s3, ct_opts_dtype(CT_INT64));
  ct_tensor *oh = ct_one_hot(o, -1);
  CHECK(oh && ct_ndim(oh) == 2 && ct_size(oh, 1) == 3 && ct_tensor_dtype(oh) == CT_INT64);
  CHECK(tt_at(oh, 0) == 1 && tt_at(oh, 5) == 1 && tt_at(oh, 7) == 1 && tt_at(oh, 1) == 0);
  CHECK_ERR_PTR(ct_one_hot(o, 2), "Class values must be smaller than num_classes.");
  CHECK_ERR_PTR(ct_one_hot(x, 2), "one_hot is only applicable to index tensor.");
  ct_release(l), ct_release(x), ct_release(t), ct_release(o), ct_release(oh);
}

/* cross_entropy against ct_one_hot_unchecked's probabilities (the --cuda-graph loss) equals
 * cross_entropy with the class indices, value and gradient; an index out of range is an
 * all-zero row, not an error (it is documented as the caller's to check). */
TEST(loss_one_hot_unchecked_cross_entropy) {
  int64_t s34[2] = {3, 4}, s3 = 3;
  uint64_t rs = 7;
  ct_tensor *x = tt_rand(&rs, 2, s34, CT_FLOAT32, 2.0, 0.0, true), *x2 = ct_detach(x);
  ct_requires_grad_(x2, true);
  int64_t tv[3] = {2, 0, 3}, bad[3] = {1, 4, -1};
  ct_tensor *t = ct_from_buffer(tv, CT_INT64, 1, &s3, ct_opts_dtype(CT_INT64));
  ct_tensor *tb = ct_from_buffer(bad, CT_INT64, 1, &s3, ct_opts_dtype(CT_INT64));
  ct_tensor *oh = ct_one_hot_unchecked(t, 4, CT_FLOAT32);
  CHECK(oh && ct_tensor_dtype(oh) == CT_FLOAT32 && ct_size(oh, 0) == 3 && ct_size(oh, 1) == 4);
  CHECK(tt_at(oh, 2) == 1 && tt_at(oh, 4) == 1 && tt_at(oh, 11) == 1 && tt_at(oh, 0) == 0);
  ct_tensor *a = ct_cross_entropy(x, t, NULL, CT_REDUCTION_MEAN, -100, 0.0);
  ct_tensor *b = ct_cross_entropy(x2, oh, NULL, CT_REDUCTION_MEAN, -100, 0.0);
  CHECK(a && b);
  CHECK_NEAR(tt_at(a, 0), tt_at(b, 0), 1e-6 * fabs(tt_at(a, 0)));
  CHECK_OK(ct_backward(a, NULL, false, false));
  CHECK_OK(ct_backward(b, NULL, false, false));
  for (int64_t i = 0; i < 12; i++) CHECK_NEAR(tt_at(ct_grad(x), i), tt_at(ct_grad(x2), i), 1e-6);
  ct_tensor *ohb = ct_one_hot_unchecked(tb, 4, CT_FLOAT32);
  CHECK(ohb && tt_at(ohb, 1) == 1);
  for (int64_t i = 4; i < 12; i++) CHECK(tt_at(ohb, i) == 0);
  CHECK_ERR_PTR(ct_one_hot_unchecked(x, 4, CT_FLOAT32), "one_hot is only applicable to index tensor.");
  ct_release(x), ct_release(x2), ct_release(t), ct_release(tb), ct_release(oh), ct_release(ohb);
  ct_release(a), ct_release(b);
}

TEST(loss_mse_double_backward) {
  double xv[3] = {0.5, -1.0, 2.0}, yv[3] = {0.0, 1.0, 1.5};
  ct_tensor *x = vec(xv, 3, CT_FLOAT64, true), *y = vec(yv, 3, CT_FLOAT64, false);
  ct_tensor *l = ct_mse_loss(x, y, CT_REDUCTION_SUM);
  ct_tensor *g = NULL;
  CHECK_OK(ct_autograd_grad(1, &l, NULL, 1, &x, &g, true, true, false));
  /* dl/dx = 2 (x - y); d/dx sum(dl/dx) = 2 */
  CHECK(g && fabs(tt_at(g, 1) + 4.0) < 1e-12);
  ct_tensor *s = ct_sum(g), *gg = NULL;
  CHECK_OK(ct_autograd_grad(1, &s, NULL, 1, &x, &gg, false, false, false));
  CHECK(gg && tt_at(gg, 0) == 2.0 && tt_at(gg, 2) == 2.0);
  ct_release(l), ct_release(g), ct_release(s), ct_release(gg), ct_release(x), ct_release(y);
}
