/* CPU feature detection for the fast kernels (see simd.h). */
#include "simd.h"
#include "../gemm_fast.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cpu_level = -1;    /* detected */
static int cap_level = -1;    /* from CT_SIMD, or forced */
static int fast_on = -1;      /* from CT_REFERENCE_KERNELS */

static void detect(void) {
  int lvl = CT_SIMD_PORTABLE;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  /* the OS must save the wide registers too: __builtin_cpu_supports checks XCR0 on
   * current GCC/clang for avx/avx512 */
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) lvl = CT_SIMD_AVX2;
  if (lvl == CT_SIMD_AVX2 && __builtin_cpu_supports("avx512f")) lvl = CT_SIMD_AVX512;
#endif
  int cap = CT_SIMD_AVX512;
  const char *e = getenv("CT_SIMD");
  if (e && *e) {
    if (!strcmp(e, "portable") || !strcmp(e, "c") || !strcmp(e, "0")) cap = CT_SIMD_PORTABLE;
    else if (!strcmp(e, "avx2")) cap = CT_SIMD_AVX2;
  }
  const char *r = getenv("CT_REFERENCE_KERNELS");
  int on = !(r && *r && *r != '0');
  __atomic_store_n(&cap_level, cap, __ATOMIC_RELAXED);
  __atomic_store_n(&fast_on, on, __ATOMIC_RELAXED);
  __atomic_store_n(&cpu_level, lvl, __ATOMIC_RELEASE);
}

ct_simd_isa ct_simd_cpu_level(void) {
  if (__atomic_load_n(&cpu_level, __ATOMIC_ACQUIRE) < 0) detect();
  return (ct_simd_isa)cpu_level;
}

ct_simd_isa ct_simd_active(void) {
  int c = ct_simd_cpu_level(), cap = __atomic_load_n(&cap_level, __ATOMIC_RELAXED);
  return (ct_simd_isa)(c < cap ? c : cap);
}

bool ct_fast_enabled(void) {
  ct_simd_cpu_level();
  return __atomic_load_n(&fast_on, __ATOMIC_RELAXED) != 0;
}

void ct_fast_set_enabled(bool on) {
  ct_simd_cpu_level();
  __atomic_store_n(&fast_on, on ? 1 : 0, __ATOMIC_RELAXED);
}

void ct_simd_force(ct_simd_isa level) {
  ct_simd_cpu_level();
  __atomic_store_n(&cap_level, (int)level, __ATOMIC_RELAXED);
}

const char *ct_simd_isa_name(ct_simd_isa level) {
  switch (level) {
    case CT_SIMD_AVX512: return "avx512";
    case CT_SIMD_AVX2: return "avx2+fma";
    default: return "portable C";
  }
}

const char *ct_simd_describe(void) {
  static _Thread_local char buf[160];
  const char *cpu;
#if defined(__x86_64__)
  ct_simd_isa c = ct_simd_cpu_level();
  cpu = c == CT_SIMD_AVX512 ? "avx512" : c == CT_SIMD_AVX2 ? "avx2" : "sse2";
#elif defined(__wasm_simd128__)
  cpu = "simd128";
#else
  cpu = "portable C";
#endif
  if (!ct_fast_enabled()) {
    snprintf(buf, sizeof buf, "%s (kernels: reference C, CT_REFERENCE_KERNELS)", cpu);
    return buf;
  }
  snprintf(buf, sizeof buf, "%s (kernels: gemm %s, elementwise/reductions/rows %s)", cpu,
           ct_fast_gemm_kernel_name(CT_FLOAT32), ct_simd_isa_name(ct_simd_active()));
  return buf;
}
