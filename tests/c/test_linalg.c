/* Tests of the linalg family: matrix products, matmul's rules, einsum, gradients. */
#include "test.h"
#include <stdlib.h>

/* A tensor of deterministic values sin(0.37 i + seed) * 2, of dtype dt. */
static ct_tensor *lt_make(int nd, const int64_t *shape, ct_dtype dt, double seed) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) {
    double x = sin(0.37 * (double)i + seed) * 2;
    v[i] = ct_dtype_is_floating(dt) ? x : (double)(int)(x * 3);
  }
  ct_tensor *t = tt_from(v, nd, shape, dt);
  free(v);
  return t;
}

/* Naive double reference of a [M,K] @ [K,N] product read through any strides. */
static ct_tensor *naive_mm(const ct_tensor *a, const ct_tensor *b) {
  int64_t M = ct_shape(a)[0], K = ct_shape(a)[1], N = ct_shape(b)[1];
  double *x = malloc((size_t)(M * K + 1) * 8), *y = malloc((size_t)(K * N + 1) * 8), *z = calloc((size_t)(M * N + 1), 8);
  ct_copy_to_buffer(a, x, CT_FLOAT64, M * K);
  ct_copy_to_buffer(b, y, CT_FLOAT64, K * N);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++)
      for (int64_t k = 0; k < K; k++) z[i * N + j] += x[i * K + k] * y[k * N + j];
  int64_t s[2] = {M, N};
  ct_tensor *r = tt_from(z, 2, s, CT_FLOAT64);
  free(x);
  free(y);
  free(z);
  return r;
}

static bool shape_is(const ct_tensor *t, int nd, const int64_t *s) {
  if (!t || ct_ndim(t) != nd) return false;
  for (int d = 0; d < nd; d++)
    if (ct_shape(t)[d] != s[d]) return false;
  return true;
}

TEST(linalg_mm_values_dtypes) {
  int64_t sa[2] = {5, 7}, sb[2] = {7, 3};
  ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16, CT_INT8, CT_UINT8, CT_INT16, CT_INT32, CT_INT64};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    ct_tensor *a = lt_make(2, sa, dts[i], 0.1), *b = lt_make(2, sb, dts[i], 1.3);
    ct_tensor *c = ct_mm(a, b);
    CHECK(c && ct_tensor_dtype(c) == dts[i]);
    ct_tensor *ref = naive_mm(a, b);
    double tol = dts[i] == CT_FLOAT16 ? 2e-2 : dts[i] == CT_BFLOAT16 ? 1e-1 : 1e-5;
    if (ct_dtype_is_floating(dts[i])) {
      ct_tensor *c64 = ct_to_dtype(c, CT_FLOAT64);
      CHECK(tt_allclose(c64, ref, tol, tol));
      ct_release(c64);
    } else if (dts[i] == CT_INT64 || dts[i] == CT_INT32 || dts[i] == CT_INT16) {
      ct_tensor *c64 = ct_to_dtype(c, CT_FLOAT64);
      CHECK(tt_allclose(c64, ref, 0, 0)); /* small values: exact */
      ct_release(c64);
    }
    ct_release(a);
    ct_release(b);
    ct_release(c);
    ct_release(ref);
  }
}

TEST(linalg_mm_int8_wraps_like_cpp) {
  double va[2] = {100, 100}, vb[2] = {2, 1};
  int64_t sa[2] = {1, 2}, sb[2] = {2, 1};
  ct_tensor *a = tt_from(va, 2, sa, CT_INT8), *b = tt_from(vb, 2, sb, CT_INT8);
  ct_tensor *c = ct_mm(a, b);
  CHECK(c && tt_at(c, 0) == (double)(int8_t)300);
  ct_release(a);
  ct_release(b);
  ct_release(c);
}

TEST(linalg_mm_transposed_and_large) {
  /* large enough to tile and thread; operands transposed views (no copies) */
  int64_t sa[2] = {150, 300}, sb[2] = {90, 150};
  ct_tensor *a0 = lt_make(2, sa, CT_FLOAT32, 0.2), *b0 = lt_make(2, sb, CT_FLOAT32, 0.7);
  ct_tensor *a = ct_t(a0), *b = ct_t(b0); /* [300,150] @ [150,90] */
  CHECK(!ct_is_contiguous(a) && !ct_is_contiguous(b));
  ct_tensor *c = ct_mm(a, b), *ref = naive_mm(a, b), *c64 = ct_to_dtype(c, CT_FLOAT64);
  int64_t s[2] = {300, 90};
  CHECK(shape_is(c, 2, s));
  CHECK(tt_allclose(c64, ref, 1e-4, 1e-4));
  ct_tensor *ac = ct_contiguous(a), *bc = ct_contiguous(b), *c2 = ct_mm(ac, bc);
  CHECK(tt_allclose(c, c2, 0, 0)); /* fixed accumulation order: layout does not change bits */
  ct_release(a0); ct_release(b0); ct_release(a); ct_release(b); ct_release(c); ct_release(ref);
  ct_release(c64); ct_release(ac); ct_release(bc); ct_release(c2);
}

TEST(linalg_mm_float64_large) {
  int64_t sa[2] = {70, 260}, sb[2] = {260, 300};
  ct_tensor *a = lt_make(2, sa, CT_FLOAT64, 0.2), *b = lt_make(2, sb, CT_FLOAT64, 0.7);
  ct_tensor *c = ct_mm(a, b), *ref = naive_mm(a, b);
  CHECK(tt_allclose(c, ref, 1e-12, 1e-12));
  ct_release(a); ct_release(b); ct_release(c); ct_release(ref);
}

TEST(linalg_mm_zero_size) {
  int64_t sa[2] = {2, 0}, sb[2] = {0, 3}, s0[2] = {0, 4}, s4[2] = {4, 5};
  ct_tensor *a = ct_ones(2, sa, ct_opts()), *b = ct_ones(2, sb, ct_opts());
  ct_tensor *c = ct_mm(a, b);
  int64_t sc[2] = {2, 3};
  CHECK(shape_is(c, 2, sc) && tt_at(c, 0) == 0 && tt_at(c, 5) == 0);
  ct_tensor *z = ct_ones(2, s0, ct_opts()), *w = ct_ones(2, s4, ct_opts());
  ct_tensor *d = ct_mm(z, w);
  int64_t sd[2] = {0, 5};
  CHECK(shape_is(d, 2, sd));
  ct_release(a); ct_release(b); ct_release(c); ct_release(z); ct_release(w); ct_release(d);
}

TEST(linalg_errors) {
  int64_t s23[2] = {2, 3}, s45[2] = {4, 5}, s3[1] = {3}, s4[1] = {4};
  ct_tensor *a = ct_ones(2, s23, ct_opts()), *b = ct_ones(2, s45, ct_opts());
  ct_tensor *v3 = ct_ones(1, s3, ct_opts()), *v4 = ct_ones(1, s4, ct_opts());
  ct_tensor *d = ct_ones(2, s23, ct_opts_dtype(CT_FLOAT64)), *s = ct_scalar_tensor(ct_sf(1), ct_opts());
  ct_tensor *bo = ct_ones(2, s23, ct_opts_dtype(CT_BOOL)), *v3d = ct_ones(1, s3, ct_opts_dtype(CT_FLOAT64));
  ct_tensor *dt = ct_t(d);
  CHECK_ERR_PTR(ct_mm(a, b), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  CHECK_ERR_PTR(ct_matmul(s, a), "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
  CHECK_ERR_PTR(ct_mm(a, dt), "expected scalar type Float but found Double");
  CHECK_ERR_PTR(ct_dot(v3, v3d), "dot : expected both vectors to have same dtype, but found Float and Double");
  CHECK_ERR_PTR(ct_dot(v3, v4), "inconsistent tensor size");
  CHECK_ERR_PTR(ct_dot(a, v4), "1D tensors expected, but got 2D and 1D tensors");
  CHECK_ERR_PTR(ct_mv(a, v4), "size mismatch, got 2, 2x3,4");
  CHECK_ERR_PTR(ct_mm(v3, a), "self must be a matrix");
  CHECK_ERR_PTR(ct_mm(bo, ct_t(bo)), "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  CHECK_ERR_PTR(ct_matmul(v3, b), "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)");
  CHECK_ERR_PTR(ct_outer(v3, a), "outer: Expected 1-D argument vec2, but got 2-D");
  CHECK_ERR_PTR(ct_addmm(v3, a, ct_t(a), ct_si(1), ct_si(1)), "The expanded size of the tensor");
  CHECK_ERR_PTR(ct_addmm(d, a, ct_t(a), ct_si(1), ct_si(1)), "self and mat2 must have the same dtype");
  CHECK_ERR_PTR(ct_mm(NULL, a), "");
  ct_release(a); ct_release(b); ct_release(v3); ct_release(v4); ct_release(d); ct_release(s);
  ct_release(bo); ct_release(v3d); ct_release(dt);
}

TEST(linalg_matmul_shapes) {
  struct { int na; int64_t a[4]; int nb; int64_t b[4]; int nr; int64_t r[4]; } cs[] = {
    {1, {3}, 1, {3}, 0, {0}},
    {2, {2, 3}, 1, {3}, 1, {2}},
    {1, {3}, 2, {3, 4}, 1, {4}},
    {3, {5, 2, 3}, 1, {3}, 2, {5, 2}},
    {3, {5, 2, 3}, 2, {3, 4}, 3, {5, 2, 4}},
    {1, {3}, 3, {5, 3, 4}, 2, {5, 4}},
    {2, {2, 3}, 3, {5, 3, 4}, 3, {5, 2, 4}},
    {4, {2, 1, 2, 3}, 3, {5, 3, 4}, 4, {2, 5, 2, 4}},
    {3, {1, 2, 3}, 4, {2, 6, 3, 4}, 4, {2, 6, 2, 4}},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    ct_tensor *a = lt_make(cs[i].na, cs[i].a, CT_FLOAT64, 0.3), *b = lt_make(cs[i].nb, cs[i].b, CT_FLOAT64, 0.9);
    ct_tensor *r = ct_matmul(a, b);
    CHECK(shape_is(r, cs[i].nr, cs[i].r));
    ct_release(a); ct_release(b); ct_release(r);
  }
  /* one value check of the broadcast batched case against per-batch mm */
  int64_t sa[4] = {2, 1, 2, 3}, sb[3] = {5, 3, 4};
  ct_tensor *a = lt_make(4, sa, CT_FLOAT64, 0.3), *b = lt_make(3, sb, CT_FLOAT64, 0.9);
  ct_tensor *r = ct_matmul(a, b);
  ct_tensor *a1 = ct_select(a, 0, 1), *a11 = ct_select(a1, 0, 0), *b3 = ct_select(b, 0, 3);
  ct_tensor *m = ct_mm(a11, b3), *r1 = ct_select(r, 0, 1), *r13 = ct_select(r1, 0, 3);
  CHECK(tt_allclose(r13, m, 1e-12, 1e-12));
  ct_release(a); ct_release(b); ct_release(r); ct_release(a1); ct_release(a11); ct_release(b3);
  ct_release(m); ct_release(r1); ct_release(r13);
}

TEST(linalg_addmm_family) {
  int64_t s22[2] = {2, 2}, s23[2] = {2, 3}, s32[2] = {3, 2}, s2[1] = {2};
  ct_tensor *self = lt_make(2, s22, CT_FLOAT64, 0.5), *a = lt_make(2, s23, CT_FLOAT64, 0.1),
            *b = lt_make(2, s32, CT_FLOAT64, 0.2);
  ct_tensor *r = ct_addmm(self, a, b, ct_sf(0.5), ct_sf(2.0));
  ct_tensor *m = ct_mm(a, b), *m2 = ct_mul_scalar(m, ct_sf(2.0)), *s5 = ct_mul_scalar(self, ct_sf(0.5));
  ct_tensor *ref = ct_add(m2, s5);
  CHECK(tt_allclose(r, ref, 1e-12, 1e-12));
  /* beta = 0 ignores NaN in self */
  ct_tensor *nan = ct_full(2, s22, ct_sf(NAN), ct_opts_dtype(CT_FLOAT64));
  ct_tensor *r0 = ct_addmm(nan, a, b, ct_si(0), ct_si(1));
  CHECK(tt_allclose(r0, m, 1e-12, 1e-12));
  /* broadcast self [2] */
  ct_tensor *bias = lt_make(1, s2, CT_FLOAT64, 0.9), *rb = ct_addmm(bias, a, b, ct_si(1), ct_si(1));
  ct_tensor *refb = ct_add(m, bias);
  CHECK(tt_allclose(rb, refb, 1e-12, 1e-12));
  /* int64 with integer alpha/beta */
  ct_tensor *ia = ct_ones(2, s23, ct_opts_dtype(CT_INT64)), *ib = ct_ones(2, s32, ct_opts_dtype(CT_INT64));
  ct_tensor *is = ct_ones(2, s22, ct_opts_dtype(CT_INT64));
  ct_tensor *ir = ct_addmm(is, ia, ib, ct_si(2), ct_si(3));
  CHECK(ir && ct_tensor_dtype(ir) == CT_INT64 && tt_at(ir, 0) == 11);
  /* addmm_ in place */
  ct_tensor *sc = ct_clone(self);
  CHECK_OK(ct_addmm_(sc, a, b, ct_sf(0.5), ct_sf(2.0)));
  CHECK(tt_allclose(sc, ref, 1e-12, 1e-12));
  ct_tensor *bad = ct_ones(1, s2, ct_opts_dtype(CT_FLOAT64));
  CHECK_ERR(ct_addmm_(bad, a, b, ct_si(1), ct_si(1)), "Bad in-place call: input tensor size [2] and output tensor size [2, 2] should match");
  ct_release(self); ct_release(a); ct_release(b); ct_release(r); ct_release(m); ct_release(m2); ct_release(s5);
  ct_release(ref); ct_release(nan); ct_release(r0); ct_release(bias); ct_release(rb); ct_release(refb);
  ct_release(ia); ct_release(ib); ct_release(is); ct_release(ir); ct_release(sc); ct_release(bad);
}

TEST(linalg_mv_dot_outer_baddbmm_addmv) {
  int64_t s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2}, sb[3] = {4, 2, 3}, sc[3] = {4, 3, 5};
  ct_tensor *a = lt_make(2, s23, CT_FLOAT64, 0.1), *v = lt_make(1, s3, CT_FLOAT64, 0.4);
  ct_tensor *mv = ct_mv(a, v), *vc = ct_view(v, 2, (int64_t[]){3, 1}), *mm = ct_mm(a, vc);
  ct_tensor *mmf = ct_view(mm, 1, s2);
  CHECK(tt_allclose(mv, mmf, 1e-12, 1e-12));
  ct_tensor *dt = ct_dot(v, v);
  double x = 0;
  for (int i = 0; i < 3; i++) x += tt_at(v, i) * tt_at(v, i);
  CHECK(dt && ct_ndim(dt) == 0 && fabs(tt_at(dt, 0) - x) < 1e-12);
  ct_tensor *w = lt_make(1, s2, CT_FLOAT32, 0.4), *o = ct_outer(w, v); /* promotes to float64 */
  CHECK(o && ct_tensor_dtype(o) == CT_FLOAT64 && ct_shape(o)[0] == 2 && ct_shape(o)[1] == 3);
  ct_tensor *b1 = lt_make(3, sb, CT_FLOAT64, 0.1), *b2 = lt_make(3, sc, CT_FLOAT64, 0.2);
  ct_tensor *one = ct_scalar_tensor(ct_sf(1.0), ct_opts_dtype(CT_FLOAT64));
  ct_tensor *bb = ct_baddbmm(one, b1, b2, ct_sf(2), ct_sf(3)), *bm = ct_bmm(b1, b2), *bm3 = ct_mul_scalar(bm, ct_sf(3));
  ct_tensor *refb = ct_add_scalar(bm3, ct_sf(2));
  CHECK(tt_allclose(bb, refb, 1e-12, 1e-12));
  ct_tensor *am = ct_addmv(one, a, v, ct_sf(1), ct_sf(1)), *refm = ct_add(mv, one);
  CHECK(tt_allclose(am, refm, 1e-12, 1e-12));
  ct_release(a); ct_release(v); ct_release(mv); ct_release(vc); ct_release(mm); ct_release(mmf); ct_release(dt);
  ct_release(w); ct_release(o); ct_release(b1); ct_release(b2); ct_release(one); ct_release(bb); ct_release(bm);
  ct_release(bm3); ct_release(refb); ct_release(am); ct_release(refm);
}

TEST(linalg_linear) {
  int64_t sx[3] = {4, 2, 3}, sw[2] = {5, 3}, sb[1] = {5};
  ct_tensor *x = lt_make(3, sx, CT_FLOAT64, 0.1), *w = lt_make(2, sw, CT_FLOAT64, 0.2), *b = lt_make(1, sb, CT_FLOAT64, 0.3);
  ct_tensor *y = ct_linear(x, w, b), *wt = ct_t(w), *m = ct_matmul(x, wt), *ref = ct_add(m, b);
  CHECK(tt_allclose(y, ref, 1e-12, 1e-12));
  ct_tensor *x2 = ct_select(x, 0, 1), *y2 = ct_linear(x2, w, NULL), *r2 = ct_mm(x2, wt);
  CHECK(tt_allclose(y2, r2, 1e-12, 1e-12));
  ct_release(x); ct_release(w); ct_release(b); ct_release(y); ct_release(wt); ct_release(m); ct_release(ref);
  ct_release(x2); ct_release(y2); ct_release(r2);
}

TEST(linalg_einsum_forms) {
  int64_t s23[2] = {2, 3}, s34[2] = {3, 4}, s33[2] = {3, 3}, sb1[3] = {2, 2, 3}, sb2[3] = {2, 3, 4};
  ct_tensor *a = lt_make(2, s23, CT_FLOAT64, 0.1), *b = lt_make(2, s34, CT_FLOAT64, 0.2), *sq = lt_make(2, s33, CT_FLOAT64, 0.3);
  ct_tensor *ab[2] = {a, b};
  ct_tensor *e = ct_einsum("ij,jk->ik", 2, (const ct_tensor *const *)ab), *m = ct_mm(a, b);
  CHECK(tt_allclose(e, m, 1e-12, 1e-12));
  ct_tensor *ei = ct_einsum("ij,jk", 2, (const ct_tensor *const *)ab); /* implicit output ik */
  CHECK(tt_allclose(ei, m, 1e-12, 1e-12));
  const ct_tensor *one[1] = {sq};
  ct_tensor *dg = ct_einsum("ii->i", 1, one), *dref = ct_diagonal(sq, 0, 0, 1);
  CHECK(tt_allclose(dg, dref, 0, 0));
  ct_tensor *tr = ct_einsum("ii", 1, one);
  CHECK(tr && ct_ndim(tr) == 0 && fabs(tt_at(tr, 0) - (tt_at(sq, 0) + tt_at(sq, 4) + tt_at(sq, 8))) < 1e-12);
  ct_tensor *tp = ct_einsum("ij->ji", 1, one), *tref = ct_t(sq);
  CHECK(tt_allclose(tp, tref, 0, 0));
  ct_tensor *x = lt_make(3, sb1, CT_FLOAT64, 0.4), *y = lt_make(3, sb2, CT_FLOAT64, 0.5);
  const ct_tensor *xy[2] = {x, y};
  ct_tensor *eb = ct_einsum("bij,bjk->bik", 2, xy), *bm = ct_bmm(x, y);
  CHECK(tt_allclose(eb, bm, 1e-12, 1e-12));
  ct_tensor *ee = ct_einsum("...ij,...jk->...ik", 2, xy);
  CHECK(tt_allclose(ee, bm, 1e-12, 1e-12));
  ct_tensor *v2 = ct_select(a, 0, 0), *v3 = ct_select(b, 1, 0);
  const ct_tensor *vv[2] = {v2, v3};
  ct_tensor *ou = ct_einsum("i,j->ij", 2, vv), *oref = ct_outer(v2, v3);
  CHECK(tt_allclose(ou, oref, 1e-12, 1e-12));
  const ct_tensor *aa[2] = {a, a};
  ct_tensor *s = ct_einsum("ij,ij->", 2, aa), *sref0 = ct_mul(a, a), *sref = ct_sum(sref0);
  CHECK(tt_allclose(s, sref, 1e-12, 1e-12));
  CHECK_ERR_PTR(ct_einsum("ij,jk->ik", 1, (const ct_tensor *const *)ab), "einsum(): fewer operands were provided than specified in the equation");
  CHECK_ERR_PTR(ct_einsum("ij->ik", 1, (const ct_tensor *const *)ab), "einsum(): output subscript k does not appear in the equation for any input operand");
  CHECK_ERR_PTR(ct_einsum("ijk->ij", 1, (const ct_tensor *const *)ab), "einsum(): the number of subscripts in the equation (3) does not match the number of dimensions (2) for operand 0 and no ellipsis was given");
  CHECK_ERR_PTR(ct_einsum("ii->i", 1, (const ct_tensor *const *)ab), "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2");
  CHECK_ERR_PTR(ct_einsum("ij,ij->ij", 2, (const ct_tensor *const *)ab), "einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3");
  CHECK_ERR_PTR(ct_einsum("i1->i", 1, (const ct_tensor *const *)ab), "einsum(): invalid subscript given at index 1");
  ct_release(a); ct_release(b); ct_release(sq); ct_release(e); ct_release(m); ct_release(ei); ct_release(dg);
  ct_release(dref); ct_release(tr); ct_release(tp); ct_release(tref); ct_release(x); ct_release(y); ct_release(eb);
  ct_release(bm); ct_release(ee); ct_release(v2); ct_release(v3); ct_release(ou); ct_release(oref); ct_release(s);
  ct_release(sref0); ct_release(sref);
}

/* d/dA sum(A @ B * W) = W @ B^T ; checks values and the double-backward graph. */
TEST(linalg_mm_backward_and_double_backward) {
  int64_t sa[2] = {2, 3}, sb[2] = {3, 4};
  ct_tensor *a = lt_make(2, sa, CT_FLOAT64, 0.1), *b = lt_make(2, sb, CT_FLOAT64, 0.2);
  CHECK_OK(ct_requires_grad_(a, true));
  CHECK_OK(ct_requires_grad_(b, true));
  ct_tensor *c = ct_matmul(a, b), *c2 = ct_mul(c, c), *l = ct_sum(c2);
  CHECK(ct_grad_fn_name(c) && !strcmp(ct_grad_fn_name(c), "MmBackward0"));
  ct_tensor *ins[2] = {a, b}, *g[2] = {NULL, NULL};
  CHECK_OK(ct_autograd_grad(1, &l, NULL, 2, ins, g, true, true, false));
  /* dl/da = 2 c @ b^T */
  ct_tensor *bt = ct_t(b), *cb = ct_mm(c, bt), *ref = ct_mul_scalar(cb, ct_si(2));
  CHECK(tt_allclose(g[0], ref, 1e-12, 1e-12));
  /* double backward: d/db sum(dl/da) exists and matches finite reasoning: d/db sum(2 (a b) b^T) */
  ct_tensor *s = ct_sum(g[0]), *gg[1] = {NULL};
  CHECK_OK(ct_autograd_grad(1, &s, NULL, 1, &b, gg, false, false, false));
  CHECK(gg[0] && ct_shape(gg[0])[0] == 3 && ct_shape(gg[0])[1] == 4);
  /* numeric check of one element */
  double h = 1e-6, base = tt_at(s, 0);
  ct_tensor *bd = ct_detach(b), *bp = ct_clone(bd);
  double *pb = ct_data_ptr(bp);
  pb[5] += h;
  ct_tensor *ad = ct_detach(a), *c3 = ct_mm(ad, bp), *bpt = ct_t(bp), *gA = ct_mm(c3, bpt), *sA = ct_sum(gA);
  double num = (2 * tt_at(sA, 0) - base) / h;
  CHECK_NEAR(tt_at(gg[0], 5), num, 1e-4);
  ct_release(a); ct_release(b); ct_release(c); ct_release(c2); ct_release(l); ct_release(g[0]); ct_release(g[1]);
  ct_release(bt); ct_release(cb); ct_release(ref); ct_release(s); ct_release(gg[0]); ct_release(bd); ct_release(bp);
  ct_release(ad); ct_release(c3); ct_release(bpt); ct_release(gA); ct_release(sA);
}

TEST(linalg_batched_broadcast_backward) {
  int64_t sa[4] = {2, 1, 2, 3}, sb[3] = {5, 3, 4};
  ct_tensor *a = lt_make(4, sa, CT_FLOAT64, 0.1), *b = lt_make(3, sb, CT_FLOAT64, 0.2);
  CHECK_OK(ct_requires_grad_(a, true));
  CHECK_OK(ct_requires_grad_(b, true));
  ct_tensor *c = ct_matmul(a, b), *l = ct_sum(c);
  CHECK_OK(ct_backward(l, NULL, false, false));
  CHECK(ct_grad(a) && ct_ndim(ct_grad(a)) == 4 && ct_shape(ct_grad(a))[1] == 1);
  CHECK(ct_grad(b) && ct_ndim(ct_grad(b)) == 3 && ct_shape(ct_grad(b))[0] == 5);
  /* d sum / d a[i,0,m,k] = sum over the 5 batches and n of b[.,k,n] */
  double expect = 0;
  for (int bb = 0; bb < 5; bb++)
    for (int n = 0; n < 4; n++) expect += tt_at(b, bb * 12 + 1 * 4 + n);
  CHECK_NEAR(tt_at(ct_grad(a), 1), expect, 1e-10);
  ct_release(a); ct_release(b); ct_release(c); ct_release(l);
}

TEST(linalg_matmul_out) {
  int64_t sa[2] = {2, 3}, sb[2] = {3, 2};
  ct_tensor *a = lt_make(2, sa, CT_FLOAT32, 0.1), *b = lt_make(2, sb, CT_FLOAT32, 0.2);
  ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts()), *r = ct_matmul(a, b);
  CHECK_OK(ct_matmul_out(o, a, b));
  CHECK(tt_allclose(o, r, 0, 0));
  ct_tensor *od = ct_empty(2, (int64_t[]){2, 2}, ct_opts_dtype(CT_FLOAT64));
  CHECK_ERR(ct_matmul_out(od, a, b), "Expected out tensor to have dtype float, but got double instead");
  ct_release(a); ct_release(b); ct_release(o); ct_release(r); ct_release(od);
}
