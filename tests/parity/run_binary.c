/* Parity runners of the binary ops (src/ops/binary.c). Each op has a runner of its
 * name (add/sub/mul/div/rsub live in run_core.c; the extra forms of those are
 * "rsub_tensor", "div_ext" and "binary_out"). Common attrs:
 *   "b_scalar"  the second operand is this Python number (ct_<op>_scalar)
 *   "a_scalar"  the first operand is this Python number (pow, xlogy)
 *   "inplace"   run the in-place form on a clone of in[0]
 *   "out"       run the out= form into an empty tensor of dtype "out_dtype" */
#include "parity.h"
#include <string.h>

typedef ct_tensor *(*fn2)(const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*fn2s)(const ct_tensor *, ct_scalar);
typedef ct_tensor *(*fn2r)(ct_scalar, const ct_tensor *);
typedef ct_status (*fn2_)(ct_tensor *, const ct_tensor *);
typedef ct_status (*fn2s_)(ct_tensor *, ct_scalar);
typedef ct_status (*fn2o)(ct_tensor *, const ct_tensor *, const ct_tensor *);

typedef struct {
  const char *name;
  fn2 f;
  fn2s fs;
  fn2r fr;
  fn2_ fi;
  fn2s_ fis;
  fn2o fo;
} binfns;

static int run_bin(const pcase *c, ct_tensor *const *in, int n_in, ct_tensor **out, const binfns *f) {
  bool ip = pc_int(c, "inplace", 0) != 0;
  if (pc_has(c, "a_scalar")) {
    if (!f->fr || n_in < 1) return -1;
    out[0] = f->fr(pc_scalar(c, "a_scalar", ct_si(0)), in[0]);
    return out[0] ? 1 : -1;
  }
  bool sc = pc_has(c, "b_scalar");
  ct_scalar s = pc_scalar(c, "b_scalar", ct_si(0));
  if (n_in < (sc ? 1 : 2)) return -1;
  if (ip) {
    if (sc ? !f->fis : !f->fi) return -1;
    ct_tensor *x = ct_clone(in[0]);
    if (!x) return -1;
    ct_status st = sc ? f->fis(x, s) : f->fi(x, in[1]);
    if (st != CT_OK) {
      ct_release(x);
      return -1;
    }
    out[0] = x;
    return 1;
  }
  if (pc_int(c, "out", 0)) {
    if (!f->fo || sc) return -1;
    int dt = pc_dtype(c, "out_dtype");
    ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts_dtype(dt < 0 ? ct_tensor_dtype(in[0]) : (ct_dtype)dt));
    if (!o) return -1;
    if (f->fo(o, in[0], in[1]) != CT_OK) {
      ct_release(o);
      return -1;
    }
    out[0] = o;
    return 1;
  }
  if (sc) {
    if (!f->fs) return -1;
    out[0] = f->fs(in[0], s);
  } else {
    out[0] = f->f(in[0], in[1]);
  }
  return out[0] ? 1 : -1;
}

#define BIN(name, fs, fr, fi, fis, fo)                                                  \
  PARITY_OP(name) {                                                                       \
    static const binfns F = {#name, ct_##name, fs, fr, fi, fis, fo};                      \
    return run_bin(c, in, n_in, out, &F);                                                 \
  }

BIN(floor_divide, ct_floor_divide_scalar, NULL, ct_floor_divide_, ct_floor_divide_scalar_, NULL)
BIN(remainder, ct_remainder_scalar, NULL, ct_remainder_, ct_remainder_scalar_, NULL)
BIN(fmod, ct_fmod_scalar, NULL, ct_fmod_, ct_fmod_scalar_, NULL)
BIN(pow, ct_pow_scalar, ct_pow_scalar_tensor, ct_pow_, ct_pow_scalar_, ct_pow_out)
BIN(atan2, NULL, NULL, ct_atan2_, NULL, NULL)
BIN(maximum, NULL, NULL, NULL, NULL, ct_maximum_out)
BIN(minimum, NULL, NULL, NULL, NULL, ct_minimum_out)
BIN(fmax, NULL, NULL, NULL, NULL, NULL)
BIN(fmin, NULL, NULL, NULL, NULL, NULL)
BIN(hypot, NULL, NULL, ct_hypot_, NULL, NULL)
BIN(logaddexp, NULL, NULL, NULL, NULL, NULL)
BIN(logaddexp2, NULL, NULL, NULL, NULL, NULL)
BIN(copysign, ct_copysign_scalar, NULL, ct_copysign_, ct_copysign_scalar_, NULL)
BIN(xlogy, ct_xlogy_scalar, ct_xlogy_scalar_self, ct_xlogy_, NULL, NULL)
BIN(bitwise_and, ct_bitwise_and_scalar, NULL, ct_bitwise_and_, ct_bitwise_and_scalar_, NULL)
BIN(bitwise_or, ct_bitwise_or_scalar, NULL, ct_bitwise_or_, ct_bitwise_or_scalar_, NULL)
BIN(bitwise_xor, ct_bitwise_xor_scalar, NULL, ct_bitwise_xor_, ct_bitwise_xor_scalar_, NULL)
BIN(bitwise_left_shift, ct_bitwise_left_shift_scalar, NULL, ct_bitwise_left_shift_, ct_bitwise_left_shift_scalar_, NULL)
BIN(bitwise_right_shift, ct_bitwise_right_shift_scalar, NULL, ct_bitwise_right_shift_, ct_bitwise_right_shift_scalar_,
    NULL)
BIN(logical_and, NULL, NULL, ct_logical_and_, NULL, NULL)
BIN(logical_or, NULL, NULL, ct_logical_or_, NULL, NULL)
BIN(logical_xor, NULL, NULL, ct_logical_xor_, NULL, NULL)
BIN(eq, ct_eq_scalar, NULL, ct_eq_, ct_eq_scalar_, ct_eq_out)
BIN(ne, ct_ne_scalar, NULL, ct_ne_, ct_ne_scalar_, ct_ne_out)
BIN(lt, ct_lt_scalar, NULL, ct_lt_, ct_lt_scalar_, ct_lt_out)
BIN(le, ct_le_scalar, NULL, ct_le_, ct_le_scalar_, ct_le_out)
BIN(gt, ct_gt_scalar, NULL, ct_gt_, ct_gt_scalar_, ct_gt_out)
BIN(ge, ct_ge_scalar, NULL, ct_ge_, ct_ge_scalar_, ct_ge_out)

/* torch.rsub(a, b, alpha=) = b - alpha * a with two tensors */
PARITY_OP(rsub_tensor) {
  if (n_in < 2) return -1;
  out[0] = ct_rsub_alpha(in[0], in[1], pc_scalar(c, "alpha", ct_si(1)));
  return out[0] ? 1 : -1;
}

/* div forms run_core.c's "div" runner lacks: rounding mode with a scalar, in place, out= */
PARITY_OP(div_ext) {
  const char *mode = pc_str(c, "rounding_mode", NULL);
  bool sc = pc_has(c, "b_scalar");
  ct_scalar s = pc_scalar(c, "b_scalar", ct_si(1));
  if (pc_int(c, "inplace", 0)) {
    ct_tensor *x = ct_clone(in[0]);
    if (!x) return -1;
    ct_status st = sc ? ct_div_scalar_mode_(x, s, mode) : ct_div_mode_(x, in[1], mode);
    if (st != CT_OK) {
      ct_release(x);
      return -1;
    }
    out[0] = x;
    return 1;
  }
  if (pc_int(c, "out", 0)) {
    int dt = pc_dtype(c, "out_dtype");
    ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts_dtype(dt < 0 ? CT_FLOAT32 : (ct_dtype)dt));
    if (!o) return -1;
    if (ct_div_mode_out(o, in[0], in[1], mode) != CT_OK) {
      ct_release(o);
      return -1;
    }
    out[0] = o;
    return 1;
  }
  out[0] = sc ? ct_div_scalar_mode(in[0], s, mode) : ct_div_mode(in[0], in[1], mode);
  return out[0] ? 1 : -1;
}

/* out= of add (alpha), sub (alpha), mul, div by "fn" */
PARITY_OP(binary_out) {
  const char *fn = pc_str(c, "fn", "");
  int dt = pc_dtype(c, "out_dtype");
  ct_scalar alpha = pc_scalar(c, "alpha", ct_si(1));
  if (n_in < 2) return -1;
  ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts_dtype(dt < 0 ? ct_tensor_dtype(in[0]) : (ct_dtype)dt));
  if (!o) return -1;
  ct_status st = CT_ERR_VALUE;
  if (!strcmp(fn, "add")) st = ct_add_alpha_out(o, in[0], in[1], alpha);
  else if (!strcmp(fn, "sub")) st = ct_sub_alpha_out(o, in[0], in[1], alpha);
  else if (!strcmp(fn, "mul")) st = ct_mul_out(o, in[0], in[1]);
  else if (!strcmp(fn, "div")) st = ct_div_out(o, in[0], in[1]);
  if (st != CT_OK) {
    ct_release(o);
    return -1;
  }
  out[0] = o;
  return 1;
}

/* sub with alpha in place (run_core's "sub" runs ct_sub_ without alpha) */
PARITY_OP(sub_alpha_) {
  ct_tensor *x = ct_clone(in[0]);
  if (!x) return -1;
  if (ct_sub_alpha_(x, in[1], pc_scalar(c, "alpha", ct_si(1))) != CT_OK) {
    ct_release(x);
    return -1;
  }
  out[0] = x;
  return 1;
}

PARITY_OP(isclose) {
  if (n_in < 2) return -1;
  out[0] = ct_isclose(in[0], in[1], pc_float(c, "rtol", 1e-5), pc_float(c, "atol", 1e-8), pc_int(c, "equal_nan", 0));
  return out[0] ? 1 : -1;
}

/* allclose/equal return a bool: the runner wraps it in a 0-dim bool tensor */
PARITY_OP(allclose) {
  bool r = false;
  if (n_in < 2 ||
      ct_allclose(in[0], in[1], pc_float(c, "rtol", 1e-5), pc_float(c, "atol", 1e-8), pc_int(c, "equal_nan", 0), &r) !=
          CT_OK)
    return -1;
  out[0] = ct_scalar_tensor(ct_sb(r), ct_opts_dtype(CT_BOOL));
  return out[0] ? 1 : -1;
}
PARITY_OP(equal) {
  bool r = false;
  if (n_in < 2 || ct_equal(in[0], in[1], &r) != CT_OK) return -1;
  out[0] = ct_scalar_tensor(ct_sb(r), ct_opts_dtype(CT_BOOL));
  return out[0] ? 1 : -1;
}
