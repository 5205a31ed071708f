/* Fast float32 paths of the elementwise ops, reductions and row ops (softmax,
 * normalisation moments). Each entry returns false when it does not apply (fast
 * kernels off, another dtype, a layout it does not take), and the caller runs its
 * reference code. */
#ifndef CT_FAST_EW_H
#define CT_FAST_EW_H
#include "ops/op_table.h"

/* Inner loops of ct_cpu_foreach (ptrs/strides as there, output first): contiguous
 * float32, inputs may also be one broadcast value (stride 0). */
bool ct_fast_unary_loop_f32(int op, const ct_attrs *a, char **p, const int64_t *s, int64_t n);
bool ct_fast_binary_loop_f32(int op, const ct_attrs *a, char **p, const int64_t *s, int64_t n);

/* sum / amax / amin / max / min (one output) of float32 over a contiguous block of
 * reduced dims; *st gets the status when handled. */
bool ct_fast_reduce(const ct_call *c, ct_status *st);
/* softmax / log_softmax over the last dim of a contiguous float32 tensor. */
bool ct_fast_softmax(const ct_call *c, ct_status *st);
/* norm_moments over trailing dims of a contiguous float32 tensor. */
bool ct_fast_norm_moments(const ct_call *c, ct_status *st);

#endif
