/* Fused batch_norm on CUDA: the ops native_batch_norm / native_batch_norm_backward with the
 * CPU kernels' contract (src/backend/cpu/kernels_bn.c: x contiguous [N, C, S], per-channel
 * tensors contiguous [C], float32 / float64). One block per channel: the statistics (or the
 * backward's sum(g), sum(g (x - mean))) in double over a fixed thread layout and tree (results
 * do not depend on scheduling), then the elementwise pass in the dtype with the CPU's
 * expressions (no FMA contraction: _rn intrinsics for float32). One launch per layer and
 * direction instead of the composed path's ~10 (ResNet's step is launch-bound). */
#include "cu_common.cuh"
#include <cooperative_groups.h>
#include <pthread.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BN_T 256

/* src/ops/memory_format.c */
extern "C" bool ct_suggests_channels_last(const ct_tensor *t);
extern "C" bool ct_dense_same_layout(const ct_tensor *a, const ct_tensor *b);

template <typename T> __device__ __forceinline__ T bn_sub(T a, T b);
template <> __device__ __forceinline__ float bn_sub(float a, float b) { return __fsub_rn(a, b); }
template <> __device__ __forceinline__ double bn_sub(double a, double b) { return __dsub_rn(a, b); }
template <typename T> __device__ __forceinline__ T bn_mul(T a, T b);
template <> __device__ __forceinline__ float bn_mul(float a, float b) { return __fmul_rn(a, b); }
template <> __device__ __forceinline__ double bn_mul(double a, double b) { return __dmul_rn(a, b); }
template <typename T> __device__ __forceinline__ T bn_add(T a, T b);
template <> __device__ __forceinline__ float bn_add(float a, float b) { return __fadd_rn(a, b); }
template <> __device__ __forceinline__ double bn_add(double a, double b) { return __dadd_rn(a, b); }

/* sums of a and b over the block (fixed tree); every thread gets the totals */
__device__ __forceinline__ void bn_reduce2(double &a, double &b, double *sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
  int w = threadIdx.x / 32, l = threadIdx.x % 32;
  if (l == 0) sh[w] = a, sh[BN_T / 32 + w] = b;
  __syncthreads();
  a = 0, b = 0;
  for (int k = 0; k < BN_T / 32; k++) a += sh[k], b += sh[BN_T / 32 + k];
  __syncthreads();
}

struct BnArgs {
  const void *x, *g, *w, *b, *rm, *rv; /* backward: rm = saved mean, rv = saved rstd */
  void *y, *mean, *rstd, *var;          /* backward: y = dx, mean = dw, rstd = db */
  int64_t N, C, S;
  double eps;
  bool training;
  /* a ReLU fused behind (ct_batch_norm_relu, k3): the forward writes relu(y) (v <= 0 ? 0 : v, as the
   * ReLU kernels); the backward reads the saved relu output r and uses g' = r <= 0 ? 0 : g */
  bool relu;
  const void *r;
  /* a residual added before that ReLU (ct_batch_norm_add_relu, k4): the forward writes relu(y + res) (y rounded to
   * the dtype first, as the separate add reads it); the backward writes g' (the residual's gradient) to gp in the
   * pass that first masks g, and reads g' back wherever it read g afterwards */
  const void *res;
  void *gp;
};
template <typename T> __device__ __forceinline__ T bn_relu(T v, bool on) { return on && v <= (T)0 ? (T)0 : v; }
/* the forward's last steps: (+ res[o]) then the ReLU */
template <typename T> __device__ __forceinline__ T bn_out(T v, const void *res, size_t o, bool relu) {
  if (res) v = bn_add(v, ((const T *)res)[o]);
  return bn_relu(v, relu);
}
__device__ __forceinline__ float4 bn_out4(float4 w, const void *res, size_t o, bool relu) {
  if (res) {
    float4 q = *(const float4 *)((const float *)res + o);
    w.x = bn_add(w.x, q.x);
    w.y = bn_add(w.y, q.y);
    w.z = bn_add(w.z, q.z);
    w.w = bn_add(w.w, q.w);
  }
  w.x = bn_relu(w.x, relu);
  w.y = bn_relu(w.y, relu);
  w.z = bn_relu(w.z, relu);
  w.w = bn_relu(w.w, relu);
  return w;
}
template <typename T> __device__ __forceinline__ T bn_gmask(T g, const void *r, size_t o) {
  return r && ((const T *)r)[o] <= (T)0 ? (T)0 : g;
}
__device__ __forceinline__ float4 bn_gmask4(float4 g, const void *r, size_t o) {
  if (!r) return g;
  float4 v = *(const float4 *)((const float *)r + o);
  g.x = v.x <= 0.f ? 0.f : g.x;
  g.y = v.y <= 0.f ? 0.f : g.y;
  g.z = v.z <= 0.f ? 0.f : g.z;
  g.w = v.w <= 0.f ? 0.f : g.w;
  return g;
}

template <typename T> __global__ void __launch_bounds__(BN_T) k_bn_fwd(BnArgs a) {
  __shared__ double sh[2 * BN_T / 32];
  int64_t c = blockIdx.x, S = a.S, M = a.N * S;
  const T *x = (const T *)a.x;
  double mean, var;
  if (a.training) {
    double shift = (double)x[c * S], s1 = 0, s2 = 0;
    for (int64_t i = threadIdx.x; i < M; i += BN_T) {
      int64_t n = i / S, s = i % S;
      double d = (double)x[(n * a.C + c) * S + s] - shift;
      s1 += d;
      s2 += d * d;
    }
    bn_reduce2(s1, s2, sh);
    double d = s1 / (double)M;
    mean = shift + d;
    var = s2 / (double)M - d * d;
    if (var < 0) var = 0;
  } else {
    mean = (double)((const T *)a.rm)[c];
    var = (double)((const T *)a.rv)[c];
  }
  double rstd = 1.0 / sqrt(var + a.eps);
  T m = (T)mean, sc = (T)(rstd * (a.w ? (double)((const T *)a.w)[c] : 1.0)), bb = a.b ? ((const T *)a.b)[c] : (T)0;
  if (threadIdx.x == 0) {
    ((T *)a.mean)[c] = m;
    ((T *)a.rstd)[c] = (T)rstd;
    ((T *)a.var)[c] = (T)var;
  }
  T *y = (T *)a.y;
  for (int64_t i = threadIdx.x; i < M; i += BN_T) {
    int64_t o = ((i / S) * a.C + c) * S + i % S;
    y[o] = bn_out(bn_add(bn_mul(bn_sub(x[o], m), sc), bb), a.res, (size_t)o, a.relu);
  }
}

template <typename T> __global__ void __launch_bounds__(BN_T) k_bn_bwd(BnArgs a) {
  __shared__ double sh[2 * BN_T / 32];
  int64_t c = blockIdx.x, S = a.S, M = a.N * S;
  const T *x = (const T *)a.x, *g = (const T *)a.g;
  T m = ((const T *)a.rm)[c], rs = ((const T *)a.rv)[c];
  double s1 = 0, s2 = 0, rstd = (double)rs;
  bool need = a.mean || a.rstd || (a.y && a.training);
  if (need) {
    for (int64_t i = threadIdx.x; i < M; i += BN_T) {
      int64_t o = ((i / S) * a.C + c) * S + i % S;
      T gm = bn_gmask(g[o], a.r, o);
      if (a.gp) ((T *)a.gp)[o] = gm; /* read back below by this same thread */
      double gv = (double)gm;
      s1 += gv;
      s2 += gv * ((double)x[o] - (double)m);
    }
    bn_reduce2(s1, s2, sh);
  }
  if (threadIdx.x == 0) {
    if (a.mean) ((T *)a.mean)[c] = (T)(s2 * rstd);
    if (a.rstd) ((T *)a.rstd)[c] = (T)s1;
  }
  if (!a.y) return;
  T av = (T)(rstd * (a.w ? (double)((const T *)a.w)[c] : 1.0));
  T cg = (T)(s1 / (double)M), cx = (T)(rstd * rstd * s2 / (double)M);
  T *dx = (T *)a.y;
  for (int64_t i = threadIdx.x; i < M; i += BN_T) {
    int64_t o = ((i / S) * a.C + c) * S + i % S;
    T gm = a.gp ? ((const T *)a.gp)[o] : bn_gmask(g[o], a.r, o);
    dx[o] = a.training ? bn_mul(bn_sub(bn_sub(gm, cg), bn_mul(bn_sub(x[o], m), cx)), av) : bn_mul(gm, av);
  }
}

/* ---- float32 fast path (session 7): the kernels above spend 13-18 us per ResNet layer (one block
 * of 256 threads per channel, 64-bit division per element). Here: 512 threads, 32-bit indices, 4
 * elements per load where S % 4 == 0, and a channel split over a cluster of up to 8 blocks whose
 * partial sums meet in distributed shared memory (Hopper clusters): every block adds the partials
 * in rank order, so the totals are the same bits in every block and in every run (no atomics).
 * Same double accumulation and the same float expressions for y / dx as above. ---- */
#define BN_T2 512
__device__ __forceinline__ void bn_reduce2_t2(double &a, double &b, double *sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
  int w = threadIdx.x / 32, l = threadIdx.x % 32;
  if (l == 0) sh[w] = a, sh[BN_T2 / 32 + w] = b;
  __syncthreads();
  a = 0, b = 0;
  for (int k = 0; k < BN_T2 / 32; k++) a += sh[k], b += sh[BN_T2 / 32 + k];
  __syncthreads();
}

struct BnFast {
  BnArgs a;
  unsigned C, S, N, V, cl; /* V: elements per load (1 or 4); cl: blocks per channel (cluster size) */
};

/* the totals of (a, b) over the channel's cl blocks, in rank order */
__device__ __forceinline__ void bn_cluster_sum(double &a, double &b, double *part, unsigned cl) {
  if (cl == 1) return;
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) part[0] = a, part[1] = b;
  cluster.sync();
  a = 0, b = 0;
  for (unsigned r = 0; r < cl; r++) {
    const double *q = cluster.map_shared_rank(part, (int)r);
    a += q[0];
    b += q[1];
  }
  cluster.sync(); /* no block leaves while another still reads its shared memory */
}

/* unit u (V elements) of channel c: its offset in elements */
__device__ __forceinline__ unsigned bn_off(unsigned u, unsigned c, const BnFast &f) {
  unsigned SV = f.S / f.V, n = u / SV, s = u - n * SV;
  return (n * f.C + c) * f.S + s * f.V;
}

__global__ void __launch_bounds__(BN_T2) k_bn_fwd_fast(BnFast f) {
  __shared__ double sh[2 * BN_T2 / 32];
  __shared__ double part[2];
  unsigned c = blockIdx.x / f.cl, r = blockIdx.x % f.cl;
  unsigned U = f.N * f.S / f.V, t0 = r * BN_T2 + threadIdx.x, step = f.cl * BN_T2;
  const float *x = (const float *)f.a.x;
  double mean, var;
  if (f.a.training) {
    double shift = (double)x[c * f.S], s1 = 0, s2 = 0;
    for (unsigned u = t0; u < U; u += step) {
      unsigned o = bn_off(u, c, f);
      if (f.V == 4) {
        float4 v = *(const float4 *)(x + o);
        double d0 = (double)v.x - shift, d1 = (double)v.y - shift, d2 = (double)v.z - shift, d3 = (double)v.w - shift;
        s1 += (d0 + d1) + (d2 + d3);
        s2 += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
      } else {
        double d = (double)x[o] - shift;
        s1 += d;
        s2 += d * d;
      }
    }
    bn_reduce2_t2(s1, s2, sh);
    bn_cluster_sum(s1, s2, part, f.cl);
    double M = (double)f.N * (double)f.S, d = s1 / M;
    mean = shift + d;
    var = s2 / M - d * d;
    if (var < 0) var = 0;
  } else {
    mean = (double)((const float *)f.a.rm)[c];
    var = (double)((const float *)f.a.rv)[c];
  }
  double rstd = 1.0 / sqrt(var + f.a.eps);
  float m = (float)mean, sc = (float)(rstd * (f.a.w ? (double)((const float *)f.a.w)[c] : 1.0)),
        bb = f.a.b ? ((const float *)f.a.b)[c] : 0.f;
  if (r == 0 && threadIdx.x == 0) {
    ((float *)f.a.mean)[c] = m;
    ((float *)f.a.rstd)[c] = (float)rstd;
    ((float *)f.a.var)[c] = (float)var;
  }
  float *y = (float *)f.a.y;
  for (unsigned u = t0; u < U; u += step) {
    unsigned o = bn_off(u, c, f);
    if (f.V == 4) {
      float4 v = *(const float4 *)(x + o), w;
      w.x = bn_add(bn_mul(bn_sub(v.x, m), sc), bb);
      w.y = bn_add(bn_mul(bn_sub(v.y, m), sc), bb);
      w.z = bn_add(bn_mul(bn_sub(v.z, m), sc), bb);
      w.w = bn_add(bn_mul(bn_sub(v.w, m), sc), bb);
      *(float4 *)(y + o) = bn_out4(w, f.a.res, o, f.a.relu);
    } else y[o] = bn_out(bn_add(bn_mul(bn_sub(x[o], m), sc), bb), f.a.res, o, f.a.relu);
  }
}

__device__ __forceinline__ float bn_dx(float g, float x, float m, float cg, float cx, float av, bool training) {
  return training ? bn_mul(bn_sub(bn_sub(g, cg), bn_mul(bn_sub(x, m), cx)), av) : bn_mul(g, av);
}

__global__ void __launch_bounds__(BN_T2) k_bn_bwd_fast(BnFast f) {
  __shared__ double sh[2 * BN_T2 / 32];
  __shared__ double part[2];
  unsigned c = blockIdx.x / f.cl, r = blockIdx.x % f.cl;
  unsigned U = f.N * f.S / f.V, t0 = r * BN_T2 + threadIdx.x, step = f.cl * BN_T2;
  const float *x = (const float *)f.a.x, *g = (const float *)f.a.g;
  float m = ((const float *)f.a.rm)[c], rs = ((const float *)f.a.rv)[c];
  double s1 = 0, s2 = 0, rstd = (double)rs, md = (double)m;
  bool need = f.a.mean || f.a.rstd || (f.a.y && f.a.training);
  if (need) {
    for (unsigned u = t0; u < U; u += step) {
      unsigned o = bn_off(u, c, f);
      if (f.V == 4) {
        float4 gv = bn_gmask4(*(const float4 *)(g + o), f.a.r, o), xv = *(const float4 *)(x + o);
        if (f.a.gp) *(float4 *)((float *)f.a.gp + o) = gv; /* read back below by this same thread */
        s1 += ((double)gv.x + (double)gv.y) + ((double)gv.z + (double)gv.w);
        s2 += ((double)gv.x * ((double)xv.x - md) + (double)gv.y * ((double)xv.y - md)) +
              ((double)gv.z * ((double)xv.z - md) + (double)gv.w * ((double)xv.w - md));
      } else {
        float gm = bn_gmask(g[o], f.a.r, o);
        if (f.a.gp) ((float *)f.a.gp)[o] = gm;
        double gd = (double)gm;
        s1 += gd;
        s2 += gd * ((double)x[o] - md);
      }
    }
    bn_reduce2_t2(s1, s2, sh);
    bn_cluster_sum(s1, s2, part, f.cl);
  }
  if (r == 0 && threadIdx.x == 0) {
    if (f.a.mean) ((float *)f.a.mean)[c] = (float)(s2 * rstd);
    if (f.a.rstd) ((float *)f.a.rstd)[c] = (float)s1;
  }
  if (!f.a.y) return;
  double M = (double)f.N * (double)f.S;
  float av = (float)(rstd * (f.a.w ? (double)((const float *)f.a.w)[c] : 1.0));
  float cg = (float)(s1 / M), cx = (float)(rstd * rstd * s2 / M);
  float *dx = (float *)f.a.y;
  bool tr = f.a.training;
  for (unsigned u = t0; u < U; u += step) {
    unsigned o = bn_off(u, c, f);
    if (f.V == 4) {
      float4 gv = f.a.gp ? *(const float4 *)((const float *)f.a.gp + o) : bn_gmask4(*(const float4 *)(g + o), f.a.r, o),
             xv = *(const float4 *)(x + o), w;
      w.x = bn_dx(gv.x, xv.x, m, cg, cx, av, tr);
      w.y = bn_dx(gv.y, xv.y, m, cg, cx, av, tr);
      w.z = bn_dx(gv.z, xv.z, m, cg, cx, av, tr);
      w.w = bn_dx(gv.w, xv.w, m, cg, cx, av, tr);
      *(float4 *)(dx + o) = w;
    } else dx[o] = bn_dx(f.a.gp ? ((const float *)f.a.gp)[o] : bn_gmask(g[o], f.a.r, o), x[o], m, cg, cx, av, tr);
  }
}

/* The fast path applies (float32, every index in 32 bits; CT_CUDA_BN_FAST=0 keeps the kernels
 * above): launches it, 1; else 0. Clusters: blocks per channel doubled (up to 8) while the grid has
 * under 256 blocks and each block keeps >= 4 loads per thread. */
static int64_t bn_fast_n[3]; /* launches with 4-wide loads, 1-wide, split over a cluster (tests) */
extern "C" void ct_cuda_bn_fast_counts(int64_t out[3]) {
  for (int k = 0; k < 3; k++) out[k] = __atomic_load_n(&bn_fast_n[k], __ATOMIC_RELAXED);
}
static int bn_fast_launch(const BnArgs *a, const ct_tensor *x, bool backward, int dev, ct_status *st) {
  const char *off = getenv("CT_CUDA_BN_FAST");
  if (x->dtype != CT_FLOAT32 || (off && strcmp(off, "0") == 0)) return 0;
  if (a->N <= 0 || a->S <= 0 || a->C <= 0 || ct_numel(x) >= ((int64_t)1 << 31) - 8) return 0;
  BnFast f;
  f.a = *a;
  f.C = (unsigned)a->C;
  f.S = (unsigned)a->S;
  f.N = (unsigned)a->N;
  bool al = ((uintptr_t)a->x % 16 == 0) && ((uintptr_t)a->y % 16 == 0) && (!backward || (uintptr_t)a->g % 16 == 0) &&
            (uintptr_t)a->r % 16 == 0 && (uintptr_t)a->res % 16 == 0 && (uintptr_t)a->gp % 16 == 0;
  f.V = (a->S % 4 == 0 && al) ? 4 : 1;
  unsigned U = f.N * f.S / f.V;
  f.cl = 1;
  while (f.cl < 8 && f.C * f.cl < 256 && U / (f.cl * 2) >= 4u * BN_T2) f.cl *= 2;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(f.C * f.cl);
  cfg.blockDim = dim3(BN_T2);
  cfg.stream = CU_STREAM(dev);
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = f.cl;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  cfg.attrs = at;
  cfg.numAttrs = f.cl > 1 ? 1 : 0;
  cudaError_t e = backward ? cudaLaunchKernelEx(&cfg, k_bn_bwd_fast, f) : cudaLaunchKernelEx(&cfg, k_bn_fwd_fast, f);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *st = CT_ERR(CT_ERR_RUNTIME, "%s: CUDA launch failed: %s", backward ? "native_batch_norm_backward" : "native_batch_norm",
                 cudaGetErrorString(e));
    return 1;
  }
  __atomic_add_fetch(&bn_fast_n[f.V == 4 ? 0 : 1], 1, __ATOMIC_RELAXED);
  if (f.cl > 1) __atomic_add_fetch(&bn_fast_n[2], 1, __ATOMIC_RELAXED);
  *st = ct_cuda_check_launch(backward ? "native_batch_norm_backward" : "native_batch_norm");
  return 1;
}

static const void *bn_ptr(const ct_tensor *t) {
  return t ? (const char *)t->storage->data + t->offset * (int64_t)ct_dtype_size(t->dtype) : NULL;
}

static void bn_geom(BnArgs *a, const ct_tensor *x) {
  a->N = x->shape[0];
  a->C = x->shape[1];
  a->S = a->N && a->C ? ct_numel(x) / (a->N * a->C) : 0;
}

/* ---- channels-last float32 (session 8): x [N, C, H, W] with strides (HWC, 1, WC, C), i.e. M =
 * N H W rows of C channels. Per-channel blocks would read with a stride of C floats, so: (1) a
 * partial-sums kernel over (32-channel tile, row slice) blocks whose warps read 32 adjacent
 * channels of a row (coalesced), each block's sums over its 16 row lanes added in a fixed order;
 * (2) one thread per channel adds the slices in order (deterministic, no atomics, graph-safe),
 * writes the statistics (or dweight / dbias) and the per-channel coefficients; (3) the
 * elementwise pass over the flat NHWC array, 4 channels per load where C % 4 == 0. Same double
 * sums and the same float expressions for y / dx as the kernels above. ---- */
#define BNC_TX 32
#define BNC_TY 16
struct BnCl {
  BnArgs a;
  unsigned C, M, R, V; /* R row slices, V elements per load (1 or 4) */
  double *part;        /* [R][C][2] partial sums */
  float *coef;         /* [4][C]: fwd m, scale, bias; bwd m, av, cg, cx */
  /* the running statistics' update folded into the forward finish (bn_fold_*): NULL pointers: none */
  float *rm, *rv;
  double keep, fm, fv;
  int64_t *count, inc;
};

/* Programmatic dependent launch (session 13, bn_pdl): each of the three kernels first waits for the grid
 * before it (griddepcontrol.wait: returns at once where the launch was an ordinary one) and then lets the next
 * grid start launching (launch_dependents), so the finish and apply grids are set up while the kernel before
 * them still runs; no memory is touched before the wait. */
__device__ __forceinline__ void bn_pdl_enter(void) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
}

__global__ void __launch_bounds__(BNC_TX *BNC_TY) k_bn_cl_sums(BnCl f, bool backward) {
  __shared__ double sh[2][BNC_TY][BNC_TX + 1];
  bn_pdl_enter();
  unsigned tx = threadIdx.x, ty = threadIdx.y, c = blockIdx.x * BNC_TX + tx;
  double s1 = 0, s2 = 0;
  if (c < f.C) {
    const float *x = (const float *)f.a.x;
    if (!backward) {
      double shift = (double)x[c];
#pragma unroll 4 /* several loads in flight per thread */
      for (unsigned m = blockIdx.y * BNC_TY + ty; m < f.M; m += f.R * BNC_TY) {
        double d = (double)x[(size_t)m * f.C + c] - shift;
        s1 += d;
        s2 += d * d;
      }
    } else {
      const float *g = (const float *)f.a.g;
      double md = (double)((const float *)f.a.rm)[c];
#pragma unroll 4
      for (unsigned m = blockIdx.y * BNC_TY + ty; m < f.M; m += f.R * BNC_TY) {
        size_t o = (size_t)m * f.C + c;
        float gm = bn_gmask(g[o], f.a.r, o);
        if (f.a.gp) ((float *)f.a.gp)[o] = gm; /* g' for the residual and for k_bn_cl_apply */
        double gd = (double)gm;
        s1 += gd;
        s2 += gd * ((double)x[o] - md);
      }
    }
  }
  sh[0][ty][tx] = s1;
  sh[1][ty][tx] = s2;
  __syncthreads();
  if (ty == 0 && c < f.C) {
    double a = 0, b = 0;
    for (int k = 0; k < BNC_TY; k++) a += sh[0][k][tx], b += sh[1][k][tx];
    double *p = f.part + ((size_t)blockIdx.y * f.C + c) * 2;
    p[0] = a;
    p[1] = b;
  }
}

/* one warp per channel: lane l adds the slices r = l, l + 32, ... and the lanes meet in a fixed
 * shuffle tree (a thread walking all R slices alone waited R dependent L2 loads). Lane 0 loads the
 * channel's own inputs (shift, weight, bias, running or saved statistics) before the slices are added,
 * so their latency overlaps the slices' instead of following the first store (session 16: the stores
 * to mean / rstd kept the compiler from hoisting the later loads, ~5 dependent round trips a kernel). */
__global__ void __launch_bounds__(256) k_bn_cl_finish(BnCl f, bool backward) {
  bn_pdl_enter();
  unsigned c = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (c >= f.C) return; /* whole warps leave together (c is per warp) */
  const BnArgs &a = f.a;
  bool need = !backward ? a.training : (a.mean || a.rstd || (a.y && a.training));
  float xs = 0.f, wc = 1.f, bc = 0.f, rmc = 0.f, rvc = 0.f, frm = 0.f, frv = 0.f;
  if (lane == 0) {
    if (a.w) wc = ((const float *)a.w)[c];
    if (!backward && a.training) xs = ((const float *)a.x)[c];
    if (backward || !a.training) rmc = ((const float *)a.rm)[c], rvc = ((const float *)a.rv)[c];
    if (!backward) {
      if (a.b) bc = ((const float *)a.b)[c];
      if (f.rm) frm = f.rm[c];
      if (f.rv) frv = f.rv[c];
    }
  }
  double s1 = 0, s2 = 0;
  if (need) {
#pragma unroll 4 /* the slices' loads in flight together; the adds keep their order */
    for (unsigned r = lane; r < f.R; r += 32) {
      double2 p = *(const double2 *)(f.part + ((size_t)r * f.C + c) * 2);
      s1 += p.x;
      s2 += p.y;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      s1 += __shfl_xor_sync(0xffffffffu, s1, o);
      s2 += __shfl_xor_sync(0xffffffffu, s2, o);
    }
  }
  if (lane) return;
  double M = (double)f.M, wd = a.w ? (double)wc : 1.0;
  float *k = f.coef;
  if (!backward) {
    double mean, var;
    if (a.training) {
      double shift = (double)xs, d = s1 / M;
      mean = shift + d;
      var = s2 / M - d * d;
      if (var < 0) var = 0;
    } else {
      mean = (double)rmc;
      var = (double)rvc;
    }
    double rstd = 1.0 / sqrt(var + a.eps);
    float m = (float)mean;
    ((float *)a.mean)[c] = m;
    ((float *)a.rstd)[c] = (float)rstd;
    ((float *)a.var)[c] = (float)var;
    k[c] = m;
    k[f.C + c] = (float)(rstd * wd);
    k[2 * f.C + c] = bc;
    /* k_bn_running's expression on the same float statistics: the same bits, no node of its own */
    if (f.rm) f.rm[c] = bn_add(bn_mul(frm, (float)f.keep), bn_mul(m, (float)f.fm));
    if (f.rv) f.rv[c] = bn_add(bn_mul(frv, (float)f.keep), bn_mul((float)var, (float)f.fv));
    if (c == 0 && f.count) *f.count += f.inc;
  } else {
    double rstd = (double)rvc;
    if (a.mean) ((float *)a.mean)[c] = (float)(s2 * rstd);
    if (a.rstd) ((float *)a.rstd)[c] = (float)s1;
    k[c] = rmc;
    k[f.C + c] = (float)(rstd * wd);
    k[2 * f.C + c] = (float)(s1 / M);
    k[3 * f.C + c] = (float)(rstd * rstd * s2 / M);
  }
}

__global__ void __launch_bounds__(256) k_bn_cl_apply(BnCl f, bool backward) {
  bn_pdl_enter();
  size_t U = (size_t)f.M * f.C / f.V;
  const float *x = (const float *)f.a.x, *g = (const float *)f.a.g, *k = f.coef;
  float *y = (float *)f.a.y;
  unsigned C = f.C;
  bool tr = f.a.training;
  for (size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x; u < U; u += (size_t)gridDim.x * blockDim.x) {
    size_t o = u * f.V;
    unsigned c = (unsigned)(o % C);
    if (f.V == 4) {
      float4 xv = *(const float4 *)(x + o), w;
      float4 m = *(const float4 *)(k + c), s = *(const float4 *)(k + C + c), b = *(const float4 *)(k + 2 * C + c);
      if (!backward) {
        w.x = bn_add(bn_mul(bn_sub(xv.x, m.x), s.x), b.x);
        w.y = bn_add(bn_mul(bn_sub(xv.y, m.y), s.y), b.y);
        w.z = bn_add(bn_mul(bn_sub(xv.z, m.z), s.z), b.z);
        w.w = bn_add(bn_mul(bn_sub(xv.w, m.w), s.w), b.w);
        w = bn_out4(w, f.a.res, o, f.a.relu);
      } else {
        float4 gv = bn_gmask4(*(const float4 *)(g + o), f.a.r, o), cx = *(const float4 *)(k + 3 * C + c);
        w.x = bn_dx(gv.x, xv.x, m.x, b.x, cx.x, s.x, tr);
        w.y = bn_dx(gv.y, xv.y, m.y, b.y, cx.y, s.y, tr);
        w.z = bn_dx(gv.z, xv.z, m.z, b.z, cx.z, s.z, tr);
        w.w = bn_dx(gv.w, xv.w, m.w, b.w, cx.w, s.w, tr);
      }
      *(float4 *)(y + o) = w;
    } else if (!backward) y[o] = bn_out(bn_add(bn_mul(bn_sub(x[o], k[c]), k[C + c]), k[2 * C + c]), f.a.res, o, f.a.relu);
    else y[o] = bn_dx(bn_gmask(g[o], f.a.r, o), x[o], k[c], k[2 * C + c], k[3 * C + c], k[C + c], tr);
  }
}

/* ---- BatchNorm's running statistics folded into the channels-last forward (training): src/nn/layers.c
 * registers the module's running tensors and momentum (ct_cuda_bn_running_defer) around ct_batch_norm; the
 * finish kernel then updates them with k_bn_running's roundings, and the ct_cuda_bn_update_running call
 * that src/ops/nn.c makes next finds the update done (the same tensors, statistics, momentum and factor)
 * and launches nothing: one graph node less per layer. One registration at a time, owned by the thread
 * that made it, consumed by the first launch that uses it. CT_CUDA_BN_RUNNING_FOLD=0: k_bn_running as
 * before (also with CT_CUDA_BN_RUNNING=0, the composed update). ---- */
static struct {
  ct_tensor *rm, *rv; /* registered (NULL, NULL: none) */
  double momentum;
  pthread_t owner;
  bool done; /* the update made by a launch: for these tensors, outputs and factors */
  const void *d_rm, *d_rv, *d_mean, *d_var;
  double d_momentum, d_factor;
} bn_fold;
static pthread_mutex_t bn_fold_mu = PTHREAD_MUTEX_INITIALIZER;
static bool bn_fold_enabled(void) {
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("CT_CUDA_BN_RUNNING_FOLD"), *r = getenv("CT_CUDA_BN_RUNNING");
    on = !(e && *e == '0') && !(r && strcmp(r, "0") == 0);
  }
  return on != 0;
}
/* rm / rv: the module's running statistics (either NULL), momentum as passed to ct_batch_norm; both NULL:
 * clear the registration (and a done record nobody consumed). 1 registered, 0 not (the caller changes
 * nothing either way: the update then happens in ct_cuda_bn_update_running as before). */
extern "C" int ct_cuda_bn_running_defer(ct_tensor *rm, ct_tensor *rv, double momentum) {
  pthread_mutex_lock(&bn_fold_mu);
  int r = 0;
  bool mine = pthread_equal(bn_fold.owner, pthread_self());
  if (!rm && !rv) {
    if (mine) bn_fold.rm = bn_fold.rv = NULL, bn_fold.done = false;
  } else if (bn_fold_enabled() && ((!bn_fold.rm && !bn_fold.rv && !bn_fold.done) || mine)) {
    bn_fold.rm = rm;
    bn_fold.rv = rv;
    bn_fold.momentum = momentum;
    bn_fold.owner = pthread_self();
    bn_fold.done = false;
    r = 1;
  }
  pthread_mutex_unlock(&bn_fold_mu);
  return r;
}
static bool bn_fold_ok(const ct_tensor *t, int64_t C, int dev) {
  return !t || (t->dtype == CT_FLOAT32 && t->storage->device.type == CT_DEVICE_CUDA && t->storage->device.index == dev &&
                ct_is_contiguous(t) && ct_numel(t) == C);
}
static ct_tensor *bn_count_mine(int64_t *inc, bool clear);
/* Fills f's fold fields from this thread's registration where it applies to this forward (training,
 * float32 [C] tensors on the device, not aliasing each other or the outputs) and records what it will do. */
static void bn_fold_take(BnCl *f, int dev, const void *mean_out, const void *var_out, const void *y_out) {
  pthread_mutex_lock(&bn_fold_mu);
  ct_tensor *rm = bn_fold.rm, *rv = bn_fold.rv;
  bool ok = (rm || rv) && !bn_fold.done && pthread_equal(bn_fold.owner, pthread_self()) &&
            bn_fold_ok(rm, f->C, dev) && bn_fold_ok(rv, f->C, dev) && !(rm && rv && ct_shares_storage(rm, rv));
  const void *prm = rm ? bn_ptr(rm) : NULL, *prv = rv ? bn_ptr(rv) : NULL;
  ok = ok && prm != mean_out && prm != var_out && prm != y_out && prv != mean_out && prv != var_out && prv != y_out;
  if (ok) {
    double mom = bn_fold.momentum, factor = f->M > 1 ? (double)f->M / (double)(f->M - 1) : INFINITY;
    f->rm = (float *)prm;
    f->rv = (float *)prv;
    f->keep = 1.0 - mom; /* the values ct_cuda_bn_update_running would pass to k_bn_running */
    f->fm = mom * 1.0;
    f->fv = mom * factor;
    int64_t inc = 0;
    ct_tensor *cnt = bn_count_mine(&inc, false);
    if (cnt && cnt->storage->device.index == dev && !ct_shares_storage(cnt, rm ? rm : rv)) {
      f->count = (int64_t *)bn_ptr(cnt);
      f->inc = inc;
    }
    bn_fold.done = true;
    bn_fold.d_rm = prm, bn_fold.d_rv = prv, bn_fold.d_mean = mean_out, bn_fold.d_var = var_out;
    bn_fold.d_momentum = mom, bn_fold.d_factor = factor;
    bn_fold.rm = bn_fold.rv = NULL;
  }
  pthread_mutex_unlock(&bn_fold_mu);
}

static int64_t bn_cl_n; /* channels-last launches (tests) */
/* launches with the residual fused (forward: res read; backward: g' written), channels-last and NCHW (tests) */
static int64_t bn_add_n[2];
extern "C" void ct_cuda_bn_add_relu_counts(int64_t out[2]) {
  for (int k = 0; k < 2; k++) out[k] = __atomic_load_n(&bn_add_n[k], __ATOMIC_RELAXED);
}
/* CT_CUDA_BN_PDL (read at each call): 1 the finish and apply kernels launched as programmatic dependents of the
 * kernel before them (sums -> finish -> apply, all three of this file); 2 (the default since session 13b) also the
 * sums kernel (after whatever came before: a cuDNN convolution, an elementwise kernel; where that is not a kernel,
 * an event wait or a memset, the edge is an ordinary one); 0 ordinary launches. griddepcontrol.wait returns only
 * once every prerequisite grid has completed and its memory is visible, so no predecessor's early trigger can let
 * the sums kernel read an unfinished result. */
static int64_t bn_pdl_n; /* launches with the attribute (tests) */
extern "C" int64_t ct_cuda_bn_pdl_count(void) { return __atomic_load_n(&bn_pdl_n, __ATOMIC_RELAXED); }
static int bn_pdl_mode(void) {
  const char *e = getenv("CT_CUDA_BN_PDL");
  return e && *e ? atoi(e) : 2; /* 2 since session 13b: 0.008-0.010 ms faster in three H200 calls */
}
static void bn_launch(void (*k)(BnCl, bool), dim3 grid, dim3 block, cudaStream_t s, bool pdl, const BnCl &f, bool backward) {
  if (!pdl) {
    k<<<grid, block, 0, s>>>(f, backward);
    return;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.stream = s;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  if (cudaLaunchKernelEx(&cfg, k, f, backward) == cudaSuccess) __atomic_add_fetch(&bn_pdl_n, 1, __ATOMIC_RELAXED);
  else { /* refused (a driver without it): an ordinary launch */
    (void)cudaGetLastError();
    k<<<grid, block, 0, s>>>(f, backward);
  }
}
static int64_t bn_fold_n; /* running-statistics updates folded into a finish kernel (tests) */
extern "C" int64_t ct_cuda_bn_fold_count(void) { return __atomic_load_n(&bn_fold_n, __ATOMIC_RELAXED); }
extern "C" int64_t ct_cuda_bn_cl_count(void) { return __atomic_load_n(&bn_cl_n, __ATOMIC_RELAXED); }

/* The three kernels for a channels-last float32 x (and g): CT_OK or the error. */
static ct_status bn_cl_run(const BnArgs *a, bool backward, int dev, const char *name) {
  BnCl f;
  memset(&f, 0, sizeof f);
  f.a = *a;
  f.C = (unsigned)a->C;
  f.M = (unsigned)(a->N * a->S);
  bool al = (uintptr_t)a->x % 16 == 0 && (!a->y || (uintptr_t)a->y % 16 == 0) && (!backward || (uintptr_t)a->g % 16 == 0) &&
            (uintptr_t)a->r % 16 == 0 && (uintptr_t)a->res % 16 == 0 && (uintptr_t)a->gp % 16 == 0;
  f.V = f.C % 4 == 0 && al ? 4 : 1;
  unsigned tiles = (f.C + BNC_TX - 1) / BNC_TX, rmax = (f.M + 4 * BNC_TY - 1) / (4 * BNC_TY); /* >= 4 rows a lane */
  f.R = (264 + tiles - 1) / tiles;
  if (f.R > rmax) f.R = rmax;
  if (f.R < 1) f.R = 1;
  bool sums = backward ? (a->mean || a->rstd || (a->y && a->training)) : a->training;
  if (a->gp && !sums) /* src/ops/nn.c forms g' by the ReLU's gradient op instead */
    return CT_ERR(CT_ERR_RUNTIME, "%s: g' is written by the sums pass, which this call does not run", name);
  size_t pbytes = sums ? (size_t)f.R * f.C * 2 * sizeof(double) : 0, kbytes = (size_t)4 * f.C * sizeof(float);
  size_t bytes = pbytes + kbytes;
  char *ws = (char *)ct_cuda_tmp_alloc(dev, bytes);
  if (!ws) return ct_last_status();
  f.part = (double *)ws;
  f.coef = (float *)(ws + pbytes);
  if (!backward && a->training && a->mean && a->var) bn_fold_take(&f, dev, a->mean, a->var, a->y);
  cudaStream_t s = CU_STREAM(dev);
  int pdl = bn_pdl_mode();
  if (sums) bn_launch(k_bn_cl_sums, dim3(tiles, f.R), dim3(BNC_TX, BNC_TY), s, pdl >= 2, f, backward);
  bn_launch(k_bn_cl_finish, dim3((f.C + 7) / 8), dim3(256), s, pdl >= 1 && sums, f, backward);
  if (a->y && f.M) {
    size_t U = (size_t)f.M * f.C / f.V, blocks = (U + 255) / 256;
    BnCl fa = f;
    if (backward && a->gp) { /* dx from g', which the sums kernel wrote (masked already) */
      fa.a.g = a->gp;
      fa.a.r = NULL;
      fa.a.gp = NULL;
    }
    bn_launch(k_bn_cl_apply, dim3((unsigned)(blocks < 8192 ? blocks : 8192)), dim3(256), s, pdl >= 1, fa, backward);
  }
  if (a->res || a->gp) __atomic_add_fetch(&bn_add_n[backward ? 1 : 0], 1, __ATOMIC_RELAXED);
  ct_cuda_tmp_free(dev, ws, bytes);
  __atomic_add_fetch(&bn_cl_n, 1, __ATOMIC_RELAXED);
  if (f.rm || f.rv) {
    __atomic_add_fetch(&bn_fold_n, 1, __ATOMIC_RELAXED);
    if (f.count) bn_count_mine(NULL, true); /* added by the kernel: bn_count_finish only bumps the version */
  }
  return ct_cuda_check_launch(name);
}

/* x (and g) channels-last float32 with per-channel tensors as the contiguous path wants them:
 * 1 (handled, *st set), 0 (not this layout). */
static int bn_cl_call(const ct_call *c, bool backward, ct_status *st) {
  const ct_tensor *x = c->in[backward ? 1 : 0], *g = backward ? c->in[0] : NULL;
  if (!ct_suggests_channels_last(x)) return 0;
  const char *name = backward ? "native_batch_norm_backward" : "native_batch_norm";
  const ct_tensor *rr = backward && c->n_in > 5 ? c->in[5] : NULL; /* the fused ReLU's saved output */
  /* k4: the forward's residual (in[5]), the backward's g' (out[3]) */
  bool add = c->a.k[4] != 0;
  const ct_tensor *res = add && !backward && c->n_in > 5 ? c->in[5] : NULL, *gp = add && backward && c->n_out > 3 ? c->out[3] : NULL;
  bool ok = x->dtype == CT_FLOAT32 && ct_numel(x) < ((int64_t)1 << 31) - 8 && (!g || ct_dense_same_layout(g, x)) &&
            (!rr || (rr->dtype == x->dtype && ct_dense_same_layout(rr, x)));
  if (add) {
    const ct_tensor *t = backward ? gp : res;
    ok = ok && t && t->dtype == x->dtype && ct_dense_same_layout(t, x) && c->a.k[3] && (!backward || rr);
  }
  for (int k = backward ? 2 : 1; ok && k <= 4; k++) {
    const ct_tensor *t = c->in[k];
    ok = !t || (t->dtype == x->dtype && ct_is_contiguous(t) && ct_numel(t) == x->shape[1]);
  }
  if (ok && c->out[0]) ok = ct_dense_same_layout(c->out[0], x);
  for (int j = 1; ok && j < c->n_out && j < (backward ? 3 : 4); j++) ok = !c->out[j] || ct_is_contiguous(c->out[j]);
  if (!ok) {
    *st = CT_ERR(CT_ERR_RUNTIME, "%s: a channels-last input needs float32, its gradient, output, residual and g' in its "
                 "layout and contiguous per-channel tensors", name);
    return 1;
  }
  BnArgs a;
  memset(&a, 0, sizeof a);
  bn_geom(&a, x);
  a.training = c->a.k[0] != 0;
  if (!backward) {
    a.eps = c->a.f[0];
    if (!a.training && (!c->in[3] || !c->in[4])) {
      *st = CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: running_mean and running_var must be defined in evaluation mode");
      return 1;
    }
  } else if (!c->in[3] || !c->in[4]) {
    *st = CT_ERR(CT_ERR_RUNTIME, "native_batch_norm_backward: expected the saved statistics");
    return 1;
  }
  if (a.training && a.N * a.S == 0) {
    *st = CT_ERR(CT_ERR_RUNTIME, "%s: no values per channel", name);
    return 1;
  }
  if (a.C == 0) {
    *st = CT_OK;
    return 1;
  }
  int dev = x->storage->device.index; /* x's: the backward's out[0] (dx) may be absent */
  if ((*st = ct_cuda_use(dev)) != CT_OK) return 1;
  if (!backward) {
    a.x = bn_ptr(x);
    a.w = bn_ptr(c->in[1]);
    a.b = bn_ptr(c->in[2]);
    a.rm = bn_ptr(c->in[3]);
    a.rv = bn_ptr(c->in[4]);
    a.y = (void *)bn_ptr(c->out[0]);
    a.mean = (void *)bn_ptr(c->out[1]);
    a.rstd = (void *)bn_ptr(c->out[2]);
    a.var = (void *)bn_ptr(c->out[3]);
  } else {
    a.g = bn_ptr(g);
    a.x = bn_ptr(x);
    a.w = bn_ptr(c->in[2]);
    a.rm = bn_ptr(c->in[3]);
    a.rv = bn_ptr(c->in[4]);
    a.y = c->out[0] ? (void *)bn_ptr(c->out[0]) : NULL;
    a.mean = c->out[1] ? (void *)bn_ptr(c->out[1]) : NULL;
    a.rstd = c->out[2] ? (void *)bn_ptr(c->out[2]) : NULL;
  }
  a.relu = !backward && c->a.k[3] != 0;
  a.r = rr ? bn_ptr(rr) : NULL;
  a.res = res ? bn_ptr(res) : NULL;
  a.gp = gp ? (void *)bn_ptr(gp) : NULL;
  *st = bn_cl_run(&a, backward, dev, name);
  return 1;
}

/* in x, weight?, bias?, running_mean?, running_var? (eval) -> y, mean, rstd, var; k0 training, f0 eps */
static ct_status cu_native_batch_norm(const ct_call *c) {
  const ct_tensor *x = c->in[0];
  ct_status cst;
  if (bn_cl_call(c, false, &cst)) return cst;
  CT_TRY(ct_bn_layout_check(c, x, 1, 4));
  BnArgs a;
  memset(&a, 0, sizeof a);
  bn_geom(&a, x);
  a.training = c->a.k[0] != 0;
  a.eps = c->a.f[0];
  if (!a.training && (!c->in[3] || !c->in[4]))
    return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: running_mean and running_var must be defined in evaluation mode");
  if (a.training && a.N * a.S == 0) return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: no values per channel");
  if (a.C == 0) return CT_OK;
  if (a.C > 0x7fffffff) return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: too many channels for one launch");
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  a.x = bn_ptr(x);
  a.w = bn_ptr(c->in[1]);
  a.b = bn_ptr(c->in[2]);
  a.rm = bn_ptr(c->in[3]);
  a.rv = bn_ptr(c->in[4]);
  a.y = (void *)bn_ptr(c->out[0]);
  a.mean = (void *)bn_ptr(c->out[1]);
  a.rstd = (void *)bn_ptr(c->out[2]);
  a.var = (void *)bn_ptr(c->out[3]);
  a.relu = c->a.k[3] != 0;
  if (c->a.k[4]) { /* the residual added before the ReLU */
    const ct_tensor *res = c->n_in > 5 ? c->in[5] : NULL;
    if (!a.relu || !res || res->dtype != x->dtype || !ct_is_contiguous(res) || ct_numel(res) != ct_numel(x))
      return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm: expected the residual contiguous like the input, with a ReLU");
    a.res = bn_ptr(res);
    __atomic_add_fetch(&bn_add_n[0], 1, __ATOMIC_RELAXED);
  }
  ct_status fst = CT_OK;
  if (bn_fast_launch(&a, x, false, dev, &fst)) return fst;
  if (x->dtype == CT_FLOAT64) k_bn_fwd<double><<<(unsigned)a.C, BN_T, 0, CU_STREAM(dev)>>>(a);
  else k_bn_fwd<float><<<(unsigned)a.C, BN_T, 0, CU_STREAM(dev)>>>(a);
  return ct_cuda_check_launch("native_batch_norm");
}

/* in g, x, weight?, mean, rstd -> dx?, dweight?, dbias?; k0 training */
static ct_status cu_native_batch_norm_backward(const ct_call *c) {
  const ct_tensor *x = c->in[1];
  ct_status cst;
  if (bn_cl_call(c, true, &cst)) return cst;
  CT_TRY(ct_bn_layout_check(c, x, 2, 4));
  if (!c->in[3] || !c->in[4] || !ct_is_contiguous(c->in[0]) || c->in[0]->dtype != x->dtype ||
      ct_numel(c->in[0]) != ct_numel(x))
    return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm_backward: expected a contiguous gradient and the saved statistics");
  BnArgs a;
  memset(&a, 0, sizeof a);
  bn_geom(&a, x);
  a.training = c->a.k[0] != 0;
  if (a.training && a.N * a.S == 0)
    return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm_backward: no values per channel");
  if (a.C == 0) return CT_OK;
  if (a.C > 0x7fffffff) return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm_backward: too many channels for one launch");
  int dev = x->storage->device.index; /* x's: the backward's out[0] (dx) may be absent */
  CT_TRY(ct_cuda_use(dev));
  a.g = bn_ptr(c->in[0]);
  a.x = bn_ptr(x);
  a.w = bn_ptr(c->in[2]);
  a.rm = bn_ptr(c->in[3]);
  a.rv = bn_ptr(c->in[4]);
  a.y = c->out[0] ? (void *)bn_ptr(c->out[0]) : NULL;
  a.mean = c->out[1] ? (void *)bn_ptr(c->out[1]) : NULL;
  a.rstd = c->out[2] ? (void *)bn_ptr(c->out[2]) : NULL;
  if (c->n_in > 5 && c->in[5]) {
    const ct_tensor *r = c->in[5];
    if (r->dtype != x->dtype || !ct_is_contiguous(r) || ct_numel(r) != ct_numel(x))
      return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm_backward: expected the fused ReLU's output like the input");
    a.r = bn_ptr(r);
  }
  if (c->a.k[4]) { /* g' out: written by the sums pass, which must run */
    const ct_tensor *gp = c->n_out > 3 ? c->out[3] : NULL;
    if (!a.r || !gp || gp->dtype != x->dtype || !ct_is_contiguous(gp) || ct_numel(gp) != ct_numel(x) ||
        !(a.mean || a.rstd || (a.y && a.training)))
      return CT_ERR(CT_ERR_RUNTIME, "native_batch_norm_backward: expected g' contiguous like the input and a pass "
                                    "over the gradient (the residual's ReLU)");
    a.gp = (void *)bn_ptr(gp);
    __atomic_add_fetch(&bn_add_n[1], 1, __ATOMIC_RELAXED);
  }
  ct_status fst = CT_OK;
  if (bn_fast_launch(&a, x, true, dev, &fst)) return fst;
  if (x->dtype == CT_FLOAT64) k_bn_bwd<double><<<(unsigned)a.C, BN_T, 0, CU_STREAM(dev)>>>(a);
  else k_bn_bwd<float><<<(unsigned)a.C, BN_T, 0, CU_STREAM(dev)>>>(a);
  return ct_cuda_check_launch("native_batch_norm_backward");
}

/* ---- running statistics: running = running (1 - momentum) + stat (momentum factor) for the
 * mean and the variance in ONE launch (the composed update in src/ops/nn.c update_running is
 * four ops per statistic, eight graph nodes per batch norm). The same roundings as the composed
 * ops: both scalars rounded to the dtype first (the CPU converts the wrapped scalar to the
 * tensor's dtype), then r = run*s1, s = stat*s2, r + s, each rounded once (_rn, no FMA). ---- */
struct BnRun {
  void *rm, *rv;
  const void *m, *v;
  double keep, fm, fv; /* 1 - momentum, momentum * 1, momentum * factor */
  int64_t C;
  int64_t *count, inc; /* BatchNorm's num_batches_tracked += inc (bn_count_*), NULL: none */
};
template <typename T> __global__ void __launch_bounds__(BN_T) k_bn_running(BnRun a) {
  int64_t k = blockIdx.x * (int64_t)BN_T + threadIdx.x;
  if (k == 0 && a.count) *a.count += a.inc;
  if (k >= a.C) return;
  T keep = (T)a.keep;
  if (a.rm) {
    T *r = (T *)a.rm;
    r[k] = bn_add(bn_mul(r[k], keep), bn_mul(((const T *)a.m)[k], (T)a.fm));
  }
  if (a.rv) {
    T *r = (T *)a.rv;
    r[k] = bn_add(bn_mul(r[k], keep), bn_mul(((const T *)a.v)[k], (T)a.fv));
  }
}

static bool bn_run_ok(const ct_tensor *r, const ct_tensor *s, int dev) {
  return r && s && r->storage->device.type == CT_DEVICE_CUDA && r->storage->device.index == dev &&
         s->storage->device.type == CT_DEVICE_CUDA && s->storage->device.index == dev && r->dtype == s->dtype &&
         (r->dtype == CT_FLOAT32 || r->dtype == CT_FLOAT64) && ct_is_contiguous(r) && ct_is_contiguous(s) &&
         ct_numel(r) == ct_numel(s) && !ct_shares_storage(r, s);
}

/* ---- BatchNorm's num_batches_tracked += 1 on the device (src/nn/layers.c). The generic in-place
 * add of a scalar is two graph nodes per layer (the scalar's upload, the iterator's add); here the
 * increment is a kernel argument: layers.c marks the counter pending (bn_count_defer) before
 * ct_batch_norm, the running-statistics kernel above adds it in its first thread (no node of its
 * own), and bn_count_finish launches a one-thread kernel only when that kernel did not run (eval
 * statistics absent, the composed update). Replays of a graph advance the count each time: the
 * add reads and writes device memory. One pending counter at a time, owned by the thread that
 * deferred it (a second thread meanwhile takes the caller's add); a mutex, not thread-local
 * storage: __thread in this object made LeakSanitizer's tracer crash in the ASan build. ---- */
static pthread_mutex_t bn_count_mu = PTHREAD_MUTEX_INITIALIZER;
static ct_tensor *bn_count_pending; /* guarded by bn_count_mu, as the two below */
static pthread_t bn_count_owner;
static int64_t bn_count_inc;

/* The pending counter if this thread deferred it (and its increment), else NULL; clear: forget it. */
static ct_tensor *bn_count_mine(int64_t *inc, bool clear) {
  pthread_mutex_lock(&bn_count_mu);
  ct_tensor *t = bn_count_pending && pthread_equal(bn_count_owner, pthread_self()) ? bn_count_pending : NULL;
  if (inc) *inc = bn_count_inc;
  if (t && clear) bn_count_pending = NULL;
  pthread_mutex_unlock(&bn_count_mu);
  return t;
}

__global__ void k_bn_count(int64_t *count, int64_t inc) { *count += inc; }

static bool bn_count_ok(const ct_tensor *t) {
  return t && t->storage->device.type == CT_DEVICE_CUDA && t->dtype == CT_INT64 && ct_numel(t) == 1;
}
/* 1: pending (call bn_count_finish after the batch norm), 0: not a CUDA int64 counter (the
 * caller adds on its own) */
extern "C" int ct_cuda_bn_count_defer(ct_tensor *count, int64_t inc) {
  if (!bn_count_ok(count)) return 0;
  pthread_mutex_lock(&bn_count_mu);
  bool free_slot = bn_count_pending == NULL;
  if (free_slot) {
    bn_count_pending = count;
    bn_count_owner = pthread_self();
    bn_count_inc = inc;
  }
  pthread_mutex_unlock(&bn_count_mu);
  return free_slot ? 1 : 0;
}
/* The increment done (by the running-statistics kernel or here): CT_OK, else the error. */
extern "C" ct_status ct_cuda_bn_count_finish(ct_tensor *count) {
  int64_t inc = 0;
  bool todo = bn_count_mine(&inc, true) == count;
  if (!bn_count_ok(count)) return CT_ERR(CT_ERR_RUNTIME, "batch_norm: num_batches_tracked is not a CUDA int64 scalar");
  if (todo) {
    int dev = count->storage->device.index;
    CT_TRY(ct_cuda_use(dev));
    k_bn_count<<<1, 1, 0, CU_STREAM(dev)>>>((int64_t *)bn_ptr(count), inc);
    CT_TRY(ct_cuda_check_launch("batch_norm num_batches_tracked"));
  }
  ct_bump_version(count);
  return CT_OK;
}

/* Both running statistics (either may be NULL) in one kernel: 1 done, 0 not applicable here
 * (the caller composes the update), -1 failed (the error is set). */
extern "C" int ct_cuda_bn_update_running(ct_tensor *rm, const ct_tensor *mean, ct_tensor *rv, const ct_tensor *var,
                                         double momentum, double factor) {
  const ct_tensor *any = rm ? rm : rv;
  const char *off = getenv("CT_CUDA_BN_RUNNING"); /* "0": the composed update (tests compare both) */
  if (!any || (off && strcmp(off, "0") == 0)) return 0;
  /* done already by the forward's finish kernel (bn_fold_take) for exactly these tensors and statistics */
  pthread_mutex_lock(&bn_fold_mu);
  int folded = 0;
  if (bn_fold.done && pthread_equal(bn_fold.owner, pthread_self()) && bn_fold.d_rm == (rm ? bn_ptr(rm) : NULL) &&
      bn_fold.d_rv == (rv ? bn_ptr(rv) : NULL) && bn_fold.d_mean == (mean ? bn_ptr(mean) : NULL) &&
      bn_fold.d_var == (var ? bn_ptr(var) : NULL)) {
    bn_fold.done = false;
    folded = bn_fold.d_momentum == momentum && (bn_fold.d_factor == factor || (rv == NULL)) ? 1 : -1;
  }
  pthread_mutex_unlock(&bn_fold_mu);
  if (folded < 0) { /* never expected: the kernel used other factors than the caller's */
    ct_set_error(CT_ERR_RUNTIME, "batch_norm: the folded running-statistics update used another momentum or factor");
    return -1;
  }
  if (folded) {
    if (rm) ct_bump_version(rm);
    if (rv) ct_bump_version(rv);
    return 1;
  }
  int dev = any->storage->device.index;
  if ((rm && !bn_run_ok(rm, mean, dev)) || (rv && !bn_run_ok(rv, var, dev))) return 0;
  if (rm && rv && (rm->dtype != rv->dtype || ct_numel(rm) != ct_numel(rv) || ct_shares_storage(rm, rv))) return 0;
  BnRun a;
  a.count = NULL;
  a.inc = 0;
  int64_t cinc = 0;
  ct_tensor *cnt = bn_count_mine(&cinc, false);
  if (cnt && cnt->storage->device.index == dev && !ct_shares_storage(cnt, any)) {
    a.count = (int64_t *)bn_ptr(cnt);
    a.inc = cinc;
  }
  a.rm = rm ? (void *)bn_ptr(rm) : NULL;
  a.rv = rv ? (void *)bn_ptr(rv) : NULL;
  a.m = rm ? bn_ptr(mean) : NULL;
  a.v = rv ? bn_ptr(var) : NULL;
  a.keep = 1.0 - momentum;
  a.fm = momentum * 1.0;
  a.fv = momentum * factor;
  a.C = ct_numel(any);
  if (a.C > 0) {
    if (ct_cuda_use(dev) != CT_OK) return -1;
    unsigned blocks = (unsigned)((a.C + BN_T - 1) / BN_T);
    if (any->dtype == CT_FLOAT64) k_bn_running<double><<<blocks, BN_T, 0, CU_STREAM(dev)>>>(a);
    else k_bn_running<float><<<blocks, BN_T, 0, CU_STREAM(dev)>>>(a);
    if (ct_cuda_check_launch("batch_norm running statistics") != CT_OK) return -1;
    if (a.count) bn_count_mine(NULL, true); /* added by the kernel: bn_count_finish only bumps the version */
  }
  if (rm) ct_bump_version(rm);
  if (rv) ct_bump_version(rv);
  return 1;
}

extern "C" void ct_cuda_register_bn(ct_kernel_fn *tab) {
  tab[CT_OP_native_batch_norm] = cu_native_batch_norm;
  tab[CT_OP_native_batch_norm_backward] = cu_native_batch_norm_backward;
}
