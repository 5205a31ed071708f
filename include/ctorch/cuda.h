/* The CUDA backend's switches and queries. Every function exists in every build:
 * without the backend compiled in (no nvcc at build time) or without a driver and
 * device at run time, the device count is 0 and the reason says why. */
#ifndef CTORCH_CUDA_H
#define CTORCH_CUDA_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

static inline ct_device ct_cuda(int index) { ct_device d = {CT_DEVICE_CUDA, index}; return d; }
/* torch.cuda.device_count(): 0 without the backend, a driver or a device. */
int ct_cuda_device_count(void);
bool ct_cuda_is_available(void);
/* Why CUDA is not available ("" when it is), e.g. "CUDA driver not found". */
const char *ct_cuda_unavailable_reason(void);
/* The device's name ("NVIDIA H200"), "" if none. */
const char *ct_cuda_device_name(int index);
/* Waits for every queued kernel and copy of the device; reports an asynchronous error. */
ct_status ct_cuda_synchronize(int index);
/* torch.backends.cuda.matmul.allow_tf32 (default false, as PyTorch): float32 matrix
 * products on the TF32 tensor cores (10-bit mantissa inputs, float32 accumulation). */
void ct_cuda_set_allow_tf32(bool allow);
bool ct_cuda_allow_tf32(void);

#ifdef __cplusplus
}
#endif
#endif
