/* Binary elementwise ops: forward entry points and derivative formulas side by side. */
#include "pointwise.h"

static ct_tensor *bin(int op, const ct_tensor *a, const ct_tensor *b, const ct_attrs *at, ct_out_kind k) {
  const ct_tensor *in[2] = {a, b};
  return ct_pointwise(op, 2, in, at, k);
}
static ct_tensor *bin_scalar(int op, const ct_tensor *a, ct_scalar s, const ct_attrs *at, ct_out_kind k) {
  ct_tensor *w = ct_wrap_scalar(s);
  if (!w) return NULL;
  ct_tensor *r = bin(op, a, w, at, k);
  ct_release(w);
  return r;
}
static ct_status bin_(int op, ct_tensor *a, const ct_tensor *b, const ct_attrs *at, ct_out_kind k) {
  ct_tensor *in[2] = {a, (ct_tensor *)b};
  return ct_pointwise_(op, 2, in, at, k);
}
static ct_status bin_scalar_(int op, ct_tensor *a, ct_scalar s, const ct_attrs *at, ct_out_kind k) {
  ct_tensor *w = ct_wrap_scalar(s);
  if (!w) return ct_last_status();
  ct_status st = bin_(op, a, w, at, k);
  ct_release(w);
  return st;
}
static ct_attrs alpha_attrs(ct_scalar alpha) {
  ct_attrs a = ct_attrs_zero();
  a.s[0] = alpha;
  a.f[0] = alpha.kind == CT_SCALAR_FLOAT ? alpha.f : (double)alpha.i;
  return a;
}

/* ---- add / sub: out = a + alpha*b ---- */
static ct_status check_alpha(const ct_tensor *a, const ct_tensor *b, ct_scalar alpha) {
  if (!a || !b) return CT_OK;
  const ct_tensor *in[2] = {a, b};
  ct_dtype dt = ct_result_type_n(2, in);
  if (alpha.kind == CT_SCALAR_FLOAT && !ct_dtype_is_floating(dt))
    return CT_ERR(CT_ERR_RUNTIME, "For integral input tensors, argument alpha must not be a floating point number.");
  if (dt == CT_BOOL && alpha.kind == CT_SCALAR_INT && alpha.i != 0 && alpha.i != 1)
    return CT_ERR(CT_ERR_RUNTIME, "Boolean alpha only supported for Boolean results.");
  return CT_OK;
}

ct_tensor *ct_add_alpha(const ct_tensor *a, const ct_tensor *b, ct_scalar alpha) {
  if (check_alpha(a, b, alpha)) return NULL;
  ct_attrs at = alpha_attrs(alpha);
  return bin(CT_OP_add, a, b, &at, CT_OUT_SAME);
}
ct_tensor *ct_add(const ct_tensor *a, const ct_tensor *b) { return ct_add_alpha(a, b, ct_si(1)); }
ct_tensor *ct_add_scalar(const ct_tensor *a, ct_scalar s) {
  ct_attrs at = alpha_attrs(ct_si(1));
  return bin_scalar(CT_OP_add, a, s, &at, CT_OUT_SAME);
}
ct_status ct_add_alpha_(ct_tensor *a, const ct_tensor *b, ct_scalar alpha) {
  CT_TRY(check_alpha(a, b, alpha));
  ct_attrs at = alpha_attrs(alpha);
  return bin_(CT_OP_add, a, b, &at, CT_OUT_SAME);
}
ct_status ct_add_(ct_tensor *a, const ct_tensor *b) { return ct_add_alpha_(a, b, ct_si(1)); }
ct_status ct_add_scalar_(ct_tensor *a, ct_scalar s) {
  ct_attrs at = alpha_attrs(ct_si(1));
  return bin_scalar_(CT_OP_add, a, s, &at, CT_OUT_SAME);
}
ct_status ct_add_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  ct_attrs at = alpha_attrs(ct_si(1));
  const ct_tensor *in[2] = {a, b};
  return ct_pointwise_out(CT_OP_add, out, 2, in, &at, CT_OUT_SAME);
}

static ct_status check_sub(const ct_tensor *a, const ct_tensor *b) {
  if (a && b && (a->dtype == CT_BOOL || b->dtype == CT_BOOL))
    if (a->dtype == CT_BOOL && b->dtype == CT_BOOL)
      return CT_ERR(CT_ERR_RUNTIME, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                    "`^` or `logical_xor()` operator instead.");
  if (a && b && (a->dtype == CT_BOOL || b->dtype == CT_BOOL))
    return CT_ERR(CT_ERR_RUNTIME, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                  "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  return CT_OK;
}
ct_tensor *ct_sub_alpha(const ct_tensor *a, const ct_tensor *b, ct_scalar alpha) {
  if (check_sub(a, b) || check_alpha(a, b, alpha)) return NULL;
  ct_attrs at = alpha_attrs(alpha);
  return bin(CT_OP_sub, a, b, &at, CT_OUT_SAME);
}
ct_tensor *ct_sub(const ct_tensor *a, const ct_tensor *b) { return ct_sub_alpha(a, b, ct_si(1)); }
ct_tensor *ct_sub_scalar(const ct_tensor *a, ct_scalar s) {
  ct_tensor *w = ct_wrap_scalar(s);
  if (!w) return NULL;
  ct_tensor *r = ct_sub(a, w);
  ct_release(w);
  return r;
}
ct_tensor *ct_rsub_scalar(const ct_tensor *a, ct_scalar s) {
  ct_tensor *w = ct_wrap_scalar(s);
  if (!w) return NULL;
  ct_tensor *r = ct_sub(w, a);
  if (r && r->grad_fn) r->grad_fn->name = "RsubBackward1";
  ct_release(w);
  return r;
}
ct_status ct_sub_(ct_tensor *a, const ct_tensor *b) {
  CT_TRY(check_sub(a, b));
  ct_attrs at = alpha_attrs(ct_si(1));
  return bin_(CT_OP_sub, a, b, &at, CT_OUT_SAME);
}
ct_status ct_sub_scalar_(ct_tensor *a, ct_scalar s) {
  ct_tensor *w = ct_wrap_scalar(s);
  if (!w) return ct_last_status();
  ct_status st = ct_sub_(a, w);
  ct_release(w);
  return st;
}

ct_status ct_bw_add(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (ct_node_needs_grad(n, 0)) gin[0] = ct_retain(g[0]);
  if (ct_node_needs_grad(n, 1)) gin[1] = n->a.f[0] == 1.0 ? ct_retain(g[0]) : ct_mul_scalar(g[0], ct_sf(n->a.f[0]));
  return CT_OK;
}

ct_status ct_bw_sub(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (ct_node_needs_grad(n, 0)) gin[0] = ct_retain(g[0]);
  if (ct_node_needs_grad(n, 1)) gin[1] = ct_mul_scalar(g[0], ct_sf(-n->a.f[0]));
  return CT_OK;
}

/* ---- mul ---- */
ct_tensor *ct_mul(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_mul, a, b, NULL, CT_OUT_SAME); }
ct_tensor *ct_mul_scalar(const ct_tensor *a, ct_scalar s) { return bin_scalar(CT_OP_mul, a, s, NULL, CT_OUT_SAME); }
ct_status ct_mul_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_mul, a, b, NULL, CT_OUT_SAME); }
ct_status ct_mul_scalar_(ct_tensor *a, ct_scalar s) { return bin_scalar_(CT_OP_mul, a, s, NULL, CT_OUT_SAME); }
ct_status ct_mul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  const ct_tensor *in[2] = {a, b};
  return ct_pointwise_out(CT_OP_mul, out, 2, in, NULL, CT_OUT_SAME);
}

ct_status ct_bw_mul(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_mul(g[0], b))) return ct_last_status();
  if (ct_node_needs_grad(n, 1) && !(gin[1] = ct_mul(g[0], a))) return ct_last_status();
  return CT_OK;
}

/* ---- div ---- */
static ct_tensor *div_impl(const ct_tensor *a, const ct_tensor *b, const char *mode) {
  ct_attrs at = ct_attrs_zero();
  if (!mode) return bin(CT_OP_div, a, b, &at, CT_OUT_FLOAT);
  if (!strcmp(mode, "trunc")) at.k[0] = 1;
  else if (!strcmp(mode, "floor")) at.k[0] = 2;
  else {
    ct_set_error(CT_ERR_RUNTIME, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'", mode);
    return NULL;
  }
  return bin(CT_OP_div, a, b, &at, CT_OUT_SAME);
}
ct_tensor *ct_div(const ct_tensor *a, const ct_tensor *b) { return div_impl(a, b, NULL); }
ct_tensor *ct_div_mode(const ct_tensor *a, const ct_tensor *b, const char *mode) { return div_impl(a, b, mode); }
ct_tensor *ct_div_scalar(const ct_tensor *a, ct_scalar s) { return bin_scalar(CT_OP_div, a, s, NULL, CT_OUT_FLOAT); }
ct_status ct_div_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_div, a, b, NULL, CT_OUT_FLOAT); }
ct_status ct_div_scalar_(ct_tensor *a, ct_scalar s) { return bin_scalar_(CT_OP_div, a, s, NULL, CT_OUT_FLOAT); }

ct_status ct_bw_div(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (n->a.k[0] != 0) return CT_OK; /* rounding modes are piecewise constant: zero gradient */
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_div(g[0], b))) return ct_last_status();
  if (ct_node_needs_grad(n, 1)) {
    /* -g * a / b^2 */
    ct_tensor *t1 = ct_div(g[0], b), *t2 = t1 ? ct_div(t1, b) : NULL, *t3 = t2 ? ct_mul(t2, a) : NULL;
    gin[1] = t3 ? ct_neg(t3) : NULL;
    ct_release(t1);
    ct_release(t2);
    ct_release(t3);
    if (!gin[1]) return ct_last_status();
  }
  return CT_OK;
}
