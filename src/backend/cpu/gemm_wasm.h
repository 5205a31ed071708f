/* WebAssembly SIMD128 float32 micro-kernel of the packed GEMM (gemm_packed.c includes this file
 * only when compiling with -msimd128). Same contract as the portable kernel there:
 *   c[4 x 8] (row stride ldc, unit column stride) = (acc ? c : 0) + a-panel * b-panel,
 *   a: kc groups of 4 values, b: kc groups of 8 values (packed).
 * gemm_packed.c takes the tile shape from CT_WASM_F32_MR / CT_WASM_F32_NR.
 *
 * Why 4x8: V8 (x64) allocates v128 values to 15 xmm registers (xmm15 is its scratch). The 4x16
 * tile used before (16 accumulators + 4 B vectors + a splat) spilled; 4x8 (8 accumulators + 2 B
 * + 1 splat) does not. bench/wasm_ukr.c, Node 20, best of 60 trials over a 120x256x256 block,
 * three runs at load 17-20 (session 5): 4x8 36.0-40.2 GFLOP/s, 4x16 25.5-26.6, 4x16 with one A
 * load and lane shuffles 31.2-33.8, 4x8 so 31.4-38.1, 6x8 25.7-26.6, 3x16 25.7-26.1, 5x8
 * 21.0-22.5, 4x8 with k unrolled twice 29.7. (Session 3 had measured 4x16 fastest with another
 * harness on a VM at load 15; this harness runs the kernel as the driver does, over panels.)
 * Order: each element sums k in order from zero, one multiply and one add per step (SIMD128 has
 * no fused multiply-add), then adds c when accumulating. A pairwise order (acc += a0*b0 + a1*b1) was tried in session 3: closer to
 * the exact result but farther from PyTorch's own (FMA, sequential) rounding, so the parity suite
 * failed more borderline float32 cases (bench/RESULTS.md, "WebAssembly: the SIMD128 GEMM
 * micro-kernel, the parity failure"). */
#ifndef CT_GEMM_WASM_H
#define CT_GEMM_WASM_H
#include <stdint.h>
#include <wasm_simd128.h>

#define CT_WASM_F32_MR 4
#define CT_WASM_F32_NR 8
#define CT_WASM_F32_NAME "wasm simd128 4x8"

#define W_ROW_INIT(r) v128_t c##r##0 = wasm_f32x4_splat(0.0f), c##r##1 = c##r##0;
/* one row of the tile over one k step: c += a[r] * b */
#define W_ROW1(r)                                                                               \
  {                                                                                             \
    v128_t s0 = wasm_v128_load32_splat(a + r);                                                  \
    c##r##0 = wasm_f32x4_add(c##r##0, wasm_f32x4_mul(s0, b00));                                \
    c##r##1 = wasm_f32x4_add(c##r##1, wasm_f32x4_mul(s0, b01));                                \
  }
/* c is added after the k sum (not loaded into the accumulators first): the rounding of the edge
 * tiles (gemm_packed.c sums them in a zeroed tile, then adds c) and of a BLAS kernel (C += sum),
 * so a full tile and an edge tile of the same product round alike */
#define W_ROW_STORE(r)                                                                          \
  if (acc) {                                                                                    \
    c##r##0 = wasm_f32x4_add(wasm_v128_load(c + r * ldc), c##r##0);                             \
    c##r##1 = wasm_f32x4_add(wasm_v128_load(c + r * ldc + 4), c##r##1);                         \
  }                                                                                             \
  wasm_v128_store(c + r * ldc, c##r##0), wasm_v128_store(c + r * ldc + 4, c##r##1);

/* noinline: inlined into the driver, the kernel competed for registers with the loop around it
 * and ran at about half speed (session 3's measurements) */
__attribute__((noinline)) static void ukr_f32_wasm(int64_t kc, const float *a, const float *b, float *c,
                                                   int64_t ldc, int acc) {
  W_ROW_INIT(0) W_ROW_INIT(1) W_ROW_INIT(2) W_ROW_INIT(3)
  for (int64_t k = 0; k < kc; k++, a += 4, b += 8) {
    v128_t b00 = wasm_v128_load(b), b01 = wasm_v128_load(b + 4);
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
