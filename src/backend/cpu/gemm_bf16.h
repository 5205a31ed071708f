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

#endif
