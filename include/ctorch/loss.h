/* Loss functions and distance ops (torch.nn.functional forms). */
#ifndef CTORCH_LOSS_H
#define CTORCH_LOSS_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

/* reduction='none' | 'mean' | 'sum' ('batchmean' only for kl_div) */
typedef enum { CT_REDUCTION_NONE = 0, CT_REDUCTION_MEAN = 1, CT_REDUCTION_SUM = 2, CT_REDUCTION_BATCHMEAN = 3 } ct_reduction;
/* Parses a reduction name; ValueError "<s> is not a valid value for reduction" otherwise. */
ct_status ct_reduction_parse(const char *s, ct_reduction *out);

/* (input - target)^2, broadcast */
ct_tensor *ct_mse_loss(const ct_tensor *input, const ct_tensor *target, ct_reduction r);
/* |input - target| */
ct_tensor *ct_l1_loss(const ct_tensor *input, const ct_tensor *target, ct_reduction r);
/* 0.5 z^2 / beta if z < beta else z - 0.5 beta, z = |input - target|; beta 0 is l1_loss */
ct_tensor *ct_smooth_l1_loss(const ct_tensor *input, const ct_tensor *target, ct_reduction r, double beta);
/* 0.5 z^2 if z < delta else delta (z - 0.5 delta) */
ct_tensor *ct_huber_loss(const ct_tensor *input, const ct_tensor *target, ct_reduction r, double delta);
/* -w (t log x + (1 - t) log(1 - x)), logs clamped at -100; weight may be NULL */
ct_tensor *ct_binary_cross_entropy(const ct_tensor *input, const ct_tensor *target, const ct_tensor *weight,
                                   ct_reduction r);
/* stable BCE on logits; weight and pos_weight may be NULL */
ct_tensor *ct_binary_cross_entropy_with_logits(const ct_tensor *input, const ct_tensor *target,
                                               const ct_tensor *weight, const ct_tensor *pos_weight, ct_reduction r);
/* target (log_target: exp(target)) times (log target - input); reduction may be BATCHMEAN */
ct_tensor *ct_kl_div(const ct_tensor *input, const ct_tensor *target, ct_reduction r, bool log_target);
/* negative log likelihood: input [C], [N, C] or [N, C, d1, ...] log-probabilities, target int64
 * class indices; weight [C] or NULL; mean divides by the total weight of non-ignored targets */
ct_tensor *ct_nll_loss(const ct_tensor *input, const ct_tensor *target, const ct_tensor *weight, ct_reduction r,
                       int64_t ignore_index);
/* cross entropy on logits: target int64 class indices (shape as for nll_loss) or, when it has
 * input's shape, floating class probabilities; weight [C] or NULL; label_smoothing in [0, 1];
 * PyTorch's default ignore_index is -100 */
ct_tensor *ct_cross_entropy(const ct_tensor *input, const ct_tensor *target, const ct_tensor *weight, ct_reduction r,
                            int64_t ignore_index, double label_smoothing);
/* cross_entropy(x @ weight^T, target) for x [N, D], weight [V, D], target [N] int64 (a classifier
 * head + its loss) without keeping the [N, V] logits for backward: rows go in chunks of `chunk`
 * (<= 0: 1024), each through activation checkpointing (its logits are recomputed in backward).
 * Gradients reach x and weight; not for create_graph. Equal to the composed form. */
ct_tensor *ct_linear_cross_entropy(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *target, ct_reduction r,
                                   int64_t ignore_index, int64_t chunk);
/* sum over dim of (x1 / max(||x1||, eps)) * (x2 / max(||x2||, eps)) (PyTorch 1.13's formula), broadcast */
ct_tensor *ct_cosine_similarity(const ct_tensor *x1, const ct_tensor *x2, int64_t dim, double eps);
/* p-norm of x1 - x2 + eps over the last dim */
ct_tensor *ct_pairwise_distance(const ct_tensor *x1, const ct_tensor *x2, double p, double eps, bool keepdim);
/* int64 one-hot encoding, new last dim of num_classes (-1: max + 1) */
ct_tensor *ct_one_hot(const ct_tensor *t, int64_t num_classes);
/* one-hot of int64 class indices as `dtype`, new last dim of num_classes, made on t's device
 * without reading the indices back (so a CUDA graph can capture it, and cross_entropy with these
 * class probabilities is then device-only). Indices are NOT checked: one outside [0, num_classes)
 * gives an all-zero row, so callers check their targets where they load them. */
ct_tensor *ct_one_hot_unchecked(const ct_tensor *t, int64_t num_classes, ct_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
