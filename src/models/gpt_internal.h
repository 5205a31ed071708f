/* Internal helpers of the GPT model (src/models/gpt*.c). */
#ifndef CT_GPT_INTERNAL_H
#define CT_GPT_INTERNAL_H
#include <stdbool.h>
#include <stdint.h>

#define GPT_MV_MAX_ROWS 4

/* y[r, :] = x[r, :] W (+ b) for r < rows (1..GPT_MV_MAX_ROWS), float32, everything contiguous:
 * w_nk false: W is [K, N] (y = x W); true: W is [N, K] (y = x W^T). b: N floats or NULL.
 * Runs over the thread pool; for decoding (gpt_decode.c says why it beats the GEMM there). */
void gpt_matvec_f32(const float *x, int64_t rows, int64_t K, const float *w, int64_t N, bool w_nk, const float *b,
                    float *y);

#endif
