/* Public autograd accessors: requires_grad, .grad, detach, hooks. */
#include "autograd.h"
#include <stdlib.h>

static ct_hook_list *hook_list_of(ct_tensor *t);
static ct_status hook_append(ct_hook_list *l, int id, ct_tensor_hook_fn fn, void *user);

bool ct_requires_grad(const ct_tensor *t) { return t && ct_tensor_requires_grad(t); }
bool ct_is_leaf(const ct_tensor *t) { return t && t->grad_fn == NULL; }
ct_tensor *ct_grad(const ct_tensor *t) { return t ? t->grad : NULL; }
const char *ct_grad_fn_name(const ct_tensor *t) { return t && t->grad_fn ? ct_node_name(t->grad_fn) : NULL; }

ct_status ct_requires_grad_(ct_tensor *t, bool rg) {
  CT_TRY(ct_check_tensor(t, "requires_grad_"));
  if (t->grad_fn) {
    if (!rg)
      return CT_ERR(CT_ERR_RUNTIME, "you can only change requires_grad flags of leaf variables. If you want to use a "
                    "computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
    return CT_OK;
  }
  if (rg && !ct_dtype_is_floating(t->dtype))
    return CT_ERR(CT_ERR_RUNTIME, "only Tensors of floating point and complex dtype can require gradients");
  if (rg && t->is_inference && !ct_is_inference_mode())
    return CT_ERR(CT_ERR_RUNTIME, "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
  t->requires_grad = rg;
  return CT_OK;
}

ct_status ct_set_grad(ct_tensor *t, ct_tensor *g) {
  CT_TRY(ct_check_tensor(t, "grad"));
  if (g) {
    bool same = g->ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = g->shape[d] == t->shape[d];
    if (!same) return CT_ERR(CT_ERR_RUNTIME, "assigned grad has data of a different size");
    if (g->dtype != t->dtype) return CT_ERR(CT_ERR_RUNTIME, "assigned grad has data of a different type");
    if (g->storage->device.type != t->storage->device.type)
      return CT_ERR(CT_ERR_RUNTIME, "assigned grad has data located on a different device");
  }
  ct_tensor *old = t->grad;
  t->grad = ct_hold(g);
  ct_unhold(old);
  return CT_OK;
}

ct_status ct_retain_grad(ct_tensor *t) {
  CT_TRY(ct_check_tensor(t, "retain_grad"));
  if (!ct_tensor_requires_grad(t))
    return CT_ERR(CT_ERR_RUNTIME, "can't retain_grad on Tensor that has requires_grad=False");
  if (!t->grad_fn) return CT_OK; /* leaves always keep .grad */
  if (!t->retains_grad) {
    /* an entry of the hook list, so it runs in order with the hooks, as in PyTorch 1.13 */
    ct_hook_list *l = hook_list_of(t);
    if (!l) return ct_last_status();
    bool has = false;
    for (int k = 0; k < l->n; k++) has |= l->h[k].fn == NULL;
    if (!has && hook_append(l, -1, NULL, NULL)) return ct_last_status();
    t->retains_grad = true;
  }
  t->grad_fn->watch[t->output_nr] = t;
  return CT_OK;
}

ct_tensor *ct_detach(const ct_tensor *t) {
  if (ct_check_tensor(t, "detach")) return NULL;
  /* shares storage (and so the version counter) but, as in PyTorch, is not a view: in-place
   * ops on it are allowed even when t is a leaf that requires grad */
  ct_tensor *d = ct_tensor_over(t->storage, t->ndim, t->shape, t->stride, t->offset, t->dtype);
  if (d) d->is_inference = t->is_inference;
  if (d) ct_vcell_share(d, t);
  return d;
}

ct_status ct_detach_(ct_tensor *t) {
  CT_TRY(ct_check_tensor(t, "detach_"));
  if (t->base && t->grad_fn)
    return CT_ERR(CT_ERR_RUNTIME, "Can't detach views in-place. Use detach() instead.");
  if (t->grad_fn) {
    ct_node *n = t->grad_fn;
    if (n->watch[t->output_nr] == t) n->watch[t->output_nr] = NULL;
    if (t->hooks && n->hooks[t->output_nr] == t->hooks) {
      ct_hooks_free(n->hooks[t->output_nr]);
      n->hooks[t->output_nr] = NULL;
    }
    t->grad_fn = NULL;
    ct_node_release(n);
  }
  t->requires_grad = false;
  return CT_OK;
}

/* t's hook list, made on first use; a non-leaf's is shared with its grad_fn output (so it
 * outlives the handle), and a second handle of the same output adopts the existing list. */
static ct_hook_list *hook_list_of(ct_tensor *t) {
  if (!t->hooks) {
    ct_hook_list *on_node = t->grad_fn ? t->grad_fn->hooks[t->output_nr] : NULL;
    if (on_node) {
      __atomic_add_fetch(&on_node->refs, 1, __ATOMIC_RELAXED);
      t->hooks = on_node;
    } else {
      t->hooks = ct_xcalloc(1, sizeof *t->hooks);
      if (!t->hooks) return NULL;
      t->hooks->refs = 1;
    }
  }
  ct_hooks_attach(t);
  return t->hooks;
}

static ct_status hook_append(ct_hook_list *l, int id, ct_tensor_hook_fn fn, void *user) {
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 4;
    void *p = realloc(l->h, (size_t)cap * sizeof *l->h);
    if (!p) return CT_ERR(CT_ERR_OOM, "out of memory");
    l->h = p;
    l->cap = cap;
  }
  l->h[l->n].id = id;
  l->h[l->n].fn = fn;
  l->h[l->n].user = user;
  l->n++;
  return CT_OK;
}

int ct_register_hook(ct_tensor *t, ct_tensor_hook_fn fn, void *user) {
  if (ct_check_tensor(t, "register_hook")) return -1;
  if (!fn) {
    ct_set_error(CT_ERR_VALUE, "register_hook: hook is NULL");
    return -1;
  }
  if (!ct_tensor_requires_grad(t)) {
    ct_set_error(CT_ERR_RUNTIME, "cannot register a hook on a tensor that doesn't require gradient");
    return -1;
  }
  ct_hook_list *l = hook_list_of(t);
  if (!l) return -1;
  int id = l->next_id++;
  if (hook_append(l, id, fn, user)) return -1;
  return id;
}

ct_status ct_remove_hook(ct_tensor *t, int id) {
  CT_TRY(ct_check_tensor(t, "remove_hook"));
  ct_hook_list *l = t->hooks;
  for (int k = 0; l && k < l->n; k++)
    if (id >= 0 && l->h[k].id == id) {
      memmove(&l->h[k], &l->h[k + 1], (size_t)(l->n - k - 1) * sizeof *l->h);
      l->n--;
      return CT_OK;
    }
  return CT_ERR(CT_ERR_VALUE, "remove_hook: no hook with handle %d", id);
}
