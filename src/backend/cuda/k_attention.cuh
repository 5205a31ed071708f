/* Shared by k_attention.cu (all head dims, the reference and WMMA/mma.sync kernels) and
 * k_attention64.cu (head dim 64, pipelined): the argument block, element access and the
 * mma.sync / ldmatrix fragment helpers of the head-dim-64 kernels. */
#pragma once
#include "cu_common.cuh"
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

struct FaIn {
  const char *p;
  int64_t bst[CT_MAX_DIMS]; /* batch strides, elements */
  int64_t rs;               /* row stride, elements */
};

struct FaArgs {
  int nb;
  int64_t bshape[CT_MAX_DIMS];
  FaIn q, k, v, o, go;
  char *out, *dq, *dk, *dv; /* contiguous [BH, rows, D] */
  float *lse, *delta;       /* contiguous [BH, L] */
  int64_t L, S, BH;
  float scale;
  int causal;
};

template <int DT> __device__ __forceinline__ float fa_ld(const char *b, int64_t i) {
  if (DT == 0) return ((const float *)b)[i];
  uint16_t h = ((const uint16_t *)b)[i];
  return DT == 1 ? cu_h2f(h) : cu_bf2f(h);
}
template <int DT> __device__ __forceinline__ void fa_st(char *b, int64_t i, float v) {
  if (DT == 0) ((float *)b)[i] = v;
  else ((uint16_t *)b)[i] = DT == 1 ? cu_f2h(v) : cu_f2bf(v);
}

__device__ __forceinline__ int64_t fa_off(const FaArgs &a, const FaIn &t, int64_t bh) {
  int64_t off = 0;
  for (int d = a.nb - 1; d >= 0; d--) {
    int64_t i = bh % a.bshape[d];
    bh /= a.bshape[d];
    off += i * t.bst[d];
  }
  return off;
}

#define TC_W 4
#define TC_KP 8 /* 16-bit row padding: rows stay 16-byte aligned, banks shift by 4 words */
template <int DT> struct TcT;
template <> struct TcT<1> { typedef __half t; };
template <> struct TcT<2> { typedef __nv_bfloat16 t; };

#define MM_LD (64 + TC_KP) /* 16-bit row stride of every staged tile */
#define MM_SMEM(n) ((size_t)(n) * 64 * MM_LD * 2 + (size_t)2 * 64 * 4)
#define MM_LOG2E 1.4426950408889634f

__device__ __forceinline__ void mm_ldsm4(uint32_t r[4], const void *p) {
  uint32_t s = (uint32_t)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}
__device__ __forceinline__ void mm_ldsm4t(uint32_t r[4], const void *p) {
  uint32_t s = (uint32_t)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}
/* c (16 x 8, float) += a (16 x 16) b (16 x 8) */
template <typename T> __device__ __forceinline__ void mm_mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void mm_mma<__nv_bfloat16>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mm_mma<__half>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* two floats rounded to T, the first in the low half (the lower column) */
template <typename T> __device__ __forceinline__ uint32_t mm_pack(float lo, float hi);
template <> __device__ __forceinline__ uint32_t mm_pack<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *(uint32_t *)&v;
}
template <> __device__ __forceinline__ uint32_t mm_pack<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *(uint32_t *)&v;
}

/* A fragments (k = 16-column chunks) of rows r0..r0+15 of a staged tile */
template <int NK> __device__ __forceinline__ void mm_afrag(uint32_t f[NK][4], const void *tile, int r0, int lane) {
  const uint16_t *t = (const uint16_t *)tile;
#pragma unroll
  for (int kc = 0; kc < NK; kc++) mm_ldsm4(f[kc], t + (r0 + (lane & 7) + ((lane >> 3) & 1) * 8) * MM_LD + kc * 16 + (lane >> 4) * 8);
}
/* acc[8][4] (16 x 64) = A (16 x 64, fragments af) times the 64 rows of tile as B^T (B[n][k] = tile[n][k]) */
template <typename T>
__device__ __forceinline__ void mm_abt(float acc[8][4], const uint32_t af[4][4], const void *tile, int lane) {
  const uint16_t *t = (const uint16_t *)tile;
#pragma unroll
  for (int n = 0; n < 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) acc[n][e] = 0.f;
#pragma unroll
  for (int kc = 0; kc < 4; kc++)
#pragma unroll
    for (int np = 0; np < 4; np++) {
      uint32_t b[4];
      mm_ldsm4(b, t + (np * 16 + (lane & 7) + (lane >> 4) * 8) * MM_LD + kc * 16 + ((lane >> 3) & 1) * 8);
      mm_mma<T>(acc[2 * np], af[kc], b[0], b[1]);
      mm_mma<T>(acc[2 * np + 1], af[kc], b[2], b[3]);
    }
}
/* acc[8][4] (16 x 64) += X (16 x 64 as float fragments, rounded to T) times tile (64 x 64: k = row) */
template <typename T>
__device__ __forceinline__ void mm_xb(float acc[8][4], const float x[8][4], const void *tile, int lane) {
  const uint16_t *t = (const uint16_t *)tile;
#pragma unroll
  for (int kc = 0; kc < 4; kc++) {
    uint32_t a[4] = {mm_pack<T>(x[2 * kc][0], x[2 * kc][1]), mm_pack<T>(x[2 * kc][2], x[2 * kc][3]),
                     mm_pack<T>(x[2 * kc + 1][0], x[2 * kc + 1][1]), mm_pack<T>(x[2 * kc + 1][2], x[2 * kc + 1][3])};
#pragma unroll
    for (int dp = 0; dp < 4; dp++) {
      uint32_t b[4];
      mm_ldsm4t(b, t + (kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * MM_LD + dp * 16 + (lane >> 4) * 8);
      mm_mma<T>(acc[2 * dp], a, b[0], b[1]);
      mm_mma<T>(acc[2 * dp + 1], a, b[2], b[3]);
    }
  }
}
/* the warp's 16 x 64 fragment rows (row0 + g, row0 + g + 8), times mul, into rows < n of [BH, n, 64] */
template <int IDT>
__device__ __forceinline__ void mm_store(const float acc[8][4], char *out, int64_t bh, int64_t row0, int64_t n, float mul,
                                         int lane) {
  int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    int64_t r = row0 + g + 8 * h;
    if (r >= n) continue;
    int64_t base = (bh * n + r) * 64;
#pragma unroll
    for (int nt = 0; nt < 8; nt++) {
      fa_st<IDT>(out, base + nt * 8 + 2 * t, acc[nt][2 * h] * mul);
      fa_st<IDT>(out, base + nt * 8 + 2 * t + 1, acc[nt][2 * h + 1] * mul);
    }
  }
}


/* k_attention64.cu: the pipelined head-dim-64 kernels for input dtype dt (0 float32 under bf16
 * autocast, 1 float16, 2 bfloat16); false where they do not apply (the caller takes the kernels of
 * k_attention.cu), else *st is the launch's status. The backward expects a.delta computed. */
bool fa64_fwd(const FaArgs &a, int dt, int dev, ct_status *st);
bool fa64_bwd(const FaArgs &a, int dt, int dev, ct_status *st);
