/* Builds the op table from the .def files. */
#include "op_table.h"
#include "../autograd/autograd.h"
#include <ctype.h>

#define CT_OP(id, family, n_in, n_out, cpu, bw, save, note) extern ct_kernel_fn_t cpu; extern ct_backward_fn_t bw;
#include "ops.def"
#undef CT_OP

static ct_op_info table[CT_OP_COUNT] = {
#define CT_OP(id, family, n_in, n_out, cpu, bw, save, note) \
  [CT_OP_##id] = {#id, family, NULL, n_in, n_out, cpu, bw, save, note},
#include "ops.def"
#undef CT_OP
};

static char grad_names[CT_OP_COUNT][48];

/* "log_softmax" -> "LogSoftmaxBackward0", as PyTorch names its nodes. */
static void make_grad_names(void) {
  for (int op = 0; op < CT_OP_COUNT; op++) {
    const char *s = table[op].id;
    char *d = grad_names[op];
    size_t n = 0;
    bool up = true;
    for (; *s && n < 30; s++) {
      if (*s == '_') { up = true; continue; }
      d[n++] = up ? (char)toupper((unsigned char)*s) : *s;
      up = false;
    }
    memcpy(d + n, "Backward0", 10);
    table[op].grad_name = d;
  }
}

const ct_op_info *ct_op_info_of(int op) {
  static bool named = false;
  if (!named) { /* idempotent; a race writes the same bytes */
    make_grad_names();
    named = true;
  }
  return (op >= 0 && op < CT_OP_COUNT) ? &table[op] : NULL;
}

ct_status ct_no_kernel(const ct_call *c) {
  return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "op '%s' has no CPU kernel", table[c->op].id);
}

ct_status ct_no_backward(struct ct_node *n, ct_tensor *const *gout, ct_tensor **gin) {
  (void)gout;
  (void)gin;
  return CT_ERR(CT_ERR_RUNTIME, "derivative for %s is not implemented", ct_node_name(n));
}
