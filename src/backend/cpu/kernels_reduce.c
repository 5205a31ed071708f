/* CPU reference kernels for reductions: one output element per task, the
 * reduced elements visited in row-major order, accumulated in double/int64. */
#include "cpu_iter.h"
#include <math.h>

typedef struct {
  const ct_call *c;
  ct_reduce_geom g;
  char *in, *out;
  int64_t out_stride[CT_MAX_DIMS]; /* output strides in bytes over the outer dims */
} red_ctx;

static void reduce_range(void *vctx, int64_t begin, int64_t end) {
  red_ctx *r = vctx;
  const ct_call *c = r->c;
  ct_dtype dt = c->in[0]->dtype, odt = c->out[0]->dtype;
  bool fl = ct_dtype_is_floating(dt);
  for (int64_t o = begin; o < end; o++) {
    char *base = r->in + ct_geom_offset(r->g.n_outer, r->g.outer_shape, r->g.outer_stride, o);
    char *dst = r->out + ct_geom_offset(r->g.n_outer, r->g.outer_shape, r->out_stride, o);
    switch (c->op) {
      case CT_OP_sum:
        if (fl) {
          double acc = 0;
          for (int64_t i = 0; i < r->g.inner_numel; i++)
            acc += ct_load_f64(base + ct_geom_offset(r->g.n_inner, r->g.inner_shape, r->g.inner_stride, i), dt);
          ct_store_f64(dst, odt, acc);
        } else {
          uint64_t acc = 0;
          for (int64_t i = 0; i < r->g.inner_numel; i++)
            acc += (uint64_t)ct_load_i64(base + ct_geom_offset(r->g.n_inner, r->g.inner_shape, r->g.inner_stride, i), dt);
          ct_store_i64(dst, odt, (int64_t)acc);
        }
        break;
      default: break;
    }
  }
}

ct_status ct_cpu_reduce(const ct_call *c) {
  red_ctx r;
  r.c = c;
  ct_reduce_geom_make(c->in[0], (uint32_t)c->a.k[0], &r.g);
  r.in = ct_cpu_ptr(c->in[0]);
  r.out = ct_cpu_ptr(c->out[0]);
  /* output strides for the kept dims, skipping keepdim's size-1 dims */
  const ct_tensor *o = c->out[0];
  int64_t isz = (int64_t)ct_dtype_size(o->dtype);
  int k = 0, od = 0;
  for (int d = 0; d < c->in[0]->ndim; d++) {
    bool red = (c->a.k[0] >> d) & 1;
    if (!red) r.out_stride[k++] = o->stride[od] * isz;
    if (!red || c->a.k[1]) od++;
  }
  int64_t grain = r.g.inner_numel > 4096 ? 1 : 4096 / (r.g.inner_numel + 1) + 1;
  ct_parallel_for(r.g.outer_numel, grain, reduce_range, &r);
  return CT_OK;
}
