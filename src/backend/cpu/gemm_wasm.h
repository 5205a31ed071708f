/* WebAssembly SIMD128 float32 micro-kernel of the packed GEMM (gemm_packed.c includes this file
 * only when compiling with -msimd128). Same contract as the portable kernel there:
 *   c[4 x 16] (row stride ldc, unit column stride) = (acc ? c : 0) + a-panel * b-panel,
 *   a: kc groups of 4 values, b: kc groups of 16 values (packed).
 *
 * Why a separate kernel for wasm:
 * - Speed: V8 maps v128 locals onto 16 xmm registers; written with explicit v128 values the
 *   4x16 tile (16 accumulators, the 4 B vectors of a k step and a splat of A) was the fastest
 *   of the shapes measured in Node 20 (4x8, 5x8, 6x8, 8x8, 4x12, 3x12, 2x16, 4x16; best of
 *   40 runs each, twice, on a VM at load 15: 4x16 explicit 14-27 GFLOPS (28-31 in the pairwise
 *   order below), the compiler-vectorised portable 4x16 kernel 9-18, 8x8 17-23).
 * - Order: each element sums k in order, one multiply and one add per step (SIMD128 has no
 *   fused multiply-add), i.e. the same order and roundings as the portable kernel, so results
 *   are bit-identical to it. A pairwise order (acc += a0*b0 + a1*b1: same op count, half the
 *   accumulation chain) was tried: it is closer to the exact (float64) result on random K = 27
 *   dot products (RMS error / sum|terms| 2.1e-8 against 2.6e-8) but farther from PyTorch's own
 *   (FMA, sequential) rounding: the parity suite then failed 4 borderline float32 cases instead
 *   of 1, although in 3 of the 4 it was nearer the exact value than PyTorch itself (see
 *   bench/RESULTS.md, "WebAssembly: the SIMD128 GEMM micro-kernel, the parity failure"). */
#ifndef CT_GEMM_WASM_H
#define CT_GEMM_WASM_H
#include <stdint.h>
#include <wasm_simd128.h>

#define W_ROW_INIT(r)                                                                           \
  v128_t c##r##0, c##r##1, c##r##2, c##r##3;                                                    \
  if (acc) {                                                                                    \
    c##r##0 = wasm_v128_load(c + r * ldc), c##r##1 = wasm_v128_load(c + r * ldc + 4);          \
    c##r##2 = wasm_v128_load(c + r * ldc + 8), c##r##3 = wasm_v128_load(c + r * ldc + 12);     \
  } else                                                                                        \
    c##r##0 = c##r##1 = c##r##2 = c##r##3 = wasm_f32x4_splat(0.0f);
/* one row of the tile over one k step: c += a[r] * b */
#define W_ROW1(r)                                                                               \
  {                                                                                             \
    v128_t s0 = wasm_v128_load32_splat(a + r);                                                  \
    c##r##0 = wasm_f32x4_add(c##r##0, wasm_f32x4_mul(s0, b00));                                \
    c##r##1 = wasm_f32x4_add(c##r##1, wasm_f32x4_mul(s0, b01));                                \
    c##r##2 = wasm_f32x4_add(c##r##2, wasm_f32x4_mul(s0, b02));                                \
    c##r##3 = wasm_f32x4_add(c##r##3, wasm_f32x4_mul(s0, b03));                                \
  }
#define W_ROW_STORE(r)                                                                          \
  wasm_v128_store(c + r * ldc, c##r##0), wasm_v128_store(c + r * ldc + 4, c##r##1);             \
  wasm_v128_store(c + r * ldc + 8, c##r##2), wasm_v128_store(c + r * ldc + 12, c##r##3);

/* noinline: inlined into the driver, the kernel competed for registers with the loop around it
 * and ran at about half speed in the measurements above */
__attribute__((noinline)) static void ukr_f32_wasm(int64_t kc, const float *a, const float *b, float *c,
                                                   int64_t ldc, int acc) {
  W_ROW_INIT(0) W_ROW_INIT(1) W_ROW_INIT(2) W_ROW_INIT(3)
  for (int64_t k = 0; k < kc; k++, a += 4, b += 16) {
    v128_t b00 = wasm_v128_load(b), b01 = wasm_v128_load(b + 4), b02 = wasm_v128_load(b + 8),
           b03 = wasm_v128_load(b + 12);
    W_ROW1(0) W_ROW1(1) W_ROW1(2) W_ROW1(3)
  }
  W_ROW_STORE(0) W_ROW_STORE(1) W_ROW_STORE(2) W_ROW_STORE(3)
}
/* Packing of an operand that is contiguous along k (row-major A, a transposed B such as
 * nn.Linear's weight): dst[k * P + r] = src[r * sp + k] for a full panel of P items (P a
 * multiple of 4), in 4x4 register transposes instead of one scalar load/store per element
 * (the portable loop in gemm_packed.c; V8 maps these shuffles to unpcklps/unpckhps/movlhps). */
static void ct_wasm_tpanel_f32(float *dst, const float *src, int64_t sp, int64_t kc, int P) {
  int64_t k0 = 0;
  for (; k0 + 4 <= kc; k0 += 4)
    for (int r = 0; r + 4 <= P; r += 4) {
      const float *s = src + r * sp + k0;
      v128_t r0 = wasm_v128_load(s), r1 = wasm_v128_load(s + sp), r2 = wasm_v128_load(s + 2 * sp),
             r3 = wasm_v128_load(s + 3 * sp);
      v128_t t0 = wasm_i32x4_shuffle(r0, r1, 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(r0, r1, 2, 6, 3, 7),
             t2 = wasm_i32x4_shuffle(r2, r3, 0, 4, 1, 5), t3 = wasm_i32x4_shuffle(r2, r3, 2, 6, 3, 7);
      float *d = dst + k0 * P + r;
      wasm_v128_store(d, wasm_i32x4_shuffle(t0, t2, 0, 1, 4, 5));
      wasm_v128_store(d + P, wasm_i32x4_shuffle(t0, t2, 2, 3, 6, 7));
      wasm_v128_store(d + 2 * P, wasm_i32x4_shuffle(t1, t3, 0, 1, 4, 5));
      wasm_v128_store(d + 3 * P, wasm_i32x4_shuffle(t1, t3, 2, 3, 6, 7));
    }
  for (int r = 0; r < P; r++)
    for (int64_t k = k0; k < kc; k++) dst[k * P + r] = src[r * sp + k];
}

#undef W_ROW_INIT
#undef W_ROW1
#undef W_ROW_STORE
#endif
