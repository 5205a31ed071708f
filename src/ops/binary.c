/* Binary elementwise ops: forward entry points and derivative formulas side by side.
 * Attributes (ct_attrs) used here: f[0] alpha as double and s[0] alpha (add/sub);
 * k[0] rounding mode (div: 1 trunc, 2 floor); k[2] = 1 and s[0] for pow with a
 * Python-number exponent; isclose: f[0] rtol, f[1] atol, k[0] equal_nan, k[1] the
 * default dtype. Derivative formulas follow PyTorch 1.13's derivatives.yaml and call
 * public ops only, so they run on every backend and support double backward. */
#include "pointwise.h"
#include <stdlib.h>

/* ---- helpers ---------------------------------------------------------------- */

/* The dtypes each op's CPU kernel accepts in PyTorch 1.13 (by computation dtype),
 * with PyTorch's message for the others. */
static ct_status check_dtype(int op, ct_dtype dt, const ct_attrs *at) {
  const char *name = NULL;
  bool is_float = ct_dtype_is_floating(dt);
  switch (op) {
    case CT_OP_div:
      if (at && at->k[0] && dt == CT_BOOL) name = at->k[0] == 1 ? "div_trunc_cpu" : "div_floor_cpu";
      break;
    case CT_OP_floor_divide: if (dt == CT_BOOL) name = "div_floor_cpu"; break;
    case CT_OP_remainder: if (dt == CT_BOOL) name = "remainder_cpu"; break;
    case CT_OP_fmod: if (dt == CT_BOOL) name = "fmod_cpu"; break;
    case CT_OP_pow:
      if (dt == CT_BOOL) return CT_ERR(CT_ERR_RUNTIME, "\"pow\" not implemented for 'Bool'");
      break;
    case CT_OP_atan2: if (dt == CT_FLOAT16) name = "atan2_cpu"; break;
    case CT_OP_hypot:
    case CT_OP_logaddexp:
    case CT_OP_logaddexp2:
      if (dt != CT_FLOAT32 && dt != CT_FLOAT64 && dt != CT_BFLOAT16)
        name = op == CT_OP_hypot ? "hypot_cpu" : op == CT_OP_logaddexp ? "logaddexp_cpu" : "logaddexp2_cpu";
      break;
    case CT_OP_bitwise_and: if (is_float) name = "bitwise_and_cpu"; break;
    case CT_OP_bitwise_or: if (is_float) name = "bitwise_or_cpu"; break;
    case CT_OP_bitwise_xor: if (is_float) name = "bitwise_xor_cpu"; break;
    case CT_OP_bitwise_left_shift: if (is_float || dt == CT_BOOL) name = "lshift_cpu"; break;
    case CT_OP_bitwise_right_shift: if (is_float || dt == CT_BOOL) name = "rshift_cpu"; break;
    default: break;
  }
  if (name) return CT_ERR(CT_ERR_RUNTIME, "\"%s\" not implemented for '%s'", name, ct_dtype_torch_name(dt));
  return CT_OK;
}

static ct_status check_args(int op, const ct_tensor *a, const ct_tensor *b, const ct_attrs *at, ct_out_kind k) {
  const char *id = ct_op_info_of(op)->id;
  CT_TRY(ct_check_tensor(a, id));
  CT_TRY(ct_check_tensor(b, id));
  const ct_tensor *in[2] = {a, b};
  return check_dtype(op, ct_pointwise_compute_dtype(2, in, k), at);
}

static ct_tensor *bin(int op, const ct_tensor *a, const ct_tensor *b, const ct_attrs *at, ct_out_kind k) {
  if (check_args(op, a, b, at, k)) return NULL;
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
  CT_TRY(check_args(op, a, b, at, k));
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
static ct_status bin_out(int op, ct_tensor *out, const ct_tensor *a, const ct_tensor *b, const ct_attrs *at,
                         ct_out_kind k) {
  CT_TRY(check_args(op, a, b, at, k));
  const ct_tensor *in[2] = {a, b};
  return ct_pointwise_out(op, out, 2, in, at, k);
}
static ct_attrs alpha_attrs(ct_scalar alpha) {
  ct_attrs a = ct_attrs_zero();
  a.s[0] = alpha;
  a.f[0] = alpha.kind == CT_SCALAR_FLOAT ? alpha.f : (double)alpha.i;
  return a;
}
/* Free a list of temporaries (NULL-safe). */
static void drop(int n, ct_tensor **t) {
  for (int i = 0; i < n; i++) ct_release(t[i]);
}
#define DROP(...)                                      \
  do {                                                 \
    ct_tensor *_d[] = {__VA_ARGS__};                   \
    drop((int)(sizeof _d / sizeof _d[0]), _d);         \
  } while (0)

/* where(mask, 0, x): the internal masked_zero op (differentiable in x). */
static ct_tensor *masked_zero(const ct_tensor *x, const ct_tensor *mask) {
  if (!x || !mask) return NULL;
  return bin(CT_OP_masked_zero, x, mask, NULL, CT_OUT_SAME);
}
ct_status ct_bw_masked_zero(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *m = ct_node_saved_in(n, 1);
  if (!m) return ct_last_status();
  if (ct_node_needs_grad(n, 0) && !(gin[0] = masked_zero(g[0], m))) return ct_last_status();
  return CT_OK;
}

/* Zero gradients for every input that needs one (PyTorch's zeros_like(grad)). */
static ct_status zero_grads(ct_node *n, ct_tensor **gin) {
  for (int i = 0; i < n->n_in; i++)
    if (ct_node_needs_grad(n, i) && !(gin[i] = ct_zeros_meta(&n->in_meta[i]))) return ct_last_status();
  return CT_OK;
}

/* ---- add / sub / rsub: out = a + alpha*b ------------------------------------ */
static ct_status check_alpha(const ct_tensor *a, const ct_tensor *b, ct_scalar alpha) {
  if (!a || !b) return CT_OK;
  const ct_tensor *in[2] = {a, b};
  ct_dtype dt = ct_result_type_n(2, in);
  if (alpha.kind == CT_SCALAR_FLOAT && !ct_dtype_is_floating(dt))
    return CT_ERR(CT_ERR_RUNTIME, "For integral input tensors, argument alpha must not be a floating point number.");
  /* PyTorch refuses a bool alpha for a non-bool result; any integer alpha is fine for a bool result */
  if (alpha.kind == CT_SCALAR_BOOL && dt != CT_BOOL)
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
ct_status ct_add_alpha_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, ct_scalar alpha) {
  CT_TRY(check_alpha(a, b, alpha));
  ct_attrs at = alpha_attrs(alpha);
  return bin_out(CT_OP_add, out, a, b, &at, CT_OUT_SAME);
}
ct_status ct_add_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  return ct_add_alpha_out(out, a, b, ct_si(1));
}

static ct_status check_sub(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return CT_OK;
  if (a->dtype == CT_BOOL && b->dtype == CT_BOOL)
    return CT_ERR(CT_ERR_RUNTIME, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                  "`^` or `logical_xor()` operator instead.");
  if (a->dtype == CT_BOOL || b->dtype == CT_BOOL)
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
ct_status ct_sub_alpha_(ct_tensor *a, const ct_tensor *b, ct_scalar alpha) {
  CT_TRY(check_sub(a, b));
  CT_TRY(check_alpha(a, b, alpha));
  ct_attrs at = alpha_attrs(alpha);
  return bin_(CT_OP_sub, a, b, &at, CT_OUT_SAME);
}
ct_status ct_sub_(ct_tensor *a, const ct_tensor *b) { return ct_sub_alpha_(a, b, ct_si(1)); }
ct_status ct_sub_scalar_(ct_tensor *a, ct_scalar s) {
  ct_tensor *w = ct_wrap_scalar(s);
  if (!w) return ct_last_status();
  ct_status st = ct_sub_(a, w);
  ct_release(w);
  return st;
}
ct_status ct_sub_alpha_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, ct_scalar alpha) {
  CT_TRY(check_sub(a, b));
  CT_TRY(check_alpha(a, b, alpha));
  ct_attrs at = alpha_attrs(alpha);
  return bin_out(CT_OP_sub, out, a, b, &at, CT_OUT_SAME);
}
ct_status ct_sub_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  return ct_sub_alpha_out(out, a, b, ct_si(1));
}
/* rsub(a, b, alpha) = b - alpha * a: a sub node with the operands swapped. */
ct_tensor *ct_rsub_alpha(const ct_tensor *a, const ct_tensor *b, ct_scalar alpha) {
  if (!a || !b) {
    ct_set_error(CT_ERR_VALUE, "rsub: expected a tensor, got NULL");
    return NULL;
  }
  ct_tensor *r = ct_sub_alpha(b, a, alpha);
  if (r && r->grad_fn) r->grad_fn->name = "RsubBackward0";
  return r;
}
ct_tensor *ct_rsub(const ct_tensor *a, const ct_tensor *b) { return ct_rsub_alpha(a, b, ct_si(1)); }
ct_tensor *ct_rsub_scalar(const ct_tensor *a, ct_scalar s) {
  if (ct_check_tensor(a, "rsub")) return NULL;
  ct_tensor *w = ct_wrap_scalar(s);
  if (!w) return NULL;
  ct_tensor *r = ct_sub(w, a);
  if (r && r->grad_fn) r->grad_fn->name = "RsubBackward1";
  ct_release(w);
  return r;
}

ct_status ct_bw_add(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (ct_node_needs_grad(n, 0)) gin[0] = ct_retain(g[0]);
  if (ct_node_needs_grad(n, 1) &&
      !(gin[1] = n->a.f[0] == 1.0 ? ct_retain(g[0]) : ct_mul_scalar(g[0], ct_sf(n->a.f[0]))))
    return ct_last_status();
  return CT_OK;
}

ct_status ct_bw_sub(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (ct_node_needs_grad(n, 0)) gin[0] = ct_retain(g[0]);
  if (ct_node_needs_grad(n, 1) && !(gin[1] = ct_mul_scalar(g[0], ct_sf(-n->a.f[0])))) return ct_last_status();
  return CT_OK;
}

/* ---- mul ------------------------------------------------------------------------ */
ct_tensor *ct_mul(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_mul, a, b, NULL, CT_OUT_SAME); }
ct_tensor *ct_mul_scalar(const ct_tensor *a, ct_scalar s) { return bin_scalar(CT_OP_mul, a, s, NULL, CT_OUT_SAME); }
ct_status ct_mul_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_mul, a, b, NULL, CT_OUT_SAME); }
ct_status ct_mul_scalar_(ct_tensor *a, ct_scalar s) { return bin_scalar_(CT_OP_mul, a, s, NULL, CT_OUT_SAME); }
ct_status ct_mul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  return bin_out(CT_OP_mul, out, a, b, NULL, CT_OUT_SAME);
}

ct_status ct_bw_mul(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_mul(g[0], b))) return ct_last_status();
  if (ct_node_needs_grad(n, 1) && !(gin[1] = ct_mul(g[0], a))) return ct_last_status();
  return CT_OK;
}

/* ---- div ------------------------------------------------------------------------ */
/* mode: NULL, "trunc" or "floor"; fills at->k[0] and the output kind. */
static ct_status div_mode_attrs(const char *mode, ct_attrs *at, ct_out_kind *k) {
  *at = ct_attrs_zero();
  *k = CT_OUT_FLOAT;
  if (!mode) return CT_OK;
  *k = CT_OUT_SAME;
  if (!strcmp(mode, "trunc")) at->k[0] = 1;
  else if (!strcmp(mode, "floor")) at->k[0] = 2;
  else
    return CT_ERR(CT_ERR_RUNTIME, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'",
                  mode);
  return CT_OK;
}
ct_tensor *ct_div_mode(const ct_tensor *a, const ct_tensor *b, const char *mode) {
  ct_attrs at;
  ct_out_kind k;
  if (div_mode_attrs(mode, &at, &k)) return NULL;
  return bin(CT_OP_div, a, b, &at, k);
}
ct_tensor *ct_div(const ct_tensor *a, const ct_tensor *b) { return ct_div_mode(a, b, NULL); }
ct_tensor *ct_div_scalar_mode(const ct_tensor *a, ct_scalar s, const char *mode) {
  ct_attrs at;
  ct_out_kind k;
  if (div_mode_attrs(mode, &at, &k)) return NULL;
  return bin_scalar(CT_OP_div, a, s, &at, k);
}
ct_tensor *ct_div_scalar(const ct_tensor *a, ct_scalar s) { return ct_div_scalar_mode(a, s, NULL); }
ct_status ct_div_mode_(ct_tensor *a, const ct_tensor *b, const char *mode) {
  ct_attrs at;
  ct_out_kind k;
  CT_TRY(div_mode_attrs(mode, &at, &k));
  return bin_(CT_OP_div, a, b, &at, k);
}
ct_status ct_div_(ct_tensor *a, const ct_tensor *b) { return ct_div_mode_(a, b, NULL); }
ct_status ct_div_scalar_mode_(ct_tensor *a, ct_scalar s, const char *mode) {
  ct_attrs at;
  ct_out_kind k;
  CT_TRY(div_mode_attrs(mode, &at, &k));
  return bin_scalar_(CT_OP_div, a, s, &at, k);
}
ct_status ct_div_scalar_(ct_tensor *a, ct_scalar s) { return ct_div_scalar_mode_(a, s, NULL); }
ct_status ct_div_mode_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, const char *mode) {
  ct_attrs at;
  ct_out_kind k;
  CT_TRY(div_mode_attrs(mode, &at, &k));
  return bin_out(CT_OP_div, out, a, b, &at, k);
}
ct_status ct_div_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) { return ct_div_mode_out(out, a, b, NULL); }

ct_status ct_bw_div(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (n->a.k[0] != 0) return zero_grads(n, gin); /* rounding modes are piecewise constant */
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  if (ct_node_needs_grad(n, 0) && !(gin[0] = ct_div(g[0], b))) return ct_last_status();
  if (ct_node_needs_grad(n, 1)) {
    /* -grad * ((a / b) / b) */
    ct_tensor *ng = ct_neg(g[0]), *q = ct_div(a, b), *q2 = q ? ct_div(q, b) : NULL;
    gin[1] = ng && q2 ? ct_mul(ng, q2) : NULL;
    DROP(ng, q, q2);
    if (!gin[1]) return ct_last_status();
  }
  return CT_OK;
}

/* ---- floor_divide ------------------------------------------------------------------ */
ct_tensor *ct_floor_divide(const ct_tensor *a, const ct_tensor *b) {
  return bin(CT_OP_floor_divide, a, b, NULL, CT_OUT_SAME);
}
ct_tensor *ct_floor_divide_scalar(const ct_tensor *a, ct_scalar s) {
  return bin_scalar(CT_OP_floor_divide, a, s, NULL, CT_OUT_SAME);
}
ct_status ct_floor_divide_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_floor_divide, a, b, NULL, CT_OUT_SAME); }
ct_status ct_floor_divide_scalar_(ct_tensor *a, ct_scalar s) {
  return bin_scalar_(CT_OP_floor_divide, a, s, NULL, CT_OUT_SAME);
}
ct_status ct_bw_floor_divide(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  (void)n, (void)g, (void)gin;
  return CT_ERR(CT_ERR_RUNTIME, "derivative for aten::floor_divide is not implemented");
}

/* ---- remainder / fmod: d/da = 1, d/db = -floor(a/b) resp. -trunc(a/b) ---------------- */
ct_tensor *ct_remainder(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_remainder, a, b, NULL, CT_OUT_SAME); }
ct_tensor *ct_remainder_scalar(const ct_tensor *a, ct_scalar s) {
  return bin_scalar(CT_OP_remainder, a, s, NULL, CT_OUT_SAME);
}
ct_status ct_remainder_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_remainder, a, b, NULL, CT_OUT_SAME); }
ct_status ct_remainder_scalar_(ct_tensor *a, ct_scalar s) {
  return bin_scalar_(CT_OP_remainder, a, s, NULL, CT_OUT_SAME);
}
ct_tensor *ct_fmod(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_fmod, a, b, NULL, CT_OUT_SAME); }
ct_tensor *ct_fmod_scalar(const ct_tensor *a, ct_scalar s) { return bin_scalar(CT_OP_fmod, a, s, NULL, CT_OUT_SAME); }
ct_status ct_fmod_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_fmod, a, b, NULL, CT_OUT_SAME); }
ct_status ct_fmod_scalar_(ct_tensor *a, ct_scalar s) { return bin_scalar_(CT_OP_fmod, a, s, NULL, CT_OUT_SAME); }

static ct_status bw_mod(ct_node *n, ct_tensor *const *g, ct_tensor **gin, const char *mode) {
  if (ct_node_needs_grad(n, 0)) gin[0] = ct_retain(g[0]);
  if (ct_node_needs_grad(n, 1)) {
    ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
    if (!a || !b) return ct_last_status();
    ct_tensor *ng = ct_neg(g[0]), *q = ct_div_mode(a, b, mode);
    gin[1] = ng && q ? ct_mul(ng, q) : NULL;
    DROP(ng, q);
    if (!gin[1]) return ct_last_status();
  }
  return CT_OK;
}
ct_status ct_bw_remainder(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return bw_mod(n, g, gin, "floor"); }
ct_status ct_bw_fmod(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return bw_mod(n, g, gin, "trunc"); }

/* ---- pow ------------------------------------------------------------------------------ */
static double scalar_to_double(ct_scalar s) { return s.kind == CT_SCALAR_FLOAT ? s.f : (double)s.i; }

ct_tensor *ct_pow(const ct_tensor *a, const ct_tensor *b) {
  ct_tensor *r = bin(CT_OP_pow, a, b, NULL, CT_OUT_SAME);
  /* PyTorch's pow.Tensor_Tensor node; a wrapped number exponent is pow.Tensor_Scalar's */
  if (r && r->grad_fn && !b->is_wrapped_number) r->grad_fn->name = "PowBackward1";
  return r;
}
ct_status ct_pow_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_pow, a, b, NULL, CT_OUT_SAME); }
ct_status ct_pow_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  return bin_out(CT_OP_pow, out, a, b, NULL, CT_OUT_SAME);
}
static ct_status pow_scalar_check(const ct_tensor *a, ct_scalar e, ct_attrs *at) {
  CT_TRY(ct_check_tensor(a, "pow"));
  if (ct_dtype_is_integral(a->dtype, true) && e.kind == CT_SCALAR_INT && e.i < 0)
    return CT_ERR(CT_ERR_RUNTIME, "Integers to negative integer powers are not allowed.");
  *at = ct_attrs_zero();
  at->k[2] = 1;
  at->s[0] = e;
  return CT_OK;
}
ct_tensor *ct_pow_scalar(const ct_tensor *a, ct_scalar e) {
  ct_attrs at;
  if (pow_scalar_check(a, e, &at)) return NULL;
  return bin_scalar(CT_OP_pow, a, e, &at, CT_OUT_SAME);
}
ct_status ct_pow_scalar_(ct_tensor *a, ct_scalar e) {
  ct_attrs at;
  CT_TRY(pow_scalar_check(a, e, &at));
  ct_tensor *w = ct_wrap_scalar(e);
  if (!w) return ct_last_status();
  const ct_tensor *in[2] = {a, w};
  ct_dtype r = ct_pointwise_compute_dtype(2, in, CT_OUT_SAME);
  ct_status st = CT_OK;
  if (!ct_can_cast(r, a->dtype)) /* PyTorch's wording for pow_ with a number */
    st = CT_ERR(CT_ERR_RUNTIME, "Found dtype %s but expected %s", ct_dtype_torch_name(a->dtype),
                ct_dtype_torch_name(r));
  if (st == CT_OK) st = bin_(CT_OP_pow, a, w, &at, CT_OUT_SAME);
  ct_release(w);
  return st;
}
ct_tensor *ct_pow_scalar_tensor(ct_scalar base, const ct_tensor *e) {
  if (ct_check_tensor(e, "pow")) return NULL;
  ct_tensor *w = ct_wrap_scalar(base);
  if (!w) return NULL;
  ct_tensor *r = bin(CT_OP_pow, w, e, NULL, CT_OUT_SAME);
  if (r && r->grad_fn) r->grad_fn->name = "PowBackward2";
  ct_release(w);
  return r;
}

ct_status ct_bw_pow(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *self = ct_node_saved_in(n, 0), *e = ct_node_saved_in(n, 1);
  if (!self || !e) return ct_last_status();
  if (n->a.k[2]) {
    /* number exponent: 0 -> zeros, else grad * (e * self^(e-1)) */
    if (!ct_node_needs_grad(n, 0)) return CT_OK;
    double ed = scalar_to_double(n->a.s[0]);
    if (ed == 0) return (gin[0] = ct_zeros_meta(&n->in_meta[0])) ? CT_OK : ct_last_status();
    ct_tensor *p = ct_pow_scalar(self, ct_sf(ed - 1)), *t = p ? ct_mul_scalar(p, ct_sf(ed)) : NULL;
    gin[0] = t ? ct_mul(g[0], t) : NULL;
    DROP(p, t);
    return gin[0] ? CT_OK : ct_last_status();
  }
  if (ct_node_needs_grad(n, 0)) {
    /* where(e == 0, 0, grad * (e * self^(e-1))) */
    ct_tensor *em1 = ct_sub_scalar(e, ct_si(1)), *p = em1 ? ct_pow(self, em1) : NULL, *t = p ? ct_mul(e, p) : NULL;
    /* each step only after the previous succeeded: a later op that succeeds would clear
     * the first error, and a NULL gradient with no error reads as a zero gradient */
    ct_tensor *u = t ? ct_mul(g[0], t) : NULL, *z = u ? ct_eq_scalar(e, ct_sf(0.0)) : NULL;
    gin[0] = u && z ? masked_zero(u, z) : NULL;
    DROP(em1, p, t, u, z);
    if (!gin[0]) return ct_last_status();
  }
  if (ct_node_needs_grad(n, 1)) {
    /* grad * where(self == 0 & e >= 0, 0, result * log(self)) */
    ct_tensor *res = ct_node_saved_out(n, 0);
    if (!res) return ct_last_status();
    ct_tensor *z = ct_eq_scalar(self, ct_sf(0.0)), *nn = z ? ct_ge_scalar(e, ct_sf(0.0)) : NULL;
    ct_tensor *cond = z && nn ? ct_logical_and(z, nn) : NULL;
    ct_tensor *lg = cond ? ct_log(self) : NULL, *rl = lg ? ct_mul(res, lg) : NULL;
    ct_tensor *w = rl && cond ? masked_zero(rl, cond) : NULL;
    gin[1] = w ? ct_mul(g[0], w) : NULL;
    DROP(z, nn, cond, lg, rl, w);
    if (!gin[1]) return ct_last_status();
  }
  return CT_OK;
}

/* ---- atan2 ------------------------------------------------------------------------------ */
ct_tensor *ct_atan2(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_atan2, a, b, NULL, CT_OUT_FLOAT); }
ct_status ct_atan2_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_atan2, a, b, NULL, CT_OUT_FLOAT); }

ct_status ct_bw_atan2(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  /* recip = 1 / (a*a + b*b); da = grad * b * recip; db = grad * -a * recip */
  ct_tensor *aa = ct_mul(a, a), *bb = ct_mul(b, b), *s = aa && bb ? ct_add(aa, bb) : NULL;
  ct_tensor *recip = s ? ct_pow_scalar(s, ct_si(-1)) : NULL;
  ct_status st = recip ? CT_OK : ct_last_status();
  if (st == CT_OK && ct_node_needs_grad(n, 0)) {
    ct_tensor *t = ct_mul(g[0], b);
    gin[0] = t ? ct_mul(t, recip) : NULL;
    DROP(t);
    if (!gin[0]) st = ct_last_status();
  }
  if (st == CT_OK && ct_node_needs_grad(n, 1)) {
    ct_tensor *na = ct_neg(a), *t = na ? ct_mul(g[0], na) : NULL;
    gin[1] = t ? ct_mul(t, recip) : NULL;
    DROP(na, t);
    if (!gin[1]) st = ct_last_status();
  }
  DROP(aa, bb, s, recip);
  return st;
}

/* ---- maximum / minimum / fmax / fmin ----------------------------------------------------- */
ct_tensor *ct_maximum(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_maximum, a, b, NULL, CT_OUT_SAME); }
ct_tensor *ct_minimum(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_minimum, a, b, NULL, CT_OUT_SAME); }
ct_status ct_maximum_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  return bin_out(CT_OP_maximum, out, a, b, NULL, CT_OUT_SAME);
}
ct_status ct_minimum_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  return bin_out(CT_OP_minimum, out, a, b, NULL, CT_OUT_SAME);
}
ct_tensor *ct_fmax(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_fmax, a, b, NULL, CT_OUT_SAME); }
ct_tensor *ct_fmin(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_fmin, a, b, NULL, CT_OUT_SAME); }

/* maximum: self gets where(a == b, grad / 2, grad).masked_fill_(a < b, 0), other the
 * same with a > b (minimum: the masks swap). Ties halve the gradient; where a NaN is
 * involved no mask holds and both inputs get the full gradient, as in PyTorch. */
static ct_status bw_minmax(ct_node *n, ct_tensor *const *g, ct_tensor **gin, bool is_max) {
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  ct_tensor *eq = ct_eq(a, b), *eqf = eq ? ct_to_dtype(eq, g[0]->dtype) : NULL;
  ct_tensor *h = eqf ? ct_mul_scalar(eqf, ct_sf(-0.5)) : NULL, *f = h ? ct_add_scalar(h, ct_si(1)) : NULL;
  ct_tensor *gh = f ? ct_mul(g[0], f) : NULL;
  ct_status st = gh ? CT_OK : ct_last_status();
  for (int i = 0; i < 2 && st == CT_OK; i++) {
    if (!ct_node_needs_grad(n, i)) continue;
    bool use_lt = (i == 0) == is_max;
    ct_tensor *m = use_lt ? ct_lt(a, b) : ct_gt(a, b);
    gin[i] = m ? masked_zero(gh, m) : NULL;
    DROP(m);
    if (!gin[i]) st = ct_last_status();
  }
  DROP(eq, eqf, h, f, gh);
  return st;
}
ct_status ct_bw_maximum(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return bw_minmax(n, g, gin, true); }
ct_status ct_bw_minimum(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return bw_minmax(n, g, gin, false); }

/* fmax: self gets grad where a >= b or b is NaN, other the rest (fmin: a <= b). */
static ct_status bw_fminmax(ct_node *n, ct_tensor *const *g, ct_tensor **gin, bool is_max) {
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  ct_tensor *c1 = is_max ? ct_ge(a, b) : ct_le(a, b), *bn = ct_ne(b, b);
  ct_tensor *c = c1 && bn ? ct_logical_or(c1, bn) : NULL, *notc = c ? ct_eq_scalar(c, ct_sb(false)) : NULL;
  ct_status st = notc ? CT_OK : ct_last_status();
  if (st == CT_OK && ct_node_needs_grad(n, 0) && !(gin[0] = masked_zero(g[0], notc))) st = ct_last_status();
  if (st == CT_OK && ct_node_needs_grad(n, 1) && !(gin[1] = masked_zero(g[0], c))) st = ct_last_status();
  DROP(c1, bn, c, notc);
  return st;
}
ct_status ct_bw_fmax(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return bw_fminmax(n, g, gin, true); }
ct_status ct_bw_fmin(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return bw_fminmax(n, g, gin, false); }

/* ---- hypot: d/da = grad * a / result --------------------------------------------------------- */
ct_tensor *ct_hypot(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_hypot, a, b, NULL, CT_OUT_SAME); }
ct_status ct_hypot_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_hypot, a, b, NULL, CT_OUT_SAME); }
ct_status ct_bw_hypot(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *res = ct_node_saved_out(n, 0);
  if (!res) return ct_last_status();
  for (int i = 0; i < 2; i++) {
    if (!ct_node_needs_grad(n, i)) continue;
    ct_tensor *x = ct_node_saved_in(n, i);
    if (!x) return ct_last_status();
    ct_tensor *t = ct_mul(g[0], x);
    gin[i] = t ? ct_div(t, res) : NULL;
    DROP(t);
    if (!gin[i]) return ct_last_status();
  }
  return CT_OK;
}

/* ---- logaddexp / logaddexp2: d/da = grad / (1 + exp(b - a)) (2^(b-a) for base 2) ---------- */
ct_tensor *ct_logaddexp(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_logaddexp, a, b, NULL, CT_OUT_SAME); }
ct_tensor *ct_logaddexp2(const ct_tensor *a, const ct_tensor *b) {
  return bin(CT_OP_logaddexp2, a, b, NULL, CT_OUT_SAME);
}
static ct_status bw_logaddexp(ct_node *n, ct_tensor *const *g, ct_tensor **gin, bool base2) {
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  for (int i = 0; i < 2; i++) {
    if (!ct_node_needs_grad(n, i)) continue;
    ct_tensor *d = i == 0 ? ct_sub(b, a) : ct_sub(a, b);
    ct_tensor *e = d ? (base2 ? ct_pow_scalar_tensor(ct_si(2), d) : ct_exp(d)) : NULL;
    ct_tensor *den = e ? ct_add_scalar(e, ct_si(1)) : NULL;
    gin[i] = den ? ct_div(g[0], den) : NULL;
    DROP(d, e, den);
    if (!gin[i]) return ct_last_status();
  }
  return CT_OK;
}
ct_status ct_bw_logaddexp(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return bw_logaddexp(n, g, gin, false); }
ct_status ct_bw_logaddexp2(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return bw_logaddexp(n, g, gin, true); }

/* ---- copysign: d/da = grad * (result / a) with 0 where a == 0; d/db = 0 ------------------- */
ct_tensor *ct_copysign(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_copysign, a, b, NULL, CT_OUT_FLOAT); }
ct_tensor *ct_copysign_scalar(const ct_tensor *a, ct_scalar s) {
  ct_tensor *r = bin_scalar(CT_OP_copysign, a, s, NULL, CT_OUT_FLOAT);
  if (r && r->grad_fn) r->grad_fn->name = "CopysignBackward1";
  return r;
}
ct_status ct_copysign_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_copysign, a, b, NULL, CT_OUT_FLOAT); }
ct_status ct_copysign_scalar_(ct_tensor *a, ct_scalar s) {
  return bin_scalar_(CT_OP_copysign, a, s, NULL, CT_OUT_FLOAT);
}
ct_status ct_bw_copysign(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (ct_node_needs_grad(n, 0)) {
    ct_tensor *a = ct_node_saved_in(n, 0), *res = ct_node_saved_out(n, 0);
    if (!a || !res) return ct_last_status();
    ct_tensor *ratio = ct_div(res, a), *z = ct_eq_scalar(a, ct_si(0));
    ct_tensor *rz = ratio && z ? masked_zero(ratio, z) : NULL;
    gin[0] = rz ? ct_mul(g[0], rz) : NULL;
    DROP(ratio, z, rz);
    if (!gin[0]) return ct_last_status();
  }
  if (ct_node_needs_grad(n, 1) && !(gin[1] = ct_zeros_meta(&n->in_meta[1]))) return ct_last_status();
  return CT_OK;
}

/* ---- xlogy: d/da = xlogy(grad, b) with 0 where a == 0 and b <= 0; d/db = grad * a / b ------- */
ct_tensor *ct_xlogy(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_xlogy, a, b, NULL, CT_OUT_FLOAT); }
ct_tensor *ct_xlogy_scalar(const ct_tensor *a, ct_scalar s) {
  ct_tensor *r = bin_scalar(CT_OP_xlogy, a, s, NULL, CT_OUT_FLOAT);
  if (r && r->grad_fn) r->grad_fn->name = "XlogyBackward2";
  return r;
}
ct_tensor *ct_xlogy_scalar_self(ct_scalar s, const ct_tensor *b) {
  if (ct_check_tensor(b, "xlogy")) return NULL;
  ct_tensor *w = ct_wrap_scalar(s);
  if (!w) return NULL;
  ct_tensor *r = bin(CT_OP_xlogy, w, b, NULL, CT_OUT_FLOAT);
  if (r && r->grad_fn) r->grad_fn->name = "XlogyBackward1";
  ct_release(w);
  return r;
}
ct_status ct_xlogy_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_xlogy, a, b, NULL, CT_OUT_FLOAT); }
ct_status ct_bw_xlogy(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *a = ct_node_saved_in(n, 0), *b = ct_node_saved_in(n, 1);
  if (!a || !b) return ct_last_status();
  if (ct_node_needs_grad(n, 0)) {
    ct_tensor *x = ct_xlogy(g[0], b), *z = ct_eq_scalar(a, ct_sf(0.0)), *np = ct_le_scalar(b, ct_sf(0.0));
    ct_tensor *m = z && np ? ct_logical_and(z, np) : NULL;
    gin[0] = x && m ? masked_zero(x, m) : NULL;
    DROP(x, z, np, m);
    if (!gin[0]) return ct_last_status();
  }
  if (ct_node_needs_grad(n, 1)) {
    ct_tensor *t = ct_mul(g[0], a);
    gin[1] = t ? ct_div(t, b) : NULL;
    DROP(t);
    if (!gin[1]) return ct_last_status();
  }
  return CT_OK;
}

/* ---- bitwise and shifts (not differentiable) ------------------------------------------------ */
#define BITWISE_OP(name)                                                                                   \
  ct_tensor *ct_##name(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_##name, a, b, NULL, CT_OUT_SAME); } \
  ct_tensor *ct_##name##_scalar(const ct_tensor *a, ct_scalar s) {                                         \
    return bin_scalar(CT_OP_##name, a, s, NULL, CT_OUT_SAME);                                              \
  }                                                                                                        \
  ct_status ct_##name##_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_##name, a, b, NULL, CT_OUT_SAME); } \
  ct_status ct_##name##_scalar_(ct_tensor *a, ct_scalar s) {                                               \
    return bin_scalar_(CT_OP_##name, a, s, NULL, CT_OUT_SAME);                                             \
  }
BITWISE_OP(bitwise_and)
BITWISE_OP(bitwise_or)
BITWISE_OP(bitwise_xor)
BITWISE_OP(bitwise_left_shift)
BITWISE_OP(bitwise_right_shift)

/* ---- logical ops and comparisons (bool results, computed in the promoted dtype) ------------- */
#define LOGICAL_OP(name)                                                                                   \
  ct_tensor *ct_##name(const ct_tensor *a, const ct_tensor *b) { return bin(CT_OP_##name, a, b, NULL, CT_OUT_BOOL); } \
  ct_status ct_##name##_(ct_tensor *a, const ct_tensor *b) { return bin_(CT_OP_##name, a, b, NULL, CT_OUT_BOOL); }
LOGICAL_OP(logical_and)
LOGICAL_OP(logical_or)
LOGICAL_OP(logical_xor)

#define COMPARE_OP(name)                                                                                   \
  LOGICAL_OP(name)                                                                                         \
  ct_tensor *ct_##name##_scalar(const ct_tensor *a, ct_scalar s) {                                         \
    return bin_scalar(CT_OP_##name, a, s, NULL, CT_OUT_BOOL);                                              \
  }                                                                                                        \
  ct_status ct_##name##_scalar_(ct_tensor *a, ct_scalar s) {                                               \
    return bin_scalar_(CT_OP_##name, a, s, NULL, CT_OUT_BOOL);                                             \
  }                                                                                                        \
  ct_status ct_##name##_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {                      \
    return bin_out(CT_OP_##name, out, a, b, NULL, CT_OUT_BOOL);                                            \
  }
COMPARE_OP(eq)
COMPARE_OP(ne)
COMPARE_OP(lt)
COMPARE_OP(le)
COMPARE_OP(gt)
COMPARE_OP(ge)

/* ---- isclose / allclose / equal ---------------------------------------------------------------- */
ct_tensor *ct_isclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol, bool equal_nan) {
  if (ct_check_tensor(a, "isclose") || ct_check_tensor(b, "isclose")) return NULL;
  if (a->dtype != b->dtype) {
    ct_set_error(CT_ERR_RUNTIME, "%s did not match %s", ct_dtype_torch_name(a->dtype), ct_dtype_torch_name(b->dtype));
    return NULL;
  }
  if (!(rtol >= 0)) {
    ct_set_error(CT_ERR_RUNTIME, "rtol must be greater than or equal to zero, but got %g", rtol);
    return NULL;
  }
  if (!(atol >= 0)) {
    ct_set_error(CT_ERR_RUNTIME, "atol must be greater than or equal to zero, but got %g", atol);
    return NULL;
  }
  ct_attrs at = ct_attrs_zero();
  at.f[0] = rtol;
  at.f[1] = atol;
  at.k[0] = equal_nan;
  at.k[1] = ct_get_default_dtype();
  return bin(CT_OP_isclose, a, b, &at, CT_OUT_BOOL);
}

/* Whether every element of a bool tensor is true. */
static ct_status all_true(ct_tensor *t, bool *out) {
  int64_t n = ct_numel(t);
  bool *buf = ct_xmalloc((size_t)(n ? n : 1));
  if (!buf) return ct_last_status();
  ct_status st = ct_copy_to_buffer(t, buf, CT_BOOL, n);
  bool all = true;
  for (int64_t i = 0; st == CT_OK && i < n && all; i++) all = buf[i];
  free(buf);
  if (st == CT_OK) *out = all;
  return st;
}

ct_status ct_allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol, bool equal_nan, bool *out) {
  if (!out) return CT_ERR(CT_ERR_VALUE, "allclose: out must not be NULL");
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *c = ct_isclose(a, b, rtol, atol, equal_nan);
  ct_set_grad_enabled(prev);
  if (!c) return ct_last_status();
  ct_status st = all_true(c, out);
  ct_release(c);
  return st;
}

ct_status ct_equal(const ct_tensor *a, const ct_tensor *b, bool *out) {
  if (!out) return CT_ERR(CT_ERR_VALUE, "equal: out must not be NULL");
  CT_TRY(ct_check_tensor(a, "equal"));
  CT_TRY(ct_check_tensor(b, "equal"));
  const ct_tensor *in[2] = {a, b};
  CT_TRY(ct_check_same_device("equal", 2, in));
  bool same = a->ndim == b->ndim;
  for (int d = 0; same && d < a->ndim; d++) same = a->shape[d] == b->shape[d];
  if (!same) {
    *out = false;
    return CT_OK;
  }
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *c = ct_eq(a, b);
  ct_set_grad_enabled(prev);
  if (!c) return ct_last_status();
  ct_status st = all_true(c, out);
  ct_release(c);
  return st;
}
