/* Optimizers, schedulers and gradient clipping: semantics, errors, fused vs reference
 * path, state_dict resume, memory. Values against PyTorch: tests/parity/cases_optim.py. */
#include "test.h"
#include <stdlib.h>

/* deterministic values in (-2, 2) */
static ct_tensor *mkt(int ndim, const int64_t *shape, ct_dtype dt, int seed, bool rg) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = 2.0 * sin(seed * 12.9898 + (double)i * 78.233 + 0.5);
  ct_tensor *t = tt_from(v, ndim, shape, dt);
  free(v);
  if (rg) ct_requires_grad_(t, true);
  return t;
}

static void set_grad(ct_tensor *p, int seed) {
  ct_tensor *g = mkt(ct_ndim(p), ct_shape(p), ct_tensor_dtype(p), seed, false);
  CHECK_OK(ct_set_grad(p, g));
  ct_release(g);
}

static bool bits_equal(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return a == b;
  if (ct_numel(a) != ct_numel(b) || ct_tensor_dtype(a) != ct_tensor_dtype(b)) return false;
  ct_tensor *ca = ct_contiguous(a), *cb = ct_contiguous(b);
  bool eq = !memcmp(ct_data_ptr(ca), ct_data_ptr(cb), (size_t)ct_numel(a) * ct_dtype_size(ct_tensor_dtype(a)));
  ct_release(ca);
  ct_release(cb);
  return eq;
}

/* max relative difference in units of the dtype's epsilon */
static double ulps(const ct_tensor *a, const ct_tensor *b) {
  int64_t n = ct_numel(a);
  double *x = malloc((size_t)(n ? n : 1) * 8), *y = malloc((size_t)(n ? n : 1) * 8), worst = 0;
  ct_copy_to_buffer(a, x, CT_FLOAT64, n);
  ct_copy_to_buffer(b, y, CT_FLOAT64, n);
  double eps = ct_tensor_dtype(a) == CT_FLOAT32 ? 1.1920929e-07 : 2.220446049250313e-16;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs(x[i] - y[i]) / (fmax(fabs(y[i]), 1e-30) * eps);
    if (x[i] != y[i] && d > worst) worst = d;
  }
  free(x);
  free(y);
  return worst;
}

typedef struct {
  const char *name;
  ct_optim_kind kind;
  ct_optim_options o;
} ocase;

static int n_cases(ocase *c) {
  int n = 0;
#define ADD(nm, k, ...)                      \
  do {                                       \
    c[n].name = nm;                          \
    c[n].kind = k;                           \
    c[n].o = ct_optim_defaults(k);           \
    c[n].o.lr = 0.05;                        \
    { ct_optim_options *o = &c[n].o; (void)o; __VA_ARGS__; } \
    n++;                                     \
  } while (0)
  ADD("sgd", CT_OPTIM_SGD, );
  ADD("sgd_mom", CT_OPTIM_SGD, o->momentum = 0.9);
  ADD("sgd_full", CT_OPTIM_SGD, o->momentum = 0.9; o->dampening = 0.1; o->weight_decay = 0.01; o->maximize = true);
  ADD("sgd_nesterov", CT_OPTIM_SGD, o->momentum = 0.8; o->nesterov = true; o->weight_decay = 0.1);
  ADD("adam", CT_OPTIM_ADAM, );
  ADD("adam_full", CT_OPTIM_ADAM, o->amsgrad = true; o->weight_decay = 0.1; o->maximize = true; o->beta1 = 0.8; o->eps = 1e-6);
  ADD("adamw", CT_OPTIM_ADAMW, );
  ADD("adamw_ams", CT_OPTIM_ADAMW, o->amsgrad = true; o->weight_decay = 0.2);
  ADD("rmsprop", CT_OPTIM_RMSPROP, );
  ADD("rmsprop_full", CT_OPTIM_RMSPROP, o->momentum = 0.9; o->centered = true; o->weight_decay = 0.1; o->alpha = 0.9);
  ADD("adagrad", CT_OPTIM_ADAGRAD, );
  ADD("adagrad_full", CT_OPTIM_ADAGRAD, o->lr_decay = 0.01; o->weight_decay = 0.1; o->initial_accumulator_value = 0.1; o->maximize = true);
#undef ADD
  return n;
}

/* Runs `steps` steps on 3 params (one frozen) with the given path; returns params. */
static void run_case(const ocase *oc, ct_dtype dt, bool fused, int steps, ct_tensor **ps, ct_optim **opt_out) {
  int64_t s0[2] = {3, 4}, s1[1] = {5}, s2[1] = {2};
  ps[0] = mkt(2, s0, dt, 1, true);
  ps[1] = mkt(1, s1, dt, 2, true);
  ps[2] = mkt(1, s2, dt, 3, true); /* never gets a grad */
  ct_optim *opt = ct_optim_new(oc->kind, 3, ps, &oc->o);
  CHECK(opt != NULL);
  if (!opt) return;
  ct_optim_set_fused(opt, fused);
  for (int s = 0; s < steps; s++) {
    set_grad(ps[0], 10 + s);
    set_grad(ps[1], 40 + s);
    CHECK_OK(ct_optim_step(opt));
  }
  *opt_out = opt;
}

TEST(optim_fused_matches_reference) {
  ocase cs[32];
  int n = n_cases(cs);
  const char *keys[] = {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "grad_avg", "sum"};
  for (int c = 0; c < n; c++)
    for (int d = 0; d < 2; d++) {
      ct_dtype dt = d ? CT_FLOAT64 : CT_FLOAT32;
      ct_tensor *pa[3] = {0}, *pb[3] = {0};
      ct_optim *oa = NULL, *ob = NULL;
      run_case(&cs[c], dt, true, 10, pa, &oa);
      run_case(&cs[c], dt, false, 10, pb, &ob);
      for (int i = 0; i < 3; i++) {
        /* same rounding steps: identical bits today; never more than 1 ulp apart */
        if (!bits_equal(pa[i], pb[i]))
          fprintf(stderr, "  note: %s %s param %d: fused vs reference %.2f ulp\n", cs[c].name, ct_dtype_name(dt), i,
                  ulps(pa[i], pb[i]));
        CHECK(ulps(pa[i], pb[i]) <= 1.0);
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
          ct_tensor *sa = ct_optim_state(oa, pa[i], keys[k]), *sb = ct_optim_state(ob, pb[i], keys[k]);
          CHECK((sa == NULL) == (sb == NULL));
          if (sa && sb) CHECK(ulps(sa, sb) <= 1.0);
        }
      }
      /* the frozen parameter got no state (Adagrad makes its state in __init__, like PyTorch) */
      if (cs[c].kind != CT_OPTIM_ADAGRAD)
        CHECK(ct_optim_state(oa, pa[2], "step") == NULL && ct_optim_state(oa, pa[2], "exp_avg") == NULL &&
            ct_optim_state(oa, pa[2], "momentum_buffer") == NULL);
      ct_optim_free(oa);
      ct_optim_free(ob);
      for (int i = 0; i < 3; i++) ct_release(pa[i]), ct_release(pb[i]);
    }
}

TEST(optim_frozen_param_untouched) {
  ocase cs[32];
  int n = n_cases(cs);
  for (int c = 0; c < n; c++)
    for (int f = 0; f < 2; f++) {
      int64_t sh[1] = {2};
      ct_tensor *ref = mkt(1, sh, CT_FLOAT32, 3, false);
      ct_tensor *pa[3] = {0};
      ct_optim *oa = NULL;
      run_case(&cs[c], CT_FLOAT32, f, 5, pa, &oa);
      CHECK(bits_equal(pa[2], ref));
      CHECK(ct_grad(pa[2]) == NULL);
      if (cs[c].kind != CT_OPTIM_ADAGRAD) /* Adagrad makes its state in __init__, like PyTorch */
        CHECK(ct_optim_state(oa, pa[2], "step") == NULL);
      ct_dict *sd = ct_dict_new();
      CHECK_OK(ct_optim_state_dict(oa, sd));
      if (cs[c].kind != CT_OPTIM_ADAGRAD) {
        CHECK(ct_dict_get(sd, "state.2.step") == NULL && ct_dict_get(sd, "state.2.exp_avg") == NULL);
        CHECK(ct_dict_get(sd, "state.2.momentum_buffer") == NULL);
      }
      ct_dict_free(sd);
      ct_optim_free(oa);
      for (int i = 0; i < 3; i++) ct_release(pa[i]);
      ct_release(ref);
    }
}

/* state_dict at step k, load into a fresh optimizer over copies, continue: bit-identical */
TEST(optim_state_dict_resume_bit_exact) {
  ocase cs[32];
  int n = n_cases(cs);
  for (int c = 0; c < n; c++)
    for (int f = 0; f < 2; f++)
      for (int d = 0; d < 2; d++) {
        ct_dtype dt = d ? CT_FLOAT64 : CT_FLOAT32;
        ct_tensor *pa[3] = {0};
        ct_optim *oa = NULL;
        run_case(&cs[c], dt, f, 4, pa, &oa);
        /* snapshot params + optimizer */
        ct_tensor *pb[3];
        for (int i = 0; i < 3; i++) {
          pb[i] = ct_clone(pa[i]);
          ct_detach_(pb[i]);
          ct_requires_grad_(pb[i], true);
        }
        ct_dict *sd = ct_dict_new();
        CHECK_OK(ct_optim_state_dict(oa, sd));
        ct_optim_options o2 = cs[c].o;
        o2.lr = 123; /* overwritten by the loaded param_groups */
        ct_optim *ob = ct_optim_new(cs[c].kind, 3, pb, &o2);
        ct_optim_set_fused(ob, f);
        CHECK_OK(ct_optim_load_state_dict(ob, sd));
        CHECK(ct_optim_get_lr(ob, 0) == cs[c].o.lr);
        /* the loaded state is a copy: continuing oa must not change sd or ob */
        for (int s = 4; s < 10; s++) {
          set_grad(pa[0], 10 + s), set_grad(pa[1], 40 + s);
          set_grad(pb[0], 10 + s), set_grad(pb[1], 40 + s);
          CHECK_OK(ct_optim_step(oa));
          CHECK_OK(ct_optim_step(ob));
        }
        for (int i = 0; i < 3; i++) CHECK(bits_equal(pa[i], pb[i]));
        ct_dict *sa = ct_dict_new(), *sb = ct_dict_new();
        CHECK_OK(ct_optim_state_dict(oa, sa));
        CHECK_OK(ct_optim_state_dict(ob, sb));
        CHECK(ct_dict_len(sa) == ct_dict_len(sb));
        for (int64_t e = 0; e < ct_dict_len(sa); e++)
          CHECK(bits_equal(ct_dict_tensor(sa, e), ct_dict_get(sb, ct_dict_name(sa, e))));
        ct_dict_free(sa);
        ct_dict_free(sb);
        ct_dict_free(sd);
        ct_optim_free(oa);
        ct_optim_free(ob);
        for (int i = 0; i < 3; i++) ct_release(pa[i]), ct_release(pb[i]);
      }
}

TEST(optim_state_dict_format) {
  int64_t sh[1] = {3};
  ct_tensor *a = mkt(1, sh, CT_FLOAT32, 1, true), *b = mkt(1, sh, CT_FLOAT64, 2, true);
  ct_tensor *ps[2] = {a, b};
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAM);
  o.amsgrad = true;
  ct_optim *opt = ct_optim_new(CT_OPTIM_ADAM, 1, ps, &o);
  o.lr = 0.5;
  CHECK_OK(ct_optim_add_param_group(opt, 1, ps + 1, &o));
  set_grad(a, 5);
  set_grad(b, 6);
  CHECK_OK(ct_optim_step(opt));
  CHECK_OK(ct_optim_step(opt));
  ct_dict *sd = ct_dict_new();
  CHECK_OK(ct_optim_state_dict(opt, sd));
  CHECK(!strcmp(ct_dict_get_meta(sd, "optimizer"), "Adam"));
  ct_tensor *st = ct_dict_get(sd, "state.1.step");
  CHECK(st && ct_tensor_dtype(st) == CT_FLOAT32 && ct_ndim(st) == 0 && tt_at(st, 0) == 2.0);
  CHECK(ct_dict_get(sd, "state.0.exp_avg") && ct_tensor_dtype(ct_dict_get(sd, "state.1.exp_avg_sq")) == CT_FLOAT64);
  CHECK(ct_dict_get(sd, "state.1.max_exp_avg_sq") != NULL);
  CHECK(tt_at(ct_dict_get(sd, "param_groups.1.lr"), 0) == 0.5);
  ct_tensor *betas = ct_dict_get(sd, "param_groups.0.betas");
  CHECK(betas && ct_numel(betas) == 2 && tt_at(betas, 0) == 0.9 && tt_at(betas, 1) == 0.999);
  CHECK(ct_tensor_dtype(ct_dict_get(sd, "param_groups.0.amsgrad")) == CT_BOOL);
  ct_tensor *ids = ct_dict_get(sd, "param_groups.1.params");
  CHECK(ids && ct_tensor_dtype(ids) == CT_INT64 && tt_at(ids, 0) == 1.0);
  /* snapshot, not the live state */
  ct_tensor *ea = ct_dict_get(sd, "state.0.exp_avg");
  double before = tt_at(ea, 0);
  CHECK_OK(ct_optim_step(opt));
  CHECK(tt_at(ea, 0) == before);
  /* RMSprop's step is an int */
  ct_optim *r = ct_optim_new(CT_OPTIM_RMSPROP, 1, ps, NULL);
  CHECK_OK(ct_optim_step(r));
  ct_dict *rd = ct_dict_new();
  CHECK_OK(ct_optim_state_dict_prefixed(r, rd, "optimizer."));
  CHECK(ct_tensor_dtype(ct_dict_get(rd, "optimizer.state.0.step")) == CT_INT64);
  CHECK(!strcmp(ct_dict_get_meta(rd, "optimizer.optimizer"), "RMSprop"));
  /* wrong kind, wrong group count, wrong shapes refused; nothing changed */
  CHECK_ERR(ct_optim_load_state_dict_prefixed(opt, rd, "optimizer."), "RMSprop");
  CHECK_ERR(ct_optim_load_state_dict(r, sd), "Adam");
  ct_dict_set_meta(sd, "optimizer", "RMSprop");
  CHECK_ERR(ct_optim_load_state_dict(r, sd), "loaded state dict has a different number of parameter groups");
  ct_optim *r2 = ct_optim_new(CT_OPTIM_RMSPROP, 2, ps, NULL);
  CHECK_ERR(ct_optim_load_state_dict_prefixed(r2, rd, "optimizer."),
            "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
  int64_t sh2[1] = {4};
  ct_tensor *c4 = mkt(1, sh2, CT_FLOAT32, 3, true);
  ct_optim *r3 = ct_optim_new(CT_OPTIM_RMSPROP, 1, &c4, NULL);
  CHECK_ERR(ct_optim_load_state_dict_prefixed(r3, rd, "optimizer."), "has shape [3] but its parameter has shape [4]");
  CHECK(ct_optim_state(r3, c4, "square_avg") == NULL);
  ct_dict_free(rd);
  ct_dict_free(sd);
  ct_optim_free(opt);
  ct_optim_free(r);
  ct_optim_free(r2);
  ct_optim_free(r3);
  ct_release(a);
  ct_release(b);
  ct_release(c4);
}

TEST(optim_weight_written_between_steps_is_used) {
  for (int f = 0; f < 2; f++) {
    int64_t sh[1] = {4};
    ct_tensor *p = mkt(1, sh, CT_FLOAT32, 1, true), *q = mkt(1, sh, CT_FLOAT32, 1, true);
    ct_optim *oa = ct_optim_adam(1, &p, 0.1), *ob = ct_optim_adam(1, &q, 0.1);
    ct_optim_set_fused(oa, f);
    ct_optim_set_fused(ob, f);
    set_grad(p, 3), set_grad(q, 3);
    CHECK_OK(ct_optim_step(oa));
    CHECK_OK(ct_optim_step(ob));
    /* write into p from outside: the next step starts from the new value */
    ct_tensor *w = ct_full(1, sh, ct_sf(7.0), ct_opts_dtype(CT_FLOAT32));
    bool prev = ct_set_grad_enabled(false);
    CHECK_OK(ct_copy_(p, w));
    CHECK_OK(ct_copy_(q, w));
    ct_set_grad_enabled(prev);
    set_grad(p, 4), set_grad(q, 4);
    CHECK_OK(ct_optim_step(oa));
    CHECK(fabs(tt_at(p, 0) - 7.0) < 0.2 && fabs(tt_at(p, 0) - 7.0) > 0.0);
    /* same as an optimizer whose param was written the same way */
    CHECK_OK(ct_optim_step(ob));
    CHECK(bits_equal(p, q));
    ct_release(w);
    ct_optim_free(oa);
    ct_optim_free(ob);
    ct_release(p);
    ct_release(q);
  }
}

TEST(optim_param_groups) {
  int64_t sh[1] = {3};
  ct_tensor *a = mkt(1, sh, CT_FLOAT64, 1, true), *b = mkt(1, sh, CT_FLOAT64, 2, true);
  ct_tensor *a0 = ct_clone(a), *b0 = ct_clone(b);
  ct_optim *opt = ct_optim_sgd(1, &a, 0.1, 0, 0);
  CHECK(ct_optim_num_groups(opt) == 1);
  ct_optim_options o = ct_optim_get_defaults(opt);
  o.lr = 0.01;
  CHECK_OK(ct_optim_add_param_group(opt, 1, &b, &o));
  CHECK(ct_optim_num_groups(opt) == 2 && ct_optim_get_lr(opt, 1) == 0.01 && ct_optim_group_param(opt, 1, 0) == b);
  set_grad(a, 3), set_grad(b, 4);
  CHECK_OK(ct_optim_step(opt));
  /* p - lr * g per group */
  ct_tensor *ga = ct_grad(a), *gb = ct_grad(b);
  for (int i = 0; i < 3; i++) {
    CHECK(tt_at(a, i) == tt_at(a0, i) + -0.1 * tt_at(ga, i));
    CHECK(tt_at(b, i) == tt_at(b0, i) + -0.01 * tt_at(gb, i));
  }
  CHECK_ERR(ct_optim_add_param_group(opt, 1, &a, NULL), "some parameters appear in more than one parameter group");
  ct_tensor *c0 = mkt(1, sh, CT_FLOAT64, 5, true);
  ct_tensor *dup[2] = {c0, c0};
  CHECK_ERR(ct_optim_add_param_group(opt, 2, dup, NULL), "duplicate parameters");
  CHECK_OK(ct_optim_set_lr(opt, 0, 0.5));
  CHECK(ct_optim_get_lr(opt, 0) == 0.5);
  double v;
  CHECK_ERR(ct_optim_group_get(opt, 0, "initial_lr", &v), "has no 'initial_lr'");
  CHECK_ERR(ct_optim_group_get(opt, 5, "lr", &v), "out of range");
  CHECK_ERR(ct_optim_group_set(opt, 0, "momentum", -1), "Invalid momentum value: -1.0");
  CHECK_OK(ct_optim_group_get(opt, 0, "momentum", &v));
  CHECK(v == 0);
  CHECK_ERR(ct_optim_group_set(opt, 0, "betas", 1), "not a parameter group entry");
  ct_optim_free(opt);
  ct_release(a), ct_release(b), ct_release(a0), ct_release(b0), ct_release(c0);
}

TEST(optim_zero_grad) {
  int64_t sh[1] = {3};
  ct_tensor *a = mkt(1, sh, CT_FLOAT32, 1, true);
  ct_optim *opt = ct_optim_sgd(1, &a, 0.1, 0.9, 0);
  set_grad(a, 2);
  ct_tensor *g = ct_grad(a);
  CHECK_OK(ct_optim_zero_grad(opt, false));
  CHECK(ct_grad(a) == g && tt_at(g, 0) == 0 && tt_at(g, 2) == 0);
  CHECK_OK(ct_optim_zero_grad(opt, true));
  CHECK(ct_grad(a) == NULL);
  CHECK_OK(ct_optim_zero_grad(opt, true));
  /* a real backward, then step */
  ct_tensor *s = ct_sum(a);
  CHECK_OK(ct_backward(s, NULL, false, false));
  CHECK(ct_grad(a) && tt_at(ct_grad(a), 1) == 1.0);
  double before = tt_at(a, 1);
  CHECK_OK(ct_optim_step(opt));
  CHECK(fabs(tt_at(a, 1) - (before - 0.1)) < 1e-6);
  ct_release(s);
  ct_optim_free(opt);
  ct_release(a);
}

TEST(optim_errors) {
  int64_t sh[1] = {3};
  ct_tensor *a = mkt(1, sh, CT_FLOAT32, 1, true);
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_SGD);
  CHECK(ct_optim_new(CT_OPTIM_SGD, 1, &a, NULL) == NULL);
  CHECK(strstr(ct_last_error(), "required optimization parameter lr"));
  o.lr = -1;
  CHECK(ct_optim_new(CT_OPTIM_SGD, 1, &a, &o) == NULL && strstr(ct_last_error(), "Invalid learning rate: -1.0"));
  CHECK(ct_last_status() == CT_ERR_VALUE);
  o.lr = 0.1, o.nesterov = true;
  CHECK(ct_optim_new(CT_OPTIM_SGD, 1, &a, &o) == NULL &&
        strstr(ct_last_error(), "Nesterov momentum requires a momentum and zero dampening"));
  CHECK(ct_optim_new(CT_OPTIM_ADAM, 0, &a, NULL) == NULL && strstr(ct_last_error(), "optimizer got an empty parameter list"));
  ct_optim_options ad = ct_optim_defaults(CT_OPTIM_ADAM);
  ad.beta2 = 1.0;
  CHECK(ct_optim_new(CT_OPTIM_ADAM, 1, &a, &ad) == NULL && strstr(ct_last_error(), "Invalid beta parameter at index 1: 1.0"));
  ad = ct_optim_defaults(CT_OPTIM_ADAMW);
  ad.eps = -1e-5;
  CHECK(ct_optim_new(CT_OPTIM_ADAMW, 1, &a, &ad) == NULL && strstr(ct_last_error(), "Invalid epsilon value: -1e-05"));
  ct_optim_options rm = ct_optim_defaults(CT_OPTIM_RMSPROP);
  rm.alpha = -0.5;
  CHECK(ct_optim_new(CT_OPTIM_RMSPROP, 1, &a, &rm) == NULL && strstr(ct_last_error(), "Invalid alpha value: -0.5"));
  ct_optim_options ag = ct_optim_defaults(CT_OPTIM_ADAGRAD);
  ag.initial_accumulator_value = -1;
  CHECK(ct_optim_new(CT_OPTIM_ADAGRAD, 1, &a, &ag) == NULL &&
        strstr(ct_last_error(), "Invalid initial_accumulator_value value: -1.0"));
  ct_tensor *nl = ct_mul_scalar(a, ct_sf(2.0));
  CHECK(ct_optim_adam(1, &nl, 0.1) == NULL && strstr(ct_last_error(), "can't optimize a non-leaf Tensor"));
  ct_tensor *nul = NULL;
  CHECK(ct_optim_adam(1, &nul, 0.1) == NULL && ct_last_status() == CT_ERR_TYPE);
  int64_t ish[1] = {2};
  ct_tensor *it = ct_zeros(1, ish, ct_opts_dtype(CT_INT64));
  CHECK(ct_optim_adam(1, &it, 0.1) == NULL && ct_last_status() == CT_ERR_TYPE);
  CHECK_ERR(ct_optim_step(NULL), "NULL");
  ct_optim_free(NULL);
  ct_release(nl), ct_release(it), ct_release(a);
}

/* other dtypes and layouts go through the reference path */
TEST(optim_non_contiguous_and_half) {
  int64_t sh[2] = {3, 2};
  for (int h = 0; h < 2; h++) {
    ct_tensor *base = mkt(2, sh, h ? CT_BFLOAT16 : CT_FLOAT32, 1, false);
    ct_tensor *pt = ct_transpose(base, 0, 1); /* non-contiguous leaf */
    ct_tensor *p = ct_detach(pt);
    ct_requires_grad_(p, true);
    ct_tensor *q = ct_clone(p);
    ct_detach_(q);
    ct_requires_grad_(q, true);
    ct_optim *oa = ct_optim_adam(1, &p, 0.1), *ob = ct_optim_adam(1, &q, 0.1);
    ct_optim_set_fused(ob, false);
    for (int s = 0; s < 3; s++) {
      set_grad(p, 5 + s);
      set_grad(q, 5 + s);
      CHECK_OK(ct_optim_step(oa));
      CHECK_OK(ct_optim_step(ob));
    }
    CHECK(tt_allclose(p, q, 0, 0));
    CHECK(!ct_is_contiguous(p));
    ct_optim_free(oa), ct_optim_free(ob);
    ct_release(base), ct_release(pt), ct_release(p), ct_release(q);
  }
}

/* PyTorch 1.13 has no Half addcmul on the CPU: Adam fails the same way; SGD works */
TEST(optim_half) {
  int64_t sh[1] = {3};
  ct_tensor *p = mkt(1, sh, CT_FLOAT16, 1, true);
  ct_optim *a = ct_optim_adam(1, &p, 0.1), *s = ct_optim_sgd(1, &p, 0.1, 0.9, 0);
  set_grad(p, 2);
  double before = tt_at(p, 0);
  CHECK_ERR(ct_optim_step(a), "\"addcmul_cpu_out\" not implemented for 'Half'");
  CHECK(tt_at(p, 0) == before);
  CHECK_OK(ct_optim_step(s));
  CHECK(tt_at(p, 0) != before);
  ct_optim_free(a), ct_optim_free(s);
  ct_release(p);
}

TEST(optim_memory_flat_1000_steps) {
  int64_t s0[2] = {64, 32}, s1[1] = {32};
  ct_tensor *w = mkt(2, s0, CT_FLOAT32, 1, true), *b = mkt(1, s1, CT_FLOAT32, 2, true);
  ct_tensor *ps[2] = {w, b};
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAMW);
  o.amsgrad = true;
  ct_optim *opt = ct_optim_new(CT_OPTIM_ADAMW, 2, ps, &o);
  set_grad(w, 3), set_grad(b, 4);
  CHECK_OK(ct_optim_step(opt)); /* state made */
  int64_t live = ct_live_tensors();
  int64_t bytes = ct_memory_get_stats(ct_cpu()).allocated_bytes;
  for (int s = 0; s < 1000; s++) CHECK_OK(ct_optim_step(opt));
  CHECK(ct_live_tensors() == live);
  CHECK(ct_memory_get_stats(ct_cpu()).allocated_bytes == bytes);
  /* the reference path releases its temporaries too */
  ct_optim_set_fused(opt, false);
  for (int s = 0; s < 100; s++) CHECK_OK(ct_optim_step(opt));
  CHECK(ct_live_tensors() == live);
  CHECK(ct_memory_get_stats(ct_cpu()).allocated_bytes == bytes);
  ct_optim_free(opt);
  ct_release(w), ct_release(b);
}

/* ---- schedulers ------------------------------------------------------------------- */
static double lam(int64_t e, int g, void *u) { return 1.0 / (double)(e + 1) * (g + 1) * *(double *)u; }

TEST(sched_basic_and_errors) {
  int64_t sh[1] = {2};
  ct_tensor *a = mkt(1, sh, CT_FLOAT32, 1, true);
  ct_optim *opt = ct_optim_sgd(1, &a, 1.0, 0.9, 0);
  ct_sched *s = ct_sched_step_lr(opt, 2, 0.5);
  double lr;
  CHECK(ct_sched_get_last_lr(s, &lr, 1) == 1 && lr == 1.0);
  double want[] = {1.0, 0.5, 0.5, 0.25, 0.25};
  for (int i = 0; i < 5; i++) {
    CHECK_OK(ct_sched_step(s));
    ct_sched_get_last_lr(s, &lr, 1);
    CHECK(lr == want[i] && ct_optim_get_lr(opt, 0) == want[i]);
  }
  /* state save/load into a fresh scheduler */
  ct_dict *d = ct_dict_new();
  CHECK_OK(ct_sched_state_dict(s, d));
  CHECK(tt_at(ct_dict_get(d, "last_epoch"), 0) == 5 && !strcmp(ct_dict_get_meta(d, "scheduler"), "StepLR"));
  ct_sched *s2 = ct_sched_step_lr(opt, 7, 0.9);
  CHECK_OK(ct_sched_load_state_dict(s2, d));
  CHECK(ct_sched_last_epoch(s2) == 5);
  ct_sched *e = ct_sched_exponential_lr(opt, 0.5);
  CHECK_ERR(ct_sched_load_state_dict(e, d), "StepLR");
  ct_sched_free(e);
  ct_sched_free(s);
  ct_sched_free(s2);
  ct_dict_free(d);
  CHECK(ct_sched_linear_lr(opt, 1.5, 1.0, 5) == NULL && strstr(ct_last_error(), "Starting multiplicative factor expected to be between 0 and 1."));
  ct_onecycle_options oc = ct_onecycle_defaults(0.1, 0);
  CHECK(ct_sched_onecycle_lr(opt, &oc) == NULL && strstr(ct_last_error(), "You must define either total_steps OR (epochs AND steps_per_epoch)"));
  oc = ct_onecycle_defaults(0.1, 4);
  oc.anneal_strategy = "exp";
  CHECK(ct_sched_onecycle_lr(opt, &oc) == NULL && strstr(ct_last_error(), "anneal_strategy must by one of 'cos' or 'linear', instead got exp"));
  oc.anneal_strategy = "linear";
  ct_sched *one = ct_sched_onecycle_lr(opt, &oc);
  for (int i = 0; i < 4; i++) CHECK_OK(ct_sched_step(one));
  CHECK_ERR(ct_sched_step(one), "Tried to step 6 times. The specified number of total steps is 4");
  ct_sched_free(one);
  ct_optim *ag = ct_optim_new(CT_OPTIM_ADAGRAD, 1, &a, NULL);
  oc = ct_onecycle_defaults(0.1, 4);
  CHECK(ct_sched_onecycle_lr(ag, &oc) == NULL && strstr(ct_last_error(), "optimizer must support momentum with `cycle_momentum` option enabled"));
  double k = 2.0;
  ct_sched *l = ct_sched_lambda_lr(ag, lam, &k);
  CHECK_OK(ct_sched_step(l));
  CHECK(ct_optim_get_lr(ag, 0) == 1e-2 * (1.0 / 2.0 * 1 * 2.0));
  ct_sched_free(l);
  /* SequentialLR checks */
  ct_sched *w1 = ct_sched_linear_lr(opt, 0.1, 1.0, 3), *w2 = ct_sched_exponential_lr(ag, 0.9);
  ct_sched *ch[2] = {w1, w2};
  int64_t ms[1] = {3};
  CHECK(ct_sched_sequential_lr(opt, 2, ch, ms) == NULL && strstr(ct_last_error(), "at index 1 to be different than the optimizer passed in"));
  CHECK(ct_sched_chained(2, ch) == NULL && strstr(ct_last_error(), "at index 0 and 1 to be different"));
  ct_sched_free(w1), ct_sched_free(w2);
  ct_optim_free(opt);
  ct_optim_free(ag);
  ct_release(a);
}

TEST(sched_sequential_state_roundtrip) {
  int64_t sh[1] = {2};
  ct_tensor *a = mkt(1, sh, CT_FLOAT32, 1, true);
  ct_optim *oa = ct_optim_sgd(1, &a, 0.1, 0.9, 0), *ob = ct_optim_sgd(1, &a, 0.1, 0.9, 0);
  ct_sched *ca[2] = {ct_sched_linear_lr(oa, 0.1, 1.0, 5), ct_sched_cosine_annealing_lr(oa, 20, 0.001)};
  ct_sched *cb[2] = {ct_sched_linear_lr(ob, 0.1, 1.0, 5), ct_sched_cosine_annealing_lr(ob, 20, 0.001)};
  int64_t ms[1] = {5};
  ct_sched *sa = ct_sched_sequential_lr(oa, 2, ca, ms), *sb = ct_sched_sequential_lr(ob, 2, cb, ms);
  CHECK(sa && sb);
  for (int i = 0; i < 8; i++) CHECK_OK(ct_sched_step(sa));
  ct_dict *da = ct_dict_new(), *db = ct_dict_new();
  CHECK_OK(ct_optim_state_dict(oa, da));
  CHECK_OK(ct_sched_state_dict_prefixed(sa, da, "sched."));
  CHECK(ct_dict_get(da, "sched._schedulers.1.T_max") != NULL);
  CHECK_OK(ct_optim_load_state_dict(ob, da));
  CHECK_OK(ct_sched_load_state_dict_prefixed(sb, da, "sched."));
  for (int i = 0; i < 20; i++) {
    CHECK_OK(ct_sched_step(sa));
    CHECK_OK(ct_sched_step(sb));
    double x, y;
    ct_sched_get_last_lr(sa, &x, 1), ct_sched_get_last_lr(sb, &y, 1);
    CHECK(x == y);
  }
  ct_dict_free(da), ct_dict_free(db);
  ct_sched_free(sa), ct_sched_free(sb);
  ct_optim_free(oa), ct_optim_free(ob);
  ct_release(a);
}

/* ---- clipping ---------------------------------------------------------------------- */
TEST(clip_grad) {
  int64_t sh[1] = {2};
  double g0[2] = {3, 4}, g1[2] = {0, 12};
  ct_tensor *a = mkt(1, sh, CT_FLOAT64, 1, true), *b = mkt(1, sh, CT_FLOAT64, 2, true), *c = mkt(1, sh, CT_FLOAT64, 3, true);
  ct_tensor *ga = tt_from(g0, 1, sh, CT_FLOAT64), *gb = tt_from(g1, 1, sh, CT_FLOAT64);
  ct_set_grad(a, ga), ct_set_grad(b, gb);
  ct_tensor *ps[3] = {a, b, c};
  ct_tensor *n = ct_clip_grad_norm_(3, ps, 6.5, 2.0, false);
  CHECK(n && tt_at(n, 0) == 13.0 && ct_ndim(n) == 0);
  double coef = 1.0 / (13.0 + 1e-6) * 6.5;
  CHECK(tt_at(ct_grad(a), 0) == 3 * coef && tt_at(ct_grad(b), 1) == 12 * coef);
  ct_release(n);
  n = ct_clip_grad_norm_(3, ps, 100, INFINITY, false); /* coef clamped to 1 */
  CHECK(fabs(tt_at(n, 0) - 12 * coef) < 1e-15 && tt_at(ct_grad(b), 1) == 12 * coef);
  ct_release(n);
  n = ct_clip_grad_norm_(1, &c, 1, 2, false); /* no grads: tensor(0.) */
  CHECK(n && tt_at(n, 0) == 0 && ct_tensor_dtype(n) == CT_FLOAT32);
  ct_release(n);
  double bad[2] = {INFINITY, 1};
  ct_tensor *gi = tt_from(bad, 1, sh, CT_FLOAT64);
  ct_set_grad(c, gi);
  CHECK_ERR_PTR(ct_clip_grad_norm_(3, ps, 1, 2, true), "The total norm of order 2.0 for gradients from `parameters` is non-finite");
  CHECK_OK(ct_clip_grad_value_(3, ps, 0.5));
  CHECK(tt_at(ct_grad(c), 0) == 0.5 && tt_at(ct_grad(c), 1) == 0.5 && tt_at(ct_grad(a), 0) <= 0.5);
  CHECK_ERR(ct_clip_grad_value_(1, NULL, 1), "NULL");
  ct_release(a), ct_release(b), ct_release(c), ct_release(ga), ct_release(gb), ct_release(gi);
}
