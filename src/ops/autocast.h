/* PyTorch-style bf16 autocast on CUDA (ct_cuda_set_autocast_bf16 + ct_cuda_set_autocast_bf16_outputs,
 * include/ctorch/cuda.h): the op entry points of autocast's lists call these. */
#ifndef CT_OPS_AUTOCAST_H
#define CT_OPS_AUTOCAST_H
#include "ctorch.h"

/* Autocast's "lower precision" list (mm, addmm, bmm, baddbmm; matmul and linear reach them):
 * when the mode is on and one of the n operands (NULLs skipped) is a float32/float16 CUDA tensor,
 * out[i] = operand i cast to bfloat16 (a recorded cast: its gradient comes back in the operand's
 * dtype), other operands retained, and true is returned (out[0] NULL when a cast failed, the error
 * set); false otherwise (out untouched), where the op runs as usual. */
bool ct_autocast_lower(int n, const ct_tensor *const *in, ct_tensor **out);
/* Autocast's float32 list (logsumexp, cross_entropy, ...): a bfloat16/float16 CUDA tensor cast to
 * float32 under the mode (new reference, true), else false. *out NULL on failure. */
bool ct_autocast_upcast(const ct_tensor *t, ct_tensor **out);
void ct_autocast_release(int n, ct_tensor **out);
/* logsumexp under the mode over the last dim of a contiguous, non-empty bfloat16 CUDA tensor: true
 * where the op can read it directly and return float32 (the upcast's values without its copy) */
bool ct_autocast_lse_direct(const ct_tensor *t, int n, const int64_t *dims);
#endif
