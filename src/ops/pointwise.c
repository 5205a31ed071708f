/* The elementwise door: promotion, broadcast, casting checks, in-place and out=. */
#include "pointwise.h"
#include "layout.h"

ct_dtype ct_pointwise_compute_dtype(int n, const ct_tensor *const *in, ct_out_kind kind) {
  ct_dtype dt = ct_result_type_n(n, in);
  if (kind == CT_OUT_FLOAT && !ct_dtype_is_floating(dt)) dt = ct_get_default_dtype();
  return dt;
}

static ct_dtype result_dtype(ct_dtype compute, ct_out_kind kind) { return kind == CT_OUT_BOOL ? CT_BOOL : compute; }

/* Broadcast shape of all inputs. */
static ct_status out_shape(int n, const ct_tensor *const *in, int *nd, int64_t *shape) {
  *nd = 0;
  for (int i = 0; i < n; i++) CT_TRY(ct_broadcast_shapes(*nd, shape, in[i]->ndim, in[i]->shape, nd, shape));
  return CT_OK;
}

/* Prepare inputs: cast to the compute dtype and expand to the output shape (both
 * recorded by autograd, so the op's own backward sees equal shapes and dtypes). */
static ct_status prepare(int n, const ct_tensor *const *in, ct_dtype dt, int nd, const int64_t *shape, ct_device dev,
                         ct_tensor **prep) {
  for (int i = 0; i < n; i++) prep[i] = NULL;
  for (int i = 0; i < n; i++) {
    /* same dtype: a plain reference (released below), no new handle */
    ct_tensor *c = in[i]->dtype == dt ? ct_retain((ct_tensor *)in[i]) : ct_to_dtype(in[i], dt);
    if (!c) return ct_last_status();
    if (c->storage->device.type != dev.type || c->storage->device.index != dev.index) {
      ct_tensor *m = ct_to_device(c, dev);
      ct_release(c);
      if (!m) return ct_last_status();
      c = m;
    }
    bool same = c->ndim == nd;
    for (int d = 0; same && d < nd; d++) same = c->shape[d] == shape[d];
    if (same) {
      prep[i] = c;
      continue;
    }
    prep[i] = ct_expand(c, nd, shape);
    ct_release(c);
    if (!prep[i]) return ct_last_status();
  }
  return CT_OK;
}

static ct_device common_device(int n, const ct_tensor *const *in) {
  for (int i = 0; i < n; i++)
    if (!in[i]->is_wrapped_number && !(in[i]->ndim == 0 && in[i]->storage->device.type == CT_DEVICE_CPU))
      return in[i]->storage->device;
  return in[0]->storage->device;
}

ct_tensor *ct_pointwise(int op, int n, const ct_tensor *const *in, const ct_attrs *a, ct_out_kind kind) {
  const ct_op_info *info = ct_op_info_of(op);
  for (int i = 0; i < n; i++)
    if (ct_check_tensor(in[i], info->id)) return NULL;
  if (ct_check_same_device(info->id, n, in)) return NULL;
  int nd;
  int64_t shape[CT_MAX_DIMS];
  if (out_shape(n, in, &nd, shape)) return NULL;
  ct_dtype dt = ct_pointwise_compute_dtype(n, in, kind);
  ct_device dev = common_device(n, in);
  ct_tensor *prep[CT_MAX_OP_IN];
  ct_tensor *out = NULL;
  /* the prepared inputs are on dev: the output is allocated there */
  if (prepare(n, in, dt, nd, shape, dev, prep) == CT_OK) {
    /* PyTorch keeps a channels-last operand's layout (the first dense full-shape one decides);
     * not for WebGPU's bool outputs, whose kernels write whole contiguous words */
    if (ct_pointwise_wants_channels_last(n, in, nd, shape) &&
        !(dev.type == CT_DEVICE_WEBGPU && result_dtype(dt, kind) == CT_BOOL))
      out = ct_dispatch_new_channels_last(op, n, prep, shape, result_dtype(dt, kind), a);
    else out = ct_dispatch_new(op, n, prep, nd, shape, result_dtype(dt, kind), a);
  }
  for (int i = 0; i < n; i++) ct_release(prep[i]);
  return out;
}

static ct_status check_cast(ct_dtype result, ct_dtype out) {
  if (!ct_can_cast(result, out))
    return CT_ERR(CT_ERR_RUNTIME, "result type %s can't be cast to the desired output type %s", ct_dtype_torch_name(result),
                  ct_dtype_torch_name(out));
  return CT_OK;
}

static bool same_geometry(const ct_tensor *a, const ct_tensor *b) {
  if (a->storage != b->storage || a->offset != b->offset || a->ndim != b->ndim) return false;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->stride[d] != b->stride[d])) return false;
  return true;
}

ct_status ct_pointwise_(int op, int n, ct_tensor *const *in, const ct_attrs *a, ct_out_kind kind) {
  const ct_op_info *info = ct_op_info_of(op);
  for (int i = 0; i < n; i++) CT_TRY(ct_check_tensor(in[i], info->id));
  ct_tensor *self = in[0];
  CT_TRY(ct_check_inplace(self));
  CT_TRY(ct_check_same_device(info->id, n, (const ct_tensor *const *)in));
  int nd;
  int64_t shape[CT_MAX_DIMS];
  CT_TRY(out_shape(n, (const ct_tensor *const *)in, &nd, shape));
  bool same = nd == self->ndim;
  for (int d = 0; same && d < nd; d++) same = shape[d] == self->shape[d];
  if (!same) {
    char s1[160], s2[160];
    return CT_ERR(CT_ERR_RUNTIME, "output with shape %s doesn't match the broadcast shape %s", CT_SHAPE_STR(self, s1),
                  ct_shape_str(nd, shape, s2, sizeof s2));
  }
  ct_dtype dt = ct_pointwise_compute_dtype(n, (const ct_tensor *const *)in, kind);
  CT_TRY(check_cast(result_dtype(dt, kind), self->dtype));
  bool grad = ct_grad_mode_recording();
  bool needs_graph = false;
  for (int i = 0; i < n; i++) needs_graph |= ct_tensor_requires_grad(in[i]);
  needs_graph = needs_graph && grad;
  bool aliasing = false; /* another input overlapping self differently */
  for (int i = 1; i < n; i++) aliasing |= in[i]->storage == self->storage && !same_geometry(in[i], self);
  if (needs_graph || aliasing || dt != self->dtype || kind == CT_OUT_BOOL) {
    ct_tensor *r = ct_pointwise(op, n, (const ct_tensor *const *)in, a, kind);
    if (!r) return ct_last_status();
    ct_status st = ct_write_result_inplace(self, r);
    ct_release(r);
    return st;
  }
  /* direct: the kernel writes into self */
  ct_tensor *prep[CT_MAX_OP_IN];
  ct_status st = prepare(n, (const ct_tensor *const *)in, dt, nd, shape, self->storage->device, prep);
  if (st == CT_OK) {
    ct_call c = ct_call_make(op);
    c.n_in = n;
    c.n_out = 1;
    for (int i = 0; i < n; i++) c.in[i] = prep[i];
    c.out[0] = self;
    if (a) c.a = *a;
    st = ct_run_kernel(&c);
    if (st == CT_OK) ct_bump_version(self);
  }
  for (int i = 0; i < n; i++) ct_release(prep[i]);
  return st;
}

ct_status ct_resize_out(ct_tensor *out, int nd, const int64_t *shape) {
  bool same = nd == out->ndim;
  for (int d = 0; same && d < nd; d++) same = shape[d] == out->shape[d];
  if (same) return CT_OK;
  char s1[160], s2[160];
  if (ct_numel(out) != 0)
    ct_warn("An output with one or more elements was resized since it had shape %s, which does not match the required "
            "output shape %s. This behavior is deprecated, and in a future PyTorch release outputs will not be resized "
            "unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
            "elements with t.resize_(0).", CT_SHAPE_STR(out, s1), ct_shape_str(nd, shape, s2, sizeof s2));
  int64_t numel = ct_shape_numel(nd, shape), need = 0;
  if (numel < 0) return ct_last_status();
  if (numel > 0 && (!ct_mul_ok(out->offset + numel, (int64_t)ct_dtype_size(out->dtype), &need) || need < 0))
    return CT_ERR(CT_ERR_RUNTIME, "Storage size calculation overflowed with sizes=%s", ct_shape_str(nd, shape, s2, sizeof s2));
  CT_TRY(ct_storage_grow(out->storage, (size_t)need));
  out->ndim = nd;
  for (int d = 0; d < nd; d++) out->shape[d] = shape[d];
  ct_contiguous_strides(nd, out->shape, out->stride);
  return CT_OK;
}

ct_status ct_pointwise_out(int op, ct_tensor *out, int n, const ct_tensor *const *in, const ct_attrs *a, ct_out_kind kind) {
  CT_TRY(ct_check_tensor(out, "out"));
  if (ct_grad_mode_recording()) {
    bool any = ct_tensor_requires_grad(out);
    for (int i = 0; i < n; i++) any |= in[i] && ct_tensor_requires_grad(in[i]);
    if (any)
      return CT_ERR(CT_ERR_RUNTIME, "%s(): functions with out=... arguments don't support automatic differentiation, "
                    "but one of the arguments requires grad.", ct_op_info_of(op)->id);
  }
  ct_tensor *r = ct_pointwise(op, n, in, a, kind);
  if (!r) return ct_last_status();
  ct_status st = check_cast(r->dtype, out->dtype);
  if (st == CT_OK) st = ct_resize_out(out, r->ndim, r->shape);
  if (st == CT_OK) st = ct_copy_(out, r);
  ct_release(r);
  return st;
}

/* Replace saved tensors of node n that live in self's storage by snapshots, so
 * writing into self does not invalidate the backward (PyTorch's original_self). */
static ct_status snapshot_saved(ct_node *n, const ct_tensor *self) {
  if (!n) return CT_OK;
  for (int i = 0; i < CT_MAX_OP_IN; i++) {
    ct_saved *s = &n->saved_in[i];
    if (!s->t || s->t->storage != self->storage) continue;
    ct_tensor *old = s->t;
    bool prev = ct_set_grad_enabled(false);
    ct_tensor *c = ct_clone(old);
    ct_set_grad_enabled(prev);
    if (!c) return ct_last_status();
    ct_own(c);
    if (old->grad_fn) {
      c->grad_fn = old->grad_fn;
      ct_node_retain(c->grad_fn);
      c->output_nr = old->output_nr;
    } else if (old->requires_grad) {
      /* a leaf: keep routing to its accumulator through a clone node */
      ct_release(c);
      continue;
    }
    s->t = c;
    s->version = *ct_vptr(c);
    ct_unhold(old);
  }
  return CT_OK;
}

/* The gradient of a value overwritten by a constant is zero. */
static ct_status bw_overwritten(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  (void)n;
  (void)g;
  (void)gin;
  return CT_OK;
}

ct_status ct_write_result_inplace(ct_tensor *self, ct_tensor *result) {
  ct_status st = CT_OK;
  bool graph = ct_grad_mode_recording() && (ct_tensor_requires_grad(result) || ct_tensor_requires_grad(self));
  if (graph) CT_TRY(ct_check_view_rebase(self)); /* before any value changes */
  CT_TRY(snapshot_saved(result->grad_fn, self));
  /* values */
  {
    ct_call c = ct_call_make(CT_OP_copy);
    c.n_in = 1;
    c.n_out = 1;
    c.in[0] = result;
    c.out[0] = self;
    CT_TRY(ct_run_kernel(&c));
    ct_bump_version(self);
  }
  if (!graph) return CT_OK;
  ct_tensor *r = result;
  if (r->dtype != self->dtype) {
    r = ct_to_dtype(result, self->dtype);
    if (!r) return ct_last_status();
  } else ct_retain(r);
  ct_tensor *base = self->base;
  if (base && ct_tensor_requires_grad(base) == false && !ct_tensor_requires_grad(r)) {
    ct_release(r);
    return CT_OK;
  }
  if (base) {
    /* CopySlices: the base's new history writes r through self's geometry */
    if (!ct_is_contiguous(base) || base->offset != 0) {
      ct_release(r);
      return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "in-place operation on a view of a non-contiguous tensor that requires grad");
    }
    ct_attrs a = ct_attrs_zero();
    for (int d = 0; d < self->ndim; d++) {
      a.i[d] = self->shape[d];
      a.i[8 + d] = self->stride[d];
    }
    a.k[0] = self->ndim;
    a.k[1] = self->offset - base->offset;
    ct_tensor *ins[2] = {base, r};
    ct_node *n = ct_node_new(CT_OP_as_strided_scatter, 2, 1);
    if (!n) { ct_release(r); return ct_last_status(); }
    n->name = "CopySlices";
    n->a = a;
    for (int i = 0; i < 2; i++) {
      n->in_meta[i].ndim = ins[i]->ndim;
      memcpy(n->in_meta[i].shape, ins[i]->shape, sizeof ins[i]->shape);
      n->in_meta[i].dtype = ins[i]->dtype;
      n->in_meta[i].device = ins[i]->storage->device;
      if (ct_tensor_requires_grad(ins[i])) n->next[i] = ct_tensor_edge(ins[i]);
    }
    n->out_meta[0] = n->in_meta[0];
    ct_set_history(base, n, 0);
    ct_node_release(n);
    /* self becomes a view of the new base: the same geometry, plus the base's strides */
    ct_attrs va = a;
    va.ni = base->ndim;
    for (int d = 0; d < base->ndim; d++) va.i[16 + d] = base->stride[d];
    ct_clear_error();
    bool prev = ct_set_grad_enabled(true);
    ct_node *vn = ct_record_node(CT_OP_as_strided, 1, &base, 1, &self, &va, CT_SAVE_NONE, NULL, "AsStridedBackward0");
    ct_set_grad_enabled(prev);
    if (!vn && ct_last_status() != CT_OK) st = ct_last_status();
  } else if (r->grad_fn) {
    ct_set_history(self, r->grad_fn, r->output_nr);
  } else if (self->grad_fn) {
    /* overwritten by a constant (fill_, zero_, copy_ of a tensor without grad): like
     * PyTorch, self keeps requiring grad through a node giving its old history zero */
    ct_clear_error();
    if (!ct_record_node(CT_OP_copy, 1, &self, 1, &self, NULL, CT_SAVE_NONE, bw_overwritten, "FillBackward0") &&
        ct_last_status() != CT_OK)
      st = ct_last_status();
  }
  ct_release(r);
  return st;
}
