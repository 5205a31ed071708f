/* Unary elementwise ops: forward entry points and derivative formulas side by side. */
#include "pointwise.h"
#include <math.h>
#include <stdio.h>

/* ---- dtype support (PyTorch 1.13 CPU), checked on the compute dtype ---- */
#define DM(dt) (1u << (dt))
#define M_HALF DM(CT_FLOAT16)
#define M_BOOL DM(CT_BOOL)
#define M_FLOAT (DM(CT_FLOAT32) | DM(CT_FLOAT64) | DM(CT_FLOAT16) | DM(CT_BFLOAT16))
#define M_INT (DM(CT_INT8) | DM(CT_UINT8) | DM(CT_INT16) | DM(CT_INT32) | DM(CT_INT64))
#define M_ALL (M_FLOAT | M_INT | M_BOOL)
#define M_FNOHALF (M_FLOAT & ~M_HALF)

typedef struct {
  ct_out_kind kind;
  unsigned ok;       /* compute dtypes with a kernel */
  const char *kname; /* PyTorch's kernel name in "not implemented for" messages */
} uspec;

static uspec spec_of(int op, const ct_attrs *a) {
  uspec s = {CT_OUT_FLOAT, M_FNOHALF, NULL};
  switch (op) {
    case CT_OP_abs: return (uspec){CT_OUT_SAME, M_ALL & ~M_BOOL, "abs_cpu"};
    case CT_OP_neg: return (uspec){CT_OUT_SAME, M_ALL, "neg_cpu"};
    case CT_OP_sign: return (uspec){CT_OUT_SAME, M_ALL, "sign_cpu"};
    case CT_OP_exp2: return (uspec){CT_OUT_FLOAT, M_FLOAT, "exp2"};
    case CT_OP_reciprocal: return (uspec){CT_OUT_FLOAT, M_FLOAT, "reciprocal_cpu"};
    case CT_OP_floor:
    case CT_OP_ceil:
    case CT_OP_trunc: s.kind = CT_OUT_SAME; s.ok = M_FNOHALF | M_INT; break;
    case CT_OP_round:
      if (a && a->k[0]) return (uspec){CT_OUT_SAME, M_FNOHALF, "round_cpu"};
      s.kind = CT_OUT_SAME;
      s.ok = M_FNOHALF | M_INT;
      break;
    case CT_OP_frac: return (uspec){CT_OUT_SAME, M_FLOAT, "frac_cpu"};
    case CT_OP_square: return (uspec){CT_OUT_SAME, M_ALL, "pow"};
    case CT_OP_relu: return (uspec){CT_OUT_SAME, M_FNOHALF | M_INT, "clamp_min_cpu"};
    case CT_OP_hardtanh: return (uspec){CT_OUT_SAME, M_FNOHALF | M_INT, "clamp_scalar_cpu"};
    case CT_OP_clamp: return (uspec){CT_OUT_SAME, M_FNOHALF | M_INT, "clamp_scalar_cpu"};
    case CT_OP_gelu: return (uspec){CT_OUT_SAME, M_FNOHALF, "GeluKernelImpl"};
    case CT_OP_silu: return (uspec){CT_OUT_SAME, M_FNOHALF, "silu_cpu"};
    case CT_OP_mish: return (uspec){CT_OUT_SAME, DM(CT_FLOAT32) | DM(CT_FLOAT64), "mish_cpu"};
    case CT_OP_softplus: return (uspec){CT_OUT_SAME, M_FNOHALF, "softplus_cpu"};
    case CT_OP_hardsigmoid: return (uspec){CT_OUT_SAME, M_FNOHALF, "hardsigmoid_cpu"};
    case CT_OP_hardswish: return (uspec){CT_OUT_SAME, M_FNOHALF, "hardswish_cpu"};
    case CT_OP_leaky_relu: return (uspec){CT_OUT_SAME, M_FNOHALF, "leaky_relu_cpu"};
    case CT_OP_elu: return (uspec){CT_OUT_SAME, M_FNOHALF, "elu_cpu"};
    case CT_OP_nan_to_num: return (uspec){CT_OUT_SAME, M_ALL, "nan_to_num"};
    case CT_OP_isnan:
    case CT_OP_isinf:
    case CT_OP_isfinite:
    case CT_OP_logical_not: return (uspec){CT_OUT_BOOL, M_ALL, "logical_not_cpu"};
    case CT_OP_bitwise_not: return (uspec){CT_OUT_SAME, M_INT | M_BOOL, "bitwise_not_cpu"};
    case CT_OP_rsqrt: s.kname = "rsqrt_cpu"; break;
    case CT_OP_sinh: s.kname = "sinh_cpu"; break;
    case CT_OP_cosh: s.kname = "cosh_cpu"; break;
    case CT_OP_asinh: s.kname = "asinh_cpu"; break;
    case CT_OP_acosh: s.kname = "acosh_cpu"; break;
    case CT_OP_atanh: s.kname = "atanh_cpu"; break;
    case CT_OP_sigmoid: s.kname = "sigmoid_cpu"; break;
    case CT_OP_logit: s.kname = "logit_cpu"; break;
    case CT_OP_digamma: s.kname = "digamma"; break;
    case CT_OP_polygamma: s.kname = !a || a->k[0] == 0 ? "digamma" : (a->k[0] == 1 ? "trigamma" : "polygamma"); break;
    default: break;
  }
  return s;
}

/* "<op>_vml_cpu" for the ops PyTorch runs through its vectorised math library */
static const char *kernel_name(int op, const uspec *s, char *buf, size_t n) {
  if (s->kname) return s->kname;
  snprintf(buf, n, "%s_vml_cpu", ct_op_info_of(op)->id);
  return buf;
}

static ct_status check_dtype(int op, const ct_attrs *a, ct_dtype in_dt, ct_dtype *compute) {
  uspec s = spec_of(op, a);
  ct_dtype dt = (s.kind == CT_OUT_FLOAT && !ct_dtype_is_floating(in_dt)) ? ct_get_default_dtype() : in_dt;
  if (compute) *compute = dt;
  if (s.ok & DM(dt)) return CT_OK;
  char buf[64];
  return CT_ERR(CT_ERR_RUNTIME, "\"%s\" not implemented for '%s'", kernel_name(op, &s, buf, sizeof buf),
                ct_dtype_torch_name(dt));
}

/* ---- the three forms of every unary op ---- */
static ct_tensor *un(int op, const ct_tensor *x, const ct_attrs *a) {
  if (ct_check_tensor(x, ct_op_info_of(op)->id) || check_dtype(op, a, x->dtype, NULL)) return NULL;
  return ct_pointwise(op, 1, &x, a, spec_of(op, a).kind);
}
static ct_status un_(int op, ct_tensor *x, const ct_attrs *a) {
  CT_TRY(ct_check_tensor(x, ct_op_info_of(op)->id));
  CT_TRY(ct_check_inplace(x)); /* PyTorch checks the written-to tensor before choosing a kernel */
  CT_TRY(check_dtype(op, a, x->dtype, NULL));
  return ct_pointwise_(op, 1, &x, a, spec_of(op, a).kind);
}
static ct_status un_out(int op, ct_tensor *out, const ct_tensor *x, const ct_attrs *a) {
  CT_TRY(ct_check_tensor(x, ct_op_info_of(op)->id));
  CT_TRY(check_dtype(op, a, x->dtype, NULL));
  return ct_pointwise_out(op, out, 1, &x, a, spec_of(op, a).kind);
}

#define UNARY_FORMS(name)                                                                    \
  ct_tensor *ct_##name(const ct_tensor *x) { return un(CT_OP_##name, x, NULL); }             \
  ct_status ct_##name##_(ct_tensor *x) { return un_(CT_OP_##name, x, NULL); }                \
  ct_status ct_##name##_out(ct_tensor *out, const ct_tensor *x) { return un_out(CT_OP_##name, out, x, NULL); }

UNARY_FORMS(abs)
UNARY_FORMS(sign)
UNARY_FORMS(exp)
UNARY_FORMS(exp2)
UNARY_FORMS(expm1)
UNARY_FORMS(log)
UNARY_FORMS(log2)
UNARY_FORMS(log10)
UNARY_FORMS(log1p)
UNARY_FORMS(sqrt)
UNARY_FORMS(rsqrt)
UNARY_FORMS(sin)
UNARY_FORMS(cos)
UNARY_FORMS(tan)
UNARY_FORMS(asin)
UNARY_FORMS(acos)
UNARY_FORMS(atan)
UNARY_FORMS(sinh)
UNARY_FORMS(cosh)
UNARY_FORMS(tanh)
UNARY_FORMS(asinh)
UNARY_FORMS(acosh)
UNARY_FORMS(atanh)
UNARY_FORMS(sigmoid)
UNARY_FORMS(erf)
UNARY_FORMS(erfc)
UNARY_FORMS(erfinv)
UNARY_FORMS(lgamma)
UNARY_FORMS(digamma)
UNARY_FORMS(floor)
UNARY_FORMS(ceil)
UNARY_FORMS(round)
UNARY_FORMS(trunc)
UNARY_FORMS(frac)
UNARY_FORMS(reciprocal)
UNARY_FORMS(silu)
UNARY_FORMS(mish)
UNARY_FORMS(hardsigmoid)
UNARY_FORMS(hardswish)
UNARY_FORMS(bitwise_not)
UNARY_FORMS(logical_not)
ct_tensor *ct_isnan(const ct_tensor *x) { return un(CT_OP_isnan, x, NULL); }
ct_status ct_isnan_out(ct_tensor *out, const ct_tensor *x) { return un_out(CT_OP_isnan, out, x, NULL); }
ct_tensor *ct_isinf(const ct_tensor *x) { return un(CT_OP_isinf, x, NULL); }
ct_status ct_isinf_out(ct_tensor *out, const ct_tensor *x) { return un_out(CT_OP_isinf, out, x, NULL); }
ct_tensor *ct_isfinite(const ct_tensor *x) { return un(CT_OP_isfinite, x, NULL); }
ct_status ct_isfinite_out(ct_tensor *out, const ct_tensor *x) { return un_out(CT_OP_isfinite, out, x, NULL); }

/* neg: bool refused with PyTorch's hint */
static ct_status check_neg(const ct_tensor *x) {
  if (x && x->dtype == CT_BOOL)
    return CT_ERR(CT_ERR_RUNTIME, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                                  "to invert a mask, use the `~` or `logical_not()` operator instead.");
  return CT_OK;
}
ct_tensor *ct_neg(const ct_tensor *x) { return check_neg(x) ? NULL : un(CT_OP_neg, x, NULL); }
ct_status ct_neg_(ct_tensor *x) {
  CT_TRY(check_neg(x));
  return un_(CT_OP_neg, x, NULL);
}
ct_status ct_neg_out(ct_tensor *out, const ct_tensor *x) {
  CT_TRY(check_neg(x));
  return un_out(CT_OP_neg, out, x, NULL);
}

/* square is pow(x, 2): bool promotes to int64 with the int exponent; node PowBackward0 */
ct_tensor *ct_square(const ct_tensor *x) {
  if (ct_check_tensor(x, "square")) return NULL;
  if (x->dtype != CT_BOOL) return ct_name_node(un(CT_OP_square, x, NULL), "PowBackward0");
  ct_tensor *l = ct_to_dtype(x, CT_INT64);
  ct_tensor *r = l ? un(CT_OP_square, l, NULL) : NULL;
  ct_release(l);
  return ct_name_node(r, "PowBackward0");
}
ct_status ct_square_(ct_tensor *x) {
  CT_TRY(ct_check_tensor(x, "square"));
  if (x->dtype == CT_BOOL)
    return CT_ERR(CT_ERR_RUNTIME, "result type Long can't be cast to the desired output type Bool");
  CT_TRY(un_(CT_OP_square, x, NULL));
  ct_name_node(x, "PowBackward0");
  return CT_OK;
}
ct_status ct_square_out(ct_tensor *out, const ct_tensor *x) {
  CT_TRY(ct_check_tensor(x, "square"));
  if (x->dtype != CT_BOOL) return un_out(CT_OP_square, out, x, NULL);
  ct_tensor *l = ct_to_dtype(x, CT_INT64);
  if (!l) return ct_last_status();
  ct_status st = un_out(CT_OP_square, out, l, NULL);
  ct_release(l);
  return st;
}

/* relu: bool refused */
static ct_status check_relu(const ct_tensor *x) {
  if (x && x->dtype == CT_BOOL) return CT_ERR(CT_ERR_RUNTIME, "Boolean inputs not supported for relu");
  return CT_OK;
}
ct_tensor *ct_relu(const ct_tensor *x) { return check_relu(x) ? NULL : un(CT_OP_relu, x, NULL); }
ct_status ct_relu_(ct_tensor *x) {
  CT_TRY(check_relu(x));
  return un_(CT_OP_relu, x, NULL);
}
ct_status ct_relu_out(ct_tensor *out, const ct_tensor *x) {
  CT_TRY(check_relu(x));
  return un_out(CT_OP_relu, out, x, NULL);
}

/* round(x, decimals) */
static ct_attrs round_attrs(int64_t d) {
  ct_attrs a = ct_attrs_zero();
  a.k[0] = 1;
  a.i[0] = d;
  return a;
}
ct_tensor *ct_round_decimals(const ct_tensor *x, int64_t d) {
  ct_attrs a = round_attrs(d);
  return ct_name_node(un(CT_OP_round, x, &a), "RoundBackward1");
}
ct_status ct_round_decimals_(ct_tensor *x, int64_t d) {
  ct_attrs a = round_attrs(d);
  CT_TRY(un_(CT_OP_round, x, &a));
  ct_name_node(x, "RoundBackward1");
  return CT_OK;
}
ct_status ct_round_decimals_out(ct_tensor *out, const ct_tensor *x, int64_t d) {
  ct_attrs a = round_attrs(d);
  return un_out(CT_OP_round, out, x, &a);
}

/* logit(x, eps) */
static ct_attrs logit_attrs(double eps) {
  ct_attrs a = ct_attrs_zero();
  a.f[0] = eps < 0 || isnan(eps) ? -1.0 : eps;
  return a;
}
ct_tensor *ct_logit(const ct_tensor *x, double eps) {
  ct_attrs a = logit_attrs(eps);
  return un(CT_OP_logit, x, &a);
}
ct_status ct_logit_(ct_tensor *x, double eps) {
  ct_attrs a = logit_attrs(eps);
  return un_(CT_OP_logit, x, &a);
}
ct_status ct_logit_out(ct_tensor *out, const ct_tensor *x, double eps) {
  ct_attrs a = logit_attrs(eps);
  return un_out(CT_OP_logit, out, x, &a);
}

/* polygamma(n, x) */
static ct_status check_poly(int64_t n) {
  if (n < 0) return CT_ERR(CT_ERR_RUNTIME, "polygamma(n, x) does not support negative n.");
  return CT_OK;
}
static ct_attrs poly_attrs(int64_t n) {
  ct_attrs a = ct_attrs_zero();
  a.k[0] = n;
  return a;
}
ct_tensor *ct_polygamma(int64_t n, const ct_tensor *x) {
  if (check_poly(n)) return NULL;
  ct_attrs a = poly_attrs(n);
  return un(CT_OP_polygamma, x, &a);
}
ct_status ct_polygamma_(ct_tensor *x, int64_t n) {
  CT_TRY(check_poly(n));
  ct_attrs a = poly_attrs(n);
  return un_(CT_OP_polygamma, x, &a);
}
ct_status ct_polygamma_out(ct_tensor *out, int64_t n, const ct_tensor *x) {
  CT_TRY(check_poly(n));
  ct_attrs a = poly_attrs(n);
  return un_out(CT_OP_polygamma, out, x, &a);
}

/* gelu(x, approximate) */
static ct_status gelu_attrs(const char *approx, ct_attrs *a) {
  *a = ct_attrs_zero();
  if (!approx || !strcmp(approx, "none")) return CT_OK;
  if (!strcmp(approx, "tanh")) {
    a->k[0] = 1;
    return CT_OK;
  }
  return CT_ERR(CT_ERR_RUNTIME, "approximate argument must be either none or tanh.");
}
ct_tensor *ct_gelu(const ct_tensor *x, const char *approx) {
  ct_attrs a;
  return gelu_attrs(approx, &a) ? NULL : un(CT_OP_gelu, x, &a);
}
ct_status ct_gelu_(ct_tensor *x, const char *approx) {
  ct_attrs a;
  CT_TRY(gelu_attrs(approx, &a));
  return un_(CT_OP_gelu, x, &a);
}
ct_status ct_gelu_out(ct_tensor *out, const ct_tensor *x, const char *approx) {
  ct_attrs a;
  CT_TRY(gelu_attrs(approx, &a));
  return un_out(CT_OP_gelu, out, x, &a);
}

/* softplus(x, beta, threshold) */
static ct_attrs softplus_attrs(double beta, double threshold) {
  ct_attrs a = ct_attrs_zero();
  a.f[0] = beta;
  a.f[1] = threshold;
  return a;
}
ct_tensor *ct_softplus(const ct_tensor *x, double beta, double threshold) {
  ct_attrs a = softplus_attrs(beta, threshold);
  return un(CT_OP_softplus, x, &a);
}
ct_status ct_softplus_(ct_tensor *x, double beta, double threshold) {
  ct_attrs a = softplus_attrs(beta, threshold);
  return un_(CT_OP_softplus, x, &a);
}
ct_status ct_softplus_out(ct_tensor *out, const ct_tensor *x, double beta, double threshold) {
  ct_attrs a = softplus_attrs(beta, threshold);
  return un_out(CT_OP_softplus, out, x, &a);
}

/* hardtanh(x, min_val, max_val) and relu6 = hardtanh(x, 0, 6) */
static ct_status hardtanh_attrs(const ct_tensor *x, double lo, double hi, ct_attrs *a) {
  *a = ct_attrs_zero();
  a->f[0] = lo;
  a->f[1] = hi;
  if (x && x->dtype == CT_BOOL) return CT_ERR(CT_ERR_RUNTIME, "Bool inputs not supported for hardtanh");
  if (x && x->dtype == CT_UINT8 && ((int64_t)lo < 0 || (int64_t)hi < 0))
    return CT_ERR(CT_ERR_RUNTIME, "cannot do hardtanh on an unsigned type with negative limits");
  return CT_OK;
}
ct_tensor *ct_hardtanh(const ct_tensor *x, double lo, double hi) {
  ct_attrs a;
  return hardtanh_attrs(x, lo, hi, &a) ? NULL : un(CT_OP_hardtanh, x, &a);
}
ct_status ct_hardtanh_(ct_tensor *x, double lo, double hi) {
  ct_attrs a;
  CT_TRY(hardtanh_attrs(x, lo, hi, &a));
  return un_(CT_OP_hardtanh, x, &a);
}
ct_status ct_hardtanh_out(ct_tensor *out, const ct_tensor *x, double lo, double hi) {
  ct_attrs a;
  CT_TRY(hardtanh_attrs(x, lo, hi, &a));
  return un_out(CT_OP_hardtanh, out, x, &a);
}
ct_tensor *ct_relu6(const ct_tensor *x) { return ct_hardtanh(x, 0, 6); }
ct_status ct_relu6_(ct_tensor *x) { return ct_hardtanh_(x, 0, 6); }
ct_status ct_relu6_out(ct_tensor *out, const ct_tensor *x) { return ct_hardtanh_out(out, x, 0, 6); }

/* leaky_relu(x, negative_slope); k3 marks the in-place form (its backward refuses a negative slope) */
static ct_attrs leaky_attrs(double slope, bool inplace) {
  ct_attrs a = ct_attrs_zero();
  a.f[0] = slope;
  a.k[3] = inplace;
  return a;
}
ct_tensor *ct_leaky_relu(const ct_tensor *x, double slope) {
  ct_attrs a = leaky_attrs(slope, false);
  return un(CT_OP_leaky_relu, x, &a);
}
ct_status ct_leaky_relu_(ct_tensor *x, double slope) {
  ct_attrs a = leaky_attrs(slope, true);
  return un_(CT_OP_leaky_relu, x, &a);
}
ct_status ct_leaky_relu_out(ct_tensor *out, const ct_tensor *x, double slope) {
  ct_attrs a = leaky_attrs(slope, false);
  return un_out(CT_OP_leaky_relu, out, x, &a);
}

/* elu family: elu(alpha) = elu(alpha, 1, 1); selu = elu(a, s, 1); celu(alpha) = elu(alpha, 1, 1/alpha) */
#define SELU_ALPHA 1.6732632423543772848170429916717
#define SELU_SCALE 1.0507009873554804934193349852946
static ct_attrs elu_attrs(double alpha, double scale, double is, bool inplace) {
  ct_attrs a = ct_attrs_zero();
  a.f[0] = alpha;
  a.f[1] = scale;
  a.f[2] = is;
  a.f[3] = is; /* the input scale the backward uses (celu's differs) */
  a.k[3] = inplace;
  return a;
}
ct_tensor *ct_elu_full(const ct_tensor *x, double alpha, double scale, double is) {
  ct_attrs a = elu_attrs(alpha, scale, is, false);
  return un(CT_OP_elu, x, &a);
}
ct_status ct_elu_full_(ct_tensor *x, double alpha, double scale, double is) {
  ct_attrs a = elu_attrs(alpha, scale, is, true);
  return un_(CT_OP_elu, x, &a);
}
ct_status ct_elu_out(ct_tensor *out, const ct_tensor *x, double alpha, double scale, double is) {
  ct_attrs a = elu_attrs(alpha, scale, is, false);
  return un_out(CT_OP_elu, out, x, &a);
}
ct_tensor *ct_elu(const ct_tensor *x, double alpha) { return ct_elu_full(x, alpha, 1, 1); }
ct_status ct_elu_(ct_tensor *x, double alpha) { return ct_elu_full_(x, alpha, 1, 1); }
ct_tensor *ct_selu(const ct_tensor *x) { return ct_elu_full(x, SELU_ALPHA, SELU_SCALE, 1); }
ct_status ct_selu_(ct_tensor *x) { return ct_elu_full_(x, SELU_ALPHA, SELU_SCALE, 1); }
ct_status ct_selu_out(ct_tensor *out, const ct_tensor *x) { return ct_elu_out(out, x, SELU_ALPHA, SELU_SCALE, 1); }
static ct_status check_celu(double alpha) {
  if (alpha == 0) return CT_ERR(CT_ERR_RUNTIME, "ZeroDivisionError: alpha cannot be 0 for CELU");
  return CT_OK;
}
/* PyTorch's celu runs elu with input scale 1/alpha in double, but its derivative
 * formula divides by alpha rounded to float */
static ct_attrs celu_attrs(double alpha, bool inplace) {
  ct_attrs a = elu_attrs(alpha, 1, 1 / alpha, inplace);
  a.f[3] = 1.0 / (double)(float)alpha;
  return a;
}
ct_tensor *ct_celu(const ct_tensor *x, double alpha) {
  if (check_celu(alpha)) return NULL;
  ct_attrs a = celu_attrs(alpha, false);
  return ct_name_node(un(CT_OP_elu, x, &a), "CeluBackward0");
}
ct_status ct_celu_(ct_tensor *x, double alpha) {
  CT_TRY(check_celu(alpha));
  ct_attrs a = celu_attrs(alpha, true);
  CT_TRY(un_(CT_OP_elu, x, &a));
  ct_name_node(x, "CeluBackward0");
  return CT_OK;
}
ct_status ct_celu_out(ct_tensor *out, const ct_tensor *x, double alpha) {
  CT_TRY(check_celu(alpha));
  ct_attrs a = celu_attrs(alpha, false);
  return un_out(CT_OP_elu, out, x, &a);
}

/* softsign = x / (1 + |x|), composed like PyTorch (node DivBackward0) */
ct_tensor *ct_softsign(const ct_tensor *x) {
  ct_tensor *ax = ct_abs(x);
  ct_tensor *d = ax ? ct_add_scalar(ax, ct_si(1)) : NULL;
  ct_tensor *r = d ? ct_div(x, d) : NULL;
  ct_release(ax);
  ct_release(d);
  return r;
}
ct_status ct_softsign_(ct_tensor *x) {
  ct_tensor *ax = ct_abs(x);
  ct_tensor *d = ax ? ct_add_scalar(ax, ct_si(1)) : NULL;
  ct_status st = d ? ct_div_(x, d) : ct_last_status();
  ct_release(ax);
  ct_release(d);
  return st;
}
/* clamp(x, min, max) with scalar bounds */
static double scalar_f(const ct_scalar *s) { return s->kind == CT_SCALAR_FLOAT ? s->f : (double)s->i; }

/* The dtype PyTorch computes clamp in: result_type(x, min, max) with the scalars wrapped. */
static ct_status clamp_dtype(const ct_tensor *x, const ct_scalar *lo, const ct_scalar *hi, ct_dtype *dt) {
  CT_TRY(ct_check_tensor(x, "clamp"));
  if (!lo && !hi) return CT_ERR(CT_ERR_RUNTIME, "torch.clamp: At least one of 'min' or 'max' must not be None");
  const ct_tensor *ts[3] = {x, NULL, NULL};
  int n = 1;
  ct_tensor *w[2] = {NULL, NULL};
  if (lo) ts[n++] = w[0] = ct_wrap_scalar(*lo);
  if (hi) ts[n++] = w[1] = ct_wrap_scalar(*hi);
  ct_status st = CT_OK;
  for (int i = 1; i < n; i++)
    if (!ts[i]) st = ct_last_status();
  if (st == CT_OK) *dt = ct_result_type_n(n, ts);
  ct_release(w[0]);
  ct_release(w[1]);
  return st;
}
/* A float bound's integer image, only read where the result is integral: nan and
 * out-of-range values must not reach an undefined float-to-int64 conversion. */
static int64_t bound_as_int(double f) {
  if (f != f) return 0;
  if (f >= 9223372036854775807.0) return INT64_MAX;
  if (f <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)f;
}
static ct_attrs clamp_attrs(const ct_scalar *lo, const ct_scalar *hi) {
  ct_attrs a = ct_attrs_zero();
  if (lo) {
    a.k[0] = 1;
    a.f[0] = scalar_f(lo);
    a.s[0] = *lo;
    if (lo->kind == CT_SCALAR_FLOAT) a.s[0].i = bound_as_int(lo->f);
  }
  if (hi) {
    a.k[1] = 1;
    a.f[1] = scalar_f(hi);
    a.s[1] = *hi;
    if (hi->kind == CT_SCALAR_FLOAT) a.s[1].i = bound_as_int(hi->f);
  }
  return a;
}
/* PyTorch's kernel names differ by which bound is given */
static ct_status check_clamp_dtype(const ct_scalar *lo, const ct_scalar *hi, ct_dtype dt) {
  if (!(spec_of(CT_OP_clamp, NULL).ok & DM(dt)))
    return CT_ERR(CT_ERR_RUNTIME, "\"%s\" not implemented for '%s'",
                  lo && hi ? "clamp_scalar_cpu" : (lo ? "clamp_min_cpu" : "clamp_max_scalar_cpu"), ct_dtype_torch_name(dt));
  return CT_OK;
}
ct_tensor *ct_clamp(const ct_tensor *x, const ct_scalar *lo, const ct_scalar *hi) {
  ct_dtype dt;
  if (clamp_dtype(x, lo, hi, &dt) || check_clamp_dtype(lo, hi, dt)) return NULL;
  ct_attrs a = clamp_attrs(lo, hi);
  ct_tensor *c = ct_to_dtype(x, dt);
  ct_tensor *r = c ? un(CT_OP_clamp, c, &a) : NULL;
  ct_release(c);
  return ct_name_node(r, "ClampBackward1");
}
ct_status ct_clamp_(ct_tensor *x, const ct_scalar *lo, const ct_scalar *hi) {
  ct_dtype dt;
  CT_TRY(clamp_dtype(x, lo, hi, &dt));
  CT_TRY(check_clamp_dtype(lo, hi, dt));
  if (!ct_can_cast(dt, x->dtype))
    return CT_ERR(CT_ERR_RUNTIME, "result type %s can't be cast to the desired output type %s", ct_dtype_torch_name(dt),
                  ct_dtype_cpp_name(x->dtype)); /* only integer/bool x get here */
  ct_attrs a = clamp_attrs(lo, hi);
  CT_TRY(un_(CT_OP_clamp, x, &a));
  ct_name_node(x, "ClampBackward1");
  return CT_OK;
}
ct_status ct_clamp_out(ct_tensor *out, const ct_tensor *x, const ct_scalar *lo, const ct_scalar *hi) {
  ct_dtype dt;
  CT_TRY(clamp_dtype(x, lo, hi, &dt));
  CT_TRY(check_clamp_dtype(lo, hi, dt));
  ct_attrs a = clamp_attrs(lo, hi);
  ct_tensor *c = ct_to_dtype(x, dt);
  if (!c) return ct_last_status();
  ct_status st = un_out(CT_OP_clamp, out, c, &a);
  ct_release(c);
  return st;
}
/* torch.clamp_min / clamp_max: the same op, PyTorch's node names */
ct_tensor *ct_clamp_min(const ct_tensor *x, ct_scalar lo) { return ct_name_node(ct_clamp(x, &lo, NULL), "ClampMinBackward0"); }
ct_tensor *ct_clamp_max(const ct_tensor *x, ct_scalar hi) { return ct_name_node(ct_clamp(x, NULL, &hi), "ClampMaxBackward0"); }

/* nan_to_num(x, nan, posinf, neginf) */
static ct_attrs n2n_attrs(const double *nan, const double *pinf, const double *ninf) {
  ct_attrs a = ct_attrs_zero();
  if (nan) a.k[0] = 1, a.f[0] = *nan;
  if (pinf) a.k[1] = 1, a.f[1] = *pinf;
  if (ninf) a.k[2] = 1, a.f[2] = *ninf;
  return a;
}
ct_tensor *ct_nan_to_num(const ct_tensor *x, const double *nan, const double *pinf, const double *ninf) {
  ct_attrs a = n2n_attrs(nan, pinf, ninf);
  return un(CT_OP_nan_to_num, x, &a);
}
ct_status ct_nan_to_num_(ct_tensor *x, const double *nan, const double *pinf, const double *ninf) {
  ct_attrs a = n2n_attrs(nan, pinf, ninf);
  return un_(CT_OP_nan_to_num, x, &a);
}
ct_status ct_nan_to_num_out(ct_tensor *out, const ct_tensor *x, const double *nan, const double *pinf,
                            const double *ninf) {
  ct_attrs a = n2n_attrs(nan, pinf, ninf);
  return un_out(CT_OP_nan_to_num, out, x, &a);
}

/* ======================= derivative formulas =======================
 * Written with public ops so they run on every backend and can be differentiated
 * again. The helpers pass NULL through, so the first failure's message survives. */
static ct_tensor *M(const ct_tensor *a, const ct_tensor *b) { return a && b ? ct_mul(a, b) : NULL; }
static ct_tensor *MS(const ct_tensor *a, double s) { return a ? ct_mul_scalar(a, ct_sf(s)) : NULL; }
static ct_tensor *D(const ct_tensor *a, const ct_tensor *b) { return a && b ? ct_div(a, b) : NULL; }
static ct_tensor *AS(const ct_tensor *a, double s) { return a ? ct_add_scalar(a, ct_sf(s)) : NULL; }
static ct_tensor *RS(const ct_tensor *a, double s) { return a ? ct_rsub_scalar(a, ct_sf(s)) : NULL; } /* s - a */
static ct_tensor *NEG(const ct_tensor *a) { return a ? ct_neg(a) : NULL; }
static ct_tensor *F1(ct_tensor *(*f)(const ct_tensor *), const ct_tensor *a) { return a ? f(a) : NULL; }

/* Runs a formula inside a scope (which frees the temporaries) and keeps its result as gin[0]. */
#define FORMULA(n, g, gin, saved_expr, body)        \
  do {                                              \
    ct_tensor *S = (saved_expr);                    \
    if (!S) return ct_last_status();                \
    ct_scope *sc_ = ct_scope_begin();               \
    ct_tensor *r_ = (body);                         \
    if (r_) gin[0] = ct_keep(r_);                   \
    ct_scope_end(sc_);                              \
    return gin[0] ? CT_OK : ct_last_status();       \
  } while (0)
#define X_ ct_node_saved_in(n, 0)
#define Y_ ct_node_saved_out(n, 0)
#define G (g[0])

ct_status ct_bw_abs(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, M(G, F1(ct_sign, S))); }
ct_status ct_bw_neg(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  (void)n;
  gin[0] = ct_neg(G);
  return gin[0] ? CT_OK : ct_last_status();
}
ct_status ct_bw_zero(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  (void)n;
  gin[0] = ct_zeros_like(G, NULL);
  return gin[0] ? CT_OK : ct_last_status();
}
ct_status ct_bw_frac(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  (void)n;
  gin[0] = ct_retain(G);
  return CT_OK;
}
ct_status ct_bw_exp(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, Y_, M(G, S)); }
ct_status ct_bw_exp2(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, Y_, MS(M(G, S), M_LN2)); }
ct_status ct_bw_expm1(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, Y_, M(G, AS(S, 1))); }
ct_status ct_bw_log(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, D(G, S)); }
ct_status ct_bw_log2(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, D(G, MS(S, M_LN2))); }
ct_status ct_bw_log10(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, D(G, MS(S, M_LN10))); }
ct_status ct_bw_log1p(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, D(G, AS(S, 1))); }
/* sqrt: grad / (2 * result) (inf at 0, like PyTorch) */
ct_status ct_bw_sqrt(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, Y_, D(G, MS(S, 2))); }
/* rsqrt: -0.5 * grad * result^3 */
ct_status ct_bw_rsqrt(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  FORMULA(n, g, gin, Y_, MS(M(G, M(M(S, S), S)), -0.5));
}
ct_status ct_bw_sin(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, M(G, F1(ct_cos, S))); }
ct_status ct_bw_cos(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, M(G, NEG(F1(ct_sin, S)))); }
ct_status ct_bw_tan(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, Y_, M(G, AS(M(S, S), 1))); }
ct_status ct_bw_asin(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  FORMULA(n, g, gin, X_, M(G, F1(ct_rsqrt, RS(M(S, S), 1))));
}
ct_status ct_bw_acos(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  FORMULA(n, g, gin, X_, M(G, NEG(F1(ct_rsqrt, RS(M(S, S), 1)))));
}
ct_status ct_bw_atan(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, D(G, AS(M(S, S), 1))); }
ct_status ct_bw_sinh(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, M(G, F1(ct_cosh, S))); }
ct_status ct_bw_cosh(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, M(G, F1(ct_sinh, S))); }
/* tanh_backward: grad * (1 - y^2) */
ct_status ct_bw_tanh(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, Y_, M(G, RS(M(S, S), 1))); }
ct_status ct_bw_asinh(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  FORMULA(n, g, gin, X_, M(G, F1(ct_rsqrt, AS(M(S, S), 1))));
}
ct_status ct_bw_acosh(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  FORMULA(n, g, gin, X_, M(G, F1(ct_rsqrt, AS(M(S, S), -1))));
}
ct_status ct_bw_atanh(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, D(G, RS(M(S, S), 1))); }
/* sigmoid_backward: grad * (1 - y) * y */
ct_status ct_bw_sigmoid(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  FORMULA(n, g, gin, Y_, M(M(G, RS(S, 1)), S));
}
#define TWO_OVER_SQRTPI 1.12837916709551257390
ct_status ct_bw_erf(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  FORMULA(n, g, gin, X_, M(MS(F1(ct_exp, NEG(M(S, S))), TWO_OVER_SQRTPI), G));
}
ct_status ct_bw_erfc(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  FORMULA(n, g, gin, X_, M(MS(F1(ct_exp, NEG(M(S, S))), -TWO_OVER_SQRTPI), G));
}
/* 0.5 * sqrt(pi) * exp(erfinv(x)^2) * grad, with erfinv(x) the saved result */
ct_status ct_bw_erfinv(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  FORMULA(n, g, gin, Y_, M(MS(F1(ct_exp, M(S, S)), 0.88622692545275801365), G));
}
ct_status ct_bw_lgamma(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, M(G, F1(ct_digamma, S))); }
static ct_tensor *poly1(const ct_tensor *x) { return ct_polygamma(1, x); }
ct_status ct_bw_digamma(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, M(G, F1(poly1, S))); }
ct_status ct_bw_polygamma(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  int64_t k = n->a.k[0] + 1;
  ct_tensor *S = X_;
  if (!S) return ct_last_status();
  ct_scope *sc = ct_scope_begin();
  ct_tensor *p = ct_polygamma(k, S);
  ct_tensor *r = M(G, p);
  if (r) gin[0] = ct_keep(r);
  ct_scope_end(sc);
  return gin[0] ? CT_OK : ct_last_status();
}
/* reciprocal: -grad * y^2 */
ct_status ct_bw_reciprocal(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  FORMULA(n, g, gin, Y_, NEG(M(G, M(S, S))));
}
/* square = pow(x, 2): grad * 2 * x */
ct_status ct_bw_square(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { FORMULA(n, g, gin, X_, M(G, MS(S, 2))); }

/* ---- activations: h * d^k f(x) through the private op unary_deriv ---- */
static ct_tensor *unary_deriv(const ct_tensor *h, const ct_tensor *x, const ct_attrs *fa, int fop, int order) {
  if (!h || !x) return NULL;
  ct_attrs a = *fa;
  a.k[4] = order;
  a.k[5] = fop;
  const ct_tensor *in[2] = {h, x};
  return ct_pointwise(CT_OP_unary_deriv, 2, in, &a, CT_OUT_SAME);
}

ct_status ct_bw_deriv(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (n->a.k[3] && n->op == CT_OP_leaky_relu && n->a.f[0] < 0)
    return CT_ERR(CT_ERR_RUNTIME, "In-place leakyReLu backward calculation is triggered with a negative slope which is "
                  "not supported. This is caused by calling in-place forward function with a negative slope, please "
                  "call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you do "
                  "require supporting in-place leakRelu backward calculation with negative slope");
  if (n->a.k[3] && n->op == CT_OP_elu && n->a.f[0] < 0)
    return CT_ERR(CT_ERR_RUNTIME, "In-place elu backward calculation is triggered with a negative slope which is not "
                  "supported. This is caused by calling in-place forward function with a negative slope, please call "
                  "out-of-place version instead.");
  ct_tensor *x = X_;
  if (!x) return ct_last_status();
  gin[0] = unary_deriv(G, x, &n->a, n->op, 1);
  return gin[0] ? CT_OK : ct_last_status();
}

/* d^(order+1) f is identically zero (piecewise-linear derivatives)? */
static bool next_deriv_zero(int op, int order) {
  switch (op) {
    case CT_OP_relu:
    case CT_OP_hardtanh:
    case CT_OP_clamp:
    case CT_OP_leaky_relu:
    case CT_OP_hardsigmoid:
    case CT_OP_nan_to_num: return true;
    case CT_OP_hardswish: return order >= 2;
    default: return false;
  }
}

/* unary_deriv(h, x) = h * f^(k)(x): linear in h; its x-derivative is the next order. */
ct_status ct_bw_unary_deriv(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  int fop = (int)n->a.k[5], order = (int)n->a.k[4];
  ct_tensor *h = ct_node_saved_in(n, 0), *x = ct_node_saved_in(n, 1);
  if (!h || !x) return ct_last_status();
  if (ct_node_needs_grad(n, 0) && !(gin[0] = unary_deriv(G, x, &n->a, fop, order))) return ct_last_status();
  if (ct_node_needs_grad(n, 1) && !next_deriv_zero(fop, order)) {
    if (order >= 2)
      return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "derivative of order %d of %s is not implemented", order + 1,
                    ct_op_info_of(fop)->id);
    ct_tensor *gh = ct_mul(G, h);
    gin[1] = unary_deriv(gh, x, &n->a, fop, order + 1);
    ct_release(gh);
    if (!gin[1]) return ct_last_status();
  }
  return CT_OK;
}
