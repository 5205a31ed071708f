/* ctorch nn ops: the functional forms of torch.nn.functional (forward and backward).
 * Array parameters named like PyTorch's take one value per spatial dim; NULL means
 * PyTorch's default (stride 1 / kernel_size for pools, padding 0, dilation 1). */
#ifndef CTORCH_NN_H
#define CTORCH_NN_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_generator ct_generator; /* src/core/generator.h; NULL = the default generator */

/* ---- softmax ---- */
/* softmax(x, dim, dtype=): dtype -1 keeps x's dtype, else x is cast to it first. */
ct_tensor *ct_softmax(const ct_tensor *x, int64_t dim, int dtype);
/* log_softmax(x, dim, dtype=), computed stably (x - max - log(sum(exp(x - max)))). */
ct_tensor *ct_log_softmax(const ct_tensor *x, int64_t dim, int dtype);

/* ---- convolution ---- */
/* conv1d(x [N, C, L] or [C, L], w [O, C/groups, K], bias [O] or NULL). */
ct_tensor *ct_conv1d(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, int64_t stride, int64_t padding,
                     int64_t dilation, int64_t groups);
/* conv1d with padding "same" or "valid". */
ct_tensor *ct_conv1d_mode(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, int64_t stride,
                          const char *padding, int64_t dilation, int64_t groups);
/* conv2d(x [N, C, H, W] or [C, H, W], w [O, C/groups, KH, KW], bias [O] or NULL); arrays of 2 or NULL. */
ct_tensor *ct_conv2d(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, const int64_t *stride,
                     const int64_t *padding, const int64_t *dilation, int64_t groups);
/* conv2d with padding "same" (stride 1 only; asymmetric when the total is odd, extra on the right) or "valid". */
ct_tensor *ct_conv2d_mode(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, const int64_t *stride,
                          const char *padding, const int64_t *dilation, int64_t groups);
/* conv_transpose2d(x [N, C, H, W], w [C, O/groups, KH, KW], bias [O] or NULL, stride, padding,
 * output_padding, groups, dilation) in PyTorch's argument order. */
ct_tensor *ct_conv_transpose2d(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, const int64_t *stride,
                               const int64_t *padding, const int64_t *output_padding, int64_t groups,
                               const int64_t *dilation);

/* ---- pooling ---- */
/* max_pool2d over [N, C, H, W] or [C, H, W]; stride NULL = kernel_size. If indices is not NULL
 * it receives the argmax (int64, index into each input plane) like return_indices=True. */
ct_tensor *ct_max_pool2d(const ct_tensor *x, const int64_t *kernel_size, const int64_t *stride, const int64_t *padding,
                         const int64_t *dilation, bool ceil_mode, ct_tensor **indices);
/* avg_pool2d; divisor_override 0 = none. */
ct_tensor *ct_avg_pool2d(const ct_tensor *x, const int64_t *kernel_size, const int64_t *stride, const int64_t *padding,
                         bool ceil_mode, bool count_include_pad, int64_t divisor_override);
/* adaptive pools to output_size[2]; an entry of -1 keeps the input's size (None in PyTorch). */
ct_tensor *ct_adaptive_avg_pool2d(const ct_tensor *x, const int64_t *output_size);
ct_tensor *ct_adaptive_max_pool2d(const ct_tensor *x, const int64_t *output_size, ct_tensor **indices);

/* ---- normalisation ---- */
/* batch_norm(x [N, C, *], running_mean, running_var, weight, bias, training, momentum, eps).
 * Training normalises with the batch statistics and updates running_mean / running_var in
 * place (if given) with momentum and the unbiased variance; eval uses the running statistics.
 * weight, bias and (in training) the running statistics may be NULL. */
ct_tensor *ct_batch_norm(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var, const ct_tensor *weight,
                         const ct_tensor *bias, bool training, double momentum, double eps);
/* relu(batch_norm(x, ...) + residual) (a ResNet BasicBlock's tail), with the values, gradients and running
 * statistics of the three ops; one fused op on the CPU and CUDA where residual has x's shape, dtype and
 * device (otherwise the three ops: broadcasting and type promotion as ct_add's). CT_CUDA_BN_ADD_RELU=0 (CUDA)
 * or CT_BN_ADD_RELU=0 (every device), read at each call, run the three ops. */
ct_tensor *ct_batch_norm_add_relu(const ct_tensor *x, const ct_tensor *residual, ct_tensor *running_mean,
                                  ct_tensor *running_var, const ct_tensor *weight, const ct_tensor *bias, bool training,
                                  double momentum, double eps);
/* layer_norm over the last n dims (normalized_shape); weight / bias of that shape or NULL. */
ct_tensor *ct_layer_norm(const ct_tensor *x, int n, const int64_t *normalized_shape, const ct_tensor *weight,
                         const ct_tensor *bias, double eps);
/* group_norm(x [N, C, *], num_groups, weight [C], bias [C], eps). */
ct_tensor *ct_group_norm(const ct_tensor *x, int64_t num_groups, const ct_tensor *weight, const ct_tensor *bias,
                         double eps);
/* rms_norm: x * rsqrt(mean(x^2 over the last n dims) + eps) * weight; eps < 0 means finfo(dtype).eps. */
ct_tensor *ct_rms_norm(const ct_tensor *x, int n, const int64_t *normalized_shape, const ct_tensor *weight, double eps);

/* ---- dropout ---- */
/* dropout(x, p, training): mask from bernoulli_(1 - p) on gen (NULL = default), scaled by 1/(1-p).
 * Not training, p == 0 or an empty x returns x itself (a new reference). */
ct_tensor *ct_dropout(const ct_tensor *x, double p, bool training, ct_generator *gen);

/* ---- embedding ---- */
/* embedding(indices (int64/int32), weight [V, D], padding_idx): padding_idx NULL = None;
 * negative values count from the end; that row gets no gradient. */
ct_tensor *ct_embedding(const ct_tensor *indices, const ct_tensor *weight, const int64_t *padding_idx);

/* ---- interpolation ---- */
/* interpolate(x [N, C, H, W], size (2) or scale_factor (2), mode "nearest" | "bilinear", align_corners
 * -1 = None, 0, 1). Exactly one of size / scale_factor. */
ct_tensor *ct_interpolate(const ct_tensor *x, const int64_t *size, const double *scale_factor, const char *mode,
                          int align_corners);

/* ---- attention ---- */
/* scaled_dot_product_attention(q [..., L, E], k [..., S, E], v [..., S, Ev], attn_mask (bool:
 * True = take part, or additive float; broadcast to [..., L, S]) or NULL, dropout_p, is_causal,
 * scale (NULL = 1/sqrt(E)), gen for dropout (NULL = default)) -> [..., L, Ev]. */
ct_tensor *ct_scaled_dot_product_attention(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                                           const ct_tensor *attn_mask, double dropout_p, bool is_causal,
                                           const double *scale, ct_generator *gen);

#ifdef __cplusplus
}
#endif
#endif
