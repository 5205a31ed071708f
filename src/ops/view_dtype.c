/* Tensor.view(dtype): reinterprets the storage's bytes (PyTorch 1.13's view.dtype). */
#include "core/internal.h"
#include "ctorch/view.h"

static ct_tensor *vd_fail(const char *what, int64_t ratio, ct_dtype from, ct_dtype to, int64_t got, int dim) {
  const char *a = ct_dtype_torch_name(from), *b = ct_dtype_torch_name(to);
  if (dim >= 0)
    ct_set_error(CT_ERR_RUNTIME, "self.stride(%d) must be divisible by %lld to view %s as %s (different element sizes), "
                                 "but got %lld", dim, (long long)ratio, a, b, (long long)got);
  else
    ct_set_error(CT_ERR_RUNTIME, "%s must be %s%lld to view %s as %s (different element sizes), but got %lld", what,
                 ratio ? "divisible by " : "", (long long)(ratio ? ratio : 1), a, b, (long long)got);
  return NULL;
}

ct_tensor *ct_view_dtype(const ct_tensor *t, ct_dtype dt) {
  if (ct_check_tensor(t, "view")) return NULL;
  if ((int)dt < 0 || dt >= CT_NUM_DTYPES) {
    ct_set_error(CT_ERR_VALUE, "view: invalid dtype %d", (int)dt);
    return NULL;
  }
  int nd = t->ndim;
  int64_t shape[CT_MAX_DIMS], stride[CT_MAX_DIMS], off = t->offset;
  for (int d = 0; d < nd; d++) shape[d] = t->shape[d], stride[d] = t->stride[d];
  int64_t from = (int64_t)ct_dtype_size(t->dtype), to = (int64_t)ct_dtype_size(dt);
  if (from != to) {
    if (nd == 0) {
      ct_set_error(CT_ERR_RUNTIME, "self.dim() cannot be 0 to view %s as %s (different element sizes)",
                   ct_dtype_torch_name(t->dtype), ct_dtype_torch_name(dt));
      return NULL;
    }
    if (stride[nd - 1] != 1) return vd_fail("self.stride(-1)", 0, t->dtype, dt, stride[nd - 1], -1);
    if (from > to) {
      /* each element becomes `r` narrower ones along the last dim */
      int64_t r = from / to;
      for (int d = 0; d < nd - 1; d++) stride[d] *= r;
      shape[nd - 1] *= r;
      off *= r;
    } else {
      int64_t r = to / from;
      if (shape[nd - 1] % r) return vd_fail("self.size(-1)", r, t->dtype, dt, shape[nd - 1], -1);
      if (off % r) return vd_fail("self.storage_offset()", r, t->dtype, dt, off, -1);
      for (int d = 0; d < nd - 1; d++)
        if (stride[d] % r) return vd_fail(NULL, r, t->dtype, dt, stride[d], d);
      for (int d = 0; d < nd - 1; d++) stride[d] /= r;
      shape[nd - 1] /= r;
      off /= r;
    }
  }
  ct_tensor *v = ct_make_view(t, nd, shape, stride, off);
  if (v) v->dtype = dt;
  return v;
}
