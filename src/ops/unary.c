/* Unary elementwise ops: forward entry points and derivative formulas side by side. */
#include "pointwise.h"

static ct_tensor *un(int op, const ct_tensor *a, ct_out_kind k) { return ct_pointwise(op, 1, &a, NULL, k); }
static ct_status un_(int op, ct_tensor *a, ct_out_kind k) { return ct_pointwise_(op, 1, &a, NULL, k); }

ct_tensor *ct_neg(const ct_tensor *a) {
  if (a && a->dtype == CT_BOOL) {
    ct_set_error(CT_ERR_RUNTIME, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                                 "to invert a mask, use the `~` or `logical_not()` operator instead.");
    return NULL;
  }
  return un(CT_OP_neg, a, CT_OUT_SAME);
}
ct_status ct_neg_(ct_tensor *a) { return un_(CT_OP_neg, a, CT_OUT_SAME); }
ct_status ct_bw_neg(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  (void)n;
  gin[0] = ct_neg(g[0]);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_exp(const ct_tensor *a) { return un(CT_OP_exp, a, CT_OUT_FLOAT); }
ct_status ct_exp_(ct_tensor *a) { return un_(CT_OP_exp, a, CT_OUT_FLOAT); }
ct_status ct_bw_exp(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *y = ct_node_saved_out(n, 0);
  if (!y) return ct_last_status();
  gin[0] = ct_mul(g[0], y);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_log(const ct_tensor *a) { return un(CT_OP_log, a, CT_OUT_FLOAT); }
ct_status ct_log_(ct_tensor *a) { return un_(CT_OP_log, a, CT_OUT_FLOAT); }
ct_status ct_bw_log(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0);
  if (!x) return ct_last_status();
  gin[0] = ct_div(g[0], x);
  return gin[0] ? CT_OK : ct_last_status();
}
