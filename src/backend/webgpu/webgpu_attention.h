/* FlashAttention in WGSL (webgpu_attention.c): the ops sdpa_flash / sdpa_flash_backward on
 * the WebGPU backend (contracts in src/backend/cpu/kernels_attention.c). */
#ifndef CT_WEBGPU_ATTENTION_H
#define CT_WEBGPU_ATTENTION_H
#include "../backend.h"

/* Whether the WGSL kernels take this call (scaled_dot_product_attention's fused-path test,
 * src/ops/nn.c): float32 q/k/v on WebGPU, no mask (masks go the composed way), head dims
 * E, Ev in 1..128, at most 4 batch dims of size > 1, grids inside the device's limits. */
bool ct_webgpu_sdpa_fits(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v, const ct_tensor *mask, int nb,
                         const int64_t *bshape);
ct_status ct_webgpu_sdpa_flash(const ct_call *c);
ct_status ct_webgpu_sdpa_flash_backward(const ct_call *c);
/* Counters for the tests: forward / backward launches of the WGSL kernels. */
int64_t ct_webgpu_sdpa_calls(bool backward);
#endif
