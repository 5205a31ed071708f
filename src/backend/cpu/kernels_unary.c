/* CPU reference kernels for elementwise ops. Inputs arrive cast to one compute
 * dtype and broadcast to the output's shape; floating dtypes compute in double,
 * integer and bool dtypes in int64, then round once to the output dtype. */
#include "kernels_pointwise.h"
#include <math.h>

/* ---- unary ---- */
static inline double unary_f(int op, double x, const ct_attrs *a) {
  (void)a;
  switch (op) {
    case CT_OP_neg: return -x;
    case CT_OP_exp: return exp(x);
    case CT_OP_log: return log(x);
    default: return NAN;
  }
}
static inline int64_t unary_i(int op, int64_t x, const ct_attrs *a) {
  (void)a;
  switch (op) {
    case CT_OP_neg: return (int64_t)(0 - (uint64_t)x);
    default: return 0;
  }
}


static void unary_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  pw_ctx *k = vctx;
  int op = k->c->op;
  const ct_attrs *a = &k->c->a;
  if (k->in_dt == CT_FLOAT32 && k->out_dt == CT_FLOAT32) {
    for (int64_t i = 0; i < n; i++) *(float *)(p[0] + i * s[0]) = (float)unary_f(op, *(float *)(p[1] + i * s[1]), a);
  } else if (k->float_domain) {
    for (int64_t i = 0; i < n; i++)
      ct_store_f64(p[0] + i * s[0], k->out_dt, unary_f(op, ct_load_f64(p[1] + i * s[1], k->in_dt), a));
  } else {
    for (int64_t i = 0; i < n; i++)
      ct_store_i64(p[0] + i * s[0], k->out_dt, unary_i(op, ct_load_i64(p[1] + i * s[1], k->in_dt), a));
  }
}

ct_status ct_cpu_unary(const ct_call *c) {
  pw_ctx k = {c, c->in[0]->dtype, c->out[0]->dtype, ct_dtype_is_floating(c->in[0]->dtype)};
  ct_tensor *ts[2] = {c->out[0], c->in[0]};
  ct_cpu_foreach(2, ts, unary_loop, &k, true);
  return CT_OK;
}

