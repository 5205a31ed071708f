/* Fused batch_norm on CUDA: the ops native_batch_norm / native_batch_norm_backward with the
 * CPU kernels' contract (src/backend/cpu/kernels_bn.c: x contiguous [N, C, S], per-channel
 * tensors contiguous [C], float32 / float64). One block per channel: the statistics (or the
 * backward's sum(g), sum(g (x - mean))) in double over a fixed thread layout and tree (results
 * do not depend on scheduling), then the elementwise pass in the dtype with the CPU's
 * expressions (no FMA contraction: _rn intrinsics for float32). One launch per layer and
 * direction instead of the composed path's ~10 (ResNet's step is launch-bound). */
#include "cu_common.cuh"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BN_T 256

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
};

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
    y[o] = bn_add(bn_mul(bn_sub(x[o], m), sc), bb);
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
      double gv = (double)g[o];
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
    dx[o] = a.training ? bn_mul(bn_sub(bn_sub(g[o], cg), bn_mul(bn_sub(x[o], m), cx)), av) : bn_mul(g[o], av);
  }
}

static const void *bn_ptr(const ct_tensor *t) {
  return t ? (const char *)t->storage->data + t->offset * (int64_t)ct_dtype_size(t->dtype) : NULL;
}

static void bn_geom(BnArgs *a, const ct_tensor *x) {
  a->N = x->shape[0];
  a->C = x->shape[1];
  a->S = a->N && a->C ? ct_numel(x) / (a->N * a->C) : 0;
}

/* in x, weight?, bias?, running_mean?, running_var? (eval) -> y, mean, rstd, var; k0 training, f0 eps */
static ct_status cu_native_batch_norm(const ct_call *c) {
  const ct_tensor *x = c->in[0];
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
  if (x->dtype == CT_FLOAT64) k_bn_fwd<double><<<(unsigned)a.C, BN_T, 0, CU_STREAM(dev)>>>(a);
  else k_bn_fwd<float><<<(unsigned)a.C, BN_T, 0, CU_STREAM(dev)>>>(a);
  return ct_cuda_check_launch("native_batch_norm");
}

/* in g, x, weight?, mean, rstd -> dx?, dweight?, dbias?; k0 training */
static ct_status cu_native_batch_norm_backward(const ct_call *c) {
  const ct_tensor *x = c->in[1];
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
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  a.g = bn_ptr(c->in[0]);
  a.x = bn_ptr(x);
  a.w = bn_ptr(c->in[2]);
  a.rm = bn_ptr(c->in[3]);
  a.rv = bn_ptr(c->in[4]);
  a.y = c->out[0] ? (void *)bn_ptr(c->out[0]) : NULL;
  a.mean = c->out[1] ? (void *)bn_ptr(c->out[1]) : NULL;
  a.rstd = c->out[2] ? (void *)bn_ptr(c->out[2]) : NULL;
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
};
template <typename T> __global__ void __launch_bounds__(BN_T) k_bn_running(BnRun a) {
  int64_t k = blockIdx.x * (int64_t)BN_T + threadIdx.x;
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

/* Both running statistics (either may be NULL) in one kernel: 1 done, 0 not applicable here
 * (the caller composes the update), -1 failed (the error is set). */
extern "C" int ct_cuda_bn_update_running(ct_tensor *rm, const ct_tensor *mean, ct_tensor *rv, const ct_tensor *var,
                                         double momentum, double factor) {
  const ct_tensor *any = rm ? rm : rv;
  const char *off = getenv("CT_CUDA_BN_RUNNING"); /* "0": the composed update (tests compare both) */
  if (!any || (off && strcmp(off, "0") == 0)) return 0;
  int dev = any->storage->device.index;
  if ((rm && !bn_run_ok(rm, mean, dev)) || (rv && !bn_run_ok(rv, var, dev))) return 0;
  if (rm && rv && (rm->dtype != rv->dtype || ct_numel(rm) != ct_numel(rv) || ct_shares_storage(rm, rv))) return 0;
  BnRun a;
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
  }
  if (rm) ct_bump_version(rm);
  if (rv) ct_bump_version(rv);
  return 1;
}

extern "C" void ct_cuda_register_bn(ct_kernel_fn *tab) {
  tab[CT_OP_native_batch_norm] = cu_native_batch_norm;
  tab[CT_OP_native_batch_norm_backward] = cu_native_batch_norm_backward;
}
