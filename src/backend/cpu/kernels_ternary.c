/* CPU reference kernels for ternary elementwise ops (where, lerp, addcmul, addcdiv,
 * clamp with tensor bounds). Inputs arrive broadcast to the output's shape; the
 * value inputs share one compute dtype (where's condition stays bool). float32 and
 * bfloat16 compute in float like PyTorch's op-math type (the formulas have
 * cancellations where double would differ visibly); float64 in double; integers in
 * int64, wrapping like C++. */
#include "kernels_pointwise.h"
#include <math.h>

static inline bool use_float(ct_dtype dt) { return dt == CT_FLOAT32 || dt == CT_BFLOAT16 || dt == CT_FLOAT16; }

static inline double lerp_d(double s, double e, double w) {
  return fabs(w) < 0.5 ? s + w * (e - s) : e - (e - s) * (1 - w);
}
static inline float lerp_f(float s, float e, float w) {
  return fabsf(w) < 0.5f ? s + w * (e - s) : e - (e - s) * (1.0f - w);
}

static inline double clamp_d(double x, bool has_lo, double lo, bool has_hi, double hi) {
  if (isnan(x)) return x;
  if ((has_lo && isnan(lo)) || (has_hi && isnan(hi))) return NAN;
  if (has_lo && x < lo) x = lo;
  if (has_hi && x > hi) x = hi;
  return x;
}

/* which = 0: self, 1: min, 2: max (PyTorch's clamp_backward_min_max masks) */
static inline bool clamp_mask(int which, double x, bool has_lo, double lo, bool has_hi, double hi) {
  if (has_lo && has_hi) {
    if (which == 0) return x >= lo && x <= hi;
    if (which == 1) return x < lo && lo < hi;
    return x > hi || hi < lo;
  }
  if (has_lo) return which == 0 ? x >= lo : x < lo;
  return which == 0 ? x <= hi : x > hi;
}

typedef struct {
  const ct_call *c;
  ct_dtype dt, out_dt; /* compute dtype of the value inputs, output dtype */
  ct_dtype cond_dt;
} tern_ctx;

#define LD(k, i) ct_load_f64(p[k] + (i) * s[k], dt)
#define LI(k, i) ct_load_i64(p[k] + (i) * s[k], dt)

static void ternary_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  tern_ctx *k = vctx;
  const ct_call *c = k->c;
  const ct_attrs *a = &c->a;
  ct_dtype dt = k->dt, od = k->out_dt;
  bool fl = ct_dtype_is_floating(dt);
  switch (c->op) {
    case CT_OP_where:
      for (int64_t i = 0; i < n; i++) {
        bool cnd = ct_load_i64(p[1] + i * s[1], k->cond_dt) != 0;
        int src = cnd ? 2 : 3;
        if (fl) ct_store_f64(p[0] + i * s[0], od, ct_load_f64(p[src] + i * s[src], dt));
        else ct_store_i64(p[0] + i * s[0], od, ct_load_i64(p[src] + i * s[src], dt));
      }
      return;
    case CT_OP_lerp:
    case CT_OP_lerp_scalar: {
      bool sc = c->op == CT_OP_lerp_scalar;
      for (int64_t i = 0; i < n; i++) {
        double w = sc ? a->f[0] : LD(3, i);
        double r = use_float(dt) ? (double)lerp_f((float)LD(1, i), (float)LD(2, i), (float)w) : lerp_d(LD(1, i), LD(2, i), w);
        ct_store_f64(p[0] + i * s[0], od, r);
      }
      return;
    }
    case CT_OP_addcmul:
    case CT_OP_addcdiv: {
      bool mul = c->op == CT_OP_addcmul;
      for (int64_t i = 0; i < n; i++) {
        if (!fl) {
          int64_t v = a->s[0].i, t = (int64_t)((uint64_t)v * (uint64_t)LI(2, i));
          t = (int64_t)((uint64_t)t * (uint64_t)LI(3, i));
          ct_store_i64(p[0] + i * s[0], od, (int64_t)((uint64_t)LI(1, i) + (uint64_t)t));
        } else if (use_float(dt)) {
          float v = (float)a->f[0], x = (float)LD(1, i), t1 = (float)LD(2, i), t2 = (float)LD(3, i);
          ct_store_f64(p[0] + i * s[0], od, (double)(mul ? x + v * t1 * t2 : x + v * t1 / t2));
        } else {
          double v = a->f[0], x = LD(1, i), t1 = LD(2, i), t2 = LD(3, i);
          ct_store_f64(p[0] + i * s[0], od, mul ? x + v * t1 * t2 : x + v * t1 / t2);
        }
      }
      return;
    }
    case CT_OP_clamp_tensor: {
      bool hl = a->k[0], hh = a->k[1];
      int kl = 2, kh = hl ? 3 : 2;
      for (int64_t i = 0; i < n; i++) {
        if (fl) {
          double r = clamp_d(LD(1, i), hl, hl ? LD(kl, i) : 0, hh, hh ? LD(kh, i) : 0);
          ct_store_f64(p[0] + i * s[0], od, r);
        } else {
          int64_t x = LI(1, i);
          if (hl && x < LI(kl, i)) x = LI(kl, i);
          if (hh && x > LI(kh, i)) x = LI(kh, i);
          ct_store_i64(p[0] + i * s[0], od, x);
        }
      }
      return;
    }
    case CT_OP_clamp_tensor_grad: {
      bool hl = a->k[0], hh = a->k[1];
      int which = (int)a->k[2], kl = 3, kh = hl ? 4 : 3;
      for (int64_t i = 0; i < n; i++) {
        bool m = clamp_mask(which, LD(2, i), hl, hl ? LD(kl, i) : 0, hh, hh ? LD(kh, i) : 0);
        ct_store_f64(p[0] + i * s[0], od, m ? LD(1, i) : 0.0);
      }
      return;
    }
    default: return;
  }
}

ct_status ct_cpu_ternary(const ct_call *c) {
  tern_ctx k;
  k.c = c;
  k.out_dt = c->out[0]->dtype;
  k.cond_dt = c->in[0]->dtype;
  /* where: input 0 is the condition, the values are inputs 1 and 2 */
  k.dt = c->op == CT_OP_where ? c->in[1]->dtype : c->in[0]->dtype;
  ct_tensor *ts[CT_MAX_OP_IN + 1];
  ts[0] = c->out[0];
  for (int i = 0; i < c->n_in; i++) ts[i + 1] = c->in[i];
  ct_cpu_foreach(c->n_in + 1, ts, ternary_loop, &k, true);
  return CT_OK;
}
