/* Parity runners of the ternary ops (src/ops/ternary.c): where, lerp, addcmul, addcdiv,
 * clamp with tensor bounds. Attrs: "inplace" (in-place form on a clone of in[0]), "out"
 * (out= form into an empty tensor of dtype "out_dtype"), and per op:
 *   where:  "a_scalar"/"b_scalar" (that operand is a Python scalar; inputs shift left)
 *   lerp:   "weight" (a scalar weight; else in[2] is the weight tensor)
 *   addc*:  "value"
 *   clamp_tensor: "has_min", "has_max" (which of in[1], in[2] are the bounds) */
#include "parity.h"

typedef struct {
  int form; /* 0 out of place, 1 in place, 2 out= */
  ct_tensor *x;
} form_t;

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
#define FORMS(op, ip, op_out)                             \
  do {                                                    \
    if (f.form == 0) return finish(&f, (op), CT_OK, out); \
    if (f.form == 1) return finish(&f, NULL, (ip), out);  \
    return finish(&f, NULL, (op_out), out);               \
  } while (0)

PARITY_OP(where) {
  bool sa = pc_has(c, "a_scalar"), sb = pc_has(c, "b_scalar");
  ct_scalar a = pc_scalar(c, "a_scalar", ct_si(0)), b = pc_scalar(c, "b_scalar", ct_si(0));
  ct_tensor *r;
  if (sa && sb) r = ct_where_scalars(in[0], a, b);
  else if (sa) r = ct_where_scalar_a(in[0], a, in[1]);
  else if (sb) r = ct_where_scalar_b(in[0], in[1], b);
  else r = ct_where(in[0], in[1], in[2]);
  out[0] = r;
  return r ? 1 : -1;
}

PARITY_OP(lerp) {
  form_t f;
  if (!start_form(c, in, &f)) return -1;
  if (pc_has(c, "weight")) {
    ct_scalar w = pc_scalar(c, "weight", ct_sf(0.5));
    FORMS(ct_lerp(in[0], in[1], w), ct_lerp_(f.x, in[1], w), ct_lerp_out(f.x, in[0], in[1], w));
  }
  FORMS(ct_lerp_tensor(in[0], in[1], in[2]), ct_lerp_tensor_(f.x, in[1], in[2]),
        ct_lerp_tensor_out(f.x, in[0], in[1], in[2]));
}

PARITY_OP(addcmul) {
  form_t f;
  if (!start_form(c, in, &f)) return -1;
  ct_scalar v = pc_scalar(c, "value", ct_si(1));
  FORMS(ct_addcmul(in[0], in[1], in[2], v), ct_addcmul_(f.x, in[1], in[2], v),
        ct_addcmul_out(f.x, in[0], in[1], in[2], v));
}

PARITY_OP(addcdiv) {
  form_t f;
  if (!start_form(c, in, &f)) return -1;
  ct_scalar v = pc_scalar(c, "value", ct_si(1));
  FORMS(ct_addcdiv(in[0], in[1], in[2], v), ct_addcdiv_(f.x, in[1], in[2], v),
        ct_addcdiv_out(f.x, in[0], in[1], in[2], v));
}

PARITY_OP(clamp_tensor) {
  form_t f;
  if (!start_form(c, in, &f)) return -1;
  bool hl = pc_int(c, "has_min", 1), hh = pc_int(c, "has_max", 1);
  const ct_tensor *lo = hl ? in[1] : NULL, *hi = hh ? (hl ? in[2] : in[1]) : NULL;
  FORMS(ct_clamp_tensor(in[0], lo, hi), ct_clamp_tensor_(f.x, lo, hi), ct_clamp_tensor_out(f.x, in[0], lo, hi));
}
