/* Broadcasting and type promotion, as PyTorch's TensorIterator computes them. */
#include "internal.h"

ct_status ct_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out) {
  int n = na > nb ? na : nb;
  int64_t r[CT_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa == sb || sb == 1) r[i] = sa;
    else if (sa == 1) r[i] = sb;
    else
      return CT_ERR(CT_ERR_RUNTIME,
                    "The size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton dimension %d",
                    (long long)sa, (long long)sb, i);
  }
  for (int i = 0; i < n; i++) out[i] = r[i];
  *nout = n;
  return CT_OK;
}

/* c10's combine_categories: a lower tier only wins by a higher category. */
static int combine(int higher, int lower) {
  if (higher < 0) return lower;
  if (lower < 0) return higher;
  if (ct_dtype_is_floating((ct_dtype)higher)) return higher;
  if (higher == CT_BOOL || ct_dtype_is_floating((ct_dtype)lower)) return (int)ct_promote_types((ct_dtype)higher, (ct_dtype)lower);
  return higher;
}

ct_dtype ct_result_type_n(int n, const ct_tensor *const *ts) {
  int dim_r = -1, zero_r = -1, wrapped_r = -1;
  for (int i = 0; i < n; i++) {
    const ct_tensor *t = ts[i];
    if (!t) continue;
    if (t->is_wrapped_number) {
      int cur = t->dtype;
      if (ct_dtype_is_floating(t->dtype)) cur = ct_get_default_dtype();
      wrapped_r = wrapped_r < 0 ? cur : (int)ct_promote_types((ct_dtype)wrapped_r, (ct_dtype)cur);
    } else if (t->ndim == 0) {
      zero_r = zero_r < 0 ? (int)t->dtype : (int)ct_promote_types((ct_dtype)zero_r, t->dtype);
    } else {
      dim_r = dim_r < 0 ? (int)t->dtype : (int)ct_promote_types((ct_dtype)dim_r, t->dtype);
    }
  }
  int r = combine(dim_r, combine(zero_r, wrapped_r));
  if (r < 0) return ct_get_default_dtype();
  return (ct_dtype)r;
}

ct_tensor *ct_wrap_scalar(ct_scalar s) {
  ct_dtype dt = s.kind == CT_SCALAR_FLOAT ? CT_FLOAT64 : s.kind == CT_SCALAR_INT ? CT_INT64 : CT_BOOL;
  ct_tensor *t = ct_tensor_new(0, NULL, dt, ct_cpu());
  if (!t) return NULL;
  if (dt == CT_FLOAT64) *(double *)ct_cpu_ptr(t) = s.f;
  else ct_store_i64(ct_cpu_ptr(t), dt, s.i);
  t->is_wrapped_number = true;
  return t;
}
