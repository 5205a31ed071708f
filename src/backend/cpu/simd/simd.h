/* Run-time CPU feature detection and the switch between the fast (SIMD) kernels
 * and the reference kernels they replace.
 *
 * Levels: CT_SIMD_PORTABLE (plain C, also what WebAssembly builds get),
 * CT_SIMD_AVX2 (AVX2 + FMA), CT_SIMD_AVX512 (AVX-512F). The kernels for every
 * level are compiled into the same build with __attribute__((target(...))) and
 * chosen at run time, so the library itself is built for baseline x86-64.
 *
 * Environment: CT_REFERENCE_KERNELS=1 turns every fast path off (the reference
 * kernels run, as before this layer existed); CT_SIMD=portable|avx2|avx512 caps
 * the level (to test or compare the narrower kernels on a wider CPU). */
#ifndef CT_SIMD_H
#define CT_SIMD_H
#include <stdbool.h>
#include <stdint.h>

typedef enum { CT_SIMD_PORTABLE = 0, CT_SIMD_AVX2 = 1, CT_SIMD_AVX512 = 2 } ct_simd_isa;

/* What the CPU supports (detected once). */
ct_simd_isa ct_simd_cpu_level(void);
/* The level the fast kernels use now: min(cpu level, CT_SIMD cap, ct_simd_force). */
ct_simd_isa ct_simd_active(void);
/* Whether fast kernels run at all (false under CT_REFERENCE_KERNELS=1). */
bool ct_fast_enabled(void);
/* For tests and benchmarks: turn fast kernels on/off and cap the level
 * (a level above the CPU's is clamped). Not thread-safe against running ops. */
void ct_fast_set_enabled(bool on);
void ct_simd_force(ct_simd_isa level);
const char *ct_simd_isa_name(ct_simd_isa level);
/* For tests: outputs of at least this many bytes use non-temporal stores (default 4 MiB;
 * 0 makes every output take that path, INT64_MAX none). */
void ct_fast_set_nt_min_bytes(int64_t bytes);
/* What ct_simd_level() reports: the CPU's level and the kernels active now, e.g.
 * "avx512 (kernels: avx512 gemm 12x32, avx512 elementwise)". */
const char *ct_simd_describe(void);

#endif
