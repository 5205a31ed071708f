/* Parity runners of the unary ops (src/ops/unary.c). One runner, "unary", picks the
 * function by the attr "fn"; parameters travel as attrs named like PyTorch's
 * arguments. Common attrs: "inplace" (run the in-place form on a clone of in[0]),
 * "out" (run the out= form into an empty tensor of dtype "out_dtype"). */
#include "parity.h"
#include <math.h>
#include <string.h>

typedef ct_tensor *(*fn1)(const ct_tensor *);
typedef ct_status (*fn1_)(ct_tensor *);
typedef ct_status (*fn1o)(ct_tensor *, const ct_tensor *);

#define S(name) {#name, ct_##name, ct_##name##_, ct_##name##_out}
static const struct {
  const char *name;
  fn1 f;
  fn1_ fi;
  fn1o fo;
} SIMPLE[] = {
    S(abs),   S(neg),   S(sign),       S(exp),         S(exp2),        S(expm1),     S(log),   S(log2),
    S(log10), S(log1p), S(sqrt),       S(rsqrt),       S(sin),         S(cos),       S(tan),   S(asin),
    S(acos),  S(atan),  S(sinh),       S(cosh),        S(tanh),        S(asinh),     S(acosh), S(atanh),
    S(sigmoid), S(erf), S(erfc),       S(erfinv),      S(lgamma),      S(digamma),   S(floor), S(ceil),
    S(round), S(trunc), S(frac),       S(reciprocal),  S(square),      S(relu),      S(relu6), S(silu),
    S(mish),  S(hardsigmoid), S(hardswish), S(selu),   S(logical_not), S(bitwise_not),
    {"softsign", ct_softsign, ct_softsign_, NULL},
    {"isnan", ct_isnan, NULL, ct_isnan_out},
    {"isinf", ct_isinf, NULL, ct_isinf_out},
    {"isfinite", ct_isfinite, NULL, ct_isfinite_out},
};
#undef S

/* Which form to run: 0 out of place, 1 in place, 2 out= */
typedef struct {
  int form;
  ct_tensor *x; /* in-place: the clone; out=: the out tensor */
} form_t;

static int finish(form_t *f, ct_tensor *r, ct_status st, ct_tensor **out) {
  if (f->form == 0) {
    out[0] = r;
    return r ? 1 : -1;
  }
  if (st != CT_OK) {
    ct_release(f->x);
    return -1;
  }
  out[0] = f->x;
  return 1;
}

static bool start_form(const pcase *c, ct_tensor *const *in, form_t *f) {
  f->form = pc_int(c, "inplace", 0) ? 1 : (pc_int(c, "out", 0) ? 2 : 0);
  f->x = NULL;
  if (f->form == 1) f->x = ct_clone(in[0]);
  if (f->form == 2) {
    int dt = pc_dtype(c, "out_dtype");
    f->x = ct_empty(1, (int64_t[]){0}, ct_opts_dtype(dt < 0 ? ct_tensor_dtype(in[0]) : (ct_dtype)dt));
  }
  return f->form == 0 || f->x != NULL;
}

/* Runs the form chosen: out of place `op`, in place `ip` on f.x, out= `op_out` into f.x. */
#define FORMS(op, ip, op_out)                                                     \
  do {                                                                            \
    if (f.form == 0) return finish(&f, (op), CT_OK, out);                         \
    if (f.form == 1) return finish(&f, NULL, (ip), out);                          \
    return finish(&f, NULL, (op_out), out);                                       \
  } while (0)

PARITY_OP(unary) {
  const char *name = pc_str(c, "fn", "");
  form_t f;
  if (!start_form(c, in, &f)) return -1;
  ct_tensor *x = in[0], *y = f.x;
  for (size_t i = 0; i < sizeof SIMPLE / sizeof SIMPLE[0]; i++) {
    if (strcmp(SIMPLE[i].name, name)) continue;
    if ((f.form == 1 && !SIMPLE[i].fi) || (f.form == 2 && !SIMPLE[i].fo)) {
      ct_release(y);
      return -1;
    }
    FORMS(SIMPLE[i].f(x), SIMPLE[i].fi(y), SIMPLE[i].fo(y, x));
  }
  if (!strcmp(name, "round_decimals")) {
    int64_t d = pc_int(c, "decimals", 0);
    FORMS(ct_round_decimals(x, d), ct_round_decimals_(y, d), ct_round_decimals_out(y, x, d));
  }
  if (!strcmp(name, "logit")) {
    double eps = pc_has(c, "eps") ? pc_float(c, "eps", -1) : -1;
    FORMS(ct_logit(x, eps), ct_logit_(y, eps), ct_logit_out(y, x, eps));
  }
  if (!strcmp(name, "polygamma")) {
    int64_t n = pc_int(c, "n", 0);
    FORMS(ct_polygamma(n, x), ct_polygamma_(y, n), ct_polygamma_out(y, n, x));
  }
  if (!strcmp(name, "gelu")) {
    const char *ap = pc_str(c, "approximate", "none");
    FORMS(ct_gelu(x, ap), ct_gelu_(y, ap), ct_gelu_out(y, x, ap));
  }
  if (!strcmp(name, "softplus")) {
    double b = pc_float(c, "beta", 1), t = pc_float(c, "threshold", 20);
    FORMS(ct_softplus(x, b, t), ct_softplus_(y, b, t), ct_softplus_out(y, x, b, t));
  }
  if (!strcmp(name, "hardtanh")) {
    double lo = pc_float(c, "min_val", -1), hi = pc_float(c, "max_val", 1);
    FORMS(ct_hardtanh(x, lo, hi), ct_hardtanh_(y, lo, hi), ct_hardtanh_out(y, x, lo, hi));
  }
  if (!strcmp(name, "leaky_relu")) {
    double s = pc_float(c, "negative_slope", 0.01);
    FORMS(ct_leaky_relu(x, s), ct_leaky_relu_(y, s), ct_leaky_relu_out(y, x, s));
  }
  if (!strcmp(name, "elu")) {
    double a = pc_float(c, "alpha", 1), s = pc_float(c, "scale", 1), is = pc_float(c, "input_scale", 1);
    FORMS(ct_elu_full(x, a, s, is), ct_elu_full_(y, a, s, is), ct_elu_out(y, x, a, s, is));
  }
  if (!strcmp(name, "celu")) {
    double a = pc_float(c, "alpha", 1);
    FORMS(ct_celu(x, a), ct_celu_(y, a), ct_celu_out(y, x, a));
  }
  if (!strcmp(name, "clamp")) {
    ct_scalar lo = pc_scalar(c, "min", ct_si(0)), hi = pc_scalar(c, "max", ct_si(0));
    const ct_scalar *pl = pc_has(c, "min") ? &lo : NULL, *ph = pc_has(c, "max") ? &hi : NULL;
    FORMS(ct_clamp(x, pl, ph), ct_clamp_(y, pl, ph), ct_clamp_out(y, x, pl, ph));
  }
  if (!strcmp(name, "nan_to_num")) {
    double nv = pc_float(c, "nan", 0), pv = pc_float(c, "posinf", 0), ngv = pc_float(c, "neginf", 0);
    const double *pn = pc_has(c, "nan") ? &nv : NULL, *pp = pc_has(c, "posinf") ? &pv : NULL,
                 *png = pc_has(c, "neginf") ? &ngv : NULL;
    FORMS(ct_nan_to_num(x, pn, pp, png), ct_nan_to_num_(y, pn, pp, png), ct_nan_to_num_out(y, x, pn, pp, png));
  }
  ct_release(y);
  return -1;
}
