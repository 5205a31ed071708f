/* The fused path of optimizer.step(): one pass over a parameter's elements with the
 * whole update in a plain C loop over contiguous float32/float64 data (no tensors
 * made, no per-op dispatch), split over the thread pool for large parameters.
 *
 * Each line rounds where the reference path's op rounds, so both give the same bits:
 * the reference CPU kernels compute an op in double and round once to the tensor's
 * dtype (a float32 op with float32 operands is then exactly the float operation: the
 * double rounding is innocuous for + - * / sqrt), Python-number operands are rounded
 * to the tensor's dtype first except add's alpha (kept in double), and
 * addcmul/addcdiv compute in the tensor's own precision. The macros below spell
 * those rules out; the tests compare both paths (and PyTorch). */
#if defined(__GNUC__) && !defined(__clang__)
/* vectorize, and unswitch the loop-invariant option tests out of the loops (same bits:
 * element-wise IEEE operations, no reassociation) */
#pragma GCC optimize("O3")
#endif
#include "optim_internal.h"
#include <math.h>

#define GRAIN 16384

typedef struct {
  ct_optim_kind kind;
  const ct_optim_options *o;
  bool f32;
  void *p, *g, *s1, *s2, *s3; /* param, grad, state slots 1..3 (or SGD's buffer in s1) */
  bool first;                 /* SGD: the momentum buffer is made from this step's d_p */
  double step_size, bc2_sqrt, clr;
} fctx;

/* the reference ops, element-wise, in type T */
#define MULS(x, sT) ((x) * (sT))                                    /* x.mul_(s) */
#define ADDA(T, x, y, a) ((T)((double)(x) + (a) * (double)(y)))      /* x.add(y, alpha=a) */
#define ADDCMUL(x, t1, t2, vT) ((x) + (vT) * (t1) * (t2))           /* x.addcmul(t1, t2, value=v) */
#define ADDCDIV(x, t1, t2, vT) ((x) + (vT) * (t1) / (t2))           /* x.addcdiv(t1, t2, value=v) */
#define SQRT(T, x) ((T)sqrt((double)(x)))
#define MAXNAN(a, b) (((a) != (a) || (b) != (b)) ? (a) + (b) : ((a) < (b) ? (b) : (a))) /* torch.maximum: NaN wins */

#define SGD_LOOP(T)                                                              \
  do {                                                                           \
    T *restrict p = c->p, *restrict buf = c->s1;                                 \
    const T *restrict g = c->g;                                                  \
    const T mom = (T)o->momentum;                                                \
    const double wd = o->weight_decay, m = o->momentum, omd = 1 - o->dampening,  \
                 nlr = -o->lr;                                                   \
    const bool mx = o->maximize, nest = o->nesterov, first = c->first;           \
    for (int64_t k = b; k < e; k++) {                                            \
      T d = mx ? -g[k] : g[k];                                                   \
      if (wd != 0) d = ADDA(T, d, p[k], wd);                                     \
      if (m != 0) {                                                              \
        T bk;                                                                    \
        if (first) bk = d;                                                       \
        else bk = ADDA(T, MULS(buf[k], mom), d, omd);                            \
        buf[k] = bk;                                                             \
        d = nest ? ADDA(T, d, bk, m) : bk;                                       \
      }                                                                          \
      p[k] = ADDA(T, p[k], d, nlr);                                              \
    }                                                                            \
  } while (0)

#define ADAM_LOOP(T)                                                             \
  do {                                                                           \
    T *restrict p = c->p, *restrict m = c->s1, *restrict v = c->s2,              \
      *restrict mx = c->s3;                                                      \
    const T *restrict g = c->g;                                                  \
    const bool w = c->kind == CT_OPTIM_ADAMW, max = o->maximize;                 \
    const double wd = o->weight_decay, omb1 = 1 - o->beta1;                      \
    const T decay = (T)(1 - o->lr * o->weight_decay), b1 = (T)o->beta1,          \
            b2 = (T)o->beta2, omb2 = (T)(1 - o->beta2), bc2 = (T)c->bc2_sqrt,    \
            eps = (T)o->eps, nss = (T)(-c->step_size);                           \
    for (int64_t k = b; k < e; k++) {                                            \
      T gk = max ? -g[k] : g[k], pk = p[k];                                      \
      if (w) pk = MULS(pk, decay);                                               \
      else if (wd != 0) gk = ADDA(T, gk, pk, wd);                                \
      T mk = ADDA(T, MULS(m[k], b1), gk, omb1);                                  \
      T vk = ADDCMUL(MULS(v[k], b2), gk, gk, omb2);                              \
      T den;                                                                     \
      if (mx) {                                                                  \
        T xk = MAXNAN(mx[k], vk);                                                \
        mx[k] = xk;                                                              \
        den = SQRT(T, xk);                                                       \
      } else                                                                     \
        den = SQRT(T, vk);                                                       \
      den = den / bc2 + eps;                                                     \
      m[k] = mk;                                                                 \
      v[k] = vk;                                                                 \
      p[k] = ADDCDIV(pk, mk, den, nss);                                          \
    }                                                                            \
  } while (0)

#define RMS_LOOP(T)                                                              \
  do {                                                                           \
    T *restrict p = c->p, *restrict sq = c->s1, *restrict buf = c->s2,           \
      *restrict ga = c->s3;                                                      \
    const T *restrict g = c->g;                                                  \
    const T al = (T)o->alpha, oma = (T)(1 - o->alpha), eps = (T)o->eps,          \
            mom = (T)o->momentum, nlr = (T)(-o->lr), one = (T)1, mone = (T)-1;   \
    const double wd = o->weight_decay, omad = 1 - o->alpha, nlrd = -o->lr;       \
    const bool max = o->maximize;                                                \
    for (int64_t k = b; k < e; k++) {                                            \
      T gk = max ? -g[k] : g[k];                                                 \
      if (wd != 0) gk = ADDA(T, gk, p[k], wd);                                   \
      T sk = ADDCMUL(MULS(sq[k], al), gk, gk, oma);                              \
      sq[k] = sk;                                                                \
      T avg;                                                                     \
      if (ga) {                                                                  \
        T gak = ADDA(T, MULS(ga[k], al), gk, omad);                              \
        ga[k] = gak;                                                             \
        avg = SQRT(T, ADDCMUL(sk, gak, gak, mone));                              \
      } else                                                                     \
        avg = SQRT(T, sk);                                                       \
      avg = avg + eps;                                                           \
      if (buf) {                                                                 \
        T bk = ADDCDIV(MULS(buf[k], mom), gk, avg, one);                         \
        buf[k] = bk;                                                             \
        p[k] = ADDA(T, p[k], bk, nlrd);                                          \
      } else                                                                     \
        p[k] = ADDCDIV(p[k], gk, avg, nlr);                                      \
    }                                                                            \
  } while (0)

#define ADAGRAD_LOOP(T)                                                          \
  do {                                                                           \
    T *restrict p = c->p, *restrict sm = c->s1;                                  \
    const T *restrict g = c->g;                                                  \
    const T eps = (T)o->eps, nclr = (T)(-c->clr), one = (T)1;                    \
    const double wd = o->weight_decay;                                           \
    const bool max = o->maximize;                                                \
    for (int64_t k = b; k < e; k++) {                                            \
      T gk = max ? -g[k] : g[k];                                                 \
      if (wd != 0) gk = ADDA(T, gk, p[k], wd);                                   \
      T sk = ADDCMUL(sm[k], gk, gk, one);                                        \
      sm[k] = sk;                                                                \
      T sd = SQRT(T, sk) + eps;                                                  \
      p[k] = ADDCDIV(p[k], gk, sd, nclr);                                        \
    }                                                                            \
  } while (0)

static void range(void *vc, int64_t b, int64_t e) {
  const fctx *c = vc;
  const ct_optim_options *o = c->o;
  switch (c->kind) {
    case CT_OPTIM_SGD:
      if (c->f32) SGD_LOOP(float);
      else SGD_LOOP(double);
      break;
    case CT_OPTIM_ADAM:
    case CT_OPTIM_ADAMW:
      if (c->f32) ADAM_LOOP(float);
      else ADAM_LOOP(double);
      break;
    case CT_OPTIM_RMSPROP:
      if (c->f32) RMS_LOOP(float);
      else RMS_LOOP(double);
      break;
    case CT_OPTIM_ADAGRAD:
      if (c->f32) ADAGRAD_LOOP(float);
      else ADAGRAD_LOOP(double);
      break;
  }
}

static bool usable(const ct_tensor *t, ct_dtype dt) {
  return t->dtype == dt && t->storage->device.type == CT_DEVICE_CPU && ct_is_contiguous(t);
}

/* A zero-filled state slot made by the fused path (same cases as the reference's). */
static bool make_zeros(ct_pstate *s, int slot, const ct_tensor *p) {
  if (s->t[slot]) return true;
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *t = ct_zeros_like(p, NULL);
  ct_set_grad_enabled(prev);
  if (!t) return false;
  s->t[slot] = ct_own(t);
  return true;
}

bool ct_optim_update_fused(ct_optim *opt, ct_pgroup *gr, int64_t i) {
  ct_tensor *p = gr->params[i], *g = p->grad;
  ct_pstate *s = &gr->st[i];
  const ct_optim_options *o = &gr->o;
  ct_dtype dt = p->dtype;
  if ((dt != CT_FLOAT32 && dt != CT_FLOAT64) || !usable(p, dt) || !usable(g, dt)) return false;
  if (ct_shares_storage(p, g)) return false; /* the loops assume no aliasing */
  fctx c;
  memset(&c, 0, sizeof c);
  c.kind = opt->kind;
  c.o = o;
  c.f32 = dt == CT_FLOAT32;
  c.p = ct_data_ptr(p);
  c.g = ct_data_ptr(g);
  int first_slot = opt->kind == CT_OPTIM_SGD ? 0 : 1;
  /* lazily made slots: the reference path would make them too */
  if (opt->kind == CT_OPTIM_ADAM || opt->kind == CT_OPTIM_ADAMW) {
    if (o->amsgrad && !make_zeros(s, 3, p)) return false;
  } else if (opt->kind == CT_OPTIM_RMSPROP) {
    if (o->momentum > 0 && !make_zeros(s, 2, p)) return false;
    if (o->centered && !make_zeros(s, 3, p)) return false;
  }
  for (int k = first_slot; k < CT_OPTIM_NSLOT; k++)
    if (s->t[k] && (!usable(s->t[k], dt) || ct_shares_storage(s->t[k], p) || ct_shares_storage(s->t[k], g)))
      return false;
  if (opt->kind == CT_OPTIM_SGD && o->momentum != 0 && !s->t[0]) {
    /* buf = clone(d_p): written by the loop */
    ct_tensor *t = ct_empty_like(p, NULL);
    if (!t) return false;
    if (!ct_is_contiguous(t)) {
      ct_release(t);
      return false;
    }
    s->t[0] = ct_own(t);
    c.first = true;
  }
  void **dst[3] = {&c.s1, &c.s2, &c.s3};
  for (int k = first_slot, j = 0; k < CT_OPTIM_NSLOT && j < 3; k++, j++)
    *dst[j] = s->t[k] ? ct_data_ptr(s->t[k]) : NULL;
  /* RMSprop: s1 square_avg, s2 momentum_buffer or NULL, s3 grad_avg or NULL */
  if (opt->kind == CT_OPTIM_RMSPROP) {
    if (!(o->momentum > 0)) c.s2 = NULL;
    if (!o->centered) c.s3 = NULL;
  }
  if ((opt->kind == CT_OPTIM_ADAM || opt->kind == CT_OPTIM_ADAMW) && !o->amsgrad) c.s3 = NULL;
  /* the scalar parts, as the reference computes them */
  if (opt->kind != CT_OPTIM_SGD) {
    double step = ct_optim_bump_step(s->t[0]);
    if (opt->kind == CT_OPTIM_ADAM || opt->kind == CT_OPTIM_ADAMW) {
      double bc1 = 1 - pow(o->beta1, step), bc2 = 1 - pow(o->beta2, step);
      c.step_size = o->lr / bc1;
      c.bc2_sqrt = sqrt(bc2);
    } else if (opt->kind == CT_OPTIM_ADAGRAD) {
      c.clr = o->lr / (1 + (step - 1) * o->lr_decay);
    }
  }
  ct_parallel_for(ct_numel(p), GRAIN, range, &c);
  /* in-place updates count as writes, like the reference ops */
  ct_bump_version(p);
  for (int k = first_slot; k < CT_OPTIM_NSLOT; k++)
    if (s->t[k]) ct_bump_version(s->t[k]);
  return true;
}
