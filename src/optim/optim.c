/* Optimizers: construction, parameter groups, hyper-parameter access, zero_grad, step
 * (dispatching each parameter to the fused loops or the per-op reference path) and the
 * flattened state_dict. PyTorch 1.13's torch/optim/optimizer.py is the model. */
#include "optim_internal.h"
#include "../autograd/autograd.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names and defaults ----------------------------------------------------------- */
static const char *const KEYS_SGD[CT_OPTIM_NSLOT] = {"momentum_buffer", NULL, NULL, NULL};
static const char *const KEYS_ADAM[CT_OPTIM_NSLOT] = {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
static const char *const KEYS_RMS[CT_OPTIM_NSLOT] = {"step", "square_avg", "momentum_buffer", "grad_avg"};
static const char *const KEYS_ADAGRAD[CT_OPTIM_NSLOT] = {"step", "sum", NULL, NULL};

const char *const *ct_optim_slot_keys(ct_optim_kind kind) {
  switch (kind) {
    case CT_OPTIM_SGD: return KEYS_SGD;
    case CT_OPTIM_ADAM:
    case CT_OPTIM_ADAMW: return KEYS_ADAM;
    case CT_OPTIM_RMSPROP: return KEYS_RMS;
    default: return KEYS_ADAGRAD;
  }
}

static bool kind_ok(int k) { return k >= CT_OPTIM_SGD && k <= CT_OPTIM_ADAGRAD; }

const char *ct_optim_kind_name(ct_optim_kind kind) {
  static const char *names[] = {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad"};
  return kind_ok((int)kind) ? names[kind] : "unknown";
}

ct_optim_options ct_optim_defaults(ct_optim_kind kind) {
  ct_optim_options o;
  memset(&o, 0, sizeof o);
  o.beta1 = 0.9;
  o.beta2 = 0.999;
  o.eps = 1e-8;
  o.alpha = 0.99;
  switch (kind) {
    case CT_OPTIM_SGD: o.lr = NAN; break; /* lr=required */
    case CT_OPTIM_ADAM: o.lr = 1e-3; break;
    case CT_OPTIM_ADAMW: o.lr = 1e-3; o.weight_decay = 1e-2; break;
    case CT_OPTIM_RMSPROP: o.lr = 1e-2; break;
    case CT_OPTIM_ADAGRAD: o.lr = 1e-2; o.eps = 1e-10; break;
  }
  return o;
}

/* Python's repr(float): the shortest digits that read back, fixed notation for
 * exponents in [-4, 16), always with a '.' or an exponent. */
const char *ct_py_float(double v, char *buf, size_t n) {
  if (isnan(v)) return snprintf(buf, n, "nan"), buf;
  if (isinf(v)) return snprintf(buf, n, v < 0 ? "-inf" : "inf"), buf;
  char tmp[64];
  int prec = 1;
  for (; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
    if (strtod(tmp, NULL) == v) break;
  }
  const char *e = strchr(tmp, 'e');
  int ex = e ? atoi(e + 1) : 0;
  if (v != 0 && (ex < -4 || ex >= 16)) {
    snprintf(buf, n, "%s", tmp); /* "1e-05", "1.5e+16" as Python writes them */
    return buf;
  }
  int dec = prec - 1 - ex;
  if (dec < 0) dec = 0;
  snprintf(buf, n, "%.*f", dec, v);
  if (!strchr(buf, '.')) {
    size_t l = strlen(buf);
    if (l + 3 <= n) memcpy(buf + l, ".0", 3);
  }
  return buf;
}

/* ---- validation ---------------------------------------------------------------------- */
#define BAD(fmt, v) \
  do { char _b[40]; return CT_ERR(CT_ERR_VALUE, fmt "%s", ct_py_float((v), _b, sizeof _b)); } while (0)

/* The checks of each optimizer's __init__ (applied to every group here, not only to the
 * defaults, so a group added later cannot carry values the constructor refuses). */
static ct_status validate(ct_optim_kind kind, const ct_optim_options *o) {
  if (kind == CT_OPTIM_SGD && isnan(o->lr))
    return CT_ERR(CT_ERR_VALUE, "parameter group didn't specify a value of required optimization parameter lr");
  if (!(o->lr >= 0.0)) BAD("Invalid learning rate: ", o->lr);
  switch (kind) {
    case CT_OPTIM_SGD:
      if (!(o->momentum >= 0.0)) BAD("Invalid momentum value: ", o->momentum);
      if (!(o->weight_decay >= 0.0)) BAD("Invalid weight_decay value: ", o->weight_decay);
      if (o->nesterov && (o->momentum <= 0 || o->dampening != 0))
        return CT_ERR(CT_ERR_VALUE, "Nesterov momentum requires a momentum and zero dampening");
      if (isnan(o->dampening)) BAD("Invalid dampening value: ", o->dampening);
      break;
    case CT_OPTIM_ADAM:
    case CT_OPTIM_ADAMW:
      if (!(o->eps >= 0.0)) BAD("Invalid epsilon value: ", o->eps);
      if (!(o->beta1 >= 0.0 && o->beta1 < 1.0)) BAD("Invalid beta parameter at index 0: ", o->beta1);
      if (!(o->beta2 >= 0.0 && o->beta2 < 1.0)) BAD("Invalid beta parameter at index 1: ", o->beta2);
      if (!(o->weight_decay >= 0.0)) BAD("Invalid weight_decay value: ", o->weight_decay);
      break;
    case CT_OPTIM_RMSPROP:
      if (!(o->eps >= 0.0)) BAD("Invalid epsilon value: ", o->eps);
      if (!(o->momentum >= 0.0)) BAD("Invalid momentum value: ", o->momentum);
      if (!(o->weight_decay >= 0.0)) BAD("Invalid weight_decay value: ", o->weight_decay);
      if (!(o->alpha >= 0.0)) BAD("Invalid alpha value: ", o->alpha);
      break;
    case CT_OPTIM_ADAGRAD:
      if (!(o->lr_decay >= 0.0)) BAD("Invalid lr_decay value: ", o->lr_decay);
      if (!(o->weight_decay >= 0.0)) BAD("Invalid weight_decay value: ", o->weight_decay);
      if (!(o->initial_accumulator_value >= 0.0))
        BAD("Invalid initial_accumulator_value value: ", o->initial_accumulator_value);
      if (!(o->eps >= 0.0)) BAD("Invalid epsilon value: ", o->eps);
      break;
  }
  return CT_OK;
}

static ct_status check_opt(const ct_optim *opt) {
  if (!opt) return CT_ERR(CT_ERR_VALUE, "optimizer: expected an optimizer, got NULL");
  return CT_OK;
}
static ct_status check_group(const ct_optim *opt, int g) {
  CT_TRY(check_opt(opt));
  if (g < 0 || g >= opt->n_groups)
    return CT_ERR(CT_ERR_INDEX, "list index out of range (param group %d of %d)", g, opt->n_groups);
  return CT_OK;
}

/* ---- construction ----------------------------------------------------------------- */
static void free_state(ct_pstate *s) {
  for (int k = 0; k < CT_OPTIM_NSLOT; k++) {
    ct_release(s->t[k]);
    s->t[k] = NULL;
  }
  s->init = false;
}

static void free_group(ct_pgroup *g) {
  for (int64_t i = 0; i < g->n; i++) {
    free_state(&g->st[i]);
    ct_unhold(g->params[i]);
  }
  free(g->params);
  free(g->st);
}

void ct_optim_free(ct_optim *opt) {
  if (!opt) return;
  for (int i = 0; i < opt->n_groups; i++) free_group(&opt->g[i]);
  free(opt->g);
  free(opt);
}

ct_status ct_optim_init_state(ct_optim *opt, ct_pgroup *g, int64_t i) {
  ct_pstate *s = &g->st[i];
  ct_tensor *p = g->params[i];
  const ct_optim_options *o = &g->o;
  bool prev = ct_set_grad_enabled(false), fail = false;
  ct_options fo = ct_opts_dtype(CT_FLOAT32), lo = ct_opts_dtype(CT_INT64);
#define MK(slot, expr)                     \
  do {                                     \
    s->t[slot] = ct_own(expr);             \
    if (!s->t[slot]) fail = true;          \
  } while (0)
  switch (opt->kind) {
    case CT_OPTIM_SGD: break; /* the momentum buffer is the first d_p, made by the update */
    case CT_OPTIM_ADAM:
    case CT_OPTIM_ADAMW:
      MK(0, ct_zeros(0, NULL, fo)); /* torch.tensor(0.) */
      MK(1, ct_zeros_like(p, NULL));
      MK(2, ct_zeros_like(p, NULL));
      if (o->amsgrad) MK(3, ct_zeros_like(p, NULL));
      break;
    case CT_OPTIM_RMSPROP:
      MK(0, ct_zeros(0, NULL, lo)); /* a Python int in PyTorch */
      MK(1, ct_zeros_like(p, NULL));
      if (o->momentum > 0) MK(2, ct_zeros_like(p, NULL));
      if (o->centered) MK(3, ct_zeros_like(p, NULL));
      break;
    case CT_OPTIM_ADAGRAD:
      MK(0, ct_zeros(0, NULL, fo));
      MK(1, ct_full_like(p, ct_sf(o->initial_accumulator_value), NULL));
      break;
  }
#undef MK
  ct_set_grad_enabled(prev);
  if (fail) {
    ct_status st = ct_last_status();
    free_state(s);
    return st != CT_OK ? st : CT_ERR_OOM;
  }
  s->init = true;
  return CT_OK;
}

static ct_status check_params(const ct_optim *opt, int64_t n, ct_tensor *const *params, bool ctor) {
  if (n < 0) return CT_ERR(CT_ERR_VALUE, "optimizer: negative parameter count %lld", (long long)n);
  if (n > 0 && !params) return CT_ERR(CT_ERR_TYPE, "params argument given to the optimizer should be an iterable of Tensors, got NULL");
  if (ctor && n == 0) return CT_ERR(CT_ERR_VALUE, "optimizer got an empty parameter list");
  for (int64_t i = 0; i < n; i++) {
    if (!params[i])
      return CT_ERR(CT_ERR_TYPE, "optimizer can only optimize Tensors, but one of the params is NoneType");
    if (!ct_is_leaf(params[i]) && !params[i]->retains_grad)
      return CT_ERR(CT_ERR_VALUE, "can't optimize a non-leaf Tensor");
    if (!ct_dtype_is_floating(params[i]->dtype))
      return CT_ERR(CT_ERR_TYPE, "optimizer can only optimize floating point Tensors, but one of the params is %s",
                    ct_dtype_name(params[i]->dtype));
    for (int64_t j = 0; j < i; j++)
      if (params[j] == params[i])
        return CT_ERR(CT_ERR_VALUE, "optimizer contains a parameter group with duplicate parameters");
  }
  for (int gi = 0; opt && gi < opt->n_groups; gi++)
    for (int64_t j = 0; j < opt->g[gi].n; j++)
      for (int64_t i = 0; i < n; i++)
        if (opt->g[gi].params[j] == params[i])
          return CT_ERR(CT_ERR_VALUE, "some parameters appear in more than one parameter group");
  return CT_OK;
}

static ct_status add_group(ct_optim *opt, int64_t n, ct_tensor *const *params, const ct_optim_options *o) {
  CT_TRY(validate(opt->kind, o));
  if (opt->n_groups == opt->cap_groups) {
    int cap = opt->cap_groups ? opt->cap_groups * 2 : 4;
    ct_pgroup *g = realloc(opt->g, (size_t)cap * sizeof *g);
    if (!g) return CT_ERR(CT_ERR_OOM, "out of memory");
    opt->g = g;
    opt->cap_groups = cap;
  }
  ct_pgroup *g = &opt->g[opt->n_groups];
  memset(g, 0, sizeof *g);
  g->o = *o;
  g->params = ct_xcalloc((size_t)(n ? n : 1), sizeof *g->params);
  g->st = ct_xcalloc((size_t)(n ? n : 1), sizeof *g->st);
  if (!g->params || !g->st) {
    free(g->params);
    free(g->st);
    return CT_ERR_OOM;
  }
  for (int64_t i = 0; i < n; i++) g->params[i] = ct_hold(params[i]);
  g->n = n;
  /* Adagrad makes its state when the parameters arrive (its __init__), not at the
   * first step; groups added later get theirs here too (PyTorch 1.13 would fail). */
  if (opt->kind == CT_OPTIM_ADAGRAD)
    for (int64_t i = 0; i < n; i++) {
      ct_status st = ct_optim_init_state(opt, g, i);
      if (st != CT_OK) {
        free_group(g);
        return st;
      }
    }
  opt->n_groups++;
  return CT_OK;
}

ct_optim *ct_optim_new(ct_optim_kind kind, int64_t n_params, ct_tensor *const *params,
                       const ct_optim_options *defaults) {
  if (!kind_ok((int)kind)) {
    CT_ERR(CT_ERR_VALUE, "ct_optim_new: unknown optimizer kind %d", (int)kind);
    return NULL;
  }
  ct_optim_options o = defaults ? *defaults : ct_optim_defaults(kind);
  if (validate(kind, &o) || check_params(NULL, n_params, params, true)) return NULL;
  ct_optim *opt = ct_xcalloc(1, sizeof *opt);
  if (!opt) return NULL;
  opt->kind = kind;
  opt->defaults = o;
  opt->fused = true;
  if (add_group(opt, n_params, params, &o) != CT_OK) {
    ct_optim_free(opt);
    return NULL;
  }
  return opt;
}

ct_optim *ct_optim_sgd(int64_t n, ct_tensor *const *params, double lr, double momentum, double weight_decay) {
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_SGD);
  o.lr = lr;
  o.momentum = momentum;
  o.weight_decay = weight_decay;
  return ct_optim_new(CT_OPTIM_SGD, n, params, &o);
}
ct_optim *ct_optim_adam(int64_t n, ct_tensor *const *params, double lr) {
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAM);
  o.lr = lr;
  return ct_optim_new(CT_OPTIM_ADAM, n, params, &o);
}
ct_optim *ct_optim_adamw(int64_t n, ct_tensor *const *params, double lr, double weight_decay) {
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAMW);
  o.lr = lr;
  o.weight_decay = weight_decay;
  return ct_optim_new(CT_OPTIM_ADAMW, n, params, &o);
}

ct_status ct_optim_add_param_group(ct_optim *opt, int64_t n, ct_tensor *const *params, const ct_optim_options *o) {
  CT_TRY(check_opt(opt));
  CT_TRY(check_params(opt, n, params, false));
  return add_group(opt, n, params, o ? o : &opt->defaults);
}

/* ---- accessors -------------------------------------------------------------------- */
ct_status ct_optim_set_fused(ct_optim *opt, bool fused) {
  CT_TRY(check_opt(opt));
  opt->fused = fused;
  return CT_OK;
}
bool ct_optim_fused(const ct_optim *opt) { return opt && opt->fused; }
ct_optim_kind ct_optim_get_kind(const ct_optim *opt) { return opt ? opt->kind : CT_OPTIM_SGD; }
ct_optim_options ct_optim_get_defaults(const ct_optim *opt) {
  if (!opt) {
    ct_optim_options z;
    memset(&z, 0, sizeof z);
    return z;
  }
  return opt->defaults;
}
int ct_optim_num_groups(const ct_optim *opt) { return opt ? opt->n_groups : 0; }
int64_t ct_optim_group_size(const ct_optim *opt, int g) { return check_group(opt, g) ? -1 : opt->g[g].n; }
ct_tensor *ct_optim_group_param(const ct_optim *opt, int g, int64_t i) {
  if (check_group(opt, g)) return NULL;
  if (i < 0 || i >= opt->g[g].n) {
    CT_ERR(CT_ERR_INDEX, "list index out of range (parameter %lld of %lld)", (long long)i, (long long)opt->g[g].n);
    return NULL;
  }
  return opt->g[g].params[i];
}
ct_status ct_optim_get_group(const ct_optim *opt, int g, ct_optim_options *out) {
  CT_TRY(check_group(opt, g));
  if (!out) return CT_ERR(CT_ERR_VALUE, "ct_optim_get_group: NULL output");
  *out = opt->g[g].o;
  return CT_OK;
}
ct_status ct_optim_set_group(ct_optim *opt, int g, const ct_optim_options *o) {
  CT_TRY(check_group(opt, g));
  if (!o) return CT_ERR(CT_ERR_VALUE, "ct_optim_set_group: NULL options");
  CT_TRY(validate(opt->kind, o));
  opt->g[g].o = *o;
  return CT_OK;
}
double ct_optim_get_lr(const ct_optim *opt, int g) { return check_group(opt, g) ? NAN : opt->g[g].o.lr; }
ct_status ct_optim_set_lr(ct_optim *opt, int g, double lr) { return ct_optim_group_set(opt, g, "lr", lr); }

/* Group entries by name: the hyper-parameters of each kind in PyTorch's order. */
typedef struct {
  const char *name;
  bool is_bool;
  size_t off;
} hkey;
#define HD(n) {#n, false, offsetof(ct_optim_options, n)}
#define HB(n) {#n, true, offsetof(ct_optim_options, n)}
#define HBETAS {"betas", false, (size_t)-1}
static const hkey H_SGD[] = {HD(lr), HD(momentum), HD(dampening), HD(weight_decay), HB(nesterov), HB(maximize), {0}};
static const hkey H_ADAM[] = {HD(lr), HBETAS, HD(eps), HD(weight_decay), HB(amsgrad), HB(maximize), {0}};
static const hkey H_RMS[] = {HD(lr), HD(momentum), HD(alpha), HD(eps), HB(centered), HD(weight_decay), HB(maximize), {0}};
static const hkey H_ADAGRAD[] = {HD(lr), HD(lr_decay), HD(eps), HD(weight_decay), HD(initial_accumulator_value),
                                 HB(maximize), {0}};
static const hkey *hkeys(ct_optim_kind k) {
  switch (k) {
    case CT_OPTIM_SGD: return H_SGD;
    case CT_OPTIM_ADAM:
    case CT_OPTIM_ADAMW: return H_ADAM;
    case CT_OPTIM_RMSPROP: return H_RMS;
    default: return H_ADAGRAD;
  }
}
static const char *const EXTRA_NAMES[EX_COUNT] = {"initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"};

/* Finds key: a hyper-parameter (ptr into o, *is_bool), or an extra (*extra >= 0). */
static bool find_key(const ct_optim *opt, ct_pgroup *g, const char *key, void **ptr, bool *is_bool, int *extra) {
  *ptr = NULL;
  *extra = -1;
  *is_bool = false;
  if (!key) return false;
  for (int e = 0; e < EX_COUNT; e++)
    if (!strcmp(key, EXTRA_NAMES[e])) {
      *extra = e;
      return true;
    }
  bool adam = opt->kind == CT_OPTIM_ADAM || opt->kind == CT_OPTIM_ADAMW;
  if (adam && !strcmp(key, "beta1")) return *ptr = &g->o.beta1, true;
  if (adam && !strcmp(key, "beta2")) return *ptr = &g->o.beta2, true;
  for (const hkey *h = hkeys(opt->kind); h->name; h++)
    if (h->off != (size_t)-1 && !strcmp(h->name, key)) {
      *ptr = (char *)&g->o + h->off;
      *is_bool = h->is_bool;
      return true;
    }
  return false;
}

ct_status ct_optim_group_get(const ct_optim *opt, int gi, const char *key, double *out) {
  CT_TRY(check_group(opt, gi));
  if (!out) return CT_ERR(CT_ERR_VALUE, "ct_optim_group_get: NULL output");
  ct_pgroup *g = &opt->g[gi];
  void *p;
  bool b;
  int e;
  if (!find_key(opt, g, key, &p, &b, &e))
    return CT_ERR(CT_ERR_VALUE, "'%s' is not a parameter group entry of %s", key ? key : "(null)",
                  ct_optim_kind_name(opt->kind));
  if (e >= 0) {
    if (!(g->has_extra & (1u << e))) return CT_ERR(CT_ERR_VALUE, "param group %d has no '%s'", gi, key);
    *out = g->extra[e];
  } else
    *out = b ? (double)*(bool *)p : *(double *)p;
  return CT_OK;
}

ct_status ct_optim_group_set(ct_optim *opt, int gi, const char *key, double v) {
  CT_TRY(check_group(opt, gi));
  ct_pgroup *g = &opt->g[gi];
  void *p;
  bool b;
  int e;
  if (!find_key(opt, g, key, &p, &b, &e))
    return CT_ERR(CT_ERR_VALUE, "'%s' is not a parameter group entry of %s", key ? key : "(null)",
                  ct_optim_kind_name(opt->kind));
  if (e >= 0) {
    g->extra[e] = v;
    g->has_extra |= 1u << e;
    return CT_OK;
  }
  /* validate the changed group as a whole, keep the old one on error */
  ct_optim_options o = g->o;
  void *q = (char *)&o + ((char *)p - (char *)&g->o);
  if (b) *(bool *)q = v != 0;
  else *(double *)q = v;
  CT_TRY(validate(opt->kind, &o));
  g->o = o;
  return CT_OK;
}

bool ct_optim_group_has(const ct_optim *opt, int gi, const char *key) {
  if (!opt || gi < 0 || gi >= opt->n_groups) return false;
  void *p;
  bool b;
  int e;
  if (!find_key(opt, &opt->g[gi], key, &p, &b, &e)) return false;
  return e < 0 || (opt->g[gi].has_extra & (1u << e));
}

ct_tensor *ct_optim_state(const ct_optim *opt, const ct_tensor *param, const char *key) {
  if (!opt || !param || !key) return NULL;
  const char *const *keys = ct_optim_slot_keys(opt->kind);
  for (int gi = 0; gi < opt->n_groups; gi++)
    for (int64_t i = 0; i < opt->g[gi].n; i++)
      if (opt->g[gi].params[i] == param)
        for (int k = 0; k < CT_OPTIM_NSLOT; k++)
          if (keys[k] && !strcmp(keys[k], key)) return opt->g[gi].st[i].t[k];
  return NULL;
}

/* ---- zero_grad and step ---------------------------------------------------------- */
ct_status ct_optim_zero_grad(ct_optim *opt, bool set_to_none) {
  CT_TRY(check_opt(opt));
  for (int gi = 0; gi < opt->n_groups; gi++)
    for (int64_t i = 0; i < opt->g[gi].n; i++) {
      ct_tensor *p = opt->g[gi].params[i], *gr = p->grad;
      if (!gr) continue;
      if (set_to_none) {
        CT_TRY(ct_set_grad(p, NULL));
        continue;
      }
      if (gr->grad_fn) CT_TRY(ct_detach_(gr));
      else if (gr->requires_grad) CT_TRY(ct_requires_grad_(gr, false));
      bool prev = ct_set_grad_enabled(false);
      ct_status st = ct_zero_(gr);
      ct_set_grad_enabled(prev);
      CT_TRY(st);
    }
  return CT_OK;
}

ct_status ct_optim_step(ct_optim *opt) {
  CT_TRY(check_opt(opt));
  /* check every gradient first, so a bad one changes nothing */
  for (int gi = 0; gi < opt->n_groups; gi++)
    for (int64_t i = 0; i < opt->g[gi].n; i++) {
      ct_tensor *p = opt->g[gi].params[i], *gr = p->grad;
      if (!gr) continue;
      bool same = gr->ndim == p->ndim && gr->dtype == p->dtype;
      for (int d = 0; same && d < p->ndim; d++) same = gr->shape[d] == p->shape[d];
      if (!same) {
        char a[64], b[64];
        return CT_ERR(CT_ERR_RUNTIME, "%s.step: the grad of parameter %lld (%s %s) does not match the parameter (%s %s)",
                      ct_optim_kind_name(opt->kind), (long long)i, ct_dtype_name(gr->dtype), CT_SHAPE_STR(gr, a),
                      ct_dtype_name(p->dtype), CT_SHAPE_STR(p, b));
      }
      if (gr->storage->device.type != p->storage->device.type)
        return CT_ERR(CT_ERR_RUNTIME, "%s.step: the grad of parameter %lld is on another device",
                      ct_optim_kind_name(opt->kind), (long long)i);
    }
  for (int gi = 0; gi < opt->n_groups; gi++) {
    ct_pgroup *g = &opt->g[gi];
    int whole = ct_optim_group_fused(opt, g); /* CUDA SGD: the group in one launch (without the early ones) */
    if (whole < 0) return ct_last_status() != CT_OK ? ct_last_status() : CT_ERR_RUNTIME;
    if (whole) continue;
    for (int64_t i = 0; i < g->n; i++) {
      if (!g->params[i]->grad || g->st[i].early) continue; /* untouched: no decay, no momentum, no state */
      if (!g->st[i].init) CT_TRY(ct_optim_init_state(opt, g, i));
      if (opt->fused && ct_optim_update_fused(opt, g, i)) continue;
      CT_TRY(ct_optim_update_ref(opt, g, i));
    }
  }
  return CT_OK;
}

/* ---- the step overlapped with the backward ------------------------------------------
 * Each parameter's update depends only on its own gradient, which is final once its AccumulateGrad has run (every
 * contribution is summed before it): from then on nothing in the backward reads the parameter (its consumers'
 * backward nodes ran first), so the update may start there, beside the rest of the backward, where a backend can run
 * it so (ct_optim_update_early: CUDA, on a second stream). The values are those of backward() then step(): the same
 * kernels on the same operands. A parameter also read through a detached alias by a node that runs later is
 * left to the step (ct_autograd_saved_pending). */
typedef struct {
  ct_optim *opt;
  int64_t early;
} overlap_ctx;
static int64_t early_total; /* updates started during a backward, over the process (tests) */
int64_t ct_optim_early_updates(void) { return __atomic_load_n(&early_total, __ATOMIC_RELAXED); }

static ct_status early_update(ct_tensor *leaf, void *user) {
  overlap_ctx *c = user;
  ct_optim *opt = c->opt;
  ct_tensor *g = leaf->grad;
  if (!g) return CT_OK;
  for (int gi = 0; gi < opt->n_groups; gi++)
    for (int64_t i = 0; i < opt->g[gi].n; i++) {
      if (opt->g[gi].params[i] != leaf) continue;
      ct_pgroup *gr = &opt->g[gi];
      if (gr->st[i].early) return CT_OK;
      /* what the step would refuse is left to it */
      bool same = g->ndim == leaf->ndim && g->dtype == leaf->dtype && g->storage->device.type == leaf->storage->device.type &&
                  g->storage->device.index == leaf->storage->device.index;
      for (int d = 0; same && d < leaf->ndim; d++) same = g->shape[d] == leaf->shape[d];
      /* a node still to run saved it (a detached alias read later): updating it now would fail that node's
       * version check, where backward() then step() works */
      if (!same || ct_autograd_saved_pending(leaf)) return CT_OK;
      if (!gr->st[i].init) CT_TRY(ct_optim_init_state(opt, gr, i));
      if (ct_optim_update_early(opt, gr, i)) {
        gr->st[i].early = true;
        c->early++;
      }
      return ct_last_status() == CT_OK ? CT_OK : ct_last_status();
    }
  return CT_OK;
}

static void early_clear(ct_optim *opt) {
  for (int gi = 0; gi < opt->n_groups; gi++)
    for (int64_t i = 0; i < opt->g[gi].n; i++) opt->g[gi].st[i].early = false;
}

ct_status ct_optim_backward_step(ct_optim *opt, ct_tensor *loss) {
  CT_TRY(check_opt(opt));
  const char *e = getenv("CT_OPTIM_OVERLAP");
  /* opt-in (CT_OPTIM_OVERLAP=1): on the H200 the ResNet-18 CIFAR graph step ran 1.357 ms with it against 1.216
   * without (session 14): the updates on the second stream delay the weight gradients queued there */
  if (!opt->fused || !(e && !strcmp(e, "1"))) {
    CT_TRY(ct_backward(loss, NULL, false, false));
    return ct_optim_step(opt);
  }
  overlap_ctx c = {opt, 0};
  early_clear(opt);
  ct_autograd_on_leaf_grad(early_update, &c);
  ct_status st = ct_backward(loss, NULL, false, false);
  ct_autograd_on_leaf_grad(NULL, NULL);
  __atomic_add_fetch(&early_total, c.early, __ATOMIC_RELAXED);
  if (st == CT_OK) st = ct_optim_step(opt);
  early_clear(opt); /* also after a failed backward: the updates made stay made, as with any error mid-step */
  return st;
}

/* ---- state_dict ------------------------------------------------------------------ */
static ct_status put(ct_dict *out, const char *name, ct_tensor *t) {
  if (!t) return ct_last_status() ? ct_last_status() : CT_ERR_OOM;
  ct_own(t);
  ct_status st = ct_dict_set(out, name, t);
  ct_release(t);
  return st;
}
static ct_status put_f64(ct_dict *out, const char *name, double v) {
  return put(out, name, ct_scalar_tensor(ct_sf(v), ct_opts_dtype(CT_FLOAT64)));
}

ct_status ct_optim_state_dict_prefixed(const ct_optim *opt, ct_dict *out, const char *prefix) {
  CT_TRY(check_opt(opt));
  if (!out) return CT_ERR(CT_ERR_VALUE, "optimizer state_dict: NULL output dict");
  if (!prefix) prefix = "";
  char name[512];
  const char *const *keys = ct_optim_slot_keys(opt->kind);
  bool prev = ct_set_grad_enabled(false);
  ct_status st = CT_OK;
  int64_t idx = 0;
  for (int gi = 0; gi < opt->n_groups && !st; gi++)
    for (int64_t i = 0; i < opt->g[gi].n && !st; i++, idx++)
      for (int k = 0; k < CT_OPTIM_NSLOT && !st; k++) {
        ct_tensor *t = opt->g[gi].st[i].t[k];
        if (!keys[k] || !t) continue;
        snprintf(name, sizeof name, "%sstate.%lld.%s", prefix, (long long)idx, keys[k]);
        st = put(out, name, ct_clone(t));
      }
  idx = 0;
  for (int gi = 0; gi < opt->n_groups && !st; gi++) {
    ct_pgroup *g = &opt->g[gi];
    for (const hkey *h = hkeys(opt->kind); h->name && !st; h++) {
      snprintf(name, sizeof name, "%sparam_groups.%d.%s", prefix, gi, h->name);
      if (h->off == (size_t)-1) {
        double b[2] = {g->o.beta1, g->o.beta2};
        int64_t two = 2;
        st = put(out, name, ct_from_buffer(b, CT_FLOAT64, 1, &two, ct_opts_dtype(CT_FLOAT64)));
      } else if (h->is_bool)
        st = put(out, name, ct_scalar_tensor(ct_sb(*(bool *)((char *)&g->o + h->off)), ct_opts_dtype(CT_BOOL)));
      else
        st = put_f64(out, name, *(double *)((char *)&g->o + h->off));
    }
    for (int e = 0; e < EX_COUNT && !st; e++)
      if (g->has_extra & (1u << e)) {
        snprintf(name, sizeof name, "%sparam_groups.%d.%s", prefix, gi, EXTRA_NAMES[e]);
        st = put_f64(out, name, g->extra[e]);
      }
    if (st) break;
    snprintf(name, sizeof name, "%sparam_groups.%d.params", prefix, gi);
    int64_t n = g->n;
    ct_tensor *ids = ct_empty(1, &n, ct_opts_dtype(CT_INT64));
    if (ids)
      for (int64_t i = 0; i < n; i++) ((int64_t *)ct_host_ptr(ids))[i] = idx + i;
    idx += n;
    st = put(out, name, ids);
  }
  ct_set_grad_enabled(prev);
  if (!st) {
    snprintf(name, sizeof name, "%soptimizer", prefix);
    st = ct_dict_set_meta(out, name, ct_optim_kind_name(opt->kind));
  }
  return st;
}

ct_status ct_optim_state_dict(const ct_optim *opt, ct_dict *out) { return ct_optim_state_dict_prefixed(opt, out, ""); }

/* A number from a one-element tensor of the loaded dict. */
static ct_status get_num(const ct_dict *sd, const char *name, double *v, bool required) {
  ct_tensor *t = ct_dict_get(sd, name);
  if (!t) {
    if (required) return CT_ERR(CT_ERR_VALUE, "optimizer state dict: missing entry '%s'", name);
    return CT_ERR_INDEX; /* absent, silently (the caller checks) */
  }
  if (ct_numel(t) != 1) return CT_ERR(CT_ERR_VALUE, "optimizer state dict: '%s' must hold one number", name);
  return ct_item_double(t, v);
}

static bool parse_i64(const char *s, const char **end, int64_t *v) {
  if (*s < '0' || *s > '9') return false;
  int64_t x = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (x > (INT64_MAX - 9) / 10) return false;
    x = x * 10 + (*s - '0');
  }
  *v = x;
  *end = s;
  return true;
}

ct_status ct_optim_load_state_dict_prefixed(ct_optim *opt, const ct_dict *sd, const char *prefix) {
  CT_TRY(check_opt(opt));
  if (!sd) return CT_ERR(CT_ERR_VALUE, "optimizer load_state_dict: NULL state dict");
  if (!prefix) prefix = "";
  size_t pl = strlen(prefix);
  char name[512];
  snprintf(name, sizeof name, "%soptimizer", prefix);
  const char *kind = ct_dict_get_meta(sd, name);
  if (kind && strcmp(kind, ct_optim_kind_name(opt->kind)))
    return CT_ERR(CT_ERR_VALUE, "loaded state dict is for a %s optimizer, not %s", kind, ct_optim_kind_name(opt->kind));
  /* the groups: count, sizes, the saved parameter ids */
  int n_saved = 0;
  for (;; n_saved++) {
    snprintf(name, sizeof name, "%sparam_groups.%d.params", prefix, n_saved);
    if (!ct_dict_get(sd, name)) break;
  }
  if (n_saved != opt->n_groups)
    return CT_ERR(CT_ERR_VALUE, "loaded state dict has a different number of parameter groups");
  int64_t total = 0;
  for (int gi = 0; gi < n_saved; gi++) {
    snprintf(name, sizeof name, "%sparam_groups.%d.params", prefix, gi);
    ct_tensor *ids = ct_dict_get(sd, name);
    if (ids->ndim != 1 || ids->shape[0] != opt->g[gi].n)
      return CT_ERR(CT_ERR_VALUE, "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
    if (ct_dtype_is_floating(ids->dtype) || ids->dtype == CT_BOOL)
      return CT_ERR(CT_ERR_VALUE, "optimizer state dict: '%s' must hold integer parameter ids", name);
    total += opt->g[gi].n;
  }
  int64_t *saved_id = ct_xcalloc((size_t)(total ? total : 1), sizeof *saved_id);
  ct_pgroup *ng = ct_xcalloc((size_t)(n_saved ? n_saved : 1), sizeof *ng);
  if (!saved_id || !ng) {
    free(saved_id);
    free(ng);
    return CT_ERR_OOM;
  }
  ct_status st = CT_OK;
  int64_t k = 0;
  for (int gi = 0; gi < n_saved && !st; gi++) {
    snprintf(name, sizeof name, "%sparam_groups.%d.params", prefix, gi);
    ct_tensor *ids = ct_dict_get(sd, name);
    st = ct_copy_to_buffer(ids, saved_id + k, CT_INT64, ids->shape[0]);
    k += ids->shape[0];
  }
  for (int64_t a = 0; a < total && !st; a++)
    for (int64_t b = 0; b < a && !st; b++)
      if (saved_id[a] == saved_id[b]) st = CT_ERR(CT_ERR_VALUE, "optimizer state dict: parameter id %lld appears twice", (long long)saved_id[a]);
  /* new groups: hyper-parameters from the dict, state built aside, swapped in at the end */
  for (int gi = 0; gi < n_saved && !st; gi++) {
    ct_pgroup *g = &ng[gi];
    g->o = opt->g[gi].o;
    g->n = opt->g[gi].n;
    g->st = ct_xcalloc((size_t)(g->n ? g->n : 1), sizeof *g->st);
    if (!g->st) { st = CT_ERR_OOM; break; }
    for (const hkey *h = hkeys(opt->kind); h->name && !st; h++) {
      snprintf(name, sizeof name, "%sparam_groups.%d.%s", prefix, gi, h->name);
      if (h->off == (size_t)-1) {
        ct_tensor *b = ct_dict_get(sd, name);
        double v[2];
        if (!b) st = CT_ERR(CT_ERR_VALUE, "optimizer state dict: missing entry '%s'", name);
        else if (ct_numel(b) != 2) st = CT_ERR(CT_ERR_VALUE, "optimizer state dict: '%s' must hold two numbers", name);
        else if (!(st = ct_copy_to_buffer(b, v, CT_FLOAT64, 2))) g->o.beta1 = v[0], g->o.beta2 = v[1];
      } else {
        double v;
        st = get_num(sd, name, &v, true);
        if (!st) {
          if (h->is_bool) *(bool *)((char *)&g->o + h->off) = v != 0;
          else *(double *)((char *)&g->o + h->off) = v;
        }
      }
    }
    if (!st) st = validate(opt->kind, &g->o);
    for (int e = 0; e < EX_COUNT && !st; e++) {
      snprintf(name, sizeof name, "%sparam_groups.%d.%s", prefix, gi, EXTRA_NAMES[e]);
      double v;
      ct_status r = get_num(sd, name, &v, false);
      if (r == CT_OK) g->extra[e] = v, g->has_extra |= 1u << e;
      else if (r != CT_ERR_INDEX) st = r;
    }
  }
  /* state entries: "state.<id>.<key>" */
  const char *const *keys = ct_optim_slot_keys(opt->kind);
  bool prev = ct_set_grad_enabled(false);
  for (int64_t e = 0; e < ct_dict_len(sd) && !st; e++) {
    const char *nm = ct_dict_name(sd, e);
    if (strncmp(nm, prefix, pl) || strncmp(nm + pl, "state.", 6)) continue;
    const char *s = nm + pl + 6, *rest;
    int64_t id;
    if (!parse_i64(s, &rest, &id) || *rest != '.') {
      st = CT_ERR(CT_ERR_VALUE, "optimizer state dict: malformed state entry '%s'", nm);
      break;
    }
    int64_t pos = -1;
    for (int64_t a = 0; a < total; a++)
      if (saved_id[a] == id) pos = a;
    if (pos < 0) {
      st = CT_ERR(CT_ERR_VALUE, "optimizer state dict: state entry '%s' belongs to no parameter of the param_groups", nm);
      break;
    }
    int slot = -1;
    for (int q = 0; q < CT_OPTIM_NSLOT; q++)
      if (keys[q] && !strcmp(keys[q], rest + 1)) slot = q;
    if (slot < 0) {
      st = CT_ERR(CT_ERR_VALUE, "optimizer state dict: unexpected key '%s' for %s", nm, ct_optim_kind_name(opt->kind));
      break;
    }
    int gi = 0;
    int64_t i = pos;
    while (i >= opt->g[gi].n) i -= opt->g[gi++].n;
    ct_tensor *p = opt->g[gi].params[i], *src = ct_dict_tensor(sd, e), *dst;
    bool is_step = opt->kind != CT_OPTIM_SGD && slot == SLOT_STEP;
    if (is_step) {
      double v;
      if (ct_numel(src) != 1) {
        st = CT_ERR(CT_ERR_VALUE, "optimizer state dict: '%s' must hold one number", nm);
        break;
      }
      if ((st = ct_item_double(src, &v))) break;
      /* the step keeps the optimizer's own type (float32 tensor; int for RMSprop) */
      ct_dtype sdt = opt->kind == CT_OPTIM_RMSPROP ? CT_INT64 : CT_FLOAT32;
      if (!(v >= 0) || v != floor(v) || v > 9.0e15) {
        st = CT_ERR(CT_ERR_VALUE, "optimizer state dict: '%s' = %g is not a step count", nm, v);
        break;
      }
      dst = ct_scalar_tensor(sdt == CT_INT64 ? ct_si((int64_t)v) : ct_sf(v), ct_opts_dtype(sdt));
    } else {
      bool same = src->ndim == p->ndim;
      for (int d = 0; same && d < p->ndim; d++) same = src->shape[d] == p->shape[d];
      if (!same) {
        char a[64], b[64];
        st = CT_ERR(CT_ERR_VALUE, "optimizer state dict: '%s' has shape %s but its parameter has shape %s", nm,
                    CT_SHAPE_STR(src, a), CT_SHAPE_STR(p, b));
        break;
      }
      dst = ct_empty_like(p, NULL);
      if (dst && (st = ct_copy_(dst, src))) {
        ct_release(dst);
        break;
      }
    }
    if (!dst) {
      st = ct_last_status() ? ct_last_status() : CT_ERR_OOM;
      break;
    }
    ct_own(dst);
    ct_release(ng[gi].st[i].t[slot]);
    ng[gi].st[i].t[slot] = dst;
    ng[gi].st[i].init = true;
  }
  ct_set_grad_enabled(prev);
  /* a state must be complete enough for the update (a step with its moments) */
  for (int gi = 0; gi < n_saved && !st; gi++)
    for (int64_t i = 0; i < ng[gi].n && !st; i++) {
      ct_pstate *s = &ng[gi].st[i];
      if (!s->init || opt->kind == CT_OPTIM_SGD) continue;
      int need = opt->kind == CT_OPTIM_ADAM || opt->kind == CT_OPTIM_ADAMW ? 3 : 2;
      for (int q = 0; q < need && !st; q++)
        if (!s->t[q])
          st = CT_ERR(CT_ERR_VALUE, "optimizer state dict: the state of a parameter of group %d lacks '%s'", gi,
                      keys[q]);
    }
  /* Adagrad's state exists from construction on: params the dict has none for start afresh */
  for (int gi = 0; gi < n_saved && !st && opt->kind == CT_OPTIM_ADAGRAD; gi++)
    for (int64_t i = 0; i < ng[gi].n && !st; i++)
      if (!ng[gi].st[i].init) {
        ct_pgroup tmp = ng[gi];
        tmp.params = opt->g[gi].params;
        st = ct_optim_init_state(opt, &tmp, i);
      }
  if (!st) {
    for (int gi = 0; gi < n_saved; gi++) {
      ct_pgroup *g = &opt->g[gi];
      for (int64_t i = 0; i < g->n; i++) {
        free_state(&g->st[i]);
        g->st[i] = ng[gi].st[i];
      }
      g->o = ng[gi].o;
      g->has_extra = ng[gi].has_extra;
      memcpy(g->extra, ng[gi].extra, sizeof g->extra);
      free(ng[gi].st);
    }
  } else {
    for (int gi = 0; gi < n_saved; gi++) {
      for (int64_t i = 0; ng[gi].st && i < ng[gi].n; i++) free_state(&ng[gi].st[i]);
      free(ng[gi].st);
    }
  }
  free(ng);
  free(saved_id);
  return st;
}

ct_status ct_optim_load_state_dict(ct_optim *opt, const ct_dict *sd) { return ct_optim_load_state_dict_prefixed(opt, sd, ""); }
