/* Controls of the CPU convolution kernels (kernels_conv.c) for tests and benchmarks.
 *
 * float32/float64 convolutions (forward, input gradient, weight gradient) run as im2col +
 * the packed GEMM (gemm_fast.h), or as the GEMM alone on the input for 1x1 kernels with
 * stride 1 and no padding; the input gradient of other stride-1 convs runs as the forward
 * conv of the output gradient with the flipped kernel (im2col of gy, no col2im). float32 3x3
 * stride-1 convs with >= 16 input and output channels (one group) run the forward and the
 * input gradient, and the weight gradient, by Winograd F(2x2, 3x3) instead (kernels_conv.c,
 * wino_fwd, wino_wgrad). Everything
 * else, and every conv when the fast kernels are off
 * (CT_REFERENCE_KERNELS=1, or CT_CONV_REFERENCE=1 for the convolutions only), runs the
 * reference direct loops (double accumulation). */
#ifndef CT_CONV_FAST_H
#define CT_CONV_FAST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
  CT_CONV_PATH_REFERENCE = 0, /* direct loops */
  CT_CONV_PATH_GEMM_1X1 = 1,  /* GEMM on the input itself, no im2col */
  CT_CONV_PATH_IM2COL = 2,    /* im2col (col2im for the input gradient) + GEMM */
  CT_CONV_PATH_WINOGRAD = 3,  /* Winograd F(2x2, 3x3) + GEMM: float32 3x3 stride 1, forward, input and weight grads */
  CT_CONV_PATH_COUNT = 4
} ct_conv_path;

/* Forces a path for every following conv (-1: the automatic rule). Forcing GEMM_1X1 on a
 * shape that is not 1x1/stride 1/unpadded runs IM2COL; forcing IM2COL turns Winograd off,
 * forcing WINOGRAD is the automatic rule. Not thread-safe against running ops. */
void ct_conv_force_path(int path);
/* Caps the im2col workspace (elements) so that small shapes exercise chunking over samples
 * and output rows; 0 restores the default. */
void ct_conv_set_col_budget(int64_t elems);
/* How many kernel calls took each path since the start (tests assert the path they meant). */
int64_t ct_conv_path_count(ct_conv_path p);
/* How many convs (forwards and input gradients) ran as tap GEMMs on a small map (kernels_conv.c, taps_run;
 * counted within the path pick returned). */
int64_t ct_conv_taps_count(void);
/* the tap-major weight rearrangement of the tap GEMMs: -1 the per-CPU default, 0 scalar, 1 gathers, 2 transpose (tests) */
void ct_conv_set_taps_wt(int mode);

/* Eval weight cache (kernels_conv.c): a Conv2d module in eval mode lends its forward conv a slot
 * (ct_conv_wcache_use(&slot) before, ct_conv_wcache_use(previous) after); the CPU float32/float64
 * one-group forward then keeps the weight packed for the GEMM (and Winograd's transformed weight)
 * in it while the weight is unchanged. The module frees it with ct_conv_wcache_free. */
typedef struct ct_conv_wcache ct_conv_wcache;
ct_conv_wcache **ct_conv_wcache_use(ct_conv_wcache **slot); /* returns the calling thread's previous slot */
void ct_conv_wcache_free(ct_conv_wcache *c);
size_t ct_conv_wcache_bytes(const ct_conv_wcache *c); /* packed bytes held (0 for NULL) */
/* 1 on (default), 0 off, -1 back to the default (CT_CONV_WEIGHT_CACHE=0 turns it off): for tests and A/B runs */
void ct_conv_set_weight_cache(int on);

/* Eval epilogue (an eval conv -> BatchNorm (-> + residual) (-> ReLU), src/nn/layers.c): lent to the
 * calling thread's next forward conv, which, when it is a float32 CPU one without bias of O output
 * channels, writes y = relu?(((conv - m[o]) * sc[o] + b[o]) + res) (the batch norm kernel's and then
 * the add's and relu's float operations, in their order) and sets applied; otherwise the lender
 * runs the ops itself. */
typedef struct {
  int64_t O;
  const float *m, *sc, *b; /* [O] */
  const float *res;        /* NULL, or [N, O, out...] contiguous */
  bool relu, applied;
} ct_conv_epilogue;
void ct_conv_epilogue_use(ct_conv_epilogue *ep);

#endif
