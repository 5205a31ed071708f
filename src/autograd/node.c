/* Graph nodes, saved tensors and recording. */
#include "autograd.h"
#include <stdio.h>
#include <stdlib.h>

static uint64_t next_seq = 1;
static _Thread_local uint32_t region_tag; /* src/backend/stream_region.c */
static _Thread_local ct_device region_dev;
void ct_autograd_set_region(uint32_t tag, ct_device dev) {
  region_tag = tag;
  region_dev = dev;
}

ct_node *ct_node_new(int op, int n_in, int n_out) {
  ct_node *n = ct_xcalloc(1, sizeof *n);
  if (!n) return NULL;
  n->refcount = 1;
  n->op = op;
  n->n_in = n_in;
  n->n_out = n_out;
  n->seq = __atomic_fetch_add(&next_seq, 1, __ATOMIC_RELAXED);
  n->region = region_tag;
  n->region_dev = region_dev;
  for (int i = 0; i < CT_MAX_OP_IN; i++) n->saved_in[i].out_index = -1;
  for (int j = 0; j < CT_MAX_OP_OUT; j++) n->saved_out[j].out_index = j;
  if (op >= 0) {
    const ct_op_info *info = ct_op_info_of(op);
    n->name = info->grad_name;
    n->backward = info->backward;
  }
  return n;
}

void ct_node_retain(ct_node *n) {
  if (n) __atomic_add_fetch(&n->refcount, 1, __ATOMIC_RELAXED);
}

ct_weak *ct_weak_ref(ct_tensor *t) {
  if (!t->weak) {
    t->weak = ct_xcalloc(1, sizeof *t->weak);
    if (!t->weak) return NULL;
    t->weak->refs = 1; /* the handle's own */
    t->weak->t = t;
  }
  __atomic_add_fetch(&t->weak->refs, 1, __ATOMIC_RELAXED);
  return t->weak;
}

void ct_weak_release(ct_weak *w) {
  if (w && __atomic_sub_fetch(&w->refs, 1, __ATOMIC_ACQ_REL) == 0) free(w);
}

void ct_weak_clear(ct_tensor *t) {
  if (!t->weak) return;
  t->weak->t = NULL;
  ct_weak_release(t->weak);
  t->weak = NULL;
}

static void release_saved(ct_node *n) {
  for (int i = 0; i < CT_MAX_OP_IN; i++) {
    ct_unhold(n->saved_in[i].t);
    n->saved_in[i].t = NULL;
    ct_weak_release(n->saved_in[i].orig);
    n->saved_in[i].orig = NULL;
  }
  for (int j = 0; j < CT_MAX_OP_OUT; j++) {
    ct_unhold(n->saved_out[j].t);
    n->saved_out[j].t = NULL;
  }
}

/* Releasing a long chain recursively could overflow the stack: unlink with an explicit list. */
void ct_node_release(ct_node *n) {
  ct_node *stack_small[64];
  ct_node **stack = stack_small;
  int64_t sp = 0, cap = 64;
  if (!n) return;
  stack[sp++] = n;
  while (sp > 0) {
    ct_node *x = stack[--sp];
    if (__atomic_sub_fetch(&x->refcount, 1, __ATOMIC_ACQ_REL) != 0) continue;
    for (int i = 0; i < x->n_in; i++) {
      if (!x->next[i].fn) continue;
      if (sp == cap) {
        ct_node **bigger = malloc((size_t)cap * 2 * sizeof *bigger);
        if (!bigger) { /* cannot grow: release recursively instead */
          ct_node_release(x->next[i].fn);
          continue;
        }
        memcpy(bigger, stack, (size_t)sp * sizeof *bigger);
        if (stack != stack_small) free(stack);
        stack = bigger;
        cap *= 2;
      }
      stack[sp++] = x->next[i].fn;
    }
    release_saved(x);
    for (int j = 0; j < CT_MAX_OP_OUT; j++) {
      ct_release(x->gbuf[j]);
      ct_hooks_free(x->hooks[j]);
    }
    if (x->leaf) {
      if (x->leaf->grad_acc == x) x->leaf->grad_acc = NULL;
      ct_unhold(x->leaf);
    }
    if (x->extra_free) x->extra_free(x->extra);
    free(x);
  }
  if (stack != stack_small) free(stack);
}

const char *ct_node_name(const ct_node *n) { return n && n->name ? n->name : "UnknownBackward"; }

static ct_tensor *unpack(ct_node *n, ct_saved *s, const char *kind, int idx) {
  if (n->released || !s->t) {
    if (n->released)
      ct_set_error(CT_ERR_RUNTIME,
                   "Trying to backward through the graph a second time (or directly access saved tensors after they "
                   "have already been freed). Saved intermediate values of the graph are freed when you call "
                   ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                   "graph a second time or if you need to access saved tensors after calling backward.");
    else ct_set_error(CT_ERR_RUNTIME, "%s: saved %s %d was not recorded (op table save mask)", ct_node_name(n), kind, idx);
    return NULL;
  }
  if (*ct_vptr(s->t) != s->version) {
    /* PyTorch names the tensor by its own producer: a saved output is "output j" of this
     * node; a saved input is output output_nr (when saved) of its current grad_fn (an
     * in-place op since then gives it a new one; a view whose data changed gets a fresh
     * AsStridedBackward0); a leaf has no "which is" part. */
    const char *who = NULL;
    int nr = 0;
    if (s->out_index >= 0) {
      who = ct_node_name(n);
      nr = s->out_index;
    } else {
      ct_tensor *o = s->orig && s->orig->t ? s->orig->t : s->t; /* released: its history when saved */
      nr = s->leaf ? 0 : s->t->output_nr;
      if (o->base && ct_tensor_requires_grad(o)) who = "AsStridedBackward0";
      else if (o->grad_fn) who = ct_node_name(o->grad_fn);
      else if (!s->leaf) who = ct_node_name(n); /* detached in place since: PyTorch names the saving node */
    }
    char shp[128], which[160] = "";
    if (who) snprintf(which, sizeof which, ", which is output %d of %s,", nr, who);
    ct_set_error(CT_ERR_RUNTIME,
                 "one of the variables needed for gradient computation has been modified by an inplace operation: "
                 "[%s %s]%s is at version %llu; expected version %llu instead. Hint: enable "
                 "anomaly detection to find the operation that failed to compute its gradient, with "
                 "torch.autograd.set_detect_anomaly(True).",
                 ct_dtype_legacy_name(s->t->dtype), CT_SHAPE_STR(s->t, shp), which,
                 (unsigned long long)*ct_vptr(s->t), (unsigned long long)s->version);
    return NULL;
  }
  return s->t;
}

ct_tensor *ct_node_saved_in(ct_node *n, int i) { return unpack(n, &n->saved_in[i], "input", i); }
ct_tensor *ct_node_saved_out(ct_node *n, int j) { return unpack(n, &n->saved_out[j], "output", j); }

ct_edge ct_tensor_edge(ct_tensor *t) {
  ct_edge e = {NULL, 0};
  if (t->grad_fn) {
    e.fn = t->grad_fn;
    e.nr = t->output_nr;
    ct_node_retain(e.fn);
  } else if (t->requires_grad) {
    if (!t->grad_acc) {
      ct_node *acc = ct_node_new(-1, 0, 1);
      if (!acc) return e;
      acc->name = "AccumulateGrad";
      acc->region = 0; /* no region tag: it outlives the forward that made it while the graph is held */
      acc->leaf = ct_hold(t);
      /* the node holds the leaf; the leaf points back weakly */
      t->grad_acc = acc;
      acc->out_meta[0].ndim = t->ndim;
      memcpy(acc->out_meta[0].shape, t->shape, sizeof t->shape);
      acc->out_meta[0].dtype = t->dtype;
      acc->out_meta[0].device = t->storage->device;
      e.fn = acc;
      return e; /* the caller takes this first reference */
    }
    e.fn = t->grad_acc;
    ct_node_retain(e.fn);
  }
  return e;
}

void ct_set_history(ct_tensor *t, ct_node *n, int nr) {
  ct_node_retain(n);
  if (t->grad_fn) {
    ct_node *old = t->grad_fn;
    if (t->output_nr < CT_MAX_OP_OUT) {
      if (old->watch[t->output_nr] == t) old->watch[t->output_nr] = NULL;
      /* the hooks follow the tensor to its new history (PyTorch 1.13 moves them too) */
      if (t->hooks && old->hooks[t->output_nr] == t->hooks) {
        ct_hooks_free(old->hooks[t->output_nr]);
        old->hooks[t->output_nr] = NULL;
      }
    }
    ct_node_release(old);
  }
  t->grad_fn = n;
  t->output_nr = nr;
  if (t->hooks) ct_hooks_attach(t);
  if (t->retains_grad) n->watch[nr] = t;
}

void ct_hooks_attach(ct_tensor *t) {
  ct_node *n = t->grad_fn;
  ct_hook_list *l = t->hooks;
  if (!n || !l || t->output_nr >= CT_MAX_OP_OUT) return;
  ct_hook_list **slot = &n->hooks[t->output_nr];
  if (*slot == l) return;
  if (!*slot) {
    __atomic_add_fetch(&l->refs, 1, __ATOMIC_RELAXED);
    *slot = l;
    return;
  }
  /* the output already has hooks (another handle of the same tensor): one list for both */
  ct_hook_list *m = *slot;
  bool m_retains = false;
  for (int k = 0; k < m->n; k++) m_retains |= m->h[k].fn == NULL;
  for (int k = 0; k < l->n; k++) {
    if (!l->h[k].fn && m_retains) continue;
    if (m->n == m->cap) {
      int cap = m->cap ? m->cap * 2 : 4;
      void *p = realloc(m->h, (size_t)cap * sizeof *m->h);
      if (!p) break; /* out of memory: the remaining hooks are lost, never a crash */
      m->h = p;
      m->cap = cap;
    }
    m->h[m->n] = l->h[k];
    if (m->h[m->n].id >= 0) m->h[m->n].id = m->next_id++;
    m->n++;
  }
  __atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
  t->hooks = m;
  ct_hooks_free(l);
}

static void meta_of(ct_meta *m, const ct_tensor *t) {
  m->ndim = t->ndim;
  memcpy(m->shape, t->shape, sizeof t->shape);
  m->dtype = t->dtype;
  m->device = t->storage->device;
}

/* A handle over the same data keeping t's autograd identity, so in-place ops that
 * later rebase t do not change what this node saw. */
static ct_tensor *save_alias(ct_tensor *t, ct_weak **orig) {
  *orig = NULL;
  if (!t->grad_fn) return ct_hold(t); /* leaves keep their identity */
  ct_tensor *a = ct_tensor_over(t->storage, t->ndim, t->shape, t->stride, t->offset, t->dtype);
  if (!a) return NULL;
  ct_vcell_share(a, t);
  ct_scope_unregister(a);
  a->grad_fn = t->grad_fn;
  ct_node_retain(a->grad_fn);
  a->output_nr = t->output_nr;
  *orig = ct_weak_ref(t); /* out of memory: the message falls back to the history when saved */
  return a;
}

bool ct_grad_mode_recording(void) { return ct_is_grad_enabled() && !ct_is_inference_mode(); }

ct_node *ct_record_node(int op, int n_in, ct_tensor *const *in, int n_out, ct_tensor *const *out, const ct_attrs *a,
                        uint32_t save, ct_backward_fn bw, const char *name) {
  if (!ct_grad_mode_recording()) return NULL;
  bool any = false;
  for (int i = 0; i < n_in; i++)
    if (in[i] && ct_tensor_requires_grad(in[i])) any = true;
  if (!any) return NULL;
  bool any_float_out = false;
  for (int j = 0; j < n_out; j++)
    if (out[j] && ct_dtype_is_floating(out[j]->dtype)) any_float_out = true;
  if (!any_float_out) return NULL;
  ct_node *n = ct_node_new(op, n_in, n_out);
  if (!n) return NULL;
  if (bw) n->backward = bw;
  if (name) n->name = name;
  if (a) n->a = *a;
  for (int i = 0; i < n_in; i++) {
    if (!in[i]) continue;
    meta_of(&n->in_meta[i], in[i]);
    if (ct_tensor_requires_grad(in[i]) && ct_dtype_is_floating(in[i]->dtype)) n->next[i] = ct_tensor_edge(in[i]);
    if (save & CT_SAVE_IN(i)) {
      if (in[i]->is_inference) {
        ct_set_error(CT_ERR_RUNTIME, "Inference tensors cannot be saved for backward. To work around you can make a "
                                     "clone to get a normal tensor and use it in autograd.");
        ct_node_release(n);
        return NULL;
      }
      n->saved_in[i].t = save_alias(in[i], &n->saved_in[i].orig);
      n->saved_in[i].leaf = !in[i]->grad_fn;
      n->saved_in[i].version = *ct_vptr(in[i]);
    }
  }
  for (int j = 0; j < n_out; j++) {
    if (!out[j]) continue;
    meta_of(&n->out_meta[j], out[j]);
    if (save & CT_SAVE_OUT(j)) {
      ct_tensor *o = ct_tensor_over(out[j]->storage, out[j]->ndim, out[j]->shape, out[j]->stride, out[j]->offset,
                                    out[j]->dtype);
      if (o) ct_vcell_share(o, out[j]);
      if (o) ct_scope_unregister(o);
      n->saved_out[j].t = o;
      n->saved_out[j].version = *ct_vptr(out[j]);
    }
  }
  for (int j = 0; j < n_out; j++)
    if (out[j] && ct_dtype_is_floating(out[j]->dtype)) ct_set_history(out[j], n, j);
  ct_node_release(n); /* the outputs hold it */
  return n;
}

void ct_node_release_saved(ct_node *n) {
  release_saved(n);
  n->released = true;
}
