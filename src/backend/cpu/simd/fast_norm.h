/* Fused float32 row kernels (fast_ew_impl.h, per ISA) used by the fused norm, softmax and
 * cross-entropy kernels (kernels_norm.c, fast_ew.c). Each works on one contiguous row of n
 * floats; optional arrays may be NULL. */
#ifndef CT_FAST_NORM_H
#define CT_FAST_NORM_H
#include <stdbool.h>
#include <stdint.h>

/* layer_norm (rms = 0) / rms_norm (rms = 1): y = (x - mean) * rstd [* w] [+ b]; *mean (0 for
 * rms) and *rstd = 1 / sqrt(var + eps) out. nt: write y with non-temporal stores (see
 * ct_fast_nt_wanted; the caller fences with ct_fast_nt_fence). next: the next row's input
 * (same length) to prefetch while this row computes, or NULL. */
void ct_fast_norm_fwd_row(const float *x, const float *w, const float *b, float *y, int64_t n, double eps, int rms,
                          float *mean, float *rstd, int nt, const float *next);
/* rows [0, rows) of ct_fast_norm_fwd_row with NT stores (mean may be NULL; one float per row
 * in mean and rstd), prefetching `ahead` rows ahead; false (nothing done) unless every row is
 * whole SIMD vectors and y is aligned to them. Same results as the row function. */
bool ct_fast_norm_fwd_rows_nt(const float *x, const float *w, const float *b, float *y, int64_t rows, int64_t n,
                              double eps, int rms, float *mean, float *rstd, int64_t ahead);
/* dx (may be NULL) = rstd (gw - mean(gw) - xh mean(gw xh)), gw = g [* w], xh = (x - mean) rstd
 * (rms: no mean(gw) term); dw += g xh, db += g; nt: dx with non-temporal stores. */
void ct_fast_norm_bwd_row(const float *x, const float *g, const float *w, float mean, float rstd, float *dx, float *dw,
                          float *db, int64_t n, int rms, int nt);
/* log-sum-exp of a row; *sx = sum(x [* w]) when sx != NULL. */
double ct_fast_lse_row(const float *x, const float *w, int64_t n, double *sx);
/* dx = ca exp(x - lse) - cb [* w]. */
void ct_fast_ce_bwd_row(const float *x, const float *w, float *dx, int64_t n, float lse, float ca, float cb);

/* whether an output of out_bytes is written with non-temporal stores (large: it would not stay
 * in the caches until it is read), and the fence that must follow such stores */
bool ct_fast_nt_wanted(int64_t out_bytes);
void ct_fast_nt_fence(void);
/* How many rows ahead (>= 1) the row kernels prefetch for rows of n floats: far enough that
 * a row has arrived from memory before it is read, for short rows more than one. */
int64_t ct_fast_pf_rows(int64_t n);

#endif
