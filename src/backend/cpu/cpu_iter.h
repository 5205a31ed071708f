/* The CPU's general strided iterator and its helpers for kernels. */
#ifndef CT_CPU_ITER_H
#define CT_CPU_ITER_H
#include "../backend.h"

/* Inner loop over n elements: ptrs[k] points at tensor k's element, strides[k] is
 * its step in bytes. */
typedef void (*ct_cpu_loop_fn)(char **ptrs, const int64_t *strides, int64_t n, void *ctx);

/* Visit every element of nt same-shaped CPU tensors (ts[0] is usually the output),
 * coalescing dims and splitting the work over the thread pool when it is large.
 * parallel=false keeps order (for kernels with sequential state). */
void ct_cpu_foreach(int nt, ct_tensor *const *ts, ct_cpu_loop_fn loop, void *ctx, bool parallel);

/* Reduction geometry: for an input x and a mask of reduced dims, the kept dims
 * (outer, in order) and the reduced dims (inner, in order), as shapes and byte strides. */
typedef struct {
  int n_outer, n_inner;
  int64_t outer_shape[CT_MAX_DIMS], outer_stride[CT_MAX_DIMS];
  int64_t inner_shape[CT_MAX_DIMS], inner_stride[CT_MAX_DIMS];
  int64_t outer_numel, inner_numel;
} ct_reduce_geom;
void ct_reduce_geom_make(const ct_tensor *x, uint32_t dim_mask, ct_reduce_geom *g);
/* Byte offset of the idx-th element (row-major) of a sub-geometry. */
static inline int64_t ct_geom_offset(int n, const int64_t *shape, const int64_t *stride, int64_t idx) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0; d--) {
    int64_t s = shape[d];
    off += (idx % s) * stride[d];
    idx /= s;
  }
  return off;
}
/* Byte offset of the idx-th element of tensor t in row-major logical order. */
static inline int64_t ct_elem_offset(const ct_tensor *t, int64_t idx) {
  int64_t off = 0, isz = (int64_t)ct_dtype_size(t->dtype);
  for (int d = t->ndim - 1; d >= 0; d--) {
    int64_t s = t->shape[d];
    off += (idx % s) * t->stride[d];
    idx /= s;
  }
  return off * isz;
}

/* native_batch_norm's layout guard, shared by the CPU and CUDA fused kernels (kernels_bn.c): a
 * contiguous float32/float64 input of >= 2 dims and contiguous per-channel tensors c->in[first_c ..
 * last_c] of its dtype (absent ones skipped); the entry point in src/ops/nn.c makes it so. */
ct_status ct_bn_layout_check(const ct_call *c, const ct_tensor *x, int first_c, int last_c);

#endif
