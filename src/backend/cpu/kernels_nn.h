/* Helpers shared by the nn family's CPU kernels (kernels_nn.c, kernels_conv.c, kernels_pool.c).
 * The reference kernels read their inputs into contiguous double (or int64) buffers,
 * compute there, and round once into the (contiguous) outputs the entry points allocate. */
#ifndef CT_KERNELS_NN_H
#define CT_KERNELS_NN_H
#include "cpu_iter.h"
#include <stdlib.h>

/* All elements of t, row-major, converted to double / int64; NULL with an error on failure.
 * The caller frees with free(). */
static inline double *nn_load_f64(const ct_tensor *t) {
  int64_t n = ct_numel(t);
  double *b = malloc((size_t)(n ? n : 1) * sizeof *b);
  if (!b) {
    ct_set_error(CT_ERR_OOM, "CPU out of memory: tried to allocate %lld bytes", (long long)(n * 8));
    return NULL;
  }
  if (n && ct_copy_to_buffer(t, b, CT_FLOAT64, n) != CT_OK) {
    free(b);
    return NULL;
  }
  return b;
}
static inline int64_t *nn_load_i64(const ct_tensor *t) {
  int64_t n = ct_numel(t);
  int64_t *b = malloc((size_t)(n ? n : 1) * sizeof *b);
  if (!b) {
    ct_set_error(CT_ERR_OOM, "CPU out of memory: tried to allocate %lld bytes", (long long)(n * 8));
    return NULL;
  }
  if (n && ct_copy_to_buffer(t, b, CT_INT64, n) != CT_OK) {
    free(b);
    return NULL;
  }
  return b;
}
/* Writes n values into a contiguous output, rounding once to its dtype. */
static inline void nn_store_f64(ct_tensor *o, const double *v, int64_t n) {
  char *d = ct_cpu_ptr(o);
  if (o->dtype == CT_FLOAT32) {
    for (int64_t i = 0; i < n; i++) ((float *)d)[i] = (float)v[i];
  } else if (o->dtype == CT_FLOAT64) {
    memcpy(d, v, (size_t)n * sizeof *v);
  } else {
    size_t isz = ct_dtype_size(o->dtype);
    for (int64_t i = 0; i < n; i++) ct_store_f64(d + (size_t)i * isz, o->dtype, v[i]);
  }
}
static inline void nn_store_i64(ct_tensor *o, const int64_t *v, int64_t n) {
  char *d = ct_cpu_ptr(o);
  size_t isz = ct_dtype_size(o->dtype);
  for (int64_t i = 0; i < n; i++) ct_store_i64(d + (size_t)i * isz, o->dtype, v[i]);
}
static inline void *nn_alloc(int64_t n, size_t sz) {
  void *p = calloc((size_t)(n > 0 ? n : 1), sz);
  if (!p) ct_set_error(CT_ERR_OOM, "CPU out of memory: tried to allocate %lld bytes", (long long)(n * (int64_t)sz));
  return p;
}

#endif
