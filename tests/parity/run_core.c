/* Parity runners of the core ops: add/sub/mul/div (binary.c), neg/exp/log (unary.c),
 * sum/mean/sum_to_size (reduce.c), every view op (view.c), and clone/contiguous/
 * to_dtype/copy_/fill_ and the factories (creation.c).
 * Common attrs: "b_scalar" (the second operand is that Python scalar), "inplace"
 * (run the in-place form on a clone of in[0]; the case's fn does a.clone().op_()). */
#include "parity.h"
#include <string.h>

#define RET1(expr) \
  do {             \
    out[0] = (expr); \
    return out[0] ? 1 : -1; \
  } while (0)

/* In-place forms act on a clone, which becomes the output. */
#define INPLACE(call_on_x)                     \
  do {                                         \
    ct_tensor *x = ct_clone(in[0]);            \
    if (!x) return -1;                         \
    if ((call_on_x) != CT_OK) {                \
      ct_release(x);                           \
      return -1;                               \
    }                                          \
    out[0] = x;                                \
    return 1;                                  \
  } while (0)

/* ---- binary ---- */
PARITY_OP(add) {
  ct_scalar alpha = pc_scalar(c, "alpha", ct_si(1));
  bool ip = pc_int(c, "inplace", 0);
  if (pc_has(c, "b_scalar")) {
    ct_scalar s = pc_scalar(c, "b_scalar", ct_si(0));
    if (ip) INPLACE(ct_add_scalar_(x, s));
    RET1(ct_add_scalar(in[0], s));
  }
  if (ip) INPLACE(ct_add_alpha_(x, in[1], alpha));
  if (pc_int(c, "out", 0)) { /* add(out=): into an empty tensor of the "out_dtype" */
    ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts_dtype((ct_dtype)pc_dtype(c, "out_dtype"))); /* torch.empty(0) */
    if (!o) return -1;
    if (ct_add_out(o, in[0], in[1]) != CT_OK) {
      ct_release(o);
      return -1;
    }
    out[0] = o;
    return 1;
  }
  RET1(ct_add_alpha(in[0], in[1], alpha));
}

PARITY_OP(sub) {
  ct_scalar alpha = pc_scalar(c, "alpha", ct_si(1));
  bool ip = pc_int(c, "inplace", 0);
  if (pc_has(c, "b_scalar")) {
    ct_scalar s = pc_scalar(c, "b_scalar", ct_si(0));
    if (ip) INPLACE(ct_sub_scalar_(x, s));
    RET1(ct_sub_scalar(in[0], s));
  }
  if (ip) INPLACE(ct_sub_(x, in[1]));
  RET1(ct_sub_alpha(in[0], in[1], alpha));
}

PARITY_OP(rsub) { RET1(ct_rsub_scalar(in[0], pc_scalar(c, "b_scalar", ct_si(0)))); }

PARITY_OP(mul) {
  bool ip = pc_int(c, "inplace", 0);
  if (pc_has(c, "b_scalar")) {
    ct_scalar s = pc_scalar(c, "b_scalar", ct_si(0));
    if (ip) INPLACE(ct_mul_scalar_(x, s));
    RET1(ct_mul_scalar(in[0], s));
  }
  if (ip) INPLACE(ct_mul_(x, in[1]));
  if (pc_int(c, "out", 0)) {
    ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts_dtype((ct_dtype)pc_dtype(c, "out_dtype"))); /* torch.empty(0) */
    if (!o) return -1;
    if (ct_mul_out(o, in[0], in[1]) != CT_OK) {
      ct_release(o);
      return -1;
    }
    out[0] = o;
    return 1;
  }
  RET1(ct_mul(in[0], in[1]));
}

PARITY_OP(div) {
  bool ip = pc_int(c, "inplace", 0);
  if (pc_has(c, "b_scalar")) {
    ct_scalar s = pc_scalar(c, "b_scalar", ct_si(0));
    if (ip) INPLACE(ct_div_scalar_(x, s));
    RET1(ct_div_scalar(in[0], s));
  }
  if (ip) INPLACE(ct_div_(x, in[1]));
  const char *mode = pc_str(c, "rounding_mode", NULL);
  RET1(mode ? ct_div_mode(in[0], in[1], mode) : ct_div(in[0], in[1]));
}

/* ---- unary ---- */
PARITY_OP(neg) {
  if (pc_int(c, "inplace", 0)) INPLACE(ct_neg_(x));
  RET1(ct_neg(in[0]));
}
PARITY_OP(exp) {
  if (pc_int(c, "inplace", 0)) INPLACE(ct_exp_(x));
  RET1(ct_exp(in[0]));
}
PARITY_OP(log) {
  if (pc_int(c, "inplace", 0)) INPLACE(ct_log_(x));
  RET1(ct_log(in[0]));
}

/* ---- reductions: "dims" (absent = all), "keepdim", "dtype" ---- */
PARITY_OP(sum) {
  int64_t dims[CT_MAX_DIMS];
  int nd = pc_ints(c, "dims", dims, CT_MAX_DIMS);
  if (nd > CT_MAX_DIMS) return -1;
  RET1(ct_sum_dtype(in[0], nd < 0 ? 0 : nd, nd < 0 ? NULL : dims, pc_int(c, "keepdim", 0), pc_dtype(c, "dtype")));
}
PARITY_OP(mean) {
  int64_t dims[CT_MAX_DIMS];
  int nd = pc_ints(c, "dims", dims, CT_MAX_DIMS);
  if (nd > CT_MAX_DIMS) return -1;
  RET1(ct_mean_dims(in[0], nd < 0 ? 0 : nd, nd < 0 ? NULL : dims, pc_int(c, "keepdim", 0)));
}
PARITY_OP(sum_to_size) {
  int64_t size[CT_MAX_DIMS];
  int nd = pc_ints(c, "size", size, CT_MAX_DIMS);
  if (nd < 0 || nd > CT_MAX_DIMS) return -1;
  RET1(ct_sum_to_size(in[0], nd, size));
}

/* ---- views: attrs name the arguments as in PyTorch ---- */
#define INTS(key, arr) int64_t arr[CT_MAX_DIMS * 2]; int n_##arr = pc_ints(c, key, arr, CT_MAX_DIMS * 2); \
  if (n_##arr > CT_MAX_DIMS * 2) return -1
PARITY_OP(view) { INTS("shape", s); RET1(ct_view(in[0], n_s < 0 ? 0 : n_s, s)); }
PARITY_OP(reshape) { INTS("shape", s); RET1(ct_reshape(in[0], n_s < 0 ? 0 : n_s, s)); }
PARITY_OP(view_as) { RET1(ct_view_as(in[0], in[1])); }
PARITY_OP(reshape_as) { RET1(ct_reshape_as(in[0], in[1])); }
PARITY_OP(permute) { INTS("dims", s); RET1(ct_permute(in[0], n_s < 0 ? 0 : n_s, s)); }
PARITY_OP(transpose) { RET1(ct_transpose(in[0], pc_int(c, "dim0", 0), pc_int(c, "dim1", 1))); }
PARITY_OP(t) { RET1(ct_t(in[0])); }
PARITY_OP(mT) { RET1(ct_mT(in[0])); }
PARITY_OP(expand) { INTS("shape", s); RET1(ct_expand(in[0], n_s < 0 ? 0 : n_s, s)); }
PARITY_OP(expand_as) { RET1(ct_expand_as(in[0], in[1])); }
PARITY_OP(broadcast_to) { INTS("shape", s); RET1(ct_broadcast_to(in[0], n_s < 0 ? 0 : n_s, s)); }
PARITY_OP(squeeze) { RET1(pc_has(c, "dim") ? ct_squeeze_dim(in[0], pc_int(c, "dim", 0)) : ct_squeeze(in[0])); }
PARITY_OP(unsqueeze) { RET1(ct_unsqueeze(in[0], pc_int(c, "dim", 0))); }
PARITY_OP(flatten) { RET1(ct_flatten(in[0], pc_int(c, "start_dim", 0), pc_int(c, "end_dim", -1))); }
PARITY_OP(unflatten) { INTS("sizes", s); RET1(ct_unflatten(in[0], pc_int(c, "dim", 0), n_s < 0 ? 0 : n_s, s)); }
PARITY_OP(narrow) { RET1(ct_narrow(in[0], pc_int(c, "dim", 0), pc_int(c, "start", 0), pc_int(c, "length", 0))); }
PARITY_OP(select) { RET1(ct_select(in[0], pc_int(c, "dim", 0), pc_int(c, "index", 0))); }
/* Python slicing: "start"/"end" absent = open (INT64 bounds clamp like Python) */
PARITY_OP(slice) {
  RET1(ct_slice(in[0], pc_int(c, "dim", 0), pc_int(c, "start", 0), pc_int(c, "end", INT64_MAX), pc_int(c, "step", 1)));
}
PARITY_OP(diagonal) {
  RET1(ct_diagonal(in[0], pc_int(c, "offset", 0), pc_int(c, "dim1", 0), pc_int(c, "dim2", 1)));
}
PARITY_OP(as_strided) {
  INTS("size", sz);
  INTS("stride", st);
  if (n_sz < 0 || n_sz != n_st) return -1;
  RET1(ct_as_strided(in[0], n_sz, sz, st, pc_int(c, "storage_offset", -1)));
}
PARITY_OP(unfold) { RET1(ct_unfold(in[0], pc_int(c, "dimension", 0), pc_int(c, "size", 1), pc_int(c, "step", 1))); }
/* Views of self-overlapping views: their gradient must land on the input's elements, not on
 * shared storage (variant 0: unfold of unfold; 1: diagonal -> unfold -> select;
 * 2: unfold -> step slice -> unfold -> diagonal). */
PARITY_OP(view_chain) {
  int64_t v = pc_int(c, "variant", 0);
  ct_tensor *a = NULL, *b = NULL, *r = NULL;
  if (v == 0) {
    a = ct_unfold(in[0], 2, 2, 1);
    r = a ? ct_unfold(a, 3, 2, 1) : NULL;
  } else if (v == 1) {
    a = ct_diagonal(in[0], 0, 1, 2);
    b = a ? ct_unfold(a, 1, 2, 1) : NULL;
    r = b ? ct_select(b, 0, 1) : NULL;
  } else {
    ct_tensor *u = ct_unfold(in[0], 1, 3, 2);
    a = u ? ct_slice(u, 0, 1, 4, 2) : NULL;
    ct_release(u);
    b = a ? ct_unfold(a, 0, 2, 1) : NULL;
    r = b ? ct_diagonal(b, 0, 0, 1) : NULL;
  }
  ct_release(a);
  ct_release(b);
  RET1(r);
}
PARITY_OP(movedim) {
  INTS("source", s);
  INTS("destination", d);
  if (n_s < 0 || n_s != n_d) return -1;
  RET1(ct_movedim(in[0], n_s, s, d));
}
PARITY_OP(alias) { RET1(ct_alias(in[0])); }

/* In place through a view of a non-leaf (CopySlices): b = a * 1; b.narrow(dim, start,
 * length).mul_(k) (or add_ of in[1] when given); outputs b and the view. */
PARITY_OP(view_inplace) {
  ct_tensor *b = ct_mul_scalar(in[0], ct_si(1));
  ct_tensor *v = b ? ct_narrow(b, pc_int(c, "dim", 0), pc_int(c, "start", 0), pc_int(c, "length", 1)) : NULL;
  ct_status st = !v ? ct_last_status()
                 : n_in > 1 ? ct_add_(v, in[1])
                            : ct_mul_scalar_(v, pc_scalar(c, "k", ct_si(2)));
  if (st != CT_OK) {
    ct_release(v);
    ct_release(b);
    return -1;
  }
  out[0] = b;
  out[1] = v;
  return 2;
}

/* ---- creation ---- */
static ct_options opts_of(const pcase *c) {
  ct_options o = ct_opts();
  int dt = pc_dtype(c, "dtype");
  if (dt >= 0) o.dtype = (ct_dtype)dt;
  o.requires_grad = pc_int(c, "requires_grad", 0) != 0;
  return o;
}
PARITY_OP(zeros) { INTS("shape", s); RET1(ct_zeros(n_s < 0 ? 0 : n_s, s, opts_of(c))); }
PARITY_OP(ones) { INTS("shape", s); RET1(ct_ones(n_s < 0 ? 0 : n_s, s, opts_of(c))); }
PARITY_OP(full) { INTS("shape", s); RET1(ct_full(n_s < 0 ? 0 : n_s, s, pc_scalar(c, "value", ct_si(0)), opts_of(c))); }
/* empty's values are undefined: the runner fills it to compare shape/dtype/values */
PARITY_OP(empty) {
  INTS("shape", s);
  ct_tensor *t = ct_empty(n_s < 0 ? 0 : n_s, s, opts_of(c));
  if (!t || ct_zero_(t) != CT_OK) {
    ct_release(t);
    return -1;
  }
  out[0] = t;
  return 1;
}
PARITY_OP(scalar_tensor) { RET1(ct_scalar_tensor(pc_scalar(c, "value", ct_si(0)), opts_of(c))); }
PARITY_OP(arange) {
  ct_options o = opts_of(c);
  RET1(ct_arange(pc_scalar(c, "start", ct_si(0)), pc_scalar(c, "end", ct_si(0)), pc_scalar(c, "step", ct_si(1)),
                 pc_has(c, "dtype") ? &o : NULL));
}
PARITY_OP(linspace) {
  RET1(ct_linspace(pc_float(c, "start", 0), pc_float(c, "end", 0), pc_int(c, "steps", 0), opts_of(c)));
}
PARITY_OP(logspace) {
  RET1(ct_logspace(pc_float(c, "start", 0), pc_float(c, "end", 0), pc_int(c, "steps", 0), pc_float(c, "base", 10),
                   opts_of(c)));
}
PARITY_OP(eye) { RET1(ct_eye(pc_int(c, "n", 0), pc_int(c, "m", -1), opts_of(c))); }
PARITY_OP(zeros_like) { ct_options o = opts_of(c); RET1(ct_zeros_like(in[0], pc_has(c, "dtype") ? &o : NULL)); }
PARITY_OP(ones_like) { ct_options o = opts_of(c); RET1(ct_ones_like(in[0], pc_has(c, "dtype") ? &o : NULL)); }
PARITY_OP(full_like) {
  ct_options o = opts_of(c);
  RET1(ct_full_like(in[0], pc_scalar(c, "value", ct_si(0)), pc_has(c, "dtype") ? &o : NULL));
}
PARITY_OP(clone) { RET1(ct_clone(in[0])); }
PARITY_OP(contiguous) { RET1(ct_contiguous(in[0])); }
PARITY_OP(to_dtype) { RET1(ct_to_dtype(in[0], (ct_dtype)pc_dtype(c, "dtype"))); }
/* dst.clone().copy_(src) */
PARITY_OP(copy_) { INPLACE(ct_copy_(x, in[1])); }
PARITY_OP(fill_) { INPLACE(ct_fill_(x, pc_scalar(c, "value", ct_si(0)))); }
PARITY_OP(zero_) { INPLACE(ct_zero_(x)); }
