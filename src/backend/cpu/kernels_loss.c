/* CPU kernels of the loss ops that are not compositions: the elementwise (unreduced,
 * unweighted) binary cross entropies and one_hot. Inputs of the elementwise kernels
 * arrive cast to one dtype and broadcast (ct_pointwise); they compute in double. */
#include "kernels_pointwise.h"
#include <math.h>

typedef struct {
  ct_dtype in_dt, out_dt;
  bool bad; /* an input outside [0, 1] (serial loop: no race) */
} bce_ctx;

static void bce_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  bce_ctx *k = vctx;
  for (int64_t i = 0; i < n; i++) {
    double x = ct_load_f64(p[1] + i * s[1], k->in_dt), t = ct_load_f64(p[2] + i * s[2], k->in_dt);
    if (!(x >= 0 && x <= 1)) k->bad = true;
    double a = fmax(log1p(-x), -100.0), b = fmax(log(x), -100.0);
    ct_store_f64(p[0] + i * s[0], k->out_dt, (t - 1) * a - t * b);
  }
}

ct_status ct_cpu_bce(const ct_call *c) {
  bce_ctx k = {c->in[0]->dtype, c->out[0]->dtype, false};
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  ct_cpu_foreach(3, ts, bce_loop, &k, false);
  if (k.bad) return CT_ERR(CT_ERR_RUNTIME, "all elements of input should be between 0 and 1");
  return CT_OK;
}

/* PyTorch's stable form: (1 - t) x + lw (log(exp(-m) + exp(-x - m)) + m), m = max(-x, 0),
 * lw = (pos_weight - 1) t + 1 (1 without pos_weight). */
static void bce_logits_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  pw_ctx *k = vctx;
  bool has_pw = k->c->a.k[0] != 0;
  for (int64_t i = 0; i < n; i++) {
    double x = ct_load_f64(p[1] + i * s[1], k->in_dt), t = ct_load_f64(p[2] + i * s[2], k->in_dt);
    double m = fmax(-x, 0.0);
    double lse = log(exp(-m) + exp(-x - m)) + m;
    double lw = has_pw ? (ct_load_f64(p[3] + i * s[3], k->in_dt) - 1) * t + 1 : 1.0;
    ct_store_f64(p[0] + i * s[0], k->out_dt, (1 - t) * x + lw * lse);
  }
}

ct_status ct_cpu_bce_logits(const ct_call *c) {
  pw_ctx k = {c, c->in[0]->dtype, c->out[0]->dtype, true};
  ct_tensor *ts[4] = {c->out[0], c->in[0], c->in[1], c->n_in > 2 ? c->in[2] : NULL};
  ct_cpu_foreach(c->n_in > 2 ? 4 : 3, ts, bce_logits_loop, &k, true);
  return CT_OK;
}

/* one_hot: in[0] int64 (contiguous), out[0] int64 [..., C] contiguous, zero-filled here. */
ct_status ct_cpu_one_hot(const ct_call *c) {
  const ct_tensor *t = c->in[0];
  ct_tensor *o = c->out[0];
  int64_t n = ct_numel(t), C = o->shape[o->ndim - 1];
  const int64_t *v = (const int64_t *)ct_cpu_ptr(t);
  int64_t *out = (int64_t *)ct_cpu_ptr(o);
  memset(out, 0, (size_t)(n * C) * sizeof(int64_t));
  for (int64_t i = 0; i < n; i++) out[i * C + v[i]] = 1;
  return CT_OK;
}
