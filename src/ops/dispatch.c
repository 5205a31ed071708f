/* The one door every op goes through. */
#include "../autograd/autograd.h"
#include "../backend/backend.h"

static const char *backend_title(ct_device_type t) {
  switch (t) {
    case CT_DEVICE_CPU: return "CPU";
    case CT_DEVICE_CUDA: return "CUDA";
    case CT_DEVICE_WEBGPU: return "WebGPU";
    default: return "unknown";
  }
}

/* per-op timing when profiling (src/core/op_profile.c) */
bool ct_op_profile_on(void);
ct_status ct_op_profile_run(ct_kernel_fn k, const ct_call *c);

ct_status ct_run_kernel(ct_call *c) {
  const ct_op_info *info = ct_op_info_of(c->op);
  if (!info) return CT_ERR(CT_ERR_RUNTIME, "unknown op %d", c->op);
  /* the device comes from the first tensor present: an output a caller does not need (a
   * backward whose input needs no gradient) may be NULL */
  const ct_tensor *first = NULL;
  for (int j = 0; j < c->n_out && !first; j++) first = c->out[j];
  for (int i = 0; i < c->n_in && !first; i++) first = c->in[i];
  if (!first) return CT_ERR(CT_ERR_RUNTIME, "%s: called without any tensor", info->id);
  ct_device dev = first->storage->device;
  for (int i = 0; i < c->n_in; i++) {
    const ct_tensor *t = c->in[i];
    if (!t) continue;
    ct_device d = t->storage->device;
    if (d.type != dev.type || d.index != dev.index)
      return CT_ERR(CT_ERR_RUNTIME,
                    "Expected all tensors to be on the same device, but found at least two devices, %s:%d and %s:%d! "
                    "(when checking argument for argument %d in method %s)",
                    ct_device_type_name(dev.type), dev.index, ct_device_type_name(d.type), d.index, i, info->id);
  }
  const ct_backend *be = ct_backend_for(dev.type);
  ct_kernel_fn k = be ? be->kernel(c->op) : NULL;
  if (!k)
    return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run 'aten::%s' with arguments from the '%s' backend.", info->id,
                  backend_title(dev.type));
  if (__builtin_expect(ct_op_profile_on(), 0)) return ct_op_profile_run(k, c);
  return k(c);
}

ct_status ct_record(ct_call *c) {
  const ct_op_info *info = ct_op_info_of(c->op);
  if (info->backward == ct_no_backward) return CT_OK;
  ct_clear_error();
  ct_node *n = ct_record_node(c->op, c->n_in, c->in, c->n_out, c->out, &c->a, info->save, NULL, NULL);
  if (!n && ct_last_status() != CT_OK) return ct_last_status();
  return CT_OK;
}

ct_status ct_dispatch(ct_call *c) {
  CT_TRY(ct_run_kernel(c));
  return ct_record(c);
}

ct_status ct_dispatch_alloc(ct_call *c, int nd, const int64_t *shape, const ct_dtype *odt) {
  const ct_tensor *first = NULL;
  for (int i = 0; i < c->n_in && !first; i++) first = c->in[i];
  ct_device dev = first ? first->storage->device : ct_cpu();
  for (int j = 0; j < c->n_out; j++) c->out[j] = NULL;
  ct_status st = CT_OK;
  for (int j = 0; j < c->n_out && st == CT_OK; j++)
    if (!(c->out[j] = ct_tensor_new(nd, shape, odt[j], dev))) st = ct_last_status();
  if (st == CT_OK) st = ct_dispatch(c);
  if (st != CT_OK)
    for (int j = 0; j < c->n_out; j++) {
      ct_release(c->out[j]);
      c->out[j] = NULL;
    }
  return st;
}

ct_tensor *ct_dispatch_new(int op, int n_in, ct_tensor *const *in, int nd, const int64_t *shape, ct_dtype dt,
                           const ct_attrs *a) {
  ct_call c = ct_call_make(op);
  c.n_in = n_in;
  c.n_out = 1;
  for (int i = 0; i < n_in; i++) c.in[i] = in[i];
  if (a) c.a = *a;
  return ct_dispatch_alloc(&c, nd, shape, &dt) == CT_OK ? c.out[0] : NULL;
}
