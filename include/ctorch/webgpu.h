/* WebGPU device queries. The backend is compiled into every native build; it loads
 * Dawn (libwebgpu_wrapper.so from npm's bun-webgpu-linux-x64, `make webgpu-deps`)
 * with dlopen on first use, so a machine without the library or without a Vulkan
 * adapter reports why and keeps computing on the CPU. Tensors move there with
 * ct_to_device(t, ct_webgpu()); the backend computes in float32 (WGSL has no float64).
 * Environment: CT_WEBGPU_LIB (the library's path), CT_WEBGPU=0 (off),
 * VK_ICD_FILENAMES (a Vulkan driver; without one and without a GPU driver, the
 * backend tries Chromium's SwiftShader ICD at /usr/lib/chromium/vk_swiftshader_icd.json). */
#ifndef CTORCH_WEBGPU_H
#define CTORCH_WEBGPU_H
#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline ct_device ct_webgpu(void) { ct_device d = {CT_DEVICE_WEBGPU, 0}; return d; }
bool ct_webgpu_is_available(void);
/* Why not (library, adapter, backend type), "" when available. */
const char *ct_webgpu_unavailable_reason(void);
/* "SwiftShader Device (Vulkan, cpu)" or the GPU's name; "" when unavailable. */
const char *ct_webgpu_adapter_name(void);
/* Waits for every queued kernel; reports device errors (validation, bad indices). */
ct_status ct_webgpu_synchronize(void);

#ifdef __cplusplus
}
#endif
#endif
