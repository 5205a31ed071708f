/* Flash attention on CUDA: the ops sdpa_flash / sdpa_flash_backward (contracts in
 * src/backend/cpu/kernels_attention.c; the entry point src/ops/nn.c takes this path for
 * float32 / float16 / bfloat16 CUDA tensors, no mask, no dropout, E == Ev in {64, 128}).
 *
 * Forward: one block of 256 threads per (batch*head, 64 queries); it walks the key blocks
 * of 64 with an online softmax (running max m and sum l per query row), so the L x S
 * score matrix never exists, and writes out = O / l and lse = m + log l (float32 for every
 * input dtype: a bfloat16 log-sum-exp would put ~0.4% error into every recomputed P).
 * Backward (P recomputed blockwise from lse, no atomics, so results are deterministic):
 * delta = rowsum(dO * O); one kernel per (batch*head, 64 keys) sums dV = P^T dO and
 * dK = scale dS^T Q over the query blocks; another per (batch*head, 64 queries) sums
 * dQ = scale dS K over the key blocks, with dS = P (dO V^T - delta).
 * Arithmetic is float32 FMA on tiles staged in shared memory as float (inputs of every
 * dtype converted on load, outputs rounded once on store); each thread owns a 4 x 4 piece
 * of a 64 x 64 tile (rows ty + 16 i, columns tx + 16 j: rows padded to D + 1 floats so
 * the 16 column-lanes hit 16 banks). Inputs may have any batch strides (expanded views)
 * and row stride; the last dim must be contiguous (the entry point guarantees it). */
#include "cu_common.cuh"
#include "ctorch/cuda.h"
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <math.h>
#include <stdlib.h>
#include "k_attention.cuh"

#define FA_B 64  /* queries and keys per tile */
#define FA_T 256 /* 16 x 16 threads */
#define FA_P (FA_B + 1)

static int64_t fa_calls[2];

/* rows r0.. of t (batch offset off) into sm [64][D + 1]; rows past n are zeros */
template <int DT, int D>
__device__ __forceinline__ void fa_load(float *sm, const FaIn &t, int64_t off, int64_t r0, int64_t n) {
  for (int e = threadIdx.x; e < FA_B * D; e += FA_T) {
    int r = e / D, c = e % D;
    int64_t row = r0 + r;
    sm[r * (D + 1) + c] = row < n ? fa_ld<DT>(t.p, off + row * t.rs + c) : 0.f;
  }
}

/* acc[i][j] = sum_d A[ty + 16 i][d] B[tx + 16 j][d] */
template <int D>
__device__ __forceinline__ void fa_abt(const float *A, const float *B, float acc[4][4], int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) acc[i][j] = 0.f;
#pragma unroll 8
  for (int d = 0; d < D; d++) {
    float x[4], y[4];
#pragma unroll
    for (int i = 0; i < 4; i++) x[i] = A[(ty + 16 * i) * (D + 1) + d];
#pragma unroll
    for (int j = 0; j < 4; j++) y[j] = B[(tx + 16 * j) * (D + 1) + d];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++) acc[i][j] = fmaf(x[i], y[j], acc[i][j]);
  }
}

/* acc[i][j] += sum_k M[ty + 16 i][k] X[k][tx + 16 j] (M: [64][65], X: [64][D + 1]) */
template <int D>
__device__ __forceinline__ void fa_mx(const float *M, const float *X, float acc[4][D / 16], int ty, int tx) {
#pragma unroll 4
  for (int k = 0; k < FA_B; k++) {
    float m[4], x[D / 16];
#pragma unroll
    for (int i = 0; i < 4; i++) m[i] = M[(ty + 16 * i) * FA_P + k];
#pragma unroll
    for (int j = 0; j < D / 16; j++) x[j] = X[k * (D + 1) + tx + 16 * j];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < D / 16; j++) acc[i][j] = fmaf(m[i], x[j], acc[i][j]);
  }
}

/* over the 16 lanes of one row group (lane bits 0-3) */
__device__ __forceinline__ float fa_rmax(float v) {
#pragma unroll
  for (int o = 1; o < 16; o <<= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float fa_rsum(float v) {
#pragma unroll
  for (int o = 1; o < 16; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <int DT, int D> __global__ void __launch_bounds__(FA_T) k_fa_fwd(FaArgs a) {
  extern __shared__ float sm[];
  float *Qs = sm, *Ks = Qs + FA_B * (D + 1), *Vs = Ks + FA_B * (D + 1), *Ps = Vs + FA_B * (D + 1);
  int64_t nqb = (a.L + FA_B - 1) / FA_B;
  int64_t bh = blockIdx.x / nqb, qb = nqb - 1 - blockIdx.x % nqb; /* the longest causal rows first */
  int64_t q0 = qb * FA_B;
  int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  fa_load<DT, D>(Qs, a.q, fa_off(a, a.q, bh), q0, a.L);
  int64_t koff = fa_off(a, a.k, bh), voff = fa_off(a, a.v, bh);
  float m[4], l[4], o[4][D / 16];
#pragma unroll
  for (int i = 0; i < 4; i++) {
    m[i] = -INFINITY;
    l[i] = 0.f;
#pragma unroll
    for (int j = 0; j < D / 16; j++) o[i][j] = 0.f;
  }
  int64_t kend = a.S;
  if (a.causal && q0 + FA_B < kend) kend = q0 + FA_B;
  for (int64_t k0 = 0; k0 < kend; k0 += FA_B) {
    __syncthreads(); /* the previous block is done with Ks, Vs, Ps */
    fa_load<DT, D>(Ks, a.k, koff, k0, a.S);
    fa_load<DT, D>(Vs, a.v, voff, k0, a.S);
    __syncthreads();
    float s[4][4];
    fa_abt<D>(Qs, Ks, s, ty, tx);
#pragma unroll
    for (int i = 0; i < 4; i++) {
      int64_t qi = q0 + ty + 16 * i;
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        int64_t kj = k0 + tx + 16 * j;
        s[i][j] = (kj >= a.S || (a.causal && kj > qi)) ? -INFINITY : s[i][j] * a.scale;
        mx = fmaxf(mx, s[i][j]);
      }
      float mn = fmaxf(m[i], fa_rmax(mx));
      float mu = mn == -INFINITY ? 0.f : mn; /* a row with nothing visible yet */
      float alpha = expf(m[i] - mu), rs = 0.f;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        float p = expf(s[i][j] - mu);
        Ps[(ty + 16 * i) * FA_P + tx + 16 * j] = p;
        rs += p;
      }
      l[i] = l[i] * alpha + fa_rsum(rs);
      m[i] = mn;
#pragma unroll
      for (int j = 0; j < D / 16; j++) o[i][j] *= alpha;
    }
    __syncthreads();
    fa_mx<D>(Ps, Vs, o, ty, tx);
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    int64_t qi = q0 + ty + 16 * i;
    if (qi >= a.L) continue;
    float inv = 1.f / l[i];
    int64_t base = (bh * a.L + qi) * D;
#pragma unroll
    for (int j = 0; j < D / 16; j++) fa_st<DT>(a.out, base + tx + 16 * j, o[i][j] * inv);
    if (tx == 0) a.lse[bh * a.L + qi] = m[i] + logf(l[i]);
  }
}

/* ---- float16 / bfloat16 forward on the tensor cores (WMMA 16x16x16, float32
 * accumulation). 4 warps, each owns 16 of the block's 64 query rows: S = Q K^T into a
 * float tile in shared memory, the online softmax there (two lanes per row), P rounded to
 * the input dtype (as FlashAttention does), O kept as float in shared memory and updated
 * by O = alpha O + P V through accumulator fragments (their element layout is opaque, so
 * the per-row rescale happens in shared memory). CT_CUDA_FA_TC=0 takes the SIMT kernel. */
/* rows r0.. of t (batch offset off) into dst [64][ld] of the 16-bit compute type T: raw
 * copies (16-byte vectors where vec) when the input is T already, float32 inputs rounded to T
 * (bf16 autocast); zeros past n. All threads of the block take part. */
template <int IDT, int CT, int D>
__device__ __forceinline__ void tc_load(typename TcT<CT>::t *dst, int ld, const FaIn &t, int64_t off, int64_t r0,
                                        int64_t n, int vec, int nthr) {
  if (IDT == CT && vec) {
    for (int e = threadIdx.x; e < FA_B * D / 8; e += nthr) {
      int r = e / (D / 8), c = (e % (D / 8)) * 8;
      uint4 x = make_uint4(0, 0, 0, 0);
      if (r0 + r < n) x = *(const uint4 *)(t.p + 2 * (off + (r0 + r) * t.rs + c));
      *(uint4 *)(dst + r * ld + c) = x;
    }
  } else if (IDT == CT) {
    for (int e = threadIdx.x; e < FA_B * D; e += nthr) {
      int r = e / D, c = e % D;
      uint16_t x = r0 + r < n ? ((const uint16_t *)t.p)[off + (r0 + r) * t.rs + c] : 0;
      ((uint16_t *)dst)[r * ld + c] = x;
    }
  } else {
    for (int e = threadIdx.x; e < FA_B * D; e += nthr) {
      int r = e / D, c = e % D;
      float x = r0 + r < n ? fa_ld<IDT>(t.p, off + (r0 + r) * t.rs + c) : 0.f;
      dst[r * ld + c] = CT == 1 ? (typename TcT<CT>::t)__float2half_rn(x) : (typename TcT<CT>::t)__float2bfloat16_rn(x);
    }
  }
}

template <int IDT, int DT, int D> __global__ void __launch_bounds__(TC_W * 32) k_fa_fwd_tc(FaArgs a, int vec) {
  typedef typename TcT<DT>::t T;
  extern __shared__ __align__(128) unsigned char smb[];
  const int LD = D + TC_KP, LS = FA_B + 4, LP = FA_B + TC_KP, LO = D + 4;
  T *Qs = (T *)smb, *Ks = Qs + FA_B * LD, *Vs = Ks + FA_B * LD;
  float *Sw = (float *)(Vs + FA_B * LD);
  float *Ow = Sw + TC_W * 16 * LS;
  T *Pw = (T *)(Ow + TC_W * 16 * LO);
  int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  float *S_ = Sw + w * 16 * LS, *O_ = Ow + w * 16 * LO;
  T *P_ = Pw + w * 16 * LP;
  int64_t nqb = (a.L + FA_B - 1) / FA_B;
  int64_t bh = blockIdx.x / nqb, q0 = (nqb - 1 - blockIdx.x % nqb) * FA_B;
  int64_t qoff = fa_off(a, a.q, bh), koff = fa_off(a, a.k, bh), voff = fa_off(a, a.v, bh);
  auto load = [&](T *dst, const FaIn &t, int64_t off, int64_t r0, int64_t n) {
    tc_load<IDT, DT, D>(dst, LD, t, off, r0, n, vec, TC_W * 32);
  };
  load(Qs, a.q, qoff, q0, a.L);
  for (int e = lane; e < 16 * D; e += 32) O_[(e / D) * LO + e % D] = 0.f;
  int r = lane / 2, h = lane % 2;
  int64_t qi = q0 + w * 16 + r;
  float m = -INFINITY, l = 0.f;
  int64_t kend = a.S;
  if (a.causal && q0 + FA_B < kend) kend = q0 + FA_B;
  for (int64_t k0 = 0; k0 < kend; k0 += FA_B) {
    __syncthreads();
    load(Ks, a.k, koff, k0, a.S);
    load(Vs, a.v, voff, k0, a.S);
    __syncthreads();
#pragma unroll
    for (int n = 0; n < FA_B / 16; n++) {
      nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
      nvcuda::wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int d = 0; d < D / 16; d++) {
        nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, T, nvcuda::wmma::row_major> fa;
        nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, T, nvcuda::wmma::col_major> fb;
        nvcuda::wmma::load_matrix_sync(fa, Qs + (w * 16) * LD + d * 16, LD);
        nvcuda::wmma::load_matrix_sync(fb, Ks + (n * 16) * LD + d * 16, LD);
        nvcuda::wmma::mma_sync(acc, fa, fb, acc);
      }
      nvcuda::wmma::store_matrix_sync(S_ + n * 16, acc, LS, nvcuda::wmma::mem_row_major);
    }
    __syncwarp();
    float mx = -INFINITY;
    for (int j = 0; j < 32; j++) {
      int64_t kj = k0 + h * 32 + j;
      float v = (kj >= a.S || (a.causal && kj > qi)) ? -INFINITY : S_[r * LS + h * 32 + j] * a.scale;
      S_[r * LS + h * 32 + j] = v;
      mx = fmaxf(mx, v);
    }
    float mn = fmaxf(m, fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1)));
    float mu = mn == -INFINITY ? 0.f : mn;
    float alpha = expf(m - mu), rs = 0.f;
    for (int j = 0; j < 32; j++) {
      float p = expf(S_[r * LS + h * 32 + j] - mu);
      rs += p;
      P_[r * LP + h * 32 + j] = DT == 1 ? (T)__float2half_rn(p) : (T)__float2bfloat16_rn(p);
    }
    l = l * alpha + rs + __shfl_xor_sync(0xffffffffu, rs, 1);
    m = mn;
    for (int c = h * (D / 2); c < (h + 1) * (D / 2); c++) O_[r * LO + c] *= alpha;
    __syncwarp();
#pragma unroll
    for (int n = 0; n < D / 16; n++) {
      nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
      nvcuda::wmma::load_matrix_sync(acc, O_ + n * 16, LO, nvcuda::wmma::mem_row_major);
#pragma unroll
      for (int k = 0; k < FA_B / 16; k++) {
        nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, T, nvcuda::wmma::row_major> fa;
        nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, T, nvcuda::wmma::row_major> fb;
        nvcuda::wmma::load_matrix_sync(fa, P_ + k * 16, LP);
        nvcuda::wmma::load_matrix_sync(fb, Vs + (k * 16) * LD + n * 16, LD);
        nvcuda::wmma::mma_sync(acc, fa, fb, acc);
      }
      nvcuda::wmma::store_matrix_sync(O_ + n * 16, acc, LO, nvcuda::wmma::mem_row_major);
    }
    __syncwarp();
  }
  if (qi < a.L) {
    float inv = 1.f / l;
    int64_t base = (bh * a.L + qi) * D;
    for (int c = h * (D / 2); c < (h + 1) * (D / 2); c++) fa_st<IDT>(a.out, base + c, O_[r * LO + c] * inv);
    if (h == 0) a.lse[bh * a.L + qi] = m + logf(l);
  }
}
#define FA_SMEM_TC(D) \
  ((size_t)3 * FA_B * ((D) + TC_KP) * 2 + (size_t)TC_W * 16 * ((FA_B + 4) + ((D) + 4)) * 4 + (size_t)TC_W * 16 * (FA_B + TC_KP) * 2)

static bool fa_tc_on(void) {
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("CT_CUDA_FA_TC");
    on = !(e && e[0] == '0');
  }
  return on != 0;
}

/* delta[bh, i] = sum_d dO[i, d] O[i, d]: a warp per row */
template <int DT, int D> __global__ void k_fa_delta(FaArgs a) {
  int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (w >= a.BH * a.L) return;
  int64_t bh = w / a.L, i = w % a.L;
  int64_t go = fa_off(a, a.go, bh) + i * a.go.rs, oo = fa_off(a, a.o, bh) + i * a.o.rs;
  float s = 0.f;
  for (int d = lane; d < D; d += 32) s += fa_ld<DT>(a.go.p, go + d) * fa_ld<DT>(a.o.p, oo + d);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) a.delta[w] = s;
}

/* dK, dV for 64 keys: thread rows are keys, columns queries (S^T = K Q^T) */
template <int DT, int D> __global__ void __launch_bounds__(FA_T) k_fa_bwd_kv(FaArgs a) {
  extern __shared__ float sm[];
  const int T = FA_B * (D + 1);
  float *Ks = sm, *Vs = Ks + T, *Qs = Vs + T, *Gs = Qs + T, *Pt = Gs + T, *Dt = Pt + FA_B * FA_P;
  float *Ls = Dt + FA_B * FA_P, *Ds = Ls + FA_B;
  int64_t nkb = (a.S + FA_B - 1) / FA_B;
  int64_t bh = blockIdx.x / nkb, k0 = (blockIdx.x % nkb) * FA_B;
  int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  fa_load<DT, D>(Ks, a.k, fa_off(a, a.k, bh), k0, a.S);
  fa_load<DT, D>(Vs, a.v, fa_off(a, a.v, bh), k0, a.S);
  int64_t qoff = fa_off(a, a.q, bh), goff = fa_off(a, a.go, bh);
  float dk[4][D / 16], dv[4][D / 16];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < D / 16; j++) dk[i][j] = dv[i][j] = 0.f;
  int64_t qstart = a.causal ? (k0 / FA_B) * FA_B : 0; /* earlier queries see none of these keys */
  for (int64_t q0 = qstart; q0 < a.L; q0 += FA_B) {
    __syncthreads();
    fa_load<DT, D>(Qs, a.q, qoff, q0, a.L);
    fa_load<DT, D>(Gs, a.go, goff, q0, a.L);
    for (int r = threadIdx.x; r < FA_B; r += FA_T) {
      bool in = q0 + r < a.L;
      Ls[r] = in ? a.lse[bh * a.L + q0 + r] : INFINITY; /* P = 0 on padding rows */
      Ds[r] = in ? a.delta[bh * a.L + q0 + r] : 0.f;
    }
    __syncthreads();
    float s[4][4], dp[4][4];
    fa_abt<D>(Ks, Qs, s, ty, tx);
    fa_abt<D>(Vs, Gs, dp, ty, tx);
#pragma unroll
    for (int i = 0; i < 4; i++) {
      int64_t kj = k0 + ty + 16 * i;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        int c = tx + 16 * j;
        int64_t qi = q0 + c;
        bool vis = kj < a.S && !(a.causal && kj > qi);
        float p = vis ? expf(s[i][j] * a.scale - Ls[c]) : 0.f;
        Pt[(ty + 16 * i) * FA_P + c] = p;
        Dt[(ty + 16 * i) * FA_P + c] = p * (dp[i][j] - Ds[c]);
      }
    }
    __syncthreads();
    fa_mx<D>(Pt, Gs, dv, ty, tx);
    fa_mx<D>(Dt, Qs, dk, ty, tx);
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    int64_t kj = k0 + ty + 16 * i;
    if (kj >= a.S) continue;
    int64_t base = (bh * a.S + kj) * D;
#pragma unroll
    for (int j = 0; j < D / 16; j++) {
      fa_st<DT>(a.dk, base + tx + 16 * j, dk[i][j] * a.scale);
      fa_st<DT>(a.dv, base + tx + 16 * j, dv[i][j]);
    }
  }
}

/* dQ for 64 queries */
template <int DT, int D> __global__ void __launch_bounds__(FA_T) k_fa_bwd_q(FaArgs a) {
  extern __shared__ float sm[];
  const int T = FA_B * (D + 1);
  float *Qs = sm, *Gs = Qs + T, *Ks = Gs + T, *Vs = Ks + T, *Ss = Vs + T;
  int64_t nqb = (a.L + FA_B - 1) / FA_B;
  int64_t bh = blockIdx.x / nqb, q0 = (nqb - 1 - blockIdx.x % nqb) * FA_B;
  int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  fa_load<DT, D>(Qs, a.q, fa_off(a, a.q, bh), q0, a.L);
  fa_load<DT, D>(Gs, a.go, fa_off(a, a.go, bh), q0, a.L);
  int64_t koff = fa_off(a, a.k, bh), voff = fa_off(a, a.v, bh);
  float lse[4], dl[4], dq[4][D / 16];
#pragma unroll
  for (int i = 0; i < 4; i++) {
    int64_t qi = q0 + ty + 16 * i;
    lse[i] = qi < a.L ? a.lse[bh * a.L + qi] : INFINITY;
    dl[i] = qi < a.L ? a.delta[bh * a.L + qi] : 0.f;
#pragma unroll
    for (int j = 0; j < D / 16; j++) dq[i][j] = 0.f;
  }
  int64_t kend = a.S;
  if (a.causal && q0 + FA_B < kend) kend = q0 + FA_B;
  for (int64_t k0 = 0; k0 < kend; k0 += FA_B) {
    __syncthreads();
    fa_load<DT, D>(Ks, a.k, koff, k0, a.S);
    fa_load<DT, D>(Vs, a.v, voff, k0, a.S);
    __syncthreads();
    float s[4][4], dp[4][4];
    fa_abt<D>(Qs, Ks, s, ty, tx);
    fa_abt<D>(Gs, Vs, dp, ty, tx);
#pragma unroll
    for (int i = 0; i < 4; i++) {
      int64_t qi = q0 + ty + 16 * i;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        int64_t kj = k0 + tx + 16 * j;
        bool vis = kj < a.S && !(a.causal && kj > qi);
        float p = vis ? expf(s[i][j] * a.scale - lse[i]) : 0.f;
        Ss[(ty + 16 * i) * FA_P + tx + 16 * j] = p * (dp[i][j] - dl[i]);
      }
    }
    __syncthreads();
    fa_mx<D>(Ss, Ks, dq, ty, tx);
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    int64_t qi = q0 + ty + 16 * i;
    if (qi >= a.L) continue;
    int64_t base = (bh * a.L + qi) * D;
#pragma unroll
    for (int j = 0; j < D / 16; j++) fa_st<DT>(a.dq, base + tx + 16 * j, dq[i][j] * a.scale);
  }
}

/* ---- backward on the tensor cores (WMMA 16x16x16, float32 accumulation), for float16 /
 * bfloat16 inputs and for float32 inputs under bf16 autocast (rounded to bfloat16 on load).
 * 4 warps per block; each warp owns 16 of the block's 64 key rows (dK, dV kernel) or query
 * rows (dQ kernel) and keeps its dK/dV or dQ rows in accumulator fragments across the loop.
 * S and dP tiles go through shared memory as float (the fragment layout is opaque), P and
 * dS are rounded to the compute dtype before their products (as FlashAttention-2 does). */
namespace wm = nvcuda::wmma;
#define TC_LS (FA_B + 4)      /* float tile row stride */
#define TC_LP (FA_B + TC_KP)  /* 16-bit P / dS row stride */
#define FA_SMEM_BWD_TC(D)                                                                              \
  ((size_t)4 * FA_B * ((D) + TC_KP) * 2 + (size_t)TC_W * 2 * 16 * TC_LS * 4 + (size_t)TC_W * 2 * 16 * TC_LP * 2 + \
   (size_t)2 * FA_B * 4)

/* acc[n] (16 x 16, n over 64 columns) = A (16 x D rows of As) B^T (B: 64 x D rows of Bs) */
template <typename T, int D>
__device__ __forceinline__ void tc_abt(const T *As, const T *Bs, int ld, float *out, int ldo) {
#pragma unroll
  for (int n = 0; n < FA_B / 16; n++) {
    wm::fragment<wm::accumulator, 16, 16, 16, float> acc;
    wm::fill_fragment(acc, 0.f);
#pragma unroll
    for (int d = 0; d < D / 16; d++) {
      wm::fragment<wm::matrix_a, 16, 16, 16, T, wm::row_major> fa;
      wm::fragment<wm::matrix_b, 16, 16, 16, T, wm::col_major> fb;
      wm::load_matrix_sync(fa, As + d * 16, ld);
      wm::load_matrix_sync(fb, Bs + (n * 16) * ld + d * 16, ld);
      wm::mma_sync(acc, fa, fb, acc);
    }
    wm::store_matrix_sync(out + n * 16, acc, ldo, wm::mem_row_major);
  }
}

/* acc[n] += M (16 x 64, row stride TC_LP) X (64 x D rows of Xs) */
template <typename T, int D>
__device__ __forceinline__ void tc_mx(const T *M, const T *Xs, int ld,
                                      wm::fragment<wm::accumulator, 16, 16, 16, float> (&acc)[D / 16]) {
#pragma unroll
  for (int k = 0; k < FA_B / 16; k++) {
    wm::fragment<wm::matrix_a, 16, 16, 16, T, wm::row_major> fa;
    wm::load_matrix_sync(fa, M + k * 16, TC_LP);
#pragma unroll
    for (int n = 0; n < D / 16; n++) {
      wm::fragment<wm::matrix_b, 16, 16, 16, T, wm::row_major> fb;
      wm::load_matrix_sync(fb, Xs + (k * 16) * ld + n * 16, ld);
      wm::mma_sync(acc[n], fa, fb, acc[n]);
    }
  }
}

/* the warp's 16 x D accumulator rows, times mul, into out rows row0.. (< n) of [BH, n, D] */
template <int IDT, int D>
__device__ __forceinline__ void tc_store_rows(wm::fragment<wm::accumulator, 16, 16, 16, float> (&acc)[D / 16],
                                              float *stage, char *out, int64_t bh, int64_t row0, int64_t n,
                                              float mul, int lane) {
  const int LO = D + 4;
#pragma unroll
  for (int j = 0; j < D / 16; j++) wm::store_matrix_sync(stage + j * 16, acc[j], LO, wm::mem_row_major);
  __syncwarp();
  for (int e = lane; e < 16 * D; e += 32) {
    int r = e / D, c = e % D;
    if (row0 + r < n) fa_st<IDT>(out, (bh * n + row0 + r) * D + c, stage[r * LO + c] * mul);
  }
}

template <typename T> __device__ __forceinline__ T tc_round(float x);
template <> __device__ __forceinline__ __half tc_round<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 tc_round<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

/* dK, dV for 64 keys (S^T = K Q^T, dP^T = V dO^T per warp's 16 keys) */
template <int IDT, int CT, int D> __global__ void __launch_bounds__(TC_W * 32) k_fa_bwd_kv_tc(FaArgs a, int vec) {
  typedef typename TcT<CT>::t T;
  extern __shared__ __align__(128) unsigned char smb[];
  const int LD = D + TC_KP;
  T *Ks = (T *)smb, *Vs = Ks + FA_B * LD, *Qs = Vs + FA_B * LD, *Gs = Qs + FA_B * LD;
  float *Fw = (float *)(Gs + FA_B * LD);
  T *Pw = (T *)(Fw + TC_W * 2 * 16 * TC_LS);
  float *Ls = (float *)(Pw + TC_W * 2 * 16 * TC_LP), *Ds = Ls + FA_B;
  int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  float *St = Fw + w * 2 * 16 * TC_LS, *Dt = St + 16 * TC_LS;
  T *Pt = Pw + w * 2 * 16 * TC_LP, *DSt = Pt + 16 * TC_LP;
  int64_t nkb = (a.S + FA_B - 1) / FA_B;
  int64_t bh = blockIdx.x / nkb, k0 = (blockIdx.x % nkb) * FA_B;
  tc_load<IDT, CT, D>(Ks, LD, a.k, fa_off(a, a.k, bh), k0, a.S, vec, TC_W * 32);
  tc_load<IDT, CT, D>(Vs, LD, a.v, fa_off(a, a.v, bh), k0, a.S, vec, TC_W * 32);
  int64_t qoff = fa_off(a, a.q, bh), goff = fa_off(a, a.go, bh);
  wm::fragment<wm::accumulator, 16, 16, 16, float> dk[D / 16], dv[D / 16];
#pragma unroll
  for (int j = 0; j < D / 16; j++) {
    wm::fill_fragment(dk[j], 0.f);
    wm::fill_fragment(dv[j], 0.f);
  }
  int64_t qstart = a.causal ? (k0 / FA_B) * FA_B : 0; /* earlier queries see none of these keys */
  for (int64_t q0 = qstart; q0 < a.L; q0 += FA_B) {
    __syncthreads();
    tc_load<IDT, CT, D>(Qs, LD, a.q, qoff, q0, a.L, vec, TC_W * 32);
    tc_load<IDT, CT, D>(Gs, LD, a.go, goff, q0, a.L, vec, TC_W * 32);
    for (int i = threadIdx.x; i < FA_B; i += TC_W * 32) {
      bool in = q0 + i < a.L;
      Ls[i] = in ? a.lse[bh * a.L + q0 + i] : INFINITY; /* P = 0 on padding rows */
      Ds[i] = in ? a.delta[bh * a.L + q0 + i] : 0.f;
    }
    __syncthreads();
    tc_abt<T, D>(Ks + w * 16 * LD, Qs, LD, St, TC_LS);
    tc_abt<T, D>(Vs + w * 16 * LD, Gs, LD, Dt, TC_LS);
    __syncwarp();
    /* lanes along a row (conflict-free shared-memory access), the warp's 16 rows in turn */
    for (int r = 0; r < 16; r++) {
      int64_t kj = k0 + w * 16 + r;
      for (int c = lane; c < FA_B; c += 32) {
        int64_t qi = q0 + c;
        bool vis = kj < a.S && !(a.causal && kj > qi);
        float p = vis ? expf(St[r * TC_LS + c] * a.scale - Ls[c]) : 0.f;
        Pt[r * TC_LP + c] = tc_round<T>(p);
        DSt[r * TC_LP + c] = tc_round<T>(p * (Dt[r * TC_LS + c] - Ds[c]));
      }
    }
    __syncwarp();
    tc_mx<T, D>(Pt, Gs, LD, dv);
    tc_mx<T, D>(DSt, Qs, LD, dk);
  }
  /* the warp's float tiles (2 x 16 x TC_LS floats) stage its 16 x (D + 4) output rows */
  tc_store_rows<IDT, D>(dk, St, a.dk, bh, k0 + w * 16, a.S, a.scale, lane);
  __syncwarp();
  tc_store_rows<IDT, D>(dv, St, a.dv, bh, k0 + w * 16, a.S, 1.f, lane);
}

/* dQ for 64 queries (S = Q K^T, dP = dO V^T per warp's 16 queries) */
template <int IDT, int CT, int D> __global__ void __launch_bounds__(TC_W * 32) k_fa_bwd_q_tc(FaArgs a, int vec) {
  typedef typename TcT<CT>::t T;
  extern __shared__ __align__(128) unsigned char smb[];
  const int LD = D + TC_KP;
  T *Qs = (T *)smb, *Gs = Qs + FA_B * LD, *Ks = Gs + FA_B * LD, *Vs = Ks + FA_B * LD;
  float *Fw = (float *)(Vs + FA_B * LD);
  T *Pw = (T *)(Fw + TC_W * 2 * 16 * TC_LS);
  int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  float *St = Fw + w * 2 * 16 * TC_LS, *Dt = St + 16 * TC_LS;
  T *DSt = Pw + w * 2 * 16 * TC_LP;
  int64_t nqb = (a.L + FA_B - 1) / FA_B;
  int64_t bh = blockIdx.x / nqb, q0 = (nqb - 1 - blockIdx.x % nqb) * FA_B;
  tc_load<IDT, CT, D>(Qs, LD, a.q, fa_off(a, a.q, bh), q0, a.L, vec, TC_W * 32);
  tc_load<IDT, CT, D>(Gs, LD, a.go, fa_off(a, a.go, bh), q0, a.L, vec, TC_W * 32);
  int64_t koff = fa_off(a, a.k, bh), voff = fa_off(a, a.v, bh);
  /* lane i < 16 holds row i's log-sum-exp and delta (shuffled to the warp row by row) */
  int64_t ql = q0 + w * 16 + (lane & 15);
  float lse_l = ql < a.L ? a.lse[bh * a.L + ql] : INFINITY, dl_l = ql < a.L ? a.delta[bh * a.L + ql] : 0.f;
  wm::fragment<wm::accumulator, 16, 16, 16, float> dq[D / 16];
#pragma unroll
  for (int j = 0; j < D / 16; j++) wm::fill_fragment(dq[j], 0.f);
  int64_t kend = a.S;
  if (a.causal && q0 + FA_B < kend) kend = q0 + FA_B;
  for (int64_t k0 = 0; k0 < kend; k0 += FA_B) {
    __syncthreads();
    tc_load<IDT, CT, D>(Ks, LD, a.k, koff, k0, a.S, vec, TC_W * 32);
    tc_load<IDT, CT, D>(Vs, LD, a.v, voff, k0, a.S, vec, TC_W * 32);
    __syncthreads();
    tc_abt<T, D>(Qs + w * 16 * LD, Ks, LD, St, TC_LS);
    tc_abt<T, D>(Gs + w * 16 * LD, Vs, LD, Dt, TC_LS);
    __syncwarp();
    for (int r = 0; r < 16; r++) {
      int64_t qi = q0 + w * 16 + r;
      float lse = __shfl_sync(0xffffffffu, lse_l, r), dl = __shfl_sync(0xffffffffu, dl_l, r);
      for (int c = lane; c < FA_B; c += 32) {
        int64_t kj = k0 + c;
        bool vis = kj < a.S && !(a.causal && kj > qi);
        float p = vis ? expf(St[r * TC_LS + c] * a.scale - lse) : 0.f;
        DSt[r * TC_LP + c] = tc_round<T>(p * (Dt[r * TC_LS + c] - dl));
      }
    }
    __syncwarp();
    tc_mx<T, D>(DSt, Ks, LD, dq);
  }
  tc_store_rows<IDT, D>(dq, St, a.dq, bh, q0 + w * 16, a.L, a.scale, lane);
}

/* ---- head dim 64 on mma.sync (m16n8k16, float32 accumulation), FlashAttention-2 style ----
 * Same contracts, blocks and loops as the WMMA kernels above, but S, P, dP and dS never leave
 * registers: an accumulator fragment of S (16 x 8) is, two at a time, exactly the A operand of the
 * next product (P V, P^T dO, dS^T Q, dS K), so the softmax runs on the fragment in place (four
 * lanes share a row: two shuffles per reduction) instead of a shared-memory tile walked row by row.
 * Tiles are staged by tc_load (rows padded by 16 bytes: ldmatrix reads 8 rows 4 banks apart);
 * operands come from shared memory through ldmatrix (.trans where the product needs the tile's
 * columns as its k). exp2 with the scale folded into log2(e): lse stays natural-log (float32).
 * CT_CUDA_FA_MMA=0 takes the WMMA kernels. Inputs with 16-byte-aligned rows take the pipelined
 * variants of these kernels first (k_attention64.cu); these stay for the rest. */
static bool fa_mma_on(void) {
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("CT_CUDA_FA_MMA");
    on = !(e && e[0] == '0');
  }
  return on != 0;
}

/* rows r0.. of t into a staged [64][MM_LD] tile of T (zeros past n), every load of the thread issued
 * before the first store (unrolled: 4 x 16 bytes of bfloat16/float16, or 8 x 16 bytes of float32
 * rounded to T under bf16 autocast), so the tile costs one memory latency, not one per element;
 * unaligned inputs take tc_load */
template <int IDT, int CT>
__device__ __forceinline__ void mm_load(typename TcT<CT>::t *dst, const FaIn &t, int64_t off, int64_t r0, int64_t n, int vec) {
  if (!vec || (IDT != CT && IDT != 0)) {
    tc_load<IDT, CT, 64>(dst, MM_LD, t, off, r0, n, vec, TC_W * 32);
    return;
  }
  if (IDT == CT) {
    uint4 x[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
      int e = threadIdx.x + i * TC_W * 32, r = e / 8, c = (e % 8) * 8;
      x[i] = r0 + r < n ? *(const uint4 *)(t.p + 2 * (off + (r0 + r) * t.rs + c)) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
      int e = threadIdx.x + i * TC_W * 32, r = e / 8, c = (e % 8) * 8;
      *(uint4 *)(dst + r * MM_LD + c) = x[i];
    }
  } else {
    float4 x[8];
#pragma unroll
    for (int i = 0; i < 8; i++) {
      int e = threadIdx.x + i * TC_W * 32, r = e / 16, c = (e % 16) * 4;
      x[i] = r0 + r < n ? *(const float4 *)(t.p + 4 * (off + (r0 + r) * t.rs + c)) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
      int e = threadIdx.x + i * TC_W * 32, r = e / 16, c = (e % 16) * 4;
      uint2 v = make_uint2(mm_pack<typename TcT<CT>::t>(x[i].x, x[i].y), mm_pack<typename TcT<CT>::t>(x[i].z, x[i].w));
      *(uint2 *)(dst + r * MM_LD + c) = v;
    }
  }
}

template <int IDT, int CT> __global__ void __launch_bounds__(TC_W * 32) k_fa_fwd_mma(FaArgs a, int vec) {
  typedef typename TcT<CT>::t T;
  extern __shared__ __align__(128) unsigned char smb[];
  T *Qs = (T *)smb, *Ks = Qs + 64 * MM_LD, *Vs = Ks + 64 * MM_LD;
  int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
  int64_t nqb = (a.L + 63) / 64;
  int64_t bh = blockIdx.x / nqb, q0 = (nqb - 1 - blockIdx.x % nqb) * 64;
  int64_t koff = fa_off(a, a.k, bh), voff = fa_off(a, a.v, bh);
  mm_load<IDT, CT>(Qs, a.q, fa_off(a, a.q, bh), q0, a.L, vec);
  __syncthreads();
  uint32_t qf[4][4];
  mm_afrag<4>(qf, Qs, w * 16, lane);
  float o[8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
  for (int n = 0; n < 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) o[n][e] = 0.f;
  const float sl = a.scale * MM_LOG2E;
  int64_t qr = q0 + w * 16 + g; /* this lane's rows: qr, qr + 8 */
  int64_t kend = a.S;
  if (a.causal && q0 + 64 < kend) kend = q0 + 64;
  for (int64_t k0 = 0; k0 < kend; k0 += 64) {
    __syncthreads(); /* every warp is done with the previous K, V */
    mm_load<IDT, CT>(Ks, a.k, koff, k0, a.S, vec);
    mm_load<IDT, CT>(Vs, a.v, voff, k0, a.S, vec);
    __syncthreads();
    float s[8][4];
    mm_abt<T>(s, qf, Ks, lane);
    bool mask = k0 + 64 > a.S || (a.causal && k0 + 63 > q0 + w * 16);
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        float v = s[n][e] * sl;
        if (mask) {
          int64_t kj = k0 + n * 8 + 2 * t + (e & 1), qi = qr + (e >> 1) * 8;
          if (kj >= a.S || (a.causal && kj > qi)) v = -INFINITY;
        }
        s[n][e] = v;
        mx[e >> 1] = fmaxf(mx[e >> 1], v);
      }
    float alpha[2], mu[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
      float x = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
      float mn = fmaxf(m[h], x);
      mu[h] = mn == -INFINITY ? 0.f : mn; /* a row with nothing visible yet */
      alpha[h] = exp2f(m[h] - mu[h]);
      m[h] = mn;
      l[h] *= alpha[h];
    }
#pragma unroll
    for (int n = 0; n < 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        float p = exp2f(s[n][e] - mu[e >> 1]);
        s[n][e] = p;
        l[e >> 1] += p; /* this lane's part of the row sum; the four lanes are summed at the end */
        o[n][e] *= alpha[e >> 1];
      }
    mm_xb<T>(o, s, Vs, lane);
  }
#pragma unroll
  for (int h = 0; h < 2; h++) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
  float inv[2] = {1.f / l[0], 1.f / l[1]};
#pragma unroll
  for (int n = 0; n < 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) o[n][e] *= inv[e >> 1];
  mm_store<IDT>(o, a.out, bh, q0 + w * 16, a.L, 1.f, lane);
  if (t == 0)
#pragma unroll
    for (int h = 0; h < 2; h++)
      if (qr + 8 * h < a.L) a.lse[bh * a.L + qr + 8 * h] = (m[h] + log2f(l[h])) / MM_LOG2E;
}

/* dK, dV for 64 keys: per query block S^T = K Q^T and dP^T = V dO^T (K, V fragments held in
 * registers for the whole loop), P^T = exp(S^T scale - lse), dS^T = P^T (dP^T - delta), then
 * dV += P^T dO and dK += dS^T Q */
template <int IDT, int CT> __global__ void __launch_bounds__(TC_W * 32) k_fa_bwd_kv_mma(FaArgs a, int vec) {
  typedef typename TcT<CT>::t T;
  extern __shared__ __align__(128) unsigned char smb[];
  T *Ks = (T *)smb, *Vs = Ks + 64 * MM_LD, *Qs = Vs + 64 * MM_LD, *Gs = Qs + 64 * MM_LD;
  float *Ls = (float *)(Gs + 64 * MM_LD), *Ds = Ls + 64;
  int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
  int64_t nkb = (a.S + 63) / 64;
  int64_t bh = blockIdx.x / nkb, k0 = (blockIdx.x % nkb) * 64;
  mm_load<IDT, CT>(Ks, a.k, fa_off(a, a.k, bh), k0, a.S, vec);
  mm_load<IDT, CT>(Vs, a.v, fa_off(a, a.v, bh), k0, a.S, vec);
  int64_t qoff = fa_off(a, a.q, bh), goff = fa_off(a, a.go, bh);
  __syncthreads();
  uint32_t kf[4][4], vf[4][4];
  mm_afrag<4>(kf, Ks, w * 16, lane);
  mm_afrag<4>(vf, Vs, w * 16, lane);
  float dk[8][4], dv[8][4];
#pragma unroll
  for (int n = 0; n < 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.f;
  const float sl = a.scale * MM_LOG2E;
  int64_t kr = k0 + w * 16 + g; /* this lane's keys: kr, kr + 8 */
  int64_t qstart = a.causal ? k0 : 0; /* earlier queries see none of these keys */
  for (int64_t q0 = qstart; q0 < a.L; q0 += 64) {
    __syncthreads();
    mm_load<IDT, CT>(Qs, a.q, qoff, q0, a.L, vec);
    mm_load<IDT, CT>(Gs, a.go, goff, q0, a.L, vec);
    for (int i = threadIdx.x; i < 64; i += TC_W * 32) {
      bool in = q0 + i < a.L;
      Ls[i] = in ? a.lse[bh * a.L + q0 + i] * MM_LOG2E : INFINITY; /* P = 0 on padding rows */
      Ds[i] = in ? a.delta[bh * a.L + q0 + i] : 0.f;
    }
    __syncthreads();
    float s[8][4], dp[8][4];
    mm_abt<T>(s, kf, Qs, lane);
    mm_abt<T>(dp, vf, Gs, lane);
    bool mask = q0 + 64 > a.L || k0 + 64 > a.S || (a.causal && k0 + 63 > q0);
#pragma unroll
    for (int n = 0; n < 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        int c = n * 8 + 2 * t + (e & 1);
        float p = exp2f(s[n][e] * sl - Ls[c]);
        if (mask) {
          int64_t kj = kr + (e >> 1) * 8, qi = q0 + c;
          if (kj >= a.S || qi >= a.L || (a.causal && kj > qi)) p = 0.f;
        }
        s[n][e] = p;
        dp[n][e] = p * (dp[n][e] - Ds[c]);
      }
    mm_xb<T>(dv, s, Gs, lane);
    mm_xb<T>(dk, dp, Qs, lane);
  }
  mm_store<IDT>(dk, a.dk, bh, k0 + w * 16, a.S, a.scale, lane);
  mm_store<IDT>(dv, a.dv, bh, k0 + w * 16, a.S, 1.f, lane);
}

/* dQ for 64 queries: per key block S = Q K^T, dP = dO V^T (Q, dO fragments in registers),
 * dS = P (dP - delta), dQ += dS K */
template <int IDT, int CT> __global__ void __launch_bounds__(TC_W * 32) k_fa_bwd_q_mma(FaArgs a, int vec) {
  typedef typename TcT<CT>::t T;
  extern __shared__ __align__(128) unsigned char smb[];
  T *Qs = (T *)smb, *Gs = Qs + 64 * MM_LD, *Ks = Gs + 64 * MM_LD, *Vs = Ks + 64 * MM_LD;
  int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
  int64_t nqb = (a.L + 63) / 64;
  int64_t bh = blockIdx.x / nqb, q0 = (nqb - 1 - blockIdx.x % nqb) * 64;
  mm_load<IDT, CT>(Qs, a.q, fa_off(a, a.q, bh), q0, a.L, vec);
  mm_load<IDT, CT>(Gs, a.go, fa_off(a, a.go, bh), q0, a.L, vec);
  int64_t koff = fa_off(a, a.k, bh), voff = fa_off(a, a.v, bh);
  __syncthreads();
  uint32_t qf[4][4], gf[4][4];
  mm_afrag<4>(qf, Qs, w * 16, lane);
  mm_afrag<4>(gf, Gs, w * 16, lane);
  int64_t qr = q0 + w * 16 + g;
  float lse[2], dl[2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    bool in = qr + 8 * h < a.L;
    lse[h] = in ? a.lse[bh * a.L + qr + 8 * h] * MM_LOG2E : INFINITY;
    dl[h] = in ? a.delta[bh * a.L + qr + 8 * h] : 0.f;
  }
  float dq[8][4];
#pragma unroll
  for (int n = 0; n < 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) dq[n][e] = 0.f;
  const float sl = a.scale * MM_LOG2E;
  int64_t kend = a.S;
  if (a.causal && q0 + 64 < kend) kend = q0 + 64;
  for (int64_t k0 = 0; k0 < kend; k0 += 64) {
    __syncthreads();
    mm_load<IDT, CT>(Ks, a.k, koff, k0, a.S, vec);
    mm_load<IDT, CT>(Vs, a.v, voff, k0, a.S, vec);
    __syncthreads();
    float s[8][4], dp[8][4];
    mm_abt<T>(s, qf, Ks, lane);
    mm_abt<T>(dp, gf, Vs, lane);
    bool mask = k0 + 64 > a.S || (a.causal && k0 + 63 > q0 + w * 16);
#pragma unroll
    for (int n = 0; n < 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        float p = exp2f(s[n][e] * sl - lse[e >> 1]);
        if (mask) {
          int64_t kj = k0 + n * 8 + 2 * t + (e & 1), qi = qr + (e >> 1) * 8;
          if (kj >= a.S || (a.causal && kj > qi)) p = 0.f;
        }
        dp[n][e] = p * (dp[n][e] - dl[e >> 1]);
      }
    mm_xb<T>(dq, dp, Ks, lane);
  }
  mm_store<IDT>(dq, a.dq, bh, q0 + w * 16, a.L, a.scale, lane);
}

/* ---- host side ---- */
static char *fa_ptr(const ct_tensor *t) { return (char *)t->storage->data + t->offset * (int64_t)ct_dtype_size(t->dtype); }

/* batch dims must equal a.bshape; then rows x cols with a contiguous last dim */
static bool fa_take(const FaArgs &a, FaIn *in, const ct_tensor *x, ct_dtype dt, int64_t rows, int64_t cols) {
  if (x->dtype != dt || x->ndim != a.nb + 2 || x->storage->device.type != CT_DEVICE_CUDA) return false;
  for (int d = 0; d < a.nb; d++) {
    if (x->shape[d] != a.bshape[d]) return false;
    in->bst[d] = x->stride[d];
  }
  if (x->shape[a.nb] != rows || x->shape[a.nb + 1] != cols || (cols > 1 && x->stride[a.nb + 1] != 1)) return false;
  in->rs = x->stride[a.nb];
  in->p = fa_ptr(x);
  return true;
}

static bool fa_out_ok(const ct_tensor *t, ct_dtype dt, int64_t n) {
  return t->dtype == dt && ct_is_contiguous(t) && ct_numel(t) == n && t->storage->device.type == CT_DEVICE_CUDA;
}

/* common geometry of both ops from q, k, v */
static ct_status fa_geom(FaArgs *a, const ct_call *c, const char *what) {
  memset(a, 0, sizeof *a);
  const ct_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2];
  ct_dtype dt = q->dtype;
  if (dt != CT_FLOAT32 && dt != CT_FLOAT16 && dt != CT_BFLOAT16)
    return CT_ERR(CT_ERR_RUNTIME, "%s: CUDA flash attention takes float32, float16 or bfloat16", what);
  if (q->ndim < 2 || q->ndim - 2 > CT_MAX_DIMS) return CT_ERR(CT_ERR_RUNTIME, "%s: unexpected layout", what);
  a->nb = q->ndim - 2;
  memcpy(a->bshape, q->shape, sizeof(int64_t) * (size_t)a->nb);
  a->L = q->shape[a->nb];
  int64_t E = q->shape[a->nb + 1];
  a->S = k->ndim == q->ndim ? k->shape[a->nb] : -1;
  if (E != 64 && E != 128) return CT_ERR(CT_ERR_RUNTIME, "%s: CUDA flash attention takes head dim 64 or 128", what);
  if (!fa_take(*a, &a->q, q, dt, a->L, E) || !fa_take(*a, &a->k, k, dt, a->S, E) || !fa_take(*a, &a->v, v, dt, a->S, E) ||
      a->L < 1 || a->S < 1)
    return CT_ERR(CT_ERR_RUNTIME, "%s: unexpected layout", what);
  a->BH = 1;
  for (int d = 0; d < a->nb; d++) a->BH *= a->bshape[d];
  a->scale = (float)c->a.f[0];
  a->causal = c->a.k[0] != 0;
  return CT_OK;
}

#define FA_SMEM_FWD(D) ((size_t)(3 * FA_B * ((D) + 1) + FA_B * FA_P) * sizeof(float))
#define FA_SMEM_KV(D) ((size_t)(4 * FA_B * ((D) + 1) + 2 * FA_B * FA_P + 2 * FA_B) * sizeof(float))
#define FA_SMEM_Q(D) ((size_t)(4 * FA_B * ((D) + 1) + FA_B * FA_P) * sizeof(float))

/* 16-byte row copies where every base, row stride and batch stride allows */
static int fa_vec(const FaArgs &a, const FaIn *const *ins, int n) {
  for (int i = 0; i < n; i++) {
    if (((uintptr_t)ins[i]->p % 16) || ins[i]->rs % 8) return 0;
    for (int d = 0; d < a.nb; d++)
      if (ins[i]->bst[d] % 8) return 0;
  }
  return 1;
}

/* the tensor-core kernels' compute dtype for input dtype DT: the input's own 16-bit type,
 * bfloat16 for float32 under bf16 autocast (ct_cuda_set_autocast_bf16), else 0 (the
 * float32-tile kernels); CT_CUDA_FA_TC=0 always 0 */
template <int DT> static int fa_tc_type(void) {
  if (!fa_tc_on()) return 0;
  if (DT != 0) return DT;
  return ct_cuda_autocast_bf16() ? 2 : 0;
}

template <int DT, int D> static ct_status fa_fwd_launch(const FaArgs &a, int dev) {
  int64_t nb = a.BH * ((a.L + FA_B - 1) / FA_B);
  if (nb > 0x7fffffff) return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: too many blocks for one launch");
  int ct = fa_tc_type<DT>();
  if (ct) {
    const FaIn *ins[3] = {&a.q, &a.k, &a.v};
    int vec = fa_vec(a, ins, 3);
    if constexpr (D == 64) {
      if (fa_mma_on()) {
        ct_status s6;
        if (fa64_fwd(a, DT, dev, &s6)) return s6;
        const int CT = DT == 0 ? 2 : DT;
        cudaFuncSetAttribute(k_fa_fwd_mma<DT, CT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)MM_SMEM(3));
        k_fa_fwd_mma<DT, CT><<<(unsigned)nb, TC_W * 32, MM_SMEM(3), CU_STREAM(dev)>>>(a, vec);
        return ct_cuda_check_launch("sdpa_flash");
      }
    }
    size_t st = FA_SMEM_TC(D);
    if (DT == 0) {
      cudaFuncSetAttribute(k_fa_fwd_tc<0, 2, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)st);
      k_fa_fwd_tc<0, 2, D><<<(unsigned)nb, TC_W * 32, st, CU_STREAM(dev)>>>(a, vec);
    } else {
      cudaFuncSetAttribute(k_fa_fwd_tc<DT, DT == 0 ? 1 : DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)st);
      k_fa_fwd_tc<DT, DT == 0 ? 1 : DT, D><<<(unsigned)nb, TC_W * 32, st, CU_STREAM(dev)>>>(a, vec);
    }
    return ct_cuda_check_launch("sdpa_flash");
  }
  size_t sb = FA_SMEM_FWD(D);
  cudaFuncSetAttribute(k_fa_fwd<DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sb);
  k_fa_fwd<DT, D><<<(unsigned)nb, FA_T, sb, CU_STREAM(dev)>>>(a);
  return ct_cuda_check_launch("sdpa_flash");
}

template <int IDT, int CT, int D> static void fa_bwd_tc_launch(const FaArgs &a, int64_t nkv, int64_t nq, int vec,
                                                               cudaStream_t s) {
  size_t sm = FA_SMEM_BWD_TC(D);
  cudaFuncSetAttribute(k_fa_bwd_kv_tc<IDT, CT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
  cudaFuncSetAttribute(k_fa_bwd_q_tc<IDT, CT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
  k_fa_bwd_kv_tc<IDT, CT, D><<<(unsigned)nkv, TC_W * 32, sm, s>>>(a, vec);
  k_fa_bwd_q_tc<IDT, CT, D><<<(unsigned)nq, TC_W * 32, sm, s>>>(a, vec);
}

template <int DT, int D> static ct_status fa_bwd_launch(const FaArgs &a, int dev) {
  cudaStream_t s = CU_STREAM(dev);
  int64_t rows = a.BH * a.L;
  int64_t nkv = a.BH * ((a.S + FA_B - 1) / FA_B), nq = a.BH * ((a.L + FA_B - 1) / FA_B);
  /* k_fa_delta has no grid-stride loop: every row needs its own warp within cu_blocks' cap */
  if (nkv > 0x7fffffff || nq > 0x7fffffff || rows * 32 / CU_THREADS >= (1 << 22))
    return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash_backward: too many blocks for one launch");
  k_fa_delta<DT, D><<<cu_blocks(rows * 32), CU_THREADS, 0, s>>>(a);
  if (fa_tc_type<DT>()) {
    const FaIn *ins[4] = {&a.q, &a.k, &a.v, &a.go};
    int vec = fa_vec(a, ins, 4);
    if constexpr (D == 64) {
      if (fa_mma_on()) {
        ct_status s6;
        if (fa64_bwd(a, DT, dev, &s6)) return s6;
        const int CT = DT == 0 ? 2 : DT;
        cudaFuncSetAttribute(k_fa_bwd_kv_mma<DT, CT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)MM_SMEM(4));
        cudaFuncSetAttribute(k_fa_bwd_q_mma<DT, CT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)MM_SMEM(4));
        k_fa_bwd_kv_mma<DT, CT><<<(unsigned)nkv, TC_W * 32, MM_SMEM(4), s>>>(a, vec);
        k_fa_bwd_q_mma<DT, CT><<<(unsigned)nq, TC_W * 32, MM_SMEM(4), s>>>(a, vec);
        return ct_cuda_check_launch("sdpa_flash_backward");
      }
    }
    if (DT == 0) fa_bwd_tc_launch<0, 2, D>(a, nkv, nq, vec, s);
    else fa_bwd_tc_launch<DT, DT == 0 ? 1 : DT, D>(a, nkv, nq, vec, s);
    return ct_cuda_check_launch("sdpa_flash_backward");
  }
  size_t skv = FA_SMEM_KV(D), sq = FA_SMEM_Q(D);
  cudaFuncSetAttribute(k_fa_bwd_kv<DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)skv);
  cudaFuncSetAttribute(k_fa_bwd_q<DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sq);
  k_fa_bwd_kv<DT, D><<<(unsigned)nkv, FA_T, skv, s>>>(a);
  k_fa_bwd_q<DT, D><<<(unsigned)nq, FA_T, sq, s>>>(a);
  return ct_cuda_check_launch("sdpa_flash_backward");
}

#define FA_PICK(fn, dt, D, a, dev)                                                             \
  ((dt) == CT_FLOAT32   ? ((D) == 64 ? fn<0, 64>(a, dev) : fn<0, 128>(a, dev))                 \
   : (dt) == CT_FLOAT16 ? ((D) == 64 ? fn<1, 64>(a, dev) : fn<1, 128>(a, dev))                 \
                        : ((D) == 64 ? fn<2, 64>(a, dev) : fn<2, 128>(a, dev)))

/* in: q, k, v; out: out, lse (float32), [a copy of out] */
static ct_status cu_sdpa_flash(const ct_call *c) {
  if (c->n_in > 3) return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: CUDA flash attention takes no mask");
  FaArgs a;
  ct_status st = fa_geom(&a, c, "sdpa_flash");
  if (st != CT_OK) return st;
  ct_dtype dt = c->in[0]->dtype;
  int64_t D = c->in[0]->shape[a.nb + 1];
  if (c->n_out < 2 || !fa_out_ok(c->out[0], dt, a.BH * a.L * D) || !fa_out_ok(c->out[1], CT_FLOAT32, a.BH * a.L) ||
      (c->n_out > 2 && !fa_out_ok(c->out[2], dt, a.BH * a.L * D)))
    return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: unexpected output layout");
  int dev = ct_cuda_call_dev(c);
  if ((st = ct_cuda_use(dev)) != CT_OK) return st;
  a.out = fa_ptr(c->out[0]);
  a.lse = (float *)fa_ptr(c->out[1]);
  if ((st = FA_PICK(fa_fwd_launch, dt, D, a, dev)) != CT_OK) return st;
  if (c->n_out > 2) {
    cudaError_t e = cudaMemcpyAsync(fa_ptr(c->out[2]), a.out, ct_dtype_size(dt) * (size_t)(a.BH * a.L * D),
                                    cudaMemcpyDeviceToDevice, CU_STREAM(dev));
    if (e != cudaSuccess) return ct_cuda_fail((int)e, "sdpa_flash");
  }
  __atomic_add_fetch(&fa_calls[0], 1, __ATOMIC_RELAXED);
  return CT_OK;
}

/* in: q, k, v, out, lse, grad_out; out: dq, dk, dv */
static ct_status cu_sdpa_flash_backward(const ct_call *c) {
  if (c->n_in != 6) return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash_backward: CUDA flash attention takes no mask");
  FaArgs a;
  ct_status st = fa_geom(&a, c, "sdpa_flash_backward");
  if (st != CT_OK) return st;
  ct_dtype dt = c->in[0]->dtype;
  int64_t D = c->in[0]->shape[a.nb + 1];
  const ct_tensor *lse = c->in[4];
  if (!fa_take(a, &a.o, c->in[3], dt, a.L, D) || !fa_take(a, &a.go, c->in[5], dt, a.L, D) ||
      !fa_out_ok(lse, CT_FLOAT32, a.BH * a.L))
    return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash_backward: unexpected layout");
  if (!fa_out_ok(c->out[0], dt, a.BH * a.L * D) || !fa_out_ok(c->out[1], dt, a.BH * a.S * D) ||
      !fa_out_ok(c->out[2], dt, a.BH * a.S * D))
    return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash_backward: unexpected output layout");
  int dev = ct_cuda_call_dev(c);
  if ((st = ct_cuda_use(dev)) != CT_OK) return st;
  a.lse = (float *)fa_ptr(lse);
  a.dq = fa_ptr(c->out[0]);
  a.dk = fa_ptr(c->out[1]);
  a.dv = fa_ptr(c->out[2]);
  size_t db = sizeof(float) * (size_t)(a.BH * a.L);
  a.delta = (float *)ct_cuda_tmp_alloc(dev, db);
  if (!a.delta) return ct_last_status();
  st = FA_PICK(fa_bwd_launch, dt, D, a, dev);
  ct_cuda_tmp_free(dev, a.delta, db);
  if (st == CT_OK) __atomic_add_fetch(&fa_calls[1], 1, __ATOMIC_RELAXED);
  return st;
}

extern "C" int64_t ct_cuda_sdpa_calls(bool backward) { return __atomic_load_n(&fa_calls[backward ? 1 : 0], __ATOMIC_RELAXED); }

extern "C" void ct_cuda_register_attention(ct_kernel_fn *tab) {
  tab[CT_OP_sdpa_flash] = cu_sdpa_flash;
  tab[CT_OP_sdpa_flash_backward] = cu_sdpa_flash_backward;
}
