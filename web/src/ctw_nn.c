/* JavaScript glue for modules (torch.nn layers), optimizers, schedulers, dicts,
 * safetensors and the GPT model. Conventions in ctw.h / ctw_core.c. */
#include "ctw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- dicts (state_dicts, safetensors contents) ---- */
API ct_dict *ctw_dict_new(void) { return ct_dict_new(); }
API void ctw_dict_free(ct_dict *d) { ct_dict_free(d); }
API int ctw_dict_set(ct_dict *d, ct_tensor *t) { return ct_dict_set(d, ctw_S[0], t); }
API double ctw_dict_len(ct_dict *d) { return (double)ct_dict_len(d); }
API const char *ctw_dict_name(ct_dict *d, double i) { return ct_dict_name(d, (int64_t)i); }
/* borrowed -> a new reference for JS */
API ct_tensor *ctw_dict_tensor(ct_dict *d, double i) { return ct_retain(ct_dict_tensor(d, (int64_t)i)); }
API int ctw_dict_set_meta(ct_dict *d) { return ct_dict_set_meta(d, ctw_S[0], ctw_S[1]); }
API double ctw_dict_meta_len(ct_dict *d) { return (double)ct_dict_meta_len(d); }
API const char *ctw_dict_meta_key(ct_dict *d, double i) { return ct_dict_meta_key(d, (int64_t)i); }
API const char *ctw_dict_get_meta(ct_dict *d) { return ct_dict_get_meta(d, ctw_S[0]); }

/* ---- safetensors ---- */
/* bytes -> ctw_P[0] (malloc'ed, free with ctw_free), length -> ctw_A[0] */
API int ctw_safetensors_save(ct_dict *d) {
  void *buf = NULL;
  size_t len = 0;
  ct_status st = ct_safetensors_save_buffer(d, &buf, &len);
  ctw_P[0] = (ct_tensor *)buf;
  ctw_A[0] = (double)len;
  return st;
}
API ct_dict *ctw_safetensors_load(const void *buf, double len) {
  ct_dict *d = NULL;
  if (ct_safetensors_load_buffer(buf, (size_t)len, &d) != CT_OK) return NULL;
  return d;
}

/* ---- modules ---- */
API void ctw_module_free(ct_module *m) { ct_module_free(m); }
API ct_module *ctw_module_retain(ct_module *m) { return ct_module_retain(m); }
API const char *ctw_module_type_name(ct_module *m) { return ct_module_type_name(m); }
API ct_tensor *ctw_module_forward(ct_module *m, ct_tensor *x) { return ct_module_forward(m, x); }
/* inputs ctw_P[0..n) (may be NULL); outputs back in ctw_P; returns their count or -1 */
API int ctw_module_forward_n(ct_module *m, int n) {
  ct_tensor *in[16];
  if (n < 0 || n > 16) return ctw_fail(CT_ERR_VALUE, "too many inputs"), -1;
  memcpy(in, ctw_P, sizeof(ct_tensor *) * (size_t)n);
  return ct_module_forward_n(m, n, (const ct_tensor *const *)in, 16, ctw_P);
}
API int ctw_module_train(ct_module *m, int on) { return ct_module_train(m, on != 0); }
API int ctw_module_is_training(ct_module *m) { return ct_module_is_training(m); }
API ct_dict *ctw_module_named_parameters(ct_module *m) {
  ct_dict *d = ct_dict_new();
  if (d && ct_module_named_parameters(m, d) != CT_OK) {
    ct_dict_free(d);
    return NULL;
  }
  return d;
}
API ct_dict *ctw_module_named_buffers(ct_module *m) {
  ct_dict *d = ct_dict_new();
  if (d && ct_module_named_buffers(m, d) != CT_OK) {
    ct_dict_free(d);
    return NULL;
  }
  return d;
}
API ct_dict *ctw_module_state_dict(ct_module *m) {
  ct_dict *d = ct_dict_new();
  if (d && ct_module_state_dict(m, d) != CT_OK) {
    ct_dict_free(d);
    return NULL;
  }
  return d;
}
API int ctw_module_load_state_dict(ct_module *m, ct_dict *d, int strict) { return ct_module_load_state_dict(m, d, strict != 0); }
API int ctw_module_zero_grad(ct_module *m, int set_to_none) { return ct_module_zero_grad(m, set_to_none != 0); }
API int ctw_module_requires_grad_(ct_module *m, int on) { return ct_module_requires_grad_(m, on != 0); }
API double ctw_module_num_parameters(ct_module *m, int only_trainable) {
  return (double)ct_module_num_parameters(m, only_trainable != 0);
}
API int ctw_module_to_dtype(ct_module *m, int dt) { return ct_module_to_dtype(m, (ct_dtype)dt); }
/* borrowed -> new references */
API ct_tensor *ctw_module_param(ct_module *m) { return ct_retain(ct_module_param(m, ctw_S[0])); }
API ct_tensor *ctw_module_buffer(ct_module *m) { return ct_retain(ct_module_buffer(m, ctw_S[0])); }

/* layers */
API ct_module *ctw_linear_new(double in, double out, int bias) { return ct_linear_new((int64_t)in, (int64_t)out, bias != 0); }
/* conv options: stride [0..2), padding [2..4), dilation [4..6), output_padding [6..8), groups [8],
 * bias [9]; padding "same"/"valid" in ctw_S[0], padding_mode in ctw_S[1] */
static ct_conv_opts conv_opts(void) {
  ct_conv_opts o = ct_conv_defaults();
  for (int i = 0; i < 2; i++) {
    o.stride[i] = (int64_t)ctw_A[0 + i];
    o.padding[i] = (int64_t)ctw_A[2 + i];
    o.dilation[i] = (int64_t)ctw_A[4 + i];
    o.output_padding[i] = (int64_t)ctw_A[6 + i];
  }
  o.groups = (int64_t)ctw_A[8];
  o.bias = ctw_A[9] != 0;
  o.padding_str = ctw_s(0);
  o.padding_mode = ctw_s(1);
  return o;
}
API ct_module *ctw_conv1d_new(double in, double out, double k) {
  ct_conv_opts o = conv_opts();
  return ct_conv1d_new((int64_t)in, (int64_t)out, (int64_t)k, &o);
}
API ct_module *ctw_conv2d_new(double in, double out, double kh, double kw) {
  ct_conv_opts o = conv_opts();
  return ct_conv2d_new((int64_t)in, (int64_t)out, (int64_t)kh, (int64_t)kw, &o);
}
API ct_module *ctw_conv_transpose2d_new(double in, double out, double kh, double kw) {
  ct_conv_opts o = conv_opts();
  return ct_conv_transpose2d_new((int64_t)in, (int64_t)out, (int64_t)kh, (int64_t)kw, &o);
}
API ct_module *ctw_batch_norm_new(int dims, double n, double eps, double momentum, int affine, int track) {
  return dims == 1 ? ct_batch_norm1d_new((int64_t)n, eps, momentum, affine != 0, track != 0)
                   : ct_batch_norm2d_new((int64_t)n, eps, momentum, affine != 0, track != 0);
}
API ct_module *ctw_layer_norm_new(int n, double eps, int affine) {
  int64_t s[CT_MAX_DIMS];
  if (n < 1 || n > CT_MAX_DIMS) return (ct_module *)ctw_fail_null(CT_ERR_VALUE, "bad normalized_shape");
  ctw_ints(0, n, s);
  return ct_layer_norm_new(n, s, eps, affine != 0);
}
API ct_module *ctw_group_norm_new(double groups, double channels, double eps, int affine) {
  return ct_group_norm_new((int64_t)groups, (int64_t)channels, eps, affine != 0);
}
API ct_module *ctw_embedding_new(double n, double d, int has_pad, double pad) {
  int64_t p = (int64_t)pad;
  return ct_embedding_new((int64_t)n, (int64_t)d, has_pad ? &p : NULL);
}
API ct_module *ctw_multihead_attention_new(double e, double h, double dropout, int bias, int batch_first) {
  return ct_multihead_attention_new((int64_t)e, (int64_t)h, dropout, bias != 0, batch_first != 0);
}
/* attention: query, key, value, key_padding_mask, attn_mask in ctw_P[0..5); output -> return,
 * weights -> ctw_P[1] */
API ct_tensor *ctw_multihead_attention_forward(ct_module *m, int need_weights, int average) {
  ct_tensor *q = ctw_P[0], *k = ctw_P[1], *v = ctw_P[2], *kpm = ctw_P[3], *am = ctw_P[4];
  ct_tensor *w = NULL;
  ct_tensor *y = ct_multihead_attention_forward(m, q, k, v, kpm, need_weights != 0, am, average != 0, &w);
  ctw_P[1] = w;
  return y;
}

/* ---- optimizers ---- */
/* options <-> ctw_A: lr, momentum, dampening, nesterov, beta1, beta2, amsgrad, eps, weight_decay,
 * maximize, alpha, centered, lr_decay, initial_accumulator_value */
static void opts_out(const ct_optim_options *o) {
  double v[14] = {o->lr, o->momentum, o->dampening, o->nesterov, o->beta1, o->beta2, o->amsgrad,
                  o->eps, o->weight_decay, o->maximize, o->alpha, o->centered, o->lr_decay,
                  o->initial_accumulator_value};
  memcpy(ctw_A, v, sizeof v);
}
static ct_optim_options opts_in(void) {
  ct_optim_options o;
  memset(&o, 0, sizeof o);
  o.lr = ctw_A[0];
  o.momentum = ctw_A[1];
  o.dampening = ctw_A[2];
  o.nesterov = ctw_A[3] != 0;
  o.beta1 = ctw_A[4];
  o.beta2 = ctw_A[5];
  o.amsgrad = ctw_A[6] != 0;
  o.eps = ctw_A[7];
  o.weight_decay = ctw_A[8];
  o.maximize = ctw_A[9] != 0;
  o.alpha = ctw_A[10];
  o.centered = ctw_A[11] != 0;
  o.lr_decay = ctw_A[12];
  o.initial_accumulator_value = ctw_A[13];
  return o;
}
API void ctw_optim_defaults(int kind) {
  ct_optim_options o = ct_optim_defaults((ct_optim_kind)kind);
  opts_out(&o);
}
/* parameters in ctw_P[0..n), options in ctw_A */
API ct_optim *ctw_optim_new(int kind, int n) {
  ct_optim_options o = opts_in();
  return ct_optim_new((ct_optim_kind)kind, n, ctw_P, &o);
}
API int ctw_optim_add_param_group(ct_optim *opt, int n) {
  ct_optim_options o = opts_in();
  return ct_optim_add_param_group(opt, n, ctw_P, &o);
}
API void ctw_optim_free(ct_optim *opt) { ct_optim_free(opt); }
API int ctw_optim_step(ct_optim *opt) { return ct_optim_step(opt); }
API int ctw_optim_zero_grad(ct_optim *opt, int set_to_none) { return ct_optim_zero_grad(opt, set_to_none != 0); }
API int ctw_optim_num_groups(ct_optim *opt) { return ct_optim_num_groups(opt); }
API int ctw_optim_get_group(ct_optim *opt, int g) {
  ct_optim_options o;
  ct_status st = ct_optim_get_group(opt, g, &o);
  if (st == CT_OK) opts_out(&o);
  return st;
}
API int ctw_optim_set_group(ct_optim *opt, int g) {
  ct_optim_options o = opts_in();
  return ct_optim_set_group(opt, g, &o);
}
API double ctw_optim_get_lr(ct_optim *opt, int g) { return ct_optim_get_lr(opt, g); }
API int ctw_optim_set_lr(ct_optim *opt, int g, double lr) { return ct_optim_set_lr(opt, g, lr); }
API ct_dict *ctw_optim_state_dict(ct_optim *opt) {
  ct_dict *d = ct_dict_new();
  if (d && ct_optim_state_dict(opt, d) != CT_OK) {
    ct_dict_free(d);
    return NULL;
  }
  return d;
}
API int ctw_optim_load_state_dict(ct_optim *opt, ct_dict *d) { return ct_optim_load_state_dict(opt, d); }
API ct_tensor *ctw_optim_state(ct_optim *opt, ct_tensor *p) { return ct_retain(ct_optim_state(opt, p, ctw_S[0])); }
API ct_tensor *ctw_clip_grad_norm_(int n, double max_norm, double norm_type, int error_if_nonfinite) {
  return ct_clip_grad_norm_(n, ctw_P, max_norm, norm_type, error_if_nonfinite != 0);
}
API int ctw_clip_grad_value_(int n, double v) { return ct_clip_grad_value_(n, ctw_P, v); }

/* ---- schedulers ---- */
API ct_sched *ctw_sched_step_lr(ct_optim *o, double step, double gamma) { return ct_sched_step_lr(o, (int64_t)step, gamma); }
API ct_sched *ctw_sched_multistep_lr(ct_optim *o, int n, double gamma) {
  int64_t m[CTW_NARGS];
  if (n < 0 || n > CTW_NARGS) return NULL;
  ctw_ints(0, n, m);
  return ct_sched_multistep_lr(o, n, m, gamma);
}
API ct_sched *ctw_sched_exponential_lr(ct_optim *o, double gamma) { return ct_sched_exponential_lr(o, gamma); }
API ct_sched *ctw_sched_cosine_annealing_lr(ct_optim *o, double T, double eta_min) {
  return ct_sched_cosine_annealing_lr(o, (int64_t)T, eta_min);
}
API ct_sched *ctw_sched_linear_lr(ct_optim *o, double s, double e, double total) {
  return ct_sched_linear_lr(o, s, e, (int64_t)total);
}
/* OneCycleLR: max_lr, total_steps, pct_start, anneal ("cos"/"linear" in ctw_S[0]), cycle_momentum,
 * base_momentum, max_momentum, div_factor, final_div_factor, three_phase in ctw_A[0..9) */
API ct_sched *ctw_sched_onecycle_lr(ct_optim *o) {
  ct_onecycle_options c = ct_onecycle_defaults(ctw_A[0], (int64_t)ctw_A[1]);
  c.pct_start = ctw_A[2];
  c.anneal_strategy = ctw_s(0);
  c.cycle_momentum = ctw_A[3] != 0;
  c.base_momentum = ctw_A[4];
  c.max_momentum = ctw_A[5];
  c.div_factor = ctw_A[6];
  c.final_div_factor = ctw_A[7];
  c.three_phase = ctw_A[8] != 0;
  return ct_sched_onecycle_lr(o, &c);
}
API void ctw_sched_free(ct_sched *s) { ct_sched_free(s); }
API int ctw_sched_step(ct_sched *s) { return ct_sched_step(s); }
/* last lrs -> ctw_A; returns the group count */
API int ctw_sched_get_last_lr(ct_sched *s) { return ct_sched_get_last_lr(s, ctw_A, CTW_NARGS); }
API double ctw_sched_last_epoch(ct_sched *s) { return (double)ct_sched_last_epoch(s); }

/* ---- GPT (include/ctorch/models.h) ---- */
/* config: vocab_size, n_positions, n_embd, n_layer, n_head, dropout, layer_norm_epsilon in ctw_A */
static ct_gpt_config gpt_cfg(void) {
  ct_gpt_config c;
  c.vocab_size = (int64_t)ctw_A[0];
  c.n_positions = (int64_t)ctw_A[1];
  c.n_embd = (int64_t)ctw_A[2];
  c.n_layer = (int64_t)ctw_A[3];
  c.n_head = (int64_t)ctw_A[4];
  c.dropout = ctw_A[5];
  c.layer_norm_epsilon = ctw_A[6];
  return c;
}
API ct_gpt *ctw_gpt_new(ct_generator *g) {
  ct_gpt_config c = gpt_cfg();
  return ct_gpt_new(&c, g);
}
API void ctw_gpt_free(ct_gpt *m) { ct_gpt_free(m); }
API const ct_dict *ctw_gpt_parameters(ct_gpt *m) { return ct_gpt_parameters(m); }
API ct_dict *ctw_gpt_state_dict(ct_gpt *m) { return ct_gpt_state_dict(m); }
API int ctw_gpt_load_state_dict(ct_gpt *m, ct_dict *d) { return ct_gpt_load_state_dict(m, d); }
API double ctw_gpt_num_params(ct_gpt *m) { return (double)ct_gpt_num_params(m); }
API int ctw_gpt_set_dropout(ct_gpt *m, double p) { return ct_gpt_set_dropout(m, p); }
/* logits -> ctw_P[0] (when want_logits), loss -> ctw_P[1] (when targets) */
API int ctw_gpt_forward(ct_gpt *m, ct_tensor *idx, ct_tensor *targets, int training, int want_logits, ct_generator *g) {
  ctw_P[0] = ctw_P[1] = NULL;
  return ct_gpt_forward(m, idx, targets, training != 0, g, want_logits ? &ctw_P[0] : NULL, targets ? &ctw_P[1] : NULL);
}
API ct_gpt_cache *ctw_gpt_cache_new(ct_gpt *m, double batch, double max_len) {
  return ct_gpt_cache_new(m, (int64_t)batch, (int64_t)max_len);
}
API void ctw_gpt_cache_free(ct_gpt_cache *c) { ct_gpt_cache_free(c); }
API void ctw_gpt_cache_reset(ct_gpt_cache *c) { ct_gpt_cache_reset(c); }
API double ctw_gpt_cache_len(ct_gpt_cache *c) { return (double)ct_gpt_cache_len(c); }
API ct_tensor *ctw_gpt_forward_cached(ct_gpt *m, ct_gpt_cache *c, ct_tensor *idx, int last_only) {
  return ct_gpt_forward_cached(m, c, idx, last_only != 0);
}
/* sampling: logits (V floats), temperature, top_k, top_p, u; probs may be NULL */
API double ctw_gpt_pick_token(const float *logits, double V, double temperature, double top_k, double top_p, double u,
                              float *probs) {
  ct_gpt_sampling s = {temperature, (int64_t)top_k, top_p};
  return (double)ct_gpt_pick_token(logits, (int64_t)V, &s, u, probs);
}
