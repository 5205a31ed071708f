/* channels_last: PyTorch's NHWC-in-memory layout of [N, C, H, W] tensors (strides (HWC, 1, WC, C)).
 * The user opts in as in PyTorch (module and input converted); the ops keep the layout
 * (ct_pointwise, and on CUDA convolution and batch norm), so cuDNN's NHWC kernels need no
 * transposes around them. */
#include "layout.h"
#include "ctorch/creation.h"
#include "ctorch/dict.h"
#include "ctorch/view.h"
#include "ctorch/autograd.h"
#include <stdlib.h>

static void cl_strides(const int64_t *shape, int64_t *st) {
  st[1] = 1;
  st[3] = shape[1];
  st[2] = shape[3] * shape[1];
  st[0] = shape[2] * shape[3] * shape[1];
}

bool ct_is_channels_last(const ct_tensor *t) {
  if (!t || t->ndim != 4) return false;
  /* PyTorch's is_channels_last_strides check, dims C, W, H, N in that order */
  static const int order[4] = {1, 3, 2, 0};
  int64_t expect = 1;
  for (int k = 0; k < 4; k++) {
    int d = order[k];
    if (t->shape[d] == 0) return true;
    if (t->shape[d] != 1) {
      if (t->stride[d] != expect) return false;
      expect *= t->shape[d];
    }
  }
  return true;
}

bool ct_suggests_channels_last(const ct_tensor *t) { return ct_is_channels_last(t) && !ct_is_contiguous(t); }

ct_tensor *ct_new_channels_last(const int64_t *shape, ct_dtype dt, ct_device dev) {
  ct_tensor *t = ct_tensor_new(4, shape, dt, dev);
  if (t) cl_strides(t->shape, t->stride);
  return t;
}

/* non-overlapping and dense: the dims of size > 1 sorted by stride pack without gaps */
static bool dense(const ct_tensor *t) {
  int d[CT_MAX_DIMS], n = 0;
  for (int i = 0; i < t->ndim; i++) {
    if (t->shape[i] == 0) return true;
    if (t->shape[i] != 1) d[n++] = i;
  }
  for (int i = 1; i < n; i++) /* insertion sort by stride */
    for (int j = i; j > 0 && t->stride[d[j]] < t->stride[d[j - 1]]; j--) {
      int s = d[j];
      d[j] = d[j - 1];
      d[j - 1] = s;
    }
  int64_t expect = 1;
  for (int i = 0; i < n; i++) {
    if (t->stride[d[i]] != expect) return false;
    expect *= t->shape[d[i]];
  }
  return true;
}

bool ct_dense_same_layout(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b || a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i] || (a->shape[i] != 1 && a->stride[i] != b->stride[i])) return false;
  return dense(a);
}

bool ct_pointwise_wants_channels_last(int n, const ct_tensor *const *in, int nd, const int64_t *shape) {
  if (nd != 4) return false;
  for (int i = 0; i < n; i++) {
    const ct_tensor *t = in[i];
    if (!t || t->is_wrapped_number || t->ndim != 4) continue;
    bool full = true;
    for (int d = 0; d < 4; d++) full = full && t->shape[d] == shape[d];
    if (!full || !dense(t)) continue; /* broadcast operands do not decide */
    return ct_suggests_channels_last(t);
  }
  return false;
}

ct_tensor *ct_dispatch_new_channels_last(int op, int n_in, ct_tensor *const *in, const int64_t *shape, ct_dtype dt,
                                         const ct_attrs *a) {
  ct_call c = ct_call_make(op);
  c.n_in = n_in;
  c.n_out = 1;
  for (int i = 0; i < n_in; i++) c.in[i] = in[i];
  if (a) c.a = *a;
  if (!(c.out[0] = ct_new_channels_last(shape, dt, n_in ? in[0]->storage->device : ct_cpu()))) return NULL;
  if (ct_dispatch(&c) != CT_OK) {
    ct_release(c.out[0]);
    return NULL;
  }
  return c.out[0];
}

ct_status ct_restride_out0_channels_last(ct_call *c) {
  if (!c->out[0] || c->out[0]->ndim != 4 || ct_is_channels_last(c->out[0])) return CT_OK;
  ct_tensor *t = ct_new_channels_last(c->out[0]->shape, c->out[0]->dtype, c->out[0]->storage->device);
  bool prev = ct_set_grad_enabled(false);
  ct_status st = t ? ct_copy_(t, c->out[0]) : ct_last_status();
  ct_set_grad_enabled(prev);
  if (st == CT_OK) {
    ct_release(c->out[0]);
    c->out[0] = t;
  } else ct_release(t);
  return st;
}

ct_status ct_dispatch_channels_last_out0(ct_call *c) {
  ct_status st = ct_run_kernel(c);
  if (st == CT_OK) st = ct_restride_out0_channels_last(c);
  if (st == CT_OK) st = ct_record(c);
  if (st != CT_OK)
    for (int j = 0; j < c->n_out; j++) {
      ct_release(c->out[j]);
      c->out[j] = NULL;
    }
  return st;
}

ct_tensor *ct_to_channels_last(const ct_tensor *x) {
  if (ct_check_tensor(x, "contiguous")) return NULL;
  if (x->ndim != 4) {
    ct_set_error(CT_ERR_RUNTIME, "required rank 4 tensor to use channels_last format");
    return NULL;
  }
  if (ct_is_channels_last(x)) return ct_retain((ct_tensor *)x);
  if (ct_is_grad_enabled() && ct_tensor_requires_grad(x)) {
    /* differentiable: NHWC contiguous, viewed back as [N, C, H, W] */
    static const int64_t to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
    ct_tensor *p = ct_permute(x, 4, to_nhwc);
    ct_tensor *c = p ? ct_contiguous(p) : NULL;
    ct_release(p);
    ct_tensor *r = c ? ct_permute(c, 4, to_nchw) : NULL;
    ct_release(c);
    return r;
  }
  ct_tensor *r = ct_new_channels_last(x->shape, x->dtype, x->storage->device);
  bool prev = ct_set_grad_enabled(false);
  ct_status st = r ? ct_copy_(r, x) : ct_last_status();
  ct_set_grad_enabled(prev);
  if (st != CT_OK) {
    ct_release(r);
    return NULL;
  }
  return r;
}

/* t's memory replaced by a channels-last copy of its values; the handle (and everything that
 * refers to it: the module, optimizers made later) stays. */
static ct_status restride(ct_tensor *t) {
  if (!t || t->ndim != 4 || ct_is_channels_last(t)) return CT_OK;
  if (t->base) return CT_ERR(CT_ERR_RUNTIME, "channels_last: cannot convert a view in place");
  ct_tensor *c = ct_new_channels_last(t->shape, t->dtype, t->storage->device);
  if (!c) return ct_last_status();
  bool prev = ct_set_grad_enabled(false);
  ct_status st = ct_copy_(c, t);
  ct_set_grad_enabled(prev);
  if (st != CT_OK) {
    ct_release(c);
    return st;
  }
  ct_storage *s = t->storage;
  t->storage = c->storage;
  c->storage = s;
  int64_t st4[4];
  for (int d = 0; d < 4; d++) {
    st4[d] = t->stride[d];
    t->stride[d] = c->stride[d];
    c->stride[d] = st4[d];
  }
  c->offset = t->offset;
  t->offset = 0;
  t->storage->version = s->version + 1; /* a new value for anything that saved the old one */
  ct_release(c);                        /* frees the old memory (or leaves it to its other views) */
  return CT_OK;
}

ct_status ct_module_to_channels_last(ct_module *m) {
  if (!m) return CT_ERR(CT_ERR_VALUE, "module is NULL");
  ct_status st = CT_OK;
  for (int pass = 0; pass < 2 && st == CT_OK; pass++) {
    ct_dict *d = ct_dict_new();
    if (!d) return ct_last_status();
    st = pass == 0 ? ct_module_named_parameters(m, d) : ct_module_named_buffers(m, d);
    for (int64_t i = 0; st == CT_OK && i < ct_dict_len(d); i++) {
      ct_tensor *t = ct_dict_tensor(d, i);
      st = restride(t);
      if (st == CT_OK && t && t->grad) st = restride(t->grad);
    }
    ct_dict_free(d);
  }
  return st;
}
