/* Activation checkpointing (torch.utils.checkpoint) as a custom autograd node.
 *
 * Forward: the segment runs once with grad mode on over detached copies of its inputs, only
 * to find which tensors outside the segment it differentiates through (its inputs, and the
 * "boundary": module parameters and other tensors requiring grad that fn reads directly);
 * that graph is dropped at once, so none of the segment's intermediate tensors is kept.
 * The outputs get one CheckpointFunctionBackward node whose edges are the inputs and the
 * boundary, so parameters receive their gradients through the normal engine (backward and
 * autograd.grad both work, hooks and accumulation as usual).
 *
 * Backward: the default generator is set to its state at forward time (so dropout masks
 * replay), fn runs again on detached inputs, and in the recomputed graph every edge into a
 * boundary node is redirected to a private leaf; autograd.grad of that private graph gives
 * the gradients for the inputs and for each boundary edge. The outer engine's nodes are
 * never run by the inner one. A node has at most CT_MAX_OP_IN edges, so more edges go
 * through helper nodes chained behind the main one (they hand out gradients the main
 * node computed). */
#include "module_internal.h"
#include "../autograd/autograd.h"
#include <stdio.h>
#include <stdlib.h>

#define CKPT_MAX_IN 4096

typedef struct {
  ct_node *fn;
  int nr;
} bkey;

typedef struct {
  int refcount;
  ct_checkpoint_fn fn;
  void *user;
  void (*user_free)(void *user); /* drops the state's reference to user (may be NULL) */
  int n_in, n_out;
  ct_tensor **saved;  /* detached aliases of the inputs (owned), NULL for NULL inputs */
  ct_tensor **orig;   /* the inputs themselves (held), for PyTorch's in-place message */
  uint64_t *version;
  bool *in_rg;
  ct_meta out_meta[CT_MAX_OP_OUT];
  bool out_float[CT_MAX_OP_OUT];
  uint8_t *rng;
  size_t rng_n;
  /* edges: n_edges entries; edge_input[e] >= 0 is an input, else boundary key bound[e] */
  int n_edges;
  int *edge_input;
  bkey *bound;
  ct_meta *edge_meta;
  ct_tensor **bound_leaf; /* the leaf of an AccumulateGrad boundary (borrowed: its node holds it) */
  uint64_t *bound_ver;
  ct_tensor **stash;      /* gradients computed by the main node for the helper nodes */
} ckpt_state;

typedef struct {
  ckpt_state *s;
  int start, count; /* this node's real edges: [start, start + count) */
  bool has_next;    /* its last edge leads to the next helper */
} ckpt_part;

static void state_release(ckpt_state *s) {
  if (!s || --s->refcount > 0) return;
  for (int i = 0; i < s->n_in; i++) {
    ct_release(s->saved[i]);
    ct_unhold(s->orig[i]);
  }
  for (int e = 0; e < s->n_edges; e++) ct_release(s->stash ? s->stash[e] : NULL);
  if (s->user_free) s->user_free(s->user);
  free(s->saved);
  free(s->orig);
  free(s->version);
  free(s->in_rg);
  free(s->rng);
  free(s->edge_input);
  free(s->bound);
  free(s->edge_meta);
  free(s->bound_leaf);
  free(s->bound_ver);
  free(s->stash);
  free(s);
}

static void part_free(void *p) {
  ckpt_part *part = p;
  if (!part) return;
  state_release(part->s);
  free(part);
}

/* ---- a pointer set (visited nodes) ---- */
typedef struct {
  void **k;
  size_t cap, n;
} pset;
static size_t phash(const void *p, size_t cap) { return ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull & (cap - 1); }
static bool pset_add(pset *s, void *p, bool *added) {
  if ((s->n + 1) * 2 > s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 64;
    void **k = calloc(nc, sizeof *k);
    if (!k) return false;
    for (size_t i = 0; i < s->cap; i++)
      if (s->k[i])
        for (size_t h = phash(s->k[i], nc);; h = (h + 1) & (nc - 1))
          if (!k[h]) {
            k[h] = s->k[i];
            break;
          }
    free(s->k);
    s->k = k;
    s->cap = nc;
  }
  for (size_t h = phash(p, s->cap);; h = (h + 1) & (s->cap - 1)) {
    if (s->k[h] == p) {
      *added = false;
      return true;
    }
    if (!s->k[h]) {
      s->k[h] = p;
      s->n++;
      *added = true;
      return true;
    }
  }
}

/* The creation counter: nodes made after this call have a larger seq. */
static uint64_t seq_now(void) {
  ct_node *probe = ct_node_new(-1, 0, 0);
  if (!probe) return UINT64_MAX;
  uint64_t s = probe->seq;
  ct_node_release(probe);
  return s;
}

enum { E_INSIDE, E_INPUT, E_BOUNDARY };
/* Where an edge into node y leads, seen from the segment that started at seq `start`. */
static int classify(const ct_node *y, uint64_t start, ct_tensor *const *d, int n_in, int *which) {
  if (y->leaf) {
    for (int i = 0; i < n_in; i++)
      if (d[i] && y->leaf == d[i]) {
        *which = i;
        return E_INPUT;
      }
    return E_BOUNDARY;
  }
  return y->seq >= start ? E_INSIDE : E_BOUNDARY;
}

static void meta_of_node_out(ct_meta *m, const ct_node *y, int nr) { *m = y->out_meta[nr]; }

static int find_bound(const ckpt_state *s, const ct_node *fn, int nr) {
  for (int e = 0; e < s->n_edges; e++)
    if (s->edge_input[e] < 0 && s->bound[e].fn == fn && s->bound[e].nr == nr) return e;
  return -1;
}

/* growable edge list during the forward */
typedef struct {
  int n, cap;
  int *input;
  bkey *key;
  ct_meta *meta;
} edge_list;
static ct_status el_add(edge_list *l, int input, ct_node *fn, int nr, const ct_meta *m) {
  if (l->n == l->cap) {
    int nc = l->cap ? l->cap * 2 : 16;
    int *a = realloc(l->input, (size_t)nc * sizeof *a);
    if (!a) return CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
    l->input = a;
    bkey *b = realloc(l->key, (size_t)nc * sizeof *b);
    if (!b) return CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
    l->key = b;
    ct_meta *c = realloc(l->meta, (size_t)nc * sizeof *c);
    if (!c) return CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
    l->meta = c;
    l->cap = nc;
  }
  l->input[l->n] = input;
  l->key[l->n].fn = fn;
  l->key[l->n].nr = nr;
  l->meta[l->n] = *m;
  l->n++;
  return CT_OK;
}
static void el_free(edge_list *l) {
  free(l->input);
  free(l->key);
  free(l->meta);
}

/* Records one boundary edge (deduplicated). */
static ct_status note_boundary(edge_list *l, ct_node *y, int nr) {
  for (int e = 0; e < l->n; e++)
    if (l->input[e] < 0 && l->key[e].fn == y && l->key[e].nr == nr) return CT_OK;
  ct_meta m;
  meta_of_node_out(&m, y, nr);
  return el_add(l, -1, y, nr, &m);
}

/* Forward: collects the boundary edges reached from the outputs' graph. */
static ct_status discover(ct_tensor *const *outs, int n_out, uint64_t start, ct_tensor *const *d, int n_in,
                          edge_list *l) {
  pset seen = {0};
  ct_node **stack = NULL;
  size_t sp = 0, cap = 0;
  ct_status st = CT_OK;
#define PUSH(x)                                                              \
  do {                                                                       \
    if (sp == cap) {                                                         \
      size_t nc = cap ? cap * 2 : 64;                                        \
      ct_node **p = realloc(stack, nc * sizeof *p);                          \
      if (!p) { st = CT_ERR(CT_ERR_OOM, "out of memory in checkpoint"); goto out; } \
      stack = p;                                                             \
      cap = nc;                                                              \
    }                                                                        \
    stack[sp++] = (x);                                                       \
  } while (0)
  for (int j = 0; j < n_out; j++) {
    ct_tensor *o = outs[j];
    if (!o || !ct_tensor_requires_grad(o) || !ct_dtype_is_floating(o->dtype)) continue;
    ct_edge e = ct_tensor_edge(o);
    if (!e.fn) continue;
    int which;
    int k = classify(e.fn, start, d, n_in, &which);
    if (k == E_BOUNDARY) st = note_boundary(l, e.fn, e.nr);
    else if (k == E_INSIDE) {
      bool added;
      if (!pset_add(&seen, e.fn, &added)) st = CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
      else if (added) {
        ct_node_retain(e.fn);
        PUSH(e.fn);
        ct_node_release(e.fn); /* the outputs keep it alive while we walk */
      }
    }
    ct_node_release(e.fn);
    if (st) goto out;
  }
  while (sp > 0) {
    ct_node *x = stack[--sp];
    for (int i = 0; i < x->n_in; i++) {
      ct_node *y = x->next[i].fn;
      if (!y) continue;
      int which;
      int k = classify(y, start, d, n_in, &which);
      if (k == E_BOUNDARY) {
        if ((st = note_boundary(l, y, x->next[i].nr))) goto out;
      } else if (k == E_INSIDE) {
        bool added;
        if (!pset_add(&seen, y, &added)) {
          st = CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
          goto out;
        }
        if (added) PUSH(y);
      }
    }
  }
out:
#undef PUSH
  free(stack);
  free(seen.k);
  return st;
}

/* ---- backward ---- */
static ct_status modified_error(const ckpt_state *s, int i) {
  const ct_tensor *t = s->saved[i], *o = s->orig[i];
  char shp[160], which[200] = "";
  if (o && o->grad_fn) snprintf(which, sizeof which, ", which is output %d of %s,", o->output_nr, ct_node_name(o->grad_fn));
  return CT_ERR(CT_ERR_RUNTIME,
                "one of the variables needed for gradient computation has been modified by an inplace operation: "
                "[%s %s]%s is at version %llu; expected version %llu instead. Hint: enable anomaly detection to find "
                "the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).",
                ct_dtype_legacy_name(t->dtype), CT_SHAPE_STR(t, shp), which,
                (unsigned long long)t->storage->version, (unsigned long long)s->version[i]);
}

static ct_tensor *dummy_for(const ct_meta *m) {
  ct_options o = ct_opts_dtype(m->dtype);
  o.device = m->device;
  ct_tensor *t = ct_empty(m->ndim, m->shape, o);
  if (t && ct_requires_grad_(t, true)) {
    ct_release(t);
    return NULL;
  }
  return t;
}

/* Adds b into *slot (new references in the current scope). */
static ct_status acc(ct_tensor **slot, ct_tensor *b) {
  if (!*slot) {
    *slot = ct_retain(b);
    return CT_OK;
  }
  ct_tensor *s = ct_add(*slot, b);
  if (!s) return ct_last_status();
  ct_release(*slot);
  *slot = s;
  return CT_OK;
}

/* Recomputes the segment and fills grads[n_edges] (new, unscoped references or NULL). */
static ct_status recompute(ckpt_state *s, ct_tensor *const *gout, ct_tensor **grads) {
  ct_status st = CT_OK;
  ct_generator *gen = ct_default_generator();
  uint8_t *cur = malloc(s->rng_n);
  if (!cur) return CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
  ct_generator_get_state(gen, cur);
  bool prev_grad = ct_set_grad_enabled(true);
  ct_scope *scope = ct_scope_begin();
  ct_tensor **d = calloc((size_t)(s->n_in > 0 ? s->n_in : 1), sizeof *d);
  ct_tensor **dummy = calloc((size_t)(s->n_edges > 0 ? s->n_edges : 1), sizeof *dummy);
  ct_tensor **part = calloc((size_t)(s->n_edges > 0 ? s->n_edges : 1), sizeof *part);
  ct_tensor *outs[CT_MAX_OP_OUT] = {0};
  ct_node **stack = NULL;
  size_t sp = 0, cap = 0;
  pset seen = {0};
  if (!scope || !d || !dummy || !part) {
    st = CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
    goto out;
  }
  for (int i = 0; i < s->n_in && !st; i++) {
    if (!s->saved[i]) continue;
    d[i] = ct_detach(s->saved[i]);
    if (!d[i]) st = ct_last_status();
    else if (s->in_rg[i]) st = ct_requires_grad_(d[i], true);
  }
  if (st) goto out;
  uint64_t start = seq_now();
  if ((st = ct_generator_set_state(gen, s->rng, s->rng_n))) goto out;
  ct_clear_error();
  st = s->fn(s->user, s->n_in, d, s->n_out, outs);
  ct_status rs = ct_generator_set_state(gen, cur, s->rng_n); /* the caller's stream continues as if nothing ran */
  if (!st) st = rs;
  if (st) goto out;
  for (int j = 0; j < s->n_out; j++) {
    ct_meta *m = &s->out_meta[j];
    bool same = outs[j] && outs[j]->ndim == m->ndim && outs[j]->dtype == m->dtype;
    for (int k = 0; same && k < m->ndim; k++) same = outs[j]->shape[k] == m->shape[k];
    if (!same) {
      st = CT_ERR(CT_ERR_RUNTIME, "checkpoint: the recomputed output %d differs in shape or dtype from the forward "
                                  "pass (the function must be deterministic)", j);
      goto out;
    }
  }
  /* roots: recomputed outputs whose graph is inside the segment; others pass gout straight on */
  ct_tensor *roots[CT_MAX_OP_OUT], *rg[CT_MAX_OP_OUT];
  int n_roots = 0;
#define PUSH(x)                                                              \
  do {                                                                       \
    if (sp == cap) {                                                         \
      size_t nc = cap ? cap * 2 : 64;                                        \
      ct_node **p = realloc(stack, nc * sizeof *p);                          \
      if (!p) { st = CT_ERR(CT_ERR_OOM, "out of memory in checkpoint"); goto out; } \
      stack = p;                                                             \
      cap = nc;                                                              \
    }                                                                        \
    stack[sp++] = (x);                                                       \
  } while (0)
  for (int j = 0; j < s->n_out; j++) {
    ct_tensor *o = outs[j];
    if (!s->out_float[j] || !ct_tensor_requires_grad(o)) continue;
    ct_edge e = ct_tensor_edge(o);
    if (!e.fn) continue;
    int which = -1;
    int k = classify(e.fn, start, d, s->n_in, &which);
    if (k == E_INSIDE) {
      roots[n_roots] = o;
      rg[n_roots++] = gout[j];
      bool added;
      if (!pset_add(&seen, e.fn, &added)) st = CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
      else if (added) {
        ct_node_release(e.fn);
        PUSH(e.fn);
        continue;
      }
    } else if (k == E_INPUT) {
      /* fn returned (a view-less alias of) an input: its gradient is gout */
      int slot = -1;
      for (int q = 0; q < s->n_edges; q++)
        if (s->edge_input[q] == which) slot = q;
      if (slot >= 0) st = acc(&part[slot], gout[j]);
    } else {
      int b = find_bound(s, e.fn, e.nr);
      if (b < 0) st = CT_ERR(CT_ERR_RUNTIME, "checkpoint: the recomputed function reached a tensor requiring grad that "
                                             "the forward pass did not use (the function must be deterministic)");
      else st = acc(&part[b], gout[j]);
    }
    ct_node_release(e.fn);
    if (st) goto out;
  }
  /* redirect every edge into the boundary to a private leaf */
  while (sp > 0) {
    ct_node *x = stack[--sp];
    for (int i = 0; i < x->n_in; i++) {
      ct_node *y = x->next[i].fn;
      if (!y) continue;
      int which;
      int k = classify(y, start, d, s->n_in, &which);
      if (k == E_INSIDE) {
        bool added;
        if (!pset_add(&seen, y, &added)) {
          st = CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
          goto out;
        }
        if (added) PUSH(y);
      } else if (k == E_BOUNDARY) {
        int b = find_bound(s, y, x->next[i].nr);
        if (b < 0) {
          st = CT_ERR(CT_ERR_RUNTIME, "checkpoint: the recomputed function reached a tensor requiring grad that the "
                                      "forward pass did not use (the function must be deterministic)");
          goto out;
        }
        if (!dummy[b] && !(dummy[b] = dummy_for(&s->edge_meta[b]))) {
          st = ct_last_status();
          goto out;
        }
        ct_edge ne = ct_tensor_edge(dummy[b]);
        if (!ne.fn) {
          st = ct_last_status() ? ct_last_status() : CT_ERR(CT_ERR_RUNTIME, "checkpoint: cannot redirect an edge");
          goto out;
        }
        x->next[i] = ne;
        ct_node_release(y);
      }
    }
  }
#undef PUSH
  if (n_roots > 0) {
    ct_tensor **wrt = calloc((size_t)s->n_edges + 1, sizeof *wrt);
    int *slot_of = calloc((size_t)s->n_edges + 1, sizeof *slot_of);
    ct_tensor **g = calloc((size_t)s->n_edges + 1, sizeof *g);
    int n_wrt = 0;
    if (!wrt || !slot_of || !g) st = CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
    for (int e = 0; !st && e < s->n_edges; e++) {
      ct_tensor *t = s->edge_input[e] >= 0 ? d[s->edge_input[e]] : dummy[e];
      if (!t) continue;
      wrt[n_wrt] = t;
      slot_of[n_wrt++] = e;
    }
    if (!st && n_wrt > 0) {
      st = ct_autograd_grad(n_roots, roots, rg, n_wrt, wrt, g, false, false, true);
      for (int k = 0; !st && k < n_wrt; k++)
        if (g[k]) st = acc(&part[slot_of[k]], g[k]);
      for (int k = 0; k < n_wrt; k++) ct_release(g[k]);
    }
    free(wrt);
    free(slot_of);
    free(g);
  }
  if (!st)
    for (int e = 0; e < s->n_edges; e++) {
      grads[e] = part[e];
      part[e] = NULL;
      /* survive the scope: keep a reference of our own beyond the scope's */
      if (grads[e] && grads[e]->scope) {
        ct_own(grads[e]);
        if (grads[e]->scope) ct_retain(grads[e]);
      }
    }
out:
  for (int j = 0; j < CT_MAX_OP_OUT; j++) ct_release(outs[j]);
  if (d)
    for (int i = 0; i < s->n_in; i++) ct_release(d[i]);
  if (dummy)
    for (int e = 0; e < s->n_edges; e++) ct_release(dummy[e]);
  if (part)
    for (int e = 0; e < s->n_edges; e++) ct_release(part[e]);
  if (scope) ct_scope_end(scope);
  ct_generator_set_state(gen, cur, s->rng_n);
  ct_set_grad_enabled(prev_grad);
  free(d);
  free(dummy);
  free(part);
  free(stack);
  free(seen.k);
  free(cur);
  return st;
}

static ct_status zero_scalar(ct_tensor **out) {
  *out = ct_own(ct_zeros(0, NULL, ct_opts_dtype(CT_FLOAT32)));
  return *out ? CT_OK : ct_last_status();
}

static ct_status ckpt_backward(ct_node *n, ct_tensor *const *gout, ct_tensor **gin) {
  ckpt_part *p = n->extra;
  ckpt_state *s = p->s;
  if (n->released)
    return CT_ERR(CT_ERR_RUNTIME,
                  "Trying to backward through the graph a second time (or directly access saved tensors after they "
                  "have already been freed). Saved intermediate values of the graph are freed when you call "
                  ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                  "graph a second time or if you need to access saved tensors after calling backward.");
  if (ct_is_grad_enabled())
    return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "checkpoint: double backward (create_graph=True) through a checkpointed "
                                          "segment is not supported");
  for (int i = 0; i < s->n_in; i++)
    if (s->saved[i] && s->saved[i]->storage->version != s->version[i]) return modified_error(s, i);
  for (int e = 0; e < s->n_edges; e++) {
    ct_tensor *leaf = s->bound_leaf[e];
    if (leaf && leaf->storage->version != s->bound_ver[e]) {
      char shp[160];
      return CT_ERR(CT_ERR_RUNTIME,
                    "one of the variables needed for gradient computation has been modified by an inplace operation: "
                    "[%s %s] is at version %llu; expected version %llu instead. Hint: a parameter used inside a "
                    "checkpointed segment changed between its forward and backward, so the recomputation would not "
                    "match the forward pass.",
                    ct_dtype_legacy_name(leaf->dtype), CT_SHAPE_STR(leaf, shp),
                    (unsigned long long)leaf->storage->version, (unsigned long long)s->bound_ver[e]);
    }
  }
  ct_tensor **grads = calloc((size_t)(s->n_edges > 0 ? s->n_edges : 1), sizeof *grads);
  if (!grads) return CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
  ct_status st = recompute(s, gout, grads);
  if (st) {
    free(grads);
    return st;
  }
  for (int i = 0; i < p->count; i++) gin[i] = grads[p->start + i];
  bool rest = false;
  for (int e = p->start + p->count; e < s->n_edges; e++) {
    ct_release(s->stash[e]);
    s->stash[e] = grads[e];
    rest |= grads[e] != NULL;
  }
  free(grads);
  if (p->has_next && rest) return zero_scalar(&gin[p->count]);
  return CT_OK;
}

static ct_status helper_backward(ct_node *n, ct_tensor *const *gout, ct_tensor **gin) {
  ckpt_part *p = n->extra;
  ckpt_state *s = p->s;
  for (int i = 0; i < p->count; i++) {
    gin[i] = s->stash[p->start + i];
    s->stash[p->start + i] = NULL;
  }
  bool rest = false;
  for (int e = p->start + p->count; e < s->n_edges; e++) rest |= s->stash[e] != NULL;
  if (p->has_next && rest) return zero_scalar(&gin[p->count]);
  return CT_OK;
}

/* Builds the node holding edges [start, n_edges) (main when start == 0), taking references
 * to the edges' nodes from edges[]. Returns a new node reference or NULL. */
static ct_node *build_node(ckpt_state *s, ct_edge *edges, int start) {
  int remaining = s->n_edges - start;
  bool chain = remaining > CT_MAX_OP_IN;
  int count = chain ? CT_MAX_OP_IN - 1 : remaining;
  ct_node *next = NULL;
  if (chain && !(next = build_node(s, edges, start + count))) return NULL;
  bool main = start == 0;
  ct_node *n = ct_node_new(-1, count + (chain ? 1 : 0), main ? s->n_out : 1);
  ckpt_part *p = n ? ct_xcalloc(1, sizeof *p) : NULL;
  if (!p) {
    ct_node_release(n);
    ct_node_release(next);
    return NULL;
  }
  p->s = s;
  s->refcount++;
  p->start = start;
  p->count = count;
  p->has_next = chain;
  n->extra = p;
  n->extra_free = part_free;
  n->name = main ? "CheckpointFunctionBackward" : "CheckpointEdgesBackward";
  n->backward = main ? ckpt_backward : helper_backward;
  for (int i = 0; i < count; i++) {
    n->next[i] = edges[start + i];
    edges[start + i].fn = NULL; /* moved */
    n->in_meta[i] = s->edge_meta[start + i];
  }
  ct_meta scalar;
  memset(&scalar, 0, sizeof scalar);
  scalar.dtype = CT_FLOAT32;
  scalar.device = ct_cpu();
  if (chain) {
    n->next[count].fn = next; /* our reference */
    n->next[count].nr = 0;
    n->in_meta[count] = scalar;
  }
  if (main)
    for (int j = 0; j < s->n_out; j++) n->out_meta[j] = s->out_meta[j];
  else n->out_meta[0] = scalar;
  return n;
}

static void meta_of(ct_meta *m, const ct_tensor *t) {
  m->ndim = t->ndim;
  memcpy(m->shape, t->shape, sizeof t->shape);
  m->dtype = t->dtype;
  m->device = t->storage->device;
}

/* user_retain / user_free: the node keeps user alive until it is freed (NULL: the caller does). */
static ct_status checkpoint_impl(ct_checkpoint_fn fn, void *user, void (*user_retain)(void *), void (*user_free)(void *),
                                 int n_inputs, ct_tensor *const *inputs, int n_outputs, ct_tensor **outputs) {
  if (!fn) return CT_ERR(CT_ERR_VALUE, "checkpoint: function is NULL");
  if (n_outputs < 1 || n_outputs > CT_MAX_OP_OUT || !outputs)
    return CT_ERR(CT_ERR_VALUE, "checkpoint: n_outputs must be between 1 and %d (got %d)", CT_MAX_OP_OUT, n_outputs);
  for (int j = 0; j < n_outputs; j++) outputs[j] = NULL;
  if (n_inputs < 0 || n_inputs > CKPT_MAX_IN || (n_inputs > 0 && !inputs))
    return CT_ERR(CT_ERR_VALUE, "checkpoint: n_inputs must be between 0 and %d (got %d)", CKPT_MAX_IN, n_inputs);
  if (!ct_grad_mode_recording()) {
    /* nothing will be differentiated: the plain function */
    ct_status st = fn(user, n_inputs, inputs, n_outputs, outputs);
    for (int j = 0; !st && j < n_outputs; j++)
      if (!outputs[j]) st = CT_ERR(CT_ERR_RUNTIME, "checkpoint: the function did not set output %d", j);
    if (st)
      for (int j = 0; j < n_outputs; j++) {
        ct_release(outputs[j]);
        outputs[j] = NULL;
      }
    return st;
  }
  ckpt_state *s = ct_xcalloc(1, sizeof *s);
  if (!s) return CT_ERR_OOM;
  s->refcount = 1;
  s->fn = fn;
  s->user = user;
  if (user_retain) user_retain(user);
  s->user_free = user_free;
  s->n_in = n_inputs;
  s->n_out = n_outputs;
  size_t ni = (size_t)(n_inputs > 0 ? n_inputs : 1);
  s->saved = calloc(ni, sizeof *s->saved);
  s->orig = calloc(ni, sizeof *s->orig);
  s->version = calloc(ni, sizeof *s->version);
  s->in_rg = calloc(ni, sizeof *s->in_rg);
  s->rng_n = ct_generator_state_size();
  s->rng = malloc(s->rng_n);
  ct_status st = CT_OK;
  edge_list el = {0};
  ct_edge *edges = NULL;
  ct_tensor *tmp[CT_MAX_OP_OUT] = {0};
  ct_tensor **d = calloc(ni, sizeof *d);
  ct_scope *scope = NULL;
  if (!s->saved || !s->orig || !s->version || !s->in_rg || !s->rng || !d) {
    st = CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
    goto fail;
  }
  ct_generator_get_state(ct_default_generator(), s->rng);
  for (int i = 0; i < n_inputs && !st; i++) {
    ct_tensor *x = inputs[i];
    if (!x) continue;
    if ((st = ct_check_tensor(x, "checkpoint"))) break;
    s->in_rg[i] = ct_tensor_requires_grad(x) && ct_dtype_is_floating(x->dtype);
    s->saved[i] = ct_own(ct_detach(x));
    if (!s->saved[i]) {
      st = ct_last_status();
      break;
    }
    if (s->saved[i]->scope) ct_retain(s->saved[i]); /* never leave it to a scope */
    s->orig[i] = ct_hold(x);
    s->version[i] = x->storage->version;
  }
  if (st) goto fail;
  scope = ct_scope_begin();
  if (!scope) {
    st = ct_last_status();
    goto fail;
  }
  for (int i = 0; i < n_inputs && !st; i++) {
    if (!s->saved[i]) continue;
    d[i] = ct_detach(s->saved[i]);
    if (!d[i]) st = ct_last_status();
    else if (s->in_rg[i]) st = ct_requires_grad_(d[i], true);
  }
  if (st) goto fail;
  uint64_t start = seq_now();
  ct_clear_error();
  st = fn(user, n_inputs, d, n_outputs, tmp);
  for (int j = 0; !st && j < n_outputs; j++)
    if (!tmp[j]) st = CT_ERR(CT_ERR_RUNTIME, "checkpoint: the function did not set output %d", j);
  if (st) goto fail;
  /* edges: the inputs requiring grad, then the boundary */
  for (int i = 0; i < n_inputs && !st; i++)
    if (s->in_rg[i]) {
      ct_meta m;
      meta_of(&m, inputs[i]);
      st = el_add(&el, i, NULL, 0, &m);
    }
  if (!st) st = discover(tmp, n_outputs, start, d, n_inputs, &el);
  if (st) goto fail;
  s->n_edges = el.n;
  size_t ne = (size_t)(el.n > 0 ? el.n : 1);
  s->edge_input = calloc(ne, sizeof *s->edge_input);
  s->bound = calloc(ne, sizeof *s->bound);
  s->edge_meta = calloc(ne, sizeof *s->edge_meta);
  s->bound_leaf = calloc(ne, sizeof *s->bound_leaf);
  s->bound_ver = calloc(ne, sizeof *s->bound_ver);
  s->stash = calloc(ne, sizeof *s->stash);
  edges = calloc(ne, sizeof *edges);
  if (!s->edge_input || !s->bound || !s->edge_meta || !s->bound_leaf || !s->bound_ver || !s->stash || !edges) {
    st = CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
    goto fail;
  }
  for (int e = 0; e < el.n; e++) {
    s->edge_input[e] = el.input[e];
    s->bound[e] = el.key[e];
    s->edge_meta[e] = el.meta[e];
    if (el.input[e] >= 0) edges[e] = ct_tensor_edge(inputs[el.input[e]]);
    else {
      edges[e].fn = el.key[e].fn;
      edges[e].nr = el.key[e].nr;
      ct_node_retain(edges[e].fn);
      if (el.key[e].fn->leaf) {
        s->bound_leaf[e] = el.key[e].fn->leaf;
        s->bound_ver[e] = el.key[e].fn->leaf->storage->version;
      }
    }
    if (!edges[e].fn) {
      st = ct_last_status() ? ct_last_status() : CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
      goto fail;
    }
  }
  for (int j = 0; j < n_outputs; j++) {
    meta_of(&s->out_meta[j], tmp[j]);
    s->out_float[j] = ct_dtype_is_floating(tmp[j]->dtype);
  }
  /* outputs without the segment's graph: new handles over the same data, owned by the caller */
  for (int j = 0; j < n_outputs && !st; j++) {
    outputs[j] = ct_detach(tmp[j]);
    if (!outputs[j]) st = ct_last_status();
    else ct_keep(outputs[j]);
  }
  if (st) goto fail;
  for (int j = 0; j < n_outputs; j++) {
    ct_release(tmp[j]);
    tmp[j] = NULL;
  }
  for (int i = 0; i < n_inputs; i++) {
    ct_release(d[i]);
    d[i] = NULL;
  }
  ct_scope_end(scope); /* the forward's graph goes here */
  scope = NULL;
  bool any_float = false;
  for (int j = 0; j < n_outputs; j++) any_float |= s->out_float[j];
  if (s->n_edges > 0 && any_float) {
    ct_node *n = build_node(s, edges, 0);
    if (!n) {
      st = ct_last_status() ? ct_last_status() : CT_ERR(CT_ERR_OOM, "out of memory in checkpoint");
      goto fail;
    }
    for (int j = 0; j < n_outputs; j++)
      if (s->out_float[j]) ct_set_history(outputs[j], n, j);
    ct_node_release(n); /* the outputs hold it */
  }
  for (int e = 0; e < s->n_edges; e++) ct_node_release(edges[e].fn); /* edges not moved into a node */
  free(edges);
  el_free(&el);
  free(d);
  state_release(s);
  return CT_OK;
fail:
  for (int j = 0; j < CT_MAX_OP_OUT; j++) ct_release(tmp[j]);
  for (int j = 0; j < n_outputs; j++) {
    ct_release(outputs[j]);
    outputs[j] = NULL;
  }
  if (d)
    for (int i = 0; i < n_inputs; i++) ct_release(d[i]);
  if (scope) ct_scope_end(scope);
  if (edges)
    for (int e = 0; e < s->n_edges; e++) ct_node_release(edges[e].fn);
  free(edges);
  el_free(&el);
  free(d);
  state_release(s);
  return st ? st : CT_ERR_RUNTIME;
}

ct_status ct_checkpoint(ct_checkpoint_fn fn, void *user, int n_inputs, ct_tensor *const *inputs, int n_outputs,
                        ct_tensor **outputs) {
  return checkpoint_impl(fn, user, NULL, NULL, n_inputs, inputs, n_outputs, outputs);
}

static void mod_retain(void *m) { ct_module_retain(m); }
static void mod_free(void *m) { ct_module_free(m); }

static ct_status module_segment(void *user, int n_in, ct_tensor *const *in, int n_out, ct_tensor **out) {
  out[0] = ct_module_forward((ct_module *)user, in[0]);
  return out[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_checkpoint_module(ct_module *m, const ct_tensor *x) {
  if (!m) {
    ct_set_error(CT_ERR_VALUE, "checkpoint_module: expected a module, got NULL");
    return NULL;
  }
  if (ct_check_tensor(x, "checkpoint_module")) return NULL;
  ct_tensor *in = (ct_tensor *)x, *out = NULL;
  if (checkpoint_impl(module_segment, m, mod_retain, mod_free, 1, &in, 1, &out)) return NULL;
  return out;
}
