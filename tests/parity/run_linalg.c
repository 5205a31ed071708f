/* Parity runners of the linalg family (src/ops/linalg.c).
 * Attrs: "beta"/"alpha" (scalars of the add* forms), "eq" (einsum), "mT" (bmm of the
 * operands' mT views), "inplace" (addmm_ on a clone of in[0]), "out" (matmul(out=) into an
 * empty float32 tensor). */
#include "parity.h"

#define RET1(expr)          \
  do {                      \
    out[0] = (expr);        \
    return out[0] ? 1 : -1; \
  } while (0)

PARITY_OP(mm) { RET1(ct_mm(in[0], in[1])); }

PARITY_OP(bmm) {
  if (pc_int(c, "mT", 0)) {
    ct_tensor *a = ct_mT(in[0]), *b = ct_mT(in[1]);
    out[0] = a && b ? ct_bmm(a, b) : NULL;
    ct_release(a);
    ct_release(b);
    return out[0] ? 1 : -1;
  }
  RET1(ct_bmm(in[0], in[1]));
}

PARITY_OP(mv) { RET1(ct_mv(in[0], in[1])); }
PARITY_OP(dot) { RET1(ct_dot(in[0], in[1])); }
PARITY_OP(outer) { RET1(ct_outer(in[0], in[1])); }

PARITY_OP(matmul) {
  if (pc_int(c, "out", 0)) {
    ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts());
    if (!o) return -1;
    if (ct_matmul_out(o, in[0], in[1]) != CT_OK) {
      ct_release(o);
      return -1;
    }
    out[0] = o;
    return 1;
  }
  RET1(ct_matmul(in[0], in[1]));
}

PARITY_OP(addmm) {
  ct_scalar beta = pc_scalar(c, "beta", ct_si(1)), alpha = pc_scalar(c, "alpha", ct_si(1));
  if (pc_int(c, "inplace", 0)) {
    ct_tensor *x = ct_clone(in[0]);
    if (!x) return -1;
    if (ct_addmm_(x, in[1], in[2], beta, alpha) != CT_OK) {
      ct_release(x);
      return -1;
    }
    out[0] = x;
    return 1;
  }
  RET1(ct_addmm(in[0], in[1], in[2], beta, alpha));
}

PARITY_OP(addmv) {
  RET1(ct_addmv(in[0], in[1], in[2], pc_scalar(c, "beta", ct_si(1)), pc_scalar(c, "alpha", ct_si(1))));
}

PARITY_OP(baddbmm) {
  RET1(ct_baddbmm(in[0], in[1], in[2], pc_scalar(c, "beta", ct_si(1)), pc_scalar(c, "alpha", ct_si(1))));
}

PARITY_OP(linear) { RET1(ct_linear(in[0], in[1], n_in > 2 ? in[2] : NULL)); }

PARITY_OP(einsum) { RET1(ct_einsum(pc_str(c, "eq", ""), n_in, (const ct_tensor *const *)in)); }
