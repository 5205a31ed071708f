/* Head dim 64 flash attention, pipelined (issue 7): the default for D = 64 on CUDA. Same contracts
 * and register layout as k_attention.cu's mma.sync kernels (S, P, dP and dS live in accumulator
 * fragments; P and dS rounded to the 16-bit type as the A operand of the next product), plus:
 *  - cp.async double buffering: the next streamed tile (K/V for the forward and dQ, Q/dO with its
 *    lse and delta for dK/dV) is in flight while the current one is multiplied, so a tile's load
 *    latency is hidden behind the previous tile's math instead of stalling every warp of the block;
 *  - NW warps per block (16 rows each; 128-row blocks halve the streamed bytes per row);
 *  - blocks ordered longest first across all heads (causal rows near the end of the sequence see
 *    the most keys), and per-warp skips of tiles whose 64 columns the warp's 16 rows cannot see.
 * Inputs: 16-bit rows 16-byte aligned (cp.async copies them raw). float32 inputs under bf16 autocast
 * are first rounded into contiguous bfloat16 copies (one pass; the same round-to-nearest the
 * unpipelined kernels apply on load) and results are stored as float32. Anything else (unaligned
 * rows, other head dims) keeps the kernels of k_attention.cu. CT_CUDA_FA_PIPE=0 turns this off (2: on
 * for 16-bit inputs only); CT_CUDA_FA_NW="F,K,Q" picks the warps per block (4 or 8) of the forward,
 * dK/dV and dQ kernels, 'h' for K or Q the low-register 4-warp backward kernels.
 * dQ keeps its own pass (no atomics), so results stay deterministic (graph replay == eager). */
#include "k_attention.cuh"
#include "ctorch/cuda.h"
#include <stdlib.h>

#define F6_LDB (MM_LD * 2) /* bytes per staged row */

/* 16 (4) bytes global -> shared without passing through registers; ok == false zero-fills */
__device__ __forceinline__ void f6_cp16(void *dst, const void *src, bool ok) {
  uint32_t s = (uint32_t)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void f6_cp4(void *dst, const void *src, bool ok) {
  uint32_t s = (uint32_t)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 4 : 0));
}
__device__ __forceinline__ void f6_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void f6_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* rows r0..r0+R-1 of t into a staged [R][MM_LD] tile; rows past n zero-filled */
template <int R, int NT>
__device__ __forceinline__ void f6_tile(void *dst, const FaIn &t, int64_t off, int64_t r0, int64_t n) {
  unsigned char *d = (unsigned char *)dst;
#pragma unroll
  for (int i = 0; i < R * 8 / NT; i++) {
    int e = threadIdx.x + i * NT, r = e >> 3, c = (e & 7) * 8;
    bool ok = r0 + r < n;
    const char *src = ok ? t.p + 2 * (off + (r0 + r) * t.rs + c) : t.p;
    f6_cp16(d + r * F6_LDB + c * 2, src, ok);
  }
}

/* 64 floats v[bh, r0..] into sm (zeros past n), by threads [base, base + 64) */
__device__ __forceinline__ void f6_vec64(float *sm, const float *v, int64_t r0, int64_t n, int base) {
  int i = (int)threadIdx.x - base;
  if (i >= 0 && i < 64) {
    bool ok = r0 + i < n;
    f6_cp4(sm + i, ok ? v + r0 + i : v, ok);
  }
}

template <int CT, int ODT, int NW> __global__ void __launch_bounds__(NW * 32) k_f6_fwd(FaArgs a) {
  typedef typename TcT<CT>::t T;
  constexpr int NT = NW * 32, BQ = NW * 16;
  extern __shared__ __align__(128) unsigned char smb[];
  T *Qs = (T *)smb, *KV = Qs + BQ * MM_LD; /* stage s: K at KV + s 128 MM_LD, V 64 rows further */
  int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int64_t nqb = (a.L + BQ - 1) / BQ;
  int64_t bh = blockIdx.x % a.BH, q0 = (nqb - 1 - blockIdx.x / a.BH) * BQ; /* the longest causal rows first */
  int64_t koff = fa_off(a, a.k, bh), voff = fa_off(a, a.v, bh);
  int64_t kend = a.S;
  if (a.causal && q0 + BQ < kend) kend = q0 + BQ;
  int nkt = (int)((kend + 63) / 64);
  f6_tile<BQ, NT>(Qs, a.q, fa_off(a, a.q, bh), q0, a.L);
  f6_tile<64, NT>(KV, a.k, koff, 0, a.S);
  f6_tile<64, NT>(KV + 64 * MM_LD, a.v, voff, 0, a.S);
  f6_commit();
  uint32_t qf[4][4];
  float o[8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
  for (int n = 0; n < 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) o[n][e] = 0.f;
  const float sl = a.scale * MM_LOG2E;
  int64_t qw = q0 + w * 16, qr = qw + g; /* this lane's rows: qr, qr + 8 */
  for (int j = 0; j < nkt; j++) {
    int64_t k0 = (int64_t)j * 64;
    if (j + 1 < nkt) {
      T *nx = KV + ((j + 1) & 1) * 128 * MM_LD;
      f6_tile<64, NT>(nx, a.k, koff, k0 + 64, a.S);
      f6_tile<64, NT>(nx + 64 * MM_LD, a.v, voff, k0 + 64, a.S);
      f6_commit();
      f6_wait<1>();
    } else {
      f6_wait<0>();
    }
    __syncthreads();
    if (j == 0) mm_afrag<4>(qf, Qs, w * 16, lane);
    const T *Ks = KV + (j & 1) * 128 * MM_LD, *Vs = Ks + 64 * MM_LD;
    /* padding warps, and warps whose rows all precede the tile's first key, do no math */
    if (qw < a.L && !(a.causal && k0 > qw + 15)) {
      float s[8][4];
      mm_abt<T>(s, qf, Ks, lane);
      bool mask = k0 + 64 > a.S || (a.causal && k0 + 63 > qw);
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
    __syncthreads(); /* every warp is done with this stage before it is refilled */
  }
#pragma unroll
  for (int h = 0; h < 2; h++) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
  if (qw >= a.L) return;
  float inv[2] = {1.f / l[0], 1.f / l[1]};
#pragma unroll
  for (int n = 0; n < 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) o[n][e] *= inv[e >> 1];
  mm_store<ODT>(o, a.out, bh, qw, a.L, 1.f, lane);
  if (t == 0)
#pragma unroll
    for (int h = 0; h < 2; h++)
      if (qr + 8 * h < a.L) a.lse[bh * a.L + qr + 8 * h] = (m[h] + log2f(l[h])) / MM_LOG2E;
}

/* dK, dV for NW * 16 keys: per 64-query tile S^T = K Q^T and dP^T = V dO^T (K, V fragments in
 * registers), P^T = exp(S^T scale - lse), dS^T = P^T (dP^T - delta), dV += P^T dO, dK += dS^T Q */
template <int CT, int ODT, int NW> __global__ void __launch_bounds__(NW * 32) k_f6_bwd_kv(FaArgs a) {
  typedef typename TcT<CT>::t T;
  constexpr int NT = NW * 32, BK = NW * 16;
  extern __shared__ __align__(128) unsigned char smb[];
  T *Ks = (T *)smb, *Vs = Ks + BK * MM_LD, *QG = Vs + BK * MM_LD; /* stage s: Q at QG + s 128 MM_LD, dO 64 rows on */
  float *LD = (float *)(QG + 2 * 128 * MM_LD);                   /* stage s: lse at LD + 128 s, delta 64 on */
  int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int64_t bh = blockIdx.x % a.BH, k0 = (blockIdx.x / a.BH) * BK; /* key blocks near 0 see the most queries */
  int64_t qoff = fa_off(a, a.q, bh), goff = fa_off(a, a.go, bh);
  const float *lse = a.lse + bh * a.L, *dlt = a.delta + bh * a.L;
  int64_t qstart = a.causal ? k0 : 0; /* earlier queries see none of these keys */
  int nqt = qstart < a.L ? (int)((a.L - qstart + 63) / 64) : 0;
  f6_tile<BK, NT>(Ks, a.k, fa_off(a, a.k, bh), k0, a.S);
  f6_tile<BK, NT>(Vs, a.v, fa_off(a, a.v, bh), k0, a.S);
  if (nqt > 0) {
    f6_tile<64, NT>(QG, a.q, qoff, qstart, a.L);
    f6_tile<64, NT>(QG + 64 * MM_LD, a.go, goff, qstart, a.L);
    f6_vec64(LD, lse, qstart, a.L, 0);
    f6_vec64(LD + 64, dlt, qstart, a.L, 64);
  }
  f6_commit();
  uint32_t kf[4][4], vf[4][4];
  float dk[8][4], dv[8][4];
#pragma unroll
  for (int n = 0; n < 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.f;
  const float sl = a.scale * MM_LOG2E;
  int64_t kw = k0 + w * 16, kr = kw + g; /* this lane's keys: kr, kr + 8 */
  if (nqt == 0) f6_wait<0>();
  for (int j = 0; j < nqt; j++) {
    int64_t q0 = qstart + (int64_t)j * 64;
    if (j + 1 < nqt) {
      int st = (j + 1) & 1;
      T *nx = QG + st * 128 * MM_LD;
      f6_tile<64, NT>(nx, a.q, qoff, q0 + 64, a.L);
      f6_tile<64, NT>(nx + 64 * MM_LD, a.go, goff, q0 + 64, a.L);
      f6_vec64(LD + 128 * st, lse, q0 + 64, a.L, 0);
      f6_vec64(LD + 128 * st + 64, dlt, q0 + 64, a.L, 64);
      f6_commit();
      f6_wait<1>();
    } else {
      f6_wait<0>();
    }
    __syncthreads();
    if (j == 0) {
      mm_afrag<4>(kf, Ks, w * 16, lane);
      mm_afrag<4>(vf, Vs, w * 16, lane);
    }
    const T *Qs = QG + (j & 1) * 128 * MM_LD, *Gs = Qs + 64 * MM_LD;
    const float *Ls = LD + 128 * (j & 1), *Ds = Ls + 64;
    if (kw < a.S && !(a.causal && q0 + 63 < kw)) {
      float s[8][4], dp[8][4];
      mm_abt<T>(s, kf, Qs, lane);
      mm_abt<T>(dp, vf, Gs, lane);
      bool mask = q0 + 64 > a.L || kw + 16 > a.S || (a.causal && kw + 15 > q0);
#pragma unroll
      for (int n = 0; n < 8; n++) {
        int c0 = n * 8 + 2 * t;
        float2 lv = *(const float2 *)(Ls + c0), dv2 = *(const float2 *)(Ds + c0);
#pragma unroll
        for (int e = 0; e < 4; e++) {
          int c = c0 + (e & 1);
          float p = exp2f(fmaf(s[n][e], sl, -((e & 1) ? lv.y : lv.x) * MM_LOG2E));
          if (mask) {
            int64_t kj = kr + (e >> 1) * 8, qi = q0 + c;
            if (kj >= a.S || qi >= a.L || (a.causal && kj > qi)) p = 0.f;
          }
          s[n][e] = p;
          dp[n][e] = p * (dp[n][e] - ((e & 1) ? dv2.y : dv2.x));
        }
      }
      mm_xb<T>(dv, s, Gs, lane);
      mm_xb<T>(dk, dp, Qs, lane);
    }
    __syncthreads();
  }
  if (kw >= a.S) return;
  mm_store<ODT>(dk, a.dk, bh, kw, a.S, a.scale, lane);
  mm_store<ODT>(dv, a.dv, bh, kw, a.S, 1.f, lane);
}

/* dQ for NW * 16 queries: per 64-key tile S = Q K^T, dP = dO V^T (Q, dO fragments in registers),
 * dS = P (dP - delta), dQ += dS K */
template <int CT, int ODT, int NW> __global__ void __launch_bounds__(NW * 32) k_f6_bwd_q(FaArgs a) {
  typedef typename TcT<CT>::t T;
  constexpr int NT = NW * 32, BQ = NW * 16;
  extern __shared__ __align__(128) unsigned char smb[];
  T *Qs = (T *)smb, *Gs = Qs + BQ * MM_LD, *KV = Gs + BQ * MM_LD;
  int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int64_t nqb = (a.L + BQ - 1) / BQ;
  int64_t bh = blockIdx.x % a.BH, q0 = (nqb - 1 - blockIdx.x / a.BH) * BQ;
  int64_t koff = fa_off(a, a.k, bh), voff = fa_off(a, a.v, bh);
  int64_t kend = a.S;
  if (a.causal && q0 + BQ < kend) kend = q0 + BQ;
  int nkt = (int)((kend + 63) / 64);
  f6_tile<BQ, NT>(Qs, a.q, fa_off(a, a.q, bh), q0, a.L);
  f6_tile<BQ, NT>(Gs, a.go, fa_off(a, a.go, bh), q0, a.L);
  f6_tile<64, NT>(KV, a.k, koff, 0, a.S);
  f6_tile<64, NT>(KV + 64 * MM_LD, a.v, voff, 0, a.S);
  f6_commit();
  int64_t qw = q0 + w * 16, qr = qw + g;
  float lse[2], dl[2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    bool in = qr + 8 * h < a.L;
    lse[h] = in ? a.lse[bh * a.L + qr + 8 * h] * MM_LOG2E : INFINITY;
    dl[h] = in ? a.delta[bh * a.L + qr + 8 * h] : 0.f;
  }
  uint32_t qf[4][4], gf[4][4];
  float dq[8][4];
#pragma unroll
  for (int n = 0; n < 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) dq[n][e] = 0.f;
  const float sl = a.scale * MM_LOG2E;
  for (int j = 0; j < nkt; j++) {
    int64_t k0 = (int64_t)j * 64;
    if (j + 1 < nkt) {
      T *nx = KV + ((j + 1) & 1) * 128 * MM_LD;
      f6_tile<64, NT>(nx, a.k, koff, k0 + 64, a.S);
      f6_tile<64, NT>(nx + 64 * MM_LD, a.v, voff, k0 + 64, a.S);
      f6_commit();
      f6_wait<1>();
    } else {
      f6_wait<0>();
    }
    __syncthreads();
    if (j == 0) {
      mm_afrag<4>(qf, Qs, w * 16, lane);
      mm_afrag<4>(gf, Gs, w * 16, lane);
    }
    const T *Ks = KV + (j & 1) * 128 * MM_LD, *Vs = Ks + 64 * MM_LD;
    if (qw < a.L && !(a.causal && k0 > qw + 15)) {
      float s[8][4], dp[8][4];
      mm_abt<T>(s, qf, Ks, lane);
      mm_abt<T>(dp, gf, Vs, lane);
      bool mask = k0 + 64 > a.S || (a.causal && k0 + 63 > qw);
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
    __syncthreads();
  }
  if (qw >= a.L) return;
  mm_store<ODT>(dq, a.dq, bh, qw, a.L, a.scale, lane);
}

/* ---- low-register backward (CT_CUDA_FA_NW's K or Q = 'h'): 4 warps, each tile taken in two halves of
 * 32 columns and the A operands (K, V or Q, dO) read from shared memory per k-chunk instead of held,
 * so dK/dV fits 3 blocks per SM and dQ 4 (the register-held kernels above: 2 and 3) ---- */

/* acc[2 NP][4] (16 x 16 NP) = rows ra..ra+15 of tile ta (16 x 64) times rows rb..rb+16 NP-1 of tile tb as B^T */
template <typename T, int NP>
__device__ __forceinline__ void f6_abt(float acc[2 * NP][4], const void *ta, int ra, const void *tb, int rb, int lane) {
  const uint16_t *A = (const uint16_t *)ta, *B = (const uint16_t *)tb;
#pragma unroll
  for (int n = 0; n < 2 * NP; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) acc[n][e] = 0.f;
#pragma unroll
  for (int kc = 0; kc < 4; kc++) {
    uint32_t af[4];
    mm_ldsm4(af, A + (ra + (lane & 7) + ((lane >> 3) & 1) * 8) * MM_LD + kc * 16 + (lane >> 4) * 8);
#pragma unroll
    for (int np = 0; np < NP; np++) {
      uint32_t b[4];
      mm_ldsm4(b, B + (rb + np * 16 + (lane & 7) + (lane >> 4) * 8) * MM_LD + kc * 16 + ((lane >> 3) & 1) * 8);
      mm_mma<T>(acc[2 * np], af, b[0], b[1]);
      mm_mma<T>(acc[2 * np + 1], af, b[2], b[3]);
    }
  }
}
/* acc[8][4] (16 x 64) += X (16 x 16 NK float fragments, rounded to T) times rows rk..rk+16 NK-1 of tile (k = row) */
template <typename T, int NK>
__device__ __forceinline__ void f6_xb(float acc[8][4], const float x[2 * NK][4], const void *tile, int rk, int lane) {
  const uint16_t *t = (const uint16_t *)tile;
#pragma unroll
  for (int kc = 0; kc < NK; kc++) {
    uint32_t a[4] = {mm_pack<T>(x[2 * kc][0], x[2 * kc][1]), mm_pack<T>(x[2 * kc][2], x[2 * kc][3]),
                     mm_pack<T>(x[2 * kc + 1][0], x[2 * kc + 1][1]), mm_pack<T>(x[2 * kc + 1][2], x[2 * kc + 1][3])};
#pragma unroll
    for (int dp = 0; dp < 4; dp++) {
      uint32_t b[4];
      mm_ldsm4t(b, t + (rk + kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * MM_LD + dp * 16 + (lane >> 4) * 8);
      mm_mma<T>(acc[2 * dp], a, b[0], b[1]);
      mm_mma<T>(acc[2 * dp + 1], a, b[2], b[3]);
    }
  }
}

template <int CT, int ODT> __global__ void __launch_bounds__(128, 3) k_f6_bwd_kv_lr(FaArgs a) {
  typedef typename TcT<CT>::t T;
  constexpr int NT = 128, BK = 64;
  extern __shared__ __align__(128) unsigned char smb[];
  T *Ks = (T *)smb, *Vs = Ks + BK * MM_LD, *QG = Vs + BK * MM_LD;
  float *LD = (float *)(QG + 2 * 128 * MM_LD);
  int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int64_t bh = blockIdx.x % a.BH, k0 = (blockIdx.x / a.BH) * BK;
  int64_t qoff = fa_off(a, a.q, bh), goff = fa_off(a, a.go, bh);
  const float *lse = a.lse + bh * a.L, *dlt = a.delta + bh * a.L;
  int64_t qstart = a.causal ? k0 : 0;
  int nqt = qstart < a.L ? (int)((a.L - qstart + 63) / 64) : 0;
  f6_tile<BK, NT>(Ks, a.k, fa_off(a, a.k, bh), k0, a.S);
  f6_tile<BK, NT>(Vs, a.v, fa_off(a, a.v, bh), k0, a.S);
  if (nqt > 0) {
    f6_tile<64, NT>(QG, a.q, qoff, qstart, a.L);
    f6_tile<64, NT>(QG + 64 * MM_LD, a.go, goff, qstart, a.L);
    f6_vec64(LD, lse, qstart, a.L, 0);
    f6_vec64(LD + 64, dlt, qstart, a.L, 64);
  }
  f6_commit();
  float dk[8][4], dv[8][4];
#pragma unroll
  for (int n = 0; n < 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.f;
  const float sl = a.scale * MM_LOG2E;
  int64_t kw = k0 + w * 16, kr = kw + g;
  if (nqt == 0) f6_wait<0>();
  for (int j = 0; j < nqt; j++) {
    int64_t q0 = qstart + (int64_t)j * 64;
    if (j + 1 < nqt) {
      int st = (j + 1) & 1;
      T *nx = QG + st * 128 * MM_LD;
      f6_tile<64, NT>(nx, a.q, qoff, q0 + 64, a.L);
      f6_tile<64, NT>(nx + 64 * MM_LD, a.go, goff, q0 + 64, a.L);
      f6_vec64(LD + 128 * st, lse, q0 + 64, a.L, 0);
      f6_vec64(LD + 128 * st + 64, dlt, q0 + 64, a.L, 64);
      f6_commit();
      f6_wait<1>();
    } else {
      f6_wait<0>();
    }
    __syncthreads();
    const T *Qs = QG + (j & 1) * 128 * MM_LD, *Gs = Qs + 64 * MM_LD;
    const float *Ls = LD + 128 * (j & 1), *Ds = Ls + 64;
#pragma unroll 1
    for (int hq = 0; hq < 2; hq++) {
      int64_t qh = q0 + hq * 32;
      if (kw >= a.S || qh >= a.L || (a.causal && qh + 31 < kw)) continue;
      float s[4][4], dp[4][4];
      f6_abt<T, 2>(s, Ks, w * 16, Qs, hq * 32, lane);
      f6_abt<T, 2>(dp, Vs, w * 16, Gs, hq * 32, lane);
      bool mask = qh + 32 > a.L || kw + 16 > a.S || (a.causal && kw + 15 > qh);
#pragma unroll
      for (int n = 0; n < 4; n++) {
        int c0 = hq * 32 + n * 8 + 2 * t;
        float2 lv = *(const float2 *)(Ls + c0), dv2 = *(const float2 *)(Ds + c0);
#pragma unroll
        for (int e = 0; e < 4; e++) {
          int c = c0 + (e & 1);
          float p = exp2f(fmaf(s[n][e], sl, -((e & 1) ? lv.y : lv.x) * MM_LOG2E));
          if (mask) {
            int64_t kj = kr + (e >> 1) * 8, qi = q0 + c;
            if (kj >= a.S || qi >= a.L || (a.causal && kj > qi)) p = 0.f;
          }
          s[n][e] = p;
          dp[n][e] = p * (dp[n][e] - ((e & 1) ? dv2.y : dv2.x));
        }
      }
      f6_xb<T, 2>(dv, s, Gs, hq * 32, lane);
      f6_xb<T, 2>(dk, dp, Qs, hq * 32, lane);
    }
    __syncthreads();
  }
  if (kw >= a.S) return;
  mm_store<ODT>(dk, a.dk, bh, kw, a.S, a.scale, lane);
  mm_store<ODT>(dv, a.dv, bh, kw, a.S, 1.f, lane);
}

template <int CT, int ODT> __global__ void __launch_bounds__(128, 4) k_f6_bwd_q_lr(FaArgs a) {
  typedef typename TcT<CT>::t T;
  constexpr int NT = 128, BQ = 64;
  extern __shared__ __align__(128) unsigned char smb[];
  T *Qs = (T *)smb, *Gs = Qs + BQ * MM_LD, *KV = Gs + BQ * MM_LD;
  int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  int64_t nqb = (a.L + BQ - 1) / BQ;
  int64_t bh = blockIdx.x % a.BH, q0 = (nqb - 1 - blockIdx.x / a.BH) * BQ;
  int64_t koff = fa_off(a, a.k, bh), voff = fa_off(a, a.v, bh);
  int64_t kend = a.S;
  if (a.causal && q0 + BQ < kend) kend = q0 + BQ;
  int nkt = (int)((kend + 63) / 64);
  f6_tile<BQ, NT>(Qs, a.q, fa_off(a, a.q, bh), q0, a.L);
  f6_tile<BQ, NT>(Gs, a.go, fa_off(a, a.go, bh), q0, a.L);
  f6_tile<64, NT>(KV, a.k, koff, 0, a.S);
  f6_tile<64, NT>(KV + 64 * MM_LD, a.v, voff, 0, a.S);
  f6_commit();
  int64_t qw = q0 + w * 16, qr = qw + g;
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
  for (int j = 0; j < nkt; j++) {
    int64_t k0 = (int64_t)j * 64;
    if (j + 1 < nkt) {
      T *nx = KV + ((j + 1) & 1) * 128 * MM_LD;
      f6_tile<64, NT>(nx, a.k, koff, k0 + 64, a.S);
      f6_tile<64, NT>(nx + 64 * MM_LD, a.v, voff, k0 + 64, a.S);
      f6_commit();
      f6_wait<1>();
    } else {
      f6_wait<0>();
    }
    __syncthreads();
    const T *Ks = KV + (j & 1) * 128 * MM_LD, *Vs = Ks + 64 * MM_LD;
#pragma unroll 1
    for (int hk = 0; hk < 2; hk++) {
      int64_t kh = k0 + hk * 32;
      if (qw >= a.L || kh >= a.S || (a.causal && kh > qw + 15)) continue;
      float s[4][4], dp[4][4];
      f6_abt<T, 2>(s, Qs, w * 16, Ks, hk * 32, lane);
      f6_abt<T, 2>(dp, Gs, w * 16, Vs, hk * 32, lane);
      bool mask = kh + 32 > a.S || (a.causal && kh + 31 > qw);
#pragma unroll
      for (int n = 0; n < 4; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          float p = exp2f(s[n][e] * sl - lse[e >> 1]);
          if (mask) {
            int64_t kj = kh + n * 8 + 2 * t + (e & 1), qi = qr + (e >> 1) * 8;
            if (kj >= a.S || (a.causal && kj > qi)) p = 0.f;
          }
          dp[n][e] = p * (dp[n][e] - dl[e >> 1]);
        }
      f6_xb<T, 2>(dq, dp, Ks, hk * 32, lane);
    }
    __syncthreads();
  }
  if (qw >= a.L) return;
  mm_store<ODT>(dq, a.dq, bh, qw, a.L, a.scale, lane);
}

/* batch offset of t for batch-head bh; every index static (a loop over a.nb would copy the
 * shape and strides to local memory, per thread) */
__device__ __forceinline__ int64_t f6_boff(const FaArgs &a, const FaIn &t, int64_t bh) {
  int64_t off = 0;
#pragma unroll
  for (int d = CT_MAX_DIMS - 1; d >= 0; d--)
    if (d < a.nb) {
      int64_t i = bh % a.bshape[d];
      bh /= a.bshape[d];
      off += i * t.bst[d];
    }
  return off;
}

/* float32 rows of t (last dim 64) rounded to bfloat16 into contiguous dst [BH, rows, 64]: blockIdx.y
 * walks the batch-heads, each thread 8 values of one row */
__global__ void k_f6_round(FaArgs a, FaIn t, int64_t rows, uint16_t *dst) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= rows * 8) return;
  int64_t r = i >> 3;
  int c = (int)(i & 7) * 8;
  for (int64_t bh = blockIdx.y; bh < a.BH; bh += gridDim.y) {
    const float4 *s = (const float4 *)((const float *)t.p + f6_boff(a, t, bh) + r * t.rs + c);
    float4 x = s[0], y = s[1];
    uint4 o = make_uint4(mm_pack<__nv_bfloat16>(x.x, x.y), mm_pack<__nv_bfloat16>(x.z, x.w),
                         mm_pack<__nv_bfloat16>(y.x, y.y), mm_pack<__nv_bfloat16>(y.z, y.w));
    *(uint4 *)(dst + (bh * rows + r) * 64 + c) = o;
  }
}

/* ---- host side ---- */
/* CT_CUDA_FA_PIPE: 0 off, 2 16-bit inputs only (float32 under autocast keeps the unpipelined kernels,
 * which round on load), else on */
static int f6_mode(void) {
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("CT_CUDA_FA_PIPE");
    on = e && e[0] == '0' ? 0 : e && e[0] == '2' ? 2 : 1;
  }
  return on;
}

/* warps per block of kernel i (0 forward, 1 dK/dV, 2 dQ): CT_CUDA_FA_NW="F,K,Q", each 4 or 8 (or h
 * for a backward kernel: the low-register variant, returned as 0); read
 * on every call so that tests and benchmarks can compare the variants in one process */
static int f6_nw(int i) {
  static const int def[3] = {8, 0, 0}; /* fastest on the H200 (bench/results/s8_cudaattn.md): 8-warp forward, low-register backward */
  const char *e = getenv("CT_CUDA_FA_NW");
  if (e) {
    for (int k = 0; k < i && *e; k++) {
      while (*e && *e != ',') e++;
      if (*e == ',') e++;
    }
    if (*e == '4') return 4;
    if (*e == '8') return 8;
    if (*e == 'h' && i > 0) return 0; /* the low-register 4-warp backward kernel */
  }
  return def[i];
}

/* base, row stride and batch strides multiples of `mult` elements (16 bytes), base 16-byte aligned */
static bool f6_aligned(const FaArgs &a, const FaIn &t, int64_t mult) {
  if ((uintptr_t)t.p % 16 || t.rs % mult) return false;
  for (int d = 0; d < a.nb; d++)
    if (t.bst[d] % mult) return false;
  return true;
}

/* t rounded into contiguous bfloat16 at dst: the descriptor of that copy */
static FaIn f6_round(const FaArgs &a, const FaIn &t, int64_t rows, uint16_t *dst, cudaStream_t s) {
  dim3 grid((unsigned)((rows * 8 + 255) / 256), (unsigned)(a.BH < 65535 ? a.BH : 65535));
  k_f6_round<<<grid, 256, 0, s>>>(a, t, rows, dst);
  FaIn r;
  memset(&r, 0, sizeof r);
  r.p = (const char *)dst;
  r.rs = 64;
  int64_t st = rows * 64;
  for (int d = a.nb - 1; d >= 0; d--) {
    r.bst[d] = st;
    st *= a.bshape[d];
  }
  return r;
}

template <typename K> static void f6_launch(K kern, int64_t blocks, int nw, size_t smem, cudaStream_t s, const FaArgs &a) {
  cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  kern<<<(unsigned)blocks, nw * 32, smem, s>>>(a);
}

static size_t f6_smem_fwd(int nw) { return (size_t)(nw * 16 + 256) * MM_LD * 2; }
static size_t f6_smem_kv(int nw) { return (size_t)(2 * nw * 16 + 256) * MM_LD * 2 + 2 * 128 * sizeof(float); }
static size_t f6_smem_q(int nw) { return (size_t)(2 * nw * 16 + 256) * MM_LD * 2; }

template <int CT, int ODT> static void f6_fwd_run(const FaArgs &a, cudaStream_t s) {
  int nw = f6_nw(0);
  int64_t nb = a.BH * ((a.L + nw * 16 - 1) / (nw * 16));
  if (nw == 4) f6_launch(k_f6_fwd<CT, ODT, 4>, nb, 4, f6_smem_fwd(4), s, a);
  else f6_launch(k_f6_fwd<CT, ODT, 8>, nb, 8, f6_smem_fwd(8), s, a);
}
template <int CT, int ODT> static void f6_bwd_run(const FaArgs &a, cudaStream_t s) {
  int nk = f6_nw(1), nq = f6_nw(2);
  int64_t bk = a.BH * ((a.S + (nk ? nk : 4) * 16 - 1) / ((nk ? nk : 4) * 16)),
          bq = a.BH * ((a.L + (nq ? nq : 4) * 16 - 1) / ((nq ? nq : 4) * 16));
  if (nk == 0) f6_launch(k_f6_bwd_kv_lr<CT, ODT>, bk, 4, f6_smem_kv(4), s, a);
  else if (nk == 4) f6_launch(k_f6_bwd_kv<CT, ODT, 4>, bk, 4, f6_smem_kv(4), s, a);
  else f6_launch(k_f6_bwd_kv<CT, ODT, 8>, bk, 8, f6_smem_kv(8), s, a);
  if (nq == 0) f6_launch(k_f6_bwd_q_lr<CT, ODT>, bq, 4, f6_smem_q(4), s, a);
  else if (nq == 4) f6_launch(k_f6_bwd_q<CT, ODT, 4>, bq, 4, f6_smem_q(4), s, a);
  else f6_launch(k_f6_bwd_q<CT, ODT, 8>, bq, 8, f6_smem_q(8), s, a);
}

/* the forward for head dim 64 on input dtype dt (0 float32 under bf16 autocast, 1 float16, 2 bfloat16);
 * false: not applicable here (the caller takes the unpipelined kernels) */
bool fa64_fwd(const FaArgs &a0, int dt, int dev, ct_status *st) {
  *st = CT_OK;
  if (!f6_mode() || (dt == 0 && f6_mode() == 2)) return false;
  cudaStream_t s = CU_STREAM(dev);
  if (dt != 0) {
    if (!f6_aligned(a0, a0.q, 8) || !f6_aligned(a0, a0.k, 8) || !f6_aligned(a0, a0.v, 8)) return false;
    if (dt == 1) f6_fwd_run<1, 1>(a0, s);
    else f6_fwd_run<2, 2>(a0, s);
    *st = ct_cuda_check_launch("sdpa_flash");
    return true;
  }
  if (!f6_aligned(a0, a0.q, 4) || !f6_aligned(a0, a0.k, 4) || !f6_aligned(a0, a0.v, 4)) return false;
  size_t nq = (size_t)(a0.BH * a0.L * 64), nk = (size_t)(a0.BH * a0.S * 64), bytes = 2 * (nq + 2 * nk);
  uint16_t *tmp = (uint16_t *)ct_cuda_tmp_alloc(dev, bytes);
  if (!tmp) {
    *st = ct_last_status();
    return true;
  }
  FaArgs a = a0;
  a.q = f6_round(a0, a0.q, a0.L, tmp, s);
  a.k = f6_round(a0, a0.k, a0.S, tmp + nq, s);
  a.v = f6_round(a0, a0.v, a0.S, tmp + nq + nk, s);
  f6_fwd_run<2, 0>(a, s);
  *st = ct_cuda_check_launch("sdpa_flash");
  ct_cuda_tmp_free(dev, tmp, bytes);
  return true;
}

/* the backward (delta already computed into a0.delta); as fa64_fwd */
bool fa64_bwd(const FaArgs &a0, int dt, int dev, ct_status *st) {
  *st = CT_OK;
  if (!f6_mode() || (dt == 0 && f6_mode() == 2)) return false;
  cudaStream_t s = CU_STREAM(dev);
  if (dt != 0) {
    if (!f6_aligned(a0, a0.q, 8) || !f6_aligned(a0, a0.k, 8) || !f6_aligned(a0, a0.v, 8) || !f6_aligned(a0, a0.go, 8))
      return false;
    if (dt == 1) f6_bwd_run<1, 1>(a0, s);
    else f6_bwd_run<2, 2>(a0, s);
    *st = ct_cuda_check_launch("sdpa_flash_backward");
    return true;
  }
  if (!f6_aligned(a0, a0.q, 4) || !f6_aligned(a0, a0.k, 4) || !f6_aligned(a0, a0.v, 4) || !f6_aligned(a0, a0.go, 4))
    return false;
  size_t nq = (size_t)(a0.BH * a0.L * 64), nk = (size_t)(a0.BH * a0.S * 64), bytes = 2 * (2 * nq + 2 * nk);
  uint16_t *tmp = (uint16_t *)ct_cuda_tmp_alloc(dev, bytes);
  if (!tmp) {
    *st = ct_last_status();
    return true;
  }
  FaArgs a = a0;
  a.q = f6_round(a0, a0.q, a0.L, tmp, s);
  a.go = f6_round(a0, a0.go, a0.L, tmp + nq, s);
  a.k = f6_round(a0, a0.k, a0.S, tmp + 2 * nq, s);
  a.v = f6_round(a0, a0.v, a0.S, tmp + 2 * nq + nk, s);
  f6_bwd_run<2, 0>(a, s);
  *st = ct_cuda_check_launch("sdpa_flash_backward");
  ct_cuda_tmp_free(dev, tmp, bytes);
  return true;
}
