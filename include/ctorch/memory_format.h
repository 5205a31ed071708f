/* PyTorch's channels_last memory format for 4-D tensors: shape [N, C, H, W] (unchanged) with
 * strides (H W C, 1, W C, C), i.e. NHWC in memory. Opting in is PyTorch's: convert the model
 * (ct_module_to_channels_last = model.to(memory_format=torch.channels_last)) and the input
 * (ct_to_channels_last = x.contiguous(memory_format=torch.channels_last)); the ops then keep the
 * layout: pointwise results follow their first dense full-shape operand, and on CUDA the
 * convolutions (cuDNN with NHWC descriptors) and batch norm return channels-last outputs for
 * channels-last inputs, so cuDNN runs without NCHW<->NHWC transposes. */
#ifndef CTORCH_MEMORY_FORMAT_H
#define CTORCH_MEMORY_FORMAT_H
#include "core.h"
#include "module.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x.is_contiguous(memory_format=torch.channels_last): 4-D with channels-last strides (size-1
 * dims' strides ignored, as PyTorch). */
bool ct_is_channels_last(const ct_tensor *t);
/* channels-last and not also the default contiguous layout (PyTorch's suggest_memory_format
 * for dense tensors): the layout an op's output follows. */
bool ct_suggests_channels_last(const ct_tensor *t);
/* x.contiguous(memory_format=torch.channels_last): x itself (a new reference) when already so,
 * else a copy (differentiable). x must be 4-D ("required rank 4 tensor to use channels_last
 * format" otherwise). */
ct_tensor *ct_to_channels_last(const ct_tensor *x);
/* model.to(memory_format=torch.channels_last): every 4-D parameter and buffer (and a 4-D .grad)
 * converted in place (same tensor handles, new memory); others untouched. */
ct_status ct_module_to_channels_last(ct_module *m);

#ifdef __cplusplus
}
#endif
#endif
