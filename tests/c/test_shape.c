/* Tests of the shape family: joins, splits (views), flips, rolls, repeats, pads, grids. */
#include "test.h"
#include <stdlib.h>

static ct_tensor *st_range(int nd, const int64_t *shape, ct_dtype dt) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (double)i;
  ct_tensor *t = tt_from(v, nd, shape, dt);
  free(v);
  return t;
}

/* Checks t's values (row-major) against v. */
static int st_vals(const ct_tensor *t, int n, const double *v) {
  if (!t || ct_numel(t) != n) return 0;
  for (int i = 0; i < n; i++)
    if (tt_at(t, i) != v[i]) return 0;
  return 1;
}

static bool st_shape(const ct_tensor *t, int nd, const int64_t *s) {
  if (!t || ct_ndim(t) != nd) return false;
  for (int d = 0; d < nd; d++)
    if (ct_shape(t)[d] != s[d]) return false;
  return true;
}

TEST(shape_cat_basic_promote_skip) {
  int64_t s23[2] = {2, 3}, s21[2] = {2, 1}, s0[1] = {0};
  ct_tensor *a = st_range(2, s23, CT_FLOAT32), *b = st_range(2, s21, CT_INT64), *e = ct_zeros(1, s0, ct_opts_dtype(CT_FLOAT64));
  const ct_tensor *ab[3] = {a, b, e};
  ct_tensor *c = ct_cat(3, ab, 1); /* float32 + int64 + float64 [0] (skipped, but promotes) */
  int64_t s24[2] = {2, 4};
  CHECK(st_shape(c, 2, s24) && ct_tensor_dtype(c) == CT_FLOAT64);
  double v[8] = {0, 1, 2, 0, 3, 4, 5, 1};
  CHECK(st_vals(c, 8, v));
  const ct_tensor *aa[2] = {a, a};
  ct_tensor *c0 = ct_cat(2, aa, -2);
  int64_t s43[2] = {4, 3};
  CHECK(st_shape(c0, 2, s43) && tt_at(c0, 11) == 5);
  /* many inputs (more than the op's input slots) */
  const ct_tensor *many[20];
  for (int i = 0; i < 20; i++) many[i] = a;
  ct_tensor *cm = ct_cat(20, many, 0);
  CHECK(cm && ct_shape(cm)[0] == 40 && tt_at(cm, 59) == 5);
  /* non-contiguous inputs */
  ct_tensor *at = ct_t(a);
  const ct_tensor *tt[2] = {at, at};
  ct_tensor *ct2 = ct_cat(2, tt, 1);
  double v2[12] = {0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5};
  CHECK(st_vals(ct2, 12, v2));
  ct_release(a); ct_release(b); ct_release(e); ct_release(c); ct_release(c0); ct_release(cm); ct_release(at);
  ct_release(ct2);
}

TEST(shape_cat_errors) {
  int64_t s23[2] = {2, 3}, s24[2] = {2, 4}, s3[1] = {3};
  ct_tensor *a = ct_ones(2, s23, ct_opts()), *b = ct_ones(2, s24, ct_opts()), *v = ct_ones(1, s3, ct_opts());
  ct_tensor *z = ct_scalar_tensor(ct_sf(1), ct_opts());
  const ct_tensor *ab[2] = {a, b}, *av[2] = {a, v}, *az[2] = {a, z};
  CHECK_ERR_PTR(ct_cat(0, ab, 0), "torch.cat(): expected a non-empty list of Tensors");
  CHECK_ERR_PTR(ct_cat(2, ab, 0), "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the list.");
  CHECK_ERR_PTR(ct_cat(2, av, 0), "Tensors must have same number of dimensions: got 2 and 1");
  CHECK_ERR_PTR(ct_cat(2, az, 0), "zero-dimensional tensor (at position 1) cannot be concatenated");
  CHECK_ERR_PTR(ct_cat(2, ab, 2), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  CHECK(ct_last_status() == CT_ERR_INDEX);
  CHECK_ERR_PTR(ct_stack(2, ab, 0), "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1");
  ct_release(a); ct_release(b); ct_release(v); ct_release(z);
}

TEST(shape_cat_backward) {
  int64_t s23[2] = {2, 3}, s21[2] = {2, 1};
  ct_tensor *a = st_range(2, s23, CT_FLOAT64), *b = st_range(2, s21, CT_FLOAT64);
  ct_requires_grad_(a, true);
  ct_requires_grad_(b, true);
  const ct_tensor *ab[2] = {a, b};
  ct_tensor *c = ct_cat(2, ab, 1);
  CHECK(ct_grad_fn_name(c) && !strcmp(ct_grad_fn_name(c), "CatBackward0"));
  ct_tensor *w = st_range(2, (int64_t[]){2, 4}, CT_FLOAT64), *p = ct_mul(c, w), *l = ct_sum(p);
  CHECK_OK(ct_backward(l, NULL, false, false));
  double ga[6] = {0, 1, 2, 4, 5, 6}, gb[2] = {3, 7};
  CHECK(st_vals(ct_grad(a), 6, ga));
  CHECK(st_vals(ct_grad(b), 2, gb));
  ct_release(a); ct_release(b); ct_release(c); ct_release(w); ct_release(p); ct_release(l);
}

TEST(shape_stack_family) {
  int64_t s2[1] = {2}, s23[2] = {2, 3};
  ct_tensor *a = st_range(1, s2, CT_FLOAT32), *m = st_range(2, s23, CT_FLOAT32);
  const ct_tensor *aa[2] = {a, a};
  ct_tensor *s = ct_stack(2, aa, 1), *h = ct_hstack(2, aa), *v = ct_vstack(2, aa), *d = ct_dstack(2, aa);
  int64_t e22[2] = {2, 2}, e4[1] = {4}, e122[3] = {1, 2, 2};
  CHECK(st_shape(s, 2, e22) && st_shape(h, 1, e4) && st_shape(v, 2, e22) && st_shape(d, 3, e122));
  double sv[4] = {0, 0, 1, 1};
  CHECK(st_vals(s, 4, sv));
  const ct_tensor *mm[2] = {m, m};
  ct_tensor *hm = ct_hstack(2, mm);
  int64_t e26[2] = {2, 6};
  CHECK(st_shape(hm, 2, e26));
  CHECK_ERR_PTR(ct_hstack(0, mm), "hstack expects a non-empty TensorList");
  CHECK_ERR_PTR(ct_stack(0, mm, 0), "stack expects a non-empty TensorList");
  ct_release(a); ct_release(m); ct_release(s); ct_release(h); ct_release(v); ct_release(d); ct_release(hm);
}

TEST(shape_split_family_views) {
  int64_t s5[2] = {5, 2};
  ct_tensor *t = st_range(2, s5, CT_FLOAT32);
  ct_tensor *out[8];
  int n = 0;
  CHECK_OK(ct_split(t, 2, 0, &n, out, 8));
  CHECK(n == 3 && ct_shape(out[2])[0] == 1 && ct_shares_storage(out[1], t) && tt_at(out[1], 0) == 4);
  for (int i = 0; i < n; i++) ct_release(out[i]);
  /* counting, too little room */
  CHECK_OK(ct_split(t, 2, 0, &n, NULL, 0));
  CHECK(n == 3);
  CHECK_ERR(ct_split(t, 2, 0, &n, out, 2), "3 results but room for 2");
  int64_t sz[2] = {1, 4};
  CHECK_OK(ct_split_sizes(t, 2, sz, 0, &n, out, 8));
  CHECK(n == 2 && ct_shape(out[1])[0] == 4);
  for (int i = 0; i < n; i++) ct_release(out[i]);
  CHECK_OK(ct_chunk(t, 3, 0, &n, out, 8));
  CHECK(n == 3 && ct_shape(out[0])[0] == 2 && ct_shape(out[2])[0] == 1);
  for (int i = 0; i < n; i++) ct_release(out[i]);
  CHECK_OK(ct_tensor_split(t, 3, 0, &n, out, 8));
  CHECK(n == 3 && ct_shape(out[0])[0] == 2 && ct_shape(out[1])[0] == 2 && ct_shape(out[2])[0] == 1);
  for (int i = 0; i < n; i++) ct_release(out[i]);
  int64_t idx[4] = {1, 5, 3, 9};
  CHECK_OK(ct_tensor_split_indices(t, 4, idx, 0, &n, out, 8));
  CHECK(n == 5 && ct_shape(out[0])[0] == 1 && ct_shape(out[1])[0] == 4 && ct_shape(out[2])[0] == 0 &&
        ct_shape(out[3])[0] == 2 && ct_shape(out[4])[0] == 0);
  for (int i = 0; i < n; i++) ct_release(out[i]);
  CHECK_OK(ct_unbind(t, 1, &n, out, 8));
  CHECK(n == 2 && ct_ndim(out[1]) == 1 && tt_at(out[1], 2) == 5 && ct_shares_storage(out[1], t));
  for (int i = 0; i < n; i++) ct_release(out[i]);
  ct_tensor *sc = ct_scalar_tensor(ct_sf(1), ct_opts());
  CHECK_ERR(ct_split(t, -1, 0, &n, out, 8), "split expects split_size be non-negative, but got split_size=-1");
  CHECK_ERR(ct_split(t, 0, 0, &n, out, 8), "split_size can only be 0 if dimension size is 0, but got dimension size of 5");
  CHECK_ERR(ct_split(sc, 1, 0, &n, out, 8), "split expects at least a 1-dimensional tensor");
  int64_t bad[2] = {2, 2};
  CHECK_ERR(ct_split_sizes(t, 2, bad, 0, &n, out, 8), "split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 0), but got split_sizes=[2, 2]");
  CHECK_ERR(ct_chunk(t, 0, 0, &n, out, 8), "chunk expects `chunks` to be greater than 0, got: 0");
  CHECK_ERR(ct_tensor_split(t, 0, 0, &n, out, 8), "number of sections must be larger than 0, got 0");
  CHECK_ERR(ct_unbind(sc, 0, &n, out, 8), "Dimension specified as 0 but tensor has no dimensions");
  /* gradients flow through split pieces */
  ct_tensor *x = st_range(2, s5, CT_FLOAT64);
  ct_requires_grad_(x, true);
  CHECK_OK(ct_split(x, 2, 0, &n, out, 8));
  ct_tensor *l = ct_sum(out[1]);
  CHECK_OK(ct_backward(l, NULL, false, false));
  double gx[10] = {0, 0, 0, 0, 1, 1, 1, 1, 0, 0};
  CHECK(st_vals(ct_grad(x), 10, gx));
  for (int i = 0; i < n; i++) ct_release(out[i]);
  ct_release(l); ct_release(x); ct_release(t); ct_release(sc);
}

TEST(shape_flip_roll_rot90) {
  int64_t s23[2] = {2, 3};
  ct_tensor *t = st_range(2, s23, CT_INT32);
  int64_t d0 = 0, d1 = 1, both[2] = {0, 1};
  ct_tensor *f0 = ct_flip(t, 1, &d0), *f01 = ct_flip(t, 2, both);
  double vf0[6] = {3, 4, 5, 0, 1, 2}, vf01[6] = {5, 4, 3, 2, 1, 0};
  CHECK(st_vals(f0, 6, vf0) && st_vals(f01, 6, vf01) && ct_tensor_dtype(f0) == CT_INT32);
  int64_t sh1 = 1, shn = -1;
  ct_tensor *r1 = ct_roll(t, 1, &sh1, 1, &d1), *rf = ct_roll(t, 1, &shn, 0, NULL);
  double vr1[6] = {2, 0, 1, 5, 3, 4}, vrf[6] = {1, 2, 3, 4, 5, 0};
  CHECK(st_vals(r1, 6, vr1) && st_vals(rf, 6, vrf));
  ct_tensor *r90 = ct_rot90(t, 1, 2, both);
  double v90[6] = {2, 5, 1, 4, 0, 3};
  int64_t s32[2] = {3, 2};
  CHECK(st_shape(r90, 2, s32) && st_vals(r90, 6, v90));
  CHECK_ERR_PTR(ct_flip(t, 2, (int64_t[]){0, 0}), "dim 0 appears multiple times in the list of dims");
  CHECK_ERR_PTR(ct_roll(t, 2, both, 1, &d0), "shifts and dimensions must align. shifts: 2, dims:1");
  CHECK_ERR_PTR(ct_roll(t, 0, NULL, 0, NULL), "`shifts` required");
  CHECK_ERR_PTR(ct_rot90(t, 1, 1, both), "expected total rotation dims == 2, but got dims = 1");
  CHECK_ERR_PTR(ct_rot90(t, 1, 2, (int64_t[]){0, 0}), "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0");
  /* roll backward rolls back */
  ct_tensor *x = st_range(2, s23, CT_FLOAT64);
  ct_requires_grad_(x, true);
  ct_tensor *y = ct_roll(x, 1, &sh1, 1, &d1), *w = st_range(2, s23, CT_FLOAT64), *p = ct_mul(y, w), *l = ct_sum(p);
  CHECK(!strcmp(ct_grad_fn_name(y), "RollBackward0"));
  CHECK_OK(ct_backward(l, NULL, false, false));
  double gx[6] = {1, 2, 0, 4, 5, 3};
  CHECK(st_vals(ct_grad(x), 6, gx));
  ct_release(t); ct_release(f0); ct_release(f01); ct_release(r1); ct_release(rf); ct_release(r90);
  ct_release(x); ct_release(y); ct_release(w); ct_release(p); ct_release(l);
}

TEST(shape_repeat_tile_interleave) {
  int64_t s2[1] = {2}, s22[2] = {2, 2};
  ct_tensor *t = st_range(1, s2, CT_FLOAT64);
  int64_t r23[2] = {2, 3};
  ct_tensor *r = ct_repeat(t, 2, r23);
  double vr[12] = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  int64_t s26[2] = {2, 6};
  CHECK(st_shape(r, 2, s26) && st_vals(r, 12, vr));
  ct_tensor *m = st_range(2, s22, CT_FLOAT64);
  int64_t two = 2;
  ct_tensor *tl = ct_tile(m, 1, &two);
  double vt[8] = {0, 1, 0, 1, 2, 3, 2, 3};
  CHECK(st_vals(tl, 8, vt));
  ct_tensor *ri = ct_repeat_interleave(m, 2, 0), *rn = ct_repeat_interleave(m, 2, CT_NO_DIM);
  double vri[8] = {0, 1, 0, 1, 2, 3, 2, 3}, vrn[8] = {0, 0, 1, 1, 2, 2, 3, 3};
  CHECK(st_vals(ri, 8, vri) && st_vals(rn, 8, vrn) && ct_ndim(rn) == 1);
  double rv[2] = {1, 2};
  ct_tensor *reps = tt_from(rv, 1, s2, CT_INT64), *rt = ct_repeat_interleave_tensor(m, reps, 1);
  double vrt[6] = {0, 1, 1, 2, 3, 3};
  CHECK(st_vals(rt, 6, vrt));
  ct_tensor *idx = ct_repeat_interleave_index(reps);
  double vidx[3] = {0, 1, 1};
  CHECK(st_vals(idx, 3, vidx) && ct_tensor_dtype(idx) == CT_INT64);
  CHECK_ERR_PTR(ct_repeat(m, 1, &two), "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  CHECK_ERR_PTR(ct_repeat(m, 2, (int64_t[]){2, -1}), "Trying to create tensor with negative dimension -2: [4, -2]");
  CHECK_ERR_PTR(ct_repeat_interleave(m, -1, 0), "repeats can not be negative");
  double rv3[3] = {1, 2, 3};
  ct_tensor *reps3 = tt_from(rv3, 1, (int64_t[]){3}, CT_INT64);
  CHECK_ERR_PTR(ct_repeat_interleave_tensor(m, reps3, 0), "repeats must have the same size as input along dim");
  /* gradients: repeat sums blocks; repeat_interleave sums segments */
  ct_tensor *x = st_range(2, s22, CT_FLOAT64);
  ct_requires_grad_(x, true);
  ct_tensor *y = ct_repeat(x, 3, (int64_t[]){2, 1, 3}), *w = st_range(3, (int64_t[]){2, 2, 6}, CT_FLOAT64);
  ct_tensor *p = ct_mul(y, w), *l = ct_sum(p);
  CHECK(!strcmp(ct_grad_fn_name(y), "RepeatBackward0"));
  CHECK_OK(ct_backward(l, NULL, false, false));
  /* x[0,0] appears at w indices (b, 0, 0|2|4) for b = 0, 1: 0+2+4+12+14+16 */
  CHECK_NEAR(tt_at(ct_grad(x), 0), 48, 1e-12);
  ct_tensor *x2 = st_range(2, s22, CT_FLOAT64);
  ct_requires_grad_(x2, true);
  ct_tensor *y2 = ct_repeat_interleave_tensor(x2, reps, 1), *w2 = st_range(2, (int64_t[]){2, 3}, CT_FLOAT64);
  ct_tensor *p2 = ct_mul(y2, w2), *l2 = ct_sum(p2);
  CHECK_OK(ct_backward(l2, NULL, false, false));
  double g2[4] = {0, 3, 3, 9};
  CHECK(st_vals(ct_grad(x2), 4, g2));
  ct_release(t); ct_release(r); ct_release(m); ct_release(tl); ct_release(ri); ct_release(rn); ct_release(reps);
  ct_release(rt); ct_release(idx); ct_release(reps3); ct_release(x); ct_release(y); ct_release(w); ct_release(p);
  ct_release(l); ct_release(x2); ct_release(y2); ct_release(w2); ct_release(p2); ct_release(l2);
}

TEST(shape_tril_triu) {
  int64_t s33[2] = {3, 3};
  ct_tensor *t = st_range(2, s33, CT_FLOAT32);
  ct_tensor *l = ct_tril(t, 0), *u = ct_triu(t, 1), *lb = ct_tril(t, -1);
  double vl[9] = {0, 0, 0, 3, 4, 0, 6, 7, 8}, vu[9] = {0, 1, 2, 0, 0, 5, 0, 0, 0}, vlb[9] = {0, 0, 0, 3, 0, 0, 6, 7, 0};
  CHECK(st_vals(l, 9, vl) && st_vals(u, 9, vu) && st_vals(lb, 9, vlb));
  ct_tensor *tt = ct_t(t), *lt = ct_tril(tt, 0);
  double vlt[9] = {0, 0, 0, 1, 4, 0, 2, 5, 8};
  CHECK(st_vals(lt, 9, vlt));
  ct_tensor *c = ct_clone(t);
  CHECK_OK(ct_triu_(c, 0));
  double vc[9] = {0, 1, 2, 0, 4, 5, 0, 0, 8};
  CHECK(st_vals(c, 9, vc));
  ct_tensor *b = ct_ones(2, s33, ct_opts_dtype(CT_BOOL)), *bl = ct_tril(b, 0);
  CHECK(bl && ct_tensor_dtype(bl) == CT_BOOL && tt_at(bl, 1) == 0 && tt_at(bl, 3) == 1);
  ct_tensor *v = ct_ones(1, (int64_t[]){3}, ct_opts());
  CHECK_ERR_PTR(ct_tril(v, 0), "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
  ct_release(t); ct_release(l); ct_release(u); ct_release(lb); ct_release(tt); ct_release(lt); ct_release(c);
  ct_release(b); ct_release(bl); ct_release(v);
}

TEST(shape_pad_modes) {
  int64_t s13[2] = {1, 3};
  ct_tensor *t = st_range(2, s13, CT_FLOAT64);
  int64_t p[2] = {2, 1};
  ct_tensor *c = ct_pad(t, 2, p, NULL, 9), *r = ct_pad(t, 2, p, "reflect", 0), *e = ct_pad(t, 2, p, "replicate", 0);
  double vc[6] = {9, 9, 0, 1, 2, 9}, vr[6] = {2, 1, 0, 1, 2, 1}, ve[6] = {0, 0, 0, 1, 2, 2};
  CHECK(st_vals(c, 6, vc) && st_vals(r, 6, vr) && st_vals(e, 6, ve));
  ct_tensor *t3 = st_range(3, (int64_t[]){1, 1, 3}, CT_FLOAT64), *ci = ct_pad(t3, 2, p, "circular", 0);
  double vci[6] = {1, 2, 0, 1, 2, 0};
  CHECK(st_vals(ci, 6, vci));
  int64_t neg[4] = {-1, 0, 1, 0};
  ct_tensor *cn = ct_pad(t, 4, neg, "constant", 0);
  double vcn[4] = {0, 0, 1, 2};
  int64_t s22[2] = {2, 2};
  CHECK(st_shape(cn, 2, s22) && st_vals(cn, 4, vcn));
  CHECK_ERR_PTR(ct_pad(t, 1, p, NULL, 0), "Padding length must be divisible by 2");
  CHECK_ERR_PTR(ct_pad(t, 2, (int64_t[]){3, 1}, "reflect", 0), "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (3, 1) at dimension 1 of input [1, 3]");
  CHECK_ERR_PTR(ct_pad(t, 4, (int64_t[]){1, 1, 1, 1}, "reflect", 0), "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  CHECK_ERR_PTR(ct_pad(t, 2, p, "circular", 0), "Invalid padding size, expected 0 but got 2");
  CHECK_ERR_PTR(ct_pad(t, 2, p, "foo", 0), "Unrecognised padding mode foo");
  /* reflect backward accumulates */
  ct_tensor *x = st_range(2, s13, CT_FLOAT64);
  ct_requires_grad_(x, true);
  ct_tensor *y = ct_pad(x, 2, p, "reflect", 0), *l = ct_sum(y);
  CHECK(!strcmp(ct_grad_fn_name(y), "ReflectionPad1DBackward0"));
  CHECK_OK(ct_backward(l, NULL, false, false));
  double gx[3] = {1, 3, 2};
  CHECK(st_vals(ct_grad(x), 3, gx));
  ct_release(t); ct_release(c); ct_release(r); ct_release(e); ct_release(t3); ct_release(ci); ct_release(cn);
  ct_release(x); ct_release(y); ct_release(l);
}

TEST(shape_meshgrid_broadcast_tensors) {
  ct_tensor *a = st_range(1, (int64_t[]){2}, CT_FLOAT32), *b = st_range(1, (int64_t[]){3}, CT_FLOAT32);
  const ct_tensor *ab[2] = {a, b};
  ct_tensor *out[4];
  int n;
  CHECK_OK(ct_meshgrid(2, ab, "ij", &n, out, 4));
  int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
  CHECK(n == 2 && st_shape(out[0], 2, s23) && tt_at(out[0], 3) == 1 && tt_at(out[1], 4) == 1 && ct_shares_storage(out[0], a));
  ct_release(out[0]); ct_release(out[1]);
  CHECK_OK(ct_meshgrid(2, ab, "xy", &n, out, 4));
  CHECK(n == 2 && st_shape(out[0], 2, s32) && tt_at(out[0], 1) == 1 && tt_at(out[1], 2) == 1);
  ct_release(out[0]); ct_release(out[1]);
  CHECK_ERR(ct_meshgrid(2, ab, "foo", &n, out, 4), "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: foo");
  ct_tensor *c = st_range(2, (int64_t[]){2, 1}, CT_FLOAT32);
  const ct_tensor *cb[2] = {c, b};
  CHECK_OK(ct_broadcast_tensors(2, cb, &n, out, 4));
  CHECK(n == 2 && st_shape(out[0], 2, s23) && st_shape(out[1], 2, s23));
  ct_release(out[0]); ct_release(out[1]);
  const ct_tensor *ca[2] = {c, ct_t(c)};
  CHECK_OK(ct_broadcast_tensors(2, ca, &n, out, 4));
  ct_release(out[0]); ct_release(out[1]);
  ct_tensor *d = st_range(1, (int64_t[]){3}, CT_FLOAT32), *e = st_range(2, (int64_t[]){3, 2}, CT_FLOAT32);
  const ct_tensor *de[2] = {e, c};
  CHECK_ERR(ct_broadcast_tensors(2, de, &n, out, 4), "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0");
  ct_release(a); ct_release(b); ct_release(c); ct_release(d); ct_release(e);
}

TEST(shape_zero_size_and_0dim) {
  ct_tensor *e = ct_zeros(2, (int64_t[]){0, 3}, ct_opts()), *f = ct_ones(2, (int64_t[]){2, 3}, ct_opts());
  const ct_tensor *ef[2] = {e, f};
  ct_tensor *c = ct_cat(2, ef, 0);
  CHECK(c && ct_shape(c)[0] == 2);
  ct_tensor *fl = ct_flip(e, 1, (int64_t[]){0}), *rp = ct_repeat(e, 2, (int64_t[]){2, 2});
  CHECK(fl && ct_numel(fl) == 0 && rp && ct_shape(rp)[0] == 0 && ct_shape(rp)[1] == 6);
  ct_tensor *s = ct_scalar_tensor(ct_sf(4), ct_opts());
  ct_tensor *fs = ct_flip(s, 1, (int64_t[]){0}), *rs = ct_roll(s, 1, (int64_t[]){3}, 0, NULL);
  CHECK(fs && ct_ndim(fs) == 0 && tt_at(fs, 0) == 4 && rs && ct_ndim(rs) == 0);
  ct_tensor *rr = ct_repeat(s, 2, (int64_t[]){2, 3});
  CHECK(rr && ct_numel(rr) == 6 && tt_at(rr, 5) == 4);
  const ct_tensor *ss[2] = {s, s};
  ct_tensor *st = ct_stack(2, ss, 0);
  CHECK(st && ct_ndim(st) == 1 && ct_shape(st)[0] == 2);
  ct_tensor *ri = ct_repeat_interleave(s, 3, CT_NO_DIM);
  CHECK(ri && ct_ndim(ri) == 1 && ct_shape(ri)[0] == 3);
  ct_release(e); ct_release(f); ct_release(c); ct_release(fl); ct_release(rp); ct_release(s); ct_release(fs);
  ct_release(rs); ct_release(rr); ct_release(st); ct_release(ri);
}
