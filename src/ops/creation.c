/* Factories, copies and dtype/device conversion. */
#include "../autograd/autograd.h"
#include "../backend/backend.h"
#include "ctorch/cuda.h"
#include <math.h>
#include <stdlib.h>

ct_options ct_opts(void) {
  ct_options o = {ct_get_default_dtype(), {CT_DEVICE_CPU, 0}, false};
  return o;
}
ct_options ct_opts_dtype(ct_dtype dt) {
  ct_options o = ct_opts();
  o.dtype = dt;
  return o;
}

static ct_status check_opts(const ct_options *o) {
  if (!ct_dtype_valid(o->dtype)) return CT_ERR(CT_ERR_TYPE, "invalid dtype %d", (int)o->dtype);
  if (o->requires_grad && !ct_dtype_is_floating(o->dtype))
    return CT_ERR(CT_ERR_RUNTIME, "Only Tensors of floating point and complex dtype can require gradients");
  return CT_OK;
}

static ct_tensor *finish(ct_tensor *t, const ct_options *o) {
  if (t && o->requires_grad) t->requires_grad = true;
  return t;
}

ct_tensor *ct_empty(int ndim, const int64_t *shape, ct_options o) {
  if (check_opts(&o)) return NULL;
  if (ndim > 0 && !shape) {
    ct_set_error(CT_ERR_VALUE, "empty: shape is NULL");
    return NULL;
  }
  return finish(ct_tensor_new(ndim, shape, o.dtype, o.device), &o);
}

ct_status ct_fill_nograd(ct_tensor *t, ct_scalar v) {
  ct_call c = ct_call_make(CT_OP_fill);
  c.n_out = 1;
  c.out[0] = t;
  c.a.s[0] = v;
  return ct_run_kernel(&c);
}

ct_tensor *ct_full(int ndim, const int64_t *shape, ct_scalar value, ct_options o) {
  if (check_opts(&o)) return NULL;
  ct_tensor *t = ct_tensor_new(ndim, shape, o.dtype, o.device);
  if (!t) return NULL;
  if (ct_fill_nograd(t, value) != CT_OK) {
    ct_release(t);
    return NULL;
  }
  return finish(t, &o);
}
ct_tensor *ct_zeros(int ndim, const int64_t *shape, ct_options o) { return ct_full(ndim, shape, ct_si(0), o); }
ct_tensor *ct_ones(int ndim, const int64_t *shape, ct_options o) { return ct_full(ndim, shape, ct_si(1), o); }
ct_tensor *ct_scalar_tensor(ct_scalar v, ct_options o) { return ct_full(0, NULL, v, o); }

ct_tensor *ct_zeros_meta(const ct_meta *m) {
  ct_options o = {m->dtype, m->device, false};
  return ct_zeros(m->ndim, m->shape, o);
}

static ct_options like_opts(const ct_tensor *t, const ct_options *o) {
  if (o) return *o;
  ct_options r = {t->dtype, t->storage->device, false};
  return r;
}
ct_tensor *ct_empty_like(const ct_tensor *t, const ct_options *o) {
  if (ct_check_tensor(t, "empty_like")) return NULL;
  return ct_empty(t->ndim, t->shape, like_opts(t, o));
}
ct_tensor *ct_zeros_like(const ct_tensor *t, const ct_options *o) {
  if (ct_check_tensor(t, "zeros_like")) return NULL;
  return ct_zeros(t->ndim, t->shape, like_opts(t, o));
}
ct_tensor *ct_ones_like(const ct_tensor *t, const ct_options *o) {
  if (ct_check_tensor(t, "ones_like")) return NULL;
  return ct_ones(t->ndim, t->shape, like_opts(t, o));
}
ct_tensor *ct_full_like(const ct_tensor *t, ct_scalar v, const ct_options *o) {
  if (ct_check_tensor(t, "full_like")) return NULL;
  return ct_full(t->ndim, t->shape, v, like_opts(t, o));
}

static void borrowed(void *data, void *ctx) {
  (void)data;
  (void)ctx;
}

ct_tensor *ct_from_buffer(const void *buf, ct_dtype src_dtype, int ndim, const int64_t *shape, ct_options o) {
  if (check_opts(&o)) return NULL;
  if (!ct_dtype_valid(src_dtype)) {
    ct_set_error(CT_ERR_TYPE, "invalid source dtype %d", (int)src_dtype);
    return NULL;
  }
  ct_tensor *t = ct_tensor_new(ndim, shape, o.dtype, o.device);
  if (!t) return NULL;
  int64_t n = ct_numel(t);
  if (n > 0 && !buf) {
    ct_release(t);
    ct_set_error(CT_ERR_VALUE, "from_buffer: buffer is NULL");
    return NULL;
  }
  /* wrap the caller's buffer (borrowed, never freed) and convert into t */
  int64_t st[CT_MAX_DIMS];
  ct_contiguous_strides(ndim, shape, st);
  ct_storage *s = ct_storage_from_external((void *)buf, (size_t)n * ct_dtype_size(src_dtype), borrowed, NULL);
  if (!s) {
    ct_release(t);
    return NULL;
  }
  ct_tensor *src = ct_tensor_over(s, ndim, shape, st, 0, src_dtype);
  ct_storage_release(s);
  ct_status stt = src ? ct_copy_(t, src) : ct_last_status();
  ct_release(src);
  if (stt != CT_OK) {
    ct_release(t);
    return NULL;
  }
  return finish(t, &o);
}

ct_tensor *ct_from_floats(const float *buf, int ndim, const int64_t *shape) {
  return ct_from_buffer(buf, CT_FLOAT32, ndim, shape, ct_opts_dtype(CT_FLOAT32));
}

/* ---- ranges ---- */
static ct_tensor *range_tensor(int64_t n, ct_options o, ct_attrs a) {
  int64_t shape[1] = {n};
  ct_tensor *t = ct_empty(1, shape, o);
  if (!t) return NULL;
  ct_call c = ct_call_make(CT_OP_arange);
  c.n_out = 1;
  c.out[0] = t;
  c.a = a;
  if (ct_run_kernel(&c) != CT_OK) {
    ct_release(t);
    return NULL;
  }
  return t;
}

ct_tensor *ct_arange(ct_scalar start, ct_scalar end, ct_scalar step, const ct_options *opt) {
  ct_options o = ct_opts();
  bool any_float = start.kind == CT_SCALAR_FLOAT || end.kind == CT_SCALAR_FLOAT || step.kind == CT_SCALAR_FLOAT;
  if (opt) o = *opt;
  else o.dtype = any_float ? ct_get_default_dtype() : CT_INT64;
  if (check_opts(&o)) return NULL;
  double s = start.kind == CT_SCALAR_FLOAT ? start.f : (double)start.i;
  double e = end.kind == CT_SCALAR_FLOAT ? end.f : (double)end.i;
  double d = step.kind == CT_SCALAR_FLOAT ? step.f : (double)step.i;
  if (!isfinite(s) || !isfinite(e)) {
    ct_set_error(CT_ERR_RUNTIME, "unsupported range: %g -> %g", s, e);
    return NULL;
  }
  if (d == 0) {
    ct_set_error(CT_ERR_RUNTIME, "step must be nonzero");
    return NULL;
  }
  if ((d > 0 && e < s) || (d < 0 && e > s)) {
    ct_set_error(CT_ERR_RUNTIME, "upper bound and larger bound inconsistent with step sign");
    return NULL;
  }
  double nf = ceil((e - s) / d);
  if (nf > 9e15) {
    ct_set_error(CT_ERR_RUNTIME, "invalid size, possible overflow?");
    return NULL;
  }
  ct_attrs a;
  memset(&a, 0, sizeof a);
  a.f[0] = s;
  a.f[1] = d;
  a.s[0] = ct_si(start.kind == CT_SCALAR_FLOAT ? (int64_t)start.f : start.i);
  a.s[1] = ct_si(step.kind == CT_SCALAR_FLOAT ? (int64_t)step.f : step.i);
  if (!ct_dtype_is_floating(o.dtype) && any_float) {
    /* integer arange with float bounds: computed in double then truncated */
    a.k[0] = 0;
    ct_options of = o;
    of.dtype = CT_FLOAT64;
    of.requires_grad = false;
    ct_tensor *f = range_tensor((int64_t)nf, of, a);
    if (!f) return NULL;
    ct_tensor *r = ct_to_dtype(f, o.dtype);
    ct_release(f);
    return r;
  }
  return finish(range_tensor((int64_t)nf, o, a), &o);
}

/* steps points from start to end (kind 1: linspace; kind 2: logspace, base ** each point) */
static ct_tensor *spaced(int kind, double start, double end, int64_t steps, double base, ct_options o) {
  if (steps < 0) {
    ct_set_error(CT_ERR_RUNTIME, "number of steps must be non-negative");
    return NULL;
  }
  if (check_opts(&o)) return NULL;
  ct_attrs a;
  memset(&a, 0, sizeof a);
  a.k[0] = kind;
  a.f[0] = start;
  a.f[1] = end;
  a.f[2] = base;
  return finish(range_tensor(steps, o, a), &o);
}

ct_tensor *ct_linspace(double start, double end, int64_t steps, ct_options o) {
  return spaced(1, start, end, steps, 0.0, o);
}

ct_tensor *ct_logspace(double start, double end, int64_t steps, double base, ct_options o) {
  return spaced(2, start, end, steps, base, o);
}

ct_tensor *ct_eye(int64_t n, int64_t m, ct_options o) {
  if (m < 0) m = n;
  if (n < 0) {
    ct_set_error(CT_ERR_RUNTIME, "n must be greater or equal to 0, got %lld", (long long)n);
    return NULL;
  }
  int64_t shape[2] = {n, m};
  ct_tensor *t = ct_empty(2, shape, o);
  if (!t) return NULL;
  ct_call c = ct_call_make(CT_OP_eye);
  c.n_out = 1;
  c.out[0] = t;
  if (ct_run_kernel(&c) != CT_OK) {
    ct_release(t);
    return NULL;
  }
  return t;
}

/* ---- copies ---- */
ct_status ct_bw_copy(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  (void)n;
  gin[0] = ct_retain(g[0]); /* the engine converts the dtype back to the input's */
  return CT_OK;
}

/* A differentiable copy of t into a fresh tensor of dtype dt. */
static ct_tensor *copy_as(const ct_tensor *t, ct_dtype dt) {
  ct_tensor *o = ct_tensor_new(t->ndim, t->shape, dt, t->storage->device);
  if (!o) return NULL;
  ct_call c = ct_call_make(CT_OP_copy);
  c.n_in = 1;
  c.n_out = 1;
  c.in[0] = (ct_tensor *)t;
  c.out[0] = o;
  if (ct_dispatch(&c) != CT_OK) {
    ct_release(o);
    return NULL;
  }
  return o;
}

ct_tensor *ct_clone(const ct_tensor *t) {
  if (ct_check_tensor(t, "clone")) return NULL;
  ct_tensor *o = copy_as(t, t->dtype);
  if (o && o->grad_fn) o->grad_fn->name = "CloneBackward0";
  return o;
}

ct_tensor *ct_contiguous(const ct_tensor *t) {
  if (ct_check_tensor(t, "contiguous")) return NULL;
  if (ct_is_contiguous(t)) return ct_same(t);
  ct_tensor *o = copy_as(t, t->dtype);
  if (o && o->grad_fn) o->grad_fn->name = "CloneBackward0";
  return o;
}

ct_tensor *ct_to_dtype(const ct_tensor *t, ct_dtype dt) {
  if (ct_check_tensor(t, "to")) return NULL;
  if (!ct_dtype_valid(dt)) {
    ct_set_error(CT_ERR_TYPE, "invalid dtype %d", (int)dt);
    return NULL;
  }
  if (t->dtype == dt) return ct_same(t);
  ct_tensor *o = copy_as(t, dt);
  if (o && o->grad_fn) o->grad_fn->name = "ToCopyBackward0";
  return o;
}

/* ---- moving between devices ---- */
/* Whether t's elements fill one run of its storage without gaps or overlap (a
 * permutation of a contiguous layout): such a tensor moves with its strides, as
 * PyTorch's .to() keeps a dense tensor's memory format. */
static bool dense_span(const ct_tensor *t) {
  int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS];
  int n = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] == 0) return true;
    if (t->shape[d] == 1) continue;
    if (t->stride[d] <= 0) return false;
    sh[n] = t->shape[d];
    st[n++] = t->stride[d];
  }
  for (int a = 1; a < n; a++) /* sort by stride, smallest first */
    for (int b = a; b > 0 && st[b] < st[b - 1]; b--) {
      int64_t x = st[b]; st[b] = st[b - 1]; st[b - 1] = x;
      x = sh[b]; sh[b] = sh[b - 1]; sh[b - 1] = x;
    }
  int64_t expect = 1;
  for (int d = 0; d < n; d++) {
    if (st[d] != expect) return false;
    expect *= sh[d];
  }
  return true;
}

/* The values of t in a new tensor on dev (no autograd): dense tensors keep their
 * strides, others are made contiguous on their own device first; the bytes go through
 * the backends' upload/download (pinned staging for CUDA). */
static ct_tensor *transfer(const ct_tensor *t, ct_device dev) {
  ct_device cur = t->storage->device;
  const ct_backend *sb = t->storage->backend, *db = ct_backend_for(dev.type);
  if (!db) {
    ct_set_error(CT_ERR_RUNTIME, "%s backend is not compiled in (backends compiled in: %s)", ct_device_type_name(dev.type),
                 ct_backends_compiled());
    return NULL;
  }
  ct_tensor *src = NULL;
  if (dense_span(t)) src = ct_retain((ct_tensor *)t);
  else {
    src = ct_tensor_new(t->ndim, t->shape, t->dtype, cur);
    if (!src) return NULL;
    ct_call c = ct_call_make(CT_OP_copy);
    c.n_in = 1;
    c.n_out = 1;
    c.in[0] = (ct_tensor *)t;
    c.out[0] = src;
    if (ct_run_kernel(&c) != CT_OK) {
      ct_release(src);
      return NULL;
    }
  }
  size_t isz = ct_dtype_size(t->dtype), nb = (size_t)ct_numel(src) * isz;
  ct_storage *s = ct_storage_new(dev, nb);
  ct_tensor *dst = s ? ct_tensor_over(s, src->ndim, src->shape, src->stride, 0, src->dtype) : NULL;
  ct_storage_release(s);
  ct_status st = dst ? CT_OK : ct_last_status();
  size_t off = (size_t)src->offset * isz;
  if (st == CT_OK && nb) {
    if (cur.type == CT_DEVICE_CPU) st = db->upload(dst->storage, 0, (const char *)src->storage->data + off, nb);
    else if (dev.type == CT_DEVICE_CPU) st = sb->download(src->storage, off, dst->storage->data, nb);
    else { /* device to device: through the host */
      void *h = ct_xmalloc(nb);
      st = h ? sb->download(src->storage, off, h, nb) : ct_last_status();
      if (st == CT_OK) st = db->upload(dst->storage, 0, h, nb);
      free(h);
    }
  }
  ct_release(src);
  if (st != CT_OK) {
    ct_release(dst);
    return NULL;
  }
  return dst;
}

/* The gradient of a device move goes back to the input's device. */
static ct_status ct_bw_to_device(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  gin[0] = ct_to_device(g[0], n->in_meta[0].device);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_tensor *ct_to_device(const ct_tensor *t, ct_device dev) {
  if (ct_check_tensor(t, "to")) return NULL;
  ct_device cur = t->storage->device;
  if (cur.type == dev.type && cur.index == dev.index) return ct_same(t);
  if (!ct_device_available(dev)) {
    if (dev.type == CT_DEVICE_CUDA && ct_backend_for(CT_DEVICE_CUDA) && ct_cuda_device_count() == 0)
      ct_set_error(CT_ERR_RUNTIME, "CUDA device %d is not available: %s", dev.index, ct_cuda_unavailable_reason());
    else
      ct_set_error(CT_ERR_RUNTIME, "%s device %d is not available (backends compiled in: %s)",
                   ct_device_type_name(dev.type), dev.index, ct_backends_compiled());
    return NULL;
  }
  ct_tensor *o = transfer(t, dev);
  if (!o) return NULL;
  if (ct_grad_mode_recording() && ct_tensor_requires_grad(t) && ct_dtype_is_floating(t->dtype)) {
    ct_tensor *in[1] = {(ct_tensor *)t}, *out[1] = {o};
    ct_clear_error();
    ct_node *n = ct_record_node(CT_OP_copy, 1, in, 1, out, NULL, CT_SAVE_NONE, ct_bw_to_device, "ToCopyBackward0");
    if (!n && ct_last_status() != CT_OK) {
      ct_release(o);
      return NULL;
    }
  }
  return o;
}

bool ct_has_internal_overlap(const ct_tensor *t) {
  for (int d = 0; d < t->ndim; d++)
    if (t->stride[d] == 0 && t->shape[d] > 1) return true;
  return false;
}

/* An in-place change recorded by autograd on the view t: refused, worded as PyTorch's
 * handle_view_on_rebase, when t was made with grad mode off, in inference mode, or as one of
 * several views returned by one op (unbind, split, chunk). */
ct_status ct_check_view_rebase(const ct_tensor *t) {
  if (!t->base) return CT_OK;
  switch (t->view_creation) {
  case CT_VIEW_NO_GRAD:
    return CT_ERR(CT_ERR_RUNTIME,
                  "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given "
                  "that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
                  "moving both the view and the inplace either both inside the no_grad block (if you don't want the "
                  "inplace to be tracked) or both outside (if you want the inplace to be tracked).");
  case CT_VIEW_INFERENCE:
    return CT_ERR(CT_ERR_RUNTIME,
                  "A view was created in inference mode and is being modified inplace in normal mode. Given that "
                  "this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving "
                  "both the view and the inplace either both inside the inference_mode block (if you don't want the "
                  "inplace to be tracked) or both outside (if you want the inplace to be tracked).");
  case CT_VIEW_MULTI:
    return CT_ERR(CT_ERR_RUNTIME,
                  "Output %d of %s is a view and is being modified inplace. This view is the output of a function "
                  "that returns multiple views. Such functions do not allow the output views to be modified "
                  "inplace. You should replace the inplace operation by an out-of-place one.",
                  (int)t->view_output, t->grad_fn && t->grad_fn->name ? t->grad_fn->name : "a multi-view function");
  default:
    return CT_OK;
  }
}

/* Checks for writing into t in place (leaf requiring grad, overlap, inference). allow_overlap: the writes
 * PyTorch 1.13 lets through an expanded tensor (fill_, zero_, masked_fill_, index_fill_, index_put_) skip
 * the overlap refusal. */
static ct_status check_inplace(const ct_tensor *t, bool allow_overlap);
ct_status ct_check_inplace(const ct_tensor *t) { return check_inplace(t, false); }
ct_status ct_check_inplace_overlap_ok(const ct_tensor *t) { return check_inplace(t, true); }
static ct_status check_inplace(const ct_tensor *t, bool allow_overlap) {
  if (ct_grad_mode_recording() && t->base && ct_tensor_requires_grad(t->base)) CT_TRY(ct_check_view_rebase(t));
  if (ct_grad_mode_recording() && t->requires_grad && !t->grad_fn) {
    if (t->base)
      return CT_ERR(CT_ERR_RUNTIME, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
    return CT_ERR(CT_ERR_RUNTIME, "a leaf Variable that requires grad is being used in an in-place operation.");
  }
  if (t->base && ct_grad_mode_recording() && t->base->requires_grad && !t->base->grad_fn)
    return CT_ERR(CT_ERR_RUNTIME, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  if (!allow_overlap && ct_has_internal_overlap(t))
    return CT_ERR(CT_ERR_RUNTIME,
                  "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                  "location. Please clone() the tensor before performing the operation.");
  if (t->is_inference && !ct_is_inference_mode())
    return CT_ERR(CT_ERR_RUNTIME, "Inplace update to inference tensor outside InferenceMode is not allowed.You can "
                                  "make a clone to get a normal tensor before doing inplace update.See "
                                  "https://github.com/pytorch/rfcs/pull/17 for more details.");
  return CT_OK;
}

ct_status ct_write_result_inplace(ct_tensor *self, ct_tensor *result);

static ct_status copy_checked(ct_tensor *dst, const ct_tensor *src, bool allow_overlap);
ct_status ct_copy_(ct_tensor *dst, const ct_tensor *src) { return copy_checked(dst, src, false); }
/* dst.fill_(src) for a 0-dim src (Python's x[...] = 0-dim value): as copy_, but a fill may write through
 * an expanded dst, as PyTorch 1.13's fill_ does. */
ct_status ct_fill_from_tensor_(ct_tensor *dst, const ct_tensor *src) {
  CT_TRY(ct_check_tensor(src, "fill_"));
  if (src->ndim != 0)
    return CT_ERR(CT_ERR_RUNTIME, "fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.",
                  src->ndim);
  return copy_checked(dst, src, true);
}

static ct_status copy_checked(ct_tensor *dst, const ct_tensor *src, bool allow_overlap) {
  CT_TRY(ct_check_tensor(dst, "copy_"));
  CT_TRY(ct_check_tensor(src, "copy_"));
  CT_TRY(ct_check_inplace_overlap_ok(dst));
  if (dst == src) { /* x.copy_(x): PyTorch returns before its overlap check (the version still counts) */
    ct_bump_version(dst);
    return CT_OK;
  }
  if (!allow_overlap) CT_TRY(ct_check_inplace(dst));
  if (src->storage->device.type != dst->storage->device.type || src->storage->device.index != dst->storage->device.index) {
    /* across devices: move src (differentiably) to dst's device, then copy there */
    ct_tensor *moved = ct_to_device(src, dst->storage->device);
    if (!moved) return ct_last_status();
    ct_status st = copy_checked(dst, moved, allow_overlap);
    ct_release(moved);
    return st;
  }
  int nd;
  int64_t shape[CT_MAX_DIMS];
  CT_TRY(ct_broadcast_shapes(dst->ndim, dst->shape, src->ndim, src->shape, &nd, shape));
  bool same = nd == dst->ndim;
  for (int d = 0; same && d < nd; d++) same = shape[d] == dst->shape[d];
  if (!same) {
    char a[160], b[160];
    return CT_ERR(CT_ERR_RUNTIME, "output with shape %s doesn't match the broadcast shape %s", CT_SHAPE_STR(dst, a),
                  ct_shape_str(nd, shape, b, sizeof b));
  }
  ct_tensor *e = ct_expand((ct_tensor *)src, dst->ndim, dst->shape);
  if (!e) return ct_last_status();
  ct_tensor *conv = NULL;
  ct_status st;
  if (ct_grad_mode_recording() && (ct_tensor_requires_grad(src) || ct_tensor_requires_grad(dst))) {
    /* differentiable: dst takes the history of a converted copy of src */
    conv = ct_to_dtype(e, dst->dtype);
    if (!conv) { ct_release(e); return ct_last_status(); }
    st = ct_write_result_inplace(dst, conv);
  } else {
    ct_call c = ct_call_make(CT_OP_copy);
    c.n_in = 1;
    c.n_out = 1;
    c.in[0] = e;
    c.out[0] = dst;
    st = ct_run_kernel(&c);
    if (st == CT_OK) ct_bump_version(dst);
  }
  ct_release(conv);
  ct_release(e);
  return st;
}

ct_status ct_fill_(ct_tensor *t, ct_scalar v) {
  CT_TRY(ct_check_tensor(t, "fill_"));
  CT_TRY(ct_check_inplace_overlap_ok(t)); /* every alias gets the same value: PyTorch allows it */
  if (ct_grad_mode_recording() && ct_tensor_requires_grad(t)) {
    /* the gradient through a fill is zero: t becomes a constant */
    ct_options o = ct_opts_dtype(t->dtype);
    o.device = t->storage->device;
    ct_tensor *z = ct_full(t->ndim, t->shape, v, o);
    if (!z) return ct_last_status();
    ct_status st = ct_write_result_inplace(t, z);
    ct_release(z);
    return st;
  }
  CT_TRY(ct_fill_nograd(t, v));
  ct_bump_version(t);
  return CT_OK;
}

ct_status ct_zero_(ct_tensor *t) { return ct_fill_(t, ct_si(0)); }

/* ---- reading values out ---- */
ct_status ct_copy_to_buffer(const ct_tensor *t, void *dst, ct_dtype dt, int64_t n) {
  CT_TRY(ct_check_tensor(t, "copy_to_buffer"));
  if (!ct_dtype_valid(dt)) return CT_ERR(CT_ERR_TYPE, "invalid dtype %d", (int)dt);
  if (n != ct_numel(t))
    return CT_ERR(CT_ERR_RUNTIME, "copy_to_buffer: buffer holds %lld elements but the tensor has %lld", (long long)n,
                  (long long)ct_numel(t));
  if (n == 0) return CT_OK;
  if (!dst) return CT_ERR(CT_ERR_VALUE, "copy_to_buffer: buffer is NULL");
  if (t->storage->device.type != CT_DEVICE_CPU) { /* device tensors: their values come to the host first */
    ct_tensor *h = transfer(t, ct_cpu());
    if (!h) return ct_last_status();
    ct_status st = ct_copy_to_buffer(h, dst, dt, n);
    ct_release(h);
    return st;
  }
  int64_t st[CT_MAX_DIMS];
  ct_contiguous_strides(t->ndim, t->shape, st);
  ct_tensor *out = ct_tensor_new(t->ndim, t->shape, dt, ct_cpu());
  if (!out) return ct_last_status();
  ct_call c = ct_call_make(CT_OP_copy);
  c.n_in = 1;
  c.n_out = 1;
  c.in[0] = (ct_tensor *)t;
  c.out[0] = out;
  ct_status s = ct_run_kernel(&c);
  if (s == CT_OK) memcpy(dst, ct_cpu_ptr(out), (size_t)n * ct_dtype_size(dt));
  ct_release(out);
  return s;
}

static ct_status check_one(const ct_tensor *t) {
  CT_TRY(ct_check_tensor(t, "item"));
  if (ct_numel(t) != 1)
    return CT_ERR(CT_ERR_RUNTIME, "a Tensor with %lld elements cannot be converted to Scalar", (long long)ct_numel(t));
  return CT_OK;
}

ct_status ct_item_double(const ct_tensor *t, double *out) {
  CT_TRY(check_one(t));
  return ct_copy_to_buffer(t, out, CT_FLOAT64, 1);
}

ct_status ct_item_int64(const ct_tensor *t, int64_t *out) {
  CT_TRY(check_one(t));
  return ct_copy_to_buffer(t, out, CT_INT64, 1);
}

ct_scalar ct_item(const ct_tensor *t) {
  ct_scalar s = ct_si(0);
  if (t && ct_dtype_is_floating(t->dtype)) {
    double v = 0;
    if (ct_item_double(t, &v) == CT_OK) s = ct_sf(v);
  } else if (t && t->dtype == CT_BOOL) {
    int64_t v = 0;
    if (ct_item_int64(t, &v) == CT_OK) s = ct_sb(v != 0);
  } else {
    int64_t v = 0;
    if (ct_item_int64(t, &v) == CT_OK) s = ct_si(v);
  }
  return s;
}
