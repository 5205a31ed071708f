/* LoRA for Linear and Conv2d (the method of peft's lora.Linear / lora.Conv2d):
 * y = base(x) + lora_B(lora_A(dropout(x))) * alpha / r, base weight and bias frozen,
 * lora_B starting at zero; merge / unmerge fold the update into the base weight. */
#include "module_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  bool conv;
  ct_conv_cfg cc; /* the base convolution (conv only) */
  int64_t in, out, r;
  double alpha, scaling, dropout;
  bool has_bias, merged;
} lora_impl;

static bool is_lora(const ct_module *m);

static ct_tensor *lora_forward(ct_module *m, const ct_tensor *x) {
  lora_impl *L = m->user;
  if (ct_check_tensor(x, L->conv ? "LoraConv2d" : "LoraLinear")) return NULL;
  ct_tensor *W = ct_mod_p(m, 0), *b = L->has_bias ? ct_mod_p(m, 1) : NULL;
  if (L->merged) {
    if (m->training && L->dropout > 0) {
      ct_set_error(CT_ERR_RUNTIME, "LoRA: this layer is merged and in training mode with lora_dropout=%g: the merged "
                                   "weight cannot apply dropout to the LoRA path; unmerge it or call eval()", L->dropout);
      return NULL;
    }
    return L->conv ? ct_conv_apply(&L->cc, x, W, b) : ct_linear(x, W, b);
  }
  ct_tensor *base = L->conv ? ct_conv_apply(&L->cc, x, W, b) : ct_linear(x, W, b);
  if (!base) return NULL;
  ct_tensor *xd = (m->training && L->dropout > 0) ? ct_dropout(x, L->dropout, true, NULL) : NULL;
  if (m->training && L->dropout > 0 && !xd) {
    ct_release(base);
    return NULL;
  }
  ct_tensor *a = ct_module_forward(ct_module_child(m, "lora_A"), xd ? xd : x);
  ct_tensor *bb = a ? ct_module_forward(ct_module_child(m, "lora_B"), a) : NULL;
  ct_tensor *s = bb ? ct_mul_scalar(bb, ct_sf(L->scaling)) : NULL;
  ct_tensor *y = s ? ct_add(base, s) : NULL;
  ct_mod_release_n(5, base, xd, a, bb, s);
  return y;
}

static ct_status lora_pre_load(ct_module *m) {
  const lora_impl *L = m->user;
  if (L->merged)
    return CT_ERR(CT_ERR_RUNTIME, "LoRA: cannot load a state_dict into a merged LoRA layer (its weight holds the "
                                  "merged update); call ct_lora_unmerge first");
  return CT_OK;
}

static const ct_module_vtable lora_vt = {lora_forward, NULL, free, NULL};
static const ct_mod_hooks lora_hooks = {lora_pre_load, NULL};
static bool is_lora(const ct_module *m) { return m && m->vt == &lora_vt; }

static ct_module *wrap(ct_module *base, int64_t r, double alpha, double dropout, bool conv) {
  const char *what = conv ? "lora_conv2d" : "lora_linear";
  ct_module *m = NULL;
  if (!base) {
    ct_set_error(CT_ERR_VALUE, "%s: expected a module, got NULL", what);
    return NULL;
  }
  const ct_conv_cfg *cc = ct_conv_cfg_of(base);
  if (!conv && !ct_module_is_linear(base)) {
    ct_set_error(CT_ERR_TYPE, "%s: expected a Linear module, got %s", what, ct_module_type_name(base));
    goto fail;
  }
  if (conv && (!cc || cc->nd != 2 || cc->transposed)) {
    ct_set_error(CT_ERR_TYPE, "%s: expected a Conv2d module, got %s", what, ct_module_type_name(base));
    goto fail;
  }
  if (conv && cc->groups != 1) {
    ct_set_error(CT_ERR_VALUE, "LoRA: grouped convolutions (groups=%lld) are not supported: lora_A would mix channels "
                               "across groups and the merged weight could not hold the update", (long long)cc->groups);
    goto fail;
  }
  if (r <= 0) {
    ct_set_error(CT_ERR_VALUE, "`r` should be a positive integer value but the value passed is %lld", (long long)r);
    goto fail;
  }
  if (!(dropout >= 0 && dropout <= 1)) {
    ct_set_error(CT_ERR_VALUE, "dropout probability has to be between 0 and 1, but got %g", dropout);
    goto fail;
  }
  if (!isfinite(alpha)) {
    ct_set_error(CT_ERR_VALUE, "LoRA: lora_alpha must be finite");
    goto fail;
  }
  ct_tensor *W = ct_module_param(base, "weight"), *B = ct_module_param(base, "bias");
  if (!W) {
    ct_set_error(CT_ERR_VALUE, "%s: the base layer has no weight", what);
    goto fail;
  }
  lora_impl *L = ct_xcalloc(1, sizeof *L);
  if (!L) goto fail;
  L->conv = conv;
  if (conv) L->cc = *cc;
  L->in = conv ? cc->in_ch : ct_size(W, 1);
  L->out = conv ? cc->out_ch : ct_size(W, 0);
  L->r = r;
  L->alpha = alpha;
  L->scaling = alpha / (double)r;
  L->dropout = dropout;
  L->has_bias = B != NULL;
  m = ct_module_new(conv ? "LoraConv2d" : "LoraLinear", &lora_vt, L);
  if (!m) {
    free(L);
    goto fail;
  }
  m->hooks = &lora_hooks;
  m->training = base->training;
  if (ct_module_register_parameter(m, "weight", W)) goto fail;
  if (B && ct_module_register_parameter(m, "bias", B)) goto fail;
  /* peft's order of random draws: lora_A and lora_B built (each with its default init), then
   * lora_A re-drawn with kaiming_uniform_(a=sqrt(5)) and lora_B zeroed */
  ct_module *A, *Bm;
  if (conv) {
    ct_conv_opts oa = ct_conv_defaults();
    oa.stride[0] = cc->stride[0], oa.stride[1] = cc->stride[1];
    oa.padding[0] = cc->padding[0], oa.padding[1] = cc->padding[1];
    oa.dilation[0] = cc->dilation[0], oa.dilation[1] = cc->dilation[1];
    oa.padding_str = cc->pad_str == 1 ? "same" : cc->pad_str == 2 ? "valid" : NULL;
    static const char *const modes[4] = {"zeros", "reflect", "replicate", "circular"};
    oa.padding_mode = modes[cc->mode];
    oa.bias = false;
    ct_conv_opts ob = ct_conv_defaults();
    ob.bias = false;
    A = ct_conv2d_new(cc->in_ch, r, cc->k[0], cc->k[1], &oa);
    if (!A || ct_module_register_module(m, "lora_A", A)) goto fail;
    Bm = ct_conv2d_new(r, cc->out_ch, 1, 1, &ob);
    if (!Bm || ct_module_register_module(m, "lora_B", Bm)) goto fail;
  } else {
    A = ct_linear_new(L->in, r, false);
    if (!A || ct_module_register_module(m, "lora_A", A)) goto fail;
    Bm = ct_linear_new(r, L->out, false);
    if (!Bm || ct_module_register_module(m, "lora_B", Bm)) goto fail;
  }
  if (ct_init_kaiming_uniform_a(ct_module_param(m, "lora_A.weight"), sqrt(5.0))) goto fail;
  {
    bool prev = ct_set_grad_enabled(false);
    ct_status st = ct_zero_(ct_module_param(m, "lora_B.weight"));
    ct_set_grad_enabled(prev);
    if (st) goto fail;
  }
  /* the base is frozen */
  if (ct_requires_grad_(W, false) || (B && ct_requires_grad_(B, false))) goto fail;
  ct_module_train(m, m->training);
  ct_module_free(base);
  return m;
fail:
  ct_module_free(m);
  ct_module_free(base);
  return NULL;
}

ct_module *ct_lora_linear_new(ct_module *base, int64_t r, double alpha, double dropout) {
  return wrap(base, r, alpha, dropout, false);
}
ct_module *ct_lora_conv2d_new(ct_module *base, int64_t r, double alpha, double dropout) {
  return wrap(base, r, alpha, dropout, true);
}

/* (B @ A) * scaling in the base weight's shape, without autograd. */
static ct_tensor *delta_weight(ct_module *m) {
  lora_impl *L = m->user;
  ct_tensor *A = ct_module_param(m, "lora_A.weight"), *B = ct_module_param(m, "lora_B.weight");
  ct_tensor *W = ct_mod_p(m, 0);
  int64_t sa[2] = {L->r, ct_numel(A) / L->r}, sb[2] = {L->out, L->r};
  ct_tensor *a2 = ct_reshape(A, 2, sa), *b2 = a2 ? ct_reshape(B, 2, sb) : NULL;
  ct_tensor *p = b2 ? ct_mm(b2, a2) : NULL;
  ct_tensor *s = p ? ct_mul_scalar(p, ct_sf(L->scaling)) : NULL;
  ct_tensor *d = s ? ct_reshape(s, ct_ndim(W), ct_shape(W)) : NULL;
  ct_mod_release_n(4, a2, b2, p, s);
  return d;
}

typedef struct {
  ct_module **m;
  int n, cap;
} lora_list;

static ct_status find_loras(ct_module *m, lora_list *l, int depth) {
  if (depth > 1000) return CT_ERR(CT_ERR_RUNTIME, "module tree deeper than 1000 levels");
  if (is_lora(m)) {
    for (int i = 0; i < l->n; i++)
      if (l->m[i] == m) return CT_OK;
    if (l->n == l->cap) {
      int nc = l->cap ? l->cap * 2 : 8;
      ct_module **p = realloc(l->m, (size_t)nc * sizeof *p);
      if (!p) return CT_ERR(CT_ERR_OOM, "out of memory");
      l->m = p;
      l->cap = nc;
    }
    l->m[l->n++] = m;
    return CT_OK;
  }
  for (int i = 0; i < m->n_children; i++) CT_TRY(find_loras(m->children[i].m, l, depth + 1));
  return CT_OK;
}

static ct_status merge_all(ct_module *m, bool merge) {
  if (!m) return CT_ERR(CT_ERR_VALUE, "lora_%s: expected a module, got NULL", merge ? "merge" : "unmerge");
  lora_list l = {0};
  ct_status st = find_loras(m, &l, 0);
  if (!st && l.n == 0) st = CT_ERR(CT_ERR_VALUE, "lora_%s: %s holds no LoRA layer", merge ? "merge" : "unmerge", m->type_name);
  /* check every layer first, so a refusal changes nothing */
  for (int i = 0; !st && i < l.n; i++) {
    lora_impl *L = l.m[i]->user;
    if (merge && L->merged) st = CT_ERR(CT_ERR_RUNTIME, "LoRA: this layer is already merged (merging twice would add the update twice)");
    else if (!merge && !L->merged) st = CT_ERR(CT_ERR_RUNTIME, "LoRA: this layer is not merged; nothing to unmerge");
    else if (merge && l.m[i]->training && L->dropout > 0)
      st = CT_ERR(CT_ERR_RUNTIME, "LoRA: cannot merge in training mode with lora_dropout=%g: the merged layer could not "
                                  "apply dropout to the LoRA path; call eval() first", L->dropout);
  }
  bool prev = ct_set_grad_enabled(false);
  for (int i = 0; !st && i < l.n; i++) {
    lora_impl *L = l.m[i]->user;
    ct_tensor *d = delta_weight(l.m[i]);
    if (!d) {
      st = ct_last_status();
      break;
    }
    ct_tensor *W = ct_mod_p(l.m[i], 0);
    st = merge ? ct_add_(W, d) : ct_sub_(W, d);
    ct_release(d);
    if (!st) L->merged = merge;
  }
  ct_set_grad_enabled(prev);
  free(l.m);
  return st;
}

ct_status ct_lora_merge(ct_module *m) { return merge_all(m, true); }
ct_status ct_lora_unmerge(ct_module *m) { return merge_all(m, false); }
bool ct_lora_is_merged(const ct_module *m) { return is_lora(m) && ((const lora_impl *)m->user)->merged; }

/* ---- injection ---- */
static bool name_matches(const char *path, int n, const char *const *targets) {
  size_t lp = strlen(path);
  for (int i = 0; i < n; i++) {
    const char *t = targets[i];
    if (!t || !*t) continue;
    size_t lt = strlen(t);
    if (!strcmp(path, t)) return true;
    if (lp > lt && path[lp - lt - 1] == '.' && !strcmp(path + lp - lt, t)) return true;
  }
  return false;
}

static bool wrappable(const ct_module *m) {
  const ct_conv_cfg *cc = ct_conv_cfg_of(m);
  return ct_module_is_linear(m) || (cc && cc->nd == 2 && !cc->transposed);
}

static ct_status inject(ct_module *m, const char *prefix, int n, const char *const *targets, int64_t r, double alpha,
                        double dropout, int *count, int depth) {
  if (depth > 1000) return CT_ERR(CT_ERR_RUNTIME, "module tree deeper than 1000 levels");
  if (is_lora(m)) return CT_OK; /* never wrap inside a LoRA layer */
  for (int i = 0; i < m->n_children; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s%s", prefix, m->children[i].name);
    ct_module *c = m->children[i].m;
    if (wrappable(c) && name_matches(path, n, targets)) {
      bool conv = !ct_module_is_linear(c);
      ct_module_retain(c); /* wrap consumes one reference; the slot keeps its own until replaced */
      ct_module *w = wrap(c, r, alpha, dropout, conv);
      if (!w) return ct_last_status();
      ct_module_free(m->children[i].m);
      m->children[i].m = w;
      (*count)++;
      continue;
    }
    char sub[1024];
    snprintf(sub, sizeof sub, "%s.", path);
    CT_TRY(inject(c, sub, n, targets, r, alpha, dropout, count, depth + 1));
  }
  return CT_OK;
}

static ct_status freeze_non_lora(ct_module *m, int depth) {
  if (depth > 1000) return CT_ERR(CT_ERR_RUNTIME, "module tree deeper than 1000 levels");
  if (is_lora(m)) {
    /* only the adapters train (peft's mark_only_lora_as_trainable with bias='none') */
    for (int i = 0; i < m->n_params; i++) CT_TRY(ct_requires_grad_(m->params[i].t, false));
    for (int i = 0; i < m->n_children; i++) CT_TRY(ct_module_requires_grad_(m->children[i].m, true));
    return CT_OK;
  }
  for (int i = 0; i < m->n_params; i++) CT_TRY(ct_requires_grad_(m->params[i].t, false));
  for (int i = 0; i < m->n_children; i++) CT_TRY(freeze_non_lora(m->children[i].m, depth + 1));
  return CT_OK;
}

ct_status ct_lora_inject(ct_module *root, int n_targets, const char *const *targets, int64_t r, double alpha,
                         double dropout, int *n_wrapped) {
  if (n_wrapped) *n_wrapped = 0;
  if (!root) return CT_ERR(CT_ERR_VALUE, "lora_inject: expected a module, got NULL");
  if (n_targets <= 0 || !targets) return CT_ERR(CT_ERR_VALUE, "lora_inject: no target module names given");
  int count = 0;
  CT_TRY(inject(root, "", n_targets, targets, r, alpha, dropout, &count, 0));
  if (count == 0)
    return CT_ERR(CT_ERR_VALUE, "Target modules %s not found in the base model. Please check the target modules and "
                                "try again.", targets[0] ? targets[0] : "");
  CT_TRY(freeze_non_lora(root, 0));
  if (n_wrapped) *n_wrapped = count;
  return CT_OK;
}
