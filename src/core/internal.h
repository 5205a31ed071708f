/* Internal core declarations shared by every layer of the library. */
#ifndef CT_CORE_INTERNAL_H
#define CT_CORE_INTERNAL_H

#include "ctorch.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ------------------------------------------------------------------ */
/* Sets the thread's error (printf-style) and returns `st`. */
ct_status ct_set_error(ct_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Emits a warning through the handler of ct_set_warn_handler (printf-style). */
void ct_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prefix the current message (for adding context). */
#define CT_ERR(st, ...) ct_set_error((st), __VA_ARGS__)
/* Count of errors set on this thread, and the latest message (survives ct_clear_error). */
uint64_t ct_error_serial(void);
const char *ct_error_recent(void);
/* Evaluate a ct_status expression; return it on failure. */
#define CT_TRY(expr)                    \
  do {                                  \
    ct_status _st = (expr);             \
    if (_st != CT_OK) return _st;       \
  } while (0)

/* ---- dtype helpers --------------------------------------------------------- */
typedef enum { CT_CAT_BOOL = 0, CT_CAT_INT = 1, CT_CAT_FLOAT = 2 } ct_category;
ct_category ct_dtype_category(ct_dtype dt);
/* PyTorch's name in messages: "Float", "Long", "Bool"... */
const char *ct_dtype_torch_name(ct_dtype dt);
/* Legacy type string "torch.FloatTensor" used in autograd messages. */
const char *ct_dtype_legacy_name(ct_dtype dt);
/* The C++ type name PyTorch prints in some dtype checks ("float", "long int", "c10::Half"). */
const char *ct_dtype_cpp_name(ct_dtype dt);
bool ct_dtype_valid(int dt);
/* Load element of dtype dt at p as double / int64, and store. */
double ct_load_f64(const void *p, ct_dtype dt);
int64_t ct_load_i64(const void *p, ct_dtype dt);
void ct_store_f64(void *p, ct_dtype dt, double v);
void ct_store_i64(void *p, ct_dtype dt, int64_t v);

/* ---- storage ------------------------------------------------------------------ */
struct ct_backend;
typedef struct ct_storage {
  int64_t refcount;
  void *data;     /* host pointer (CPU) or device handle */
  size_t nbytes;
  ct_device device;
  const struct ct_backend *backend;
  uint64_t version; /* shared version counter of every view of this storage */
  /* external memory (from_blob / mmap): freed with this deleter instead of the allocator */
  void (*deleter)(void *data, void *ctx);
  void *deleter_ctx;
  /* its address was handed out (ct_data_ptr, numpy/JS views) or it is external memory: writes
   * through such pointers bump no counter, so nothing derived from its contents may be cached */
  bool raw_exposed;
} ct_storage;

ct_storage *ct_storage_new(ct_device dev, size_t nbytes);
ct_storage *ct_storage_from_external(void *data, size_t nbytes, void (*deleter)(void *, void *), void *ctx);
void ct_storage_retain(ct_storage *s);
void ct_storage_release(ct_storage *s);
/* Grows s in place to nbytes (kept bytes copied; every tensor over s sees the new memory), as
 * PyTorch's resize_ does; external memory cannot grow. */
ct_status ct_storage_grow(ct_storage *s, size_t nbytes);

/* ---- tensor handle ------------------------------------------------------------ */
struct ct_node;
struct ct_hook_list;
struct ct_tensor {
  int64_t refcount;
  ct_storage *storage;
  int ndim;
  int64_t shape[CT_MAX_DIMS];
  int64_t stride[CT_MAX_DIMS];
  int64_t offset; /* in elements */
  ct_dtype dtype;
  bool requires_grad;     /* meaningful for leaves; non-leaves require grad iff grad_fn != NULL */
  bool is_wrapped_number; /* a Python scalar turned into a 0-dim tensor: promotes by category only */
  bool retains_grad;
  bool is_inference;      /* created in inference mode */
  struct ct_tensor *grad;
  struct ct_node *grad_fn; /* strong */
  int output_nr;
  struct ct_node *grad_acc; /* weak: AccumulateGrad node of a leaf, if alive */
  struct ct_tensor *base;   /* strong: the root base if this is a view */
  struct ct_hook_list *hooks;
  /* scope bookkeeping */
  struct ct_scope *scope;
  int64_t scope_slot;
  /* references held by library objects (view bases, saved tensors, .grad, AccumulateGrad)
   * through ct_hold: never the creator's reference that a scope owns */
  int64_t holds;
  struct ct_weak *weak; /* weak-reference cell (autograd's saved inputs), made on first use */
  /* own version counter shared by this handle's views and aliases (PyTorch's `.data` gets one);
   * NULL: the storage's counter */
  struct ct_vcell *vcell;
  /* how this view was made (PyTorch's CreationMeta), for the in-place checks: CT_VIEW_* */
  uint8_t view_creation;
  int32_t view_output; /* CT_VIEW_MULTI: which output of the multi-view op this is */
};
enum { CT_VIEW_DEFAULT = 0, CT_VIEW_NO_GRAD, CT_VIEW_INFERENCE, CT_VIEW_MULTI };
/* Output k of an op returning several views (unbind, split): made with grad mode on, it may not be
 * changed in place while autograd records (PyTorch's MULTI_OUTPUT_NODE). */
static inline void ct_mark_multi_view(ct_tensor *v, int k) {
  if (v->base && v->view_creation == CT_VIEW_DEFAULT) {
    v->view_creation = CT_VIEW_MULTI;
    v->view_output = k;
  }
}
typedef struct ct_vcell {
  int64_t refs;
  uint64_t v;
} ct_vcell;
/* The version counter t reads and bumps. */
static inline uint64_t *ct_vptr(const ct_tensor *t) { return t->vcell ? &t->vcell->v : &t->storage->version; }
/* dst (a new view or alias of src) shares src's counter. */
static inline void ct_vcell_share(ct_tensor *dst, const ct_tensor *src) {
  if (src->vcell && !dst->vcell) {
    __atomic_add_fetch(&src->vcell->refs, 1, __ATOMIC_RELAXED);
    dst->vcell = src->vcell;
  }
}

/* A new handle with no storage yet (refcount 1, registered in the current scope). */
ct_tensor *ct_tensor_alloc_handle(void);
/* New contiguous tensor with fresh storage on dev. */
ct_tensor *ct_tensor_new(int ndim, const int64_t *shape, ct_dtype dt, ct_device dev);
/* New handle over s (retained) with the given geometry. */
ct_tensor *ct_tensor_over(ct_storage *s, int ndim, const int64_t *shape, const int64_t *stride, int64_t offset,
                          ct_dtype dt);
/* A view handle of t: shares storage, sets base; no autograd. */
ct_tensor *ct_make_view(const ct_tensor *t, int ndim, const int64_t *shape, const int64_t *stride, int64_t offset);
/* Contiguous strides for a shape; returns false on overflow. */
bool ct_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride);
/* numel with overflow check (returns -1 and sets error on overflow/negative dims). */
int64_t ct_shape_numel(int ndim, const int64_t *shape);
bool ct_geom_is_contiguous(int ndim, const int64_t *shape, const int64_t *stride);
/* Element pointer for CPU tensors (data + offset*itemsize). */
static inline char *ct_cpu_ptr(const ct_tensor *t) {
  return (char *)t->storage->data + t->offset * (int64_t)ct_dtype_size(t->dtype);
}
/* ct_data_ptr for the library's own use: the same pointer (NULL off the CPU) without marking the
 * storage raw_exposed (the public ct_data_ptr marks it: its caller may write behind our back) */
static inline void *ct_host_ptr(const ct_tensor *t) {
  return t && t->storage->device.type == CT_DEVICE_CPU ? ct_cpu_ptr(t) : NULL;
}
/* Bumped by every in-place write through a handle with its own counter (a `.data` alias), which
 * its storage's counter does not see: caches keyed on a storage's version (the eval conv weight
 * cache, kernels_conv.c) check this too. */
extern uint64_t ct_alias_write_epoch;
static inline void ct_bump_version(ct_tensor *t) {
  if (t->vcell) __atomic_add_fetch(&ct_alias_write_epoch, 1, __ATOMIC_RELAXED);
  (*ct_vptr(t))++;
}
/* Whether grad would flow: requires_grad leaf or has grad_fn. A view made with grad mode off (or in
 * inference mode) of a tensor that requires grad also reports it, as in PyTorch, though it has no
 * grad_fn and no accumulator: ops using it record graph, but its gradient goes nowhere. */
static inline bool ct_tensor_requires_grad(const ct_tensor *t) {
  if (t->requires_grad || t->grad_fn != NULL) return true;
  return t->base && (t->view_creation == CT_VIEW_NO_GRAD || t->view_creation == CT_VIEW_INFERENCE) &&
         (t->base->requires_grad || t->base->grad_fn != NULL);
}

/* Wrap negative dim; sets IndexError like PyTorch on out of range. Returns -1 on error. */
int64_t ct_wrap_dim(int64_t dim, int ndim);
/* Shape string "[2, 3]" into buf. */
const char *ct_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);
#define CT_SHAPE_STR(t, buf) ct_shape_str((t)->ndim, (t)->shape, buf, sizeof(buf))

/* Argument checks used by every public entry point. */
ct_status ct_check_tensor(const ct_tensor *t, const char *what);
ct_status ct_check_same_device(const char *op, int n, const ct_tensor *const *ts);

/* ---- broadcasting and promotion ---------------------------------------------- */
/* Broadcast shapes; error worded like PyTorch. */
ct_status ct_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out);
/* torch.result_type over tensors (wrapped numbers and 0-dim take part by category). */
ct_dtype ct_result_type_n(int n, const ct_tensor *const *ts);
/* Make a wrapped-number 0-dim tensor from a scalar (cpu). */
ct_tensor *ct_wrap_scalar(ct_scalar s);

/* ---- scopes ------------------------------------------------------------------- */
void ct_scope_register(ct_tensor *t);
void ct_scope_unregister(ct_tensor *t);
/* For internal code storing a tensor it got from an op into a long-lived field:
 * takes the creator's reference away from the scope when it is the only one. */
ct_tensor *ct_own(ct_tensor *t);
/* A reference kept by a library object (ct_unhold gives it back). Unlike ct_retain it
 * is not mistaken for the creator's: when every other reference of a scoped handle
 * has been released, the handle leaves its scope, so the scope never releases a
 * reference that its creator already gave back. */
ct_tensor *ct_hold(ct_tensor *t);
void ct_unhold(ct_tensor *t);
bool ct_scope_active(void); /* inside some scope */
ct_status ct_scope_end_failed(ct_scope *s); /* ends s keeping the failing op's error */
/* For ops that return their input unchanged (contiguous of a contiguous tensor, to() of
 * the same dtype, ...): t itself as a new reference, as PyTorch returns self. Inside a
 * scope that is a new handle with t's storage, geometry and history (a leaf requiring
 * grad is aliased through a view node), so that the scope owns it like any result and
 * releasing it or ending the scope stays balanced. */
ct_tensor *ct_same(const ct_tensor *t);

/* ---- threads -------------------------------------------------------------- */
/* Runs fn(ctx, begin, end) over [0, n) split across the pool; grain = min items per task. */
typedef void (*ct_range_fn)(void *ctx, int64_t begin, int64_t end);
void ct_parallel_for(int64_t n, int64_t grain, ct_range_fn fn, void *ctx);

/* ---- misc ------------------------------------------------------------------ */
void *ct_xmalloc(size_t n); /* sets OOM error and returns NULL on failure */
void *ct_xcalloc(size_t n, size_t sz);
/* An A/B switch of a fast path, read from the environment once: off when NAME is set to a value
 * starting with '0' ("CT_X=0" restores the former path), on otherwise. *cache starts at -1. */
static inline bool ct_env_switch(const char *name, int *cache) {
  int v = __atomic_load_n(cache, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv(name);
    v = e && e[0] == '0' ? 0 : 1;
    __atomic_store_n(cache, v, __ATOMIC_RELAXED);
  }
  return v != 0;
}
/* Overflow-checked multiply; returns false on overflow. */
static inline bool ct_mul_ok(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

#endif
