/* The general strided iterator (the reference for every elementwise kernel). */
#include "cpu_iter.h"

#define MAX_T 8
typedef struct {
  int nt, nd;
  int64_t shape[CT_MAX_DIMS];
  int64_t stride[MAX_T][CT_MAX_DIMS]; /* bytes */
  char *base[MAX_T];
  ct_cpu_loop_fn loop;
  void *ctx;
} iter;

static void iter_range(void *vp, int64_t begin, int64_t end) {
  iter *it = vp;
  int nd = it->nd, nt = it->nt;
  int64_t idx[CT_MAX_DIMS];
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = rem % it->shape[d];
    rem /= it->shape[d];
  }
  char *ptrs[MAX_T];
  int64_t inner[MAX_T];
  for (int k = 0; k < nt; k++) inner[k] = it->stride[k][nd - 1];
  int64_t pos = begin;
  while (pos < end) {
    for (int k = 0; k < nt; k++) {
      char *p = it->base[k];
      for (int d = 0; d < nd; d++) p += idx[d] * it->stride[k][d];
      ptrs[k] = p;
    }
    int64_t n = it->shape[nd - 1] - idx[nd - 1];
    if (n > end - pos) n = end - pos;
    it->loop(ptrs, inner, n, it->ctx);
    pos += n;
    idx[nd - 1] += n;
    for (int d = nd - 1; d > 0 && idx[d] >= it->shape[d]; d--) {
      idx[d] = 0;
      idx[d - 1]++;
    }
  }
}

void ct_cpu_foreach(int nt, ct_tensor *const *ts, ct_cpu_loop_fn loop, void *ctx, bool parallel) {
  iter it;
  it.nt = nt;
  it.loop = loop;
  it.ctx = ctx;
  const ct_tensor *t0 = ts[0];
  int64_t numel = 1;
  for (int d = 0; d < t0->ndim; d++) numel *= t0->shape[d];
  if (numel == 0) return;
  /* drop size-1 dims, then merge dims that are contiguous for every tensor */
  int nd = 0;
  for (int d = 0; d < t0->ndim; d++) {
    if (t0->shape[d] == 1) continue;
    it.shape[nd] = t0->shape[d];
    for (int k = 0; k < nt; k++) it.stride[k][nd] = ts[k]->stride[d] * (int64_t)ct_dtype_size(ts[k]->dtype);
    nd++;
  }
  if (nd == 0) {
    it.shape[0] = 1;
    for (int k = 0; k < nt; k++) it.stride[k][0] = 0;
    nd = 1;
  }
  int m = 0;
  for (int d = 1; d < nd; d++) {
    bool ok = true;
    for (int k = 0; k < nt && ok; k++) ok = it.stride[k][m] == it.stride[k][d] * it.shape[d];
    if (ok) {
      it.shape[m] *= it.shape[d];
      for (int k = 0; k < nt; k++) it.stride[k][m] = it.stride[k][d];
    } else {
      m++;
      it.shape[m] = it.shape[d];
      for (int k = 0; k < nt; k++) it.stride[k][m] = it.stride[k][d];
    }
  }
  it.nd = m + 1;
  for (int k = 0; k < nt; k++) it.base[k] = ct_cpu_ptr(ts[k]);
  if (parallel && numel >= 32768) ct_parallel_for(numel, 16384, iter_range, &it);
  else iter_range(&it, 0, numel);
}

void ct_reduce_geom_make(const ct_tensor *x, uint32_t mask, ct_reduce_geom *g) {
  int64_t isz = (int64_t)ct_dtype_size(x->dtype);
  g->n_outer = g->n_inner = 0;
  g->outer_numel = g->inner_numel = 1;
  for (int d = 0; d < x->ndim; d++) {
    if (mask & (1u << d)) {
      g->inner_shape[g->n_inner] = x->shape[d];
      g->inner_stride[g->n_inner++] = x->stride[d] * isz;
      g->inner_numel *= x->shape[d];
    } else {
      g->outer_shape[g->n_outer] = x->shape[d];
      g->outer_stride[g->n_outer++] = x->stride[d] * isz;
      g->outer_numel *= x->shape[d];
    }
  }
}
