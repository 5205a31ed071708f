/* Linalg ops: matrix products (one strided GEMM kernel underneath) and the
 * composites PyTorch builds from them (matmul, outer, linear, einsum), with
 * derivative formulas written with public ops so double backward works. */
#include "reduce_util.h"
#include "autocast.h"
#include <stdio.h>
#include <stdlib.h>

/* bf16 autocast (autocast.h): the float32 CUDA operands cast to bfloat16, the op run on the casts */
#define AUTOCAST_2(fn, x, y)                                                       \
  do {                                                                             \
    const ct_tensor *ac_in[2] = {x, y};                                            \
    ct_tensor *ac_o[2];                                                            \
    if (ct_autocast_lower(2, ac_in, ac_o)) {                                       \
      ct_tensor *ac_r = ac_o[0] ? fn(ac_o[0], ac_o[1]) : NULL;                     \
      ct_autocast_release(2, ac_o);                                                \
      return ac_r;                                                                 \
    }                                                                              \
  } while (0)
#define AUTOCAST_3(fn, x, y, z, beta, alpha)                                       \
  do {                                                                             \
    const ct_tensor *ac_in[3] = {x, y, z};                                         \
    ct_tensor *ac_o[3];                                                            \
    if (ct_autocast_lower(3, ac_in, ac_o)) {                                       \
      ct_tensor *ac_r = ac_o[0] ? fn(ac_o[0], ac_o[1], ac_o[2], beta, alpha) : NULL; \
      ct_autocast_release(3, ac_o);                                                \
      return ac_r;                                                                 \
    }                                                                              \
  } while (0)

/* ---- helpers ---- */
static ct_attrs ab_attrs(ct_scalar beta, ct_scalar alpha) {
  ct_attrs a = ct_attrs_zero();
  a.s[0] = alpha;
  a.s[1] = beta;
  a.f[0] = alpha.kind == CT_SCALAR_FLOAT ? alpha.f : (double)alpha.i;
  a.f[1] = beta.kind == CT_SCALAR_FLOAT ? beta.f : (double)beta.i;
  return a;
}

/* The kernel name PyTorch 1.13 names when a dtype is refused. */
static const char *impl_name(int op) {
  switch (op) {
    case CT_OP_mm: case CT_OP_addmm: return "addmm_impl_cpu_";
    case CT_OP_bmm: case CT_OP_baddbmm: return "bmm";
    case CT_OP_mv: case CT_OP_addmv: return "addmv_impl_cpu";
    default: return "dot";
  }
}

static ct_status check_dtype_supported(int op, ct_dtype dt) {
  /* PyTorch's CPU refuses bool (and 1.13 also float16, which we accumulate in float32) */
  if (dt == CT_BOOL) return CT_ERR(CT_ERR_RUNTIME, "\"%s\" not implemented for 'Bool'", impl_name(op));
  return CT_OK;
}

static ct_status check_same_dtype(const ct_tensor *a, const ct_tensor *b) {
  if (a->dtype != b->dtype)
    return CT_ERR(CT_ERR_RUNTIME, "expected scalar type %s but found %s", ct_dtype_torch_name(a->dtype),
                  ct_dtype_torch_name(b->dtype));
  return CT_OK;
}

/* self (the add* bias) expanded to shape and cast to dt: a new reference. */
static ct_tensor *prep_self(const ct_tensor *self, int nd, const int64_t *shape, ct_dtype dt) {
  ct_tensor *e = ct_expand(self, nd, shape);
  if (!e) return NULL;
  ct_tensor *c = ct_to_dtype(e, dt);
  ct_release(e);
  return c;
}

/* ---- mm / addmm ---- */
static ct_status check_mm_shapes(const ct_tensor *a, const ct_tensor *b) {
  if (a->shape[1] != b->shape[0])
    return CT_ERR(CT_ERR_RUNTIME, "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                  (long long)a->shape[0], (long long)a->shape[1], (long long)b->shape[0], (long long)b->shape[1]);
  return CT_OK;
}

ct_tensor *ct_mm(const ct_tensor *a, const ct_tensor *b) {
  if (ct_check_tensor(a, "mm") || ct_check_tensor(b, "mm")) return NULL;
  AUTOCAST_2(ct_mm, a, b);
  if (a->ndim != 2) { ct_set_error(CT_ERR_RUNTIME, "self must be a matrix"); return NULL; }
  if (b->ndim != 2) { ct_set_error(CT_ERR_RUNTIME, "mat2 must be a matrix"); return NULL; }
  if (check_same_dtype(a, b) || check_dtype_supported(CT_OP_mm, a->dtype) || check_mm_shapes(a, b)) return NULL;
  int64_t shape[2] = {a->shape[0], b->shape[1]};
  ct_tensor *in[2] = {(ct_tensor *)a, (ct_tensor *)b};
  return ct_dispatch_new(CT_OP_mm, 2, in, 2, shape, a->dtype, NULL);
}

ct_status ct_bw_mm(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  if (ct_node_needs_grad(n, 0)) {
    ct_tensor *bt = ct_t(b);
    gin[0] = bt ? ct_mm(g[0], bt) : NULL;
    ct_release(bt);
    if (!gin[0]) return ct_last_status();
  }
  if (ct_node_needs_grad(n, 1)) {
    ct_tensor *at = ct_t(a);
    gin[1] = at ? ct_mm(at, g[0]) : NULL;
    ct_release(at);
    if (!gin[1]) return ct_last_status();
  }
  return CT_OK;
}

ct_tensor *ct_addmm(const ct_tensor *self, const ct_tensor *m1, const ct_tensor *m2, ct_scalar beta, ct_scalar alpha) {
  if (ct_check_tensor(self, "addmm") || ct_check_tensor(m1, "addmm") || ct_check_tensor(m2, "addmm")) return NULL;
  AUTOCAST_3(ct_addmm, self, m1, m2, beta, alpha);
  if (m1->ndim != 2) { ct_set_error(CT_ERR_RUNTIME, "mat1 must be a matrix, got %d-D tensor", m1->ndim); return NULL; }
  if (m2->ndim != 2) { ct_set_error(CT_ERR_RUNTIME, "mat2 must be a matrix, got %d-D tensor", m2->ndim); return NULL; }
  if (self->dtype != m2->dtype) { ct_set_error(CT_ERR_RUNTIME, "self and mat2 must have the same dtype"); return NULL; }
  if (m1->dtype != m2->dtype) { ct_set_error(CT_ERR_RUNTIME, "mat1 and mat2 must have the same dtype"); return NULL; }
  if (check_dtype_supported(CT_OP_addmm, m1->dtype) || check_mm_shapes(m1, m2)) return NULL;
  int64_t shape[2] = {m1->shape[0], m2->shape[1]};
  ct_tensor *s = prep_self(self, 2, shape, m1->dtype);
  if (!s) return NULL;
  ct_tensor *in[3] = {s, (ct_tensor *)m1, (ct_tensor *)m2};
  ct_attrs at = ab_attrs(beta, alpha);
  ct_tensor *r = ct_dispatch_new(CT_OP_addmm, 3, in, 2, shape, m1->dtype, &at);
  ct_release(s);
  return r;
}

ct_status ct_addmm_(ct_tensor *self, const ct_tensor *m1, const ct_tensor *m2, ct_scalar beta, ct_scalar alpha) {
  CT_TRY(ct_check_tensor(self, "addmm_"));
  CT_TRY(ct_check_inplace(self));
  ct_tensor *r = ct_addmm(self, m1, m2, beta, alpha);
  if (!r) return ct_last_status();
  ct_status st = CT_OK;
  bool same = r->ndim == self->ndim;
  for (int d = 0; same && d < r->ndim; d++) same = r->shape[d] == self->shape[d];
  if (!same) {
    char s1[160], s2[160];
    st = CT_ERR(CT_ERR_RUNTIME, "Bad in-place call: input tensor size %s and output tensor size %s should match",
                CT_SHAPE_STR(self, s1), CT_SHAPE_STR(r, s2));
  } else {
    st = ct_write_result_inplace(self, r);
  }
  ct_release(r);
  return st;
}

/* ---- bmm / baddbmm ---- */
static ct_status check_bmm(const ct_tensor *a, const ct_tensor *b) {
  if (a->ndim != 3) return CT_ERR(CT_ERR_RUNTIME, "batch1 must be a 3D tensor");
  if (b->ndim != 3) return CT_ERR(CT_ERR_RUNTIME, "batch2 must be a 3D tensor");
  if (b->shape[0] != a->shape[0] || b->shape[1] != a->shape[2])
    return CT_ERR(CT_ERR_RUNTIME, "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: "
                  "[%lld, %lld].", (long long)a->shape[0], (long long)a->shape[2], (long long)b->shape[0],
                  (long long)b->shape[1]);
  return CT_OK;
}

ct_tensor *ct_bmm(const ct_tensor *a, const ct_tensor *b) {
  if (ct_check_tensor(a, "bmm") || ct_check_tensor(b, "bmm")) return NULL;
  AUTOCAST_2(ct_bmm, a, b);
  if (check_bmm(a, b) || check_same_dtype(a, b) || check_dtype_supported(CT_OP_bmm, a->dtype)) return NULL;
  int64_t shape[3] = {a->shape[0], a->shape[1], b->shape[2]};
  ct_tensor *in[2] = {(ct_tensor *)a, (ct_tensor *)b};
  return ct_dispatch_new(CT_OP_bmm, 2, in, 3, shape, a->dtype, NULL);
}

ct_status ct_bw_bmm(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  if (ct_node_needs_grad(n, 0)) {
    ct_tensor *bt = ct_transpose(b, 1, 2);
    gin[0] = bt ? ct_bmm(g[0], bt) : NULL;
    ct_release(bt);
    if (!gin[0]) return ct_last_status();
  }
  if (ct_node_needs_grad(n, 1)) {
    ct_tensor *at = ct_transpose(a, 1, 2);
    gin[1] = at ? ct_bmm(at, g[0]) : NULL;
    ct_release(at);
    if (!gin[1]) return ct_last_status();
  }
  return CT_OK;
}

ct_tensor *ct_baddbmm(const ct_tensor *self, const ct_tensor *b1, const ct_tensor *b2, ct_scalar beta,
                      ct_scalar alpha) {
  if (ct_check_tensor(self, "baddbmm") || ct_check_tensor(b1, "baddbmm") || ct_check_tensor(b2, "baddbmm"))
    return NULL;
  AUTOCAST_3(ct_baddbmm, self, b1, b2, beta, alpha);
  if (check_bmm(b1, b2) || check_same_dtype(b1, b2) || check_dtype_supported(CT_OP_baddbmm, b1->dtype)) return NULL;
  int64_t shape[3] = {b1->shape[0], b1->shape[1], b2->shape[2]};
  ct_tensor *s = prep_self(self, 3, shape, b1->dtype);
  if (!s) return NULL;
  ct_tensor *in[3] = {s, (ct_tensor *)b1, (ct_tensor *)b2};
  ct_attrs at = ab_attrs(beta, alpha);
  ct_tensor *r = ct_dispatch_new(CT_OP_baddbmm, 3, in, 3, shape, b1->dtype, &at);
  ct_release(s);
  return r;
}

/* ---- mv / addmv ---- */
static ct_status check_mv(int self_dim, int64_t self_size, const ct_tensor *m, const ct_tensor *v) {
  if (m->ndim != 2 || v->ndim != 1 || self_dim > 1)
    return CT_ERR(CT_ERR_RUNTIME, "vector + matrix @ vector expected, got %d, %d, %d", self_dim, m->ndim, v->ndim);
  if (m->shape[1] != v->shape[0] || (self_size != m->shape[0] && self_size != 1))
    return CT_ERR(CT_ERR_RUNTIME, "size mismatch, got %lld, %lldx%lld,%lld", (long long)self_size,
                  (long long)m->shape[0], (long long)m->shape[1], (long long)v->shape[0]);
  return CT_OK;
}

ct_tensor *ct_mv(const ct_tensor *a, const ct_tensor *v) {
  if (ct_check_tensor(a, "mv") || ct_check_tensor(v, "mv")) return NULL;
  if (check_mv(1, a->ndim ? a->shape[0] : 1, a, v) || check_same_dtype(a, v) ||
      check_dtype_supported(CT_OP_mv, a->dtype))
    return NULL;
  int64_t shape[1] = {a->shape[0]};
  ct_tensor *in[2] = {(ct_tensor *)a, (ct_tensor *)v};
  return ct_dispatch_new(CT_OP_mv, 2, in, 1, shape, a->dtype, NULL);
}

ct_status ct_bw_mv(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *a = ct_node_saved_in(n, 0), *v = ct_node_saved_in(n, 1);
  if (!a || !v) return ct_last_status();
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_outer(g[0], v))) return ct_last_status();
  if (ct_node_needs_grad(n, 1)) {
    ct_tensor *at = ct_t(a);
    gin[1] = at ? ct_mv(at, g[0]) : NULL;
    ct_release(at);
    if (!gin[1]) return ct_last_status();
  }
  return CT_OK;
}

ct_tensor *ct_addmv(const ct_tensor *self, const ct_tensor *m, const ct_tensor *v, ct_scalar beta, ct_scalar alpha) {
  if (ct_check_tensor(self, "addmv") || ct_check_tensor(m, "addmv") || ct_check_tensor(v, "addmv")) return NULL;
  int64_t ssize = self->ndim == 1 ? self->shape[0] : 1;
  if (check_mv(self->ndim, ssize, m, v) || check_same_dtype(m, v) || check_dtype_supported(CT_OP_addmv, m->dtype))
    return NULL;
  int64_t shape[1] = {m->shape[0]};
  ct_tensor *s = prep_self(self, 1, shape, m->dtype);
  if (!s) return NULL;
  ct_tensor *in[3] = {s, (ct_tensor *)m, (ct_tensor *)v};
  ct_attrs at = ab_attrs(beta, alpha);
  ct_tensor *r = ct_dispatch_new(CT_OP_addmv, 3, in, 1, shape, m->dtype, &at);
  ct_release(s);
  return r;
}

/* addmm / baddbmm / addmv: self' = beta * g; m1' = alpha * g @ m2^T; m2' = alpha * m1^T @ g. */
static ct_tensor *scaled(ct_tensor *t, double s) {
  if (!t || s == 1.0) return t;
  ct_tensor *r = ct_mul_scalar(t, ct_sf(s));
  ct_release(t);
  return r;
}

ct_status ct_bw_addmm(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  double alpha = n->a.f[0], beta = n->a.f[1];
  if (ct_node_needs_grad(n, 0) && !(gin[0] = scaled(ct_retain(g[0]), beta))) return ct_last_status();
  if (!ct_node_needs_grad(n, 1) && !ct_node_needs_grad(n, 2)) return CT_OK;
  ct_tensor *m1 = ct_node_saved_in(n, 1), *m2 = ct_node_saved_in(n, 2);
  if (!m1 || !m2) return ct_last_status();
  int op = n->op;
  if (ct_node_needs_grad(n, 1)) {
    ct_tensor *r;
    if (op == CT_OP_addmv) r = ct_outer(g[0], m2);
    else {
      ct_tensor *t2 = ct_mT(m2);
      r = t2 ? (op == CT_OP_addmm ? ct_mm(g[0], t2) : ct_bmm(g[0], t2)) : NULL;
      ct_release(t2);
    }
    if (!(gin[1] = scaled(r, alpha))) return ct_last_status();
  }
  if (ct_node_needs_grad(n, 2)) {
    ct_tensor *t1 = ct_mT(m1), *r = NULL;
    if (t1) r = op == CT_OP_addmv ? ct_mv(t1, g[0]) : op == CT_OP_addmm ? ct_mm(t1, g[0]) : ct_bmm(t1, g[0]);
    ct_release(t1);
    if (!(gin[2] = scaled(r, alpha))) return ct_last_status();
  }
  return CT_OK;
}

/* ---- dot ---- */
ct_tensor *ct_dot(const ct_tensor *a, const ct_tensor *b) {
  if (ct_check_tensor(a, "dot") || ct_check_tensor(b, "dot")) return NULL;
  if (a->ndim != 1 || b->ndim != 1) {
    ct_set_error(CT_ERR_RUNTIME, "1D tensors expected, but got %dD and %dD tensors", a->ndim, b->ndim);
    return NULL;
  }
  if (a->dtype != b->dtype) {
    ct_set_error(CT_ERR_RUNTIME, "dot : expected both vectors to have same dtype, but found %s and %s",
                 ct_dtype_torch_name(a->dtype), ct_dtype_torch_name(b->dtype));
    return NULL;
  }
  if (a->shape[0] != b->shape[0]) {
    ct_set_error(CT_ERR_RUNTIME, "inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the same "
                 "number of elements, but got %lld and %lld elements respectively", (long long)a->shape[0],
                 (long long)b->shape[0], (long long)a->shape[0], (long long)b->shape[0]);
    return NULL;
  }
  if (check_dtype_supported(CT_OP_dot, a->dtype)) return NULL;
  ct_tensor *in[2] = {(ct_tensor *)a, (ct_tensor *)b};
  return ct_dispatch_new(CT_OP_dot, 2, in, 0, NULL, a->dtype, NULL);
}

ct_status ct_bw_dot(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_mul(g[0], b))) return ct_last_status();
  if (ct_node_needs_grad(n, 1) && !(gin[1] = ct_mul(g[0], a))) return ct_last_status();
  return CT_OK;
}

/* ---- outer: a[:, None] * b ---- */
ct_tensor *ct_outer(const ct_tensor *a, const ct_tensor *b) {
  if (ct_check_tensor(a, "outer") || ct_check_tensor(b, "outer")) return NULL;
  if (a->ndim != 1) { ct_set_error(CT_ERR_RUNTIME, "outer: Expected 1-D argument self, but got %d-D", a->ndim); return NULL; }
  if (b->ndim != 1) { ct_set_error(CT_ERR_RUNTIME, "outer: Expected 1-D argument vec2, but got %d-D", b->ndim); return NULL; }
  int64_t col[2] = {a->shape[0], 1};
  ct_tensor *ac = ct_view(a, 2, col);
  ct_tensor *r = ac ? ct_mul(ac, b) : NULL;
  ct_release(ac);
  return r;
}

/* ---- matmul (PyTorch 1.13's composition) ---- */
/* t1 (>= 3-D) folded to 2-D against t2 (1-D or 2-D): one mm/mv instead of a bmm. */
static ct_tensor *matmul_fold(const ct_tensor *t1, const ct_tensor *t2, bool transpose) {
  int64_t oshape[CT_MAX_DIMS];
  int ond = 0;
  for (int d = 0; d < t1->ndim - 1; d++) oshape[ond++] = t1->shape[d];
  if (t2->ndim == 2) oshape[ond++] = t2->shape[1];
  int64_t fs[2] = {1, t1->shape[t1->ndim - 1]}; /* explicit: -1 is ambiguous when K == 0 */
  for (int d = 0; d < t1->ndim - 1; d++) fs[0] *= t1->shape[d];
  ct_tensor *f = ct_reshape(t1, 2, fs);
  if (!f) return NULL;
  ct_tensor *p = t2->ndim == 1 ? ct_mv(f, t2) : ct_mm(f, t2);
  ct_release(f);
  if (!p) return NULL;
  ct_tensor *r = ct_view(p, ond, oshape);
  ct_release(p);
  if (r && r->grad_fn) r->grad_fn->name = "UnsafeViewBackward0";
  if (!r || !transpose) return r;
  ct_tensor *rt = ct_mT(r);
  ct_release(r);
  if (!rt) return NULL;
  ct_tensor *c = ct_contiguous(rt);
  ct_release(rt);
  return c;
}

static ct_tensor *matmul_batched(const ct_tensor *a, const ct_tensor *b) {
  int d1 = a->ndim, d2 = b->ndim;
  int64_t n = d1 > 1 ? a->shape[d1 - 2] : 1, m1 = a->shape[d1 - 1];
  int64_t m2 = d2 > 1 ? b->shape[d2 - 2] : b->shape[0], p = d2 > 1 ? b->shape[d2 - 1] : 1;
  int nb1 = d1 > 2 ? d1 - 2 : 0, nb2 = d2 > 2 ? d2 - 2 : 0, nb;
  int64_t batch[CT_MAX_DIMS], shp[CT_MAX_DIMS];
  if (ct_broadcast_shapes(nb1, a->shape, nb2, b->shape, &nb, batch)) return NULL;
  int64_t B = ct_shape_numel(nb, batch);
  if (B < 0) return NULL;
  memcpy(shp, batch, sizeof(int64_t) * (size_t)nb);
  shp[nb] = n;
  shp[nb + 1] = m1;
  ct_tensor *ea = ct_expand(a, nb + 2, shp);
  shp[nb] = m2;
  shp[nb + 1] = p;
  ct_tensor *eb = ea ? ct_expand(b, nb + 2, shp) : NULL;
  int64_t s3a[3] = {B, n, m1}, s3b[3] = {B, m2, p};
  ct_tensor *ra = eb ? ct_reshape(ea, 3, s3a) : NULL;
  ct_tensor *rb = ra ? ct_reshape(eb, 3, s3b) : NULL;
  ct_tensor *o = rb ? ct_bmm(ra, rb) : NULL;
  ct_release(ea);
  ct_release(eb);
  ct_release(ra);
  ct_release(rb);
  if (!o) return NULL;
  int ond = nb;
  memcpy(shp, batch, sizeof(int64_t) * (size_t)nb);
  if (d1 > 1) shp[ond++] = n;
  if (d2 > 1) shp[ond++] = p;
  ct_tensor *r = ct_view(o, ond, shp);
  ct_release(o);
  if (r && r->grad_fn) r->grad_fn->name = "UnsafeViewBackward0";
  return r;
}

ct_tensor *ct_matmul(const ct_tensor *a, const ct_tensor *b) {
  if (ct_check_tensor(a, "matmul") || ct_check_tensor(b, "matmul")) return NULL;
  AUTOCAST_2(ct_matmul, a, b);
  int d1 = a->ndim, d2 = b->ndim;
  if (d1 == 0 || d2 == 0) {
    ct_set_error(CT_ERR_RUNTIME, "both arguments to matmul need to be at least 1D, but they are %dD and %dD", d1, d2);
    return NULL;
  }
  if (d1 == 1 && d2 == 1) return ct_dot(a, b);
  if (d1 == 2 && d2 == 1) return ct_mv(a, b);
  if (d1 == 1 && d2 == 2) {
    ct_tensor *u = ct_unsqueeze(a, 0);
    ct_tensor *p = u ? ct_mm(u, b) : NULL;
    ct_release(u);
    if (!p) return NULL;
    ct_tensor *r = ct_squeeze_dim(p, 0);
    ct_release(p);
    if (r && r->grad_fn) r->grad_fn->name = "SqueezeBackward3"; /* 1.13 squeezes in place (squeeze_) */
    return r;
  }
  if (d1 == 2 && d2 == 2) return ct_mm(a, b);
  if (d1 >= 3 && (d2 == 1 || d2 == 2)) return matmul_fold(a, b, false);
  if (d2 >= 3 && (d1 == 1 || d1 == 2)) {
    /* (b^T @ a^T)^T with b^T folded, as 1.13 does */
    ct_tensor *bt = ct_mT(b), *at = d1 == 2 ? ct_t(a) : ct_retain((ct_tensor *)a);
    ct_tensor *r = bt && at ? matmul_fold(bt, at, d1 == 2) : NULL;
    ct_release(bt);
    ct_release(at);
    return r;
  }
  return matmul_batched(a, b);
}

/* out= form; out keeps its own history rules (no autograd through out=). */
ct_status ct_matmul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  CT_TRY(ct_check_tensor(out, "matmul"));
  if (ct_grad_mode_recording() && (ct_tensor_requires_grad(out) || (a && ct_tensor_requires_grad(a)) ||
                                   (b && ct_tensor_requires_grad(b))))
    return CT_ERR(CT_ERR_RUNTIME, "matmul(): functions with out=... arguments don't support automatic "
                  "differentiation, but one of the arguments requires grad.");
  ct_tensor *r = ct_matmul(a, b);
  if (!r) return ct_last_status();
  ct_status st = CT_OK;
  if (r->dtype != out->dtype)
    st = CT_ERR(CT_ERR_RUNTIME, "Expected out tensor to have dtype %s, but got %s instead", ct_dtype_cpp_name(r->dtype),
                ct_dtype_cpp_name(out->dtype));
  if (st == CT_OK) st = ct_resize_out(out, r->ndim, r->shape);
  if (st == CT_OK) st = ct_copy_(out, r);
  ct_release(r);
  return st;
}

/* ---- linear ---- */
ct_tensor *ct_linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias) {
  if (ct_check_tensor(x, "linear") || ct_check_tensor(w, "linear")) return NULL;
  ct_tensor *wt = ct_t(w);
  if (!wt) return NULL;
  ct_tensor *r;
  if (x->ndim == 2 && bias) {
    r = ct_addmm(bias, x, wt, ct_si(1), ct_si(1));
  } else if (x->ndim == 3 && bias && ct_is_contiguous(x)) {
    /* 1.13 folds a contiguous 3-D input into one addmm and views the result back */
    int64_t fs[2] = {x->shape[0] * x->shape[1], x->shape[2]};
    ct_tensor *f = ct_view(x, 2, fs);
    ct_tensor *m = f ? ct_addmm(bias, f, wt, ct_si(1), ct_si(1)) : NULL;
    r = m ? ct_view(m, 3, (const int64_t[]){x->shape[0], x->shape[1], m->shape[1]}) : NULL;
    ct_release(f);
    ct_release(m);
  } else {
    r = ct_matmul(x, wt);
    if (r && bias) {
      ct_tensor *s = ct_add(r, bias);
      ct_release(r);
      r = s;
    }
  }
  ct_release(wt);
  return r;
}

/* ---- einsum ----
 * Every operand is aligned to one frame of dims: the output's dims first (in
 * output order), then the summed labels; absent dims are size 1. Repeated
 * labels in an operand become diagonals. Operands are then combined left to
 * right, each pair as one bmm over (batch, left-only, contracted, right-only)
 * dims, summing a label as soon as no later operand needs it. */
#define EIN_LABELS 52
#define EIN_ELL (-1)

static int ein_label(char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return 26 + (ch - 'a');
  return -2;
}
static char ein_char(int l) { return (char)(l < 26 ? 'A' + l : 'a' + (l - 26)); }

typedef struct {
  int n;                /* subscripts (an ellipsis counts as one entry EIN_ELL) */
  int lab[CT_MAX_DIMS * 2 + 2];
  bool has_ell;
} ein_term;

/* Parses one term from eq[*pos] up to a ',' or '-' or end. */
static ct_status ein_parse_term(const char *eq, size_t *pos, ein_term *t, int opnum, bool output) {
  memset(t, 0, sizeof *t);
  size_t i = *pos;
  while (eq[i] && eq[i] != ',' && !(eq[i] == '-' && eq[i + 1] == '>')) {
    char ch = eq[i];
    if (ch == ' ') { i++; continue; }
    if (ch == '.') {
      if (t->has_ell && eq[i + 1] == '.' && eq[i + 2] == '.')
        return output ? CT_ERR(CT_ERR_RUNTIME, "einsum(): found '.' for output for which an ellipsis was already found")
                      : CT_ERR(CT_ERR_RUNTIME, "einsum(): found '.' for operand %d for which an ellipsis was already "
                               "found", opnum);
      if (eq[i + 1] != '.' || eq[i + 2] != '.')
        return output ? CT_ERR(CT_ERR_RUNTIME, "einsum(): found '.' for output that is not part of any ellipsis")
                      : CT_ERR(CT_ERR_RUNTIME, "einsum(): found '.' for operand %d that is not part of any ellipsis", opnum);
      t->has_ell = true;
      t->lab[t->n++] = EIN_ELL;
      i += 3;
      continue;
    }
    int l = ein_label(ch);
    if (l < 0)
      return CT_ERR(CT_ERR_RUNTIME, "einsum(): invalid subscript given at index %zu in the equation string, subscripts "
                    "must be in [a-zA-Z]", i);
    if (t->n >= (int)(sizeof t->lab / sizeof t->lab[0]))
      return CT_ERR(CT_ERR_RUNTIME, "einsum(): too many subscripts (ctorch tensors have at most %d dims)", CT_MAX_DIMS);
    t->lab[t->n++] = l;
    i++;
  }
  *pos = i;
  return CT_OK;
}

/* Sums dims (keepdim) keeping the dtype. */
static ct_tensor *ein_sum(ct_tensor *t, int nd, const int64_t *dims) {
  if (nd == 0) return t;
  ct_tensor *r = ct_sum_dtype(t, nd, dims, true, (int)t->dtype);
  ct_release(t);
  return r;
}

/* L and R aligned to the same frame (ndim dims); sums dims in sum_mask. Consumes L and R. */
static ct_tensor *ein_pair(ct_tensor *L, ct_tensor *R, uint32_t sum_mask) {
  int nd = L->ndim;
  int64_t sl[CT_MAX_DIMS], sr[CT_MAX_DIMS];
  int nsl = 0, nsr = 0;
  for (int d = 0; d < nd; d++) {
    if (!(sum_mask & (1u << d))) continue;
    int64_t l = L->shape[d], r = R->shape[d];
    if (l != 1 && r == 1) sl[nsl++] = d;
    else if (l == 1 && r != 1) sr[nsr++] = d;
  }
  L = ein_sum(L, nsl, sl);
  R = R && L ? ein_sum(R, nsr, sr) : R;
  if (!L || !R) {
    ct_release(L);
    ct_release(R);
    return NULL;
  }
  int64_t bat[CT_MAX_DIMS], lo[CT_MAX_DIMS], ro[CT_MAX_DIMS], kk[CT_MAX_DIMS], rest[CT_MAX_DIMS];
  int nb = 0, nl = 0, nr = 0, nk = 0, nrest = 0;
  int64_t B = 1, LO = 1, RO = 1, K = 1;
  for (int d = 0; d < nd; d++) {
    int64_t l = L->shape[d], r = R->shape[d];
    if (sum_mask & (1u << d)) {
      if (l != 1 && r != 1) { kk[nk++] = d; K *= l; }
      else rest[nrest++] = d;
    } else if (l != 1 && r != 1) { bat[nb++] = d; B *= l; }
    else if (l != 1) { lo[nl++] = d; LO *= l; }
    else if (r != 1) { ro[nr++] = d; RO *= r; }
    else rest[nrest++] = d;
  }
  int64_t pl[CT_MAX_DIMS], pr[CT_MAX_DIMS], po[CT_MAX_DIMS];
  int k = 0;
  /* left: batch, lo, k, then the size-1 dims (ro, rest) */
  for (int i = 0; i < nb; i++) pl[k++] = bat[i];
  for (int i = 0; i < nl; i++) pl[k++] = lo[i];
  for (int i = 0; i < nk; i++) pl[k++] = kk[i];
  for (int i = 0; i < nr; i++) pl[k++] = ro[i];
  for (int i = 0; i < nrest; i++) pl[k++] = rest[i];
  k = 0;
  for (int i = 0; i < nb; i++) pr[k++] = bat[i];
  for (int i = 0; i < nk; i++) pr[k++] = kk[i];
  for (int i = 0; i < nr; i++) pr[k++] = ro[i];
  for (int i = 0; i < nl; i++) pr[k++] = lo[i];
  for (int i = 0; i < nrest; i++) pr[k++] = rest[i];
  k = 0;
  for (int i = 0; i < nb; i++) po[k++] = bat[i];
  for (int i = 0; i < nl; i++) po[k++] = lo[i];
  for (int i = 0; i < nr; i++) po[k++] = ro[i];
  for (int i = 0; i < nk; i++) po[k++] = kk[i];
  for (int i = 0; i < nrest; i++) po[k++] = rest[i];
  int64_t outsize[CT_MAX_DIMS];
  for (int d = 0; d < nd; d++)
    outsize[d] = (sum_mask & (1u << d)) ? 1 : (L->shape[d] != 1 ? L->shape[d] : R->shape[d]);
  int64_t s3l[3] = {B, LO, K}, s3r[3] = {B, K, RO};
  ct_tensor *pL = ct_permute(L, nd, pl), *pR = ct_permute(R, nd, pr);
  ct_tensor *rL = pL ? ct_reshape(pL, 3, s3l) : NULL, *rR = pR ? ct_reshape(pR, 3, s3r) : NULL;
  ct_tensor *o = rL && rR ? ct_bmm(rL, rR) : NULL;
  ct_release(L);
  ct_release(R);
  ct_release(pL);
  ct_release(pR);
  ct_release(rL);
  ct_release(rR);
  if (!o) return NULL;
  /* back to the frame: [batch, lo, ro, 1...] permuted by the inverse of po */
  int64_t shp[CT_MAX_DIMS], inv[CT_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    shp[i] = outsize[po[i]];
    inv[po[i]] = i;
  }
  ct_tensor *v = ct_view(o, nd, shp);
  ct_release(o);
  if (!v) return NULL;
  ct_tensor *res = ct_permute(v, nd, inv);
  ct_release(v);
  return res;
}

/* Frame ids: a label l (0..51) or 100 + j for the j-th (global) ellipsis dim. */
static ct_tensor *ein_align(const ct_tensor *op, const ein_term *t, int k, int E, int nf, const int *fid,
                            int64_t *fsize) {
  int nd = op->ndim, nlab = 0;
  for (int i = 0; i < t->n; i++) nlab += t->lab[i] != EIN_ELL;
  int ne = t->has_ell ? nd - nlab : 0;
  int ids[CT_MAX_DIMS * 2];
  int m = 0;
  for (int i = 0; i < t->n; i++) {
    if (t->lab[i] == EIN_ELL)
      for (int j = 0; j < ne; j++) ids[m++] = 100 + (E - ne + j);
    else ids[m++] = t->lab[i];
  }
  ct_tensor *x = ct_retain((ct_tensor *)op);
  /* repeated labels: take diagonals (the diagonal dim goes last) */
  for (;;) {
    int d1 = -1, d2 = -1;
    for (int a = 0; a < m && d1 < 0; a++)
      for (int b = a + 1; b < m; b++)
        if (ids[a] == ids[b]) { d1 = a; d2 = b; break; }
    if (d1 < 0) break;
    if (x->shape[d1] != x->shape[d2]) {
      ct_set_error(CT_ERR_RUNTIME, "einsum(): subscript %c is repeated for operand %d but the sizes don't match, %lld "
                   "!= %lld", ein_char(ids[d1]), k, (long long)x->shape[d2], (long long)x->shape[d1]);
      ct_release(x);
      return NULL;
    }
    ct_tensor *dg = ct_diagonal(x, 0, d1, d2);
    ct_release(x);
    if (!dg) return NULL;
    x = dg;
    int id = ids[d1], w = 0;
    for (int a = 0; a < m; a++)
      if (a != d1 && a != d2) ids[w++] = ids[a];
    ids[w++] = id;
    m = w;
  }
  /* permute present dims into frame order, then insert size-1 dims for absent ones */
  int64_t perm[CT_MAX_DIMS];
  int np = 0;
  bool present[CT_MAX_DIMS * 2] = {0};
  for (int f = 0; f < nf; f++)
    for (int a = 0; a < m; a++)
      if (ids[a] == fid[f]) { perm[np++] = a; present[f] = true; }
  ct_tensor *p = ct_permute(x, np, perm);
  ct_release(x);
  if (!p) return NULL;
  for (int f = 0; f < nf; f++) {
    if (present[f]) continue;
    ct_tensor *u = ct_unsqueeze(p, f);
    ct_release(p);
    if (!u) return NULL;
    p = u;
  }
  for (int f = nf - 1; f >= 0; f--) { /* last dims first, as PyTorch reports them */
    int64_t s = p->shape[f];
    if (s == 1) continue;
    if (fsize[f] != 1 && fsize[f] != s) {
      if (fid[f] >= 100) {
        int opdim = 0; /* the operand's own dim index, as PyTorch reports it */
        for (int i = 0; i < t->n && t->lab[i] != EIN_ELL; i++) opdim++;
        opdim += fid[f] - 100 - (E - ne);
        ct_set_error(CT_ERR_RUNTIME, "einsum(): dimension %d covered by ellipsis in operand %dhas size %lld which does "
                     "not broadcast with previously seen ellipsis with size %lld for the respective dimension", opdim, k,
                     (long long)s, (long long)fsize[f]);
      } else {
        ct_set_error(CT_ERR_RUNTIME, "einsum(): subscript %c has size %lld for operand %d which does not broadcast with "
                     "previously seen size %lld", ein_char(fid[f]), (long long)s, k, (long long)fsize[f]);
      }
      ct_release(p);
      return NULL;
    }
    fsize[f] = s;
  }
  return p;
}

ct_tensor *ct_einsum(const char *eq, int n, const ct_tensor *const *ops) {
  if (!eq) { ct_set_error(CT_ERR_VALUE, "einsum(): equation is NULL"); return NULL; }
  if (n <= 0 || !ops) { ct_set_error(CT_ERR_RUNTIME, "einsum(): must provide at least one operand"); return NULL; }
  for (int k = 0; k < n; k++)
    if (ct_check_tensor(ops[k], "einsum")) return NULL;
  const char *arrow = strstr(eq, "->");
  int nterms = 1;
  for (const char *c = eq; *c && (!arrow || c < arrow); c++) nterms += *c == ',';
  ein_term *terms = ct_xcalloc((size_t)nterms + 1, sizeof *terms);
  if (!terms) return NULL;
  ct_tensor **al = ct_xcalloc((size_t)n, sizeof *al);
  ct_tensor *res = NULL;
  if (!al) goto done;
  size_t pos = 0;
  for (int k = 0; k < nterms; k++) {
    if (ein_parse_term(eq, &pos, &terms[k], k, false)) goto done;
    if (eq[pos] == ',') pos++;
  }
  if (nterms > n) { ct_set_error(CT_ERR_RUNTIME, "einsum(): fewer operands were provided than specified in the equation"); goto done; }
  if (nterms < n) { ct_set_error(CT_ERR_RUNTIME, "einsum(): more operands were provided than specified in the equation"); goto done; }
  int cnt[EIN_LABELS] = {0};
  int E = 0;
  bool any_ell = false;
  for (int k = 0; k < n; k++) {
    int nlab = 0;
    for (int i = 0; i < terms[k].n; i++)
      if (terms[k].lab[i] != EIN_ELL) { nlab++; cnt[terms[k].lab[i]]++; }
    int nd = ops[k]->ndim;
    if (!terms[k].has_ell && nlab != nd) {
      ct_set_error(CT_ERR_RUNTIME, "einsum(): the number of subscripts in the equation (%d) does not match the number of "
                   "dimensions (%d) for operand %d and no ellipsis was given", nlab, nd, k);
      goto done;
    }
    if (terms[k].has_ell && nlab > nd) {
      ct_set_error(CT_ERR_RUNTIME, "einsum(): the number of subscripts in the equation (%d) is more than the number of "
                   "dimensions (%d) for operand %d", nlab, nd, k);
      goto done;
    }
    if (terms[k].has_ell) {
      any_ell = true;
      if (nd - nlab > E) E = nd - nlab;
    }
  }
  /* the output */
  ein_term *out = &terms[nterms];
  if (arrow) {
    pos = (size_t)(arrow - eq) + 2;
    if (ein_parse_term(eq, &pos, out, 0, true)) goto done;
    if (eq[pos]) {
      if (eq[pos] == ',' || eq[pos] == '-')
        ct_set_error(CT_ERR_RUNTIME, "einsum(): invalid subscript given at index %zu in the equation string, subscripts "
                     "must be in [a-zA-Z]", pos);
      goto done;
    }
    bool seen[EIN_LABELS] = {0};
    for (int i = 0; i < out->n; i++) {
      int l = out->lab[i];
      if (l == EIN_ELL) continue;
      if (!cnt[l]) {
        ct_set_error(CT_ERR_RUNTIME, "einsum(): output subscript %c does not appear in the equation for any input operand",
                     ein_char(l));
        goto done;
      }
      if (seen[l]) {
        ct_set_error(CT_ERR_RUNTIME, "einsum(): output subscript %c appears more than once in the output", ein_char(l));
        goto done;
      }
      seen[l] = true;
    }
  } else {
    if (any_ell) out->lab[out->n++] = EIN_ELL, out->has_ell = true;
    for (int l = 0; l < EIN_LABELS; l++)
      if (cnt[l] == 1) out->lab[out->n++] = l;
  }
  /* the frame: output dims, then summed labels, then summed ellipsis dims */
  int fid[CT_MAX_DIMS * 2 + EIN_LABELS];
  int nf = 0, n_out = 0;
  bool in_out[EIN_LABELS] = {0};
  for (int i = 0; i < out->n; i++) {
    if (out->lab[i] == EIN_ELL)
      for (int j = 0; j < E; j++) fid[nf++] = 100 + j;
    else {
      in_out[out->lab[i]] = true;
      fid[nf++] = out->lab[i];
    }
  }
  n_out = nf;
  for (int l = 0; l < EIN_LABELS; l++)
    if (cnt[l] && !in_out[l]) fid[nf++] = l;
  if (!out->has_ell)
    for (int j = 0; j < E; j++) fid[nf++] = 100 + j;
  if (nf > CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "einsum(): %d distinct dimensions in the equation; ctorch tensors have at most %d", nf,
                 CT_MAX_DIMS);
    goto done;
  }
  int64_t fsize[CT_MAX_DIMS];
  for (int f = 0; f < nf; f++) fsize[f] = 1;
  for (int k = 0; k < n; k++)
    if (!(al[k] = ein_align(ops[k], &terms[k], k, E, nf, fid, fsize))) goto done;
  /* which frame dims each operand carries (size != 1 after alignment) */
  res = al[0];
  al[0] = NULL;
  if (n == 1) {
    int64_t sd[CT_MAX_DIMS];
    int ns = 0;
    for (int f = n_out; f < nf; f++) sd[ns++] = f;
    if (ns) {
      ct_tensor *s = ct_sum_dims(res, ns, sd, true);
      ct_release(res);
      res = s;
    }
  }
  for (int k = 1; k < n && res; k++) {
    uint32_t mask = 0;
    for (int f = n_out; f < nf; f++) {
      bool later = false;
      for (int j = k + 1; j < n && !later; j++) later = al[j]->shape[f] != 1;
      if (!later) mask |= 1u << f;
    }
    res = ein_pair(res, al[k], mask);
    al[k] = NULL;
  }
  if (res) {
    ct_tensor *r = ct_reshape(res, n_out, res->shape);
    ct_release(res);
    res = ct_name_node(r, "ViewBackward0"); /* 1.13's einsum ends with a view of its bmm */
  }
done:
  if (al)
    for (int k = 0; k < n; k++) ct_release(al[k]);
  free(al);
  free(terms);
  return res;
}
