/* Micro-kernel shapes of the SIMD128 float32 GEMM in V8 (issue 8): each kernel runs over an
 * MC x NC block of C with packed A (MC x KC) and B (KC x NC) panels, as gemm_packed.c's loop does;
 * best of many trials (a shared machine: the minimum is the undisturbed time), kernels
 * interleaved per round. Build and run (args: rounds, repetitions per trial):
 *   emcc -O3 -msimd128 -Isrc -sENVIRONMENT=node --pre-js web/src/node-pre.js -o build/wasm-ukr.js bench/wasm_ukr.c
 *   node build/wasm-ukr.js 40 4
 * and in Chromium (its performance.now() is coarser: longer trials) bench/wasm_ukr_chromium.mjs. */
#include <emscripten.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>
#include "backend/cpu/gemm_wasm.h"

#define MC 120
#define NC 256
#define KC 256

/* 6x8: 12 accumulators + 2 B vectors + 1 splat = 15 of V8's 15 allocatable xmm registers */
__attribute__((noinline)) static void k6x8(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc) {
  v128_t c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  if (acc) {
#define L(r) c##r##0 = wasm_v128_load(c + r * ldc), c##r##1 = wasm_v128_load(c + r * ldc + 4);
    L(0) L(1) L(2) L(3) L(4) L(5)
#undef L
  } else c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = wasm_f32x4_splat(0.0f);
  for (int64_t k = 0; k < kc; k++, a += 6, b += 8) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
#define R(r) { v128_t s = wasm_v128_load32_splat(a + r); c##r##0 = wasm_f32x4_add(c##r##0, wasm_f32x4_mul(s, b0)); c##r##1 = wasm_f32x4_add(c##r##1, wasm_f32x4_mul(s, b1)); }
    R(0) R(1) R(2) R(3) R(4) R(5)
#undef R
  }
#define S(r) wasm_v128_store(c + r * ldc, c##r##0), wasm_v128_store(c + r * ldc + 4, c##r##1);
  S(0) S(1) S(2) S(3) S(4) S(5)
#undef S
}
/* 4x8 */
__attribute__((noinline)) static void k4x8(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc) {
  v128_t c00, c01, c10, c11, c20, c21, c30, c31;
  if (acc) {
#define L(r) c##r##0 = wasm_v128_load(c + r * ldc), c##r##1 = wasm_v128_load(c + r * ldc + 4);
    L(0) L(1) L(2) L(3)
#undef L
  } else c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = wasm_f32x4_splat(0.0f);
  for (int64_t k = 0; k < kc; k++, a += 4, b += 8) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
#define R(r) { v128_t s = wasm_v128_load32_splat(a + r); c##r##0 = wasm_f32x4_add(c##r##0, wasm_f32x4_mul(s, b0)); c##r##1 = wasm_f32x4_add(c##r##1, wasm_f32x4_mul(s, b1)); }
    R(0) R(1) R(2) R(3)
#undef R
  }
#define S(r) wasm_v128_store(c + r * ldc, c##r##0), wasm_v128_store(c + r * ldc + 4, c##r##1);
  S(0) S(1) S(2) S(3)
#undef S
}
/* 4x16, the kernel of sessions 3-4: 16 accumulators + 4 B vectors + 1 splat */
__attribute__((noinline)) static void k4x16(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc) {
  v128_t c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33;
  if (acc) {
#define L(r) c##r##0 = wasm_v128_load(c + r * ldc), c##r##1 = wasm_v128_load(c + r * ldc + 4), c##r##2 = wasm_v128_load(c + r * ldc + 8), c##r##3 = wasm_v128_load(c + r * ldc + 12);
    L(0) L(1) L(2) L(3)
#undef L
  } else c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = c20 = c21 = c22 = c23 = c30 = c31 = c32 = c33 = wasm_f32x4_splat(0.0f);
  for (int64_t k = 0; k < kc; k++, a += 4, b += 16) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4), b2 = wasm_v128_load(b + 8), b3 = wasm_v128_load(b + 12);
#define R(r) { v128_t s = wasm_v128_load32_splat(a + r); c##r##0 = wasm_f32x4_add(c##r##0, wasm_f32x4_mul(s, b0)); c##r##1 = wasm_f32x4_add(c##r##1, wasm_f32x4_mul(s, b1)); c##r##2 = wasm_f32x4_add(c##r##2, wasm_f32x4_mul(s, b2)); c##r##3 = wasm_f32x4_add(c##r##3, wasm_f32x4_mul(s, b3)); }
    R(0) R(1) R(2) R(3)
#undef R
  }
#define S(r) wasm_v128_store(c + r * ldc, c##r##0), wasm_v128_store(c + r * ldc + 4, c##r##1), wasm_v128_store(c + r * ldc + 8, c##r##2), wasm_v128_store(c + r * ldc + 12, c##r##3);
  S(0) S(1) S(2) S(3)
#undef S
}
/* 4x16 with one A load and lane shuffles instead of four load-splats */
__attribute__((noinline)) static void k4x16s(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc) {
  v128_t c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33;
  if (acc) {
#define L(r) c##r##0 = wasm_v128_load(c + r * ldc), c##r##1 = wasm_v128_load(c + r * ldc + 4), c##r##2 = wasm_v128_load(c + r * ldc + 8), c##r##3 = wasm_v128_load(c + r * ldc + 12);
    L(0) L(1) L(2) L(3)
#undef L
  } else c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = c20 = c21 = c22 = c23 = c30 = c31 = c32 = c33 = wasm_f32x4_splat(0.0f);
  for (int64_t k = 0; k < kc; k++, a += 4, b += 16) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4), b2 = wasm_v128_load(b + 8), b3 = wasm_v128_load(b + 12);
    v128_t av = wasm_v128_load(a);
#define R(r) { v128_t s = wasm_i32x4_shuffle(av, av, r, r, r, r); c##r##0 = wasm_f32x4_add(c##r##0, wasm_f32x4_mul(s, b0)); c##r##1 = wasm_f32x4_add(c##r##1, wasm_f32x4_mul(s, b1)); c##r##2 = wasm_f32x4_add(c##r##2, wasm_f32x4_mul(s, b2)); c##r##3 = wasm_f32x4_add(c##r##3, wasm_f32x4_mul(s, b3)); }
    R(0) R(1) R(2) R(3)
#undef R
  }
#define S(r) wasm_v128_store(c + r * ldc, c##r##0), wasm_v128_store(c + r * ldc + 4, c##r##1), wasm_v128_store(c + r * ldc + 8, c##r##2), wasm_v128_store(c + r * ldc + 12, c##r##3);
  S(0) S(1) S(2) S(3)
#undef S
}
/* 3x16: 12 accumulators + 4 B + 1 splat */
__attribute__((noinline)) static void k3x16(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc) {
  v128_t c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23;
  if (acc) {
#define L(r) c##r##0 = wasm_v128_load(c + r * ldc), c##r##1 = wasm_v128_load(c + r * ldc + 4), c##r##2 = wasm_v128_load(c + r * ldc + 8), c##r##3 = wasm_v128_load(c + r * ldc + 12);
    L(0) L(1) L(2)
#undef L
  } else c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = c20 = c21 = c22 = c23 = wasm_f32x4_splat(0.0f);
  for (int64_t k = 0; k < kc; k++, a += 3, b += 16) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4), b2 = wasm_v128_load(b + 8), b3 = wasm_v128_load(b + 12);
#define R(r) { v128_t s = wasm_v128_load32_splat(a + r); c##r##0 = wasm_f32x4_add(c##r##0, wasm_f32x4_mul(s, b0)); c##r##1 = wasm_f32x4_add(c##r##1, wasm_f32x4_mul(s, b1)); c##r##2 = wasm_f32x4_add(c##r##2, wasm_f32x4_mul(s, b2)); c##r##3 = wasm_f32x4_add(c##r##3, wasm_f32x4_mul(s, b3)); }
    R(0) R(1) R(2)
#undef R
  }
#define S(r) wasm_v128_store(c + r * ldc, c##r##0), wasm_v128_store(c + r * ldc + 4, c##r##1), wasm_v128_store(c + r * ldc + 8, c##r##2), wasm_v128_store(c + r * ldc + 12, c##r##3);
  S(0) S(1) S(2)
#undef S
}

/* 4x8 with one A load and lane shuffles */
__attribute__((noinline)) static void k4x8s(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc) {
  v128_t c00, c01, c10, c11, c20, c21, c30, c31;
  if (acc) {
#define L(r) c##r##0 = wasm_v128_load(c + r * ldc), c##r##1 = wasm_v128_load(c + r * ldc + 4);
    L(0) L(1) L(2) L(3)
#undef L
  } else c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = wasm_f32x4_splat(0.0f);
  for (int64_t k = 0; k < kc; k++, a += 4, b += 8) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4), av = wasm_v128_load(a);
#define R(r) { v128_t s = wasm_i32x4_shuffle(av, av, r, r, r, r); c##r##0 = wasm_f32x4_add(c##r##0, wasm_f32x4_mul(s, b0)); c##r##1 = wasm_f32x4_add(c##r##1, wasm_f32x4_mul(s, b1)); }
    R(0) R(1) R(2) R(3)
#undef R
  }
#define S(r) wasm_v128_store(c + r * ldc, c##r##0), wasm_v128_store(c + r * ldc + 4, c##r##1);
  S(0) S(1) S(2) S(3)
#undef S
}
/* 5x8 */
__attribute__((noinline)) static void k5x8(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc) {
  v128_t c00, c01, c10, c11, c20, c21, c30, c31, c40, c41;
  if (acc) {
#define L(r) c##r##0 = wasm_v128_load(c + r * ldc), c##r##1 = wasm_v128_load(c + r * ldc + 4);
    L(0) L(1) L(2) L(3) L(4)
#undef L
  } else c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = wasm_f32x4_splat(0.0f);
  for (int64_t k = 0; k < kc; k++, a += 5, b += 8) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
#define R(r) { v128_t s = wasm_v128_load32_splat(a + r); c##r##0 = wasm_f32x4_add(c##r##0, wasm_f32x4_mul(s, b0)); c##r##1 = wasm_f32x4_add(c##r##1, wasm_f32x4_mul(s, b1)); }
    R(0) R(1) R(2) R(3) R(4)
#undef R
  }
#define S(r) wasm_v128_store(c + r * ldc, c##r##0), wasm_v128_store(c + r * ldc + 4, c##r##1);
  S(0) S(1) S(2) S(3) S(4)
#undef S
}

/* 4x8, k unrolled by 2 */
__attribute__((noinline)) static void k4x8u(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc) {
  v128_t c00, c01, c10, c11, c20, c21, c30, c31;
  if (acc) {
#define L(r) c##r##0 = wasm_v128_load(c + r * ldc), c##r##1 = wasm_v128_load(c + r * ldc + 4);
    L(0) L(1) L(2) L(3)
#undef L
  } else c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = wasm_f32x4_splat(0.0f);
  int64_t k = 0;
#define R(r, o) { v128_t s = wasm_v128_load32_splat(a + o + r); c##r##0 = wasm_f32x4_add(c##r##0, wasm_f32x4_mul(s, b0)); c##r##1 = wasm_f32x4_add(c##r##1, wasm_f32x4_mul(s, b1)); }
  for (; k + 2 <= kc; k += 2, a += 8, b += 16) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
    R(0, 0) R(1, 0) R(2, 0) R(3, 0)
    b0 = wasm_v128_load(b + 8), b1 = wasm_v128_load(b + 12);
    R(0, 4) R(1, 4) R(2, 4) R(3, 4)
  }
  for (; k < kc; k++, a += 4, b += 8) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
    R(0, 0) R(1, 0) R(2, 0) R(3, 0)
  }
#undef R
#define S(r) wasm_v128_store(c + r * ldc, c##r##0), wasm_v128_store(c + r * ldc + 4, c##r##1);
  S(0) S(1) S(2) S(3)
#undef S
}

typedef void (*ukr_fn)(int64_t, const float *, const float *, float *, int64_t, int);
static struct { const char *name; ukr_fn f; int mr, nr; double best; } K[] = {
  {"gemm_wasm.h " CT_WASM_F32_NAME, ukr_f32_wasm, CT_WASM_F32_MR, CT_WASM_F32_NR, 1e30}, {"4x16 (sessions 3-4)", k4x16, 4, 16, 1e30}, {"4x16 shuffle-splat", k4x16s, 4, 16, 1e30},
  {"3x16", k3x16, 3, 16, 1e30}, {"6x8", k6x8, 6, 8, 1e30}, {"4x8 shuffle-splat", k4x8s, 4, 8, 1e30}, {"5x8", k5x8, 5, 8, 1e30}, {"4x8 unroll 2", k4x8u, 4, 8, 1e30},
};
#define NK (int)(sizeof K / sizeof K[0])

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 40, reps = argc > 2 ? atoi(argv[2]) : 4; /* reps: trial length */
  float *a = aligned_alloc(64, sizeof(float) * MC * KC), *b = aligned_alloc(64, sizeof(float) * KC * NC),
        *c = aligned_alloc(64, sizeof(float) * MC * NC);
  for (int i = 0; i < MC * KC; i++) a[i] = (float)(i % 7) * 0.01f;
  for (int i = 0; i < KC * NC; i++) b[i] = (float)(i % 5) * 0.01f;
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < NK; k++) {
      int mr = K[k].mr, nr = K[k].nr, mc = MC / mr * mr;
      double t0 = emscripten_get_now();
      for (int rep = 0; rep < reps; rep++)
        for (int jr = 0; jr < NC; jr += nr)
          for (int ir = 0; ir < mc; ir += mr) K[k].f(KC, a + ir * KC, b + jr * KC, c + ir * NC + jr, NC, 1);
      double dt = (emscripten_get_now() - t0) / reps;
      if (dt < K[k].best) K[k].best = dt;
    }
  for (int k = 0; k < NK; k++) {
    int mc = MC / K[k].mr * K[k].mr;
    printf("%-30s %6.1f GFLOP/s (best of %d)\n", K[k].name, 2.0 * mc * NC * KC / (K[k].best * 1e6), rounds);
  }
  printf("checksum %g\n", (double)c[17]);
  return 0;
}
