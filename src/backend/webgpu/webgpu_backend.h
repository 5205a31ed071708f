/* Internal interface of the WebGPU backend, shared by its two files:
 * webgpu_device.c (loading Dawn, the device, buffers, batching, pipelines) and
 * webgpu_kernels.c (WGSL generated per shape, the kernel table). */
#ifndef CT_WEBGPU_BACKEND_H
#define CT_WEBGPU_BACKEND_H
#include "../backend.h"
#include "wgpu_abi.h"

extern const ct_backend ct_webgpu_backend;

/* A device buffer from the pool: what a WebGPU storage's `data` points to. */
typedef struct wg_buf {
  WGPUBuffer b;
  uint64_t size; /* bytes, a multiple of 4 */
  int cls;       /* pool class, -1 if not pooled */
  struct wg_buf *next;
} wg_buf;

/* A compute pipeline compiled from one WGSL source (cached by that text). */
typedef struct wg_pipe {
  char *src;
  uint64_t hash;
  WGPUComputePipeline pipe;
  WGPUBindGroupLayout bgl;
  struct wg_pipe *next;
} wg_pipe;

/* Everything below expects the backend lock held (wg_lock / wg_unlock). */
void wg_lock(void);
void wg_unlock(void);
/* Ready for work (lazily loads Dawn and opens the device); an error says why not. */
ct_status wg_ready(void);
/* The pipeline of this WGSL source (entry point "main"), compiled once. */
wg_pipe *wg_pipeline(const char *wgsl);
/* Records one dispatch into the open batch; bindings 0..nb-1 are the buffers (at most
 * WG_MAX_BINDINGS, and the device's storage-buffer limit). */
#define WG_MAX_BINDINGS 10
ct_status wg_dispatch(wg_pipe *p, int nb, wg_buf *const *bufs, uint32_t gx, uint32_t gy, uint32_t gz);
/* The same with np u32 parameter words bound last (binding nb) as array<u32>: kernels
 * whose compilation is costly take their sizes from there, one pipeline for all shapes. */
ct_status wg_dispatch_p(wg_pipe *p, int nb, wg_buf *const *bufs, const uint32_t *params, int np, uint32_t gx,
                        uint32_t gy, uint32_t gz);
/* Submits the open batch (kernels run; nothing waits). */
void wg_flush(void);
/* Arms the device error flag (a kernel that may find a bad index was recorded): the
 * next synchronisation reads it. */
void wg_arm_flag(void);
wg_buf *wg_flag_buffer(void);
/* A persistent buffer of WG_COUNTERS u32 arrival counters, all zero between dispatches: a
 * kernel that counts workgroups up in it resets what it used before it ends. */
#define WG_COUNTERS 65536
wg_buf *wg_counter_buffer(void);
/* Waits for the recorded work and reads the flag now: "index out of range in self" if set. */
ct_status wg_take_flag(void);
/* The device's limits after the request. */
uint64_t wg_max_binding(void);
uint32_t wg_max_groups(void);
uint32_t wg_max_storage_buffers(void);

/* Counters for tests and benchmarks. */
typedef struct {
  int64_t pipelines, dispatches, submits, uploads, downloads, buffers_created;
} ct_webgpu_counters;
ct_webgpu_counters ct_webgpu_get_counters(void);
/* What the run-time ABI probe saw (tests/c/test_webgpu.c checks it): bytes of WGPULimits
 * and WGPUAdapterInfo that Dawn wrote (sentinel-filled buffers), the backend type, the
 * queue-work-done message callback, and the uncaptured-error callback having fired for a
 * deliberate validation error. */
typedef struct {
  int limits_bytes_written, info_bytes_written;
  uint32_t backend_type, adapter_type;
  int work_done_status;
  int work_done_message_ok;
  int uncaptured_error_seen;
  uint64_t max_storage_binding, max_buffer;
  uint64_t adapter_max_storage_binding, adapter_max_buffer;
  int procs_match_dlsym;
} ct_webgpu_abi_report;
ct_status ct_webgpu_abi_probe(ct_webgpu_abi_report *r);

/* Capture and replay of a step's dispatches (issue 9, item 5), like a CUDA graph: between
 * begin and end every op runs as usual and each dispatch is also recorded (its compiled
 * pipeline, its bind group, its grid and parameter words); a replay re-issues them without
 * generating WGSL, looking up pipelines or creating bind groups, and without the host-side
 * work of the ops (index checks, shape logic). The replayed work reads and writes the same
 * buffers as the captured one, so: change the inputs in place (ct_copy_) between replays,
 * keep every tensor the capture used or produced alive while replaying (buffers freed during
 * the capture are held by the graph until ct_webgpu_graph_free), and capture only work whose
 * host-side constants do not change from step to step, or whose kernels attach a refresh
 * (the fused SGD refreshes its learning rate and momentum, the fused Adam/AdamW its step
 * count, bias corrections and learning rate; keep the optimizer alive and its parameter
 * groups unchanged meanwhile). */
typedef struct ct_webgpu_graph ct_webgpu_graph;
/* Host-side constants that move from step to step (Adam's step count and bias corrections):
 * while capturing, the kernel that just recorded a dispatch with parameter words attaches
 * f; each replay then calls f(ctx, words) before writing that dispatch's words, so the
 * replay computes what the eager step would (and advances the host state as it would).
 * True: attached, the graph owns ctx (a malloc'd block, freed with the graph); false (not
 * capturing, or nothing to attach to): the caller keeps ctx. Under the backend lock. */
typedef bool (*wg_refresh_fn)(void *ctx, uint32_t *params); /* true: the words moved */
bool wg_capture_refresh(wg_refresh_fn f, void *ctx);
ct_status ct_webgpu_capture_begin(void);
ct_webgpu_graph *ct_webgpu_capture_end(void); /* NULL with the error set on failure */
ct_status ct_webgpu_graph_replay(ct_webgpu_graph *g);
int64_t ct_webgpu_graph_dispatches(const ct_webgpu_graph *g);
void ct_webgpu_graph_free(ct_webgpu_graph *g);

/* What a dispatch costs (bench_webgpu --dispatch): n trivial dispatches, mode 0 in one compute
 * pass, 1 a pass each, 2 a command buffer and submit each, 3 a command buffer each, one submit;
 * flags CT_WG_PROBE_*; *seconds: recording, submitting and waiting, all of it. */
enum { CT_WG_PROBE_ALT_PIPE = 1, CT_WG_PROBE_INDEP = 2, CT_WG_PROBE_BIND_ONCE = 4, CT_WG_PROBE_READ_ONLY = 8, CT_WG_PROBE_WIDE = 16 };
ct_status ct_webgpu_dispatch_probe(int n, int mode, int flags, double *seconds);
/* Each recorded dispatch of g alone, reps times in a pass: us[i] microseconds per run (g->n
 * entries; the graph's buffers change: profile last). The kernel of dispatch i: its WGSL and grid. */
ct_status ct_webgpu_graph_profile(ct_webgpu_graph *g, int reps, double *us);
const char *ct_webgpu_graph_kernel(const ct_webgpu_graph *g, int i, uint32_t grid[3]);

/* Whether a capture is recording (kernel-variant measurements wait until it ends). */
bool wg_capturing(void);
/* "name|driver description|backend|vendor:device" of the adapter: the tuning cache's key. */
const char *wg_adapter_key(void);
/* The adapter's subgroup feature (WGPUFeatureName_Subgroups; the browser's 'subgroups')
 * and subgroup sizes (0 where unknown). */
void wg_subgroup_info(int *feature, uint32_t *min_size, uint32_t *max_size);
/* Whether the device was created with the subgroups feature (sizes 4..128; CT_WEBGPU_SUBGROUPS=0
 * creates it without): kernels then may `enable subgroups;` (webgpu_kernels.c's reductions). */
bool wg_subgroups(void);

/* Kernel table (webgpu_kernels.c). */
ct_kernel_fn ct_webgpu_kernel_for(int op);

#endif
