/* CPU reference kernels for elementwise ops. Inputs arrive cast to one compute
 * dtype and broadcast to the output's shape; floating dtypes compute in double,
 * integer and bool dtypes in int64, then round once to the output dtype. */
#include "kernels_pointwise.h"
#include <math.h>

/* ---- binary ---- */
static inline double binary_f(int op, double x, double y, const ct_attrs *a) {
  switch (op) {
    case CT_OP_add: return x + a->f[0] * y;
    case CT_OP_sub: return x - a->f[0] * y;
    case CT_OP_mul: return x * y;
    case CT_OP_div: {
      double q = x / y;
      if (a->k[0] == 1) return trunc(q);
      if (a->k[0] == 2) {
        /* floor division as Python: computed from fmod to stay exact */
        if (y == 0) return q;
        double m = fmod(x, y), d = (x - m) / y;
        if (m != 0 && ((y < 0) != (m < 0))) d -= 1;
        double fd = floor(d);
        if (d - fd > 0.5) fd += 1;
        return d == 0 ? copysign(0.0, q) : fd;
      }
      return q;
    }
    default: return NAN;
  }
}

static bool int_div_error; /* set by integer division by zero (single flag: any thread may set it) */

static inline int64_t binary_i(int op, int64_t x, int64_t y, const ct_attrs *a) {
  switch (op) {
    case CT_OP_add: return (int64_t)((uint64_t)x + (uint64_t)(a->s[0].i * y));
    case CT_OP_sub: return (int64_t)((uint64_t)x - (uint64_t)(a->s[0].i * y));
    case CT_OP_mul: return (int64_t)((uint64_t)x * (uint64_t)y);
    case CT_OP_div: {
      if (y == 0) {
        int_div_error = true;
        return 0;
      }
      if (y == -1) return (int64_t)(0 - (uint64_t)x);
      int64_t q = x / y;
      if (a->k[0] == 2 && (x % y != 0) && ((x < 0) != (y < 0))) q -= 1;
      return q;
    }
    default: return 0;
  }
}

static void binary_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  pw_ctx *k = vctx;
  int op = k->c->op;
  const ct_attrs *a = &k->c->a;
  if (k->in_dt == CT_FLOAT32 && k->out_dt == CT_FLOAT32) {
    if (op == CT_OP_add && a->f[0] == 1.0) { /* the common case, kept simple for the vectoriser */
      for (int64_t i = 0; i < n; i++)
        *(float *)(p[0] + i * s[0]) = *(float *)(p[1] + i * s[1]) + *(float *)(p[2] + i * s[2]);
      return;
    }
    if (op == CT_OP_mul) {
      for (int64_t i = 0; i < n; i++)
        *(float *)(p[0] + i * s[0]) = *(float *)(p[1] + i * s[1]) * *(float *)(p[2] + i * s[2]);
      return;
    }
    for (int64_t i = 0; i < n; i++)
      *(float *)(p[0] + i * s[0]) =
          (float)binary_f(op, *(float *)(p[1] + i * s[1]), *(float *)(p[2] + i * s[2]), a);
  } else if (k->float_domain) {
    for (int64_t i = 0; i < n; i++)
      ct_store_f64(p[0] + i * s[0], k->out_dt,
                   binary_f(op, ct_load_f64(p[1] + i * s[1], k->in_dt), ct_load_f64(p[2] + i * s[2], k->in_dt), a));
  } else {
    for (int64_t i = 0; i < n; i++)
      ct_store_i64(p[0] + i * s[0], k->out_dt,
                   binary_i(op, ct_load_i64(p[1] + i * s[1], k->in_dt), ct_load_i64(p[2] + i * s[2], k->in_dt), a));
  }
}

ct_status ct_cpu_binary(const ct_call *c) {
  pw_ctx k = {c, c->in[0]->dtype, c->out[0]->dtype, ct_dtype_is_floating(c->in[0]->dtype)};
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  int_div_error = false;
  ct_cpu_foreach(3, ts, binary_loop, &k, true);
  if (int_div_error) return CT_ERR(CT_ERR_RUNTIME, "ZeroDivisionError");
  return CT_OK;
}
