/* Ternary elementwise ops: forward entry points and derivative formulas side by side. */
#include "pointwise.h"

static ct_status not_impl(const char *kname, ct_dtype dt) {
  return CT_ERR(CT_ERR_RUNTIME, "\"%s\" not implemented for '%s'", kname, ct_dtype_torch_name(dt));
}

/* ---- where(cond, a, b) ---- */
ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b) {
  if (ct_check_tensor(cond, "where") || ct_check_tensor(a, "where") || ct_check_tensor(b, "where")) return NULL;
  if (cond->dtype != CT_BOOL && cond->dtype != CT_UINT8) {
    ct_set_error(CT_ERR_RUNTIME, "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
                 ct_dtype_torch_name(cond->dtype));
    return NULL;
  }
  const ct_tensor *all[3] = {cond, a, b};
  if (ct_check_same_device("where", 3, all)) return NULL;
  int nd = 0;
  int64_t shape[CT_MAX_DIMS];
  for (int i = 0; i < 3; i++)
    if (ct_broadcast_shapes(nd, shape, all[i]->ndim, all[i]->shape, &nd, shape)) return NULL;
  /* only a and b take part in promotion */
  const ct_tensor *vals[2] = {a, b};
  ct_dtype dt = ct_result_type_n(2, vals);
  /* CPU 0-dim tensors and wrapped numbers mix with device tensors (as in PyTorch): the
   * result goes to the first other tensor's device and they are moved there */
  ct_device dev = cond->storage->device;
  for (int i = 0; i < 3; i++)
    if (!all[i]->is_wrapped_number && !(all[i]->ndim == 0 && all[i]->storage->device.type == CT_DEVICE_CPU)) {
      dev = all[i]->storage->device;
      break;
    }
  ct_tensor *prep[3] = {NULL, NULL, NULL}, *out = NULL;
  ct_status st = CT_OK;
  for (int i = 0; i < 3 && st == CT_OK; i++) {
    ct_tensor *c = ct_to_dtype(all[i], i == 0 ? CT_BOOL : dt);
    if (c && (c->storage->device.type != dev.type || c->storage->device.index != dev.index)) {
      ct_tensor *m = ct_to_device(c, dev);
      ct_release(c);
      c = m;
    }
    if (!c) {
      st = ct_last_status();
      break;
    }
    bool same = c->ndim == nd;
    for (int d = 0; same && d < nd; d++) same = c->shape[d] == shape[d];
    prep[i] = same ? c : ct_expand(c, nd, shape);
    if (!same) ct_release(c);
    if (!prep[i]) st = ct_last_status();
  }
  if (st == CT_OK && (out = ct_tensor_new(nd, shape, dt, dev))) {
    ct_call c = ct_call_make(CT_OP_where);
    c.n_in = 3;
    c.n_out = 1;
    for (int i = 0; i < 3; i++) c.in[i] = prep[i];
    c.out[0] = out;
    if (ct_dispatch(&c) != CT_OK) {
      ct_release(out);
      out = NULL;
    }
  }
  for (int i = 0; i < 3; i++) ct_release(prep[i]);
  return out;
}
ct_tensor *ct_where_scalar_a(const ct_tensor *cond, ct_scalar a, const ct_tensor *b) {
  ct_tensor *w = ct_wrap_scalar(a);
  ct_tensor *r = w ? ct_where(cond, w, b) : NULL;
  ct_release(w);
  return r;
}
ct_tensor *ct_where_scalar_b(const ct_tensor *cond, const ct_tensor *a, ct_scalar b) {
  ct_tensor *w = ct_wrap_scalar(b);
  ct_tensor *r = w ? ct_where(cond, a, w) : NULL;
  ct_release(w);
  return r;
}
ct_tensor *ct_where_scalars(const ct_tensor *cond, ct_scalar a, ct_scalar b) {
  ct_tensor *wa = ct_wrap_scalar(a), *wb = wa ? ct_wrap_scalar(b) : NULL;
  ct_tensor *r = wb ? ct_where(cond, wa, wb) : NULL;
  ct_release(wa);
  ct_release(wb);
  return r;
}

/* grad_a = where(cond, g, 0), grad_b = where(cond, 0, g) */
ct_status ct_bw_where(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *cond = ct_node_saved_in(n, 0);
  if (!cond) return ct_last_status();
  if (ct_node_needs_grad(n, 1) && !(gin[1] = ct_where_scalar_b(cond, g[0], ct_si(0)))) return ct_last_status();
  if (ct_node_needs_grad(n, 2) && !(gin[2] = ct_where_scalar_a(cond, ct_si(0), g[0]))) return ct_last_status();
  return CT_OK;
}

/* ---- lerp(start, end, weight) ---- */
static ct_status lerp_check(const ct_tensor *s, const ct_tensor *e, const ct_tensor *w, bool tensor_w) {
  CT_TRY(ct_check_tensor(s, "lerp"));
  CT_TRY(ct_check_tensor(e, "lerp"));
  if (tensor_w) CT_TRY(ct_check_tensor(w, "lerp"));
  if (e->dtype != s->dtype)
    return CT_ERR(CT_ERR_RUNTIME, "expected dtype %s for `end` but got dtype %s", ct_dtype_cpp_name(s->dtype),
                  ct_dtype_cpp_name(e->dtype));
  if (tensor_w && w->dtype != s->dtype)
    return CT_ERR(CT_ERR_RUNTIME, "expected dtype %s for `weight` but got dtype %s", ct_dtype_cpp_name(s->dtype),
                  ct_dtype_cpp_name(w->dtype));
  if (!ct_dtype_is_floating(s->dtype) || s->dtype == CT_FLOAT16)
    return not_impl(tensor_w ? "lerp_kernel_tensor" : "lerp_kernel_scalar", s->dtype);
  return CT_OK;
}
static ct_attrs lerp_attrs(ct_scalar w) {
  ct_attrs a = ct_attrs_zero();
  a.f[0] = w.kind == CT_SCALAR_FLOAT ? w.f : (double)w.i;
  return a;
}
ct_tensor *ct_lerp(const ct_tensor *s, const ct_tensor *e, ct_scalar w) {
  if (lerp_check(s, e, NULL, false)) return NULL;
  ct_attrs a = lerp_attrs(w);
  const ct_tensor *in[2] = {s, e};
  return ct_name_node(ct_pointwise(CT_OP_lerp_scalar, 2, in, &a, CT_OUT_SAME), "LerpBackward0");
}
ct_tensor *ct_lerp_tensor(const ct_tensor *s, const ct_tensor *e, const ct_tensor *w) {
  if (lerp_check(s, e, w, true)) return NULL;
  const ct_tensor *in[3] = {s, e, w};
  return ct_name_node(ct_pointwise(CT_OP_lerp, 3, in, NULL, CT_OUT_SAME), "LerpBackward1");
}
ct_status ct_lerp_(ct_tensor *s, const ct_tensor *e, ct_scalar w) {
  CT_TRY(lerp_check(s, e, NULL, false));
  ct_attrs a = lerp_attrs(w);
  ct_tensor *in[2] = {s, (ct_tensor *)e};
  CT_TRY(ct_pointwise_(CT_OP_lerp_scalar, 2, in, &a, CT_OUT_SAME));
  ct_name_node(s, "LerpBackward0");
  return CT_OK;
}
ct_status ct_lerp_tensor_(ct_tensor *s, const ct_tensor *e, const ct_tensor *w) {
  CT_TRY(lerp_check(s, e, w, true));
  ct_tensor *in[3] = {s, (ct_tensor *)e, (ct_tensor *)w};
  CT_TRY(ct_pointwise_(CT_OP_lerp, 3, in, NULL, CT_OUT_SAME));
  ct_name_node(s, "LerpBackward1");
  return CT_OK;
}
ct_status ct_lerp_out(ct_tensor *out, const ct_tensor *s, const ct_tensor *e, ct_scalar w) {
  CT_TRY(lerp_check(s, e, NULL, false));
  ct_attrs a = lerp_attrs(w);
  const ct_tensor *in[2] = {s, e};
  return ct_pointwise_out(CT_OP_lerp_scalar, out, 2, in, &a, CT_OUT_SAME);
}
ct_status ct_lerp_tensor_out(ct_tensor *out, const ct_tensor *s, const ct_tensor *e, const ct_tensor *w) {
  CT_TRY(lerp_check(s, e, w, true));
  const ct_tensor *in[3] = {s, e, w};
  return ct_pointwise_out(CT_OP_lerp, out, 3, in, NULL, CT_OUT_SAME);
}

/* Formula helpers: NULL passes through so the first failure's message survives. */
static ct_tensor *M(const ct_tensor *a, const ct_tensor *b) { return a && b ? ct_mul(a, b) : NULL; }
static ct_tensor *MS(const ct_tensor *a, double s) { return a ? ct_mul_scalar(a, ct_sf(s)) : NULL; }
static ct_tensor *D(const ct_tensor *a, const ct_tensor *b) { return a && b ? ct_div(a, b) : NULL; }
static ct_tensor *keep_or_null(ct_tensor *t, ct_status *st) {
  if (!t) {
    *st = ct_last_status();
    return NULL;
  }
  return ct_keep(t);
}

/* start: grad * (1 - w); end: grad * w */
ct_status ct_bw_lerp_scalar(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  double w = n->a.f[0];
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_mul_scalar(g[0], ct_sf(1 - w)))) return ct_last_status();
  if (ct_node_needs_grad(n, 1) && !(gin[1] = ct_mul_scalar(g[0], ct_sf(w)))) return ct_last_status();
  return CT_OK;
}
/* start: grad * (1 - w); end: grad * w; weight: grad * (end - start) */
ct_status ct_bw_lerp(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *s = ct_node_saved_in(n, 0), *e = ct_node_saved_in(n, 1), *w = ct_node_saved_in(n, 2);
  if (!s || !e || !w) return ct_last_status();
  ct_status st = CT_OK;
  ct_scope *sc = ct_scope_begin();
  if (ct_node_needs_grad(n, 0)) gin[0] = keep_or_null(M(g[0], ct_rsub_scalar(w, ct_si(1))), &st);
  if (st == CT_OK && ct_node_needs_grad(n, 1)) gin[1] = keep_or_null(M(g[0], w), &st);
  if (st == CT_OK && ct_node_needs_grad(n, 2)) gin[2] = keep_or_null(M(g[0], ct_sub(e, s)), &st);
  ct_scope_end(sc);
  return st;
}

/* ---- addcmul / addcdiv ---- */
static ct_attrs value_attrs(ct_scalar v) {
  ct_attrs a = ct_attrs_zero();
  a.s[0] = v;
  a.f[0] = v.kind == CT_SCALAR_FLOAT ? v.f : (double)v.i;
  a.s[0].i = v.kind == CT_SCALAR_FLOAT ? (int64_t)v.f : v.i; /* integer results use the truncated value */
  return a;
}
static ct_status addc_check(int op, const ct_tensor *s, const ct_tensor *t1, const ct_tensor *t2) {
  const char *name = op == CT_OP_addcmul ? "addcmul" : "addcdiv";
  CT_TRY(ct_check_tensor(s, name));
  CT_TRY(ct_check_tensor(t1, name));
  CT_TRY(ct_check_tensor(t2, name));
  if (op == CT_OP_addcdiv && ct_dtype_is_integral(t1->dtype, true) && ct_dtype_is_integral(t2->dtype, true))
    return CT_ERR(CT_ERR_RUNTIME,
                  "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
                  "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
                  "value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
                  "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
                  "(input + value * tensor1 / tensor2), for all dtypes.");
  const ct_tensor *in[3] = {s, t1, t2};
  ct_dtype dt = ct_result_type_n(3, in);
  if (dt == CT_BOOL || dt == CT_FLOAT16) return not_impl(op == CT_OP_addcmul ? "addcmul_cpu_out" : "addcdiv_cpu_out", dt);
  return CT_OK;
}
static ct_tensor *addc(int op, const ct_tensor *s, const ct_tensor *t1, const ct_tensor *t2, ct_scalar v) {
  if (addc_check(op, s, t1, t2)) return NULL;
  ct_attrs a = value_attrs(v);
  const ct_tensor *in[3] = {s, t1, t2};
  return ct_pointwise(op, 3, in, &a, CT_OUT_SAME);
}
static ct_status addc_(int op, ct_tensor *s, const ct_tensor *t1, const ct_tensor *t2, ct_scalar v) {
  CT_TRY(addc_check(op, s, t1, t2));
  ct_attrs a = value_attrs(v);
  ct_tensor *in[3] = {s, (ct_tensor *)t1, (ct_tensor *)t2};
  return ct_pointwise_(op, 3, in, &a, CT_OUT_SAME);
}
static ct_status addc_out(int op, ct_tensor *out, const ct_tensor *s, const ct_tensor *t1, const ct_tensor *t2,
                          ct_scalar v) {
  CT_TRY(addc_check(op, s, t1, t2));
  ct_attrs a = value_attrs(v);
  const ct_tensor *in[3] = {s, t1, t2};
  return ct_pointwise_out(op, out, 3, in, &a, CT_OUT_SAME);
}
ct_tensor *ct_addcmul(const ct_tensor *s, const ct_tensor *t1, const ct_tensor *t2, ct_scalar v) {
  return addc(CT_OP_addcmul, s, t1, t2, v);
}
ct_status ct_addcmul_(ct_tensor *s, const ct_tensor *t1, const ct_tensor *t2, ct_scalar v) {
  return addc_(CT_OP_addcmul, s, t1, t2, v);
}
ct_status ct_addcmul_out(ct_tensor *out, const ct_tensor *s, const ct_tensor *t1, const ct_tensor *t2, ct_scalar v) {
  return addc_out(CT_OP_addcmul, out, s, t1, t2, v);
}
ct_tensor *ct_addcdiv(const ct_tensor *s, const ct_tensor *t1, const ct_tensor *t2, ct_scalar v) {
  return addc(CT_OP_addcdiv, s, t1, t2, v);
}
ct_status ct_addcdiv_(ct_tensor *s, const ct_tensor *t1, const ct_tensor *t2, ct_scalar v) {
  return addc_(CT_OP_addcdiv, s, t1, t2, v);
}
ct_status ct_addcdiv_out(ct_tensor *out, const ct_tensor *s, const ct_tensor *t1, const ct_tensor *t2, ct_scalar v) {
  return addc_out(CT_OP_addcdiv, out, s, t1, t2, v);
}

/* self: grad; tensor1: grad * tensor2 * value; tensor2: grad * tensor1 * value */
ct_status ct_bw_addcmul(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  double v = n->a.f[0];
  ct_tensor *t1 = ct_node_saved_in(n, 1), *t2 = ct_node_saved_in(n, 2);
  if (!t1 || !t2) return ct_last_status();
  ct_status st = CT_OK;
  if (ct_node_needs_grad(n, 0)) gin[0] = ct_retain(g[0]);
  ct_scope *sc = ct_scope_begin();
  if (ct_node_needs_grad(n, 1)) gin[1] = keep_or_null(MS(M(g[0], t2), v), &st);
  if (st == CT_OK && ct_node_needs_grad(n, 2)) gin[2] = keep_or_null(MS(M(g[0], t1), v), &st);
  ct_scope_end(sc);
  return st;
}
/* self: grad; tensor1: grad * value / tensor2; tensor2: -grad * value * tensor1 / (tensor2 * tensor2) */
ct_status ct_bw_addcdiv(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  double v = n->a.f[0];
  ct_tensor *t1 = ct_node_saved_in(n, 1), *t2 = ct_node_saved_in(n, 2);
  if (!t1 || !t2) return ct_last_status();
  ct_status st = CT_OK;
  if (ct_node_needs_grad(n, 0)) gin[0] = ct_retain(g[0]);
  ct_scope *sc = ct_scope_begin();
  if (ct_node_needs_grad(n, 1)) gin[1] = keep_or_null(D(MS(g[0], v), t2), &st);
  if (st == CT_OK && ct_node_needs_grad(n, 2)) gin[2] = keep_or_null(D(M(MS(g[0], -v), t1), M(t2, t2)), &st);
  ct_scope_end(sc);
  return st;
}

/* ---- clamp(x, min tensor, max tensor) ---- */
static ct_status clampt_check(const ct_tensor *x, const ct_tensor *lo, const ct_tensor *hi, int *n,
                              const ct_tensor **in, ct_attrs *a) {
  CT_TRY(ct_check_tensor(x, "clamp"));
  if (!lo && !hi) return CT_ERR(CT_ERR_RUNTIME, "torch.clamp: At least one of 'min' or 'max' must not be None");
  *a = ct_attrs_zero();
  *n = 0;
  in[(*n)++] = x;
  if (lo) in[(*n)++] = lo, a->k[0] = 1;
  if (hi) in[(*n)++] = hi, a->k[1] = 1;
  ct_dtype dt = ct_result_type_n(*n, in);
  if (dt == CT_BOOL || dt == CT_FLOAT16) return not_impl("clamp_cpu", dt);
  return CT_OK;
}
ct_tensor *ct_clamp_tensor(const ct_tensor *x, const ct_tensor *lo, const ct_tensor *hi) {
  int n;
  const ct_tensor *in[3];
  ct_attrs a;
  if (clampt_check(x, lo, hi, &n, in, &a)) return NULL;
  return ct_name_node(ct_pointwise(CT_OP_clamp_tensor, n, in, &a, CT_OUT_SAME), "ClampBackward0");
}
ct_status ct_clamp_tensor_(ct_tensor *x, const ct_tensor *lo, const ct_tensor *hi) {
  int n;
  const ct_tensor *in[3];
  ct_attrs a;
  CT_TRY(clampt_check(x, lo, hi, &n, in, &a));
  CT_TRY(ct_pointwise_(CT_OP_clamp_tensor, n, (ct_tensor *const *)in, &a, CT_OUT_SAME));
  ct_name_node(x, "ClampBackward0");
  return CT_OK;
}
ct_status ct_clamp_tensor_out(ct_tensor *out, const ct_tensor *x, const ct_tensor *lo, const ct_tensor *hi) {
  int n;
  const ct_tensor *in[3];
  ct_attrs a;
  CT_TRY(clampt_check(x, lo, hi, &n, in, &a));
  return ct_pointwise_out(CT_OP_clamp_tensor, out, n, in, &a, CT_OUT_SAME);
}

/* The masked gradient for input `which` (0 self, 1 min, 2 max); ins = x[, min][, max]. */
static ct_tensor *clamp_grad(const ct_tensor *g, int nb, ct_tensor *const *ins, const ct_attrs *fa, int which) {
  ct_attrs a = *fa;
  a.k[2] = which;
  const ct_tensor *in[4] = {g, ins[0], nb > 0 ? ins[1] : NULL, nb > 1 ? ins[2] : NULL};
  return ct_pointwise(CT_OP_clamp_tensor_grad, 2 + nb, in, &a, CT_OUT_SAME);
}
ct_status ct_bw_clamp_tensor(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *ins[3];
  for (int i = 0; i < n->n_in; i++)
    if (!(ins[i] = ct_node_saved_in(n, i))) return ct_last_status();
  int nb = n->n_in - 1;
  for (int i = 0; i < n->n_in; i++) {
    if (!ct_node_needs_grad(n, i)) continue;
    int which = i == 0 ? 0 : (i == 1 && n->a.k[0] ? 1 : 2);
    if (!(gin[i] = clamp_grad(g[0], nb, ins, &n->a, which))) return ct_last_status();
  }
  return CT_OK;
}
/* linear in g; the masks are piecewise constant in x and the bounds */
ct_status ct_bw_clamp_tensor_grad(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (!ct_node_needs_grad(n, 0)) return CT_OK;
  ct_tensor *ins[3];
  for (int i = 1; i < n->n_in; i++)
    if (!(ins[i - 1] = ct_node_saved_in(n, i))) return ct_last_status();
  gin[0] = clamp_grad(g[0], n->n_in - 2, ins, &n->a, (int)n->a.k[2]);
  return gin[0] ? CT_OK : ct_last_status();
}
