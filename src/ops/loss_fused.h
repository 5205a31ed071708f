/* Internal: the fused cross-entropy behind ct_cross_entropy_unchecked (src/ops/loss.c). */
#ifndef CT_LOSS_FUSED_H
#define CT_LOSS_FUSED_H
#include "ctorch/core.h"
/* mean cross-entropy of logits [N, C] against int64 classes [N] without reading the targets
 * back (a target outside [0, C) is a zero row counted in the mean, as the one-hot form does):
 * where a fused kernel runs without host checks (WebGPU float32); else NULL, no error set */
ct_tensor *ct_cross_entropy_fused_unchecked(const ct_tensor *x, const ct_tensor *t);
#endif
