/* Autograd internals: graph nodes, saved tensors, the engine. */
#ifndef CT_AUTOGRAD_INTERNAL_H
#define CT_AUTOGRAD_INTERNAL_H
#include "../ops/op_table.h"

typedef struct ct_node ct_node;
typedef struct {
  ct_node *fn; /* strong; NULL = this input needs no gradient */
  int nr;      /* which output of fn this input was */
} ct_edge;

/* A weak reference to a tensor handle: t reads NULL once the handle is freed. */
typedef struct ct_weak {
  int64_t refs;
  ct_tensor *t;
} ct_weak;
/* A new reference to t's weak cell (made on first use); NULL if out of memory. */
ct_weak *ct_weak_ref(ct_tensor *t);
void ct_weak_release(ct_weak *w);
/* Called when t's handle is freed: its weak references read NULL from then on. */
void ct_weak_clear(ct_tensor *t);

typedef struct {
  ct_tensor *t;     /* strong ref to a handle without grad_fn (no cycles) */
  uint64_t version; /* storage version when saved */
  int out_index;    /* >= 0: saved output (its grad_fn is this node) */
  bool used;
  bool leaf;        /* the saved input had no grad_fn when saved */
  ct_weak *orig;    /* the saved input's own handle: its current grad_fn names it in the
                     * "modified by an inplace operation" error, as PyTorch names it */
} ct_saved;

typedef struct {
  int ndim;
  int64_t shape[CT_MAX_DIMS];
  ct_dtype dtype;
  ct_device device;
} ct_meta;

struct ct_node {
  int64_t refcount;
  int op;                 /* op id, or -1 for AccumulateGrad / custom nodes */
  const char *name;
  ct_backward_fn backward;
  int n_in, n_out;
  ct_edge next[CT_MAX_OP_IN];
  ct_meta in_meta[CT_MAX_OP_IN];
  ct_meta out_meta[CT_MAX_OP_OUT];
  ct_saved saved_in[CT_MAX_OP_IN];
  ct_saved saved_out[CT_MAX_OP_OUT];
  ct_attrs a;
  /* bit j: the backward reads no gradient of output j (batch norm's statistics), so the engine
   * leaves a missing one NULL instead of filling zeros (a kernel, a graph node) */
  uint8_t grad_unused_mask;
  bool released;          /* saved tensors freed after a backward without retain_graph */
  uint64_t seq;           /* creation order: later nodes run first among ready ones */
  /* non-zero: recorded inside a forked region (src/backend/stream_region.c) on region_dev; the engine runs each
   * maximal run of consecutive nodes with one tag as a backward region on that device */
  uint32_t region;
  ct_device region_dev;
  ct_tensor *leaf;        /* AccumulateGrad: the leaf (strong) */
  /* weak: the non-leaf tensor handle of each output that retains grad */
  ct_tensor *watch[CT_MAX_OP_OUT];
  /* strong: the tensor hooks (and retain_grad) of each non-leaf output; they live on the
   * node, like PyTorch's, so they outlive the tensor handle */
  struct ct_hook_list *hooks[CT_MAX_OP_OUT];
  /* custom nodes (autograd.Function from the bindings, checkpointing) */
  void *extra;
  void (*extra_free)(void *extra);
  /* engine scratch, valid during one backward */
  int deps;
  ct_tensor *gbuf[CT_MAX_OP_OUT];
  int64_t mark;
};

ct_node *ct_node_new(int op, int n_in, int n_out);
/* The region tag ct_node_new gives the nodes this thread records from now on (0: none; stream_region.c). */
void ct_autograd_set_region(uint32_t tag, ct_device dev);
/* fn(leaf, user) after each leaf's AccumulateGrad of the backwards this thread runs from now on (the leaf's .grad
 * is then final for that backward: every contribution was summed first); NULL: none. An error it returns stops the
 * backward. */
typedef ct_status (*ct_leaf_grad_fn)(ct_tensor *leaf, void *user);
void ct_autograd_on_leaf_grad(ct_leaf_grad_fn fn, void *user);
/* Inside such a callback: whether a node of the running backward that has not run yet saved a tensor on t's storage
 * (an in-place update of t now would make it fail its version check). Conservative: nodes that ran keep their
 * saved tensors only with retain_graph, which the callback is not called with. */
bool ct_autograd_saved_pending(const ct_tensor *t);
void ct_node_retain(ct_node *n);
void ct_node_release(ct_node *n);
const char *ct_node_name(const ct_node *n);
/* Whether input i of node n needs a gradient. */
static inline bool ct_node_needs_grad(const ct_node *n, int i) { return n->next[i].fn != NULL; }
/* Saved tensors, checked against in-place modification and freed graphs.
 * Borrowed; NULL with error set if unavailable. */
ct_tensor *ct_node_saved_in(ct_node *n, int i);
ct_tensor *ct_node_saved_out(ct_node *n, int j);
/* The edge a tensor feeds gradients into (grad_fn, or the leaf's AccumulateGrad); fn NULL if none. */
ct_edge ct_tensor_edge(ct_tensor *t);
/* Attach node n as grad_fn of t at output nr (t must not be a leaf requiring grad). */
void ct_set_history(ct_tensor *t, ct_node *n, int nr);
/* Generic record: makes a node for `op` with inputs/outputs of the call. Returns
 * the node (borrowed from the outputs) or NULL if nothing required grad. */
ct_node *ct_record_node(int op, int n_in, ct_tensor *const *in, int n_out, ct_tensor *const *out,
                        const ct_attrs *a, uint32_t save, ct_backward_fn bw, const char *name);
/* Adds a custom node's hooks list support. */
bool ct_grad_mode_recording(void);

/* Helpers for derivative formulas: reduce a gradient to an input's shape (sum over
 * broadcast dims) and dtype; returns a new reference. */
ct_tensor *ct_grad_sum_to(const ct_tensor *g, const ct_meta *m);
/* zeros with the node input's / output's meta */
ct_tensor *ct_zeros_meta(const ct_meta *m);

/* hooks on tensors: a leaf's list is t->hooks (run by its AccumulateGrad node); a
 * non-leaf's list is shared by the handle and its grad_fn (node->hooks[output_nr]),
 * refcounted, and moves with the tensor when an in-place op gives it a new grad_fn. */
typedef struct ct_hook_list {
  int n, cap, next_id;
  int64_t refs;
  struct {
    int id;               /* -1 for the retain_grad entry */
    ct_tensor_hook_fn fn; /* NULL: retain_grad (stores the gradient into the watched handle's .grad) */
    void *user;
  } *h;
} ct_hook_list;
/* Apply t's hooks to grad (takes ownership of grad, returns new ref or NULL on error). */
ct_tensor *ct_apply_hooks(ct_tensor *t, ct_tensor *grad);
/* Drops one reference to the list (frees it with the last). */
void ct_hooks_free(ct_hook_list *l);
/* Makes t's hook list the one of t's grad_fn output (merging if that already has one). */
void ct_hooks_attach(ct_tensor *t);

#endif
