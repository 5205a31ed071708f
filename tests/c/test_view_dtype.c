/* ct_view_dtype (Tensor.view(dtype)): geometry and messages of PyTorch 1.13 (values printed by
 * PyTorch for the same calls; the Python suite tests/python/test_ops_extra.py compares directly). */
#include "test.h"

static int geom(const ct_tensor *v, int nd, const int64_t *shape, const int64_t *stride, int64_t off) {
  if (!v || ct_ndim(v) != nd || ct_storage_offset(v) != off) return 0;
  for (int d = 0; d < nd; d++)
    if (ct_shape(v)[d] != shape[d] || ct_stride(v, d) != stride[d]) return 0;
  return 1;
}

TEST(view_dtype_geometry_and_bits) {
  int64_t s2[2] = {2, 4};
  ct_tensor *x = ct_ones(2, s2, ct_opts());
  /* same size: same geometry, the bits of 1.0f */
  ct_tensor *i = ct_view_dtype(x, CT_INT32);
  int64_t st4[2] = {4, 1};
  CHECK(geom(i, 2, s2, st4, 0) && ct_tensor_dtype(i) == CT_INT32);
  CHECK(i && tt_at(i, 5) == 1065353216.0);
  CHECK(i && ct_shares_storage(i, x) && ct_is_view(i) && !ct_requires_grad(i));
  /* larger element: last dim halves; smaller: it doubles */
  ct_tensor *d = ct_view_dtype(x, CT_FLOAT64);
  int64_t sd[2] = {2, 2}, std_[2] = {2, 1};
  CHECK(geom(d, 2, sd, std_, 0));
  ct_tensor *h = ct_view_dtype(x, CT_INT16);
  int64_t sh[2] = {2, 8}, sth[2] = {8, 1};
  CHECK(geom(h, 2, sh, sth, 0));
  /* a write through the view is seen by the base (one storage, one version counter) */
  uint64_t v0 = ct_version(x);
  CHECK_OK(ct_fill_(i, ct_si(0)));
  CHECK(tt_at(x, 3) == 0.0 && ct_version(x) != v0);
  /* offsets and outer strides divide by the ratio */
  ct_options fo = ct_opts_dtype(CT_FLOAT32);
  ct_tensor *a = ct_arange(ct_si(0), ct_si(12), ct_si(1), &fo);
  ct_tensor *n = a ? ct_narrow(a, 0, 2, 8) : NULL;
  ct_tensor *nd = n ? ct_view_dtype(n, CT_FLOAT64) : NULL;
  int64_t s4 = 4, st1 = 1;
  CHECK(geom(nd, 1, &s4, &st1, 1));
  ct_release(nd);
  ct_release(n);
  ct_release(a);
  ct_release(h);
  ct_release(d);
  ct_release(i);
  ct_release(x);
}

TEST(view_dtype_errors_match_pytorch) {
  int64_t s2[2] = {4, 4}, s3[2] = {3, 3};
  ct_tensor *z = ct_scalar_tensor(ct_sf(1.0), ct_opts());
  CHECK_ERR_PTR(ct_view_dtype(z, CT_FLOAT64), "self.dim() cannot be 0 to view Float as Double (different element sizes)");
  ct_tensor *x = ct_ones(2, s2, ct_opts());
  ct_tensor *t = ct_t(x);
  CHECK_ERR_PTR(ct_view_dtype(t, CT_FLOAT64),
                "self.stride(-1) must be 1 to view Float as Double (different element sizes), but got 4");
  CHECK_ERR_PTR(ct_view_dtype(t, CT_INT16),
                "self.stride(-1) must be 1 to view Float as Short (different element sizes), but got 4");
  ct_tensor *y = ct_ones(2, s3, ct_opts());
  CHECK_ERR_PTR(ct_view_dtype(y, CT_FLOAT64),
                "self.size(-1) must be divisible by 2 to view Float as Double (different element sizes), but got 3");
  ct_tensor *c = ct_narrow(x, 1, 0, 2); /* [4, 2] with strides (4, 1): fine */
  ct_tensor *cv = c ? ct_view_dtype(c, CT_FLOAT64) : NULL;
  CHECK(cv && ct_size(cv, 0) == 4 && ct_size(cv, 1) == 1);
  int64_t s43[2] = {4, 3};
  ct_tensor *w = ct_ones(2, s43, ct_opts());
  ct_tensor *wn = w ? ct_narrow(w, 1, 0, 2) : NULL;
  CHECK_ERR_PTR(ct_view_dtype(wn, CT_FLOAT64),
                "self.stride(0) must be divisible by 2 to view Float as Double (different element sizes), but got 3");
  CHECK_ERR_PTR(ct_view_dtype(NULL, CT_FLOAT64), "");
  CHECK_ERR_PTR(ct_view_dtype(x, (ct_dtype)99), "invalid dtype");
  ct_release(wn);
  ct_release(w);
  ct_release(cv);
  ct_release(c);
  ct_release(y);
  ct_release(t);
  ct_release(x);
  ct_release(z);
}
