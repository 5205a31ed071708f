/* The per-op reference path of optimizer.step(): one parameter's update written with
 * ctorch ops under no_grad, op for op as PyTorch 1.13's _single_tensor_<optim>
 * functions (torch/optim/sgd.py, adam.py, adamw.py, rmsprop.py, adagrad.py). It runs
 * on every dtype and layout; the fused loops (step_fused.c) are tested against it. */
#include "optim_internal.h"
#include <math.h>

/* t, owned by the optimizer, or an error */
static ct_status own_slot(ct_pstate *s, int slot, ct_tensor *t) {
  if (!t) return ct_last_status() ? ct_last_status() : CT_ERR_OOM;
  s->t[slot] = ct_own(t);
  return CT_OK;
}

/* A state added after the state was made (a group switched amsgrad, momentum or
 * centered on later): zeros, where PyTorch 1.13 would raise a KeyError. */
static ct_status ensure_zeros(ct_pstate *s, int slot, const ct_tensor *p) {
  if (s->t[slot]) return CT_OK;
  return own_slot(s, slot, ct_zeros_like(p, NULL));
}

/* Bumps a step counter held in a 0-dim tensor; returns the new value as PyTorch's
 * step_t.item() / state['step'] sees it (float32 arithmetic for the tensor steps). */
double ct_optim_bump_step(ct_tensor *step) {
  if (step->dtype == CT_INT64) {
    int64_t *v = (int64_t *)ct_host_ptr(step);
    return (double)++*v;
  }
  float *v = (float *)ct_host_ptr(step);
  *v = *v + 1.0f;
  return (double)*v;
}

#define T_(expr)                                  \
  do {                                            \
    if (!(expr)) { st = ct_last_status(); goto done; } \
  } while (0)
#define S_(expr)                                  \
  do {                                            \
    if ((st = (expr)) != CT_OK) goto done;        \
  } while (0)

static ct_status sgd(ct_pgroup *g, int64_t i) {
  const ct_optim_options *o = &g->o;
  ct_tensor *p = g->params[i];
  ct_pstate *s = &g->st[i];
  ct_status st = CT_OK;
  ct_tensor *d_p = NULL, *tmp = NULL;
  T_(d_p = o->maximize ? ct_neg(p->grad) : ct_retain(p->grad));
  if (o->weight_decay != 0) {
    T_(tmp = ct_add_alpha(d_p, p, ct_sf(o->weight_decay)));
    ct_release(d_p);
    d_p = tmp, tmp = NULL;
  }
  if (o->momentum != 0) {
    ct_tensor *buf = s->t[0];
    if (!buf) {
      S_(own_slot(s, 0, ct_clone(d_p)));
      buf = s->t[0];
    } else {
      S_(ct_mul_scalar_(buf, ct_sf(o->momentum)));
      S_(ct_add_alpha_(buf, d_p, ct_sf(1 - o->dampening)));
    }
    if (o->nesterov) {
      T_(tmp = ct_add_alpha(d_p, buf, ct_sf(o->momentum)));
      ct_release(d_p);
      d_p = tmp, tmp = NULL;
    } else {
      ct_release(d_p);
      d_p = ct_retain(buf);
    }
  }
  S_(ct_add_alpha_(p, d_p, ct_sf(-o->lr)));
done:
  ct_release(d_p);
  ct_release(tmp);
  return st;
}

/* Adam and AdamW (decoupled: p *= 1 - lr*wd before the moments). */
static ct_status adam(ct_pgroup *g, int64_t i, bool decoupled) {
  const ct_optim_options *o = &g->o;
  ct_tensor *p = g->params[i];
  ct_pstate *s = &g->st[i];
  ct_status st = CT_OK;
  ct_tensor *grad = NULL, *tmp = NULL, *denom = NULL;
  ct_tensor *exp_avg = s->t[1], *exp_avg_sq = s->t[2];
  T_(grad = o->maximize ? ct_neg(p->grad) : ct_retain(p->grad));
  double step = ct_optim_bump_step(s->t[0]);
  if (decoupled) {
    S_(ct_mul_scalar_(p, ct_sf(1 - o->lr * o->weight_decay)));
  } else if (o->weight_decay != 0) {
    T_(tmp = ct_add_alpha(grad, p, ct_sf(o->weight_decay)));
    ct_release(grad);
    grad = tmp, tmp = NULL;
  }
  S_(ct_mul_scalar_(exp_avg, ct_sf(o->beta1)));
  S_(ct_add_alpha_(exp_avg, grad, ct_sf(1 - o->beta1)));
  S_(ct_mul_scalar_(exp_avg_sq, ct_sf(o->beta2)));
  S_(ct_addcmul_(exp_avg_sq, grad, grad, ct_sf(1 - o->beta2)));
  double bias_correction1 = 1 - pow(o->beta1, step);
  double bias_correction2 = 1 - pow(o->beta2, step);
  double step_size = o->lr / bias_correction1;
  double bias_correction2_sqrt = sqrt(bias_correction2);
  if (o->amsgrad) {
    S_(ensure_zeros(s, 3, p));
    S_(ct_maximum_out(s->t[3], s->t[3], exp_avg_sq));
    T_(tmp = ct_sqrt(s->t[3]));
  } else {
    T_(tmp = ct_sqrt(exp_avg_sq));
  }
  T_(denom = ct_div_scalar(tmp, ct_sf(bias_correction2_sqrt)));
  S_(ct_add_scalar_(denom, ct_sf(o->eps)));
  S_(ct_addcdiv_(p, exp_avg, denom, ct_sf(-step_size)));
done:
  ct_release(grad);
  ct_release(tmp);
  ct_release(denom);
  return st;
}

static ct_status rmsprop(ct_pgroup *g, int64_t i) {
  const ct_optim_options *o = &g->o;
  ct_tensor *p = g->params[i];
  ct_pstate *s = &g->st[i];
  ct_status st = CT_OK;
  ct_tensor *grad = NULL, *tmp = NULL, *avg = NULL;
  ct_tensor *square_avg = s->t[1];
  T_(grad = o->maximize ? ct_neg(p->grad) : ct_retain(p->grad));
  ct_optim_bump_step(s->t[0]); /* state['step'] += 1 happens in step(), before the update */
  if (o->weight_decay != 0) {
    T_(tmp = ct_add_alpha(grad, p, ct_sf(o->weight_decay)));
    ct_release(grad);
    grad = tmp, tmp = NULL;
  }
  S_(ct_mul_scalar_(square_avg, ct_sf(o->alpha)));
  S_(ct_addcmul_(square_avg, grad, grad, ct_sf(1 - o->alpha)));
  if (o->centered) {
    S_(ensure_zeros(s, 3, p));
    ct_tensor *grad_avg = s->t[3];
    S_(ct_mul_scalar_(grad_avg, ct_sf(o->alpha)));
    S_(ct_add_alpha_(grad_avg, grad, ct_sf(1 - o->alpha)));
    T_(avg = ct_addcmul(square_avg, grad_avg, grad_avg, ct_si(-1)));
    S_(ct_sqrt_(avg));
  } else {
    T_(avg = ct_sqrt(square_avg));
  }
  S_(ct_add_scalar_(avg, ct_sf(o->eps)));
  if (o->momentum > 0) {
    S_(ensure_zeros(s, 2, p));
    ct_tensor *buf = s->t[2];
    S_(ct_mul_scalar_(buf, ct_sf(o->momentum)));
    S_(ct_addcdiv_(buf, grad, avg, ct_si(1)));
    S_(ct_add_alpha_(p, buf, ct_sf(-o->lr)));
  } else {
    S_(ct_addcdiv_(p, grad, avg, ct_sf(-o->lr)));
  }
done:
  ct_release(grad);
  ct_release(tmp);
  ct_release(avg);
  return st;
}

static ct_status adagrad(ct_pgroup *g, int64_t i) {
  const ct_optim_options *o = &g->o;
  ct_tensor *p = g->params[i];
  ct_pstate *s = &g->st[i];
  ct_status st = CT_OK;
  ct_tensor *grad = NULL, *tmp = NULL, *std = NULL;
  double step = ct_optim_bump_step(s->t[0]);
  T_(grad = o->maximize ? ct_neg(p->grad) : ct_retain(p->grad));
  if (o->weight_decay != 0) {
    T_(tmp = ct_add_alpha(grad, p, ct_sf(o->weight_decay)));
    ct_release(grad);
    grad = tmp, tmp = NULL;
  }
  double clr = o->lr / (1 + (step - 1) * o->lr_decay);
  S_(ct_addcmul_(s->t[1], grad, grad, ct_si(1)));
  T_(std = ct_sqrt(s->t[1]));
  S_(ct_add_scalar_(std, ct_sf(o->eps)));
  S_(ct_addcdiv_(p, grad, std, ct_sf(-clr)));
done:
  ct_release(grad);
  ct_release(tmp);
  ct_release(std);
  return st;
}

ct_status ct_optim_update_ref(ct_optim *opt, ct_pgroup *g, int64_t i) {
  bool prev = ct_set_grad_enabled(false);
  ct_status st = CT_OK;
  switch (opt->kind) {
    case CT_OPTIM_SGD: st = sgd(g, i); break;
    case CT_OPTIM_ADAM: st = adam(g, i, false); break;
    case CT_OPTIM_ADAMW: st = adam(g, i, true); break;
    case CT_OPTIM_RMSPROP: st = rmsprop(g, i); break;
    case CT_OPTIM_ADAGRAD: st = adagrad(g, i); break;
  }
  ct_set_grad_enabled(prev);
  return st;
}
