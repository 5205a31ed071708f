/* Helpers shared by the vision models: registration that keeps a constructor's error, and
 * PyTorch's init functions the models need beyond the layers' defaults. */
#include "vision_internal.h"
#include <math.h>
#include <stdlib.h>

ct_status vm_add(ct_module *m, const char *name, ct_module *child) {
  if (!child) return ct_last_status() != CT_OK ? ct_last_status() : ct_set_error(CT_ERR_RUNTIME, "%s: constructor failed", name);
  return ct_module_register_module(m, name, child);
}

void vm_free_user(void *p) { free(p); }

ct_module *vm_new(const char *type, const ct_module_vtable *vt, const void *cfg, size_t size) {
  void *u = NULL;
  if (size) {
    u = malloc(size);
    if (!u) {
      ct_set_error(CT_ERR_OOM, "%s: out of memory", type);
      return NULL;
    }
    memcpy(u, cfg, size);
  }
  ct_module *m = ct_module_new(type, vt, u);
  if (!m) free(u);
  return m;
}

ct_status vm_normal(ct_tensor *t, double mean, double std) {
  bool prev = ct_set_grad_enabled(false);
  ct_status st = ct_normal_(t, mean, std, NULL);
  ct_set_grad_enabled(prev);
  return st;
}

ct_status vm_zero(ct_tensor *t) {
  bool prev = ct_set_grad_enabled(false);
  ct_status st = ct_zero_(t);
  ct_set_grad_enabled(prev);
  return st;
}

ct_status vm_kaiming_normal_fan_out(ct_tensor *w) {
  if (!w || ct_ndim(w) < 2) return ct_set_error(CT_ERR_VALUE, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t fan_out = ct_size(w, 0);
  for (int d = 2; d < ct_ndim(w); d++) fan_out *= ct_size(w, d);
  if (fan_out == 0) return CT_OK; /* PyTorch warns "Initializing zero-element tensors is a no-op" */
  return vm_normal(w, 0.0, sqrt(2.0) / sqrt((double)fan_out));
}

static double norm_cdf(double x) { return (1.0 + erf(x / sqrt(2.0))) / 2.0; }

ct_status vm_trunc_normal(ct_tensor *t, double mean, double std, double a, double b) {
  double l = norm_cdf((a - mean) / std), u = norm_cdf((b - mean) / std);
  bool prev = ct_set_grad_enabled(false);
  ct_scalar lo = ct_sf(a), hi = ct_sf(b);
  ct_status st = ct_uniform_(t, 2 * l - 1, 2 * u - 1, NULL);
  if (!st) st = ct_erfinv_(t);
  if (!st) st = ct_mul_scalar_(t, ct_sf(std * sqrt(2.0)));
  if (!st) st = ct_add_scalar_(t, ct_sf(mean));
  if (!st) st = ct_clamp_(t, &lo, &hi);
  ct_set_grad_enabled(prev);
  return st;
}

ct_status vm_check_image(const ct_tensor *x, const char *model, int64_t channels) {
  CT_TRY(ct_check_tensor(x, model));
  if (ct_ndim(x) != 4)
    return ct_set_error(CT_ERR_RUNTIME, "%s: expected a 4-D input [N, C, H, W], got %d dims", model, ct_ndim(x));
  if (!ct_dtype_is_floating(ct_tensor_dtype(x)))
    return ct_set_error(CT_ERR_TYPE, "%s: expected a floating-point input, got %s", model,
                        ct_dtype_name(ct_tensor_dtype(x)));
  if (channels > 0 && ct_size(x, 1) != channels)
    return ct_set_error(CT_ERR_RUNTIME, "%s: expected %lld input channels, got %lld", model, (long long)channels,
                        (long long)ct_size(x, 1));
  return CT_OK;
}

ct_tensor *vm_then(ct_tensor *a, ct_tensor *(*f)(const ct_tensor *)) {
  if (!a) return NULL;
  ct_tensor *r = f(a);
  ct_release(a);
  return r;
}

ct_tensor *vm_forward_then(ct_module *m, ct_tensor *a) {
  if (!a) return NULL;
  ct_tensor *r = ct_module_forward(m, a);
  ct_release(a);
  return r;
}
