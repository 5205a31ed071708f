/* Native-precision fast paths of the CUDA backend: the common float32 / float16 /
 * bfloat16 elementwise ops over contiguous (or scalar / row-broadcast) operands with
 * 16-byte vector loads, same-dtype contiguous copies as cudaMemcpyAsync, contiguous-row
 * sums (the sum family of k_reduce.cu), softmax / log_softmax rows and the fused
 * Adam/AdamW step. Everything else stays on the reference kernels (double arithmetic
 * through the strided iterator, k_pointwise.cu / k_reduce.cu), which remain the
 * correctness baseline; each fast path is entered only where its preconditions hold and
 * returns false otherwise.
 *
 * Arithmetic: half types compute in float and round once (like PyTorch); float32 computes
 * in float with CUDA's libm (expf/erff/tanhf: at most 2 ulp, NaN and inf handled by the
 * formulas, which are the reference's), so results agree with the CPU within a few ulp,
 * far inside the suites' float32 tolerance (rel 1e-5). Sums accumulate in double. */
#include "cu_common.cuh"
#include <cuda_bf16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "optim/optim_internal.h"
}

/* ---- element types: raw storage, load to float, store from float ---- */
template <int DT> struct El;
template <> struct El<CT_FLOAT32> {
  typedef float raw;
  static __device__ __forceinline__ float ld(float v) { return v; }
  static __device__ __forceinline__ float st(float v) { return v; }
};
template <> struct El<CT_FLOAT16> {
  typedef uint16_t raw;
  static __device__ __forceinline__ float ld(uint16_t v) { return cu_h2f(v); }
  static __device__ __forceinline__ uint16_t st(float v) { return cu_f2h(v); }
};
template <> struct El<CT_BFLOAT16> {
  typedef uint16_t raw;
  static __device__ __forceinline__ float ld(uint16_t v) { return cu_bf2f(v); }
  /* the hardware conversion (one cvt.rn.bf16.f32): round-to-nearest-even like the CPU's
   * for every number and infinity; a NaN comes out as the canonical quiet NaN */
  static __device__ __forceinline__ uint16_t st(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
};

/* CT_CUDA_FAST=0 keeps every op on the reference kernels (for comparing the two). */
static int fast_on = -1;
static bool getenv_fast_enabled(void) {
  if (fast_on < 0) {
    const char *e = getenv("CT_CUDA_FAST");
    fast_on = !(e && *e == '0');
  }
  return fast_on != 0;
}

static bool fast_dtype(ct_dtype d) { return d == CT_FLOAT32 || d == CT_FLOAT16 || d == CT_BFLOAT16; }
static char *dptr(const ct_tensor *t) { return (char *)t->storage->data + t->offset * (int64_t)ct_dtype_size(t->dtype); }
static bool al16(const void *p) { return ((uintptr_t)p & 15) == 0; }

static int n_sm = 0;
/* Blocks for a grid-stride loop over n work items of 256 threads: enough to fill the
 * chip several times over, never more than the items. */
static unsigned fast_blocks(int64_t n) {
  if (!n_sm) {
    int dev = 0, v = 0;
    cudaGetDevice(&dev);
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || v <= 0) v = 132;
    n_sm = v;
  }
  int64_t b = (n + CU_THREADS - 1) / CU_THREADS, cap = (int64_t)n_sm * 64;
  if (b > cap) b = cap;
  return (unsigned)(b < 1 ? 1 : b);
}

/* ---- operand access: contiguous (mode 0), one scalar (1), a row of L repeated (2),
 * each element repeated L times (3: a per-row statistic, [rows, 1] against [rows, L]) ---- */
struct Opnd {
  const char *p;
  int mode;
  int64_t L;
};

template <typename R>
__device__ __forceinline__ R opnd_ld(const Opnd &o, int64_t i) {
  const R *p = (const R *)o.p;
  return o.mode == 0 ? p[i] : o.mode == 1 ? p[0] : o.mode == 2 ? p[i % o.L] : p[i / o.L];
}

/* ---- GELU (erf form) for float16 / bfloat16 results: x Phi(x) without erff ----
 * erff costs ~45 instructions an element, which made the bfloat16 GELU arithmetic-bound (74% of the
 * copy bandwidth). Here Phi(-a) = u 2^(2 (p(u) - a^2 / (4 ln 2))) with a = |x|, u = 1 / (1 + 0.3 a)
 * and p a degree-8 polynomial (Chebyshev interpolation of the exact function on a in [0, 16],
 * fitted for this kernel): relative error of Phi under 2.4e-7 before float rounding, i.e. ~1e-4 of
 * half a bfloat16 ulp and ~1e-3 of half a float16 ulp, so a result differs from the correctly
 * rounded one only where the exact value lies within ~1e-6 (relative) of a rounding midpoint
 * (test cuda_gelu_half_exhaustive checks all 65536 bfloat16 inputs against float64: max 0.5000 ulp on
 * the H200). ~20 instructions an element: 94% of the copy bandwidth (bench/results/s11_cuda.md).
 * Computing Phi(-|x|) directly keeps the negative tail exact in relative terms (1 + erf(x/sqrt2)
 * cancels: 255 bfloat16 ulps off at x = -8.6). The exponential is taken as h^2 with h = 2^(e/2) so
 * that it never falls below float's normal range before the last products (no flush to zero of
 * results that bfloat16 can still hold as subnormals). float32 keeps erff (that path is memory-bound,
 * and float32 results need erff's accuracy). NaN -> NaN, +inf -> inf, -inf -> NaN (x * 0), -0 -> -0:
 * the reference's values. CT_CUDA_GELU_POLY=0 takes erff for every dtype (A/B). */
__device__ __forceinline__ float rcp_approx(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ float ex2_approx(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ float gelu_poly(float x) {
  float a = fabsf(x), u = rcp_approx(fmaf(0.3f, a, 1.0f));
  float p = -1.177356093e-01f;
  p = fmaf(p, u, 4.603720036e-01f);
  p = fmaf(p, u, -5.805607940e-01f);
  p = fmaf(p, u, 1.880947480e-01f);
  p = fmaf(p, u, -4.207349058e-02f);
  p = fmaf(p, u, 1.016261863e-01f);
  p = fmaf(p, u, 3.011315842e-01f);
  p = fmaf(p, u, 7.204495975e-01f);
  p = fmaf(p, u, -1.531304399e+00f);
  float h = ex2_approx(fmaf(a * a, -0.36067376022224085f, p)); /* 0.25 / ln 2 */
  float q = (u * h) * h;                                          /* Phi(-a) */
  return x * (x < 0.0f ? q : 1.0f - q);
}
#define OPT_GELU_POLY 100000 /* k_ew's OPT for gelu_poly (not an op id) */
static int gelu_poly_on = -1;
static bool gelu_poly_enabled(void) {
  if (gelu_poly_on < 0) {
    const char *e = getenv("CT_CUDA_GELU_POLY");
    gelu_poly_on = !(e && *e == '0');
  }
  return gelu_poly_on != 0;
}

/* ---- unary ops in float ---- */
__device__ __forceinline__ float f_unary(int op, float x, float a0, float a1, int k0) {
  switch (op) {
    case CT_OP_abs: return fabsf(x);
    case CT_OP_neg: return -x;
    case CT_OP_exp: return expf(x);
    case CT_OP_exp2: return exp2f(x);
    case CT_OP_expm1: return expm1f(x);
    case CT_OP_log: return logf(x);
    case CT_OP_log2: return log2f(x);
    case CT_OP_log10: return log10f(x);
    case CT_OP_log1p: return log1pf(x);
    case CT_OP_sqrt: return sqrtf(x);
    case CT_OP_rsqrt: return 1.0f / sqrtf(x);
    case CT_OP_sin: return sinf(x);
    case CT_OP_cos: return cosf(x);
    case CT_OP_tan: return tanf(x);
    case CT_OP_tanh: return tanhf(x);
    case CT_OP_sigmoid: return 1.0f / (1.0f + expf(-x));
    case CT_OP_erf: return erff(x);
    case CT_OP_erfc: return erfcf(x);
    case CT_OP_floor: return floorf(x);
    case CT_OP_ceil: return ceilf(x);
    case CT_OP_trunc: return truncf(x);
    case CT_OP_reciprocal: return 1.0f / x;
    case CT_OP_square: return x * x;
    case CT_OP_relu: return x <= 0 ? 0.0f : x;
    case CT_OP_silu: return x / (1.0f + expf(-x));
    case CT_OP_leaky_relu: return x > 0 ? x : x * a0;
    case CT_OP_gelu:
      if (k0 == 2) return gelu_poly(x); /* launch_ew sets it for float16 / bfloat16 */
      if (k0) {
        const float kb = 0.7978845608028654f, kk = 0.044715f; /* sqrt(2/pi) */
        return 0.5f * x * (1.0f + tanhf(kb * (x + kk * x * x * x)));
      }
      return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    default: return x;
  }
}
static bool unary_fast_op(int op, const ct_attrs *a) {
  switch (op) {
    case CT_OP_abs: case CT_OP_neg: case CT_OP_exp: case CT_OP_exp2: case CT_OP_expm1: case CT_OP_log:
    case CT_OP_log2: case CT_OP_log10: case CT_OP_log1p: case CT_OP_sqrt: case CT_OP_rsqrt: case CT_OP_sin:
    case CT_OP_cos: case CT_OP_tan: case CT_OP_tanh: case CT_OP_sigmoid: case CT_OP_erf: case CT_OP_erfc:
    case CT_OP_floor: case CT_OP_ceil: case CT_OP_trunc: case CT_OP_reciprocal: case CT_OP_square:
    case CT_OP_relu: case CT_OP_silu: case CT_OP_leaky_relu: case CT_OP_gelu: return true;
    default: return false;
  }
}

/* ---- binary ops in float (add/sub with alpha 1: the CPU's float32 path is exact float) ---- */
__device__ __forceinline__ float f_binary(int op, float x, float y) {
  switch (op) {
    case CT_OP_add: return x + y;
    case CT_OP_sub: return x - y;
    case CT_OP_mul: return x * y;
    case CT_OP_div: return x / y;
    case CT_OP_maximum: return (x != x || y != y) ? __int_as_float(0x7fc00000) : (x < y ? y : x);
    case CT_OP_minimum: return (x != x || y != y) ? __int_as_float(0x7fc00000) : (y < x ? y : x);
    default: return x;
  }
}

/* One kernel for both arities: NIN = 1 applies f_unary to a, NIN = 2 f_binary to (a, b).
 * VEC: 16-byte loads and stores (every contiguous operand and the output 16-byte
 * aligned, rows a multiple of the vector). */
template <int DT, int NIN, bool VEC, int OPT = -1>
__global__ void __launch_bounds__(CU_THREADS) k_ew(char *out, Opnd A, Opnd B, int64_t n, int op_rt, float a0, float a1,
                                                   int k0) {
  /* OPT >= 0: the op fixed at compile time (the hot activations), so the V elements of a
   * vector are computed side by side instead of through a jump table each */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  /* a programmatic dependent launch (ew_go): wait for the grid before, then let the next one start launching */
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
  const int op = OPT >= 0 ? OPT : op_rt;
  if (OPT == CT_OP_gelu) k0 = k0 != 0; /* the tanh flag only: lets the compiler drop f_unary's gelu_poly branch */
  typedef typename El<DT>::raw R;
  constexpr int V = 16 / sizeof(R);
  int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, stride = gridDim.x * (int64_t)blockDim.x;
  int64_t done = 0;
  if (VEC) {
    int64_t nv = n / V;
    for (int64_t i = tid; i < nv; i += stride) {
      union {
        uint4 u;
        R r[V];
      } va, vb, vo;
      int64_t e0 = i * V;
      if (A.mode == 1 || A.mode == 3) {
        R s = ((const R *)A.p)[A.mode == 1 ? 0 : e0 / A.L];
#pragma unroll
        for (int k = 0; k < V; k++) va.r[k] = s;
      } else va.u = *(const uint4 *)((const R *)A.p + (A.mode == 0 ? e0 : e0 % A.L));
      if (NIN == 2) {
        if (B.mode == 1 || B.mode == 3) {
          R s = ((const R *)B.p)[B.mode == 1 ? 0 : e0 / B.L];
#pragma unroll
          for (int k = 0; k < V; k++) vb.r[k] = s;
        } else vb.u = *(const uint4 *)((const R *)B.p + (B.mode == 0 ? e0 : e0 % B.L));
      }
#pragma unroll
      for (int k = 0; k < V; k++) {
        float x = El<DT>::ld(va.r[k]);
        float r = OPT == OPT_GELU_POLY ? gelu_poly(x)
                  : NIN == 1           ? f_unary(op, x, a0, a1, k0)
                                       : f_binary(op, x, El<DT>::ld(vb.r[k]));
        vo.r[k] = El<DT>::st(r);
      }
      *(uint4 *)((R *)out + e0) = vo.u;
    }
    done = nv * V;
  }
  for (int64_t i = done + tid; i < n; i += stride) {
    float x = El<DT>::ld(opnd_ld<R>(A, i));
    float r = OPT == OPT_GELU_POLY ? gelu_poly(x)
              : NIN == 1           ? f_unary(op, x, a0, a1, k0)
                                   : f_binary(op, x, El<DT>::ld(opnd_ld<R>(B, i)));
    ((R *)out)[i] = El<DT>::st(r);
  }
}

extern "C" bool ct_dense_same_layout(const ct_tensor *a, const ct_tensor *b); /* src/ops/memory_format.c */
/* Classifies input t against the contiguous output o of n elements. */
static bool classify(const ct_tensor *t, const ct_tensor *o, Opnd *op) {
  op->p = dptr(t);
  op->L = 1;
  if (t->dtype != o->dtype) return false;
  int64_t tn = ct_numel(t);
  if (tn == 1) {
    op->mode = 1;
    return true;
  }
  if (!ct_is_contiguous(o)) { /* o dense in another layout (channels-last): t flat alike, or not here */
    if (!ct_dense_same_layout(t, o)) return false;
    op->mode = 0;
    return true;
  }
  if (t->ndim == o->ndim && tn == ct_numel(o) && ct_is_contiguous(t)) {
    bool same = true;
    for (int d = 0; d < t->ndim; d++) same = same && t->shape[d] == o->shape[d];
    if (same) {
      op->mode = 0;
      return true;
    }
  }
  /* a row broadcast: t's trailing dims equal o's and are contiguous, the leading ones
   * are size 1 or stride 0 (the bias of a linear layer, a per-channel-last scale) */
  int k = o->ndim - 1;
  int64_t L = 1, want = 1;
  int first = -1;
  for (; k >= 0; k--) {
    int tk = t->ndim - (o->ndim - k);
    if (tk < 0) break;
    if (t->shape[tk] == o->shape[k] && (t->stride[tk] == want || t->shape[tk] == 1)) {
      want *= t->shape[tk];
      L *= t->shape[tk];
      first = k;
      continue;
    }
    break;
  }
  if (first > 0) {
    for (int j = k; j >= 0; j--) {
      int tj = t->ndim - (o->ndim - j);
      if (tj >= 0 && !(t->shape[tj] == 1 || t->stride[tj] == 0)) return false;
    }
    op->mode = 2;
    op->L = L;
    return true;
  }
  /* a per-row value: t's trailing dims are size 1 or stride 0 (over L elements of o), its
   * leading dims equal o's and contiguous (the element index is i / L) */
  if (t->ndim != o->ndim) return false;
  int m = o->ndim - 1;
  L = 1;
  for (; m >= 0 && (t->shape[m] == 1 || t->stride[m] == 0); m--) L *= o->shape[m];
  if (m < 0 || L <= 1) return false;
  want = 1;
  for (int j = m; j >= 0; j--) {
    if (t->shape[j] != o->shape[j] || (t->shape[j] != 1 && t->stride[j] != want)) return false;
    want *= t->shape[j];
  }
  op->mode = 3;
  op->L = L;
  return true;
}

/* Session 13b: the elementwise kernel launched as a programmatic dependent (CT_CUDA_EW_PDL, read at each call:
 * 1 default, 0 ordinary launches), as k_bn.cu's batch-norm kernels: k_ew first waits for the grid before it
 * (griddepcontrol.wait, which returns at once after an ordinary launch) and touches no memory before, so its
 * setup overlaps the end of the kernel before it. Same kernel, same operands: the same bits. */
static int64_t ew_pdl_n; /* launches with the attribute (tests) */
extern "C" int64_t ct_cuda_ew_pdl_count(void) { return __atomic_load_n(&ew_pdl_n, __ATOMIC_RELAXED); }
static bool ew_pdl_on(void) {
  const char *e = getenv("CT_CUDA_EW_PDL");
  return !(e && *e == '0');
}
template <typename... P, typename... A>
static void ew_go(void (*k)(P...), unsigned grid, cudaStream_t s, A... args) {
  if (ew_pdl_on()) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(CU_THREADS);
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    if (cudaLaunchKernelEx(&cfg, k, args...) == cudaSuccess) {
      __atomic_add_fetch(&ew_pdl_n, 1, __ATOMIC_RELAXED);
      return;
    }
    (void)cudaGetLastError(); /* refused: an ordinary launch */
  }
  k<<<grid, CU_THREADS, 0, s>>>(args...);
}

template <int DT, int NIN>
static void launch_ew(int dev, char *out, const Opnd &A, const Opnd &B, int64_t n, int op, float a0, float a1, int k0) {
  typedef typename El<DT>::raw R;
  constexpr int V = 16 / sizeof(R);
  bool vec = al16(out);
  const Opnd *ops[2] = {&A, &B};
  for (int k = 0; k < NIN; k++) {
    const Opnd &o = *ops[k];
    if ((o.mode == 0 || o.mode == 2) && !al16(o.p)) vec = false;
    if (o.mode >= 2 && o.L % V) vec = false;
  }
  cudaStream_t s = CU_STREAM(dev);
  unsigned vb = fast_blocks((n + V - 1) / V);
  if constexpr (NIN == 1) {
    if (op == CT_OP_gelu && k0 == 0 && DT != CT_FLOAT32 && gelu_poly_enabled()) {
      if (vec) ew_go(k_ew<DT, 1, true, OPT_GELU_POLY>, vb, s, out, A, B, n, op, a0, a1, 0);
      else ew_go(k_ew<DT, 1, false>, fast_blocks(n), s, out, A, B, n, op, a0, a1, 2);
      return;
    }
    if (vec && (op == CT_OP_gelu || op == CT_OP_relu || op == CT_OP_silu)) {
      if (op == CT_OP_gelu) ew_go(k_ew<DT, 1, true, CT_OP_gelu>, vb, s, out, A, B, n, op, a0, a1, k0);
      else if (op == CT_OP_relu) ew_go(k_ew<DT, 1, true, CT_OP_relu>, vb, s, out, A, B, n, op, a0, a1, k0);
      else ew_go(k_ew<DT, 1, true, CT_OP_silu>, vb, s, out, A, B, n, op, a0, a1, k0);
      return;
    }
  }
  if (vec) ew_go(k_ew<DT, NIN, true>, vb, s, out, A, B, n, op, a0, a1, k0);
  else ew_go(k_ew<DT, NIN, false>, fast_blocks(n), s, out, A, B, n, op, a0, a1, k0);
}

template <int NIN>
static void launch_ew_dt(int dev, ct_dtype dt, char *out, const Opnd &A, const Opnd &B, int64_t n, int op, float a0,
                         float a1, int k0) {
  if (dt == CT_FLOAT32) launch_ew<CT_FLOAT32, NIN>(dev, out, A, B, n, op, a0, a1, k0);
  else if (dt == CT_FLOAT16) launch_ew<CT_FLOAT16, NIN>(dev, out, A, B, n, op, a0, a1, k0);
  else launch_ew<CT_BFLOAT16, NIN>(dev, out, A, B, n, op, a0, a1, k0);
}

/* The output must be contiguous, of a fast dtype, not overlapping an input other than
 * exactly (in-place ops write the element they read). */
/* o contiguous, or dense in another layout (channels-last: then only same-layout operands, flat) */
static bool out_ok(const ct_tensor *o) {
  return fast_dtype(o->dtype) && (ct_is_contiguous(o) || ct_dense_same_layout(o, o)) && ct_numel(o) > 0;
}
static bool alias_ok(const ct_tensor *o, const ct_tensor *t, const Opnd &op) {
  if (o->storage != t->storage) return true;
  return op.mode == 0 && dptr(o) == dptr(t);
}

extern "C" bool ct_cuda_fast_unary(const ct_call *c, ct_status *st) {
  if (!getenv_fast_enabled()) return false;
  const ct_tensor *x = c->in[0];
  ct_tensor *o = c->out[0];
  if (!out_ok(o) || x->dtype != o->dtype || !unary_fast_op(c->op, &c->a)) return false;
  Opnd A, B = {NULL, 0, 1};
  if (!classify(x, o, &A) || A.mode != 0 || !alias_ok(o, x, A)) return false;
  int dev = ct_cuda_call_dev(c);
  if ((*st = ct_cuda_use(dev)) != CT_OK) return true;
  launch_ew_dt<1>(dev, o->dtype, dptr(o), A, B, ct_numel(o), c->op, (float)c->a.f[0], (float)c->a.f[1], (int)c->a.k[0]);
  *st = ct_cuda_check_launch(ct_op_info_of(c->op)->id);
  return true;
}

extern "C" bool ct_cuda_fast_binary(const ct_call *c, ct_status *st) {
  if (!getenv_fast_enabled()) return false;
  const ct_tensor *x = c->in[0], *y = c->in[1];
  ct_tensor *o = c->out[0];
  int op = c->op;
  bool ok = (op == CT_OP_add || op == CT_OP_sub) ? c->a.f[0] == 1.0
            : op == CT_OP_div                    ? c->a.k[0] == 0
                                                 : (op == CT_OP_mul || op == CT_OP_maximum || op == CT_OP_minimum);
  if (!ok || !out_ok(o) || x->dtype != o->dtype || y->dtype != o->dtype) return false;
  Opnd A, B;
  if (!classify(x, o, &A) || !classify(y, o, &B) || !alias_ok(o, x, A) || !alias_ok(o, y, B)) return false;
  if (A.mode != 0 && B.mode != 0) return false; /* both broadcast: the iterator's job */
  int dev = ct_cuda_call_dev(c);
  if ((*st = ct_cuda_use(dev)) != CT_OK) return true;
  launch_ew_dt<2>(dev, o->dtype, dptr(o), A, B, ct_numel(o), op, 0, 0, 0);
  *st = ct_cuda_check_launch(ct_op_info_of(op)->id);
  return true;
}

/* Same dtype, both contiguous, disjoint: one cudaMemcpyAsync on the device's stream. */
/* strided same-dtype copies whose innermost dim is contiguous in both tensors (the attention
 * output's [B, T, H, D] <- [B, H, T, D] transposes, the q/k/v slices' gradients written into
 * [B, T, 3C]): after merging dims that are contiguous in both, at most 4 dims, one 16-byte
 * vector per thread (the reference walks elements through the generic iterator). */
struct CpGeom {
  int nd;
  int64_t sh[4], ds[4], ss[4]; /* dim 0 innermost; strides in elements, sh[0] counted in vectors */
  int64_t nvec;
};
/* I: the index type; 32-bit where every vector index and element offset fits (64-bit division
 * is a long software sequence: it made the attention transposes' copies compute-bound) */
template <typename I>
__global__ void __launch_bounds__(CU_THREADS) k_copy_vec(char *dst, const char *src, CpGeom g, int vw) {
  I sh[4], ds[4], ss[4];
#pragma unroll
  for (int d = 0; d < 4; d++) {
    sh[d] = (I)g.sh[d];
    ds[d] = (I)g.ds[d];
    ss[d] = (I)g.ss[d];
  }
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < g.nvec; i += (int64_t)gridDim.x * blockDim.x) {
    I r = (I)i, od = (r % sh[0]) * (I)vw, os = od;
    r /= sh[0];
    for (int d = 1; d < g.nd; d++) {
      I k = r % sh[d];
      r /= sh[d];
      od += k * ds[d];
      os += k * ss[d];
    }
    int isz = 16 / vw;
    *(uint4 *)(dst + (int64_t)od * isz) = *(const uint4 *)(src + (int64_t)os * isz);
  }
}
static bool fast_copy_strided(ct_tensor *dst, const ct_tensor *src, ct_status *st) {
  int isz = (int)ct_dtype_size(dst->dtype);
  if (isz != 2 && isz != 4 && isz != 8) return false;
  if (dst->storage == src->storage) return false; /* overlap: the reference goes through a temporary */
  CpGeom g;
  memset(&g, 0, sizeof g);
  int nd = 0;
  for (int d = dst->ndim - 1; d >= 0; d--) {
    int64_t n = dst->shape[d];
    if (n == 1) continue;
    if (nd > 0 && g.ds[nd - 1] * g.sh[nd - 1] == dst->stride[d] && g.ss[nd - 1] * g.sh[nd - 1] == src->stride[d]) {
      g.sh[nd - 1] *= n;
      continue;
    }
    if (nd == 4) return false;
    g.sh[nd] = n;
    g.ds[nd] = dst->stride[d];
    g.ss[nd] = src->stride[d];
    nd++;
  }
  if (nd == 0 || g.ds[0] != 1 || g.ss[0] != 1) return false;
  int vw = 16 / isz;
  char *dp = dptr(dst);
  const char *sp = dptr(src);
  if (g.sh[0] % vw || (uintptr_t)dp % 16 || (uintptr_t)sp % 16) return false;
  for (int d = 1; d < nd; d++)
    if ((g.ds[d] * isz) % 16 || (g.ss[d] * isz) % 16 || g.ds[d] < 0 || g.ss[d] < 0) return false;
  g.nd = nd;
  g.sh[0] /= vw;
  g.nvec = ct_numel(dst) / vw;
  int dev = dst->storage->device.index;
  if ((*st = ct_cuda_use(dev)) != CT_OK) return true;
  /* 32-bit indices where the last element of either tensor has an offset below 2^31 */
  int64_t dmax = 0, smax = 0;
  for (int d = 0; d < nd; d++) {
    dmax += (g.sh[d] - 1) * (d ? g.ds[d] : vw);
    smax += (g.sh[d] - 1) * (d ? g.ss[d] : vw);
  }
  bool small = g.nvec < 0x7fffffff && dmax + vw < 0x7fffffff && smax + vw < 0x7fffffff;
  if (small) k_copy_vec<uint32_t><<<cu_blocks(g.nvec), CU_THREADS, 0, CU_STREAM(dev)>>>(dp, sp, g, vw);
  else k_copy_vec<int64_t><<<cu_blocks(g.nvec), CU_THREADS, 0, CU_STREAM(dev)>>>(dp, sp, g, vw);
  *st = ct_cuda_check_launch("copy");
  return true;
}

/* ---- fill of a contiguous tensor: zeros as one cudaMemsetAsync, other 4-byte values with
 * 16-byte stores (the autograd engine's and the optimizers' zero-filled buffers, ~185 per GPT-2
 * step); anything else goes to the reference kernel. ---- */
static ct_kernel_fn fill_ref;
__global__ void __launch_bounds__(CU_THREADS) k_fill32(uint32_t *p, int64_t n, uint32_t v) {
  int64_t nv = n / 4, st = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nv; i += st) ((uint4 *)p)[i] = make_uint4(v, v, v, v);
  for (int64_t i = nv * 4 + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += st) p[i] = v;
}
static ct_status cu_fast_fill(const ct_call *c) {
  ct_tensor *o = c->n_out > 0 ? c->out[0] : NULL;
  if (!getenv_fast_enabled() || !o || !ct_is_contiguous(o) || ct_dtype_size(o->dtype) > 8) return fill_ref(c);
  int64_t n = ct_numel(o);
  int isz = (int)ct_dtype_size(o->dtype);
  union {
    char b[8];
    uint64_t u;
  } v;
  v.u = 0;
  ct_scalar s = c->a.s[0];
  if (s.kind == CT_SCALAR_FLOAT) ct_store_f64(v.b, o->dtype, s.f);
  else ct_store_i64(v.b, o->dtype, s.i);
  bool zero = true;
  for (int k = 0; k < isz && k < 8; k++) zero = zero && v.b[k] == 0;
  char *p = dptr(o);
  if (!zero && (isz != 4 || (uintptr_t)p % 16)) return fill_ref(c);
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  if (n == 0) return CT_OK;
  if (zero) {
    cudaError_t e = cudaMemsetAsync(p, 0, (size_t)n * (size_t)isz, CU_STREAM(dev));
    return e == cudaSuccess ? CT_OK : ct_cuda_fail(e, "fill");
  }
  uint32_t w;
  memcpy(&w, v.b, 4);
  k_fill32<<<cu_blocks(n / 4 + 1), CU_THREADS, 0, CU_STREAM(dev)>>>((uint32_t *)p, n, w);
  return ct_cuda_check_launch("fill");
}

/* ---- dtype-converting copy between float32 / float16 / bfloat16, both contiguous: 8 elements
 * per thread through 16-byte vectors (the reference converts one element at a time through
 * the generic iterator and double: ~0.5 TB/s on the GPT's residual upcasts). The conversions
 * are the reference's (cu_f2bf / cu_f2h / exact widening), so results are bit-identical. ---- */
template <int SD, int DD>
__global__ void __launch_bounds__(CU_THREADS) k_cast8(const char *src, char *dst, int64_t n, bool vec) {
  typedef typename El<SD>::raw SR;
  typedef typename El<DD>::raw DR;
  int64_t st = (int64_t)gridDim.x * blockDim.x, n8 = vec ? n / 8 : 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n8; i += st) {
    SR a[8];
    DR b[8];
#pragma unroll
    for (int k = 0; k < (int)(8 * sizeof(SR)) / 16; k++) ((uint4 *)a)[k] = ((const uint4 *)(src + i * 8 * sizeof(SR)))[k];
#pragma unroll
    for (int k = 0; k < 8; k++) {
      float v = El<SD>::ld(a[k]);
      b[k] = DD == CT_BFLOAT16 ? (DR)cu_f2bf(v) : DD == CT_FLOAT16 ? (DR)cu_f2h(v) : (DR)v;
    }
#pragma unroll
    for (int k = 0; k < (int)(8 * sizeof(DR)) / 16; k++) ((uint4 *)(dst + i * 8 * sizeof(DR)))[k] = ((uint4 *)b)[k];
  }
  for (int64_t i = n8 * 8 + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += st) {
    float v = El<SD>::ld(((const SR *)src)[i]);
    ((DR *)dst)[i] = DD == CT_BFLOAT16 ? (DR)cu_f2bf(v) : DD == CT_FLOAT16 ? (DR)cu_f2h(v) : (DR)v;
  }
}
static int64_t cast_fast_calls; /* for the tests: the fast path was taken */
extern "C" int64_t ct_cuda_fast_cast_calls(void) { return cast_fast_calls; }
static bool fast_cast(ct_tensor *dst, const ct_tensor *src, ct_status *st) {
  if (!fast_dtype(dst->dtype) || !fast_dtype(src->dtype) || dst->dtype == src->dtype) return false;
  if (!ct_is_contiguous(dst) || !ct_is_contiguous(src) || dst->storage == src->storage) return false;
  int64_t n = ct_numel(dst);
  int dev = dst->storage->device.index;
  if ((*st = ct_cuda_use(dev)) != CT_OK) return true;
  cast_fast_calls++;
  if (n == 0) return true;
  const char *sp = dptr(src);
  char *dp = dptr(dst);
  bool vec = al16(sp) && al16(dp);
  unsigned nb = fast_blocks(vec ? (n + 7) / 8 : n);
#define CAST_L(S, Dd) k_cast8<S, Dd><<<nb, CU_THREADS, 0, CU_STREAM(dev)>>>(sp, dp, n, vec)
  switch (src->dtype * 16 + dst->dtype) {
    case CT_FLOAT32 * 16 + CT_BFLOAT16: CAST_L(CT_FLOAT32, CT_BFLOAT16); break;
    case CT_BFLOAT16 * 16 + CT_FLOAT32: CAST_L(CT_BFLOAT16, CT_FLOAT32); break;
    case CT_FLOAT32 * 16 + CT_FLOAT16: CAST_L(CT_FLOAT32, CT_FLOAT16); break;
    case CT_FLOAT16 * 16 + CT_FLOAT32: CAST_L(CT_FLOAT16, CT_FLOAT32); break;
    case CT_FLOAT16 * 16 + CT_BFLOAT16: CAST_L(CT_FLOAT16, CT_BFLOAT16); break;
    default: CAST_L(CT_BFLOAT16, CT_FLOAT16); break;
  }
#undef CAST_L
  *st = ct_cuda_check_launch("copy");
  return true;
}

extern "C" bool ct_cuda_fast_copy(ct_tensor *dst, const ct_tensor *src, ct_status *st) {
  if (!getenv_fast_enabled()) return false;
  if (dst->dtype != src->dtype) {
    if (src->storage->device.type != CT_DEVICE_CUDA || src->storage->device.index != dst->storage->device.index ||
        ct_numel(dst) != ct_numel(src) || dst->ndim != src->ndim)
      return false;
    for (int d = 0; d < dst->ndim; d++)
      if (dst->shape[d] != src->shape[d]) return false;
    return fast_cast(dst, src, st);
  }
  if (src->storage->device.type != CT_DEVICE_CUDA || src->storage->device.index != dst->storage->device.index) return false;
  int64_t n = ct_numel(dst);
  if (n != ct_numel(src)) return false;
  if (dst->ndim != src->ndim) return false;
  for (int d = 0; d < dst->ndim; d++)
    if (dst->shape[d] != src->shape[d]) return false;
  if (!ct_is_contiguous(dst) || !ct_is_contiguous(src)) return n > 0 && fast_copy_strided(dst, src, st);
  size_t nb = (size_t)n * ct_dtype_size(dst->dtype);
  char *d = dptr(dst);
  const char *s = dptr(src);
  if (dst->storage == src->storage && d != s && d < s + nb && s < d + nb) return false; /* overlap */
  int dev = dst->storage->device.index;
  if ((*st = ct_cuda_use(dev)) != CT_OK) return true;
  if (n == 0 || d == s) {
    *st = CT_OK;
    return true;
  }
  cudaError_t e = cudaMemcpyAsync(d, s, nb, cudaMemcpyDeviceToDevice, CU_STREAM(dev));
  *st = e == cudaSuccess ? CT_OK : ct_cuda_fail(e, "copy");
  return true;
}

/* ---- contiguous-row sums (k_reduce.cu's sum family: sum, sum of squares, |x|, squared
 * deviations from a per-row shift): one group of G threads per (row, chunk), each
 * thread accumulating in double over 16-byte vectors, then warp shuffles and a block
 * tree; the per-chunk partials are combined in order by k_reduce.cu's final kernel.
 * Double accumulation makes the result at least as accurate as the CPU's pairwise sum
 * (error of the float32 result: its final rounding, plus ~n * 2^-53 relative). ---- */
enum { FS_SUM = 0, FS_SQ, FS_ABS, FS_SQDEV };

template <int DT> struct Ld64;
template <> struct Ld64<CT_FLOAT32> {
  typedef float raw;
  static __device__ __forceinline__ double ld(float v) { return v; }
};
template <> struct Ld64<CT_FLOAT64> {
  typedef double raw;
  static __device__ __forceinline__ double ld(double v) { return v; }
};
template <> struct Ld64<CT_FLOAT16> {
  typedef uint16_t raw;
  static __device__ __forceinline__ double ld(uint16_t v) { return cu_h2f(v); }
};
template <> struct Ld64<CT_BFLOAT16> {
  typedef uint16_t raw;
  static __device__ __forceinline__ double ld(uint16_t v) { return cu_bf2f(v); }
};

__device__ __forceinline__ double fs_term(int mode, double v, double shift) {
  switch (mode) {
    case FS_SQ: return v * v;
    case FS_ABS: return fabs(v);
    case FS_SQDEV: {
      double d = v - shift;
      return d * d;
    }
    default: return v;
  }
}

struct FSParams {
  const char *in;
  int no;
  int64_t oshape[CT_MAX_DIMS], ostride[CT_MAX_DIMS]; /* bytes */
  int64_t outer, inner, split, chunk;
  const double *shift;
  int mode;
  double *part; /* sum per (row, chunk): laid out as k_reduce's partials, stride pstride bytes */
  int64_t pstride;
};

__device__ __forceinline__ int64_t fs_off(const FSParams &P, int64_t idx) {
  int64_t off = 0;
  for (int d = P.no - 1; d > 0; d--) {
    int64_t s = P.oshape[d], q = idx / s;
    off += (idx - q * s) * P.ostride[d];
    idx = q;
  }
  return P.no ? off + idx * P.ostride[0] : 0;
}

template <int DT, int G>
__global__ void __launch_bounds__(CU_THREADS) k_rowsum(FSParams P) {
  typedef typename Ld64<DT>::raw R;
  constexpr int V = 16 / sizeof(R);
  __shared__ double sh[CU_THREADS / 32];
  const int gpb = CU_THREADS / G;
  int lane = threadIdx.x % G, gid = threadIdx.x / G;
  int64_t total = P.outer * P.split;
  for (int64_t w0 = (int64_t)blockIdx.x * gpb; w0 < total; w0 += (int64_t)gridDim.x * gpb) {
    int64_t w = w0 + gid;
    double acc = 0;
    if (w < total) {
      int64_t o = w / P.split, s = w - o * P.split;
      const R *row = (const R *)(P.in + fs_off(P, o));
      double shift = P.shift ? P.shift[o] : 0.0;
      int64_t j0 = s * P.chunk, j1 = j0 + P.chunk < P.inner ? j0 + P.chunk : P.inner;
      if (j0 < j1) {
        /* head up to 16-byte alignment, vector body, tail */
        int64_t mis = (int64_t)(((uintptr_t)(row + j0)) & 15) / (int64_t)sizeof(R);
        int64_t head = mis ? V - mis : 0;
        if (((uintptr_t)(row + j0)) % sizeof(R)) head = j1 - j0; /* not even element-aligned: scalar */
        if (head > j1 - j0) head = j1 - j0;
        for (int64_t j = j0 + lane; j < j0 + head; j += G) acc += fs_term(P.mode, Ld64<DT>::ld(row[j]), shift);
        int64_t b0 = j0 + head, nv = (j1 - b0) / V;
        const uint4 *vp = (const uint4 *)(row + b0);
        union VU {
          uint4 u;
          R r[V];
        };
        /* four 16-byte loads in flight per thread, two accumulators */
        int64_t k = lane;
        double acc2 = 0;
        for (; k + 3 * G < nv; k += 4 * G) {
          VU v0, v1, v2, v3;
          v0.u = vp[k];
          v1.u = vp[k + G];
          v2.u = vp[k + 2 * G];
          v3.u = vp[k + 3 * G];
#pragma unroll
          for (int q = 0; q < V; q++) {
            acc += fs_term(P.mode, Ld64<DT>::ld(v0.r[q]), shift);
            acc2 += fs_term(P.mode, Ld64<DT>::ld(v1.r[q]), shift);
          }
#pragma unroll
          for (int q = 0; q < V; q++) {
            acc += fs_term(P.mode, Ld64<DT>::ld(v2.r[q]), shift);
            acc2 += fs_term(P.mode, Ld64<DT>::ld(v3.r[q]), shift);
          }
        }
        for (; k < nv; k += G) {
          VU v;
          v.u = vp[k];
#pragma unroll
          for (int q = 0; q < V; q++) acc += fs_term(P.mode, Ld64<DT>::ld(v.r[q]), shift);
        }
        acc += acc2;
        for (int64_t j = b0 + nv * V + lane; j < j1; j += G) acc += fs_term(P.mode, Ld64<DT>::ld(row[j]), shift);
      }
    }
    /* reduce within the group */
    if (G > 1) {
#pragma unroll
      for (int h = (G < 32 ? G : 32) / 2; h > 0; h /= 2) acc += __shfl_down_sync(0xffffffffu, acc, h);
      if (G > 32) {
        if ((threadIdx.x & 31) == 0) sh[threadIdx.x / 32] = acc;
        __syncthreads();
        if (threadIdx.x < 32) {
          acc = threadIdx.x < CU_THREADS / 32 ? sh[threadIdx.x] : 0.0;
#pragma unroll
          for (int h = 4; h > 0; h /= 2) acc += __shfl_down_sync(0xffffffffu, acc, h);
        }
        __syncthreads();
      }
    }
    if (lane == 0 && w < total) *(double *)((char *)P.part + w * P.pstride) = acc;
  }
}

/* Called by k_reduce.cu's reduce_pass: in (rows at outer offsets, each `inner` contiguous
 * elements), mode (FS_*), the partial array (element w at part + w * pstride bytes, a
 * double), split/chunk chosen by the caller (chunk rounded here to whole vectors).
 * Returns false (nothing launched) where this path does not apply. */
extern "C" bool ct_cuda_fast_rowsum(int dev, int dt, int mode, const char *in, int no, const int64_t *oshape,
                                    const int64_t *ostride, int64_t outer, int64_t inner, int64_t split, int64_t chunk,
                                    const double *shift, double *part, int64_t pstride) {
  if (!getenv_fast_enabled()) return false;
  if (!(dt == CT_FLOAT32 || dt == CT_FLOAT64 || dt == CT_FLOAT16 || dt == CT_BFLOAT16)) return false;
  if (chunk < 1 || chunk % 8) return false;
  FSParams P;
  memset(&P, 0, sizeof P);
  P.in = in;
  P.no = no;
  memcpy(P.oshape, oshape, sizeof P.oshape);
  memcpy(P.ostride, ostride, sizeof P.ostride);
  P.outer = outer;
  P.inner = inner;
  P.split = split;
  P.chunk = chunk;
  P.shift = shift;
  P.mode = mode;
  P.part = part;
  P.pstride = pstride;
  int64_t nparts = outer * split;
  cudaStream_t s = CU_STREAM(dev);
#define RS_LAUNCH(DT)                                                                                   \
  do {                                                                                                  \
    if (chunk >= 2048) k_rowsum<DT, 256><<<cu_blocks(nparts, 1), CU_THREADS, 0, s>>>(P);                 \
    else k_rowsum<DT, 32><<<cu_blocks(nparts, CU_THREADS / 32), CU_THREADS, 0, s>>>(P);                  \
  } while (0)
  switch (dt) {
    case CT_FLOAT32: RS_LAUNCH(CT_FLOAT32); break;
    case CT_FLOAT64: RS_LAUNCH(CT_FLOAT64); break;
    case CT_FLOAT16: RS_LAUNCH(CT_FLOAT16); break;
    default: RS_LAUNCH(CT_BFLOAT16); break;
  }
#undef RS_LAUNCH
  return true;
}

/* ---- softmax / log_softmax over contiguous rows: one warp per row (short rows) or one
 * block per row, an online max/sum pass in float and a writing pass. NaN anywhere in a row
 * makes the row NaN; +inf makes it NaN (exp(inf - inf)), as the reference's max-shifted
 * formula does; an all -inf row gives NaN (0/0), also as the reference. ---- */
__device__ __forceinline__ void sm_add(float &m, float &s, float v) {
  if (v > m) {
    s = s * expf(m - v) + expf(v - v); /* expf(v - v): NaN for v = +inf, like the reference */
    m = v;
  } else if (v != -INFINITY || m != -INFINITY) s += expf(v - m);
}
__device__ __forceinline__ void sm_merge(float &m, float &s, float m2, float s2) {
  float mm = m > m2 ? m : m2; /* m is never NaN (sm_add never stores one) */
  float t1 = s == 0.0f ? 0.0f : s * expf(m - mm), t2 = s2 == 0.0f ? 0.0f : s2 * expf(m2 - mm);
  s = t1 + t2;
  m = mm;
}

template <int DT, int G>
__global__ void __launch_bounds__(CU_THREADS) k_softmax_rows(const char *xin, char *yout, int64_t rows, int64_t len,
                                                             int64_t xrs, int64_t yrs, bool lg) {
  typedef typename El<DT>::raw R;
  __shared__ float shm[CU_THREADS / 32], shs[CU_THREADS / 32];
  const int gpb = CU_THREADS / G;
  int lane = threadIdx.x % G, gid = threadIdx.x / G;
  for (int64_t r0 = (int64_t)blockIdx.x * gpb; r0 < rows; r0 += (int64_t)gridDim.x * gpb) {
    int64_t r = r0 + gid;
    bool act = r < rows;
    const R *x = (const R *)(xin + (act ? r : 0) * xrs);
    R *y = (R *)(yout + (act ? r : 0) * yrs);
    float m = -INFINITY, s = 0.0f;
    if (act)
      for (int64_t j = lane; j < len; j += G) sm_add(m, s, El<DT>::ld(x[j]));
#pragma unroll
    for (int h = (G < 32 ? G : 32) / 2; h > 0; h /= 2) {
      float m2 = __shfl_down_sync(0xffffffffu, m, h), s2 = __shfl_down_sync(0xffffffffu, s, h);
      sm_merge(m, s, m2, s2);
    }
    if (G > 32) {
      if ((threadIdx.x & 31) == 0) {
        shm[threadIdx.x / 32] = m;
        shs[threadIdx.x / 32] = s;
      }
      __syncthreads();
      m = shm[0];
      s = shs[0];
      for (int k = 1; k < CU_THREADS / 32; k++) sm_merge(m, s, shm[k], shs[k]);
      __syncthreads();
    } else {
      m = __shfl_sync(0xffffffffu, m, 0);
      s = __shfl_sync(0xffffffffu, s, 0);
    }
    if (m == -INFINITY) m = 0.0f;
    if (act) {
      if (lg) {
        float ls = logf(s);
        for (int64_t j = lane; j < len; j += G) y[j] = El<DT>::st(El<DT>::ld(x[j]) - m - ls);
      } else {
        for (int64_t j = lane; j < len; j += G) y[j] = El<DT>::st(expf(El<DT>::ld(x[j]) - m) / s);
      }
    }
  }
}

/* Rows of at most G * PER elements: the row is read once into registers (loads of one
 * warp are consecutive), max and sum reduced over the group, then written. The max keeps
 * NaN (NaN anywhere -> NaN row) and -inf becomes 0, as the reference. */
__device__ __forceinline__ float nanmax(float a, float b) { return (b > a || b != b || a != a) ? (a != a ? a : b) : a; }
template <int G>
__device__ __forceinline__ float group_max_f(float v, float *sh) {
#pragma unroll
  for (int h = (G < 32 ? G : 32) / 2; h > 0; h /= 2) v = nanmax(v, __shfl_xor_sync(0xffffffffu, v, h));
  if (G > 32) {
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = sh[0];
#pragma unroll
    for (int k = 1; k < G / 32; k++) v = nanmax(v, sh[k]);
  }
  return v;
}
template <int G>
__device__ __forceinline__ float group_sum_f(float v, float *sh) {
#pragma unroll
  for (int h = (G < 32 ? G : 32) / 2; h > 0; h /= 2) v += __shfl_xor_sync(0xffffffffu, v, h);
  if (G > 32) {
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = 0;
#pragma unroll
    for (int k = 0; k < G / 32; k++) v += sh[k];
  }
  return v;
}
template <int DT, int G, int PER>
__global__ void __launch_bounds__(CU_THREADS) k_softmax_reg(const char *xin, char *yout, int64_t rows, int64_t len, bool lg) {
  typedef typename El<DT>::raw R;
  __shared__ float sh[CU_THREADS / 32];
  const int gpb = CU_THREADS / G;
  int lane = threadIdx.x % G, gid = threadIdx.x / G;
  for (int64_t r0 = (int64_t)blockIdx.x * gpb; r0 < rows; r0 += (int64_t)gridDim.x * gpb) {
    int64_t r = r0 + gid;
    bool act = r < rows;
    const R *x = (const R *)xin + (act ? r : 0) * len;
    float v[PER];
#pragma unroll
    for (int k = 0; k < PER; k++) {
      int64_t j = (int64_t)k * G + lane;
      v[k] = act && j < len ? El<DT>::ld(x[j]) : -INFINITY;
    }
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < PER; k++) m = nanmax(m, v[k]);
    m = group_max_f<G>(m, sh);
    if (m == -INFINITY) m = 0.0f;
    float s = 0.0f, e[PER];
#pragma unroll
    for (int k = 0; k < PER; k++) {
      int64_t j = (int64_t)k * G + lane;
      e[k] = j < len ? expf(v[k] - m) : 0.0f; /* kept for softmax's write */
      s += e[k];
    }
    s = group_sum_f<G>(s, sh);
    if (act) {
      R *y = (R *)yout + r * len;
      float ls = lg ? logf(s) : 0.0f;
#pragma unroll
      for (int k = 0; k < PER; k++) {
        int64_t j = (int64_t)k * G + lane;
        if (j < len) y[j] = El<DT>::st(lg ? v[k] - m - ls : e[k] / s);
      }
    }
  }
}

extern "C" bool ct_cuda_fast_softmax(const ct_call *c, ct_status *st) {
  if (!getenv_fast_enabled()) return false;
  const ct_tensor *x = c->in[0];
  ct_tensor *y = c->out[0];
  /* float16 softmax is refused before dispatch (PyTorch 1.13's CPU has none) */
  if (x->dtype != y->dtype || (x->dtype != CT_FLOAT32 && x->dtype != CT_BFLOAT16) || x->ndim == 0) return false;
  int d = (int)c->a.k[0];
  if (d != x->ndim - 1 || !ct_is_contiguous(x) || !ct_is_contiguous(y)) return false;
  int64_t len = x->shape[d], rows = ct_numel(x) / (len ? len : 1);
  if (len == 0 || rows == 0) return false;
  if (x->storage == y->storage && dptr(x) != dptr(y)) return false;
  int dev = ct_cuda_call_dev(c);
  if ((*st = ct_cuda_use(dev)) != CT_OK) return true;
  int64_t isz = (int64_t)ct_dtype_size(x->dtype), rs = len * isz;
  bool lg = c->op == CT_OP_log_softmax;
  cudaStream_t s = CU_STREAM(dev);
#define SM_LAUNCH(DT)                                                                                                 \
  do {                                                                                                                \
    if (len <= 128) k_softmax_reg<DT, 32, 4><<<cu_blocks(rows, CU_THREADS / 32), CU_THREADS, 0, s>>>(dptr(x), dptr(y), rows, len, lg); \
    else if (len <= 1024) k_softmax_reg<DT, 32, 32><<<cu_blocks(rows, CU_THREADS / 32), CU_THREADS, 0, s>>>(dptr(x), dptr(y), rows, len, lg); \
    else if (len <= 2048) k_softmax_reg<DT, 256, 8><<<cu_blocks(rows, 1), CU_THREADS, 0, s>>>(dptr(x), dptr(y), rows, len, lg); \
    else if (len <= 8192) k_softmax_reg<DT, 256, 32><<<cu_blocks(rows, 1), CU_THREADS, 0, s>>>(dptr(x), dptr(y), rows, len, lg); \
    else if (len >= 1024) k_softmax_rows<DT, 256><<<cu_blocks(rows, 1), CU_THREADS, 0, s>>>(dptr(x), dptr(y), rows, len, rs, rs, lg); \
    else k_softmax_rows<DT, 32><<<cu_blocks(rows, CU_THREADS / 32), CU_THREADS, 0, s>>>(dptr(x), dptr(y), rows, len, rs, rs, lg); \
  } while (0)
  if (x->dtype == CT_FLOAT32) SM_LAUNCH(CT_FLOAT32);
  else SM_LAUNCH(CT_BFLOAT16);
#undef SM_LAUNCH
  *st = ct_cuda_check_launch("softmax");
  return true;
}

/* ---- fused Adam / AdamW: one pass over p, g, m, v (and max_v for amsgrad), with every
 * rounding where the CPU's fused loop (src/optim/step_fused.c) rounds: the _rn intrinsics
 * keep nvcc from contracting into FMAs, double where the reference keeps double (add's
 * alpha) and the correctly rounded double sqrt, so the GPU's step equals the CPU's bit
 * for bit. ---- */
struct AdamP {
  float *p, *m, *v, *mx;
  const float *g;
  int64_t n;
  double wd, omb1;
  float sg, decay, b1, b2, omb2, bc2, eps, nss;
  bool W, WD, AMS;
};
__device__ __forceinline__ float adda(float x, float y, double a) { return (float)__dadd_rn((double)x, __dmul_rn(a, (double)y)); }

__global__ void __launch_bounds__(CU_THREADS) k_adam(AdamP P) {
  int64_t stride = gridDim.x * (int64_t)blockDim.x;
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < P.n; k += stride) {
    float gk = __fmul_rn(P.g[k], P.sg), pk = P.p[k];
    if (!P.W && P.WD) gk = adda(gk, pk, P.wd);
    float mk = adda(__fmul_rn(P.m[k], P.b1), gk, P.omb1);
    float vk = __fadd_rn(__fmul_rn(P.v[k], P.b2), __fmul_rn(__fmul_rn(P.omb2, gk), gk));
    P.m[k] = mk;
    P.v[k] = vk;
    float q = vk;
    if (P.AMS) {
      float xk = P.mx[k];
      xk = (xk != xk || vk != vk) ? __int_as_float(0x7fc00000) : (xk < vk ? vk : xk);
      P.mx[k] = xk;
      q = xk;
    }
    float sq = (float)__dsqrt_rn((double)q);
    if (P.W) pk = __fmul_rn(pk, P.decay);
    float den = __fadd_rn(__fdiv_rn(sq, P.bc2), P.eps);
    P.p[k] = __fadd_rn(pk, __fdiv_rn(__fmul_rn(P.nss, mk), den));
  }
}

/* ---- fused SGD (weight decay, momentum, dampening, nesterov, maximize): the CPU's fused
 * loop (src/optim/step_fused.c sgd_*) rounding for rounding, one pass over p, g and the
 * momentum buffer. ---- */
struct SgdP {
  float *p, *buf;
  const float *g;
  int64_t n;
  double wd, m, omd, nlr;
  float sg, mom;
  bool WD, MOM, FIRST, NEST;
};
/* one element: the per-tensor and the multi-tensor kernels share it (equal bits by construction) */
struct SgdH {
  double wd, m, omd, nlr;
  float sg, mom;
  bool WD, MOM, NEST;
};
/* one element's update on values in registers (pk, bk: the parameter and its momentum, updated in place) */
__device__ __forceinline__ void sgd_val(float &pk, float &bk, float gk, const SgdH &H, bool FIRST) {
  float d = __fmul_rn(gk, H.sg);
  if (H.WD) d = adda(d, pk, H.wd);
  if (H.MOM) {
    bk = FIRST ? d : adda(__fmul_rn(bk, H.mom), d, H.omd);
    d = H.NEST ? adda(d, bk, H.m) : bk;
  }
  pk = adda(pk, d, H.nlr);
}
__device__ __forceinline__ void sgd_elem(float *p, float *buf, const float *g, int64_t k, const SgdH &H, bool FIRST) {
  float pk = p[k], bk = H.MOM && !FIRST ? buf[k] : 0.f;
  sgd_val(pk, bk, g[k], H, FIRST);
  if (H.MOM) buf[k] = bk;
  p[k] = pk;
}
__global__ void __launch_bounds__(CU_THREADS) k_sgd(SgdP P) {
  SgdH H = {P.wd, P.m, P.omd, P.nlr, P.sg, P.mom, P.WD, P.MOM, P.NEST};
  int64_t stride = gridDim.x * (int64_t)blockDim.x;
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < P.n; k += stride)
    sgd_elem(P.p, P.buf, P.g, k, H, P.FIRST);
}

/* Multi-tensor SGD: up to SGD_MT parameters per launch, their pointers passed by value in the
 * kernel's arguments (no device table to upload, so a captured graph replays it as is); each
 * tensor owns a run of blocks of SGD_CHUNK elements, blk0 the first block of each. */
#define SGD_MT 64
#define SGD_CHUNK (CU_THREADS * 8)
struct SgdMT {
  float *p[SGD_MT], *buf[SGD_MT];
  const float *g[SGD_MT];
  int64_t n[SGD_MT], blk0[SGD_MT + 1];
  uint64_t first; /* bit t: tensor t's momentum buffer is made from this step's d_p */
  int nt;
  SgdH H;
};
__global__ void __launch_bounds__(CU_THREADS) k_sgd_mt(const __grid_constant__ SgdMT P) {
  int64_t b = blockIdx.x;
  int lo = 0, hi = P.nt - 1; /* the last t with blk0[t] <= b */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (P.blk0[mid] <= b) lo = mid;
    else hi = mid - 1;
  }
  int t = lo;
  int64_t n = P.n[t], k0 = (b - P.blk0[t]) * SGD_CHUNK, k1 = k0 + SGD_CHUNK < n ? k0 + SGD_CHUNK : n;
  bool first = (P.first >> t) & 1;
  float *p = P.p[t], *buf = P.buf[t];
  const float *g = P.g[t];
  const SgdH &H = P.H;
  bool mom_in = H.MOM && !first;
  if ((k1 - k0) % 4 || ((uintptr_t)p | (uintptr_t)g | (uintptr_t)(H.MOM ? buf : p)) % 16) {
    for (int64_t k = k0 + threadIdx.x; k < k1; k += blockDim.x) sgd_elem(p, buf, g, k, H, first);
    return;
  }
  /* float4 path: every load of the thread's share issued before any store (with scalar code the stores to p
   * and buf kept the next element's loads waiting: they may alias as far as the compiler knows) */
  constexpr int V = SGD_CHUNK / 4 / CU_THREADS;
  float4 gv[V], pv[V], bv[V];
  int64_t q0 = k0 / 4 + threadIdx.x, q1 = k1 / 4;
#pragma unroll
  for (int i = 0; i < V; i++) {
    int64_t q = q0 + (int64_t)i * CU_THREADS;
    if (q < q1) {
      gv[i] = ((const float4 *)g)[q];
      pv[i] = ((const float4 *)p)[q];
      bv[i] = mom_in ? ((const float4 *)buf)[q] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
#pragma unroll
  for (int i = 0; i < V; i++) {
    int64_t q = q0 + (int64_t)i * CU_THREADS;
    if (q < q1) {
      sgd_val(pv[i].x, bv[i].x, gv[i].x, H, first);
      sgd_val(pv[i].y, bv[i].y, gv[i].y, H, first);
      sgd_val(pv[i].z, bv[i].z, gv[i].z, H, first);
      sgd_val(pv[i].w, bv[i].w, gv[i].w, H, first);
      if (H.MOM) ((float4 *)buf)[q] = bv[i];
      ((float4 *)p)[q] = pv[i];
    }
  }
}

static bool fused_usable(const ct_tensor *t, int dev) {
  return t && t->dtype == CT_FLOAT32 && t->storage->device.type == CT_DEVICE_CUDA && t->storage->device.index == dev &&
         ct_is_contiguous(t);
}
static bool make_zeros_dev(ct_pstate *s, int slot, const ct_tensor *p) {
  if (s->t[slot]) return true;
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *t = ct_zeros_like(p, NULL);
  ct_set_grad_enabled(prev);
  if (!t) return false;
  s->t[slot] = ct_own(t);
  return true;
}

/* SGD on a float32 CUDA parameter (the momentum buffer made on the first step, as the CPU's
 * fused path makes it): true if it updated it. */
static bool sgd_fused(ct_tensor *p, ct_tensor *g, ct_pstate *s, const ct_optim_options *o) {
  int dev = p->storage->device.index;
  bool mom = o->momentum != 0;
  if (!fused_usable(p, dev) || !fused_usable(g, dev) || ct_shares_storage(p, g)) return false;
  if (s->t[0] && (!fused_usable(s->t[0], dev) || ct_shares_storage(s->t[0], p) || ct_shares_storage(s->t[0], g)))
    return false;
  if (ct_cuda_use(dev) != CT_OK) return false;
  bool first = false;
  if (mom && !s->t[0]) {
    ct_tensor *t = ct_empty_like(p, NULL); /* buf = clone(d_p): written by the kernel */
    if (!t) return false;
    if (!fused_usable(t, dev)) {
      ct_release(t);
      return false;
    }
    s->t[0] = ct_own(t);
    first = true;
  }
  SgdP P;
  P.p = (float *)dptr(p);
  P.g = (const float *)dptr(g);
  P.buf = mom ? (float *)dptr(s->t[0]) : NULL;
  P.n = ct_numel(p);
  P.wd = o->weight_decay;
  P.m = o->momentum;
  P.omd = 1 - o->dampening;
  P.nlr = -o->lr;
  P.sg = o->maximize ? -1.0f : 1.0f;
  P.mom = (float)o->momentum;
  P.WD = o->weight_decay != 0;
  P.MOM = mom;
  P.FIRST = first;
  P.NEST = o->nesterov;
  if (P.n > 0) {
    k_sgd<<<fast_blocks(P.n), CU_THREADS, 0, CU_STREAM(dev)>>>(P);
    if (ct_cuda_check_launch("sgd") != CT_OK) return false;
  }
  ct_bump_version(p);
  if (s->t[0]) ct_bump_version(s->t[0]);
  return true;
}

/* src/ops/memory_format.c */
extern "C" bool ct_suggests_channels_last(const ct_tensor *t);
extern "C" bool ct_dense_same_layout(const ct_tensor *a, const ct_tensor *b);
extern "C" ct_tensor *ct_new_channels_last(const int64_t *shape, ct_dtype dt, ct_device dev);
/* t usable beside parameter p as a flat float32 array: both contiguous, or both in one dense
 * layout (channels-last weights, their gradients and momentum buffers) */
static bool sgd_usable(const ct_tensor *t, const ct_tensor *p, int dev) {
  return t && t->dtype == CT_FLOAT32 && t->storage->device.type == CT_DEVICE_CUDA && t->storage->device.index == dev &&
         ((ct_is_contiguous(t) && ct_is_contiguous(p)) || ct_dense_same_layout(t, p));
}

/* the multi-tensor kernel's hyper-parameters from a group's options */
static SgdH sgd_hyper(const ct_optim_options *o) {
  SgdH H;
  H.wd = o->weight_decay;
  H.m = o->momentum;
  H.omd = 1 - o->dampening;
  H.nlr = -o->lr;
  H.sg = o->maximize ? -1.0f : 1.0f;
  H.mom = (float)o->momentum;
  H.WD = o->weight_decay != 0;
  H.MOM = o->momentum != 0;
  H.NEST = o->nesterov;
  return H;
}
/* a first step's momentum buffer in p's dense layout (written by the kernel), NULL where none could be made */
static ct_tensor *sgd_new_buf(const ct_tensor *p, int dev) {
  ct_tensor *t = ct_suggests_channels_last(p) ? ct_new_channels_last(p->shape, p->dtype, p->storage->device)
                                              : ct_empty_like(p, NULL);
  if (t && !sgd_usable(t, p, dev)) {
    ct_release(t);
    t = NULL;
  }
  return t;
}

static int64_t sgd_mt_launch_count;
extern "C" int64_t ct_cuda_sgd_multi_launches(void) { return sgd_mt_launch_count; }

/* SGD over a whole parameter group in ceil(n / SGD_MT) launches: 1 if it updated every
 * parameter that has a grad; 0 (nothing changed) where any of them needs another path
 * (then the per-parameter loop runs); -1 a launch failed (the error is set). CT_CUDA_SGD_MT=0 turns it off (tests compare both). */
extern "C" int ct_cuda_sgd_group_fused(ct_optim *opt, ct_pgroup *gr) {
  const char *off = getenv("CT_CUDA_SGD_MT");
  if (!getenv_fast_enabled() || (off && strcmp(off, "0") == 0) || opt->kind != CT_OPTIM_SGD) return 0;
  const ct_optim_options *o = &gr->o;
  bool mom = o->momentum != 0;
  int dev = -1;
  int64_t cnt = 0;
  for (int64_t i = 0; i < gr->n; i++) {
    ct_tensor *p = gr->params[i], *g = p->grad;
    if (!g || gr->st[i].early) continue; /* early: updated during the backward (ct_optim_backward_step) */
    if (dev < 0) dev = p->storage->device.index;
    if (!gr->st[i].init || !sgd_usable(p, p, dev) || !sgd_usable(g, p, dev) || ct_shares_storage(p, g)) return 0;
    ct_tensor *b = gr->st[i].t[0];
    if (b && (!sgd_usable(b, p, dev) || ct_shares_storage(b, p) || ct_shares_storage(b, g))) return 0;
    /* the kernel assumes no parameter aliases another's memory */
    for (int64_t j = 0; j < i; j++)
      if (gr->params[j]->grad && !gr->st[j].early &&
          (ct_shares_storage(gr->params[j], p) || ct_shares_storage(gr->params[j]->grad, g)))
        return 0;
    cnt++;
  }
  if (cnt == 0 || ct_cuda_use(dev) != CT_OK) return 0;
  /* the momentum buffers of a first step (undone if one cannot be made) */
  bool *made = (bool *)calloc((size_t)gr->n, sizeof(bool));
  if (!made) return 0;
  bool ok = true;
  for (int64_t i = 0; ok && mom && i < gr->n; i++) {
    ct_tensor *p = gr->params[i];
    if (!p->grad || gr->st[i].early || gr->st[i].t[0]) continue;
    ct_tensor *t = sgd_new_buf(p, dev);
    if (!t) {
      ok = false;
      break;
    }
    gr->st[i].t[0] = ct_own(t);
    made[i] = true;
  }
  if (!ok) {
    for (int64_t i = 0; i < gr->n; i++)
      if (made[i]) {
        ct_release(gr->st[i].t[0]);
        gr->st[i].t[0] = NULL;
      }
    free(made);
    return 0;
  }
  static SgdMT P; /* 3 KiB: kept off the stack */
  P.H = sgd_hyper(o);
  int64_t i = 0;
  ct_status st = CT_OK;
  while (st == CT_OK) {
    P.nt = 0;
    P.first = 0;
    int64_t blocks = 0;
    for (; i < gr->n && P.nt < SGD_MT; i++) {
      ct_tensor *p = gr->params[i];
      if (!p->grad || gr->st[i].early || ct_numel(p) == 0) continue;
      int t = P.nt++;
      P.p[t] = (float *)dptr(p);
      P.g[t] = (const float *)dptr(p->grad);
      P.buf[t] = mom ? (float *)dptr(gr->st[i].t[0]) : NULL;
      P.n[t] = ct_numel(p);
      if (made[i]) P.first |= 1ull << t;
      P.blk0[t] = blocks;
      blocks += (P.n[t] + SGD_CHUNK - 1) / SGD_CHUNK;
    }
    if (P.nt == 0) break;
    P.blk0[P.nt] = blocks;
    /* grid.x allows 2^31 - 1 blocks: more would be a group past 10^13 elements */
    if (blocks > 0x7fffffff) {
      st = CT_ERR(CT_ERR_RUNTIME, "SGD.step: too many elements for one launch");
      break;
    }
    k_sgd_mt<<<(unsigned)blocks, CU_THREADS, 0, CU_STREAM(dev)>>>(P);
    st = ct_cuda_check_launch("sgd (multi-tensor)");
    sgd_mt_launch_count++;
    if (i >= gr->n) break;
  }
  free(made);
  if (st != CT_OK) return -1; /* the error is set; launches before it may have run */
  for (int64_t j = 0; j < gr->n; j++) {
    if (!gr->params[j]->grad || gr->st[j].early) continue;
    ct_bump_version(gr->params[j]);
    if (gr->st[j].t[0]) ct_bump_version(gr->st[j].t[0]);
  }
  return 1;
}

/* ---- SGD on one parameter as soon as the backward has made its gradient (src/optim ct_optim_backward_step) ----
 * A convolution weight's gradient comes from its launch on the second stream (k_cudnn.cu's two-stream backward);
 * the update goes to the same stream inside a forked region (lane 0, kind 2), so it queues after that launch and after all
 * the device's stream had queued (the input gradient that read the weight), and runs beside the rest of the
 * backward. The region registers the parameter and its momentum buffer as written and the gradient as read:
 * whatever on the device's stream touches them (the step's join, the next forward) waits for it. The step's
 * multi-tensor kernel on this one tensor: the same bits. Parameters under CT_CUDA_EARLY_MIN elements (default
 * 16384: ResNet-18's batch-norm and classifier parameters, its stem) are left to the step's one launch, where they
 * cost less than a node of their own. */
extern "C" int ct_cuda_fork_begin(int dev, int kind);                                    /* k_cudnn.cu */
extern "C" bool ct_cuda_region_end(int dev, int n_read, const ct_tensor *const *read);  /* cuda_backend.cu */
extern "C" void ct_cuda_region_written(int dev, const void *p);                          /* cuda_backend.cu */
static int64_t early_launches;
extern "C" int64_t ct_cuda_sgd_early_launches(void) { return __atomic_load_n(&early_launches, __ATOMIC_RELAXED); }
extern "C" bool ct_cuda_optim_update_early(ct_optim *opt, ct_pgroup *gr, int64_t i) {
  const char *off = getenv("CT_CUDA_SGD_MT"), *me = getenv("CT_CUDA_EARLY_MIN");
  if (!getenv_fast_enabled() || (off && strcmp(off, "0") == 0) || opt->kind != CT_OPTIM_SGD) return false;
  ct_tensor *p = gr->params[i], *g = p->grad;
  const ct_optim_options *o = &gr->o;
  bool mom = o->momentum != 0;
  int dev = p->storage->device.index;
  int64_t min = me && *me ? atoll(me) : 16384;
  if (!g || !gr->st[i].init || ct_numel(p) < (min > 1 ? min : 1)) return false;
  if (!sgd_usable(p, p, dev) || !sgd_usable(g, p, dev) || ct_shares_storage(p, g)) return false;
  ct_tensor *b = gr->st[i].t[0];
  if (b && (!sgd_usable(b, p, dev) || ct_shares_storage(b, p) || ct_shares_storage(b, g))) return false;
  for (int64_t j = 0; j < gr->n; j++) /* the kernel assumes no parameter aliases another's memory */
    if (j != i && (ct_shares_storage(gr->params[j], p) || (gr->params[j]->grad && ct_shares_storage(gr->params[j]->grad, g))))
      return false;
  /* kind 2: on the second stream without joining what is pending there (ct_cuda_use here would join it) */
  if (!ct_cuda_fork_begin(dev, 2)) return false;
  bool first = false;
  if (mom && !b) { /* buf = clone(d_p), written by the kernel; made inside the region: registered as its own */
    b = sgd_new_buf(p, dev);
    if (!b) {
      const ct_tensor *rd[1] = {g};
      ct_cuda_region_end(dev, 1, rd);
      return false;
    }
    gr->st[i].t[0] = ct_own(b);
    first = true;
  }
  static SgdMT P; /* 3 KiB: kept off the stack; one thread drives a device */
  P.H = sgd_hyper(o);
  P.nt = 1;
  P.first = first ? 1 : 0;
  P.p[0] = (float *)dptr(p);
  P.g[0] = (const float *)dptr(g);
  P.buf[0] = mom ? (float *)dptr(b) : NULL;
  P.n[0] = ct_numel(p);
  P.blk0[0] = 0;
  P.blk0[1] = (P.n[0] + SGD_CHUNK - 1) / SGD_CHUNK;
  ct_status st = P.blk0[1] > 0x7fffffff ? CT_ERR(CT_ERR_RUNTIME, "SGD.step: too many elements for one launch") : CT_OK;
  if (st == CT_OK) {
    k_sgd_mt<<<(unsigned)P.blk0[1], CU_THREADS, 0, CU_STREAM(dev)>>>(P);
    st = ct_cuda_check_launch("sgd (early)");
  }
  ct_cuda_region_written(dev, p->storage->data);
  if (b) ct_cuda_region_written(dev, b->storage->data);
  const ct_tensor *rd[1] = {g};
  ct_cuda_region_end(dev, 1, rd);
  if (st != CT_OK) return false; /* the error is set: the backward stops */
  __atomic_add_fetch(&early_launches, 1, __ATOMIC_RELAXED);
  ct_bump_version(p);
  if (b) ct_bump_version(b);
  return true;
}

/* Adam/AdamW on a float32 CUDA parameter: true if it updated it, false to leave it to
 * the reference path (other kinds, dtypes, layouts, aliasing). */
extern "C" bool ct_cuda_optim_update_fused(ct_optim *opt, ct_pgroup *gr, int64_t i) {
  if (!getenv_fast_enabled()) return false;
  ct_tensor *p = gr->params[i], *g = p->grad;
  ct_pstate *s = &gr->st[i];
  const ct_optim_options *o = &gr->o;
  if (opt->kind == CT_OPTIM_SGD) return sgd_fused(p, g, s, o);
  if (opt->kind != CT_OPTIM_ADAM && opt->kind != CT_OPTIM_ADAMW) return false;
  int dev = p->storage->device.index;
  if (!fused_usable(p, dev) || !fused_usable(g, dev) || ct_shares_storage(p, g)) return false;
  if (o->amsgrad && !make_zeros_dev(s, 3, p)) return false;
  for (int k = 1; k < CT_OPTIM_NSLOT; k++)
    if (s->t[k] && (!fused_usable(s->t[k], dev) || ct_shares_storage(s->t[k], p) || ct_shares_storage(s->t[k], g)))
      return false;
  if (!s->t[1] || !s->t[2] || !s->t[0] || s->t[0]->storage->device.type != CT_DEVICE_CPU) return false;
  if (ct_cuda_use(dev) != CT_OK) return false;
  double step = ct_optim_bump_step(s->t[0]);
  double bc1 = 1 - pow(o->beta1, step), bc2 = 1 - pow(o->beta2, step);
  AdamP P;
  P.p = (float *)dptr(p);
  P.g = (const float *)dptr(g);
  P.m = (float *)dptr(s->t[1]);
  P.v = (float *)dptr(s->t[2]);
  P.mx = o->amsgrad ? (float *)dptr(s->t[3]) : NULL;
  P.n = ct_numel(p);
  P.W = opt->kind == CT_OPTIM_ADAMW;
  P.WD = o->weight_decay != 0;
  P.AMS = o->amsgrad;
  P.wd = o->weight_decay;
  P.omb1 = 1 - o->beta1;
  P.sg = o->maximize ? -1.0f : 1.0f;
  P.decay = (float)(1 - o->lr * o->weight_decay);
  P.b1 = (float)o->beta1;
  P.b2 = (float)o->beta2;
  P.omb2 = (float)(1 - o->beta2);
  P.bc2 = (float)sqrt(bc2);
  P.eps = (float)o->eps;
  P.nss = (float)(-(o->lr / bc1));
  if (P.n > 0) {
    k_adam<<<fast_blocks(P.n), CU_THREADS, 0, CU_STREAM(dev)>>>(P);
    if (ct_cuda_check_launch("adam") != CT_OK) return false;
  }
  ct_bump_version(p);
  for (int k = 1; k < CT_OPTIM_NSLOT; k++)
    if (s->t[k]) ct_bump_version(s->t[k]);
  return true;
}

/* ---- fused layer_norm / rms_norm (the CPU's native_layer_norm / native_rms_norm /
 * native_norm_backward contract, src/backend/cpu/kernels_norm.c): float32 and float64
 * rows, one block (long rows) or one warp per row, statistics in double. ---- */
template <int G>
__device__ __forceinline__ double group_sum(double v, double *sh) {
#pragma unroll
  for (int h = (G < 32 ? G : 32) / 2; h > 0; h /= 2) v += __shfl_xor_sync(0xffffffffu, v, h);
  if (G > 32) {
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = 0;
#pragma unroll
    for (int k = 0; k < G / 32; k++) v += sh[k];
  }
  return v;
}

template <typename T, int G>
__global__ void __launch_bounds__(CU_THREADS) k_norm_fwd(const T *x, const T *w, const T *b, T *y, T *mean, T *rstd,
                                                          int64_t rows, int64_t n, double eps, int rms) {
  __shared__ double sh[CU_THREADS / 32];
  const int gpb = CU_THREADS / G;
  int lane = threadIdx.x % G, gid = threadIdx.x / G;
  for (int64_t r0 = (int64_t)blockIdx.x * gpb; r0 < rows; r0 += (int64_t)gridDim.x * gpb) {
    int64_t r = r0 + gid;
    bool act = r < rows;
    const T *xr = x + (act ? r : 0) * n;
    double m = 0, q = 0;
    if (!rms) {
      if (act)
        for (int64_t j = lane; j < n; j += G) m += (double)xr[j];
      m = group_sum<G>(m, sh) / (double)n;
    }
    if (act)
      for (int64_t j = lane; j < n; j += G) {
        double d = (double)xr[j] - m;
        q += d * d;
      }
    q = group_sum<G>(q, sh);
    double rs = 1.0 / sqrt(q / (double)n + eps);
    if (act) {
      T *yr = y + r * n;
      for (int64_t j = lane; j < n; j += G) {
        double v = ((double)xr[j] - m) * rs;
        if (w) v *= (double)w[j];
        if (b) v += (double)b[j];
        yr[j] = (T)v;
      }
      if (lane == 0) {
        if (mean) mean[r] = (T)m;
        rstd[r] = (T)rs;
      }
    }
  }
}

/* float32 rows of at most G * PER elements: read once into registers (one global read and
 * one write per element), the same double statistics */
template <int G, int PER>
__global__ void __launch_bounds__(CU_THREADS) k_norm_fwd_reg(const float *x, const float *w, const float *b, float *y,
                                                              float *mean, float *rstd, int64_t rows, int64_t n,
                                                              double eps, int rms) {
  __shared__ double sh[CU_THREADS / 32];
  const int gpb = CU_THREADS / G;
  int lane = threadIdx.x % G, gid = threadIdx.x / G;
  for (int64_t r0 = (int64_t)blockIdx.x * gpb; r0 < rows; r0 += (int64_t)gridDim.x * gpb) {
    int64_t r = r0 + gid;
    bool act = r < rows;
    const float *xr = x + (act ? r : 0) * n;
    float v[PER];
#pragma unroll
    for (int k = 0; k < PER; k++) {
      int64_t j = (int64_t)k * G + lane;
      v[k] = act && j < n ? xr[j] : 0.0f;
    }
    double m = 0, q = 0;
    if (!rms) {
#pragma unroll
      for (int k = 0; k < PER; k++) m += (double)v[k];
      m = group_sum<G>(m, sh) / (double)n;
    }
#pragma unroll
    for (int k = 0; k < PER; k++) {
      int64_t j = (int64_t)k * G + lane;
      double d = (double)v[k] - m;
      if (j < n) q += d * d;
    }
    q = group_sum<G>(q, sh);
    double rs = 1.0 / sqrt(q / (double)n + eps);
    if (act) {
      float *yr = y + r * n;
#pragma unroll
      for (int k = 0; k < PER; k++) {
        int64_t j = (int64_t)k * G + lane;
        if (j < n) {
          double o = ((double)v[k] - m) * rs;
          if (w) o *= (double)w[j];
          if (b) o += (double)b[j];
          yr[j] = (float)o;
        }
      }
      if (lane == 0) {
        if (mean) mean[r] = (float)m;
        rstd[r] = (float)rs;
      }
    }
  }
}

/* dx per row: dx = r ((g w - mean(g w)) - h mean(g w h)), h = (x - m) r (rms: no mean(g w)) */
template <typename T, int G>
__global__ void __launch_bounds__(CU_THREADS) k_norm_bwd_dx(const T *g, const T *x, const T *w, const T *mean,
                                                             const T *rstd, T *dx, int64_t rows, int64_t n, int rms) {
  __shared__ double sh[CU_THREADS / 32];
  const int gpb = CU_THREADS / G;
  int lane = threadIdx.x % G, gid = threadIdx.x / G;
  for (int64_t r0 = (int64_t)blockIdx.x * gpb; r0 < rows; r0 += (int64_t)gridDim.x * gpb) {
    int64_t r = r0 + gid;
    bool act = r < rows;
    int64_t rr = act ? r : 0;
    const T *xr = x + rr * n, *gr = g + rr * n;
    double m = mean ? (double)mean[rr] : 0.0, rs = (double)rstd[rr], sa = 0, sb = 0;
    if (act)
      for (int64_t j = lane; j < n; j += G) {
        double gw = w ? (double)gr[j] * (double)w[j] : (double)gr[j], h = ((double)xr[j] - m) * rs;
        sa += gw;
        sb += gw * h;
      }
    sa = group_sum<G>(sa, sh);
    sb = group_sum<G>(sb, sh);
    double ma = rms ? 0.0 : sa / (double)n, mb = sb / (double)n;
    if (act) {
      T *d = dx + r * n;
      for (int64_t j = lane; j < n; j += G) {
        double gw = w ? (double)gr[j] * (double)w[j] : (double)gr[j], h = ((double)xr[j] - m) * rs;
        d[j] = (T)(rs * ((gw - ma) - h * mb));
      }
    }
  }
}

/* dw / db: column partial sums over row chunks (grid.y = chunk), then an ordered sum of
 * the chunks per column: deterministic. */
template <typename T>
__global__ void k_norm_bwd_cols(const T *g, const T *x, const T *mean, const T *rstd, double *dwp, double *dbp,
                                int64_t rows, int64_t n, int64_t per) {
  int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (j >= n) return;
  int64_t r0 = blockIdx.y * per, r1 = r0 + per < rows ? r0 + per : rows;
  double sw = 0, sb = 0;
  for (int64_t r = r0; r < r1; r++) {
    double gv = (double)g[r * n + j];
    if (dwp) sw += gv * (((double)x[r * n + j] - (mean ? (double)mean[r] : 0.0)) * (double)rstd[r]);
    sb += gv;
  }
  if (dwp) dwp[blockIdx.y * n + j] = sw;
  if (dbp) dbp[blockIdx.y * n + j] = sb;
}
template <typename T>
__global__ void k_norm_bwd_final(const double *part, T *out, int64_t n, int64_t nch) {
  int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (j >= n) return;
  double acc = 0;
  for (int64_t c = 0; c < nch; c++) acc += part[c * n + j];
  out[j] = (T)acc;
}

static bool norm_operand_ok(const ct_tensor *t, const ct_tensor *x) {
  return !t || (t->dtype == x->dtype && ct_is_contiguous(t) && t->storage->device.type == CT_DEVICE_CUDA);
}

static ct_status cu_native_norm(const ct_call *c) {
  bool rms = c->op == CT_OP_native_rms_norm;
  const ct_tensor *x = c->in[0], *w = c->in[1], *b = rms ? NULL : c->in[2];
  ct_tensor *y = c->out[0], *mean = rms ? NULL : c->out[1], *rstd = c->out[rms ? 1 : 2];
  int64_t n = c->a.i[0], numel = ct_numel(x);
  if ((x->dtype != CT_FLOAT32 && x->dtype != CT_FLOAT64) || !ct_is_contiguous(x) || !norm_operand_ok(w, x) ||
      !norm_operand_ok(b, x) || !ct_is_contiguous(y) || n < 1 || numel % n)
    return CT_ERR(CT_ERR_RUNTIME, "%s: internal error: expected contiguous float32/float64 operands",
                  rms ? "native_rms_norm" : "native_layer_norm");
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  int64_t rows = numel / n;
  if (rows == 0) return CT_OK;
  cudaStream_t s = CU_STREAM(dev);
#define NF(T)                                                                                                        \
  do {                                                                                                               \
    const T *xp = (const T *)dptr(x), *wp = w ? (const T *)dptr(w) : NULL, *bp = b ? (const T *)dptr(b) : NULL;       \
    T *yp = (T *)dptr(y), *mp = mean ? (T *)dptr(mean) : NULL, *rp = (T *)dptr(rstd);                                 \
    if (n >= 1024) k_norm_fwd<T, 256><<<cu_blocks(rows, 1), CU_THREADS, 0, s>>>(xp, wp, bp, yp, mp, rp, rows, n, c->a.f[0], rms); \
    else k_norm_fwd<T, 32><<<cu_blocks(rows, CU_THREADS / 32), CU_THREADS, 0, s>>>(xp, wp, bp, yp, mp, rp, rows, n, c->a.f[0], rms); \
  } while (0)
  if (x->dtype == CT_FLOAT32 && n <= 8192) {
    const float *xp = (const float *)dptr(x), *wp = w ? (const float *)dptr(w) : NULL, *bp = b ? (const float *)dptr(b) : NULL;
    float *yp = (float *)dptr(y), *mp = mean ? (float *)dptr(mean) : NULL, *rp = (float *)dptr(rstd);
    double eps = c->a.f[0];
    if (n <= 128) k_norm_fwd_reg<32, 4><<<cu_blocks(rows, CU_THREADS / 32), CU_THREADS, 0, s>>>(xp, wp, bp, yp, mp, rp, rows, n, eps, rms);
    else if (n <= 1024) k_norm_fwd_reg<32, 32><<<cu_blocks(rows, CU_THREADS / 32), CU_THREADS, 0, s>>>(xp, wp, bp, yp, mp, rp, rows, n, eps, rms);
    else if (n <= 2048) k_norm_fwd_reg<256, 8><<<cu_blocks(rows, 1), CU_THREADS, 0, s>>>(xp, wp, bp, yp, mp, rp, rows, n, eps, rms);
    else k_norm_fwd_reg<256, 32><<<cu_blocks(rows, 1), CU_THREADS, 0, s>>>(xp, wp, bp, yp, mp, rp, rows, n, eps, rms);
  } else if (x->dtype == CT_FLOAT32) NF(float);
  else NF(double);
#undef NF
  return ct_cuda_check_launch(rms ? "native_rms_norm" : "native_layer_norm");
}

static ct_status cu_native_norm_backward(const ct_call *c) {
  int rms = (int)c->a.k[0];
  const ct_tensor *g = c->in[0], *x = c->in[1], *w = c->in[2], *mean = c->in[3], *rstd = c->in[4];
  ct_tensor *dx = c->out[0], *dw = c->out[1], *db = rms ? NULL : c->out[2];
  int64_t n = c->a.i[0], numel = ct_numel(x);
  if ((x->dtype != CT_FLOAT32 && x->dtype != CT_FLOAT64) || !norm_operand_ok(g, x) || !ct_is_contiguous(x) ||
      !norm_operand_ok(w, x) || !norm_operand_ok(mean, x) || !norm_operand_ok(rstd, x) || ct_numel(g) != numel ||
      n < 1 || numel % n || (dx && !ct_is_contiguous(dx)))
    return CT_ERR(CT_ERR_RUNTIME, "native_norm_backward: internal error: expected contiguous float32/float64 operands");
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  int64_t rows = numel / n;
  cudaStream_t s = CU_STREAM(dev);
  int64_t nch = rows < 256 ? rows : 256;
  if (nch < 1) nch = 1;
  int64_t per = (rows + nch - 1) / nch;
  if (per < 1) per = 1;
  nch = rows > 0 ? (rows + per - 1) / per : 1;
  size_t pb = (size_t)(nch * n) * sizeof(double);
  double *dwp = NULL, *dbp = NULL;
  if (dw && !(dwp = (double *)ct_cuda_tmp_alloc(dev, pb))) return ct_last_status();
  if (db && !(dbp = (double *)ct_cuda_tmp_alloc(dev, pb))) {
    ct_cuda_tmp_free(dev, dwp, pb);
    return ct_last_status();
  }
#define NB(T)                                                                                                         \
  do {                                                                                                                \
    const T *gp = (const T *)dptr(g), *xp = (const T *)dptr(x), *wp = w ? (const T *)dptr(w) : NULL;                   \
    const T *mp = mean ? (const T *)dptr(mean) : NULL, *rp = (const T *)dptr(rstd);                                   \
    if (dx && rows > 0) {                                                                                             \
      if (n >= 1024) k_norm_bwd_dx<T, 256><<<cu_blocks(rows, 1), CU_THREADS, 0, s>>>(gp, xp, wp, mp, rp, (T *)dptr(dx), rows, n, rms); \
      else k_norm_bwd_dx<T, 32><<<cu_blocks(rows, CU_THREADS / 32), CU_THREADS, 0, s>>>(gp, xp, wp, mp, rp, (T *)dptr(dx), rows, n, rms); \
    }                                                                                                                 \
    if ((dw || db) && rows > 0) {                                                                                     \
      dim3 grid((unsigned)((n + CU_THREADS - 1) / CU_THREADS), (unsigned)nch);                                         \
      k_norm_bwd_cols<T><<<grid, CU_THREADS, 0, s>>>(gp, xp, mp, rp, dwp, dbp, rows, n, per);                           \
    } else {                                                                                                          \
      if (dwp) cudaMemsetAsync(dwp, 0, pb, s);                                                                        \
      if (dbp) cudaMemsetAsync(dbp, 0, pb, s);                                                                        \
    }                                                                                                                 \
    unsigned fb = (unsigned)((n + CU_THREADS - 1) / CU_THREADS);                                                      \
    if (dw) k_norm_bwd_final<T><<<fb, CU_THREADS, 0, s>>>(dwp, (T *)dptr(dw), n, nch);                                  \
    if (db) k_norm_bwd_final<T><<<fb, CU_THREADS, 0, s>>>(dbp, (T *)dptr(db), n, nch);                                  \
  } while (0)
  if (x->dtype == CT_FLOAT32) NB(float);
  else NB(double);
#undef NB
  ct_status st = ct_cuda_check_launch("native_norm_backward");
  if (dwp) ct_cuda_tmp_free(dev, dwp, pb);
  if (dbp) ct_cuda_tmp_free(dev, dbp, pb);
  return st;
}

/* ---- logsumexp over the contiguous last dim of float32 (the CUDA GPT loss's logsumexp over
 * 50257 logits per token; the reference takes two double passes, ~9 ms per GPT-2 step): one
 * block per row, each thread an online (max, sum) over 16-byte vectors, merged over the block.
 * The reference's special values: NaN anywhere -> NaN, +inf anywhere -> +inf, all -inf ->
 * -inf. Anything else (other dims, dtypes, layouts) goes to the reduction kernels. ---- */
static ct_kernel_fn lse_ref, deriv_ref;

/* One row's online (max, sum-of-exp) state, NaN / +inf flags and a plain sum (label smoothing's)
 * merged over the block: warp shuffles, then warp leaders through shared memory. Thread 0 gets
 * the row's logsumexp (NaN if a NaN was seen, +inf if +inf, -inf for an all -inf row) and the
 * block's plain sum in *sx; the other threads' results are unspecified. The caller syncs the
 * block before the shared memory is reused (its next row). */
__device__ __forceinline__ float lse_block(float m, float s, int fl, float *sx) {
  __shared__ float shm[CU_THREADS / 32], shs[CU_THREADS / 32], shx[CU_THREADS / 32];
  __shared__ int shf[CU_THREADS / 32];
  float x = *sx;
#pragma unroll
  for (int h = 16; h > 0; h /= 2) {
    float m2 = __shfl_down_sync(0xffffffffu, m, h), s2 = __shfl_down_sync(0xffffffffu, s, h);
    fl |= __shfl_down_sync(0xffffffffu, fl, h);
    x += __shfl_down_sync(0xffffffffu, x, h);
    sm_merge(m, s, m2, s2);
  }
  if ((threadIdx.x & 31) == 0) {
    shm[threadIdx.x / 32] = m;
    shs[threadIdx.x / 32] = s;
    shx[threadIdx.x / 32] = x;
    shf[threadIdx.x / 32] = fl;
  }
  __syncthreads();
  if (threadIdx.x != 0) return 0.f;
  for (int k = 1; k < CU_THREADS / 32; k++) {
    sm_merge(m, s, shm[k], shs[k]);
    fl |= shf[k];
    x += shx[k];
  }
  *sx = x;
  return (fl & 1) ? __int_as_float(0x7fc00000) : (fl & 2) ? INFINITY : m == -INFINITY ? -INFINITY : m + logf(s);
}

/* logsumexp over each contiguous row of float32 or bfloat16 (the GPT loss's bfloat16 logits
 * under PyTorch-style autocast, read as they are: no float32 copy), float32 result; 16-byte
 * vectors over each row's aligned middle (rows of 50257 start anywhere) */
template <int DT>
__global__ void __launch_bounds__(CU_THREADS) k_lse_rows(const char *x, float *y, int64_t rows, int64_t len) {
  typedef typename El<DT>::raw R;
  const int V = 16 / (int)sizeof(R);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const R *xr = (const R *)x + r * len;
    float m = -INFINITY, s = 0.f, sx = 0.f;
    int fl = 0; /* bit 0: NaN seen, bit 1: +inf seen */
    auto add = [&](float v) {
      if (v != v) fl |= 1;
      else if (v == INFINITY) fl |= 2;
      else sm_add(m, s, v);
    };
    int64_t h0 = 0, nv = 0;
    if ((uintptr_t)xr % sizeof(R) == 0) {
      uintptr_t a = (uintptr_t)xr % 16;
      h0 = a ? (int64_t)((16 - a) / sizeof(R)) : 0;
      if (h0 > len) h0 = len;
      nv = (len - h0) / V;
    }
    for (int64_t j = threadIdx.x; j < h0; j += CU_THREADS) add(El<DT>::ld(xr[j]));
    const uint4 *xv = (const uint4 *)(xr + h0);
    for (int64_t q = threadIdx.x; q < nv; q += CU_THREADS) {
      uint4 in = xv[q];
      const R *ie = (const R *)&in;
#pragma unroll
      for (int e = 0; e < V; e++) add(El<DT>::ld(ie[e]));
    }
    for (int64_t j = h0 + nv * V + threadIdx.x; j < len; j += CU_THREADS) add(El<DT>::ld(xr[j]));
    float lse = lse_block(m, s, fl, &sx);
    if (threadIdx.x == 0) y[r] = lse;
    __syncthreads();
  }
}

static ct_status cu_fast_logsumexp(const ct_call *c) {
  const ct_tensor *x = c->in[0];
  const ct_tensor *y = c->n_out > 0 ? c->out[0] : NULL;
  if (!getenv_fast_enabled() || !y || (x->dtype != CT_FLOAT32 && x->dtype != CT_BFLOAT16) || y->dtype != CT_FLOAT32 ||
      x->ndim < 1 || (uint32_t)c->a.k[0] != (1u << (x->ndim - 1)) || !ct_is_contiguous(x) || !ct_is_contiguous(y))
    return lse_ref(c);
  int64_t len = x->shape[x->ndim - 1], rows = len ? ct_numel(x) / len : 0;
  if (len < 1 || rows < 1 || ct_numel(y) != rows) return lse_ref(c);
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  unsigned nb = (unsigned)(rows < 65536 ? rows : 65536);
  if (x->dtype == CT_FLOAT32) k_lse_rows<CT_FLOAT32><<<nb, CU_THREADS, 0, CU_STREAM(dev)>>>(dptr(x), (float *)dptr(y), rows, len);
  else k_lse_rows<CT_BFLOAT16><<<nb, CU_THREADS, 0, CU_STREAM(dev)>>>(dptr(x), (float *)dptr(y), rows, len);
  return ct_cuda_check_launch("logsumexp");
}

/* ---- GELU's first derivative times the incoming gradient (unary_deriv, order 1) in float over
 * contiguous float32 / bfloat16 operands of one shape (the GPT MLP's backward; the reference
 * evaluates it in double, ~0.6 ms per GPT-2 layer). The formulas are the reference's. ---- */
__device__ __forceinline__ float gelu_d1(float xv, float hv, int tanh_) {
  float d;
  if (tanh_) {
    const float kb = 0.7978845608028654f, kk = 0.044715f; /* sqrt(2/pi) */
    float x2 = xv * xv, t = tanhf(kb * (xv + kk * x2 * xv)), up = kb * (1.f + 3.f * kk * x2);
    d = 0.5f * (1.f + t) + 0.5f * xv * (1.f - t * t) * up;
  } else {
    d = 0.5f * (1.f + erff(xv * 0.7071067811865476f)) + xv * expf(-0.5f * xv * xv) * 0.3989422804014327f;
  }
  return hv * d;
}
/* vec: float32 with every pointer 16-byte aligned, four elements per 16-byte load */
template <int DT>
__global__ void __launch_bounds__(CU_THREADS) k_gelu_deriv(const char *hp, const char *xp, char *op, int64_t n, int tanh_,
                                                           int vec) {
  typedef typename El<DT>::raw R;
  const R *h = (const R *)hp, *x = (const R *)xp;
  R *o = (R *)op;
  int64_t i0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, st = (int64_t)gridDim.x * blockDim.x, done = 0;
  if (DT == CT_FLOAT32 && vec) {
    for (int64_t i = i0; i < n / 4; i += st) {
      float4 xv = ((const float4 *)x)[i], hv = ((const float4 *)h)[i];
      ((float4 *)o)[i] = make_float4(gelu_d1(xv.x, hv.x, tanh_), gelu_d1(xv.y, hv.y, tanh_), gelu_d1(xv.z, hv.z, tanh_),
                                     gelu_d1(xv.w, hv.w, tanh_));
    }
    done = n / 4 * 4;
  }
  for (int64_t i = done + i0; i < n; i += st) o[i] = El<DT>::st(gelu_d1(El<DT>::ld(x[i]), El<DT>::ld(h[i]), tanh_));
}

static ct_status cu_fast_unary_deriv(const ct_call *c) {
  const ct_tensor *h = c->in[0], *x = c->n_in > 1 ? c->in[1] : NULL, *o = c->n_out > 0 ? c->out[0] : NULL;
  if (!getenv_fast_enabled() || !x || !o || (int)c->a.k[5] != CT_OP_gelu || (int)c->a.k[4] != 1 ||
      !(h->dtype == CT_FLOAT32 || h->dtype == CT_BFLOAT16) || x->dtype != h->dtype || o->dtype != h->dtype ||
      !ct_is_contiguous(h) || !ct_is_contiguous(x) || !ct_is_contiguous(o) || ct_numel(h) != ct_numel(o) ||
      ct_numel(x) != ct_numel(o) || h->ndim != o->ndim || x->ndim != o->ndim ||
      memcmp(h->shape, o->shape, sizeof(int64_t) * (size_t)o->ndim) || memcmp(x->shape, o->shape, sizeof(int64_t) * (size_t)o->ndim))
    return deriv_ref(c);
  int64_t n = ct_numel(o);
  if (n == 0) return deriv_ref(c);
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  unsigned nb = cu_blocks(n);
  int th = c->a.k[0] != 0;
  int vec = ((uintptr_t)dptr(h) | (uintptr_t)dptr(x) | (uintptr_t)dptr(o)) % 16 == 0;
  if (h->dtype == CT_FLOAT32)
    k_gelu_deriv<CT_FLOAT32><<<nb, CU_THREADS, 0, CU_STREAM(dev)>>>(dptr(h), dptr(x), dptr(o), n, th, vec);
  else k_gelu_deriv<CT_BFLOAT16><<<nb, CU_THREADS, 0, CU_STREAM(dev)>>>(dptr(h), dptr(x), dptr(o), n, th, 0);
  return ct_cuda_check_launch("unary_deriv");
}

/* ---- sums over the leading dims of a contiguous float32 tensor ([rows, cols] -> [cols]: the
 * linear layers' bias gradients, 16384 rows of 768..3072 in the GPT-2 step, where the reduction
 * kernels' one thread per output column leaves the GPU nearly idle): blocks of 32 columns x 8 row
 * lanes each sum a chunk of rows in double, a second pass adds the chunks in order (deterministic),
 * rounded once to float. ---- */
static ct_kernel_fn sum_ref;
#define CS_ROWS 256 /* rows per chunk */

/* T: float, or uint16_t holding bfloat16 (the bias gradients under PyTorch-style autocast) */
__device__ __forceinline__ double cs_ld(float v) { return (double)v; }
__device__ __forceinline__ double cs_ld(uint16_t v) { return (double)cu_bf2f(v); }
__device__ __forceinline__ void cs_st(float *o, double v) { *o = (float)v; }
__device__ __forceinline__ void cs_st(uint16_t *o, double v) { *o = __bfloat16_as_ushort(__double2bfloat16(v)); }
template <typename T>
__global__ void __launch_bounds__(CU_THREADS) k_colsum_part(const T *x, double *part, int64_t rows, int64_t cols) {
  __shared__ double sh[8][33];
  int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  int64_t c = blockIdx.x * 32 + tx, r0 = (int64_t)blockIdx.y * CS_ROWS;
  double acc = 0.0;
  if (c < cols) {
    int64_t r1 = r0 + CS_ROWS < rows ? r0 + CS_ROWS : rows;
    for (int64_t r = r0 + ty; r < r1; r += 8) acc += cs_ld(x[r * cols + c]);
  }
  sh[ty][tx] = acc;
  __syncthreads();
  if (ty == 0 && c < cols) {
    double t = sh[0][tx];
#pragma unroll
    for (int k = 1; k < 8; k++) t += sh[k][tx];
    part[(int64_t)blockIdx.y * cols + c] = t;
  }
}
template <typename T>
__global__ void k_colsum_final(const double *part, T *out, int64_t nchunk, int64_t cols) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols; c += (int64_t)gridDim.x * blockDim.x) {
    double t = 0.0;
    for (int64_t k = 0; k < nchunk; k++) t += part[k * cols + c];
    cs_st(out + c, t);
  }
}

static ct_status cu_fast_sum(const ct_call *c) {
  const ct_tensor *x = c->in[0];
  const ct_tensor *y = c->n_out > 0 ? c->out[0] : NULL;
  uint32_t mask = (uint32_t)c->a.k[0];
  bool bf = x->dtype == CT_BFLOAT16 && y->dtype == CT_BFLOAT16; /* rounded once from the double sum */
  if (!getenv_fast_enabled() || !y || ((x->dtype != CT_FLOAT32 || y->dtype != CT_FLOAT32) && !bf) || x->ndim < 2 || mask == 0 ||
      (mask & (mask + 1)) != 0 || (mask >> (x->ndim - 1)) != 0 || !ct_is_contiguous(x) || !ct_is_contiguous(y))
    return sum_ref(c); /* mask must be dims 0..k-1 with k < ndim */
  int64_t rows = 1, cols = 1;
  for (int d = 0; d < x->ndim; d++) (mask >> d & 1 ? rows : cols) *= x->shape[d];
  /* small or skinny sums stay on the reduction kernels (their row paths are fast there) */
  if (rows < 2 * CS_ROWS || cols < 32 || ct_numel(y) != cols) return sum_ref(c);
  int64_t nchunk = (rows + CS_ROWS - 1) / CS_ROWS, ncg = (cols + 31) / 32;
  if (nchunk > 65535 || ncg > 0x7fffffff) return sum_ref(c);
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  size_t nb = sizeof(double) * (size_t)(nchunk * cols);
  double *part = (double *)ct_cuda_tmp_alloc(dev, nb);
  if (!part) return ct_last_status();
  cudaStream_t s = CU_STREAM(dev);
  if (bf) {
    k_colsum_part<<<dim3((unsigned)ncg, (unsigned)nchunk), CU_THREADS, 0, s>>>((const uint16_t *)dptr(x), part, rows, cols);
    k_colsum_final<<<cu_blocks(cols), CU_THREADS, 0, s>>>(part, (uint16_t *)dptr(y), nchunk, cols);
  } else {
    k_colsum_part<<<dim3((unsigned)ncg, (unsigned)nchunk), CU_THREADS, 0, s>>>((const float *)dptr(x), part, rows, cols);
    k_colsum_final<<<cu_blocks(cols), CU_THREADS, 0, s>>>(part, (float *)dptr(y), nchunk, cols);
  }
  ct_status st = ct_cuda_check_launch("sum");
  ct_cuda_tmp_free(dev, part, nb);
  return st;
}

/* ---- cross_entropy with class indices on CUDA (CT_OP_cross_entropy_fused and its backward,
 * src/ops/loss.c ce_fused): float32 or bfloat16 logits [N, C] in rows, contiguous; the CPU
 * kernel's formulas (kernels_norm.c). Forward: one block per row, an online (max, sum) in float
 * with the reference's special values, the target's logit and (label smoothing) the weighted row
 * sum; per-row losses in double, reduced in one block in a fixed order (deterministic). lse and
 * the weight total are float32 whatever the logits' dtype (a bfloat16 lse would put a 3% error
 * into exp(x - lse)). Backward: one pass writing ca * exp(x - lse) - cb * w - [j == t] * s(1-ls)w_t
 * per element (16-byte vectors on the aligned middle of each row); a skipped row is exact zeros.
 * With no targets (in[2] NULL, a.k[2] = 1) the backward is logsumexp's: g_i * exp(x - lse_i)
 * (ct_bw_logsumexp on CUDA: one pass instead of sub, exp and mul over the GPT's logits). ---- */
__global__ void k_ce_wsum(const char *wp, int bf, int64_t C, double *out) {
  __shared__ double sh[CU_THREADS];
  double a = 0.0;
  for (int64_t j = threadIdx.x; j < C; j += CU_THREADS)
    a += bf ? (double)cu_bf2f(((const uint16_t *)wp)[j]) : (double)((const float *)wp)[j];
  sh[threadIdx.x] = a;
  __syncthreads();
  for (int h = CU_THREADS / 2; h > 0; h /= 2) {
    if ((int)threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = sh[0];
}

template <int DT>
__global__ void __launch_bounds__(CU_THREADS) k_ce_fwd(const char *xp, const char *wp, const int64_t *tp, int64_t N,
                                                       int64_t C, int64_t ignore, float ls, float wsum_h,
                                                       const double *wsum_d, float *lse_o, double *lrow, double *krow,
                                                       bool all_rows) {
  typedef typename El<DT>::raw R;
  const R *w = (const R *)wp;
  for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
    int64_t t = tp[r];
    if (t == ignore || t < 0 || t >= C) { /* the entry point checked the range; never read outside */
      if (threadIdx.x == 0) {
        lrow[r] = 0.0;
        krow[r] = all_rows ? 1.0 : 0.0; /* unchecked (no weights): a zero row counted in the mean */
        lse_o[r] = 0.f;
      }
      continue;
    }
    const R *xr = (const R *)xp + r * C;
    float m = -INFINITY, s = 0.f, sx = 0.f;
    int fl = 0; /* bit 0: NaN seen, bit 1: +inf seen */
    for (int64_t j = threadIdx.x; j < C; j += CU_THREADS) {
      float v = El<DT>::ld(xr[j]);
      if (ls > 0.f) sx += w ? v * El<DT>::ld(w[j]) : v;
      if (v != v) fl |= 1;
      else if (v == INFINITY) fl |= 2;
      else sm_add(m, s, v);
    }
    float lse = lse_block(m, s, fl, &sx);
    if (threadIdx.x == 0) {
      double wt = w ? (double)El<DT>::ld(w[t]) : 1.0, xt = (double)El<DT>::ld(xr[t]);
      double l = (1.0 - ls) * wt * ((double)lse - xt);
      if (ls > 0.f) l += (double)ls / (double)C * ((double)lse * (wsum_d ? *wsum_d : (double)wsum_h) - (double)sx);
      lrow[r] = l;
      krow[r] = wt;
      lse_o[r] = lse;
    }
    __syncthreads();
  }
}

/* the loss: per-row losses (NONE) or their sum / mean, and the weight total, in one block */
template <int DT>
__global__ void k_ce_fwd_final(const double *lrow, const double *krow, int64_t N, int red, char *out0, float *den_o) {
  typedef typename El<DT>::raw R;
  __shared__ double sl[CU_THREADS], sk[CU_THREADS];
  double a = 0.0, b = 0.0;
  for (int64_t i = threadIdx.x; i < N; i += CU_THREADS) {
    a += lrow[i];
    b += krow[i];
    if (red == CT_REDUCTION_NONE) ((R *)out0)[i] = El<DT>::st((float)lrow[i]);
  }
  sl[threadIdx.x] = a;
  sk[threadIdx.x] = b;
  __syncthreads();
  for (int h = CU_THREADS / 2; h > 0; h /= 2) {
    if ((int)threadIdx.x < h) {
      sl[threadIdx.x] += sl[threadIdx.x + h];
      sk[threadIdx.x] += sk[threadIdx.x + h];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    if (red != CT_REDUCTION_NONE) ((R *)out0)[0] = El<DT>::st((float)(red == CT_REDUCTION_MEAN ? sl[0] / sk[0] : sl[0]));
    *den_o = (float)sk[0];
  }
}

struct CeBw {
  const char *x, *w, *g;
  char *dx;
  const int64_t *t; /* NULL: logsumexp's backward */
  const float *lse, *den;
  const double *wsum_d;
  float wsum_h, ls;
  int64_t N, C, ignore;
  int red, vec, gf32; /* gf32: g is float32 (logsumexp's float32 result over bfloat16 logits) */
};

template <int DT>
__global__ void __launch_bounds__(CU_THREADS) k_ce_bwd(CeBw k) {
  typedef typename El<DT>::raw R;
  const int V = 16 / (int)sizeof(R);
  const R *w = (const R *)k.w;
  for (int64_t r = blockIdx.x; r < k.N; r += gridDim.x) {
    const R *xr = (const R *)k.x + r * k.C;
    R *dr = (R *)k.dx + r * k.C;
    int64_t gk = k.red == CT_REDUCTION_NONE ? r : 0;
    float gi = k.gf32 ? ((const float *)k.g)[gk] : El<DT>::ld(((const R *)k.g)[gk]);
    float ca, cb = 0.f, sub = 0.f, L = k.lse[r];
    int64_t t = -1;
    bool zero = false;
    if (!k.t) ca = gi;
    else {
      t = k.t[r];
      zero = t == k.ignore || t < 0 || t >= k.C;
      float s = zero ? 0.f : k.red == CT_REDUCTION_MEAN ? gi / *k.den : gi;
      float wt = zero ? 0.f : w ? El<DT>::ld(w[t]) : 1.f;
      float wsum = k.ls > 0.f ? (k.wsum_d ? (float)*k.wsum_d : k.wsum_h) : 0.f;
      ca = s * ((1.f - k.ls) * wt + k.ls / (float)k.C * wsum);
      cb = s * k.ls / (float)k.C;
      sub = s * (1.f - k.ls) * wt;
    }
    auto val = [&](int64_t j, float v) -> float {
      if (zero) return 0.f;
      float d = ca * expf(v - L);
      if (cb != 0.f) d -= cb * (w ? El<DT>::ld(w[j]) : 1.f);
      if (j == t) d -= sub;
      return d;
    };
    int64_t h0 = 0, nv = 0;
    if (k.vec) { /* the row's first 16-byte boundary; x and dx share the offset (checked) */
      uintptr_t a = (uintptr_t)xr % 16;
      h0 = a ? (int64_t)((16 - a) / sizeof(R)) : 0;
      if (h0 > k.C) h0 = k.C;
      nv = (k.C - h0) / V;
    }
    for (int64_t j = threadIdx.x; j < h0; j += CU_THREADS) dr[j] = El<DT>::st(val(j, El<DT>::ld(xr[j])));
    const uint4 *xv = (const uint4 *)(xr + h0);
    uint4 *dv = (uint4 *)(dr + h0);
    for (int64_t q = threadIdx.x; q < nv; q += CU_THREADS) {
      uint4 in = xv[q], o;
      const R *ie = (const R *)&in;
      R *oe = (R *)&o;
#pragma unroll
      for (int e = 0; e < V; e++) oe[e] = El<DT>::st(val(h0 + q * V + e, El<DT>::ld(ie[e])));
      dv[q] = o;
    }
    for (int64_t j = h0 + nv * V + threadIdx.x; j < k.C; j += CU_THREADS) dr[j] = El<DT>::st(val(j, El<DT>::ld(xr[j])));
  }
}

static bool ce_dt(const ct_tensor *t) { return t && (t->dtype == CT_FLOAT32 || t->dtype == CT_BFLOAT16); }
static bool f32c(const ct_tensor *t, int64_t n) {
  return t && t->dtype == CT_FLOAT32 && ct_is_contiguous(t) && ct_numel(t) == n;
}
static ct_status ce_bad(const char *op) {
  return CT_ERR(CT_ERR_RUNTIME, "%s: unsupported operands on CUDA (float32/bfloat16 [N, C] contiguous logits)", op);
}

/* the weight total (label smoothing with weights) into a temporary double, else C on the host */
static ct_status ce_wsum(int dev, const ct_tensor *w, int64_t C, float ls, double **wd, float *wh) {
  *wd = NULL;
  *wh = (float)C;
  if (!w || !(ls > 0.f)) return CT_OK;
  *wd = (double *)ct_cuda_tmp_alloc(dev, sizeof(double));
  if (!*wd) return ct_last_status();
  k_ce_wsum<<<1, CU_THREADS, 0, CU_STREAM(dev)>>>(dptr(w), w->dtype == CT_BFLOAT16, C, *wd);
  return CT_OK;
}

static ct_status cu_ce_fused(const ct_call *c) {
  const ct_tensor *x = c->in[0], *t = c->n_in > 1 ? c->in[1] : NULL, *w = c->n_in > 2 ? c->in[2] : NULL;
  if (!ce_dt(x) || x->ndim != 2 || !ct_is_contiguous(x) || !t || t->dtype != CT_INT64 || !ct_is_contiguous(t) ||
      c->n_out < 3 || !c->out[0] || ct_numel(t) != x->shape[0] ||
      (w && (w->dtype != x->dtype || !ct_is_contiguous(w) || ct_numel(w) != x->shape[1])))
    return ce_bad("cross_entropy_fused");
  int64_t N = x->shape[0], C = x->shape[1];
  int red = (int)c->a.k[0];
  const ct_tensor *o0 = c->out[0];
  if (o0->dtype != x->dtype || !ct_is_contiguous(o0) || ct_numel(o0) != (red == CT_REDUCTION_NONE ? N : 1) ||
      !f32c(c->out[1], N) || !f32c(c->out[2], 1) || N < 1 || C < 1)
    return ce_bad("cross_entropy_fused");
  /* a.k[2] = 1: ct_cross_entropy_unchecked's form (session 13b; no weights): a target outside [0, C) or equal to
   * ignore_index is a zero row that still counts in the mean, as the one-hot form it replaces */
  bool all_rows = c->a.k[2] == 1 && !w;
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  float ls = (float)c->a.f[0], wh;
  double *wd;
  CT_TRY(ce_wsum(dev, w, C, ls, &wd, &wh));
  size_t nb = sizeof(double) * (size_t)(2 * N);
  double *rows = (double *)ct_cuda_tmp_alloc(dev, nb);
  if (!rows) {
    if (wd) ct_cuda_tmp_free(dev, wd, sizeof(double));
    return ct_last_status();
  }
  cudaStream_t s = CU_STREAM(dev);
  unsigned nbk = (unsigned)(N < 65536 ? N : 65536);
  const char *wp = w ? dptr(w) : NULL;
  const int64_t *tp = (const int64_t *)dptr(t);
  float *lse = (float *)dptr(c->out[1]), *den = (float *)dptr(c->out[2]);
  if (x->dtype == CT_FLOAT32) {
    k_ce_fwd<CT_FLOAT32><<<nbk, CU_THREADS, 0, s>>>(dptr(x), wp, tp, N, C, c->a.i[0], ls, wh, wd, lse, rows, rows + N, all_rows);
    k_ce_fwd_final<CT_FLOAT32><<<1, CU_THREADS, 0, s>>>(rows, rows + N, N, red, dptr(o0), den);
  } else {
    k_ce_fwd<CT_BFLOAT16><<<nbk, CU_THREADS, 0, s>>>(dptr(x), wp, tp, N, C, c->a.i[0], ls, wh, wd, lse, rows, rows + N, all_rows);
    k_ce_fwd_final<CT_BFLOAT16><<<1, CU_THREADS, 0, s>>>(rows, rows + N, N, red, dptr(o0), den);
  }
  ct_status st = ct_cuda_check_launch("cross_entropy_fused");
  ct_cuda_tmp_free(dev, rows, nb);
  if (wd) ct_cuda_tmp_free(dev, wd, sizeof(double));
  return st;
}

/* in: g, x, t (NULL: logsumexp's backward, a.k[2] = 1), w, lse (float32 [N]), den (float32 []) */
static ct_status cu_ce_fused_backward(const ct_call *c) {
  if (c->n_in < 6 || c->n_out < 1) return ce_bad("cross_entropy_fused_backward");
  const ct_tensor *g = c->in[0], *x = c->in[1], *t = c->in[2], *w = c->in[3], *lse = c->in[4], *den = c->in[5];
  const ct_tensor *o = c->out[0];
  bool lse_mode = c->a.k[2] == 1 && !c->in[2]; /* (with targets, a.k[2] = 1 is the unchecked cross-entropy) */
  if (!ce_dt(x) || x->ndim < 1 || !ct_is_contiguous(x) || !o || o->dtype != x->dtype || !ct_is_contiguous(o) ||
      ct_numel(o) != ct_numel(x) || !g || !ct_is_contiguous(g) ||
      (g->dtype != x->dtype && !(c->a.k[2] == 1 && g->dtype == CT_FLOAT32)))
    return ce_bad("cross_entropy_fused_backward");
  int64_t C = x->shape[x->ndim - 1], N = C ? ct_numel(x) / C : 0;
  int red = (int)c->a.k[0];
  if (lse_mode) {
    if (t || w || red != CT_REDUCTION_NONE) return ce_bad("cross_entropy_fused_backward");
  } else if (x->ndim != 2 || !t || t->dtype != CT_INT64 || !ct_is_contiguous(t) || ct_numel(t) != N || !f32c(den, 1) ||
             (w && (w->dtype != x->dtype || !ct_is_contiguous(w) || ct_numel(w) != C)))
    return ce_bad("cross_entropy_fused_backward");
  if (!f32c(lse, N) || ct_numel(g) != (red == CT_REDUCTION_NONE ? N : 1)) return ce_bad("cross_entropy_fused_backward");
  if (N == 0 || C == 0) return CT_OK;
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  CeBw k;
  memset(&k, 0, sizeof k);
  k.ls = lse_mode ? 0.f : (float)c->a.f[0];
  double *wd;
  CT_TRY(ce_wsum(dev, lse_mode ? NULL : w, C, k.ls, &wd, &k.wsum_h));
  k.x = dptr(x);
  k.w = w && !lse_mode ? dptr(w) : NULL;
  k.g = dptr(g);
  k.gf32 = g->dtype != x->dtype;
  k.dx = dptr(o);
  k.t = lse_mode ? NULL : (const int64_t *)dptr(t);
  k.lse = (const float *)dptr(lse);
  k.den = lse_mode ? NULL : (const float *)dptr(den);
  k.wsum_d = wd;
  k.N = N;
  k.C = C;
  k.ignore = c->a.i[0];
  k.red = red;
  k.vec = (uintptr_t)k.x % 16 == (uintptr_t)k.dx % 16 && (uintptr_t)k.x % ct_dtype_size(x->dtype) == 0;
  unsigned nbk = (unsigned)(N < 65536 ? N : 65536);
  if (x->dtype == CT_FLOAT32) k_ce_bwd<CT_FLOAT32><<<nbk, CU_THREADS, 0, CU_STREAM(dev)>>>(k);
  else k_ce_bwd<CT_BFLOAT16><<<nbk, CU_THREADS, 0, CU_STREAM(dev)>>>(k);
  ct_status st = ct_cuda_check_launch("cross_entropy_fused_backward");
  if (wd) ct_cuda_tmp_free(dev, wd, sizeof(double));
  return st;
}

/* ---- clip_grad_norm_ (2-norm) over float32 CUDA gradients in a few launches (PyTorch's foreach
 * norm): per 64 tensors, one launch of per-chunk sums of squares (double) and one of per-tensor
 * norms (each tensor's chunks added in order, sqrt, rounded to float32 as ct_norm's result);
 * one block then the total (the 2-norm of the float32 norms in double, rounded) and the clamped
 * coefficient with clip.c's float32 steps (1 / (total + 1e-6) * max_norm, at most 1); per 64
 * tensors one launch scaling the gradients by it. Deterministic (fixed orders, no atomics), no
 * host read (graph-safe); the composed form in clip.c is the reference. ---- */
#define CLIP_MT 64
#define CLIP_CHUNK (CU_THREADS * 16)
struct ClipMT {
  float *g[CLIP_MT];
  int64_t n[CLIP_MT], blk0[CLIP_MT + 1];
  int nt;
};
__device__ __forceinline__ int clip_tensor_of(const ClipMT &P, int64_t b) {
  int lo = 0, hi = P.nt - 1; /* the last t with blk0[t] <= b */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (P.blk0[mid] <= b) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
__global__ void __launch_bounds__(CU_THREADS) k_clip_sq(const __grid_constant__ ClipMT P, double *part) {
  __shared__ double sh[CU_THREADS / 32];
  int64_t b = blockIdx.x;
  int t = clip_tensor_of(P, b);
  int64_t n = P.n[t], k0 = (b - P.blk0[t]) * CLIP_CHUNK, k1 = k0 + CLIP_CHUNK < n ? k0 + CLIP_CHUNK : n;
  const float *g = P.g[t];
  double a = 0.0;
  for (int64_t k = k0 + threadIdx.x; k < k1; k += CU_THREADS) {
    double v = (double)g[k];
    a += v * v;
  }
  a = group_sum<CU_THREADS>(a, sh);
  if (threadIdx.x == 0) part[b] = a;
}
/* block t: tensor t's chunk sums in a fixed order -> its float32 norm */
__global__ void __launch_bounds__(CU_THREADS) k_clip_tnorm(const __grid_constant__ ClipMT P, const double *part,
                                                           float *tnorm) {
  __shared__ double sh[CU_THREADS / 32];
  int t = blockIdx.x;
  double a = 0.0;
  for (int64_t b = P.blk0[t] + threadIdx.x; b < P.blk0[t + 1]; b += CU_THREADS) a += part[b];
  a = group_sum<CU_THREADS>(a, sh);
  if (threadIdx.x == 0) tnorm[t] = (float)sqrt(a);
}
__global__ void __launch_bounds__(CU_THREADS) k_clip_total(const float *tnorm, int64_t ng, float max_norm, float *total,
                                                           float *coef) {
  __shared__ double sh[CU_THREADS / 32];
  double a = 0.0;
  for (int64_t i = threadIdx.x; i < ng; i += CU_THREADS) {
    double v = (double)tnorm[i];
    a += v * v;
  }
  a = group_sum<CU_THREADS>(a, sh);
  if (threadIdx.x == 0) {
    float tf = (float)sqrt(a), r = 1.0f / (tf + 1e-6f), c = r * max_norm;
    *total = tf;
    *coef = c > 1.0f ? 1.0f : c; /* NaN stays NaN, as clamp(max=1) */
  }
}
__global__ void __launch_bounds__(CU_THREADS) k_clip_scale(const __grid_constant__ ClipMT P, const float *coef) {
  int64_t b = blockIdx.x;
  int t = clip_tensor_of(P, b);
  int64_t n = P.n[t], k0 = (b - P.blk0[t]) * CLIP_CHUNK, k1 = k0 + CLIP_CHUNK < n ? k0 + CLIP_CHUNK : n;
  float c = *coef, *g = P.g[t];
  for (int64_t k = k0 + threadIdx.x; k < k1; k += CU_THREADS) g[k] = g[k] * c;
}
static int64_t clip_launches;
extern "C" int64_t ct_cuda_clip_fused_launches(void) { return clip_launches; }
/* *total: the total norm (a new float32 0-d tensor) and true when it applies: every gradient a
 * contiguous float32 tensor on one CUDA device, at least one; false (nothing done) otherwise. On
 * a failure true with *total NULL and the error set. */
extern "C" bool ct_cuda_clip_grad_norm_fused(int64_t n, ct_tensor *const *params, double max_norm, ct_tensor **total) {
  *total = NULL;
  if (!getenv_fast_enabled()) return false;
  int64_t ng = 0;
  int dev = -1;
  for (int64_t i = 0; i < n; i++) {
    ct_tensor *g = params[i]->grad;
    if (!g) continue;
    if (g->storage->device.type != CT_DEVICE_CUDA || g->dtype != CT_FLOAT32 || !ct_is_contiguous(g)) return false;
    if (dev >= 0 && g->storage->device.index != dev) return false;
    dev = g->storage->device.index;
    ng++;
  }
  if (ng == 0) return false;
  if (ct_cuda_use(dev) != CT_OK) return true;
  /* chunks per group of 64 tensors, then the partial sums' offsets */
  int64_t nblk = 0;
  for (int64_t i = 0; i < n; i++)
    if (params[i]->grad) nblk += (ct_numel(params[i]->grad) + CLIP_CHUNK - 1) / CLIP_CHUNK;
  size_t pb = sizeof(double) * (size_t)(nblk > 0 ? nblk : 1), tb = sizeof(float) * (size_t)(ng + 2);
  double *part = (double *)ct_cuda_tmp_alloc(dev, pb);
  float *tn = part ? (float *)ct_cuda_tmp_alloc(dev, tb) : NULL;
  ct_device dv = {CT_DEVICE_CUDA, dev};
  ct_tensor *out = tn ? ct_tensor_new(0, NULL, CT_FLOAT32, dv) : NULL;
  if (!out) {
    if (part) ct_cuda_tmp_free(dev, part, pb);
    if (tn) ct_cuda_tmp_free(dev, tn, tb);
    return true;
  }
  float *coef = tn + ng;
  cudaStream_t s = CU_STREAM(dev);
  ct_status st = CT_OK;
  for (int pass = 0; pass < 2 && st == CT_OK; pass++) {
    if (pass == 1) {
      k_clip_total<<<1, CU_THREADS, 0, s>>>(tn, ng, (float)max_norm, (float *)dptr(out), coef);
      clip_launches++;
    }
    int64_t i = 0, t_base = 0, b_base = 0;
    while (i < n && st == CT_OK) {
      ClipMT P;
      memset(&P, 0, sizeof P);
      int64_t blocks = 0;
      for (; i < n && P.nt < CLIP_MT; i++) {
        ct_tensor *g = params[i]->grad;
        if (!g || ct_numel(g) == 0) continue;
        int t = P.nt++;
        P.g[t] = (float *)dptr(g);
        P.n[t] = ct_numel(g);
        P.blk0[t] = blocks;
        blocks += (P.n[t] + CLIP_CHUNK - 1) / CLIP_CHUNK;
      }
      if (P.nt == 0) break;
      P.blk0[P.nt] = blocks;
      if (blocks > 0x7fffffff) {
        st = CT_ERR(CT_ERR_RUNTIME, "clip_grad_norm_: too many elements for one launch");
        break;
      }
      if (pass == 0) {
        k_clip_sq<<<(unsigned)blocks, CU_THREADS, 0, s>>>(P, part + b_base);
        k_clip_tnorm<<<(unsigned)P.nt, CU_THREADS, 0, s>>>(P, part + b_base, tn + t_base);
        clip_launches += 2;
      } else {
        k_clip_scale<<<(unsigned)blocks, CU_THREADS, 0, s>>>(P, coef);
        clip_launches++;
      }
      st = ct_cuda_check_launch("clip_grad_norm_ (multi-tensor)");
      t_base += P.nt;
      b_base += blocks;
    }
    /* gradients with no elements: norm 0 (they add nothing; their slots stay out of tn) */
    if (pass == 0 && st == CT_OK && t_base < ng)
      cudaMemsetAsync(tn + t_base, 0, sizeof(float) * (size_t)(ng - t_base), s);
  }
  ct_cuda_tmp_free(dev, part, pb);
  ct_cuda_tmp_free(dev, tn, tb);
  if (st != CT_OK) {
    ct_release(out);
    return true;
  }
  for (int64_t i = 0; i < n; i++)
    if (params[i]->grad) ct_bump_version(params[i]->grad);
  *total = out;
  return true;
}

extern "C" void ct_cuda_register_fast(ct_kernel_fn *tab) {
  /* logsumexp / unary_deriv: the fast paths above, else the reference kernels registered before */
  if (tab[CT_OP_logsumexp] && tab[CT_OP_logsumexp] != cu_fast_logsumexp) {
    lse_ref = tab[CT_OP_logsumexp];
    tab[CT_OP_logsumexp] = cu_fast_logsumexp;
  }
  if (tab[CT_OP_fill] && tab[CT_OP_fill] != cu_fast_fill) {
    fill_ref = tab[CT_OP_fill];
    tab[CT_OP_fill] = cu_fast_fill;
  }
  if (tab[CT_OP_sum] && tab[CT_OP_sum] != cu_fast_sum) {
    sum_ref = tab[CT_OP_sum];
    tab[CT_OP_sum] = cu_fast_sum;
  }
  if (tab[CT_OP_unary_deriv] && tab[CT_OP_unary_deriv] != cu_fast_unary_deriv) {
    deriv_ref = tab[CT_OP_unary_deriv];
    tab[CT_OP_unary_deriv] = cu_fast_unary_deriv;
  }
  tab[CT_OP_cross_entropy_fused] = cu_ce_fused;
  tab[CT_OP_cross_entropy_fused_backward] = cu_ce_fused_backward;
  tab[CT_OP_native_layer_norm] = cu_native_norm;
  tab[CT_OP_native_rms_norm] = cu_native_norm;
  tab[CT_OP_native_norm_backward] = cu_native_norm_backward;
}
