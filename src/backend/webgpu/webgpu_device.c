/* The WebGPU backend's device side: Dawn loaded with dlopen (never linked), one Vulkan
 * adapter and device, buffers from a pool, uploads and downloads through staging
 * buffers recorded in the open command encoder, dispatches batched into few submits,
 * and compute pipelines cached by their WGSL text. Reads back only when asked
 * (download, synchronize). One lock serialises the backend: Dawn objects are not
 * shared across threads here. */
#include "webgpu_backend.h"
#include "ctorch/webgpu.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifndef __EMSCRIPTEN__
#include <dlfcn.h>
#include <sched.h>
#elif !defined(CT_WEBGPU_BROWSER) /* the CPU-only wasm build compiles the backend without WebGPU */
#pragma clang diagnostic ignored "-Wunused-function"
#endif
#ifdef CT_WEBGPU_BROWSER
/* The browser build (make wasm-webgpu): the same entry points implemented in JavaScript on
 * navigator.gpu by src/backend/webgpu/webgpu_shim.js (an emscripten --js-library), linked
 * directly; wgpuInstanceProcessEvents yields to the browser's event loop (ASYNCIFY). */
#define X(ret, name, args) ret name args;
CT_WGPU_PROCS(X)
#undef X
#endif

#ifndef CT_WEBGPU_DEFAULT_LIB /* set by webgpu.mk to the npm-installed library */
#define CT_WEBGPU_DEFAULT_LIB "libwebgpu_wrapper.so"
#endif
#define SWIFTSHADER_ICD "/usr/lib/chromium/vk_swiftshader_icd.json"
#define N_CLASSES 96
#define MAX_PENDING 256 /* dispatches per submit */

/* the procedures, resolved through wgpuGetProcAddress */
#define X(ret, name, args) static ret(*p_##name) args __attribute__((unused)); /* some are for the tests or later */
CT_WGPU_PROCS(X)
#undef X

static struct {
  pthread_mutex_t mu;
  pthread_once_t once;
  bool ok;
  char reason[768];
  char name[256];
  void *lib;
  WGPUInstance inst;
  WGPUAdapter adapter;
  WGPUDevice dev;
  WGPUQueue queue;
  WGPULimits limits, adapter_limits;
  uint32_t backend_type, adapter_type;
  int limits_bytes, info_bytes, procs_match;
  /* batching */
  WGPUCommandEncoder enc;
  WGPUComputePassEncoder pass;
  int pending;
  /* pool */
  wg_buf *free_list[N_CLASSES];
  int64_t allocated, cached, peak, n_allocs;
  int cache_enabled;
  /* pipelines */
  wg_pipe *pipes[256];
  /* per-dispatch parameters: slot `pending` of a ring the size of one batch */
  wg_buf *params;
  /* device error flag (bad indices) */
  wg_buf *flag;
  bool flag_armed;
  wg_buf *counters; /* wg_counter_buffer */
  ct_webgpu_counters cnt;
} G = {
#ifdef PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP /* kernels may allocate a temporary under the lock */
    PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
#else
    PTHREAD_MUTEX_INITIALIZER,
#endif
    PTHREAD_ONCE_INIT};

/* Errors Dawn reports through the uncaptured-error callback land here (their own lock:
 * Dawn may call back from inside a call made under G.mu). */
static pthread_mutex_t err_mu = PTHREAD_MUTEX_INITIALIZER;
static char err_msg[1024];
static int err_count;
static int lost;
/* adapter identity and subgroup support (webgpu_tune.c, tests) */
static char wg_key[700];
static uint32_t wg_sg_min, wg_sg_max;
static int wg_sg_feature;
static int wg_sg_on; /* the device was created with the subgroups feature (kernels may use it) */

void wg_lock(void) { pthread_mutex_lock(&G.mu); }
void wg_unlock(void) { pthread_mutex_unlock(&G.mu); }

static void sv_copy(char *dst, size_t n, WGPUStringView v) {
  size_t len = v.data ? (v.length == WGPU_STRLEN ? strlen(v.data) : v.length) : 0;
  if (len >= n) len = n - 1;
  if (len) memcpy(dst, v.data, len);
  dst[len] = 0;
}
static WGPUStringView sv(const char *s) {
  WGPUStringView v = {s, s ? strlen(s) : 0};
  return v;
}

static void on_uncaptured(const WGPUDevice *d, WGPUErrorType type, WGPUStringView msg, void *u1, void *u2) {
  (void)d;
  (void)u1;
  (void)u2;
  pthread_mutex_lock(&err_mu);
  if (!err_count) {
    char m[900];
    sv_copy(m, sizeof m, msg);
    snprintf(err_msg, sizeof err_msg, "WebGPU %s error: %s",
             type == WGPUErrorType_Validation    ? "validation"
             : type == WGPUErrorType_OutOfMemory ? "out-of-memory"
                                                 : "internal",
             m);
  }
  err_count++;
  pthread_mutex_unlock(&err_mu);
}
static void on_lost(const WGPUDevice *d, WGPUDeviceLostReason reason, WGPUStringView msg, void *u1, void *u2) {
  (void)d;
  (void)u1;
  (void)u2;
  if (reason == 2 || reason == 3) return; /* destroyed by us / at exit */
  pthread_mutex_lock(&err_mu);
  char m[900];
  sv_copy(m, sizeof m, msg);
  snprintf(err_msg, sizeof err_msg, "WebGPU device lost: %s", m);
  err_count++;
  lost = 1;
  pthread_mutex_unlock(&err_mu);
}

/* Takes a pending device error as a ctorch error (CT_OK if none). */
static ct_status take_error(void) {
  pthread_mutex_lock(&err_mu);
  int n = err_count;
  char m[1024];
  memcpy(m, err_msg, sizeof m);
  err_count = 0;
  err_msg[0] = 0;
  pthread_mutex_unlock(&err_mu);
  if (!n) return CT_OK;
  return CT_ERR(strstr(m, "out-of-memory") ? CT_ERR_OOM : CT_ERR_RUNTIME, "%s", m);
}

/* ---- waiting for a callback: process events until *flag, with a generous limit ---- */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int wait_spin = -1; /* CT_WEBGPU_WAIT_SPIN=1: poll without sleeping (latency A/B) */
static bool wait_flag(volatile int *flag, double limit_s) {
  double t0 = now_s();
  if (wait_spin < 0) {
    const char *e = getenv("CT_WEBGPU_WAIT_SPIN");
    wait_spin = e && *e == '1';
  }
  for (long spins = 0; !*flag; spins++) {
    p_wgpuInstanceProcessEvents(G.inst);
    if (*flag) break;
    if (wait_spin && now_s() - t0 < 1.0) continue;
    if (spins > 64) {
#ifndef __EMSCRIPTEN__
      struct timespec ts = {0, spins > 4096 ? 200000 : 20000};
      nanosleep(&ts, NULL);
#endif
      if (now_s() - t0 > limit_s) return false;
    }
  }
  return true;
}

/* ---- opening the device ---- */
typedef struct {
  volatile int done;
  uint32_t status;
  void *obj;
  char msg[512];
} req_result;
static void on_adapter(WGPURequestAdapterStatus st, WGPUAdapter a, WGPUStringView msg, void *u1, void *u2) {
  (void)u2;
  req_result *r = u1;
  r->status = st;
  r->obj = a;
  sv_copy(r->msg, sizeof r->msg, msg);
  r->done = 1;
}
static void on_device(WGPURequestDeviceStatus st, WGPUDevice d, WGPUStringView msg, void *u1, void *u2) {
  (void)u2;
  req_result *r = u1;
  r->status = st;
  r->obj = d;
  sv_copy(r->msg, sizeof r->msg, msg);
  r->done = 1;
}

static const char *backend_name(uint32_t b) {
  static const char *names[] = {"undefined", "Null", "WebGPU", "D3D11", "D3D12", "Metal", "Vulkan", "OpenGL", "OpenGLES"};
  return b < 9 ? names[b] : "unknown";
}

/* One adapter request for Vulkan; false with G.reason set if none. */
static bool request_adapter(void) {
  G.inst = p_wgpuCreateInstance(NULL);
  if (!G.inst) {
    snprintf(G.reason, sizeof G.reason, "WebGPU: Dawn could not create an instance");
    return false;
  }
  WGPURequestAdapterOptions o;
  memset(&o, 0, sizeof o);
  o.featureLevel = WGPUFeatureLevel_Core;
  o.powerPreference = WGPUPowerPreference_HighPerformance;
#ifdef CT_WEBGPU_BROWSER
  o.backendType = WGPUBackendType_Undefined; /* the browser picks */
#else
  o.backendType = WGPUBackendType_Vulkan; /* never Dawn's Null backend, which computes zeros */
#endif
  req_result r;
  memset(&r, 0, sizeof r);
  WGPURequestAdapterCallbackInfo cb = {NULL, WGPUCallbackMode_AllowProcessEvents, on_adapter, &r, NULL};
  p_wgpuInstanceRequestAdapter(G.inst, &o, cb);
  if (!wait_flag(&r.done, 60) || r.status != WGPU_SUCCESS || !r.obj) {
    snprintf(G.reason, sizeof G.reason,
#ifdef CT_WEBGPU_BROWSER
             "WebGPU: no adapter (%s)",
#else
             "WebGPU: no Vulkan adapter (%s)",
#endif
             r.done ? (r.msg[0] ? r.msg : "none offered") : "no answer within 60 s");
    if (r.obj) p_wgpuAdapterRelease(r.obj);
    p_wgpuInstanceRelease(G.inst);
    G.inst = NULL;
    return false;
  }
  G.adapter = r.obj;
  return true;
}

static void open_device(void) {
#if defined(__EMSCRIPTEN__) && !defined(CT_WEBGPU_BROWSER)
  snprintf(G.reason, sizeof G.reason,
           "WebGPU: this WebAssembly build has no WebGPU backend (the WebGPU build is `make wasm-webgpu`)");
  return;
#else
#ifdef CT_WEBGPU_BROWSER
#define X(ret, name, args) p_##name = name;
  CT_WGPU_PROCS(X)
#undef X
  if (!request_adapter()) return;
#else
  const char *off = getenv("CT_WEBGPU");
  if (off && !strcmp(off, "0")) {
    snprintf(G.reason, sizeof G.reason, "WebGPU: turned off (CT_WEBGPU=0)");
    return;
  }
  const char *path = getenv("CT_WEBGPU_LIB");
  if (!path || !*path) path = CT_WEBGPU_DEFAULT_LIB;
  G.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!G.lib) {
    const char *e = dlerror();
    snprintf(G.reason, sizeof G.reason,
             "WebGPU: cannot load Dawn (%s): %s; `make webgpu-deps` installs it from npm (bun-webgpu-linux-x64), "
             "CT_WEBGPU_LIB names another copy",
             path, e ? e : "not found");
    return;
  }
  PFN_wgpuGetProcAddress gpa = (PFN_wgpuGetProcAddress)dlsym(G.lib, "wgpuGetProcAddress");
  if (!gpa) {
    snprintf(G.reason, sizeof G.reason, "WebGPU: %s exports no wgpuGetProcAddress (not a webgpu.h library)", path);
    return;
  }
  G.procs_match = 1;
#define X(ret, name, args)                                                                              \
  p_##name = (ret(*) args)gpa(sv(#name));                                                              \
  if (!p_##name) {                                                                                     \
    snprintf(G.reason, sizeof G.reason, "WebGPU: %s lacks %s (a different webgpu.h generation)", path, #name); \
    return;                                                                                            \
  }                                                                                                    \
  if ((void *)p_##name != dlsym(G.lib, #name)) G.procs_match = 0;
  CT_WGPU_PROCS(X)
#undef X
  bool env_icd = getenv("VK_ICD_FILENAMES") || getenv("VK_DRIVER_FILES");
  if (!request_adapter()) {
    /* no Vulkan driver: Chromium's SwiftShader (a CPU Vulkan) where it is installed */
    FILE *f = env_icd ? NULL : fopen(SWIFTSHADER_ICD, "r");
    const char *no_ss = getenv("CT_WEBGPU_NO_SWIFTSHADER");
    if (!f || (no_ss && *no_ss && strcmp(no_ss, "0"))) {
      if (f) fclose(f);
      return;
    }
    fclose(f);
    setenv("VK_ICD_FILENAMES", SWIFTSHADER_ICD, 0);
    if (!request_adapter()) return;
  }
#endif
  /* the adapter info, with a sentinel after the struct to see how much Dawn writes */
  union {
    WGPUAdapterInfo info;
    unsigned char raw[sizeof(WGPUAdapterInfo) + 64];
  } ui;
  memset(ui.raw, 0xA5, sizeof ui.raw);
  ui.info.nextInChain = NULL;
  if (p_wgpuAdapterGetInfo(G.adapter, &ui.info) != WGPU_SUCCESS) {
    snprintf(G.reason, sizeof G.reason, "WebGPU: the adapter gives no info");
    return;
  }
  for (int i = (int)sizeof ui.raw - 1; i >= 0; i--)
    if (ui.raw[i] != 0xA5) {
      G.info_bytes = i + 1;
      break;
    }
  char dev[200], desc[200];
  sv_copy(dev, sizeof dev, ui.info.device);
  sv_copy(desc, sizeof desc, ui.info.description);
  G.backend_type = ui.info.backendType;
  G.adapter_type = ui.info.adapterType;
  snprintf(G.name, sizeof G.name, "%s (%s, %s)", dev[0] ? dev : desc, backend_name(G.backend_type),
           G.adapter_type == WGPUAdapterType_CPU ? "cpu" : G.adapter_type == WGPUAdapterType_DiscreteGPU ? "discrete gpu"
           : G.adapter_type == WGPUAdapterType_IntegratedGPU ? "integrated gpu" : "unknown type");
  /* the tuning cache's key (webgpu_tune.c): adapter, driver description, ids */
  snprintf(wg_key, sizeof wg_key, "%s|%s|%s|%04x:%04x", G.name, desc, backend_name(G.backend_type),
           ui.info.vendorID, ui.info.deviceID);
  wg_sg_min = ui.info.subgroupMinSize;
  wg_sg_max = ui.info.subgroupMaxSize;
  wg_sg_feature = p_wgpuAdapterHasFeature(G.adapter, WGPUFeatureName_Subgroups) ? 1 : 0;
  p_wgpuAdapterInfoFreeMembers(ui.info);
#ifdef CT_WEBGPU_BROWSER
  const uint32_t want_backend = WGPUBackendType_WebGPU; /* what the browser's adapter is, to the shim */
#else
  const uint32_t want_backend = WGPUBackendType_Vulkan;
#endif
  if (G.backend_type != want_backend) {
    snprintf(G.reason, sizeof G.reason, "WebGPU: Dawn offered its %s backend, not Vulkan (refused: %s)",
             backend_name(G.backend_type),
             G.backend_type == WGPUBackendType_Null ? "the Null backend computes nothing" : "untested here");
    return;
  }
  union {
    WGPULimits l;
    unsigned char raw[sizeof(WGPULimits) + 64];
  } ul;
  memset(ul.raw, 0xA5, sizeof ul.raw);
  ul.l.nextInChain = NULL;
  if (p_wgpuAdapterGetLimits(G.adapter, &ul.l) != WGPU_SUCCESS) {
    snprintf(G.reason, sizeof G.reason, "WebGPU: the adapter gives no limits");
    return;
  }
  for (int i = (int)sizeof ul.raw - 1; i >= 0; i--)
    if (ul.raw[i] != 0xA5) {
      G.limits_bytes = i + 1;
      break;
    }
  G.adapter_limits = ul.l;
  /* ask for the adapter's sizes explicitly: the defaults are 128 MiB bindings, 256 MiB buffers */
  WGPULimits req;
  memset(&req, 0xFF, sizeof req); /* every field "undefined" */
  req.nextInChain = NULL;
  req.maxStorageBufferBindingSize = G.adapter_limits.maxStorageBufferBindingSize;
  req.maxBufferSize = G.adapter_limits.maxBufferSize;
  req.maxComputeWorkgroupStorageSize = G.adapter_limits.maxComputeWorkgroupStorageSize;
  req.maxComputeInvocationsPerWorkgroup = G.adapter_limits.maxComputeInvocationsPerWorkgroup;
  req.maxComputeWorkgroupSizeX = G.adapter_limits.maxComputeWorkgroupSizeX;
  req.maxComputeWorkgroupSizeY = G.adapter_limits.maxComputeWorkgroupSizeY;
  req.maxStorageBuffersPerShaderStage = G.adapter_limits.maxStorageBuffersPerShaderStage;
  /* Dawn's device toggles (the DawnTogglesDescriptor of this generation of webgpu.h, sType
   * 0x0005000A): drop the bounds clamp Dawn adds to every storage access and the zeroing of
   * workgroup memory at each dispatch's start (every kernel here checks its own bounds and
   * writes workgroup memory before reading it). Validation stays on: errors are reported.
   * CT_WEBGPU_ROBUST=1 keeps Dawn's defaults (for A/B runs). */
  struct {
    WGPUChainedStruct chain;
    size_t enabledCount;
    const char *const *enabled;
    size_t disabledCount;
    const char *const *disabled;
  } toggles;
  static const char *const fast_toggles[] = {"disable_robustness", "disable_workgroup_init"};
  const char *rb = getenv("CT_WEBGPU_ROBUST");
  memset(&toggles, 0, sizeof toggles);
  toggles.chain.sType = 0x0005000Au;
  toggles.enabledCount = 2;
  toggles.enabled = fast_toggles;
  WGPUDeviceDescriptor dd;
  memset(&dd, 0, sizeof dd);
  if (!(rb && *rb == '1')) dd.nextInChain = &toggles.chain;
  dd.label = sv("ctorch");
  dd.requiredLimits = &req;
  /* subgroups where the adapter offers them (CT_WEBGPU_SUBGROUPS=0: without, for the fallback) */
  static const WGPUFeatureName sg_feature[1] = {WGPUFeatureName_Subgroups};
  const char *sge = getenv("CT_WEBGPU_SUBGROUPS");
  if (wg_sg_feature && wg_sg_min >= 4 && wg_sg_max <= 128 && !(sge && *sge == '0')) {
    dd.requiredFeatureCount = 1;
    dd.requiredFeatures = sg_feature;
  }
  dd.defaultQueue.label = sv("ctorch queue");
  dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  dd.deviceLostCallbackInfo.callback = on_lost;
  dd.uncapturedErrorCallbackInfo.callback = on_uncaptured; /* or validation errors pass silently */
  req_result r;
  memset(&r, 0, sizeof r);
  WGPURequestDeviceCallbackInfo cb = {NULL, WGPUCallbackMode_AllowProcessEvents, on_device, &r, NULL};
  p_wgpuAdapterRequestDevice(G.adapter, &dd, cb);
  if (!wait_flag(&r.done, 60) || r.status != WGPU_SUCCESS || !r.obj) {
    snprintf(G.reason, sizeof G.reason, "WebGPU: the %.200s adapter gave no device (%.400s)", G.name,
             r.msg[0] ? r.msg : "no answer");
    return;
  }
  G.dev = r.obj;
  wg_sg_on = dd.requiredFeatureCount == 1;
  memset(&G.limits, 0, sizeof G.limits);
  if (p_wgpuDeviceGetLimits(G.dev, &G.limits) != WGPU_SUCCESS) G.limits = G.adapter_limits;
  G.queue = p_wgpuDeviceGetQueue(G.dev);
  const char *nc = getenv("CT_NO_CACHE");
  G.cache_enabled = !(nc && *nc && *nc != '0');
  G.reason[0] = 0;
  G.ok = true;
#endif
}

static void init_once(void) { open_device(); }
const char *wg_adapter_key(void) { return wg_key; }
bool wg_subgroups(void) { return wg_sg_on; }
void wg_subgroup_info(int *feature, uint32_t *min_size, uint32_t *max_size) {
  *feature = wg_sg_feature;
  *min_size = wg_sg_min;
  *max_size = wg_sg_max;
}

static bool wg_available(int dev) {
  pthread_once(&G.once, init_once);
  return G.ok && dev == 0 && !lost;
}

ct_status wg_ready(void) {
  pthread_once(&G.once, init_once);
  if (!G.ok) return CT_ERR(CT_ERR_RUNTIME, "%s", G.reason);
  if (lost) return CT_ERR(CT_ERR_RUNTIME, "%s", err_msg[0] ? err_msg : "WebGPU device lost");
  return CT_OK;
}

uint64_t wg_max_binding(void) { return G.limits.maxStorageBufferBindingSize; }
uint32_t wg_max_groups(void) { return G.limits.maxComputeWorkgroupsPerDimension; }
uint32_t wg_max_storage_buffers(void) { return G.limits.maxStorageBuffersPerShaderStage; }

/* ---- batching ---- */
static void end_pass(void) {
  if (G.pass) {
    p_wgpuComputePassEncoderEnd(G.pass);
    p_wgpuComputePassEncoderRelease(G.pass);
    G.pass = NULL;
  }
}
static void ensure_encoder(void) {
  if (!G.enc) G.enc = p_wgpuDeviceCreateCommandEncoder(G.dev, NULL);
}
void wg_flush(void) {
  end_pass();
  if (G.enc) {
    WGPUCommandBuffer cb = p_wgpuCommandEncoderFinish(G.enc, NULL);
    p_wgpuCommandEncoderRelease(G.enc);
    G.enc = NULL;
    if (cb) {
      p_wgpuQueueSubmit(G.queue, 1, &cb);
      p_wgpuCommandBufferRelease(cb);
      G.cnt.submits++;
    }
  }
  G.pending = 0;
}

static wg_buf *buf_create(uint64_t size, WGPUBufferUsage usage, bool mapped);
static void buf_destroy(wg_buf *w);
#define PARAM_SLOT 256 /* bytes: minStorageBufferOffsetAlignment is at most 256 */
ct_status wg_dispatch(wg_pipe *p, int nb, wg_buf *const *bufs, uint32_t gx, uint32_t gy, uint32_t gz) {
  return wg_dispatch_p(p, nb, bufs, NULL, 0, gx, gy, gz);
}

/* With np parameter words, bound last (binding nb) from a ring slot written through the
 * queue: a queue write lands before the batch that reads it is submitted, and the ring
 * has a slot for every dispatch of a batch, so no slot is rewritten before it is read. */
static bool capture_record(wg_pipe *p, WGPUBindGroup bg, uint32_t gx, uint32_t gy, uint32_t gz,
                           const uint32_t *params, int np, int slot, const WGPUBindGroupEntry *e, int nb);
ct_status wg_dispatch_p(wg_pipe *p, int nb, wg_buf *const *bufs, const uint32_t *params, int np, uint32_t gx,
                        uint32_t gy, uint32_t gz) {
  if (!gx || !gy || !gz) return CT_OK;
  if (np * 4 > PARAM_SLOT) return CT_ERR(CT_ERR_RUNTIME, "WebGPU: too many kernel parameters");
  if (np && !G.params) {
    G.params = buf_create((uint64_t)PARAM_SLOT * MAX_PENDING, WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst, false);
    if (!G.params) return CT_ERR(CT_ERR_OOM, "WebGPU: no parameter buffer");
  }
  uint32_t mg = G.limits.maxComputeWorkgroupsPerDimension;
  if (gx > mg || gy > mg || gz > mg)
    return CT_ERR(CT_ERR_RUNTIME, "WebGPU: %u x %u x %u workgroups exceed the device's %u per dimension", gx, gy, gz, mg);
  WGPUBindGroupEntry e[WG_MAX_BINDINGS + 1];
  if (nb > WG_MAX_BINDINGS) return CT_ERR(CT_ERR_RUNTIME, "WebGPU: too many bindings (%d)", nb);
  uint64_t maxb = G.limits.maxStorageBufferBindingSize & ~(uint64_t)3;
  for (int i = 0; i < nb; i++) {
    memset(&e[i], 0, sizeof e[i]);
    e[i].binding = (uint32_t)i;
    e[i].buffer = bufs[i]->b;
    e[i].offset = 0;
    e[i].size = bufs[i]->size < maxb ? bufs[i]->size : maxb;
  }
  if (np) {
    uint64_t off = (uint64_t)G.pending * PARAM_SLOT;
    p_wgpuQueueWriteBuffer(G.queue, G.params->b, off, params, (size_t)np * 4);
    memset(&e[nb], 0, sizeof e[nb]);
    e[nb].binding = (uint32_t)nb;
    e[nb].buffer = G.params->b;
    e[nb].offset = off;
    e[nb].size = PARAM_SLOT;
  }
  WGPUBindGroupDescriptor bd;
  memset(&bd, 0, sizeof bd);
  bd.layout = p->bgl;
  bd.entryCount = (size_t)nb + (np ? 1 : 0);
  bd.entries = e;
  WGPUBindGroup bg = p_wgpuDeviceCreateBindGroup(G.dev, &bd);
  if (!bg) return CT_ERR(CT_ERR_RUNTIME, "WebGPU: bind group creation failed");
  ensure_encoder();
  if (!G.pass) G.pass = p_wgpuCommandEncoderBeginComputePass(G.enc, NULL);
  p_wgpuComputePassEncoderSetPipeline(G.pass, p->pipe);
  p_wgpuComputePassEncoderSetBindGroup(G.pass, 0, bg, 0, NULL);
  p_wgpuComputePassEncoderDispatchWorkgroups(G.pass, gx, gy, gz);
  if (!capture_record(p, bg, gx, gy, gz, params, np, np ? G.pending : -1, e, nb))
    p_wgpuBindGroupRelease(bg); /* the pass keeps what it uses */
  G.cnt.dispatches++;
  if (++G.pending >= MAX_PENDING) wg_flush();
  return CT_OK;
}

/* ---- capture and replay (see webgpu_backend.h) ---- */
typedef struct {
  wg_pipe *p;
  WGPUBindGroup bg; /* owned by the graph */
  uint32_t gx, gy, gz;
  int np, slot; /* parameter words and the ring slot the bind group points at (-1: none) */
  uint32_t params[PARAM_SLOT / 4];
  wg_refresh_fn refresh; /* rewrites params before each replay (host state that moves per step) */
  void *ctx;             /* refresh's argument, owned by the graph */
  int nb;                /* the bind group's buffer entries (to rebind the words to the graph's buffer) */
  WGPUBindGroupEntry e[WG_MAX_BINDINGS];
} wg_rec;
struct ct_webgpu_graph {
  wg_rec *r;
  int n, cap;
  bool oom;
  wg_buf *owned; /* buffers freed while capturing: only the graph's dispatches use them */
  wg_buf *words; /* the recorded parameter words, a slot per dispatch (NULL: none; then the ring) */
};
static ct_webgpu_graph *capturing;
bool wg_capturing(void) { return capturing != NULL; }
static void wg_free(int dev, void *ptr, size_t nbytes);

static bool capture_record(wg_pipe *p, WGPUBindGroup bg, uint32_t gx, uint32_t gy, uint32_t gz,
                           const uint32_t *params, int np, int slot, const WGPUBindGroupEntry *ents, int nb) {
  ct_webgpu_graph *g = capturing;
  if (!g) return false;
  if (g->n == g->cap) {
    int nc = g->cap ? 2 * g->cap : 64;
    wg_rec *q = realloc(g->r, (size_t)nc * sizeof *q);
    if (!q) {
      g->oom = true;
      return false;
    }
    g->r = q, g->cap = nc;
  }
  wg_rec *e = &g->r[g->n++];
  e->p = p, e->bg = bg, e->gx = gx, e->gy = gy, e->gz = gz, e->np = np, e->slot = slot;
  e->refresh = NULL, e->ctx = NULL;
  e->nb = nb;
  memcpy(e->e, ents, (size_t)nb * sizeof *ents);
  if (np) memcpy(e->params, params, (size_t)np * 4);
  return true;
}

bool wg_capture_refresh(wg_refresh_fn f, void *ctx) {
  ct_webgpu_graph *g = capturing;
  if (!g || !g->n || g->oom || g->r[g->n - 1].np == 0 || g->r[g->n - 1].refresh) return false;
  g->r[g->n - 1].refresh = f, g->r[g->n - 1].ctx = ctx;
  return true;
}

ct_status ct_webgpu_capture_begin(void) {
  CT_TRY(wg_ready());
  wg_lock();
  ct_status st = CT_OK;
  if (capturing) st = CT_ERR(CT_ERR_RUNTIME, "WebGPU: a capture is already under way");
  else if (!(capturing = calloc(1, sizeof *capturing))) st = CT_ERR(CT_ERR_OOM, "out of memory");
  wg_unlock();
  return st;
}

ct_webgpu_graph *ct_webgpu_capture_end(void) {
  wg_lock();
  ct_webgpu_graph *g = capturing;
  capturing = NULL;
  wg_unlock();
  if (!g) {
    ct_set_error(CT_ERR_RUNTIME, "WebGPU: no capture is under way");
    return NULL;
  }
  if (g->oom) {
    ct_webgpu_graph_free(g);
    ct_set_error(CT_ERR_OOM, "out of memory recording the WebGPU capture");
    return NULL;
  }
  /* the parameter words move to a buffer of the graph's own, a slot per dispatch, written
   * once: a replay then rewrites only the refreshed slots and needs no ring-slot flushes */
  int nw = 0;
  for (int i = 0; i < g->n; i++) nw += g->r[i].np > 0;
  wg_lock();
  if (nw) g->words = buf_create((uint64_t)PARAM_SLOT * (uint64_t)nw, WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst, false);
  for (int i = 0, k = 0; g->words && i < g->n; i++) {
    wg_rec *e = &g->r[i];
    if (!e->np) continue;
    WGPUBindGroupEntry en[WG_MAX_BINDINGS + 1];
    memcpy(en, e->e, (size_t)e->nb * sizeof *en);
    memset(&en[e->nb], 0, sizeof en[e->nb]);
    en[e->nb].binding = (uint32_t)e->nb;
    en[e->nb].buffer = g->words->b;
    en[e->nb].offset = (uint64_t)k * PARAM_SLOT;
    en[e->nb].size = PARAM_SLOT;
    WGPUBindGroupDescriptor bd;
    memset(&bd, 0, sizeof bd);
    bd.layout = e->p->bgl;
    bd.entryCount = (size_t)e->nb + 1;
    bd.entries = en;
    WGPUBindGroup bg = p_wgpuDeviceCreateBindGroup(G.dev, &bd);
    if (!bg) continue; /* keeps the ring slot */
    p_wgpuQueueWriteBuffer(G.queue, g->words->b, (uint64_t)k * PARAM_SLOT, e->params, (size_t)e->np * 4);
    p_wgpuBindGroupRelease(e->bg);
    e->bg = bg, e->slot = -2 - k; /* -2 - k: slot k of the graph's buffer */
    k++;
  }
  wg_unlock();
  return g;
}

int64_t ct_webgpu_graph_dispatches(const ct_webgpu_graph *g) { return g ? g->n : 0; }

ct_status ct_webgpu_graph_replay(ct_webgpu_graph *g) {
  if (!g) return CT_ERR(CT_ERR_VALUE, "ct_webgpu_graph_replay: graph is NULL");
  CT_TRY(wg_ready());
  wg_lock();
  if (capturing) {
    wg_unlock();
    return CT_ERR(CT_ERR_RUNTIME, "WebGPU: cannot replay while capturing");
  }
  /* each recorded bind group reads its parameters at the ring slot it had at capture: a
   * slot is written once per batch (queue writes land before the submit), so the batch is
   * submitted before a slot comes round again */
  wg_flush();
  uint64_t used[MAX_PENDING / 64] = {0};
  for (int i = 0; i < g->n; i++) {
    wg_rec *e = &g->r[i];
    if (e->slot <= -2) { /* the graph's own words: rewritten only when they move */
      if (e->refresh && e->refresh(e->ctx, e->params)) {
        p_wgpuQueueWriteBuffer(G.queue, g->words->b, (uint64_t)(-2 - e->slot) * PARAM_SLOT, e->params, (size_t)e->np * 4);
      }
    } else if (e->slot >= 0) {
      if (used[e->slot / 64] >> (e->slot % 64) & 1) {
        wg_flush();
        memset(used, 0, sizeof used);
      }
      used[e->slot / 64] |= (uint64_t)1 << (e->slot % 64);
      if (e->refresh) e->refresh(e->ctx, e->params);
      p_wgpuQueueWriteBuffer(G.queue, G.params->b, (uint64_t)e->slot * PARAM_SLOT, e->params, (size_t)e->np * 4);
    }
    ensure_encoder();
    if (!G.pass) G.pass = p_wgpuCommandEncoderBeginComputePass(G.enc, NULL);
    p_wgpuComputePassEncoderSetPipeline(G.pass, e->p->pipe);
    p_wgpuComputePassEncoderSetBindGroup(G.pass, 0, e->bg, 0, NULL);
    p_wgpuComputePassEncoderDispatchWorkgroups(G.pass, e->gx, e->gy, e->gz);
    G.cnt.dispatches++;
    /* submit in chunks: the GPU starts on the first dispatches while the rest are encoded */
    if ((i + 1) % 128 == 0 && i + 1 < g->n) {
      wg_flush();
      memset(used, 0, sizeof used);
    }
  }
  wg_flush(); /* the slots are free again for eager work */
  wg_unlock();
  return CT_OK;
}

void ct_webgpu_graph_free(ct_webgpu_graph *g) {
  if (!g) return;
  wg_lock();
  for (int i = 0; i < g->n; i++) {
    p_wgpuBindGroupRelease(g->r[i].bg);
    free(g->r[i].ctx);
  }
  free(g->r);
  if (g->words) buf_destroy(g->words);
  wg_buf *w = g->owned;
  wg_unlock();
  while (w) { /* back to the pool: nothing records into them any more */
    wg_buf *nx = w->next;
    G.allocated += (int64_t)w->size; /* wg_free counted them out already */
    wg_free(0, w, (size_t)w->size);
    w = nx;
  }
  free(g);
}

/* ---- waiting for the queue: the work-done callback (it carries a message in this
 * generation of webgpu.h) ---- */
typedef struct {
  volatile int done;
  uint32_t status;
  int msg_ok;
} done_result;
static void on_done(WGPUQueueWorkDoneStatus st, WGPUStringView msg, void *u1, void *u2) {
  (void)u2;
  done_result *r = u1;
  r->status = st;
  /* a well-formed view: NULL data with length 0 or WGPU_STRLEN, or real text */
  r->msg_ok = (msg.data == NULL && (msg.length == 0 || msg.length == WGPU_STRLEN)) ||
              (msg.data != NULL && (msg.length == WGPU_STRLEN || msg.length < 4096));
  r->done = 1;
}
#ifdef CT_WEBGPU_BROWSER
static void wait_scopes(void);
#endif
static ct_status queue_idle(done_result *out) {
  wg_flush();
  done_result r;
  memset(&r, 0, sizeof r);
  WGPUQueueWorkDoneCallbackInfo cb = {NULL, WGPUCallbackMode_AllowProcessEvents, on_done, &r, NULL};
  p_wgpuQueueOnSubmittedWorkDone(G.queue, cb);
  if (!wait_flag(&r.done, 600)) return CT_ERR(CT_ERR_RUNTIME, "WebGPU: the queue did not finish within 600 s");
#ifdef CT_WEBGPU_BROWSER
  wait_scopes(); /* a synchronisation also reports the compile errors of the pipelines made before it */
#endif
  if (out) *out = r;
  if (r.status != WGPU_SUCCESS) {
    ct_status st = take_error();
    return st != CT_OK ? st : CT_ERR(CT_ERR_RUNTIME, "WebGPU: queue work failed (status %u)", r.status);
  }
  return CT_OK;
}

/* ---- buffers ---- */
static int size_class(uint64_t n, uint64_t *rounded) {
  uint64_t s = 256;
  int c = 0;
  while (s < n) {
    uint64_t mid = s + s / 2;
    if (mid >= n) {
      *rounded = mid;
      return 2 * c + 1;
    }
    s *= 2;
    c++;
  }
  *rounded = s;
  return 2 * c < N_CLASSES ? 2 * c : -1;
}

static wg_buf *buf_create(uint64_t size, WGPUBufferUsage usage, bool mapped) {
  WGPUBufferDescriptor d;
  memset(&d, 0, sizeof d);
  d.usage = usage;
  d.size = size;
  d.mappedAtCreation = mapped;
  WGPUBuffer b = p_wgpuDeviceCreateBuffer(G.dev, &d);
  if (!b) return NULL;
  wg_buf *w = ct_xcalloc(1, sizeof *w);
  if (!w) {
    p_wgpuBufferRelease(b);
    return NULL;
  }
  w->b = b;
  w->size = size;
  w->cls = -1;
  G.cnt.buffers_created++;
  return w;
}
static void buf_destroy(wg_buf *w) {
  p_wgpuBufferRelease(w->b); /* queued work that uses it keeps it alive */
  free(w);
}

static const int64_t CACHE_LIMIT = (int64_t)1 << 30;

static void empty_cache_locked(void) {
  for (int c = 0; c < N_CLASSES; c++)
    while (G.free_list[c]) {
      wg_buf *w = G.free_list[c];
      G.free_list[c] = w->next;
      buf_destroy(w);
    }
  G.cached = 0;
}

static void *wg_alloc(int dev, size_t nbytes) {
  (void)dev;
  if (wg_ready() != CT_OK) return NULL;
  uint64_t rounded;
  int c = size_class(nbytes ? nbytes : 4, &rounded);
  if (rounded > G.limits.maxBufferSize) {
    rounded = (nbytes + 3) & ~(uint64_t)3;
    c = -1;
  }
  if (rounded > G.limits.maxBufferSize) {
    ct_set_error(CT_ERR_OOM, "WebGPU out of memory: tried to allocate %zu bytes, above the device's maxBufferSize %llu",
                 nbytes, (unsigned long long)G.limits.maxBufferSize);
    return NULL;
  }
  wg_lock();
  wg_buf *w = NULL;
  if (c >= 0 && G.cache_enabled && G.free_list[c]) {
    w = G.free_list[c];
    G.free_list[c] = w->next;
    G.cached -= (int64_t)w->size;
  } else {
    w = buf_create(rounded, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, false);
    if (!w && G.cached) { /* the pool may hold what the device needs */
      wg_flush();
      empty_cache_locked();
      w = buf_create(rounded, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, false);
    }
    if (w) {
      w->cls = c;
      G.n_allocs++;
    }
  }
  if (w) {
    G.allocated += (int64_t)w->size;
    if (G.allocated > G.peak) G.peak = G.allocated;
  }
  wg_unlock();
  if (!w) ct_set_error(CT_ERR_OOM, "WebGPU out of memory: tried to allocate %zu bytes", nbytes);
  return w;
}

static void wg_free(int dev, void *ptr, size_t nbytes) {
  (void)dev;
  (void)nbytes;
  wg_buf *w = ptr;
  if (!w) return;
  wg_lock();
  G.allocated -= (int64_t)w->size;
  if (capturing) { /* a captured dispatch may use it: kept for the graph's replays */
    w->next = capturing->owned;
    capturing->owned = w;
    wg_unlock();
    return;
  }
  /* pooled reuse is safe: every later use is queued after the work that used it */
  if (G.cache_enabled && w->cls >= 0 && G.cached + (int64_t)w->size <= CACHE_LIMIT) {
    w->next = G.free_list[w->cls];
    G.free_list[w->cls] = w;
    G.cached += (int64_t)w->size;
  } else {
    buf_destroy(w);
  }
  wg_unlock();
}

static ct_status download_locked(wg_buf *src, uint64_t off, void *dst, uint64_t n);

/* host -> device: a mapped staging buffer copied in the open encoder, so the upload
 * stays ordered with the kernels recorded before and after it */
static ct_status upload_locked(wg_buf *dst, uint64_t off, const void *src, uint64_t n) {
  if (!n) return CT_OK;
  if (off + n > dst->size) return CT_ERR(CT_ERR_RUNTIME, "WebGPU: upload past the end of a buffer");
  uint64_t a0 = off & ~(uint64_t)3, a1 = (off + n + 3) & ~(uint64_t)3;
  unsigned char *tmp = NULL;
  if (a0 != off || a1 != off + n) { /* copies move whole words: read the edges back first */
    tmp = malloc((size_t)(a1 - a0));
    if (!tmp) return CT_ERR(CT_ERR_OOM, "out of memory");
    ct_status st = download_locked(dst, a0, tmp, a1 - a0);
    if (st != CT_OK) {
      free(tmp);
      return st;
    }
    memcpy(tmp + (off - a0), src, (size_t)n);
    src = tmp;
    off = a0;
    n = a1 - a0;
  }
  wg_buf *s = buf_create(n, WGPUBufferUsage_MapWrite | WGPUBufferUsage_CopySrc, true);
  if (!s) {
    free(tmp);
    return CT_ERR(CT_ERR_OOM, "WebGPU out of memory (staging %llu bytes)", (unsigned long long)n);
  }
  void *p = p_wgpuBufferGetMappedRange(s->b, 0, (size_t)n);
  if (!p) {
    buf_destroy(s);
    free(tmp);
    return CT_ERR(CT_ERR_RUNTIME, "WebGPU: staging buffer not mapped");
  }
  memcpy(p, src, (size_t)n);
  p_wgpuBufferUnmap(s->b);
  free(tmp);
  end_pass();
  ensure_encoder();
  p_wgpuCommandEncoderCopyBufferToBuffer(G.enc, s->b, 0, dst->b, off, n);
  buf_destroy(s);
  G.cnt.uploads++;
  return CT_OK;
}

typedef struct {
  volatile int done;
  uint32_t status;
  char msg[256];
} map_result;
static void on_map(WGPUMapAsyncStatus st, WGPUStringView msg, void *u1, void *u2) {
  (void)u2;
  map_result *r = u1;
  r->status = st;
  sv_copy(r->msg, sizeof r->msg, msg);
  r->done = 1;
}

static ct_status check_flag_locked(void);

/* device -> host: copy into a mappable buffer, submit, map and wait */
static ct_status download_locked(wg_buf *src, uint64_t off, void *dst, uint64_t n) {
  if (!n) return CT_OK;
  if (off + n > src->size) return CT_ERR(CT_ERR_RUNTIME, "WebGPU: download past the end of a buffer");
  uint64_t a0 = off & ~(uint64_t)3, a1 = (off + n + 3) & ~(uint64_t)3, len = a1 - a0;
  /* an armed index flag travels in the same staging buffer: one wait, not two */
  bool with_flag = G.flag_armed && G.flag && src != G.flag;
  wg_buf *s = buf_create(len + (with_flag ? 4 : 0), WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, false);
  if (!s) return CT_ERR(CT_ERR_OOM, "WebGPU out of memory (staging %llu bytes)", (unsigned long long)len);
  end_pass();
  ensure_encoder();
  p_wgpuCommandEncoderCopyBufferToBuffer(G.enc, src->b, a0, s->b, 0, len);
  if (with_flag) p_wgpuCommandEncoderCopyBufferToBuffer(G.enc, G.flag->b, 0, s->b, len, 4);
  wg_flush();
  map_result r;
  memset(&r, 0, sizeof r);
  WGPUBufferMapCallbackInfo cb = {NULL, WGPUCallbackMode_AllowProcessEvents, on_map, &r, NULL};
  uint64_t mlen = len + (with_flag ? 4 : 0);
  p_wgpuBufferMapAsync(s->b, WGPUMapMode_Read, 0, (size_t)mlen, cb);
  ct_status st = CT_OK;
  uint32_t fv = 0;
  if (!wait_flag(&r.done, 600)) st = CT_ERR(CT_ERR_RUNTIME, "WebGPU: a read-back did not finish within 600 s");
  else if (r.status != WGPU_SUCCESS) st = CT_ERR(CT_ERR_RUNTIME, "WebGPU: mapping for read-back failed: %s", r.msg);
  if (st == CT_OK) {
    const void *p = p_wgpuBufferGetConstMappedRange(s->b, 0, (size_t)mlen);
    if (p) {
      memcpy(dst, (const char *)p + (off - a0), (size_t)n);
      if (with_flag) memcpy(&fv, (const char *)p + len, 4);
    } else st = CT_ERR(CT_ERR_RUNTIME, "WebGPU: mapped range unavailable");
    p_wgpuBufferUnmap(s->b);
  }
  buf_destroy(s);
  G.cnt.downloads++;
  ct_status e = take_error(); /* a kernel's validation error surfaces at the next read */
  if (st == CT_OK && e != CT_OK) st = e;
  if (st == CT_OK && with_flag) {
    G.flag_armed = false;
    if (fv) {
      uint32_t z = 0;
      upload_locked(G.flag, 0, &z, sizeof z);
      st = CT_ERR(CT_ERR_INDEX, "index out of range in self (reported by the WebGPU device at synchronisation)");
    }
  } else if (st == CT_OK) st = check_flag_locked();
  return st;
}

static ct_status wg_upload(ct_storage *dst, size_t off, const void *src, size_t n) {
  CT_TRY(wg_ready());
  wg_lock();
  ct_status st = upload_locked(dst->data, off, src, n);
  wg_unlock();
  return st;
}
static ct_status wg_download(const ct_storage *src, size_t off, void *dst, size_t n) {
  CT_TRY(wg_ready());
  wg_lock();
  ct_status st = download_locked(src->data, off, dst, n);
  wg_unlock();
  return st;
}

/* ---- the device error flag: kernels that index (embedding) write 1 for a bad index ---- */
wg_buf *wg_flag_buffer(void) {
  if (!G.flag) {
    G.flag = buf_create(256, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, false);
    if (G.flag) {
      uint32_t z[4] = {0, 0, 0, 0};
      upload_locked(G.flag, 0, z, sizeof z);
    }
  }
  return G.flag;
}
void wg_arm_flag(void) { G.flag_armed = true; }
/* ---- per-tile arrival counters (webgpu_kernels.c's split-K convolutions sum their slices in the
 * last-arriving workgroup of each tile): zero between dispatches, each kernel puts back the
 * zeros it counted up ---- */
wg_buf *wg_counter_buffer(void) {
  if (!G.counters) {
    G.counters = buf_create((uint64_t)WG_COUNTERS * 4, WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst, false);
    if (G.counters) { /* zero at creation already (WebGPU); written anyway, as the flag */
      uint32_t *z = calloc(WG_COUNTERS, 4);
      if (z) upload_locked(G.counters, 0, z, (uint64_t)WG_COUNTERS * 4);
      free(z);
    }
  }
  return G.counters;
}
static ct_status check_flag_locked(void) {
  if (!G.flag_armed || !G.flag) return CT_OK;
  G.flag_armed = false;
  uint32_t v = 0;
  CT_TRY(download_locked(G.flag, 0, &v, sizeof v));
  if (!v) return CT_OK;
  uint32_t z = 0;
  upload_locked(G.flag, 0, &z, sizeof z);
  return CT_ERR(CT_ERR_INDEX, "index out of range in self (reported by the WebGPU device at synchronisation)");
}

ct_status wg_take_flag(void) {
  G.flag_armed = true;
  ct_status st = check_flag_locked();
  if (st == CT_ERR_INDEX) return CT_ERR(CT_ERR_INDEX, "index out of range in self"); /* PyTorch's words, at the call */
  return st;
}

static ct_status wg_sync(int dev) {
  (void)dev;
  CT_TRY(wg_ready());
  wg_lock();
  ct_status st = queue_idle(NULL);
  ct_status e = take_error();
  if (st == CT_OK) st = e;
  if (st == CT_OK) st = check_flag_locked();
  wg_unlock();
  return st;
}

/* ---- pipelines, cached by their WGSL text ---- */
static uint64_t fnv(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

typedef struct {
  volatile int done;
  uint32_t status, type;
  char msg[1024];
} scope_result;
#ifndef CT_WEBGPU_BROWSER /* the browser does not wait for the scope (on_scope_deferred) */
static void on_scope(WGPUPopErrorScopeStatus st, WGPUErrorType type, WGPUStringView msg, void *u1, void *u2) {
  (void)u2;
  scope_result *r = u1;
  r->status = st;
  r->type = type;
  sv_copy(r->msg, sizeof r->msg, msg);
  r->done = 1;
}
#endif

#ifdef CT_WEBGPU_BROWSER
static volatile int scopes_pending; /* pipelines whose error scope has not answered yet */
static void on_scope_deferred(WGPUPopErrorScopeStatus st, WGPUErrorType type, WGPUStringView msg, void *u1, void *u2) {
  (void)u1;
  (void)u2;
  scopes_pending--;
  if (st != WGPU_SUCCESS || type == WGPUErrorType_NoError) return;
  pthread_mutex_lock(&err_mu);
  if (!err_count) {
    char m[900];
    sv_copy(m, sizeof m, msg);
    snprintf(err_msg, sizeof err_msg, "WebGPU: compute pipeline creation failed: %s", m);
  }
  err_count++;
  pthread_mutex_unlock(&err_mu);
}
static void wait_scopes(void) {
  double t0 = now_s();
  while (scopes_pending > 0 && now_s() - t0 < 120) p_wgpuInstanceProcessEvents(G.inst);
}
#endif

wg_pipe *wg_pipeline(const char *wgsl) {
  uint64_t h = fnv(wgsl);
  wg_pipe **slot = &G.pipes[h & 255];
  for (wg_pipe *p = *slot; p; p = p->next)
    if (p->hash == h && !strcmp(p->src, wgsl)) return p;
  p_wgpuDevicePushErrorScope(G.dev, WGPUErrorFilter_Validation);
  WGPUShaderSourceWGSL code;
  memset(&code, 0, sizeof code);
  code.chain.sType = WGPUSType_ShaderSourceWGSL;
  code.code = sv(wgsl);
  WGPUShaderModuleDescriptor md;
  memset(&md, 0, sizeof md);
  md.nextInChain = &code.chain;
  WGPUShaderModule mod = p_wgpuDeviceCreateShaderModule(G.dev, &md);
  WGPUComputePipelineDescriptor pd;
  memset(&pd, 0, sizeof pd);
  pd.layout = NULL; /* auto layout: every binding the shader uses */
  pd.compute.module = mod;
  pd.compute.entryPoint = sv("main");
  WGPUComputePipeline pipe = mod ? p_wgpuDeviceCreateComputePipeline(G.dev, &pd) : NULL;
  if (mod) p_wgpuShaderModuleRelease(mod);
  scope_result r;
  memset(&r, 0, sizeof r);
  WGPUBindGroupLayout bgl = NULL;
#ifdef CT_WEBGPU_BROWSER
  /* The browser compiles without being waited for: a failure arrives with the next events
   * and is reported at the next synchronisation, like a kernel's validation error, so that
   * only read-backs ever yield to the event loop. */
  WGPUPopErrorScopeCallbackInfo cb = {NULL, WGPUCallbackMode_AllowProcessEvents, on_scope_deferred, NULL, NULL};
  if (pipe) bgl = p_wgpuComputePipelineGetBindGroupLayout(pipe, 0); /* inside the scope: one error, not two */
  scopes_pending++;
  p_wgpuDevicePopErrorScope(G.dev, cb);
#else
  WGPUPopErrorScopeCallbackInfo cb = {NULL, WGPUCallbackMode_AllowProcessEvents, on_scope, &r, NULL};
  p_wgpuDevicePopErrorScope(G.dev, cb);
  wait_flag(&r.done, 120);
#endif
  if (!pipe || (r.done && r.status == WGPU_SUCCESS && r.type != WGPUErrorType_NoError)) {
    const char *dbg = getenv("CT_WEBGPU_DEBUG");
    if (dbg && *dbg && strcmp(dbg, "0")) fprintf(stderr, "---- WGSL that failed ----\n%s\n----\n", wgsl);
    ct_set_error(CT_ERR_RUNTIME, "WebGPU: compute pipeline creation failed: %s", r.msg[0] ? r.msg : "no message");
    if (bgl) p_wgpuBindGroupLayoutRelease(bgl);
    if (pipe) p_wgpuComputePipelineRelease(pipe);
    return NULL;
  }
  wg_pipe *p = ct_xcalloc(1, sizeof *p);
  char *src = p ? malloc(strlen(wgsl) + 1) : NULL;
  if (!src) {
    free(p);
    if (bgl) p_wgpuBindGroupLayoutRelease(bgl);
    p_wgpuComputePipelineRelease(pipe);
    ct_set_error(CT_ERR_OOM, "out of memory");
    return NULL;
  }
  strcpy(src, wgsl);
  p->src = src;
  p->hash = h;
  p->pipe = pipe;
  p->bgl = bgl ? bgl : p_wgpuComputePipelineGetBindGroupLayout(pipe, 0);
  p->next = *slot;
  *slot = p;
  G.cnt.pipelines++;
  return p;
}

/* ---- the vtable ---- */
static ct_memory_stats wg_stats(int dev) {
  (void)dev;
  wg_lock();
  ct_memory_stats s = {G.allocated, G.cached, G.peak, G.n_allocs};
  wg_unlock();
  return s;
}
static void wg_reset_peak(int dev) {
  (void)dev;
  wg_lock();
  G.peak = G.allocated;
  wg_unlock();
}
static void wg_empty_cache(int dev) {
  (void)dev;
  if (!G.ok) return;
  wg_lock();
  wg_flush();
  empty_cache_locked();
  wg_unlock();
}
static ct_kernel_fn wg_kernel(int op) { return ct_webgpu_kernel_for(op); }

const ct_backend ct_webgpu_backend = {
    "webgpu", CT_DEVICE_WEBGPU, wg_available, wg_alloc, wg_free, wg_upload, wg_download, wg_sync,
    wg_kernel, wg_stats, wg_empty_cache, NULL, NULL, NULL, /* no forked regions */
    wg_reset_peak,
};

/* ---- public queries (include/ctorch/webgpu.h) ---- */
bool ct_webgpu_is_available(void) { return wg_available(0); }
const char *ct_webgpu_unavailable_reason(void) {
  pthread_once(&G.once, init_once);
  return G.ok ? (lost ? "WebGPU device lost" : "") : G.reason;
}
const char *ct_webgpu_adapter_name(void) {
  pthread_once(&G.once, init_once);
  return G.ok ? G.name : "";
}
ct_status ct_webgpu_synchronize(void) { return wg_sync(0); }

ct_webgpu_counters ct_webgpu_get_counters(void) {
  wg_lock();
  ct_webgpu_counters c = G.cnt;
  wg_unlock();
  return c;
}

/* The run-time ABI check: what Dawn wrote into the sentinel-filled structs at start,
 * the limits granted, the queue-work-done callback with its message argument, and the
 * uncaptured-error callback firing for a deliberate validation error (a copy of a
 * size that is not a multiple of 4). */
ct_status ct_webgpu_abi_probe(ct_webgpu_abi_report *r) {
  memset(r, 0, sizeof *r);
  CT_TRY(wg_ready());
  wg_lock();
  r->limits_bytes_written = G.limits_bytes;
  r->info_bytes_written = G.info_bytes;
  r->backend_type = G.backend_type;
  r->adapter_type = G.adapter_type;
  r->max_storage_binding = G.limits.maxStorageBufferBindingSize;
  r->max_buffer = G.limits.maxBufferSize;
  r->adapter_max_storage_binding = G.adapter_limits.maxStorageBufferBindingSize;
  r->adapter_max_buffer = G.adapter_limits.maxBufferSize;
  r->procs_match_dlsym = G.procs_match;
  done_result d;
  ct_status st = queue_idle(&d);
  if (st == CT_OK) {
    r->work_done_status = (int)d.status;
    r->work_done_message_ok = d.msg_ok;
    (void)take_error();
    wg_buf *a = buf_create(256, WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, false);
    wg_buf *b = buf_create(256, WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, false);
    if (a && b) {
      end_pass();
      ensure_encoder();
      p_wgpuCommandEncoderCopyBufferToBuffer(G.enc, a->b, 0, b->b, 0, 6); /* invalid: not 4-aligned */
      st = queue_idle(NULL);
#ifdef CT_WEBGPU_BROWSER
      /* the browser's error events come from its GPU process and may trail the queue's
       * answer (the bad copy, then the submit of the invalid command buffer): wait until
       * two idle rounds bring no new error, so none of them lands on the next caller */
      for (int round = 0, quiet = 0, seen = -1; round < 8 && quiet < 2; round++) {
        pthread_mutex_lock(&err_mu);
        int now = err_count;
        pthread_mutex_unlock(&err_mu);
        quiet = now == seen ? quiet + 1 : 0;
        seen = now;
        (void)queue_idle(NULL);
      }
#endif
      (void)st;
      st = CT_OK;
      pthread_mutex_lock(&err_mu);
      r->uncaptured_error_seen = err_count > 0 && strstr(err_msg, "validation") != NULL;
      err_count = 0;
      err_msg[0] = 0;
      pthread_mutex_unlock(&err_mu);
    }
    if (a) buf_destroy(a);
    if (b) buf_destroy(b);
  }
  wg_unlock();
  return st;
}

/* ---- what a dispatch costs (bench_webgpu --dispatch; issue 9) ----
 * n trivial dispatches (64 threads adding 1 to a float each, or wide: 256 workgroups of
 * them) recorded one of four ways, then submitted, and the queue waited for: the caller
 * times n and 1 and takes the slope. Flags vary what Dawn must do between dispatches: a
 * second pipeline alternating, a different buffer for each dispatch (no read-after-write
 * chain), bind group set once, a kernel that only reads (no storage write: no barrier). */
ct_status ct_webgpu_dispatch_probe(int n, int mode, int flags, double *seconds) {
  *seconds = -1.0;
  if (n < 1 || n > 100000 || mode < 0 || mode > 3) return CT_ERR(CT_ERR_VALUE, "ct_webgpu_dispatch_probe: bad arguments");
  CT_TRY(wg_ready());
  enum { NB = 64 };
  bool alt = flags & CT_WG_PROBE_ALT_PIPE, indep = flags & CT_WG_PROBE_INDEP, once = flags & CT_WG_PROBE_BIND_ONCE,
       ro = flags & CT_WG_PROBE_READ_ONLY, wide = flags & CT_WG_PROBE_WIDE;
  if (once && (alt || indep)) return CT_ERR(CT_ERR_VALUE, "ct_webgpu_dispatch_probe: bind-once needs one pipeline and one buffer");
  wg_lock();
  ct_status st = queue_idle(NULL);
  wg_pipe *p[2] = {NULL, NULL};
  char src[512];
  for (int v = 0; v < 2 && st == CT_OK; v++) {
    snprintf(src, sizeof src,
             "@group(0) @binding(0) var<storage, %s> a: array<f32>;\n@compute @workgroup_size(64)\n"
             "fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n  %s\n}\n// probe variant %d\n",
             ro ? "read" : "read_write", ro ? "_ = a[g.x];" : "a[g.x] = a[g.x] + 1.0;", v);
    if (!(p[v] = wg_pipeline(src))) st = ct_last_status();
  }
  wg_buf *b[NB] = {0};
  WGPUBindGroup bg[NB][2];
  memset(bg, 0, sizeof bg);
  int nbuf = indep ? NB : 1;
  for (int k = 0; k < nbuf && st == CT_OK; k++) {
    if (!(b[k] = buf_create(256 * 64 * 4, WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst, false))) {
      st = CT_ERR(CT_ERR_OOM, "WebGPU: no probe buffer");
      break;
    }
    for (int v = 0; v < 2; v++) {
      WGPUBindGroupEntry e;
      memset(&e, 0, sizeof e);
      e.binding = 0, e.buffer = b[k]->b, e.offset = 0, e.size = b[k]->size;
      WGPUBindGroupDescriptor bd;
      memset(&bd, 0, sizeof bd);
      bd.layout = p[v]->bgl, bd.entryCount = 1, bd.entries = &e;
      if (!(bg[k][v] = p_wgpuDeviceCreateBindGroup(G.dev, &bd))) st = CT_ERR(CT_ERR_RUNTIME, "WebGPU: probe bind group");
    }
  }
  WGPUCommandBuffer *cbs = st == CT_OK && mode == 3 ? calloc((size_t)n, sizeof *cbs) : NULL;
  if (mode == 3 && !cbs && st == CT_OK) st = CT_ERR(CT_ERR_OOM, "out of memory");
  if (st == CT_OK) {
    uint32_t groups = wide ? 256 : 1;
    double t0 = now_s();
    WGPUCommandEncoder enc = NULL;
    WGPUComputePassEncoder pass = NULL;
    for (int i = 0; i < n; i++) {
      int v = alt ? i & 1 : 0, k = indep ? i % NB : 0;
      if (!enc) enc = p_wgpuDeviceCreateCommandEncoder(G.dev, NULL);
      if (!pass) pass = p_wgpuCommandEncoderBeginComputePass(enc, NULL);
      if (!once || i == 0) {
        p_wgpuComputePassEncoderSetPipeline(pass, p[v]->pipe);
        p_wgpuComputePassEncoderSetBindGroup(pass, 0, bg[k][v], 0, NULL);
      }
      p_wgpuComputePassEncoderDispatchWorkgroups(pass, groups, 1, 1);
      if (mode >= 1 || i == n - 1) { /* this dispatch ends its pass */
        p_wgpuComputePassEncoderEnd(pass);
        p_wgpuComputePassEncoderRelease(pass);
        pass = NULL;
      }
      if (mode >= 2 || i == n - 1) { /* ... and its command buffer */
        WGPUCommandBuffer cb = p_wgpuCommandEncoderFinish(enc, NULL);
        p_wgpuCommandEncoderRelease(enc);
        enc = NULL;
        if (mode == 3) cbs[i] = cb;
        else {
          p_wgpuQueueSubmit(G.queue, 1, &cb);
          p_wgpuCommandBufferRelease(cb);
        }
      }
    }
    if (mode == 3) {
      p_wgpuQueueSubmit(G.queue, (size_t)n, cbs);
      for (int i = 0; i < n; i++) p_wgpuCommandBufferRelease(cbs[i]);
    }
    st = queue_idle(NULL);
    *seconds = now_s() - t0;
    if (st == CT_OK) st = take_error();
  }
  free(cbs);
  for (int k = 0; k < nbuf; k++) {
    for (int v = 0; v < 2; v++)
      if (bg[k][v]) p_wgpuBindGroupRelease(bg[k][v]);
    if (b[k]) buf_destroy(b[k]);
  }
  wg_unlock();
  return st;
}

/* Each recorded dispatch of g alone: 1 copy and 1 + reps copies of it in one pass, each submitted
 * and waited for (best of 3, the wait polled without sleeping: a sleep's granularity, up to 200 us,
 * swamped session 10's per-copy numbers); us[i] = the difference / reps, microseconds per copy, the
 * barrier Dawn puts between dependent dispatches included (what a replay pays). The copies run
 * on the graph's buffers (values change: profile last). */
static double profile_run(wg_rec *e, int copies, ct_status *st) {
  double best = 1e30;
  for (int r = 0; r < 3 && *st == CT_OK; r++) {
    double t0 = now_s();
    ensure_encoder();
    G.pass = p_wgpuCommandEncoderBeginComputePass(G.enc, NULL);
    for (int k = 0; k < copies; k++) {
      p_wgpuComputePassEncoderSetPipeline(G.pass, e->p->pipe);
      p_wgpuComputePassEncoderSetBindGroup(G.pass, 0, e->bg, 0, NULL);
      p_wgpuComputePassEncoderDispatchWorkgroups(G.pass, e->gx, e->gy, e->gz);
    }
    *st = queue_idle(NULL);
    double t = now_s() - t0;
    if (t < best) best = t;
  }
  return best;
}
ct_status ct_webgpu_graph_profile(ct_webgpu_graph *g, int reps, double *us) {
  if (!g || reps < 1 || !us) return CT_ERR(CT_ERR_VALUE, "ct_webgpu_graph_profile: bad arguments");
  CT_TRY(wg_ready());
  wg_lock();
  int spin = wait_spin;
  wait_spin = 1;
  ct_status st = queue_idle(NULL);
  for (int i = 0; i < g->n && st == CT_OK; i++) {
    wg_rec *e = &g->r[i];
    if (e->slot >= 0) p_wgpuQueueWriteBuffer(G.queue, G.params->b, (uint64_t)e->slot * PARAM_SLOT, e->params, (size_t)e->np * 4);
    double t1 = profile_run(e, 1, &st), tn = profile_run(e, 1 + reps, &st);
    us[i] = (tn - t1) / reps * 1e6;
  }
  wait_spin = spin;
  wg_unlock();
  return st;
}

/* what the recorded dispatch i runs: its kernel's WGSL text and grid (NULL past the end) */
const char *ct_webgpu_graph_kernel(const ct_webgpu_graph *g, int i, uint32_t grid[3]) {
  if (!g || i < 0 || i >= g->n) return NULL;
  grid[0] = g->r[i].gx, grid[1] = g->r[i].gy, grid[2] = g->r[i].gz;
  return g->r[i].p->src;
}
