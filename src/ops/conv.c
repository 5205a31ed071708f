/* Convolutions: conv1d, conv2d, conv_transpose2d (entry points) and the three kernels'
 * derivative formulas. The three ops are each other's derivatives, so double backward
 * needs nothing else:
 *   y  = convolution(x, w, b)                  gx = backward_input(gy, w), gw = backward_weight(x, gy)
 *   gx = backward_input(gy, w, b)   (= conv_transpose)   d gy = convolution(ggx, w), d w = backward_weight(ggx, gy)
 *   gw = backward_weight(x, gy)                d x = backward_input(gy, ggw), d gy = convolution(x, ggw)
 * Attributes: k0 spatial dims, k1 groups, i[0..3) stride, i[3..6) padding (low side),
 * i[6..9) dilation (the high side of the padding only shows in the output shape). */
#include "nn_util.h"
#include "layout.h"

typedef struct {
  int nd;
  int64_t stride[3], pad_lo[3], pad_hi[3], dil[3], outpad[3];
  int64_t groups;
} conv_p;

static ct_attrs conv_attrs(const conv_p *p) {
  ct_attrs a = ct_attrs_zero();
  a.k[0] = p->nd;
  a.k[1] = p->groups;
  for (int i = 0; i < p->nd; i++) {
    a.i[i] = p->stride[i];
    a.i[3 + i] = p->pad_lo[i];
    a.i[6 + i] = p->dil[i];
  }
  return a;
}

/* Runs one of the three kernels into a new output of the given shape. */
static ct_tensor *conv_call(int op, const ct_tensor *a, const ct_tensor *b, const ct_tensor *bias, int nd,
                            const int64_t *shape, const ct_attrs *at) {
  ct_call c = ct_call_make(op);
  c.n_in = op == CT_OP_convolution_backward_weight ? 2 : 3;
  c.n_out = 1;
  c.in[0] = (ct_tensor *)a;
  c.in[1] = (ct_tensor *)b;
  c.in[2] = (ct_tensor *)bias;
  /* channels-last operands give a channels-last result (PyTorch's rule: input or weight). CUDA
   * writes it directly (cuDNN's NHWC descriptors); the other backends' kernels write contiguous
   * memory, converted before autograd records the call. */
  bool cl = nd == 4 && (ct_suggests_channels_last(a) || ct_suggests_channels_last(b));
  bool direct = cl && a->storage->device.type == CT_DEVICE_CUDA;
  c.out[0] = direct ? ct_new_channels_last(shape, a->dtype, a->storage->device) : nn_new_out(a, nd, shape, a->dtype);
  c.a = *at;
  if (c.out[0]) {
    if (cl && !direct) ct_dispatch_channels_last_out0(&c);
    else nn_dispatch(&c);
  }
  return c.out[0];
}

static const char *dims_str(int nd, const int64_t *v, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < nd && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? " x " : "", (long long)v[i]);
  return buf;
}

static const char *ints_str(int nd, const int64_t *v, char *buf, size_t n) { return ct_shape_str(nd, v, buf, n); }

/* Checks and output shape, then the kernel. x is batched here ([N, C, spatial...]). */
static ct_tensor *conv_impl(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, conv_p *p, bool transposed,
                            const char *name, const char *kernel_name) {
  char a[160], b[160];
  int nd = p->nd;
  /* per-dim parameter checks */
  for (int i = 0; i < nd; i++) {
    if (p->stride[i] <= 0) return ct_set_error(CT_ERR_RUNTIME, "non-positive stride is not supported"), NULL;
    if (p->pad_lo[i] < 0 || p->pad_hi[i] < 0) return ct_set_error(CT_ERR_RUNTIME, "negative padding is not supported"), NULL;
    if (p->dil[i] <= 0) return ct_set_error(CT_ERR_RUNTIME, "non-positive dilation is not supported"), NULL;
    if (transposed && p->outpad[i] < 0)
      return ct_set_error(CT_ERR_RUNTIME, "negative output_padding is not supported"), NULL;
  }
  if (p->groups <= 0) return ct_set_error(CT_ERR_RUNTIME, "non-positive groups is not supported"), NULL;
  if (x->dtype != w->dtype || (bias && bias->dtype != x->dtype)) {
    /* PyTorch's wording depends on the path it would take: oneDNN (float32/bfloat16, not
     * transposed, and grouped, a kernel over 3x3, a batch over 1 or a large input) or its
     * native kernels */
    int64_t kh = nd == 2 && w->ndim == 4 ? w->shape[2] : 1, kw = w->ndim >= 3 ? w->shape[w->ndim - 1] : 1;
    bool mkldnn = (x->dtype == CT_FLOAT32 || x->dtype == CT_BFLOAT16) && !transposed &&
                  (p->groups > 1 || (kw > 3 && kh > 3) || x->shape[0] > 1 || ct_numel(x) > 20480);
    ct_dtype other = x->dtype != w->dtype ? w->dtype : bias->dtype;
    if (!mkldnn)
      ct_set_error(CT_ERR_RUNTIME, "expected scalar type %s but found %s", ct_dtype_torch_name(x->dtype),
                   ct_dtype_torch_name(other));
    else if (x->dtype != w->dtype)
      ct_set_error(CT_ERR_RUNTIME, "Input type (%s) and weight type (%s) should be the same or input should be a MKLDNN "
                   "tensor and weight is a dense tensor",
                   x->dtype == CT_BFLOAT16 ? "CPUBFloat16Type" : ct_dtype_legacy_name(x->dtype),
                   w->dtype == CT_BFLOAT16 ? "CPUBFloat16Type" : ct_dtype_legacy_name(w->dtype));
    else {
      /* this message prints C type names: float, double, c10::BFloat16 */
      const char *tn[2];
      ct_dtype ds[2] = {x->dtype, bias->dtype};
      for (int k = 0; k < 2; k++)
        tn[k] = ds[k] == CT_FLOAT32 ? "float" : ds[k] == CT_FLOAT64 ? "double" : ds[k] == CT_BFLOAT16 ? "c10::BFloat16"
              : ds[k] == CT_FLOAT16 ? "c10::Half" : ds[k] == CT_INT64 ? "long int" : ct_dtype_name(ds[k]);
      ct_set_error(CT_ERR_RUNTIME, "Input type (%s) and bias type (%s) should be the same", tn[0], tn[1]);
    }
    return NULL;
  }
  if (w->ndim != nd + 2) {
    if (nd != 1 && w->ndim >= 3) {
      int64_t ones[3];
      for (int i = 0; i < nd; i++) ones[i] = p->stride[i];
      ct_set_error(CT_ERR_RUNTIME, "expected stride to be a single integer value or a list of %d values to match the "
                   "convolution dimensions, but got stride=%s", w->ndim - 2, ints_str(nd, ones, a, sizeof a));
    } else {
      ct_set_error(CT_ERR_RUNTIME, "Expected %d-dimensional input for %d-dimensional weight %s, but got %d-dimensional "
                   "input of size %s instead", w->ndim, w->ndim, CT_SHAPE_STR(w, a), x->ndim, CT_SHAPE_STR(x, b));
    }
    return NULL;
  }
  int64_t C = x->shape[1], G = p->groups;
  if (w->shape[0] % G) {
    ct_set_error(CT_ERR_RUNTIME, "Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                 "weight of size [%s] instead", (long long)G, (long long)G, CT_SHAPE_STR(w, a));
    return NULL;
  }
  int64_t outC;
  if (!transposed) {
    if (C != w->shape[1] * G) {
      ct_set_error(CT_ERR_RUNTIME, "Given groups=%lld, weight of size %s, expected input%s to have %lld channels, but "
                   "got %lld channels instead", (long long)G, CT_SHAPE_STR(w, a), CT_SHAPE_STR(x, b),
                   (long long)(w->shape[1] * G), (long long)C);
      return NULL;
    }
    outC = w->shape[0];
  } else {
    if (C != w->shape[0]) {
      ct_set_error(CT_ERR_RUNTIME, "Given transposed=1, weight of size %s, expected input%s to have %lld channels, but "
                   "got %lld channels instead", CT_SHAPE_STR(w, a), CT_SHAPE_STR(x, b), (long long)w->shape[0],
                   (long long)C);
      return NULL;
    }
    outC = w->shape[1] * G;
  }
  if (bias && (bias->ndim != 1 || bias->shape[0] != outC)) {
    ct_set_error(CT_ERR_RUNTIME, "Given %sweight of size %s, expected bias to be 1-dimensional with %lld elements, but "
                 "got bias of size %s instead", transposed ? "transposed=1, " : "", CT_SHAPE_STR(w, a), (long long)outC,
                 CT_SHAPE_STR(bias, b));
    return NULL;
  }
  /* dtype support of PyTorch 1.13's CPU kernels */
  ct_dtype dt = x->dtype;
  bool okdt = transposed ? (ct_dtype_is_floating(dt) && dt != CT_FLOAT16) || dt == CT_INT64
                         : dt != CT_FLOAT16 && dt != CT_BOOL;
  if (!okdt) {
    nn_not_implemented(kernel_name, dt);
    return NULL;
  }
  int64_t shape[CT_MAX_DIMS], insp[3], ksz[3], osz[3];
  shape[0] = x->shape[0];
  shape[1] = outC;
  bool too_big = false, too_small = false;
  for (int i = 0; i < nd; i++) {
    int64_t I = x->shape[2 + i], K = w->shape[2 + i], dk = p->dil[i] * (K - 1) + 1;
    insp[i] = I + p->pad_lo[i] + p->pad_hi[i];
    ksz[i] = dk;
    if (!transposed) {
      if (insp[i] < dk) too_big = true;
      osz[i] = insp[i] < dk ? 0 : (insp[i] - dk) / p->stride[i] + 1;
    } else {
      if (p->outpad[i] >= p->stride[i] && p->outpad[i] >= p->dil[i]) {
        if (nd == 2)
          ct_set_error(CT_ERR_RUNTIME, "output padding must be smaller than either stride or dilation, but got "
                       "output_padding_height: %lld output_padding_width: %lld stride_height: %lld stride_width: %lld "
                       "dilation_height: %lld dilation_width: %lld", (long long)p->outpad[0], (long long)p->outpad[1],
                       (long long)p->stride[0], (long long)p->stride[1], (long long)p->dil[0], (long long)p->dil[1]);
        else ct_set_error(CT_ERR_RUNTIME, "output padding must be smaller than either stride or dilation");
        return NULL;
      }
      osz[i] = (I - 1) * p->stride[i] - p->pad_lo[i] - p->pad_hi[i] + dk + p->outpad[i];
      insp[i] = I;
      if (osz[i] <= 0) too_small = true;
    }
    shape[2 + i] = osz[i];
  }
  if (too_big) {
    ct_set_error(CT_ERR_RUNTIME, "Calculated padded input size per channel: (%s). Kernel size: (%s). Kernel size can't "
                 "be greater than actual input size", dims_str(nd, insp, a, sizeof a), dims_str(nd, ksz, b, sizeof b));
    return NULL;
  }
  if (too_small) {
    ct_set_error(CT_ERR_RUNTIME, "Given input size per channel: (%s). Calculated output size per channel: (%s). Output "
                 "size is too small", dims_str(nd, insp, a, sizeof a), dims_str(nd, osz, b, sizeof b));
    return NULL;
  }
  int64_t total = ct_shape_numel(nd + 2, shape);
  if (total < 0) return NULL;
  ct_attrs at = conv_attrs(p);
  (void)name;
  ct_tensor *y = conv_call(transposed ? CT_OP_convolution_backward_input : CT_OP_convolution, x, w, bias, nd + 2, shape, &at);
  if (y && y->grad_fn && transposed) y->grad_fn->name = "ConvolutionBackward0";
  return y;
}

/* Unbatched inputs get a batch dim of 1 around the call, as PyTorch does. */
static ct_tensor *conv_entry(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, conv_p *p, bool transposed,
                             const char *name, const char *kernel_name) {
  if (ct_check_tensor(x, name) || ct_check_tensor(w, name)) return NULL;
  if (bias && ct_check_tensor(bias, name)) return NULL;
  int nd = p->nd;
  if (x->ndim != nd + 1 && x->ndim != nd + 2) {
    char a[160];
    ct_set_error(CT_ERR_RUNTIME, "Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s",
                 nd + 1, nd + 2, name, CT_SHAPE_STR(x, a));
    return NULL;
  }
  if (x->ndim == nd + 2) return conv_impl(x, w, bias, p, transposed, name, kernel_name);
  ct_tensor *xb = ct_unsqueeze(x, 0);
  ct_tensor *y = xb ? conv_impl(xb, w, bias, p, transposed, name, kernel_name) : NULL;
  ct_tensor *r = y ? ct_squeeze_dim(y, 0) : NULL;
  ct_release(xb);
  ct_release(y);
  return r;
}

static void fill_p(conv_p *p, int nd, const int64_t *stride, const int64_t *padding, const int64_t *dilation,
                   int64_t groups) {
  memset(p, 0, sizeof *p);
  p->nd = nd;
  p->groups = groups;
  for (int i = 0; i < nd; i++) {
    p->stride[i] = stride ? stride[i] : 1;
    p->pad_lo[i] = p->pad_hi[i] = padding ? padding[i] : 0;
    p->dil[i] = dilation ? dilation[i] : 1;
  }
}

/* padding "same" / "valid": "same" pads d*(k-1) in total, the odd one on the high side. */
static ct_status pad_mode(conv_p *p, const ct_tensor *w, const char *mode) {
  if (!mode) return CT_ERR(CT_ERR_RUNTIME, "Invalid padding string: 'None'");
  if (!strcmp(mode, "valid")) return CT_OK;
  if (strcmp(mode, "same")) return CT_ERR(CT_ERR_RUNTIME, "Invalid padding string: '%s'", mode);
  for (int i = 0; i < p->nd; i++)
    if (p->stride[i] != 1) return CT_ERR(CT_ERR_RUNTIME, "padding='same' is not supported for strided convolutions");
  if (!w || w->ndim != p->nd + 2) return CT_OK; /* conv_impl reports the weight's shape */
  for (int i = 0; i < p->nd; i++) {
    int64_t total = p->dil[i] * (w->shape[2 + i] - 1);
    p->pad_lo[i] = total / 2;
    p->pad_hi[i] = total - total / 2;
  }
  return CT_OK;
}

ct_tensor *ct_conv2d(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, const int64_t *stride,
                     const int64_t *padding, const int64_t *dilation, int64_t groups) {
  conv_p p;
  fill_p(&p, 2, stride, padding, dilation, groups);
  return conv_entry(x, w, bias, &p, false, "conv2d", "slow_conv2d_cpu");
}

ct_tensor *ct_conv2d_mode(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, const int64_t *stride,
                          const char *padding, const int64_t *dilation, int64_t groups) {
  conv_p p;
  fill_p(&p, 2, stride, NULL, dilation, groups);
  if (pad_mode(&p, w, padding)) return NULL;
  return conv_entry(x, w, bias, &p, false, "conv2d", "slow_conv2d_cpu");
}

ct_tensor *ct_conv1d(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, int64_t stride, int64_t padding,
                     int64_t dilation, int64_t groups) {
  conv_p p;
  fill_p(&p, 1, &stride, &padding, &dilation, groups);
  return conv_entry(x, w, bias, &p, false, "conv1d", "slow_conv2d_cpu");
}

ct_tensor *ct_conv1d_mode(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, int64_t stride,
                          const char *padding, int64_t dilation, int64_t groups) {
  conv_p p;
  fill_p(&p, 1, &stride, NULL, &dilation, groups);
  if (pad_mode(&p, w, padding)) return NULL;
  return conv_entry(x, w, bias, &p, false, "conv1d", "slow_conv2d_cpu");
}

ct_tensor *ct_conv_transpose2d(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias, const int64_t *stride,
                               const int64_t *padding, const int64_t *output_padding, int64_t groups,
                               const int64_t *dilation) {
  conv_p p;
  fill_p(&p, 2, stride, padding, dilation, groups);
  for (int i = 0; i < 2; i++) p.outpad[i] = output_padding ? output_padding[i] : 0;
  return conv_entry(x, w, bias, &p, true, "conv_transpose2d", "slow_conv_transpose2d_out_cpu");
}

/* ---- derivative formulas ---- */
static ct_tensor *bias_grad(const ct_tensor *g) {
  int64_t dims[CT_MAX_DIMS];
  int k = 0;
  for (int d = 0; d < g->ndim; d++)
    if (d != 1) dims[k++] = d;
  return ct_sum_dims(g, k, dims, false);
}

/* y = conv(x, w, b) */
ct_status ct_bw_conv_fwd(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *w = ct_node_saved_in(n, 1);
  if (!x || !w) return ct_last_status();
  if (ct_node_needs_grad(n, 0) &&
      !(gin[0] = conv_call(CT_OP_convolution_backward_input, g[0], w, NULL, x->ndim, x->shape, &n->a)))
    return ct_last_status();
  if (ct_node_needs_grad(n, 1) &&
      !(gin[1] = conv_call(CT_OP_convolution_backward_weight, x, g[0], NULL, w->ndim, w->shape, &n->a)))
    return ct_last_status();
  if (ct_node_needs_grad(n, 2) && !(gin[2] = bias_grad(g[0]))) return ct_last_status();
  return CT_OK;
}

/* gx = backward_input(gy, w, b) */
ct_status ct_bw_conv_bwd_input(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *gy = ct_node_saved_in(n, 0), *w = ct_node_saved_in(n, 1);
  if (!gy || !w) return ct_last_status();
  if (ct_node_needs_grad(n, 0) &&
      !(gin[0] = conv_call(CT_OP_convolution, g[0], w, NULL, gy->ndim, gy->shape, &n->a)))
    return ct_last_status();
  if (ct_node_needs_grad(n, 1) &&
      !(gin[1] = conv_call(CT_OP_convolution_backward_weight, g[0], gy, NULL, w->ndim, w->shape, &n->a)))
    return ct_last_status();
  if (ct_node_needs_grad(n, 2) && !(gin[2] = bias_grad(g[0]))) return ct_last_status();
  return CT_OK;
}

/* gw = backward_weight(x, gy) */
ct_status ct_bw_conv_bwd_weight(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *gy = ct_node_saved_in(n, 1);
  if (!x || !gy) return ct_last_status();
  if (ct_node_needs_grad(n, 0) &&
      !(gin[0] = conv_call(CT_OP_convolution_backward_input, gy, g[0], NULL, x->ndim, x->shape, &n->a)))
    return ct_last_status();
  if (ct_node_needs_grad(n, 1) &&
      !(gin[1] = conv_call(CT_OP_convolution, x, g[0], NULL, gy->ndim, gy->shape, &n->a)))
    return ct_last_status();
  return CT_OK;
}
