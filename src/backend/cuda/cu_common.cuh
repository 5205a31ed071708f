/* Device-side helpers of the CUDA kernels: dtype loads and stores that round exactly
 * like the CPU reference (src/core/dtype.c), the strided iterator's offsets, launch sizes. */
#ifndef CT_CU_COMMON_CUH
#define CT_CU_COMMON_CUH
#include <cuda_runtime.h>
#include <stdint.h>
extern "C" {
#include "cuda_backend.h"
}

#define CU_THREADS 256
#define CU_STREAM(dev) ((cudaStream_t)ct_cuda_stream(dev))

static inline unsigned cu_blocks(int64_t n, int threads = CU_THREADS) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  return (unsigned)(b > (1 << 22) ? (1 << 22) : b); /* grid-stride loops cover the rest */
}

/* ---- half / bfloat16 bits, as the CPU converts them ---- */
__device__ __forceinline__ float cu_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
  if (e == 0) {
    if (m == 0) x = sign;
    else return __uint_as_float(sign) + (sign ? -1.0f : 1.0f) * (float)m * 5.9604644775390625e-8f; /* m * 2^-24 */
  } else if (e == 31) x = sign | 0x7f800000u | (m << 13);
  else x = sign | ((e - 15 + 127) << 23) | (m << 13);
  return __uint_as_float(x);
}
__device__ __forceinline__ uint16_t cu_f2h(float f) {
  uint32_t x = __float_as_uint(f);
  uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);
  if (ax < 0x38800000u) {
    float r = rintf(__uint_as_float(ax) * 16777216.0f);
    return (uint16_t)(sign | (uint32_t)r);
  }
  uint32_t e = ((ax >> 23) - 127 + 15), m = ax & 0x7fffff;
  uint32_t h = (e << 10) | (m >> 13);
  uint32_t rest = m & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return (uint16_t)(sign | h);
}
__device__ __forceinline__ float cu_bf2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
__device__ __forceinline__ uint16_t cu_f2bf(float f) {
  uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffff) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
  uint32_t lsb = (x >> 16) & 1;
  x += 0x7fff + lsb;
  return (uint16_t)(x >> 16);
}

/* float -> int64 like the CPU's f2i (x86's "integer indefinite" out of range) */
__device__ __forceinline__ int64_t cu_f2i(double v) {
  if (v != v || v >= 9223372036854775808.0 || v < -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

__device__ __forceinline__ double ld_f(const char *p, int dt) {
  switch (dt) {
    case CT_FLOAT32: return *(const float *)p;
    case CT_FLOAT64: return *(const double *)p;
    case CT_FLOAT16: return cu_h2f(*(const uint16_t *)p);
    case CT_BFLOAT16: return cu_bf2f(*(const uint16_t *)p);
    case CT_INT8: return *(const int8_t *)p;
    case CT_UINT8: return *(const uint8_t *)p;
    case CT_INT16: return *(const int16_t *)p;
    case CT_INT32: return *(const int32_t *)p;
    case CT_INT64: return (double)*(const int64_t *)p;
    case CT_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    default: return 0;
  }
}
__device__ __forceinline__ int64_t ld_i(const char *p, int dt) {
  switch (dt) {
    case CT_FLOAT32: return cu_f2i(*(const float *)p);
    case CT_FLOAT64: return cu_f2i(*(const double *)p);
    case CT_FLOAT16: return cu_f2i(cu_h2f(*(const uint16_t *)p));
    case CT_BFLOAT16: return cu_f2i(cu_bf2f(*(const uint16_t *)p));
    case CT_INT8: return *(const int8_t *)p;
    case CT_UINT8: return *(const uint8_t *)p;
    case CT_INT16: return *(const int16_t *)p;
    case CT_INT32: return *(const int32_t *)p;
    case CT_INT64: return *(const int64_t *)p;
    case CT_BOOL: return *(const uint8_t *)p ? 1 : 0;
    default: return 0;
  }
}
__device__ __forceinline__ void st_f(char *p, int dt, double v) {
  switch (dt) {
    case CT_FLOAT32: *(float *)p = (float)v; break;
    case CT_FLOAT64: *(double *)p = v; break;
    case CT_FLOAT16: *(uint16_t *)p = cu_f2h((float)v); break;
    case CT_BFLOAT16: *(uint16_t *)p = cu_f2bf((float)v); break;
    case CT_INT8: *(int8_t *)p = (int8_t)cu_f2i(v); break;
    case CT_UINT8: *(uint8_t *)p = (uint8_t)cu_f2i(v); break;
    case CT_INT16: *(int16_t *)p = (int16_t)cu_f2i(v); break;
    case CT_INT32: *(int32_t *)p = (int32_t)cu_f2i(v); break;
    case CT_INT64: *(int64_t *)p = cu_f2i(v); break;
    case CT_BOOL: *(uint8_t *)p = v != 0; break;
    default: break;
  }
}
__device__ __forceinline__ void st_i(char *p, int dt, int64_t v) {
  switch (dt) {
    case CT_FLOAT32: *(float *)p = (float)v; break;
    case CT_FLOAT64: *(double *)p = (double)v; break;
    case CT_FLOAT16: *(uint16_t *)p = cu_f2h((float)v); break;
    case CT_BFLOAT16: *(uint16_t *)p = cu_f2bf((float)v); break;
    case CT_INT8: *(int8_t *)p = (int8_t)v; break;
    case CT_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case CT_INT16: *(int16_t *)p = (int16_t)v; break;
    case CT_INT32: *(int32_t *)p = (int32_t)v; break;
    case CT_INT64: *(int64_t *)p = v; break;
    case CT_BOOL: *(uint8_t *)p = v != 0; break;
    default: break;
  }
}
__device__ __forceinline__ void cpy_bytes(char *d, const char *s, int isz) {
  switch (isz) {
    case 1: *(uint8_t *)d = *(const uint8_t *)s; break;
    case 2: *(uint16_t *)d = *(const uint16_t *)s; break;
    case 4: *(uint32_t *)d = *(const uint32_t *)s; break;
    default: *(uint64_t *)d = *(const uint64_t *)s; break;
  }
}

/* Byte pointers of element i of every tensor of the iterator. I is int32 when the
 * element count allows (cheaper division), else int64. */
template <int NT, typename I>
__device__ __forceinline__ void cu_ptrs(const cu_iter &it, I i, char **p) {
#pragma unroll
  for (int k = 0; k < NT; k++) p[k] = it.base[k];
  for (int d = it.nd - 1; d > 0; d--) {
    I s = (I)it.shape[d];
    I q = i / s, r = i - q * s;
    i = q;
#pragma unroll
    for (int k = 0; k < NT; k++) p[k] += (int64_t)r * it.st[k][d];
  }
#pragma unroll
  for (int k = 0; k < NT; k++) p[k] += (int64_t)i * it.st[k][0];
}

/* The elementwise driver: f(char **p) once per element (p[k]: tensor k's element). */
template <int NT, typename I, typename F>
__global__ void cu_ew_kernel(cu_iter it, F f) {
  /* the counter is 64-bit even when I is not: i + stride may pass 2^31 */
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < it.numel; i += gridDim.x * (int64_t)blockDim.x) {
    char *p[NT];
    cu_ptrs<NT, I>(it, (I)i, p);
    f(p);
  }
}

template <int NT, typename F>
static ct_status cu_foreach(int dev, const cu_iter &it, F f, const char *what) {
  if (it.numel == 0) return CT_OK;
  cudaStream_t s = CU_STREAM(dev);
  if (it.numel < ((int64_t)1 << 31)) cu_ew_kernel<NT, int32_t, F><<<cu_blocks(it.numel), CU_THREADS, 0, s>>>(it, f);
  else cu_ew_kernel<NT, int64_t, F><<<cu_blocks(it.numel), CU_THREADS, 0, s>>>(it, f);
  return ct_cuda_check_launch(what);
}

#endif
