/* The part of the webgpu.h C API that the WebGPU backend uses, declared here (the
 * project ships no copy of webgpu.h). The layouts follow the Dawn build inside npm's
 * bun-webgpu-linux-x64 0.1.7 (libwebgpu_wrapper.so, a mid-2025 Dawn): webgpu-headers
 * at 1506137 (2025-04-30: WGPUStringView everywhere, callback-info structs passed by
 * value, the queue-work-done callback with a message, wgpuGetInstanceCapabilities),
 * plus what that Dawn had beyond it, checked against the library at run time by
 * tests/c/test_webgpu.c (ct_webgpu_abi_probe): WGPULimits ends with maxImmediateSize
 * (152 bytes: Dawn writes exactly that), WGPUAdapterInfo carries subgroup sizes (96).
 * Only plain types: every function comes from wgpuGetProcAddress at run time, so the
 * library is never linked. Bind group layouts come from the pipelines ("auto"
 * layout), which keeps WGPUBindGroupLayoutEntry (whose layout changed in 2025) out. */
#ifndef CT_WGPU_ABI_H
#define CT_WGPU_ABI_H
#include <stddef.h>
#include <stdint.h>

typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags;
typedef struct WGPUInstanceImpl *WGPUInstance;
typedef struct WGPUAdapterImpl *WGPUAdapter;
typedef struct WGPUDeviceImpl *WGPUDevice;
typedef struct WGPUQueueImpl *WGPUQueue;
typedef struct WGPUBufferImpl *WGPUBuffer;
typedef struct WGPUShaderModuleImpl *WGPUShaderModule;
typedef struct WGPUComputePipelineImpl *WGPUComputePipeline;
typedef struct WGPUPipelineLayoutImpl *WGPUPipelineLayout;
typedef struct WGPUBindGroupLayoutImpl *WGPUBindGroupLayout;
typedef struct WGPUBindGroupImpl *WGPUBindGroup;
typedef struct WGPUCommandEncoderImpl *WGPUCommandEncoder;
typedef struct WGPUComputePassEncoderImpl *WGPUComputePassEncoder;
typedef struct WGPUCommandBufferImpl *WGPUCommandBuffer;
typedef struct WGPUSamplerImpl *WGPUSampler;
typedef struct WGPUTextureViewImpl *WGPUTextureView;
typedef struct WGPUSurfaceImpl *WGPUSurface;

/* ---- enums (uint32 in the ABI) ---- */
typedef uint32_t WGPUSType;
#define WGPUSType_ShaderSourceWGSL 0x00000002u
typedef uint32_t WGPUBackendType;
#define WGPUBackendType_Undefined 0u
#define WGPUBackendType_Null 1u
#define WGPUBackendType_WebGPU 2u
#define WGPUBackendType_D3D11 3u
#define WGPUBackendType_D3D12 4u
#define WGPUBackendType_Metal 5u
#define WGPUBackendType_Vulkan 6u
#define WGPUBackendType_OpenGL 7u
#define WGPUBackendType_OpenGLES 8u
typedef uint32_t WGPUAdapterType;
#define WGPUAdapterType_DiscreteGPU 1u
#define WGPUAdapterType_IntegratedGPU 2u
#define WGPUAdapterType_CPU 3u
#define WGPUAdapterType_Unknown 4u
typedef uint32_t WGPUFeatureLevel;
#define WGPUFeatureLevel_Core 2u
typedef uint32_t WGPUPowerPreference;
#define WGPUPowerPreference_HighPerformance 2u
typedef uint32_t WGPUCallbackMode;
#define WGPUCallbackMode_WaitAnyOnly 1u
#define WGPUCallbackMode_AllowProcessEvents 2u
#define WGPUCallbackMode_AllowSpontaneous 3u
typedef uint32_t WGPURequestAdapterStatus; /* Success 1 */
typedef uint32_t WGPURequestDeviceStatus;  /* Success 1 */
typedef uint32_t WGPUMapAsyncStatus;       /* Success 1 */
typedef uint32_t WGPUQueueWorkDoneStatus;  /* Success 1 */
typedef uint32_t WGPUPopErrorScopeStatus;  /* Success 1 */
typedef uint32_t WGPUWaitStatus;           /* Success 1, TimedOut 2, Error 3 */
typedef uint32_t WGPUStatus;               /* Success 1, Error 2 */
#define WGPU_SUCCESS 1u
typedef uint32_t WGPUErrorType;
#define WGPUErrorType_NoError 1u
#define WGPUErrorType_Validation 2u
#define WGPUErrorType_OutOfMemory 3u
#define WGPUErrorType_Internal 4u
typedef uint32_t WGPUErrorFilter;
#define WGPUErrorFilter_Validation 1u
#define WGPUErrorFilter_OutOfMemory 2u
#define WGPUErrorFilter_Internal 3u
typedef uint32_t WGPUDeviceLostReason; /* Unknown 1, Destroyed 2, CallbackCancelled 3, FailedCreation 4 */
typedef uint32_t WGPUFeatureName;
#define WGPUFeatureName_ShaderF16 0x0000000Au
#define WGPUFeatureName_Subgroups 0x00000011u

typedef WGPUFlags WGPUBufferUsage;
#define WGPUBufferUsage_MapRead 0x1ull
#define WGPUBufferUsage_MapWrite 0x2ull
#define WGPUBufferUsage_CopySrc 0x4ull
#define WGPUBufferUsage_CopyDst 0x8ull
#define WGPUBufferUsage_Storage 0x80ull
typedef WGPUFlags WGPUMapMode;
#define WGPUMapMode_Read 0x1ull
#define WGPUMapMode_Write 0x2ull

#define WGPU_STRLEN SIZE_MAX
#define WGPU_LIMIT_U32_UNDEFINED UINT32_MAX
#define WGPU_LIMIT_U64_UNDEFINED UINT64_MAX
#define WGPU_WHOLE_SIZE UINT64_MAX

/* ---- structs ---- */
typedef struct WGPUStringView {
  const char *data;
  size_t length; /* WGPU_STRLEN: NUL-terminated */
} WGPUStringView;

typedef struct WGPUChainedStruct {
  struct WGPUChainedStruct *next;
  WGPUSType sType;
} WGPUChainedStruct;

typedef struct WGPUFuture {
  uint64_t id;
} WGPUFuture;

typedef struct WGPUFutureWaitInfo {
  WGPUFuture future;
  WGPUBool completed;
} WGPUFutureWaitInfo;

typedef struct WGPURequestAdapterOptions {
  WGPUChainedStruct *nextInChain;
  WGPUFeatureLevel featureLevel;
  WGPUPowerPreference powerPreference;
  WGPUBool forceFallbackAdapter;
  WGPUBackendType backendType;
  WGPUSurface compatibleSurface;
} WGPURequestAdapterOptions;

typedef void (*WGPURequestAdapterCallback)(WGPURequestAdapterStatus status, WGPUAdapter adapter,
                                           WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPURequestDeviceCallback)(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message,
                                          void *userdata1, void *userdata2);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice *device, WGPUDeviceLostReason reason, WGPUStringView message,
                                       void *userdata1, void *userdata2);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice *device, WGPUErrorType type, WGPUStringView message,
                                            void *userdata1, void *userdata2);
typedef void (*WGPUBufferMapCallback)(WGPUMapAsyncStatus status, WGPUStringView message, void *userdata1,
                                      void *userdata2);
/* this generation's queue-work-done callback carries a message (webgpu-headers #528) */
typedef void (*WGPUQueueWorkDoneCallback)(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *userdata1,
                                          void *userdata2);
typedef void (*WGPUPopErrorScopeCallback)(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message,
                                          void *userdata1, void *userdata2);

/* The callback infos of the asynchronous calls share one layout. */
#define CT_WGPU_CALLBACK_INFO(name, cb) \
  typedef struct name {                  \
    WGPUChainedStruct *nextInChain;      \
    WGPUCallbackMode mode;               \
    cb callback;                         \
    void *userdata1;                     \
    void *userdata2;                     \
  } name
CT_WGPU_CALLBACK_INFO(WGPURequestAdapterCallbackInfo, WGPURequestAdapterCallback);
CT_WGPU_CALLBACK_INFO(WGPURequestDeviceCallbackInfo, WGPURequestDeviceCallback);
CT_WGPU_CALLBACK_INFO(WGPUDeviceLostCallbackInfo, WGPUDeviceLostCallback);
CT_WGPU_CALLBACK_INFO(WGPUBufferMapCallbackInfo, WGPUBufferMapCallback);
CT_WGPU_CALLBACK_INFO(WGPUQueueWorkDoneCallbackInfo, WGPUQueueWorkDoneCallback);
CT_WGPU_CALLBACK_INFO(WGPUPopErrorScopeCallbackInfo, WGPUPopErrorScopeCallback);
#undef CT_WGPU_CALLBACK_INFO
typedef struct WGPUUncapturedErrorCallbackInfo { /* no mode: it fires whenever an error is not captured */
  WGPUChainedStruct *nextInChain;
  WGPUUncapturedErrorCallback callback;
  void *userdata1;
  void *userdata2;
} WGPUUncapturedErrorCallbackInfo;

typedef struct WGPULimits {
  WGPUChainedStruct *nextInChain;
  uint32_t maxTextureDimension1D;
  uint32_t maxTextureDimension2D;
  uint32_t maxTextureDimension3D;
  uint32_t maxTextureArrayLayers;
  uint32_t maxBindGroups;
  uint32_t maxBindGroupsPlusVertexBuffers;
  uint32_t maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout;
  uint32_t maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage;
  uint32_t maxSamplersPerShaderStage;
  uint32_t maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage;
  uint32_t maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize;
  uint64_t maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment;
  uint32_t minStorageBufferOffsetAlignment;
  uint32_t maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes;
  uint32_t maxVertexBufferArrayStride;
  uint32_t maxInterStageShaderVariables;
  uint32_t maxColorAttachments;
  uint32_t maxColorAttachmentBytesPerSample;
  uint32_t maxComputeWorkgroupStorageSize;
  uint32_t maxComputeInvocationsPerWorkgroup;
  uint32_t maxComputeWorkgroupSizeX;
  uint32_t maxComputeWorkgroupSizeY;
  uint32_t maxComputeWorkgroupSizeZ;
  uint32_t maxComputeWorkgroupsPerDimension;
  uint32_t maxImmediateSize; /* webgpu-headers c1ae594 (2025-05-01); Dawn writes exactly these 152 bytes */
} WGPULimits;

typedef struct WGPUQueueDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
} WGPUQueueDescriptor;

typedef struct WGPUDeviceDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  size_t requiredFeatureCount;
  const WGPUFeatureName *requiredFeatures;
  const WGPULimits *requiredLimits;
  WGPUQueueDescriptor defaultQueue;
  WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPUAdapterInfo {
  WGPUChainedStruct *nextInChain;
  WGPUStringView vendor;
  WGPUStringView architecture;
  WGPUStringView device;
  WGPUStringView description;
  WGPUBackendType backendType;
  WGPUAdapterType adapterType;
  uint32_t vendorID;
  uint32_t deviceID;
  uint32_t subgroupMinSize;
  uint32_t subgroupMaxSize;
} WGPUAdapterInfo;

typedef struct WGPUBufferDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  WGPUBufferUsage usage;
  uint64_t size;
  WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef struct WGPUShaderSourceWGSL {
  WGPUChainedStruct chain;
  WGPUStringView code;
} WGPUShaderSourceWGSL;

typedef struct WGPUShaderModuleDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
} WGPUShaderModuleDescriptor;

typedef struct WGPUConstantEntry WGPUConstantEntry; /* not used: only pointed to */
typedef struct WGPUComputeState {
  WGPUChainedStruct *nextInChain;
  WGPUShaderModule module;
  WGPUStringView entryPoint;
  size_t constantCount;
  const WGPUConstantEntry *constants;
} WGPUComputeState;

typedef struct WGPUComputePipelineDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  WGPUPipelineLayout layout; /* NULL: "auto" layout */
  WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

typedef struct WGPUBindGroupEntry {
  WGPUChainedStruct *nextInChain;
  uint32_t binding;
  WGPUBuffer buffer;
  uint64_t offset;
  uint64_t size;
  WGPUSampler sampler;
  WGPUTextureView textureView;
} WGPUBindGroupEntry;

typedef struct WGPUBindGroupDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  WGPUBindGroupLayout layout;
  size_t entryCount;
  const WGPUBindGroupEntry *entries;
} WGPUBindGroupDescriptor;

/* ---- functions, resolved through wgpuGetProcAddress ---- */
typedef void (*WGPUProc)(void);
#define CT_WGPU_PROCS(X)                                                                                             \
  X(WGPUInstance, wgpuCreateInstance, (const void *descriptor))                                                     \
  X(void, wgpuInstanceRelease, (WGPUInstance))                                                                      \
  X(WGPUFuture, wgpuInstanceRequestAdapter, (WGPUInstance, const WGPURequestAdapterOptions *,                       \
                                             WGPURequestAdapterCallbackInfo))                                       \
  X(void, wgpuInstanceProcessEvents, (WGPUInstance))                                                                \
  X(WGPUWaitStatus, wgpuInstanceWaitAny, (WGPUInstance, size_t, WGPUFutureWaitInfo *, uint64_t))                    \
  X(WGPUStatus, wgpuAdapterGetInfo, (WGPUAdapter, WGPUAdapterInfo *))                                               \
  X(void, wgpuAdapterInfoFreeMembers, (WGPUAdapterInfo))                                                            \
  X(WGPUStatus, wgpuAdapterGetLimits, (WGPUAdapter, WGPULimits *))                                                  \
  X(WGPUBool, wgpuAdapterHasFeature, (WGPUAdapter, WGPUFeatureName))                                                \
  X(WGPUFuture, wgpuAdapterRequestDevice, (WGPUAdapter, const WGPUDeviceDescriptor *, WGPURequestDeviceCallbackInfo)) \
  X(void, wgpuAdapterRelease, (WGPUAdapter))                                                                        \
  X(WGPUStatus, wgpuDeviceGetLimits, (WGPUDevice, WGPULimits *))                                                    \
  X(WGPUQueue, wgpuDeviceGetQueue, (WGPUDevice))                                                                    \
  X(WGPUBuffer, wgpuDeviceCreateBuffer, (WGPUDevice, const WGPUBufferDescriptor *))                                 \
  X(WGPUShaderModule, wgpuDeviceCreateShaderModule, (WGPUDevice, const WGPUShaderModuleDescriptor *))               \
  X(WGPUComputePipeline, wgpuDeviceCreateComputePipeline, (WGPUDevice, const WGPUComputePipelineDescriptor *))      \
  X(WGPUBindGroup, wgpuDeviceCreateBindGroup, (WGPUDevice, const WGPUBindGroupDescriptor *))                        \
  X(WGPUCommandEncoder, wgpuDeviceCreateCommandEncoder, (WGPUDevice, const void *))                                 \
  X(void, wgpuDevicePushErrorScope, (WGPUDevice, WGPUErrorFilter))                                                  \
  X(WGPUFuture, wgpuDevicePopErrorScope, (WGPUDevice, WGPUPopErrorScopeCallbackInfo))                               \
  X(void, wgpuDeviceDestroy, (WGPUDevice))                                                                          \
  X(void, wgpuDeviceRelease, (WGPUDevice))                                                                          \
  X(void, wgpuQueueSubmit, (WGPUQueue, size_t, const WGPUCommandBuffer *))                                          \
  X(void, wgpuQueueWriteBuffer, (WGPUQueue, WGPUBuffer, uint64_t, const void *, size_t))                            \
  X(WGPUFuture, wgpuQueueOnSubmittedWorkDone, (WGPUQueue, WGPUQueueWorkDoneCallbackInfo))                           \
  X(void, wgpuQueueRelease, (WGPUQueue))                                                                            \
  X(WGPUFuture, wgpuBufferMapAsync, (WGPUBuffer, WGPUMapMode, size_t, size_t, WGPUBufferMapCallbackInfo))           \
  X(const void *, wgpuBufferGetConstMappedRange, (WGPUBuffer, size_t, size_t))                                      \
  X(void *, wgpuBufferGetMappedRange, (WGPUBuffer, size_t, size_t))                                                 \
  X(void, wgpuBufferUnmap, (WGPUBuffer))                                                                            \
  X(void, wgpuBufferDestroy, (WGPUBuffer))                                                                          \
  X(void, wgpuBufferRelease, (WGPUBuffer))                                                                          \
  X(void, wgpuShaderModuleRelease, (WGPUShaderModule))                                                              \
  X(WGPUBindGroupLayout, wgpuComputePipelineGetBindGroupLayout, (WGPUComputePipeline, uint32_t))                   \
  X(void, wgpuComputePipelineRelease, (WGPUComputePipeline))                                                        \
  X(void, wgpuBindGroupLayoutRelease, (WGPUBindGroupLayout))                                                        \
  X(void, wgpuBindGroupRelease, (WGPUBindGroup))                                                                    \
  X(WGPUComputePassEncoder, wgpuCommandEncoderBeginComputePass, (WGPUCommandEncoder, const void *))                 \
  X(void, wgpuCommandEncoderCopyBufferToBuffer, (WGPUCommandEncoder, WGPUBuffer, uint64_t, WGPUBuffer, uint64_t,    \
                                                 uint64_t))                                                         \
  X(WGPUCommandBuffer, wgpuCommandEncoderFinish, (WGPUCommandEncoder, const void *))                                \
  X(void, wgpuCommandEncoderRelease, (WGPUCommandEncoder))                                                          \
  X(void, wgpuCommandBufferRelease, (WGPUCommandBuffer))                                                            \
  X(void, wgpuComputePassEncoderSetPipeline, (WGPUComputePassEncoder, WGPUComputePipeline))                         \
  X(void, wgpuComputePassEncoderSetBindGroup, (WGPUComputePassEncoder, uint32_t, WGPUBindGroup, size_t,             \
                                               const uint32_t *))                                                   \
  X(void, wgpuComputePassEncoderDispatchWorkgroups, (WGPUComputePassEncoder, uint32_t, uint32_t, uint32_t))         \
  X(void, wgpuComputePassEncoderEnd, (WGPUComputePassEncoder))                                                      \
  X(void, wgpuComputePassEncoderRelease, (WGPUComputePassEncoder))

typedef WGPUProc (*PFN_wgpuGetProcAddress)(WGPUStringView procName);

#endif
