/* The geometry of one convolution call, read the same way by every backend's kernels.
 * Attributes (set by src/ops/conv.c): k0 spatial dims (1-3), k1 groups, i[0..3) stride,
 * i[3..6) padding (low side), i[6..9) dilation. Spatial dims are right-aligned into 3
 * (a conv1d is a 3-D conv with two unit dims), so kernels loop over one shape. */
#ifndef CT_CONV_GEOM_H
#define CT_CONV_GEOM_H
#include "op_table.h"

/* the field list, so a backend's own geometry can embed it as an anonymous member */
#define CT_CONV_GEOM_FIELDS                                                                            \
  int64_t N, C, O, G;            /* batch, forward input channels, forward output channels, groups */ \
  int64_t in[3], out[3];         /* spatial sizes of the forward conv's input and output */            \
  int64_t k[3], s[3], p[3], d[3]; /* kernel, stride, low padding, dilation */                          \
  int64_t insp, outsp, ksp;      /* their products */

typedef struct ct_conv_geom {
  CT_CONV_GEOM_FIELDS
} ct_conv_geom;

/* x: the forward input's geometry [N, C, in...]; w: [O, C/G, k...]; y: [N, O, out...]
 * (for the gradients, pass the tensors that play those roles) */
static inline void ct_conv_geom_make(ct_conv_geom *g, const ct_call *c, const ct_tensor *x, const ct_tensor *w,
                                     const ct_tensor *y) {
  int nd = (int)c->a.k[0];
  g->N = x->shape[0];
  g->C = x->shape[1];
  g->O = w->shape[0];
  g->G = c->a.k[1];
  g->insp = g->outsp = g->ksp = 1;
  for (int i = 0; i < 3; i++) {
    int j = i - (3 - nd);
    bool real = j >= 0;
    g->in[i] = real ? x->shape[2 + j] : 1;
    g->out[i] = real ? y->shape[2 + j] : 1;
    g->k[i] = real ? w->shape[2 + j] : 1;
    g->s[i] = real ? c->a.i[0 + j] : 1;
    g->p[i] = real ? c->a.i[3 + j] : 0;
    g->d[i] = real ? c->a.i[6 + j] : 1;
    g->insp *= g->in[i];
    g->outsp *= g->out[i];
    g->ksp *= g->k[i];
  }
}

/* t's strides for (N, C, D, H, W) with the spatial dims right-aligned as above (0 for the
 * unit dims), times unit (1 for elements, the element size for bytes) */
static inline void ct_conv_strides5(const ct_tensor *t, int nd, int64_t unit, int64_t st[5]) {
  st[0] = t->stride[0] * unit;
  st[1] = t->stride[1] * unit;
  for (int i = 0; i < 3; i++) {
    int j = i - (3 - nd);
    st[2 + i] = j >= 0 ? t->stride[2 + j] * unit : 0;
  }
}
#endif
