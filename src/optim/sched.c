/* Learning-rate schedulers: PyTorch 1.13's torch/optim/lr_scheduler.py, with its
 * chainable (recursive) get_lr forms on step(), its closed forms where SequentialLR
 * calls step(0), and its initial step at construction. Expressions keep Python's
 * evaluation order so the values match PyTorch's bit for bit in double. */
#include "optim_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef enum {
  S_STEP, S_MULTISTEP, S_CONSTANT, S_LINEAR, S_EXPONENTIAL, S_POLYNOMIAL, S_COSINE, S_LAMBDA, S_ONECYCLE,
  S_SEQUENTIAL, S_CHAINED
} skind;
static const char *const SNAMES[] = {"StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
                                     "PolynomialLR", "CosineAnnealingLR", "LambdaLR", "OneCycleLR",
                                     "SequentialLR", "ChainedScheduler"};

struct ct_sched {
  skind kind;
  ct_optim *opt;
  int64_t last_epoch, step_count;
  int n;             /* groups when made */
  double *base_lrs, *last_lr;
  double gamma, eta_min, start_factor, end_factor, factor, power;
  int64_t step_size, T_max, total_iters;
  int n_ms;
  int64_t *ms; /* MultiStepLR milestones (as given) or SequentialLR's */
  ct_lr_lambda_fn fn;
  void *user;
  /* OneCycleLR */
  int64_t total_steps;
  int n_phases;
  double end_step[3];
  int ph_lr[3][2], ph_mom[3][2]; /* EX_* of each phase's start/end */
  bool linear, cycle_momentum, use_beta1;
  /* SequentialLR / ChainedScheduler */
  int n_children;
  ct_sched **children;
};

static ct_sched *fail_free(ct_sched *s) {
  if (s) {
    free(s->base_lrs);
    free(s->last_lr);
    free(s->ms);
    free(s->children);
    free(s);
  }
  return NULL;
}

void ct_sched_free(ct_sched *s) {
  if (!s) return;
  for (int k = 0; k < s->n_children; k++) ct_sched_free(s->children[k]);
  fail_free(s);
}

static ct_sched *alloc_sched(ct_optim *opt, skind kind) {
  if (!opt) {
    CT_ERR(CT_ERR_TYPE, "NoneType is not an Optimizer");
    return NULL;
  }
  ct_sched *s = ct_xcalloc(1, sizeof *s);
  if (!s) return NULL;
  s->kind = kind;
  s->opt = opt;
  s->n = opt->n_groups;
  s->base_lrs = ct_xcalloc((size_t)(s->n ? s->n : 1), sizeof(double));
  s->last_lr = ct_xcalloc((size_t)(s->n ? s->n : 1), sizeof(double));
  if (!s->base_lrs || !s->last_lr) return fail_free(s);
  return s;
}

static ct_status groups_unchanged(const ct_sched *s) {
  if (s->opt->n_groups != s->n)
    return CT_ERR(CT_ERR_VALUE, "%s: the optimizer has %d parameter groups, but the scheduler was made for %d",
                  SNAMES[s->kind], s->opt->n_groups, s->n);
  return CT_OK;
}

#define GLR(i) (s->opt->g[i].o.lr)

/* get_lr(): the chainable form */
static ct_status get_lr(ct_sched *s, double *v) {
  int64_t e = s->last_epoch;
  for (int i = 0; i < s->n; i++) {
    double lr = GLR(i), base = s->base_lrs[i];
    switch (s->kind) {
      case S_STEP: v[i] = (e == 0 || e % s->step_size != 0) ? lr : lr * s->gamma; break;
      case S_MULTISTEP: {
        int cnt = 0;
        for (int k = 0; k < s->n_ms; k++) cnt += s->ms[k] == e;
        v[i] = cnt == 0 ? lr : lr * pow(s->gamma, (double)cnt);
        break;
      }
      case S_CONSTANT:
        if (e == 0) v[i] = lr * s->factor;
        else if (e > s->total_iters || e != s->total_iters) v[i] = lr;
        else v[i] = lr * (1.0 / s->factor);
        break;
      case S_LINEAR:
        if (e == 0) v[i] = lr * s->start_factor;
        else if (e > s->total_iters) v[i] = lr;
        else
          v[i] = lr * (1. + (s->end_factor - s->start_factor) /
                                ((double)s->total_iters * s->start_factor +
                                 (double)(e - 1) * (s->end_factor - s->start_factor)));
        break;
      case S_EXPONENTIAL: v[i] = e == 0 ? lr : lr * s->gamma; break;
      case S_POLYNOMIAL:
        if (e == 0 || e > s->total_iters) v[i] = lr;
        else {
          double T = (double)s->total_iters;
          double f = pow((1.0 - (double)e / T) / (1.0 - (double)(e - 1) / T), s->power);
          v[i] = lr * f;
        }
        break;
      case S_COSINE: {
        double T = (double)s->T_max;
        if (e == 0) v[i] = lr;
        else if (s->step_count == 1 && e > 0)
          v[i] = s->eta_min + (base - s->eta_min) * (1 + cos((double)e * M_PI / T)) / 2;
        else if ((e - 1 - s->T_max) % (2 * s->T_max) == 0)
          v[i] = lr + (base - s->eta_min) * (1 - cos(M_PI / T)) / 2;
        else
          v[i] = (1 + cos(M_PI * (double)e / T)) / (1 + cos(M_PI * (double)(e - 1) / T)) * (lr - s->eta_min) + s->eta_min;
        break;
      }
      case S_LAMBDA: {
        ct_clear_error();
        double f = s->fn(e, i, s->user);
        if (ct_last_status() != CT_OK) return ct_last_status(); /* the hook signalled an error */
        v[i] = base * f;
        break;
      }
      case S_ONECYCLE: {
        if (e > s->total_steps)
          return CT_ERR(CT_ERR_VALUE, "Tried to step %lld times. The specified number of total steps is %lld",
                        (long long)(e + 1), (long long)s->total_steps);
        ct_pgroup *g = &s->opt->g[i];
        double start_step = 0, lr_v = 0, mom = 0;
        for (int ph = 0; ph < s->n_phases; ph++) {
          double end_step = s->end_step[ph];
          if ((double)e <= end_step || ph == s->n_phases - 1) {
            if (end_step - start_step == 0) return CT_ERR(CT_ERR_RUNTIME, "float division by zero");
            double pct = ((double)e - start_step) / (end_step - start_step);
            double a = g->extra[s->ph_lr[ph][0]], b = g->extra[s->ph_lr[ph][1]];
            lr_v = s->linear ? (b - a) * pct + a : b + (a - b) / 2.0 * (cos(M_PI * pct) + 1);
            if (s->cycle_momentum) {
              a = g->extra[s->ph_mom[ph][0]], b = g->extra[s->ph_mom[ph][1]];
              mom = s->linear ? (b - a) * pct + a : b + (a - b) / 2.0 * (cos(M_PI * pct) + 1);
            }
            break;
          }
          start_step = end_step;
        }
        v[i] = lr_v;
        if (s->cycle_momentum) {
          if (s->use_beta1) g->o.beta1 = mom;
          else g->o.momentum = mom;
        }
        break;
      }
      default: return CT_ERR(CT_ERR_RUNTIME, "%s has no get_lr", SNAMES[s->kind]);
    }
  }
  return CT_OK;
}

/* bisect.bisect_right, the same probes as Python's (so unsorted lists agree too) */
static int bisect_right(const int64_t *a, int n, int64_t x) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (x < a[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* _get_closed_form_lr(); false if the kind has none (step(epoch) then uses get_lr) */
static bool closed_form(ct_sched *s, double *v) {
  int64_t e = s->last_epoch;
  for (int i = 0; i < s->n; i++) {
    double base = s->base_lrs[i];
    switch (s->kind) {
      case S_STEP: {
        int64_t q = e / s->step_size, r = e % s->step_size; /* Python floor division */
        if (r != 0 && ((r < 0) != (s->step_size < 0))) q--;
        v[i] = base * pow(s->gamma, (double)q);
        break;
      }
      case S_MULTISTEP: {
        int64_t *m = malloc((size_t)(s->n_ms ? s->n_ms : 1) * sizeof *m);
        if (!m) return false;
        memcpy(m, s->ms, (size_t)s->n_ms * sizeof *m);
        qsort(m, (size_t)s->n_ms, sizeof *m, cmp_i64);
        v[i] = base * pow(s->gamma, (double)bisect_right(m, s->n_ms, e));
        free(m);
        break;
      }
      case S_CONSTANT: v[i] = base * (s->factor + (double)(e >= s->total_iters) * (1 - s->factor)); break;
      case S_LINEAR: {
        int64_t mn = s->total_iters < e ? s->total_iters : e;
        v[i] = base * (s->start_factor + (s->end_factor - s->start_factor) * (double)mn / (double)s->total_iters);
        break;
      }
      case S_EXPONENTIAL: v[i] = base * pow(s->gamma, (double)e); break;
      case S_POLYNOMIAL: {
        int64_t mn = s->total_iters < e ? s->total_iters : e;
        v[i] = base * pow(1.0 - (double)mn / (double)s->total_iters, s->power);
        break;
      }
      case S_COSINE:
        v[i] = s->eta_min + (base - s->eta_min) * (1 + cos(M_PI * (double)e / (double)s->T_max)) / 2;
        break;
      default: return false;
    }
  }
  return true;
}

static void record_lrs(ct_sched *s) {
  for (int i = 0; i < s->n; i++) s->last_lr[i] = GLR(i);
}

/* _LRScheduler.step(epoch): epoch < 0 means None */
static ct_status base_step(ct_sched *s, int64_t epoch) {
  CT_TRY(groups_unchanged(s));
  double *v = ct_xcalloc((size_t)(s->n ? s->n : 1), sizeof *v);
  if (!v) return CT_ERR_OOM;
  int64_t save_epoch = s->last_epoch, save_count = s->step_count;
  s->step_count++;
  ct_status st;
  if (epoch < 0) {
    s->last_epoch++;
    st = get_lr(s, v);
  } else {
    s->last_epoch = epoch;
    st = closed_form(s, v) ? CT_OK : get_lr(s, v);
  }
  if (st != CT_OK) {
    s->last_epoch = save_epoch, s->step_count = save_count;
    free(v);
    return st;
  }
  for (int i = 0; i < s->n; i++) GLR(i) = v[i];
  record_lrs(s);
  free(v);
  return CT_OK;
}

static ct_status initial_step(ct_sched *s) {
  s->step_count = 0;
  return base_step(s, -1);
}

/* _LRScheduler.__init__ with last_epoch=-1: initial_lr set where absent, base_lrs, the first step */
static ct_sched *finish(ct_sched *s) {
  if (!s) return NULL;
  for (int i = 0; i < s->n; i++) {
    ct_pgroup *g = &s->opt->g[i];
    if (!(g->has_extra & (1u << EX_INITIAL_LR))) {
      g->extra[EX_INITIAL_LR] = g->o.lr;
      g->has_extra |= 1u << EX_INITIAL_LR;
    }
    s->base_lrs[i] = g->extra[EX_INITIAL_LR];
  }
  s->last_epoch = -1;
  if (initial_step(s) != CT_OK) return fail_free(s);
  return s;
}

ct_sched *ct_sched_step_lr(ct_optim *opt, int64_t step_size, double gamma) {
  if (opt && step_size <= 0) {
    CT_ERR(CT_ERR_VALUE, "StepLR: step_size must be a positive integer, got %lld", (long long)step_size);
    return NULL;
  }
  ct_sched *s = alloc_sched(opt, S_STEP);
  if (!s) return NULL;
  s->step_size = step_size;
  s->gamma = gamma;
  return finish(s);
}

ct_sched *ct_sched_multistep_lr(ct_optim *opt, int n, const int64_t *milestones, double gamma) {
  if (opt && (n < 0 || (n > 0 && !milestones))) {
    CT_ERR(CT_ERR_VALUE, "MultiStepLR: expected %d milestones, got NULL", n);
    return NULL;
  }
  ct_sched *s = alloc_sched(opt, S_MULTISTEP);
  if (!s) return NULL;
  s->ms = ct_xcalloc((size_t)(n ? n : 1), sizeof *s->ms);
  if (!s->ms) return fail_free(s);
  if (n) memcpy(s->ms, milestones, (size_t)n * sizeof *s->ms);
  s->n_ms = n;
  s->gamma = gamma;
  return finish(s);
}

ct_sched *ct_sched_exponential_lr(ct_optim *opt, double gamma) {
  ct_sched *s = alloc_sched(opt, S_EXPONENTIAL);
  if (!s) return NULL;
  s->gamma = gamma;
  return finish(s);
}

ct_sched *ct_sched_cosine_annealing_lr(ct_optim *opt, int64_t T_max, double eta_min) {
  if (opt && T_max <= 0) {
    CT_ERR(CT_ERR_VALUE, "CosineAnnealingLR: T_max must be a positive integer, got %lld", (long long)T_max);
    return NULL;
  }
  ct_sched *s = alloc_sched(opt, S_COSINE);
  if (!s) return NULL;
  s->T_max = T_max;
  s->eta_min = eta_min;
  return finish(s);
}

ct_sched *ct_sched_linear_lr(ct_optim *opt, double start_factor, double end_factor, int64_t total_iters) {
  if (opt) {
    if (start_factor > 1.0 || start_factor < 0 || isnan(start_factor)) {
      CT_ERR(CT_ERR_VALUE, "Starting multiplicative factor expected to be between 0 and 1.");
      return NULL;
    }
    if (end_factor > 1.0 || end_factor < 0 || isnan(end_factor)) {
      CT_ERR(CT_ERR_VALUE, "Ending multiplicative factor expected to be between 0 and 1.");
      return NULL;
    }
    if (total_iters <= 0) {
      CT_ERR(CT_ERR_VALUE, "LinearLR: total_iters must be a positive integer, got %lld", (long long)total_iters);
      return NULL;
    }
  }
  ct_sched *s = alloc_sched(opt, S_LINEAR);
  if (!s) return NULL;
  s->start_factor = start_factor;
  s->end_factor = end_factor;
  s->total_iters = total_iters;
  return finish(s);
}

ct_sched *ct_sched_constant_lr(ct_optim *opt, double factor, int64_t total_iters) {
  if (opt && (factor > 1.0 || factor < 0 || isnan(factor))) {
    CT_ERR(CT_ERR_VALUE, "Constant multiplicative factor expected to be between 0 and 1.");
    return NULL;
  }
  if (opt && total_iters < 0) {
    CT_ERR(CT_ERR_VALUE, "ConstantLR: total_iters must not be negative, got %lld", (long long)total_iters);
    return NULL;
  }
  ct_sched *s = alloc_sched(opt, S_CONSTANT);
  if (!s) return NULL;
  s->factor = factor;
  s->total_iters = total_iters;
  return finish(s);
}

ct_sched *ct_sched_polynomial_lr(ct_optim *opt, int64_t total_iters, double power) {
  if (opt && total_iters <= 0) {
    CT_ERR(CT_ERR_VALUE, "PolynomialLR: total_iters must be a positive integer, got %lld", (long long)total_iters);
    return NULL;
  }
  ct_sched *s = alloc_sched(opt, S_POLYNOMIAL);
  if (!s) return NULL;
  s->total_iters = total_iters;
  s->power = power;
  return finish(s);
}

ct_sched *ct_sched_lambda_lr(ct_optim *opt, ct_lr_lambda_fn fn, void *user) {
  if (opt && !fn) {
    CT_ERR(CT_ERR_TYPE, "LambdaLR: lr_lambda must be a function, got NULL");
    return NULL;
  }
  ct_sched *s = alloc_sched(opt, S_LAMBDA);
  if (!s) return NULL;
  s->fn = fn;
  s->user = user;
  return finish(s);
}

ct_onecycle_options ct_onecycle_defaults(double max_lr, int64_t total_steps) {
  ct_onecycle_options o;
  memset(&o, 0, sizeof o);
  o.max_lr = max_lr;
  o.total_steps = total_steps;
  o.pct_start = 0.3;
  o.anneal_strategy = "cos";
  o.cycle_momentum = true;
  o.base_momentum = 0.85;
  o.max_momentum = 0.95;
  o.div_factor = 25.;
  o.final_div_factor = 1e4;
  return o;
}

ct_sched *ct_sched_onecycle_lr(ct_optim *opt, const ct_onecycle_options *o) {
  if (!opt) {
    CT_ERR(CT_ERR_TYPE, "NoneType is not an Optimizer");
    return NULL;
  }
  if (!o) {
    CT_ERR(CT_ERR_VALUE, "OneCycleLR: NULL options");
    return NULL;
  }
  int64_t total;
  if (o->total_steps == 0 && o->epochs == 0 && o->steps_per_epoch == 0) {
    CT_ERR(CT_ERR_VALUE, "You must define either total_steps OR (epochs AND steps_per_epoch)");
    return NULL;
  } else if (o->total_steps != 0) {
    if (o->total_steps <= 0) {
      CT_ERR(CT_ERR_VALUE, "Expected positive integer total_steps, but got %lld", (long long)o->total_steps);
      return NULL;
    }
    total = o->total_steps;
  } else {
    if (o->epochs <= 0) {
      CT_ERR(CT_ERR_VALUE, "Expected positive integer epochs, but got %lld", (long long)o->epochs);
      return NULL;
    }
    if (o->steps_per_epoch <= 0) {
      CT_ERR(CT_ERR_VALUE, "Expected positive integer steps_per_epoch, but got %lld", (long long)o->steps_per_epoch);
      return NULL;
    }
    if (!ct_mul_ok(o->epochs, o->steps_per_epoch, &total)) {
      CT_ERR(CT_ERR_VALUE, "OneCycleLR: epochs * steps_per_epoch overflows");
      return NULL;
    }
  }
  char b[40];
  if (!(o->pct_start >= 0 && o->pct_start <= 1)) {
    CT_ERR(CT_ERR_VALUE, "Expected float between 0 and 1 pct_start, but got %s", ct_py_float(o->pct_start, b, sizeof b));
    return NULL;
  }
  const char *an = o->anneal_strategy ? o->anneal_strategy : "cos";
  if (strcmp(an, "cos") && strcmp(an, "linear")) {
    CT_ERR(CT_ERR_VALUE, "anneal_strategy must by one of 'cos' or 'linear', instead got %s", an);
    return NULL;
  }
  if (o->cycle_momentum && opt->kind == CT_OPTIM_ADAGRAD) {
    CT_ERR(CT_ERR_VALUE, "optimizer must support momentum with `cycle_momentum` option enabled");
    return NULL;
  }
  ct_sched *s = alloc_sched(opt, S_ONECYCLE);
  if (!s) return NULL;
  s->total_steps = total;
  s->linear = !strcmp(an, "linear");
  double ps = o->pct_start, T = (double)total;
  if (o->three_phase) {
    s->n_phases = 3;
    s->end_step[0] = ps * T - 1;
    s->end_step[1] = 2 * ps * T - 2;
    s->end_step[2] = T - 1;
    int lr[3][2] = {{EX_INITIAL_LR, EX_MAX_LR}, {EX_MAX_LR, EX_INITIAL_LR}, {EX_INITIAL_LR, EX_MIN_LR}};
    int mo[3][2] = {{EX_MAX_MOMENTUM, EX_BASE_MOMENTUM}, {EX_BASE_MOMENTUM, EX_MAX_MOMENTUM},
                    {EX_MAX_MOMENTUM, EX_MAX_MOMENTUM}};
    memcpy(s->ph_lr, lr, sizeof lr);
    memcpy(s->ph_mom, mo, sizeof mo);
  } else {
    s->n_phases = 2;
    s->end_step[0] = ps * T - 1;
    s->end_step[1] = T - 1;
    int lr[2][2] = {{EX_INITIAL_LR, EX_MAX_LR}, {EX_MAX_LR, EX_MIN_LR}};
    int mo[2][2] = {{EX_MAX_MOMENTUM, EX_BASE_MOMENTUM}, {EX_BASE_MOMENTUM, EX_MAX_MOMENTUM}};
    memcpy(s->ph_lr, lr, sizeof lr);
    memcpy(s->ph_mom, mo, sizeof mo);
  }
  for (int i = 0; i < s->n; i++) {
    ct_pgroup *g = &opt->g[i];
    double mx = o->max_lrs ? o->max_lrs[i] : o->max_lr;
    g->extra[EX_INITIAL_LR] = mx / o->div_factor;
    g->extra[EX_MAX_LR] = mx;
    g->extra[EX_MIN_LR] = g->extra[EX_INITIAL_LR] / o->final_div_factor;
    g->has_extra |= (1u << EX_INITIAL_LR) | (1u << EX_MAX_LR) | (1u << EX_MIN_LR);
  }
  s->cycle_momentum = o->cycle_momentum;
  if (o->cycle_momentum) {
    s->use_beta1 = opt->kind == CT_OPTIM_ADAM || opt->kind == CT_OPTIM_ADAMW;
    for (int i = 0; i < s->n; i++) {
      ct_pgroup *g = &opt->g[i];
      if (s->use_beta1) g->o.beta1 = o->max_momentum;
      else g->o.momentum = o->max_momentum;
      g->extra[EX_MAX_MOMENTUM] = o->max_momentum;
      g->extra[EX_BASE_MOMENTUM] = o->base_momentum;
      g->has_extra |= (1u << EX_MAX_MOMENTUM) | (1u << EX_BASE_MOMENTUM);
    }
  }
  return finish(s);
}

/* ---- SequentialLR and ChainedScheduler ------------------------------------------ */
static ct_status check_children(int n, ct_sched *const *ch) {
  if (n <= 0 || !ch) return CT_ERR(CT_ERR_VALUE, "expected at least one scheduler");
  for (int k = 0; k < n; k++) {
    if (!ch[k]) return CT_ERR(CT_ERR_VALUE, "scheduler %d is NULL", k);
    if (ch[k]->kind == S_SEQUENTIAL || ch[k]->kind == S_CHAINED)
      return CT_ERR(CT_ERR_VALUE, "%s cannot be nested in another SequentialLR or ChainedScheduler", SNAMES[ch[k]->kind]);
    for (int j = 0; j < k; j++)
      if (ch[j] == ch[k]) return CT_ERR(CT_ERR_VALUE, "scheduler %d appears twice", k);
  }
  return CT_OK;
}

static ct_sched *adopt(ct_sched *s, int n, ct_sched *const *ch) {
  s->children = ct_xcalloc((size_t)n, sizeof *s->children);
  if (!s->children) return fail_free(s);
  memcpy(s->children, ch, (size_t)n * sizeof *ch);
  s->n_children = n;
  return s;
}

ct_sched *ct_sched_sequential_lr(ct_optim *opt, int n, ct_sched *const *ch, const int64_t *milestones) {
  if (!opt) {
    CT_ERR(CT_ERR_TYPE, "NoneType is not an Optimizer");
    return NULL;
  }
  if (check_children(n, ch)) return NULL;
  for (int k = 0; k < n; k++)
    if (ch[k]->opt != opt) {
      CT_ERR(CT_ERR_VALUE,
             "Sequential Schedulers expects all schedulers to belong to the same optimizer, but got schedulers at "
             "index %d to be different than the optimizer passed in.", k);
      return NULL;
    }
  if (n > 1 && !milestones) {
    CT_ERR(CT_ERR_VALUE, "Sequential Schedulers expects number of schedulers provided to be one more than the number "
                         "of milestone points, but got number of schedulers %d and the number of milestones to be "
                         "equal to 0", n);
    return NULL;
  }
  for (int k = 0; k < opt->n_groups; k++)
    if (!(opt->g[k].has_extra & (1u << EX_INITIAL_LR))) {
      CT_ERR(CT_ERR_VALUE, "'initial_lr' is missing in param group %d", k);
      return NULL;
    }
  ct_sched *s = alloc_sched(opt, S_SEQUENTIAL);
  if (!s) return NULL;
  s->ms = ct_xcalloc((size_t)(n > 1 ? n - 1 : 1), sizeof *s->ms);
  if (!s->ms) return fail_free(s);
  if (n > 1) memcpy(s->ms, milestones, (size_t)(n - 1) * sizeof *s->ms);
  s->n_ms = n - 1;
  /* PyTorch: lrs back to initial_lr, undo each child's initial step, redo the first's */
  for (int k = 0; k < opt->n_groups; k++) opt->g[k].o.lr = opt->g[k].extra[EX_INITIAL_LR];
  for (int k = 0; k < n; k++) ch[k]->last_epoch -= 1;
  if (initial_step(ch[0]) != CT_OK) {
    for (int k = 0; k < n; k++) ch[k]->last_epoch += 1;
    return fail_free(s);
  }
  s->last_epoch = 0;
  memcpy(s->last_lr, ch[0]->last_lr, (size_t)s->n * sizeof(double));
  return adopt(s, n, ch);
}

ct_sched *ct_sched_chained(int n, ct_sched *const *ch) {
  if (check_children(n, ch)) return NULL;
  for (int k = 1; k < n; k++)
    if (ch[k]->opt != ch[0]->opt) {
      CT_ERR(CT_ERR_VALUE, "ChainedScheduler expects all schedulers to belong to the same optimizer, but got "
                           "schedulers at index 0 and %d to be different", k);
      return NULL;
    }
  ct_sched *s = alloc_sched(ch[0]->opt, S_CHAINED);
  if (!s) return NULL;
  record_lrs(s);
  return adopt(s, n, ch);
}

/* ---- step and queries ------------------------------------------------------------- */
ct_status ct_sched_step(ct_sched *s) {
  if (!s) return CT_ERR(CT_ERR_VALUE, "ct_sched_step: NULL scheduler");
  if (s->kind == S_SEQUENTIAL) {
    int64_t e = s->last_epoch + 1;
    int idx = bisect_right(s->ms, s->n_ms, e);
    ct_sched *c = s->children[idx];
    ct_status st = (idx > 0 && s->ms[idx - 1] == e) ? base_step(c, 0) : base_step(c, -1);
    CT_TRY(st);
    s->last_epoch = e;
    memcpy(s->last_lr, c->last_lr, (size_t)s->n * sizeof(double));
    return CT_OK;
  }
  if (s->kind == S_CHAINED) {
    for (int k = 0; k < s->n_children; k++) CT_TRY(base_step(s->children[k], -1));
    CT_TRY(groups_unchanged(s));
    record_lrs(s);
    return CT_OK;
  }
  return base_step(s, -1);
}

int ct_sched_get_last_lr(const ct_sched *s, double *lrs, int n) {
  if (!s) {
    CT_ERR(CT_ERR_VALUE, "ct_sched_get_last_lr: NULL scheduler");
    return -1;
  }
  if (n > 0 && !lrs) {
    CT_ERR(CT_ERR_VALUE, "ct_sched_get_last_lr: NULL output");
    return -1;
  }
  for (int i = 0; i < n && i < s->n; i++) lrs[i] = s->last_lr[i];
  return s->n;
}

int64_t ct_sched_last_epoch(const ct_sched *s) { return s ? s->last_epoch : -1; }
const char *ct_sched_name(const ct_sched *s) { return s ? SNAMES[s->kind] : "(null)"; }

/* ---- state dicts ---------------------------------------------------------------- */
static ct_status put(ct_dict *d, const char *name, ct_tensor *t) {
  if (!t) return ct_last_status() ? ct_last_status() : CT_ERR_OOM;
  ct_own(t);
  ct_status st = ct_dict_set(d, name, t);
  ct_release(t);
  return st;
}
static ct_status put_i(ct_dict *d, const char *pre, const char *k, int64_t v) {
  char nm[512];
  snprintf(nm, sizeof nm, "%s%s", pre, k);
  return put(d, nm, ct_scalar_tensor(ct_si(v), ct_opts_dtype(CT_INT64)));
}
static ct_status put_f(ct_dict *d, const char *pre, const char *k, double v) {
  char nm[512];
  snprintf(nm, sizeof nm, "%s%s", pre, k);
  return put(d, nm, ct_scalar_tensor(ct_sf(v), ct_opts_dtype(CT_FLOAT64)));
}
static ct_status put_fv(ct_dict *d, const char *pre, const char *k, const double *v, int64_t n) {
  char nm[512];
  snprintf(nm, sizeof nm, "%s%s", pre, k);
  return put(d, nm, ct_from_buffer(v, CT_FLOAT64, 1, &n, ct_opts_dtype(CT_FLOAT64)));
}
static ct_status put_iv(ct_dict *d, const char *pre, const char *k, const int64_t *v, int64_t n) {
  char nm[512];
  snprintf(nm, sizeof nm, "%s%s", pre, k);
  return put(d, nm, ct_from_buffer(v, CT_INT64, 1, &n, ct_opts_dtype(CT_INT64)));
}

/* The numbers each kind saves (PyTorch's attribute names). */
typedef struct {
  const char *name;
  char type; /* 'i' int64 field, 'f' double field, 'b' bool field */
  size_t off;
} sfield;
#define FI(n) {#n, 'i', offsetof(ct_sched, n)}
#define FF(n) {#n, 'f', offsetof(ct_sched, n)}
#define FB(n) {#n, 'b', offsetof(ct_sched, n)}
static const sfield *fields(skind k) {
  static const sfield step[] = {FI(step_size), FF(gamma), {0}}, multi[] = {FF(gamma), {0}},
                      constant[] = {FF(factor), FI(total_iters), {0}},
                      linear[] = {FF(start_factor), FF(end_factor), FI(total_iters), {0}},
                      expo[] = {FF(gamma), {0}}, poly[] = {FI(total_iters), FF(power), {0}},
                      cosine[] = {FI(T_max), FF(eta_min), {0}},
                      onecycle[] = {FI(total_steps), FB(cycle_momentum), FB(use_beta1), {0}}, none[] = {{0}};
  switch (k) {
    case S_STEP: return step;
    case S_MULTISTEP: return multi;
    case S_CONSTANT: return constant;
    case S_LINEAR: return linear;
    case S_EXPONENTIAL: return expo;
    case S_POLYNOMIAL: return poly;
    case S_COSINE: return cosine;
    case S_ONECYCLE: return onecycle;
    default: return none;
  }
}

static ct_status save(const ct_sched *s, ct_dict *d, const char *pre) {
  ct_status st = CT_OK;
  char nm[512];
  if (s->kind != S_CHAINED) st = put_i(d, pre, "last_epoch", s->last_epoch);
  if (!st && s->kind != S_SEQUENTIAL && s->kind != S_CHAINED) {
    st = put_i(d, pre, "_step_count", s->step_count);
    if (!st) st = put_fv(d, pre, "base_lrs", s->base_lrs, s->n);
  }
  if (!st) st = put_fv(d, pre, "_last_lr", s->last_lr, s->n);
  for (const sfield *f = fields(s->kind); f->name && !st; f++) {
    const char *p = (const char *)s + f->off;
    if (f->type == 'i') st = put_i(d, pre, f->name, *(const int64_t *)p);
    else if (f->type == 'f') st = put_f(d, pre, f->name, *(const double *)p);
    else {
      snprintf(nm, sizeof nm, "%s%s", pre, f->name);
      st = put(d, nm, ct_scalar_tensor(ct_sb(*(const bool *)p), ct_opts_dtype(CT_BOOL)));
    }
  }
  if (!st && s->kind == S_MULTISTEP) st = put_iv(d, pre, "milestones", s->ms, s->n_ms);
  if (!st && s->kind == S_SEQUENTIAL) st = put_iv(d, pre, "_milestones", s->ms, s->n_ms);
  if (!st && s->kind == S_ONECYCLE) st = put_fv(d, pre, "_schedule_phases.end_step", s->end_step, s->n_phases);
  for (int k = 0; k < s->n_children && !st; k++) {
    snprintf(nm, sizeof nm, "%s_schedulers.%d.", pre, k);
    st = save(s->children[k], d, nm);
  }
  return st;
}

ct_status ct_sched_state_dict_prefixed(const ct_sched *s, ct_dict *out, const char *prefix) {
  if (!s || !out) return CT_ERR(CT_ERR_VALUE, "scheduler state_dict: NULL argument");
  if (!prefix) prefix = "";
  bool prev = ct_set_grad_enabled(false);
  ct_status st = save(s, out, prefix);
  ct_set_grad_enabled(prev);
  if (!st) {
    char nm[512];
    snprintf(nm, sizeof nm, "%sscheduler", prefix);
    st = ct_dict_set_meta(out, nm, SNAMES[s->kind]);
  }
  return st;
}
ct_status ct_sched_state_dict(const ct_sched *s, ct_dict *out) { return ct_sched_state_dict_prefixed(s, out, ""); }

/* Reads entry pre+k: n numbers into v (as double). */
static ct_status get_v(const ct_dict *d, const char *pre, const char *k, double *v, int64_t n, bool exact_n) {
  char nm[512];
  snprintf(nm, sizeof nm, "%s%s", pre, k);
  ct_tensor *t = ct_dict_get(d, nm);
  if (!t) return CT_ERR(CT_ERR_VALUE, "scheduler state dict: missing entry '%s'", nm);
  if (exact_n && ct_numel(t) != n)
    return CT_ERR(CT_ERR_VALUE, "scheduler state dict: '%s' holds %lld numbers, expected %lld", nm,
                  (long long)ct_numel(t), (long long)n);
  return ct_copy_to_buffer(t, v, CT_FLOAT64, n);
}

/* Loads into a copy first (shallow: arrays are replaced only when everything read). */
static ct_status load(ct_sched *s, const ct_dict *d, const char *pre, bool apply) {
  double v;
  ct_status st = CT_OK;
  char nm[512];
  int64_t last_epoch = s->last_epoch, step_count = s->step_count;
  double *base = ct_xcalloc((size_t)(s->n ? s->n : 1), sizeof *base), *last = ct_xcalloc((size_t)(s->n ? s->n : 1), sizeof *last);
  if (!base || !last) st = CT_ERR_OOM;
  if (!st && s->kind != S_CHAINED && !(st = get_v(d, pre, "last_epoch", &v, 1, true))) last_epoch = (int64_t)v;
  if (!st && s->kind != S_SEQUENTIAL && s->kind != S_CHAINED) {
    if (!(st = get_v(d, pre, "_step_count", &v, 1, true))) step_count = (int64_t)v;
    if (!st) st = get_v(d, pre, "base_lrs", base, s->n, true);
  }
  if (!st) st = get_v(d, pre, "_last_lr", last, s->n, true);
  /* the kind's numbers into a scratch copy of the struct */
  ct_sched tmp = *s;
  for (const sfield *f = fields(s->kind); f->name && !st; f++) {
    if ((st = get_v(d, pre, f->name, &v, 1, true))) break;
    char *p = (char *)&tmp + f->off;
    if (f->type == 'i') *(int64_t *)p = (int64_t)v;
    else if (f->type == 'f') *(double *)p = v;
    else *(bool *)p = v != 0;
  }
  if (!st && (tmp.kind == S_STEP && tmp.step_size <= 0)) st = CT_ERR(CT_ERR_VALUE, "scheduler state dict: step_size must be positive");
  if (!st && (tmp.kind == S_COSINE && tmp.T_max <= 0)) st = CT_ERR(CT_ERR_VALUE, "scheduler state dict: T_max must be positive");
  if (!st && (tmp.kind == S_LINEAR || tmp.kind == S_POLYNOMIAL) && tmp.total_iters <= 0)
    st = CT_ERR(CT_ERR_VALUE, "scheduler state dict: total_iters must be positive");
  if (!st && tmp.kind == S_ONECYCLE && (tmp.total_steps <= 0 || (tmp.use_beta1 && !(s->opt->kind == CT_OPTIM_ADAM || s->opt->kind == CT_OPTIM_ADAMW))))
    st = CT_ERR(CT_ERR_VALUE, "scheduler state dict: OneCycleLR entries do not fit this optimizer");
  if (!st && tmp.kind == S_ONECYCLE) {
    snprintf(nm, sizeof nm, "%s_schedule_phases.end_step", pre);
    st = get_v(d, pre, "_schedule_phases.end_step", tmp.end_step, s->n_phases, true);
  }
  int64_t *ms = NULL;
  if (!st && (s->kind == S_MULTISTEP || s->kind == S_SEQUENTIAL)) {
    snprintf(nm, sizeof nm, "%s%s", pre, s->kind == S_MULTISTEP ? "milestones" : "_milestones");
    ct_tensor *t = ct_dict_get(d, nm);
    if (!t) st = CT_ERR(CT_ERR_VALUE, "scheduler state dict: missing entry '%s'", nm);
    else if (s->kind == S_SEQUENTIAL && ct_numel(t) != s->n_ms)
      st = CT_ERR(CT_ERR_VALUE, "scheduler state dict: '%s' holds %lld milestones, expected %d", nm,
                  (long long)ct_numel(t), s->n_ms);
    else if (ct_numel(t) > INT32_MAX) st = CT_ERR(CT_ERR_VALUE, "scheduler state dict: too many milestones");
    else {
      ms = ct_xcalloc((size_t)(ct_numel(t) ? ct_numel(t) : 1), sizeof *ms);
      if (!ms) st = CT_ERR_OOM;
      else {
        st = ct_copy_to_buffer(t, ms, CT_INT64, ct_numel(t));
        tmp.n_ms = (int)ct_numel(t);
      }
    }
  }
  /* children: check all (apply=false) before changing any */
  for (int k = 0; k < s->n_children && !st; k++) {
    snprintf(nm, sizeof nm, "%s_schedulers.%d.", pre, k);
    st = load(s->children[k], d, nm, false);
  }
  if (!st && apply) {
    for (int k = 0; k < s->n_children && !st; k++) {
      snprintf(nm, sizeof nm, "%s_schedulers.%d.", pre, k);
      st = load(s->children[k], d, nm, true);
    }
    if (!st) {
      tmp.last_epoch = last_epoch;
      tmp.step_count = step_count;
      if (s->kind != S_SEQUENTIAL && s->kind != S_CHAINED) memcpy(tmp.base_lrs, base, (size_t)s->n * sizeof *base);
      memcpy(tmp.last_lr, last, (size_t)s->n * sizeof *last);
      if (ms) {
        free(tmp.ms);
        tmp.ms = ms;
        ms = NULL;
      }
      *s = tmp;
    }
  }
  free(ms);
  free(base);
  free(last);
  return st;
}

ct_status ct_sched_load_state_dict_prefixed(ct_sched *s, const ct_dict *sd, const char *prefix) {
  if (!s || !sd) return CT_ERR(CT_ERR_VALUE, "scheduler load_state_dict: NULL argument");
  if (!prefix) prefix = "";
  char nm[512];
  snprintf(nm, sizeof nm, "%sscheduler", prefix);
  const char *kind = ct_dict_get_meta(sd, nm);
  if (kind && strcmp(kind, SNAMES[s->kind]))
    return CT_ERR(CT_ERR_VALUE, "loaded state dict is for a %s, not a %s", kind, SNAMES[s->kind]);
  return load(s, sd, prefix, true);
}
ct_status ct_sched_load_state_dict(ct_sched *s, const ct_dict *sd) { return ct_sched_load_state_dict_prefixed(s, sd, ""); }
