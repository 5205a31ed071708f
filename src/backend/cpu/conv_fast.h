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

#endif
