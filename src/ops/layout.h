/* Memory-format helpers for the ops (channels_last; see include/ctorch/memory_format.h). */
#ifndef CT_OPS_LAYOUT_H
#define CT_OPS_LAYOUT_H
#include "../core/internal.h"
#include "ctorch/memory_format.h"
#include "op_table.h"

#ifdef __cplusplus
extern "C" {
#endif
/* A new uninitialised [N, C, H, W] tensor with channels-last strides. */
ct_tensor *ct_new_channels_last(const int64_t *shape, ct_dtype dt, ct_device dev);
/* a and b: the same shape and strides, and a covers its numel elements without gaps or overlap
 * (an elementwise kernel may then treat both as flat arrays). */
bool ct_dense_same_layout(const ct_tensor *a, const ct_tensor *b);
/* True where PyTorch's TensorIterator would give a pointwise result of this shape channels-last
 * strides: the first operand of the full (4-D) shape that is dense decides. */
bool ct_pointwise_wants_channels_last(int n, const ct_tensor *const *in, int nd, const int64_t *shape);
/* ct_dispatch_new with a channels-last [N, C, H, W] output on the first input's device. */
ct_tensor *ct_dispatch_new_channels_last(int op, int n_in, ct_tensor *const *in, const int64_t *shape, ct_dtype dt,
                                         const ct_attrs *a);
/* A 4-D out[0] that is not channels-last is replaced by a channels-last copy (before autograd records). */
ct_status ct_restride_out0_channels_last(ct_call *c);
/* ct_dispatch for a backend whose kernel writes a contiguous out[0]: the kernel, then out[0]
 * copied into channels-last memory before autograd records the call (the CPU's convolution and
 * batch norm of channels-last inputs return channels-last results, as PyTorch's). On failure
 * the outputs are released and NULL. */
ct_status ct_dispatch_channels_last_out0(ct_call *c);
#ifdef __cplusplus
}
#endif
#endif
