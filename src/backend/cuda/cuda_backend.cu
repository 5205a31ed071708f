/* The CUDA backend: device discovery, one stream per device, a caching allocator
 * over plain cudaMalloc (never managed memory), host<->device copies through pinned
 * staging buffers, and the kernel table. The CUDA runtime is linked statically: it
 * loads the driver at run time, so a binary built here runs on a machine without a
 * driver or GPU and reports "no CUDA device" instead of failing to start. */
#include <cuda_runtime.h>
#include <execinfo.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
extern "C" {
#include "cuda_backend.h"
#include "ops/op_table.h"
#include "ctorch/cuda.h"
}

#define MAX_DEV 16
#define N_CLASSES 128
#define STAGE_BYTES ((size_t)8 << 20)

typedef struct blk {
  void *p;
  struct blk *next;
} blk;

typedef struct {
  void *p;
  size_t n;
  unsigned lanes; /* the lanes (bits) pending when it was freed and not joined since */
} side_qblk; /* a block freed while a second stream's work was pending */

/* Work left running on a stream beside the device's (session 13, side_*): a lane. Lane 0 is k_cudnn.cu's second
 * stream (the weight gradients, CT_CUDA_CONV_2STREAM=2, and the forward regions, CT_CUDA_DS_FORK); lane 1 its
 * third stream (the backward regions, CT_CUDA_DS_BWD_FORK, session 14). pending: launches or regions not yet
 * joined; w / r: the storages they write and read. */
#define N_LANES 2
typedef struct {
  int pending;
  cudaStream_t stream;
  cudaEvent_t ev; /* recorded on stream at the join */
  const void *w[64], *r[128];
  int nw, nr;
} side_lane;

typedef struct {
  bool ready;
  cudaStream_t stream;
  /* pinned staging: two buffers, each with an event marking the end of its last copy */
  char *stage[2];
  cudaEvent_t stage_ev[2];
  bool stage_used[2];
  int stage_next;
  pthread_mutex_t stage_mu;
  /* caching allocator */
  pthread_mutex_t mu;
  blk *free_list[N_CLASSES];
  int64_t allocated, cached, peak, n_allocs;
  int *flag; /* device error flag (bad index) */
  char name[256];
  /* CUDA graphs: while capturing, the stream records instead of running. Blocks allocated during
   * a capture belong to the graph pool (pool_ptrs): the graphs' kernels keep using their
   * addresses at every replay, so once freed they go back to the pool's own lists (pool_free),
   * never to the general cache, until the last graph of the device is freed. */
  bool capturing;
  int n_graphs;
  blk *pool_free[N_CLASSES];
  void **pool_ptrs;
  size_t pool_n, pool_cap;
  /* work left running beside the device's stream (session 13, side_*; lanes since session 14); side_q: blocks
   * freed meanwhile, kept from reuse until every lane pending at their free has joined */
  side_lane lane[N_LANES];
  side_qblk *side_q;
  size_t side_qn, side_qcap;
  /* session 13b (ct_cuda_region_begin / end): while non-zero, every launch of the device (ct_cuda_stream) goes to
   * the stream of lane region - 1, and the blocks handed out (and the table ops' outputs) are added to its w */
  int region;
  int region_kind; /* 0 forward, 1 backward (the counts) */
} cu_dev;

/* convolution and max-pool kernels (k_conv.cu) */
extern "C" void ct_cuda_register_conv(ct_kernel_fn *tab);
/* flash attention (k_attention.cu) */
extern "C" void ct_cuda_register_attention(ct_kernel_fn *tab);
extern "C" void ct_cuda_register_bn(ct_kernel_fn *tab); /* k_bn.cu */

static cu_dev D[MAX_DEV];
static int64_t prof_up_n, prof_up_bytes, prof_down_n, prof_down_bytes; /* CT_CUDA_OP_PROFILE's counts */
/* Session 13: bumped by every op dispatched to this backend (the kernel lookup), every copy, synchronize and
 * freed block. k_cudnn.cu's two-stream convolution backward lets a weight gradient start from the event recorded
 * before its input gradient only when exactly one bump (its own lookup) lies between the two calls: no other
 * work was queued and no block was freed for reuse in between. */
static uint64_t op_seq;
extern "C" uint64_t ct_cuda_op_seq(void) { return __atomic_load_n(&op_seq, __ATOMIC_ACQUIRE); }
static inline void seq_bump(void) { __atomic_add_fetch(&op_seq, 1, __ATOMIC_ACQ_REL); }
static int n_dev = -1;
static char reason[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static bool tf32, bf16mm;
static int cache_enabled = -1;

static int n_found; /* static: gcc's -Wdangling-pointer misreads a local here */
static void discover(void) {
  int &n = n_found;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(reason, sizeof reason, "no CUDA device: %s (%s)", cudaGetErrorString(e),
             e == cudaErrorInsufficientDriver ? "no NVIDIA driver, or one older than this build's CUDA"
             : e == cudaErrorNoDevice         ? "the driver sees no GPU"
                                              : "CUDA could not start");
    n_dev = 0;
    return;
  }
  if (n == 0) snprintf(reason, sizeof reason, "no CUDA device: the driver reports no GPU");
  n_dev = n > MAX_DEV ? MAX_DEV : n;
  for (int d = 0; d < n_dev; d++) {
    pthread_mutex_init(&D[d].mu, NULL);
    pthread_mutex_init(&D[d].stage_mu, NULL);
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d) == cudaSuccess) snprintf(D[d].name, sizeof D[d].name, "%s", p.name);
  }
  const char *nc = getenv("CT_NO_CACHE");
  cache_enabled = !(nc && *nc && *nc != '0');
}

/* Streams, staging and the flag are made on first use of a device. */
static ct_status dev_ready(int dev) {
  pthread_once(&once, discover);
  if (dev < 0 || dev >= n_dev) {
    if (n_dev == 0) return CT_ERR(CT_ERR_RUNTIME, "%s", reason);
    return CT_ERR(CT_ERR_RUNTIME, "CUDA error: invalid device ordinal (device %d of %d)", dev, n_dev);
  }
  cu_dev *g = &D[dev];
  if (__atomic_load_n(&g->ready, __ATOMIC_ACQUIRE)) return cudaSetDevice(dev) == cudaSuccess ? CT_OK : ct_cuda_fail(cudaGetLastError(), "cudaSetDevice");
  pthread_mutex_lock(&init_mu);
  ct_status st = CT_OK;
  cudaError_t e = cudaSetDevice(dev);
  if (!g->ready && e == cudaSuccess) {
    /* (session 13's CT_CUDA_STREAM_PRIO, the stream at the highest priority, measured no gain and was removed) */
    e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
    for (int i = 0; i < 2 && e == cudaSuccess; i++) {
      e = cudaHostAlloc((void **)&g->stage[i], STAGE_BYTES, cudaHostAllocDefault);
      if (e == cudaSuccess) e = cudaEventCreateWithFlags(&g->stage_ev[i], cudaEventDisableTiming);
    }
    if (e == cudaSuccess) e = cudaMalloc((void **)&g->flag, 256);
    if (e == cudaSuccess) e = cudaMemsetAsync(g->flag, 0, sizeof(int), g->stream);
    if (e == cudaSuccess) __atomic_store_n(&g->ready, true, __ATOMIC_RELEASE);
  }
  if (e != cudaSuccess) st = ct_cuda_fail(e, "starting the device");
  pthread_mutex_unlock(&init_mu);
  return st;
}

extern "C" ct_status ct_cuda_fail(int err, const char *what) {
  cudaError_t e = (cudaError_t)err;
  (void)cudaGetLastError();
  if (e == cudaErrorMemoryAllocation) return CT_ERR(CT_ERR_OOM, "CUDA out of memory (%s)", what);
  return CT_ERR(CT_ERR_RUNTIME, "CUDA error: %s (%s)", cudaGetErrorString(e), what);
}

extern "C" ct_status ct_cuda_check_launch(const char *what) {
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? CT_OK : ct_cuda_fail(e, what);
}

/* ---- session 13: work left on a second stream, joined where the device's stream could meet it ----
 * k_cudnn.cu (CT_CUDA_CONV_2STREAM=2) leaves a convolution's weight gradient running on a second stream and
 * registers it here (ct_cuda_side_defer): the storage it writes (dw) and the ones it reads (x, gy). Until the
 * join (the device's stream waits on an event recorded on the second stream):
 *  - an op dispatched through the kernel table (side_guard_kernel) that reads dw, or writes any of the three,
 *    joins first; other ops run beside the weight gradients (the point of it);
 *  - any other access to the device's stream joins first: entry points outside the table reach the stream
 *    through ct_cuda_use / ct_cuda_stream (the fused SGD reading the gradients, say), and copies, synchronizes,
 *    graph capture begin / end and replays join;
 *  - freed blocks are kept from reuse (side_q) and go to the allocator's lists at the join.
 * Inside a capture the join is an edge from the second stream's last node.
 * Session 14: the pending work is kept per lane (side_lane: lane 0 the second stream, lane 1 the third stream of
 * the backward regions), each with its own lists and join event, so that a table op meeting one lane's writes
 * joins that lane only (the input-gradient sum after a backward region joins the region, not the weight
 * gradients still running on the second stream). A freed block waits for every lane pending at its free. The
 * other joins (accesses from outside the table, copies, synchronizes, captures) join every lane. */
static __thread int side_guard_depth; /* > 0: inside a table kernel that side_guard_kernel checked */
static int side_any;                  /* pending lanes over all devices (a fast check for the hot paths) */
static void cu_free_now(int dev, void *p, size_t nbytes);
/* by kind (0 forward, 1 backward, 2 other): regions ended as planned; regions cut short by a join inside (tests) */
static int64_t region_n[3], region_cut[3];
static bool side_hits(const void *p, const void *const *set, int n) {
  for (int i = 0; i < n; i++)
    if (set[i] == p) return true;
  return false;
}
static unsigned lanes_pending(const cu_dev *g) {
  unsigned m = 0;
  for (int l = 0; l < N_LANES; l++)
    if (g->lane[l].pending) m |= 1u << l;
  return m;
}
/* The device's stream waits for the pending work of the lanes in `mask`, whose lists are cleared; the blocks freed
 * meanwhile that no lane still pending may use go back to the allocator. A join inside a region joins every lane
 * and ends the region (cut short): what follows runs on the device's stream, after the join, so the ordering is
 * always that of one stream where it matters. */
static void lanes_join(int dev, unsigned mask) {
  cu_dev *g = &D[dev];
  pthread_mutex_lock(&g->mu);
  if (g->region) {
    g->region = 0;
    mask = (1u << N_LANES) - 1;
    __atomic_add_fetch(&region_cut[g->region_kind], 1, __ATOMIC_RELAXED);
    if (getenv("CT_CUDA_REGION_TRACE")) { /* diagnostic: where a region is cut short (addresses for addr2line) */
      void *fr[32];
      int n = backtrace(fr, 32);
      fprintf(stderr, "CUDA %s region cut short at:\n", g->region_kind == 1 ? "backward" : g->region_kind ? "other" : "forward");
      backtrace_symbols_fd(fr, n, 2);
    }
  }
  mask &= lanes_pending(g);
  cudaStream_t js[N_LANES];
  cudaEvent_t je[N_LANES];
  int nj = 0;
  for (int l = 0; l < N_LANES; l++)
    if (mask >> l & 1) {
      side_lane *L = &g->lane[l];
      js[nj] = L->stream;
      je[nj++] = L->ev;
      L->pending = 0;
      L->nw = L->nr = 0;
    }
  side_qblk *fr = NULL;
  size_t nf = 0;
  if (mask && g->side_qn) {
    if (!lanes_pending(g)) { /* nothing left pending: every kept block goes */
      fr = g->side_q;
      nf = g->side_qn;
      g->side_q = NULL;
      g->side_qn = g->side_qcap = 0;
    } else { /* the blocks whose lanes have all joined (where the list cannot be made, they wait for the next join) */
      fr = (side_qblk *)malloc(g->side_qn * sizeof *fr);
      size_t k = 0;
      for (size_t i = 0; i < g->side_qn; i++) {
        side_qblk b = g->side_q[i];
        b.lanes &= ~mask;
        if (!b.lanes && fr) fr[nf++] = b;
        else g->side_q[k++] = b;
      }
      g->side_qn = k;
    }
  }
  pthread_mutex_unlock(&g->mu);
  for (int i = 0; i < nj; i++) {
    __atomic_sub_fetch(&side_any, 1, __ATOMIC_ACQ_REL);
    cudaError_t e = cudaEventRecord(je[i], js[i]);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(g->stream, je[i], 0);
    if (e != cudaSuccess) { /* cannot order them: wait for that stream on the host (never inside a capture) */
      (void)cudaGetLastError();
      cudaStreamSynchronize(js[i]);
    }
  }
  for (size_t i = 0; i < nf; i++) cu_free_now(dev, fr[i].p, fr[i].n); /* after the waits: ordered for the next user */
  free(fr);
}
static void side_join(int dev) { lanes_join(dev, (1u << N_LANES) - 1); }
static int64_t region_waits; /* a region's stream made to wait for another lane (tests) */
extern "C" int64_t ct_cuda_region_waits(void) { return __atomic_load_n(&region_waits, __ATOMIC_RELAXED); }
/* Inside a region: its stream waits for the pending work of the other lanes in `mask` (which stay pending for the
 * device's stream): what the region launches next is ordered after them. false (nothing done) where the streams
 * cannot be ordered (the caller then joins every lane, which cuts the region). */
static bool region_wait(int dev, unsigned mask) {
  cu_dev *g = &D[dev];
  if (!g->region) return false;
  int rl = g->region - 1;
  cudaStream_t rs = g->lane[rl].stream;
  for (int l = 0; l < N_LANES; l++) {
    if (l == rl || !(mask >> l & 1) || !g->lane[l].pending) continue;
    cudaError_t e = cudaEventRecord(g->lane[l].ev, g->lane[l].stream);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(rs, g->lane[l].ev, 0);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    __atomic_add_fetch(&region_waits, 1, __ATOMIC_RELAXED);
  }
  return true;
}
/* an access to the device's stream from outside the table: outside a region every pending lane joins first; inside
 * one the accesses are the region's own, but another lane's pending work is not ordered before the region's stream:
 * the region's stream waits for it (or, where it cannot, every lane joins, which cuts the region) */
static inline void side_check(int dev) {
  if (__builtin_expect(__atomic_load_n(&side_any, __ATOMIC_ACQUIRE) != 0, 0) && side_guard_depth == 0 && dev >= 0 &&
      dev < MAX_DEV) {
    cu_dev *g = &D[dev];
    unsigned p = lanes_pending(g);
    if (g->region) {
      p &= ~(1u << (g->region - 1));
      if (p && !region_wait(dev, p)) side_join(dev);
    } else if (p) side_join(dev);
  }
}
/* k_cudnn.cu: a launch on `stream` (lane 0's, the second stream) left unjoined, writing the storage data pointer w and
 * reading r1, r2; the join records `ev` there. false (nothing registered: the caller joins itself) where the lists
 * are full or lane 0 is pending on another stream. */
extern "C" bool ct_cuda_side_defer(int dev, void *stream, void *ev, const void *w, const void *r1, const void *r2) {
  if (dev < 0 || dev >= MAX_DEV) return false;
  cu_dev *g = &D[dev];
  side_lane *L = &g->lane[0];
  pthread_mutex_lock(&g->mu);
  bool ok = (!L->pending || L->stream == (cudaStream_t)stream) && L->nw < 64 && L->nr + 2 <= 128;
  if (ok) {
    if (!L->pending) __atomic_add_fetch(&side_any, 1, __ATOMIC_ACQ_REL);
    L->pending++;
    L->stream = (cudaStream_t)stream;
    L->ev = (cudaEvent_t)ev;
    L->w[L->nw++] = w;
    L->r[L->nr++] = r1;
    L->r[L->nr++] = r2;
  }
  pthread_mutex_unlock(&g->mu);
  return ok;
}
/* ---- session 13b: a forked region (CT_CUDA_DS_FORK: the ResNet downsample branch's forward, src/models/resnet.c
 * through src/backend/stream_region.c and k_cudnn.cu ct_cuda_fork_begin; session 14, CT_CUDA_DS_BWD_FORK: the
 * backward of the nodes recorded there, from the autograd engine) ----
 * begin: `stream` (k_cudnn.cu's second stream for a forward region, lane 0, the one its weight gradients use; its
 * third stream for a backward region, lane 1) waits on `fork_ev` recorded on the device's stream, and from then on
 * ct_cuda_stream returns `stream`: every kernel of the region (cuDNN through the lane's handle, the batch-norm
 * kernels, ...) runs there, after all the work queued before. The region counts as pending work of its lane:
 * blocks freed meanwhile wait for the join (side_q), each block handed out inside it and each table op's output is
 * registered as written (w). end: the launches go back to the device's stream, which continues beside the region;
 * `read` (the region's input, or the gradients its nodes read) is registered as read. The join follows the
 * session-13 rules: the first table op that reads a block the region wrote (the residual add reading the branch's
 * output; the sum of the two input gradients of the block) or writes what it read, any access from outside the
 * table, copies, synchronizes, capture end, replays. Inside a region, a table op meeting another lane's work (or an
 * access from outside the table while another lane is pending) makes the region's stream wait for that lane
 * (region_wait: the lane stays pending for the device's stream). A copy, a synchronize, a cuBLAS handle, no room in
 * the lists: a join of every lane that cuts the region short: the rest runs on the device's stream after the join.
 * One thread drives a device. */
extern "C" bool ct_cuda_region_begin(int dev, int lane, int kind, void *stream, void *fork_ev, void *join_ev) {
  if (dev < 0 || dev >= MAX_DEV || dev >= n_dev || !D[dev].ready || lane < 0 || lane >= N_LANES) return false;
  cu_dev *g = &D[dev];
  if (g->region) return false;
  side_lane *L = &g->lane[lane];
  if (L->pending && L->stream != (cudaStream_t)stream) lanes_join(dev, 1u << lane);
  if (cudaEventRecord((cudaEvent_t)fork_ev, g->stream) != cudaSuccess ||
      cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)fork_ev, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  seq_bump();
  pthread_mutex_lock(&g->mu);
  if (!L->pending) __atomic_add_fetch(&side_any, 1, __ATOMIC_ACQ_REL);
  L->pending++;
  L->stream = (cudaStream_t)stream;
  L->ev = (cudaEvent_t)join_ev;
  g->region = lane + 1;
  g->region_kind = kind >= 0 && kind <= 2 ? kind : 2;
  pthread_mutex_unlock(&g->mu);
  return true;
}
/* the storages of read[] as read by lane L (g->mu held); false where the list is full */
static bool lane_reads(side_lane *L, int n_read, const ct_tensor *const *read) {
  for (int i = 0; i < n_read; i++) {
    const ct_tensor *t = read[i];
    if (!t || t->storage->device.type != CT_DEVICE_CUDA || side_hits(t->storage->data, L->r, L->nr)) continue;
    if (L->nr == 128) return false;
    L->r[L->nr++] = t->storage->data;
  }
  return true;
}
/* inside a region: read[] registered as read by it (no room: the region is cut, joined) */
extern "C" void ct_cuda_region_read(int dev, int n_read, const ct_tensor *const *read) {
  if (dev < 0 || dev >= MAX_DEV || !D[dev].region) return;
  cu_dev *g = &D[dev];
  pthread_mutex_lock(&g->mu);
  bool room = !g->region || lane_reads(&g->lane[g->region - 1], n_read, read);
  pthread_mutex_unlock(&g->mu);
  if (!room) side_join(dev);
}
/* false where the region was cut short (it joined inside, or there is no room for what it read) */
extern "C" bool ct_cuda_region_end(int dev, int n_read, const ct_tensor *const *read) {
  if (dev < 0 || dev >= MAX_DEV || !D[dev].region) return false;
  cu_dev *g = &D[dev];
  seq_bump();
  pthread_mutex_lock(&g->mu);
  int l = g->region - 1, kind = g->region_kind;
  side_lane *L = &g->lane[l];
  g->region = 0;
  bool room = lane_reads(L, n_read, read);
  pthread_mutex_unlock(&g->mu);
  if (!room) {
    lanes_join(dev, 1u << l);
    __atomic_add_fetch(&region_cut[kind], 1, __ATOMIC_RELAXED);
    return false;
  }
  __atomic_add_fetch(&region_n[kind], 1, __ATOMIC_RELAXED);
  return true;
}
/* the forward regions (CT_CUDA_DS_FORK) and the backward ones (CT_CUDA_DS_BWD_FORK): ended as planned, cut short */
extern "C" void ct_cuda_region_counts(int64_t out[2]) {
  out[0] = __atomic_load_n(&region_n[0], __ATOMIC_RELAXED);
  out[1] = __atomic_load_n(&region_cut[0], __ATOMIC_RELAXED);
}
extern "C" void ct_cuda_region_counts_bwd(int64_t out[2]) {
  out[0] = __atomic_load_n(&region_n[1], __ATOMIC_RELAXED);
  out[1] = __atomic_load_n(&region_cut[1], __ATOMIC_RELAXED);
}
/* kind 2: regions begun by ct_cuda_fork_begin(dev, 2) (other work on the second stream) */
extern "C" void ct_cuda_region_counts_other(int64_t out[2]) {
  out[0] = __atomic_load_n(&region_n[2], __ATOMIC_RELAXED);
  out[1] = __atomic_load_n(&region_cut[2], __ATOMIC_RELAXED);
}
/* a block handed out inside a region: registered as written (no room: the region is cut, joined) */
static void region_note(int dev, void *p) {
  cu_dev *g = &D[dev];
  pthread_mutex_lock(&g->mu);
  bool room = true;
  if (g->region) {
    side_lane *L = &g->lane[g->region - 1];
    room = L->nw < 64;
    if (room) L->w[L->nw++] = p;
  }
  pthread_mutex_unlock(&g->mu);
  if (!room) side_join(dev);
}
/* a storage (data pointer) a launch of the active region writes outside the table (no region: nothing) */
extern "C" void ct_cuda_region_written(int dev, const void *p) {
  if (dev < 0 || dev >= MAX_DEV || !p) return;
  cu_dev *g = &D[dev];
  pthread_mutex_lock(&g->mu);
  bool room = true;
  if (g->region) {
    side_lane *L = &g->lane[g->region - 1];
    if (!side_hits(p, L->w, L->nw)) {
      room = L->nw < 64;
      if (room) L->w[L->nw++] = p;
    }
  }
  pthread_mutex_unlock(&g->mu);
  if (!room) side_join(dev);
}
extern "C" bool ct_cuda_region_active(int dev) { return dev >= 0 && dev < MAX_DEV && D[dev].region; }
/* the stream of the active region (NULL: none), without the join checks of ct_cuda_stream (k_cudnn.cu's handles) */
extern "C" void *ct_cuda_region_stream(int dev) {
  return dev >= 0 && dev < MAX_DEV && D[dev].region ? (void *)D[dev].lane[D[dev].region - 1].stream : NULL;
}
/* the device's own stream and the device made current, without any join (k_cudnn.cu's backward region begins
 * beside the pending weight gradients, which ct_cuda_use / ct_cuda_stream at this depth would join) */
extern "C" void *ct_cuda_main_stream(int dev) { return dev >= 0 && dev < MAX_DEV ? (void *)D[dev].stream : NULL; }
extern "C" ct_status ct_cuda_ready(int dev) { return dev_ready(dev); }

extern "C" void ct_cuda_side_join(int dev) {
  if (dev >= 0 && dev < MAX_DEV && (lanes_pending(&D[dev]) || D[dev].region)) side_join(dev);
}
extern "C" int ct_cuda_side_pending(int dev) {
  int n = 0;
  for (int l = 0; dev >= 0 && dev < MAX_DEV && l < N_LANES; l++) n += D[dev].lane[l].pending;
  return n;
}

extern "C" ct_status ct_cuda_use(int dev) {
  side_check(dev);
  return dev_ready(dev);
}
extern "C" void *ct_cuda_stream(int dev) {
  side_check(dev);
  return (void *)(D[dev].region ? D[dev].lane[D[dev].region - 1].stream : D[dev].stream);
}
extern "C" int *ct_cuda_flag(int dev) { return D[dev].flag; }
/* the device of the call's first present tensor, outputs first (optional slots, such as an unread gradient of
 * batch norm's backward, are NULL) */
extern "C" int ct_cuda_call_dev(const ct_call *c) {
  for (int i = 0; i < c->n_out; i++)
    if (c->out[i]) return c->out[i]->storage->device.index;
  for (int i = 0; i < c->n_in; i++)
    if (c->in[i]) return c->in[i]->storage->device.index;
  return 0;
}

extern "C" ct_status ct_cuda_flag_take(int dev, int *value) {
  if (D[dev].region) side_join(dev); /* the flag is read on the device's stream */
  if (D[dev].capturing) {
    /* inside a CUDA graph the check cannot wait for the kernel: the kernels skip a bad index
     * (never reading or writing out of bounds) and the flag stays set for the next eager check */
    *value = 0;
    return CT_OK;
  }
  int v = 0;
  cudaError_t e = cudaMemcpyAsync(&v, D[dev].flag, sizeof v, cudaMemcpyDeviceToHost, D[dev].stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(D[dev].stream);
  if (e == cudaSuccess && v) e = cudaMemsetAsync(D[dev].flag, 0, sizeof(int), D[dev].stream);
  if (e != cudaSuccess) return ct_cuda_fail(e, "reading the kernel's error flag");
  *value = v;
  return CT_OK;
}

/* ---- caching allocator: size classes 2^k and 1.5*2^k from 512 bytes; a freed block
 * goes to its class's list and serves the next request of that class. All work of a
 * device runs on its one stream, so a block freed on the host may be reused by the
 * next kernel at once: the stream orders it after the last kernel that used it. ---- */
static int size_class(size_t n, size_t *rounded) {
  size_t s = 512;
  int c = 0;
  while (s < n) {
    size_t mid = s + s / 2;
    if (mid >= n) {
      *rounded = mid;
      return 2 * c + 1;
    }
    s *= 2;
    c++;
  }
  *rounded = s;
  return 2 * c;
}

static void release_cached(cu_dev *g) {
  for (int c = 0; c < N_CLASSES; c++) {
    while (g->free_list[c]) {
      blk *b = g->free_list[c];
      g->free_list[c] = b->next;
      cudaFree(b->p);
      free(b);
    }
  }
  g->cached = 0;
}

static void *cu_alloc_raw(int dev, size_t nbytes);
static void *cu_alloc(int dev, size_t nbytes) {
  void *p = cu_alloc_raw(dev, nbytes);
  if (p && D[dev].region) region_note(dev, p);
  return p;
}
static void *cu_alloc_raw(int dev, size_t nbytes) {
  if (dev_ready(dev) != CT_OK) return NULL;
  cu_dev *g = &D[dev];
  size_t rounded;
  int c = size_class(nbytes ? nbytes : 1, &rounded);
  pthread_mutex_lock(&g->mu);
  if (g->capturing) {
    void *p = NULL;
    if (c < N_CLASSES && g->pool_free[c]) {
      blk *b = g->pool_free[c];
      g->pool_free[c] = b->next;
      p = b->p;
      free(b);
      g->cached -= (int64_t)rounded;
    } else {
      void **np = g->pool_n == g->pool_cap
                      ? (void **)realloc(g->pool_ptrs, (g->pool_cap ? 2 * g->pool_cap : 256) * sizeof *np)
                      : g->pool_ptrs;
      if (np) {
        if (g->pool_n == g->pool_cap) g->pool_cap = g->pool_cap ? 2 * g->pool_cap : 256;
        g->pool_ptrs = np;
        /* relaxed capture mode allows cudaMalloc (not stream-ordered: nothing is recorded) */
        if (cudaMalloc(&p, rounded) == cudaSuccess) g->pool_ptrs[g->pool_n++] = p;
        else {
          (void)cudaGetLastError();
          p = NULL;
        }
      }
      if (p) g->n_allocs++;
    }
    if (p) {
      g->allocated += (int64_t)rounded;
      if (g->allocated > g->peak) g->peak = g->allocated;
    }
    pthread_mutex_unlock(&g->mu);
    if (!p) ct_set_error(CT_ERR_OOM, "CUDA out of memory while capturing a CUDA graph (%.2f MiB)", (double)nbytes / 1048576.0);
    return p;
  }
  if (cache_enabled && c < N_CLASSES && g->free_list[c]) {
    blk *b = g->free_list[c];
    g->free_list[c] = b->next;
    void *p = b->p;
    free(b);
    g->cached -= (int64_t)rounded;
    g->allocated += (int64_t)rounded;
    if (g->allocated > g->peak) g->peak = g->allocated;
    pthread_mutex_unlock(&g->mu);
    return p;
  }
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, rounded);
  if (e == cudaErrorMemoryAllocation) {
    /* give the cached blocks back to the driver and try once more */
    (void)cudaGetLastError();
    cudaStreamSynchronize(g->stream);
    release_cached(g);
    e = cudaMalloc(&p, rounded);
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    int64_t alloc = g->allocated;
    pthread_mutex_unlock(&g->mu);
    ct_set_error(CT_ERR_OOM,
                 "CUDA out of memory. Tried to allocate %.2f MiB (GPU %d; %.2f GiB total capacity; %.2f GiB already "
                 "allocated; %.2f GiB free)",
                 (double)nbytes / 1048576.0, dev, (double)tot / 1073741824.0, (double)alloc / 1073741824.0,
                 (double)fr / 1073741824.0);
    return NULL;
  }
  g->allocated += (int64_t)rounded;
  g->n_allocs++;
  if (g->allocated > g->peak) g->peak = g->allocated;
  pthread_mutex_unlock(&g->mu);
  return p;
}

static void cu_free(int dev, void *p, size_t nbytes) {
  if (!p || dev < 0 || dev >= n_dev) return;
  seq_bump();
  cu_dev *g = &D[dev];
  if (__atomic_load_n(&side_any, __ATOMIC_ACQUIRE)) { /* a pending lane may still use it: keep it until the join */
    pthread_mutex_lock(&g->mu);
    bool kept = false;
    unsigned lanes = lanes_pending(g);
    if (lanes) {
      if (g->side_qn == g->side_qcap) {
        size_t nc = g->side_qcap ? 2 * g->side_qcap : 64;
        side_qblk *nq = (side_qblk *)realloc(g->side_q, nc * sizeof *nq);
        if (nq) g->side_q = nq, g->side_qcap = nc;
      }
      if (g->side_qn < g->side_qcap) {
        g->side_q[g->side_qn].p = p;
        g->side_q[g->side_qn].n = nbytes;
        g->side_q[g->side_qn++].lanes = lanes;
        kept = true;
      }
    }
    pthread_mutex_unlock(&g->mu);
    if (kept) return;
    if (lanes) side_join(dev); /* no room to keep it: join, then free */
  }
  cu_free_now(dev, p, nbytes);
}

static void cu_free_now(int dev, void *p, size_t nbytes) {
  cu_dev *g = &D[dev];
  size_t rounded;
  int c = size_class(nbytes ? nbytes : 1, &rounded);
  pthread_mutex_lock(&g->mu);
  g->allocated -= (int64_t)rounded;
  bool pooled = false;
  for (size_t i = g->pool_n; i-- > 0 && !pooled;) pooled = g->pool_ptrs[i] == p;
  if (pooled) { /* a graph's block: back to the graph pool (its lists, or kept when malloc fails) */
    blk *pb = c < N_CLASSES ? (blk *)malloc(sizeof *pb) : NULL;
    if (pb) {
      pb->p = p;
      pb->next = g->pool_free[c];
      g->pool_free[c] = pb;
      g->cached += (int64_t)rounded;
    }
    pthread_mutex_unlock(&g->mu);
    return;
  }
  blk *b = cache_enabled && c < N_CLASSES ? (blk *)malloc(sizeof *b) : NULL;
  if (b) {
    b->p = p;
    b->next = g->free_list[c];
    g->free_list[c] = b;
    g->cached += (int64_t)rounded;
    pthread_mutex_unlock(&g->mu);
    return;
  }
  pthread_mutex_unlock(&g->mu);
  /* without the cache the block may still be in use by queued kernels: wait first */
  cudaSetDevice(dev);
  cudaStreamSynchronize(g->stream);
  cudaFree(p);
}

extern "C" void *ct_cuda_tmp_alloc(int dev, size_t nbytes) { return cu_alloc(dev, nbytes); }
extern "C" void ct_cuda_tmp_free(int dev, void *p, size_t nbytes) { cu_free(dev, p, nbytes); }

static void cu_empty_cache(int dev) {
  if (dev < 0 || dev >= n_dev || !D[dev].ready) return;
  ct_cuda_side_join(dev);
  cudaSetDevice(dev);
  cudaStreamSynchronize(D[dev].stream);
  pthread_mutex_lock(&D[dev].mu);
  release_cached(&D[dev]);
  pthread_mutex_unlock(&D[dev].mu);
}

static ct_memory_stats cu_stats(int dev) {
  ct_memory_stats s = {0, 0, 0, 0};
  pthread_once(&once, discover);
  if (dev < 0 || dev >= n_dev) return s;
  pthread_mutex_lock(&D[dev].mu);
  s.allocated_bytes = D[dev].allocated;
  s.cached_bytes = D[dev].cached;
  s.peak_allocated_bytes = D[dev].peak;
  s.n_allocs = D[dev].n_allocs;
  pthread_mutex_unlock(&D[dev].mu);
  return s;
}

static void cu_reset_peak(int dev) {
  pthread_once(&once, discover);
  if (dev < 0 || dev >= n_dev) return;
  pthread_mutex_lock(&D[dev].mu);
  D[dev].peak = D[dev].allocated;
  pthread_mutex_unlock(&D[dev].mu);
}

static bool cu_available(int dev) {
  pthread_once(&once, discover);
  return dev >= 0 && dev < n_dev;
}

/* ---- copies through pinned staging ----
 * upload: the bytes go to a pinned buffer (after that buffer's previous copy finished),
 * then an asynchronous copy on the stream; the host returns once its bytes are staged.
 * download: copy to a pinned buffer, wait, copy out. */
static ct_status capture_copy_error(const char *what) {
  if (getenv("CT_CUDA_GRAPH_TRACE")) { /* where in the step: addresses for addr2line */
    void *fr[32];
    int n = backtrace(fr, 32);
    fprintf(stderr, "CUDA graph capture: %s at:\n", what);
    backtrace_symbols_fd(fr, n, 2);
  }
  return CT_ERR(CT_ERR_RUNTIME,
                "CUDA graph capture: %s inside the captured step (host memory is not part of a graph: copy the "
                "inputs into the step's device tensors before each replay, and read results after it)",
                what);
}

/* A few bytes known on the host, written by a kernel whose argument carries them: inside a
 * graph the value is part of the recorded launch (a scalar operand moved to the device, as
 * PyTorch's graphs bake Python scalars in). */
#define SMALL_UPLOAD 256
struct small_bytes {
  unsigned char b[SMALL_UPLOAD];
};
__global__ void k_set_bytes(unsigned char *dst, small_bytes v, int n) {
  if ((int)threadIdx.x < n) dst[threadIdx.x] = v.b[threadIdx.x];
}

static ct_status cu_upload(ct_storage *dst, size_t off, const void *src, size_t n) {
  int dev = dst->device.index;
  seq_bump();
  ct_cuda_side_join(dev);
  CT_TRY(dev_ready(dev));
  if (D[dev].capturing) {
    if (n > SMALL_UPLOAD) return capture_copy_error("a host-to-device copy");
    if (n == 0) return CT_OK;
    small_bytes v;
    memcpy(v.b, src, n);
    k_set_bytes<<<1, SMALL_UPLOAD, 0, D[dev].stream>>>((unsigned char *)dst->data + off, v, (int)n);
    return ct_cuda_check_launch("a scalar copied to the device");
  }
  prof_up_n++, prof_up_bytes += (int64_t)n;
  cu_dev *g = &D[dev];
  pthread_mutex_lock(&g->stage_mu);
  cudaError_t e = cudaSuccess;
  size_t done = 0;
  while (done < n && e == cudaSuccess) {
    size_t k = n - done < STAGE_BYTES ? n - done : STAGE_BYTES;
    int b = g->stage_next;
    g->stage_next ^= 1;
    if (g->stage_used[b]) e = cudaEventSynchronize(g->stage_ev[b]);
    if (e != cudaSuccess) break;
    memcpy(g->stage[b], (const char *)src + done, k);
    e = cudaMemcpyAsync((char *)dst->data + off + done, g->stage[b], k, cudaMemcpyHostToDevice, g->stream);
    if (e == cudaSuccess) e = cudaEventRecord(g->stage_ev[b], g->stream);
    g->stage_used[b] = true;
    done += k;
  }
  pthread_mutex_unlock(&g->stage_mu);
  return e == cudaSuccess ? CT_OK : ct_cuda_fail(e, "copying to the device");
}

static ct_status cu_download(const ct_storage *src, size_t off, void *dst, size_t n) {
  int dev = src->device.index;
  seq_bump();
  ct_cuda_side_join(dev);
  CT_TRY(dev_ready(dev));
  if (D[dev].capturing) return capture_copy_error("a device-to-host copy (a value read on the host)");
  prof_down_n++, prof_down_bytes += (int64_t)n;
  cu_dev *g = &D[dev];
  pthread_mutex_lock(&g->stage_mu);
  cudaError_t e = cudaSuccess;
  size_t done = 0;
  if (n == 0) e = cudaStreamSynchronize(g->stream); /* still report earlier asynchronous errors */
  while (done < n && e == cudaSuccess) {
    size_t k = n - done < STAGE_BYTES ? n - done : STAGE_BYTES;
    int b = g->stage_next;
    g->stage_next ^= 1;
    e = cudaMemcpyAsync(g->stage[b], (const char *)src->data + off + done, k, cudaMemcpyDeviceToHost, g->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(g->stream);
    if (e != cudaSuccess) break;
    g->stage_used[b] = false;
    memcpy((char *)dst + done, g->stage[b], k);
    done += k;
  }
  pthread_mutex_unlock(&g->stage_mu);
  return e == cudaSuccess ? CT_OK : ct_cuda_fail(e, "copying from the device");
}

static ct_status cu_sync(int dev) {
  seq_bump();
  ct_cuda_side_join(dev);
  CT_TRY(dev_ready(dev));
  if (D[dev].capturing) return capture_copy_error("a synchronize");
  cudaError_t e = cudaStreamSynchronize(D[dev].stream);
  return e == cudaSuccess ? CT_OK : ct_cuda_fail(e, "synchronize");
}

/* ---- the kernel table ---- */
static ct_kernel_fn table[CT_OP_COUNT];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
/* CT_CUDA_OP_PROFILE=1: every kernel call is followed by a synchronize and timed; the totals per
 * op (host work + device time) are printed at exit, largest first (a diagnostic: the syncs remove
 * the overlap of host and device work). */
static ct_kernel_fn prof_orig[CT_OP_COUNT];
static double prof_t[CT_OP_COUNT];
static int64_t prof_n[CT_OP_COUNT];
static double prof_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
/* CT_CUDA_OP_PROFILE=2: the totals per (op, first input's dtype, first output's dtype), to tell
 * e.g. float32 -> bfloat16 casts from the reverse ones */
static bool prof_by_dtype;
#define PROF_NK (CT_OP_COUNT * CT_NUM_DTYPES * CT_NUM_DTYPES)
static double prof_t2[PROF_NK];
static int64_t prof_n2[PROF_NK];
static ct_status prof_kernel(const ct_call *c) {
  double t0 = prof_now();
  ct_status st = prof_orig[c->op](c);
  if (!D[ct_cuda_call_dev(c)].capturing) cudaStreamSynchronize(D[ct_cuda_call_dev(c)].stream);
  double dt = prof_now() - t0;
  prof_t[c->op] += dt;
  prof_n[c->op]++;
  if (prof_by_dtype) {
    int di = c->n_in > 0 && c->in[0] ? (int)c->in[0]->dtype : 0, dout = c->n_out > 0 && c->out[0] ? (int)c->out[0]->dtype : 0;
    int k = (c->op * CT_NUM_DTYPES + di) * CT_NUM_DTYPES + dout;
    prof_t2[k] += dt;
    prof_n2[k]++;
  }
  return st;
}
static void prof_report(void) {
  double total = 0;
  for (int i = 0; i < CT_OP_COUNT; i++) total += prof_t[i];
  fprintf(stderr, "CT_CUDA_OP_PROFILE: %.1f ms in kernels (with a sync after each); %lld uploads (%lld bytes), %lld "
          "downloads (%lld bytes)\n", total * 1e3, (long long)prof_up_n, (long long)prof_up_bytes, (long long)prof_down_n,
          (long long)prof_down_bytes);
  for (int k = 0; k < 30; k++) {
    int best = -1;
    for (int i = 0; i < CT_OP_COUNT; i++)
      if (prof_t[i] > 0 && (best < 0 || prof_t[i] > prof_t[best])) best = i;
    if (best < 0) break;
    fprintf(stderr, "  %-28s %9.2f ms %7lld calls\n", ct_op_info_of(best)->id, prof_t[best] * 1e3, (long long)prof_n[best]);
    prof_t[best] = -1;
  }
  for (int k = 0; prof_by_dtype && k < 45; k++) {
    int best = -1;
    for (int i = 0; i < PROF_NK; i++)
      if (prof_t2[i] > 0 && (best < 0 || prof_t2[i] > prof_t2[best])) best = i;
    if (best < 0) break;
    int op = best / (CT_NUM_DTYPES * CT_NUM_DTYPES), di = best / CT_NUM_DTYPES % CT_NUM_DTYPES, dout = best % CT_NUM_DTYPES;
    fprintf(stderr, "  by dtype %-20s %-8s -> %-8s %9.2f ms %7lld calls\n", ct_op_info_of(op)->id, ct_dtype_name((ct_dtype)di),
            ct_dtype_name((ct_dtype)dout), prof_t2[best] * 1e3, (long long)prof_n2[best]);
    prof_t2[best] = -1;
  }
}

static void fill_table(void) {
  ct_cuda_register_pointwise(table);
  ct_cuda_register_reduce(table);
  ct_cuda_register_linalg(table);
  ct_cuda_register_shape(table);
  ct_cuda_register_fast(table);
  ct_cuda_register_conv(table);
  ct_cuda_register_attention(table);
  ct_cuda_register_bn(table);
  const char *pe = getenv("CT_CUDA_OP_PROFILE");
  if (pe && strcmp(pe, "0")) {
    prof_by_dtype = !strcmp(pe, "2");
    for (int i = 0; i < CT_OP_COUNT; i++)
      if (table[i]) {
        prof_orig[i] = table[i];
        table[i] = prof_kernel;
      }
    atexit(prof_report);
  }
}
/* While work is pending beside the device's stream: an op reading a lane's writes, or writing any storage a lane
 * uses, joins that lane first; every other op runs beside them, its own stream accesses not joining
 * (side_guard_depth). Inside a region the region's own lane is not checked (its stream orders it) but the others
 * are (a hit joins every lane and cuts the region), and the op's outputs are registered as the region's writes (the
 * in-place ones too: the blocks handed out are already). */
static bool io_hits(const ct_call *c, const side_lane *L) {
  for (int i = 0; i < c->n_in; i++)
    if (c->in[i] && c->in[i]->storage->device.type == CT_DEVICE_CUDA && side_hits(c->in[i]->storage->data, L->w, L->nw))
      return true;
  for (int j = 0; j < c->n_out; j++)
    if (c->out[j] && c->out[j]->storage->device.type == CT_DEVICE_CUDA &&
        (side_hits(c->out[j]->storage->data, L->w, L->nw) || side_hits(c->out[j]->storage->data, L->r, L->nr)))
      return true;
  return false;
}
static ct_status side_guard_kernel(const ct_call *c) {
  const ct_tensor *first = NULL;
  for (int j = 0; j < c->n_out && !first; j++) first = c->out[j];
  for (int i = 0; i < c->n_in && !first; i++) first = c->in[i];
  int dev = first ? first->storage->device.index : -1;
  if (dev >= 0 && dev < MAX_DEV && (lanes_pending(&D[dev]) || D[dev].region)) {
    cu_dev *g = &D[dev];
    unsigned hit = 0;
    bool full = false;
    pthread_mutex_lock(&g->mu);
    int rl = g->region - 1;
    for (int l = 0; l < N_LANES; l++)
      if (l != rl && g->lane[l].pending && io_hits(c, &g->lane[l])) hit |= 1u << l;
    if (rl >= 0) {
      side_lane *L = &g->lane[rl];
      for (int j = 0; j < c->n_out && !full; j++) {
        if (!c->out[j] || c->out[j]->storage->device.type != CT_DEVICE_CUDA) continue;
        const void *p = c->out[j]->storage->data;
        if (side_hits(p, L->w, L->nw)) continue;
        if (L->nw < 64) L->w[L->nw++] = p;
        else full = true;
      }
    }
    pthread_mutex_unlock(&g->mu);
    /* inside a region a hit makes its stream wait for those lanes; a full list (or streams that cannot be ordered)
     * joins every lane, the region cut */
    if (full || (hit && !(rl >= 0 && region_wait(dev, hit)))) lanes_join(dev, hit);
  }
  side_guard_depth++;
  ct_status st = table[c->op](c);
  side_guard_depth--;
  return st;
}
static ct_kernel_fn cu_kernel(int op) {
  seq_bump();
  pthread_once(&table_once, fill_table);
  ct_kernel_fn f = op >= 0 && op < CT_OP_COUNT ? table[op] : NULL;
  if (f && __builtin_expect(__atomic_load_n(&side_any, __ATOMIC_ACQUIRE) != 0, 0)) return side_guard_kernel;
  return f;
}

/* the forked regions (backend.h; src/backend/stream_region.c): k_cudnn.cu picks the stream and the switch by
 * kind (forward: lane 0, CT_CUDA_DS_FORK; backward: lane 1, CT_CUDA_DS_BWD_FORK) */
extern "C" int ct_cuda_fork_begin(int dev, int kind); /* k_cudnn.cu */
static bool cu_region_begin(int dev, int kind) {
  return dev >= 0 && dev < MAX_DEV && ct_cuda_fork_begin(dev, kind) != 0;
}
static bool cu_region_end(int dev, int n_read, const ct_tensor *const *read) {
  return ct_cuda_region_end(dev, n_read, read);
}
static void cu_region_read(int dev, int n_read, const ct_tensor *const *read) { ct_cuda_region_read(dev, n_read, read); }

extern "C" const ct_backend ct_cuda_backend = {
    "cuda", CT_DEVICE_CUDA, cu_available, cu_alloc, cu_free, cu_upload, cu_download, cu_sync,
    cu_kernel, cu_stats, cu_empty_cache, cu_region_begin, cu_region_read, cu_region_end, cu_reset_peak,
};

/* ---- the public queries (include/ctorch/cuda.h through cuda_api.c) ---- */
extern "C" int ct_cuda_impl_device_count(void) {
  pthread_once(&once, discover);
  return n_dev;
}
extern "C" const char *ct_cuda_impl_reason(void) {
  pthread_once(&once, discover);
  return n_dev > 0 ? "" : reason;
}
extern "C" const char *ct_cuda_impl_name(int index) {
  pthread_once(&once, discover);
  return index >= 0 && index < n_dev ? D[index].name : "";
}
extern "C" ct_status ct_cuda_impl_props(int index, ct_cuda_device_props *out) {
  pthread_once(&once, discover);
  if (index < 0 || index >= n_dev) return CT_ERR(CT_ERR_RUNTIME, "CUDA error: invalid device ordinal");
  cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, index);
  if (e != cudaSuccess) return ct_cuda_fail(e, "cudaGetDeviceProperties");
  snprintf(out->name, sizeof out->name, "%s", p.name);
  out->total_memory = (int64_t)p.totalGlobalMem;
  out->major = p.major;
  out->minor = p.minor;
  out->multi_processor_count = p.multiProcessorCount;
  return CT_OK;
}
extern "C" ct_status ct_cuda_impl_mem_info(int index, int64_t *free_bytes, int64_t *total_bytes) {
  CT_TRY(dev_ready(index));
  size_t fr = 0, tot = 0;
  cudaError_t e = cudaMemGetInfo(&fr, &tot);
  if (e != cudaSuccess) return ct_cuda_fail(e, "cudaMemGetInfo");
  *free_bytes = (int64_t)fr;
  *total_bytes = (int64_t)tot;
  return CT_OK;
}
extern "C" ct_status ct_cuda_impl_sync(int index) { return cu_sync(index); }
extern "C" void ct_cuda_impl_set_tf32(bool allow) { __atomic_store_n(&tf32, allow, __ATOMIC_RELAXED); }
extern "C" bool ct_cuda_impl_tf32(void) { return __atomic_load_n(&tf32, __ATOMIC_RELAXED); }
extern "C" bool ct_cuda_tf32(void) { return ct_cuda_impl_tf32(); }
/* torch.backends.cudnn.allow_tf32 apart from the matrix products' switch: -1 (the C default) follows it */
static int conv_tf32 = -1;
extern "C" void ct_cuda_impl_set_conv_tf32(int mode) { __atomic_store_n(&conv_tf32, mode < 0 ? -1 : mode > 0, __ATOMIC_RELAXED); }
extern "C" bool ct_cuda_conv_tf32(void) {
  int m = __atomic_load_n(&conv_tf32, __ATOMIC_RELAXED);
  return m < 0 ? ct_cuda_impl_tf32() : m != 0;
}
/* ---- CUDA graphs ---- */
/* No graph uses the pool any more (g->mu held): its free blocks join the general cache, and the
 * blocks still held by tensors go there when they are freed. */
static void pool_release(cu_dev *g) {
  for (int c = 0; c < N_CLASSES; c++)
    while (g->pool_free[c]) {
      blk *b = g->pool_free[c];
      g->pool_free[c] = b->next;
      b->next = g->free_list[c];
      g->free_list[c] = b;
    }
  free(g->pool_ptrs);
  g->pool_ptrs = NULL;
  g->pool_n = g->pool_cap = 0;
}

struct ct_cuda_graph {
  int dev;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  size_t nodes;
};

/* A capture in two halves, so that a caller whose step is not one C function (Python's `with
 * torch.cuda.graph(g):`) can run it in between; ct_cuda_graph_capture (cuda_api.c) is begin, fn, end. */
extern "C" ct_status ct_cuda_impl_graph_begin(int dev) {
  CT_TRY(dev_ready(dev));
  cu_dev *g = &D[dev];
  if (g->capturing) return CT_ERR(CT_ERR_RUNTIME, "CUDA graph capture: device %d is already capturing a graph", dev);
  cudaSetDevice(dev);
  seq_bump(); /* nothing recorded before the capture pairs with a call inside it */
  ct_cuda_side_join(dev);
  cudaError_t e = cudaStreamSynchronize(g->stream); /* the eager work before runs first */
  if (e == cudaSuccess) e = cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) return ct_cuda_fail(e, "beginning a CUDA graph capture");
  g->capturing = true;
  return CT_OK;
}

/* body: the step's status; anything but CT_OK discards the capture (its error stays the one set) */
extern "C" ct_cuda_graph *ct_cuda_impl_graph_end(int dev, ct_status body) {
  if (dev_ready(dev) != CT_OK) return NULL;
  cu_dev *g = &D[dev];
  if (!g->capturing) {
    if (body == CT_OK) ct_set_error(CT_ERR_RUNTIME, "CUDA graph capture: device %d is not capturing a graph", dev);
    return NULL;
  }
  cudaSetDevice(dev);
  ct_status st = body;
  cudaGraph_t graph = NULL;
  seq_bump();
  ct_cuda_side_join(dev); /* the second stream's branch rejoins before the capture ends */
  cudaError_t e = cudaStreamEndCapture(g->stream, &graph);
  g->capturing = false;
  ct_cuda_graph *cg = NULL;
  if (st == CT_OK && e != cudaSuccess) st = ct_cuda_fail(e, "capturing a CUDA graph (a launch inside the step could not be recorded)");
  cudaGraphExec_t exec = NULL;
  if (st == CT_OK && (e = cudaGraphInstantiate(&exec, graph, 0)) != cudaSuccess)
    st = ct_cuda_fail(e, "instantiating a CUDA graph");
  if (st == CT_OK && !(cg = (ct_cuda_graph *)calloc(1, sizeof *cg))) st = CT_ERR(CT_ERR_OOM, "out of memory");
  if (st != CT_OK) {
    (void)cudaGetLastError();
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    pthread_mutex_lock(&g->mu);
    if (g->n_graphs == 0) pool_release(g);
    pthread_mutex_unlock(&g->mu);
    return NULL;
  }
  cg->dev = dev;
  cg->graph = graph;
  cg->exec = exec;
  cudaGraphGetNodes(graph, NULL, &cg->nodes);
  ct_cuda_graph_diagnostics(graph); /* CT_CUDA_GRAPH_NODES, CT_CUDA_GRAPH_TIMELINE (graph_diag.cu) */
  pthread_mutex_lock(&g->mu);
  g->n_graphs++;
  pthread_mutex_unlock(&g->mu);
  return cg;
}

extern "C" bool ct_cuda_impl_capturing(int dev) {
  pthread_once(&once, discover);
  return dev >= 0 && dev < n_dev && D[dev].capturing;
}

extern "C" ct_status ct_cuda_impl_graph_replay(ct_cuda_graph *cg) {
  if (!cg) return CT_ERR(CT_ERR_VALUE, "CUDA graph replay: the graph is NULL");
  CT_TRY(dev_ready(cg->dev));
  if (D[cg->dev].capturing) return CT_ERR(CT_ERR_RUNTIME, "CUDA graph replay: the device is capturing a graph");
  cudaSetDevice(cg->dev);
  seq_bump();
  ct_cuda_side_join(cg->dev);
  cudaError_t e = cudaGraphLaunch(cg->exec, D[cg->dev].stream);
  return e == cudaSuccess ? CT_OK : ct_cuda_fail(e, "replaying a CUDA graph");
}

extern "C" int64_t ct_cuda_impl_graph_nodes(const ct_cuda_graph *cg) { return cg ? (int64_t)cg->nodes : 0; }

extern "C" void ct_cuda_impl_graph_free(ct_cuda_graph *cg) {
  if (!cg) return;
  cu_dev *g = &D[cg->dev];
  cudaSetDevice(cg->dev);
  ct_cuda_side_join(cg->dev);
  cudaStreamSynchronize(g->stream);
  cudaGraphExecDestroy(cg->exec);
  cudaGraphDestroy(cg->graph);
  pthread_mutex_lock(&g->mu);
  if (--g->n_graphs == 0) pool_release(g);
  pthread_mutex_unlock(&g->mu);
  free(cg);
}

extern "C" void ct_cuda_impl_set_bf16(bool on) { __atomic_store_n(&bf16mm, on, __ATOMIC_RELAXED); }
extern "C" bool ct_cuda_impl_bf16(void) { return __atomic_load_n(&bf16mm, __ATOMIC_RELAXED); }

/* ---- the iterator: same-shaped tensors, dims coalesced where every tensor allows ---- */
extern "C" bool ct_dense_same_layout(const ct_tensor *a, const ct_tensor *b); /* src/ops/memory_format.c */
extern "C" void cu_iter_make(int nt, ct_tensor *const *ts, cu_iter *it) {
  memset(it, 0, sizeof *it);
  it->nt = nt;
  const ct_tensor *t0 = ts[0];
  /* every tensor in one dense non-contiguous layout (channels-last): one flat run in memory order */
  bool flat = ct_numel(t0) > 0 && !ct_is_contiguous(t0) && ct_dense_same_layout(t0, t0);
  for (int k = 1; k < nt && flat; k++) flat = ct_dense_same_layout(ts[k], t0);
  if (flat) {
    it->numel = ct_numel(t0);
    it->nd = 1;
    it->shape[0] = it->numel;
    it->contig = true;
    for (int k = 0; k < nt; k++) {
      it->st[k][0] = (int64_t)ct_dtype_size(ts[k]->dtype);
      it->base[k] = (char *)ts[k]->storage->data + ts[k]->offset * (int64_t)ct_dtype_size(ts[k]->dtype);
    }
    return;
  }
  int nd = 0;
  int64_t numel = 1;
  for (int d = 0; d < t0->ndim; d++) {
    numel *= t0->shape[d];
    if (t0->shape[d] == 1) continue; /* size-1 dims carry no stride */
    it->shape[nd] = t0->shape[d];
    for (int k = 0; k < nt; k++) it->st[k][nd] = ts[k]->stride[d] * (int64_t)ct_dtype_size(ts[k]->dtype);
    nd++;
  }
  it->numel = numel;
  if (nd == 0) {
    it->shape[0] = 1;
    nd = 1;
  }
  int m = 0;
  for (int d = 1; d < nd; d++) {
    bool ok = true;
    for (int k = 0; k < nt && ok; k++) ok = it->st[k][m] == it->st[k][d] * it->shape[d];
    if (ok) {
      it->shape[m] *= it->shape[d];
      for (int k = 0; k < nt; k++) it->st[k][m] = it->st[k][d];
    } else {
      m++;
      it->shape[m] = it->shape[d];
      for (int k = 0; k < nt; k++) it->st[k][m] = it->st[k][d];
    }
  }
  it->nd = m + 1;
  it->contig = it->nd == 1;
  for (int k = 0; k < nt; k++) {
    it->base[k] = (char *)ts[k]->storage->data + ts[k]->offset * (int64_t)ct_dtype_size(ts[k]->dtype);
    if (it->shape[0] > 1 && it->st[k][0] != (int64_t)ct_dtype_size(ts[k]->dtype)) it->contig = false;
  }
}
