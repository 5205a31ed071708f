/* Pooling and interpolation over [N, C, H, W] (or unbatched [C, H, W]): entry points and
 * derivative formulas. Max pools' gradient scatters by the saved argmax (its own
 * derivative gathers); avg_pool2d, adaptive_avg_pool2d and the upsamples are linear maps
 * whose backward op is their adjoint, and the adjoint's derivative is the forward map. */
#include "nn_util.h"
#include <math.h>

/* Runs op on x (4-D) into a new output [N, C, oh, ow] (plus int64 indices when two_out). */
static ct_status pool_call(int op, const ct_tensor *x, int64_t oh, int64_t ow, const ct_attrs *a, ct_tensor **y,
                           ct_tensor **ix) {
  int64_t shape[4] = {x->shape[0], x->shape[1], oh, ow};
  const ct_op_info *info = ct_op_info_of(op);
  ct_call c = ct_call_make(op);
  c.n_in = 1;
  c.n_out = info->n_out;
  c.in[0] = (ct_tensor *)x;
  c.out[0] = nn_new_out(x, 4, shape, x->dtype);
  if (c.n_out == 2) c.out[1] = nn_new_out(x, 4, shape, CT_INT64);
  c.a = *a;
  if (!c.out[0] || (c.n_out == 2 && !c.out[1])) {
    ct_release(c.out[0]);
    ct_release(c.out[1]);
    return ct_last_status();
  }
  CT_TRY(nn_dispatch(&c));
  if (c.out[0]->grad_fn) { /* PyTorch's node names */
    const char *nm = NULL;
    switch (op) {
      case CT_OP_max_pool2d_with_indices: nm = "MaxPool2DWithIndicesBackward0"; break;
      case CT_OP_adaptive_max_pool2d: nm = "AdaptiveMaxPool2DBackward0"; break;
      case CT_OP_avg_pool2d: nm = "AvgPool2DBackward0"; break;
      case CT_OP_adaptive_avg_pool2d: nm = "AdaptiveAvgPool2DBackward0"; break;
      case CT_OP_upsample_nearest2d: nm = "UpsampleNearest2DBackward1"; break;
      case CT_OP_upsample_bilinear2d: nm = "UpsampleBilinear2DBackward1"; break;
      default: break;
    }
    if (nm) c.out[0]->grad_fn->name = nm;
  }
  *y = c.out[0];
  if (ix) *ix = c.out[1];
  else ct_release(c.out[1]);
  return CT_OK;
}

/* Wraps a 4-D computation for unbatched 3-D inputs. */
typedef ct_status (*pool4_fn)(const ct_tensor *x4, const void *ctx, ct_tensor **y, ct_tensor **ix);
static ct_tensor *batched(const ct_tensor *x, pool4_fn fn, const void *ctx, ct_tensor **indices) {
  ct_tensor *x4 = x->ndim == 3 ? ct_unsqueeze(x, 0) : ct_retain((ct_tensor *)x);
  ct_tensor *y = NULL, *ix = NULL;
  if (!x4 || fn(x4, ctx, &y, indices ? &ix : NULL) != CT_OK) {
    ct_release(x4);
    return NULL;
  }
  ct_release(x4);
  if (x->ndim == 3) {
    ct_tensor *y3 = ct_squeeze_dim(y, 0), *i3 = ix ? ct_squeeze_dim(ix, 0) : NULL;
    ct_release(y);
    ct_release(ix);
    y = y3;
    ix = i3;
  }
  if (indices) *indices = ix;
  return y;
}

/* PyTorch's pooling_output_shape. */
static int64_t pool_out(int64_t I, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil_mode) {
  int64_t num = I + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (o - 1) * s >= I + pad) o--;
  return o;
}

typedef struct {
  int64_t k[2], s[2], p[2], d[2];
  bool ceil_mode, count_include_pad;
  int64_t divisor;
  int op;
} pool_p;

static ct_status pool_shape_check(const ct_tensor *x, const pool_p *p, int64_t *oh, int64_t *ow) {
  char a[160];
  if (p->k[0] <= 0 || p->k[1] <= 0)
    return CT_ERR(CT_ERR_RUNTIME, "kernel size should be greater than zero, but got kH: %lld kW: %lld",
                  (long long)p->k[0], (long long)p->k[1]);
  if (p->d[0] <= 0 || p->d[1] <= 0)
    return CT_ERR(CT_ERR_RUNTIME, "dilation should be greater than zero, but got dilationH: %lld dilationW: %lld",
                  (long long)p->d[0], (long long)p->d[1]);
  bool okdims = (x->ndim == 3 || x->ndim == 4);
  for (int d = x->ndim == 4 ? 1 : 0; okdims && d < x->ndim; d++) okdims = x->shape[d] != 0;
  if (!okdims) {
    if (x->ndim == 3 || x->ndim == 4)
      return CT_ERR(CT_ERR_RUNTIME, "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                    "but got:%s", CT_SHAPE_STR(x, a));
    return CT_ERR(CT_ERR_RUNTIME, "non-empty 3D or 4D (batch mode) tensor expected for input");
  }
  for (int i = 0; i < 2; i++)
    if (p->p[i] > p->k[i] / 2)
      return CT_ERR(CT_ERR_RUNTIME, "pad should be at most half of kernel size, but got pad=%lld and kernel_size=%lld",
                    (long long)p->p[i], (long long)p->k[i]);
  int64_t H = x->shape[x->ndim - 2], W = x->shape[x->ndim - 1], C = x->shape[x->ndim - 3];
  *oh = pool_out(H, p->k[0], p->p[0], p->s[0], p->d[0], p->ceil_mode);
  *ow = pool_out(W, p->k[1], p->p[1], p->s[1], p->d[1], p->ceil_mode);
  if (*oh < 1 || *ow < 1)
    return CT_ERR(CT_ERR_RUNTIME, "Given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output "
                  "size is too small", (long long)C, (long long)H, (long long)W, (long long)C, (long long)*oh,
                  (long long)*ow);
  return CT_OK;
}

static ct_attrs pool_attrs(const pool_p *p) {
  ct_attrs a = ct_attrs_zero();
  for (int i = 0; i < 2; i++) {
    a.i[i] = p->k[i];
    a.i[2 + i] = p->s[i];
    a.i[4 + i] = p->p[i];
    a.i[6 + i] = p->d[i];
  }
  a.k[0] = p->count_include_pad;
  a.k[1] = p->divisor;
  return a;
}

static ct_status pool4(const ct_tensor *x4, const void *vctx, ct_tensor **y, ct_tensor **ix) {
  const pool_p *p = vctx;
  int64_t oh = 0, ow = 0;
  CT_TRY(pool_shape_check(x4, p, &oh, &ow));
  ct_attrs a = pool_attrs(p);
  return pool_call(p->op, x4, oh, ow, &a, y, ix);
}

static bool fill_pool(pool_p *p, const int64_t *k, const int64_t *s, const int64_t *pad, const int64_t *dil) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < 2; i++) {
    p->k[i] = k[i];
    p->s[i] = s ? s[i] : k[i];
    p->p[i] = pad ? pad[i] : 0;
    p->d[i] = dil ? dil[i] : 1;
    if (p->s[i] == 0) return false;
  }
  return true;
}

ct_tensor *ct_max_pool2d(const ct_tensor *x, const int64_t *kernel_size, const int64_t *stride, const int64_t *padding,
                         const int64_t *dilation, bool ceil_mode, ct_tensor **indices) {
  if (indices) *indices = NULL;
  if (ct_check_tensor(x, "max_pool2d")) return NULL;
  if (!kernel_size) return ct_set_error(CT_ERR_VALUE, "max_pool2d: kernel_size is required"), NULL;
  pool_p p;
  if (!fill_pool(&p, kernel_size, stride, padding, dilation))
    return ct_set_error(CT_ERR_RUNTIME, "stride should not be zero"), NULL;
  p.ceil_mode = ceil_mode;
  p.op = CT_OP_max_pool2d_with_indices;
  if (!ct_dtype_is_floating(x->dtype) || x->dtype == CT_FLOAT16) {
    if (x->ndim == 3 || x->ndim == 4) return nn_not_implemented("max_pool2d", x->dtype), NULL;
  }
  ct_tensor *ix = NULL;
  ct_tensor *y = batched(x, pool4, &p, &ix);
  if (y && indices) *indices = ix;
  else ct_release(ix);
  return y;
}

ct_tensor *ct_avg_pool2d(const ct_tensor *x, const int64_t *kernel_size, const int64_t *stride, const int64_t *padding,
                         bool ceil_mode, bool count_include_pad, int64_t divisor_override) {
  if (ct_check_tensor(x, "avg_pool2d")) return NULL;
  if (!kernel_size) return ct_set_error(CT_ERR_VALUE, "avg_pool2d: kernel_size is required"), NULL;
  if (x->ndim < 3) {
    ct_set_error(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-%d, %d], but got -3)",
                 x->ndim ? x->ndim : 1, x->ndim ? x->ndim - 1 : 0);
    return NULL;
  }
  pool_p p;
  if (!fill_pool(&p, kernel_size, stride, padding, NULL))
    return ct_set_error(CT_ERR_RUNTIME, "stride should not be zero"), NULL;
  p.ceil_mode = ceil_mode;
  p.count_include_pad = count_include_pad;
  p.divisor = divisor_override;
  p.op = CT_OP_avg_pool2d;
  if (x->dtype != CT_FLOAT32 && x->dtype != CT_FLOAT64 && x->dtype != CT_BFLOAT16 && x->dtype != CT_INT64)
    if (x->ndim == 3 || x->ndim == 4) return nn_not_implemented("avg_pool2d", x->dtype), NULL;
  return batched(x, pool4, &p, NULL);
}

/* ---- adaptive pools ---- */
typedef struct {
  int64_t os[2];
  int op;
  const char *name;
} apool_p;

static ct_status apool4(const ct_tensor *x4, const void *vctx, ct_tensor **y, ct_tensor **ix) {
  const apool_p *p = vctx;
  ct_attrs a = ct_attrs_zero();
  return pool_call(p->op, x4, p->os[0], p->os[1], &a, y, ix);
}

static ct_tensor *adaptive(const ct_tensor *x, const int64_t *output_size, int op, const char *name, ct_tensor **indices) {
  char a[160];
  if (ct_check_tensor(x, name)) return NULL;
  if (!output_size) return ct_set_error(CT_ERR_VALUE, "%s: output_size is required", name), NULL;
  if (x->ndim != 3 && x->ndim != 4) {
    ct_set_error(CT_ERR_RUNTIME, "%s(): Expected 3D or 4D tensor, but got%s %s", name,
                 op == CT_OP_adaptive_max_pool2d ? ":" : "", CT_SHAPE_STR(x, a));
    return NULL;
  }
  apool_p p;
  p.op = op;
  p.name = name;
  for (int i = 0; i < 2; i++) p.os[i] = output_size[i] == -1 ? x->shape[x->ndim - 2 + i] : output_size[i];
  if (p.os[0] < 0 || p.os[1] < 0) {
    ct_set_error(CT_ERR_RUNTIME, "%s: elements of output_size must be greater than or equal to 0 but received {%lld, %lld}",
                 name, (long long)output_size[0], (long long)output_size[1]);
    return NULL;
  }
  for (int d = x->ndim - 3; d < x->ndim; d++)
    if (x->shape[d] == 0) {
      ct_set_error(CT_ERR_RUNTIME, "%s(): Expected input to have non-zero size for non-batch dimensions, but input has "
                   "sizes %s with dimension %d being empty", name, CT_SHAPE_STR(x, a), d);
      return NULL;
    }
  if (!ct_dtype_is_floating(x->dtype) || x->dtype == CT_FLOAT16) return nn_not_implemented(name, x->dtype), NULL;
  return batched(x, apool4, &p, indices);
}

ct_tensor *ct_adaptive_avg_pool2d(const ct_tensor *x, const int64_t *output_size) {
  if (x && output_size && x->ndim >= 2) {
    /* PyTorch 1.13 computes a 1x1 output as x.mean((-1, -2), keepdim=True) before any other check:
     * the same here, so values, dtypes, errors and the node (MeanBackward1) agree */
    int64_t oh = output_size[0] == -1 ? x->shape[x->ndim - 2] : output_size[0];
    int64_t ow = output_size[1] == -1 ? x->shape[x->ndim - 1] : output_size[1];
    if (oh == 1 && ow == 1) return ct_mean_dims(x, 2, (const int64_t[]){-1, -2}, true);
  }
  return adaptive(x, output_size, CT_OP_adaptive_avg_pool2d, "adaptive_avg_pool2d", NULL);
}

ct_tensor *ct_adaptive_max_pool2d(const ct_tensor *x, const int64_t *output_size, ct_tensor **indices) {
  if (indices) *indices = NULL;
  ct_tensor *ix = NULL;
  ct_tensor *y = adaptive(x, output_size, CT_OP_adaptive_max_pool2d, "adaptive_max_pool2d", &ix);
  if (y && indices) *indices = ix;
  else ct_release(ix);
  return y;
}

/* ---- max pools' derivatives ---- */
static ct_tensor *scatter_gather(int op, const ct_tensor *src, const ct_tensor *idx, const int64_t *out_shape) {
  ct_tensor *in[2] = {(ct_tensor *)src, (ct_tensor *)idx};
  return ct_dispatch_new(op, 2, in, 4, out_shape, src->dtype, NULL);
}

ct_status ct_bw_max_pool(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *ix = ct_node_saved_out(n, 1);
  if (!ix) return ct_last_status();
  gin[0] = scatter_gather(CT_OP_max_pool2d_with_indices_backward, g[0], ix, n->in_meta[0].shape);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_status ct_bw_max_pool_scatter(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *ix = ct_node_saved_in(n, 1);
  if (!ix) return ct_last_status();
  if (!ct_node_needs_grad(n, 0)) return CT_OK;
  gin[0] = scatter_gather(CT_OP_max_pool_gather, g[0], ix, n->in_meta[0].shape);
  return gin[0] ? CT_OK : ct_last_status();
}

ct_status ct_bw_max_pool_gather(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *ix = ct_node_saved_in(n, 1);
  if (!ix) return ct_last_status();
  if (!ct_node_needs_grad(n, 0)) return CT_OK;
  gin[0] = scatter_gather(CT_OP_max_pool2d_with_indices_backward, g[0], ix, n->in_meta[0].shape);
  return gin[0] ? CT_OK : ct_last_status();
}

/* ---- linear maps: forward op <-> backward (adjoint) op ---- */
static int adjoint_op(int op) {
  switch (op) {
    case CT_OP_avg_pool2d: return CT_OP_avg_pool2d_backward;
    case CT_OP_avg_pool2d_backward: return CT_OP_avg_pool2d;
    case CT_OP_adaptive_avg_pool2d: return CT_OP_adaptive_avg_pool2d_backward;
    case CT_OP_adaptive_avg_pool2d_backward: return CT_OP_adaptive_avg_pool2d;
    case CT_OP_upsample_nearest2d: return CT_OP_upsample_nearest2d_backward;
    case CT_OP_upsample_nearest2d_backward: return CT_OP_upsample_nearest2d;
    case CT_OP_upsample_bilinear2d: return CT_OP_upsample_bilinear2d_backward;
    default: return CT_OP_upsample_bilinear2d;
  }
}

static ct_status bw_linear(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  const ct_meta *m = &n->in_meta[0];
  ct_tensor *y = NULL;
  CT_TRY(pool_call(adjoint_op(n->op), g[0], m->shape[2], m->shape[3], &n->a, &y, NULL));
  gin[0] = y;
  return CT_OK;
}
ct_status ct_bw_lin2d_fwd(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return bw_linear(n, g, gin); }
ct_status ct_bw_lin2d_bwd(ct_node *n, ct_tensor *const *g, ct_tensor **gin) { return bw_linear(n, g, gin); }

/* ---- interpolate ---- */
typedef struct {
  int64_t os[2];
  ct_attrs a;
  int op;
} interp_p;

static ct_status interp4(const ct_tensor *x4, const void *vctx, ct_tensor **y, ct_tensor **ix) {
  const interp_p *p = vctx;
  (void)ix;
  return pool_call(p->op, x4, p->os[0], p->os[1], &p->a, y, NULL);
}

ct_tensor *ct_interpolate(const ct_tensor *x, const int64_t *size, const double *scale_factor, const char *mode,
                          int align_corners) {
  if (ct_check_tensor(x, "interpolate")) return NULL;
  if (!mode) mode = "nearest";
  bool nearest = !strcmp(mode, "nearest"), bilinear = !strcmp(mode, "bilinear");
  if (!nearest && !bilinear) {
    ct_set_error(CT_ERR_NOT_IMPLEMENTED, "Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: "
                 "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got %s)", x->ndim, mode);
    return NULL;
  }
  if (nearest && align_corners >= 0) {
    ct_set_error(CT_ERR_VALUE, "align_corners option can only be set with the interpolating modes: linear | bilinear | "
                 "bicubic | trilinear");
    return NULL;
  }
  if (size && scale_factor) return ct_set_error(CT_ERR_VALUE, "only one of size or scale_factor should be defined"), NULL;
  if (!size && !scale_factor) return ct_set_error(CT_ERR_VALUE, "either size or scale_factor should be defined"), NULL;
  if (bilinear && x->ndim == 3) {
    ct_set_error(CT_ERR_NOT_IMPLEMENTED, "Got 3D input, but bilinear mode needs 4D input");
    return NULL;
  }
  if (x->ndim != 4 && !(nearest && x->ndim == 3)) {
    ct_set_error(CT_ERR_NOT_IMPLEMENTED, "Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: "
                 "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got %s)", x->ndim, mode);
    return NULL;
  }
  /* a 3-D input to nearest is [N, C, L]: treated as [N, C, 1, L] */
  ct_tensor *x4 = x->ndim == 3 ? ct_unsqueeze(x, 2) : ct_retain((ct_tensor *)x);
  if (!x4) return NULL;
  int ns = x->ndim - 2, off = 2 - ns;
  interp_p p;
  memset(&p, 0, sizeof p);
  p.op = nearest ? CT_OP_upsample_nearest2d : CT_OP_upsample_bilinear2d;
  p.a.k[2] = align_corners > 0;
  p.os[0] = 1;
  for (int i = 0; i < ns; i++) {
    int64_t I = x->shape[2 + i];
    if (size) p.os[off + i] = size[i];
    else {
      p.os[off + i] = (int64_t)floor((double)I * scale_factor[i]);
      p.a.f[off + i] = scale_factor[i];
    }
  }
  int64_t H = x4->shape[2], W = x4->shape[3];
  if (p.os[0] <= 0 || p.os[1] <= 0 || H <= 0 || W <= 0) {
    if (ns == 2)
      ct_set_error(CT_ERR_RUNTIME, "Input and output sizes should be greater than 0, but got input (H: %lld, W: %lld) "
                   "output (H: %lld, W: %lld)", (long long)H, (long long)W, (long long)p.os[0], (long long)p.os[1]);
    else
      ct_set_error(CT_ERR_RUNTIME, "Input and output sizes should be greater than 0, but got input (W: %lld) output (W: "
                   "%lld)", (long long)W, (long long)p.os[1]);
    ct_release(x4);
    return NULL;
  }
  if (!ct_dtype_is_floating(x->dtype) || x->dtype == CT_FLOAT16) {
    nn_not_implemented(nearest ? "compute_indices_weights_nearest" : "compute_indices_weights_linear", x->dtype);
    ct_release(x4);
    return NULL;
  }
  ct_tensor *y = NULL;
  if (interp4(x4, &p, &y, NULL) != CT_OK) y = NULL;
  ct_release(x4);
  if (y && x->ndim == 3) {
    ct_tensor *t = ct_squeeze_dim(y, 2);
    ct_release(y);
    y = t;
  }
  return y;
}
