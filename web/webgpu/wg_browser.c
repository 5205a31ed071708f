/* The browser side of the WebGPU tests (make test-webgpu-browser): linked with the C test
 * runner (tests/c/main.c, its main renamed ctwg_c_main), tests/c/test_webgpu.c and the
 * WebGPU backend compiled for the browser, run in a page by web/test/webgpu.html. Here:
 * the struct layouts of wgpu_abi.h against the offsets the JavaScript shim uses, and what a
 * page without WebGPU gets (a reason, and the CPU keeps computing). */
#include "test.h"
#include "backend/webgpu/webgpu_backend.h"
#include "ctorch/webgpu.h"
#include <emscripten.h>
#include <stddef.h>
#include <stdlib.h>

/* src/backend/webgpu/webgpu_shim.js: its offset of a field (-1: unknown) */
extern int ctwg_shim_offset(const char *structName, const char *field);
int ctwg_c_main(int argc, char **argv);
/* tests/c/test_webgpu.c: the device is absent (the reason names why) and the CPU computes */
void ct_test_webgpu_cpu_fallback(const char *reason_has);

#define OFF(S, shimS, f) check_off(#shimS, #f, (int)offsetof(S, f))
#define OFF2(S, shimS, shimF, f) check_off(#shimS, #shimF, (int)offsetof(S, f))
#define SIZE(S, shimS, shimF) check_off(#shimS, #shimF, (int)sizeof(S))
static int n_fields;
static void check_off(const char *s, const char *f, int c) {
  int js = ctwg_shim_offset(s, f);
  n_fields++;
  if (js != c) ct_test_fail(__FILE__, __LINE__, "%s.%s: offsetof %d in C, %d in webgpu_shim.js", s, f, c, js);
}

TEST(webgpu_browser_layout) {
  n_fields = 0;
  OFF(WGPUStringView, StringView, data);
  OFF(WGPUStringView, StringView, length);
  SIZE(WGPUStringView, StringView, size);
  OFF(WGPUChainedStruct, ChainedStruct, next);
  OFF(WGPUChainedStruct, ChainedStruct, sType);
  /* every callback info with a mode shares one layout (CT_WGPU_CALLBACK_INFO) */
  OFF(WGPURequestAdapterCallbackInfo, CallbackInfo, mode);
  OFF(WGPURequestAdapterCallbackInfo, CallbackInfo, callback);
  OFF(WGPURequestAdapterCallbackInfo, CallbackInfo, userdata1);
  OFF(WGPURequestAdapterCallbackInfo, CallbackInfo, userdata2);
  SIZE(WGPUBufferMapCallbackInfo, CallbackInfo, size);
  OFF(WGPUQueueWorkDoneCallbackInfo, CallbackInfo, callback);
  OFF(WGPUPopErrorScopeCallbackInfo, CallbackInfo, userdata2);
  OFF(WGPUUncapturedErrorCallbackInfo, UncapturedErrorCallbackInfo, callback);
  OFF(WGPUUncapturedErrorCallbackInfo, UncapturedErrorCallbackInfo, userdata1);
  OFF(WGPUUncapturedErrorCallbackInfo, UncapturedErrorCallbackInfo, userdata2);
  SIZE(WGPUUncapturedErrorCallbackInfo, UncapturedErrorCallbackInfo, size);
  OFF(WGPUDeviceDescriptor, DeviceDescriptor, requiredFeatureCount);
  OFF(WGPUDeviceDescriptor, DeviceDescriptor, requiredFeatures);
  OFF(WGPUDeviceDescriptor, DeviceDescriptor, requiredLimits);
  OFF(WGPUDeviceDescriptor, DeviceDescriptor, deviceLostCallbackInfo);
  OFF(WGPUDeviceDescriptor, DeviceDescriptor, uncapturedErrorCallbackInfo);
  SIZE(WGPUDeviceDescriptor, DeviceDescriptor, size);
  OFF(WGPUAdapterInfo, AdapterInfo, vendor);
  OFF(WGPUAdapterInfo, AdapterInfo, architecture);
  OFF(WGPUAdapterInfo, AdapterInfo, device);
  OFF(WGPUAdapterInfo, AdapterInfo, description);
  OFF(WGPUAdapterInfo, AdapterInfo, backendType);
  OFF(WGPUAdapterInfo, AdapterInfo, adapterType);
  OFF(WGPUAdapterInfo, AdapterInfo, vendorID);
  OFF(WGPUAdapterInfo, AdapterInfo, deviceID);
  OFF(WGPUAdapterInfo, AdapterInfo, subgroupMinSize);
  OFF(WGPUAdapterInfo, AdapterInfo, subgroupMaxSize);
  SIZE(WGPUAdapterInfo, AdapterInfo, size);
  OFF(WGPUBufferDescriptor, BufferDescriptor, usage);
  OFF(WGPUBufferDescriptor, BufferDescriptor, size);
  OFF(WGPUBufferDescriptor, BufferDescriptor, mappedAtCreation);
  SIZE(WGPUBufferDescriptor, BufferDescriptor, size_);
  OFF(WGPUShaderSourceWGSL, ShaderSourceWGSL, code);
  OFF(WGPUComputePipelineDescriptor, ComputePipelineDescriptor, layout);
  OFF2(WGPUComputePipelineDescriptor, ComputePipelineDescriptor, module, compute.module);
  OFF2(WGPUComputePipelineDescriptor, ComputePipelineDescriptor, entryPoint, compute.entryPoint);
  OFF2(WGPUComputePipelineDescriptor, ComputePipelineDescriptor, constantCount, compute.constantCount);
  OFF(WGPUBindGroupEntry, BindGroupEntry, binding);
  OFF(WGPUBindGroupEntry, BindGroupEntry, buffer);
  OFF(WGPUBindGroupEntry, BindGroupEntry, offset);
  OFF(WGPUBindGroupEntry, BindGroupEntry, size);
  SIZE(WGPUBindGroupEntry, BindGroupEntry, size_);
  OFF(WGPUBindGroupDescriptor, BindGroupDescriptor, layout);
  OFF(WGPUBindGroupDescriptor, BindGroupDescriptor, entryCount);
  OFF(WGPUBindGroupDescriptor, BindGroupDescriptor, entries);
#define LIM(f) check_off("Limits", #f, (int)offsetof(WGPULimits, f));
  LIM(maxTextureDimension1D) LIM(maxTextureDimension2D) LIM(maxTextureDimension3D) LIM(maxTextureArrayLayers)
  LIM(maxBindGroups) LIM(maxBindGroupsPlusVertexBuffers) LIM(maxBindingsPerBindGroup)
  LIM(maxDynamicUniformBuffersPerPipelineLayout) LIM(maxDynamicStorageBuffersPerPipelineLayout)
  LIM(maxSampledTexturesPerShaderStage) LIM(maxSamplersPerShaderStage) LIM(maxStorageBuffersPerShaderStage)
  LIM(maxStorageTexturesPerShaderStage) LIM(maxUniformBuffersPerShaderStage) LIM(maxUniformBufferBindingSize)
  LIM(maxStorageBufferBindingSize) LIM(minUniformBufferOffsetAlignment) LIM(minStorageBufferOffsetAlignment)
  LIM(maxVertexBuffers) LIM(maxBufferSize) LIM(maxVertexAttributes) LIM(maxVertexBufferArrayStride)
  LIM(maxInterStageShaderVariables) LIM(maxColorAttachments) LIM(maxColorAttachmentBytesPerSample)
  LIM(maxComputeWorkgroupStorageSize) LIM(maxComputeInvocationsPerWorkgroup) LIM(maxComputeWorkgroupSizeX)
  LIM(maxComputeWorkgroupSizeY) LIM(maxComputeWorkgroupSizeZ) LIM(maxComputeWorkgroupsPerDimension)
  LIM(maxImmediateSize)
#undef LIM
  check_off("Limits", "size", (int)sizeof(WGPULimits));
  printf("webgpu_browser_layout: %d offsets and sizes of wgpu_abi.h agree with webgpu_shim.js\n", n_fields);
}

/* Without an adapter (WebGPU disabled): the reason names the missing adapter, moving a
 * tensor there fails with PyTorch's message, and the CPU (WebAssembly) keeps computing. */
TEST(webgpu_browser_fallback) {
  if (ct_webgpu_is_available()) {
    CHECK(ct_webgpu_adapter_name()[0] != 0);
    CHECK(ct_webgpu_unavailable_reason()[0] == 0);
    return;
  }
  ct_test_webgpu_cpu_fallback("no adapter");
}

/* A WGSL compile error in the browser: the pipeline is not waited for (only read-backs
 * yield), so the error scope's answer arrives later and the next synchronisation reports
 * it with the compiler's message, once. */
TEST(webgpu_browser_pipeline_error) {
  if (!ct_webgpu_is_available()) return;
  CHECK_OK(ct_webgpu_synchronize());
  wg_lock();
  wg_pipe *p = wg_pipeline("@compute @workgroup_size(1) fn main() { let x: u32 = undefined_name; }");
  wg_unlock();
  (void)p;
  CHECK_ERR(ct_webgpu_synchronize(), "compute pipeline creation failed");
  CHECK_OK(ct_webgpu_synchronize());
}

/* Called by the page (ccall with {async: true}: read-backs yield to the event loop). */
EMSCRIPTEN_KEEPALIVE int ctwg_available(void) { return ct_webgpu_is_available() ? 1 : 0; }
EMSCRIPTEN_KEEPALIVE const char *ctwg_reason(void) { return ct_webgpu_unavailable_reason(); }
EMSCRIPTEN_KEEPALIVE const char *ctwg_adapter(void) { return ct_webgpu_adapter_name(); }
EMSCRIPTEN_KEEPALIVE int ctwg_run(const char *filter) {
  char prog[] = "ctwg", *argv[3] = {prog, (char *)filter, NULL};
  return ctwg_c_main(filter && *filter ? 2 : 1, argv);
}
