/* bfloat16 / float16 GEMM with float32 accumulation (gemm_bf16.c), reached through
 * ct_fast_gemm for those dtypes. */
#ifndef CT_GEMM_BF16_H
#define CT_GEMM_BF16_H
#include "gemm_fast.h"

/* Whether the fast path takes this 16-bit float dtype now (fast kernels on). */
bool ct_fast_gemm_lowp_wants(ct_dtype dt);
/* C = beta C0 + alpha A @ B for CT_BFLOAT16 / CT_FLOAT16 operands (all of g->dtype). */
ct_status ct_fast_gemm_lowp(const ct_fgemm *g);
/* What the CPU offers for it, for benchmark reports. */
const char *ct_fast_gemm_lowp_isa(void);
/* Forces the widening path for bf16 (1), lets the fastest kernel the CPU has run (0), or back to
 * the environment's choice (-1); for tests/benches. Same as ct_fast_gemm_lowp_force_path(on ? 1 : 0). */
void ct_fast_gemm_lowp_force_widen(int on);
/* The bf16 path: -1 the environment's choice (CT_GEMM_BF16=widen|dp|amx, unset or anything else:
 * auto), 0 auto (AMX where the CPU and OS allow it, else vdpbf16ps, else widening), 1 widening,
 * 2 the AVX512_BF16 vdpbf16ps kernel, 3 the AMX tdpbf16ps kernel. A kernel the CPU lacks falls
 * back: amx -> dp -> widen. For tests/benches (process-wide). */
void ct_fast_gemm_lowp_force_path(int path);
/* Whether bf16 x bf16 products of dtype dt run on the AVX512_BF16 vdpbf16ps kernel now. */
bool ct_fast_gemm_lowp_uses_dpbf16(ct_dtype dt);
/* Whether they run on the AMX tdpbf16ps kernel now. */
bool ct_fast_gemm_lowp_uses_amx(ct_dtype dt);

#endif
