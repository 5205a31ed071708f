/* The fused CPU attention (kernels_attention.c): the switch the entry point reads. */
#ifndef CT_KERNELS_ATTENTION_H
#define CT_KERNELS_ATTENTION_H
#include "ops/op_table.h"

/* Whether scaled_dot_product_attention may take the fused path: fast kernels on
 * (not CT_REFERENCE_KERNELS=1), CT_SDPA_FUSED is not "0", and not turned off by
 * ct_sdpa_fused_set_enabled(false) (tests and benchmarks compare both paths). */
bool ct_sdpa_fused_enabled(void);
void ct_sdpa_fused_set_enabled(bool on);
/* How many fused forward / backward kernels ran (tests check which path a call took). */
int64_t ct_sdpa_fused_calls(bool backward);

#endif
