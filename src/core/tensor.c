/* Tensor handles: refcounts, geometry and accessors. */
#include "internal.h"
#include "../autograd/autograd.h"
#include "../backend/backend.h"
#include <stdio.h>
#include <stdlib.h>

static int64_t live_tensors = 0;
int64_t ct_live_tensors(void) { return __atomic_load_n(&live_tensors, __ATOMIC_RELAXED); }

ct_tensor *ct_tensor_alloc_handle(void) {
  ct_tensor *t = ct_xcalloc(1, sizeof *t);
  if (!t) return NULL;
  t->refcount = 1;
  t->scope_slot = -1;
  t->is_inference = ct_is_inference_mode();
  __atomic_add_fetch(&live_tensors, 1, __ATOMIC_RELAXED);
  ct_scope_register(t);
  return t;
}

bool ct_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    stride[d] = s;
    int64_t m = shape[d] > 1 ? shape[d] : 1;
    if (!ct_mul_ok(s, m, &s)) return false;
  }
  return true;
}

int64_t ct_shape_numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) {
      char buf[160];
      ct_set_error(CT_ERR_RUNTIME, "Trying to create tensor with negative dimension %lld: %s", (long long)shape[d],
                   ct_shape_str(ndim, shape, buf, sizeof buf));
      return -1;
    }
    if (!ct_mul_ok(n, shape[d], &n)) {
      char buf[160];
      ct_set_error(CT_ERR_RUNTIME, "Storage size calculation overflowed with sizes=%s",
                   ct_shape_str(ndim, shape, buf, sizeof buf));
      return -1;
    }
  }
  return n;
}

bool ct_geom_is_contiguous(int ndim, const int64_t *shape, const int64_t *stride) {
  int64_t expect = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    if (shape[d] == 0) return true;
    if (shape[d] != 1) {
      if (stride[d] != expect) return false;
      expect *= shape[d];
    }
  }
  return true;
}

ct_tensor *ct_tensor_over(ct_storage *s, int ndim, const int64_t *shape, const int64_t *stride, int64_t offset,
                          ct_dtype dt) {
  ct_tensor *t = ct_tensor_alloc_handle();
  if (!t) return NULL;
  ct_storage_retain(s);
  t->storage = s;
  t->ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    t->shape[d] = shape[d];
    t->stride[d] = stride[d];
  }
  t->offset = offset;
  t->dtype = dt;
  return t;
}

ct_tensor *ct_tensor_new(int ndim, const int64_t *shape, ct_dtype dt, ct_device dev) {
  if (ndim < 0 || ndim > CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "ctorch supports tensors of at most %d dimensions, got %d", CT_MAX_DIMS, ndim);
    return NULL;
  }
  if (!ct_dtype_valid(dt)) {
    ct_set_error(CT_ERR_TYPE, "invalid dtype %d", (int)dt);
    return NULL;
  }
  if (ndim > 0 && !shape) {
    ct_set_error(CT_ERR_VALUE, "shape is NULL");
    return NULL;
  }
  int64_t n = ct_shape_numel(ndim, shape);
  if (n < 0) return NULL;
  int64_t nbytes;
  if (!ct_mul_ok(n, (int64_t)ct_dtype_size(dt), &nbytes)) {
    char buf[160];
    ct_set_error(CT_ERR_RUNTIME, "Storage size calculation overflowed with sizes=%s", ct_shape_str(ndim, shape, buf, sizeof buf));
    return NULL;
  }
  if (nbytes > (int64_t)1 << 52) {
    ct_set_error(CT_ERR_OOM, "CPU out of memory: tensor of %lld elements is too large", (long long)n);
    return NULL;
  }
#if SIZE_MAX < INT64_MAX
  /* 32-bit targets (WebAssembly): a size_t cannot hold it; refuse before the cast truncates */
  if (nbytes > (int64_t)SIZE_MAX) {
    ct_set_error(CT_ERR_OOM, "CPU out of memory: tried to allocate %lld bytes, more than the 4 GiB a 32-bit address space holds",
                 (long long)nbytes);
    return NULL;
  }
#endif
  int64_t stride[CT_MAX_DIMS];
  ct_contiguous_strides(ndim, shape, stride);
  ct_storage *s = ct_storage_new(dev, (size_t)nbytes);
  if (!s) return NULL;
  ct_tensor *t = ct_tensor_over(s, ndim, shape, stride, 0, dt);
  ct_storage_release(s);
  return t;
}

ct_tensor *ct_make_view(const ct_tensor *t, int ndim, const int64_t *shape, const int64_t *stride, int64_t offset) {
  ct_tensor *v = ct_tensor_over(t->storage, ndim, shape, stride, offset, t->dtype);
  if (!v) return NULL;
  ct_tensor *base = t->base ? t->base : (ct_tensor *)t;
  v->base = ct_hold(base);
  ct_vcell_share(v, t);
  v->is_inference = t->is_inference; /* a view is an inference tensor exactly when its base is, in any mode */
  /* PyTorch forbids in-place changes with grad recording on to views made while it was off */
  if (ct_is_inference_mode())
    v->view_creation = base->is_inference ? CT_VIEW_DEFAULT : CT_VIEW_INFERENCE;
  else if (!ct_is_grad_enabled())
    v->view_creation = CT_VIEW_NO_GRAD;
  else {
    v->view_creation = t->view_creation; /* a view of such a view inherits it */
    v->view_output = t->view_output;
  }
  return v;
}

ct_tensor *ct_own(ct_tensor *t) {
  if (t && t->scope && t->refcount == 1) ct_scope_unregister(t);
  return t;
}

ct_tensor *ct_retain(ct_tensor *t) {
  if (t) __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
  return t;
}

ct_tensor *ct_hold(ct_tensor *t) {
  if (t) {
    __atomic_add_fetch(&t->holds, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
  }
  return t;
}

void ct_unhold(ct_tensor *t) {
  if (!t) return;
  if (__atomic_load_n(&t->holds, __ATOMIC_RELAXED) > 0) __atomic_sub_fetch(&t->holds, 1, __ATOMIC_RELAXED);
  ct_release(t);
}

void ct_release(ct_tensor *t) {
  if (!t) return;
  int64_t rc = __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL);
  if (rc != 0) {
    /* only library holds are left: the creator released its reference early, so the
     * scope no longer owns one (else ct_scope_end would release a hold's reference) */
    if (t->scope && rc == __atomic_load_n(&t->holds, __ATOMIC_RELAXED)) ct_scope_unregister(t);
    return;
  }
  if (t->scope) ct_scope_unregister(t);
  ct_weak_clear(t);
  if (t->grad_fn) {
    ct_node *n = t->grad_fn;
    if (t->output_nr < CT_MAX_OP_OUT && n->watch[t->output_nr] == t) n->watch[t->output_nr] = NULL;
    ct_node_release(n);
  }
  if (t->grad_acc) t->grad_acc->leaf = NULL; /* cannot happen while the node holds t; kept for safety */
  ct_unhold(t->grad);
  ct_unhold(t->base);
  ct_hooks_free(t->hooks);
  ct_storage_release(t->storage);
  if (t->vcell && __atomic_sub_fetch(&t->vcell->refs, 1, __ATOMIC_ACQ_REL) == 0) free(t->vcell);
  __atomic_sub_fetch(&live_tensors, 1, __ATOMIC_RELAXED);
  free(t);
}

ct_status ct_check_tensor(const ct_tensor *t, const char *what) {
  if (!t) return CT_ERR(CT_ERR_VALUE, "%s: expected a tensor, got NULL", what ? what : "argument");
  return CT_OK;
}

ct_status ct_check_same_device(const char *op, int n, const ct_tensor *const *ts) {
  const ct_tensor *first = NULL;
  for (int i = 0; i < n; i++) {
    if (!ts[i] || ts[i]->is_wrapped_number) continue;
    if (ts[i]->ndim == 0 && ts[i]->storage->device.type == CT_DEVICE_CPU) continue; /* cpu scalars mix freely */
    if (!first) { first = ts[i]; continue; }
    ct_device a = first->storage->device, b = ts[i]->storage->device;
    if (a.type != b.type || a.index != b.index)
      return CT_ERR(CT_ERR_RUNTIME,
                    "Expected all tensors to be on the same device, but found at least two devices, %s:%d and %s:%d! "
                    "(in %s)",
                    ct_device_type_name(a.type), a.index, ct_device_type_name(b.type), b.index, op);
  }
  return CT_OK;
}

int64_t ct_wrap_dim(int64_t dim, int ndim) {
  int64_t n = ndim > 0 ? ndim : 1; /* scalars accept dim 0 and -1 */
  if (dim < -n || dim >= n) {
    ct_set_error(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                 (long long)-n, (long long)(n - 1), (long long)dim);
    return -1;
  }
  return dim < 0 ? dim + n : dim;
}

const char *ct_shape_str(int ndim, const int64_t *shape, char *buf, size_t n) {
  size_t o = 0;
  o += (size_t)snprintf(buf + o, n - o, "[");
  for (int d = 0; shape && d < ndim && o < n; d++) o += (size_t)snprintf(buf + o, n - o, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (o < n) snprintf(buf + o, n - o, "]");
  return buf;
}

/* ---- public accessors ---- */
int ct_ndim(const ct_tensor *t) { return t ? t->ndim : -1; }
const int64_t *ct_shape(const ct_tensor *t) { return t ? t->shape : NULL; }
const int64_t *ct_strides(const ct_tensor *t) { return t ? t->stride : NULL; }
int64_t ct_size(const ct_tensor *t, int dim) {
  if (ct_check_tensor(t, "size") != CT_OK) return -1;
  if (t->ndim == 0) {
    ct_set_error(CT_ERR_INDEX, "dimension specified as %d but tensor has no dimensions", dim);
    return -1;
  }
  int64_t d = ct_wrap_dim(dim, t->ndim);
  return d < 0 ? -1 : t->shape[d];
}
int64_t ct_stride(const ct_tensor *t, int dim) {
  if (ct_check_tensor(t, "stride") != CT_OK) return -1;
  if (t->ndim == 0) {
    ct_set_error(CT_ERR_INDEX, "dimension specified as %d but tensor has no dimensions", dim);
    return -1;
  }
  int64_t d = ct_wrap_dim(dim, t->ndim);
  return d < 0 ? -1 : t->stride[d];
}
int64_t ct_numel(const ct_tensor *t) {
  if (!t) return -1;
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}
int64_t ct_storage_offset(const ct_tensor *t) { return t ? t->offset : -1; }
ct_dtype ct_tensor_dtype(const ct_tensor *t) { return t ? t->dtype : CT_FLOAT32; }
ct_device ct_tensor_device(const ct_tensor *t) { return t ? t->storage->device : ct_cpu(); }
bool ct_is_contiguous(const ct_tensor *t) { return t && ct_geom_is_contiguous(t->ndim, t->shape, t->stride); }
void *ct_data_ptr(const ct_tensor *t) {
  if (!t || t->storage->device.type != CT_DEVICE_CPU) return NULL;
  t->storage->raw_exposed = true; /* the caller may write through it: no cache may trust a counter */
  return ct_cpu_ptr(t);
}
uint64_t ct_alias_write_epoch; /* internal.h */
uint64_t ct_version(const ct_tensor *t) { return t ? *ct_vptr(t) : 0; }

ct_tensor *ct_data_alias(const ct_tensor *t) {
  if (ct_check_tensor(t, "data")) return NULL;
  ct_vcell *c = calloc(1, sizeof *c);
  if (!c) {
    ct_set_error(CT_ERR_OOM, "out of memory");
    return NULL;
  }
  ct_tensor *d = ct_tensor_over(t->storage, t->ndim, t->shape, t->stride, t->offset, t->dtype);
  if (!d) {
    free(c);
    return NULL;
  }
  c->refs = 1;
  d->vcell = c;
  d->is_inference = t->is_inference;
  return d;
}
bool ct_is_view(const ct_tensor *t) { return t && t->base != NULL; }
ct_tensor *ct_view_base(const ct_tensor *t) { return t ? t->base : NULL; }
bool ct_shares_storage(const ct_tensor *a, const ct_tensor *b) { return a && b && a->storage == b->storage; }
