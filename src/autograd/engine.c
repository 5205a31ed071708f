/* The backward engine: dependency counts over the reachable graph, then nodes in
 * topological order (latest-created first among the ready ones, like PyTorch). */
#include "autograd.h"
#include "../backend/stream_region.h"
#include "../ops/layout.h"
#include <stdlib.h>

void ct_node_release_saved(ct_node *n);
/* per-node timing when profiling (src/core/op_profile.c) */
bool ct_op_profile_on(void);
void ct_op_profile_enter(int64_t mark[2]);
void ct_op_profile_leave(const int64_t mark[2], const char *name);

/* ---- grad mode ---- */
static _Thread_local int grad_disabled = 0;
static _Thread_local int inference = 0;
bool ct_is_grad_enabled(void) { return !grad_disabled; }
bool ct_set_grad_enabled(bool on) {
  bool prev = !grad_disabled;
  grad_disabled = !on;
  return prev;
}
bool ct_is_inference_mode(void) { return inference; }
bool ct_set_inference_mode(bool on) {
  bool prev = inference;
  inference = on;
  return prev;
}

/* ct_autograd_on_leaf_grad: called after each AccumulateGrad of a backward on this thread (src/optim's updates
 * overlapped with the backward) */
static __thread ct_leaf_grad_fn leaf_grad_fn;
static __thread void *leaf_grad_user;
void ct_autograd_on_leaf_grad(ct_leaf_grad_fn fn, void *user) {
  leaf_grad_fn = fn;
  leaf_grad_user = user;
}
/* the nodes of the backward running on this thread (ct_autograd_saved_pending) */
static __thread ct_node *const *run_nodes;
static __thread int64_t run_n;
bool ct_autograd_saved_pending(const ct_tensor *t) {
  for (int64_t k = 0; k < run_n; k++) {
    const ct_node *n = run_nodes[k];
    if (n->released) continue; /* ran (its saved tensors are freed right after) */
    for (int i = 0; i < CT_MAX_OP_IN; i++)
      if (n->saved_in[i].t && n->saved_in[i].t->storage == t->storage) return true;
    for (int j = 0; j < CT_MAX_OP_OUT; j++)
      if (n->saved_out[j].t && n->saved_out[j].t->storage == t->storage) return true;
  }
  return false;
}

/* ---- a max-heap of nodes by seq ---- */
typedef struct {
  ct_node **a;
  int64_t n, cap;
} heap;
static bool heap_push(heap *h, ct_node *x) {
  if (h->n == h->cap) {
    int64_t cap = h->cap ? h->cap * 2 : 64;
    ct_node **p = realloc(h->a, (size_t)cap * sizeof *p);
    if (!p) return false;
    h->a = p;
    h->cap = cap;
  }
  int64_t i = h->n++;
  h->a[i] = x;
  while (i > 0) {
    int64_t p = (i - 1) / 2;
    if (h->a[p]->seq >= h->a[i]->seq) break;
    ct_node *t = h->a[p];
    h->a[p] = h->a[i];
    h->a[i] = t;
    i = p;
  }
  return true;
}
static ct_node *heap_pop(heap *h) {
  ct_node *top = h->a[0];
  h->a[0] = h->a[--h->n];
  int64_t i = 0;
  for (;;) {
    int64_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && h->a[l]->seq > h->a[m]->seq) m = l;
    if (r < h->n && h->a[r]->seq > h->a[m]->seq) m = r;
    if (m == i) break;
    ct_node *t = h->a[m];
    h->a[m] = h->a[i];
    h->a[i] = t;
    i = m;
  }
  return top;
}

/* Adds g (a new reference, consumed) into *slot. */
static ct_status accumulate(ct_tensor **slot, ct_tensor *g) {
  if (!*slot) {
    *slot = g;
    return CT_OK;
  }
  ct_tensor *s = ct_own(ct_add(*slot, g));
  ct_release(g);
  if (!s) return ct_last_status();
  ct_release(*slot);
  *slot = s;
  return CT_OK;
}

/* grad -> hooks of t (consumes g). */
ct_tensor *ct_apply_hooks(ct_tensor *t, ct_tensor *g) {
  if (!t || !t->hooks) return g;
  for (int k = 0; k < t->hooks->n; k++) {
    if (!t->hooks->h[k].fn) continue; /* retain_grad: a leaf keeps its .grad anyway */
    ct_clear_error();
    ct_tensor *r = t->hooks->h[k].fn(g, t->hooks->h[k].user);
    if (r) {
      ct_release(g);
      g = r;
    } else if (ct_last_status() != CT_OK) {
      ct_release(g);
      return NULL;
    }
  }
  return g;
}

void ct_hooks_free(ct_hook_list *l) {
  if (!l || __atomic_sub_fetch(&l->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  free(l->h);
  free(l);
}

/* .grad accumulation of a leaf (or a retained non-leaf). */
static ct_status accumulate_into_grad(ct_tensor *t, ct_tensor *g, bool create_graph) {
  if (!t->grad) {
    ct_tensor *stored;
    if (create_graph) stored = ct_hold(g);
    else {
      bool prev = ct_set_grad_enabled(false);
      /* steal when nothing else can see the buffer, else copy (grads are often shared views) */
      if (g->refcount == 1 && g->storage->refcount == 1 && !g->grad_fn &&
          (ct_is_contiguous(g) || ct_dense_same_layout(g, t))) /* PyTorch's layout contract: t's strides */
        stored = ct_hold(g);
      else stored = ct_clone(g);
      ct_set_grad_enabled(prev);
      if (stored && stored->grad_fn) { ct_tensor *d = ct_detach(stored); ct_unhold(stored); stored = d; }
    }
    if (!stored) return ct_last_status();
    ct_own(stored);
    t->grad = stored;
    return CT_OK;
  }
  if (create_graph) {
    ct_tensor *s = ct_own(ct_add(t->grad, g));
    if (!s) return ct_last_status();
    ct_unhold(t->grad);
    t->grad = s;
    return CT_OK;
  }
  bool prev = ct_set_grad_enabled(false);
  ct_status st = ct_add_(t->grad, g);
  ct_set_grad_enabled(prev);
  return st;
}

typedef struct {
  ct_node *fn;
  int nr;
  ct_tensor **out;
} capture;

/* A backward region (stream_region.h): the run of consecutive nodes recorded in one forward region (the
 * AccumulateGrads popped among them included). The
 * gradients its nodes read are registered as read by it before each node runs (no reference is kept: the
 * AccumulateGrads still steal theirs, the backward formulas still see their gradients' counts). */
typedef struct {
  uint32_t tag; /* the run's tag (0: untagged nodes) */
  bool open;    /* the region forked */
  ct_device dev;
} region_run;
static void region_close(region_run *r) {
  if (r->open) ct_stream_region_leave(r->dev, 0, NULL);
  r->open = false;
}
/* called for each node popped, before it runs */
static void region_step(region_run *r, ct_node *x) {
  if (x->region != r->tag) {
    region_close(r);
    r->tag = x->region;
    if (r->tag) {
      r->dev = x->region_dev;
      r->open = ct_stream_region_enter(r->dev);
    }
  }
}

static ct_status check_grad_shape(ct_node *n, int i, ct_tensor *g) {
  const ct_meta *m = &n->in_meta[i];
  bool ok = g->ndim == m->ndim;
  for (int d = 0; ok && d < m->ndim; d++) ok = g->shape[d] == m->shape[d];
  if (ok) return CT_OK;
  char a[160], b[160];
  return CT_ERR(CT_ERR_RUNTIME, "Function %s returned an invalid gradient at index %d - got %s but expected shape compatible with %s",
                ct_node_name(n), i, CT_SHAPE_STR(g, a), ct_shape_str(m->ndim, m->shape, b, sizeof b));
}

static ct_status run_engine(int n_roots, ct_tensor *const *roots, ct_tensor *const *grads, bool retain_graph,
                            bool create_graph, int n_cap, capture *caps, bool accumulate_leaves) {
  static int64_t run_id_counter = 0;
  int64_t run_id = __atomic_add_fetch(&run_id_counter, 1, __ATOMIC_RELAXED);
  ct_status st = CT_OK;
  bool retained = false;
  /* collect reachable nodes and dependency counts */
  ct_node **all = NULL, **stack = NULL;
  int64_t n_all = 0, cap_all = 0, sp = 0, cap_st = 0;
  heap ready = {0};
  ct_edge *root_edges = calloc((size_t)(n_roots > 0 ? n_roots : 1), sizeof *root_edges);
  if (!root_edges) return CT_ERR(CT_ERR_OOM, "out of memory in backward");
  for (int r = 0; r < n_roots; r++) {
    if (!ct_tensor_requires_grad(roots[r])) {
      st = CT_ERR(CT_ERR_RUNTIME, "element %d of tensors does not require grad and does not have a grad_fn", r);
      goto done;
    }
    root_edges[r] = ct_tensor_edge(roots[r]);
  }
#define PUSH(arr, n, cap, x)                                              \
  do {                                                                     \
    if ((n) == (cap)) {                                                    \
      int64_t nc = (cap) ? (cap) * 2 : 64;                                 \
      void *p = realloc((arr), (size_t)nc * sizeof *(arr));                \
      if (!p) { st = CT_ERR(CT_ERR_OOM, "out of memory in backward"); goto done; } \
      (arr) = p;                                                           \
      (cap) = nc;                                                          \
    }                                                                      \
    (arr)[(n)++] = (x);                                                    \
  } while (0)
  for (int r = 0; r < n_roots; r++) {
    ct_node *f = root_edges[r].fn;
    if (f->mark != run_id) {
      f->mark = run_id;
      f->deps = 0;
      PUSH(all, n_all, cap_all, f);
      PUSH(stack, sp, cap_st, f);
    }
  }
  while (sp > 0) {
    ct_node *x = stack[--sp];
    for (int i = 0; i < x->n_in; i++) {
      ct_node *y = x->next[i].fn;
      if (!y) continue;
      if (y->mark != run_id) {
        y->mark = run_id;
        y->deps = 0;
        PUSH(all, n_all, cap_all, y);
        PUSH(stack, sp, cap_st, y);
      }
      y->deps++;
    }
  }
  for (int64_t k = 0; k < n_all; k++) ct_node_retain(all[k]); /* hooks may drop tensors during the run */
  retained = true;
  /* seed the roots' gradients */
  for (int r = 0; r < n_roots; r++) {
    ct_tensor *g;
    if (grads && grads[r]) {
      const ct_tensor *gr = grads[r];
      bool same = gr->ndim == roots[r]->ndim;
      for (int d = 0; same && d < gr->ndim; d++) same = gr->shape[d] == roots[r]->shape[d];
      if (!same) {
        char a[160], b[160];
        st = CT_ERR(CT_ERR_RUNTIME, "Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a shape of %s.",
                    r, CT_SHAPE_STR(gr, a), r, CT_SHAPE_STR(roots[r], b));
        goto done;
      }
      g = ct_retain((ct_tensor *)gr);
    } else {
      if (ct_numel(roots[r]) != 1) {
        st = CT_ERR(CT_ERR_RUNTIME, "grad can be implicitly created only for scalar outputs");
        goto done;
      }
      g = ct_own(ct_ones_like(roots[r], NULL));
      if (!g) { st = ct_last_status(); goto done; }
    }
    st = accumulate(&root_edges[r].fn->gbuf[root_edges[r].nr], g);
    if (st) goto done;
  }
  for (int64_t k = 0; k < n_all; k++)
    if (all[k]->deps == 0 && !heap_push(&ready, all[k])) { st = CT_ERR(CT_ERR_OOM, "out of memory in backward"); goto done; }

  bool prev_mode = ct_set_grad_enabled(create_graph);
  const bool prof = ct_op_profile_on();
  int64_t pm[2];
  region_run reg = {0};
  while (ready.n > 0 && st == CT_OK) {
    ct_node *x = heap_pop(&ready);
    /* AccumulateGrad neither opens nor closes a region: it runs in the one open (if any). A leaf's node made by an
     * earlier forward (held by that step's graph) is reused by the next one, with the old creation order: it runs
     * late and would otherwise split or open regions */
    if (!x->leaf) region_step(&reg, x);
    /* tensor hooks and retain_grad of non-leaf outputs, in registration order (1.13 runs
     * retain_grad as one of the hooks); they live on the node, so they run even when the
     * tensor's handle is gone */
    for (int j = 0; j < x->n_out && st == CT_OK; j++) {
      ct_hook_list *l = x->hooks[j];
      if (!l || !x->gbuf[j]) continue;
      __atomic_add_fetch(&l->refs, 1, __ATOMIC_RELAXED); /* a hook may detach the list */
      for (int k = 0; k < l->n && st == CT_OK; k++) {
        if (!l->h[k].fn) {
          ct_tensor *w = x->watch[j];
          if (!w || !w->retains_grad || !accumulate_leaves) continue;
          ct_hold(w);
          st = accumulate_into_grad(w, x->gbuf[j], create_graph);
          ct_unhold(w);
          continue;
        }
        ct_clear_error();
        ct_tensor *r = l->h[k].fn(x->gbuf[j], l->h[k].user);
        if (r) {
          ct_release(x->gbuf[j]);
          x->gbuf[j] = ct_own(r);
        } else if (ct_last_status() != CT_OK) st = ct_last_status();
      }
      ct_hooks_free(l);
    }
    for (int c = 0; c < n_cap && st == CT_OK; c++)
      if (caps[c].fn == x && x->gbuf[caps[c].nr] && !*caps[c].out) *caps[c].out = ct_retain(x->gbuf[caps[c].nr]);
    if (st) break;
    if (reg.open) ct_stream_region_read(reg.dev, x->n_out, (const ct_tensor *const *)x->gbuf);
    if (x->leaf) {
      /* AccumulateGrad */
      if (accumulate_leaves && x->gbuf[0]) {
        ct_tensor *g = ct_apply_hooks(x->leaf, x->gbuf[0]);
        x->gbuf[0] = NULL;
        if (!g) { st = ct_last_status(); break; }
        if (prof) ct_op_profile_enter(pm);
        st = accumulate_into_grad(x->leaf, g, create_graph);
        if (prof) ct_op_profile_leave(pm, "engine:AccumulateGrad");
        ct_release(g);
        if (st == CT_OK && leaf_grad_fn && !retain_graph) { /* its .grad is final */
          run_nodes = all;
          run_n = n_all;
          st = leaf_grad_fn(x->leaf, leaf_grad_user);
          run_nodes = NULL;
          run_n = 0;
        }
      }
    } else {
      bool any = false;
      for (int j = 0; j < x->n_out; j++) any |= x->gbuf[j] != NULL;
      ct_tensor *gin[CT_MAX_OP_IN] = {0};
      if (any) {
        for (int j = 0; j < x->n_out && st == CT_OK; j++)
          if (!x->gbuf[j] && !(x->grad_unused_mask >> j & 1)) {
            if (prof) ct_op_profile_enter(pm);
            x->gbuf[j] = ct_zeros_meta(&x->out_meta[j]);
            if (prof) ct_op_profile_leave(pm, "engine:zero_fill");
            if (!x->gbuf[j]) st = ct_last_status();
            else ct_own(x->gbuf[j]);
          }
        if (st) break;
        /* saved outputs take part in double backward through this node */
        if (create_graph)
          for (int j = 0; j < x->n_out; j++)
            if (x->saved_out[j].t && !x->saved_out[j].t->grad_fn) {
              x->saved_out[j].t->grad_fn = x;
              ct_node_retain(x);
              x->saved_out[j].t->output_nr = j;
            }
        ct_clear_error();
        uint64_t err0 = ct_error_serial();
        if (prof) ct_op_profile_enter(pm);
        st = x->backward(x, x->gbuf, gin);
        if (prof) ct_op_profile_leave(pm, ct_node_name(x));
        if (create_graph)
          for (int j = 0; j < x->n_out; j++)
            if (x->saved_out[j].t && x->saved_out[j].t->grad_fn == x) {
              x->saved_out[j].t->grad_fn = NULL;
              ct_node_release(x);
            }
        if (st == CT_OK && ct_last_status() != CT_OK) st = ct_last_status();
        /* a step that failed, was cleared by a later op and left an input without its
         * gradient would read as a zero gradient: report it instead */
        if (st == CT_OK && ct_error_serial() != err0)
          for (int i = 0; i < x->n_in; i++)
            if (!gin[i] && x->next[i].fn) {
              st = CT_ERR(CT_ERR_RUNTIME, "%s: computing the gradient of input %d failed: %s", x->name ? x->name : "backward",
                          i, ct_error_recent());
              break;
            }
      }
      for (int i = 0; i < x->n_in; i++) {
        ct_own(gin[i]);
        if (st == CT_OK && gin[i] && x->next[i].fn) {
          st = check_grad_shape(x, i, gin[i]);
          if (st == CT_OK && gin[i]->dtype != x->in_meta[i].dtype) {
            ct_tensor *c = ct_to_dtype(gin[i], x->in_meta[i].dtype);
            if (!c) st = ct_last_status();
            else { ct_own(c); ct_release(gin[i]); gin[i] = c; }
          }
          if (st == CT_OK) {
            if (prof) ct_op_profile_enter(pm);
            st = accumulate(&x->next[i].fn->gbuf[x->next[i].nr], gin[i]);
            if (prof) ct_op_profile_leave(pm, x->next[i].fn->gbuf[x->next[i].nr] == gin[i] ? "engine:route" : "engine:accumulate");
            gin[i] = NULL;
          }
        }
        ct_release(gin[i]);
      }
      if (!retain_graph) ct_node_release_saved(x);
    }
    for (int j = 0; j < x->n_out; j++) {
      ct_release(x->gbuf[j]);
      x->gbuf[j] = NULL;
    }
    for (int i = 0; i < x->n_in && st == CT_OK; i++) {
      ct_node *y = x->next[i].fn;
      if (y && y->mark == run_id && --y->deps == 0 && !heap_push(&ready, y))
        st = CT_ERR(CT_ERR_OOM, "out of memory in backward");
    }
  }
  region_close(&reg);
  ct_set_grad_enabled(prev_mode);
done:
  for (int64_t k = 0; k < n_all; k++) {
    for (int j = 0; j < CT_MAX_OP_OUT; j++) {
      ct_release(all[k]->gbuf[j]);
      all[k]->gbuf[j] = NULL;
    }
  }
  for (int r = 0; r < n_roots; r++) ct_node_release(root_edges[r].fn);
  free(root_edges);
  free(stack);
  free(ready.a);
  /* drop the run's references last: they may free nodes */
  if (retained)
    for (int64_t k = 0; k < n_all; k++) ct_node_release(all[k]);
  free(all);
  return st;
#undef PUSH
}

ct_status ct_backward_many(int n, ct_tensor *const *roots, ct_tensor *const *grads, bool retain_graph,
                           bool create_graph) {
  for (int i = 0; i < n; i++) CT_TRY(ct_check_tensor(roots[i], "backward"));
  return run_engine(n, roots, grads, retain_graph || create_graph, create_graph, 0, NULL, true);
}

ct_status ct_backward(ct_tensor *t, const ct_tensor *gradient, bool retain_graph, bool create_graph) {
  ct_tensor *g = (ct_tensor *)gradient;
  return ct_backward_many(1, &t, &g, retain_graph, create_graph);
}

/* The caller's own handle for a gradient that something else also references (say
 * its grad_output passed straight through): same data and history, a new reference
 * in the current scope, so releasing it or ending the scope is always balanced. */
static ct_tensor *own_handle(ct_tensor *g) {
  if (g->refcount == 1 || (!g->grad_fn && g->requires_grad)) return g; /* a leaf keeps its identity */
  ct_tensor *a = ct_tensor_over(g->storage, g->ndim, g->shape, g->stride, g->offset, g->dtype);
  if (!a) return g;
  ct_vcell_share(a, g);
  if (g->grad_fn) {
    a->grad_fn = g->grad_fn;
    ct_node_retain(a->grad_fn);
    a->output_nr = g->output_nr;
  }
  ct_release(g);
  return a;
}

ct_status ct_autograd_grad(int n_outputs, ct_tensor *const *outputs, ct_tensor *const *grad_outputs, int n_inputs,
                           ct_tensor *const *inputs, ct_tensor **grads_out, bool retain_graph, bool create_graph,
                           bool allow_unused) {
  for (int i = 0; i < n_outputs; i++) CT_TRY(ct_check_tensor(outputs[i], "grad"));
  capture *caps = calloc((size_t)(n_inputs > 0 ? n_inputs : 1), sizeof *caps);
  if (!caps) return CT_ERR(CT_ERR_OOM, "out of memory in autograd.grad");
  ct_status st = CT_OK;
  for (int i = 0; i < n_inputs; i++) {
    grads_out[i] = NULL;
    if (!inputs[i] || !ct_tensor_requires_grad(inputs[i])) {
      st = CT_ERR(CT_ERR_RUNTIME, "One of the differentiated Tensors does not require grad");
      goto out;
    }
    ct_edge e = ct_tensor_edge(inputs[i]);
    caps[i].fn = e.fn;
    caps[i].nr = e.nr;
    caps[i].out = &grads_out[i];
  }
  st = run_engine(n_outputs, outputs, grad_outputs, retain_graph || create_graph, create_graph, n_inputs, caps, false);
  if (st == CT_OK && !allow_unused)
    for (int i = 0; i < n_inputs; i++)
      if (!grads_out[i]) {
        st = CT_ERR(CT_ERR_RUNTIME, "One of the differentiated Tensors appears to not have been used in the graph. "
                                    "Set allow_unused=True if this is the desired behavior.");
        break;
      }
  if (st != CT_OK)
    for (int i = 0; i < n_inputs; i++) {
      ct_release(grads_out[i]);
      grads_out[i] = NULL;
    }
  else
    for (int i = 0; i < n_inputs; i++) {
      if (grads_out[i]) grads_out[i] = own_handle(grads_out[i]);
      if (grads_out[i] && !grads_out[i]->scope) ct_scope_register(grads_out[i]);
    }
out:
  for (int i = 0; i < n_inputs; i++) ct_node_release(caps[i].fn);
  free(caps);
  return st;
}
