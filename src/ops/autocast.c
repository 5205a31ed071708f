/* PyTorch-style bf16 autocast on CUDA (see autocast.h). The casts are ordinary recorded
 * ct_to_dtype ops, as autocast's are in PyTorch, so autograd needs nothing new: a float32
 * weight's gradient is the bfloat16 product's gradient cast back to float32. CPU tensors and
 * float64 never change. */
#include "autocast.h"
#include <stdlib.h>
#include "ctorch/cuda.h"
#include "../core/internal.h"

static bool on_cuda(const ct_tensor *t) { return t && t->storage->device.type == CT_DEVICE_CUDA; }

bool ct_autocast_lower(int n, const ct_tensor *const *in, ct_tensor **out) {
  if (!ct_cuda_autocast_bf16_outputs()) return false;
  bool any = false;
  for (int i = 0; i < n; i++)
    if (on_cuda(in[i]) && (in[i]->dtype == CT_FLOAT32 || in[i]->dtype == CT_FLOAT16)) any = true;
  if (!any) return false;
  for (int i = 0; i < n; i++) out[i] = NULL;
  for (int i = 0; i < n; i++) {
    if (!in[i]) continue;
    bool cast = on_cuda(in[i]) && (in[i]->dtype == CT_FLOAT32 || in[i]->dtype == CT_FLOAT16);
    out[i] = cast ? ct_to_dtype(in[i], CT_BFLOAT16) : ct_retain((ct_tensor *)in[i]);
    if (!out[i]) {
      ct_autocast_release(n, out);
      return true; /* out[0] NULL: the error is set */
    }
  }
  return true;
}

bool ct_autocast_upcast(const ct_tensor *t, ct_tensor **out) {
  if (!ct_cuda_autocast_bf16_outputs() || !on_cuda(t) || (t->dtype != CT_BFLOAT16 && t->dtype != CT_FLOAT16))
    return false;
  *out = ct_to_dtype(t, CT_FLOAT32);
  return true;
}

void ct_autocast_release(int n, ct_tensor **out) {
  for (int i = 0; i < n; i++) {
    ct_release(out[i]);
    out[i] = NULL;
  }
}

bool ct_autocast_lse_direct(const ct_tensor *t, int n, const int64_t *dims) {
  if (!ct_cuda_autocast_bf16_outputs() || !on_cuda(t) || t->dtype != CT_BFLOAT16 || t->ndim < 1 || n != 1 || !dims ||
      (dims[0] != -1 && dims[0] != t->ndim - 1) || !ct_is_contiguous(t) || ct_numel(t) == 0)
    return false;
  /* CT_AUTOCAST_LSE_DIRECT=0: the float32 copy as before (to compare the two paths' loss curves) */
  const char *e = getenv("CT_AUTOCAST_LSE_DIRECT");
  return !(e && e[0] == '0');
}
