/* Index ops: gather/scatter, index_*, masked_*, take/put, nonzero, advanced indexing. */
#include "test.h"
#include <stdlib.h>

static ct_tensor *mk(ct_dtype dt, int nd, const int64_t *shape, const double *v) { return tt_from(v, nd, shape, dt); }
static ct_tensor *arangef(int64_t n, ct_dtype dt) {
  ct_options o = ct_opts_dtype(dt);
  return ct_arange(ct_si(0), ct_si(n), ct_si(1), &o);
}
static ct_tensor *rs(ct_tensor *t, int nd, const int64_t *shape) {
  ct_tensor *r = ct_reshape(t, nd, shape);
  ct_release(t);
  return r;
}
static ct_tensor *l1(int n, const int64_t *v) {
  int64_t s = n;
  ct_options o = ct_opts_dtype(CT_INT64);
  return ct_from_buffer(v, CT_INT64, 1, &s, o);
}
/* all elements equal exp[0..n) and the shape matches */
static int vals(const ct_tensor *t, int nd, const int64_t *shape, const double *exp) {
  if (!t || ct_ndim(t) != nd) return 0;
  int64_t n = 1;
  for (int d = 0; d < nd; d++) {
    if (ct_shape(t)[d] != shape[d]) return 0;
    n *= shape[d];
  }
  for (int64_t i = 0; i < n; i++)
    if (!(tt_at(t, i) == exp[i] || (isnan(tt_at(t, i)) && isnan(exp[i])))) return 0;
  return 1;
}

TEST(index_select_basic) {
  int64_t s[2] = {3, 4};
  ct_tensor *x = rs(arangef(12, CT_FLOAT32), 2, s);
  ct_tensor *i = l1(3, (int64_t[]){2, 0, 2});
  ct_tensor *r = ct_index_select(x, 0, i);
  CHECK(vals(r, 2, (int64_t[]){3, 4}, (double[]){8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
  ct_release(r);
  r = ct_index_select(x, -1, i);
  CHECK(vals(r, 2, (int64_t[]){3, 3}, (double[]){2, 0, 2, 6, 4, 6, 10, 8, 10}));
  ct_release(r);
  /* int32 index and a transposed self */
  ct_tensor *i32 = ct_to_dtype(i, CT_INT32), *xt = ct_t(x);
  r = ct_index_select(xt, 1, i32);
  CHECK(vals(r, 2, (int64_t[]){4, 3}, (double[]){8, 0, 8, 9, 1, 9, 10, 2, 10, 11, 3, 11}));
  ct_release(r);
  /* errors */
  ct_tensor *bad = l1(1, (int64_t[]){3}), *neg = l1(1, (int64_t[]){-1});
  CHECK_ERR_PTR(ct_index_select(x, 0, bad), "index out of range in self");
  CHECK(ct_last_status() == CT_ERR_INDEX);
  CHECK_ERR_PTR(ct_index_select(x, 0, neg), "index out of range in self");
  ct_tensor *f = ct_to_dtype(i, CT_FLOAT32);
  CHECK_ERR_PTR(ct_index_select(x, 0, f), "index_select(): Expected dtype int32 or int64 for index");
  ct_tensor *i2 = ct_reshape(i, 2, (int64_t[]){3, 1});
  CHECK_ERR_PTR(ct_index_select(x, 0, i2), "Index is supposed to be a vector");
  CHECK_ERR_PTR(ct_index_select(x, 2, i), "Dimension out of range");
  /* empty index */
  ct_tensor *e = l1(0, NULL);
  r = ct_index_select(x, 0, e);
  CHECK(r && ct_shape(r)[0] == 0 && ct_shape(r)[1] == 4);
  ct_release(r);
  ct_release(e);
  ct_release(i2);
  ct_release(f);
  ct_release(bad);
  ct_release(neg);
  ct_release(i32);
  ct_release(xt);
  ct_release(i);
  ct_release(x);
}

TEST(index_select_backward) {
  int64_t s[2] = {3, 2};
  ct_tensor *x = rs(arangef(6, CT_FLOAT64), 2, s);
  CHECK_OK(ct_requires_grad_(x, true));
  ct_tensor *i = l1(3, (int64_t[]){2, 0, 2});
  ct_tensor *r = ct_index_select(x, 0, i);
  CHECK(r && strcmp(ct_grad_fn_name(r), "IndexSelectBackward0") == 0);
  ct_tensor *l = ct_sum(r);
  CHECK_OK(ct_backward(l, NULL, false, false));
  CHECK(vals(ct_grad(x), 2, s, (double[]){1, 1, 0, 0, 2, 2}));
  ct_release(l);
  ct_release(r);
  ct_release(i);
  ct_release(x);
}

TEST(gather_scatter_basic) {
  int64_t s[2] = {2, 3};
  ct_tensor *x = rs(arangef(6, CT_FLOAT32), 2, s);
  ct_tensor *idx = rs(l1(4, (int64_t[]){0, 2, 1, 1}), 2, (int64_t[]){2, 2});
  ct_tensor *g = ct_gather(x, 1, idx);
  CHECK(vals(g, 2, (int64_t[]){2, 2}, (double[]){0, 2, 4, 4}));
  ct_release(g);
  /* scatter with src larger than index, duplicates in scatter_add */
  ct_tensor *src = rs(ct_ones(1, (int64_t[]){6}, ct_opts_dtype(CT_FLOAT32)), 2, s);
  ct_tensor *sa = ct_scatter_add(x, 1, idx, src);
  CHECK(vals(sa, 2, s, (double[]){1, 1, 3, 3, 6, 5}));
  ct_tensor *sc = ct_scatter(x, 1, idx, src);
  CHECK(vals(sc, 2, s, (double[]){1, 1, 1, 3, 1, 5}));
  ct_tensor *sv = ct_scatter_value(x, 1, idx, ct_sf(-1));
  CHECK(vals(sv, 2, s, (double[]){-1, 1, -1, 3, -1, 5}));
  /* errors */
  ct_tensor *i32 = ct_to_dtype(idx, CT_INT32);
  CHECK_ERR_PTR(ct_gather(x, 1, i32), "gather(): Expected dtype int64 for index");
  CHECK_ERR_PTR(ct_scatter(x, 1, i32, src), "scatter(): Expected dtype int64 for index");
  ct_tensor *big = rs(l1(2, (int64_t[]){0, 5}), 2, (int64_t[]){1, 2});
  CHECK_ERR_PTR(ct_gather(x, 1, big), "index 5 is out of bounds for dimension 1 with size 3");
  CHECK_ERR_PTR(ct_scatter_add(x, 1, big, src), "index 5 is out of bounds for dimension 1 with size 3");
  ct_tensor *neg = rs(l1(1, (int64_t[]){-1}), 2, (int64_t[]){1, 1});
  CHECK_ERR_PTR(ct_gather(x, 0, neg), "index -1 is out of bounds for dimension 0 with size 2");
  ct_tensor *flat = l1(2, (int64_t[]){0, 1});
  CHECK_ERR_PTR(ct_gather(x, 0, flat), "Index tensor must have the same number of dimensions as input tensor");
  ct_tensor *wide = rs(l1(4, (int64_t[]){0, 0, 0, 0}), 2, (int64_t[]){1, 4});
  CHECK_ERR_PTR(ct_gather(x, 0, wide), "Size does not match at dimension 1 expected index [1, 4] to be smaller than self [2, 3] apart from dimension 0");
  ct_tensor *xd = ct_to_dtype(x, CT_FLOAT64);
  CHECK_ERR_PTR(ct_scatter(x, 1, idx, xd), "scatter(): Expected self.dtype to be equal to src.dtype");
  ct_tensor *small = ct_ones(2, (int64_t[]){1, 1}, ct_opts_dtype(CT_FLOAT32));
  CHECK_ERR_PTR(ct_scatter(x, 1, idx, small), "Expected index [2, 2] to be smaller than self [2, 3] apart from dimension 1 and to be smaller size than src [1, 1]");
  ct_release(small);
  ct_release(xd);
  ct_release(wide);
  ct_release(flat);
  ct_release(neg);
  ct_release(big);
  ct_release(i32);
  ct_release(sa);
  ct_release(sc);
  ct_release(sv);
  ct_release(src);
  ct_release(idx);
  ct_release(x);
}

TEST(gather_scatter_backward) {
  int64_t s[2] = {2, 3};
  ct_tensor *x = rs(arangef(6, CT_FLOAT64), 2, s);
  ct_tensor *src = rs(arangef(4, CT_FLOAT64), 2, (int64_t[]){2, 2}); /* src larger than index: PyTorch's backward refuses it too */
  CHECK_OK(ct_requires_grad_(x, true));
  CHECK_OK(ct_requires_grad_(src, true));
  ct_tensor *idx = rs(l1(4, (int64_t[]){0, 2, 1, 1}), 2, (int64_t[]){2, 2});
  ct_tensor *g = ct_gather(x, 1, idx);
  ct_tensor *l = ct_sum(g);
  CHECK_OK(ct_backward(l, NULL, false, false));
  CHECK(vals(ct_grad(x), 2, s, (double[]){1, 0, 1, 0, 2, 0}));
  ct_release(l);
  ct_release(g);
  CHECK_OK(ct_set_grad(x, NULL));
  ct_tensor *sc = ct_scatter(x, 1, idx, src);
  ct_tensor *w = rs(arangef(6, CT_FLOAT64), 2, s);
  ct_tensor *m = ct_mul(sc, w);
  l = ct_sum(m);
  CHECK_OK(ct_backward(l, NULL, false, false));
  CHECK(vals(ct_grad(x), 2, s, (double[]){0, 1, 0, 3, 0, 5}));
  CHECK(vals(ct_grad(src), 2, (int64_t[]){2, 2}, (double[]){0, 2, 4, 4}));
  ct_release(l);
  ct_release(m);
  ct_release(w);
  ct_release(sc);
  ct_release(idx);
  ct_release(src);
  ct_release(x);
}

TEST(scatter_reduce_modes) {
  ct_tensor *self = mk(CT_FLOAT32, 1, (int64_t[]){3}, (double[]){1, 7, 3});
  ct_tensor *idx = l1(4, (int64_t[]){0, 0, 1, 1});
  ct_tensor *src = mk(CT_FLOAT32, 1, (int64_t[]){4}, (double[]){4, 5, 6, 8});
  struct { const char *r; bool inc; double e[3]; } cases[] = {
    {"sum", true, {10, 21, 3}}, {"sum", false, {9, 14, 3}}, {"prod", true, {20, 336, 3}},
    {"prod", false, {20, 48, 3}}, {"mean", true, {10.0 / 3, 7, 3}}, {"mean", false, {4.5, 7, 3}},
    {"amax", true, {5, 8, 3}}, {"amax", false, {5, 8, 3}}, {"amin", true, {1, 6, 3}}, {"amin", false, {4, 6, 3}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    ct_tensor *r = ct_scatter_reduce(self, 0, idx, src, cases[k].r, cases[k].inc);
    CHECK(r != NULL);
    for (int j = 0; r && j < 3; j++) CHECK_NEAR(tt_at(r, j), cases[k].e[j], 1e-6);
    ct_release(r);
  }
  /* integer mean floors */
  ct_tensor *si = mk(CT_INT64, 1, (int64_t[]){3}, (double[]){-1, -7, 3});
  ct_tensor *ssrc = mk(CT_INT64, 1, (int64_t[]){4}, (double[]){-4, -5, -6, -8});
  ct_tensor *r = ct_scatter_reduce(si, 0, idx, ssrc, "mean", true);
  CHECK(vals(r, 1, (int64_t[]){3}, (double[]){-4, -7, 3}));
  ct_release(r);
  CHECK_ERR_PTR(ct_scatter_reduce(self, 0, idx, src, "max", true), "reduce argument must be either sum, prod, mean, amax or amin");
  ct_release(si);
  ct_release(ssrc);
  ct_release(self);
  ct_release(idx);
  ct_release(src);
}

TEST(index_add_copy_fill) {
  int64_t s[2] = {3, 2};
  ct_tensor *x = rs(arangef(6, CT_FLOAT32), 2, s);
  ct_tensor *i = l1(2, (int64_t[]){2, 2});
  ct_tensor *src = ct_ones(2, (int64_t[]){2, 2}, ct_opts_dtype(CT_FLOAT32));
  ct_tensor *r = ct_index_add(x, 0, i, src, ct_sf(2.5));
  CHECK(vals(r, 2, s, (double[]){0, 1, 2, 3, 9, 10}));
  ct_release(r);
  ct_tensor *i1 = l1(2, (int64_t[]){2, 0});
  r = ct_index_copy(x, 0, i1, src);
  CHECK(vals(r, 2, s, (double[]){1, 1, 2, 3, 1, 1}));
  ct_release(r);
  ct_tensor *in = l1(1, (int64_t[]){-1});
  r = ct_index_fill(x, 1, in, ct_sf(7));
  CHECK(vals(r, 2, s, (double[]){0, 7, 2, 7, 4, 7}));
  ct_release(r);
  /* in place bumps the version */
  ct_tensor *y = ct_clone(x);
  uint64_t v0 = ct_version(y);
  CHECK_OK(ct_index_fill_(y, 0, in, ct_si(-1)));
  CHECK(ct_version(y) > v0);
  CHECK(vals(y, 2, s, (double[]){0, 1, 2, 3, -1, -1}));
  ct_release(y);
  /* errors */
  CHECK_ERR_PTR(ct_index_copy(x, 0, in, src), "index_copy_(): Number of indices (1) should be equal to source.size(dim) (2)");
  CHECK_ERR_PTR(ct_index_add(x, 0, in, src, ct_si(1)), "index_add_(): Number of indices (1) should be equal to source.size(dim): (2), for dim: 0");
  ct_tensor *i5 = l1(2, (int64_t[]){5, 0});
  CHECK_ERR_PTR(ct_index_add(x, 0, i5, src, ct_si(1)), "index out of range in self");
  CHECK_ERR_PTR(ct_index_copy(x, 0, i5, src), "index_copy_(): index 5 is out of bounds for dimension 0 with size 3");
  CHECK_ERR_PTR(ct_index_fill(x, 0, i5, ct_si(1)), "index 5 is out of bounds for dimension 0 with size 3");
  ct_tensor *si = ct_to_dtype(src, CT_INT64);
  CHECK_ERR_PTR(ct_index_add(x, 0, i, si, ct_si(1)), "index_add_(): self (Float) and source (Long) must have the same scalar type");
  ct_tensor *i32 = ct_to_dtype(i, CT_INT32);
  CHECK_ERR_PTR(ct_index_fill(x, 0, i32, ct_si(1)), "index_fill_(): Expected dtype int64 for index.");
  CHECK_ERR_PTR(ct_index_copy(x, 0, i32, src), "index_copy_(): Expected a long tensor for index, but got Int");
  r = ct_index_add(x, 0, i32, src, ct_si(1)); /* int32 allowed */
  CHECK(vals(r, 2, s, (double[]){0, 1, 2, 3, 6, 7}));
  ct_release(r);
  ct_release(i32);
  ct_release(si);
  ct_release(i5);
  ct_release(in);
  ct_release(i1);
  ct_release(src);
  ct_release(i);
  ct_release(x);
}

TEST(index_inplace_autograd) {
  ct_tensor *leaf = ct_zeros(1, (int64_t[]){3}, ct_opts_dtype(CT_FLOAT32));
  CHECK_OK(ct_requires_grad_(leaf, true));
  ct_tensor *i = l1(1, (int64_t[]){1});
  CHECK_ERR(ct_index_fill_(leaf, 0, i, ct_si(1)), "a leaf Variable that requires grad is being used in an in-place operation.");
  ct_index_item it = ct_itensor(i);
  ct_tensor *v = ct_ones(1, (int64_t[]){1}, ct_opts_dtype(CT_FLOAT32));
  CHECK_ERR(ct_index_put_(leaf, 1, &it, v, false), "a leaf Variable that requires grad is being used in an in-place operation.");
  /* a non-leaf records history */
  ct_tensor *y = ct_mul_scalar(leaf, ct_sf(2));
  CHECK_OK(ct_index_put_(y, 1, &it, v, false));
  CHECK(ct_grad_fn_name(y) != NULL);
  ct_tensor *l = ct_sum(y);
  CHECK_OK(ct_backward(l, NULL, false, false));
  CHECK(vals(ct_grad(leaf), 1, (int64_t[]){3}, (double[]){2, 0, 2}));
  ct_release(l);
  ct_release(y);
  /* value requiring grad flows into a plain tensor */
  ct_tensor *z = ct_zeros(1, (int64_t[]){3}, ct_opts_dtype(CT_FLOAT32));
  ct_tensor *vv = ct_ones(1, (int64_t[]){1}, ct_opts_dtype(CT_FLOAT32));
  CHECK_OK(ct_requires_grad_(vv, true));
  ct_index_item two[1] = {ct_itensor(i)};
  CHECK_OK(ct_index_put_(z, 1, two, vv, true));
  CHECK(ct_requires_grad(z));
  l = ct_sum(z);
  CHECK_OK(ct_backward(l, NULL, false, false));
  CHECK(vals(ct_grad(vv), 1, (int64_t[]){1}, (double[]){1}));
  ct_release(l);
  ct_release(z);
  ct_release(vv);
  ct_release(v);
  ct_release(i);
  ct_release(leaf);
}

TEST(masked_ops) {
  ct_tensor *x = mk(CT_FLOAT32, 1, (int64_t[]){3}, (double[]){1, 2, 3});
  ct_tensor *m = mk(CT_BOOL, 2, (int64_t[]){2, 1}, (double[]){1, 0});
  ct_tensor *r = ct_masked_fill(x, m, ct_sf(-1));
  CHECK(vals(r, 2, (int64_t[]){2, 3}, (double[]){-1, -1, -1, 1, 2, 3}));
  ct_release(r);
  CHECK_ERR(ct_masked_fill_(x, m, ct_si(0)), "output with shape [3] doesn't match the broadcast shape [2, 3]");
  ct_tensor *m3 = mk(CT_BOOL, 1, (int64_t[]){3}, (double[]){1, 0, 1});
  ct_tensor *v0 = mk(CT_FLOAT32, 0, NULL, (double[]){9});
  r = ct_masked_fill_tensor(x, m3, v0);
  CHECK(vals(r, 1, (int64_t[]){3}, (double[]){9, 2, 9}));
  ct_release(r);
  ct_tensor *v1 = mk(CT_FLOAT32, 1, (int64_t[]){1}, (double[]){9});
  CHECK_ERR_PTR(ct_masked_fill_tensor(x, m3, v1), "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).");
  ct_tensor *mf = ct_to_dtype(m3, CT_FLOAT32);
  CHECK_ERR_PTR(ct_masked_select(x, mf), "masked_select: expected BoolTensor or ByteTensor for mask");
  r = ct_masked_select(x, m3);
  CHECK(vals(r, 1, (int64_t[]){2}, (double[]){1, 3}));
  ct_release(r);
  ct_tensor *src = arangef(10, CT_FLOAT32);
  r = ct_masked_scatter(x, m, src);
  CHECK(vals(r, 2, (int64_t[]){2, 3}, (double[]){0, 1, 2, 1, 2, 3}));
  ct_release(r);
  ct_tensor *s2 = arangef(1, CT_FLOAT32);
  CHECK_ERR_PTR(ct_masked_scatter(x, m3, s2), "Number of elements of source < number of ones in mask");
  /* gradients */
  ct_tensor *xg = mk(CT_FLOAT64, 1, (int64_t[]){3}, (double[]){1, 2, 3});
  CHECK_OK(ct_requires_grad_(xg, true));
  r = ct_masked_select(xg, m);
  CHECK(r && ct_numel(r) == 3);
  ct_tensor *l = ct_sum(r);
  CHECK_OK(ct_backward(l, NULL, false, false));
  CHECK(vals(ct_grad(xg), 1, (int64_t[]){3}, (double[]){1, 1, 1}));
  ct_release(l);
  ct_release(r);
  ct_release(xg);
  ct_release(s2);
  ct_release(src);
  ct_release(mf);
  ct_release(v1);
  ct_release(v0);
  ct_release(m3);
  ct_release(m);
  ct_release(x);
}

TEST(take_put_nonzero) {
  int64_t s[2] = {2, 3};
  ct_tensor *x = rs(arangef(6, CT_INT64), 2, s);
  ct_tensor *xt = ct_t(x);
  ct_tensor *i = l1(3, (int64_t[]){-1, 0, 1});
  ct_tensor *r = ct_take(xt, i);
  CHECK(vals(r, 1, (int64_t[]){3}, (double[]){5, 0, 3}));
  ct_release(r);
  ct_tensor *bad = l1(1, (int64_t[]){6});
  CHECK_ERR_PTR(ct_take(x, bad), "out of range: tried to access index 6 on a tensor of 6 elements.");
  ct_tensor *src = mk(CT_INT64, 1, (int64_t[]){3}, (double[]){10, 20, 30});
  ct_tensor *dup = l1(3, (int64_t[]){1, 1, -1});
  r = ct_put(x, dup, src, true);
  CHECK(vals(r, 2, s, (double[]){0, 31, 2, 3, 4, 35}));
  ct_release(r);
  /* nonzero */
  ct_tensor *m = mk(CT_FLOAT32, 2, s, (double[]){0, 0.5, 0, -1, 0, 0});
  r = ct_nonzero(m);
  CHECK(vals(r, 2, (int64_t[]){2, 2}, (double[]){0, 1, 1, 0}));
  ct_release(r);
  ct_tensor *cols[CT_MAX_DIMS];
  int k = ct_nonzero_tuple(m, cols);
  CHECK(k == 2);
  if (k == 2) {
    CHECK(vals(cols[0], 1, (int64_t[]){2}, (double[]){0, 1}));
    CHECK(vals(cols[1], 1, (int64_t[]){2}, (double[]){1, 0}));
    ct_release(cols[0]);
    ct_release(cols[1]);
  }
  ct_tensor *z0 = mk(CT_FLOAT32, 0, NULL, (double[]){3});
  r = ct_nonzero(z0);
  CHECK(r && ct_ndim(r) == 2 && ct_shape(r)[0] == 1 && ct_shape(r)[1] == 0);
  ct_release(r);
  /* take_along_dim broadcasts */
  ct_tensor *fx = rs(arangef(6, CT_FLOAT32), 2, s);
  ct_tensor *ti = rs(l1(2, (int64_t[]){2, 0}), 2, (int64_t[]){1, 2});
  r = ct_take_along_dim(fx, ti, true, 1);
  CHECK(vals(r, 2, (int64_t[]){2, 2}, (double[]){2, 0, 5, 3}));
  ct_release(r);
  ct_release(ti);
  ct_release(fx);
  ct_release(z0);
  ct_release(m);
  ct_release(dup);
  ct_release(src);
  ct_release(bad);
  ct_release(i);
  ct_release(xt);
  ct_release(x);
}

TEST(advanced_index_basic_views) {
  int64_t s[3] = {2, 3, 4};
  ct_tensor *x = rs(arangef(24, CT_FLOAT32), 3, s);
  /* x[1, ::2, None, -1] */
  ct_index_item it[4] = {ct_ii(1), ct_is(false, 0, false, 0, true, 2), ct_inone(), ct_ii(-1)};
  ct_tensor *r = ct_index(x, 4, it);
  CHECK(vals(r, 2, (int64_t[]){2, 1}, (double[]){15, 23}));
  CHECK(r && ct_shares_storage(r, x) && ct_is_view(r));
  ct_release(r);
  /* x[..., 1:3] */
  ct_index_item e[2] = {ct_iellipsis(), ct_is(true, 1, true, 3, false, 1)};
  r = ct_index(x, 2, e);
  CHECK(r && ct_ndim(r) == 3 && ct_shape(r)[2] == 2 && tt_at(r, 0) == 1 && ct_shares_storage(r, x));
  ct_release(r);
  /* x[...] is an alias */
  r = ct_index(x, 1, e);
  CHECK(r && ct_is_view(r) && ct_numel(r) == 24);
  ct_release(r);
  /* errors */
  ct_index_item four[4] = {ct_ii(0), ct_ii(0), ct_ii(0), ct_ii(0)};
  CHECK_ERR_PTR(ct_index(x, 4, four), "too many indices for tensor of dimension 3");
  ct_index_item oob[2] = {ct_ii(1), ct_ii(5)};
  CHECK_ERR_PTR(ct_index(x, 2, oob), "index 5 is out of bounds for dimension 1 with size 3");
  CHECK(ct_last_status() == CT_ERR_INDEX);
  ct_index_item st0 = ct_is(false, 0, false, 0, true, 0);
  CHECK_ERR_PTR(ct_index(x, 1, &st0), "slice step cannot be zero");
  /* PyTorch accepts two ellipses: x[..., 0, ...] selects on the last dim */
  ct_index_item two_e[3] = {ct_iellipsis(), ct_ii(0), ct_iellipsis()};
  ct_tensor *te = ct_index(x, 3, two_e);
  CHECK(te && ct_ndim(te) == 2 && ct_shape(te)[1] == 3 && tt_at(te, 1) == 4);
  ct_release(te);
  ct_release(x);
}

TEST(advanced_index_tensors) {
  int64_t s[3] = {2, 3, 4};
  ct_tensor *x = rs(arangef(24, CT_FLOAT32), 3, s);
  ct_tensor *a = l1(2, (int64_t[]){1, 0}), *b = l1(2, (int64_t[]){0, -1});
  /* adjacent: x[:, a, b] -> [2, 2] */
  ct_index_item adj[3] = {ct_is_all(), ct_itensor(a), ct_itensor(b)};
  ct_tensor *r = ct_index(x, 3, adj);
  CHECK(vals(r, 2, (int64_t[]){2, 2}, (double[]){4, 3, 16, 15}));
  CHECK(r && !ct_shares_storage(r, x));
  ct_release(r);
  /* separated: x[a, :, b] -> [2, 3] */
  ct_index_item sep[3] = {ct_itensor(a), ct_is_all(), ct_itensor(b)};
  r = ct_index(x, 3, sep);
  CHECK(vals(r, 2, (int64_t[]){2, 3}, (double[]){12, 16, 20, 3, 7, 11}));
  ct_release(r);
  /* x[1:, a, None, ..., mask] as in Python: shape [2, 1, 1] */
  ct_tensor *mask = mk(CT_BOOL, 1, (int64_t[]){4}, (double[]){1, 0, 1, 0});
  ct_index_item mix[5] = {ct_is(true, 1, false, 0, false, 1), ct_itensor(a), ct_inone(), ct_iellipsis(), ct_itensor(mask)};
  r = ct_index(x, 5, mix);
  CHECK(vals(r, 3, (int64_t[]){2, 1, 1}, (double[]){16, 14}));
  ct_release(r);
  /* errors */
  ct_tensor *c3 = l1(3, (int64_t[]){0, 1, 2});
  ct_index_item bc[2] = {ct_itensor(a), ct_itensor(c3)};
  CHECK_ERR_PTR(ct_index(x, 2, bc), "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]");
  ct_tensor *big = l1(1, (int64_t[]){10});
  ct_index_item ob[2] = {ct_is_all(), ct_itensor(big)};
  CHECK_ERR_PTR(ct_index(x, 2, ob), "index 10 is out of bounds for dimension 0 with size 3");
  ct_tensor *m3 = mk(CT_BOOL, 1, (int64_t[]){3}, (double[]){1, 0, 1});
  ct_index_item bm = ct_itensor(m3);
  CHECK_ERR_PTR(ct_index(x, 1, &bm), "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3, 4] at index 0");
  ct_tensor *a32 = ct_to_dtype(a, CT_INT32);
  ct_index_item i32 = ct_itensor(a32);
  CHECK_ERR_PTR(ct_index(x, 1, &i32), "tensors used as indices must be long, byte or bool tensors");
  /* backward of a gather with duplicates accumulates */
  ct_tensor *xg = ct_to_dtype(x, CT_FLOAT64);
  ct_tensor *leaf = ct_detach(xg);
  CHECK_OK(ct_requires_grad_(leaf, true));
  ct_tensor *dd = l1(3, (int64_t[]){1, 1, 0});
  ct_index_item di[2] = {ct_itensor(dd), ct_ii(2)};
  r = ct_index(leaf, 2, di);
  CHECK(r && ct_ndim(r) == 2 && ct_shape(r)[0] == 3);
  ct_tensor *l = ct_sum(r);
  CHECK_OK(ct_backward(l, NULL, false, false));
  CHECK(ct_grad(leaf) && tt_at(ct_grad(leaf), 12 + 8) == 2 && tt_at(ct_grad(leaf), 8) == 1 && tt_at(ct_grad(leaf), 0) == 0);
  ct_release(l);
  ct_release(r);
  ct_release(dd);
  ct_release(leaf);
  ct_release(xg);
  ct_release(a32);
  ct_release(m3);
  ct_release(big);
  ct_release(c3);
  ct_release(mask);
  ct_release(a);
  ct_release(b);
  ct_release(x);
}

TEST(advanced_setitem) {
  int64_t s[2] = {3, 4};
  ct_tensor *x = ct_zeros(2, s, ct_opts_dtype(CT_FLOAT32));
  ct_tensor *i = l1(3, (int64_t[]){0, 2, 0});
  ct_tensor *v = mk(CT_FLOAT32, 1, (int64_t[]){4}, (double[]){1, 2, 3, 4});
  ct_index_item it = ct_itensor(i);
  uint64_t v0 = ct_version(x);
  CHECK_OK(ct_index_put_(x, 1, &it, v, true));
  CHECK(ct_version(x) > v0);
  CHECK(vals(x, 2, s, (double[]){2, 4, 6, 8, 0, 0, 0, 0, 1, 2, 3, 4}));
  /* x[:, 1] = 7 (basic: through the view) */
  ct_index_item col[2] = {ct_is_all(), ct_ii(1)};
  CHECK_OK(ct_index_put_scalar_(x, 2, col, ct_si(7)));
  CHECK(vals(x, 2, s, (double[]){2, 7, 6, 8, 0, 7, 0, 0, 1, 7, 3, 4}));
  /* mask assignment x[x > ...] style with a bool mask */
  ct_tensor *m = mk(CT_BOOL, 2, s, (double[]){1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
  ct_index_item mi = ct_itensor(m);
  CHECK_OK(ct_index_put_scalar_(x, 1, &mi, ct_sf(-1)));
  CHECK(tt_at(x, 0) == -1 && tt_at(x, 11) == -1 && tt_at(x, 1) == 7);
  /* errors */
  ct_tensor *vd = ct_to_dtype(v, CT_FLOAT64);
  CHECK_ERR(ct_index_put_(x, 1, &it, vd, false), "Index put requires the source and destination dtypes match, got Float for the destination and Double for the source.");
  ct_tensor *v2 = mk(CT_FLOAT32, 1, (int64_t[]){2}, (double[]){1, 2});
  CHECK_ERR(ct_index_put_(x, 1, &it, v2, false), "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of shape [3, 4]");
  /* basic setitem converts dtypes, like copy_ */
  ct_index_item row = ct_ii(1);
  CHECK_OK(ct_index_put_(x, 1, &row, vd, false));
  CHECK(tt_at(x, 4) == 1 && tt_at(x, 7) == 4);
  ct_release(v2);
  ct_release(vd);
  ct_release(m);
  ct_release(v);
  ct_release(i);
  ct_release(x);
}

TEST(index_double_backward) {
  /* d/dx of sum((x[idx])^2 ... ) via create_graph: grad = 2*x scattered, second derivative constant */
  ct_tensor *x = mk(CT_FLOAT64, 1, (int64_t[]){3}, (double[]){1, 2, 3});
  CHECK_OK(ct_requires_grad_(x, true));
  ct_tensor *i = l1(2, (int64_t[]){2, 2});
  ct_tensor *g = ct_index_select(x, 0, i);
  ct_tensor *sq = ct_mul(g, g);
  ct_tensor *l = ct_sum(sq);
  ct_tensor *gx = NULL;
  CHECK_OK(ct_autograd_grad(1, &l, NULL, 1, &x, &gx, true, true, false));
  CHECK(vals(gx, 1, (int64_t[]){3}, (double[]){0, 0, 12}));
  ct_tensor *l2 = gx ? ct_sum(gx) : NULL;
  if (l2) CHECK_OK(ct_backward(l2, NULL, false, false));
  CHECK(vals(ct_grad(x), 1, (int64_t[]){3}, (double[]){0, 0, 4}));
  ct_release(l2);
  ct_release(gx);
  ct_release(l);
  ct_release(sq);
  ct_release(g);
  ct_release(i);
  ct_release(x);
}
