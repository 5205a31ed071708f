/* torch.nn.utils.clip_grad_norm_ and clip_grad_value_, composed of public ops as
 * PyTorch 1.13's torch/nn/utils/clip_grad.py composes them (same dtypes, same formula). */
#include "optim_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static ct_status check_list(int64_t n, ct_tensor *const *params, const char *what) {
  if (n < 0) return CT_ERR(CT_ERR_VALUE, "%s: negative parameter count", what);
  if (n > 0 && !params) return CT_ERR(CT_ERR_VALUE, "%s: NULL parameter list", what);
  for (int64_t i = 0; i < n; i++)
    if (!params[i]) return CT_ERR(CT_ERR_VALUE, "%s: parameter %lld is NULL", what, (long long)i);
  return CT_OK;
}

#ifdef CT_HAVE_CUDA
/* the 2-norm over float32 CUDA gradients in a few multi-tensor launches (src/backend/cuda/k_fast.cu) */
bool ct_cuda_clip_grad_norm_fused(int64_t n, ct_tensor *const *params, double max_norm, ct_tensor **total);
#endif

ct_tensor *ct_clip_grad_norm_(int64_t n, ct_tensor *const *params, double max_norm, double norm_type,
                              bool error_if_nonfinite) {
  if (check_list(n, params, "clip_grad_norm_")) return NULL;
#ifdef CT_HAVE_CUDA
  if (norm_type == 2.0 && !error_if_nonfinite) {
    ct_tensor *t;
    bool prev = ct_set_grad_enabled(false);
    bool done = ct_cuda_clip_grad_norm_fused(n, params, max_norm, &t);
    ct_set_grad_enabled(prev);
    if (done) return t;
  }
#endif
  int64_t ng = 0;
  for (int64_t i = 0; i < n; i++) ng += params[i]->grad != NULL;
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *total = NULL, *stacked = NULL, *coef = NULL, *clamped = NULL, *tmp = NULL;
  ct_tensor **norms = NULL;
  if (ng == 0) {
    total = ct_scalar_tensor(ct_sf(0.0), ct_opts_dtype(CT_FLOAT32)); /* torch.tensor(0.) */
    goto out;
  }
  if (ng > INT32_MAX) {
    CT_ERR(CT_ERR_VALUE, "clip_grad_norm_: too many gradients");
    goto out;
  }
  norms = ct_xcalloc((size_t)ng, sizeof *norms);
  if (!norms) goto out;
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) {
    ct_tensor *g = params[i]->grad;
    if (!g) continue;
    if (isinf(norm_type) && norm_type > 0) {
      /* g.detach().abs().max() */
      ct_tensor *a = ct_abs(g);
      norms[k] = a ? ct_max(a) : NULL;
      ct_release(a);
    } else {
      norms[k] = ct_norm(g, norm_type, 0, NULL, false);
    }
    if (!norms[k++]) goto out;
  }
  if (isinf(norm_type) && norm_type > 0) {
    if (ng == 1) total = ct_retain(norms[0]);
    else {
      stacked = ct_stack((int)ng, (const ct_tensor *const *)norms, 0);
      if (!stacked) goto out;
      total = ct_max(stacked);
    }
  } else {
    stacked = ct_stack((int)ng, (const ct_tensor *const *)norms, 0);
    if (!stacked) goto out;
    total = ct_norm(stacked, norm_type, 0, NULL, false);
  }
  if (!total) goto out;
  if (error_if_nonfinite) {
    double tv;
    if (ct_item_double(total, &tv) != CT_OK) goto fail;
    if (isnan(tv) || isinf(tv)) {
      char b[40];
      CT_ERR(CT_ERR_RUNTIME,
             "The total norm of order %s for gradients from `parameters` is non-finite, so it cannot be clipped. To "
             "disable this error and scale the gradients by the non-finite norm anyway, set "
             "`error_if_nonfinite=False`", ct_py_float(norm_type, b, sizeof b));
      goto fail;
    }
  }
  /* clip_coef = max_norm / (total_norm + 1e-6), clamped to 1 */
  tmp = ct_add_scalar(total, ct_sf(1e-6));
  if (!tmp) goto fail;
  {
    /* float / tensor is Tensor.__rtruediv__: reciprocal() * other */
    ct_tensor *r = ct_reciprocal(tmp);
    coef = r ? ct_mul_scalar(r, ct_sf(max_norm)) : NULL;
    ct_release(r);
  }
  if (!coef) goto fail;
  {
    ct_scalar one = ct_sf(1.0);
    clamped = ct_clamp(coef, NULL, &one);
  }
  if (!clamped) goto fail;
  for (int64_t i = 0; i < n; i++) {
    ct_tensor *g = params[i]->grad;
    if (g && ct_mul_(g, clamped) != CT_OK) goto fail;
  }
  goto out;
fail:
  ct_release(total);
  total = NULL;
out:
  if (norms)
    for (int64_t i = 0; i < ng; i++) ct_release(norms[i]);
  free(norms);
  ct_release(stacked);
  ct_release(coef);
  ct_release(clamped);
  ct_release(tmp);
  ct_set_grad_enabled(prev);
  return total;
}

ct_status ct_clip_grad_value_(int64_t n, ct_tensor *const *params, double clip_value) {
  CT_TRY(check_list(n, params, "clip_grad_value_"));
  bool prev = ct_set_grad_enabled(false);
  ct_scalar lo = ct_sf(-clip_value), hi = ct_sf(clip_value);
  ct_status st = CT_OK;
  for (int64_t i = 0; i < n && !st; i++)
    if (params[i]->grad) st = ct_clamp_(params[i]->grad, &lo, &hi);
  ct_set_grad_enabled(prev);
  return st;
}
