/* Views: each shares storage with its input, with PyTorch 1.13's shape, strides and
 * storage offset (expected values printed by PyTorch for the same calls), and version
 * counters are shared. Values and gradients of every view op are also checked by the
 * parity cases in tests/parity/cases_view.py. */
#include "test.h"

static int geom_is(const ct_tensor *v, int nd, const int64_t *shape, const int64_t *stride, int64_t offset) {
  if (!v || ct_ndim(v) != nd || ct_storage_offset(v) != offset) return 0;
  for (int d = 0; d < nd; d++)
    if (ct_shape(v)[d] != shape[d] || (shape[d] > 1 && ct_stride(v, d) != stride[d])) return 0;
  return 1;
}

#define EXPECT_VIEW(expr, base, nd, SH, ST, OFF)                                                      \
  do {                                                                                               \
    ct_tensor *_v = (expr);                                                                          \
    int64_t _sh[] = SH, _st[] = ST;                                                                  \
    if (!_v) ct_test_fail(__FILE__, __LINE__, "%s failed: %s", #expr, ct_last_error());             \
    else {                                                                                           \
      if (!geom_is(_v, nd, _sh, _st, OFF)) {                                                         \
        char a[128], b[128];                                                                         \
        ct_test_fail(__FILE__, __LINE__, "%s: shape %s strides %s offset %lld", #expr,                \
                     ct_shape_str(ct_ndim(_v), ct_shape(_v), a, sizeof a),                           \
                     ct_shape_str(ct_ndim(_v), ct_strides(_v), b, sizeof b), (long long)ct_storage_offset(_v)); \
      }                                                                                              \
      if (!ct_shares_storage(_v, base)) ct_test_fail(__FILE__, __LINE__, "%s does not share storage", #expr); \
      if (!ct_is_view(_v)) ct_test_fail(__FILE__, __LINE__, "%s is not a view", #expr);              \
      ct_release(_v);                                                                                \
    }                                                                                                \
  } while (0)
#define L(...) {__VA_ARGS__}
/* ct_shape_str lives in the library's internal header; declare it here for messages */
const char *ct_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);

TEST(views_strides_match_pytorch) {
  int64_t s234[3] = {2, 3, 4}, s31[2] = {3, 1}, s7 = 7, s38[2] = {3, 8}, s34[2] = {3, 4}, s10 = 10;
  ct_tensor *x = ct_zeros(3, s234, ct_opts());
  EXPECT_VIEW(ct_transpose(x, 0, 2), x, 3, L(4, 3, 2), L(1, 4, 12), 0);
  EXPECT_VIEW(ct_permute(x, 3, (int64_t[]){1, 2, 0}), x, 3, L(3, 4, 2), L(4, 1, 12), 0);
  EXPECT_VIEW(ct_diagonal(x, 0, 0, 2), x, 2, L(3, 2), L(4, 13), 0);
  EXPECT_VIEW(ct_select(x, 1, 2), x, 2, L(2, 4), L(12, 1), 8);
  EXPECT_VIEW(ct_slice(x, 1, 1, INT64_MAX, 2), x, 3, L(2, 1, 4), L(12, 8, 1), 4);
  EXPECT_VIEW(ct_narrow(x, 2, 1, 2), x, 3, L(2, 3, 2), L(12, 4, 1), 1);
  EXPECT_VIEW(ct_unsqueeze(x, 1), x, 4, L(2, 1, 3, 4), L(12, 12, 4, 1), 0);
  EXPECT_VIEW(ct_flatten(x, 1, -1), x, 2, L(2, 12), L(12, 1), 0);
  EXPECT_VIEW(ct_movedim(x, 1, (int64_t[]){0}, (int64_t[]){2}), x, 3, L(3, 4, 2), L(4, 1, 12), 0);
  EXPECT_VIEW(ct_mT(x), x, 3, L(2, 4, 3), L(12, 1, 4), 0);
  EXPECT_VIEW(ct_alias(x), x, 3, L(2, 3, 4), L(12, 4, 1), 0);
  ct_tensor *c = ct_zeros(2, s31, ct_opts());
  EXPECT_VIEW(ct_expand(c, 3, s234), c, 3, L(2, 3, 4), L(0, 1, 0), 0);
  ct_tensor *z = ct_zeros(0, NULL, ct_opts());
  EXPECT_VIEW(ct_expand(z, 2, (int64_t[]){3, 2}), z, 2, L(3, 2), L(0, 0), 0);
  ct_tensor *u = ct_zeros(1, &s7, ct_opts());
  EXPECT_VIEW(ct_unfold(u, 0, 3, 2), u, 2, L(3, 3), L(2, 1), 0);
  ct_tensor *u2 = ct_zeros(2, s38, ct_opts());
  EXPECT_VIEW(ct_unfold(u2, 1, 4, 2), u2, 3, L(3, 3, 4), L(8, 2, 1), 0);
  ct_tensor *m = ct_zeros(2, s34, ct_opts());
  EXPECT_VIEW(ct_diagonal(m, 1, 0, 1), m, 1, L(3), L(5), 1);
  EXPECT_VIEW(ct_diagonal(m, -1, 0, 1), m, 1, L(2), L(5), 4);
  ct_tensor *f = ct_zeros(1, &s10, ct_opts());
  EXPECT_VIEW(ct_as_strided(f, 2, (int64_t[]){2, 2}, (int64_t[]){3, 1}, 2), f, 2, L(2, 2), L(3, 1), 2);
  /* a transposed input: views keep following its strides */
  ct_tensor *xt = ct_transpose(x, 0, 1);
  EXPECT_VIEW(ct_unsqueeze(xt, 3), x, 4, L(3, 2, 4, 1), L(4, 12, 1, 1), 0);
  ct_tensor *m43 = ct_zeros(2, (int64_t[]){4, 3}, ct_opts());
  ct_tensor *mt = ct_t(m43);
  EXPECT_VIEW(ct_view(mt, 3, (int64_t[]){3, 2, 2}), m43, 3, L(3, 2, 2), L(1, 6, 3), 0);
  ct_tensor *s = ct_zeros(3, (int64_t[]){2, 1, 3}, ct_opts());
  EXPECT_VIEW(ct_squeeze(s), s, 2, L(2, 3), L(3, 1), 0);
  ct_release(mt);
  ct_release(m43);
  ct_release(s);
  ct_release(xt);
  ct_release(f);
  ct_release(m);
  ct_release(u2);
  ct_release(u);
  ct_release(z);
  ct_release(c);
  ct_release(x);
}

TEST(views_reshape_copies_only_when_needed) {
  int64_t s43[2] = {4, 3}, s12 = 12, s223[3] = {2, 2, 3};
  ct_tensor *a = ct_zeros(2, s43, ct_opts());
  ct_tensor *r = ct_reshape(a, 1, &s12);
  CHECK(r && ct_shares_storage(r, a));
  ct_tensor *at = ct_t(a);
  ct_tensor *r2 = ct_reshape(at, 1, &s12); /* PyTorch copies here */
  CHECK(r2 && !ct_shares_storage(r2, a) && ct_is_contiguous(r2));
  ct_tensor *r3 = ct_reshape(at, 3, (int64_t[]){3, 2, 2}); /* a view is possible: no copy */
  CHECK(r3 && ct_shares_storage(r3, a));
  CHECK_ERR_PTR(ct_view(at, 1, &s12), "view size is not compatible with input tensor's size and stride");
  ct_tensor *r4 = ct_reshape(a, 3, s223);
  CHECK(r4 && ct_shares_storage(r4, a) && ct_stride(r4, 0) == 6);
  /* zero-size tensors view anything of zero elements */
  ct_tensor *e = ct_zeros(2, (int64_t[]){0, 4}, ct_opts());
  ct_tensor *ev = ct_view(e, 3, (int64_t[]){2, 0, -1});
  CHECK(!ev); /* -1 with a zero-size is ambiguous */
  ct_tensor *ev2 = ct_view(e, 3, (int64_t[]){2, 0, 2});
  CHECK(ev2 && ct_numel(ev2) == 0);
  ct_release(ev2);
  ct_release(e);
  ct_release(r4);
  ct_release(r3);
  ct_release(r2);
  ct_release(at);
  ct_release(r);
  ct_release(a);
}

TEST(views_share_version_counter_and_data) {
  int64_t s23[2] = {2, 3};
  ct_tensor *a = ct_zeros(2, s23, ct_opts());
  ct_tensor *v = ct_select(a, 0, 1);
  ct_tensor *w = ct_t(a);
  uint64_t v0 = ct_version(a);
  CHECK(ct_version(v) == v0 && ct_version(w) == v0);
  CHECK_OK(ct_fill_(v, ct_sf(5)));
  CHECK(ct_version(a) == v0 + 1 && ct_version(w) == v0 + 1);
  CHECK_NEAR(tt_at(a, 3), 5, 0);
  CHECK_NEAR(tt_at(w, 1), 5, 0); /* w[0][1] = a[1][0] */
  CHECK_OK(ct_add_scalar_(w, ct_si(1)));
  CHECK(ct_version(v) == v0 + 2);
  CHECK_NEAR(tt_at(a, 0), 1, 0);
  /* views of views keep the root base */
  ct_tensor *vv = ct_narrow(v, 0, 1, 2);
  CHECK(ct_view_base(vv) == a && ct_view_base(v) == a);
  CHECK(!ct_is_view(a));
  ct_release(vv);
  ct_release(w);
  ct_release(v);
  ct_release(a);
}

TEST(views_errors) {
  int64_t s23[2] = {2, 3};
  ct_tensor *a = ct_zeros(2, s23, ct_opts());
  CHECK_ERR_PTR(ct_view(a, 2, (int64_t[]){4, 2}), "shape '[4, 2]' is invalid for input of size 6");
  CHECK_ERR_PTR(ct_view(a, 2, (int64_t[]){-1, -1}), "only one dimension can be inferred");
  CHECK_ERR_PTR(ct_view(a, 1, (int64_t[]){-3}), "invalid shape dimension -3");
  CHECK_ERR_PTR(ct_view(NULL, 1, (int64_t[]){6}), "expected a tensor, got NULL");
  CHECK_ERR_PTR(ct_view(a, 1, NULL), "shape is NULL");
  CHECK_ERR_PTR(ct_transpose(a, 0, 2), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  CHECK(ct_last_status() == CT_ERR_INDEX);
  CHECK_ERR_PTR(ct_select(a, 0, 2), "select(): index 2 out of range for tensor of size [2, 3] at dimension 0");
  CHECK(ct_last_status() == CT_ERR_INDEX);
  CHECK_ERR_PTR(ct_permute(a, 2, (int64_t[]){1, 1}), "duplicate dims are not allowed");
  CHECK_ERR_PTR(ct_permute(a, 2, NULL), "");
  CHECK_ERR_PTR(ct_expand(a, 2, (int64_t[]){4, 3}), "The expanded size of the tensor (4) must match the existing size (2) at non-singleton dimension 0");
  CHECK_ERR_PTR(ct_slice(a, 1, 0, 2, 0), "slice step cannot be zero");
  CHECK_ERR_PTR(ct_slice(a, 1, 0, 2, -1), "step must be greater than zero");
  CHECK_ERR_PTR(ct_narrow(a, 1, 2, 2), "start (2) + length (2) exceeds dimension size (3).");
  CHECK_ERR_PTR(ct_as_strided(a, 2, (int64_t[]){3, 3}, (int64_t[]){1, -1}, 0), "as_strided: Negative strides are not supported");
  CHECK_ERR_PTR(ct_as_strided(a, 1, (int64_t[]){7}, (int64_t[]){1}, 0), "out of bounds for storage of size");
  /* size * stride overflow must fail, not wrap */
  CHECK_ERR_PTR(ct_as_strided(a, 2, (int64_t[]){INT64_MAX / 2, 4}, (int64_t[]){4, 1}, 0), "");
  CHECK_ERR_PTR(ct_unflatten(a, 1, 2, (int64_t[]){2, 2}), "don't multiply up to the size of dim 1 (3)");
  CHECK_ERR_PTR(ct_squeeze_dim(a, 5), "Dimension out of range");
  CHECK_ERR_PTR(ct_diagonal(a, 0, 1, 1), "diagonal dimensions cannot be identical 1, 1");
  CHECK_ERR_PTR(ct_unfold(a, 1, 4, 1), "maximum size for tensor at dimension 1 is 3 but size is 4");
  /* 9 dims is more than ctorch supports: a clear error */
  ct_tensor *b = ct_zeros(1, (int64_t[]){1}, ct_opts());
  ct_tensor *cur = ct_retain(b);
  for (int k = 0; k < CT_MAX_DIMS - 1 && cur; k++) {
    ct_tensor *n = ct_unsqueeze(cur, 0);
    ct_release(cur);
    cur = n;
  }
  CHECK(cur && ct_ndim(cur) == CT_MAX_DIMS);
  CHECK_ERR_PTR(ct_unsqueeze(cur, 0), "");
  ct_release(cur);
  ct_release(b);
  ct_release(a);
}

TEST(views_zero_dim_and_empty) {
  ct_tensor *s = ct_scalar_tensor(ct_sf(3), ct_opts());
  ct_tensor *v = ct_view(s, 2, (int64_t[]){1, 1});
  CHECK(v && ct_numel(v) == 1 && ct_shares_storage(v, s));
  ct_tensor *back = ct_view(v, 0, NULL);
  CHECK(back && ct_ndim(back) == 0);
  CHECK_ERR_PTR(ct_select(s, 0, 0), "select() cannot be applied to a 0-dim tensor.");
  ct_tensor *t0 = ct_t(s);
  CHECK(t0 && ct_ndim(t0) == 0);
  ct_tensor *e = ct_zeros(2, (int64_t[]){0, 3}, ct_opts());
  ct_tensor *et = ct_transpose(e, 0, 1);
  CHECK(et && ct_size(et, 0) == 3 && ct_size(et, 1) == 0);
  ct_tensor *en = ct_narrow(e, 1, 1, 2);
  CHECK(en && ct_numel(en) == 0);
  ct_release(en);
  ct_release(et);
  ct_release(e);
  ct_release(t0);
  ct_release(back);
  ct_release(v);
  ct_release(s);
}
