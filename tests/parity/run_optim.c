/* Parity runners of the optimizers, schedulers and gradient clipping: the C twins of
 * the fns in tests/parity/cases_optim.py (see its docstring for the scenarios and the
 * packing of the outputs). */
#include "parity.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 4

static int kind_of(const char *s, ct_optim_kind *k) {
  static const char *names[] = {"sgd", "adam", "adamw", "rmsprop", "adagrad"};
  for (int i = 0; i < 5; i++)
    if (s && !strcmp(s, names[i])) {
      *k = (ct_optim_kind)i;
      return 0;
    }
  return -1;
}

static ct_optim_options opts_of(const pcase *c, ct_optim_kind k) {
  ct_optim_options o = ct_optim_defaults(k);
  o.lr = pc_float(c, "lr", o.lr);
  o.momentum = pc_float(c, "momentum", o.momentum);
  o.dampening = pc_float(c, "dampening", o.dampening);
  o.nesterov = pc_int(c, "nesterov", 0) != 0;
  o.beta1 = pc_float(c, "beta1", o.beta1);
  o.beta2 = pc_float(c, "beta2", o.beta2);
  o.amsgrad = pc_int(c, "amsgrad", 0) != 0;
  o.eps = pc_float(c, "eps", o.eps);
  o.weight_decay = pc_float(c, "weight_decay", o.weight_decay);
  o.maximize = pc_int(c, "maximize", 0) != 0;
  o.alpha = pc_float(c, "alpha", o.alpha);
  o.centered = pc_int(c, "centered", 0) != 0;
  o.lr_decay = pc_float(c, "lr_decay", o.lr_decay);
  o.initial_accumulator_value = pc_float(c, "initial_accumulator_value", o.initial_accumulator_value);
  return o;
}

static double lam_inv(int64_t e, int g, void *u) { return 1.0 / (double)(e + 1); }
static double lam_warm(int64_t e, int g, void *u) {
  double a = (double)(e + 1) / 5.0;
  return (a < 1.0 ? a : 1.0) * pow(0.9, (double)e);
}

/* make_sched of cases_optim.py; p is the attribute prefix ("" or "c<k>_") */
static ct_sched *make_sched(const pcase *c, ct_optim *opt, const char *p) {
  char k[64];
#define K(name) (snprintf(k, sizeof k, "%s%s", p, name), k)
  const char *kind = pc_str(c, K("sched"), "");
  if (!strcmp(kind, "step")) return ct_sched_step_lr(opt, pc_int(c, K("step_size"), 1), pc_float(c, K("gamma"), 0.1));
  if (!strcmp(kind, "multistep")) {
    int64_t ms[32];
    int n = pc_ints(c, K("milestones"), ms, 32);
    return ct_sched_multistep_lr(opt, n < 0 ? 0 : n, ms, pc_float(c, K("gamma"), 0.1));
  }
  if (!strcmp(kind, "exponential")) return ct_sched_exponential_lr(opt, pc_float(c, K("gamma"), 0.1));
  if (!strcmp(kind, "cosine")) return ct_sched_cosine_annealing_lr(opt, pc_int(c, K("T_max"), 1), pc_float(c, K("eta_min"), 0.0));
  if (!strcmp(kind, "linear")) {
    double sf = pc_float(c, K("start_factor"), 1.0 / 3), ef = pc_float(c, K("end_factor"), 1.0);
    return ct_sched_linear_lr(opt, sf, ef, pc_int(c, K("total_iters"), 5));
  }
  if (!strcmp(kind, "constant")) {
    double f = pc_float(c, K("factor"), 1.0 / 3);
    return ct_sched_constant_lr(opt, f, pc_int(c, K("total_iters"), 5));
  }
  if (!strcmp(kind, "polynomial")) {
    int64_t ti = pc_int(c, K("total_iters"), 5);
    return ct_sched_polynomial_lr(opt, ti, pc_float(c, K("power"), 1.0));
  }
  if (!strcmp(kind, "lambda"))
    return ct_sched_lambda_lr(opt, !strcmp(pc_str(c, K("lam"), ""), "inv") ? lam_inv : lam_warm, NULL);
  if (!strcmp(kind, "onecycle")) {
    ct_onecycle_options o = ct_onecycle_defaults(pc_float(c, K("max_lr"), 0.1), pc_int(c, K("total_steps"), 0));
    o.pct_start = pc_float(c, K("pct_start"), o.pct_start);
    o.anneal_strategy = pc_str(c, K("anneal"), "cos");
    o.cycle_momentum = pc_int(c, K("cycle_momentum"), 1) != 0;
    o.base_momentum = pc_float(c, K("base_momentum"), o.base_momentum);
    o.max_momentum = pc_float(c, K("max_momentum"), o.max_momentum);
    o.div_factor = pc_float(c, K("div_factor"), o.div_factor);
    o.final_div_factor = pc_float(c, K("final_div_factor"), o.final_div_factor);
    o.three_phase = pc_int(c, K("three_phase"), 0) != 0;
    return ct_sched_onecycle_lr(opt, &o);
  }
  if (!strcmp(kind, "sequential") || !strcmp(kind, "chained")) {
    int n = (int)pc_int(c, K("n_children"), 0);
    ct_sched *ch[8] = {0};
    int64_t ms[8];
    if (n < 1 || n > 8) return NULL;
    for (int i = 0; i < n; i++) {
      char pre[16];
      snprintf(pre, sizeof pre, "c%d_", i);
      ch[i] = make_sched(c, opt, pre);
      if (!ch[i]) {
        for (int j = 0; j < i; j++) ct_sched_free(ch[j]);
        return NULL;
      }
    }
    ct_sched *s;
    if (!strcmp(kind, "chained")) s = ct_sched_chained(n, ch);
    else {
      int m = pc_ints(c, K("seq_milestones"), ms, 8);
      s = m == n - 1 ? ct_sched_sequential_lr(opt, n, ch, ms) : NULL;
    }
    if (!s)
      for (int j = 0; j < n; j++) ct_sched_free(ch[j]);
    return s;
  }
#undef K
  return NULL;
}

/* momentum or beta1 of a group, as group_mom() in the cases */
static double group_mom(const ct_optim *opt, int g) {
  double v = 0;
  ct_optim_kind k = ct_optim_get_kind(opt);
  if (k == CT_OPTIM_ADAM || k == CT_OPTIM_ADAMW) ct_optim_group_get(opt, g, "beta1", &v);
  else if (k == CT_OPTIM_SGD || k == CT_OPTIM_RMSPROP) ct_optim_group_get(opt, g, "momentum", &v);
  return v;
}

static ct_tensor *flat(const ct_tensor *t) {
  int64_t m1 = -1;
  return ct_reshape(t, 1, &m1);
}

static ct_tensor *cat_or_empty(int n, ct_tensor **ts, ct_dtype dt) {
  if (n == 0) {
    int64_t z = 0;
    return ct_zeros(1, &z, ct_opts_dtype(dt));
  }
  return ct_cat(n, (const ct_tensor *const *)ts, 0);
}

static const char *const STATE_KEYS[5][3] = {{"momentum_buffer"},
                                             {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
                                             {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
                                             {"square_avg", "momentum_buffer", "grad_avg"},
                                             {"sum"}};

/* Builds the optimizer over the groups (first only if add_later), with group lr/wd. */
static ct_optim *build(const pcase *c, ct_optim_kind kind, int n, ct_tensor **ps, const int64_t *gof, int ng,
                       bool first_only) {
  ct_optim_options o = opts_of(c, kind);
  double glr[MAXP], gwd[MAXP];
  bool has_lr = pc_floats(c, "group_lr", glr, MAXP) >= ng, has_wd = pc_floats(c, "group_wd", gwd, MAXP) >= ng;
  ct_optim *opt = NULL;
  for (int g = 0; g < ng && (g == 0 || !first_only); g++) {
    ct_tensor *gp[MAXP];
    int m = 0;
    for (int i = 0; i < n; i++)
      if (gof[i] == g) gp[m++] = ps[i];
    ct_optim_options go = o;
    if (has_lr) go.lr = glr[g];
    if (has_wd) go.weight_decay = gwd[g];
    if (g == 0) {
      /* the constructor's defaults stay the plain options; group 0 gets its own values */
      opt = ct_optim_new(kind, m, gp, &o);
      if (!opt) return NULL;
      if (ct_optim_set_group(opt, 0, &go) != CT_OK) {
        ct_optim_free(opt);
        return NULL;
      }
    } else if (ct_optim_add_param_group(opt, m, gp, &go) != CT_OK) {
      ct_optim_free(opt);
      return NULL;
    }
  }
  return opt;
}

static int add_groups_after(const pcase *c, ct_optim *opt, ct_optim_kind kind, int n, ct_tensor **ps,
                            const int64_t *gof, int ng) {
  ct_optim_options o = opts_of(c, kind);
  double glr[MAXP], gwd[MAXP];
  bool has_lr = pc_floats(c, "group_lr", glr, MAXP) >= ng, has_wd = pc_floats(c, "group_wd", gwd, MAXP) >= ng;
  for (int g = 1; g < ng; g++) {
    ct_tensor *gp[MAXP];
    int m = 0;
    for (int i = 0; i < n; i++)
      if (gof[i] == g) gp[m++] = ps[i];
    if (has_lr) o.lr = glr[g];
    if (has_wd) o.weight_decay = gwd[g];
    if (ct_optim_add_param_group(opt, m, gp, &o) != CT_OK) return -1;
  }
  return 0;
}

PARITY_OP(optim_run) {
  ct_optim_kind kind;
  if (kind_of(pc_str(c, "optim", NULL), &kind)) return -1;
  int n = (int)pc_int(c, "n_params", 0), steps = (int)pc_int(c, "steps", 0);
  if (n < 1 || n > MAXP || n_in != 2 * n) return -1;
  int64_t gof[MAXP] = {0}, fr[MAXP];
  pc_ints(c, "group_of", gof, MAXP);
  int ng = 1;
  for (int i = 0; i < n; i++)
    if (gof[i] + 1 > ng) ng = (int)gof[i] + 1;
  int nf = pc_ints(c, "frozen", fr, MAXP);
  bool frozen[MAXP] = {0};
  for (int i = 0; i < nf; i++)
    if (fr[i] >= 0 && fr[i] < n) frozen[fr[i]] = true;
  int64_t add_at = pc_int(c, "add_group_at", -1), modify_at = pc_int(c, "modify_at", -1),
          resume_at = pc_int(c, "resume_at", -1);
  bool fused = pc_int(c, "fused", 1) != 0;

  ct_tensor *ps[MAXP] = {0};
  int ret = -1;
  for (int i = 0; i < n; i++) {
    ps[i] = ct_clone(in[i]);
    if (!ps[i]) goto done_early; /* keep the clone's error (e.g. a device without float64) */
    ct_detach_(ps[i]);
  }
  ct_sched *sched = NULL;
  ct_optim *opt = build(c, kind, n, ps, gof, ng, add_at >= 0);
  if (!opt) goto done;
  ct_optim_set_fused(opt, fused);
  if (pc_has(c, "sched") && !(sched = make_sched(c, opt, ""))) goto done;
  for (int s = 0; s < steps; s++) {
    for (int i = 0; i < n; i++) {
      if (frozen[i]) continue;
      ct_tensor *row = ct_select(in[n + i], 0, s), *g = row ? ct_clone(row) : NULL;
      ct_status st = g ? ct_set_grad(ps[i], g) : CT_ERR_VALUE;
      ct_release(row);
      ct_release(g);
      if (st) goto done;
    }
    if (ct_optim_step(opt)) goto done;
    if (sched && ct_sched_step(sched)) goto done;
    if (s + 1 == add_at && add_groups_after(c, opt, kind, n, ps, gof, ng)) goto done;
    if (s + 1 == modify_at) {
      bool prev = ct_set_grad_enabled(false);
      for (int i = 0; i < n; i++) {
        ct_tensor *h = ct_mul_scalar(ps[i], ct_sf(0.5)), *v = h ? ct_add_scalar(h, ct_sf(0.25)) : NULL;
        ct_status st = v ? ct_copy_(ps[i], v) : CT_ERR_VALUE;
        ct_release(h);
        ct_release(v);
        if (st) {
          ct_set_grad_enabled(prev);
          goto done;
        }
      }
      ct_set_grad_enabled(prev);
    }
    if (s + 1 == resume_at) {
      ct_dict *sd = ct_dict_new();
      if (ct_optim_state_dict(opt, sd)) {
        ct_dict_free(sd);
        goto done;
      }
      ct_optim *fresh = build(c, kind, n, ps, gof, ng, false);
      ct_status st = fresh ? ct_optim_load_state_dict(fresh, sd) : CT_ERR_VALUE;
      ct_dict_free(sd);
      if (fresh) ct_optim_set_fused(fresh, fused);
      ct_optim_free(opt);
      opt = fresh;
      if (st) goto done;
    }
  }
  {
    ct_tensor *f32[16], *f64[16];
    int n32 = 0, n64 = 0, nm = 0;
    double meta[MAXP + 2 * MAXP];
    for (int i = 0; i < n; i++) {
      bool is32 = ct_tensor_dtype(ps[i]) == CT_FLOAT32;
      ct_tensor **lst = is32 ? f32 : f64;
      int *cnt = is32 ? &n32 : &n64;
      lst[(*cnt)++] = flat(ps[i]);
      for (int k = 0; k < 3; k++) {
        const char *key = STATE_KEYS[kind][k];
        ct_tensor *st = key ? ct_optim_state(opt, ps[i], key) : NULL;
        if (st) lst[(*cnt)++] = flat(st);
      }
      ct_tensor *step = ct_optim_state(opt, ps[i], "step");
      double v = -1;
      if (step) ct_item_double(step, &v);
      meta[nm++] = v;
    }
    for (int g = 0; g < ct_optim_num_groups(opt); g++) {
      meta[nm++] = ct_optim_get_lr(opt, g);
      meta[nm++] = group_mom(opt, g);
    }
    int64_t nmeta = nm;
    out[0] = cat_or_empty(n32, f32, CT_FLOAT32);
    out[1] = cat_or_empty(n64, f64, CT_FLOAT64);
    out[2] = ct_from_buffer(meta, CT_FLOAT64, 1, &nmeta, ct_opts_dtype(CT_FLOAT64));
    for (int i = 0; i < n32; i++) ct_release(f32[i]);
    for (int i = 0; i < n64; i++) ct_release(f64[i]);
    ret = out[0] && out[1] && out[2] ? 3 : -1;
  }
done:
  ct_sched_free(sched);
  ct_optim_free(opt);
done_early:
  for (int i = 0; i < n; i++) ct_release(ps[i]);
  return ret;
}

PARITY_OP(sched_lrs) {
  ct_optim_kind kind;
  if (kind_of(pc_str(c, "optim", NULL), &kind)) return -1;
  int ng = (int)pc_int(c, "n_groups", 1), steps = (int)pc_int(c, "steps", 0);
  if (ng < 1 || ng > MAXP || steps < 0 || steps > 1000) return -1;
  double glr[MAXP] = {0.1, 0.1, 0.1, 0.1};
  pc_floats(c, "group_lr", glr, MAXP);
  ct_tensor *ps[MAXP] = {0};
  int64_t two = 2;
  for (int i = 0; i < ng; i++) ps[i] = ct_zeros(1, &two, ct_opts_dtype(CT_FLOAT32));
  ct_optim_options o = opts_of(c, kind);
  int ret = -1;
  ct_sched *s = NULL;
  double *rows = calloc((size_t)(steps + 1) * ng, sizeof *rows), *moms = calloc((size_t)(steps + 1) * ng, sizeof *moms);
  ct_optim *opt = ct_optim_new(kind, 1, ps, &o);
  if (!opt || !rows || !moms) goto done;
  if (ct_optim_set_lr(opt, 0, glr[0])) goto done;
  for (int g = 1; g < ng; g++) {
    ct_optim_options go = o;
    go.lr = glr[g];
    if (ct_optim_add_param_group(opt, 1, ps + g, &go)) goto done;
  }
  if (!(s = make_sched(c, opt, ""))) goto done;
  for (int i = 0; i <= steps; i++) {
    if (i && ct_sched_step(s)) goto done;
    ct_sched_get_last_lr(s, rows + (size_t)i * ng, ng);
    for (int g = 0; g < ng; g++) moms[(size_t)i * ng + g] = group_mom(opt, g);
  }
  int64_t shape[2] = {steps + 1, ng};
  out[0] = ct_from_buffer(rows, CT_FLOAT64, 2, shape, ct_opts_dtype(CT_FLOAT64));
  out[1] = ct_from_buffer(moms, CT_FLOAT64, 2, shape, ct_opts_dtype(CT_FLOAT64));
  ret = out[0] && out[1] ? 2 : -1;
done:
  free(rows);
  free(moms);
  ct_sched_free(s);
  ct_optim_free(opt);
  for (int i = 0; i < ng; i++) ct_release(ps[i]);
  return ret;
}

/* params: zeros like each input, with .grad a copy of it */
static int grads_params(ct_tensor *const *in, int n_in, ct_tensor **ps) {
  for (int i = 0; i < n_in; i++) {
    ps[i] = ct_zeros_like(in[i], NULL);
    ct_tensor *g = ct_clone(in[i]);
    ct_status st = ps[i] && g ? ct_set_grad(ps[i], g) : CT_ERR_VALUE;
    ct_release(g);
    if (st) return -1;
  }
  return 0;
}

PARITY_OP(clip_grad_norm) {
  if (n_in < 1 || n_in > 3) return -1;
  ct_tensor *ps[3] = {0};
  int ret = -1;
  if (grads_params(in, n_in, ps) == 0) {
    out[0] = ct_clip_grad_norm_(n_in, ps, pc_float(c, "max_norm", 1.0), pc_float(c, "norm_type", 2.0),
                                pc_int(c, "error_if_nonfinite", 0) != 0);
    if (out[0]) {
      for (int i = 0; i < n_in; i++) out[1 + i] = ct_retain(ct_grad(ps[i]));
      ret = 1 + n_in;
    }
  }
  for (int i = 0; i < n_in; i++) ct_release(ps[i]);
  return ret;
}

PARITY_OP(clip_grad_value) {
  if (n_in < 1 || n_in > 4) return -1;
  ct_tensor *ps[4] = {0};
  int ret = -1;
  if (grads_params(in, n_in, ps) == 0 && ct_clip_grad_value_(n_in, ps, pc_float(c, "clip_value", 1.0)) == CT_OK) {
    for (int i = 0; i < n_in; i++) out[i] = ct_retain(ct_grad(ps[i]));
    ret = n_in;
  }
  for (int i = 0; i < n_in; i++) ct_release(ps[i]);
  return ret;
}
