/* Convolutions through cuDNN (forward, input gradient, weight gradient) for contiguous
 * float tensors, loaded with dlopen at run time like cuBLAS: the binary has no link-time
 * dependency, and where no libcudnn.so.9 is found (CT_CUDNN_PATH names the file or its
 * folder; else PyTorch's pip wheel folders and the CUDA folders are searched) the direct
 * kernels of k_conv.cu run and one line on stderr says so. CT_CUDNN=0 turns the path off.
 *
 * Algorithms come from cuDNN's heuristics (cudnnGet*_v7: no trial launches, so a CUDA graph
 * capture can go through here), cached per geometry with their descriptors; the weight and
 * input gradients take deterministic algorithms only (replays and reruns give the same
 * bits). float32 runs without TF32 (CUDNN_FMA_MATH) unless ct_cuda_conv_tf32() (ct_cuda_set_cudnn_allow_tf32,
 * by default following ct_cuda_set_allow_tf32), like torch.backends.cudnn.allow_tf32 = False in the benchmarks' peer. */
#include "cu_common.cuh"
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if __has_include(<cudnn.h>)
#include <cudnn.h>
#define CT_HAVE_CUDNN_H 1
#endif

static int64_t cudnn_calls;
/* src/ops/memory_format.c */
extern "C" bool ct_is_channels_last(const ct_tensor *t);
extern "C" bool ct_suggests_channels_last(const ct_tensor *t);
extern "C" int64_t ct_cuda_cudnn_calls(void) { return __atomic_load_n(&cudnn_calls, __ATOMIC_RELAXED); }

#ifndef CT_HAVE_CUDNN_H
extern "C" int64_t ct_cuda_conv2s_count(void) { return 0; } /* the two-stream backward needs cuDNN */
extern "C" int64_t ct_cuda_conv2s_forks(void) { return 0; }
extern "C" int64_t ct_cuda_conv2s_deferred(void) { return 0; }
extern "C" bool ct_cuda_cudnn_conv(const ct_call *c, ct_status *st) { return false; }
extern "C" int ct_cuda_fork_begin(int dev, int kind) { return 0; } /* the forked regions use cuDNN's handles */
extern "C" const char *ct_cuda_cudnn_info(void) { return "built without cudnn.h"; }
extern "C" ct_status ct_cuda_conv_bias_act(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias,
                                           const ct_tensor *z, bool relu, int stride, int pad, ct_tensor *y) {
  return CT_ERR(CT_ERR_RUNTIME, "fused convolution: built without cudnn.h");
}
#else

#define FN(name) static decltype(&name) p_##name
FN(cudnnGetVersion);
FN(cudnnGetErrorString);
FN(cudnnCreate);
FN(cudnnSetStream);
FN(cudnnCreateTensorDescriptor);
FN(cudnnSetTensorNdDescriptor);
FN(cudnnCreateFilterDescriptor);
FN(cudnnSetFilterNdDescriptor);
FN(cudnnCreateConvolutionDescriptor);
FN(cudnnSetConvolutionNdDescriptor);
FN(cudnnSetConvolutionGroupCount);
FN(cudnnSetConvolutionMathType);
FN(cudnnGetConvolutionForwardAlgorithm_v7);
FN(cudnnGetConvolutionBackwardDataAlgorithm_v7);
FN(cudnnGetConvolutionBackwardFilterAlgorithm_v7);
FN(cudnnGetConvolutionForwardWorkspaceSize);
FN(cudnnGetConvolutionBackwardDataWorkspaceSize);
FN(cudnnGetConvolutionBackwardFilterWorkspaceSize);
FN(cudnnConvolutionForward);
FN(cudnnConvolutionBackwardData);
FN(cudnnConvolutionBackwardFilter);
FN(cudnnAddTensor);
FN(cudnnConvolutionBiasActivationForward);
FN(cudnnCreateActivationDescriptor);
FN(cudnnSetActivationDescriptor);
#undef FN

static struct {
  pthread_once_t once;
  bool ok;
  char info[700]; /* "cuDNN 9.x.y (path)" or why it is not used */
  cudnnHandle_t h[16];
  pthread_mutex_t mu;
} D = {PTHREAD_ONCE_INIT, false, "", {0}, PTHREAD_MUTEX_INITIALIZER};

/* cuDNN 9's libcudnn.so.9 loads its sub-libraries (graph, ops, cnn, engines) by soname;
 * loading them first from the same folder makes that work without LD_LIBRARY_PATH. */
static void *open_in(const char *dir) {
  static const char *subs[] = {"libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9",
                               "libcudnn_engines_runtime_compiled.so.9", "libcudnn_heuristic.so.9",
                               "libcudnn_ops.so.9", "libcudnn_cnn.so.9"};
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/libcudnn.so.9", dir);
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  fclose(f);
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
    char q[PATH_MAX];
    snprintf(q, sizeof q, "%s/%s", dir, subs[i]);
    dlopen(q, RTLD_LAZY | RTLD_GLOBAL); /* a missing optional engine library is not fatal */
  }
  return dlopen(p, RTLD_NOW | RTLD_GLOBAL);
}

static void load_cudnn(void) {
  const char *off = getenv("CT_CUDNN");
  if (off && !strcmp(off, "0")) {
    snprintf(D.info, sizeof D.info, "cuDNN off (CT_CUDNN=0)");
    return;
  }
  void *lib = NULL;
  char where[PATH_MAX] = "";
  const char *env = getenv("CT_CUDNN_PATH");
  if (env && *env) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", env);
    size_t n = strlen(dir);
    if (n > 13 && strstr(dir + n - 14, "libcudnn.so")) { /* a file: its folder */
      char *sl = strrchr(dir, '/');
      if (sl) *sl = 0;
      else snprintf(dir, sizeof dir, ".");
    }
    if ((lib = open_in(dir))) snprintf(where, sizeof where, "%s", dir);
  }
  static const char *pats[] = {"/opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib",
                               "/opt/*/lib/python3*/site-packages/nvidia/cudnn/lib",
                               "/usr/local/lib/python3*/dist-packages/nvidia/cudnn/lib",
                               "/usr/local/lib/python3*/site-packages/nvidia/cudnn/lib",
                               "/usr/lib/python3*/dist-packages/nvidia/cudnn/lib",
                               "/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/local/cuda-1*/lib*",
                               "/usr/lib/x86_64-linux-gnu"};
  for (size_t i = 0; i < sizeof pats / sizeof pats[0] && !lib; i++) {
    glob_t g;
    if (glob(pats[i], 0, NULL, &g) == 0) {
      for (size_t k = 0; k < g.gl_pathc && !lib; k++)
        if ((lib = open_in(g.gl_pathv[k]))) snprintf(where, sizeof where, "%s", g.gl_pathv[k]);
    }
    globfree(&g);
  }
  if (!lib && (lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL))) snprintf(where, sizeof where, "loader path");
  if (!lib) {
    snprintf(D.info, sizeof D.info, "cuDNN not found (set CT_CUDNN_PATH to the folder of libcudnn.so.9)");
    return;
  }
#define SYM(name)                                                                            \
  if (!(p_##name = (decltype(p_##name))dlsym(lib, #name))) {                                 \
    snprintf(D.info, sizeof D.info, "cuDNN in %s lacks %s", where, #name);                   \
    return;                                                                                  \
  }
  SYM(cudnnGetVersion);
  SYM(cudnnGetErrorString);
  SYM(cudnnCreate);
  SYM(cudnnSetStream);
  SYM(cudnnCreateTensorDescriptor);
  SYM(cudnnSetTensorNdDescriptor);
  SYM(cudnnCreateFilterDescriptor);
  SYM(cudnnSetFilterNdDescriptor);
  SYM(cudnnCreateConvolutionDescriptor);
  SYM(cudnnSetConvolutionNdDescriptor);
  SYM(cudnnSetConvolutionGroupCount);
  SYM(cudnnSetConvolutionMathType);
  SYM(cudnnGetConvolutionForwardAlgorithm_v7);
  SYM(cudnnGetConvolutionBackwardDataAlgorithm_v7);
  SYM(cudnnGetConvolutionBackwardFilterAlgorithm_v7);
  SYM(cudnnGetConvolutionForwardWorkspaceSize);
  SYM(cudnnGetConvolutionBackwardDataWorkspaceSize);
  SYM(cudnnGetConvolutionBackwardFilterWorkspaceSize);
  SYM(cudnnConvolutionForward);
  SYM(cudnnConvolutionBackwardData);
  SYM(cudnnConvolutionBackwardFilter);
  SYM(cudnnAddTensor);
  /* optional: the fused inference convolution (ct_cuda_conv_bias_act) says so where absent */
  p_cudnnConvolutionBiasActivationForward =
      (decltype(p_cudnnConvolutionBiasActivationForward))dlsym(lib, "cudnnConvolutionBiasActivationForward");
  p_cudnnCreateActivationDescriptor = (decltype(p_cudnnCreateActivationDescriptor))dlsym(lib, "cudnnCreateActivationDescriptor");
  p_cudnnSetActivationDescriptor = (decltype(p_cudnnSetActivationDescriptor))dlsym(lib, "cudnnSetActivationDescriptor");
#undef SYM
  size_t v = p_cudnnGetVersion();
  if (v < 90000) {
    snprintf(D.info, sizeof D.info, "cuDNN %zu in %s is older than 9", v, where);
    return;
  }
  snprintf(D.info, sizeof D.info, "cuDNN %zu.%zu.%zu (%s)", v / 10000, v / 100 % 100, v % 100, where);
  D.ok = true;
}

extern "C" const char *ct_cuda_cudnn_info(void) {
  pthread_once(&D.once, load_cudnn);
  return D.info;
}

extern "C" bool ct_cuda_region_active(int dev); /* cuda_backend.cu */
extern "C" void ct_cuda_side_join(int dev);
static bool handle_for(int dev, cudnnHandle_t *h) {
  if (dev < 0 || dev >= 16) return false;
  /* the handle is bound to the stream current at its creation: never create it inside a forked region */
  if (!D.h[dev] && ct_cuda_region_active(dev)) ct_cuda_side_join(dev);
  pthread_mutex_lock(&D.mu);
  if (!D.h[dev]) {
    cudnnHandle_t n = NULL;
    if (p_cudnnCreate(&n) == CUDNN_STATUS_SUCCESS && p_cudnnSetStream(n, CU_STREAM(dev)) == CUDNN_STATUS_SUCCESS)
      D.h[dev] = n;
  }
  *h = D.h[dev];
  pthread_mutex_unlock(&D.mu);
  return *h != NULL;
}

/* One cached geometry: descriptors and the chosen algorithm. */
typedef struct {
  int op, dt, nb, groups, math;
  int x[5], w[5], y[5], pad[3], str[3], dil[3];
  int lx, lw, ly; /* 1: channels-last (NHWC in memory, 4-D only), 0: packed NCHW */
} ckey;
typedef struct {
  ckey k;
  cudnnTensorDescriptor_t xd, yd, bd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  int algo;
  size_t ws;
  bool usable;
} centry;
#define CACHE_N 256
static centry cache[CACHE_N];
static int cache_n;

/* ---- Session 13: a convolution's weight gradient beside its input gradient, on a second stream ----
 * conv2d's backward (src/ops/conv.c ct_bw_conv_fwd) calls backward_input(gy, w) and then backward_weight(x, gy):
 * two independent results from operands that exist before either call. Each is a few small cuDNN kernels at
 * batch 16, which leave most of the GPU idle, so they can overlap. The input gradient records an event on the
 * device's stream just before its launch (the fork). The weight gradient that follows it for the same gy, with
 * nothing else queued, copied or freed in between (ct_cuda_op_seq: exactly its own op lookup since the fork),
 * runs on a second stream with a second cuDNN handle after waiting on that event. Mode 1: the device's stream
 * then waits for it (the join) before the call returns, so everything after sees both results as before. Mode 2
 * (the default): the join is left to cuda_backend.cu (ct_cuda_side_defer, side_*), which makes the device's
 * stream wait only where something needs dw or the memory the weight gradient uses, so the weight gradients also
 * run beside the batch norms and input gradients that follow (in the ResNet step, until the SGD step). Inside a
 * capture the record / waits become graph edges: the weight gradient's kernels hang off the node before the
 * input gradient, and a later node depends on both branches.
 * Memory: the weight gradient writes only dw and its workspace, blocks handed out after the fork. Of the blocks
 * the device's stream uses after the fork, dx is live and the input gradient's workspace is held back (freed
 * after the join); any other free bumps ct_cuda_op_seq and cancels the overlap (the weight gradient then runs on
 * the device's stream as before). Results do not change: the same deterministic algorithms on the same operands.
 * CT_CUDA_CONV_2STREAM (read at each call): 0 the one-stream path, 1 joined at once, 2 (default) joined where
 * needed. */
extern "C" uint64_t ct_cuda_op_seq(void); /* cuda_backend.cu */
typedef struct {
  bool ready, failed;
  cudaStream_t side;
  cudnnHandle_t hs;
  cudaEvent_t fork, join, rfork; /* rfork: a forward region's (session 13b) */
  /* session 14: the third stream of the backward regions (cuda_backend.cu's lane 1), its handle and events */
  cudaStream_t bside;
  cudnnHandle_t hb;
  cudaEvent_t bfork, bjoin;
  bool armed;        /* a fork recorded by an input gradient, not yet used */
  const void *gy;    /* its gy, geometry and sequence number */
  int gdims[5], xdims[5], wdims[5], dt, nb;
  uint64_t seq;
  void *ws;          /* its workspace, freed once the fork is used or dropped */
  size_t wsn;
} c2s_dev;
static c2s_dev C2S[16];
static pthread_mutex_t c2s_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t c2s_forks, c2s_side, c2s_deferred; /* forks recorded; weight gradients run on the second stream; of
                                                     * those, left unjoined (tests) */
extern "C" int64_t ct_cuda_conv2s_deferred(void) { return __atomic_load_n(&c2s_deferred, __ATOMIC_RELAXED); }
extern "C" int64_t ct_cuda_conv2s_count(void) { return __atomic_load_n(&c2s_side, __ATOMIC_RELAXED); }
extern "C" int64_t ct_cuda_conv2s_forks(void) { return __atomic_load_n(&c2s_forks, __ATOMIC_RELAXED); }
/* CT_CUDA_CONV_2STREAM: 0 one stream; 1 the join right after the weight gradient; 2 (default) the join left to
 * cuda_backend.cu (ct_cuda_side_defer): the weight gradient also runs beside the ops after it (the next batch
 * norm's backward, the next input gradient) until something needs its dw or its operands' memory */
static int c2s_mode(void) {
  const char *e = getenv("CT_CUDA_CONV_2STREAM");
  return e && *e ? atoi(e) : 2;
}
static bool c2s_enabled(void) { return c2s_mode() != 0; }
extern "C" bool ct_cuda_side_defer(int dev, void *stream, void *ev, const void *w, const void *r1, const void *r2);
/* the second stream, its handle and the two events of a device (made once, outside a capture; false where
 * that failed or the device's stream is capturing before they exist) */
static bool c2s_ready(int dev, cudaStream_t ms) {
  c2s_dev *d = &C2S[dev];
  pthread_mutex_lock(&c2s_mu);
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (!d->ready && !d->failed && cudaStreamIsCapturing(ms, &cs) == cudaSuccess && cs == cudaStreamCaptureStatusNone) {
    bool ok = cudaStreamCreateWithFlags(&d->side, cudaStreamNonBlocking) == cudaSuccess &&
              cudaEventCreateWithFlags(&d->fork, cudaEventDisableTiming) == cudaSuccess &&
              cudaEventCreateWithFlags(&d->join, cudaEventDisableTiming) == cudaSuccess &&
              cudaEventCreateWithFlags(&d->rfork, cudaEventDisableTiming) == cudaSuccess &&
              p_cudnnCreate(&d->hs) == CUDNN_STATUS_SUCCESS && p_cudnnSetStream(d->hs, d->side) == CUDNN_STATUS_SUCCESS &&
              cudaStreamCreateWithFlags(&d->bside, cudaStreamNonBlocking) == cudaSuccess &&
              cudaEventCreateWithFlags(&d->bfork, cudaEventDisableTiming) == cudaSuccess &&
              cudaEventCreateWithFlags(&d->bjoin, cudaEventDisableTiming) == cudaSuccess &&
              p_cudnnCreate(&d->hb) == CUDNN_STATUS_SUCCESS && p_cudnnSetStream(d->hb, d->bside) == CUDNN_STATUS_SUCCESS;
    if (!ok) (void)cudaGetLastError();
    d->ready = ok;
    d->failed = !ok;
  }
  bool r = d->ready;
  pthread_mutex_unlock(&c2s_mu);
  return r;
}
/* takes the device's armed fork (if any) out: *rec gets it, the device is disarmed */
static void c2s_take(int dev, c2s_dev *rec) {
  pthread_mutex_lock(&c2s_mu);
  *rec = C2S[dev];
  C2S[dev].armed = false;
  C2S[dev].ws = NULL;
  C2S[dev].wsn = 0;
  pthread_mutex_unlock(&c2s_mu);
}

/* ---- Session 13b: forked regions (CT_CUDA_DS_FORK; src/models/resnet.c runs the downsample branch's forward, its
 * 1x1 convolution and batch norm, there while the device's stream goes on with the main branch, through
 * src/backend/stream_region.c and the backend's region_begin / region_end; cuda_backend.cu ct_cuda_region_begin has
 * the rules). A forward region uses the weight gradients' stream (cuda_backend.cu's lane 0), so pending weight
 * gradients stay ordered before it, and its cuDNN handle (region_handle). ----
 * Session 14 (CT_CUDA_DS_BWD_FORK): the autograd engine runs the backward of the nodes recorded in a forward region
 * as a backward region, on a third stream with its own handle (lane 1). On the second stream it would queue behind
 * the weight gradients pending there (the main branch's conv2 and, for its join, conv1), and joining it at the
 * block's input-gradient sum would wait for them. Inside a backward region the two-stream convolution backward
 * stays on: the downsample convolution's input gradient records the fork on the third stream, and its weight
 * gradient goes to the second stream, deferred like the others (lane 0), so the join at the sum waits only for
 * the batch norm's backward and the input gradient.
 * CT_CUDA_DS_FORK / CT_CUDA_DS_BWD_FORK (read at each call): 1 (default) the fork, 0 none (the branch on the
 * device's stream). The backward regions need the tags of the forward (nodes recorded between
 * ct_stream_region_begin and end), which are set with CT_CUDA_DS_FORK=0 too.
 * kind 2: a region on the second stream for other work (as a forward one, without a switch: its caller has its own;
 * counted apart, ct_cuda_region_counts_other). */
extern "C" bool ct_cuda_region_begin(int dev, int lane, int kind, void *stream, void *fork_ev, void *join_ev);
extern "C" void *ct_cuda_region_stream(int dev);
extern "C" void *ct_cuda_main_stream(int dev);
extern "C" ct_status ct_cuda_ready(int dev);
/* inside a region: its lane's handle in *h, the lane (0 the second stream, 1 the third); -1 outside one */
static int region_handle(int dev, cudnnHandle_t *h) {
  cudaStream_t rs = (cudaStream_t)ct_cuda_region_stream(dev);
  if (!rs) return -1;
  pthread_mutex_lock(&c2s_mu);
  int lane = !C2S[dev].ready ? -1 : rs == C2S[dev].side ? 0 : rs == C2S[dev].bside ? 1 : -1;
  if (lane >= 0) *h = lane ? C2S[dev].hb : C2S[dev].hs;
  pthread_mutex_unlock(&c2s_mu);
  return lane;
}
extern "C" int ct_cuda_fork_begin(int dev, int kind) {
  const char *e = kind == 2 ? NULL : getenv(kind == 1 ? "CT_CUDA_DS_BWD_FORK" : "CT_CUDA_DS_FORK");
  if ((e && *e == '0') || dev < 0 || dev >= 16 || ct_cuda_region_active(dev)) return 0;
  pthread_once(&D.once, load_cudnn);
  if (!D.ok) return 0; /* no cuDNN: no handles (the direct kernels run on the device's stream) */
  cudnnHandle_t h;
  if (kind == 0) {
    if (ct_cuda_use(dev) != CT_OK || !handle_for(dev, &h)) {
      ct_clear_error();
      return 0;
    }
  } else {
    /* the backward (1) and the parameter updates during it (2, k_fast.cu) begin beside the weight gradients
     * pending on the second stream: no ct_cuda_use / CU_STREAM here (at this depth they would join them); the
     * device's handle was made by the forward's convolutions (kind 2 launches no cuDNN call) */
    if (ct_cuda_ready(dev) != CT_OK) {
      ct_clear_error();
      return 0;
    }
    pthread_mutex_lock(&D.mu);
    bool have = D.h[dev] != NULL;
    pthread_mutex_unlock(&D.mu);
    if (!have && kind == 1) return 0;
  }
  if (!c2s_ready(dev, (cudaStream_t)ct_cuda_main_stream(dev))) return 0;
  c2s_dev *d = &C2S[dev];
  bool ok = kind == 1 ? ct_cuda_region_begin(dev, 1, 1, (void *)d->bside, (void *)d->bfork, (void *)d->bjoin)
                      : ct_cuda_region_begin(dev, 0, kind, (void *)d->side, (void *)d->rfork, (void *)d->join);
  return ok ? 1 : 0;
}

static bool contiguous(const ct_tensor *t) {
  int64_t e = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->shape[d] != 1 && t->stride[d] != e) return false;
    e *= t->shape[d];
  }
  return true;
}

static cudnnDataType_t cdt(int dt) {
  return dt == CT_FLOAT64 ? CUDNN_DATA_DOUBLE : dt == CT_FLOAT16 ? CUDNN_DATA_HALF
         : dt == CT_BFLOAT16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

static void packed_strides(int nb, const int *dims, int *st) {
  st[nb - 1] = 1;
  for (int i = nb - 2; i >= 0; i--) st[i] = st[i + 1] * dims[i + 1];
}

/* [N, C, H, W] stored NHWC (PyTorch's channels_last): strides (HWC, 1, WC, C) */
static void nhwc_strides(const int *dims, int *st) {
  st[1] = 1;
  st[3] = dims[1];
  st[2] = dims[3] * dims[1];
  st[0] = dims[2] * dims[3] * dims[1];
}

/* Descriptors and an algorithm for the key; false (entry unusable) where cuDNN declines. */
static bool build(centry *e, cudnnHandle_t h) {
  const ckey *k = &e->k;
  int sx[5], sy[5];
  packed_strides(k->nb, k->x, sx);
  packed_strides(k->nb, k->y, sy);
  if (k->lx) nhwc_strides(k->x, sx);
  if (k->ly) nhwc_strides(k->y, sy);
  cudnnDataType_t dt = cdt(k->dt);
  cudnnDataType_t comp = k->dt == CT_FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  if (p_cudnnCreateTensorDescriptor(&e->xd) || p_cudnnCreateTensorDescriptor(&e->yd) ||
      p_cudnnCreateTensorDescriptor(&e->bd) || p_cudnnCreateFilterDescriptor(&e->wd) ||
      p_cudnnCreateConvolutionDescriptor(&e->cd))
    return false;
  if (p_cudnnSetTensorNdDescriptor(e->xd, dt, k->nb, k->x, sx) || p_cudnnSetTensorNdDescriptor(e->yd, dt, k->nb, k->y, sy) ||
      p_cudnnSetFilterNdDescriptor(e->wd, dt, k->lw ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, k->nb, k->w) ||
      p_cudnnSetConvolutionNdDescriptor(e->cd, k->nb - 2, k->pad, k->str, k->dil, CUDNN_CROSS_CORRELATION, comp) ||
      p_cudnnSetConvolutionGroupCount(e->cd, k->groups) ||
      p_cudnnSetConvolutionMathType(e->cd, (cudnnMathType_t)k->math))
    return false;
  /* the bias as [1, C, 1, ...] over the op's output channels (y for the forward, x for the
   * transposed convolution's backward-data form) */
  int bdim[5] = {1, 1, 1, 1, 1}, bst[5];
  bdim[1] = k->op == CT_OP_convolution ? k->y[1] : k->x[1];
  packed_strides(k->nb, bdim, bst);
  if (p_cudnnSetTensorNdDescriptor(e->bd, dt, k->nb, bdim, bst)) return false;
  const size_t ws_max = (size_t)1 << 30;
  bool fp32_strict = k->dt == CT_FLOAT32 && k->math == CUDNN_FMA_MATH;
  int n = 0;
#define PICK(PerfT, getter, sizer, ...)                                                               \
  {                                                                                                   \
    PerfT perf[16];                                                                                   \
    if (getter(h, __VA_ARGS__, 16, &n, perf)) return false;                                           \
    if (trace)                                                                                        \
      for (int i = 0; i < n; i++)                                                                     \
        fprintf(stderr, "cudnn op %d x %dx%dx%dx%d w %dx%dx%dx%d cand %d: algo %d status %d det %d math %d mem %zu\n", \
                k->op, k->x[0], k->x[1], k->x[2], k->x[3], k->w[0], k->w[1], k->w[2], k->w[3], i,          \
                (int)perf[i].algo, (int)perf[i].status, (int)perf[i].determinism, (int)perf[i].mathType,    \
                perf[i].memory);                                                                      \
    for (int pass = force >= 0 ? 0 : 1; pass < 2; pass++)                                             \
    for (int i = 0; i < n; i++) {                                                                     \
      if (pass == 0 && (int)perf[i].algo != force) continue;                                          \
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_max) continue;                \
      if (need_det && perf[i].determinism != CUDNN_DETERMINISTIC) continue;                           \
      if (fp32_strict && (perf[i].mathType == CUDNN_TENSOR_OP_MATH ||                                 \
                          perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))                 \
        continue;                                                                                     \
      size_t ws = 0;                                                                                  \
      if (sizer(h, __VA_ARGS__, perf[i].algo, &ws)) continue;                                         \
      e->algo = (int)perf[i].algo;                                                                    \
      e->ws = ws;                                                                                     \
      if (trace) fprintf(stderr, "cudnn op %d: algo %d ws %zu (pass %d)\n", k->op, e->algo, ws, pass);   \
      return true;                                                                                    \
    }                                                                                                 \
    return false;                                                                                     \
  }
  bool need_det = k->op != CT_OP_convolution;
  /* A/B knobs (session 12), read when a geometry is first built: CT_CUDA_CUDNN_{FWD,DGRAD,WGRAD}_ALGO=n takes
   * algorithm n where the heuristics list it and it passes the rules above (else the usual first choice);
   * CT_CUDA_CUDNN_TRACE=1 prints the candidates and the choice on stderr */
  const char *fe = getenv(k->op == CT_OP_convolution                  ? "CT_CUDA_CUDNN_FWD_ALGO"
                          : k->op == CT_OP_convolution_backward_input ? "CT_CUDA_CUDNN_DGRAD_ALGO"
                                                                      : "CT_CUDA_CUDNN_WGRAD_ALGO");
  int force = fe && *fe ? atoi(fe) : -1;
  const char *te = getenv("CT_CUDA_CUDNN_TRACE");
  bool trace = te && *te == '1';
  if (k->op == CT_OP_convolution)
    PICK(cudnnConvolutionFwdAlgoPerf_t, p_cudnnGetConvolutionForwardAlgorithm_v7,
         p_cudnnGetConvolutionForwardWorkspaceSize, e->xd, e->wd, e->cd, e->yd)
  else if (k->op == CT_OP_convolution_backward_input)
    PICK(cudnnConvolutionBwdDataAlgoPerf_t, p_cudnnGetConvolutionBackwardDataAlgorithm_v7,
         p_cudnnGetConvolutionBackwardDataWorkspaceSize, e->wd, e->yd, e->cd, e->xd)
  else
    PICK(cudnnConvolutionBwdFilterAlgoPerf_t, p_cudnnGetConvolutionBackwardFilterAlgorithm_v7,
         p_cudnnGetConvolutionBackwardFilterWorkspaceSize, e->xd, e->yd, e->cd, e->wd)
#undef PICK
}

static const centry *lookup(const ckey *k, cudnnHandle_t h) {
  pthread_mutex_lock(&D.mu);
  const centry *r = NULL;
  for (int i = 0; i < cache_n && !r; i++)
    if (!memcmp(&cache[i].k, k, sizeof *k)) r = &cache[i];
  if (!r && cache_n < CACHE_N) { /* full: no new entries (the direct kernels take them) */
    centry *e = &cache[cache_n];
    memset(e, 0, sizeof *e);
    e->k = *k;
    e->usable = build(e, h);
    cache_n++;
    r = e;
  }
  pthread_mutex_unlock(&D.mu);
  return r && r->usable ? r : NULL;
}

static bool dims_of(const ct_tensor *t, int nd, int *out) {
  out[0] = (int)t->shape[0];
  out[1] = (int)t->shape[1];
  int sp = nd < 2 ? 2 : nd; /* 1-d convolutions as 2-d with height 1 */
  for (int i = 0; i < sp; i++) {
    int j = i - (sp - nd);
    out[2 + i] = j >= 0 ? (int)t->shape[2 + j] : 1;
  }
  return ct_numel(t) > 0 && ct_numel(t) < INT_MAX;
}

/* Runs the call through cuDNN where it applies: true with *st set; false, having done
 * nothing, where the direct kernels should take it. */
extern "C" bool ct_cuda_cudnn_conv(const ct_call *c, ct_status *st) {
  pthread_once(&D.once, load_cudnn);
  if (!D.ok) {
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
      fprintf(stderr, "ctorch: %s; convolutions use the direct CUDA kernels\n", D.info);
    return false;
  }
  int nd = (int)c->a.k[0];
  if (nd < 1 || nd > 3 || c->a.k[1] < 1) return false;
  const ct_tensor *x, *w, *y, *bias = NULL;
  if (c->op == CT_OP_convolution) x = c->in[0], w = c->in[1], y = c->out[0];
  else if (c->op == CT_OP_convolution_backward_input) x = c->out[0], w = c->in[1], y = c->in[0];
  else x = c->in[0], w = c->out[0], y = c->in[1];
  if (c->op != CT_OP_convolution_backward_weight && c->n_in > 2) bias = c->in[2];
  int dt = x->dtype;
  if (!(dt == CT_FLOAT32 || dt == CT_FLOAT64 || dt == CT_FLOAT16 || dt == CT_BFLOAT16)) return false;
  if (w->dtype != dt || y->dtype != dt || (bias && bias->dtype != dt)) return false;
  /* packed NCHW, or channels-last (4-D): cuDNN's NHWC kernels then run without the transposes
   * it puts around NCHW operands. A tensor that is both (size-1 dims) goes with the others. */
  bool any_cl = nd == 2 && (ct_suggests_channels_last(x) || ct_suggests_channels_last(w) || ct_suggests_channels_last(y));
  int lx = any_cl && ct_is_channels_last(x), lw = any_cl && ct_is_channels_last(w), ly = any_cl && ct_is_channels_last(y);
  if ((!lx && !contiguous(x)) || (!lw && !contiguous(w)) || (!ly && !contiguous(y))) return false;
  if (bias && (bias->ndim != 1 || (bias->shape[0] != 1 && bias->stride[0] != 1))) return false;
  ckey k;
  memset(&k, 0, sizeof k);
  k.op = c->op;
  k.dt = dt;
  k.nb = 2 + (nd < 2 ? 2 : nd);
  k.groups = (int)c->a.k[1];
  k.math = dt == CT_FLOAT32 ? (ct_cuda_conv_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH)
           : dt == CT_FLOAT64 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH;
  k.lx = lx, k.lw = lw, k.ly = ly;
  if (!dims_of(x, nd, k.x) || !dims_of(w, nd, k.w) || !dims_of(y, nd, k.y)) return false;
  int sp = k.nb - 2;
  for (int i = 0; i < sp; i++) {
    int j = i - (sp - nd);
    k.str[i] = j >= 0 ? (int)c->a.i[j] : 1;
    k.pad[i] = j >= 0 ? (int)c->a.i[3 + j] : 0;
    k.dil[i] = j >= 0 ? (int)c->a.i[6 + j] : 1;
    if (k.str[i] < 1 || k.pad[i] < 0 || k.dil[i] < 1) return false;
    /* cuDNN pads both sides alike: the output size must be the symmetric formula's (an
     * asymmetric 'same' padding gives another size and stays on the direct kernels) */
    int64_t span = (int64_t)k.dil[i] * (k.w[2 + i] - 1) + 1, o = ((int64_t)k.x[2 + i] + 2 * k.pad[i] - span) / k.str[i] + 1;
    if (o != k.y[2 + i]) return false;
  }
  if (k.x[1] != k.w[1] * k.groups || k.y[1] != k.w[0] || k.y[0] != k.x[0]) return false;
  int dev = ct_cuda_call_dev(c);
  if (ct_cuda_use(dev) != CT_OK) return false;
  cudnnHandle_t h;
  if (!handle_for(dev, &h)) return false;
  /* inside a forked region (session 13b, ct_cuda_fork_begin) the launches go to the region's stream: its handle */
  int region_lane = region_handle(dev, &h);
  /* the two-stream backward (above): an armed fork is used by the matching weight gradient or dropped. Not inside a
   * region on the second stream itself; inside a backward region (the third stream) the fork is recorded there. */
  uint64_t seq = ct_cuda_op_seq();
  c2s_dev prev;
  c2s_take(dev, &prev);
  bool c2s = region_lane != 0 && !bias && c2s_enabled() && (c->op == CT_OP_convolution_backward_input || c->op == CT_OP_convolution_backward_weight);
  bool side = c2s && c->op == CT_OP_convolution_backward_weight && prev.armed && prev.gy == (const void *)((const char *)y->storage->data + y->offset * (int64_t)ct_dtype_size((ct_dtype)dt)) &&
              seq == prev.seq + 1 && prev.dt == dt && prev.nb == k.nb && !memcmp(prev.gdims, k.y, sizeof k.y) &&
              !memcmp(prev.xdims, k.x, sizeof k.x) && !memcmp(prev.wdims, k.w, sizeof k.w);
  if (!side && prev.ws) ct_cuda_tmp_free(dev, prev.ws, prev.wsn); /* no overlap: the stream orders its reuse */
  const centry *e = lookup(&k, h);
  if (!e) {
    if (side && prev.ws) ct_cuda_tmp_free(dev, prev.ws, prev.wsn);
    return false;
  }
  void *ws = NULL;
  if (e->ws && !(ws = ct_cuda_tmp_alloc(dev, e->ws))) {
    if (side && prev.ws) ct_cuda_tmp_free(dev, prev.ws, prev.wsn);
    *st = ct_last_status();
    return true;
  }
  cudaStream_t ms = CU_STREAM(dev);
  bool fork = c2s && c->op == CT_OP_convolution_backward_input && c2s_ready(dev, ms) && cudaEventRecord(C2S[dev].fork, ms) == cudaSuccess;
  if (side) { /* the weight gradient on the second stream, after the fork */
    side = cudaStreamWaitEvent(C2S[dev].side, C2S[dev].fork, 0) == cudaSuccess;
    if (side) h = C2S[dev].hs;
    else if (prev.ws) { /* could not wait: run on the device's stream (ordered after the input gradient) */
      (void)cudaGetLastError();
      ct_cuda_tmp_free(dev, prev.ws, prev.wsn);
    }
  }
  double one64 = 1, zero64 = 0;
  float one32 = 1, zero32 = 0;
  const void *one = dt == CT_FLOAT64 ? (const void *)&one64 : (const void *)&one32;
  const void *zero = dt == CT_FLOAT64 ? (const void *)&zero64 : (const void *)&zero32;
  const char *xp = (const char *)x->storage->data + x->offset * (int64_t)ct_dtype_size((ct_dtype)dt);
  const char *wp = (const char *)w->storage->data + w->offset * (int64_t)ct_dtype_size((ct_dtype)dt);
  const char *yp = (const char *)y->storage->data + y->offset * (int64_t)ct_dtype_size((ct_dtype)dt);
  cudnnStatus_t s;
  /* small outputs (layers 3-4 of a CIFAR ResNet at batch 16): im2col / col2im around cuBLAS, k_conv_gemm.cu
   * (CT_CUDA_CONV_GEMM); after the fork record above, so the paired weight gradient still overlaps */
  ct_status gst = CT_OK;
  bool gemm = c->op != CT_OP_convolution_backward_weight && ct_cuda_conv_gemm(c, (void *)ms, &gst);
  if (gemm) s = gst == CT_OK ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED;
  else if (c->op == CT_OP_convolution)
    s = p_cudnnConvolutionForward(h, one, e->xd, xp, e->wd, wp, e->cd, (cudnnConvolutionFwdAlgo_t)e->algo, ws, e->ws, zero,
                                  e->yd, (void *)yp);
  else if (c->op == CT_OP_convolution_backward_input)
    s = p_cudnnConvolutionBackwardData(h, one, e->wd, wp, e->yd, yp, e->cd, (cudnnConvolutionBwdDataAlgo_t)e->algo, ws,
                                       e->ws, zero, e->xd, (void *)xp);
  else
    s = p_cudnnConvolutionBackwardFilter(h, one, e->xd, xp, e->yd, yp, e->cd, (cudnnConvolutionBwdFilterAlgo_t)e->algo,
                                         ws, e->ws, zero, e->wd, (void *)wp);
  if (s == CUDNN_STATUS_SUCCESS && bias && !gemm) {
    const char *bp = (const char *)bias->storage->data + bias->offset * (int64_t)ct_dtype_size((ct_dtype)dt);
    s = p_cudnnAddTensor(h, one, e->bd, bp, one, c->op == CT_OP_convolution ? e->yd : e->xd,
                         (void *)(c->op == CT_OP_convolution ? yp : xp));
  }
  if (side && s == CUDNN_STATUS_SUCCESS && c2s_mode() >= 2 &&
      ct_cuda_side_defer(dev, (void *)C2S[dev].side, (void *)C2S[dev].join, w->storage->data, x->storage->data, y->storage->data)) {
    /* left running: the blocks freed from here on wait for the join (cuda_backend.cu) */
    if (prev.ws) ct_cuda_tmp_free(dev, prev.ws, prev.wsn);
    __atomic_add_fetch(&c2s_side, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c2s_deferred, 1, __ATOMIC_RELAXED);
  } else if (side) { /* the join: the device's stream waits for the weight gradient */
    cudaError_t je = cudaEventRecord(C2S[dev].join, C2S[dev].side);
    if (je == cudaSuccess) je = cudaStreamWaitEvent(ms, C2S[dev].join, 0);
    if (je != cudaSuccess) { /* cannot order the streams any more: wait for both (outside a capture) */
      (void)cudaGetLastError();
      cudaStreamSynchronize(C2S[dev].side);
      if (s == CUDNN_STATUS_SUCCESS) {
        *st = CT_ERR(CT_ERR_RUNTIME, "cuDNN %s: joining the second stream failed", ct_op_info_of(c->op)->id);
        if (ws) ct_cuda_tmp_free(dev, ws, e->ws);
        if (prev.ws) ct_cuda_tmp_free(dev, prev.ws, prev.wsn);
        return true;
      }
    }
    if (prev.ws) ct_cuda_tmp_free(dev, prev.ws, prev.wsn); /* after the join: ordered for the next user */
    if (s == CUDNN_STATUS_SUCCESS) __atomic_add_fetch(&c2s_side, 1, __ATOMIC_RELAXED);
  }
  if (fork && s == CUDNN_STATUS_SUCCESS) { /* armed: the next call may be the matching weight gradient */
    pthread_mutex_lock(&c2s_mu);
    c2s_dev *d = &C2S[dev];
    d->armed = true;
    d->gy = yp;
    memcpy(d->gdims, k.y, sizeof k.y);
    memcpy(d->xdims, k.x, sizeof k.x);
    memcpy(d->wdims, k.w, sizeof k.w);
    d->dt = dt;
    d->nb = k.nb;
    d->seq = ct_cuda_op_seq();
    d->ws = ws; /* held until the fork is used or dropped */
    d->wsn = e->ws;
    pthread_mutex_unlock(&c2s_mu);
    __atomic_add_fetch(&c2s_forks, 1, __ATOMIC_RELAXED);
    ws = NULL;
  }
  if (ws) ct_cuda_tmp_free(dev, ws, e->ws);
  if (s != CUDNN_STATUS_SUCCESS) {
    *st = gemm ? gst : CT_ERR(CT_ERR_RUNTIME, "cuDNN %s failed: %s", ct_op_info_of(c->op)->id, p_cudnnGetErrorString(s));
    return true;
  }
  __atomic_add_fetch(&cudnn_calls, 1, __ATOMIC_RELAXED);
  *st = ct_cuda_check_launch(ct_op_info_of(c->op)->id);
  return true;
}

/* y = act(conv2d(x, w) + bias + z), one cuDNN call (cudnnConvolutionBiasActivationForward): the
 * inference convolution with batch norm folded into w and bias, ReLU (or none), and the residual z
 * (NULL: none) fused. x [N, C, H, W], w [O, C, k, k], bias [O], z and y [N, O, H', W'], contiguous
 * float32 on one CUDA device; stride/pad the same in both spatial dims. Float32 with FMA math
 * unless TF32 is allowed (as the plain convolutions). */
extern "C" ct_status ct_cuda_conv_bias_act(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias,
                                           const ct_tensor *z, bool relu, int stride, int pad, ct_tensor *y) {
  pthread_once(&D.once, load_cudnn);
  if (!D.ok) return CT_ERR(CT_ERR_RUNTIME, "fused convolution: %s", D.info);
  if (!p_cudnnConvolutionBiasActivationForward || !p_cudnnCreateActivationDescriptor || !p_cudnnSetActivationDescriptor)
    return CT_ERR(CT_ERR_RUNTIME, "fused convolution: cuDNN lacks cudnnConvolutionBiasActivationForward");
  const ct_tensor *all[5] = {x, w, bias, z, y};
  for (int i = 0; i < 5; i++) {
    if (!all[i]) {
      if (i == 3) continue;
      return CT_ERR(CT_ERR_VALUE, "fused convolution: a NULL operand");
    }
    if (all[i]->dtype != CT_FLOAT32 || all[i]->storage->device.type != CT_DEVICE_CUDA ||
        all[i]->storage->device.index != x->storage->device.index || !contiguous(all[i]))
      return CT_ERR(CT_ERR_VALUE, "fused convolution: operands must be contiguous float32 on one CUDA device");
  }
  if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4 || bias->ndim != 1 || stride < 1 || pad < 0 ||
      w->shape[1] != x->shape[1] || bias->shape[0] != w->shape[0] || y->shape[0] != x->shape[0] ||
      y->shape[1] != w->shape[0] || (z && (z->ndim != 4 || memcmp(z->shape, y->shape, sizeof(int64_t) * 4))))
    return CT_ERR(CT_ERR_VALUE, "fused convolution: shapes do not agree");
  for (int i = 0; i < 2; i++)
    if ((x->shape[2 + i] + 2 * pad - w->shape[2 + i]) / stride + 1 != y->shape[2 + i])
      return CT_ERR(CT_ERR_VALUE, "fused convolution: output size does not agree");
  ckey k;
  memset(&k, 0, sizeof k);
  k.op = CT_OP_convolution;
  k.dt = CT_FLOAT32;
  k.nb = 4;
  k.groups = 1;
  k.math = ct_cuda_conv_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  if (!dims_of(x, 2, k.x) || !dims_of(w, 2, k.w) || !dims_of(y, 2, k.y))
    return CT_ERR(CT_ERR_VALUE, "fused convolution: empty or too large operands");
  for (int i = 0; i < 2; i++) k.str[i] = stride, k.pad[i] = pad, k.dil[i] = 1;
  int dev = x->storage->device.index;
  CT_TRY(ct_cuda_use(dev));
  cudnnHandle_t h;
  if (!handle_for(dev, &h)) return CT_ERR(CT_ERR_RUNTIME, "fused convolution: cudnnCreate failed");
  region_handle(dev, &h);
  const centry *e = lookup(&k, h);
  if (!e) return CT_ERR(CT_ERR_RUNTIME, "fused convolution: cuDNN has no algorithm for this geometry");
  static cudnnActivationDescriptor_t act[2];
  pthread_mutex_lock(&D.mu);
  for (int i = 0; i < 2; i++)
    if (!act[i] && p_cudnnCreateActivationDescriptor(&act[i]) == CUDNN_STATUS_SUCCESS)
      p_cudnnSetActivationDescriptor(act[i], i ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0.0);
  pthread_mutex_unlock(&D.mu);
  /* cuDNN's identity activation runs with the implicit-precomputed-GEMM algorithm only */
  int algo = relu ? e->algo : (int)CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t wsz = e->ws;
  if (!relu && p_cudnnGetConvolutionForwardWorkspaceSize(h, e->xd, e->wd, e->cd, e->yd, (cudnnConvolutionFwdAlgo_t)algo, &wsz))
    return CT_ERR(CT_ERR_RUNTIME, "fused convolution: no workspace size");
  void *ws = NULL;
  if (wsz && !(ws = ct_cuda_tmp_alloc(dev, wsz))) return ct_last_status();
  float one = 1, a2 = z ? 1.0f : 0.0f;
  char *yp = (char *)y->storage->data + y->offset * 4;
  const char *zp = z ? (const char *)z->storage->data + z->offset * 4 : yp;
  cudnnStatus_t s = p_cudnnConvolutionBiasActivationForward(
      h, &one, e->xd, (const char *)x->storage->data + x->offset * 4, e->wd, (const char *)w->storage->data + w->offset * 4,
      e->cd, (cudnnConvolutionFwdAlgo_t)algo, ws, wsz, &a2, e->yd, zp, e->bd,
      (const char *)bias->storage->data + bias->offset * 4, act[relu ? 1 : 0], e->yd, yp);
  if (ws) ct_cuda_tmp_free(dev, ws, wsz);
  if (s != CUDNN_STATUS_SUCCESS) return CT_ERR(CT_ERR_RUNTIME, "cuDNN fused convolution failed: %s", p_cudnnGetErrorString(s));
  __atomic_add_fetch(&cudnn_calls, 1, __ATOMIC_RELAXED);
  return ct_cuda_check_launch("conv_bias_act");
}
#endif
